#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: verify_node_resources
short_description: Compare the nvidia.com/* resources nodes advertise with what each should advertise
version_added: 0.1.0
description:
  - Compares each node's C(status.allocatable) with the expected C(nvidia.com/*) resources and minimum counts.
  - Returns C(ok) and one message per node listing expected vs advertised; it does not fail on a mismatch, so a
    task can retry it with C(until) while the device plugins come up. Nothing is sent anywhere.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  expected:
    description: 'C({node: {resource name: minimum count}}).'
    type: dict
    required: true
  nodes:
    description: Node objects.
    type: list
    elements: dict
    required: true
extends_documentation_fragment:
  - gpuvirt.provision.attributes.reads_data
'''

EXAMPLES = r'''
- name: Compare
  gpuvirt.provision.verify_node_resources:
    expected: {gpu-1: {nvidia.com/GA102GL_A10: 2}}
    nodes: "{{ nodes.resources }}"
  register: check
'''

RETURN = r'''
ok:
  description: Every node advertises every expected resource.
  returned: success
  type: bool
report:
  description: Per node C(expected), C(advertised), C(missing) and C(message).
  returned: success
  type: dict
messages:
  description: The per-node messages, failing nodes first.
  returned: success
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify


def build(params):
    ok, report = verify.compare(params['expected'], params['nodes'])
    messages = [r['message'] for r in report.values() if r['missing']] + \
        [r['message'] for r in report.values() if not r['missing']]
    return dict(ok=ok, report=report, messages=messages)


def main():
    module = AnsibleModule(
        # what the run computed (the expected resources, from the host facts) and read (the Nodes): no setting, so
        # no settings option (manifests/verify_settings.py is the smoke VM's)
        argument_spec=dict(
            expected=dict(type='dict', required=True),
            nodes=dict(type='list', elements='dict', required=True),
        ),
        supports_check_mode=True,
    )
    # a comparison, which refuses no input
    module_kit.exit_built(module, build, ())


if __name__ == '__main__':
    main()
