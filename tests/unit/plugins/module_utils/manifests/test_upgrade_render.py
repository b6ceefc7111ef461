# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade as a Git change (upgrade_render): what a render refuses from the inventory alone, before it writes a
file, and the recipe (UPGRADE.md) it writes beside the objects."""
from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_render as ur
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render_session

PM = {'status': {'channels': [{'name': 'v26.7', 'currentCSV': 'gpu-operator-certified.v26.7.1'}]}}


def olm(target=None, **kw):
    args = dict(install_plan_approval='Manual', channel='v26.7', alm_examples_release='v26.7.1')
    args.update(kw)
    return ur.preflight('olm', dict({'gpu_operator': 'v26.7.1'}, **(target or {})), **args)


def helm(target=None, **kw):
    args = dict(chart_version='v26.7.1')
    args.update(kw)
    return ur.preflight('helm', dict({'gpu_operator': 'v26.7.1'}, **(target or {})), **args)


def test_a_clean_olm_and_helm_upgrade_is_not_refused():
    for result in (olm({'vgpu_manager': '580.95.05', 'kubevirt': 'v1.8.0'}, kubevirt_current='v1.7.2'),
                   helm({'vgpu_manager': '580.95.05', 'kubevirt': 'v1.8.0'}, kubevirt_current='v1.7.2')):
        assert result['ok'] and result['refusals'] == [], result
        assert 'kubevirt: v1.7.2 (given) -> v1.8.0' in result['lines']
        # kubevirt.py has_mdev_enabled_field: the gate gives way to mediatedDevicesConfiguration at 1.8.0
        assert any('crosses 1.8' in n for n in result['notes'])


# KubeVirt "Updates and Deletion": updates are supported from the previous minor release only (upgrade_plan.py)
@pytest.mark.parametrize('current,target,words', [
    ('v1.7.2', 'v1.9.0', 'skips a minor version'),
    ('v1.8.0', 'v1.7.2', 'is a downgrade'),
])
def test_a_kubevirt_skip_or_downgrade_is_refused_from_the_version_rendered_for(current, target, words):
    result = helm({'kubevirt': target}, kubevirt_current=current, kubevirt_source='kubevirt_devices_kubevirt_version')
    assert not result['ok']
    (refusal,) = result['refusals']
    assert words in refusal and current in refusal and target in refusal


def test_without_a_running_kubevirt_version_the_target_is_not_checked_and_a_warning_says_so():
    result = helm({'kubevirt': 'v1.9.0'})
    assert result['ok']
    assert any('is not checked against the running KubeVirt' in w for w in result['warnings'])


def test_helm_target_must_be_the_inventorys_chart_version():
    (refusal,) = helm(chart_version='v26.7.0')['refusals']
    assert refusal.startswith('upgrade_gpu_operator_version is v26.7.1 but gpu_operator_chart_version is v26.7.0')


# OLM's catalog operator creates the plan approved for Automatic (createInstallPlan): the operator would install
# itself at the sync, outside the roll (upgrade_operator.py)
@pytest.mark.parametrize('approval', ['Automatic', ''])
def test_olm_needs_manual_approval(approval):
    (refusal,) = olm(install_plan_approval=approval)['refusals']
    assert refusal.startswith('gpu_operator_install_plan_approval is Automatic')
    assert 'gpu-operator-certified.v26.7.1' in refusal


def test_olm_target_off_the_subscriptions_channel_is_refused():
    # NVIDIA publishes channel v<major>.<minor> with the CSVs gpu-operator-certified.v<major>.<minor>.<patch>
    (refusal,) = olm(channel='v25.10', alm_examples_release='')['refusals']
    assert 'channel v26.7' in refusal and 'gpu_operator_channel v25.10' in refusal


def test_olm_clusterpolicy_source_of_another_release_is_refused():
    (refusal,) = olm(alm_examples_release='v26.7.0')['refusals']
    assert refusal.startswith('gpu_operator_alm_examples_release is v26.7.0 but '
                              'upgrade_gpu_operator_version is v26.7.1')


def test_olm_package_manifest_head_decides_instead_of_the_release():
    assert olm(alm_examples_release='', package_manifest=PM)['ok']
    (refusal,) = olm({'gpu_operator': 'v26.7.2'}, alm_examples_release='', package_manifest=PM)['refusals']
    assert 'head of channel v26.7 is gpu-operator-certified.v26.7.1' in refusal


@pytest.mark.parametrize('strategy,policy', [('RollingUpdate', None), ('OnDelete', {'auto_upgrade': True})])
def test_a_policy_that_lets_the_operator_roll_by_itself_is_refused_on_both(strategy, policy):
    for result in (olm(update_strategy=strategy, upgrade_policy=policy),
                   helm(update_strategy=strategy, upgrade_policy=policy)):
        (refusal,) = result['refusals']
        assert 'would let the GPU Operator roll the new version over every node by itself' in refusal


def test_vgpu_manager_branch_and_image_tags_are_checked_as_in_apply_mode():
    result = helm({'vgpu_manager': '570.1.2'}, guest_branch='580', os_tags=['ubuntu22.04'],
                  image_tags=['580.95.05-ubuntu22.04'])
    assert any('is branch 570 but the guests run branch 580' in r for r in result['refusals'])
    assert any('tag 570.1.2-ubuntu22.04 is not in the registry' in r for r in result['refusals'])


def test_a_vendor_vfio_fleet_below_kubevirt_1_9_is_refused():
    (refusal,) = helm({'kubevirt': 'v1.8.1'}, kubevirt_current='v1.8.0', vendor_vfio=True)['refusals']
    assert 'need KubeVirt 1.9.0 or later' in refusal


def test_a_malformed_target_stops_with_the_variable_named():
    with pytest.raises(ManifestError, match='upgrade_gpu_operator_version'):
        olm({'gpu_operator': 'latest'})
    with pytest.raises(ManifestError, match='gpu_operator_upgrade_policy'):
        helm(upgrade_policy={'bogus': 1})


def test_channel_of():
    assert ur.channel_of('v26.7.1') == 'v26.7' and ur.channel_of('26.10.0') == 'v26.10' and ur.channel_of('x') == ''


def recipe(install, kv=True, config='kubevirt'):
    return ur.recipe(install, {'gpu_operator': 'v26.7.1', 'vgpu_manager': '580.95.05',
                               'kubevirt': 'v1.8.0' if kv else ''}, 'gpu-operator', config, kv, 'gpu-operator',
                     'gpu-operator', 'https://helm.ngc.nvidia.com/nvidia', 'v26.7.1')


def test_the_recipe_orders_the_syncs_by_the_render_waves():
    text = recipe('olm')
    rows = [line for line in text.splitlines() if line.startswith('| ') and line[2].isdigit()]
    # the waves are the render's file prefixes (render/gitops.py annotates each object with its own)
    assert [row.split(' | ')[1] for row in rows] == ['40', '43', '60']
    assert '`installPlanApproval: Manual`' in rows[0] and 'gpu-operator-certified.v26.7.1' in rows[0]
    assert 'only once KubeVirt reports v1.8.0' in rows[2]
    assert 'playbooks/upgrade.yml -e upgrade_gpu_operator_version=v26.7.1 -e upgrade_kubevirt_version=v1.8.0' in text
    assert 'kubevirt_devices_kubevirt_version: v1.8.0' in text


def test_the_helm_recipe_puts_the_chart_crds_first():
    text = recipe('helm', kv=False)
    rows = [line for line in text.splitlines() if line.startswith('| ') and line[2].isdigit()]
    assert [row.split(' | ')[1] for row in rows] == ['before 40', '40', '43']
    assert 'helm show crds gpu-operator --repo https://helm.ngc.nvidia.com/nvidia --version v26.7.1' in text
    assert 'spec.upgrade.crds: CreateReplace' in text
    assert '60-kubevirt-devices' not in text and 'KubeVirt v1.8.0' not in text


def test_the_recipe_is_byte_stable_and_its_name_is_one_the_render_writes_and_prunes():
    assert recipe('helm') == recipe('helm')
    assert ur.RECIPE_FILE in render_session.DOCUMENTS and render_session.prunable_name(ur.RECIPE_FILE)


def test_bad_recipe_inputs_are_refused():
    with pytest.raises(ManifestError):
        ur.check_recipe_inputs('kustomize', 'hco')
    with pytest.raises(ManifestError):
        ur.check_recipe_inputs('olm', 'virt')


def test_the_olm_recipe_says_where_argo_cd_stops_and_what_flux_must_reconcile_again():
    # Argo CD reads a Subscription whose Manual InstallPlan waits (OLM condition InstallPlanPending, reason
    # RequiresApproval) as Progressing (argo-cd resource_customizations/operators.coreos.com/Subscription/health.lua):
    # its sync stops at the Subscription until the roll approves the plan. Flux's kstatus reads no Subscription
    # condition (fluxcd/cli-utils kstatus/status/generic.go): the ClusterPolicy reaches the old CRD first.
    text = ' '.join(recipe('olm').split())
    assert 'the sync stops after the Subscription\'s step: run the roll below then' in text, text
    assert 'reconcile the ClusterPolicy\'s Kustomization again' in text, text
    helm = ' '.join(recipe('helm').split())
    assert 'the sync stops after' not in helm and 'reconcile the ClusterPolicy' not in helm, helm
