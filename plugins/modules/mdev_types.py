#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: mdev_types
short_description: Discover vGPU types on the mdev and NVIDIA vendor-specific VFIO interfaces
version_added: 0.1.0
description:
  - Reads both kernel interfaces for vGPU. mdev - C(/sys/class/mdev_bus/<parent>/mdev_supported_types/<type>/)
    (C(name), C(description), C(available_instances), C(device_api)) on PFs or SR-IOV VFs, and the mdev
    instances on each parent. NVIDIA vendor-specific VFIO (vGPU 17 and later) - per VF
    C(nvidia/creatable_vgpu_types) and C(current_vgpu_type).
  - Says which case holds - no interface at all (vGPU Manager not loaded), types that exist but none available,
    or types available.
  - Says which vGPU interface the host offers (RV(host_interface)) from what it shows - the mdev bus, the VFs'
    C(nvidia/creatable_vgpu_types), the kernel release (C(<proc_root>/sys/kernel/osrelease)) and the loaded NVIDIA
    driver (C(<sysfs_root>/module/nvidia/version)) - each piece of evidence named.
  - Read-only.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  sysfs_root:
    description: Where sysfs is mounted, or a copied tree.
    type: path
    default: /sys
  proc_root:
    description:
      - Where procfs is mounted, for the kernel release; give the copy's with a copied O(sysfs_root).
    type: path
    default: /proc
  mdevctl_json:
    description:
      - Output of C(mdevctl types --dumpjson) to read as well (parents sysfs already showed are not repeated).
    type: str
extends_documentation_fragment:
  - gpuvirt.provision.attributes.read_only
'''

EXAMPLES = r'''
- name: vGPU types of this host
  gpuvirt.provision.mdev_types:
  register: gpuvirt_mdev_types

- name: Fail early when no vGPU type is available
  ansible.builtin.assert:
    that: gpuvirt_mdev_types.state == 'available'
    fail_msg: "{{ gpuvirt_mdev_types.message }}"
'''

RETURN = r'''
parents:
  description:
    - One entry per parent device - C(parent) (BDF), C(interface) (C(mdev) or C(vendor_vfio)), C(physfn) (PF of
      a VF parent), C(types), C(devices) (existing vGPUs with C(uuid), C(type_id), C(name)) and C(current_type)
      (vendor_vfio only).
    - Each type has C(type_id), C(name), C(short_name) (as vgpu-device-manager configs write it, C(A10-12Q)),
      C(available_instances), C(device_api), C(description), C(framebuffer_mib), C(max_instance), C(num_heads),
      C(frl_config), C(max_resolution).
  returned: always
  type: list
  elements: dict
interfaces:
  description: Interfaces found.
  returned: always
  type: list
  elements: str
state:
  description: C(none) (no interface), C(exhausted) (types but none available), C(unreadable) (none known
    available and some C(available_instances) is not a number; RV(message) names the file and value) or
    C(available).
  returned: always
  type: str
available_types:
  description: Names of the types with an instance available on some parent.
  returned: always
  type: list
  elements: str
message:
  description: One sentence saying which state holds and why.
  returned: always
  type: str
host_interface:
  description:
    - Which vGPU interface the host offers - C(interface) is C(mdev) (parents on C(/sys/class/mdev_bus), or listed by
      C(mdevctl)), C(vendor-vfio) (a VF with C(nvidia/creatable_vgpu_types); also when other GPUs are on the mdev
      bus) or C(none) (neither yet - the vGPU Manager is not loaded or its VFs are not enabled).
    - C(evidence) is the list of sentences that decided it, the last one the kernel release and driver version;
      C(kernel_release) and C(driver_version) are those values, null when absent or not of their grammar.
  returned: always
  type: dict
  sample:
    interface: vendor-vfio
    evidence:
      - 0000:41:00.4 has nvidia/creatable_vgpu_types and no mdev_supported_types
      - kernel 6.8.0-60-generic, driver 580.82.02
    kernel_release: 6.8.0-60-generic
    driver_version: 580.82.02
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_types


def build(params):
    return vgpu_types.discover(params['sysfs_root'], params['mdevctl_json'], params['proc_root'])


def main():
    module = AnsibleModule(
        argument_spec=dict(sysfs_root=dict(type='path', default='/sys'), proc_root=dict(type='path', default='/proc'),
                           mdevctl_json=dict(type='str')),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, vgpu_types.VgpuError)


if __name__ == '__main__':
    main()
