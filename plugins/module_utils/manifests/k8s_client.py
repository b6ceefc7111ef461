# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubernetes.core's client for the modules that talk to the API server themselves (cluster_facts,
kubevirt_devices_facts, k8s_objects_apply, node_labels_apply): one copy of its import, of the failure when it or
the kubernetes Python client is missing, and of the client for a module's cluster access options
(``module_kit.K8S_AUTH``), by kubernetes.core's own rules. Not plain Python: it imports Ansible's and kubernetes.core's
module_utils.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.gpuvirt.provision.plugins.module_utils import module_kit

try:
    # kubernetes.core's client and waiter: the cluster access and the wait of its modules, by the same rules
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import decode_response
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.waiter import get_waiter
    K8S_CORE_ERROR = None
except ImportError:
    K8S_CORE_ERROR = traceback.format_exc()


def fail_when_missing(module, kubernetes_error, **fields):
    """Fail ``module``, with ``fields`` in the failure, where the kubernetes Python client is missing
    (``kubernetes_error``: the traceback of the module's own import of it, or None) or kubernetes.core is."""
    if kubernetes_error:
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=kubernetes_error, **fields)
    if K8S_CORE_ERROR:
        module.fail_json(msg=missing_required_lib('the kubernetes.core collection (galaxy.yml dependencies)'),
                         exception=K8S_CORE_ERROR, **fields)


def api_client(params):
    """kubernetes.core's client for a module's cluster access options; an option left unset falls back to its
    K8S_AUTH_* variable there (and it reads the server's version and kubernetes.core's discovery cache)."""
    return get_api_client(**module_kit.k8s_auth(params))
