# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource names exactly as docs/pools/passthrough.md and docs/pools/vgpu.md state them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pciids
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import resource_names as rn

A10 = {'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'Device 2236',
       'kind': 'gpu', 'is_vf': False}


@pytest.mark.parametrize('name,want', [
    ('GA102GL [A10]', 'GA102GL_A10'),
    ('GH100 [H100 SXM5 80GB]', 'GH100_H100_SXM5_80GB'),
    ('GA100GL [A30 PCIe]', 'GA100GL_A30_PCIE'),
    ('TU117M [GeForce GTX 1650 Mobile / Max-Q]', 'TU117M_GEFORCE_GTX_1650_MOBILE___MAXQ'),
    ('GV100GL [Tesla V100S PCIe 32GB]', 'GV100GL_TESLA_V100S_PCIE_32GB'),
    ('GA102 [GeForce RTX 3080 Ti 12.0GB]', 'GA102_GEFORCE_RTX_3080_TI_12_0GB'),
])
def test_pci_name(name, want):
    assert rn.pci_name_part(name) == want
    assert rn.pci_resource_name(name) == 'nvidia.com/' + want


def test_vgpu_names():
    assert rn.mdev_resource_name('NVIDIA A10-12Q') == 'nvidia.com/NVIDIA_A10-12Q'
    assert rn.mdev_resource_name('GRID T4-1Q', prefix='') == 'GRID_T4-1Q'
    assert rn.short_type_name('NVIDIA A10-12Q') == 'A10-12Q' and rn.short_type_name('GRID P40-2B') == 'P40-2B'


def test_selector_and_bad_ids():
    assert rn.selector('10de', '2236') == '10DE:2236'
    with pytest.raises(rn.ResourceNameError, match="vendor_id '10dx'"):
        rn.selector('10dx', '2236')


def test_name_from_pciids_beats_an_old_lspci_name(reference_dir):
    db = pciids.load(os.path.join(reference_dir, 'pciids', 'pci.ids-2025.07.11_from-NVIDIA-go-nvlib.ids'))
    assert rn.pci_resource_name(A10, db) == 'nvidia.com/GA102GL_A10'
    assert rn.pci_resource_name(A10) == 'nvidia.com/DEVICE_2236'  # what lspci's old pci.ids said


def test_permitted_host_devices_dedups_and_sorts():
    h100 = dict(A10, bdf='0000:1b:00.0', device_id='2330', device_name='GH100 [H100 SXM5 80GB]')
    vf = dict(A10, bdf='0000:41:00.4', is_vf=True, device_name='GA102GL [A10]')
    mdev = {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev',
                         'types': [{'name': 'NVIDIA A10-24Q'}, {'name': 'NVIDIA A10-12Q'}]}]}
    hosts = [{'pci_devices': {'gpus': [h100, dict(A10, device_name='GA102GL [A10]'), vf]}, 'mdev_types': mdev},
             {'gpuvirt_pci_devices': {'gpus': [dict(A10, device_name='GA102GL [A10]')]}, 'gpuvirt_mdev_types': mdev}]
    out = rn.permitted_host_devices(hosts)
    assert out['pciHostDevices'] == [
        {'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/GA102GL_A10', 'externalResourceProvider': True},
        {'pciDeviceSelector': '10DE:2330', 'resourceName': 'nvidia.com/GH100_H100_SXM5_80GB',
         'externalResourceProvider': True}]
    assert [m['mdevNameSelector'] for m in out['mediatedDevices']] == ['NVIDIA A10-12Q', 'NVIDIA A10-24Q']
    assert out['mediatedDevices'][0]['resourceName'] == 'nvidia.com/NVIDIA_A10-12Q'


def test_permitted_host_devices_bad_input():
    with pytest.raises(rn.ResourceNameError, match='dict'):
        rn.permitted_host_devices(['gpu-1'])


A10_FACTS = {'pci_devices': {'gpus': [dict(A10, device_name='GA102GL [A10]'), dict(A10, bdf='0000:42:00.0', device_name='GA102GL [A10]'),
                                      dict(A10, bdf='0000:41:00.4', is_vf=True)]},
             'mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev', 'types': [
                 {'name': 'NVIDIA A10-12Q', 'short_name': 'A10-12Q'}, {'name': 'NVIDIA A10-8Q', 'short_name': 'A10-8Q'}]}]}}


def test_expected_resources_per_pool():
    assert rn.expected_resources(A10_FACTS, 'container') == {'nvidia.com/gpu': 2}
    assert rn.expected_resources(A10_FACTS, 'vm-passthrough') == {'nvidia.com/GA102GL_A10': 2}
    # a vGPU node advertises the types of its config only, not every type its GPUs offer
    assert rn.expected_resources(A10_FACTS, 'vm-vgpu', 'A10-12Q') == {'nvidia.com/NVIDIA_A10-12Q': 1}
    assert rn.expected_resources(A10_FACTS, 'vm-vgpu', 'mixed', {'mixed': {'NVIDIA A10-8Q': 1, 'A10-12Q': 1}}) == {
        'nvidia.com/NVIDIA_A10-12Q': 1, 'nvidia.com/NVIDIA_A10-8Q': 1}
    assert rn.expected_resources(A10_FACTS, 'vm-vgpu') == {'nvidia.com/NVIDIA_A10-12Q': 1, 'nvidia.com/NVIDIA_A10-8Q': 1}


def test_expected_resources_before_the_vgpu_manager_and_bad_pool():
    no_types = dict(A10_FACTS, mdev_types={'parents': []})
    assert rn.expected_resources(no_types, 'vm-vgpu', 'A10-24Q') == {'nvidia.com/NVIDIA_A10-24Q': 1}
    assert rn.vgpu_config_types(None) == [] and rn.vgpu_config_types('GRID T4-1Q') == ['T4-1Q']
    with pytest.raises(rn.ResourceNameError, match="unknown pool 'vm-passthru'"):
        rn.expected_resources(A10_FACTS, 'vm-passthru')


def test_permitted_host_devices_only_the_configured_vgpu_types():
    everything = rn.permitted_host_devices([A10_FACTS])
    assert [e['mdevNameSelector'] for e in everything['mediatedDevices']] == ['NVIDIA A10-12Q', 'NVIDIA A10-8Q']
    only = rn.permitted_host_devices([A10_FACTS], vgpu_types=['A10-12Q'])
    assert only['mediatedDevices'] == [{'mdevNameSelector': 'NVIDIA A10-12Q', 'resourceName': 'nvidia.com/NVIDIA_A10-12Q',
                                        'externalResourceProvider': True}]
    assert only['pciHostDevices'] == everything['pciHostDevices']


def test_vgpu_config_types_of_the_full_form():
    configs = {'l40s-split': [{'devices': [0], 'vgpu-devices': {'L40S-24Q': 2}},
                              {'devices': [1], 'vgpu-devices': {'NVIDIA L40S-12Q': 4}}],
               'a10': {'A10-12Q': 2}}
    assert rn.vgpu_config_types('l40s-split', configs) == ['L40S-12Q', 'L40S-24Q']
    assert rn.vgpu_config_types('a10', configs) == ['A10-12Q']


def test_permitted_host_devices_refuses_a_vendor_vfio_type():
    host = {'pci_devices': {'gpus': []}, 'mdev_types': {'parents': [
        {'parent': '0000:26:00.4', 'interface': 'vendor_vfio',
         'types': [{'type_id': '1155', 'name': 'NVIDIA L40S-24Q', 'short_name': 'L40S-24Q'}]}]}}
    # KubeVirt permits mediated devices it finds on the mdev bus only (kubevirt/kubevirt
    # pkg/virt-handler/device-manager/mediated_device.go discoverPermittedHostMediatedDevices): no dead entry.
    with pytest.raises(rn.ResourceNameError, match=r"NVIDIA L40S-24Q is offered on 0000:26:00.4 through NVIDIA's "
                                                   r"vendor-specific VFIO interface"):
        rn.permitted_host_devices([host])


def test_a_vgpu_host_without_a_vgpu_interface_yet_is_permitted_its_configured_types():
    # Before the vGPU Manager (deployed by the GPU Operator) loads, a vGPU host shows no vGPU type; the types its
    # vGPU config asks for are permitted under the name the manager will report, as NVIDIA's OpenShift
    # Virtualization guide writes them ("Add GPU Resources to the HyperConverged Custom Resource":
    # mdevNameSelector "NVIDIA A10-24Q", resourceName "nvidia.com/NVIDIA_A10-24Q"). Without this a first run, and a
    # render from facts gathered before the operator ran, permits no vGPU at all.
    host = {'pci_devices': {'gpus': [{'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]'}]},
            'mdev_types': {'parents': [], 'state': 'none'}}
    out = rn.permitted_host_devices([host], vgpu_types=['A10-24Q', 'NVIDIA A10-12Q'])
    assert out['mediatedDevices'] == [
        {'mdevNameSelector': 'NVIDIA A10-12Q', 'resourceName': 'nvidia.com/NVIDIA_A10-12Q',
         'externalResourceProvider': True},
        {'mdevNameSelector': 'NVIDIA A10-24Q', 'resourceName': 'nvidia.com/NVIDIA_A10-24Q',
         'externalResourceProvider': True}]
    # a host that reports its types keeps their own spelling (GRID on older releases) and only the offered ones
    host['mdev_types'] = {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev', 'types': [
        {'name': 'GRID A10-24Q', 'available_instances': 1}]}]}
    out = rn.permitted_host_devices([host], vgpu_types=['A10-24Q'])
    assert [e['mdevNameSelector'] for e in out['mediatedDevices']] == ['GRID A10-24Q']
    # and no config, no guess
    host['mdev_types'] = {'parents': []}
    assert rn.permitted_host_devices([host])['mediatedDevices'] == []


# Names from host output must be Kubernetes extended resource names (k8s.io/apimachinery pkg/util/validation
# IsQualifiedName: optional DNS-1123 subdomain prefix and '/', name part of 1-63 characters
# [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?; k8s.io/kubernetes pkg/apis/core/helper IsExtendedResourceName).
@pytest.mark.parametrize('type_name', ['NVIDIA A10-12Q/../../x: y', 'A' * 10000, 'NVIDIA A10-12Q-', '-x',
                                       'NVIDIA A10:12Q', 'NVIDIA A10-12Q\n'.strip() + '/x'])
def test_hostile_mdev_type_names_are_refused_naming_the_source(type_name):
    with pytest.raises(rn.ResourceNameError, match='is not a Kubernetes extended resource name') as e:
        rn.mdev_resource_name(type_name)
    assert 'the vGPU type name' in str(e.value)
    assert len(str(e.value)) < 800  # a 10k-character name is cut in the message


@pytest.mark.parametrize('device_name', ['[]', '()', 'x' * 64, '-', 'GA102GL.'])
def test_hostile_pci_names_are_refused_naming_the_gpu(device_name):
    gpu = {'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': device_name}
    with pytest.raises(rn.ResourceNameError, match='is not a Kubernetes extended resource name') as e:
        rn.pci_resource_name(gpu)
    assert 'GPU 0000:41:00.0 (10de:2236) in the pci_devices fact' in str(e.value)


def test_name_part_at_the_63_character_limit_passes_and_one_more_is_refused():
    assert rn.mdev_resource_name('A' * 63) == 'nvidia.com/' + 'A' * 63
    with pytest.raises(rn.ResourceNameError):
        rn.mdev_resource_name('A' * 64)
    with pytest.raises(rn.ResourceNameError):
        rn.mdev_resource_name('NVIDIA A10-12Q', prefix='Not_A_Domain/')


def test_hostile_type_in_the_facts_names_the_parent_device():
    facts = {'pci_devices': {'gpus': []},
             'mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev',
                                         'types': [{'name': 'NVIDIA A10-12Q/../../x: y'}]}]}}
    with pytest.raises(rn.ResourceNameError) as e:
        rn.permitted_host_devices([facts])
    assert "vGPU type 'NVIDIA A10-12Q/../../x: y' of mdev parent 0000:41:00.4 in the mdev_types fact" in str(e.value)
    with pytest.raises(rn.ResourceNameError) as e:
        rn.expected_resources(facts, 'vm-vgpu')
    assert 'mdev parent 0000:41:00.4' in str(e.value)
