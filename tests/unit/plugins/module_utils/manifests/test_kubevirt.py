# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Upstream KubeVirt CR merge, refusal under HCO, and resource-name reconciliation."""
from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

A10 = {'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10'}
T4_1Q = {'selector': 'GRID T4-1Q', 'resource_name': 'nvidia.com/GRID_T4-1Q'}


def cluster_kubevirt(gates, pci=None):
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
            'spec': {'configuration': {'developerConfiguration': {'featureGates': gates},
                                       'permittedHostDevices': {'pciHostDevices': pci or []}}}}


def test_builds_a_valid_cr_keeping_foreign_gates_and_devices():
    foreign = {'pciVendorSelector': '8086:0D5C', 'resourceName': 'intel.com/QAT'}
    cur = cluster_kubevirt(['Snapshot', 'GPU'], [foreign])
    obj, changed, unused1 = kubevirt.build_kubevirt(cur, [A10], [T4_1Q], version='v1.7.4')
    schema.validate(obj)
    conf = obj['spec']['configuration']
    assert conf['developerConfiguration']['featureGates'] == ['Snapshot', 'GPU', 'DisableMDEVConfiguration']
    assert conf['permittedHostDevices']['pciHostDevices'] == [
        foreign, {'pciVendorSelector': '10DE:2236', 'resourceName': 'nvidia.com/GA102GL_A10',
                  'externalResourceProvider': True}]
    assert conf['permittedHostDevices']['mediatedDevices'][0]['mdevNameSelector'] == 'GRID T4-1Q'
    assert changed


def test_gates_we_added_are_removed_when_no_longer_wanted_but_foreign_gpu_stays():
    cur = cluster_kubevirt(['GPU'])
    obj, unused1, unused2 = kubevirt.build_kubevirt(cur, [A10], [], gates=['GPU', 'DisableMDEVConfiguration', 'GPUsWithDRA'],
                                                    version='v1.7.4')
    cur['metadata']['annotations'] = obj['metadata']['annotations']
    cur['spec'] = obj['spec']
    obj2, changed, unused1 = kubevirt.build_kubevirt(cur, [A10], [], gates=['GPU', 'DisableMDEVConfiguration', 'GPUsWithDRA'],
                                                     version='v1.7.4')
    assert not changed
    obj3, unused1, unused2 = kubevirt.build_kubevirt(cur, [A10], [], gates=[], disable_mdev_configuration=False,
                                                     version='v1.7.4')
    assert obj3['spec']['configuration']['developerConfiguration']['featureGates'] == ['GPU']


# kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/types.go, MediatedDevicesConfiguration.Enabled:
# "Enable the creation and removal of mediated devices by virt-handler / Replaces the deprecated
# DisableMDEVConfiguration feature gate"; the field is there from v1.8.0-beta.0 (absent in v1.8.0-alpha.0 and
# v1.7.x). pkg/virt-config/featuregate/inactive.go (v1.8.0, v1.9.0) registers the gate as Deprecated "since v1.8.0";
# pkg/virt-config/virt-config.go MediatedDevicesHandlingDisabled reads the field first, then the gate.
# kubevirt/hyperconverged-cluster-operator v1.18.1 controllers/handlers/kubevirt.go toKvMediatedDevicesConfiguration
# writes the same: Enabled = false when HyperConverged's disableMDevConfiguration is set.
def test_kubevirt_1_9_gets_the_enabled_field_not_the_deprecated_gate():
    cur = cluster_kubevirt(['Snapshot', 'GPU'])
    cur['status'] = {'observedKubeVirtVersion': 'v1.9.0'}
    obj, changed, report = kubevirt.build_kubevirt(cur, [A10], [T4_1Q])
    schema.validate(obj)
    conf = obj['spec']['configuration']
    assert conf['mediatedDevicesConfiguration'] == {'enabled': False}
    assert conf['developerConfiguration']['featureGates'] == ['Snapshot', 'GPU']
    assert report['mediatedDevicesConfiguration'] == {'enabled': False}
    assert changed


@pytest.mark.parametrize('version, field', [
    ('v1.7.4', False), ('v1.8.0-alpha.0', False), ('1.8.0-beta.0', False), ('v1.8.0', True), ('v1.8.4', True),
    ('v1.9.0', True), ('v1.10.0-rc.1', True), ('v2.0.0', True)])
def test_field_or_gate_follows_the_version(version, field):
    obj, unused1, unused2 = kubevirt.build_kubevirt(None, [A10], [], version=version)
    conf = obj['spec']['configuration']
    assert ('mediatedDevicesConfiguration' in conf) is field
    assert ('DisableMDEVConfiguration' in conf.get('developerConfiguration', {}).get('featureGates', [])) is not field


def test_upgrade_to_1_9_replaces_the_gate_an_earlier_run_added():
    cur = cluster_kubevirt(['Snapshot'])
    old, unused1, unused2 = kubevirt.build_kubevirt(cur, [A10], [], version='v1.7.4')
    cur['metadata']['annotations'] = old['metadata']['annotations']
    cur['spec'] = old['spec']
    cur['status'] = {'observedKubeVirtVersion': 'v1.9.0'}
    new, changed, unused1 = kubevirt.build_kubevirt(cur, [A10], [])
    assert changed
    # the GPU gate the earlier run added goes too: GA since v1.5.0 (see the GPU gate test below)
    assert new['spec']['configuration']['developerConfiguration']['featureGates'] == ['Snapshot']
    assert new['spec']['configuration']['mediatedDevicesConfiguration'] == {'enabled': False}
    # a second run on what the first applied changes nothing
    cur['metadata']['annotations'] = new['metadata']['annotations']
    cur['spec'] = new['spec']
    assert not kubevirt.build_kubevirt(cur, [A10], [])[1]
    # turning it off again gives the field back (the annotation no longer claims it: server-side apply drops it)
    off, changed, unused1 = kubevirt.build_kubevirt(cur, [A10], [], disable_mdev_configuration=False)
    assert changed and 'mediatedDevicesConfiguration' not in off['spec']['configuration']


@pytest.mark.parametrize('bad', ['1.9', 'v1.9.0\n', 'latest', 'v1.9.0; rm', '1.09.0'])
def test_malformed_given_version_is_refused_naming_the_variable(bad):
    with pytest.raises(kubevirt.ManifestError, match='kubevirt_devices_kubevirt_version'):
        kubevirt.build_kubevirt(None, [A10], [], version=bad)
    with pytest.raises(kubevirt.ManifestError, match='kubevirt_devices_kubevirt_version'):
        kubevirt.build_kubevirt(None, [A10], [], version=bad, disable_mdev_configuration=False)


def test_unknown_or_malformed_cluster_version_is_refused_naming_the_source():
    with pytest.raises(kubevirt.ManifestError, match='observedKubeVirtVersion.*kubevirt_devices_kubevirt_version'):
        kubevirt.build_kubevirt(cluster_kubevirt([]), [A10], [])
    cur = cluster_kubevirt([])
    cur['status'] = {'observedKubeVirtVersion': 'devel'}
    with pytest.raises(kubevirt.ManifestError, match="status.observedKubeVirtVersion: 'devel'"):
        kubevirt.build_kubevirt(cur, [A10], [])


def test_refused_under_hco():
    with pytest.raises(kubevirt.ManifestError, match='HyperConverged'):
        kubevirt.build_kubevirt(None, [A10], [], hco_present=True)


NODES = [
    {'metadata': {'name': 'gpu-1'}, 'status': {'allocatable': {'cpu': '64', 'nvidia.com/GA102GL_A10': '2'}}},
    {'metadata': {'name': 'gpu-2'}, 'status': {'allocatable': {'nvidia.com/NVIDIA_A10': '1', 'nvidia.com/gpu': '0'}}},
]


def test_advertised_from_nodes_ignores_zero_and_other_vendors():
    expected = {'gpu-1': ['nvidia.com/GA102GL_A10'], 'gpu-2': ['nvidia.com/NVIDIA_A10']}
    assert kubevirt.advertised_from_nodes(NODES) == expected


def test_reconcile_prefers_what_nodes_advertise_and_warns():
    wanted = [{'kind': 'pci', 'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10',
               'nodes': ['gpu-1'], 'source': 'facts'},
              {'kind': 'pci', 'selector': '10DE:26B9', 'resource_name': 'nvidia.com/AD102GL_L40S',
               'nodes': ['gpu-2'], 'source': 'facts'}]
    entries, warnings, errors = kubevirt.reconcile_resource_names(wanted, kubevirt.advertised_from_nodes(NODES))
    assert errors == []
    assert [e['resource_name'] for e in entries] == ['nvidia.com/GA102GL_A10', 'nvidia.com/NVIDIA_A10']
    assert len(warnings) == 1 and 'nvidia.com/AD102GL_L40S' in warnings[0] and 'nvidia.com/NVIDIA_A10' in warnings[0]


def test_reconcile_fails_for_an_input_name_no_node_advertises():
    wanted = [{'kind': 'mdev', 'selector': 'NVIDIA A10-24Q', 'resource_name': 'nvidia.com/NVIDIA_A10-24Q',
               'nodes': ['gpu-2'], 'source': 'input'}]
    unused1, unused2, errors = kubevirt.reconcile_resource_names(wanted, kubevirt.advertised_from_nodes(NODES))
    assert len(errors) == 1 and 'nvidia.com/NVIDIA_A10-24Q' in errors[0] and 'not advertised' in errors[0]


def test_reconcile_without_cluster_data_keeps_computed_names():
    wanted = [{'kind': 'pci', 'selector': '10DE:2236', 'resource_name': 'nvidia.com/X', 'nodes': [], 'source': 'facts'}]
    assert kubevirt.reconcile_resource_names(wanted, None) == (wanted, [], [])


# kubevirt/kubevirt pkg/virt-config/featuregate/inactive.go (v1.9.0): GPUGate is registered with State GA (GA from
# v1.5.0; before, active.go listed it as an alpha gate that had to be on for GPU host devices)
@pytest.mark.parametrize('version, gate', [('v1.4.2', True), ('v1.5.0-rc.0', True), ('v1.5.0', False),
                                           ('v1.7.4', False), ('v1.9.0', False)])
def test_the_gpu_gate_is_written_only_where_it_is_not_ga(version, gate):
    obj, unused1, unused2 = kubevirt.build_kubevirt(None, [A10], [], version=version, disable_mdev_configuration=False)
    conf = obj['spec']['configuration']
    # no gate to write: the atomic list is left out rather than written empty (a rendered [] would clear others' gates)
    assert conf.get('developerConfiguration', {}).get('featureGates', []) == (['GPU'] if gate else [])
    assert gate or 'developerConfiguration' not in conf


def test_a_render_with_no_version_and_no_live_cr_refuses_naming_both_ways():
    # nothing is assumed: KubeVirt v1.7 and older lack mediatedDevicesConfiguration (the test of the field above),
    # so an assumed v1.9.0 would leave mdev handling on there
    with pytest.raises(kubevirt.ManifestError) as err:
        kubevirt.build_kubevirt(None, [A10], [])
    text = str(err.value)
    assert 'kubevirt_devices_kubevirt_version is not set and there is no KubeVirt CR to read' in text
    assert 'Set kubevirt_devices_kubevirt_version to the KubeVirt release' in text
    assert 'gpuvirt_kubeconfig or gpuvirt_kube_context' in text and 'kubevirt_devices_current' in text
    with pytest.raises(kubevirt.ManifestError, match='no KubeVirt CR to read'):
        kubevirt.build_kubevirt(None, [A10], [], disable_mdev_configuration=False)
