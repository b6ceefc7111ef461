# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The discovery filters through Ansible's templar, as playbooks call them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import discovery


def test_filters_registered():
    assert set(discovery.FilterModule().filters()) == {
        'parse_lspci', 'pci_resource_name', 'mdev_resource_name', 'permitted_host_devices', 'expected_resources',
        'vgpu_config_types'}


def test_parse_lspci_vendor_filter(fixtures_dir):
    with open(os.path.join(fixtures_dir, 'lspci', 'hgx-h100-8gpu-4nvswitch-Dnn-egrep-nvidia-vga_starlab3030-rhel-ai.txt')) as f:
        text = f.read()
    devs = discovery.parse_lspci(text, vendors='10de')
    assert len(devs) == 12 and {d['vendor_id'] for d in devs} == {'10de'}


def test_pci_resource_name_from_given_pciids(reference_dir):
    path = os.path.join(reference_dir, 'pciids', 'pci.ids-2025.07.11_from-NVIDIA-go-nvlib.ids')
    dev = {'vendor_id': '10de', 'device_id': '26b9', 'device_name': 'Device 26b9'}
    assert discovery.pci_resource_name(dev, pciids=path) == 'nvidia.com/AD102GL_L40S'


def test_errors_name_the_value():
    with pytest.raises(AnsibleFilterError, match='no-such'):
        discovery.pci_resource_name('GA102GL [A10]', pciids='/no-such/pci.ids')
    with pytest.raises(AnsibleFilterError, match='vGPU type name'):
        discovery.mdev_resource_name('')
    with pytest.raises(AnsibleFilterError, match='device_id'):
        discovery.permitted_host_devices([{'pci_devices': {'gpus': [{'vendor_id': '10de'}]}}])


def test_parse_lspci_fills_vendor_names_from_the_given_pciids(reference_dir):
    # lspci -mm -n: ids without names; pci.ids names the vendor, a name lspci gave is kept as it is
    path = os.path.join(reference_dir, 'pciids', 'pci.ids-2025.07.11_from-NVIDIA-go-nvlib.ids')
    text = ('41:00.0 "3D controller [0302]" "[10de]" "[26b9]" -ra1 "" ""\n'
            '42:00.0 "3D controller [0302]" "NVIDIA Corp. [10de]" "[26b9]" -ra1 "" ""\n')
    bare = discovery.parse_lspci(text)
    assert [(d['vendor_id'], d['vendor_name']) for d in bare] == [('10de', None), ('10de', 'NVIDIA Corp.')]
    named = discovery.parse_lspci(text, pciids=path)
    assert [(d['vendor_id'], d['vendor_name']) for d in named] == [
        ('10de', 'NVIDIA Corporation'), ('10de', 'NVIDIA Corp.')]


def test_permitted_host_devices_leave_vfs_out_unless_asked():
    # a PF and one of its SR-IOV VFs (a VF is told by is_vf; its device id is its own): by default only the PF is a
    # permitted PCI host device, include_vfs adds the VF's id
    pf = {'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '26b9', 'device_name': 'AD102GL [L40S]',
          'is_vf': False}
    vf = {'bdf': '0000:41:00.4', 'vendor_id': '10de', 'device_id': '26ba', 'device_name': 'Device 26ba',
          'is_vf': True, 'physfn': '0000:41:00.0'}
    hosts = [{'pci_devices': {'gpus': [pf, vf]}}]
    default = discovery.permitted_host_devices(hosts)
    assert [d['pciDeviceSelector'] for d in default['pciHostDevices']] == ['10DE:26B9'], default
    both = discovery.permitted_host_devices(hosts, include_vfs=True)
    assert [d['pciDeviceSelector'] for d in both['pciHostDevices']] == ['10DE:26B9', '10DE:26BA'], both
