# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drive the cluster-side II modules' main(): arguments in, result or failure message out."""
from __future__ import annotations

import json

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.modules import (
    dra_manifests, dra_preflight, hco_permitted_devices, kubevirt_devices_plan, kubevirt_permitted_devices,
    machineconfig_manifests, mcp_status, vgpu_vf_machineconfig)

from .harness import run_module, settings_args


NODES = [{'metadata': {'name': 'gpu-1'}, 'status': {'allocatable': {'nvidia.com/GA102GL_A10': '1'}}}]


def test_plan_fails_naming_an_unadvertised_name(monkeypatch):
    res = run_module(monkeypatch, kubevirt_devices_plan, {
        'pci_devices': [{'selector': '10DE:2236', 'resource_name': 'nvidia.com/A10', 'nodes': ['gpu-1']}],
        'nodes': NODES})
    assert res['failed'] and 'nvidia.com/A10 ' in res['msg']


def test_plan_without_nodes_passes_names_through(monkeypatch):
    res = run_module(monkeypatch, kubevirt_devices_plan, {
        'mediated_devices': [{'selector': 'NVIDIA A10-12Q', 'resource_name': 'nvidia.com/NVIDIA_A10-12Q'}]})
    assert not res['failed'] and not res['changed']
    assert res['mediated_devices'] == [{'selector': 'NVIDIA A10-12Q', 'resource_name': 'nvidia.com/NVIDIA_A10-12Q'}]
    assert res['advertised'] is None


def run_hco(monkeypatch, args):
    """hco_permitted_devices with ``args`` given flat: the settings and the reads split as the module takes them."""
    return run_module(monkeypatch, hco_permitted_devices, settings_args(args, hco_permitted_devices.READS))


def run_kubevirt(monkeypatch, args):
    """kubevirt_permitted_devices with ``args`` given flat, split as run_hco splits them."""
    return run_module(monkeypatch, kubevirt_permitted_devices, settings_args(args, kubevirt_permitted_devices.READS))


def test_hco_conflict_fails_unless_adopted(monkeypatch):
    current = {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
               'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'},
               'spec': {'permittedHostDevices': {'pciHostDevices': [
                   {'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/A10', 'externalResourceProvider': True}]}}}
    args = {'current': current, 'pci_devices': [{'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10'}]}
    res = run_hco(monkeypatch, dict(args))
    assert res['failed'] and 'nvidia.com/A10' in res['msg'] and 'adopt_conflicting' in res['msg']
    res = run_hco(monkeypatch, dict(args, adopt_conflicting=True))
    assert not res['failed'] and res['would_change'] and res['warnings']
    assert res['object']['spec']['permittedHostDevices']['pciHostDevices'][0]['resourceName'] == 'nvidia.com/GA102GL_A10'
    # an entry of another provider (externalResourceProvider false when absent) is never taken over, adopted or not
    del current['spec']['permittedHostDevices']['pciHostDevices'][0]['externalResourceProvider']
    res = run_hco(monkeypatch, dict(args, adopt_conflicting=True))
    assert res['failed'] and 'pciDeviceSelector 10DE:2236 as nvidia.com/A10' in res['msg'], res['msg']


def test_kubevirt_module_refuses_under_hco(monkeypatch):
    res = run_kubevirt(monkeypatch, {'hco_present': True, 'pci_devices': []})
    assert res['failed'] and 'HyperConverged' in res['msg']


def run_mc(monkeypatch, args):
    """machineconfig_manifests with ``args`` given flat, split into the settings and the module's own options (the
    pool of the loop and the reads); settings.pool, the main pool, stays worker unless given."""
    return run_module(monkeypatch, machineconfig_manifests, settings_args(args, machineconfig_manifests.READS))


def test_machineconfig_module_pool_checks(monkeypatch):
    res = run_mc(monkeypatch, {'pool': 'gpu', 'cpu_vendor': 'intel', 'existing_pools': ['worker']})
    assert res['failed'] and "'gpu' does not exist" in res['msg']
    res = run_mc(monkeypatch,
                 {'pool': 'gpu', 'cpu_vendor': 'intel', 'create_pool': True, 'existing_pools': ['worker']})
    assert [o['kind'] for o in res['objects']] == ['MachineConfigPool', 'MachineConfig']
    # an existing pool is not re-created in apply mode
    res = run_mc(monkeypatch,
                 {'pool': 'gpu', 'cpu_vendor': 'amd', 'create_pool': True, 'existing_pools': ['gpu']})
    assert [o['kind'] for o in res['objects']] == ['MachineConfig'] and res['kernel_args'] == ['amd_iommu=on', 'iommu=pt']
    # a render always holds it: left out, its file would be pruned and the GitOps tool would delete the live pool
    res = run_mc(monkeypatch,
                 {'pool': 'gpu', 'cpu_vendor': 'intel', 'create_pool': True, 'existing_pools': ['worker', 'gpu'],
                  'render': True})
    assert [o['kind'] for o in res['objects']] == ['MachineConfigPool', 'MachineConfig']
    # rendered: the MachineConfig's name carries its content hash, and the pool names it for the health checks
    (pool, config) = res['objects']
    assert res['machineconfig_name'] == config['metadata']['name'] == '100-gpu-gpuvirt-iommu-' + mc.content_hash(config)
    assert pool['metadata']['annotations'] == {mc.EXPECTED_CONFIG_ANNOTATION: res['machineconfig_name']}
    # apply mode keeps the fixed name (nothing would prune an old one) and writes no annotation
    res = run_mc(monkeypatch,
                 {'pool': 'gpu', 'cpu_vendor': 'intel', 'create_pool': True, 'existing_pools': ['worker']})
    assert res['machineconfig_name'] == '100-gpu-gpuvirt-iommu' and 'annotations' not in res['objects'][0]['metadata']


def test_machineconfig_module_gives_a_custom_pool_the_worker_machineconfig_it_inherits(monkeypatch):
    # machineconfig_pool worker, a host in the existing custom pool gpu-vf: worker's IOMMU MachineConfig reaches
    # gpu-vf (a custom pool inherits from worker: openshift/machine-config-operator docs/custom-pools.md), so gpu-vf
    # gets that same object, not a second MachineConfig with the same kernel arguments merged into its config
    def mcp(name, roles):
        return {'metadata': {'name': name}, 'spec': {
            'machineConfigSelector': {'matchExpressions': [{'key': mc.ROLE_LABEL, 'operator': 'In', 'values': roles}]},
            'nodeSelector': {'matchLabels': {'node-role.kubernetes.io/' + name: ''}}}}
    worker = run_mc(monkeypatch, {'pool': 'worker', 'cpu_vendor': 'intel', 'render': True})
    args = {'pool': 'gpu-vf', 'cpu_vendor': 'intel', 'render': True, 'inherit_from': 'worker'}
    res = run_mc(monkeypatch, args)
    assert res['objects'] == worker['objects'] and res['machineconfig_name'] == worker['machineconfig_name']
    assert res['objects'][0]['metadata']['labels'] == {mc.ROLE_LABEL: 'worker'}
    # the name the run gives worker's MachineConfig (machineconfig_name), apply mode too
    named = run_mc(monkeypatch, dict(args, render=False, name='100-gpu-iommu'))
    assert named['machineconfig_name'] == '100-gpu-iommu'
    # a custom pool read from the cluster that does not take the worker configs gets its own
    res = run_mc(monkeypatch, dict(args, existing_pools=['worker', 'gpu-vf'],
                                   pools=[mcp('worker', ['worker']), mcp('gpu-vf', ['gpu-vf'])]))
    assert res['objects'][0]['metadata']['labels'] == {mc.ROLE_LABEL: 'gpu-vf'}
    res = run_mc(monkeypatch, dict(args, existing_pools=['worker', 'gpu-vf'],
                                   pools=[mcp('worker', ['worker']), mcp('gpu-vf', ['worker', 'gpu-vf'])]))
    assert res['objects'] == worker['objects']
    # without inherit_from (no worker MachineConfig in the run) the pool has its own
    res = run_mc(monkeypatch, {'pool': 'gpu-vf', 'cpu_vendor': 'intel', 'render': True})
    assert res['objects'][0]['metadata']['labels'] == {mc.ROLE_LABEL: 'gpu-vf'}


def test_machineconfig_module_refuses_a_node_another_custom_pool_selects(monkeypatch):
    # the Machine Config Operator refuses a node of two custom pools (openshift/machine-config-operator
    # pkg/helpers/helpers.go GetPoolsForNode @7ff337a4f: "belongs to 2 custom roles")
    def mcp(name):
        return {'metadata': {'name': name}, 'spec': {'nodeSelector': {'matchLabels': {'node-role.kubernetes.io/' + name: ''}}}}
    node = {'metadata': {'name': 'gpu-1', 'labels': {'node-role.kubernetes.io/worker': '', 'node-role.kubernetes.io/infra': ''}}}
    args = {'pool': 'gpu', 'cpu_vendor': 'intel', 'create_pool': True, 'existing_pools': ['worker', 'infra'],
            'expected_nodes': ['gpu-1'], 'nodes': [node]}
    res = run_mc(monkeypatch, dict(args, pools=[mcp('worker'), mcp('infra')]))
    assert res['failed'] and 'Node gpu-1 is selected by more than one custom MachineConfigPool (gpu, infra)' in res['msg']
    # without the pools (render mode) only the selector is known
    res = run_mc(monkeypatch, args)
    assert not res.get('failed') and [n['name'] for n in res['label_nodes']] == ['gpu-1']


def test_mcp_status_fails_with_reason(monkeypatch):
    pool = {'metadata': {'name': 'gpu'}, 'status': {'machineCount': 2, 'degradedMachineCount': 1, 'conditions': [
        {'type': 'Degraded', 'status': 'True', 'message': 'Failed to render configuration'}]}}
    res = run_module(monkeypatch, mcp_status, {'pool': pool})
    assert res['failed'] and 'Failed to render configuration' in res['msg']
    res = run_module(monkeypatch, mcp_status, {'pool': pool, 'fail_on_degraded': False})
    assert not res['failed'] and res['degraded'] and not res['done']


def run_dra(monkeypatch, args):
    """dra_manifests with ``args`` given flat: the settings and the reads split as the module takes them."""
    return run_module(monkeypatch, dra_manifests, settings_args(args, dra_manifests.READS))


def test_dra_manifests_gate_and_conflict(monkeypatch):
    res = run_dra(monkeypatch, {'driver_mode': 'gke', 'kubevirt_version': '1.8.1', 'platform': 'hco',
                                'claim_templates': [{'name': 'g', 'namespace': 'vms'}]})
    assert res['helm_values']['nvidiaDriverRoot'] == '/home/kubernetes/bin/nvidia'
    ops = json.loads(res['gate_object']['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch'])
    assert ops == [{'op': 'add', 'path': '/spec/configuration/developerConfiguration/featureGates/-',
                    'value': 'GPUsWithDRA'}]
    assert res['gate_object']['apiVersion'] == 'hco.kubevirt.io/v1beta1'
    res = run_dra(monkeypatch, {'driver_mode': 'host', 'dra_nodes': ['n1'],
                                'nodes': [{'metadata': {'name': 'n1'},
                                           'status': {'allocatable': {'nvidia.com/gpu': '8'}}}]})
    assert res['failed'] and 'DRA node n1' in res['msg']


def test_dra_manifests_driver_root_follows_the_operator_driver(monkeypatch):
    # NVIDIA DRA guide, "Install the DRA Driver": nvidiaDriverRoot "/" for a host-installed driver,
    # "/run/nvidia/driver" for a GPU Operator-managed driver
    res = run_dra(monkeypatch, {'operator_driver': True, 'dra_nodes': ['n1']})
    assert res['helm_values']['nvidiaDriverRoot'] == '/run/nvidia/driver' and res['driver_mode'] == 'operator'
    res = run_dra(monkeypatch, {'operator_driver': False, 'dra_nodes': ['n1']})
    assert res['helm_values']['nvidiaDriverRoot'] == '/' and res['driver_mode'] == 'host'
    res = run_dra(monkeypatch, {'dra_nodes': ['n1'], 'pci_facts': {
        'n1': {'gpus': [{'bdf': '0000:3b:00.0', 'driver': 'nvidia'}]}}})
    assert res['helm_values']['nvidiaDriverRoot'] == '/' and 'facts' in res['driver_mode_reason']
    res = run_dra(monkeypatch, {'driver_mode': 'host', 'operator_driver': True, 'dra_nodes': ['n1']})
    assert res['failed'] and 'dra_driver_nvidia_driver is host' in res['msg'] and 'driver.enabled true' in res['msg']


def test_dra_preflight(monkeypatch):
    holders = [{'pid': 7, 'executable': 'nv-hostengine', 'device': '/dev/nvidia0', 'unit': 'nvidia-dcgm.service'}]
    res = run_module(monkeypatch, dra_preflight, {'holders': holders})
    assert res['failed'] and 'PID 7' in res['msg']
    res = run_module(monkeypatch, dra_preflight, {'holders': holders, 'fail_on_blocking': False})
    assert not res['failed'] and res['blocking'][0]['category'] == 'dcgm'


@pytest.mark.parametrize('version,gate', [('v1.8.0', False), ('v1.9.0', False), ('v1.10.0', True), ('4.12.3', False),
                                          ('4.14.1', True)])
def test_hco_module_derives_the_gate_from_the_version(monkeypatch, version, gate):
    res = run_hco(monkeypatch, {'hco_version': version, 'pci_devices': []})
    assert ('featureGates' in res['object']['spec']) is gate
    assert ('kubevirt.kubevirt.io/jsonpatch' in res['object']['metadata']['annotations']) is not gate


def test_hco_module_prefers_the_crd_answer(monkeypatch):
    res = run_hco(monkeypatch, {'hco_version': '1.18.1', 'gate_supported': False})
    assert 'featureGates' not in res['object']['spec']


def test_vgpu_vf_machineconfig_builds_one_object_or_refuses_naming_the_hosts(monkeypatch):
    import os
    with open(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'vgpu_vf', 'files',
                           'gpuvirt_vgpu_vf_restore.py'), encoding='utf-8') as handle:
        script = handle.read()
    persist = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/sys',
               'sriov_manage': '/usr/lib/nvidia/sriov-manage', 'timeout': 300,
               'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}
    hosts = [{'host': 'a', 'node': 'a', 'persist': persist}, {'host': 'b', 'node': 'b', 'persist': persist}]
    res = run_module(monkeypatch, vgpu_vf_machineconfig, {'settings': {'pool': 'gpu-vf'}, 'hosts': hosts,
                                                          'script': script})
    assert not res['failed'] and not res['changed'], res
    assert res['machineconfig_name'] == '100-gpu-vf-gpuvirt-vgpu-vf' and len(res['objects']) == 1
    assert res['summary'] == '0000:41:00.0: 0000:41:00.4 NVIDIA L40S-24Q'
    other = dict(persist, gpus=[{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.5': 1155}}])
    res = run_module(monkeypatch, vgpu_vf_machineconfig, {
        'settings': {'pool': 'gpu-vf'}, 'script': script,
        'hosts': [hosts[0], {'host': 'b', 'node': 'b', 'persist': other}]})
    assert res['failed'] and 'compute 2 different ones: a: 0000:41:00.0: 0000:41:00.4 NVIDIA L40S-24Q | b:' in res['msg']
