# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host readers on what a real NVIDIA H200 host printed (tests/device/gpu_host_check.py run on a lent GPU
machine: the H200 passed through to a VM, driver 580.159.04, Ubuntu 24.04, kernel 6.18; fixtures/SOURCES.md).
Its pci.ids predates the H200, so lspci names the chip only by id (``Device [2335]``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, lspci, vgpu_interface, vgpu_types
from sysfs_tree import SysfsTree

H200 = ('0000:00:06.0', '0302', '10de', '2335', '10de', '18bf', 'a1')


def capture(fixtures_dir, *parts):
    with open(os.path.join(fixtures_dir, *parts)) as f:
        return f.read()


def ids(dev):
    return tuple(dev[k] for k in ('bdf', 'class_id', 'vendor_id', 'device_id', 'subsystem_vendor_id',
                                  'subsystem_device_id', 'revision'))


def test_vmm_capture_of_a_whole_h200_vm(fixtures_dir):
    devices = lspci.parse(capture(fixtures_dir, 'lspci', 'h200-vm-vmmnnkD-nvidia-driver_gpuvirt-device-check.txt'))
    assert len(devices) == 7
    gpus = [d for d in devices if d['kind'] == 'gpu']
    assert [ids(d) for d in gpus] == [H200]
    assert gpus[0]['driver'] == 'nvidia' and gpus[0]['vendor_name'] == 'NVIDIA Corporation'
    # the six virtio functions (class ffff / 0180 / 0200) and the host bridge are not GPUs
    assert sorted(d['kind'] for d in devices if d['vendor_id'] != '10de') == ['bridge'] + ['other'] * 5


def test_nnk_capture_agrees_with_vmm(fixtures_dir):
    vmm = lspci.parse(capture(fixtures_dir, 'lspci', 'h200-vm-vmmnnkD-nvidia-driver_gpuvirt-device-check.txt'))
    nnk = lspci.parse(capture(fixtures_dir, 'lspci', 'h200-vm-nnkD-nvidia-driver_gpuvirt-device-check.txt'))
    assert [ids(d) + (d['driver'], d['kind']) for d in nnk] == [ids(d) + (d['driver'], d['kind']) for d in vmm]


def test_minor_of_the_real_information_file(fixtures_dir, tmp_path):
    # /proc/driver/nvidia/gpus/<bdf>/information as the R580 driver writes it: "Device Minor: \t 0" (tab-padded)
    gpus = tmp_path / 'driver' / 'nvidia' / 'gpus' / '0000:00:06.0'
    gpus.mkdir(parents=True)
    (gpus / 'information').write_text(
        capture(fixtures_dir, 'proc', 'h200-vm-0000_00_06.0-information_gpuvirt-device-check.txt'))
    assert gpu_holders.minor_bdfs(str(tmp_path)) == {0: '0000:00:06.0'}


def test_host_interface_of_the_real_h200_host(fixtures_dir, tmp_path):
    # What the lent H200 showed (gpu_host_check.py, 2026-11-26): the GPU at 0000:00:06.0 on the nvidia driver, no
    # SR-IOV capability in the VM, no /sys/class/mdev_bus, no nvidia/creatable_vgpu_types (a datacenter driver, not
    # the vGPU Manager), /sys/module/nvidia/version 580.159.04, uname -r 6.18.44-fc-v657-gpu. The check compared
    # these facts with the machine itself; here the same layout fixes what they must be.
    sys_root, proc_root = tmp_path / 'sys', tmp_path / 'proc'
    tree = SysfsTree(sys_root)
    tree.device('0000:00:06.0', '0302', '10de', '2335', subsystem=('10de', '18bf'), driver='nvidia')
    tree.write('module/nvidia/version', '580.159.04\n')
    (proc_root / 'sys' / 'kernel').mkdir(parents=True)
    (proc_root / 'sys' / 'kernel' / 'osrelease').write_text('6.18.44-fc-v657-gpu\n')
    facts = vgpu_types.discover(root=str(sys_root), proc_root=str(proc_root))['host_interface']
    assert facts['interface'] == 'none'
    assert (facts['kernel_release'], facts['driver_version']) == ('6.18.44-fc-v657-gpu', '580.159.04')
    assert facts['evidence'][0].startswith('no /sys/class/mdev_bus entry')
    # Once a vGPU Manager of that branch loads, a 6.8+ kernel with R580 gives vendor VFIO whatever the chip (the
    # rule in docs/pools/vgpu.md): the host's old pci.ids names the chip only "Device [2335]", so the chip rule
    # alone could not have told.
    vmm = capture(fixtures_dir, 'lspci', 'h200-vm-vmmnnkD-nvidia-driver_gpuvirt-device-check.txt')
    gpus = [d for d in lspci.parse(vmm) if d['kind'] == 'gpu']
    assert vgpu_interface.chips(gpus) == []
    interface, reason = vgpu_interface.predict(facts, gpus)
    assert interface == 'vendor-vfio' and 'kernel 6.18.44-fc-v657-gpu' in reason and '580.159.04' in reason
