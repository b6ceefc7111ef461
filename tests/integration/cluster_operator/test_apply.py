# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of playbooks/operator.yml, nodes.yml, verify.yml and preflight.yml against a real kube-apiserver.

The server (tests/integration/kube_cluster.py) holds the real OLM, GPU Operator (v26.7.0) and KubeVirt CRDs; the
playbooks run as the least-privilege automation identity (docs/rbac/gpuvirt-automation.yml). No controller runs:
OLM's part (Subscription -> InstallPlan -> approval -> CSV) is played by ``olm()`` below, a kubelet's (allocatable)
by the test, each through the API and named where it happens. No Helm binary can be had on these machines (not
in Debian 12, no internet): the Helm installs run the recorded fake of tests/integration/fake_helm.py, which checks
the argv and values and writes the release through this API server, but does not template the chart.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import recap, run_playbook, write_summary  # noqa: E402
import apiserver  # noqa: E402  (tools/kube, on sys.path through kube_cluster)
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform as platform_table  # noqa: E402
import fake_helm  # noqa: E402
import schema  # noqa: E402

NS = 'nvidia-gpu-operator'
# the release the OLM stand-in installs: its CSV carries that release's alm-examples (the reference set's), and the
# ClusterPolicy built from them is checked against that release's CRD
RELEASE = 'v26.7.0'
CSV = 'gpu-operator-certified.' + RELEASE
NFD_CSV = 'nfd.4.18.0-202511040000'
OLM_V1A1 = 'operators.coreos.com/v1alpha1'
W, V = 'nvidia.com/gpu.workload.config', 'nvidia.com/vgpu.config'


def run(tmp_path, playbook, inventory, *args, **extra):
    extra.setdefault('reference_root', schema.reference_dir())
    return run_playbook(tmp_path, playbook, os.path.join(HERE, 'inventories', inventory + '.yml'), *args, **extra)


def alm_text():
    with open(os.path.join(schema.reference_dir(), 'olm', 'gpu-operator-v26.7.0-csv-alm-examples.json'),
              encoding='utf-8') as handle:
        return handle.read()


# The NFD operator's example, as its CSV carries it (OpenShift docs, "Node Feature Discovery Operator", creating a
# NodeFeatureDiscovery CR: apiVersion nfd.openshift.io/v1, kind NodeFeatureDiscovery, namespace openshift-nfd).
NFD_ALM = json.dumps([{'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery',
                       'metadata': {'name': 'nfd-instance', 'namespace': 'openshift-nfd'},
                       'spec': {'operand': {'servicePort': 12000}}}])
# NFD's own CRD, which OLM creates from the NFD bundle when it installs the CSV. Not in the reference set, so an
# open schema with the real group/version/kind.
NFD_CRD = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'nodefeaturediscoveries.nfd.openshift.io'},
           'spec': {'group': 'nfd.openshift.io', 'scope': 'Namespaced',
                    'names': {'kind': 'NodeFeatureDiscovery', 'plural': 'nodefeaturediscoveries',
                              'singular': 'nodefeaturediscovery', 'listKind': 'NodeFeatureDiscoveryList'},
                    'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                                  'schema': {'openAPIV3Schema': {'type': 'object',
                                                                 'x-kubernetes-preserve-unknown-fields': True}}}]}}


def catalog():
    """What the catalog serves: package -> channel -> (head CSV, its alm-examples)."""
    return {'gpu-operator-certified': {'v26.7': (CSV, alm_text())},
            'nfd': {'stable': (NFD_CSV, NFD_ALM)}}


def olm(phase='Succeeded', message='install strategy completed with no errors'):
    """OLM's part, as a controller step (operator-framework/operator-lifecycle-manager: the catalog operator resolves a
    Subscription's channel head into an InstallPlan and records status.currentCSV / installPlanRef, state
    UpgradePending; an InstallPlan is approved at once for installPlanApproval Automatic, by someone else for Manual;
    the approved plan creates the CSV (and the CRDs it owns), and the Subscription then names it in
    status.installedCSV; the olm operator drives the CSV to phase Succeeded or Failed)."""
    def step(cluster):
        subs = cluster.server.request('GET', '/apis/%s/subscriptions' % OLM_V1A1)['items']
        for sub in subs:
            meta, spec, status = sub['metadata'], sub['spec'], sub.get('status') or {}
            ns = meta['namespace']
            csv, alm = catalog()[spec['name']][spec.get('channel') or 'stable']
            plan_name = 'install-' + spec['name'][:10]
            if not status.get('installPlanRef'):
                auto = spec.get('installPlanApproval', 'Automatic') == 'Automatic'
                cluster.create({'apiVersion': OLM_V1A1, 'kind': 'InstallPlan',
                                'metadata': {'name': plan_name, 'namespace': ns},
                                'spec': {'approval': spec.get('installPlanApproval', 'Automatic'), 'approved': auto,
                                         'clusterServiceVersionNames': [csv]},
                                'status': {'phase': 'RequiresApproval' if not auto else 'Installing',
                                           'catalogSources': [spec['source']]}})
                cluster.set_status(sub, {'state': 'UpgradePending', 'currentCSV': csv,
                                         'lastUpdated': '2026-11-24T00:00:00Z',
                                         'installPlanRef': {'apiVersion': OLM_V1A1, 'kind': 'InstallPlan',
                                                            'name': plan_name, 'namespace': ns}})
                continue
            if status.get('installedCSV'):
                continue
            plan = cluster.get(OLM_V1A1, 'InstallPlan', plan_name, ns)
            if not plan['spec']['approved']:
                continue
            if spec['name'] == 'nfd' and cluster.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition',
                                                     NFD_CRD['metadata']['name']) is None:
                cluster.server.create_crd(NFD_CRD)
            cluster.create({'apiVersion': OLM_V1A1, 'kind': 'ClusterServiceVersion',
                            'metadata': {'name': csv, 'namespace': ns, 'annotations': {'alm-examples': alm}},
                            'spec': {'displayName': spec['name'], 'install': {'strategy': 'deployment'}},
                            'status': {'phase': phase if spec['name'] != 'nfd' else 'Succeeded',
                                       'message': message}})
            cluster.set_status(cluster.get(OLM_V1A1, 'Subscription', meta['name'], ns),
                               dict(status, state='AtLatestKnown', installedCSV=csv))
        return False
    return step


def package_manifests(default_channel='v26.7'):
    # packages.operators.coreos.com is OLM's package-server (an aggregated API); the stand-in CRD serves the same
    # kind and the test writes what the catalog would list
    return [{'apiVersion': 'packages.operators.coreos.com/v1', 'kind': 'PackageManifest',
             'metadata': {'name': 'gpu-operator-certified', 'namespace': 'openshift-marketplace'},
             'status': {'defaultChannel': default_channel,
                        'channels': [{'name': 'v25.10', 'currentCSV': 'gpu-operator-certified.v25.10.1'},
                                     {'name': 'v26.7', 'currentCSV': CSV}]}}]


def cluster_version():
    return {'apiVersion': 'config.openshift.io/v1', 'kind': 'ClusterVersion', 'metadata': {'name': 'version'}}


def operator_apply(cluster, **extra):
    args = {'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'auto', 'gpuvirt_kubeconfig': cluster.kubeconfig,
            'gpu_operator_csv_timeout': 30, 'gpu_operator_olm_poll_delay': 1}
    args.update(extra)
    return args


def test_openshift_apply_installs_through_olm_and_builds_the_policy_from_the_installed_csv(tmp_path, kube):
    cluster = kube([cluster_version()] + package_manifests())
    cluster.controller('olm', olm())
    # a render-mode PackageManifest in the inventory is not what apply mode reads
    render_pm = {'status': {'defaultChannel': 'v25.10', 'channels': [{'name': 'v25.10'}, {'name': 'v26.7'}]}}
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(cluster, gpu_operator_package_manifest=render_pm))
    assert rc == 0, log
    assert 'n0t-a-real-pass' not in log
    sub = cluster.get(OLM_V1A1, 'Subscription', 'gpu-operator-certified', NS)
    # the channel is the API's PackageManifest default (v26.7), not the inventory's render-mode one (v25.10)
    assert sub['spec']['channel'] == 'v26.7' and sub['spec']['installPlanApproval'] == 'Manual'
    # Manual: OLM waits for someone to approve the first InstallPlan; the run approved the plan for the CSV it asked
    # for (OLM docs, "Subscription": installPlanApproval Manual requires the InstallPlan's spec.approved)
    assert cluster.get(OLM_V1A1, 'InstallPlan', 'install-gpu-operat', NS)['spec']['approved'] is True
    assert sub['status']['installedCSV'] == CSV
    assert cluster.get('operators.coreos.com/v1', 'OperatorGroup', 'nvidia-gpu-operator-group',
                       NS)['spec']['targetNamespaces'] == [NS]
    assert cluster.get('v1', 'Secret', 'gpuvirt-vgpu-pull', NS)['type'] == 'kubernetes.io/dockerconfigjson'
    assert cluster.get('v1', 'ConfigMap', 'gpuvirt-vgpu-devices-config', NS) is not None
    # the NFD operator the GPU Operator needs on OpenShift, and its NodeFeatureDiscovery from the NFD CSV's example
    assert cluster.get('nfd.openshift.io/v1', 'NodeFeatureDiscovery', 'nfd-instance', 'openshift-nfd') is not None
    cp = cluster.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy')
    assert cp['spec']['vgpuManager']['imagePullSecrets'] == ['gpuvirt-vgpu-pull']
    assert cp['spec']['sandboxWorkloads']['defaultWorkload'] == 'vm-vgpu'
    assert cp['spec']['vgpuDeviceManager']['config'] == {'name': 'gpuvirt-vgpu-devices-config', 'default': 'A10-12Q'}
    # what was sent is the CSV's example plus our settings, valid for the CRD the server holds
    (sent,) = cluster.sent('clusterpolicies')
    schema.validate(sent, crd_sources=[RELEASE])
    base = [e for e in json.loads(alm_text()) if e['kind'] == 'ClusterPolicy'][0]
    # but for the collection's upgrade policy over the example's (alm-examples ship autoUpgrade true and the
    # DaemonSets' RollingUpdate, which would let the operator roll every node's driver at once:
    # module_utils/manifests/upgrade_policy.py says why): the defaults, autoUpgrade off and OnDelete
    # (merged over the example's policy: its drain and podDeletion blocks stay, ignored with autoUpgrade off)
    policy = sent['spec']['driver']['upgradePolicy']
    assert {key: policy[key] for key in ('autoUpgrade', 'maxParallelUpgrades', 'maxUnavailable')} == {
        'autoUpgrade': False, 'maxParallelUpgrades': 1, 'maxUnavailable': '25%'}, policy
    assert base['spec']['driver']['upgradePolicy']['autoUpgrade'] is True, base['spec']['driver']
    assert sent['spec']['daemonsets']['updateStrategy'] == 'OnDelete', sent['spec']['daemonsets']
    assert dict(sent['spec']['driver'], upgradePolicy=None) == dict(base['spec']['driver'], upgradePolicy=None)
    assert sent['spec']['dcgm'] == base['spec']['dcgm']
    second = cluster.now()
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(cluster, gpu_operator_package_manifest=render_pm))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_openshift_apply_check_mode_writes_nothing(tmp_path, kube):
    cluster = kube([cluster_version()] + package_manifests())
    cluster.controller('olm', olm())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', '--check', **operator_apply(cluster))
    assert rc == 0, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    assert cluster.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy') is None
    # the objects were sent, as dry runs only
    assert cluster.dry_runs(), log


def test_failed_csv_is_reported_and_no_policy_is_applied(tmp_path, kube):
    cluster = kube([cluster_version()] + package_manifests())
    cluster.controller('olm', olm(phase='Failed', message='install strategy failed: deployment gpu-operator not ready'))
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(cluster))
    assert rc != 0 and 'CSV %s failed' % CSV in log and 'deployment gpu-operator not ready' in log, log
    assert cluster.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy') is None


def test_olm_timeout_names_the_subscription_its_state_and_the_timeout(tmp_path, kube):
    # no OLM at all: the Subscription is created and never resolved
    cluster = kube([cluster_version()] + package_manifests())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(cluster, gpu_operator_csv_timeout=3))
    assert rc != 0, log
    assert ('Timed out after 3 s (gpu_operator_csv_timeout) waiting for OLM to resolve Subscription '
            'openshift-nfd/nfd (the Node Feature Discovery operator). Last seen: {}') in log, log
    assert cluster.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy') is None


def test_apply_bad_vgpu_type_fails_before_any_write(tmp_path, kube):
    cluster = kube([cluster_version()] + package_manifests())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(
        cluster, gpu_operator_vgpu_configs={'A10-12Q': {'A10-12Q': 2}, 'L40S-24Q': {'L40S-24Q': 2},
                                            'x': {'A10-48Q': 1}}))
    assert rc != 0 and 'A10-48Q' in log, log
    assert cluster.attempts() == []


def test_without_helm_the_run_stops_first_saying_what_to_install(tmp_path, kube):
    # A new user's Kubernetes cluster, no helm on the controller: the run used to stop at `helm show values` with
    # only "Error executing command." (rc 2, empty stderr). Kubernetes was detected (helm is asked only there); the
    # binary is asked for its version before anything is read or written, and the message says what to install.
    cluster = kube([], openshift=False)
    missing = str(tmp_path / 'no-helm')
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(
        cluster, gpu_operator_chart_values_file='', gpu_operator_helm_binary=missing))
    assert rc != 0, log
    assert 'gpu_operator_helm_binary %s: is not on the controller.' % missing in log, log
    assert 'install helm 3 (https://helm.sh/docs/intro/install/' in log, log
    assert "Read the chart's values.yaml" not in log, log
    assert cluster.attempts() == []


def test_a_helm_binary_outside_its_grammar_is_refused_naming_it(tmp_path, kube):
    # kubernetes.core.helm joins binary_path into one shlex-split command string (kubernetes.core
    # plugins/module_utils/helm.py get_helm_binary): a value with a blank would add arguments to every helm call
    cluster = kube([], openshift=False)
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(
        cluster, gpu_operator_helm_binary='helm --kubeconfig=/tmp/other'))
    assert rc != 0, log
    assert "gpu_operator_helm_binary: 'helm --kubeconfig=/tmp/other' is not valid" in log, log
    assert cluster.attempts() == []


def fake_helm_env(tmp_path, monkeypatch):
    """The recorded fake helm (tests/integration/fake_helm.py) first on PATH for the playbook run."""
    env = fake_helm.install(str(tmp_path / 'bin'), tmp_path / 'helm-calls.jsonl', schema.reference_dir())
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return tmp_path / 'helm-calls.jsonl'


def test_kubernetes_installs_the_chart_through_helm_with_the_argv_kubernetes_core_sends(tmp_path, kube, monkeypatch):
    # Helm is run (the recorded fake, tests/integration/fake_helm.py) with the Helm identity's kubeconfig, as
    # docs/rbac/gpuvirt-automation-helm.yml says to run the Helm phase. Proves: the binary check, the chart values
    # read with `helm show values`, the exact commands kubernetes.core.helm builds (plugins/modules/helm.py main,
    # get_release_status, fetch_chart_info, deploy), every value key in the chart's values.yaml, the release stored
    # as Helm 3 stores it, the ClusterPolicy made, and no second install when nothing changed.
    calls_log = fake_helm_env(tmp_path, monkeypatch)
    cluster = kube([], openshift=False)
    cluster.server.grant_helm()
    helm_config = cluster.server.kubeconfig_path('helm')
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(
        cluster, gpu_operator_chart_values_file='', gpuvirt_kubeconfig=helm_config))
    assert rc == 0, log
    calls = fake_helm.calls(calls_log)
    argvs = [c['argv'] for c in calls]
    repo, version = 'https://helm.ngc.nvidia.com/nvidia', 'v26.7.0'
    assert argvs[0] == ['version'], argvs
    assert ['show', 'values', 'gpu-operator', '--repo', repo, '--version', version] in argvs, argvs
    upgrades = [a for a in argvs if 'upgrade' in a]
    assert len(upgrades) == 1, argvs
    (upgrade,) = upgrades
    values_file = [a for a in upgrade if a.startswith('-f=')]
    assert upgrade == ['--version=' + version, '--repo=' + repo, 'upgrade', '-i', '--reset-values', '--wait']\
        + values_file + ['gpu-operator', 'gpu-operator'], upgrade
    assert [c['namespace'] for c in calls if 'upgrade' in c['argv']] == ['gpu-operator']
    assert all(c['kubeconfig'] for c in calls if c['argv'] != ['version'] and c['argv'][:2] != ['show', 'values'])
    release = cluster.get('v1', 'Secret', 'sh.helm.release.v1.gpu-operator.v1', 'gpu-operator')
    assert release['type'] == 'helm.sh/release.v1'
    assert release['metadata']['labels'] == {'name': 'gpu-operator', 'owner': 'helm', 'status': 'deployed',
                                             'version': '1'}
    policy = cluster.get('nvidia.com/v1', 'ClusterPolicy', 'cluster-policy')
    assert policy['spec']['sandboxWorkloads']['enabled'] is True, policy['spec']
    assert policy['spec']['sandboxWorkloads']['defaultWorkload'] == 'vm-passthrough', policy['spec']
    helm_user = fake_helm_user()
    assert [w for w in write_summary(cluster.writes(user=helm_user)) if w.startswith('create secrets gpu-operator/')]
    # the second run: the release's values and chart equal what is asked, so kubernetes.core.helm does not upgrade
    second, before = cluster.now(), len(calls)
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(
        cluster, gpu_operator_chart_values_file='', gpuvirt_kubeconfig=helm_config))
    assert rc == 0 and recap(log)['changed'] == '0', log
    again = [c['argv'] for c in fake_helm.calls(calls_log)[before:]]
    assert not [a for a in again if 'upgrade' in a], again
    again_writes = cluster.writes(since=second, user=helm_user)
    assert again_writes == [], write_summary(again_writes)


def test_a_value_key_the_chart_does_not_have_stops_the_helm_install(tmp_path, kube, monkeypatch):
    # the fake checks the values file kubernetes.core.helm writes against the chart's values.yaml, as the role's
    # own check does before it; with that check off, a typo reaches helm and the fake refuses it (real helm would
    # install the defaults and ignore it)
    fake_helm_env(tmp_path, monkeypatch)
    cluster = kube([], openshift=False)
    cluster.server.grant_helm()
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(
        cluster, gpu_operator_chart_values_file='', gpuvirt_kubeconfig=cluster.server.kubeconfig_path('helm'),
        gpu_operator_chart_values_check=False,
        gpu_operator_helm_values_extra={'operator': {'nodeSelectr': {'a': 'b'}}}))
    assert rc != 0, log
    assert 'values not in chart gpu-operator v26.7.0 values.yaml: operator.nodeSelectr' in log, log
    assert cluster.get('v1', 'Secret', 'sh.helm.release.v1.gpu-operator.v1', 'gpu-operator') is None


def failed_task(log):
    """The name of the task whose failure stopped the run (the TASK header before the first fatal line)."""
    head = log.split('fatal: [', 1)[0]
    return head.rsplit('TASK [', 1)[1].split(']', 1)[0]


def fake_helm_user():
    return apiserver.HELM_USER


def test_plain_kubernetes_is_detected_and_goes_to_helm(tmp_path, kube, monkeypatch):
    fake_helm_env(tmp_path, monkeypatch)
    cluster = kube([], openshift=False)
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(cluster))
    # the inventory gives the chart's values.yaml; the Helm install (the fake helm) runs as the automation identity,
    # which may not write Helm's release Secret: the Helm phase needs docs/rbac/gpuvirt-automation-helm.yml
    assert 'Install the gpu-operator chart' in log, log
    assert rc != 0 and 'secrets is forbidden' in log, log
    assert failed_task(log) == 'gpuvirt.provision.gpu_operator : Install the gpu-operator chart', log
    assert write_summary(cluster.writes()) == ['patch namespaces -/gpu-operator'], log


# --- node labels ------------------------------------------------------------------------------------------------

def labelled_nodes():
    return [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels}}
            for name, labels in (('ctr-1', {'kubernetes.io/hostname': 'ctr-1'}), ('pt-1', {W: 'vm-passthrough'}),
                                 ('vgpu-1', {W: 'vm-vgpu', V: 'A10-12Q'}))]


def vmi(name, node, phase='Running'):
    # status.nodeName / phase are virt-handler's to write; the fixture writes them through the status subresource
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachineInstance',
            'metadata': {'name': name, 'namespace': 'vdi'}, 'spec': {'domain': {'devices': {}}},
            'status': {'nodeName': node, 'phase': phase}}


def labels_apply(cluster):
    return dict(gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=cluster.kubeconfig)


def test_node_labels_apply_patches_only_differences_then_nothing(tmp_path, kube):
    cluster = kube(labelled_nodes() + [vmi('win11', 'pt-1'), vmi('old', 'vgpu-1', phase='Succeeded')])
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(cluster))
    assert rc == 0, log
    # pt-1's labels are right: its one write is the owned-labels record (a node labelled before the record)
    assert sorted(write_summary(cluster.attempts())) == ['patch nodes -/ctr-1', 'patch nodes -/pt-1',
                                                         'patch nodes -/vgpu-1'], log
    assert cluster.get('v1', 'Node', 'pt-1')['metadata']['labels'] == {W: 'vm-passthrough'}
    assert cluster.get('v1', 'Node', 'ctr-1')['metadata']['labels'] == {'kubernetes.io/hostname': 'ctr-1',
                                                                        W: 'container'}
    assert cluster.get('v1', 'Node', 'vgpu-1')['metadata']['labels'][V] == 'A10-24Q'
    second = cluster.now()
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_node_labels_apply_refuses_a_change_under_a_running_vmi(tmp_path, kube):
    cluster = kube(labelled_nodes() + [vmi('cad-3', 'vgpu-1')])
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(cluster))
    assert rc != 0 and 'vdi/cad-3' in log and 'A10-12Q -> A10-24Q' in log, log
    assert cluster.attempts() == []


def test_node_labels_apply_names_a_node_missing_from_the_cluster(tmp_path, kube):
    cluster = kube(labelled_nodes()[:2])
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(cluster))
    assert rc != 0 and 'node vgpu-1 is not in the cluster' in log, log
    assert cluster.attempts() == []


# --- verify -----------------------------------------------------------------------------------------------------

def test_verify_apply_waits_then_reports_per_node(tmp_path, kube):
    expected = {'gpu-1': {'nvidia.com/GA102GL_A10': 2}, 'gpu-2': {'nvidia.com/NVIDIA_A10-12Q': 1}}
    # allocatable is the kubelet's (its device plugin registers the resource); written in its place
    cluster = kube([
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1'},
         'status': {'allocatable': {'nvidia.com/GA102GL_A10': '2'}}},
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-2'}, 'status': {'allocatable': {'cpu': '8'}}}],
        openshift=False)
    args = dict(gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=cluster.kubeconfig, verify_expected=expected,
                verify_delay=1)
    rc, log = run(tmp_path, 'verify', 'kubernetes-passthrough', verify_timeout=2, **args)
    assert rc != 0 and 'node gpu-2: expected nvidia.com/NVIDIA_A10-12Q>=1; advertised no nvidia.com/*' in log, log
    # Now gpu-2's resource appears while the role waits: the kubelet's stand-in writes it only after the role's wait
    # has read the nodes at least once in this run (its reads are in the audit log) and found gpu-2 short.
    second = cluster.now()
    reads_before = []

    def kubelet(cluster):
        # every node listed (the cluster role's earlier check lists one by a field selector)
        reads = [e for e in cluster.requests(since=second) if e['verb'] == 'list'
                 and e.get('objectRef', {}).get('resource') == 'nodes' and 'fieldSelector' not in e['requestURI']]
        if not reads:
            return False
        reads_before.append(len(reads))
        cluster.set_status(cluster.get('v1', 'Node', 'gpu-2'), {'allocatable': {'nvidia.com/NVIDIA_A10-12Q': '4'}})
        return True
    cluster.controller('kubelet', kubelet)
    rc, log = run(tmp_path, 'verify', 'kubernetes-passthrough', verify_timeout=60, verify_smoke_vm=True, **args)
    assert rc == 0 and 'node gpu-2: nvidia.com/NVIDIA_A10-12Q=4 advertised' in log, log
    # the role saw "not yet" (a read without the resource, then a retry) before it saw the resource
    assert reads_before, log
    assert 'RETRYING: [localhost]: Wait for the expected resources on every node' in log, log
    (vm,) = cluster.sent('virtualmachines')
    schema.validate(vm)


def test_verify_check_mode_reports_the_wait_instead_of_waiting(tmp_path, kube):
    # --check created nothing a node would advertise: the wait (verify_timeout, 900 s by default) is skipped with
    # one read and a report of what a real run waits for. Bounded here (30 reads 1 s apart) so that the old
    # behaviour, which polled through the whole timeout, shows as RETRYING lines instead of a hang.
    expected = {'gpu-1': {'nvidia.com/GA102GL_A10': 2}}
    cluster = kube([{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1'},
                     'status': {'allocatable': {'cpu': '8'}}}], openshift=False)
    args = dict(gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=cluster.kubeconfig, verify_expected=expected,
                verify_timeout=30, verify_delay=1)
    rc, log = run(tmp_path, 'verify', 'kubernetes-passthrough', '--check', **args)
    assert rc == 0, log
    assert 'RETRYING' not in log, log
    said = ' '.join(log.split())  # the message as one line (the callback wraps it)
    assert 'Preview: not waiting. A real run waits up to 30 s (verify_timeout)' in said, log
    assert 'node gpu-1: expected nvidia.com/GA102GL_A10>=2; advertised no nvidia.com/*' in said, log
    assert cluster.attempts() == []


# --- preflight --------------------------------------------------------------------------------------------------

KNOWN_PLATFORMS_SAID = {
    'openshift': 'Cluster answers: OpenShift (OLM, HyperConverged, MachineConfig); KubeVirt is configured in '
                 'HyperConverged',
    'kubernetes': 'Cluster answers: Kubernetes (Helm, KubeVirt CR, host kernel arguments); KubeVirt is configured '
                  'in the KubeVirt CR',
    'rke2': 'Cluster answers: RKE2 (Helm, KubeVirt CR, host kernel arguments); KubeVirt is configured in the '
            'KubeVirt CR',
}


@pytest.mark.parametrize('name', platform_table.PLATFORM_NAMES)
def test_auto_tells_every_platform_row_apart_as_its_own_rbac_identity(tmp_path, kube, name):
    # a cluster as the harness makes one of a row: its detection API served (detect_api), or its nodes annotated
    # (detect_node_annotation), HCO where its kubevirt_config is hco, and the RBAC file its rbac column names granted
    # to the automation identity the run uses: a new row is tested without a test of its own
    row = platform_table.PLATFORMS[name]
    annotations = {row.detect_node_annotation: '[]'} if row.detect_node_annotation else {}
    node = {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1', 'annotations': annotations}}
    cluster = kube([node], platform=name)
    rc, log = run(tmp_path, 'preflight', 'preflight-apply', gpuvirt_kubeconfig=cluster.kubeconfig,
                  gpuvirt_platform='auto')
    assert rc == 0, log
    said = ' '.join(log.split())
    kubevirt = 'HyperConverged' if row.kubevirt_config == 'hco' else 'the KubeVirt CR'
    assert 'Cluster answers: %s (' % row.title in said and 'KubeVirt is configured in %s' % kubevirt in said, log
    # the rows shipped, in the words preflight gives them (what the platform's docs say the run does there)
    assert KNOWN_PLATFORMS_SAID.get(name, '') in said, log
    assert cluster.attempts() == [] and cluster.dry_runs() == []


def test_preflight_fails_when_the_cluster_does_not_answer(tmp_path, kube):
    cluster = kube([])
    closed = tmp_path / 'kubeconfig-closed'
    with open(cluster.kubeconfig, encoding='utf-8') as handle:
        closed.write_text(handle.read().replace(cluster.server.url, 'https://127.0.0.1:9'))
    rc, log = run(tmp_path, 'preflight', 'preflight-apply', gpuvirt_kubeconfig=str(closed))
    assert rc != 0 and 'Check that the cluster answers' in log, log
    said = ' '.join(log.split())
    assert 'The cluster did not answer (gpuvirt_cluster_mode: apply, the default), with gpuvirt_kubeconfig' in said, log
    assert '127.0.0.1' in said and 'export KUBECONFIG' in said, log


# The GPU Operator runs an operand on a node only where its nvidia.com/gpu.deploy.<operand> label is "true", and
# writes a label of the node's workload config only when it is missing or empty (NVIDIA/gpu-operator
# controllers/state_manager.go@v26.7.0: gpuStateLabels, addGPUStateLabels). NVIDIA's DRA passthrough guide: the
# classic device plugin must not run on a DRA node, DCGM and dcgm-exporter should not either.
OPERANDS = ('nvidia.com/gpu.deploy.device-plugin', 'nvidia.com/gpu.deploy.dcgm', 'nvidia.com/gpu.deploy.dcgm-exporter')


def test_node_labels_switch_the_operator_operands_off_on_dra_nodes_only(tmp_path, kube):
    on = {key: 'true' for key in OPERANDS}
    cluster = kube([
        # what the operator set on a container-workload node before it joined the DRA pool
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'dra-1', 'labels': dict(on, **{W: 'container'})}},
        # a node that left the DRA pool: our "false" labels are left over, one operand label is the operator's
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'ctr-1', 'labels': {
            W: 'container', OPERANDS[0]: 'false', OPERANDS[1]: 'false', OPERANDS[2]: 'true'}}}])
    rc, log = run(tmp_path, 'nodes', 'dra-nodes', **labels_apply(cluster))
    assert rc == 0, log
    assert sorted(write_summary(cluster.attempts())) == ['patch nodes -/ctr-1', 'patch nodes -/dra-1'], log
    dra = cluster.get('v1', 'Node', 'dra-1')['metadata']['labels']
    assert {key: dra[key] for key in OPERANDS} == {key: 'false' for key in OPERANDS} and dra[W] == 'container'
    ctr = cluster.get('v1', 'Node', 'ctr-1')['metadata']['labels']
    assert ctr == {W: 'container', OPERANDS[2]: 'true'}, ctr
    # the operator (not running here) then sets its missing labels on ctr-1 to "true", as addGPUStateLabels does
    cluster.patch(cluster.get('v1', 'Node', 'ctr-1'), {'metadata': {'labels': on}})
    second = cluster.now()
    rc, log = run(tmp_path, 'nodes', 'dra-nodes', **labels_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


OWNED = 'gpuvirt.provision/owned-labels'


def test_node_labels_remove_only_the_operand_labels_their_record_names(tmp_path, kube):
    # An admin switches operands off by the same labels (the GPU Operator keeps any non-empty value:
    # addGPUStateLabels, state_manager.go@v26.7.0). Only the labels the node's owned-labels record names are ours:
    # an admin's "false" stays, on a node joining the DRA pool and on one leaving it.
    admin = {'nvidia.com/gpu.deploy.sandbox-validator': 'false', 'nvidia.com/gpu.deploy.vgpu-device-manager': 'false'}
    cluster = kube([
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'dra-1', 'labels': dict(admin, **{W: 'container'})}},
        # left the DRA pool: two of our "false" labels (in the record), the third operand switched off by the admin
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {
            'name': 'ctr-1', 'annotations': {OWNED: ','.join(OPERANDS[:2])},
            'labels': dict(admin, **{W: 'container', OPERANDS[0]: 'false', OPERANDS[1]: 'false',
                                     OPERANDS[2]: 'false'})}}])
    rc, log = run(tmp_path, 'nodes', 'dra-nodes', **labels_apply(cluster))
    assert rc == 0, log
    dra = cluster.get('v1', 'Node', 'dra-1')['metadata']
    assert dra['labels'] == dict(admin, **{W: 'container', 'nvidia.com/dra-kubelet-plugin': 'true'},
                                 **{key: 'false' for key in OPERANDS}), dra
    assert dra['annotations'][OWNED] == ','.join(sorted(OPERANDS)), dra
    ctr = cluster.get('v1', 'Node', 'ctr-1')['metadata']
    assert ctr['labels'] == dict(admin, **{W: 'container', OPERANDS[2]: 'false'}), ctr
    assert ctr['annotations'][OWNED] == '', ctr
    # the record as the API server stored it compares equal: a second run writes nothing
    second = cluster.now()
    rc, log = run(tmp_path, 'nodes', 'dra-nodes', **labels_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_nodes_phase_labels_the_iommu_nodes_into_the_dedicated_machineconfig_pool(tmp_path, kube):
    # OpenShift with a dedicated GPU MachineConfigPool: the pool reaches only the nodes its nodeSelector matches and
    # nothing else labels them (openshift/machine-config-operator docs/custom-pools.md: "The first thing to do to
    # create a custom pool is labeling the node with a custom role"). The node-label phase, which runs before the
    # operator and the MachineConfig, puts the DRA node (it needs the IOMMU) into the pool and the container node
    # that still carries our empty-valued pool label out of it; a second run writes nothing.
    pool_label = 'node-role.kubernetes.io/gpu-worker'
    cluster = kube([
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'dra-1', 'labels': {W: 'container'}}},
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'ctr-1',
                                                          'labels': {W: 'container', pool_label: ''}}}])
    extra = dict(labels_apply(cluster), kubevirt_machineconfig_enabled='true', machineconfig_create_pool='true',
                 machineconfig_pool='gpu-worker')
    rc, log = run(tmp_path, 'nodes', 'dra-nodes', **extra)
    assert rc == 0, log
    assert cluster.get('v1', 'Node', 'dra-1')['metadata']['labels'][pool_label] == ''
    assert pool_label not in cluster.get('v1', 'Node', 'ctr-1')['metadata']['labels']
    second = cluster.now()
    rc, log = run(tmp_path, 'nodes', 'dra-nodes', **extra)
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))
    # Another custom pool that selects the GPU node: the Machine Config Operator refuses a node of two custom pools
    # (openshift/machine-config-operator pkg/helpers/helpers.go GetPoolsForNode @7ff337a4f, "belongs to 2 custom
    # roles"), so the node would carry our pool's label and never get its MachineConfig. Refused before any label.
    cluster.create({'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'MachineConfigPool',
                    'metadata': {'name': 'infra'},
                    'spec': {'machineConfigSelector': {'matchLabels': {'machineconfiguration.openshift.io/role': 'infra'}},
                             'nodeSelector': {'matchLabels': {'node-role.kubernetes.io/infra': ''}}}})
    cluster.patch({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'ctr-1'}},
                  {'metadata': {'labels': {'node-role.kubernetes.io/infra': ''}}})
    node = {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'dra-1'}}
    cluster.patch(node, {'metadata': {'labels': {'node-role.kubernetes.io/infra': '', pool_label: None}}})
    third = cluster.now()
    rc, log = run(tmp_path, 'nodes', 'dra-nodes', **extra)
    assert rc != 0, log
    assert 'Node dra-1 is selected by more than one custom MachineConfigPool (gpu-worker, infra)' in log, log
    assert 'ctr-1' not in log.split('more than one custom')[1].split('Nothing was changed')[0], log
    assert cluster.attempts(since=third) == [], write_summary(cluster.attempts(since=third))


def test_without_nfd_install_a_cluster_lacking_nfd_is_refused_before_any_write(tmp_path, kube):
    # The GPU Operator on OpenShift needs the Node Feature Discovery operator (NVIDIA, "Installing the Node Feature
    # Discovery (NFD) Operator": a prerequisite; without NFD's labels the operator selects no GPU node). With
    # gpu_operator_nfd_install false the role only checks that NFD's CRD is served, and stops with the fix when not,
    # before the GPU Operator's own objects are written.
    cluster = kube([cluster_version()] + package_manifests())
    cluster.controller('olm', olm())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(cluster, gpu_operator_nfd_install='false'))
    assert rc != 0, log
    assert 'no NodeFeatureDiscovery CRD (nodefeaturediscoveries.nfd.openshift.io)' in log, log
    assert 'Set gpu_operator_nfd_install: true' in log, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    # once NFD is there (its OLM bundle created the CRD), the same run goes on and installs the GPU Operator only
    cluster.server.create_crd(NFD_CRD)
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(cluster, gpu_operator_nfd_install='false'))
    assert rc == 0, log
    assert cluster.get(OLM_V1A1, 'Subscription', 'nfd', 'openshift-nfd') is None
    assert cluster.get(OLM_V1A1, 'Subscription', 'gpu-operator-certified', NS) is not None


def test_dra_nodes_get_a_cluster_policy_without_the_device_plugin_in_the_api_server(tmp_path, kube):
    # DRA nodes keep the container workload, so the GPU Operator runs nvidia-operator-validator there
    # (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0 gpuStateLabels); its plugin-validation waits for
    # nvidia.com/gpu capacity and fails without it (cmd/nvidia-validator/main.go@v26.7.0 Plugin.validate ->
    # validateGPUResource); the operator drops that init container only when devicePlugin is disabled
    # (controllers/object_controls.go@v26.7.0 TransformValidatorComponent, case "plugin"). The ClusterPolicy built from
    # the installed CSV's alm-examples carries devicePlugin.enabled false, accepted by the v26.7.0 CRD the server holds.
    cluster = kube([cluster_version()] + package_manifests())
    cluster.controller('olm', olm())
    rc, log = run(tmp_path, 'operator', 'dra-mixed-openshift', **operator_apply(cluster))
    assert rc == 0, log
    cp = cluster.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy')
    assert cp['spec']['devicePlugin']['enabled'] is False
    assert cp['spec']['sandboxDevicePlugin']['enabled'] is True
    (sent,) = cluster.sent('clusterpolicies')
    schema.validate(sent, crd_sources=[RELEASE])
    second = cluster.now()
    rc, log = run(tmp_path, 'operator', 'dra-mixed-openshift', **operator_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_a_vgpu_fleet_on_two_os_tags_is_refused_before_any_write(tmp_path, kube):
    # NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0 getGPUNodeOSInfo takes one GPU node's OS tag (Limit(1))
    # and controllers/object_controls.go resolveDriverTag appends it for every vGPU Manager DaemonSet: the run stops
    # naming both tags and their hosts before the first object reaches the server
    cluster = kube([cluster_version()] + package_manifests())
    cluster.controller('olm', olm())
    rc, log = run(tmp_path, 'operator', 'vgpu-two-os', **operator_apply(cluster))
    assert rc != 0, log
    assert 'rhcos4.18: vgpu-1' in log and 'rhcos4.19: ctr-1' in log, log
    assert cluster.writes() == [], write_summary(cluster.writes())


@pytest.mark.parametrize('playbook, extra', [
    # the plan the nodes phase computes and then patches from: replaced, it would label any node anything
    ('nodes', {'node_labels_plan': {'patches': [{'name': 'ctr-1', 'labels': {W: 'vm-passthrough'}}]}}),
    # the helm invocation the operator phase checks and then runs
    ('operator', {'__gpu_operator_helm_checked': {'binary': '/bin/sh', 'release': 'x', 'chart': 'y'}}),
])
def test_a_launch_variable_replacing_a_checked_value_stops_the_cluster_phase_before_any_request(
        tmp_path, kube, playbook, extra):
    # extra variables beat set_fact: the launch check (docs/security.md, "Launch time") refuses them before the
    # phase asks the API server anything
    cluster = kube(labelled_nodes())
    # the playbook a user runs (gather.yml, then the phase's body), not the body the other tests run
    extra_vars = dict(labels_apply(cluster), ansible_python_interpreter=sys.executable, **extra)
    proc = subprocess.run(['ansible-playbook', '-i', os.path.join(HERE, 'inventories', 'mixed-openshift.yml'),
                           os.path.join(ROOT, 'playbooks', playbook + '.yml'), '-e', json.dumps(extra_vars)],
                          capture_output=True, text=True, check=False, cwd=ROOT,
                          env=dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path)))
    rc, log = proc.returncode, proc.stdout + proc.stderr
    assert rc != 0, log
    assert '%s (given by the extra variables)' % next(iter(extra)) in log, log
    assert cluster.requests() == [], write_summary(cluster.requests())


def _kubevirt_apply_helpers():
    """The MachineConfigPool and Machine Config Operator stand-ins of the kubevirt phase's tests (one copy)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'cluster_kubevirt_apply', os.path.join(HERE, '..', 'cluster_kubevirt', 'test_apply.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_openshift_apply_rolls_the_iommu_machineconfig_out_before_the_operator(tmp_path, kube):
    # Render mode puts the MachineConfig in sync wave 31, before the operator's objects; apply mode must keep that
    # order: applied in the kubevirt phase, after the operator, the operands started without an IOMMU and the MCO
    # then drained and rebooted every GPU node a second time. NVIDIA's "NVIDIA GPU Operator with OpenShift
    # Virtualization" enables the IOMMU with a MachineConfig ("Enabling the IOMMU driver on hosts") before
    # "Installing the NVIDIA GPU Operator".
    kv = _kubevirt_apply_helpers()
    cluster = kube([cluster_version()] + package_manifests() + [kv.pool('worker', ['00-worker'], kv.DONE)]
                   + kv.vgpu_nodes())
    cluster.controller('olm', olm())
    mco = kv.mco(kv.rollout_done(['00-worker', kv.MC_NAME]))
    cluster.controller('machine-config-operator', mco)
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(
        cluster, kubevirt_machineconfig_enabled=True, machineconfig_wait_delay=1, machineconfig_wait_timeout=30))
    assert rc == 0, log
    writes = write_summary(cluster.attempts())
    mc_write = writes.index('patch machineconfigs -/' + kv.MC_NAME)
    policy = [i for i, w in enumerate(writes) if w.split()[1] == 'clusterpolicies']
    subscription = [i for i, w in enumerate(writes) if w.split()[1] == 'subscriptions']
    assert policy and subscription and mc_write < min(subscription + policy), writes
    # the pool was waited for before the operator was installed: the rollout's report precedes the OLM step
    assert log.index('worker: 2/2 machines updated, 2 ready') < log.index('TASK [Install the GPU Operator]'), log
    assert mco.rendered, 'the MCO stand-in never rendered the MachineConfig'
    assert cluster.get(kv.MC_V1, 'MachineConfig', kv.MC_NAME)['spec']['kernelArguments'] == ['intel_iommu=on', 'iommu=pt']


def test_a_render_leaves_the_machineconfig_to_the_kubevirt_phase(tmp_path, kube):
    # render mode already orders it (wave 31 of the kubevirt phase's render): the operator phase does not write it
    cluster = kube([cluster_version()] + package_manifests())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', kubevirt_machineconfig_enabled=True,
                  render_root=str(tmp_path / 'render'))
    assert rc == 0, log
    rendered = [f for _d, _s, files in os.walk(tmp_path / 'render') for f in files]
    assert rendered and not [f for f in rendered if 'machineconfig' in f.lower()], rendered


# --- the vendor-VFIO hosts' boot-time VF restore as a MachineConfig of their pool (OpenShift) ----------------------

VF_POOL = 'gpu-vf'
VF_MC = '100-gpu-vf-gpuvirt-vgpu-vf'
VF_CONFIGS = {'l40s': {'L40S-24Q': 2}, 'l40s-12q': {'L40S-12Q': 4}}


def vf_hosts(tmp_path, configs=('l40s', 'l40s')):
    """Two vendor-VFIO hosts (the phase runs on them through a local connection), each an L40S whose VFs are on as the
    vGPU Manager container leaves them (NVIDIA/gpu-driver-container vgpu-manager/rhel9/nvidia-driver _enable_vfs:
    sriov-manage -e ALL once the driver is loaded), in the driver stand-in's sysfs tree; their node names vf-1 and
    vf-2. Returns the inventory path and the boards."""
    from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_types
    from vf_driver import VfBoard
    hosts, boards = {}, []
    for i, config in enumerate(configs, 1):
        board = VfBoard(tmp_path / ('sys-%d' % i))
        os.makedirs(os.path.join(board.root, 'module', 'nvidia'), exist_ok=True)
        with open(os.path.join(board.root, 'module', 'nvidia', 'version'), 'w', encoding='utf-8') as handle:
            handle.write('550.54.16\n')
        (tmp_path / ('root-%d' % i) / 'etc').mkdir(parents=True)
        # the role reads the root's os-release (a CoreOS host is refused; no os-release is refused too): this
        # machine's own
        shutil.copy('/etc/os-release', str(tmp_path / ('root-%d' % i) / 'etc' / 'os-release'))
        boards.append(board)
        hosts['vf-%d.example.com' % i] = {
            'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'ansible_become': False,
            'gpuvirt_node_name': 'vf-%d' % i, 'gpuvirt_vgpu_config': config,
            'gpuvirt_pci_devices': {'gpus': [{'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '26b9',
                                              'device_name': 'AD102GL [L40S]', 'driver': 'nvidia', 'is_vf': False}],
                                    'iommu': {'enabled': True}},
            'gpuvirt_mdev_types': vgpu_types.discover(board.root),
            'gpuvirt_gpu_holders': {'held': False, 'holders': []},
            'vgpu_vf_sysfs_root': board.root, 'vgpu_vf_root_dir': str(tmp_path / ('root-%d' % i))}
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'all': {'children': {'gpu_vm_vgpu': {'hosts': hosts}}}}))
    return str(inventory), boards


def vf_cluster(kube, kv):
    """Pools worker and gpu-vf (a custom pool: its nodes leave worker) and the nodes vf-1, vf-2 (gpu-vf) and w-3."""
    gpu_vf = kv.pool(VF_POOL, ['00-worker'], kv.DONE, machines=2)
    return kube([kv.pool('worker', ['00-worker'], kv.DONE, machines=1), gpu_vf]
                + [kv.node(n, {'cpu': '64'}, dict(kv.WORKER, **{'node-role.kubernetes.io/gpu-vf': ''}))
                   for n in ('vf-1', 'vf-2')]
                + [kv.node('w-3', {'cpu': '64'}, dict(kv.WORKER))])


def vf_run(tmp_path, inventory, cluster, *args):
    return run_playbook(tmp_path, 'vgpu_vf', inventory, *args, gpuvirt_cluster_mode='apply',
                        gpuvirt_platform='openshift', gpuvirt_kubeconfig=cluster.kubeconfig, machineconfig_pool=VF_POOL,
                        machineconfig_wait_delay=1, machineconfig_wait_timeout=30, gpu_operator_vgpu_configs=VF_CONFIGS,
                        vgpu_vf_driver_timeout=1, vgpu_vf_wait_timeout=900, reference_root=schema.reference_dir(),
                        # no systemd in the test's hosts: the phase says, instead of restarting, which unit it
                        # would restart (its last play)
                        vgpu_vf_systemd=False)


def test_vendor_vfio_hosts_get_their_vf_profiles_as_the_machineconfig_of_their_pool(tmp_path, kube):
    # The Machine Config Operator owns an RHCOS node's files and units: the phase reads each host's boot-time config
    # (the module's plan, nothing written on it) and delivers it as one MachineConfig of the hosts' pool, applied and
    # waited for as the IOMMU one is (the MCO stand-in renders it and rolls it out to the pool's nodes)
    kv = _kubevirt_apply_helpers()
    inventory, boards = vf_hosts(tmp_path)
    cluster = vf_cluster(kube, kv)
    operator = kv.mco(kv.rollout_done(['00-worker', VF_MC]), pool_name=VF_POOL, mc_name=VF_MC)
    cluster.controller('machine-config-operator', operator)
    # check mode: the object is built and shown, nothing is written anywhere
    rc, log = vf_run(tmp_path, inventory, cluster, '--check', '--diff')
    assert rc == 0, log
    assert ('MachineConfig %s for MachineConfigPool gpu-vf (nodes vf-1, vf-2): the unit gpuvirt-vgpu-vf.service '
            'restores at every boot 0000:41:00.0: 0000:41:00.4 NVIDIA L40S-24Q, 0000:41:00.5 NVIDIA L40S-24Q' % VF_MC
            in ' '.join(log.split())), log
    assert cluster.attempts() == [] and cluster.get(kv.MC_V1, 'MachineConfig', VF_MC) is None
    rc, log = vf_run(tmp_path, inventory, cluster)
    assert rc == 0, log
    assert write_summary(cluster.attempts()) == ['patch machineconfigs -/' + VF_MC], log
    assert 'gpu-vf: 2/2 machines updated, 2 ready' in log, log
    assert operator.rendered, 'the MCO stand-in never rendered the MachineConfig'
    # the run returned once the MCO had drained, rebooted and uncordoned both nodes of the pool, one at a time (the
    # stand-in's rollout, cluster_kubevirt/test_apply.py _roll), and touched no node outside it
    for name in ('vf-1', 'vf-2'):
        node_now = cluster.get('v1', 'Node', name)
        assert not node_now['spec'].get('unschedulable'), name
        assert node_now['metadata']['annotations'][kv.MCD + 'state'] == 'Done', name
    assert [(n, w) for _t, n, w in operator.events if w == 'done'] == [('vf-1', 'done'), ('vf-2', 'done')]
    assert kv.MCD + 'desiredConfig' not in (cluster.get('v1', 'Node', 'w-3')['metadata'].get('annotations') or {})
    mc = cluster.get(kv.MC_V1, 'MachineConfig', VF_MC)
    assert mc['metadata']['labels'] == {'machineconfiguration.openshift.io/role': VF_POOL,
                                        'app.kubernetes.io/managed-by': 'gpuvirt.provision',
                                        'gpuvirt.provision/machineconfig': 'vgpu-vf'}
    # Ignition spec 3.2.0 as the MCO takes it (coreos/ignition docs/configuration-v3_2.md; the MCO writes
    # storage.files and systemd.units of a MachineConfig on the node, openshift/machine-config-operator
    # docs/MachineConfigDaemon.md): the unit enabled, the config the hosts computed, under /etc
    config = mc['spec']['config']
    assert [(u['name'], u['enabled']) for u in config['systemd']['units']] == [('gpuvirt-vgpu-vf.service', True)]
    files = dict((f['path'], f) for f in config['storage']['files'])
    from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mcu
    saved = json.loads(mcu.decode_data_url(files['/etc/gpuvirt/vgpu-vf-profiles.json']['contents']['source']))
    assert saved['gpus'] == [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': 1155, '0000:41:00.5': 1155}}]
    assert saved['sysfs_root'] == '/sys' and saved['timeout'] == 900
    assert 'TimeoutStartSec=960' in config['systemd']['units'][0]['contents'].splitlines()
    # nothing was set over SSH: the VFs get their profiles at boot, from the unit
    assert all(set(board.current.values()) <= {0} for board in boards)
    assert not os.path.exists(tmp_path / 'root-1' / 'etc' / 'gpuvirt')
    # the nodes rebooted into it (the MCO stand-in drains and reboots them as the API sees it, but writes no file on
    # a host): the MCO wrote the config on each node, and the unit gave the VFs their profiles at boot
    for i in (1, 2):
        os.makedirs(str(tmp_path / ('root-%d' % i) / 'etc' / 'gpuvirt'))
        (tmp_path / ('root-%d' % i) / 'etc' / 'gpuvirt' / 'vgpu-vf-profiles.json').write_text(
            mcu.decode_data_url(files['/etc/gpuvirt/vgpu-vf-profiles.json']['contents']['source']))
    for board in boards:
        for vfs in board.vfs.values():
            for vf in vfs[:2]:
                board.set(vf, 1155)
    second = cluster.now()
    rc, log = vf_run(tmp_path, inventory, cluster)
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))
    assert 'have no vGPU profile' not in log, log
    # the vGPU Manager pod restarted on vf-2's node: fresh VFs, no profile; the MachineConfig is as it was, so the
    # phase restarts the unit there (here: says it would), and nowhere else
    boards[1].set('0000:41:00.4', 0)
    boards[1].set('0000:41:00.5', 0)
    third = cluster.now()
    rc, log = vf_run(tmp_path, inventory, cluster)
    text = ' '.join(log.split())
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=third) == [], write_summary(cluster.attempts(since=third))
    assert ('vf-2.example.com: VFs 0000:41:00.4, 0000:41:00.5 have no vGPU profile although the MachineConfig of '
            'their pool is in place (the vGPU Manager was reloaded since boot?): not restarted (vgpu_vf_systemd is '
            'false)') in text, log
    assert 'vf-1.example.com: VFs' not in text, log


def test_hosts_with_different_vf_configs_or_a_pool_with_other_nodes_are_refused_before_any_write(tmp_path, kube):
    kv = _kubevirt_apply_helpers()
    inventory, _boards = vf_hosts(tmp_path, configs=('l40s', 'l40s-12q'))
    cluster = vf_cluster(kube, kv)
    rc, log = vf_run(tmp_path, inventory, cluster)
    text = ' '.join(log.split())
    assert rc != 0, log
    assert ('the vendor-VFIO hosts of MachineConfigPool gpu-vf need one boot-time VF config (a MachineConfig reaches '
            'every node of its pool alike), but they compute 2 different ones: vf-1.example.com: 0000:41:00.0: '
            '0000:41:00.4 NVIDIA L40S-24Q, 0000:41:00.5 NVIDIA L40S-24Q | vf-2.example.com: 0000:41:00.0: '
            '0000:41:00.4 NVIDIA L40S-12Q') in text, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    # one config, but the pool is worker: it manages w-3 too, and not the hosts' nodes (gpu-vf took them)
    inventory, _boards = vf_hosts(tmp_path / 'same')
    rc, log = run_playbook(tmp_path, 'vgpu_vf', inventory, gpuvirt_cluster_mode='apply', gpuvirt_platform='openshift',
                           gpuvirt_kubeconfig=cluster.kubeconfig, gpu_operator_vgpu_configs=VF_CONFIGS,
                           vgpu_vf_driver_timeout=1, reference_root=schema.reference_dir())
    text = ' '.join(log.split())
    assert rc != 0, log
    assert ("MachineConfigPool worker must manage exactly the vendor-VFIO hosts' nodes (vf-1, vf-2) to carry their "
            "VF config, but it also manages w-3; it does not manage vf-1, vf-2.") in text, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def kubevirt_cr(version):
    # status.observedKubeVirtVersion is virt-operator's to write once it has deployed that version (the fixture
    # writes it in its place); under OpenShift Virtualization HCO creates this CR in its own namespace
    # (kubevirt/hyperconverged-cluster-operator v1.18.1 controllers/handlers/kubevirt.go NewKubeVirtWithNameOnly)
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt',
            'metadata': {'name': 'kubevirt-kubevirt-hyperconverged', 'namespace': 'openshift-cnv'},
            'spec': {}, 'status': {'observedKubeVirtVersion': version}}


def test_vgpu_vf_run_alone_stops_on_a_kubevirt_older_than_its_hosts_need_before_any_write(tmp_path, kube):
    # playbooks/vgpu_vf.yml alone (an AWX job, a relaunch) applies the KubeVirt gate site.yml's preflight applies:
    # vendor-VFIO VFs are served by KubeVirt's own device plugin from v1.9.0 on (KubeVirt v1.9.0
    # pkg/virt-handler/device-manager/nvidia.go shouldPermitNvidia), so on a v1.8 cluster nothing is written: no VF
    # MachineConfig, no profile on a host
    kv = _kubevirt_apply_helpers()
    inventory, boards = vf_hosts(tmp_path)
    cluster = vf_cluster(kube, kv)
    cluster.create(kubevirt_cr('v1.8.2'))
    mark = cluster.now()
    extra = dict(gpuvirt_cluster_mode='apply', gpuvirt_platform='openshift', gpuvirt_kubeconfig=cluster.kubeconfig,
                 machineconfig_pool=VF_POOL, machineconfig_wait_delay=1, machineconfig_wait_timeout=30,
                 gpu_operator_vgpu_configs=VF_CONFIGS, vgpu_vf_driver_timeout=1, vgpu_vf_systemd=False,
                 ansible_python_interpreter=sys.executable)
    cache = tmp_path / 'tmp'
    cache.mkdir(exist_ok=True)
    # the playbook itself (run_playbook runs the phase's body, which site.yml imports after its preflight's gate)
    proc = subprocess.run(['ansible-playbook', '-i', inventory, os.path.join(ROOT, 'playbooks', 'vgpu_vf.yml'),
                           '-e', json.dumps(extra)], capture_output=True, text=True, check=False, cwd=ROOT,
                          env=dict(os.environ, HOME=str(tmp_path), TMPDIR=str(cache)))
    log = proc.stdout + proc.stderr
    said = ' '.join(log.split())
    assert proc.returncode != 0, log
    assert ('The cluster runs KubeVirt v1.8.2, but vf-1.example.com, vf-2.example.com need KubeVirt 1.9.0 or later'
            in said), log
    assert 'Phase 5b - vGPU profiles on vendor-specific VFIO hosts' not in said.split('fatal:', 1)[0], log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    assert all(set(board.current.values()) <= {0} for board in boards)


VF2_POOL = 'gpu-vf2'
VF2_MC = '100-gpu-vf2-gpuvirt-vgpu-vf'


def test_each_pool_gets_its_hosts_vf_machineconfig_and_a_pool_left_without_them_loses_only_ours(tmp_path, kube):
    # Two vendor-VFIO hosts of different VF configs, each in a MachineConfigPool of its own (gpuvirt_machineconfig_pool):
    # one VF MachineConfig per pool, each waited for. A MachineConfig reaches every node of its pool alike (the render
    # controller merges one config per pool: openshift/machine-config-operator pkg/controller/render
    # render_controller.go), and a node is in one custom pool at most (pkg/helpers/helpers.go GetPoolsForNode).
    kv = _kubevirt_apply_helpers()
    inventory, _boards = vf_hosts(tmp_path, configs=('l40s', 'l40s-12q'))
    inv = json.loads(open(inventory, encoding='utf-8').read())
    hosts = inv['all']['children']['gpu_vm_vgpu']['hosts']
    hosts['vf-1.example.com']['gpuvirt_machineconfig_pool'] = VF_POOL
    hosts['vf-2.example.com']['gpuvirt_machineconfig_pool'] = VF2_POOL
    open(inventory, 'w', encoding='utf-8').write(json.dumps(inv))
    # an administrator's MachineConfig for a pool of no vendor-VFIO host, of our name shape and unit, but not ours
    from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mcu
    foreign = mcu.build_vgpu_vf_machineconfig('gpu-old', '# %s\n' % mcu.vvp.MARKER)
    foreign['metadata']['labels'] = {'machineconfiguration.openshift.io/role': 'gpu-old'}
    cluster = kube([kv.pool('worker', ['00-worker'], kv.DONE, machines=1),
                    kv.pool(VF_POOL, ['00-worker'], kv.DONE, machines=1),
                    kv.pool(VF2_POOL, ['00-worker'], kv.DONE, machines=1), foreign]
                   + [kv.node('vf-1', {'cpu': '64'}, dict(kv.WORKER, **{'node-role.kubernetes.io/gpu-vf': ''})),
                      kv.node('vf-2', {'cpu': '64'}, dict(kv.WORKER, **{'node-role.kubernetes.io/gpu-vf2': ''})),
                      kv.node('w-3', {'cpu': '64'}, dict(kv.WORKER))])
    mco1 = kv.mco(kv.rollout_done(['00-worker', VF_MC]), pool_name=VF_POOL, mc_name=VF_MC)
    mco2 = kv.mco(kv.rollout_done(['00-worker', VF2_MC]), pool_name=VF2_POOL, mc_name=VF2_MC)
    cluster.controller('machine-config-operator', mco1)
    cluster.controller('machine-config-operator-2', mco2)
    # machineconfig_pool (gpu-vf, vf_run's) is the default only: each host's own pool wins
    rc, log = vf_run(tmp_path, inventory, cluster)
    said = ' '.join(log.split())
    assert rc == 0, log
    assert sorted(write_summary(cluster.attempts())) == sorted(['patch machineconfigs -/' + m for m in (VF_MC, VF2_MC)])
    assert ('MachineConfig %s for MachineConfigPool gpu-vf (nodes vf-1): the unit gpuvirt-vgpu-vf.service restores at '
            'every boot 0000:41:00.0: 0000:41:00.4 NVIDIA L40S-24Q' % VF_MC) in said, log
    assert ('MachineConfig %s for MachineConfigPool gpu-vf2 (nodes vf-2): the unit gpuvirt-vgpu-vf.service restores '
            'at every boot 0000:41:00.0: 0000:41:00.4 NVIDIA L40S-12Q' % VF2_MC) in said, log
    assert mco1.rendered and mco2.rendered, 'the MCO stand-ins never rendered the MachineConfigs'
    # vf-2 leaves the inventory: its pool holds no vendor-VFIO host any more, so our VF MachineConfig of gpu-vf2 goes
    # (the MCO then rolls the pool out without it); the administrator's one of gpu-old stays. Check mode says so first.
    del hosts['vf-2.example.com']
    open(inventory, 'w', encoding='utf-8').write(json.dumps(inv))
    mark = cluster.now()
    rc, log = vf_run(tmp_path, inventory, cluster, '--check')
    said = ' '.join(log.split())
    assert rc == 0, log
    assert ('MachineConfig %s (MachineConfigPool gpu-vf2): no vendor-VFIO host of the inventory is in its pool any '
            'more, so its boot-time VF restore would be deleted' % VF2_MC) in said, log
    assert 'gpu-old' not in said, log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    rc, log = vf_run(tmp_path, inventory, cluster)
    assert rc == 0, log
    assert write_summary(cluster.attempts(since=mark)) == ['delete machineconfigs -/' + VF2_MC], log
    assert cluster.get(kv.MC_V1, 'MachineConfig', VF2_MC) is None
    assert cluster.get(kv.MC_V1, 'MachineConfig', VF_MC) is not None
    assert cluster.get(kv.MC_V1, 'MachineConfig', foreign['metadata']['name']) is not None
