# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module options whose choices are a table's list (platforms, workloads). The lists between the
``BEGIN GENERATED`` / ``END GENERATED`` markers are written by ``make docs`` from the pool and platform tables
(tools/docs/generated_lists.py); the modules' argument specs read the same tables in Python."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.tables.cluster_platform: the platform a module builds for, Kubernetes unless named
    CLUSTER_PLATFORM = r'''
options:
  cluster_platform:
    description: The cluster platform (C(gpuvirt_cluster.platform)); the GPUCluster is taken on OpenShift only.
    type: str
    choices:
      # BEGIN GENERATED platforms
      - openshift
      - kubernetes
      - rke2
      # END GENERATED platforms
    default: kubernetes
'''
