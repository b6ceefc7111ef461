#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: kubevirt_devices_facts
short_description: HCO's CRD, the HyperConverged objects or KubeVirt CRs, and the nodes, in one read-only call
version_added: 0.2.0
description:
  - The apply-mode reads of the role P(gpuvirt.provision.kubevirt_devices#role), one module execution instead of
    three C(kubernetes.core.k8s_info) calls (each about a second of interpreter, Ansible and kubernetes client start).
  - In this order - a GET of the CustomResourceDefinition C(hyperconvergeds.hco.kubevirt.io) (a 404 is a CRD not
    served); with O(kubevirt_config=hco) and that CRD served, a list of C(hco.kubevirt.io/v1beta1) HyperConverged in
    every namespace, with O(kubevirt_config=kubevirt) a list of C(kubevirt.io/v1) KubeVirt in every namespace (a kind
    the server does not serve, by API discovery, is listed as none, as C(kubernetes.core.k8s_info) sets
    C(api_found)); then a list of v1 Node. A refusal of any read fails the call, naming the read and the server's
    answer.
  - Of the CRD it returns only what the role decides from it - whether it is served, and whether its v1beta1 schema
    has C(spec.featureGates.disableMDevConfiguration).
  - Read-only - sends no write, so it runs the same in check mode. The role repeats the call (C(until)) while it
    waits for the GPU nodes to advertise their resources.
  - Checks its own arguments before any request.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  kubevirt_config:
    description:
      - Which object holds the permitted devices (the cluster model's C(kubevirt_config), auto resolved) - C(hco)
        lists the HyperConverged objects (where the CRD is served), C(kubevirt) the KubeVirt CRs.
    type: str
    required: true
    choices: [hco, kubevirt]
extends_documentation_fragment:
  - gpuvirt.provision.k8s_auth
  - gpuvirt.provision.attributes.read_only
'''

EXAMPLES = r'''
- name: Read HCO's CRD, the HyperConverged objects and the nodes
  gpuvirt.provision.kubevirt_devices_facts:
    kubevirt_config: hco
  register: read
'''

RETURN = r'''
hco_crd_served:
  description: Whether the server serves the CustomResourceDefinition C(hyperconvergeds.hco.kubevirt.io).
  returned: success
  type: bool
hco_gate_supported:
  description:
    - Whether that CRD's v1beta1 schema has C(spec.featureGates.disableMDevConfiguration) (false where it is not
      served).
  returned: success
  type: bool
hyperconvergeds:
  description: The HyperConverged objects of every namespace, as the server returned them (empty unless
    O(kubevirt_config=hco) and the CRD is served).
  returned: success
  type: list
  elements: dict
kubevirts:
  description: The KubeVirt CRs of every namespace, as the server returned them (empty unless
    O(kubevirt_config=kubevirt)).
  returned: success
  type: list
  elements: dict
nodes:
  description: The Node objects, as the server returned them.
  returned: success
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import cluster_facts as cf
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt_devices_facts as kdf
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_client
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_reads import Requests


def main():
    module = AnsibleModule(
        argument_spec=module_kit.argument_spec(
            module_kit.K8S_AUTH, kubevirt_config=dict(type='str', required=True, choices=list(kdf.CONFIGS))),
        supports_check_mode=True,
    )
    params = module.params
    try:
        kubevirt_config = kdf.checked_config(params['kubevirt_config'])
    except ManifestError as exc:
        module.fail_json(msg=str(exc))
    k8s_client.fail_when_missing(module)
    try:
        k8s = k8s_client.api_client(params)
        requests = Requests(k8s)
        facts = kdf.read_facts(cf.Client(requests.list_objects, requests.get_object), kubevirt_config)
    except (k8s_client.CoreException,) + k8s_client.CLIENT_ERRORS as exc:
        # the client's own words: no kubeconfig, no such context, a connection it could not open
        module.fail_json(msg=to_text(exc))
    except kdf.FactsError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **facts)


if __name__ == '__main__':
    main()
