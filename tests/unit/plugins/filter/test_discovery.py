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
