# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/upgrade.yml's operator step on Kubernetes (Helm) against the real kube-apiserver, with the harness and
stand-in controllers of test_upgrade.py and the recorded fake helm (tests/integration/fake_helm.py).

The release is installed at chart v25.10.1 and the cluster holds that release's ClusterPolicy and NVIDIADriver CRDs
(the reference files of NVIDIA/gpu-operator v25.10.1 deployments/gpu-operator/crds/); the target is v26.7.0, whose
CRDs the fake prints for `helm show crds` (the reference holds only those two of the chart's CRDs). The run goes
as the Helm identity (docs/rbac/gpuvirt-automation-helm.yml), as operator.yml's Helm phase does.

One more stand-in: the upgraded operator (test_upgrade.operator_takes_over): once the release is upgraded (the new
release Secret exists) its Deployment rolls out the new image, and seconds later the new pod takes the leader
lease, renders its operand DaemonSets' new templates (a new vGPU Manager ControllerRevision) and flips the
ClusterPolicy's conditions, as the real operator's reconcile does; the roll is planned only after. What it cannot
prove: that the real chart's CRDs apply on a current API server with their CEL rules (the 1.20 test server refuses
those; the fake removes them).
"""
from __future__ import annotations

import copy
import os
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..'))
import apiserver  # noqa: E402  (tools/kube, on sys.path through kube_cluster)
import fake_helm  # noqa: E402
from kube_cluster import write_summary  # noqa: E402
from test_upgrade import NS, flat, hashes, operator_release, operator_takes_over, setup, upgrade  # noqa: E402

CRD_API = 'apiextensions.k8s.io/v1'
CRDS = ('clusterpolicies.nvidia.com', 'nvidiadrivers.nvidia.com')
OLD, NEW = 'v25.10.1', 'v26.7.0'
RELEASE = 'gpu-operator'
REPO = 'https://helm.ngc.nvidia.com/nvidia'
# what the gpu_operator role installs (roles/gpu_operator: daemonsets.updateStrategy OnDelete, autoUpgrade false)
VALUES = {'daemonsets': {'updateStrategy': 'OnDelete'}, 'driver': {'upgradePolicy': {'autoUpgrade': False}},
          'sandboxWorkloads': {'enabled': True, 'defaultWorkload': 'vm-vgpu'}}


def reference_crd(version, name):
    plural, group = name.split('.', 1)
    path = os.path.join(apiserver.reference_dir(), 'crds', 'gpu-operator-%s-%s_%s.yaml' % (version, group, plural))
    with open(path) as handle:
        return fake_helm.strip_cel(yaml.safe_load(handle))


def put_crd(server, body):
    current = server.get(CRD_API, 'CustomResourceDefinition', body['metadata']['name'])
    body = copy.deepcopy(body)
    body['metadata'] = dict(body['metadata'], resourceVersion=current['metadata']['resourceVersion'])
    body['metadata'].pop('managedFields', None)
    server.request('PUT', server.path(CRD_API, 'customresourcedefinitions', name=body['metadata']['name']), body)


@pytest.fixture
def older_crds(kube_server):
    """The server's GPU Operator CRDs (kept across tests) replaced by the v25.10.1 ones for the test, and put back
    as they were after it, so no other test sees what this one applied."""
    kept = [kube_server.get(CRD_API, 'CustomResourceDefinition', name) for name in CRDS]
    for name in CRDS:
        put_crd(kube_server, reference_crd(OLD, name))
    yield
    for crd in kept:
        put_crd(kube_server, {k: v for k, v in crd.items() if k != 'status'})


def helm_cluster(kube, tmp_path, monkeypatch):
    """test_upgrade's two nodes and VMs, the vGPU Manager at its old revision only, the release at OLD, the fake helm
    on PATH. Returns the cluster and the fake's call log."""
    log = tmp_path / 'helm-calls.jsonl'
    for key, value in fake_helm.install(str(tmp_path / 'bin'), log, apiserver.reference_dir()).items():
        monkeypatch.setenv(key, value)
    cluster = setup(kube, new_revision=False)
    cluster.server.grant_helm()
    admin = fake_helm.Api(cluster.admin_kubeconfig)
    fake_helm.write_release(admin, NS, RELEASE, 'gpu-operator', OLD, VALUES)

    operator_release(cluster, OLD)

    def upgraded_release(c):
        # the release upgraded (its new Secret): the chart's new Deployment template is applied; the new operator
        # then takes over (test_upgrade.operator_takes_over), seconds later, not as helm upgrade returns
        if c.get('v1', 'Secret', 'sh.helm.release.v1.%s.v2' % RELEASE, NS):
            c.release_installed = NEW
            return True
        return False
    cluster.controller('helm-release', upgraded_release, interval=0.2)
    operator_takes_over(cluster)
    cluster.mark = cluster.now()
    return cluster, log


def run(tmp_path, cluster, *args, **extra):
    target = dict(gpuvirt_kubeconfig=cluster.server.kubeconfig_path('helm'), upgrade_vm_policy='stop',
                  upgrade_gpu_operator_version=NEW, gpu_operator_chart_version=NEW, upgrade_nodes=['gpu-1'])
    target.update(extra)
    return upgrade(tmp_path, cluster, *args, **target)


def helm_writes(cluster, since=None):
    return write_summary(cluster.writes(since=since, user=apiserver.HELM_USER))


def helm_attempts(cluster, since=None):
    return write_summary(cluster.attempts(since=since, user=apiserver.HELM_USER))


def argvs(log):
    return [c['argv'] for c in fake_helm.calls(log)]


def test_helm_crds_first_then_the_chart_then_the_roll_check_mode_writes_nothing_second_run_no_op(
        tmp_path, kube, monkeypatch, older_crds):
    cluster, log = helm_cluster(kube, tmp_path, monkeypatch)
    rc, out = run(tmp_path, cluster, '--check')
    assert rc == 0, out
    assert ('operator: Helm release %s/%s, chart gpu-operator %s -> %s: apply its 2 CRDs first' % (NS, RELEASE, OLD, NEW)
            in flat(out)), out
    assert 'gpu_operator: %s -> %s' % (OLD, NEW) in flat(out), out
    # the new release will replace the node's operand pods: its VM's policy is in the preview already
    assert 'after the operator: node gpu-1, VM vms/vm-gpu-1: stop' in flat(out), out
    assert helm_attempts(cluster) == [], helm_attempts(cluster)
    assert not [a for a in argvs(log) if 'upgrade' in a], argvs(log)

    rc, out = run(tmp_path, cluster)
    assert rc == 0, out
    # `helm show crds` as NVIDIA's upgrade page gets the new CRDs (the chart, its repository, the target version)
    assert ['show', 'crds', 'gpu-operator', '--repo', REPO, '--version', NEW] in argvs(log), argvs(log)
    writes = helm_writes(cluster)
    crd_writes = [i for i, w in enumerate(writes) if 'customresourcedefinitions' in w]
    release_at = writes.index('create secrets %s/sh.helm.release.v1.%s.v2' % (NS, RELEASE))
    first_node = next(i for i, w in enumerate(writes) if w.startswith('patch nodes'))
    # the CRDs, then the release, then the nodes
    assert crd_writes and max(crd_writes) < release_at < first_node, writes
    assert 'patch customresourcedefinitions -/clusterpolicies.nvidia.com' in writes[:release_at], writes
    crd = cluster.get(CRD_API, 'CustomResourceDefinition', 'clusterpolicies.nvidia.com')
    want = reference_crd(NEW, 'clusterpolicies.nvidia.com')
    assert crd['spec']['versions'][0]['schema'] == want['spec']['versions'][0]['schema']
    # the release runs the new chart with the values it had (what the gpu_operator role installed)
    (upgrade_argv,) = [a for a in argvs(log) if 'upgrade' in a]
    assert upgrade_argv[:2] == ['--version=' + NEW, '--repo=' + REPO], upgrade_argv
    entry = fake_helm.releases(fake_helm.Api(cluster.admin_kubeconfig), NS, RELEASE)[-1][1]
    assert entry['chart']['metadata']['version'] == NEW and entry['config'] == VALUES, entry
    # the roll was planned again from the new DaemonSets: gpu-1 runs the new vGPU Manager revision
    assert hashes(cluster, 'gpu-1') == ['new'], out
    assert hashes(cluster, 'gpu-2') == ['old'], out

    mark, calls_before = cluster.now(), len(argvs(log))
    rc, out = run(tmp_path, cluster)
    assert rc == 0, out
    assert helm_attempts(cluster, since=mark) == [], helm_attempts(cluster, since=mark)
    again = argvs(log)[calls_before:]
    assert not [a for a in again if 'upgrade' in a or a[:2] == ['show', 'crds']], again
    assert ('operator: Helm release %s/%s runs chart gpu-operator %s (the target), nothing to upgrade' % (NS, RELEASE, NEW)
            in flat(out)), out


NOT_A_CRD = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'namespace': 'kube-system'}}
# a CRD of the chart's group that the API server refuses (no version is the storage version)
REFUSED_CRD = {'apiVersion': CRD_API, 'kind': 'CustomResourceDefinition', 'metadata': {'name': 'gpuclusters.nvidia.com'},
               'spec': {'group': 'nvidia.com', 'scope': 'Cluster',
                        'names': {'kind': 'GPUCluster', 'plural': 'gpuclusters', 'singular': 'gpucluster',
                                  'listKind': 'GPUClusterList'},
                        'versions': [{'name': 'v1alpha1', 'served': True, 'storage': False,
                                      'schema': {'openAPIV3Schema': {'type': 'object'}}}]}}


def test_helm_a_non_crd_document_or_a_refused_crd_stops_before_helm_and_before_any_node(
        tmp_path, kube, monkeypatch, older_crds):
    cluster, log = helm_cluster(kube, tmp_path, monkeypatch)
    extra = tmp_path / 'extra-crds.yaml'
    extra.write_text(yaml.safe_dump(NOT_A_CRD))
    monkeypatch.setenv('FAKE_HELM_CRDS_EXTRA', str(extra))
    rc, out = run(tmp_path, cluster)
    assert rc != 0, out
    assert ('document 3 of `helm show crds` of chart gpu-operator %s (kind ConfigMap, name x, apiVersion v1) is not a '
            'apiextensions.k8s.io/v1 CustomResourceDefinition' % NEW) in flat(out), out
    assert helm_attempts(cluster) == [], helm_attempts(cluster)

    extra.write_text(yaml.safe_dump(REFUSED_CRD))
    rc, out = run(tmp_path, cluster)
    assert rc != 0, out
    assert 'The operator upgrade to chart %s stopped at "Apply the target chart\'s CRDs' % NEW in flat(out), out
    assert 'the Helm release was not upgraded' in flat(out) and 'no node was touched' in flat(out), out
    assert not [a for a in argvs(log) if 'upgrade' in a], argvs(log)
    assert not [w for w in helm_attempts(cluster) if 'nodes' in w or 'secrets' in w or 'pods' in w], helm_attempts(cluster)
    assert hashes(cluster, 'gpu-1') == ['old']
