# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Helm operator step of an upgrade (upgrade_operator.helm_step): from -> to, the CRDs checked before any is
applied, every refusal, on a release shaped as kubernetes.core.helm_info returns it and on `helm show crds` output
built from the reference CRDs of NVIDIA/gpu-operator v26.7.0 (deployments/gpu-operator/crds/)."""
from __future__ import annotations

import os

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_operator as uo
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators import ValidationError

NS, NAME, CHART = 'gpu-operator', 'gpu-operator', 'gpu-operator'
OLD, NEW = 'v25.10.1', 'v26.7.0'
REFERENCE = os.environ.get('GPUVIRT_REFERENCE') or os.path.normpath(
    os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', '..', 'shared', 'reference'))
SAFE = {'daemonsets': {'updateStrategy': 'OnDelete'}, 'driver': {'upgradePolicy': {'autoUpgrade': False}}}
CHART_VALUES = yaml.safe_dump({'daemonsets': {'updateStrategy': 'RollingUpdate', 'labels': {}},
                               'driver': {'upgradePolicy': {'autoUpgrade': True, 'maxParallelUpgrades': 1}},
                               'sandboxWorkloads': {'enabled': False}})


def crd(plural='clusterpolicies', group='nvidia.com', kind='ClusterPolicy', name=None):
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': name or '%s.%s' % (plural, group)},
            'spec': {'group': group, 'names': {'plural': plural, 'kind': kind}, 'scope': 'Cluster',
                     'versions': [{'name': 'v1', 'served': True, 'storage': True}]}}


def show_crds(*docs):
    return ''.join('---\n' + yaml.safe_dump(d) for d in docs)


def release(version=OLD, status='deployed', values=None, chart=CHART):
    # kubernetes.core.helm_info's status: the `helm list --output=yaml` entry plus `helm get values`
    return {'name': NAME, 'namespace': NS, 'revision': '1', 'status': status, 'chart': '%s-%s' % (chart, version),
            'app_version': version, 'values': SAFE if values is None else values}


def upgrade_settings(target=NEW, chart_version=None):
    """The upgrade settings of the Helm step: the target, the chart version and the release operator.yml installed."""
    return {'gpu_operator_version': target, 'helm_chart_version': target if chart_version is None else chart_version,
            'helm_release_name': NAME, 'gpu_operator_namespace': NS, 'helm_chart_ref': CHART}


def step(rel=None, target=NEW, chart_version=None, crds=None, values=CHART_VALUES):
    return uo.helm_step(upgrade_settings(target, chart_version), release() if rel is None else rel,
                        show_crds(crd(), crd('nvidiadrivers', kind='NVIDIADriver')) if crds is None else crds, values)


def test_an_older_release_is_upgraded_crds_first_with_its_own_values():
    out = step()
    assert out['refusals'] == [] and out['action'] == 'upgrade'
    assert (out['installed'], out['target']) == (OLD, NEW)
    assert [c['metadata']['name'] for c in out['crds']] == ['clusterpolicies.nvidia.com', 'nvidiadrivers.nvidia.com']
    assert out['release_values'] == SAFE
    assert out['lines'] == ['operator: Helm release gpu-operator/gpu-operator, chart gpu-operator v25.10.1 -> v26.7.0: '
                            'apply its 2 CRDs first (only those that differ: clusterpolicies.nvidia.com, '
                            'nvidiadrivers.nvidia.com), then helm upgrade with the release\'s values, then plan the '
                            'roll again with the new DaemonSets']


def test_the_reference_crds_of_the_chart_pass_the_check():
    # the two CRDs of NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/crds/ the reference holds
    folder = os.path.join(REFERENCE, 'crds')
    if not os.path.isdir(folder):
        pytest.skip('no reference folder (GPUVIRT_REFERENCE)')
    text = ''
    for name in ('nvidia.com_clusterpolicies', 'nvidia.com_nvidiadrivers'):
        with open(os.path.join(folder, 'gpu-operator-%s-%s.yaml' % (NEW, name))) as handle:
            text += '---\n' + handle.read()
    crds, problems = uo.chart_crds(text, 'chart gpu-operator ' + NEW)
    assert problems == [] and len(crds) == 2
    assert uo.checked_crds(crds, 'x') is crds


@pytest.mark.parametrize('plural,group', [('computedomains', 'resource.nvidia.com'),
                                          ('nodefeaturerules', 'nfd.k8s-sigs.io')])
def test_the_charts_other_groups_are_accepted(plural, group):
    # resource.nvidia.com (deployments/gpu-operator/crds/) and NFD's (charts/node-feature-discovery/crds/), v26.7.0
    out = step(crds=show_crds(crd(), crd(plural, group, 'X')))
    assert out['refusals'] == [] and len(out['crds']) == 2


def test_the_target_release_is_nothing_to_do():
    out = step(rel=release(NEW))
    assert out['action'] == 'none' and out['refusals'] == [] and out['crds'] == []
    assert out['lines'] == ['operator: Helm release gpu-operator/gpu-operator runs chart gpu-operator v26.7.0 (the '
                            'target), nothing to upgrade']


def test_no_target_plans_nothing():
    assert uo.helm_step(upgrade_settings('', ''), None, '', '')['action'] == 'none'


@pytest.mark.parametrize('doc,words', [
    ({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}},
     '(kind ConfigMap, name x, apiVersion v1) is not a apiextensions.k8s.io/v1 CustomResourceDefinition'),
    (crd('widgets', 'example.com', 'Widget'), 'is of API group example.com, not one of the chart\'s'),
    (crd(name='other.nvidia.com'), 'is not named <spec.names.plural>.<spec.group> (clusterpolicies.nvidia.com)'),
    (dict(crd(), apiVersion='apiextensions.k8s.io/v1beta1'), 'is not a apiextensions.k8s.io/v1'),
    ('just text', 'is not a mapping'),
])
def test_a_document_that_is_not_one_of_the_charts_crds_refuses_them_all(doc, words):
    text = show_crds(crd()) + '---\n' + (doc if isinstance(doc, str) else yaml.safe_dump(doc))
    out = step(crds=text)
    assert out['action'] == 'none' and out['crds'] == []
    (refusal,) = out['refusals']
    assert refusal.startswith('document 2 of `helm show crds` of chart gpu-operator v26.7.0 ') and words in refusal
    assert 'the CRDs are not applied and the chart is not upgraded' in refusal


def test_no_crd_at_all_or_no_yaml_is_refused():
    assert 'printed no CustomResourceDefinition' in step(crds='')['refusals'][0]
    assert 'is not YAML' in step(crds='a: [b\n')['refusals'][0]


def test_the_target_must_be_the_inventorys_chart_version():
    (refusal,) = step(chart_version='v25.10.1')['refusals']
    assert refusal.startswith('upgrade_gpu_operator_version is v26.7.0 but gpu_operator_chart_version is v25.10.1')


def test_a_v_prefix_makes_no_difference():
    assert step(target='26.7.0', chart_version='v26.7.0')['refusals'] == []


@pytest.mark.parametrize('rel,words', [
    ({}, 'namespace gpu-operator has no Helm release gpu-operator: install the operator with playbooks/operator.yml'),
    (release(status='failed'), 'is in status failed, not deployed'),
    (release(status='pending-upgrade'), 'helm rollback gpu-operator -n gpu-operator'),
    (release(chart='other-chart'), 'is of chart other-chart-v25.10.1, not of gpu-operator'),
    (release('v26.8.0'), 'upgrade_gpu_operator_version v26.7.0 is older than the chart v26.8.0'),
    (release(values={}), 'daemonsets.updateStrategy is unset (the chart default), not OnDelete and '
                         'driver.upgradePolicy.autoUpgrade is unset (the chart default), not false'),
    (release(values={'daemonsets': {'updateStrategy': 'OnDelete'}, 'driver': {'upgradePolicy': {'autoUpgrade': True}}}),
     'driver.upgradePolicy.autoUpgrade is true, not false'),
    (release(values=dict(SAFE, sandboxWorkload={'enabled': True})),
     "values do not fit chart gpu-operator v26.7.0: Helm value sandboxWorkload does not exist"),
])
def test_refusals_name_the_cause_and_plan_no_write(rel, words):
    out = step(rel=rel)
    assert out['action'] == 'none' and out['crds'] == [] and out['release_values'] == {}
    assert any(words in r for r in out['refusals']), out['refusals']


def test_a_target_that_is_no_version_is_an_input_error():
    with pytest.raises(ManifestError, match='upgrade_gpu_operator_version is .latest., not a GPU Operator chart version'):
        step(target='latest')


def test_checked_crds_is_the_sinks_own_check():
    with pytest.raises(ValidationError, match='x: item 2 .kind ConfigMap'):
        uo.checked_crds([crd(), {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'c'}}], 'x')
    with pytest.raises(ValidationError, match='not a non-empty list'):
        uo.checked_crds([], 'x')


def test_the_plan_takes_the_releases_version_as_running_and_concerns_every_operand_node():
    node = {'metadata': {'name': 'gpu-1'}, 'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}}
    ds = {'metadata': {'name': 'nvidia-vgpu-manager-daemonset', 'namespace': NS, 'uid': 'u1'}}
    pod = {'metadata': {'name': 'p', 'namespace': NS, 'labels': {'controller-revision-hash': 'a'},
                        'ownerReferences': [{'kind': 'DaemonSet', 'uid': 'u1', 'controller': True,
                                             'name': 'nvidia-vgpu-manager-daemonset'}]},
           'spec': {'nodeName': 'gpu-1'}}
    vmi = {'metadata': {'name': 'vm', 'namespace': 'vms'}, 'status': {'nodeName': 'gpu-1'},
           'spec': {'domain': {'devices': {'gpus': [{'name': 'g', 'deviceName': 'nvidia.com/X'}]}}}}
    helm = {'release': release(), 'crds': show_crds(crd()), 'chart_values': CHART_VALUES}
    result = up.plan(dict(upgrade_settings(), vm_policy='refuse'), ['gpu-1'], [node], [pod], [ds], [], [vmi], [],
                     current={'gpu_operator': '1.0.0'}, helm=helm)
    row = [r for r in result['versions'] if r['component'] == 'gpu_operator'][0]
    assert (row['from'], row['to'], row['change']) == (OLD, NEW, True)
    assert result['operator']['action'] == 'upgrade'
    # the new chart replaces the node's operand pods: its GPU VM's policy (refuse) is checked before any write
    assert any('vms/vm' in r for r in result['refusals']), result['refusals']
    assert 'the batches below are planned again once the new operator release has rendered its DaemonSets' in \
        result['summary']


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.text(), st.dictionaries(st.text(max_size=8), st.recursive(
    st.one_of(st.none(), st.booleans(), st.text(max_size=8)), lambda c: st.lists(c, max_size=3)
    | st.dictionaries(st.text(max_size=8), c, max_size=3), max_leaves=10), max_size=6)),
    st.text(max_size=200))
def test_anything_read_from_the_cluster_or_the_chart_is_refused_or_planned_never_a_crash(rel, crds_text):
    out = uo.helm_step(upgrade_settings(), rel, crds_text, crds_text)
    assert out['action'] in ('none', 'upgrade')
    assert out['action'] == 'none' or not out['refusals']


# NFD: its CRDs only with nfd.enabled, and a warning when the bundled subchart changes version ---------------------
NFD_CRDS = show_crds(crd(), crd('nodefeaturerules', 'nfd.k8s-sigs.io', 'NodeFeatureRule'),
                     crd('nodefeatures', 'nfd.k8s-sigs.io', 'NodeFeature'))
# NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/Chart.yaml (v26.3.x: version 0.18.3)
CHART_YAML = yaml.safe_dump({'apiVersion': 'v2', 'name': 'gpu-operator', 'version': NEW, 'dependencies': [
    {'name': 'node-feature-discovery', 'version': '0.19.0', 'repository': 'oci://registry.k8s.io/nfd/charts',
     'condition': 'nfd.enabled'}]})


def nfd_manifest(version='0.18.3'):
    # the subchart's objects as `helm get manifest` shows them (kubernetes.core.helm_info parses them into a list):
    # node-feature-discovery's _helpers.tpl labels each with helm.sh/chart: <chart name>-<chart version>
    nfd = {'name': 'gpu-operator-node-feature-discovery-master',
           'labels': {'helm.sh/chart': 'node-feature-discovery-%s' % version}}
    operator = {'name': 'gpu-operator', 'labels': {'helm.sh/chart': 'gpu-operator-%s' % OLD}}
    return [{'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': nfd},
            {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': operator}]


@pytest.mark.parametrize('values,kept', [
    (dict(SAFE, nfd={'enabled': False}), False),
    (dict(SAFE, nfd={'enabled': True}), True),
    (SAFE, True),                               # unset: the chart's default (true in v26.7.0 values.yaml)
    (dict(SAFE, nfd={'enabled': None}), True),
])
def test_nfds_crds_are_applied_only_when_the_chart_deploys_nfd(values, kept):
    # NVIDIA/gpu-operator v26.7.0 templates/upgrade_crd.yaml passes nfd-api-crds.yaml to manage-crds only inside
    # {{- if .Values.nfd.enabled }}: with NFD installed apart from the chart, its CRDs are that install's
    chart_values = yaml.safe_dump(dict(yaml.safe_load(CHART_VALUES), nfd={'enabled': True, 'nodefeaturerules': False}))
    out = uo.helm_step(upgrade_settings(), release(values=values), NFD_CRDS, chart_values)
    assert out['refusals'] == [] and out['action'] == 'upgrade'
    names = [c['metadata']['name'] for c in out['crds']]
    if kept:
        assert names == ['clusterpolicies.nvidia.com', 'nodefeaturerules.nfd.k8s-sigs.io', 'nodefeatures.nfd.k8s-sigs.io']
        assert not [line for line in out['lines'] if 'NFD' in line]
    else:
        assert names == ['clusterpolicies.nvidia.com']
        assert out['lines'][0].startswith('operator: Helm release gpu-operator/gpu-operator, chart gpu-operator '
                                          'v25.10.1 -> v26.7.0: apply its 1 CRDs first')
        assert out['lines'][1] == ("operator: NFD's CRDs are left alone (nfd.enabled is false, so the chart neither "
                                   "deploys NFD nor applies them): nodefeaturerules.nfd.k8s-sigs.io, "
                                   "nodefeatures.nfd.k8s-sigs.io")


def test_the_charts_own_default_decides_when_the_release_sets_nothing():
    chart_values = yaml.safe_dump(dict(yaml.safe_load(CHART_VALUES), nfd={'enabled': False}))
    out = uo.helm_step(upgrade_settings(), release(), NFD_CRDS, chart_values)
    assert [c['metadata']['name'] for c in out['crds']] == ['clusterpolicies.nvidia.com']


def test_a_new_bundled_nfd_version_is_warned_about():
    # v26.3.x bundles node-feature-discovery 0.18.3, v26.7.0 0.19.0 (Chart.yaml dependencies): helm upgrade
    # restarts NFD while VMs run
    out = uo.helm_step(upgrade_settings(), dict(release(), manifest=nfd_manifest('0.18.3')), show_crds(crd()),
                       CHART_VALUES, CHART_YAML)
    (warning,) = out['warnings']
    assert warning.startswith("the chart's Node Feature Discovery moves from 0.18.3 to 0.19.0 with chart v26.7.0 "
                              "(nfd.enabled): helm upgrade restarts NFD's master and workers while VMs run")
    assert 'nvidia.com/gpu.deploy.*' in warning
    # the whole plan carries it among its warnings
    helm = {'release': dict(release(), manifest=nfd_manifest('0.18.3')), 'crds': show_crds(crd()),
            'chart_values': CHART_VALUES, 'chart_meta': CHART_YAML}
    result = up.plan(upgrade_settings(), [], [], [], [], [], [], [], current={}, helm=helm)
    assert warning in result['warnings'] and 'warning: ' + warning in result['summary']


@pytest.mark.parametrize('manifest,chart_text,values', [
    (nfd_manifest('0.19.0'), CHART_YAML, SAFE),                      # the same version
    (nfd_manifest('v0.19.0'), CHART_YAML, SAFE),                     # v25.10's Chart.yaml wrote v0.18.2
    (nfd_manifest('0.18.3'), CHART_YAML, dict(SAFE, nfd={'enabled': False})),   # NFD not the chart's
    ([], CHART_YAML, SAFE),                                          # the release runs no NFD of the chart
    (nfd_manifest('0.18.3'), None, SAFE),                            # Chart.yaml not read
    (nfd_manifest('0.18.3'), 'a: [b', SAFE),                         # not YAML
])
def test_no_warning_without_a_known_version_change(manifest, chart_text, values):
    chart_values = yaml.safe_dump(dict(yaml.safe_load(CHART_VALUES), nfd={'enabled': True}))
    out = uo.helm_step(upgrade_settings(), dict(release(values=values), manifest=manifest), show_crds(crd()),
                       chart_values, chart_text)
    assert out['warnings'] == [] and out['action'] == 'upgrade'


@pytest.mark.parametrize('text', ['x: 2001-13-45\n', '[' * 5000, 'a: !!python/object:os.system ls\n'])
def test_what_a_chart_repository_prints_is_read_or_refused_never_a_traceback(text):
    # the chart repository (or whoever answers for it) writes `helm show crds`, `show values` and `show chart`: PyYAML
    # raises ValueError on an impossible date and RecursionError on deep nesting, besides YAMLError
    crds, problems = uo.chart_crds(text, 'the chart')
    assert crds == [] and problems and problems[0].startswith('`helm show crds` of the chart is not YAML'), problems
    assert uo.target_nfd_version(text) == ''


def test_every_bad_document_is_named_and_a_crd_comes_back_without_its_status():
    # an empty document is skipped; every document that is no chart CRD is named, not only the first; a CRD is
    # applied without the status `helm show crds` may print with it (the API server owns status)
    bad = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}}
    text = show_crds(bad) + '---\n' + show_crds(bad)[4:] + '---\n'
    crds, problems = uo.chart_crds(text, 'chart gpu-operator ' + NEW)
    assert crds == [] and [p.split(' of `helm')[0] for p in problems] == ['document 1', 'document 2'], problems
    with_status = dict(crd(), status={'acceptedNames': {'kind': 'ClusterPolicy'}})
    crds, problems = uo.chart_crds('---\n---\n' + yaml.safe_dump(with_status) + show_crds(crd('gpuclusters')),
                                   'chart gpu-operator ' + NEW)
    assert problems == [] and crds == [crd(), crd('gpuclusters')]
