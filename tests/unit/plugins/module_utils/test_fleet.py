# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet model: the pool table and the per-host view (gpu_hosts) every phase consumes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import fleet as fleet_filter
from ansible_collections.gpuvirt.provision.plugins.module_utils import fleet, preflight, resource_names
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator, node_labels

PCI = {'gpus': [{'bdf': '0000:41:00.0', 'device_id': '2236', 'is_vf': False}]}


def test_pool_table_traits():
    assert fleet.POOLS == ('container', 'vm-passthrough', 'vm-vgpu', 'dra')
    assert fleet.GPU_HOSTS_PATTERN == 'gpu_container:gpu_vm_passthrough:gpu_vm_vgpu:gpu_dra'
    assert fleet.IOMMU_POOLS == ('vm-passthrough', 'vm-vgpu', 'dra')
    assert fleet.HOST_VFIO_POOLS == ('vm-passthrough',)
    assert fleet.VGPU_POOLS == ('vm-vgpu',)
    assert fleet.WORKLOADS == ('container', 'vm-passthrough', 'vm-vgpu')
    assert fleet.BY_NAME['dra'].workload == 'container' and fleet.BY_NAME['dra'].resource == 'dra'


def test_old_names_read_the_one_table():
    assert node_labels.POOLS == fleet.POOLS and node_labels.IOMMU_POOLS == fleet.IOMMU_POOLS
    assert list(node_labels.GROUP_POOLS) == ['gpu_vm_passthrough', 'gpu_vm_vgpu', 'gpu_container', 'gpu_dra']
    assert preflight.POOLS == ('container', 'vm-passthrough', 'vm-vgpu')
    assert preflight.VM_POOLS == fleet.IOMMU_POOLS and preflight.KNOWN_POOLS == fleet.POOLS
    assert gpu_operator.WORKLOADS == fleet.WORKLOADS


def test_view_one_entry_per_host_in_group_order():
    groups = {'all': ['v.example.com', 'c', 'p', 'd', 'x'], 'gpu_vm_vgpu': ['v.example.com'], 'gpu_container': ['c'],
              'gpu_vm_passthrough': ['p', 'gone'], 'gpu_dra': ['d'], 'workers': ['x']}
    hostvars = {'v.example.com': {'gpuvirt_vgpu_config': 'custom', 'gpuvirt_pci_devices': PCI, 'gpuvirt_os_tag': 'rhcos4.18'},
                'c': {'gpuvirt_node_name': 'ctr-node', 'gpuvirt_pool': 'container'},
                'p': {'gpuvirt_pci_devices': PCI, 'gpuvirt_mdev_types': {'parents': []}},
                'd': {'gpuvirt_gpu_holders': {'held': False, 'holders': []}}, 'x': {}}
    view = fleet.gpu_hosts(hostvars, groups, {'custom': {'A10-4Q': 2, 'A10-12Q': 1}})
    assert [(h['host'], h['node'], h['pool']) for h in view] == [
        ('c', 'ctr-node', 'container'), ('p', 'p', 'vm-passthrough'), ('v.example.com', 'v', 'vm-vgpu'),
        ('d', 'd', 'dra')]
    by_host = dict((h['host'], h) for h in view)
    assert by_host['v.example.com']['vgpu_types'] == ['A10-12Q', 'A10-4Q']
    assert by_host['v.example.com']['vgpu_config'] == 'custom' and by_host['c']['vgpu_config'] is None
    assert by_host['c']['vgpu_types'] == [] and by_host['c']['gathered'] is False
    assert by_host['p']['facts'] == {'pci_devices': PCI, 'mdev_types': {'parents': []}, 'gpu_holders': {}}
    assert by_host['p']['gathered'] is True and by_host['p']['groups'] == ['gpu_vm_passthrough']
    assert by_host['d']['facts']['gpu_holders'] == {'held': False, 'holders': []}
    assert by_host['d']['facts']['pci_devices'] == {}
    # each entry carries its pool's row, the phases select on it (not on pool names)
    assert all(h['traits'] == fleet.pool_traits(h['pool']) for h in view)
    assert [h['host'] for h in view if h['traits']['iommu']] == ['p', 'v.example.com', 'd']
    assert by_host['p']['traits']['resource'] == 'pci' and by_host['v.example.com']['traits']['resource'] == 'mdev'
    assert by_host['v.example.com']['os_tag'] == 'rhcos4.18' and by_host['p']['os_tag'] is None


def test_a_host_in_two_groups_is_refused_naming_both():
    groups = {'gpu_vm_vgpu': ['gpu-1'], 'gpu_vm_passthrough': ['gpu-1']}
    with pytest.raises(fleet.FleetError, match=r'gpu-1 is in the pools vm-passthrough, vm-vgpu \(groups '
                                               r'gpu_vm_passthrough, gpu_vm_vgpu\)'):
        fleet.gpu_hosts({'gpu-1': {}}, groups)


def test_gpuvirt_pool_must_agree_and_be_known():
    groups = {'gpu_container': ['gpu-1']}
    with pytest.raises(fleet.FleetError, match=r'gpuvirt_pool vm-vgpu disagrees with its group \(pool container\)'):
        fleet.gpu_hosts({'gpu-1': {'gpuvirt_pool': 'vm-vgpu'}}, groups)
    with pytest.raises(fleet.FleetError, match=r"unknown pool 'vm-gpu'"):
        fleet.gpu_hosts({'gpu-1': {'gpuvirt_pool': 'vm-gpu'}}, groups)
    with pytest.raises(fleet.FleetError, match=r'no GPU pool group'):
        fleet.host_pool('gpu-1', ['workers'])


def test_node_names_are_dns1123_checked():
    with pytest.raises(fleet.FleetError, match=r'Set gpuvirt_node_name'):
        fleet.gpu_hosts({'gpu-1': {'gpuvirt_node_name': 'GPU_1'}}, {'gpu_container': ['gpu-1']})


def test_filter_wraps_the_errors():
    assert set(fleet_filter.FilterModule().filters()) == {'gpu_hosts', 'pool_traits', 'wanted_devices',
                                                          'hosts_pattern_problem'}
    with pytest.raises(AnsibleFilterError, match=r'gpu_hosts: gpu-1 is in the pools'):
        fleet_filter.gpu_hosts({'gpu-1': {}}, {'gpu_container': ['gpu-1'], 'gpu_dra': ['gpu-1']})


def test_pool_traits_one_row_or_the_table():
    assert fleet_filter.pool_traits('vm-passthrough') == {
        'name': 'vm-passthrough', 'group': 'gpu_vm_passthrough', 'workload': 'vm-passthrough', 'iommu': True,
        'host_vfio': True, 'resource': 'pci', 'vgpu': False}
    assert fleet_filter.pool_traits('vm-gpu') == {}
    assert list(fleet_filter.pool_traits(None)) == ['container', 'vm-passthrough', 'vm-vgpu', 'dra']


def test_the_playbooks_host_pattern_is_the_pool_table_s():
    import os
    import yaml
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'playbooks', 'vars', 'fleet.yml')
    with open(path, encoding='utf-8') as handle:
        assert yaml.safe_load(handle)['__gpuvirt_gpu_hosts_pattern'] == fleet.GPU_HOSTS_PATTERN


def test_expected_resources_follow_the_pool_row_not_its_name(monkeypatch):
    # a hypothetical second passthrough pool: its row's resource kind gives it the passthrough resources
    row = fleet.Pool('vm-passthrough-ib', 'gpu_vm_passthrough_ib', 'vm-passthrough', True, True, 'pci', False)
    monkeypatch.setattr(fleet, 'BY_NAME', dict(fleet.BY_NAME, **{row.name: row}))
    facts = {'pci_devices': {'gpus': [dict(PCI['gpus'][0], vendor_id='10de', device_name='GA102GL [A10]')]}}
    assert resource_names.expected_resources(facts, 'vm-passthrough-ib') == {'nvidia.com/GA102GL_A10': 1}
    assert resource_names.expected_resources(facts, 'vm-passthrough-ib') == \
        resource_names.expected_resources(facts, 'vm-passthrough')
    # the DRA pool advertises no extended resource: asking for one names the pools that do
    with pytest.raises(resource_names.ResourceNameError,
                       match=r"unknown pool 'dra': use one of container, vm-passthrough, vm-vgpu \("):
        resource_names.expected_resources(facts, 'dra')
