# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""facts -> wanted devices: the one function between the per-host view and the kubevirt_devices plan."""
from __future__ import annotations

import json
import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import fleet as fleet_filter
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, resource_names as rn
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import wanted_devices as wd

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', '..'))


def example_facts(host):
    """The example fleet's saved facts (gathered from real captures, see the example inventory)."""
    path = os.path.join(ROOT, 'inventories', 'example', '.gpuvirt_facts', host + '.json')
    with open(path, encoding='utf-8') as f:
        saved = json.load(f)
    return {'pci_devices': saved['gpuvirt_pci_devices'], 'mdev_types': saved['gpuvirt_mdev_types']}


def host(name, pool, vgpu_types=None, facts=None):
    return {'node': name.split('.')[0], 'pool': pool, 'vgpu_types': vgpu_types or [],
            'facts': facts if facts is not None else example_facts(name)}


EXAMPLE = [host('gpu-p01.example.com', 'vm-passthrough'), host('gpu-p02.example.com', 'vm-passthrough'),
           host('gpu-v01.example.com', 'vm-vgpu', ['A10-12Q']), host('gpu-v02.example.com', 'vm-vgpu', ['A10-4Q'])]


def test_example_fleet():
    got = wd.wanted_devices(EXAMPLE)
    # every passthrough GPU of the passthrough hosts, once per vendor:device, with the nodes that have it
    pci = rn.permitted_host_devices([h['facts'] for h in EXAMPLE[:2]])['pciHostDevices']
    # (in host order, first seen first; permitted_host_devices sorts)
    assert sorted((e['selector'], e['resource_name']) for e in got['pci_devices']) == \
        [(e['pciDeviceSelector'], e['resourceName']) for e in pci]
    assert len(got['pci_devices']) == 2
    for entry in got['pci_devices']:
        assert entry['source'] == 'facts'
        assert entry['nodes'] == [h['node'] for h in EXAMPLE[:2]
                                  if entry['selector'] in [e['pciDeviceSelector'] for e in
                                                           rn.permitted_host_devices([h['facts']])['pciHostDevices']]]
    # the vGPU hosts have no vGPU Manager yet: each is permitted the type its config creates, under the name the
    # manager will report (NVIDIA's OpenShift Virtualization guide: mdevNameSelector "NVIDIA A10-12Q")
    assert got['mediated_devices'] == [
        {'selector': 'NVIDIA A10-12Q', 'resource_name': 'nvidia.com/NVIDIA_A10-12Q', 'nodes': ['gpu-v01'], 'source': 'facts'},
        {'selector': 'NVIDIA A10-4Q', 'resource_name': 'nvidia.com/NVIDIA_A10-4Q', 'nodes': ['gpu-v02'], 'source': 'facts'}]


def test_the_pool_decides_the_list_a_host_feeds():
    # the same A10 host feeds the PCI list as a passthrough host and only the mdev list as a vGPU host
    facts = example_facts('gpu-v01.example.com')
    as_pci = wd.wanted_devices([host('a', 'vm-passthrough', facts=facts)])
    as_vgpu = wd.wanted_devices([host('a', 'vm-vgpu', ['A10-12Q'], facts=facts)])
    assert [e['selector'] for e in as_pci['pci_devices']] == ['10DE:2236'] and as_pci['mediated_devices'] == []
    assert as_vgpu['pci_devices'] == [] and [e['selector'] for e in as_vgpu['mediated_devices']] == ['NVIDIA A10-12Q']


def test_one_entry_per_selector_lists_every_node_in_host_order():
    facts = example_facts('gpu-v01.example.com')
    got = wd.wanted_devices([host('n2', 'vm-passthrough', facts=facts), host('n1', 'vm-passthrough', facts=facts)])
    assert got['pci_devices'] == [{'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10',
                                   'nodes': ['n2', 'n1'], 'source': 'facts'}]


def test_nothing_wanted_for_no_hosts():
    assert wd.wanted_devices([]) == {'pci_devices': [], 'mediated_devices': []}
    assert wd.wanted_devices(None) == {'pci_devices': [], 'mediated_devices': []}


@pytest.mark.parametrize('entry, named', [
    ({'node': 'c1', 'pool': 'container', 'facts': {}}, 'c1'),
    ({'node': 'd1', 'pool': 'dra', 'facts': {}}, 'd1'),
    ({'pool': 'vm-passthrough', 'facts': {}}, "'pool': 'vm-passthrough'"),
    ({'node': 'p1', 'pool': 'vm-passthrough', 'facts': None}, 'p1'),
    ({'node': 'p1', 'facts': {}}, 'got none'),
    ('p1', 'p1'),
])
def test_a_host_kubevirt_cannot_be_given_devices_is_refused(entry, named):
    with pytest.raises(wd.WantedDevicesError, match='needs node, pool') as exc:
        wd.wanted_devices([entry])
    # the refusal names the pools KubeVirt can be given devices for: every VM pool of the table
    assert named in str(exc.value) and ' or '.join(wd.vm_pools()) in str(exc.value)
    assert 'vm-passthrough' in wd.vm_pools() and 'container' not in wd.vm_pools()


def test_a_vendor_vfio_host_is_refused_naming_its_node():
    facts = {'pci_devices': {'gpus': []}, 'mdev_types': {'parents': [
        {'parent': '0000:26:00.4', 'interface': 'vendor_vfio',
         'types': [{'type_id': '1155', 'name': 'NVIDIA L40S-24Q', 'short_name': 'L40S-24Q'}]}]}}
    # KubeVirt finds mediated devices on the mdev bus only (kubevirt/kubevirt
    # pkg/virt-handler/device-manager/mediated_device.go): such an entry could never match
    with pytest.raises(wd.WantedDevicesError, match=r"^gpu-l01: vGPU type NVIDIA L40S-24Q is offered on 0000:26:00.4"):
        wd.wanted_devices([host('gpu-l01', 'vm-vgpu', facts=facts)])


def test_a_new_pool_kind_is_a_row_of_the_pool_table(monkeypatch):
    # a hypothetical second passthrough pool: no code here changes, the row's resource kind routes its hosts
    row = fleet.BY_NAME['vm-passthrough'].replace(name='vm-passthrough-ib', group='gpu_vm_passthrough_ib')
    before = wd.vm_pools()
    monkeypatch.setattr(fleet, 'POOL_TABLE', fleet.POOL_TABLE + (row,))
    monkeypatch.setattr(fleet, 'BY_NAME', dict(fleet.BY_NAME, **{row.name: row}))
    assert wd.vm_pools() == before + ('vm-passthrough-ib',)
    got = wd.wanted_devices([host('x', 'vm-passthrough-ib', facts=example_facts('gpu-v01.example.com'))])
    assert [e['nodes'] for e in got['pci_devices']] == [['x']]
    # beside the pool it copies, on the same GPU model: KubeVirt permits the selector once, for both pools' nodes
    # (one provider, whole GPUs on vfio-pci in both), never refused as two providers
    got = wd.wanted_devices([host('x', 'vm-passthrough-ib', facts=example_facts('gpu-v01.example.com')),
                             host('y', 'vm-passthrough', facts=example_facts('gpu-v01.example.com'))])
    assert [e['nodes'] for e in got['pci_devices']] == [['x', 'y']]


def test_two_pools_that_would_permit_one_selector_from_two_providers_are_refused_naming_both(monkeypatch):
    # a hypothetical passthrough pool whose GPUs KubeVirt's own device plugin advertises: for one vendor:device
    # KubeVirt holds one pciHostDevices entry, external or not (kubevirt/kubevirt v1.9.0 types.go PciHostDevice)
    row = fleet.BY_NAME['vm-passthrough'].replace(name='vm-passthrough-kv', group='gpu_vm_passthrough_kv',
                                                  advertiser='kubevirt')
    monkeypatch.setattr(fleet, 'POOL_TABLE', fleet.POOL_TABLE + (row,))
    monkeypatch.setattr(fleet, 'BY_NAME', dict(fleet.BY_NAME, **{row.name: row}))
    with pytest.raises(wd.WantedDevicesError) as exc:
        wd.wanted_devices([host('x', 'vm-passthrough-kv', facts=example_facts('gpu-v01.example.com')),
                           host('y', 'vm-passthrough', facts=example_facts('gpu-v01.example.com'))])
    said = str(exc.value)
    assert 'is wanted by host x (pool vm-passthrough-kv: whole GPUs on vfio-pci, advertised by kubevirt)' in said
    assert 'and by host y (pool vm-passthrough: whole GPUs on vfio-pci, advertised by sandbox-device-plugin)' in said


def test_filter_wraps_errors_and_pciids_option(tmp_path):
    with pytest.raises(AnsibleFilterError, match='^wanted_devices: kubevirt_devices_hosts entry c1'):
        fleet_filter.wanted_devices([{'node': 'c1', 'pool': 'container', 'facts': {}}])
    with pytest.raises(AnsibleFilterError, match='^wanted_devices: cannot read pci.ids'):
        fleet_filter.wanted_devices(EXAMPLE, pciids=str(tmp_path / 'missing.ids'))
    assert fleet_filter.wanted_devices(EXAMPLE) == wd.wanted_devices(EXAMPLE)


def test_hostile_names_from_host_output_are_refused_naming_the_host_and_the_device():
    # an mdev type name from the host's sysfs that would make nvidia.com/NVIDIA_A10-12Q/../../x:_y
    facts = {'pci_devices': {'gpus': []},
             'mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev',
                                         'types': [{'name': 'NVIDIA A10-12Q/../../x: y'}]}]}}
    with pytest.raises(wd.WantedDevicesError) as e:
        wd.wanted_devices([host('gpu-v09.example.com', 'vm-vgpu', facts=facts)])
    assert str(e.value).startswith('gpu-v09: ')
    assert 'mdev parent 0000:41:00.4 in the mdev_types fact' in str(e.value)
    # an empty device name (nothing left after the plugin's naming): nvidia.com/
    gpu = {'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': '[]', 'kind': 'gpu'}
    with pytest.raises(wd.WantedDevicesError) as e:
        wd.wanted_devices([host('gpu-p09.example.com', 'vm-passthrough',
                                facts={'pci_devices': {'gpus': [gpu]}, 'mdev_types': {}})])
    assert str(e.value).startswith('gpu-p09: ') and 'GPU 0000:41:00.0 (10de:2236)' in str(e.value)


# A host of a pool whose devices KubeVirt's own device plugin advertises (vm-vgpu-vf: function vf, advertiser
# kubevirt) whose facts name another vendor's function: the plugin would hand out that vendor:device on every node.
PT_A10 = {'bdf': '0000:3b:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
          'is_vf': False}


def _vgpu_vf_host(gpus):
    return {'node': 'evil', 'host': 'evil', 'pool': 'vm-vgpu-vf', 'vgpu_types': ['A10-4Q'],
            'facts': {'pci_devices': {'gpus': gpus, 'devices': gpus}, 'mdev_types': {}}}


@pytest.mark.parametrize('gpus, said', [
    # an Intel X710 VF id reported as a "GPU" under an A10's device name
    ([dict(PT_A10, bdf='0000:af:00.0', vendor_id='8086', device_id='154c')], 'is not an NVIDIA GPU (vendor 8086'),
    # NVIDIA's vendor id but a network class
    ([dict(PT_A10, class_id='0200')], 'class 0200'),
    # a VF whose physfn is no GPU of this host
    ([dict(PT_A10, bdf='0000:3b:00.4', is_vf=True, physfn='0000:99:00.0')], 'physfn 0000:99:00.0 is not one'),
    # a VF whose physfn is another vendor's PF on this host
    ([dict(PT_A10, vendor_id='8086'), dict(PT_A10, bdf='0000:3b:00.4', is_vf=True, physfn='0000:3b:00.0')],
     'is not an NVIDIA GPU'),
])
def test_a_vf_pool_served_by_kubevirt_takes_only_nvidia_gpu_functions_of_the_host(gpus, said):
    pt = {'node': 'pt1', 'host': 'pt1', 'pool': 'vm-passthrough', 'vgpu_types': [],
          'facts': {'pci_devices': {'gpus': [PT_A10], 'devices': [PT_A10]}, 'mdev_types': {}}}
    with pytest.raises(wd.WantedDevicesError, match='^evil: PCI function ') as exc:
        wd.wanted_devices([pt, _vgpu_vf_host(gpus)])
    assert said in str(exc.value)


def test_a_vf_pool_keeps_nvidia_vfs_of_its_own_gpus():
    gpus = [dict(PT_A10, class_id='0302'),
            dict(PT_A10, bdf='0000:3b:00.4', is_vf=True, physfn='0000:3b:00.0', class_id='0302')]
    got = wd.wanted_devices([_vgpu_vf_host(gpus)])['pci_devices']
    assert [(e['selector'], e['nodes'], e.get('external')) for e in got] == [('10DE:2236', ['evil'], False)]
