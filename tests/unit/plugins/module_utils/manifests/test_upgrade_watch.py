# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roll's view of the GPU VMs on a batch's nodes (VMIs and their virt-launcher pods), what it restores, how it
settles a node against revisions read before the batch's pods, and whether a new operator release has taken over
(upgrade_reconcile) - on objects shaped as the API server returns them, and on junk (hypothesis) without a crash."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_reconcile as ur

from .test_upgrade_plan import cluster, node, plan, pod, vm, vmi

RES = 'nvidia.com/NVIDIA_A10-12Q'


def with_uid(obj, uid):
    obj = copy.deepcopy(obj)
    obj['metadata']['uid'] = uid
    return obj


def scheduling(name, uid='vmi-uid-db'):
    """A VMI virt-controller has created a launcher pod for, the scheduler bound it, status.nodeName not set yet
    (kubevirt pkg/virt-controller/watch/vmi: nodeName is written once the pod runs)."""
    obj = with_uid(vmi(name, ''), uid)
    obj['status'] = {'phase': 'Scheduling'}
    return obj


def launcher(vmi_uid, node_name, phase='Running', gpu_request=False, name=None, namespace='vms'):
    # the labels KubeVirt gives a virt-launcher pod (kubevirt pkg/virt-controller/services/template.go podLabels)
    limits = {RES: '1'} if gpu_request else {'cpu': '1'}
    return {'metadata': {'name': name or 'virt-launcher-%s' % vmi_uid, 'namespace': namespace,
                         'labels': {'kubevirt.io': 'virt-launcher', 'kubevirt.io/created-by': vmi_uid}},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'compute', 'resources': {'limits': limits}}]},
            'status': {'phase': phase}}


# item: a VM bound to the node before the cordon ------------------------------------------------------------------
def test_a_vmi_in_scheduling_whose_launcher_pod_is_bound_to_the_node_is_planned_by_its_policy():
    vmis, vms = [scheduling('db')], [vm('db')]
    # without its launcher pod the plan cannot know where the VMI goes: nothing to plan
    assert plan(vmis, vms, vm_policy='stop')['nodes'][0]['vms'] == []
    p = plan(vmis, vms, vm_policy='stop', launchers=[launcher('vmi-uid-db', 'gpu-1')])
    assert [v['name'] for v in p['nodes'][0]['vms']] == ['db'] and p['nodes'][1]['vms'] == []
    assert p['nodes'][0]['vms'][0]['action'].startswith('stop (runStrategy Halted)')
    refused = plan(vmis, vms, vm_policy='refuse', launchers=[launcher('vmi-uid-db', 'gpu-1')])
    assert any('node gpu-1 runs the GPU VM vms/db' in r for r in refused['refusals'])
    # a launcher that has finished, or another node's, binds nothing here
    assert plan(vmis, vms, vm_policy='stop',
                launchers=[launcher('vmi-uid-db', 'gpu-1', phase='Failed')])['nodes'][0]['vms'] == []
    assert plan(vmis, vms, vm_policy='stop',
                launchers=[launcher('vmi-uid-db', 'gpu-2')])['nodes'][0]['vms'] == []


def test_a_launcher_pod_is_matched_to_its_vmi_by_uid_not_by_name():
    # a pod labelled for another VMI's uid (a VMI of the same name, deleted and re-created) binds nothing
    p = plan([scheduling('db', uid='new')], [vm('db')], vm_policy='stop', launchers=[launcher('old', 'gpu-1')])
    assert p['nodes'][0]['vms'] == []
    # without the label, the VMI owner reference (controller) names it
    pod_ = launcher('x', 'gpu-1')
    del pod_['metadata']['labels']['kubevirt.io/created-by']
    pod_['metadata']['ownerReferences'] = [{'kind': 'VirtualMachineInstance', 'name': 'db', 'uid': 'vmi-uid-db'}]
    assert up.launcher_vmi_uid(pod_) == 'vmi-uid-db'
    assert up.launcher_vmi_uid(pod('p', 'ds', 'gpu-1', 'h')) == ''


# item: the wait re-checks every GPU VMI and launcher on the node -------------------------------------------------
def test_vms_left_counts_every_gpu_vmi_on_the_nodes_planned_or_not():
    vmis = [vmi('a', 'gpu-1'), vmi('b', 'gpu-2'), vmi('cpu', 'gpu-1', gpu=False), scheduling('c', uid='uc')]
    assert up.vms_left(vmis, ['gpu-1']) == ['vms/a (gpu-1)']
    assert up.vms_left(vmis, ['gpu-1'], [launcher('uc', 'gpu-1')]) == ['vms/a (gpu-1)', 'vms/c (gpu-1)']
    assert up.vms_left(vmis, ['gpu-1', 'gpu-2']) == ['vms/a (gpu-1)', 'vms/b (gpu-2)']
    assert up.vms_left(vmis, []) == []


@pytest.mark.parametrize('phase, left', [('Running', True), ('Scheduled', True), ('Succeeded', False),
                                         ('Failed', False)])
def test_a_finished_vmi_counts_as_gone(phase, left):
    # kubevirt pkg/virt-controller/watch/vm/vm.go: for Manual and Once (and a VMI without a VM) a finished VMI is
    # left in place; its guest has powered off and its launcher pod has ended
    finished = vmi('a', 'gpu-1')
    finished['status']['phase'] = phase
    assert bool(up.vms_left([finished], ['gpu-1'])) is left


def test_launchers_left_counts_live_gpu_launchers_on_the_nodes():
    vmis = [with_uid(vmi('a', 'gpu-1'), 'ua'), with_uid(vmi('cpu', 'gpu-1', gpu=False), 'ucpu')]
    pods = [launcher('ua', 'gpu-1'), launcher('ucpu', 'gpu-1'), launcher('gone', 'gpu-1', gpu_request=True),
            launcher('ub', 'gpu-2', gpu_request=True), launcher('done', 'gpu-1', phase='Succeeded', gpu_request=True)]
    # a's launcher (its VMI a GPU VMI) and the one asking for an nvidia.com device whose VMI is not read any more
    assert up.launchers_left(pods, ['gpu-1'], vmis) == ['vms/virt-launcher-gone (gpu-1)', 'vms/virt-launcher-ua (gpu-1)']
    assert up.launchers_left(pods, ['gpu-2'], vmis) == ['vms/virt-launcher-ub (gpu-2)']
    # a pod being deleted still runs its guest until it is gone
    deleting = launcher('ua', 'gpu-1')
    deleting['metadata']['deletionTimestamp'] = '2026-11-29T14:00:00Z'
    assert up.launchers_left([deleting], ['gpu-1'], vmis) == ['vms/virt-launcher-ua (gpu-1)']
    assert up.launchers_left([pod('p', 'ds', 'gpu-1', 'h')], ['gpu-1'], vmis) == []


# item: run strategies ------------------------------------------------------------------------------------------
def test_a_once_vm_is_said_to_start_again_and_manual_left_stopped():
    # kubevirt vm.go: RunStrategyOnce starts a VMI when there is none, so writing Once back boots the VM
    once = plan([vmi('db', 'gpu-1')], [vm('db', 'Once')], vm_policy='stop')['nodes'][0]['vms'][0]['action']
    assert once == 'stop (runStrategy Halted), start again after (runStrategy Once)'
    manual = plan([vmi('db', 'gpu-1')], [vm('db', 'Manual')], vm_policy='stop')['nodes'][0]['vms'][0]['action']
    assert manual.startswith('stop (runStrategy Halted); left stopped after: its run strategy Manual')


def test_stop_of_a_wait_as_receiver_vm_is_refused_and_wait_is_not():
    # vm.go RunStrategyWaitAsReceiver: a VM waiting to receive a live migration; Halted would break that and
    # restore.yml gives back only the strategies the stop policy sets aside (RESTORABLE)
    p = plan([vmi('db', 'gpu-1')], [vm('db', 'WaitAsReceiver')], vm_policy='stop')
    assert not p['ok'] and p['nodes'][0]['vms'][0]['action'] == 'refused'
    assert any('vms/db with runStrategy WaitAsReceiver' in r and "upgrade_vm_policies['vms/db']" in r
               for r in p['refusals']), p['refusals']
    assert plan([vmi('db', 'gpu-1')], [vm('db', 'WaitAsReceiver')], vm_policy='wait')['ok']
    assert 'WaitAsReceiver' not in up.RESTORABLE and set(up.RESTARTING) <= set(up.RESTORABLE)


# item: restore only VMs whose node is released -------------------------------------------------------------------
def stopped(name, strategy='Always', on='gpu-1'):
    obj = vm(name, 'Halted')
    obj['metadata']['annotations'] = {up.STOPPED_BY: strategy}
    if on:
        obj['metadata']['annotations'][up.STOPPED_ON] = on
    return obj


def test_restorable_waits_for_the_vms_own_node_to_be_released():
    cordoned = node('gpu-2', unschedulable=True, annotations={up.CORDONED_BY: 'true'})
    vms = [stopped('a', on='gpu-1'), stopped('b', on='gpu-2'), stopped('c', 'running', on='gpu-1'),
           stopped('bad', 'WaitAsReceiver'), stopped('odd', 'something'), vm('plain')]
    names = [v['metadata']['name'] for v in up.restorable(vms, [node('gpu-1'), cordoned])]
    assert names == ['a', 'c']
    assert [v['metadata']['name'] for v in up.restorable(vms, [node('gpu-1'), node('gpu-2')])] == ['a', 'b', 'c']
    # a VM stopped without the node annotation (an earlier release of the role) waits until no node is cordoned
    legacy = stopped('old', on=None)
    assert up.restorable([legacy], [node('gpu-1'), cordoned]) == []
    assert up.restorable([legacy], [node('gpu-1')]) == [legacy]


# item: settle against revisions read before the batch's pods -----------------------------------------------------
def test_a_pod_of_a_revision_newer_than_the_batch_read_counts_as_current():
    c = cluster(old_on=('gpu-1',))
    args = (c['daemonsets'], c['revisions'])
    # the operator changed the template again during the batch: the DaemonSet controller made the pod from a
    # revision the batch did not read (kubernetes pkg/controller/daemon: a new pod gets the newest revision's hash)
    newer = pod('vgm-newer', 'nvidia-vgpu-manager-daemonset', 'gpu-1', 'newer')
    newer['status'] = {'conditions': [{'type': 'Ready', 'status': 'True'}]}
    assert up.settle('gpu-1', None, [newer], *args, ['nvidia-vgpu-manager-daemonset'], {}) == []
    # one of a revision older than the newest read is not
    older = pod('vgm-old', 'nvidia-vgpu-manager-daemonset', 'gpu-1', 'old')
    older['status'] = newer['status']
    assert up.settle('gpu-1', None, [older], *args, ['nvidia-vgpu-manager-daemonset'], {}) == [
        'nvidia-vgpu-manager-daemonset has no pod of its newest revision on the node yet']


# item: has the new operator release taken over -------------------------------------------------------------------
def deployment(image='nvcr.io/nvidia/gpu-operator:v26.7.1', generation=2, observed=2, updated=1, available=1,
               total=1):
    return {'metadata': {'name': 'gpu-operator', 'generation': generation},
            'spec': {'replicas': 1, 'selector': {'matchLabels': {'app': 'gpu-operator'}},
                     'template': {'spec': {'containers': [{'name': 'gpu-operator', 'image': image}]}}},
            'status': {'observedGeneration': observed, 'replicas': total, 'updatedReplicas': updated,
                       'availableReplicas': available}}


def operator_pod(name, image='nvcr.io/nvidia/gpu-operator:v26.7.1', ready=True):
    return {'metadata': {'name': name, 'labels': {'app': 'gpu-operator'}},
            'spec': {'containers': [{'name': 'gpu-operator', 'image': image}]},
            'status': {'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}]}}


def lease(holder, acquired='2026-11-29T14:00:05.123456Z'):
    # controller-runtime's identity: <hostname>_<uuid> (pkg/leaderelection/leader_election.go NewResourceLock)
    return {'metadata': {'name': '53822513.nvidia.com'},
            'spec': {'holderIdentity': holder + '_0b6f2c4e-3d5a-4c1e-9f7b-2a8d6e4c1b3a', 'acquireTime': acquired}}


def test_the_operator_deployment_must_have_rolled_out_its_current_template():
    assert ur.pending('deployment', [deployment()]) == []
    assert ur.pending('deployment', []) == ['the operator Deployment gpu-operator is not there']
    assert 'not observed its generation 2' in ur.pending('deployment', [deployment(observed=1)])[0]
    assert '0 of 1 replicas' in ur.pending('deployment', [deployment(updated=0)])[0]
    # the old pod still counted (terminating): not rolled out yet
    assert ur.pending('deployment', [deployment(total=2)])


def test_the_leader_lease_must_be_held_by_a_ready_pod_of_the_new_template():
    dep = [deployment()]
    new, old = operator_pod('gpu-operator-7d9-new'), operator_pod('gpu-operator-5c4-old', image='x:v26.7.0')
    assert ur.pending('leader', [lease('gpu-operator-7d9-new')], [new, old], dep) == []
    assert 'held by gpu-operator-5c4-old, not by a pod of the new' in ur.pending(
        'leader', [lease('gpu-operator-5c4-old')], [new, old], dep)[0]
    assert 'is not Ready' in ur.pending('leader', [lease('p')], [operator_pod('p', ready=False)], dep)[0]
    assert 'has no holder' in ur.pending('leader', [], [new], dep)[0]
    # a pod whose name is only a prefix of the holder's hostname is not the holder
    assert ur.pending('leader', [lease('gpu-operator-7d9-new2')], [new], dep)


def test_the_cluster_policy_must_show_a_change_since_the_lease_was_taken():
    taken = [lease('p', acquired='2026-11-29T14:00:05.123456Z')]

    def policy(moved):
        # internal/conditions/clusterpolicy.go: Ready and Error conditions, lastTransitionTime moved on a flip
        return {'status': {'conditions': [{'type': 'Ready', 'status': 'False', 'lastTransitionTime': moved},
                                          {'type': 'Error', 'status': 'True', 'lastTransitionTime': moved}]}}
    assert ur.pending('reconciled', [policy('2026-11-29T14:00:07Z')], leases=taken) == []
    # the same second as the lease (conditions are whole seconds)
    assert ur.pending('reconciled', [policy('2026-11-29T14:00:05Z')], leases=taken) == []
    assert ur.pending('reconciled', [policy('2026-11-29T13:59:00Z')], leases=taken) == [
        'no ClusterPolicy condition has changed since the new operator took the lease (2026-11-29T14:00:05Z)']
    assert ur.pending('reconciled', [], leases=[]) == [
        'the operator leader lease 53822513.nvidia.com has no acquireTime']


def test_every_daemonset_must_have_observed_its_newest_template():
    def daemonset(name, generation, observed):
        return {'metadata': {'name': name, 'generation': generation}, 'status': {'observedGeneration': observed}}
    assert ur.pending('daemonsets', [daemonset('a', 3, 3), daemonset('b', 2, 2)]) == []
    assert ur.pending('daemonsets', [daemonset('a', 3, 2), {'metadata': {'name': 'b', 'generation': 1}}]) == [
        'DaemonSet a has not observed its generation 3 yet', 'DaemonSet b has not observed its generation 1 yet']
    with pytest.raises(ValueError):
        ur.pending('nope', [])


_junk = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                     max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(_junk, max_size=3), st.lists(_junk, max_size=3), st.lists(_junk, max_size=3))
def test_junk_never_crashes_the_waits(a, b, c):
    assert isinstance(up.vms_left(a + [vmi('db', 'gpu-1')], ['gpu-1'], b), list)
    assert isinstance(up.launchers_left(b + [launcher('u', 'gpu-1')], ['gpu-1'], a), list)
    assert isinstance(up.restorable(a + [stopped('x')], c), list)
    for step in ur.STEPS:
        assert isinstance(ur.pending(step, a, b, c, c), list)


def test_restorable_takes_each_strategy_the_stop_policy_sets_aside_and_looks_past_one_it_does_not():
    # every value batch.yml may write (RESTORABLE, "running" for spec.running) is given back, whatever stands before
    # it in the list; a VM whose node annotation is empty waits like one without it while a node is cordoned
    cordoned = node('gpu-2', unschedulable=True, annotations={up.CORDONED_BY: 'true'})
    for strategy in ('Always', 'RerunOnFailure', 'Manual', 'Halted', 'Once', 'running'):
        vms = [stopped('odd', 'something'), stopped('x', strategy)]
        assert [v['metadata']['name'] for v in up.restorable(vms, [node('gpu-1')])] == ['x'], strategy
    empty = stopped('empty')
    empty['metadata']['annotations'][up.STOPPED_ON] = ''
    assert up.restorable([empty], [node('gpu-1'), cordoned]) == []
    assert up.restorable([empty], [node('gpu-1')]) == [empty]


def test_a_vm_stopped_by_spec_running_false_has_the_run_strategy_halted():
    # spec.running (the field runStrategy replaced): false is Halted, true is Always (kubevirt types.go)
    off, on = vm('off', 'Always'), vm('on', 'Always')
    for obj, running in ((off, False), (on, True)):
        del obj['spec']['runStrategy']
        obj['spec']['running'] = running
    assert (up._run_strategy(off), up._run_strategy(on)) == ('Halted', 'Always')
