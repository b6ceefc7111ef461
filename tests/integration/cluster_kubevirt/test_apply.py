# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of playbooks/kubevirt.yml against the in-memory API stand-in (fake_apiserver.py).

This exercises the real apply code path (kubernetes.core k8s_info reads, the merge, server-side apply through
k8s_objects, the MachineConfigPool wait) but NOT a real API server: see fake_apiserver.py for what it omits.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
import fake_apiserver  # noqa: E402
import schema  # noqa: E402

HCO_CRD = 'hyperconverged-cluster-operator-v1.18.1-hco.kubevirt.io_hyperconvergeds.yaml'
QAT = {'pciDeviceSelector': '8086:4940', 'resourceName': 'intel.com/QAT', 'externalResourceProvider': True}


def node(name, alloc):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name}, 'status': {'allocatable': alloc}}


def hco_cluster(nodes):
    with open(os.path.join(schema.reference_dir(), 'crds', HCO_CRD), encoding='utf-8') as handle:
        crd = yaml.safe_load(handle)
    hco = {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
           'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'},
           'spec': {'featureGates': {'disableMDevConfiguration': False, 'videoConfig': True},
                    'liveMigrationConfig': {'parallelMigrationsPerCluster': 5},
                    'permittedHostDevices': {'pciHostDevices': [QAT]}}}
    return [crd, hco] + nodes


def pool(name, sources, conditions, machines=3, degraded=0):
    return {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'MachineConfigPool',
            'metadata': {'name': name, 'generation': 1},
            'spec': {'machineConfigSelector': {'matchLabels': {'machineconfiguration.openshift.io/role': name}}},
            'status': {'observedGeneration': 1, 'machineCount': machines, 'updatedMachineCount': machines - degraded,
                       'readyMachineCount': machines - degraded, 'degradedMachineCount': degraded,
                       'configuration': {'source': [{'name': s} for s in sources]},
                       'conditions': [{'type': t, 'status': v, 'message': m} for t, v, m in conditions]}}


@pytest.fixture
def cluster(tmp_path):
    apis = []

    def start(objects):
        api = fake_apiserver.FakeAPI(objects)
        api.kubeconfig = fake_apiserver.kubeconfig(tmp_path / 'kubeconfig', api.start())
        apis.append(api)
        return api
    yield start
    for api in apis:
        api.stop()


def run(tmp_path, inventory, **extra):
    extra_vars = dict(extra, render_root=str(tmp_path / 'unused'), ansible_python_interpreter=sys.executable)
    cmd = ['ansible-playbook', '-i', os.path.join(HERE, 'inventories', inventory + '.yml'),
           os.path.join(ROOT, 'playbooks', 'kubevirt.yml'), '-e', json.dumps(extra_vars)]
    env = dict(os.environ, HOME=str(tmp_path))  # the client's discovery cache goes under HOME
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def recap(output):
    line = [ln for ln in output.splitlines() if ln.startswith('localhost')][-1]
    return dict(field.split('=') for field in line.split(':', 1)[1].split())


def devices_apply(api, **extra):
    return dict(kubevirt_machineconfig_enabled=False, kubevirt_devices_mode='apply', kubevirt_devices_platform='auto',
                kubevirt_devices_kubeconfig=api.kubeconfig, kubevirt_devices_current={}, **extra)


def test_hco_apply_merges_keeps_foreign_and_is_a_no_op_the_second_time(tmp_path, cluster):
    api = cluster(hco_cluster([node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                               node('gpu-2', {'nvidia.com/AD102GL_L40S': '1'})]))
    rc, log = run(tmp_path, 'passthrough-hco-new', **devices_apply(api))
    assert rc == 0, log
    (patch,) = api.writes
    assert patch['apiVersion'] == 'hco.kubevirt.io/v1beta1'
    schema.validate(patch)
    hco = api.get('hco.kubevirt.io/v1beta1', 'HyperConverged', 'kubevirt-hyperconverged', 'openshift-cnv')
    pci = hco['spec']['permittedHostDevices']['pciHostDevices']
    assert pci[0] == QAT
    assert {e['resourceName'] for e in pci[1:]} == {'nvidia.com/GA102GL_A10', 'nvidia.com/AD102GL_L40S'}
    assert hco['spec']['featureGates'] == {'disableMDevConfiguration': True, 'videoConfig': True}
    assert hco['spec']['liveMigrationConfig'] == {'parallelMigrationsPerCluster': 5}  # not ours, untouched
    version = hco['metadata']['resourceVersion']
    rc, log = run(tmp_path, 'passthrough-hco-new', **devices_apply(api))
    assert rc == 0, log
    assert recap(log)['changed'] == '0', log
    assert api.get('hco.kubevirt.io/v1beta1', 'HyperConverged', 'kubevirt-hyperconverged',
                   'openshift-cnv')['metadata']['resourceVersion'] == version


def test_hco_apply_fails_before_writing_when_no_node_advertises_a_name(tmp_path, cluster):
    api = cluster(hco_cluster([node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('gpu-2', {'cpu': '8'})]))
    # gpu-2 never advertises: the role waits (bounded: 2 s here, 600 s by default) for the device plugin, then refuses
    rc, log = run(tmp_path, 'passthrough-hco-new',
                  **devices_apply(api, kubevirt_devices_advertise_timeout=2, kubevirt_devices_advertise_delay=1))
    assert rc != 0 and 'nvidia.com/AD102GL_L40S' in log and 'not advertised' in log, log
    assert 'RETRYING: [localhost]: Read the nodes, waiting for the GPU nodes to advertise' in log, log
    assert api.writes == []


def test_kubevirt_cr_apply_without_hco(tmp_path, cluster):
    kv = {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
          'spec': {'configuration': {'developerConfiguration': {'featureGates': ['Snapshot']}}}}
    api = cluster([kv, node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})])
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(api, kubevirt_devices_nodes=[]))
    assert rc == 0, log
    got = api.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')['spec']['configuration']
    assert got['developerConfiguration']['featureGates'] == ['Snapshot', 'GPU', 'DisableMDEVConfiguration']
    assert got['permittedHostDevices']['mediatedDevices'][0]['resourceName'] == 'nvidia.com/NVIDIA_T4-1Q'


def mc_apply(api, **extra):
    return dict(kubevirt_devices_enabled=False, machineconfig_mode='apply', machineconfig_kubeconfig=api.kubeconfig,
                machineconfig_wait_delay=1, machineconfig_wait_timeout=3, **extra)


DONE = [('Updated', 'True', ''), ('Updating', 'False', ''), ('Degraded', 'False', '')]


def test_machineconfig_apply_waits_for_the_pool(tmp_path, cluster):
    api = cluster([pool('master', ['00-master'], DONE),
                   pool('worker', ['00-worker', '100-worker-gpuvirt-iommu'], DONE)])
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(api))
    assert rc == 0, log
    assert 'worker: 3/3 machines updated, 3 ready' in log
    mc = api.get('machineconfiguration.openshift.io/v1', 'MachineConfig', '100-worker-gpuvirt-iommu')
    assert mc['spec']['kernelArguments'] == ['intel_iommu=on', 'iommu=pt']


def test_machineconfig_apply_reports_a_degraded_pool(tmp_path, cluster):
    reason = 'Node w-2 is reporting: "failed to drain node"'
    api = cluster([pool('worker', ['00-worker', '100-worker-gpuvirt-iommu'],
                        [('Updated', 'False', ''), ('NodeDegraded', 'True', reason)], degraded=1)])
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(api, machineconfig_existing_pools=[]))
    assert rc != 0 and 'failed to drain node' in log, log


def test_machineconfig_apply_refuses_a_missing_pool_before_writing(tmp_path, cluster):
    api = cluster([pool('worker', ['00-worker'], DONE)])
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(api, machineconfig_pool='gpu'))
    assert rc != 0 and "'gpu' does not exist" in log, log
    assert api.writes == []


def test_dra_apply_refuses_a_node_running_the_classic_plugin_before_writing(tmp_path, cluster):
    labels = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.deploy.device-plugin': 'false'}
    kv = {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
          'spec': {}, 'status': {'observedKubeVirtVersion': 'v1.8.2'}}
    plugin = {'apiVersion': 'v1', 'kind': 'Pod', 'spec': {'nodeName': 'dra-1'},
              'metadata': {'name': 'nvidia-device-plugin-daemonset-q8z4d', 'namespace': 'gpu-operator',
                           'labels': {'app': 'nvidia-device-plugin-daemonset'}}}
    nodes = [dict(node(n, {'cpu': '64'}), metadata={'name': n, 'labels': labels}) for n in ('dra-1', 'dra-2')]
    api = cluster([kv, plugin] + nodes)
    rc, log = run(tmp_path, 'dra-kubevirt', dra_driver_mode='apply', dra_driver_kubeconfig=api.kubeconfig,
                  dra_driver_kubevirt_version='')
    assert rc != 0 and 'DRA node dra-1' in log and 'nvidia-device-plugin-daemonset-q8z4d' in log, log
    assert 'dra-2' not in log.split('DRA node dra-1', 1)[1].split('\n', 1)[0]
    assert api.writes == []


def test_kubevirt_cr_missing_is_not_created(tmp_path, cluster):
    api = cluster([node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})])
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(api, kubevirt_devices_nodes=[]))
    assert rc != 0 and 'KubeVirt CR kubevirt/kubevirt was not found' in log, log
    assert api.writes == []
