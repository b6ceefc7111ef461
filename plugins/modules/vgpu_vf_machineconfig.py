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
  - Returns one C(MachineConfig) (C(100-<pool>-gpuvirt-vgpu-vf)) for O(settings.pool) carrying the C(vgpu_vf) role's
    boot-time restore as files under C(/etc) (the script C(/etc/gpuvirt/vgpu-vf-restore), its config
    C(/etc/gpuvirt/vgpu-vf-profiles.json)) and the enabled systemd unit C(gpuvirt-vgpu-vf.service), for the Machine
    Config Operator to write and roll out (drain and reboot, node by node); at boot the unit enables the VFs and gives
    each its saved profile.
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
  hosts:
    description:
      - Each host as C({host, node, persist}), C(persist) being the RV(gpuvirt.provision.vgpu_vf_profiles#module:persist)
        result of its plan (the fleet view, computed on each host, not a setting). Every config is checked again by
        the role's config grammar; its paths and timeout are replaced by O(settings.sysfs_root),
        O(settings.sriov_manage) and O(settings.timeout).
    type: list
    elements: dict
    required: true
  pools:
    description: The cluster's MachineConfigPool objects (read); omit to leave the pool's membership unchecked.
    type: list
    elements: dict
  nodes:
    description: The cluster's Node objects (read), with O(pools).
    type: list
    elements: dict
    default: []
  script:
    description: >-
      The text of the C(vgpu_vf) role's restore script (it carries the role's marker): the role's own file, read by
      the role, not a setting.
    type: str
    required: true
extends_documentation_fragment:
  - gpuvirt.provision.attributes
  # settings (the vgpu_vf MachineConfig settings, one mapping): the doc fragment
  # gpuvirt.provision.settings.vgpu_vf_machineconfig
  - gpuvirt.provision.settings.vgpu_vf_machineconfig
'''

EXAMPLES = r'''
- name: The VF MachineConfig of pool gpu-l40s
  gpuvirt.provision.vgpu_vf_machineconfig:
    settings:
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
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_vf_machineconfig_settings

# the hosts (the fleet view: each host's node and the config its plan computed on the host), what the run read from
# the cluster (the pools and the nodes) and the role's own restore script: each an option of its own, beside the
# settings
READS = ('hosts', 'pools', 'nodes', 'script')


def build(p):
    settings = vgpu_vf_machineconfig_settings.build(p['settings'])
    config = mc.vgpu_vf_pool_config(settings.pool, p['hosts'], p['pools'], p['nodes'], settings.sysfs_root,
                                    settings.sriov_manage, settings.timeout)
    # always the default name (100-<pool>-gpuvirt-vgpu-vf): no inventory variable names it, and the role never did
    built = mc.build_vgpu_vf_machineconfig(settings.pool, p['script'], settings.python, settings.timeout, config)
    return dict(objects=[built], machineconfig_name=built['metadata']['name'], config=config,
                summary=mc.describe_boot_config(config))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # the settings' schema is the record's (manifests/vgpu_vf_machineconfig_settings.py FIELDS): a new
            # setting edits no line here
            settings=dict(type='dict', required=True, options=vgpu_vf_machineconfig_settings.argument_spec()),
            hosts=dict(type='list', elements='dict', required=True),
            pools=dict(type='list', elements='dict'),
            nodes=dict(type='list', elements='dict', default=[]),
            script=dict(type='str', required=True),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, mc.ManifestError)


if __name__ == '__main__':
    main()
