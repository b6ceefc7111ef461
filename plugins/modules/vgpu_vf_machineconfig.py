#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vgpu_vf_machineconfig
short_description: Build the MachineConfig that restores vendor-VFIO vGPU VF profiles at boot on one OpenShift pool
version_added: 0.1.0
description:
  - Returns one C(MachineConfig) for O(pool) carrying the C(vgpu_vf) role's boot-time restore as files under C(/etc)
    (the script C(/etc/gpuvirt/vgpu-vf-restore), its config C(/etc/gpuvirt/vgpu-vf-profiles.json)) and the enabled
    systemd unit C(gpuvirt-vgpu-vf.service), for the Machine Config Operator to write and roll out (drain and
    reboot, node by node); at boot the unit enables the VFs and gives each its saved profile.
  - O(hosts) are the vendor-VFIO hosts of the pool, each with the boot-time config the C(vgpu_vf_profiles) module's
    O(gpuvirt.provision.vgpu_vf_profiles#module:plan) computed on it. They must all compute the same config, since a
    MachineConfig reaches every node of its pool alike; otherwise it fails before anything is written, naming each
    group of hosts and its config.
  - With O(pools) and O(nodes) (read from the cluster), the pool must exist and manage exactly the hosts' nodes (a
    node a custom pool selects belongs to that pool, not to C(worker)); otherwise it fails, naming the nodes.
  - Reads nothing and writes nothing itself. See docs/pools/vendor-vfio.md, "OpenShift".
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  pool:
    description: The MachineConfigPool of the hosts' nodes.
    type: str
    required: true
  hosts:
    description:
      - Each host as C({host, node, persist}), C(persist) being the RV(gpuvirt.provision.vgpu_vf_profiles#module:persist)
        result of its plan. Every config is checked again by the role's config grammar; its paths and timeout
        are replaced by O(sysfs_root), O(sriov_manage) and O(timeout).
    type: list
    elements: dict
    required: true
  pools:
    description: The cluster's MachineConfigPool objects; omit to leave the pool's membership unchecked.
    type: list
    elements: dict
  nodes:
    description: The cluster's Node objects, with O(pools).
    type: list
    elements: dict
    default: []
  script:
    description: The text of the C(vgpu_vf) role's restore script (it carries the role's marker).
    type: str
    required: true
  python:
    description: The Python 3 interpreter the unit runs the script with (the unit's path grammar).
    type: str
    default: /usr/bin/python3
  timeout:
    description: Seconds (10 to 3600) the restore waits at boot for the driver's sysfs files.
    type: int
    default: 300
  sysfs_root:
    description: The sysfs root the restore reads at boot (C(/sys) on a node).
    type: str
    default: /sys
  sriov_manage:
    description: >-
      NVIDIA's script that enables VFs at boot; where it is not on the node (the GPU Operator's vGPU Manager
      container enables them), the restore waits for the VFs and never writes C(sriov_numvfs).
    type: str
    default: /usr/lib/nvidia/sriov-manage
  name:
    description: MachineConfig name; default C(100-<pool>-gpuvirt-vgpu-vf).
    type: str
extends_documentation_fragment:
  - gpuvirt.provision.attributes
'''

EXAMPLES = r'''
- name: The VF MachineConfig of pool gpu-l40s
  gpuvirt.provision.vgpu_vf_machineconfig:
    pool: gpu-l40s
    hosts:
      - {host: gpu-l40s-01, node: gpu-l40s-01, persist: "{{ hostvars['gpu-l40s-01'].planned.persist }}"}
    script: "{{ lookup('ansible.builtin.file', 'gpuvirt_vgpu_vf_restore.py') }}"
  register: vf_mc
'''

RETURN = r'''
objects:
  description: The MachineConfig, as a one-element list.
  returned: success
  type: list
  elements: dict
machineconfig_name:
  description: Name of the MachineConfig.
  returned: success
  type: str
config:
  description: The one boot-time config the MachineConfig carries.
  returned: success
  type: dict
summary:
  description: "The config in one line, C(<PF>: <VF> <type>, ...)."
  returned: success
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc


def build(p):
    config = mc.vgpu_vf_pool_config(p['pool'], p['hosts'], p['pools'], p['nodes'], p['sysfs_root'],
                                    p['sriov_manage'], p['timeout'])
    built = mc.build_vgpu_vf_machineconfig(p['pool'], p['script'], p['python'], p['timeout'], config, p['name'])
    return dict(objects=[built], machineconfig_name=built['metadata']['name'], config=config,
                summary=mc.describe_boot_config(config))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pool=dict(type='str', required=True),
            hosts=dict(type='list', elements='dict', required=True),
            pools=dict(type='list', elements='dict'),
            nodes=dict(type='list', elements='dict', default=[]),
            script=dict(type='str', required=True),
            python=dict(type='str', default='/usr/bin/python3'),
            timeout=dict(type='int', default=300),
            sysfs_root=dict(type='str', default='/sys'),
            sriov_manage=dict(type='str', default='/usr/lib/nvidia/sriov-manage'),
            name=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, mc.ManifestError)


if __name__ == '__main__':
    main()
