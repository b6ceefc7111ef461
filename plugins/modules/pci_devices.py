#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pci_devices
short_description: Discover PCI GPUs, NVSwitches and their IOMMU groups, SR-IOV functions and drivers
version_added: 0.1.0
description:
  - Runs C(lspci -vmmnnkD) (machine-readable, with domain, numeric ids, driver and kernel modules) and enriches
    each device from sysfs under O(sysfs_root) - driver in use, IOMMU group and every device in it, NUMA node,
    SR-IOV (totalvfs, numvfs, VF list, physfn) and, for GPUs, the companion functions of the same slot
    (HDA audio, USB, UCSI) that must be bound to vfio-pci together with the GPU.
  - Read-only. The result shape is the contract in docs/contracts.md.
  - When the IOMMU is off, every C(iommu_group) is null and RV(iommu) says so in its C(message) and how to turn it on.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  vendors:
    description: Keep devices of these PCI vendor ids (4 hex digits). An empty list keeps every vendor.
    aliases: [vendor_ids]
    type: list
    elements: str
    default: ['10de']
  classes:
    description:
      - Keep devices whose class code starts with one of these (C(03) display, C(0302) 3D controller,
        C(0680) NVSwitch bridge, C(0403) HDA audio). Empty keeps every class.
    type: list
    elements: str
    default: []
  sysfs_root:
    description: Where sysfs is mounted, or a copied tree (sosreport, test).
    type: path
    default: /sys
  lspci_path:
    description: The lspci binary. Found on the PATH by default.
    type: path
  lspci_output:
    description:
      - lspci text to use instead of running lspci (any format C(gpuvirt.provision.parse_lspci) reads).
    type: str
  pciids:
    description: pci.ids file used to name devices lspci printed without names. The host's by default.
    type: path
extends_documentation_fragment:
  - gpuvirt.provision.attributes.read_only
notes:
  - Needs the C(pciutils) package for lspci unless O(lspci_output) is given.
'''

EXAMPLES = r'''
- name: NVIDIA GPUs and NVSwitches
  gpuvirt.provision.pci_devices:
  register: gpuvirt_pci_devices

- name: Every display device of any vendor
  gpuvirt.provision.pci_devices:
    vendors: []
    classes: ['03']

- name: From a sosreport
  gpuvirt.provision.pci_devices:
    lspci_output: "{{ lookup('ansible.builtin.file', 'sosreport/lspci') }}"
    sysfs_root: /tmp/sosreport/sys
  delegate_to: localhost
'''

RETURN = r'''
devices:
  description:
    - Devices that passed the filters, sorted by BDF, each with bdf, class_id, class_name, vendor_id, vendor_name,
      device_id, device_name, subsystem_vendor_id, subsystem_device_id, revision, driver, kernel_modules,
      iommu_group, iommu_group_devices, numa_node, kind (gpu, nvswitch, audio, usb, serial, bridge, other),
      is_vf, physfn, sriov (totalvfs, numvfs, vfs) and companions.
  returned: always
  type: list
  elements: dict
gpus:
  description: The devices of kind gpu (physical and virtual functions).
  returned: always
  type: list
  elements: dict
nvswitches:
  description: The devices of kind nvswitch.
  returned: always
  type: list
  elements: dict
gpus_by_driver:
  description: GPU BDFs by driver in use; C(none) for GPUs with no driver bound.
  returned: always
  type: dict
  sample: {vfio-pci: ["0000:41:00.0"], none: ["0000:c1:00.0"]}
iommu:
  description: Whether the IOMMU is on (groups exist), the number of groups and a sentence saying so.
  returned: always
  type: dict
  sample: {enabled: false, groups: 0, message: "IOMMU is off: no groups under /sys/kernel/iommu_groups; ..."}
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import lspci as lspci_mod
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pciids as pciids_mod
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import sysfs_pci

LSPCI_ARGS = ['-vmm', '-nn', '-k', '-D']


def run_lspci(module):
    path = module.params['lspci_path'] or module.get_bin_path('lspci')
    if not path:
        module.fail_json(msg='lspci was not found on the PATH; install the pciutils package (apt-get/dnf install '
                             'pciutils) or give lspci_path or lspci_output')
    rc, out, err = module.run_command([path] + LSPCI_ARGS)
    if rc != 0:
        # lspci warns on stderr ("Unable to load libkmod resources") yet succeeds; only a failure is fatal
        module.fail_json(msg='%s %s failed (rc=%d): %s' % (path, ' '.join(LSPCI_ARGS), rc, err.strip()))
    return out


def vendor_names(path):
    try:
        db = pciids_mod.load(path)
    except pciids_mod.PciIdsError as e:
        if path:
            raise
        return None, str(e)  # the host has no pci.ids: the -nn ids still identify every device
    return db, None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            vendors=dict(type='list', elements='str', default=['10de'], aliases=['vendor_ids']),
            classes=dict(type='list', elements='str', default=[]),
            sysfs_root=dict(type='path', default='/sys'),
            lspci_path=dict(type='path'),
            lspci_output=dict(type='str'),
            pciids=dict(type='path'),
        ),
        mutually_exclusive=[('lspci_path', 'lspci_output')],
        supports_check_mode=True,
    )
    p = module.params
    try:
        sysfs_pci.check_filters(p['vendors'], p['classes'])
        db, warning = vendor_names(p['pciids'])
    except (sysfs_pci.SysfsError, pciids_mod.PciIdsError) as e:
        module.fail_json(msg=str(e))
    text = p['lspci_output'] if p['lspci_output'] is not None else run_lspci(module)
    try:
        result = sysfs_pci.discover(text, p['sysfs_root'], p['vendors'], p['classes'],
                                    db.vendor_ids_by_name() if db else None)
    except (sysfs_pci.SysfsError, lspci_mod.LspciError) as e:
        module.fail_json(msg=str(e))
    if db:
        for d in result['devices']:
            if not d.get('device_name') or d['device_name'] in ('Device', 'Device ' + (d['device_id'] or '')):
                d['device_name'] = db.device_name(d['vendor_id'], d['device_id']) or d['device_name']
            d['vendor_name'] = d.get('vendor_name') or db.vendor_name(d['vendor_id'])
    if warning:
        module.warn(warning)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
