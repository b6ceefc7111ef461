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
  - Done means the pool has machines, every one is updated and ready, the pool is not updating, it observed its
    latest spec and its rendered configuration includes O(machineconfig_name); with O(expected_nodes) also that
    each of those nodes runs the rendered configuration, and for a O(dedicated) pool that it holds exactly them.
    A pool that selects no node is never done.
  - Fails when the pool is degraded and O(fail_on_degraded) is true, with the condition message; fails when the
    pool is paused (C(spec.paused)) and not done and O(fail_on_paused) is true, with the command that unpauses it.
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
  fail_on_paused:
    description:
      - Fail (instead of reporting) when the pool is paused and not done. The Machine Config Operator rolls nothing
        out to a paused pool, so a wait for it would only time out.
    type: bool
    default: false
  expected_nodes:
    description:
      - Names of the nodes that must be in the pool. Done then also needs each of them to run the pool's rendered
        config, as their machine-config-daemon annotations (C(machineconfiguration.openshift.io/currentConfig),
        C(desiredConfig), C(state=Done)) say.
    type: list
    elements: str
    default: []
  nodes:
    description: The Node objects (as returned by C(kubernetes.core.k8s_info)) to judge O(expected_nodes) by.
    type: list
    elements: dict
    default: []
  dedicated:
    description: The pool is a dedicated GPU pool, which must hold exactly the O(expected_nodes).
    type: bool
    default: false
  rendered_configs:
    description:
      - The rendered MachineConfigs that hold the current content of O(machineconfig_name) (filter
        P(gpuvirt.provision.mcp_rendered_with#filter)). Given, done also needs the pool's rendered config
        (C(status.configuration.name)) to be one of them, because after an edit the pool keeps showing the
        previous rendered config as updated until the new content is rendered and rolled out.
    type: list
    elements: str
extends_documentation_fragment:
  - gpuvirt.provision.attributes
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
paused:
  description: The pool is paused (C(spec.paused) is true).
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
rendered:
  description: The pool's current rendered config (C(status.configuration.name)).
  returned: success
  type: str
waiting:
  description: The expected nodes not yet running the rendered config, each with its daemon's annotations.
  returned: success
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc


def build(p):
    return mc.checked_pool_status(p['pool'], p['fail_on_degraded'], p['fail_on_paused'],
                                  machineconfig_name=p['machineconfig_name'], expected_nodes=p['expected_nodes'],
                                  nodes=p['nodes'], dedicated=p['dedicated'], rendered_configs=p['rendered_configs'])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pool=dict(type='dict', required=True),
            machineconfig_name=dict(type='str'),
            fail_on_degraded=dict(type='bool', default=True),
            fail_on_paused=dict(type='bool', default=False),
            expected_nodes=dict(type='list', elements='str', default=[]),
            nodes=dict(type='list', elements='dict', default=[]),
            dedicated=dict(type='bool', default=False),
            rendered_configs=dict(type='list', elements='str'),
        ),
        supports_check_mode=True,
    )
    # a pool it fails on: the message, and the whole status beside it
    module_kit.exit_built(module, build, mc.PoolFailure, failure=lambda exc: exc.status)


if __name__ == '__main__':
    main()
