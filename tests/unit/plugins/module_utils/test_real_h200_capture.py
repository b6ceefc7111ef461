# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host readers on what a real NVIDIA H200 host printed (tests/device/gpu_host_check.py run on a lent GPU
machine: the H200 passed through to a VM, driver 580.159.04, Ubuntu 24.04, kernel 6.18; fixtures/SOURCES.md).
Its pci.ids predates the H200, so lspci names the chip only by id (``Device [2335]``)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpuvirt.provision.plugins.module_utils import gpu_holders, lspci

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
