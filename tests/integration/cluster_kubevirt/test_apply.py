# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of playbooks/kubevirt.yml (kubevirt_devices, machineconfig) against a real kube-apiserver.

The server (tests/integration/kube_cluster.py) holds the real HyperConverged, KubeVirt, MachineConfig and
MachineConfigPool CRDs; the playbook runs as the least-privilege automation identity. No controller runs: where
the Machine Config Operator or a kubelet would write status, the test writes it through the API and says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

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


def run(tmp_path, inventory, *args, **extra):
    return run_playbook(tmp_path, 'kubevirt', os.path.join(HERE, 'inventories', inventory + '.yml'), *args, **extra)


def devices_apply(cluster, **extra):
    args = {'kubevirt_machineconfig_enabled': False, 'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'auto',
            'gpuvirt_kubevirt_config': 'auto', 'gpuvirt_kubeconfig': cluster.kubeconfig, 'kubevirt_devices_current': {}}
    args.update(extra)
    return args


def test_hco_apply_merges_keeps_foreign_and_writes_nothing_the_second_time(tmp_path, kube):
    cluster = kube([hco_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('gpu-2', {'nvidia.com/AD102GL_L40S': '1'})])
    rc, log = run(tmp_path, 'passthrough-hco-new', **devices_apply(cluster))
    assert rc == 0, log
    assert write_summary(cluster.attempts()) == ['patch hyperconvergeds openshift-cnv/kubevirt-hyperconverged'], log
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
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_hco_apply_fails_before_writing_when_no_node_advertises_a_name(tmp_path, kube):
    cluster = kube([hco_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('gpu-2', {'cpu': '8'})])
    # gpu-2 never advertises: the role waits (bounded: 2 s here, 600 s by default) for the device plugin, then refuses
    rc, log = run(tmp_path, 'passthrough-hco-new',
                  **devices_apply(cluster, kubevirt_devices_advertise_timeout=2, kubevirt_devices_advertise_delay=1))
    assert rc != 0 and 'nvidia.com/AD102GL_L40S' in log and 'not advertised' in log, log
    assert 'RETRYING: [localhost]: Read the nodes, waiting for the GPU nodes to advertise' in log, log
    assert cluster.attempts() == []


def test_check_mode_reports_the_advertise_wait_instead_of_waiting(tmp_path, kube):
    # --check sends dry runs only: no device plugin would start because of it, so the wait for the nodes to
    # advertise (kubevirt_devices_advertise_timeout, 600 s by default) is skipped with one read and a report.
    # Bounded here (20 reads 1 s apart) so that the old behaviour shows as RETRYING lines instead of a hang.
    cluster = kube([hco_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('gpu-2', {'cpu': '8'})])
    rc, log = run(tmp_path, 'passthrough-hco-new', '--check',
                  **devices_apply(cluster, kubevirt_devices_advertise_timeout=20, kubevirt_devices_advertise_delay=1))
    assert rc == 0, log
    assert 'RETRYING' not in log, log
    said = ' '.join(log.split())  # the message as one line (the callback wraps it)
    assert ('Preview: not waiting. Nodes gpu-2 advertise no nvidia.com/* resource yet; a real run waits up to 20 s '
            '(kubevirt_devices_advertise_timeout)') in said, log
    assert cluster.attempts() == []


def kubevirt_object():
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
            'spec': {'configuration': {'developerConfiguration': {'featureGates': ['Snapshot']}}},
            # what virt-operator reports once deployed; it decides mediatedDevicesConfiguration.enabled vs the gate
            'status': {'observedKubeVirtVersion': 'v1.9.0'}}


def test_kubevirt_cr_apply_without_hco(tmp_path, kube):
    cluster = kube([kubevirt_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})], openshift=False)
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[]))
    assert rc == 0, log
    got = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')['spec']['configuration']
    # KubeVirt v1.9.0: the field replaces the deprecated gate (kubevirt/kubevirt staging/src/kubevirt.io/api/core/v1/
    # types.go MediatedDevicesConfiguration.Enabled); no GPU gate: GA from v1.5.0 (pkg/virt-config/featuregate/
    # inactive.go registers GPUGate with State GA)
    assert got['developerConfiguration']['featureGates'] == ['Snapshot']
    assert got['mediatedDevicesConfiguration'] == {'enabled': False}
    assert got['permittedHostDevices']['mediatedDevices'][0]['resourceName'] == 'nvidia.com/NVIDIA_T4-1Q'
    second = cluster.now()
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[]))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_kubevirt_cr_missing_is_not_created(tmp_path, kube):
    cluster = kube([node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})],
                   openshift=False)
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[]))
    assert rc != 0 and 'KubeVirt CR kubevirt/kubevirt was not found' in log, log
    assert cluster.attempts() == []


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
    assert cluster.attempts() == []


def test_kubevirt_platform_where_the_hco_crd_is_served_is_refused_for_the_right_reason(tmp_path, kube):
    # gpuvirt_kubevirt_config=kubevirt on a cluster serving HCO's CRD: the KubeVirt CR is there and is read; the
    # refusal is that HCO owns that CR: it is the single entry point that creates its operators' CRs (Red Hat,
    # OpenShift Virtualization architecture, "About the hco-operator") and reconciles them back to its own spec,
    # which is why HCO offers the kubevirt.kubevirt.io/jsonpatch annotation for what it does not model
    # (kubevirt/hyperconverged-cluster-operator docs/cluster-configuration.md, "jsonpatch annotations"). The role
    # used to skip the read whenever the HCO CRD existed and say "KubeVirt CR kubevirt/kubevirt was not found".
    cluster = kube([kubevirt_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('vgpu-t4', {'nvidia.com/NVIDIA_T4-1Q': '4'})], openshift=False, hco=True)
    rc, log = run(tmp_path, 'mixed-kubevirt', **devices_apply(cluster, kubevirt_devices_nodes=[],
                                                              gpuvirt_kubevirt_config='kubevirt'))
    assert rc != 0 and 'owns the KubeVirt CR' in log and 'was not found' not in log, log
    assert cluster.attempts() == []


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
WORKER = {'node-role.kubernetes.io/worker': ''}
# what the machine-config-daemon writes on a node (openshift/machine-config-operator,
# pkg/daemon/constants/constants.go: currentConfig, desiredConfig, state "Done" once the node runs the config)
MCD = 'machineconfiguration.openshift.io/'


def rendered_spec(mc):
    """The render controller's merge of our one MachineConfig (the pool's other sources are not objects here):
    kernel arguments appended, files by path (openshift/machine-config-operator pkg/controller/common/helpers.go
    MergeMachineConfigs), named rendered-<pool>-<md5 of the spec> (pkg/controller/render/hash.go
    getMachineConfigHashedName)."""
    spec = mc['spec']
    return {'config': spec.get('config') or {}, 'kernelArguments': list(spec.get('kernelArguments') or [])}


def rendered_name(pool_name, spec):
    return 'rendered-%s-%s' % (pool_name, hashlib.md5(json.dumps(spec, sort_keys=True).encode()).hexdigest())


def mco(status, pool_name='worker', mc_name=MC_NAME, annotate=None, hold=None):
    """The Machine Config Operator's part, as a controller step: once our MachineConfig (and pool) exist, the
    render controller renders the pool's MachineConfigs into a new rendered-<pool>-<hash> MachineConfig and points
    the pool's spec.configuration at it (pkg/controller/render/render_controller.go syncGeneratedMachineConfig); the
    node controller rolls it out to the nodes the pool selects, whose daemons annotate them, and copies
    spec.configuration to status.configuration once every machine runs it (pkg/controller/node/status.go
    calculateStatus: status.configuration.source lists the MachineConfigs rendered in, machineCount counts the
    nodes the pool's nodeSelector selects; Updated=True once every machine runs it). It keeps watching: an edited
    MachineConfig is rendered and rolled out again under a new name. ``status`` is the pool status it ends with
    (machineCount: the selected nodes, unless given); ``annotate``: the nodes whose daemon reports the new config
    (default: every selected node); ``hold(mc)``: true while the render controller has not got to this content
    yet (the pool keeps its previous configuration). ``step.rendered`` lists the rendered names, in order."""
    def step(cluster):
        mc = cluster.get(MC_V1, 'MachineConfig', mc_name)
        if mc is None:
            return False
        pool = cluster.get(MC_V1, 'MachineConfigPool', pool_name)
        if pool is None or (hold is not None and hold(mc)):
            return False
        spec = rendered_spec(mc)
        rendered = rendered_name(pool_name, spec)
        if step.rendered and step.rendered[-1] == rendered:
            return False
        if cluster.get(MC_V1, 'MachineConfig', rendered) is None:
            cluster.create({'apiVersion': MC_V1, 'kind': 'MachineConfig', 'metadata': {'name': rendered},
                            'spec': spec})
        configuration = dict(status['configuration'], name=rendered)
        pool = cluster.patch(pool, {'spec': {'configuration': configuration}})
        selector = pool['spec']['nodeSelector']['matchLabels']
        selected = [n['metadata']['name'] for n in cluster.server.request('GET', '/api/v1/nodes')['items']
                    if all((n['metadata'].get('labels') or {}).get(k) == v for k, v in selector.items())]
        final = dict(status, observedGeneration=pool['metadata']['generation'], configuration=configuration)
        if 'machineCount' not in status:
            final.update(machineCount=len(selected), updatedMachineCount=len(selected),
                         readyMachineCount=len(selected))
        for name in selected if annotate is None else annotate:
            cluster.patch(cluster.get('v1', 'Node', name), {'metadata': {'annotations': {
                MCD + 'currentConfig': rendered, MCD + 'desiredConfig': rendered, MCD + 'state': 'Done'}}})
        cluster.set_status(pool, final)
        step.rendered.append(rendered)
        return False
    step.rendered = []
    return step


def rollout_done(sources):
    status = pool_status(sources, DONE)
    for key in ('machineCount', 'updatedMachineCount', 'readyMachineCount'):
        del status[key]
    return status


def vgpu_nodes(labels=None):
    # the vgpu-hco-old hosts, in the worker pool; annotated by the daemon with the rendered config they run
    return [node(n, {'cpu': '32'}, dict(WORKER) if labels is None else labels)
            for n in ('vgpu-a10', 'vgpu-l40s')]


def mc_apply(cluster, **extra):
    args = {'kubevirt_devices_enabled': False, 'gpuvirt_cluster_mode': 'apply', 'gpuvirt_kubeconfig': cluster.kubeconfig,
            'machineconfig_wait_delay': 1, 'machineconfig_wait_timeout': 20}
    args.update(extra)
    return args


def test_first_machineconfig_rollout_waits_on_the_real_object(tmp_path, kube):
    # The first play of kubevirt.yml previews every phase in check mode; its MachineConfig is a dry run the MCO never
    # sees, so it must not wait for the pool (it used to, for the whole timeout, and the first rollout could never
    # succeed). The second play applies it, and waits until the MCO has rolled it out.
    cluster = kube([pool('master', ['00-master'], DONE), pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    cluster.controller('machine-config-operator', mco(rollout_done(['00-worker', MC_NAME])))
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc == 0, log
    assert 'Preview: MachineConfig %s is not in the cluster yet' % MC_NAME in log, log
    assert 'worker: 2/2 machines updated, 2 ready' in log, log
    # server-side apply creates with a PATCH
    assert write_summary(cluster.attempts()) == ['patch machineconfigs -/' + MC_NAME], log
    mc = cluster.get(MC_V1, 'MachineConfig', MC_NAME)
    assert mc['spec']['kernelArguments'] == ['intel_iommu=on', 'iommu=pt']
    assert mc['metadata']['labels'] == {'machineconfiguration.openshift.io/role': 'worker'}
    second = cluster.now()
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_machineconfig_apply_reports_a_degraded_pool(tmp_path, kube):
    reason = 'Node w-2 is reporting: "failed to drain node"'
    cluster = kube([pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    cluster.controller('machine-config-operator', mco(pool_status(
        ['00-worker', MC_NAME], [('Updated', 'False', ''), ('NodeDegraded', 'True', reason)], degraded=1),
        annotate=[]))
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_existing_pools=[]))
    assert rc != 0 and 'failed to drain node' in log, log


def test_machineconfig_wait_timeout_names_the_pool_its_state_and_the_timeout(tmp_path, kube):
    # no MCO at all: the MachineConfig is created and never rendered in
    cluster = kube([pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_wait_timeout=3))
    assert rc != 0, log
    assert ('Timed out after 3 s (machineconfig_wait_timeout) waiting for MachineConfigPool worker to roll out '
            'MachineConfig ' + MC_NAME) in log, log
    assert 'Last seen: worker: 3/3 machines updated, 3 ready; rendered config does not include ' + MC_NAME in log, log
    # the poll's own failure ("Unknown error") is rescued; what stops the run is the message above
    assert recap(log)['rescued'] == '1', log


def test_machineconfig_apply_refuses_a_missing_pool_before_writing(tmp_path, kube):
    cluster = kube([pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_pool='gpu'))
    assert rc != 0 and "'gpu' does not exist" in log, log
    assert cluster.attempts() == []


def test_a_node_outside_an_existing_pool_is_refused_before_any_write(tmp_path, kube):
    # a MachineConfig reaches only the nodes its pool's nodeSelector selects (MachineConfigPool spec.nodeSelector,
    # openshift/api machineconfiguration/v1 types.go): vgpu-l40s is no worker, so IOMMU would never be enabled on it
    cluster = kube([pool('worker', ['00-worker'], DONE), node('vgpu-a10', {}, dict(WORKER)), node('vgpu-l40s', {})])
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc != 0, log
    assert ("MachineConfigPool 'worker' does not select vgpu-l40s (lacks node-role.kubernetes.io/worker=)"
            in log), log
    assert cluster.attempts() == []


def test_a_missing_node_is_refused_before_any_write(tmp_path, kube):
    cluster = kube([pool('worker', ['00-worker'], DONE), node('vgpu-a10', {}, dict(WORKER))])
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc != 0 and 'no Node in the cluster for vgpu-l40s' in log, log
    assert cluster.attempts() == []


def test_a_dedicated_pool_gets_its_nodes_labelled_in_before_its_machineconfig(tmp_path, kube):
    # The dedicated pool selects node-role.kubernetes.io/gpu (build_pool); nothing else puts the GPU nodes in it.
    # Before, the pool was created empty, the MCO "rolled out" to 0 machines and the run reported success.
    # A pool's machines are exactly the nodes its spec.nodeSelector matches (openshift/machine-config-operator
    # pkg/controller/node/node_controller.go getNodesForPool; docs/custom-pools.md: "labeling the node with a custom
    # role" comes first), and only those nodes get the pool's rendered config.
    gpu_mc = '100-gpu-gpuvirt-iommu'
    cluster = kube([pool('worker', ['00-worker'], DONE)]
                   + [node(n, {'cpu': '64'}, dict(WORKER)) for n in ('gpu-1', 'gpu-2', 'worker-3')])
    cluster.controller('machine-config-operator', mco(dict(rollout_done(['00-worker', gpu_mc])), pool_name='gpu',
                                                      mc_name=gpu_mc))
    rc, log = run(tmp_path, 'passthrough-hco-new', **mc_apply(cluster))
    assert rc == 0, log
    writes = write_summary(cluster.attempts())
    assert writes == ['patch nodes -/gpu-1', 'patch nodes -/gpu-2', 'patch machineconfigpools -/gpu',
                      'patch machineconfigs -/' + gpu_mc], writes
    assert cluster.get('v1', 'Node', 'gpu-1')['metadata']['labels']['node-role.kubernetes.io/gpu'] == ''
    assert 'node-role.kubernetes.io/gpu' not in cluster.get('v1', 'Node', 'worker-3')['metadata']['labels']
    assert 'gpu: 2/2 machines updated, 2 ready' in log, log
    second = cluster.now()
    rc, log = run(tmp_path, 'passthrough-hco-new', **mc_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_a_pool_that_selects_no_node_is_never_done(tmp_path, kube):
    # the counters alone (0/0 updated) looked like a finished rollout: the MCO counts machineCount = the nodes the
    # pool selects and sets Updated=True when updatedMachineCount == readyMachineCount == machineCount and none is
    # unavailable (openshift/machine-config-operator pkg/controller/node/status.go calculateStatus), which a pool of 0
    # machines satisfies at once
    cluster = kube([pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    status = pool_status(['00-worker', MC_NAME], DONE, machines=0)
    cluster.controller('machine-config-operator', mco(status, annotate=[]))
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_wait_timeout=3))
    assert rc != 0, log
    assert 'the pool selects no node, so its MachineConfig reaches none' in log, log


def test_the_wait_names_the_nodes_that_do_not_run_the_rendered_config(tmp_path, kube):
    # the pool's counters say done, but vgpu-l40s's daemon never reported the new rendered config
    cluster = kube([pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    operator = mco(rollout_done(['00-worker', MC_NAME]), annotate=['vgpu-a10'])
    cluster.controller('machine-config-operator', operator)
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_wait_timeout=3))
    assert rc != 0, log
    assert 'waiting for the GPU nodes to run MachineConfigPool worker' in log, log
    assert 'not yet on %s: vgpu-l40s (currentConfig -, desiredConfig -, state -)' % operator.rendered[-1] in log, log


def rendered_args(cluster, pool_name='worker'):
    """The kernel arguments of the rendered config the pool runs now (status.configuration.name)."""
    pool = cluster.get(MC_V1, 'MachineConfigPool', pool_name)
    return cluster.get(MC_V1, 'MachineConfig', pool['status']['configuration']['name'])['spec']['kernelArguments']


ACS = 'pcie_acs_override=downstream'


def test_an_edited_machineconfig_is_waited_for_until_its_new_content_is_rolled_out(tmp_path, kube):
    # The pool's Updated=True and its source list naming our MachineConfig were the previous content's: after an
    # edit they stay so until the render controller renders the edit and the node controller rolls it out
    # (pkg/controller/node/status.go calculateStatus). The second run edits the kernel arguments; the stand-in
    # renders the edit only 4 s after seeing it, and the run must wait for that, not pass at once on stale status.
    cluster = kube([pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    seen = {}

    def hold(mc):
        if ACS not in mc['spec'].get('kernelArguments', []):
            return False
        return time.time() - seen.setdefault('edit', time.time()) < 4
    operator = mco(rollout_done(['00-worker', MC_NAME]), hold=hold)
    cluster.controller('machine-config-operator', operator)
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc == 0, log
    assert len(operator.rendered) == 1 and rendered_args(cluster) == ['intel_iommu=on', 'iommu=pt']
    second = cluster.now()
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_extra_kernel_args=[ACS]))
    # read before anything else: the run must have returned only once the pool runs the edited content
    args = rendered_args(cluster)
    assert rc == 0, log
    assert args == ['intel_iommu=on', 'iommu=pt', ACS], (args, log)
    assert len(operator.rendered) == 2, operator.rendered
    assert write_summary(cluster.writes(since=second)) == ['patch machineconfigs -/' + MC_NAME], log


def test_an_edit_the_operator_never_renders_times_out_naming_the_stale_rendered_config(tmp_path, kube):
    # the render controller never gets to the edited content (a render stuck, say): the pool goes on showing the old
    # rendered config as Updated, which must not pass for the edit's rollout
    cluster = kube([pool('worker', ['00-worker'], DONE)] + vgpu_nodes())
    operator = mco(rollout_done(['00-worker', MC_NAME]),
                   hold=lambda mc: ACS in mc['spec'].get('kernelArguments', []))
    cluster.controller('machine-config-operator', operator)
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster))
    assert rc == 0, log
    rc, log = run(tmp_path, 'vgpu-hco-old',
                  **mc_apply(cluster, machineconfig_extra_kernel_args=[ACS], machineconfig_wait_timeout=3))
    assert rc != 0, log
    assert ('waiting for MachineConfigPool worker to roll out MachineConfig %s as it is now (no rendered-worker-* '
            'MachineConfig holds its current content yet' % MC_NAME) in log, log
    assert ('Last seen: worker: 2/2 machines updated, 2 ready; rendered config %s does not hold the current content '
            'of %s yet' % (operator.rendered[0], MC_NAME)) in log, log


# --- DRA ----------------------------------------------------------------------------------------------------------

def test_dra_refuses_a_cluster_without_resource_k8s_io_v1_before_anything_else(tmp_path, kube):
    # The DRA driver path needs resource.k8s.io/v1 (Dynamic Resource Allocation GA in Kubernetes 1.34,
    # kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation); this 1.20 server does not serve
    # it, like many production clusters today. The run stops on that, naming the API, with nothing written and no
    # helm needed (it used to need helm even in check mode and to read on regardless).
    labels = {'nvidia.com/gpu.present': 'true'}
    cluster = kube([kubevirt_object()] + [node(n, {'cpu': '64'}, labels) for n in ('dra-1', 'dra-2')], openshift=False)
    rc, log = run(tmp_path, 'dra-kubevirt', gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=cluster.kubeconfig,
                  dra_driver_kubevirt_version='')
    assert rc != 0 and 'does not serve resource.k8s.io/v1' in log, log
    assert 'Install the chart' not in log and 'Preview: would install chart' not in log, log
    assert cluster.attempts() == [] and cluster.dry_runs() == []
