# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet model: the pool table and the per-host view (gpu_hosts) every phase consumes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import fleet as fleet_filter
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, resource_names
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator, node_labels

PCI = {'gpus': [{'bdf': '0000:41:00.0', 'device_id': '2236', 'is_vf': False}]}


def _in_order(values):
    """Each value once, where it first stands (dict keys keep insertion order)."""
    return tuple(dict.fromkeys(values))


def test_every_list_of_pools_is_the_table_s():
    table = fleet.POOL_TABLE
    assert fleet.POOLS == tuple(p.name for p in table) and fleet.GPU_GROUPS == tuple(p.group for p in table)
    assert fleet.GPU_HOSTS_PATTERN == ':'.join(p.group for p in table)
    assert fleet.IOMMU_POOLS == fleet.VM_POOLS == tuple(p.name for p in table if p.iommu)
    assert fleet.HOST_VFIO_POOLS == tuple(p.name for p in table if p.host_vfio)
    assert fleet.VGPU_POOLS == tuple(p.name for p in table if p.vgpu)
    assert fleet.GROUP_POOLS == dict((p.group, p.name) for p in table)
    assert fleet.WORKLOADS == gpu_operator.WORKLOADS == _in_order(p.workload for p in table)
    assert fleet.RESOURCE_KINDS == _in_order(p.resource for p in table)
    assert node_labels.WORKLOAD_LABEL == fleet.WORKLOAD_LABEL
    # the derivation is the one the module runs: the same table gives the same names
    for name, value in fleet.derived(table).items():
        assert getattr(fleet, name) == value, name


def test_every_row_is_consistent():
    for row in fleet.POOL_TABLE:
        assert fleet.BY_NAME[row.name] is row and fleet.BY_GROUP[row.group] is row
        assert fleet.pool_traits(row.name) == row.as_dict()
        assert row.advertiser in fleet.ADVERTISERS and row.function in fleet.FUNCTIONS
        # a pool whose devices KubeVirt permits is advertised by a device plugin; the entries say which kind
        if row.permitted:
            assert row.permitted in fleet.PERMITTED_LISTS and fleet.ADVERTISERS[row.advertiser] is not None
            assert fleet.external_resource_provider(row.name) is fleet.ADVERTISERS[row.advertiser]
        else:
            assert fleet.external_resource_provider(row.name) is None
        # a host of the pool's group is in the pool, alone
        assert fleet.host_pool('h', ['all', row.group]) == row.name


def test_a_broken_row_is_refused_naming_it():
    ok = fleet.POOL_TABLE
    with pytest.raises(fleet.TableError, match=r"pool dra2: group 'gpu_dra' is also the group of pool dra"):
        fleet.derived(ok + (fleet.BY_NAME['dra'].replace(name='dra2'),))
    with pytest.raises(fleet.TableError, match=r"pool x: advertiser 'nvidia' is not one of"):
        fleet.derived(ok + (fleet.BY_NAME['dra'].replace(name='x', group='gpu_x', advertiser='nvidia'),))
    with pytest.raises(fleet.TableError, match=r"pool x: a resource KubeVirt permits .* not advertiser 'dra-driver'"):
        fleet.derived(ok + (fleet.BY_NAME['dra'].replace(name='x', group='gpu_x', permitted='pciHostDevices'),))


def test_rows_have_named_columns_with_defaults():
    row = fleet.Pool(name='x', group='gpu_x', workload='container', resource='gpu', advertiser='nvidia-device-plugin')
    assert (row.iommu, row.host_vfio, row.vgpu, row.function, row.permitted) == (False, False, False, 'pf', None)
    with pytest.raises(TypeError, match=r'unknown column iommmu'):
        fleet.Pool(name='x', group='gpu_x', workload='container', resource='gpu', advertiser='kubevirt', iommmu=True)
    with pytest.raises(TypeError, match=r"Pool 'x': the column advertiser has no default"):
        fleet.Pool(name='x', group='gpu_x', workload='container', resource='gpu')
    with pytest.raises(AttributeError, match='read-only'):
        row.iommu = True
    assert row.replace(iommu=True).iommu is True and row.iommu is False
    changed = row.as_dict()
    changed['name'] = 'y'
    assert row.name == 'x' and row == fleet.Pool(**row.as_dict()) and row != row.replace(name='y')


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
    for row in fleet.POOL_TABLE:
        traits = fleet_filter.pool_traits(row.name)
        assert traits == row.as_dict() and list(traits) == [name for name, default in fleet.Pool.COLUMNS]
    assert fleet_filter.pool_traits('vm-gpu') == {}
    assert list(fleet_filter.pool_traits(None)) == list(fleet.POOLS)


def test_the_playbooks_host_pattern_is_the_pool_table_s():
    import os
    import yaml
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'playbooks', 'vars', 'fleet.yml')
    with open(path, encoding='utf-8') as handle:
        assert yaml.safe_load(handle)['__gpuvirt_gpu_hosts_pattern'] == fleet.GPU_HOSTS_PATTERN


def test_expected_resources_follow_the_pool_row_not_its_name(monkeypatch):
    # a hypothetical second passthrough pool: its row's resource kind gives it the passthrough resources
    row = fleet.BY_NAME['vm-passthrough'].replace(name='vm-passthrough-ib', group='gpu_vm_passthrough_ib')
    monkeypatch.setattr(fleet, 'BY_NAME', dict(fleet.BY_NAME, **{row.name: row}))
    facts = {'pci_devices': {'gpus': [dict(PCI['gpus'][0], vendor_id='10de', device_name='GA102GL [A10]')]}}
    assert resource_names.expected_resources(facts, 'vm-passthrough-ib') == {'nvidia.com/GA102GL_A10': 1}
    assert resource_names.expected_resources(facts, 'vm-passthrough-ib') == \
        resource_names.expected_resources(facts, 'vm-passthrough')
    # the DRA pool advertises no extended resource: asking for one names the pools that do (every row but dra's)
    advertised = [p.name for p in fleet.POOL_TABLE if p.resource != 'dra']
    with pytest.raises(resource_names.ResourceNameError,
                       match=r"unknown pool 'dra': use one of %s \(" % re.escape(', '.join(advertised))):
        resource_names.expected_resources(facts, 'dra')
