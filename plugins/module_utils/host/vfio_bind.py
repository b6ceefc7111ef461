# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runtime vfio-pci binding through sysfs, pure Python (no Ansible imports).

The kernel's documented sequence: write the driver name to ``driver_override`` (so only that driver may
claim the device), unbind from the current driver, then ask the PCI core to probe the device again
(``drivers_probe``). Every path hangs off ``sysfs_root`` so tests run on a temporary tree.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pci_address
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import hex_id, link_name, list_names, read_text


# an IOMMU group is a number (the kernel's iommu_group id; /sys/kernel/iommu_groups/<id>)
GROUP_RE = re.compile(r'[0-9]{1,10}')
UNKNOWN_DRIVER = '?'


class BindError(Exception):
    """A device cannot be bound; the message names the device and the fix."""


def shown_driver(name):
    """A driver's name as a message or result shows it: the name where it is a kernel module name (validators'
    grammar: what the kernel's drivers are called), None for no driver, else "?" (the link's target is host data)."""
    if name is None:
        return None
    if len(name) <= validators.KERNEL_MODULE_MAX and validators.KERNEL_MODULE_RE.fullmatch(name):
        return name
    return UNKNOWN_DRIVER


def validate_bdf(bdf):
    if not pci_address.is_sysfs_bdf(bdf):
        raise BindError("%r is not a PCI address: use the full form with domain (4 or more hex digits), e.g. 0000:41:00.0" % (bdf,))


def device_dir(sysfs_root, bdf):
    return os.path.join(sysfs_root, 'bus', 'pci', 'devices', bdf)


def _read(path):
    return read_text(path, BindError)


def _write(path, value):
    with open(path, 'w') as f:
        f.write(value)


def state(sysfs_root, bdf):
    """What sysfs says about one device: exists, ids, driver, driver_override, iommu_group."""
    d = device_dir(sysfs_root, bdf)
    st = {'bdf': bdf, 'exists': False, 'vendor_id': None, 'device_id': None, 'class_id': None,
          'driver': None, 'driver_override': None, 'iommu_group': None}
    if not os.path.isdir(d):
        return st
    override = _read(os.path.join(d, 'driver_override'))
    st.update(
        exists=True,
        vendor_id=hex_id(_read(os.path.join(d, 'vendor')), 4),
        device_id=hex_id(_read(os.path.join(d, 'device')), 4),
        class_id=hex_id(_read(os.path.join(d, 'class')), 4),  # class and subclass: 0302 a 3D controller
        driver=link_name(os.path.join(d, 'driver')),
        driver_override=None if override in (None, '', '(null)') else override,
        iommu_group=link_name(os.path.join(d, 'iommu_group')),
    )
    return st


def group_members(sysfs_root, group):
    """Every device of an IOMMU group, sorted (they must all move to vfio-pci together). BindError naming the group
    for a group that is not a number or a member that is not a PCI address (a copied tree may hold anything, and a
    member becomes a sysfs path, a write and a message)."""
    if not GROUP_RE.fullmatch(group or ''):
        raise BindError('IOMMU group link names no group number: %s is not the kernel\'s sysfs (give sysfs_root, '
                        'where sysfs is mounted)' % sysfs_root)
    path = os.path.join(sysfs_root, 'kernel', 'iommu_groups', group, 'devices')
    members = list_names(path)
    for member in members:
        if not pci_address.is_sysfs_bdf(member):
            # the name itself is not shown: it is host data of no grammar
            raise BindError('IOMMU group %s lists an entry that is not a PCI address (such as 0000:41:00.0); its '
                            'devices cannot be checked, so none is bound: give sysfs_root, where sysfs is mounted'
                            % group)
    return members


def expand_groups(sysfs_root, bdfs):
    """``bdfs`` plus the other members of their IOMMU groups, minus PCI bridges (class 06xx).

    Bridges and root ports share groups with their devices but stay on their own driver (pcieport);
    vfio accepts that.
    """
    out = list(bdfs)
    for bdf in bdfs:
        st = state(sysfs_root, bdf)
        if not st['iommu_group']:
            continue
        for member in group_members(sysfs_root, st['iommu_group']):
            if member in out:
                continue
            cls = state(sysfs_root, member)['class_id'] or ''
            if not cls.startswith('06'):
                out.append(member)
    return out


def plan(st, driver='vfio-pci'):
    """Steps needed to bind one device: a subset of ['override', 'unbind', 'probe'] (empty: nothing to do)."""
    # Bound already (by the override, or at boot by "options vfio-pci ids="): nothing to do.
    if st['driver'] == driver:
        return []
    steps = [] if st['driver_override'] == driver else ['override']
    if st['driver'] is not None:
        steps.append('unbind')
    steps.append('probe')
    return steps


def check_bindable(st, driver='vfio-pci', require_iommu=True):
    if not st['exists']:
        raise BindError("PCI device %s does not exist on this host" % st['bdf'])
    if require_iommu and driver == 'vfio-pci' and st['iommu_group'] is None:
        raise BindError("PCI device %s has no IOMMU group: the IOMMU is off. Turn it on (kernel_args role) "
                        "and reboot before binding to vfio-pci" % st['bdf'])


def apply(sysfs_root, st, steps, driver='vfio-pci'):
    d = device_dir(sysfs_root, st['bdf'])
    if 'override' in steps:
        _write(os.path.join(d, 'driver_override'), driver)
    if 'unbind' in steps:
        _write(os.path.join(d, 'driver', 'unbind'), st['bdf'])
    if 'probe' in steps:
        _write(os.path.join(sysfs_root, 'bus', 'pci', 'drivers_probe'), st['bdf'])
