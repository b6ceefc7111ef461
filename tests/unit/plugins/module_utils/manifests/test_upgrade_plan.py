# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade planner: versions, node order, GPU VMs per node and their policy, refusals - on objects shaped as
the API server returns them, and on anything else (hypothesis) without a crash."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import upgrade_settings

NS = 'nvidia-gpu-operator'


def node(name, unschedulable=False, ready=True, labels=None, annotations=None, alloc=None):
    return {'metadata': {'name': name, 'labels': labels or {}, 'annotations': annotations or {}},
            'spec': {'unschedulable': True} if unschedulable else {},
            'status': {'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}],
                       'allocatable': dict({'cpu': '8'}, **(alloc or {'nvidia.com/NVIDIA_A10-12Q': '2'}))}}


def ds(name, uid):
    return {'metadata': {'name': name, 'namespace': NS, 'uid': uid}, 'spec': {'updateStrategy': {'type': 'OnDelete'}}}


def rev(ds_name, uid, number, hash_):
    # a ControllerRevision as the DaemonSet controller writes it: owned by the DaemonSet, labelled with its hash
    return {'metadata': {'name': '%s-%s' % (ds_name, hash_), 'namespace': NS,
                         'labels': {'controller-revision-hash': hash_},
                         'ownerReferences': [{'kind': 'DaemonSet', 'name': ds_name, 'uid': uid}]},
            'revision': number}


def pod(name, ds_name, node_name, hash_, ds_uid='u1'):
    # owned by its DaemonSet's uid, as the DaemonSet controller sets it (the API server keeps ownerReferences as given)
    return {'metadata': {'name': name, 'namespace': NS, 'labels': {'controller-revision-hash': hash_},
                         'ownerReferences': [{'kind': 'DaemonSet', 'name': ds_name, 'uid': ds_uid}]},
            'spec': {'nodeName': node_name}}


def vm_uid(name, namespace='vms'):
    return 'uid-%s-%s' % (namespace, name)


def vmi(name, node_name, gpu=True, vm=True, namespace='vms', owner_uid=None):
    meta = {'name': name, 'namespace': namespace}
    if vm:
        # virt-controller sets the VM as the VMI's controller owner, by name and uid
        meta['ownerReferences'] = [{'kind': 'VirtualMachine', 'name': name,
                                    'uid': owner_uid or vm_uid(name, namespace)}]
    devices = {'gpus': [{'name': 'g', 'deviceName': 'nvidia.com/NVIDIA_A10-12Q'}]} if gpu else {}
    return {'metadata': meta, 'spec': {'domain': {'devices': devices}},
            'status': {'nodeName': node_name, 'phase': 'Running'}}


def vm(name, strategy='Always', namespace='vms', uid=None):
    spec = {'running': True} if strategy == 'running' else {'runStrategy': strategy}
    return {'metadata': {'name': name, 'namespace': namespace, 'uid': uid or vm_uid(name, namespace)}, 'spec': spec}


def cluster(old_on=('gpu-1', 'gpu-2')):
    """Two GPU nodes; the vGPU Manager DaemonSet has a new revision (new) and the pods on ``old_on`` run the old."""
    pods = [pod('vgm-%s' % n, 'nvidia-vgpu-manager-daemonset', n, 'old' if n in old_on else 'new')
            for n in ('gpu-1', 'gpu-2')]
    return dict(nodes=[node('gpu-1'), node('gpu-2')], pods=pods,
                daemonsets=[ds('nvidia-vgpu-manager-daemonset', 'u1')],
                revisions=[rev('nvidia-vgpu-manager-daemonset', 'u1', 1, 'old'),
                           rev('nvidia-vgpu-manager-daemonset', 'u1', 2, 'new')])


TARGETS = {'gpu_operator': 'gpu_operator_version', 'vgpu_manager': 'vgpu_manager_version',
           'kubevirt': 'kubevirt_version'}


def settings_and_reads(kw):
    """``kw`` split into the upgrade settings (a field of model/upgrade_settings.py by its name; ``target``, the
    three target versions as one dict) and the plan's other arguments (the cluster's reads). ``current`` is {} unless
    given: the versions are compared, as the role's first plan does."""
    kw = dict(kw)
    fields = dict((TARGETS[k], v) for k, v in (kw.pop('target', None) or {}).items())
    for name in list(kw):
        if name in [f.name for f in upgrade_settings.FIELDS]:
            fields[name] = kw.pop(name)
    if kw.get('olm') is not None:
        fields.setdefault('gpu_operator_install', 'olm')
    kw.setdefault('current', {})
    return upgrade_settings.build(fields), kw


def plan(vmis=(), vms=(), names=('gpu-1', 'gpu-2'), **kw):
    c = kw.pop('cluster', None) or cluster()
    try:
        settings, reads = settings_and_reads(kw)
    except upgrade_settings.ValidationError as exc:
        raise up.PlanError(str(exc))
    return up.plan(settings, list(names), c['nodes'], c['pods'], c['daemonsets'], c['revisions'], list(vmis),
                   list(vms), **reads)


def test_two_nodes_with_old_pods_roll_one_at_a_time_in_inventory_order():
    p = plan(names=('gpu-2', 'gpu-1'))
    assert p['ok'] and p['batches'] == [['gpu-2'], ['gpu-1']]
    assert p['nodes'][0]['stale_pods'] == [{'name': 'vgm-gpu-2', 'daemonset': 'nvidia-vgpu-manager-daemonset'}]
    assert p['nodes'][0]['gpu_allocatable'] == {'nvidia.com/NVIDIA_A10-12Q': '2'}
    assert plan(serial=2)['batches'] == [['gpu-1', 'gpu-2']]


def test_nodes_already_on_the_newest_revision_are_left_alone():
    p = plan(cluster=cluster(old_on=('gpu-2',)))
    assert p['batches'] == [['gpu-2']]
    assert 'node gpu-1: nothing to replace' in p['summary']
    assert plan(cluster=cluster(old_on=()))['batches'] == []


@pytest.mark.parametrize('strategy, restarts', [('Always', True), ('RerunOnFailure', True), ('running', True),
                                                ('Manual', False)])
def test_stop_policy_says_whether_the_vm_comes_back(strategy, restarts):
    p = plan([vmi('db', 'gpu-1')], [vm('db', strategy)], vm_policy='stop')
    row = p['nodes'][0]['vms'][0]
    assert p['ok'] and row['vm'] == 'db' and row['policy'] == 'stop'
    assert ('start again after' in row['action']) is restarts


def test_refuse_policy_names_the_node_and_the_vm():
    p = plan([vmi('db', 'gpu-1'), vmi('web', 'gpu-2')], [vm('db'), vm('web')], vm_policy='refuse')
    assert not p['ok']
    assert any('node gpu-1 runs the GPU VM vms/db' in r for r in p['refusals'])
    assert any('vms/web' in r for r in p['refusals'])
    assert any(line.startswith('REFUSED: node gpu-1') for line in p['summary'])


def test_per_vm_policy_overrides_the_default():
    p = plan([vmi('db', 'gpu-1'), vmi('web', 'gpu-2')], [vm('db'), vm('web')], vm_policy='refuse',
             vm_policies={'vms/db': 'wait', 'vms/web': 'stop'})
    assert p['ok'], p['refusals']
    assert [v['policy'] for n in p['nodes'] for v in n['vms']] == ['wait', 'stop']


def test_stop_of_a_vmi_without_a_vm_is_refused_and_non_gpu_vmis_are_ignored():
    p = plan([vmi('bare', 'gpu-1', vm=False), vmi('cpu-only', 'gpu-2', gpu=False)], [], vm_policy='stop')
    assert p['refusals'] == [r for r in p['refusals'] if 'vms/bare' in r] and len(p['refusals']) == 1
    assert p['nodes'][1]['vms'] == []


def test_a_vm_on_a_node_with_nothing_to_replace_is_not_touched():
    p = plan([vmi('db', 'gpu-1')], [vm('db')], vm_policy='refuse', cluster=cluster(old_on=('gpu-2',)))
    assert p['ok'] and p['nodes'][0]['vms'] == []


@pytest.mark.parametrize('state, needle', [
    (dict(unschedulable=True), 'already cordoned by someone else'),
    (dict(ready=False), 'not Ready'),
    (dict(labels={'nvidia.com/gpu-driver-upgrade-state': 'upgrade-failed'}), 'upgrade-failed'),
])
def test_a_node_not_fit_to_roll_is_refused(state, needle):
    c = cluster()
    c['nodes'][1] = node('gpu-2', **state)
    p = plan(cluster=c)
    assert not p['ok'] and any(needle in r and 'gpu-2' in r for r in p['refusals'])


def test_a_node_cordoned_by_an_earlier_run_is_resumed():
    c = cluster(old_on=())
    c['nodes'][0] = node('gpu-1', unschedulable=True, annotations={up.CORDONED_BY: 'true'})
    p = plan(cluster=c)
    assert p['ok'] and p['batches'] == [['gpu-1']]


def test_an_unknown_node_is_refused():
    assert 'node gpu-9 (upgrade_nodes) does not exist' in ' '.join(plan(names=('gpu-9',))['refusals'])


@pytest.mark.parametrize('cur, tgt, needle', [
    ('v1.7.2', 'v1.9.0', 'skips a minor version'),
    ('v1.9.0', 'v1.8.3', 'downgrade'),
    ('v1.9.1', 'v2.0.0', 'skips a minor version'),
])
def test_kubevirt_one_minor_at_a_time(cur, tgt, needle):
    # KubeVirt supports updates from the previous minor release only (kubevirt/user-guide
    # docs/cluster_admin/updating_and_deletion.md: "Updating is only supported from N-1 to N release", e.g. v1.6.3 to
    # v1.7.0 but not v1.5.2 to v1.7.0); no downgrade
    p = plan(current={'kubevirt': cur}, target={'kubevirt': tgt})
    assert any(needle in r for r in p['refusals'])
    assert not p['ok']


def kubevirt_cr(owned):
    import json
    return {'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt',
                         'annotations': {'gpuvirt.provision/owned-permitted-host-devices': json.dumps(owned)}},
            'status': {'observedKubeVirtVersion': 'v1.7.2'}}


# The mdev switch KubeVirt takes: the DisableMDEVConfiguration gate up to v1.7, spec.configuration.
# mediatedDevicesConfiguration.enabled from v1.8.0 (kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/
# types.go MediatedDevicesConfiguration.Enabled, "Replaces the deprecated DisableMDEVConfiguration feature gate",
# there from v1.8.0-beta.0 and absent in v1.7.x; pkg/virt-config/featuregate/inactive.go registers the gate as
# Deprecated since v1.8.0)
@pytest.mark.parametrize('owned, cur, tgt, stale, needle', [
    ({'featureGates': ['DisableMDEVConfiguration']}, 'v1.7.2', 'v1.8.0', True,
     'rendered again after the roll for KubeVirt v1.8.0: the DisableMDEVConfiguration gate replaced by '
     'mediatedDevicesConfiguration.enabled: false'),
    ({'featureGates': ['DisableMDEVConfiguration']}, 'v1.7.2', 'v1.7.3', False,
     'the DisableMDEVConfiguration gate, as KubeVirt v1.7.3 takes it (no change)'),
    ({'mdevConfigurationDisabled': True}, 'v1.8.1', 'v1.9.0', False,
     'mediatedDevicesConfiguration.enabled: false, as KubeVirt v1.9.0 takes it (no change)'),
    # the user upgraded KubeVirt before this run, the configuration was not rendered since: stale now
    ({'featureGates': ['DisableMDEVConfiguration']}, 'v1.8.2', '', True, 'replaced by mediatedDevicesConfiguration'),
    ({}, 'v1.7.2', 'v1.8.0', False, 'holds no mdev switch this collection wrote'),
])
def test_the_plan_says_what_rendering_the_kubevirt_configuration_again_changes(owned, cur, tgt, stale, needle):
    p = plan(current={'kubevirt': cur}, target={'kubevirt': tgt}, kubevirt_cr=kubevirt_cr(owned))
    assert p['ok'] and p['kubevirt_config']['stale'] is stale
    assert any(needle in line for line in p['summary'] if line.startswith('kubevirt config: ')), p['summary']


def test_a_kubevirt_target_without_a_kubevirt_cr_is_refused():
    p = plan(current={'kubevirt': ''}, target={'kubevirt': 'v1.8.0'}, kubevirt_cr={})
    assert any('upgrade_kubevirt_version is v1.8.0 but the cluster has no KubeVirt CR' in r for r in p['refusals'])
    assert plan(current={'kubevirt': 'v1.7.2'}, target={'kubevirt': 'v1.8.0'}, kubevirt_cr=kubevirt_cr({}))['ok']


def test_the_kubevirt_configuration_line_under_hyperconverged_and_without_a_cr():
    p = plan(current={'kubevirt': 'v1.7.2'}, target={'kubevirt': 'v1.8.0'}, kubevirt_cr={}, kubevirt_config='hco')
    assert 'HyperConverged is rendered again after the roll' in p['kubevirt_config']['line']
    assert plan(kubevirt_cr=None)['kubevirt_config']['line'] == ('kubevirt config: no KubeVirt CR read; nothing to '
                                                                 'render again')


def test_kubevirt_crossing_1_8_notes_the_re_render():
    p = plan(current={'kubevirt': 'v1.7.2'}, target={'kubevirt': 'v1.8.0'})
    assert p['ok'] and any('mediatedDevicesConfiguration' in n for n in p['notes'])
    assert 'kubevirt: v1.7.2 -> v1.8.0' in p['summary']


def test_vendor_vfio_needs_kubevirt_1_9():
    p = plan(current={'kubevirt': 'v1.8.2'}, vendor_vfio=True)
    assert any('1.9.0' in r for r in p['refusals'])
    assert plan(current={'kubevirt': 'v1.8.2'}, target={'kubevirt': 'v1.9.0'}, vendor_vfio=True)['ok']


def test_vgpu_manager_branch_must_be_the_guests():
    p = plan(current={'vgpu_manager': '570.124.03'}, target={'vgpu_manager': '580.82.02'}, guest_driver_branch='570')
    assert any('branch 580 but the guests run branch 570' in r for r in p['refusals'])
    assert plan(current={'vgpu_manager': '580.65.05'}, target={'vgpu_manager': '580.82.02'}, guest_driver_branch='580')['ok']
    warned = plan(current={'vgpu_manager': '580.65.05'}, target={'vgpu_manager': '580.82.02'})
    assert any('upgrade_guest_driver_branch is not set' in w for w in warned['warnings'])


def test_missing_image_tags_are_refused_per_os_tag():
    p = plan(current={'vgpu_manager': '580.65.05'}, target={'vgpu_manager': '580.82.02'},
             os_tags=['rhcos4.18', 'ubuntu22.04'], image_tags=['580.82.02-rhcos4.18', '580.65.05-ubuntu22.04'])
    assert [r for r in p['refusals'] if 'image tag' in r] == [
        'the vGPU Manager image tag 580.82.02-ubuntu22.04 is not in the registry: build and push it first '
        '(playbooks/vgpu_image.yml with vgpu_manager_image_version 580.82.02)']


def test_gpu_operator_support_list_is_checked_when_given():
    kw = dict(current={'gpu_operator': 'v25.10.1', 'kubevirt': 'v1.8.2'}, target={'gpu_operator': 'v26.7.0'})
    p = plan(supports={'kubernetes': ['1.32', '1.33'], 'kubevirt': ['1.9']}, cluster_version='v1.31.4', **kw)
    assert any('kubernetes 1.31' in r for r in p['refusals']) and any('kubevirt 1.8' in r for r in p['refusals'])
    assert any('not checked' in w for w in plan(**kw)['warnings'])


@pytest.mark.parametrize('kw, needle', [
    (dict(serial=0), 'upgrade_serial'),
    (dict(vm_policy='drain'), 'upgrade_vm_policy'),
    (dict(vm_policies={'db': 'stop'}), 'upgrade_vm_policies'),
    (dict(target={'kubevirt': 'latest'}, current={'kubevirt': 'v1.8.0'}), 'upgrade_kubevirt_version'),
])
def test_bad_inventory_values_are_named(kw, needle):
    with pytest.raises(up.PlanError, match=needle):
        plan(**kw)


_junk = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
                     lambda inner: st.one_of(st.lists(inner, max_size=3),
                                             st.dictionaries(st.sampled_from(
                                                 ['metadata', 'spec', 'status', 'name', 'uid', 'labels', 'nodeName',
                                                  'ownerReferences', 'kind', 'revision', 'controller-revision-hash',
                                                  'domain', 'devices', 'gpus', 'runStrategy', 'conditions',
                                                  'type', 'unschedulable', 'allocatable']), inner, max_size=4)),
                     max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(_junk, max_size=3), st.lists(_junk, max_size=3), st.lists(_junk, max_size=3),
       st.lists(_junk, max_size=3), st.lists(_junk, max_size=3))
def test_malformed_cluster_objects_never_crash_the_planner(nodes, pods, revisions, vmis, vms):
    c = cluster()
    p = up.plan({'vm_policy': 'stop'}, ['gpu-1', 'gpu-2'], c['nodes'] + nodes, c['pods'] + pods, c['daemonsets'],
                c['revisions'] + revisions, vmis + [vmi('db', 'gpu-1')], vms + [vm('db')])
    assert isinstance(p['summary'], list)


def test_settle_names_what_keeps_a_node_cordoned():
    c = cluster(old_on=('gpu-1',))
    args = (c['daemonsets'], c['revisions'])
    # the old pod still there: not of the newest revision
    assert up.settle('gpu-1', None, c['pods'], *args, ['nvidia-vgpu-manager-daemonset'], {}) == [
        'nvidia-vgpu-manager-daemonset has no pod of its newest revision on the node yet']
    fresh = pod('vgm-new', 'nvidia-vgpu-manager-daemonset', 'gpu-1', 'new')
    assert up.settle('gpu-1', None, [fresh], *args, ['nvidia-vgpu-manager-daemonset'], {}) == [
        'nvidia-vgpu-manager-daemonset pod vgm-new is not Ready']
    fresh['status'] = {'conditions': [{'type': 'Ready', 'status': 'True'}]}
    assert up.settle('gpu-1', None, [fresh], *args, ['nvidia-vgpu-manager-daemonset'], {}) == []
    low = node('gpu-1', alloc={'nvidia.com/NVIDIA_A10-12Q': '0'})
    assert up.settle('gpu-1', low, [fresh], *args, [], {'nvidia.com/NVIDIA_A10-12Q': '2'}) == [
        'allocatable nvidia.com/NVIDIA_A10-12Q is 0, was 2 before the upgrade']
    assert up.settle('gpu-1', node('gpu-1'), [fresh], *args, [], {'nvidia.com/NVIDIA_A10-12Q': '2'}) == []


def test_a_cluster_policy_that_lets_the_operator_roll_by_itself_is_refused():
    rolling = {'spec': {'daemonsets': {'updateStrategy': 'RollingUpdate'}, 'driver': {'upgradePolicy': {}}}}
    assert any('daemonsets.updateStrategy RollingUpdate' in r for r in plan(cluster_policy=rolling)['refusals'])
    auto = {'spec': {'daemonsets': {'updateStrategy': 'OnDelete'}, 'driver': {'upgradePolicy': {'autoUpgrade': True}}}}
    assert any('autoUpgrade true' in r for r in plan(cluster_policy=auto)['refusals'])
    ours = {'spec': {'daemonsets': {'updateStrategy': 'OnDelete'}, 'driver': {'upgradePolicy': {'autoUpgrade': False}}}}
    assert plan(cluster_policy=ours)['ok']


def test_a_vmi_whose_vm_was_re_created_under_its_name_is_not_stopped_through_the_new_vm():
    # the VMI still names the old VM's uid: stopping the new VM would leave this VMI running on the node
    p = plan([vmi('db', 'gpu-1', owner_uid='uid-old')], [vm('db', uid='uid-new')], vm_policy='stop')
    assert not p['ok']
    assert any('vms/db' in r and 'no VirtualMachine owns' in r and 're-created' in r for r in p['refusals']), p
    # the same VMI and its own VM: stopped and started again
    p = plan([vmi('db', 'gpu-1', owner_uid='uid-new')], [vm('db', uid='uid-new')], vm_policy='stop')
    assert p['ok'], p['refusals']


def test_a_vm_of_another_namespace_with_the_owner_s_uid_is_not_the_owner():
    p = plan([vmi('db', 'gpu-1', owner_uid='shared')], [vm('db', namespace='other', uid='shared')], vm_policy='stop')
    assert not p['ok']


def test_a_pod_of_a_daemonset_deleted_and_re_created_under_its_name_is_not_this_roll_s():
    c = cluster()
    # gpu-1's pod belongs to an earlier DaemonSet of the same name (uid u0), gone: nothing of this roll to replace
    c['pods'][0] = pod('vgm-gpu-1', 'nvidia-vgpu-manager-daemonset', 'gpu-1', 'old', ds_uid='u0')
    p = plan(cluster=c)
    assert p['batches'] == [['gpu-2']], p['batches']


def test_the_validators_to_delete_are_this_operator_s_by_uid():
    c = cluster()
    c['daemonsets'].append(ds('nvidia-operator-validator', 'v1'))
    c['pods'] += [pod('validator-gpu-1', 'nvidia-operator-validator', 'gpu-1', 'h', ds_uid='v1'),
                  # named as the validator's DaemonSet, but owned by another object (an old one, or another kind)
                  pod('impostor-gpu-1', 'nvidia-operator-validator', 'gpu-1', 'h', ds_uid='other'),
                  pod('validator-gpu-2', 'nvidia-operator-validator', 'gpu-2', 'h', ds_uid='v1')]
    p = up.plan({'revalidate_daemonsets': ['nvidia-operator-validator']}, ['gpu-1'], c['nodes'], c['pods'],
                c['daemonsets'], c['revisions'], [], [])
    assert p['nodes'][0]['revalidate_pods'] == [{'name': 'validator-gpu-1', 'daemonset': 'nvidia-operator-validator'}]
    assert up.plan({}, ['gpu-1'], c['nodes'], c['pods'], c['daemonsets'], c['revisions'], [], [])['nodes'][0][
        'revalidate_pods'] == []


def _nvidia_driver(upgrade_policy):
    spec = {'driverType': 'gpu'}
    if upgrade_policy is not None:
        spec['upgradePolicy'] = upgrade_policy
    return {'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'NVIDIADriver', 'metadata': {'name': 'gpu-driver'},
            'spec': spec}


@pytest.mark.parametrize('policy, refused', [
    # the CSV's alm-examples NVIDIADriver (gpu-operator v26.7.0 bundle): autoUpgrade true
    ({'autoUpgrade': True, 'maxParallelUpgrades': 1}, True),
    # the v26.7.0 NVIDIADriver CRD: upgradePolicy.autoUpgrade "default: true", so an absent one rolls too
    ({'maxParallelUpgrades': 1}, True),
    (None, True),
    ({'autoUpgrade': False, 'maxParallelUpgrades': 1, 'maxUnavailable': '25%'}, False),
])
def test_a_live_nvidia_driver_that_lets_the_operator_roll_by_itself_is_refused(policy, refused):
    p = plan(nvidia_drivers=[_nvidia_driver(policy)])
    hits = [r for r in p['refusals'] if 'NVIDIADriver gpu-driver' in r and 'autoUpgrade true' in r]
    assert bool(hits) is refused and p['ok'] is not refused
    # malformed objects are skipped, never a crash
    assert plan(nvidia_drivers=['x', {'kind': 'Other'}, {'spec': 'x', 'kind': 'NVIDIADriver'}])['refusals'] != []


# the labels nodes.yml gives a vm-vgpu-vf node (docs/pools/vendor-vfio.md, "Node labels"; model/fleet.py operands_off)
VF_LABELS = {'nvidia.com/gpu.workload.config': 'vm-vgpu', 'nvidia.com/gpu.deploy.sandbox-device-plugin': 'false',
             'nvidia.com/gpu.deploy.vgpu-device-manager': 'false', 'nvidia.com/gpu.deploy.sandbox-validator': 'false'}


def vf_cluster(old_on=('gpu-1', 'gpu-2'), labels=None, annotations=None):
    c = cluster(old_on)
    c['nodes'] = [node('gpu-1', labels=dict(VF_LABELS if labels is None else labels), annotations=annotations),
                  node('gpu-2')]
    return c


VF_HOSTS = {'gpu-1': {'host': 'gpu-1.example.com', 'config': 'l40s'},
            'gpu-2': {'host': 'gpu-2.example.com', 'config': 'l40s'}}


def test_a_vendor_vfio_node_is_rolled_with_its_vf_profiles_set_again_on_its_inventory_host():
    # KubeVirt advertises a VF only once its nvidia/current_vgpu_type is set (kubevirt v1.9.0 pkg/virt-handler/
    # device-manager HasVGPUProfile); a new vGPU Manager pod reloads the driver and the VFs come back without one:
    # the roll gives them their profiles again on the node's host (the vgpu_vf role), then waits for the allocatable
    p = plan(cluster=vf_cluster(), vf_hosts=VF_HOSTS, vf_configs=['l40s'])
    assert p['ok'], p['refusals']
    assert [n['vf_reapply'] for n in p['nodes']] == [{'method': 'apply', 'host': 'gpu-1.example.com',
                                                      'config': 'l40s'}, None]
    assert ('  then give its VFs their vGPU profiles again: the vgpu_vf role on host gpu-1.example.com (vGPU config '
            'l40s)') in p['summary']
    # the fleet view names it (labels not written yet): the same
    p = plan(cluster=cluster(), vf_nodes=['gpu-2'], vf_hosts=VF_HOSTS, vf_configs=['l40s'])
    assert p['ok'] and p['nodes'][1]['vf_reapply']['method'] == 'apply'
    # a MachineConfig platform (OpenShift): the boot-time unit is restarted; the config is the MachineConfig's
    p = plan(cluster=vf_cluster(), vf_hosts={'gpu-1': {'host': 'gpu-1.example.com'}}, kernel_args='machineconfig')
    assert p['ok'] and p['nodes'][0]['vf_reapply']['method'] == 'restart'
    assert '  then give its VFs their vGPU profiles again: restart gpuvirt-vgpu-vf.service on host gpu-1.example.com' \
        in p['summary']


def test_a_vendor_vfio_node_the_roll_cannot_give_its_profiles_back_is_refused_naming_it():
    # no inventory host maps to the node (its labels say vendor VFIO): refused before any change
    p = plan(cluster=vf_cluster())
    (refusal,) = [r for r in p['refusals'] if 'vendor-specific VFIO' in r]
    assert refusal.startswith('node gpu-1 is a vendor-specific VFIO vGPU node') and 'gpu-2' not in refusal
    assert 'gpuvirt_node_name gpu-1' in refusal and 'upgrade_vgpu_vf_reapply' in refusal and not p['ok']
    assert [n['vendor_vfio'] for n in p['nodes']] == [True, False]
    # its vGPU config is none of gpu_operator_vgpu_configs (the role needs the counts): refused, naming both
    p = plan(cluster=vf_cluster(), vf_hosts=VF_HOSTS, vf_configs=['a10'])
    assert any('node gpu-1 (host gpu-1.example.com)' in r and 'its vGPU config "l40s" is not among '
               'gpu_operator_vgpu_configs (a10)' in r for r in p['refusals']), p['refusals']
    # mutation check: the same with the config present is fine
    assert plan(cluster=vf_cluster(), vf_hosts=VF_HOSTS, vf_configs=['a10', 'l40s'])['ok']


def test_a_vendor_vfio_node_with_the_users_reapply_is_rolled_with_a_warning():
    # upgrade_vgpu_vf_reapply true keeps its meaning: the user sets the profiles; the roll only waits
    p = plan(cluster=vf_cluster(), vf_reapply=True)
    assert p['ok'] and p['batches'] == [['gpu-1'], ['gpu-2']]
    assert p['nodes'][0]['vf_reapply'] == {'method': 'self', 'host': None, 'config': None}
    assert any('upgrade_vgpu_vf_reapply true' in w and 'gpu-1' in w for w in p['warnings'])


def test_a_vendor_vfio_node_with_nothing_to_replace_is_not_refused_but_a_resumed_one_is():
    assert plan(cluster=vf_cluster(old_on=('gpu-2',)))['ok']
    resumed = vf_cluster(old_on=(), annotations={up.CORDONED_BY: 'true'})
    resumed['nodes'][0]['spec'] = {'unschedulable': True}
    assert any('node gpu-1 is a vendor-specific VFIO vGPU node' in r for r in plan(cluster=resumed)['refusals'])
    assert plan(cluster=resumed, vf_hosts=VF_HOSTS, vf_configs=['l40s'])['nodes'][0]['vf_reapply']['method'] == 'apply'
    # an mdev vm-vgpu node (no operands_off labels) is rolled as before
    assert plan(cluster=vf_cluster(labels={'nvidia.com/gpu.workload.config': 'vm-vgpu'}))['ok']


def test_without_the_running_versions_nothing_is_compared_as_in_a_batch_s_plan():
    # a batch's plan (roles/upgrade tasks/batch_plan.yml) gets the whole settings but no running versions: the
    # targets are not compared again (the first plan did, against what ran), only the batch's nodes are planned
    settings = {'vgpu_manager_version': '580.82.02', 'image_tags': [], 'os_tags': ['ubuntu22.04'],
                'guest_driver_branch': '570', 'kubevirt_version': 'v1.9.0'}
    c = cluster()
    compared = up.plan(settings, ['gpu-1'], c['nodes'], c['pods'], c['daemonsets'], c['revisions'], [], [],
                       current={})
    assert not compared['ok'] and compared['warnings'] == []
    batch = up.plan(settings, ['gpu-1'], c['nodes'], c['pods'], c['daemonsets'], c['revisions'], [], [])
    assert batch['ok'] and batch['warnings'] == [] and batch['batches'] == [['gpu-1']], batch['refusals']
    assert all(not row['change'] for row in batch['versions'])


def test_without_the_running_versions_the_kubevirt_version_is_the_one_its_cr_reports():
    # the KubeVirt check after the roll (roles/upgrade tasks/kubevirt.yml): the version KubeVirt runs now
    cr = dict(kubevirt_cr({'featureGates': ['DisableMDEVConfiguration']}), status={'observedKubeVirtVersion': 'v1.8.0'})
    p = up.plan({'kubevirt_version': 'v1.9.0'}, [], [], [], [], [], [], [], kubevirt_cr=cr)
    assert p['kubevirt_config']['version'] == 'v1.8.0' and p['kubevirt_config']['stale']


def test_the_reads_of_the_other_platform_s_operator_step_are_refused():
    with pytest.raises(up.PlanError, match='the reads of the olm operator step.*installed by helm'):
        up.plan({}, [], [], [], [], [], [], [], olm={'subscription': None, 'install_plans': []})
    with pytest.raises(up.PlanError, match='the reads of the helm operator step.*installed by olm'):
        up.plan({'gpu_operator_install': 'olm'}, [], [], [], [], [], [], [], helm={})
