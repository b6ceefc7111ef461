#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: kubevirt_devices_plan
short_description: Choose the resource names KubeVirt must permit, preferring what nodes advertise
version_added: 0.1.0
description:
  - Takes the wanted passthrough PCI devices and vGPU types (resource names computed from host facts or given
    as input) and, when node objects are given, checks them against the C(nvidia.com/*) resources the nodes
    advertise in C(status.allocatable).
  - A computed name that no node advertises is replaced by the one unexplained name its nodes advertise, with
    a warning. A name given as input, or one that cannot be matched, fails the task, naming it.
  - Changes nothing; runs on the controller.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  pci_devices:
    description: Wanted passthrough devices.
    type: list
    elements: dict
    default: []
    suboptions:
      selector:
        description: C(VENDOR:DEVICE) in hex, for example C(10DE:2236).
        type: str
        required: true
      resource_name:
        description: Resource name, for example C(nvidia.com/GA102GL_A10).
        type: str
        required: true
      nodes:
        description: Nodes that carry the device.
        type: list
        elements: str
        default: []
      source:
        description: C(facts) when the name was computed (may be corrected from the nodes), C(input) when given.
        type: str
        choices: [facts, input]
        default: input
      external:
        description:
          - Whether a device plugin other than KubeVirt's own advertises the device (C(externalResourceProvider)),
            from the pool row's advertiser; the filter gpuvirt.provision.wanted_devices gives C(false) for a pool
            that KubeVirt's own device plugin serves and leaves it out otherwise. Returned only when C(false).
        type: bool
        default: true
  mediated_devices:
    description: Wanted vGPU types; like O(pci_devices) with the vGPU type name as C(selector).
    type: list
    elements: dict
    default: []
    suboptions:
      selector:
        description: vGPU type name, for example C(NVIDIA A10-12Q).
        type: str
        required: true
      resource_name:
        description: Resource name, for example C(nvidia.com/NVIDIA_A10-12Q).
        type: str
        required: true
      nodes:
        description: Nodes that offer the type.
        type: list
        elements: str
        default: []
      source:
        description: C(facts) or C(input), as for O(pci_devices[].source).
        type: str
        choices: [facts, input]
        default: input
      external:
        description: As for O(pci_devices[].external).
        type: bool
        default: true
  nodes:
    description:
      - Node objects as read from the cluster (C(kubernetes.core.k8s_info)). Omit when no cluster is read
        (render mode); the names are then used as given.
    type: list
    elements: dict
extends_documentation_fragment:
  - gpuvirt.provision.attributes
'''

EXAMPLES = r'''
- name: Reconcile resource names with the nodes
  gpuvirt.provision.kubevirt_devices_plan:
    pci_devices:
      - {selector: "10DE:2236", resource_name: nvidia.com/GA102GL_A10, nodes: [gpu-1], source: facts}
    nodes: "{{ nodes_info.resources }}"
  register: plan
'''

RETURN = r'''
pci_devices:
  description: Passthrough devices with the resource names to permit (C(selector), C(resource_name)).
  returned: success
  type: list
  elements: dict
mediated_devices:
  description: vGPU types with the resource names to permit (C(selector), the type name, and C(resource_name)).
  returned: success
  type: list
  elements: dict
advertised:
  description: C(nvidia.com/*) resources per node; null when no nodes were given.
  returned: success
  type: dict
resource_names:
  description: Every resource name to permit, sorted.
  returned: success
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt

_ENTRY = dict(selector=dict(type='str', required=True), resource_name=dict(type='str', required=True),
              nodes=dict(type='list', elements='str', default=[]),
              source=dict(type='str', choices=['facts', 'input'], default='input'),
              external=dict(type='bool', default=True))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pci_devices=dict(type='list', elements='dict', default=[], options=_ENTRY),
            mediated_devices=dict(type='list', elements='dict', default=[], options=_ENTRY),
            nodes=dict(type='list', elements='dict'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    wanted = [dict(e, kind='pci') for e in p['pci_devices']] + [dict(e, kind='mdev') for e in p['mediated_devices']]
    advertised = None if p['nodes'] is None else kubevirt.advertised_from_nodes(p['nodes'])
    entries, warnings, errors = kubevirt.reconcile_resource_names(wanted, advertised)
    if errors:
        module.fail_json(msg='; '.join(errors), errors=errors, advertised=advertised)
    for warning in warnings:
        module.warn(warning)
    out = dict((kind, [dict({'selector': e['selector'], 'resource_name': e['resource_name']},
                            **({} if e.get('external', True) else {'external': False}))
                       for e in entries if e['kind'] == kind])
               for kind in ('pci', 'mdev'))
    pci, mdev = out['pci'], out['mdev']
    module.exit_json(changed=False, pci_devices=pci, mediated_devices=mdev, advertised=advertised,
                     resource_names=sorted(set(e['resource_name'] for e in entries)))


if __name__ == '__main__':
    main()
