#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: verify_smoke_vm
short_description: Build a small VirtualMachine that requests one GPU, to prove VMs get GPUs
version_added: 0.1.0
description:
  - Returns a KubeVirt C(VirtualMachine) with one C(spec.domain.devices.gpus) entry for O(resource_name) and a
    containerDisk O(image). Nothing is sent anywhere.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  name:
    description: VM name.
    type: str
    default: gpuvirt-smoke
  namespace:
    description: VM namespace.
    type: str
    default: default
  resource_name:
    description: Device plugin resource, e.g. C(nvidia.com/GA102GL_A10).
    type: str
    required: true
  image:
    description: containerDisk image.
    type: str
    required: true
  memory:
    description: Memory request.
    type: str
    default: 2Gi
  running:
    description: Start the VM (C(runStrategy=Always)) instead of creating it halted.
    type: bool
    default: false
extends_documentation_fragment:
  - gpuvirt.provision.attributes.builds_only
'''

EXAMPLES = r'''
- name: Smoke VM on an A10
  gpuvirt.provision.verify_smoke_vm:
    resource_name: nvidia.com/GA102GL_A10
    image: quay.io/containerdisks/fedora:41
  register: vm
'''

RETURN = r'''
object:
  description: The VirtualMachine.
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify


def build(p):
    return dict(object=verify.smoke_vm(p['name'], p['namespace'], p['resource_name'], p['image'], p['memory'],
                                       p['running']))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', default='gpuvirt-smoke'),
            namespace=dict(type='str', default='default'),
            resource_name=dict(type='str', required=True),
            image=dict(type='str', required=True),
            memory=dict(type='str', default='2Gi'),
            running=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, verify.ManifestError)


if __name__ == '__main__':
    main()
