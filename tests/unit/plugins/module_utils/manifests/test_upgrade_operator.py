# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OLM operator step of an upgrade: which InstallPlan is approved, and every refusal, on objects shaped as
OLM writes them (operator-framework/api v0.45.0 Subscription / InstallPlan), and on anything else without a crash."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_operator as uo
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

NS = 'nvidia-gpu-operator'
OLD, NEW, NEWER = 'gpu-operator-certified.v26.7.0', 'gpu-operator-certified.v26.7.1', 'gpu-operator-certified.v26.7.2'


def subscription(installed=OLD, approval='Manual', ref='install-abc', current=NEW, channel='v26.7'):
    # the status OLM's catalog operator writes for a Manual Subscription with an upgrade waiting (UpgradePending)
    status = {'installedCSV': installed, 'currentCSV': current, 'state': 'UpgradePending'}
    if ref:
        status['installPlanRef'] = {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'InstallPlan',
                                    'name': ref, 'namespace': NS}
    return {'metadata': {'name': 'gpu-operator-certified', 'namespace': NS},
            'spec': {'channel': channel, 'installPlanApproval': approval, 'name': 'gpu-operator-certified'},
            'status': status}


def install_plan(name='install-abc', csv=NEW, approved=False, uid='11111111-2222-3333-4444-555555555555',
                 others=(), phase=None, created='2026-11-24T00:00:00Z'):
    # OLM lists the CSVs a plan installs in spec.clusterServiceVersionNames (required: operator-framework/api v0.45.0
    # crds/operators.coreos.com_installplans.yaml); the whole namespace's, since OLM resolves a namespace at once
    return {'metadata': {'name': name, 'namespace': NS, 'uid': uid, 'resourceVersion': '812',
                         'creationTimestamp': created},
            'spec': {'approval': 'Manual', 'approved': approved, 'clusterServiceVersionNames': list(others) + [csv]},
            'status': {'phase': phase or ('Installing' if approved else 'RequiresApproval')}}


def csv(name=NEW, phase='Succeeded'):
    # a ClusterServiceVersion as OLM reports it (operator-framework/api v0.45.0 clusterserviceversion_types.go
    # ClusterServiceVersionPhase: Pending, InstallReady, Installing, Succeeded, Failed, ...)
    return {'metadata': {'name': name, 'namespace': NS}, 'status': {'phase': phase}}


def step(sub=None, plans=None, target='v26.7.1', target_csv=None):
    return uo.olm_step({'gpu_operator_version': target, 'gpu_operator_namespace': NS},
                       subscription() if sub is None else sub, [install_plan()] if plans is None else plans,
                       csv=target_csv)


def test_the_pending_plan_for_the_target_is_approved_with_its_uid_and_resource_version():
    out = step()
    assert out['refusals'] == []
    assert out['action'] == 'approve'
    assert out['plan'] == {'name': 'install-abc', 'uid': '11111111-2222-3333-4444-555555555555',
                           'resource_version': '812', 'csv': NEW}
    assert out['lines'] == ['operator: approve InstallPlan install-abc (%s -> %s), wait for the CSV to succeed '
                            '(upgrade_operator_timeout), then plan the roll again with the new DaemonSets' % (OLD, NEW)]


def test_a_target_without_the_v_is_the_same_csv():
    assert step(target='26.7.1')['action'] == 'approve'


def test_an_approved_plan_not_installed_yet_is_waited_for_not_approved_again():
    out = step(plans=[install_plan(approved=True)])
    assert (out['action'], out['refusals']) == ('wait', [])


def test_the_target_installed_is_nothing_to_do_whatever_the_approval():
    # a second run: the Subscription reports the target as installed and its CSV has succeeded; no plan is looked at
    out = step(sub=subscription(installed=NEW, approval='Automatic', ref=None), plans=[], target_csv=csv())
    assert (out['action'], out['refusals'], out['plan']) == ('none', [], None)


@pytest.mark.parametrize('phase', ['Pending', 'InstallReady', 'Installing', 'Failed', 'Replacing', ''])
def test_the_target_installed_but_its_csv_not_succeeded_is_waited_for(phase):
    # OLM's catalog operator sets installedCSV once the InstallPlan has created the CSV, before the CSV has installed:
    # a run stopped during the install finds the target "installed" with its CSV still Installing (or Failed, which
    # OLM retries: operator.yml's failed-polls rule); it waits for the CSV again, with no InstallPlan to follow
    out = step(sub=subscription(installed=NEW, ref=None), plans=[], target_csv=csv(phase=phase))
    assert (out['action'], out['refusals'], out['plan']) == ('wait', [], None)
    assert out['lines'] == ['operator: %s is installed (the target) but its CSV is %s; wait for it to succeed '
                            '(upgrade_operator_timeout), then plan the roll again with the new DaemonSets'
                            % (NEW, 'in phase %s' % phase if phase else 'not found in namespace %s' % NS)]


def test_the_target_installed_without_its_csv_or_with_another_csv_is_waited_for():
    for other in (None, csv(name=OLD), {'status': {'phase': 'Succeeded'}}):
        out = step(sub=subscription(installed=NEW, ref=None), plans=[], target_csv=other)
        assert (out['action'], out['plan']) == ('wait', None), other
        assert 'its CSV is not found in namespace %s' % NS in out['lines'][0]


def test_no_target_is_no_step():
    assert step(target='') == {'action': 'none', 'installed': '', 'target': '', 'plan': None, 'refusals': [],
                               'lines': []}


def test_automatic_approval_is_refused_naming_the_variable():
    out = step(sub=subscription(approval='Automatic'))
    assert out['action'] == 'none' and out['plan'] is None
    assert out['refusals'] == [
        'Subscription nvidia-gpu-operator/gpu-operator-certified has installPlanApproval Automatic: OLM installs each '
        'new CSV of channel v26.7 as soon as its catalog offers it, so the GPU Operator would upgrade by itself, '
        'outside this plan; set gpu_operator_install_plan_approval to Manual, run playbooks/operator.yml, then run '
        'playbooks/upgrade.yml again']


def test_no_approval_field_is_olms_default_automatic():
    sub = subscription()
    del sub['spec']['installPlanApproval']
    assert 'installPlanApproval Automatic' in step(sub=sub)['refusals'][0]


def test_a_pending_plan_for_another_csv_is_refused_naming_both():
    out = step(plans=[install_plan(csv=NEWER)])
    assert out['action'] == 'none'
    assert out['refusals'] == [
        'the InstallPlan nvidia-gpu-operator/install-abc of Subscription nvidia-gpu-operator/gpu-operator-certified '
        'installs %s, not %s (upgrade_gpu_operator_version v26.7.1): approving it would install another release. Set '
        'upgrade_gpu_operator_version to v26.7.2 to install that one, or wait until OLM plans %s' % (NEWER, NEW, NEW)]


def test_no_pending_plan_says_to_change_the_channel():
    # the referenced plan is the one that installed the current CSV: nothing waits
    out = step(sub=subscription(current=OLD), plans=[install_plan(csv=OLD, approved=True)])
    assert out['action'] == 'none'
    (why,) = out['refusals']
    assert why.startswith('no InstallPlan of Subscription nvidia-gpu-operator/gpu-operator-certified installs %s' % NEW)
    assert 'set gpu_operator_channel to the channel that holds %s' % NEW in why
    assert 'startingCSV chooses the first install only' in why


def test_without_a_reference_the_newest_plan_not_done_is_taken():
    # the plan that installed OLD is Complete (done), an older one for NEW Failed: neither is looked at
    # (operator-framework/api v0.45.0 installplan_types.go InstallPlanPhaseComplete / InstallPlanPhaseFailed)
    done = install_plan(name='install-x', csv=OLD, approved=True, phase='Complete', created='2026-11-25T00:00:00Z')
    failed = install_plan(name='install-f', phase='Failed', created='2026-11-26T00:00:00Z')
    out = step(sub=subscription(ref=None), plans=[done, failed, install_plan(name='install-y')])
    assert (out['action'], out['plan']['name'], out['refusals']) == ('approve', 'install-y', [])
    # of two live plans the newest (metadata.creationTimestamp) is what OLM installs next: here one for NEWER,
    # so the target's older plan is not approved
    newer = install_plan(name='install-z', csv=NEWER, created='2026-11-27T00:00:00Z')
    out = step(sub=subscription(ref=None), plans=[install_plan(name='install-y'), newer])
    assert out['plan']['name'] == 'install-z' and 'approving it would install another release' in out['refusals'][0]
    out = step(sub=subscription(ref=None), plans=[newer, install_plan(name='install-y', created='2026-11-28T00:00:00Z')])
    assert (out['action'], out['plan']['name']) == ('approve', 'install-y')


def test_a_plan_that_also_installs_other_operators_is_refused_naming_them():
    # OLM's catalog operator resolves every Subscription of a namespace into one InstallPlan
    # (operator-framework/operator-lifecycle-manager pkg/controller/operators/catalog/operator.go
    # syncResolvingNamespace): approving it would upgrade the other operator too
    out = step(plans=[install_plan(others=['other-operator.v2.0.0'])])
    assert out['action'] == 'none'
    (why,) = out['refusals']
    assert 'installs other-operator.v2.0.0 besides %s' % NEW in why and 'one plan' in why


def test_a_referenced_plan_in_phase_failed_is_refused_with_its_message():
    plan = install_plan(phase='Failed')
    plan['status']['conditions'] = [{'type': 'Installed', 'status': 'False', 'reason': 'InstallComponentFailed',
                                     'message': 'error creating csv gpu-operator-certified.v26.7.1: forbidden'}]
    out = step(plans=[plan])
    assert out['action'] == 'none'
    (why,) = out['refusals']
    assert 'install-abc' in why and 'phase Failed (error creating csv' in why


def test_a_reference_to_a_deleted_plan_falls_back_to_the_plan_for_the_target():
    out = step(sub=subscription(ref='install-gone'), plans=[install_plan(name='install-y')])
    assert (out['action'], out['plan']['name']) == ('approve', 'install-y')


def test_a_downgrade_is_refused():
    out = step(target='v26.3.0')
    assert out['action'] == 'none'
    assert 'OLM does not downgrade an installed CSV' in out['refusals'][0]


def test_no_subscription_is_refused():
    out = uo.olm_step({'gpu_operator_version': 'v26.7.1', 'gpu_operator_namespace': NS}, None, [])
    assert 'has no Subscription nvidia-gpu-operator/gpu-operator-certified' in out['refusals'][0]


def test_a_target_that_is_no_version_is_an_inventory_error():
    with pytest.raises(ManifestError, match='upgrade_gpu_operator_version is .latest., not a GPU Operator release'):
        step(target='latest')


_ANY = st.one_of(st.none(), st.text(), st.booleans(), st.lists(st.one_of(st.text(), st.none()), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.text(), max_size=2))
_SUB = st.one_of(st.none(), st.text(), st.dictionaries(
    st.sampled_from(['spec', 'status', 'metadata']), st.one_of(_ANY, st.dictionaries(
        st.sampled_from(['installedCSV', 'installPlanRef', 'channel', 'installPlanApproval', 'name']), _ANY))))
_PLAN = st.one_of(st.none(), st.text(), st.dictionaries(
    st.sampled_from(['metadata', 'spec']), st.one_of(_ANY, st.dictionaries(
        st.sampled_from(['name', 'clusterServiceVersionNames', 'approved', 'uid']), _ANY))))


@settings(max_examples=150, deadline=None)
@given(sub=_SUB, plans=st.one_of(st.none(), st.lists(_PLAN, max_size=3)))
def test_anything_read_is_a_result_never_a_crash(sub, plans):
    out = uo.olm_step({'gpu_operator_version': 'v26.7.1', 'gpu_operator_namespace': NS}, sub, plans)
    assert out['action'] in ('none', 'approve', 'wait')
    # a wait without a plan: the target is installed and no Succeeded CSV was read
    assert out['action'] == 'none' or not out['refusals']
    assert out['action'] == 'none' or (out['plan'] is None and out['installed'] == NEW) or out['plan']['csv'] == NEW


# the step inside the whole plan ------------------------------------------------------------------------------------

def _ds(name, uid):
    return {'metadata': {'name': name, 'namespace': NS, 'uid': uid}, 'spec': {'updateStrategy': {'type': 'OnDelete'}}}


def _pod(name, node_name):
    return {'metadata': {'name': name, 'namespace': NS, 'labels': {'controller-revision-hash': 'h1'},
                         'ownerReferences': [{'kind': 'DaemonSet', 'name': 'vgm', 'uid': 'u1'}]},
            'spec': {'nodeName': node_name}}


def _whole(sub, plans, policy='refuse'):
    nodes = [{'metadata': {'name': 'gpu-1'}, 'spec': {},
              'status': {'conditions': [{'type': 'Ready', 'status': 'True'}], 'allocatable': {}}}]
    revs = [{'metadata': {'name': 'vgm-h1', 'namespace': NS, 'labels': {'controller-revision-hash': 'h1'},
                          'ownerReferences': [{'kind': 'DaemonSet', 'name': 'vgm', 'uid': 'u1'}]}, 'revision': 1}]
    vmi = {'metadata': {'name': 'vm1', 'namespace': 'vms',
                        'ownerReferences': [{'kind': 'VirtualMachine', 'name': 'vm1', 'uid': 'vu'}]},
           'spec': {'domain': {'devices': {'gpus': [{'name': 'g', 'deviceName': 'nvidia.com/X'}]}}},
           'status': {'nodeName': 'gpu-1', 'phase': 'Running'}}
    vm = {'metadata': {'name': 'vm1', 'namespace': 'vms', 'uid': 'vu'}, 'spec': {'runStrategy': 'Always'}}
    settings = {'vm_policy': policy, 'gpu_operator_version': 'v26.7.1', 'gpu_operator_install': 'olm',
                'gpu_operator_namespace': NS}
    return up.plan(settings, ['gpu-1'], nodes, [_pod('p1', 'gpu-1')], [_ds('vgm', 'u1')], revs, [vmi], [vm],
                   current={'gpu_operator': 'v26.7.0'}, olm={'subscription': sub, 'install_plans': plans})


def test_the_plan_carries_the_step_and_its_refusals():
    out = _whole(subscription(approval='Automatic'), [install_plan()], policy='wait')
    assert not out['ok'] and out['refusals'] == out['operator']['refusals']


def test_a_new_operator_release_checks_the_vm_policies_of_every_node_it_runs_on_before_any_change():
    # nothing is stale yet (the new release has not rendered its DaemonSets), but it will replace gpu-1's operand
    # pods: the VM under policy refuse is refused now, not after the approval
    out = _whole(subscription(), [install_plan()])
    assert out['operator']['action'] == 'approve'
    assert any('node gpu-1 runs the GPU VM vms/vm1 (policy refuse' in r for r in out['refusals']), out['refusals']
    assert out['batches'] == []
    again = _whole(subscription(), [install_plan()], policy='stop')
    assert again['ok'] and 'operator: approve InstallPlan install-abc' in again['summary'][3]


def test_a_subscription_of_another_package_under_our_name_is_refused():
    # the plans are chosen by their CSV names: a Subscription named gpu-operator-certified that subscribes to
    # another package is not the one playbooks/operator.yml made, and its plans are never approved
    sub = subscription()
    sub['spec']['name'] = 'other-operator'
    out = step(sub=sub)
    assert out['action'] == 'none' and out['plan'] is None
    assert 'subscribes to package other-operator, not gpu-operator-certified' in out['refusals'][0]


def test_cluster_text_in_a_refusal_is_printable():
    # spec.channel, status.currentCSV and a failed plan's condition message are cluster text: a newline or an
    # escape sequence never reaches the job's output as it is
    out = step(sub=subscription(channel='v26.7\n\x1b[2Jfake', current='x\ny'), plans=[])
    assert out['refusals'] and '\n' not in out['refusals'][0] and '\x1b' not in out['refusals'][0]
    assert 'channel v26.7??[2Jfake' in out['refusals'][0] and 'progresses to x?y' in out['refusals'][0]
    failed = install_plan(phase='Failed')
    failed['status']['conditions'] = [{'message': 'boom\n\x07done'}]
    out = step(plans=[failed])
    assert 'Failed (boom??done)' in out['refusals'][0]


def test_a_version_in_another_scripts_digits_is_no_version():
    # \d would take Arabic-Indic digits; the CSV name would carry them
    with pytest.raises(ManifestError):
        step(target='\u0662\u0666.7.1')
