# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""upgrade_pending: what still keeps a node from being released during an upgrade roll
(module_utils.manifests.upgrade_plan.settle). Documentation lives in the sidecar upgrade_pending.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

up = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.upgrade_plan')


def upgrade_pending(pods, node_name, node=None, daemonsets=None, revisions=None, required=None, allocatable=None):
    return up.settle(node_name, node, pods, daemonsets, revisions, required, allocatable)


class FilterModule(object):
    def filters(self):
        return {'upgrade_pending': upgrade_pending}
