# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build sysfs trees for tests and the benchmark: by hand from real layouts (SysfsTree), or from a real
umockdev-record dump (from_umockdev), with the same relative symlinks the kernel makes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


class SysfsTree(object):
    def __init__(self, root):
        self.root = str(root)
        os.makedirs(os.path.join(self.root, 'bus', 'pci', 'devices'), exist_ok=True)
        os.makedirs(os.path.join(self.root, 'kernel', 'iommu_groups'), exist_ok=True)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def write(self, rel, text):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w') as f:
            f.write(text)

    def link(self, rel, target):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.symlink(target, p)

    def device(self, bdf, cls, vendor, device, subsystem=None, revision='a1', driver=None, group=None, numa=-1,
               parent='pci0000:00'):
        """One PCI function under devices/<parent>/<bdf>, linked from bus/pci/devices like the kernel does."""
        rel = os.path.join('devices', parent, bdf)
        os.makedirs(self.path(rel), exist_ok=True)
        for name, value in (('class', '0x%s00' % cls), ('vendor', '0x' + vendor), ('device', '0x' + device),
                            ('revision', '0x' + revision), ('numa_node', str(numa))):
            self.write(os.path.join(rel, name), value + '\n')
        if subsystem:
            self.write(os.path.join(rel, 'subsystem_vendor'), '0x%s\n' % subsystem[0])
            self.write(os.path.join(rel, 'subsystem_device'), '0x%s\n' % subsystem[1])
        self.link(os.path.join('bus', 'pci', 'devices', bdf), os.path.join('..', '..', '..', rel))
        if driver:
            os.makedirs(self.path('bus', 'pci', 'drivers', driver), exist_ok=True)
            self.link(os.path.join(rel, 'driver'), '../../../bus/pci/drivers/' + driver)
        if group is not None:
            self.group(group, bdf, rel)
        return rel

    def group(self, group, bdf, rel=None):
        gdir = os.path.join('kernel', 'iommu_groups', str(group), 'devices')
        os.makedirs(self.path(gdir), exist_ok=True)
        rel = rel or os.path.relpath(os.path.realpath(self.path('bus', 'pci', 'devices', bdf)), self.root)
        self.link(os.path.join(gdir, bdf), '../../../../' + rel)
        self.link(os.path.join(rel, 'iommu_group'), '../../../kernel/iommu_groups/%s' % group)

    def sriov(self, pf, vfs, total=None):
        """PF sriov_* files and virtfnN links; physfn on each VF (the VFs must exist already)."""
        pf_rel = os.path.relpath(os.path.realpath(self.path('bus', 'pci', 'devices', pf)), self.root)
        self.write(os.path.join(pf_rel, 'sriov_totalvfs'), '%d\n' % (total or len(vfs)))
        self.write(os.path.join(pf_rel, 'sriov_numvfs'), '%d\n' % len(vfs))
        for i, vf in enumerate(vfs):
            vf_rel = os.path.relpath(os.path.realpath(self.path('bus', 'pci', 'devices', vf)), self.root)
            self.link(os.path.join(pf_rel, 'virtfn%d' % i), '../' + vf)
            self.link(os.path.join(vf_rel, 'physfn'), '../' + pf)

    def mdev_type(self, parent, type_id, name, description='', available=0, devices=()):
        """mdev_supported_types/<type_id> on a parent, /sys/class/mdev_bus/<parent> link, and instances."""
        rel = os.path.relpath(os.path.realpath(self.path('bus', 'pci', 'devices', parent)), self.root)
        tdir = os.path.join(rel, 'mdev_supported_types', type_id)
        for fname, value in (('name', name), ('description', description), ('available_instances', available),
                             ('device_api', 'vfio-pci')):
            self.write(os.path.join(tdir, fname), '%s\n' % value)
        os.makedirs(self.path(tdir, 'devices'), exist_ok=True)
        if not os.path.lexists(self.path('class', 'mdev_bus', parent)):
            self.link(os.path.join('class', 'mdev_bus', parent), '../../' + rel)
        for uuid in devices:
            self.mdev(parent, uuid, type_id)

    def mdev(self, parent, uuid, type_id):
        rel = os.path.relpath(os.path.realpath(self.path('bus', 'pci', 'devices', parent)), self.root)
        os.makedirs(self.path(rel, uuid), exist_ok=True)
        self.link(os.path.join(rel, uuid, 'mdev_type'), '../mdev_supported_types/' + type_id)
        if os.path.isdir(self.path(rel, 'mdev_supported_types', type_id, 'devices')):
            self.link(os.path.join(rel, 'mdev_supported_types', type_id, 'devices', uuid), '../../../' + uuid)

    def vendor_vgpu(self, vf, creatable, current='0'):
        """NVIDIA vendor-specific VFIO files on a VF (nvidia/creatable_vgpu_types, current_vgpu_type)."""
        rel = os.path.relpath(os.path.realpath(self.path('bus', 'pci', 'devices', vf)), self.root)
        self.write(os.path.join(rel, 'nvidia', 'creatable_vgpu_types'), creatable)
        self.write(os.path.join(rel, 'nvidia', 'current_vgpu_type'), '%s\n' % current)


def _unescape(value):
    return value.encode('latin-1').decode('unicode_escape')


def from_umockdev(path, root):
    """Materialise a umockdev-record dump (P: path, A: attribute, L: link, E: uevent) as a sysfs tree.

    Binary attributes (H:) are skipped. PCI devices get bus/pci/devices links and IOMMU group members, as the
    kernel shows them; umockdev records the device's iommu_group link but not the group directory."""
    tree = SysfsTree(root)
    records, current = [], None
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('P: '):
                current = {'path': line[3:].lstrip('/'), 'A': [], 'L': [], 'E': {}}
                records.append(current)
            elif current is not None and line[:3] in ('A: ', 'L: ', 'E: '):
                key, dummy, value = line[3:].partition('=')
                if line[0] == 'E':
                    current['E'][key] = value
                else:
                    current[line[0]].append((key, value))
    for rec in records:
        os.makedirs(tree.path(rec['path']), exist_ok=True)
        for key, value in rec['A']:
            tree.write(os.path.join(rec['path'], key), _unescape(value))
        for key, value in rec['L']:
            if not os.path.lexists(tree.path(rec['path'], key)):
                tree.link(os.path.join(rec['path'], key), value)
        if rec['E'].get('SUBSYSTEM') == 'pci' and 'PCI_SLOT_NAME' in rec['E']:
            bdf = rec['E']['PCI_SLOT_NAME']
            tree.link(os.path.join('bus', 'pci', 'devices', bdf), '../../../' + rec['path'])
        group = dict(rec['L']).get('iommu_group')
        if group:
            gdir = os.path.join('kernel', 'iommu_groups', os.path.basename(group), 'devices')
            os.makedirs(tree.path(gdir), exist_ok=True)
            member = os.path.basename(rec['path'])
            if not os.path.lexists(tree.path(gdir, member)):
                tree.link(os.path.join(gdir, member), '../../../../' + rec['path'])
    return tree
