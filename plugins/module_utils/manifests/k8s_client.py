# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubernetes.core's client for the modules that talk to the API server themselves (cluster_facts,
kubevirt_devices_facts, k8s_objects_apply, node_labels_apply): one copy of its import and of the kubernetes Python
client's names they catch or call, of the failure when either is missing, and of the client for a module's cluster
access options (``module_kit.K8S_AUTH``), by kubernetes.core's own rules. A name is read from here when it is used
(``k8s_client.ApiException``), so that a missing library is the module's failure, not an import error. Not plain
Python: it imports Ansible's and kubernetes.core's module_utils.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit

# the names below are imported for the modules, which read them from here (k8s_client.ApiException)
# pylint: disable=unused-import
try:
    # kubernetes.core's client and waiter: the cluster access and the wait of its modules, by the same rules
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import decode_response
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.waiter import get_waiter
    K8S_CORE_ERROR = None
except ImportError:
    K8S_CORE_ERROR = traceback.format_exc()

try:
    from kubernetes.client.api import core_v1_api
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config import ConfigException
    from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError
    from kubernetes.dynamic.exceptions import ResourceNotUniqueError
    from urllib3.exceptions import HTTPError as ConnectionProblem
    KUBERNETES_ERROR = None
    # what the client raises before any answer (no kubeconfig, no such context, a connection it could not open):
    # the modules report its own words
    CLIENT_ERRORS = (ConfigException, ConnectionProblem)
except ImportError:
    KUBERNETES_ERROR = traceback.format_exc()
    CLIENT_ERRORS = ()
# pylint: enable=unused-import


def fail_when_missing(module, **fields):
    """Fail ``module``, with ``fields`` in the failure, where the kubernetes Python client or kubernetes.core is
    missing."""
    if KUBERNETES_ERROR:
        module.fail_json(msg=missing_required_lib('kubernetes'), exception=KUBERNETES_ERROR, **fields)
    if K8S_CORE_ERROR:
        module.fail_json(msg=missing_required_lib('the kubernetes.core collection (galaxy.yml dependencies)'),
                         exception=K8S_CORE_ERROR, **fields)


def api_client(params):
    """kubernetes.core's client for a module's cluster access options; an option left unset falls back to its
    K8S_AUTH_* variable there (and it reads the server's version and kubernetes.core's discovery cache)."""
    return get_api_client(**module_kit.k8s_auth(params))
