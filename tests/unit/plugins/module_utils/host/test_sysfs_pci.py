# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Malformed sysfs attributes on trees built from real layouts (sysfs_tree.SysfsTree): each reader of sysfs
(sysfs_pci, vfio_bind, vgpu_types) names the file and what it expected instead of raising a traceback."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import sysfs_pci, vfio_bind, vgpu_types

PF = '0000:41:00.0'
VFS = ['0000:41:00.4', '0000:41:00.5']


def a10_with_vfs(sysfs):
    # A10 with VFs at 41:00.4.. (offset 4, stride 1, as the real virtfn links of an A10 show)
    sysfs.device(PF, '0302', '10de', '2236', ('10de', '1482'), driver='nvidia', group=44)
    for i, vf in enumerate(VFS):
        sysfs.device(vf, '0302', '10de', '2236', ('10de', '14d4'), driver='nvidia', group=45 + i)
    sysfs.sriov(PF, VFS, total=32)
    return os.path.realpath(sysfs.path('bus', 'pci', 'devices', PF))


def test_sriov_counts_read(sysfs):
    a10_with_vfs(sysfs)
    assert sysfs_pci.read_device(sysfs.root, PF)['sriov'] == {'totalvfs': 32, 'numvfs': 2, 'vfs': VFS}


@pytest.mark.parametrize('name', ['sriov_totalvfs', 'sriov_numvfs'])
@pytest.mark.parametrize('value', ['thirty-two\n', '0x20\n', '-1\n', '1' * 5000 + '\n'])
def test_non_numeric_sriov_count_names_the_file(sysfs, name, value):
    base = a10_with_vfs(sysfs)
    with open(os.path.join(base, name), 'w') as f:
        f.write(value)
    with pytest.raises(sysfs_pci.SysfsError, match=r'%s reads .*expected a non-negative integer' % name) as e:
        sysfs_pci.read_device(sysfs.root, PF)
    assert str(e.value).startswith(sysfs.path('bus', 'pci', 'devices', PF, name) + ' reads ')


def test_huge_numa_node_is_no_node(sysfs):
    base = a10_with_vfs(sysfs)
    with open(os.path.join(base, 'numa_node'), 'w') as f:
        f.write('9' * 5000 + '\n')
    assert sysfs_pci.read_device(sysfs.root, PF)['numa_node'] is None


def _garble(path):
    with open(path, 'wb') as f:
        f.write(b'0x10de\n\xff\xfe\n')


def test_non_utf8_attribute_named_by_every_reader(sysfs):
    base = a10_with_vfs(sysfs)
    _garble(os.path.join(base, 'vendor'))
    expected = r'vendor, line 2: byte 0xff at offset 7 is not UTF-8; expected the text a sysfs attribute holds'
    with pytest.raises(sysfs_pci.SysfsError, match=expected):
        sysfs_pci.read_device(sysfs.root, PF)
    with pytest.raises(vfio_bind.BindError, match=expected):
        vfio_bind.state(sysfs.root, PF)


def test_non_utf8_vgpu_type_name_named(sysfs):
    sysfs.device('0000:02:00.0', '0302', '10de', '1b38', driver='nvidia', group=20)
    sysfs.mdev_type('0000:02:00.0', 'nvidia-156', 'GRID P40-2B', 'num_heads=4, framebuffer=2048M', 12)
    tdir = os.path.realpath(sysfs.path('class', 'mdev_bus', '0000:02:00.0', 'mdev_supported_types', 'nvidia-156'))
    _garble(os.path.join(tdir, 'name'))
    with pytest.raises(vgpu_types.VgpuError, match=r'nvidia-156/name, line 2: byte 0xff .*not UTF-8'):
        vgpu_types.discover(sysfs.root)


def test_non_utf8_creatable_vgpu_types_named(fixtures_dir, sysfs):
    sysfs.device('0000:26:00.4', '0302', '10de', '26b9', ('10de', '1851'), driver='nvidia', group=60)
    sysfs.vendor_vgpu('0000:26:00.4', 'ID    : vGPU Name\n')
    path = os.path.realpath(sysfs.path('bus', 'pci', 'devices', '0000:26:00.4', 'nvidia', 'creatable_vgpu_types'))
    with open(os.path.join(fixtures_dir, 'sysfs', 'l40s-vf-0000_26_00.4-nvidia', 'creatable_vgpu_types'), 'rb') as f:
        real = f.read()
    with open(path, 'wb') as f:
        f.write(real + b'\xc3\x28\n')
    with pytest.raises(vgpu_types.VgpuError, match=r'creatable_vgpu_types, line \d+: byte 0xc3'):
        vgpu_types.discover(sysfs.root)


def test_the_class_filter_keeps_only_devices_of_those_classes(tmp_path):
    text = ('41:00.0 "3D controller [0302]" "NVIDIA Corporation [10de]" "AD102GL [L40S] [26b9]" -ra1 "" ""\n'
            '41:00.1 "Audio device [0403]" "NVIDIA Corporation [10de]" "Device [22ba]" -ra1 "" ""\n')
    assert [d['bdf'] for d in sysfs_pci.discover(text, str(tmp_path), classes=['03'])['devices']] == ['0000:41:00.0']
    assert [d['bdf'] for d in sysfs_pci.discover(text, str(tmp_path), classes=['0403'])['devices']] == ['0000:41:00.1']
    assert [d['bdf'] for d in sysfs_pci.discover(text, str(tmp_path))['devices']] == ['0000:41:00.0', '0000:41:00.1']


def test_the_iommu_summary_says_whether_it_is_on_and_where_it_looked():
    assert sysfs_pci.iommu_summary('/sys', {'0': ['0000:41:00.0'], '1': ['0000:42:00.0']}) == {
        'enabled': True, 'groups': 2, 'message': 'IOMMU is on: 2 groups under /sys/kernel/iommu_groups'}
    off = sysfs_pci.iommu_summary('/sys', {})
    assert off['enabled'] is False and off['groups'] == 0
    assert off['message'].startswith('IOMMU is off: no groups under /sys/kernel/iommu_groups; '), off
