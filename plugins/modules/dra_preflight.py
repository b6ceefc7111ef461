#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: dra_preflight
short_description: Say which processes holding /dev/nvidia* would block a DRA passthrough rebind
version_added: 0.1.0
description:
  - Classifies the holders reported by M(gpuvirt.provision.gpu_holders) (see docs/contracts.md) as display
    manager, DCGM, dcgm-exporter, nvidia-persistenced or other, with the fix for each.
  - nvidia-persistenced only blocks with a DRA driver older than 0.4.0 (0.4.0 pauses persistence mode itself).
  - Fails listing the blockers when O(fail_on_blocking) is true.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  holders:
    description: C(holders) of a M(gpuvirt.provision.gpu_holders) result (C(pid), C(command), C(device), C(unit)).
    type: list
    elements: dict
    default: []
  dra_driver_version:
    description: Version of the DRA driver chart to be installed.
    type: str
    default: 0.4.1
  fail_on_blocking:
    description: Fail when something blocks the rebind.
    type: bool
    default: true
extends_documentation_fragment:
  - gpuvirt.provision.attributes
'''

EXAMPLES = r'''
- name: Check the GPU holders of this host
  gpuvirt.provision.dra_preflight:
    holders: "{{ gpu_holders_result.holders }}"
'''

RETURN = r'''
blocking:
  description: Holders that block, each C(category), C(pid), C(unit), C(device), C(message).
  returned: always
  type: list
  elements: dict
non_blocking:
  description: Holders that do not block, same shape.
  returned: always
  type: list
  elements: dict
message:
  description: One line per blocker.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra


def main():
    module = AnsibleModule(
        argument_spec=dict(
            holders=dict(type='list', elements='dict', default=[]),
            dra_driver_version=dict(type='str', default='0.4.1'),
            fail_on_blocking=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    try:
        result = dra.classify_holders(module.params['holders'], module.params['dra_driver_version'])
    except dra.ManifestError as exc:
        module.fail_json(msg=str(exc))
    # 'warnings' is a reserved result key: hand the non-blocking holders back under another name
    result['non_blocking'] = result.pop('warnings')
    for entry in result['non_blocking']:
        module.warn(entry['message'])
    if result['blocking'] and module.params['fail_on_blocking']:
        module.fail_json(msg='processes hold GPUs that DRA must rebind to vfio-pci:\n' + result['message'], **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
