#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: cluster_facts
short_description: Whether the cluster answers, which detection APIs and CRDs it serves, in one read-only call
version_added: 0.2.0
description:
  - The reads of the role P(gpuvirt.provision.cluster#role), one module execution instead of three
    C(kubernetes.core.k8s_info) calls (each about a second of interpreter, Ansible and kubernetes client start).
  - First proves that the run's credentials reach the cluster with the read every phase needs - a list of Node
    with the field selector C(metadata.name=gpuvirt-cluster-check), which matches no node; with O(node_annotations),
    the same list with C(limit=100) instead - a key counts when every node read carries it, and one that some carry
    and others do not fails the call, naming the counts (one node's annotation does not decide). A failure here
    returns RV(answered=false) in the failure, with the client's or the server's own words.
  - Then, per entry of O(apis), whether the server serves that kind (by API discovery, as C(kubernetes.core.k8s_info)
    sets C(api_found)), and where it does a list of it; then, per name in O(crds), a GET of that
    CustomResourceDefinition (a 404 is a CRD not served). A refusal of either fails with RV(answered=true), naming
    the read.
  - Read-only - sends no write, so it runs the same in check mode.
  - Checks its own arguments before any request (each apiVersion, kind and CRD name by its grammar).
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  apis:
    description:
      - The detection APIs to ask about, each an apiVersion and a kind of it (the platform table's C(detect_api) and
        C(detect_kind)). Empty asks about none.
    type: list
    elements: dict
    default: []
  node_annotations:
    description:
      - The detection annotations to look for on a node (the platform table's C(detect_node_annotation), for a
        platform that serves no API of its own), each an annotation key. Empty asks about none, and the first read
        then returns no node.
    type: list
    elements: str
    default: []
  crds:
    description: The CustomResourceDefinition names to ask about (C(<plural>.<group>)). Empty asks about none.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpuvirt.provision.k8s_auth
  - gpuvirt.provision.attributes.read_only
'''

EXAMPLES = r'''
- name: Check that the cluster answers, which platform it is and whether it serves HCO's CRD
  gpuvirt.provision.cluster_facts:
    apis:
      - api_version: config.openshift.io/v1
        kind: ClusterVersion
    node_annotations:
      - rke2.io/node-args
    crds:
      - hyperconvergeds.hco.kubevirt.io
  register: facts
'''

RETURN = r'''
answered:
  description: Whether the cluster answered the first read (also returned, false or true, when the call fails).
  returned: always
  type: bool
served_apis:
  description: The apiVersions of O(apis) whose kind the server serves, in the order asked.
  returned: success
  type: list
  elements: str
  sample: [config.openshift.io/v1]
node_annotations:
  description: The keys of O(node_annotations) that every node read carries, in the order asked (none without a node).
  returned: success
  type: list
  elements: str
  sample: [rke2.io/node-args]
served_crds:
  description: The names of O(crds) the server serves, in the order asked.
  returned: success
  type: list
  elements: str
  sample: [hyperconvergeds.hco.kubevirt.io]
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import cluster_facts as cf
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_client
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_reads import Requests


def main():
    module = AnsibleModule(
        argument_spec=module_kit.argument_spec(
            module_kit.K8S_AUTH,
            apis=dict(type='list', elements='dict', default=[]),
            node_annotations=dict(type='list', elements='str', default=[]),
            crds=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        apis = cf.checked_apis(params['apis'])
        crds = cf.checked_crds(params['crds'])
        node_annotations = cf.checked_node_annotations(params['node_annotations'])
    except ManifestError as exc:
        module.fail_json(msg=str(exc), answered=False)
    k8s_client.fail_when_missing(module, answered=False)
    try:
        k8s = k8s_client.api_client(params)
        requests = Requests(k8s)
        facts = cf.read_facts(cf.Client(requests.list_objects, requests.get_object), apis, crds,
                              node_annotations)
    except (k8s_client.CoreException,) + k8s_client.CLIENT_ERRORS as exc:
        # the client's own words: no kubeconfig, no such context, a connection it could not open
        module.fail_json(msg=to_text(exc), answered=False)
    except cf.FactsError as exc:
        module.fail_json(msg=str(exc), answered=exc.answered)
    module.exit_json(changed=False, **facts)


if __name__ == '__main__':
    main()
