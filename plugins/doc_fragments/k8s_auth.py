# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster access options of the modules that talk to the API server themselves, through kubernetes.core's
client (as kubernetes.core.k8s_auth_options documents them for its own modules); their argument spec is
plugins/module_utils/model/module_kit.py K8S_AUTH."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.k8s_auth: cluster_facts, kubevirt_devices_facts, k8s_objects_apply, node_labels_apply
    DOCUMENTATION = r'''
options:
  kubeconfig:
    description:
      - The kubeconfig, a path or its content as a dictionary (as kubernetes.core's modules, such as
        C(kubernetes.core.k8s) and C(kubernetes.core.k8s_info), take it).
    type: raw
  context:
    description: The kubeconfig context to use.
    type: str
  validate_certs:
    description: Verify the API server's certificate (on unless turned off here or by C(K8S_AUTH_VERIFY_SSL)).
    type: bool
    aliases: [verify_ssl]
requirements:
  - kubernetes (the Python client) and the kubernetes.core collection
notes:
  - Cluster access as kubernetes.core's modules take it, through their client (kubernetes.core's C(module_utils), the
    same rules) - the options O(kubeconfig), O(context) and O(validate_certs), which the play's C(module_defaults)
    for C(group/gpuvirt.provision.cluster) give, else the C(K8S_AUTH_*) environment (C(K8S_AUTH_KUBECONFIG),
    C(K8S_AUTH_CONTEXT), C(K8S_AUTH_VERIFY_SSL), or C(K8S_AUTH_HOST), C(K8S_AUTH_API_KEY), C(K8S_AUTH_SSL_CA_CERT)
    for a CA file), the in-cluster service account or C(~/.kube/config).
'''
