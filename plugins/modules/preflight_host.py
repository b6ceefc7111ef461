#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: preflight_host
short_description: Judge whether a GPU host is ready for its pool, before anything changes
version_added: 0.1.0
description:
  - Takes the results of M(gpuvirt.provision.pci_devices), M(gpuvirt.provision.gpu_holders) and
    M(gpuvirt.provision.mdev_types) gathered on the host, plus the pools the inventory puts it in, and reports
    every problem a later phase would hit, each naming the value at fault and the fix.
  - Checks one pool per node, NVIDIA GPUs present, IOMMU announced by the firmware (ACPI DMAR or IVRS table)
    for VM pools, a host NVIDIA driver bound to a passthrough GPU, processes holding C(/dev/nvidia*), and that
    the requested vGPU types are offered by the host's GPUs (or, before the vGPU Manager is loaded, that they
    belong to the host's GPU models).
  - Fails when there is at least one error, unless O(fail_on_error=false). Changes nothing.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  host:
    description: The name used in the messages (the inventory name); the host's own hostname when not given.
    type: str
  pools:
    description:
      - The pools the inventory groups put this host in.
      # BEGIN GENERATED pools_prose
      - "Pools (the pool table): C(container), C(container-mig), C(vm-passthrough), C(vm-vgpu),
        C(vm-vgpu-vf), C(dra)."
      # END GENERATED pools_prose
    type: list
    elements: str
    required: true
  pci_devices:
    description: The result of M(gpuvirt.provision.pci_devices) on this host.
    type: dict
    required: true
  gpu_holders:
    description: The result of M(gpuvirt.provision.gpu_holders) on this host.
    type: dict
    default: {}
  mdev_types:
    description: The result of M(gpuvirt.provision.mdev_types) on this host.
    type: dict
    default: {}
  requested_vgpu_types:
    description: vGPU type names the host's vGPU configuration asks for (C(A10-12Q) or C(NVIDIA A10-12Q)).
    type: list
    elements: str
    default: []
  virtualization_role:
    description: C(ansible_virtualization_role) of the host; C(guest) warns that the node is itself a VM.
    type: str
    default: ''
  allow_no_gpu:
    description: Accept a host without NVIDIA GPUs (added to a pool ahead of its hardware).
    type: bool
    default: false
  vgpu_driver_version:
    description:
      - The vGPU Manager's driver version (C(580.82.02)), for a C(vm-vgpu) host whose vGPU Manager is not loaded yet
        (a driver the host has loaded, in the C(host_interface) facts of O(mdev_types), comes first).
      - Which vGPU interface the host offers is decided from its C(host_interface) facts (mdev bus, the VFs'
        C(nvidia/creatable_vgpu_types), kernel release, driver version). Before the vGPU Manager loads, kernel 6.8 or
        later with driver branch 580 or later, or an Ada Lovelace, Hopper or Blackwell GPU (pci.ids chip C(AD1xx),
        C(GH1xx), C(GB1xx)/C(GB2xx)) with branch 550 (vGPU 17) or later, brings NVIDIA's vendor-specific VFIO
        interface. The interface picks the host's row among its group's rows (C(vm-vgpu) for mdev, C(vm-vgpu-vf)
        for vendor-specific VFIO; the group's first row when nothing tells), as the fleet view does; RV(pool),
        RV(interface) and RV(interface_reason) say which and why. Without host facts only the chip rule applies, and
        the reason says so.
      - On vendor-specific VFIO a MIG-backed type (C(H100-3-40C)) is refused until MIG is handled, and, once the
        VFs list types, a type none of them lists is refused, naming those they offer.
    type: str
    default: ''
  explicit_pool:
    description:
      - The host's C(gpuvirt_pool), when set. It must name a row of the host's group, and agree with the vGPU
        interface the host shows; otherwise that is an error naming both.
    type: str
    default: ''
  fail_on_error:
    description: Fail the task when an error is found.
    type: bool
    default: true
  sysfs_root:
    description: Root of sysfs, where C(firmware/acpi/tables/DMAR) or C(IVRS) announce an IOMMU.
    type: path
    default: /sys
attributes:
  check_mode:
    description: Read-only; runs the same in check mode.
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
'''

EXAMPLES = r'''
- name: Discover
  gpuvirt.provision.pci_devices:
  register: pci

- name: Judge the host
  gpuvirt.provision.preflight_host:
    pools: [vm-passthrough]
    pci_devices: "{{ pci }}"
'''

RETURN = r'''
errors:
  description: Problems that stop the run, one sentence each naming the value and the fix.
  type: list
  elements: str
  returned: always
warnings_found:
  description:
    - Things the run will handle or that deserve attention (IOMMU off now, host is a VM...). Each is also shown
      as an Ansible warning.
  type: list
  elements: str
  returned: always
iommu_firmware:
  description: Whether the firmware announces an IOMMU (ACPI DMAR or IVRS table); null when sysfs has no ACPI tables.
  type: bool
  returned: always
pool:
  description: The pool row the host gets (where its group has several rows, the one its vGPU interface picks).
  type: str
  returned: when the host is in exactly one known pool
  sample: vm-vgpu-vf
interface:
  description: The vGPU interface its facts show or predict (C(mdev), C(vendor-vfio)); null when nothing tells or
    its group's rows do not depend on it.
  type: str
  returned: when the host is in exactly one known pool
interface_reason:
  description: The sentence naming the evidence for RV(interface); empty when the group's rows do not depend on it.
  type: str
  returned: when the host is in exactly one known pool
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.preflight import PreflightError, check_host


def firmware_iommu(sysfs_root):
    tables = os.path.join(sysfs_root, "firmware", "acpi", "tables")
    if not os.path.isdir(tables):
        return None
    return any(os.path.exists(os.path.join(tables, name)) for name in ("DMAR", "IVRS"))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str"),
            pools=dict(type="list", elements="str", required=True),
            pci_devices=dict(type="dict", required=True),
            gpu_holders=dict(type="dict", default={}),
            mdev_types=dict(type="dict", default={}),
            requested_vgpu_types=dict(type="list", elements="str", default=[]),
            virtualization_role=dict(type="str", default=""),
            allow_no_gpu=dict(type="bool", default=False),
            vgpu_driver_version=dict(type="str", default=""),
            explicit_pool=dict(type="str", default=""),
            fail_on_error=dict(type="bool", default=True),
            sysfs_root=dict(type="path", default="/sys"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    iommu_fw = firmware_iommu(params["sysfs_root"])
    found = {}
    try:
        errors, warnings = check_host(
            host=params["host"] or os.uname()[1], pools=params["pools"], pci=params["pci_devices"],
            holders=params["gpu_holders"], mdev=params["mdev_types"],
            requested_vgpu_types=params["requested_vgpu_types"], iommu_firmware=iommu_fw,
            vgpu_driver_version=params["vgpu_driver_version"],
            virtualization_role=params["virtualization_role"], allow_no_gpu=params["allow_no_gpu"],
            explicit_pool=params["explicit_pool"] or None, found=found,
        )
    except PreflightError as e:
        module.fail_json(msg="preflight cannot judge %s: %s" % (params["host"] or os.uname()[1], e))
    result = dict(changed=False, errors=errors, warnings_found=warnings, iommu_firmware=iommu_fw, **found)
    for warning in warnings:
        module.warn(warning)
    if errors and params["fail_on_error"]:
        module.fail_json(msg="preflight found %d problem(s):\n- %s" % (len(errors), "\n- ".join(errors)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
