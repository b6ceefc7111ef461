# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mdev_types and gpu_holders main(): read-only results and clear failures."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpuvirt.provision.plugins.modules import gpu_holders, mdev_types

from .harness import run_module


def test_mdev_types_vendor_vfio_in_check_mode(monkeypatch, fixtures_dir, sysfs):
    sysfs.device('0000:26:00.4', '0302', '10de', '26b9', driver='nvidia', group=31)
    with open(os.path.join(fixtures_dir, 'sysfs', 'l40s-vf-0000_26_00.4-nvidia', 'creatable_vgpu_types')) as f:
        sysfs.vendor_vgpu('0000:26:00.4', f.read())
    res = run_module(monkeypatch, mdev_types, {'sysfs_root': sysfs.root}, check=True)
    assert not res['failed'] and res['changed'] is False and res['state'] == 'available'
    assert 'NVIDIA L40S-48Q' in res['available_types'] and res['interfaces'] == ['vendor_vfio']


def test_mdev_types_none_and_mdevctl_json(monkeypatch, fixtures_dir, sysfs):
    res = run_module(monkeypatch, mdev_types, {'sysfs_root': sysfs.root})
    assert res['state'] == 'none' and res['parents'] == []
    with open(os.path.join(fixtures_dir, 'mdev', 'mdevctl-testdata-types-full.json')) as f:
        res = run_module(monkeypatch, mdev_types, {'sysfs_root': sysfs.root, 'mdevctl_json': f.read()})
    assert [p['parent'] for p in res['parents']] == ['0.0.26ab', '0000:00:02.0', '0000:00:03.0']
    res = run_module(monkeypatch, mdev_types, {'sysfs_root': sysfs.root, 'mdevctl_json': '[1'})
    assert res['failed'] and 'mdevctl types --dumpjson' in res['msg']


def test_gpu_holders_module(monkeypatch, tmp_path):
    base = tmp_path / 'proc' / '77'
    (base / 'fd').mkdir(parents=True)
    (base / 'cmdline').write_bytes(b'/usr/bin/dcgm-exporter\0')
    (base / 'cgroup').write_text('0::/system.slice/dcgm-exporter.service\n')
    os.symlink('/dev/nvidia-uvm', str(base / 'fd' / '3'))
    res = run_module(monkeypatch, gpu_holders, {'proc_root': str(tmp_path / 'proc')}, check=True)
    assert res['changed'] is False and res['held'] is True
    assert res['holders'] == [{'pid': 77, 'executable': 'dcgm-exporter', 'device': '/dev/nvidia-uvm',
                               'minor': None, 'bdf': None, 'unit': 'dcgm-exporter.service'}]
    res = run_module(monkeypatch, gpu_holders, {'proc_root': str(tmp_path / 'missing')})
    assert res['failed'] and 'proc_root' in res['msg']


def test_mdev_types_reads_the_kernel_under_proc_root(monkeypatch, tmp_path, sysfs):
    (tmp_path / 'proc' / 'sys' / 'kernel').mkdir(parents=True)
    (tmp_path / 'proc' / 'sys' / 'kernel' / 'osrelease').write_text('6.8.0-60-generic\n')
    sysfs.write('module/nvidia/version', '580.82.02\n')
    res = run_module(monkeypatch, mdev_types, {'sysfs_root': sysfs.root, 'proc_root': str(tmp_path / 'proc')},
                     check=True)
    assert res['host_interface'] == {
        'interface': 'none', 'kernel_release': '6.8.0-60-generic', 'driver_version': '580.82.02',
        'evidence': ['no /sys/class/mdev_bus entry and no nvidia/creatable_vgpu_types on any PCI device',
                     'kernel 6.8.0-60-generic, driver 580.82.02']}
