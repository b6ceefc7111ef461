# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of playbooks/kubevirt.yml (kubevirt_devices, machineconfig) against a real kube-apiserver.

The server (tests/integration/kube_cluster.py) holds the real HyperConverged, KubeVirt, MachineConfig and
MachineConfigPool CRDs; the playbook runs as the least-privilege automation identity. No controller runs: where
the Machine Config Operator or a kubelet would write status, the test writes it through the API and says so.
"""
from __future__ import annotations

import calendar
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


def mco(status, pool_name='worker', mc_name=MC_NAME, annotate=None, hold=None, down=None):
    """The Machine Config Operator's part, as a controller step (a stand-in: no MCO runs here, and no node exists to
    write files on or reboot). Once our MachineConfig (and pool) exist, the render controller renders the pool's
    MachineConfigs into a new rendered-<pool>-<hash> MachineConfig and points the pool's spec.configuration at it
    (pkg/controller/render/render_controller.go syncGeneratedMachineConfig). It keeps watching: an edited
    MachineConfig is rendered and rolled out again under a new name. ``hold(mc)``: true while the render controller
    has not got to this content yet (the pool keeps its previous configuration). ``step.rendered`` lists the rendered
    names, in order.

    With ``status`` a rollout_done() status (no machine counts) and no ``annotate``, the rollout is the real one's
    (``_roll``): the node controller targets one node at a time (maxUnavailable 1), whose daemon and the drain
    controller take it through Working, cordon, drain, reboot, uncordon and Done, and the pool's status is
    calculated from the nodes after every step, as the node controller's is. ``step.events`` records each node's
    steps as (time, node, step); ``step.updated_at`` the time the pool last turned Updated. ``down(cluster)``: true
    while a rebooting node is to stay down (a reboot takes as long as it takes).

    Otherwise (a test that needs an MCO that does not add up: counters given, or only the ``annotate`` nodes'
    daemons reporting) the pool is set to ``status`` at once (machineCount: the selected nodes, unless given) and
    the ``annotate`` nodes (default: every selected node) to the rendered config."""
    rolling = annotate is None and 'machineCount' not in status

    def step(cluster):
        mc = cluster.get(MC_V1, 'MachineConfig', mc_name)
        pool = cluster.get(MC_V1, 'MachineConfigPool', pool_name)
        if mc is not None and pool is not None and not (hold is not None and hold(mc)):
            spec = rendered_spec(mc)
            rendered = rendered_name(pool_name, spec)
            if not step.rendered or step.rendered[-1] != rendered:
                if cluster.get(MC_V1, 'MachineConfig', rendered) is None:
                    cluster.create({'apiVersion': MC_V1, 'kind': 'MachineConfig', 'metadata': {'name': rendered},
                                    'spec': spec})
                configuration = dict(status['configuration'], name=rendered)
                pool = cluster.patch(pool, {'spec': {'configuration': configuration}})
                step.rendered.append(rendered)
                if not rolling:
                    _set_at_once(cluster, pool, status, configuration, annotate)
        if rolling and step.rendered and pool is not None:
            _roll(cluster, pool, step)
        return False
    step.rendered = []
    step.events = []
    step.updated_at = None
    step.down = down
    return step


def _selected(cluster, pool):
    """The nodes the pool's nodeSelector selects, by name (pkg/controller/node/node_controller.go getNodesForPool)."""
    selector = pool['spec']['nodeSelector']['matchLabels']
    # a list's items carry no apiVersion and kind
    return sorted((dict(n, apiVersion='v1', kind='Node') for n in cluster.server.request('GET', '/api/v1/nodes')['items']
                   if all((n['metadata'].get('labels') or {}).get(k) == v for k, v in selector.items())),
                  key=lambda n: n['metadata']['name'])


def _set_at_once(cluster, pool, status, configuration, annotate):
    selected = [n['metadata']['name'] for n in _selected(cluster, pool)]
    final = dict(status, observedGeneration=pool['metadata']['generation'], configuration=configuration)
    if 'machineCount' not in status:
        final.update(machineCount=len(selected), updatedMachineCount=len(selected), readyMachineCount=len(selected))
    for name in selected if annotate is None else annotate:
        cluster.patch(cluster.get('v1', 'Node', name), {'metadata': {'annotations': {
            MCD + 'currentConfig': configuration['name'], MCD + 'desiredConfig': configuration['name'],
            MCD + 'state': 'Done'}}})
    cluster.set_status(pool, final)


def _notes(node):
    return node['metadata'].get('annotations') or {}


def _node_ready(node):
    # pkg/controller/common/layered_node_state.go CheckNodeReady: the Ready condition True (none reported counts as
    # no objection), and not unschedulable ("Ignore nodes that are marked unschedulable")
    conds = dict((c['type'], c['status']) for c in (node.get('status') or {}).get('conditions') or [])
    return conds.get('Ready', 'True') == 'True' and not (node.get('spec') or {}).get('unschedulable')


def _node_done(node, target=None):
    # layered_node_state.go IsNodeDone (currentConfig == desiredConfig, both set, state Done), and with ``target``
    # IsDesiredMachineConfigEqualToPool too (status.go getUpdatedMachines: IsDone)
    notes = _notes(node)
    current, desired = notes.get(MCD + 'currentConfig'), notes.get(MCD + 'desiredConfig')
    return (bool(current) and current == desired and (target is None or desired == target)
            and notes.get(MCD + 'state') == 'Done')


def _set_ready(cluster, node, ready):
    """The kubelet's Ready condition (status subresource): False while the node reboots, True once it is back."""
    status = dict(node.get('status') or {})
    status['conditions'] = [{'type': 'Ready', 'status': 'True' if ready else 'False',
                             'reason': 'KubeletReady' if ready else 'KubeletNotReady'}]
    cluster.set_status(node, status)


def _drain(cluster, name):
    """The drain controller's drain (pkg/controller/drain/drain_controller.go drainNode: kubectl's drain.Helper with
    Force, IgnoreAllDaemonSets, DeleteEmptyDirData): every pod on the node is evicted but DaemonSet pods and mirror
    pods (k8s.io/kubectl/pkg/drain filters.go daemonSetFilter, mirrorPodFilter), and the drain waits until they are
    gone, which the kubelet stand-in here does at once (no kubelet runs: it deletes the evicted pod with grace 0)."""
    pods = cluster.server.request('GET', '/api/v1/pods?fieldSelector=spec.nodeName=' + name)['items']
    for item in pods:
        meta = item['metadata']
        if any(o.get('kind') == 'DaemonSet' and o.get('controller') for o in meta.get('ownerReferences') or []):
            continue
        if 'kubernetes.io/config.mirror' in (meta.get('annotations') or {}):
            continue
        path = '/api/v1/namespaces/%s/pods/%s' % (meta['namespace'], meta['name'])
        cluster.server.request('POST', path + '/eviction', {
            'apiVersion': 'policy/v1beta1', 'kind': 'Eviction',
            'metadata': {'name': meta['name'], 'namespace': meta['namespace']}}, ok=(200, 201, 404))
        cluster.server.request('DELETE', path, {'kind': 'DeleteOptions', 'apiVersion': 'v1', 'gracePeriodSeconds': 0},
                               ok=(200, 202, 404))


def _advance(cluster, node, target, step):
    """One step of the node the pool targets, as its machine-config-daemon and the drain controller take it; each
    step is one write, so the states between are seen. Returns the step's name."""
    name, notes = node['metadata']['name'], _notes(node)
    drain, uncordon = 'drain-' + target, 'uncordon-' + target
    phase = step.phases.get(name)
    if notes.get(MCD + 'state') != 'Working' and phase is None:
        # pkg/daemon/update.go: the daemon sees desiredConfig != currentConfig and sets state Working
        # (nodeWriter SetWorking), then asks the drain controller to drain (desiredDrain, constants.go
        # DesiredDrainerAnnotationKey, "drain-<config>")
        cluster.patch(node, {'metadata': {'annotations': {MCD + 'state': 'Working', MCD + 'desiredDrain': drain}}})
        step.phases[name] = 'working'
    elif phase == 'working':
        # drain_controller.go drainNode: cordon first (cordonOrUncordonNode(true): spec.unschedulable)
        cluster.patch(node, {'spec': {'unschedulable': True}})
        step.phases[name] = 'cordoned'
    elif phase == 'cordoned':
        # then drain.RunNodeDrain; on success lastAppliedDrain = desiredDrain (LastAppliedDrainerAnnotationKey)
        _drain(cluster, name)
        cluster.patch(node, {'metadata': {'annotations': {MCD + 'lastAppliedDrain': drain}}})
        step.phases[name] = 'drained'
    elif phase == 'drained':
        # the daemon writes the files and reboots (update.go updateOnClusterBuild/reboot): the node goes NotReady
        _set_ready(cluster, node, False)
        step.phases[name] = 'rebooting'
    elif phase == 'rebooting' and step.down is not None and step.down(cluster):
        return 'rebooting'
    elif phase == 'rebooting':
        # back up: the kubelet reports Ready; the daemon's first run (daemon.go checkStateOnFirstRun ->
        # updateConfigAndState) validates the on-disk state and, in completeUpdate, asks for the uncordon
        _set_ready(cluster, node, True)
        cluster.patch(node, {'metadata': {'annotations': {MCD + 'desiredDrain': uncordon}}})
        step.phases[name] = 'rebooted'
    elif phase == 'rebooted':
        # drain_controller.go syncNode, DrainerStateUncordon: cordonOrUncordonNode(false), then lastAppliedDrain
        cluster.patch(node, {'spec': {'unschedulable': False},
                             'metadata': {'annotations': {MCD + 'lastAppliedDrain': uncordon}}})
        step.phases[name] = 'uncordoned'
    elif phase == 'uncordoned':
        # daemon.go updateConfigAndState: after completeUpdate, nodeWriter SetDone (currentConfig = desiredConfig,
        # state Done)
        cluster.patch(node, {'metadata': {'annotations': {MCD + 'currentConfig': target, MCD + 'state': 'Done'}}})
        del step.phases[name]
        phase = 'done'
    step.events.append((time.time(), name, step.phases.get(name, phase) or 'working'))
    return step.events[-1][2]


def _roll(cluster, pool, step):
    """One pass of the node controller over the pool (pkg/controller/node/node_controller.go syncMachineConfigPool):
    the node being updated moves one step; when no node is unavailable, the next node not yet targeted gets
    desiredConfig (maxUnavailable: the pool's spec.maxUnavailable, 1 by default, maxUnavailable(); the candidates
    and their count, getAllCandidateMachines; setDesiredMachineConfigAnnotation); then the pool's status is
    calculated from the nodes (status.go calculateStatus)."""
    target = pool['spec']['configuration']['name']
    step.phases = getattr(step, 'phases', {})
    nodes = _selected(cluster, pool)
    working = [n for n in nodes if _notes(n).get(MCD + 'desiredConfig') == target and not _node_done(n, target)]
    if working:
        _advance(cluster, working[0], target, step)
    else:
        # capacity = maxUnavailable (1) minus the unavailable nodes (layered_node_state.go IsUnavailableForUpdate:
        # not ready, or not done): here not ready, or already targeted and not done. The fixture's nodes carry no
        # daemon annotations of an earlier config, which a real node's daemon wrote when it joined, so "not done"
        # counts only for a node this rollout targeted.
        unavailable = [n for n in nodes if not _node_ready(n) or (
            _notes(n).get(MCD + 'desiredConfig') == target and not _node_done(n, target))]
        candidates = [n for n in nodes if _notes(n).get(MCD + 'desiredConfig') != target]
        if candidates and not unavailable:
            cluster.patch(candidates[0], {'metadata': {'annotations': {MCD + 'desiredConfig': target}}})
            step.events.append((time.time(), candidates[0]['metadata']['name'], 'desired'))
    nodes = _selected(cluster, pool)
    count = len(nodes)
    # status.go getUpdatedMachines (IsDone against the pool's target), getReadyMachines (updated and
    # CheckNodeReady), getUnavailableMachines (IsUnavailableForUpdate), getDegradedMachines (state Degraded)
    updated = [n for n in nodes if _node_done(n, target)]
    ready = [n for n in updated if _node_ready(n)]
    unavailable = [n for n in nodes if not _node_ready(n) or not _node_done(n)]
    all_updated = len(updated) == count and len(ready) == count and not unavailable
    current = (pool.get('status') or {}).get('configuration') or {}
    stamp = '2026-11-24T00:00:00Z'
    conditions = [{'type': t, 'status': v, 'message': '', 'reason': '', 'lastTransitionTime': stamp} for t, v in (
        ('Updated', 'True' if all_updated else 'False'), ('Updating', 'False' if all_updated else 'True'),
        ('NodeDegraded', 'False'), ('Degraded', 'False'))]
    final = {'observedGeneration': pool['metadata']['generation'], 'machineCount': count,
             'updatedMachineCount': len(updated), 'readyMachineCount': len(ready),
             'unavailableMachineCount': len(unavailable), 'degradedMachineCount': 0,
             # calculateStatus copies spec.configuration to status.configuration only once every machine is
             # updated and ready and none is unavailable
             'configuration': pool['spec']['configuration'] if all_updated else current,
             'conditions': conditions}
    if (pool.get('status') or {}) != final:
        if all_updated and current.get('name') != target:
            # taken before the write: a read that sees the pool Updated comes after it
            step.updated_at = time.time()
        cluster.set_status(pool, final)


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


def pod(name, namespace, node_name, owner_kind):
    owner = {'apiVersion': 'apps/v1', 'kind': owner_kind, 'name': name.rsplit('-', 1)[0], 'uid': name + '-owner',
             'controller': True}
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': name, 'namespace': namespace, 'ownerReferences': [owner]},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'c', 'image': 'registry.example.com/c:1'}]}}


def _stamp(event):
    # the audit log's stageTimestamp, RFC 3339 in UTC with microseconds
    return calendar.timegm(time.strptime(event['stageTimestamp'][:19], '%Y-%m-%dT%H:%M:%S')) + float(
        '0' + event['stageTimestamp'][19:].rstrip('Z'))


def test_first_machineconfig_rollout_waits_on_the_real_object(tmp_path, kube):
    # The first play of kubevirt.yml previews every phase in check mode; its MachineConfig is a dry run the MCO never
    # sees, so it must not wait for the pool (it used to, for the whole timeout, and the first rollout could never
    # succeed). The second play applies it, and waits until the MCO has rolled it out: drained and rebooted every
    # node of the pool, one at a time, each back schedulable.
    cluster = kube([pool('master', ['00-master'], DONE), pool('worker', ['00-worker'], DONE)] + vgpu_nodes()
                   + [pod('web-7d4b9-x2k1', 'apps', 'vgpu-a10', 'ReplicaSet'),
                      pod('nvidia-sandbox-device-plugin-x1', 'nvidia-gpu-operator', 'vgpu-a10', 'DaemonSet')])
    seen = {}

    def down(cluster):
        # the first node to reboot stays down until the collection has read the pool since: its wait starts while
        # the rollout is under way, whatever the load on this machine, so the checks below can tell a wait that
        # waits from one that returns on what it first sees
        if seen.get('polled'):
            return False
        mark = seen.setdefault('mark', cluster.now())
        seen['polled'] = any(e['verb'] == 'get' and e.get('objectRef', {}).get('resource') == 'machineconfigpools'
                             for e in cluster.requests(since=mark))
        return not seen['polled']
    operator = mco(rollout_done(['00-worker', MC_NAME]), down=down)
    cluster.controller('machine-config-operator', operator)
    rc, log = run(tmp_path, 'vgpu-hco-old', **mc_apply(cluster, machineconfig_wait_timeout=60))
    # read before anything else: the state the run returned on
    nodes = dict((n, cluster.get('v1', 'Node', n)) for n in ('vgpu-a10', 'vgpu-l40s'))
    assert rc == 0, log
    assert 'Preview: MachineConfig %s is not in the cluster yet' % MC_NAME in log, log
    assert 'worker: 2/2 machines updated, 2 ready' in log, log
    # server-side apply creates with a PATCH; no write to a Node: the cordon is the MCO's, and so is the uncordon
    # (the drain controller cordons again a node uncordoned under its drain: pkg/controller/drain/drain_controller.go
    # drainNode, "External actor has unexpectedly uncordoned node")
    assert write_summary(cluster.attempts()) == ['patch machineconfigs -/' + MC_NAME], log
    # the run returned with every node on the rendered config, Done and schedulable again (the MCO stand-in's
    # drain and reboot: mco(), _roll)
    rendered = operator.rendered[-1]
    for name, node_now in nodes.items():
        notes = node_now['metadata']['annotations']
        assert (notes[MCD + 'currentConfig'], notes[MCD + 'desiredConfig'], notes[MCD + 'state']) == (
            rendered, rendered, 'Done'), (name, notes)
        assert not node_now['spec'].get('unschedulable'), name
    # one node at a time (maxUnavailable 1): vgpu-l40s is targeted only once vgpu-a10 is Done
    steps = [(node_name, what) for _t, node_name, what in operator.events]
    assert steps == [(n, w) for n in ('vgpu-a10', 'vgpu-l40s') for w in (
        'desired', 'working', 'cordoned', 'drained', 'rebooting', 'rebooted', 'uncordoned', 'done')], steps
    # the drain evicted the ReplicaSet's pod and left the DaemonSet's (IgnoreAllDaemonSets)
    assert cluster.get('v1', 'Pod', 'web-7d4b9-x2k1', 'apps') is None
    assert cluster.get('v1', 'Pod', 'nvidia-sandbox-device-plugin-x1', 'nvidia-gpu-operator') is not None
    # the pool's wait read the pool last after the MCO had marked it Updated (every node Done and uncordoned): the
    # collection did not stop waiting on counters taken mid-rollout
    reads = [e for e in cluster.requests() if e['verb'] == 'get'
             and e.get('objectRef', {}).get('resource') == 'machineconfigpools']
    assert operator.updated_at is not None and _stamp(reads[-1]) >= operator.updated_at, (reads[-1], operator.updated_at)
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
