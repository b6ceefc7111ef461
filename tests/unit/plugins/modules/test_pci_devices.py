# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pci_devices: main() on real lspci captures plus sysfs trees built from real layouts."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.modules import pci_devices

from .harness import run_module


def run(monkeypatch, args, lspci=None, check=False):
    """pci_devices.main() with get_bin_path answering ``lspci`` for every program (None: pciutils missing)."""
    return run_module(monkeypatch, pci_devices, args, check=check, bin_path=lambda name: lspci)


def capture(fixtures_dir, name):
    with open(os.path.join(fixtures_dir, 'lspci', name)) as f:
        return f.read()


def gtx1060(sysfs):
    """The GTX 1060 capture's two functions, behind root port 00:01.0, one IOMMU group for all three (the
    layout of reference/host/iommu-groups-flat-format-gtx1060-with-audio-and-root-port)."""
    sysfs.device('0000:00:01.0', '0604', '8086', '1901', driver='pcieport', group=1, numa=-1)
    sysfs.device('0000:01:00.0', '0300', '10de', '1c03', ('1458', '3771'), driver='nvidia', group=1, numa=0)
    sysfs.device('0000:01:00.1', '0403', '10de', '10f1', ('1458', '3771'), driver='snd_hda_intel', group=1, numa=0)


def test_gpu_with_hda_companion_and_group(monkeypatch, fixtures_dir, sysfs):
    gtx1060(sysfs)
    text = capture(fixtures_dir, 'gtx1060-nnk-with-tabs-nvidia-plus-hda_single-gpu-passthrough-issue-8.txt')
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root}, check=True)
    assert not res['failed'] and res['changed'] is False
    gpu, hda = res['devices']
    assert gpu['companions'] == ['0000:01:00.1'] and hda['companions'] == []
    assert gpu['iommu_group'] == '1' and gpu['iommu_group_devices'] == ['0000:00:01.0', '0000:01:00.0', '0000:01:00.1']
    assert gpu['numa_node'] == 0 and gpu['sriov'] is None and gpu['kernel_modules'] == ['nouveau', 'nvidia_drm', 'nvidia']
    assert res['gpus_by_driver'] == {'nvidia': ['0000:01:00.0']} and res['iommu']['enabled'] is True
    assert res['iommu']['groups'] == 1


def test_sysfs_driver_wins_over_stale_lspci_text(monkeypatch, fixtures_dir, sysfs):
    # the capture says vfio-pci; sysfs (the current state) has no driver bound
    sysfs.device('0000:65:00.0', '0302', '10de', '2236', ('10de', '1482'), group=44)
    text = capture(fixtures_dir, 'a10-nnk-d10de-vfio-pci_nvidia-cloud-native-docs.txt')
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root})
    assert res['gpus'][0]['driver'] is None and res['gpus_by_driver'] == {'none': ['0000:65:00.0']}


def test_hgx_h100_nvswitches_class_filter(monkeypatch, fixtures_dir, sysfs):
    text = capture(fixtures_dir, 'hgx-h100-8gpu-4nvswitch-Dnn-egrep-nvidia-vga_starlab3030-rhel-ai.txt')
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root})
    assert len(res['gpus']) == 8 and len(res['nvswitches']) == 4  # ASPEED (1a03) filtered out
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root, 'classes': ['0680']})
    assert [d['kind'] for d in res['devices']] == ['nvswitch'] * 4
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root, 'vendors': [], 'classes': ['03']})
    assert len(res['gpus']) == 9


def test_iommu_off_said_explicitly(monkeypatch, fixtures_dir, sysfs):
    sysfs.device('0000:65:00.0', '0302', '10de', '2236', ('10de', '1482'))
    text = capture(fixtures_dir, 'a10-nnk-d10de-no-driver_nvidia-cloud-native-docs.txt')
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root})
    assert res['iommu']['enabled'] is False and 'IOMMU is off' in res['iommu']['message']
    assert 'intel_iommu=on' in res['iommu']['message']
    assert res['gpus'][0]['iommu_group'] is None and res['gpus'][0]['iommu_group_devices'] == []


def test_sriov_pf_and_vfs_from_sysfs(monkeypatch, fixtures_dir, sysfs):
    # A10 with VFs at 41:00.4.. (offset 4, stride 1, as reference/mdev/a10-sriov-virtfn-symlinks shows)
    sysfs.device('0000:41:00.0', '0302', '10de', '2236', ('10de', '1482'), driver='nvidia', group=44)
    vfs = ['0000:41:00.4', '0000:41:00.5', '0000:41:00.6']
    for i, vf in enumerate(vfs):
        sysfs.device(vf, '0302', '10de', '2236', ('10de', '14d4'), driver='nvidia', group=45 + i)
    sysfs.sriov('0000:41:00.0', vfs, total=32)
    line = capture(fixtures_dir, 'a10-plain-grep-NVIDIA-device-2236_opennebula-docs.txt').splitlines()[1]
    text = '\n'.join([line] + [line.replace('41:00.0', v[5:]) for v in vfs])
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root})
    pf = res['devices'][0]
    assert pf['sriov'] == {'totalvfs': 32, 'numvfs': 3, 'vfs': vfs}
    assert pf['companions'] == []  # VFs share the slot but are not companions
    assert [d['physfn'] for d in res['devices'][1:]] == ['0000:41:00.0'] * 3
    assert all(d['is_vf'] and 'vf_inferred' not in d for d in res['devices'][1:])


@pytest.mark.parametrize('args,msg', [
    ({'vendors': ['10dx']}, "vendor id '10dx' is not 4 hex digits"),
    ({'classes': ['vga']}, "class 'vga' is not a PCI class code"),
    ({'sysfs_root': '/no/such/sys', 'lspci_output': ''}, 'sysfs_root /no/such/sys does not exist'),
    ({'pciids': '/no/such/pci.ids', 'lspci_output': ''}, '/no/such/pci.ids'),
])
def test_bad_input_named(monkeypatch, args, msg):
    res = run(monkeypatch, args, lspci='/usr/bin/lspci')
    assert res['failed'] and msg in res['msg']


def test_lspci_missing_names_pciutils(monkeypatch):
    res = run(monkeypatch, {}, lspci=None)
    assert res['failed'] and 'pciutils' in res['msg']


def test_vendor_ids_alias_used_by_roles(monkeypatch, fixtures_dir, sysfs):
    text = capture(fixtures_dir, 'hgx-h100-8gpu-4nvswitch-Dnn-egrep-nvidia-vga_starlab3030-rhel-ai.txt')
    res = run(monkeypatch, {'lspci_output': text, 'sysfs_root': sysfs.root, 'vendor_ids': ['1a03']})
    assert [d['bdf'] for d in res['devices']] == ['0000:04:00.0']


def test_a_slot_that_is_not_a_pci_address_fails_the_module_naming_it(monkeypatch, fixtures_dir, sysfs):
    # host output: a -vmm record whose Slot is a path is refused (a failure with a message, not a traceback)
    text = capture(fixtures_dir, 'h200-vm-vmmnnkD-nvidia-driver_gpuvirt-device-check.txt')
    res = run(monkeypatch, {'lspci_output': text.replace('Slot:\t0000:00:06.0', 'Slot:\t0000:00:06.0/../../x'),
                            'sysfs_root': sysfs.root}, check=True)
    assert res['failed'] and 'a Slot line of the lspci output is not a PCI address' in res['msg'], res
