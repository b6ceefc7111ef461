# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vfio_bind module_utils on a sysfs-shaped temporary tree (same links as the real /sys/bus/pci)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vfio_bind as vb

BDF = '0000:00:02.0'


def make_tree(root, driver=None, group='3', override='(null)'):
    pci = root / 'bus' / 'pci'
    for drv in ('vfio-pci', 'nouveau'):
        (pci / 'drivers' / drv).mkdir(parents=True, exist_ok=True)
        (pci / 'drivers' / drv / 'unbind').write_text('')
    (pci / 'drivers_probe').write_text('')
    dev = root / 'devices' / 'pci0000:00' / BDF
    dev.mkdir(parents=True)
    (pci / 'devices').mkdir()
    os.symlink(os.path.relpath(str(dev), str(pci / 'devices')), str(pci / 'devices' / BDF))
    (dev / 'driver_override').write_text(override + '\n')
    if driver:
        os.symlink(os.path.relpath(str(pci / 'drivers' / driver), str(dev)), str(dev / 'driver'))
    if group:
        (root / 'kernel' / 'iommu_groups' / group).mkdir(parents=True)
        os.symlink(os.path.relpath(str(root / 'kernel' / 'iommu_groups' / group), str(dev)), str(dev / 'iommu_group'))
    return root


def test_state_reads_links(tmp_path):
    st = vb.state(str(make_tree(tmp_path, driver='nouveau')), BDF)
    assert st == {'bdf': BDF, 'exists': True, 'vendor_id': None, 'device_id': None, 'class_id': None,
                  'driver': 'nouveau', 'driver_override': None, 'iommu_group': '3'}


def test_plan_and_apply_from_nouveau(tmp_path):
    root = str(make_tree(tmp_path, driver='nouveau'))
    st = vb.state(root, BDF)
    steps = vb.plan(st)
    assert steps == ['override', 'unbind', 'probe']
    vb.apply(root, st, steps)
    assert (tmp_path / 'bus/pci/devices' / BDF / 'driver_override').read_text() == 'vfio-pci'
    assert (tmp_path / 'bus/pci/drivers/nouveau/unbind').read_text() == BDF
    assert (tmp_path / 'bus/pci/drivers_probe').read_text() == BDF


def test_unbound_device_needs_no_unbind(tmp_path):
    assert vb.plan(vb.state(str(make_tree(tmp_path)), BDF)) == ['override', 'probe']


def test_already_bound_is_a_noop(tmp_path):
    st = vb.state(str(make_tree(tmp_path, driver='vfio-pci', override='vfio-pci')), BDF)
    assert vb.plan(st) == []


def test_bound_at_boot_without_override_is_a_noop(tmp_path):
    # After a reboot "options vfio-pci ids=" binds the device; driver_override stays unset.
    assert vb.plan(vb.state(str(make_tree(tmp_path, driver='vfio-pci')), BDF)) == []


def test_missing_device_named(tmp_path):
    st = vb.state(str(make_tree(tmp_path)), '0000:99:00.0')
    with pytest.raises(vb.BindError, match='0000:99:00.0 does not exist'):
        vb.check_bindable(st)


def test_iommu_off_named(tmp_path):
    st = vb.state(str(make_tree(tmp_path, group=None)), BDF)
    with pytest.raises(vb.BindError, match=BDF + ' has no IOMMU group'):
        vb.check_bindable(st)


@pytest.mark.parametrize('bad', ['00:02.0', '0000:00:02.8', '0000:00:02.0;id', '../../etc'])
def test_bad_bdf_named(bad):
    with pytest.raises(vb.BindError) as e:
        vb.validate_bdf(bad)
    assert repr(bad) in str(e.value)


@pytest.mark.parametrize('good', ['0000:41:00.0', '10000:00:05.0', '0001a:3b:00.7'])
def test_wide_pci_domains_accepted(good):
    # sysfs names devices with "%04x" domains: VMD and large hosts have 5 or more hex digits
    vb.validate_bdf(good)


@pytest.mark.parametrize('bad', ['0000:41:00.0\n', '000:41:00.0', '0000:41:00.8', '0000:41:00.0/../x'])
def test_trailing_newline_and_short_domain_refused(bad):
    with pytest.raises(vb.BindError, match='not a PCI address'):
        vb.validate_bdf(bad)


def test_ids_and_group_expansion_skip_bridges(tmp_path):
    root = make_tree(tmp_path, driver='nouveau')
    dev = root / 'devices' / 'pci0000:00' / BDF
    (dev / 'vendor').write_text('0x10de\n')
    (dev / 'device').write_text('0x2236\n')
    (dev / 'class').write_text('0x030200\n')
    members = root / 'kernel' / 'iommu_groups' / '3' / 'devices'
    members.mkdir()
    for bdf, cls in ((BDF, '0x030200'), ('0000:00:02.1', '0x040300'), ('0000:00:01.0', '0x060400')):
        d = root / 'devices' / 'pci0000:00' / bdf
        d.mkdir(exist_ok=True)
        (d / 'class').write_text(cls + '\n')
        link = root / 'bus' / 'pci' / 'devices' / bdf
        if not link.exists():
            os.symlink(os.path.relpath(str(d), str(link.parent)), str(link))
        os.symlink(os.path.relpath(str(d), str(members)), str(members / bdf))
    st = vb.state(str(root), BDF)
    assert (st['vendor_id'], st['device_id'], st['class_id']) == ('10de', '2236', '0302')
    assert vb.expand_groups(str(root), [BDF]) == [BDF, '0000:00:02.1']
