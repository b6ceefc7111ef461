# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read PCI facts from sysfs (IOMMU groups, SR-IOV, NUMA, driver in use) and merge them into lspci's device
list. Every reader takes ``root`` (default /sys) so tests and sosreports can point at a copied tree."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import lspci as lspci_mod
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import hex_id, link_name, list_names, read_text

HEX4 = re.compile(r'[0-9a-f]{4}')
CLASS_FILTER = re.compile(r'[0-9a-f]{2}([0-9a-f]{2})?')
# a count or node number as sysfs prints it; bounded, so int() never sees a string too long to convert
NUMBER = re.compile(r'[0-9]{1,9}')


class SysfsError(ValueError):
    pass


def _read(path):
    return read_text(path, SysfsError)


def _count(base, name, value):
    """An SR-IOV count file's value as an int (absent or empty: 0); anything else raises naming the file."""
    if not value:
        return 0
    if not NUMBER.fullmatch(value):
        raise SysfsError('%s reads %r; expected a non-negative integer (the kernel prints the number of '
                         'virtual functions)' % (os.path.join(base, name), value[:100]))
    return int(value)


def pci_dir(root, bdf):
    return os.path.join(root, 'bus', 'pci', 'devices', bdf)


def list_bdfs(root):
    return list_names(os.path.join(root, 'bus', 'pci', 'devices'))


def read_device(root, bdf):
    """What sysfs knows about one device, or None when it is not there."""
    base = pci_dir(root, bdf)
    if not os.path.isdir(base):
        return None
    numa = _read(os.path.join(base, 'numa_node'))
    dev = {
        'class_id': hex_id(_read(os.path.join(base, 'class')), 4),
        'vendor_id': hex_id(_read(os.path.join(base, 'vendor')), 4),
        'device_id': hex_id(_read(os.path.join(base, 'device')), 4),
        'subsystem_vendor_id': hex_id(_read(os.path.join(base, 'subsystem_vendor')), 4),
        'subsystem_device_id': hex_id(_read(os.path.join(base, 'subsystem_device')), 4),
        'revision': hex_id(_read(os.path.join(base, 'revision')), 2),
        'driver': link_name(os.path.join(base, 'driver')),
        'iommu_group': link_name(os.path.join(base, 'iommu_group')),
        'numa_node': int(numa) if numa and NUMBER.fullmatch(numa) else None,  # -1: no NUMA information
        'physfn': link_name(os.path.join(base, 'physfn')),
        'sriov': None,
    }
    total = _read(os.path.join(base, 'sriov_totalvfs'))
    if total is not None:
        vfs = [link_name(os.path.join(base, n)) for n in list_names(base) if re.fullmatch(r'virtfn\d+', n)]
        numvfs = _read(os.path.join(base, 'sriov_numvfs'))
        dev['sriov'] = {'totalvfs': _count(base, 'sriov_totalvfs', total),
                        'numvfs': _count(base, 'sriov_numvfs', numvfs), 'vfs': sorted(v for v in vfs if v)}
    return dev


def iommu_groups(root):
    """{group: [BDF, ...]} from <root>/kernel/iommu_groups/<n>/devices; {} when the IOMMU is off."""
    base = os.path.join(root, 'kernel', 'iommu_groups')
    return dict((g, list_names(os.path.join(base, g, 'devices'))) for g in list_names(base))


def iommu_summary(root, groups):
    where = os.path.join(root, 'kernel', 'iommu_groups')
    if groups:
        return {'enabled': True, 'groups': len(groups),
                'message': 'IOMMU is on: %d groups under %s' % (len(groups), where)}
    return {'enabled': False, 'groups': 0,
            'message': 'IOMMU is off: no groups under %s; every iommu_group is null. Turn it on with the kernel '
                       'arguments intel_iommu=on iommu=pt (Intel) or iommu=pt (AMD), and VT-d/AMD-Vi in firmware, '
                       'then reboot' % where}


def check_filters(vendors, classes):
    """Normalise the vendor and class filters; raise naming the bad value and the fix."""
    out_v, out_c = [], []
    for name, value in (('vendors', vendors), ('classes', classes)):
        if value is not None and not isinstance(value, (list, tuple)):
            raise SysfsError('%s is %s %r; expected a list such as [10de] or [0302]'
                             % (name, type(value).__name__, value))
    for v in vendors or []:
        v = str(v).lower().replace('0x', '', 1) if str(v).lower().startswith('0x') else str(v).lower()
        if not HEX4.fullmatch(v):
            raise SysfsError('vendor id %r is not 4 hex digits; give ids such as 10de (NVIDIA) or 8086' % v)
        out_v.append(v)
    for c in classes or []:
        c = str(c).lower()
        if not CLASS_FILTER.fullmatch(c):
            raise SysfsError('class %r is not a PCI class code; give 2 hex digits (03: display) or 4 '
                             '(0302: 3D controller, 0680: NVSwitch bridge)' % c)
        out_c.append(c)
    return out_v, out_c


def _wanted(dev, vendors, classes):
    if vendors and dev.get('vendor_id') not in vendors:
        return False
    if classes and not any((dev.get('class_id') or '').startswith(c) for c in classes):
        return False
    return True


def merge(devices, root):
    """Overlay sysfs facts (the current state) on lspci's devices, in place."""
    for dev in devices:
        facts = read_device(root, dev['bdf'])
        dev['sysfs'] = facts is not None
        if facts is None:
            dev.setdefault('sriov', None)
            continue
        for key in ('class_id', 'vendor_id', 'device_id', 'subsystem_vendor_id', 'subsystem_device_id',
                    'revision', 'iommu_group', 'numa_node'):
            if facts[key] is not None:
                dev[key] = facts[key]
        # sysfs is authoritative for the driver binding: no link means nothing is bound
        dev['driver'] = facts['driver']
        dev['sriov'] = facts['sriov']
        dev['is_vf'] = facts['physfn'] is not None
        dev['physfn'] = facts['physfn']
        dev.pop('vf_inferred', None)
        dev['kind'] = lspci_mod.device_kind(dev['class_id'], dev['vendor_id'])
    return devices


def companions(gpu, everything):
    """Other functions of the GPU's slot (HDA audio, USB, UCSI) that must move to vfio-pci with it; VFs that
    share the slot (A10 VFs start at function 4) are not companions."""
    slot = gpu['bdf'].rsplit('.', 1)[0]
    return sorted(d['bdf'] for d in everything
                  if d['bdf'] != gpu['bdf'] and d['bdf'].rsplit('.', 1)[0] == slot and not d.get('is_vf'))


def discover(lspci_text, root='/sys', vendors=('10de',), classes=(), vendor_names=None):
    """The pci_devices result (docs/contracts.md) from lspci text and the sysfs tree at ``root``."""
    vendors, classes = check_filters(vendors, classes)
    if not os.path.isdir(root):
        raise SysfsError('sysfs_root %s does not exist; give the directory sysfs is mounted on (/sys) or a '
                         'copied tree' % root)
    everything = merge(lspci_mod.parse(lspci_text, vendor_names), root)
    groups = iommu_groups(root)
    devices = []
    for dev in everything:
        if not _wanted(dev, vendors, classes):
            continue
        dev['iommu_group_devices'] = groups.get(dev['iommu_group'], []) if dev['iommu_group'] else []
        if dev['iommu_group'] and not dev['iommu_group_devices']:
            dev['iommu_group_devices'] = [dev['bdf']]  # lspci -v gave a group that sysfs could not list
        dev['companions'] = companions(dev, everything) if dev['kind'] == 'gpu' and not dev['is_vf'] else []
        devices.append(dev)
    gpus = [d for d in devices if d['kind'] == 'gpu']
    by_driver = {}
    for g in gpus:
        by_driver.setdefault(g['driver'] or 'none', []).append(g['bdf'])
    return {'devices': devices, 'gpus': gpus, 'nvswitches': [d for d in devices if d['kind'] == 'nvswitch'],
            'gpus_by_driver': by_driver, 'iommu': iommu_summary(root, groups)}
