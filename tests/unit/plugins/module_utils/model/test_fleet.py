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
# imported when the file is collected, not inside a test (a test before it in the same process may have
# installed Ansible's collection loader, through which a first import of a collection submodule fails)
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import wanted_devices

PCI = {'gpus': [{'bdf': '0000:41:00.0', 'device_id': '2236', 'is_vf': False}]}


def _in_order(values):
    """Each value once, where it first stands (dict keys keep insertion order)."""
    return tuple(dict.fromkeys(values))


def test_every_list_of_pools_is_the_table_s():
    table = fleet.POOL_TABLE
    # lists about pools are per row; lists about groups name each group once (rows may share a group)
    assert fleet.POOLS == tuple(p.name for p in table) and fleet.GPU_GROUPS == _in_order(p.group for p in table)
    assert fleet.GPU_HOSTS_PATTERN == ':'.join(_in_order(p.group for p in table))
    assert len(fleet.GPU_GROUPS) == len(set(fleet.GPU_GROUPS)) < len(fleet.POOLS)
    assert fleet.IOMMU_POOLS == tuple(p.name for p in table if p.iommu)
    assert fleet.HOST_VFIO_POOLS == tuple(p.name for p in table if p.host_vfio)
    assert fleet.VGPU_POOLS == tuple(p.name for p in table if p.vgpu)
    # NVIDIA's device plugin serves the rows it advertises for (not a fixed list: a new row of it needs no edit here)
    assert fleet.DEVICE_PLUGIN_POOLS == tuple(p.name for p in table if p.device_plugin) == tuple(
        p.name for p in table if p.advertiser == 'nvidia-device-plugin') and 'container' in fleet.DEVICE_PLUGIN_POOLS
    assert fleet.MIG_POOLS == tuple(p.name for p in table if p.mig) == tuple(
        p.name for p in table if p.resource == 'mig')
    assert fleet.VF_PROFILE_POOLS == tuple(p.name for p in table if p.vf_profiles) == ('vm-vgpu-vf',)
    assert fleet.VF_PROFILE_INTERFACES == ('vendor-vfio',)
    # a group's default pool is its first row
    assert fleet.GROUP_POOLS == dict((g, [p.name for p in table if p.group == g][0]) for g in fleet.GPU_GROUPS)
    assert fleet.GROUP_ROWS == dict((g, tuple(p for p in table if p.group == g)) for g in fleet.GPU_GROUPS)
    assert fleet.WORKLOADS == gpu_operator.WORKLOADS == _in_order(p.workload for p in table)
    assert fleet.RESOURCE_KINDS == _in_order(p.resource for p in table)
    assert node_labels.WORKLOAD_LABEL == fleet.WORKLOAD_LABEL
    # the derivation is the one the module runs: the same table gives the same names
    for name, value in fleet.derived(table).items():
        assert getattr(fleet, name) == value, name


def test_every_row_is_consistent():
    for row in fleet.POOL_TABLE:
        assert fleet.BY_NAME[row.name] is row and row in fleet.GROUP_ROWS[row.group]
        assert fleet.BY_GROUP[row.group] is fleet.GROUP_ROWS[row.group][0]
        # rows that share a group are told apart by a distinct vGPU interface, and agree on what host preparation
        # reads before a host shows its interface
        siblings = [r for r in fleet.GROUP_ROWS[row.group] if r is not row]
        assert all(row.interface and r.interface and r.interface != row.interface for r in siblings)
        assert all(getattr(r, c) == getattr(row, c) for r in siblings for c in fleet.GROUP_COLUMNS)
        assert row.interface in fleet.ROW_INTERFACES + (None,) and (row.interface is None or row.vgpu)
        assert fleet.pool_traits(row.name) == row.as_dict()
        assert row.advertiser in fleet.ADVERTISERS and row.function in fleet.FUNCTIONS
        # a pool whose devices KubeVirt permits is advertised by a device plugin; the entries say which kind
        if row.permitted:
            assert row.permitted in fleet.PERMITTED_LISTS and fleet.ADVERTISERS[row.advertiser] is not None
            assert fleet.external_resource_provider(row.name) is fleet.ADVERTISERS[row.advertiser]
        else:
            assert fleet.external_resource_provider(row.name) is None
        # a host of the pool's group is in the group's default pool, alone; gpuvirt_pool may name any row of it
        assert fleet.host_pool('h', ['all', row.group]) == fleet.BY_GROUP[row.group].name
        assert fleet.host_pool('h', ['all', row.group], row.name) == row.name


def test_a_broken_row_is_refused_naming_it():
    ok = fleet.POOL_TABLE
    with pytest.raises(fleet.TableError, match=r"pool dra2: group 'gpu_dra' is also the group of pool dra"):
        fleet.derived(ok + (fleet.BY_NAME['dra'].replace(name='dra2'),))
    with pytest.raises(fleet.TableError, match=r"pool x: advertiser 'nvidia' is not one of"):
        fleet.derived(ok + (fleet.BY_NAME['dra'].replace(name='x', group='gpu_x', advertiser='nvidia'),))
    with pytest.raises(fleet.TableError, match=r"pool x: a resource KubeVirt permits .* not advertiser 'dra-driver'"):
        fleet.derived(ok + (fleet.BY_NAME['dra'].replace(name='x', group='gpu_x', permitted='pciHostDevices'),))


def test_a_column_that_says_an_advertiser_s_part_agrees_with_the_advertiser():
    ok = fleet.POOL_TABLE
    dra, container = fleet.BY_NAME['dra'], fleet.BY_NAME['container']
    # true exactly on the rows of its advertiser: neither without it nor missing on one of them
    with pytest.raises(fleet.TableError, match=r"pool x: dra_driver is False but its advertiser is 'dra-driver': "
                                               r"dra_driver is true exactly on the rows whose advertiser is "
                                               r"dra-driver"):
        fleet.derived(ok + (dra.replace(name='x', group='gpu_x', dra_driver=False),))
    with pytest.raises(fleet.TableError, match=r"pool x: device_plugin is True but its advertiser is "
                                               r"'sandbox-device-plugin'"):
        fleet.derived(ok + (fleet.BY_NAME['vm-passthrough'].replace(name='x', group='gpu_x', device_plugin=True),))
    with pytest.raises(fleet.TableError, match=r"pool x: device_plugin is False but its advertiser is "
                                               r"'nvidia-device-plugin'"):
        fleet.derived(ok + (container.replace(name='x', group='gpu_x', device_plugin=False),))
    with pytest.raises(fleet.TableError, match=r"pool x: dra_driver 'yes' is not true or false"):
        fleet.derived(ok + (dra.replace(name='x', group='gpu_x', dra_driver='yes'),))
    # a VF gets a vGPU profile: only on a vGPU pool of VFs
    with pytest.raises(fleet.TableError, match=r"pool x: vf_profiles true needs a vGPU pool \(vgpu true\) of SR-IOV "
                                               r"VFs \(function vf\)"):
        fleet.derived(ok + (fleet.BY_NAME['vm-passthrough'].replace(name='x', group='gpu_x', vf_profiles=True),))
    with pytest.raises(fleet.TableError, match=r"pool x: vf_profiles true needs"):
        fleet.derived(ok + (fleet.BY_NAME['vm-vgpu-vf'].replace(name='x', group='gpu_x', interface=None,
                                                                function='pf'),))
    # the rows as they stand: the DRA row is the DRA driver's, the container row the classic device plugin's, the
    # vendor-VFIO row's VFs get profiles (its host state has the boot-time restore)
    assert [r.name for r in ok if r.dra_driver] == ['dra'] and 'container' in [r.name for r in ok if r.device_plugin]
    assert [r.name for r in ok if r.vf_profiles] == ['vm-vgpu-vf']
    assert [r.name for r in ok if fleet.host_state(r)['vf_unit'] == 'present'] == ['vm-vgpu-vf']


def test_the_mig_column_is_true_exactly_on_mig_rows_the_device_plugin_serves():
    ok = fleet.POOL_TABLE
    container = fleet.BY_NAME['container']
    # MIG devices are a resource kind of their own ('mig': nvidia.com/gpu or nvidia.com/mig-<profile> by the MIG
    # strategy), told by the column, and NVIDIA's device plugin advertises them (k8s-device-plugin v0.20.0
    # internal/rm/rm.go AddDefaultResourcesToConfig)
    with pytest.raises(fleet.TableError, match=r"pool x: mig is True but its resource is 'gpu': mig is true exactly "
                                               r"on the rows whose resource is mig"):
        fleet.derived(ok + (container.replace(name='x', group='gpu_x', mig=True),))
    with pytest.raises(fleet.TableError, match=r"pool x: mig is False but its resource is 'mig'"):
        fleet.derived(ok + (container.replace(name='x', group='gpu_x', resource='mig'),))
    with pytest.raises(fleet.TableError, match=r"pool x: mig true needs NVIDIA's device plugin"):
        fleet.derived(ok + (fleet.BY_NAME['vm-passthrough'].replace(name='x', group='gpu_x', resource='mig',
                                                                    mig=True),))
    with pytest.raises(fleet.TableError, match=r"pool x: mig 1 is not true or false"):
        fleet.derived(ok + (container.replace(name='x', group='gpu_x', mig=1),))
    (row,) = [r for r in ok if r.mig]
    assert (row.name, row.group, row.workload, row.device_plugin, row.iommu, row.host_vfio, row.permitted) == (
        'container-mig', 'gpu_container_mig', 'container', True, False, False, None)
    # no row but the MIG one changed: the column's default is false
    assert [r.name for r in ok if r.mig] == list(fleet.MIG_POOLS) == ['container-mig']


def test_a_mig_host_gets_its_config_in_the_view_and_a_bad_one_is_refused():
    hostvars = {'m1.example.com': {'gpuvirt_mig_config': 'all-1g.10gb'}, 'm2.example.com': {},
                'c1.example.com': {'gpuvirt_mig_config': 'all-1g.10gb'}}
    groups = {'gpu_container_mig': ['m1.example.com', 'm2.example.com'], 'gpu_container': ['c1.example.com']}
    view = dict((h['host'], h) for h in fleet.gpu_hosts(hostvars, groups))
    assert view['m1.example.com']['mig_config'] == 'all-1g.10gb' and view['m1.example.com']['traits']['mig']
    # the default: all-balanced (the MIG manager builds it for every MIG GPU; mig-parted pkg/mig/builder)
    assert view['m2.example.com']['mig_config'] == 'all-balanced'
    # only a MIG pool's host has one
    assert view['c1.example.com']['mig_config'] is None
    for bad, said in (('all-disabled', 'creates no MIG device'), ('all-enabled', 'creates no MIG device'),
                      ('half', 'not a config the MIG manager generates'), ('all-1g.10gb.', 'not valid')):
        hostvars['m2.example.com']['gpuvirt_mig_config'] = bad
        with pytest.raises(fleet.FleetError, match=r'gpuvirt_mig_config of m2.example.com.*%s' % said):
            fleet.gpu_hosts(hostvars, groups)


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
                                                          'hosts_pattern_problem', 'pool_host_state'}
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


# The vGPU interface picks a gpu_vm_vgpu host's row. host_interface facts in the shape host/vgpu_interface.py
# host_facts returns them (its tests build them from sysfs trees after the reference captures): the A10 of the
# OpenNebula vGPU guide (PF 0000:41:00.0, VF 0000:41:00.4 with nvidia/creatable_vgpu_types), an L40S (AD102GL).
A10 = {'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
       'is_vf': False}
L40S = {'bdf': '0000:c1:00.0', 'vendor_id': '10de', 'device_id': '26b9', 'device_name': 'AD102GL [L40S]',
        'is_vf': False}
SHOWS_VFIO = {'interface': 'vendor-vfio', 'kernel_release': '6.8.0-60-generic', 'driver_version': '580.82.02',
              'evidence': ['0000:41:00.4 has nvidia/creatable_vgpu_types and no mdev_supported_types',
                           'kernel 6.8.0-60-generic, driver 580.82.02']}
SHOWS_MDEV = {'interface': 'mdev', 'kernel_release': '5.15.0-119-generic', 'driver_version': '550.54.16',
              'evidence': ['/sys/class/mdev_bus lists 0000:41:00.0 with mdev_supported_types',
                           'kernel 5.15.0-119-generic, driver 550.54.16']}
SHOWS_NONE_NOBLE = {'interface': 'none', 'kernel_release': '6.8.0-60-generic', 'driver_version': None,
                    'evidence': ['no /sys/class/mdev_bus entry and no nvidia/creatable_vgpu_types on any PCI device',
                                 'kernel 6.8.0-60-generic, no NVIDIA driver loaded (no /sys/module/nvidia/version)']}
SHOWS_NONE_JAMMY = dict(SHOWS_NONE_NOBLE, kernel_release='5.15.0-119-generic')


def vgpu_view(hv, groups=None):
    (entry,) = fleet.gpu_hosts({'gpu-v': hv}, groups or {'gpu_vm_vgpu': ['gpu-v']})
    return entry


def facts_of(host_interface, gpus=(A10,)):
    return {'gpuvirt_pci_devices': {'gpus': list(gpus)},
            'gpuvirt_mdev_types': {'parents': [], 'host_interface': host_interface}}


def test_the_vendor_vfio_row_is_a_vgpu_row_of_pci_vfs_served_by_kubevirt():
    vf = fleet.BY_NAME['vm-vgpu-vf']
    # the group users put every vGPU host in; IOMMU on, no host vfio binding (the VFs stay on the nvidia driver);
    # a PCI resource of VFs, permitted through pciHostDevices, advertised by KubeVirt's own plugin from v1.9.0
    assert (vf.group, vf.workload, vf.iommu, vf.host_vfio, vf.vgpu) == ('gpu_vm_vgpu', 'vm-vgpu', True, False, True)
    assert (vf.resource, vf.function, vf.permitted, vf.advertiser) == ('pci', 'vf', 'pciHostDevices', 'kubevirt')
    assert (vf.interface, vf.kubevirt_min) == ('vendor-vfio', '1.9.0')
    assert fleet.external_resource_provider('vm-vgpu-vf') is False
    assert fleet.BY_NAME['vm-vgpu'].interface == 'mdev'
    # the mdev row is the group's default; the group is listed once where lists are about groups
    assert fleet.BY_GROUP['gpu_vm_vgpu'].name == fleet.GROUP_POOLS['gpu_vm_vgpu'] == 'vm-vgpu'
    assert [r.name for r in fleet.GROUP_ROWS['gpu_vm_vgpu']] == ['vm-vgpu', 'vm-vgpu-vf']
    assert fleet.GPU_GROUPS.count('gpu_vm_vgpu') == 1 and fleet.GPU_HOSTS_PATTERN.count('gpu_vm_vgpu') == 1
    assert 'vm-vgpu-vf' in fleet.POOLS and 'vm-vgpu-vf' in fleet.VGPU_POOLS
    # the row interfaces are the host facts' spelling, 'none' aside
    assert fleet.ROW_INTERFACES == ('mdev', 'vendor-vfio')


def test_a_vgpu_host_whose_interface_nothing_tells_gets_the_group_s_default():
    for hv in ({}, facts_of(SHOWS_NONE_JAMMY), facts_of(SHOWS_NONE_NOBLE)):
        entry = vgpu_view(hv)
        assert entry['pool'] == 'vm-vgpu' and entry['traits'] == fleet.pool_traits('vm-vgpu')
        assert entry['interface'] is None
        assert entry['interface_reason'].startswith('not known yet: ')
        assert entry['interface_reason'].endswith("the group gpu_vm_vgpu's default pool vm-vgpu (mdev)")
    # no facts at all: the reason says the chip alone does not decide
    assert 'the chip name alone does not decide' in vgpu_view({})['interface_reason']
    # a group whose rows do not depend on the interface says nothing of it
    entry = vgpu_view(facts_of(SHOWS_VFIO), {'gpu_vm_passthrough': ['gpu-v']})
    assert (entry['pool'], entry['interface'], entry['interface_reason']) == ('vm-passthrough', None, '')


def test_the_interface_the_host_shows_picks_the_row():
    entry = vgpu_view(facts_of(SHOWS_VFIO))
    assert (entry['pool'], entry['interface']) == ('vm-vgpu-vf', 'vendor-vfio')
    assert entry['traits'] == fleet.pool_traits('vm-vgpu-vf') and entry['groups'] == ['gpu_vm_vgpu']
    assert entry['interface_reason'] == ('the host shows vendor-vfio: 0000:41:00.4 has nvidia/creatable_vgpu_types '
                                         'and no mdev_supported_types; kernel 6.8.0-60-generic, driver 580.82.02')
    # a host whose facts show mdev keeps the mdev row, whatever its kernel or chip
    entry = vgpu_view(facts_of(SHOWS_MDEV, (L40S,)))
    assert (entry['pool'], entry['interface']) == ('vm-vgpu', 'mdev')
    assert entry['interface_reason'].startswith('the host shows mdev: /sys/class/mdev_bus lists 0000:41:00.0')
    # facts saved before host_interface existed: the parents' own interface tells
    saved = {'gpuvirt_pci_devices': {'gpus': [A10]},
             'gpuvirt_mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'vendor_vfio', 'types': []}]}}
    assert vgpu_view(saved)['pool'] == 'vm-vgpu-vf'
    saved['gpuvirt_mdev_types']['parents'][0]['interface'] = 'mdev'
    assert vgpu_view(saved)['pool'] == 'vm-vgpu'


def test_a_fresh_host_gets_the_row_its_kernel_and_configured_driver_predict():
    # kernel 6.8 and the R580 vGPU Manager the GPU Operator will install: vendor-specific VFIO, an A10 too
    hv = dict(facts_of(SHOWS_NONE_NOBLE), gpu_operator_vgpu_manager={'version': '580.82.02'})
    entry = vgpu_view(hv)
    assert (entry['pool'], entry['interface']) == ('vm-vgpu-vf', 'vendor-vfio')
    assert entry['interface_reason'].startswith('predicted vendor-vfio (no vGPU interface shown yet): ')
    assert 'kernel 6.8.0-60-generic, driver 580.82.02 (the vGPU Manager to install)' in entry['interface_reason']
    # the image role's version is read where the operator's is not set
    assert vgpu_view(dict(facts_of(SHOWS_NONE_NOBLE), vgpu_manager_image_version='580.82.02'))['pool'] == 'vm-vgpu-vf'
    # the same host with the R535 manager on a 5.15 kernel stays on mdev
    hv = dict(facts_of(SHOWS_NONE_JAMMY), gpu_operator_vgpu_manager={'version': '535.216.01'})
    assert (vgpu_view(hv)['pool'], vgpu_view(hv)['interface']) == ('vm-vgpu', 'mdev')
    # no facts gathered (a render): an L40S with vGPU 17+ is judged by its chip
    hv = {'gpuvirt_pci_devices': {'gpus': [L40S]}, 'gpu_operator_vgpu_manager': {'version': '550.54.16'}}
    entry = vgpu_view(hv)
    assert entry['pool'] == 'vm-vgpu-vf' and 'judged from the chip name alone' in entry['interface_reason']
    # a version that is no driver version predicts nothing
    hv = dict(facts_of(SHOWS_NONE_NOBLE), gpu_operator_vgpu_manager={'version': '580.82.02-ubuntu24.04'})
    assert (vgpu_view(hv)['pool'], vgpu_view(hv)['interface']) == ('vm-vgpu', None)


def test_gpuvirt_pool_may_name_the_vendor_vfio_row_and_must_agree_with_the_facts():
    # named where nothing tells: taken, and said
    entry = vgpu_view({'gpuvirt_pool': 'vm-vgpu-vf'})
    assert (entry['pool'], entry['interface']) == ('vm-vgpu-vf', None)
    assert entry['interface_reason'].endswith('gpuvirt_pool vm-vgpu-vf (the vendor-vfio interface)')
    # named and agreeing with what the host shows
    assert vgpu_view(dict(facts_of(SHOWS_VFIO), gpuvirt_pool='vm-vgpu-vf'))['pool'] == 'vm-vgpu-vf'
    assert vgpu_view(dict(facts_of(SHOWS_MDEV), gpuvirt_pool='vm-vgpu'))['pool'] == 'vm-vgpu'
    # disagreeing: refused, naming both the pool and the interface the host shows (with its evidence)
    with pytest.raises(fleet.FleetError, match=r'gpu-v: gpuvirt_pool vm-vgpu-vf is the pool of the vendor-vfio vGPU '
                                               r'interface, but the host shows mdev: /sys/class/mdev_bus lists '
                                               r'0000:41:00.0 .* \(the pool of that interface is vm-vgpu\)'):
        vgpu_view(dict(facts_of(SHOWS_MDEV), gpuvirt_pool='vm-vgpu-vf'))
    with pytest.raises(fleet.FleetError, match=r'gpuvirt_pool vm-vgpu is the pool of the mdev vGPU interface, but '
                                               r'the host shows vendor-vfio: .*pool of that interface is vm-vgpu-vf'):
        vgpu_view(dict(facts_of(SHOWS_VFIO), gpuvirt_pool='vm-vgpu'))
    # a row of another group stays refused, naming the group's pools
    with pytest.raises(fleet.FleetError, match=r'gpuvirt_pool vm-vgpu-vf disagrees with its group '
                                               r'\(pool vm-passthrough\)'):
        vgpu_view({'gpuvirt_pool': 'vm-vgpu-vf'}, {'gpu_vm_passthrough': ['gpu-v']})
    with pytest.raises(fleet.FleetError, match=r'gpuvirt_pool vm-passthrough disagrees with its group '
                                               r'\(pool vm-vgpu or vm-vgpu-vf\)'):
        vgpu_view({'gpuvirt_pool': 'vm-passthrough'})


def test_rows_share_a_group_only_when_each_names_a_distinct_interface():
    ok = fleet.POOL_TABLE
    vgpu = fleet.BY_NAME['vm-vgpu']
    with pytest.raises(fleet.TableError, match=r"pool vm-vgpu-2: group 'gpu_vm_vgpu' is also the group of pool "
                                               r"vm-vgpu; .* distinct interface .* got None and 'mdev'"):
        fleet.derived(ok + (vgpu.replace(name='vm-vgpu-2', interface=None),))
    with pytest.raises(fleet.TableError, match=r"pool vm-vgpu-2: group 'gpu_vm_vgpu' is also the group of pool "
                                               r"vm-vgpu; .* got 'mdev' and 'mdev'"):
        fleet.derived(ok + (vgpu.replace(name='vm-vgpu-2'),))
    with pytest.raises(fleet.TableError, match=r"pool x: interface 'vfio' is not one of mdev, vendor-vfio, None"):
        fleet.derived(ok + (vgpu.replace(name='x', group='gpu_x', interface='vfio'),))
    with pytest.raises(fleet.TableError, match=r"pool x: interface 'mdev' is a vGPU interface; a row that is not a "
                                               r"vGPU pool"):
        fleet.derived(ok + (fleet.BY_NAME['vm-passthrough'].replace(name='x', group='gpu_x', interface='mdev'),))
    with pytest.raises(fleet.TableError, match=r"pool x: kubevirt_min 'v1.9' is not a KubeVirt version"):
        fleet.derived(ok + (vgpu.replace(name='x', group='gpu_x', kubevirt_min='v1.9'),))
    # rows of one group agree on what host preparation reads from the group's default row
    table = tuple(r for r in ok if r.name != 'vm-vgpu-vf') + (
        fleet.BY_NAME['vm-vgpu-vf'].replace(host_vfio=True),)
    with pytest.raises(fleet.TableError, match=r"pool vm-vgpu-vf: host_vfio True differs from pool vm-vgpu of the "
                                               r"same group"):
        fleet.derived(table)
    # the table as it stands derives, its group listed once
    names = fleet.derived(ok)
    assert names['GPU_GROUPS'] == fleet.GPU_GROUPS and names['GROUP_ROWS']['gpu_vm_vgpu'][0] is vgpu


# H2: one host's facts of the wrong type fail that host, named, with the JSON path; never a Python crash that
# stops the fleet view for every host.
_A10 = {'bdf': '0000:3b:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
        'is_vf': False}
_GROUPS = {'gpu_vm_passthrough': ['pt1'], 'gpu_vm_vgpu': ['evil'], 'gpu_container': ['c1']}


def _fleet_with(evil):
    hostvars = {'pt1': {'gpuvirt_pci_devices': {'gpus': [_A10]}}, 'c1': {'gpuvirt_pci_devices': {'gpus': [_A10]}}}
    hostvars['evil'] = dict(evil, gpuvirt_vgpu_config='A10-4Q')
    return hostvars


@pytest.mark.parametrize('evil, path', [
    ({'gpuvirt_mdev_types': {'host_interface': {'interface': 'none', 'evidence': [1]}}}, '$.host_interface.evidence[0]'),
    ({'gpuvirt_mdev_types': {'host_interface': {'interface': 'none', 'evidence': 5}}}, '$.host_interface.evidence'),
    ({'gpuvirt_mdev_types': {'parents': [{'interface': ['x']}]}}, '$.parents[0].interface'),
    ({'gpuvirt_pci_devices': {'gpus': [dict(_A10, device_name=7)]},
      'gpuvirt_mdev_types': {'host_interface': {'interface': 'none', 'evidence': [], 'driver_version': '580.1'}}},
     '$.gpus[0].device_name'),
    ({'gpuvirt_pci_devices': {'gpus': [dict(_A10, is_vf=True, physfn=['a'])]}}, '$.gpus[0].physfn'),
    ({'gpuvirt_gpu_holders': {'holders': [{'pid': True}]}}, '$.holders[0].pid'),
    ({'gpuvirt_mdev_types': {'host_interface': {'interface': {'a': 1}, 'evidence': []}}},
     '$.host_interface.interface'),
])
def test_facts_of_the_wrong_type_fail_their_host_naming_the_fact_and_path(evil, path):
    with pytest.raises(fleet.FleetError) as err:
        fleet.gpu_hosts(_fleet_with(evil), _GROUPS)
    assert str(err.value).startswith('evil: its fact gpuvirt_') and ' at %s;' % path in str(err.value)


def _json():
    from hypothesis import strategies as st
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=12)


_INNER_KEYS = ['bdf', 'device_name', 'vendor_id', 'device_id', 'is_vf', 'physfn', 'sriov', 'parent', 'types',
               'evidence', 'interface']


def _facts():
    """Arbitrary JSON, and objects with the facts' own keys holding arbitrary JSON (so the walk gets past the top)."""
    from hypothesis import strategies as st
    any_json = _json()

    def keyed(keys):
        return st.dictionaries(st.sampled_from(keys), any_json | st.lists(
            st.dictionaries(st.sampled_from(_INNER_KEYS), any_json, max_size=4), max_size=2), max_size=4)
    pci = keyed(['gpus', 'devices', 'nvswitches', 'gpus_by_driver', 'iommu'])
    iface = st.fixed_dictionaries({'interface': any_json | st.sampled_from(['none', 'mdev', 'vendor-vfio']),
                                   'evidence': any_json, 'kernel_release': any_json, 'driver_version': any_json})
    mdev = keyed(['parents', 'interfaces', 'state', 'available_types', 'message']) | st.fixed_dictionaries(
        {'host_interface': iface})
    holders = keyed(['held', 'holders', 'message'])
    return st.fixed_dictionaries({}, optional={
        'gpuvirt_pci_devices': any_json | pci, 'gpuvirt_mdev_types': any_json | mdev,
        'gpuvirt_gpu_holders': any_json | holders, 'gpuvirt_pool': st.sampled_from(['vm-vgpu', 'vm-vgpu-vf'])})


def test_no_shape_of_a_host_s_facts_crashes_the_fleet_view():
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_facts())
    def run(evil):
        try:
            view = fleet.gpu_hosts(_fleet_with(evil), _GROUPS)
        except fleet.FleetError as exc:
            assert 'evil' in str(exc)
            return
        entry = [v for v in view if v['host'] == 'evil'][0]
        assert all(' ' <= c <= '~' for c in entry['interface_reason'])
        try:
            wanted_devices.wanted_devices([v for v in view if v['traits']['permitted']])
        except wanted_devices.WantedDevicesError:
            pass
    run()


def test_the_interface_reason_is_printable_and_capped():
    evidence = ['nvidia/creatable_vgpu_types on 0000:41:00.4\n\x1b[31mFAKE: all good\x07', 'x' * 3000]
    evil = {'gpuvirt_mdev_types': {'host_interface': {'interface': 'vendor-vfio', 'evidence': evidence}},
            'gpuvirt_pci_devices': {'gpus': [_A10]}}
    entry = [v for v in fleet.gpu_hosts(_fleet_with(evil), _GROUPS) if v['host'] == 'evil'][0]
    reason = entry['interface_reason']
    assert entry['interface'] == 'vendor-vfio' and 'FAKE: all good' in reason
    assert all(' ' <= c <= '~' for c in reason) and len(reason) <= fleet.MAX_REASON
    # a predicted interface: the kernel release and driver version come from the host too
    facts = {'interface': 'none', 'evidence': ['no\rvGPU'], 'kernel_release': '6.8.0\n', 'driver_version': '580.82.02'}
    assert all(' ' <= c <= '~' for c in fleet.host_vgpu_interface({'host_interface': facts})[1])


def test_a_row_switches_off_only_an_operand_its_workload_deploys():
    # the GPU Operator labels a node's operands per workload (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go
    # gpuStateLabels): a container node never runs the vGPU Manager, so "off" there would switch nothing off
    from ansible_collections.gpuvirt.provision.plugins.module_utils.model import operands
    container = fleet.BY_NAME['container']
    with pytest.raises(fleet.TableError, match=r"pool x: operands_off \('dcgm', 'vgpu-manager'\): the GPU Operator "
                                               r"deploys no vgpu-manager on a node of workload 'container', so there "
                                               r"is nothing to switch off \(it deploys driver, .*operator-validator, mig-manager "
                                               r"there"):
        fleet.derived(fleet.POOL_TABLE + (container.replace(name='x', group='gpu_x',
                                                            operands_off=('dcgm', 'vgpu-manager')),))
    # its valid neighbour: an operand of the workload is accepted
    fleet.derived(fleet.POOL_TABLE + (container.replace(name='x', group='gpu_x', operands_off=('dcgm',)),))
    assert operands.off_problem('vm-vgpu', ('sandbox-validator',)) is None
    assert 'deploys nothing there' in operands.off_problem('no-such-workload', ('dcgm',))
    # every row of the table names only its workload's operands, each with its source for the contract page
    for row in fleet.POOL_TABLE:
        assert set(row.operands_off) <= set(operands.WORKLOAD_OPERANDS[row.workload]), row.name
        assert set(row.operands_off) <= set(operands.OFF_SOURCES), row.name


def test_a_container_row_may_switch_off_the_mig_manager():
    # addGPUStateLabels labels nvidia.com/gpu.deploy.mig-manager "true" on a MIG-capable container node
    # (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go), so a container row may switch it off
    container = fleet.BY_NAME['container']
    fleet.derived(fleet.POOL_TABLE + (container.replace(name='x', group='gpu_x', operands_off=('mig-manager',)),))
    with pytest.raises(fleet.TableError, match=r"deploys no mig-manager on a node of workload 'vm-vgpu'"):
        fleet.derived(fleet.POOL_TABLE + (fleet.BY_NAME['vm-vgpu'].replace(
            name='x', group='gpu_x', operands_off=('mig-manager',)),))
