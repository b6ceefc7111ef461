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
  - Returns a KubeVirt C(VirtualMachine) with one C(spec.domain.devices.gpus) entry for O(settings.resource) (or
    the first resource of O(expected)) and a containerDisk O(settings.image). Nothing is sent anywhere.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  expected:
    description:
      - 'The resources the run expects per node, C({node: {resource name: minimum count}}) (C(verify_expected),
        computed by C(playbooks/verify.yml) from the host facts); the VM asks for the first one when
        O(settings.resource) is not given.'
    type: dict
    default: {}
extends_documentation_fragment:
  - gpuvirt.provision.attributes.builds_only
  # settings (the verify settings, one mapping): the doc fragment gpuvirt.provision.settings.verify
  - gpuvirt.provision.settings.verify
'''

EXAMPLES = r'''
- name: Smoke VM on an A10
  gpuvirt.provision.verify_smoke_vm:
    settings:
      resource: nvidia.com/GA102GL_A10
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
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify_settings


# the resources the run expects per node (from the host facts): the VM's resource when the settings give none
READS = ('expected',)


def build(p):
    settings = verify_settings.build(p['settings'])
    return dict(object=verify.smoke_vm(settings.name, settings.namespace, settings.resource_name(p['expected']),
                                       settings.image, settings.memory, settings.running))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # the settings' schema is the record's (manifests/verify_settings.py FIELDS): a new setting edits no
            # line here
            settings=dict(type='dict', required=True, options=verify_settings.argument_spec()),
            expected=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, verify.ManifestError)


if __name__ == '__main__':
    main()
