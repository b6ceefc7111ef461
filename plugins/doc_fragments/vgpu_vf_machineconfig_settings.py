# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the vgpu_vf MachineConfig settings (O(settings)): one entry per field of
plugins/module_utils/manifests/vgpu_vf_machineconfig_settings.py FIELDS, whose argument_spec() is the module's schema;
a unit test (tests/unit/plugins/module_utils/manifests/test_vgpu_vf_machineconfig_settings.py) holds them equal."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.vgpu_vf_machineconfig_settings: vgpu_vf_machineconfig
    DOCUMENTATION = r'''
options:
  settings:
    description:
      - The settings of the C(vgpu_vf) role's cluster step, one mapping built once from the inventory
        (C(roles/vgpu_vf) tasks/machineconfig.yml, C(__vgpu_vf_machineconfig_settings)); its suboptions are the
        fields of the record the module reads (C(plugins/module_utils/manifests/vgpu_vf_machineconfig_settings.py)).
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        to text, a decimal text to a whole number).
    type: dict
    required: true
    suboptions:
      pool:
        description:
          - The MachineConfigPool that manages exactly the hosts' nodes (C(vgpu_vf_machineconfig_pool)), a DNS-1123
            label; the MachineConfig's role label and name.
        type: str
        default: worker
      python:
        description:
          - The Python 3 interpreter the unit runs the restore script with (C(vgpu_vf_python)), by the unit's path
            grammar (a normalised absolute path of letters, digits and ._/-).
        type: str
        default: /usr/bin/python3
      timeout:
        description:
          - Seconds (10 to 3600) the restore waits at boot for the driver's sysfs files (C(vgpu_vf_wait_timeout));
            the unit's C(TimeoutStartSec) follows it.
        type: int
        default: 300
      sysfs_root:
        description:
          - The sysfs root the restore reads at boot (C(vgpu_vf_machineconfig_sysfs_root); C(/sys) on a node), by the
            unit's path grammar; it replaces each host's own in the config.
        type: str
        default: /sys
      sriov_manage:
        description:
          - NVIDIA's script that enables VFs at boot (C(vgpu_vf_machineconfig_sriov_manage)), by the unit's path
            grammar; where it is not on the node (the GPU Operator's vGPU Manager container enables them), the
            restore waits for the VFs and never writes C(sriov_numvfs).
        type: str
        default: /usr/lib/nvidia/sriov-manage
'''
