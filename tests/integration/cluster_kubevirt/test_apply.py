# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of playbooks/kubevirt.yml (kubevirt_devices, machineconfig) against a real kube-apiserver.

The server (tests/integration/kube_cluster.py) holds the real HyperConverged, KubeVirt, MachineConfig and
MachineConfigPool CRDs; the playbook runs as the least-privilege automation identity. No controller runs: where
the Machine Config Operator or a kubelet would write status, the test writes it through the API and says so.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import recap, run_playbook, write_summary  # noqa: E402
import schema  # noqa: E402

QAT = {'pciDeviceSelector': '8086:4940', 'resourceName': 'intel.com/QAT', 'externalResourceProvider': True}
HCO = ('hco.kubevirt.io/v1beta1', 'HyperConverged', 'kubevirt-hyperconverged', 'openshift-cnv')
MC_V1 = 'machineconfiguration.openshift.io/v1'


def node(name, alloc, labels=None):
    # allocatable is the kubelet's to write (status subresource): the fixture writes it in the kubelet's place
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels or {}},
            'status': {'allocatable': alloc}}


def hco_object():
    return {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
            'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'},
            'spec': {'featureGates': {'disableMDevConfiguration': False},
                     'liveMigrationConfig': {'parallelMigrationsPerCluster': 5},
                     'permittedHostDevices': {'pciHostDevices': [QAT]}}}


def run(tmp_path, inventory, **extra):
    return run_playbook(tmp_path, 'kubevirt', os.path.join(HERE, 'inventories', inventory + '.yml'), **extra)


def devices_apply(cluster, **extra):
    args = {'kubevirt_machineconfig_enabled': False, 'kubevirt_devices_mode': 'apply', 'kubevirt_devices_platform': 'auto',
            'kubevirt_devices_kubeconfig': cluster.kubeconfig, 'kubevirt_devices_current': {}}
    args.update(extra)
    return args


def test_hco_apply_merges_keeps_foreign_and_writes_nothing_the_second_time(tmp_path, kube):
    cluster = kube([hco_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('gpu-2', {'nvidia.com/AD102GL_L40S': '1'})])
    rc, log = run(tmp_path, 'passthrough-hco-new', **devices_apply(cluster))
    assert rc == 0, log
    assert write_summary(cluster.writes()) == ['patch hyperconvergeds openshift-cnv/kubevirt-hyperconverged'], log
    (sent,) = cluster.sent('hyperconvergeds')
    assert sent['apiVersion'] == 'hco.kubevirt.io/v1beta1'
    schema.validate(sent)
    hco = cluster.get(*HCO)
    pci = hco['spec']['permittedHostDevices']['pciHostDevices']
    assert pci[0] == QAT  # a foreign entry stays, first
    assert {e['resourceName'] for e in pci[1:]} == {'nvidia.com/GA102GL_A10', 'nvidia.com/AD102GL_L40S'}
    assert hco['spec']['featureGates']['disableMDevConfiguration'] is True
    # not ours, untouched (the server filled in the CRD's defaults around it)
    assert hco['spec']['liveMigrationConfig']['parallelMigrationsPerCluster'] == 5
    second = cluster.now()
    rc, log = run(tmp_path, 'passthrough-hco-new', **devices_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.writes(since=second) == [], write_summary(cluster.writes(since=second))


def test_hco_apply_fails_before_writing_when_no_node_advertises_a_name(tmp_path, kube):
    cluster = kube([hco_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('gpu-2', {'cpu': '8'})])
    # gpu-2 never advertises: the role waits (bounded: 2 s here, 600 s by default) for the device plugin, then refuses
    rc, log = run(tmp_path, 'passthrough-hco-new',
                  **devices_apply(cluster, kubevirt_devices_advertise_timeout=2, kubevirt_devices_advertise_delay=1))
    assert rc != 0 and 'nvidia.com/AD102GL_L40S' in log and 'not advertised' in log, log
    assert 'RETRYING: [localhost]: Read the nodes, waiting for the GPU nodes to advertise' in log, log
    assert cluster.writes() == []


def kubevirt_object():
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
            'spec': {'configuration': {'developerConfiguration': {'featureGates': ['Snapshot']}}}}


def test_kubevirt_cr_apply_without_hco(tmp_path, kube):
    cluster = kube([kubevirt_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})], openshift=False)
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[]))
    assert rc == 0, log
    got = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')['spec']['configuration']
    assert got['developerConfiguration']['featureGates'] == ['Snapshot', 'GPU', 'DisableMDEVConfiguration']
    assert got['permittedHostDevices']['mediatedDevices'][0]['resourceName'] == 'nvidia.com/NVIDIA_T4-1Q'
    second = cluster.now()
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[]))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.writes(since=second) == [], write_summary(cluster.writes(since=second))


def test_kubevirt_cr_missing_is_not_created(tmp_path, kube):
    cluster = kube([node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})],
                   openshift=False)
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[]))
    assert rc != 0 and 'KubeVirt CR kubevirt/kubevirt was not found' in log, log
    assert cluster.writes() == []


def test_a_missing_hyperconverged_names_the_api_looked_for_and_what_was_found(tmp_path, kube):
    # OpenShift Virtualization's CRD is served but its HyperConverged object was never made (an operator install
    # that stopped half way): the message must say which API was read and what is there, not "KubeVirt CR not
    # found" (the platform is HCO, so the KubeVirt CR is not what was looked for).
    cluster = kube([kubevirt_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('gpu-2', {'nvidia.com/AD102GL_L40S': '1'})])
    rc, log = run(tmp_path, 'passthrough-hco-new', **devices_apply(cluster))
    assert rc != 0, log
    assert 'HyperConverged openshift-cnv/kubevirt-hyperconverged was not found' in log, log
    assert 'hco.kubevirt.io/v1beta1' in log and 'HyperConverged objects in the cluster: none' in log, log
    assert cluster.writes() == []


def test_kubevirt_platform_where_the_hco_crd_is_served_is_refused_for_the_right_reason(tmp_path, kube):
    # kubevirt_devices_platform=kubevirt on a cluster serving HCO's CRD: the KubeVirt CR is there and is read; the
    # refusal is that HCO owns that CR: it is the single entry point that creates its operators' CRs (Red Hat,
    # OpenShift Virtualization architecture, "About the hco-operator") and reconciles them back to its own spec,
    # which is why HCO offers the kubevirt.kubevirt.io/jsonpatch annotation for what it does not model
    # (kubevirt/hyperconverged-cluster-operator docs/cluster-configuration.md, "jsonpatch annotations"). The role
    # used to skip the read whenever the HCO CRD existed and say "KubeVirt CR kubevirt/kubevirt was not found".
    cluster = kube([kubevirt_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})], openshift=False, hco=True)
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[],
                                                              kubevirt_devices_platform='kubevirt'))
    assert rc != 0 and 'owns the KubeVirt CR' in log and 'was not found' not in log, log
    assert cluster.writes() == []


# --- MachineConfig and the pool rollout (OpenShift) ------------------------------------------------------------

def pool(name, sources, conditions, machines=3, degraded=0):
    # spec is ours to create as the cluster's admin; status is the Machine Config Operator's (written below through
    # the status subresource)
    return {'apiVersion': MC_V1, 'kind': 'MachineConfigPool', 'metadata': {'name': name},
            'spec': {'machineConfigSelector': {'matchLabels': {'machineconfiguration.openshift.io/role': name}},
                     'nodeSelector': {'matchLabels': {'node-role.kubernetes.io/' + name: ''}}},
            'status': pool_status(sources, conditions, machines, degraded)}


def pool_status(sources, conditions, machines=3, degraded=0, generation=1):
    return {'observedGeneration': generation, 'machineCount': machines, 'updatedMachineCount': machines - degraded,
            'readyMachineCount': machines - degraded, 'degradedMachineCount': degraded, 'unavailableMachineCount': 0,
            'configuration': {'name': 'rendered-%s-%d' % (sources[0].split('-')[-1], len(sources)),
                              'source': [{'apiVersion': MC_V1, 'kind': 'MachineConfig', 'name': s} for s in sources]},
            'conditions': [{'type': t, 'status': v, 'message': m, 'reason': '',
                            'lastTransitionTime': '2026-11-24T00:00:00Z'} for t, v, m in conditions]}


DONE = [('Updated', 'True', ''), ('Updating', 'False', ''), ('Degraded', 'False', '')]
MC_NAME = '100-worker-gpuvirt-iommu'


def mco(status):
    """The Machine Config Operator's part, as a controller step: once our MachineConfig exists in the cluster, the
    render controller adds it to the worker pool's rendered configuration and the node controller rolls it out,
    which shows in the pool's status (openshift/machine-config-operator, pkg/controller/render and
    pkg/controller/node: status.configuration.source lists the MachineConfigs rendered in; Updated=True once every
    machine runs it). ``status`` is the pool status it ends with."""
    def step(cluster):
        if cluster.get(MC_V1, 'MachineConfig', MC_NAME) is None:
            return False
        worker = cluster.get(MC_V1, 'MachineConfigPool', 'worker')
        cluster.set_status(worker, dict(status, observedGeneration=worker['metadata']['generation']))
        return True
    return step


def mc_apply(cluster, **extra):
    args = {'kubevirt_devices_enabled': False, 'machineconfig_mode': 'apply', 'machineconfig_kubeconfig': cluster.kubeconfig,
            'machineconfig_wait_delay': 1, 'machineconfig_wait_timeout': 20}
    args.update(extra)
    return args


def test_first_machineconfig_rollout_waits_on_the_real_object(tmp_path, kube):
    # The first play of kubevirt.yml previews every phase in check mode; its MachineConfig is a dry run the MCO never
    # sees, so it must not wait for the pool (it used to, for the whole timeout, and the first rollout could never
    # succeed). The second play applies it, and waits until the MCO has rolled it out.
    cluster = kube([pool('master', ['00-master'], DONE), pool('worker', ['00-worker'], DONE)])
    cluster.controller('machine-config-operator', mco(pool_status(['00-worker', MC_NAME], DONE)))
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc == 0, log
    assert 'Preview: MachineConfig %s is not in the cluster yet' % MC_NAME in log, log
    assert 'worker: 3/3 machines updated, 3 ready' in log, log
    # server-side apply creates with a PATCH
    assert write_summary(cluster.writes()) == ['patch machineconfigs -/' + MC_NAME], log
    mc = cluster.get(MC_V1, 'MachineConfig', MC_NAME)
    assert mc['spec']['kernelArguments'] == ['intel_iommu=on', 'iommu=pt']
    assert mc['metadata']['labels'] == {'machineconfiguration.openshift.io/role': 'worker'}
    second = cluster.now()
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.writes(since=second) == [], write_summary(cluster.writes(since=second))


def test_machineconfig_apply_reports_a_degraded_pool(tmp_path, kube):
    reason = 'Node w-2 is reporting: "failed to drain node"'
    cluster = kube([pool('worker', ['00-worker'], DONE)])
    cluster.controller('machine-config-operator', mco(pool_status(
        ['00-worker', MC_NAME], [('Updated', 'False', ''), ('NodeDegraded', 'True', reason)], degraded=1)))
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_existing_pools=[]))
    assert rc != 0 and 'failed to drain node' in log, log


def test_machineconfig_wait_timeout_names_the_pool_its_state_and_the_timeout(tmp_path, kube):
    # no MCO at all: the MachineConfig is created and never rendered in
    cluster = kube([pool('worker', ['00-worker'], DONE)])
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_wait_timeout=3))
    assert rc != 0, log
    assert ('Timed out after 3 s (machineconfig_wait_timeout) waiting for MachineConfigPool worker to roll out '
            'MachineConfig ' + MC_NAME) in log, log
    assert 'Last seen: worker: 3/3 machines updated, 3 ready; rendered config does not include ' + MC_NAME in log, log
    # the poll's own failure ("Unknown error") is rescued; what stops the run is the message above
    assert recap(log)['rescued'] == '1', log


def test_machineconfig_apply_refuses_a_missing_pool_before_writing(tmp_path, kube):
    cluster = kube([pool('worker', ['00-worker'], DONE)])
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_pool='gpu'))
    assert rc != 0 and "'gpu' does not exist" in log, log
    assert cluster.writes() == []


# --- DRA ----------------------------------------------------------------------------------------------------------

def test_dra_refuses_a_cluster_without_resource_k8s_io_v1_before_anything_else(tmp_path, kube):
    # The DRA driver path needs resource.k8s.io/v1 (Dynamic Resource Allocation GA in Kubernetes 1.34,
    # kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation); this 1.20 server does not serve
    # it, like many production clusters today. The run stops on that, naming the API, with nothing written and no
    # helm needed (it used to need helm even in check mode and to read on regardless).
    labels = {'nvidia.com/gpu.present': 'true'}
    cluster = kube([kubevirt_object()] + [node(n, {'cpu': '64'}, labels) for n in ('dra-1', 'dra-2')], openshift=False)
    rc, log = run(tmp_path, 'dra-kubevirt', dra_driver_mode='apply', dra_driver_kubeconfig=cluster.kubeconfig,
                  dra_driver_kubevirt_version='')
    assert rc != 0 and 'does not serve resource.k8s.io/v1' in log, log
    assert 'Install the chart' not in log and 'Preview: would install chart' not in log, log
    assert cluster.writes() == [] and cluster.dry_runs() == []
