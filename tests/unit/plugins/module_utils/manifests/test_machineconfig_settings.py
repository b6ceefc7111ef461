# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The machineconfig settings record (manifests/machineconfig_settings.py): one list of fields is the record, the
schema of machineconfig_manifests and (held equal here) its documentation; a bad value is refused when a record is
made, naming its variable; the module reads the fields by name, and the record says which of them a pool of the
role's loop takes."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig_settings as mcs
from ansible_collections.gpuvirt.provision.plugins.modules import machineconfig_manifests

from ...modules.harness import run_module

SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.MACHINECONFIG)['options']['settings']['suboptions']


def test_a_record_is_read_only_and_a_none_or_an_empty_name_takes_the_default():
    record = mcs.build({'cpu_vendor': 'amd', 'name': '', 'node_selector': None, 'extra_kernel_args': None})
    assert (record.cpu_vendor, record.iommu_passthrough, record.blacklist_nouveau) == ('amd', True, True)
    assert (record.pool, record.name, record.create_pool, record.render) == ('worker', None, False, False)
    assert record.extra_kernel_args == [] and record.node_selector == {}
    with pytest.raises(AttributeError):
        record.create_pool = True
    assert mcs.build(record) is record


def test_name_and_selector_are_the_main_pool_s_and_create_pool_spares_a_built_in_pool():
    record = mcs.build({'cpu_vendor': 'intel', 'pool': 'gpu', 'name': '100-gpu-x', 'create_pool': True,
                        'node_selector': {'gpu': 'yes'}})
    assert (record.machineconfig_name('gpu'), record.machineconfig_name('gpu-vf')) == ('100-gpu-x', None)
    assert (record.node_selector_of('gpu'), record.node_selector_of('gpu-vf')) == ({'gpu': 'yes'}, None)
    assert [record.creates_pool(p) for p in ('gpu', 'gpu-vf', 'worker', 'master')] == [True, True, False, False]
    # the main pool is created even when built in: the builder refuses it there, naming the pool
    assert mcs.build({'cpu_vendor': 'intel', 'create_pool': True}).creates_pool('worker') is True
    assert not any(mcs.build({'cpu_vendor': 'intel', 'pool': 'gpu'}).creates_pool(p) for p in ('gpu', 'gpu-vf'))


@pytest.mark.parametrize('params, needle', [
    ({}, 'machineconfig_cpu_vendor is not set: give intel or amd'),
    ({'cpu_vendor': 'arm'}, "machineconfig_cpu_vendor is 'arm', not one of intel, amd"),
    ({'cpu_vendor': 'intel', 'iommu_passthrough': 'yes'}, "machineconfig_iommu_passthrough is 'yes', not true or"),
    ({'cpu_vendor': 'intel', 'blacklist_nouveau': 1}, 'machineconfig_blacklist_nouveau is 1, not true or false'),
    ({'cpu_vendor': 'intel', 'create_pool': 'no'}, "machineconfig_create_pool is 'no', not true or false"),
    ({'cpu_vendor': 'intel', 'extra_kernel_args': 'iommu=pt'}, "machineconfig_extra_kernel_args is 'iommu=pt', not a"),
    ({'cpu_vendor': 'intel', 'extra_kernel_args': [['a']]}, "machineconfig_extra_kernel_args holds ['a'], not a"),
    ({'cpu_vendor': 'intel', 'node_selector': ['a']}, "machineconfig_node_selector is ['a'], not a mapping"),
    ({'cpu_vendor': 'intel', 'pool': ['gpu']}, "machineconfig_pool is ['gpu'], not a string"),
    ({'cpu_vendor': 'intel', 'name': {'a': 1}}, "machineconfig_name is {'a': 1}, not a string"),
    ({'cpu_vendor': 'intel', 'render': 'true'}, "the machineconfig role's render (gpuvirt_cluster.mode) is 'true'"),
    ({'cpu_vendor': 'intel', 'inherit_name': 'x'}, 'the machineconfig settings have no inherit_name; they are '),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(params, needle):
    with pytest.raises(mc.ManifestError) as exc:
        mcs.build(params)
    assert needle in str(exc.value)


@pytest.mark.parametrize('settings, needle', [
    ({}, 'machineconfig_cpu_vendor is not set'),
    # AnsibleModule's own check of the suboptions, naming the key
    ({'cpu_vendor': 'arm'}, 'cpu_vendor'),
    ({'cpu_vendor': 'intel', 'inherit_name': 'x'}, 'inherit_name'),
])
def test_the_module_refuses_a_bad_setting_before_anything_is_built(monkeypatch, settings, needle):
    out = run_module(monkeypatch, machineconfig_manifests, {'settings': settings, 'pool': 'worker'})
    assert out['failed'] and needle in out['msg'] and 'objects' not in out, out


def test_the_module_reads_its_fields_by_name_for_the_loop_s_pool(monkeypatch):
    settings = {'cpu_vendor': 'amd', 'iommu_passthrough': False, 'extra_kernel_args': ['pci=realloc'],
                'blacklist_nouveau': False, 'pool': 'gpu', 'name': '100-gpu-x', 'create_pool': True,
                'node_selector': {'gpu': 'yes'}, 'render': False}
    main = run_module(monkeypatch, machineconfig_manifests, {'settings': settings, 'pool': 'gpu'})
    (pool, config) = main['objects']
    assert main['kernel_args'] == config['spec']['kernelArguments'] == ['amd_iommu=on', 'pci=realloc']
    assert 'storage' not in config['spec']['config'] and config['metadata']['name'] == '100-gpu-x'
    assert pool['spec']['nodeSelector'] == {'matchLabels': {'gpu': 'yes'}} and main['selector'] == {'gpu': 'yes'}
    # another custom pool of the fleet: created too, with the default name and selector
    other = run_module(monkeypatch, machineconfig_manifests, {'settings': settings, 'pool': 'gpu-vf'})
    assert [o['metadata']['name'] for o in other['objects']] == ['gpu-vf', '100-gpu-vf-gpuvirt-iommu']
    assert other['selector'] == {'node-role.kubernetes.io/gpu-vf': ''}
    # a built-in pool of the fleet is not created, and must exist
    worker = run_module(monkeypatch, machineconfig_manifests,
                        {'settings': settings, 'pool': 'worker', 'existing_pools': ['master', 'gpu']})
    assert worker['failed'] and "MachineConfigPool 'worker' does not exist" in worker['msg']
    rendered = run_module(monkeypatch, machineconfig_manifests, {'settings': dict(settings, render=True), 'pool': 'gpu'})
    assert rendered['machineconfig_name'] == '100-gpu-x-' + mc.content_hash(rendered['objects'][1])
