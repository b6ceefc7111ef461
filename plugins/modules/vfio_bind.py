#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vfio_bind
short_description: Bind PCI devices to vfio-pci at runtime through sysfs
version_added: 0.1.0
description:
  - For each device, writes the driver to C(driver_override), unbinds the current driver and writes the
    address to C(drivers_probe), then checks the device is bound.
  - Changes nothing for a device already bound with the override set.
  - Checks every device before touching any, so a missing device or an IOMMU that is off fails before a change.
  - Does not check processes holding the devices; the C(vfio) role does that first with C(gpu_holders).
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  devices:
    description: PCI addresses with domain, such as C(0000:41:00.0). Bind all functions of an IOMMU group together.
    type: list
    elements: str
    required: true
  driver:
    description: Driver to bind to.
    type: str
    default: vfio-pci
  include_group:
    description:
      - Also bind every other device of each device's IOMMU group (PCI bridges excepted), as vfio requires.
    type: bool
    default: true
  inspect_only:
    description:
      - Change nothing and do not require an IOMMU; only report each device's state (ids, driver, group).
        Fails only for a device that does not exist. Used to validate input before any change.
    type: bool
    default: false
  load_module:
    description: Run C(modprobe) for the driver when C(/sys/bus/pci/drivers/<driver>) is missing.
    type: bool
    default: true
  sysfs_root:
    description: Root of sysfs; tests point it at a copied tree.
    type: path
    default: /sys
attributes:
  check_mode:
    description: Reports the steps each device needs and writes nothing.
    support: full
  diff_mode:
    description: Not supported.
    support: none
'''

EXAMPLES = r'''
- name: Bind a GPU and its audio function to vfio-pci
  gpuvirt.provision.vfio_bind:
    devices: ["0000:41:00.0", "0000:41:00.1"]
'''

RETURN = r'''
devices:
  description:
    - Per device, its ids, IOMMU group, the driver before and after and the steps taken (or needed).
    - A driver's name is shown only where it is a kernel module name (letters, digits, C(_) and C(-)), else C(?);
      null for no driver.
  returned: always
  type: list
  elements: dict
  sample: [{bdf: "0000:41:00.0", vendor_id: "10de", device_id: "2236", class_id: "0302", iommu_group: "44",
            driver_before: nouveau, driver: vfio-pci, steps: [override, unbind, probe]}]
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vfio_bind as vb


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type='list', elements='str', required=True),
            driver=dict(type='str', default='vfio-pci'),
            include_group=dict(type='bool', default=True),
            inspect_only=dict(type='bool', default=False),
            load_module=dict(type='bool', default=True),
            sysfs_root=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    root, driver = module.params['sysfs_root'], module.params['driver']
    try:
        for bdf in module.params['devices']:
            vb.validate_bdf(bdf)
        bdfs = module.params['devices']
        for st in [vb.state(root, bdf) for bdf in bdfs]:
            vb.check_bindable(st, driver, require_iommu=False)
        if module.params['include_group']:
            bdfs = vb.expand_groups(root, bdfs)
        states = [vb.state(root, bdf) for bdf in bdfs]
        if not module.params['inspect_only']:
            for st in states:
                vb.check_bindable(st, driver)
    except vb.BindError as e:
        module.fail_json(msg=to_native(e))

    results, changed = [], False
    for st in states:
        steps = vb.plan(st, driver)
        res = dict((k, st[k]) for k in ('bdf', 'vendor_id', 'device_id', 'class_id', 'iommu_group'))
        # a driver's name as shown (the vfio role's refusal prints it): a kernel module name, else "?"
        res.update(driver=vb.shown_driver(st['driver']), driver_before=vb.shown_driver(st['driver']), steps=steps)
        results.append(res)
        changed = changed or bool(steps)
    if module.params['inspect_only']:
        module.exit_json(changed=False, devices=results)
    if not changed or module.check_mode:
        module.exit_json(changed=changed, devices=results)

    if module.params['load_module'] and not os.path.isdir(os.path.join(root, 'bus', 'pci', 'drivers', driver)):
        rc, out, err = module.run_command([module.get_bin_path('modprobe', required=True), driver])
        if rc != 0:
            module.fail_json(msg='modprobe %s failed: %s' % (driver, (err or out).strip()), devices=results)
    failed = []
    for st, res in zip(states, results):
        try:
            vb.apply(root, st, res['steps'], driver)
        except (IOError, OSError) as e:
            failed.append('%s: %s' % (st['bdf'], to_native(e)))
            continue
        res['driver'] = vb.shown_driver(vb.state(root, st['bdf'])['driver'])
        if res['driver'] != driver:
            failed.append('%s is bound to %s after probing, not %s' % (st['bdf'], res['driver'] or 'no driver', driver))
    if failed:
        module.fail_json(msg='binding to %s failed: %s (see dmesg)' % (driver, '; '.join(failed)),
                         changed=True, devices=results)
    module.exit_json(changed=True, devices=results)


if __name__ == '__main__':
    main()
