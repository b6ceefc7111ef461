# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rke2 platform against the real kube-apiserver (tests/integration/kube_cluster.py): ``gpuvirt_platform: auto``
tells RKE2 apart by the annotation RKE2's agent puts on every node, in the cluster role's one read of Node, and the
GPU Operator's chart values then carry RKE2's containerd socket for the toolkit.

No RKE2 runs here: the nodes are Node objects carrying the annotations an RKE2 agent writes (k3s
pkg/nodeconfig/nodeconfig.go, SetNodeConfigAnnotations: <program>.io/node-args, node-env, node-config-hash, with
version.Program=rke2 in rancher/rke2 scripts/version.sh), created through the API as the agent would. The Helm
install runs the recorded fake of tests/integration/fake_helm.py (no Helm binary can be had on these machines), which
stores the release, values included, as Helm 3 does.
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import run_playbook, write_summary  # noqa: E402
import apiserver  # noqa: E402  (tools/kube, on sys.path through kube_cluster)
import fake_helm  # noqa: E402
import schema  # noqa: E402

# RKE2's "Deploy NVIDIA Operator" (rancher/rke2-docs docs/add-ons/gpu_operators.md): the chart's toolkit.env
RKE2_TOOLKIT_ENV = [{'name': 'CONTAINERD_SOCKET', 'value': '/run/k3s/containerd/containerd.sock'}]


def rke2_node(name):
    return {'apiVersion': 'v1', 'kind': 'Node',
            'metadata': {'name': name, 'annotations': {
                'rke2.io/node-args': '["agent","--server","https://rke2-server:9345"]',
                'rke2.io/node-env': '{}', 'rke2.io/node-config-hash': 'Q2VSUHJLUENTQkFFUkxBWUVSAA======'}}}


def run(tmp_path, playbook, inventory, **extra):
    extra.setdefault('reference_root', schema.reference_dir())
    return run_playbook(tmp_path, playbook, os.path.join(HERE, 'inventories', inventory + '.yml'), **extra)


def release_values(cluster, namespace, name, revision=1):
    """The values Helm 3 stored with a release (the Secret's data.release: base64 of base64(gzip(JSON)))."""
    secret = cluster.get('v1', 'Secret', 'sh.helm.release.v1.%s.v%d' % (name, revision), namespace)
    assert secret is not None, 'no release %s v%d in %s' % (name, revision, namespace)
    release = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret['data']['release']))))
    return release['config']


def test_auto_detects_rke2_by_its_nodes_and_the_chart_gets_rke2_s_containerd_socket(tmp_path, kube, monkeypatch):
    env = fake_helm.install(str(tmp_path / 'bin'), tmp_path / 'helm-calls.jsonl', schema.reference_dir())
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    cluster = kube([rke2_node('gpu-1'), rke2_node('worker-gpu-2.example.com')], openshift=False)
    cluster.server.grant_helm()
    # the Helm phase runs with the Helm identity (docs/rbac/gpuvirt-automation-helm.yml), as the kubernetes test does
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', gpuvirt_cluster_mode='apply',
                  gpuvirt_platform='auto', gpuvirt_kubeconfig=cluster.server.kubeconfig_path('helm'),
                  gpu_operator_chart_values_file='')
    assert rc == 0, log
    values = release_values(cluster, 'gpu-operator', 'gpu-operator')
    assert values['toolkit']['env'] == RKE2_TOOLKIT_ENV, values.get('toolkit')
    assert values['sandboxWorkloads']['defaultWorkload'] == 'vm-passthrough', values
    # the detection was the cluster role's first read: the nodes (every one must carry the annotation), not a name no
    # node has
    reads = [e['requestURI'] for e in cluster.requests(user=apiserver.HELM_USER)
             if e.get('objectRef', {}).get('resource') == 'nodes' and e['verb'] == 'list']
    assert reads and reads[0] == '/api/v1/nodes?limit=100', reads


def test_a_cluster_that_matches_two_platforms_stops_naming_both_before_any_write(tmp_path, kube):
    # OpenShift's API served and RKE2's annotation on the nodes: neither is guessed
    cluster = kube([rke2_node('gpu-1')], openshift=True)
    rc, log = run(tmp_path, 'preflight', 'preflight-apply', gpuvirt_kubeconfig=cluster.kubeconfig)
    assert rc != 0, log
    flat = ' '.join(log.split())
    assert ('the cluster matches the platforms openshift (the cluster serves config.openshift.io/v1 ClusterVersion) '
            'and rke2 (a node carries the annotation rke2.io/node-args)') in flat, log
    assert 'Set gpuvirt_platform to the one it is.' in flat, log
    assert write_summary(cluster.writes()) == [] and cluster.attempts() == []


def test_preflight_says_rke2_when_the_nodes_are_rke2_s(tmp_path, kube):
    cluster = kube([rke2_node('gpu-1')], openshift=False)
    rc, log = run(tmp_path, 'preflight', 'preflight-apply', gpuvirt_kubeconfig=cluster.kubeconfig)
    assert rc == 0, log
    said = ' '.join(log.split())  # the message as one line (the callback wraps it)
    assert ('Cluster answers: RKE2 (Helm, KubeVirt CR, host kernel arguments); KubeVirt is configured in the KubeVirt '
            'CR') in said, log
    assert cluster.attempts() == []
