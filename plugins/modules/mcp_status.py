#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: mcp_status
short_description: Evaluate a MachineConfigPool's rollout (updated, ready, degraded with the reason)
version_added: 0.1.0
description:
  - Reads the counters and conditions of a C(MachineConfigPool) object (as returned by
    C(kubernetes.core.k8s_info)) and says whether the rollout is done.
  - Done means every machine is updated and ready, the pool is not updating, it observed its latest spec and
    its rendered configuration includes O(machineconfig_name).
  - Fails when the pool is degraded and O(fail_on_degraded) is true, with the condition message.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  pool:
    description: The MachineConfigPool object.
    type: dict
    required: true
  machineconfig_name:
    description: MachineConfig that must be part of the rendered configuration.
    type: str
  fail_on_degraded:
    description: Fail (instead of reporting) when the pool is degraded.
    type: bool
    default: true
attributes:
  check_mode:
    description: Builds or evaluates data only; nothing on a host or cluster changes in any mode.
    support: full
  diff_mode:
    description: Not supported; the role that applies or renders the result shows the diff.
    support: none
'''

EXAMPLES = r'''
- name: Evaluate the GPU pool
  gpuvirt.provision.mcp_status:
    pool: "{{ mcp_info.resources[0] }}"
    machineconfig_name: 100-gpu-gpuvirt-iommu
  register: st
'''

RETURN = r'''
done:
  description: The rollout is complete.
  returned: success
  type: bool
degraded:
  description: The pool or a machine is degraded.
  returned: success
  type: bool
reason:
  description: Degraded condition messages.
  returned: success
  type: str
message:
  description: One line, for example C(gpu 2/3 machines updated, 2 ready).
  returned: always
  type: str
machineCount:
  description: Machines in the pool.
  returned: success
  type: int
updatedMachineCount:
  description: Machines running the pool's current rendered config.
  returned: success
  type: int
readyMachineCount:
  description: Updated machines that are ready.
  returned: success
  type: int
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pool=dict(type='dict', required=True),
            machineconfig_name=dict(type='str'),
            fail_on_degraded=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    status = mc.pool_status(module.params['pool'], module.params['machineconfig_name'])
    if status['degraded'] and module.params['fail_on_degraded']:
        module.fail_json(msg='MachineConfigPool %s' % status['message'], **status)
    module.exit_json(changed=False, **status)


if __name__ == '__main__':
    main()
