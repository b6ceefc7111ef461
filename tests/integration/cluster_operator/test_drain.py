# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reboot role's cordon and drain against a real kube-apiserver (evictions, PodDisruptionBudgets).

The API server decides every eviction: it refuses one a PodDisruptionBudget does not allow (HTTP 429) and marks an
allowed one's pod for graceful deletion. What no server runs here is played by the test through the API: the
disruption controller (a budget's status.disruptionsAllowed) and the kubelet (removing a pod once it is marked for
deletion and its containers have stopped).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import ROOT as _ROOT, write_summary  # noqa: E402,F401
import kube_cluster  # noqa: E402

NODE = 'gpu-1'
RS = {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'name': 'web-7d4b9', 'uid': 'rs-1', 'controller': True}
DS = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'name': 'nvidia-sandbox-device-plugin-daemonset', 'uid': 'ds-1',
      'controller': True}


def pod(name, namespace, node, owner, labels=None):
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': name, 'namespace': namespace, 'ownerReferences': [owner], 'labels': labels or {}},
            'spec': {'nodeName': node, 'containers': [{'name': 'c', 'image': 'registry.example.com/c:1'}]},
            # the kubelet's report of a running, ready pod (an unready one may be evicted past a healthy budget)
            'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}]}}


def fleet():
    return [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': NODE}},
            {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'worker-1'}},
            pod('web-7d4b9-x2k1', 'apps', NODE, RS, {'app': 'web'}),
            pod('nvidia-sandbox-device-plugin-x1', 'nvidia-gpu-operator', NODE, DS),
            pod('web-7d4b9-q9z8', 'apps', 'worker-1', RS, {'app': 'web'})]


def pdb(allowed):
    # policy/v1beta1 is what a 1.20 server serves; status is the disruption controller's
    return {'apiVersion': 'policy/v1beta1', 'kind': 'PodDisruptionBudget',
            'metadata': {'name': 'web', 'namespace': 'apps'},
            'spec': {'minAvailable': 1, 'selector': {'matchLabels': {'app': 'web'}}},
            'status': {'disruptionsAllowed': allowed, 'currentHealthy': 2, 'desiredHealthy': 1, 'expectedPods': 2,
                       'observedGeneration': 1}}


def kubelet(cluster):
    """The kubelet's part: a pod marked for deletion on its node is removed once its containers stopped (the
    API server's graceful deletion leaves that to the kubelet)."""
    for item in cluster.server.request('GET', '/api/v1/pods?fieldSelector=spec.nodeName=' + NODE)['items']:
        meta = item['metadata']
        if meta.get('deletionTimestamp'):
            cluster.server.request('DELETE', '/api/v1/namespaces/%s/pods/%s' % (meta['namespace'], meta['name']),
                                   {'kind': 'DeleteOptions', 'apiVersion': 'v1', 'gracePeriodSeconds': 0},
                                   ok=(200, 202, 404))
    return False


def drain(tmp_path, cluster, **extra):
    args = {'reboot_node_name': NODE, 'gpuvirt_kubeconfig': cluster.kubeconfig, 'reboot_drain_timeout': 20,
            'reboot_drain_retry_delay': 1}
    args.update(extra)
    return kube_cluster.run_playbook(tmp_path, '../tests/integration/cluster_operator/drain', 'localhost,', **args)


def pods_on(cluster, node):
    return sorted(p['metadata']['name'] for p in
                  cluster.server.request('GET', '/api/v1/pods?fieldSelector=spec.nodeName=' + node)['items'])


def test_drain_cordons_and_evicts_all_but_daemonset_pods(tmp_path, kube):
    cluster = kube(fleet())
    cluster.controller('kubelet', kubelet)
    rc, log = drain(tmp_path, cluster)
    assert rc == 0, log
    assert cluster.get('v1', 'Node', NODE)['spec']['unschedulable'] is True
    assert pods_on(cluster, NODE) == ['nvidia-sandbox-device-plugin-x1']
    assert pods_on(cluster, 'worker-1') == ['web-7d4b9-q9z8']
    writes = write_summary(cluster.writes())
    assert writes == ['patch nodes -/gpu-1', 'create pods apps/web-7d4b9-x2k1'], writes
    (evict,) = [e for e in cluster.writes() if e['objectRef'].get('subresource') == 'eviction']
    assert evict['objectRef']['name'] == 'web-7d4b9-x2k1'


def test_a_budget_that_refuses_is_retried_until_it_allows(tmp_path, kube):
    cluster = kube(fleet() + [pdb(allowed=0)])
    cluster.controller('kubelet', kubelet)
    started = time.time()

    def disruption_controller(cluster):
        # the budget allows one disruption after a while (another replica became ready elsewhere)
        if time.time() - started < 4:
            return False
        budget = cluster.get('policy/v1beta1', 'PodDisruptionBudget', 'web', 'apps')
        cluster.set_status(budget, dict(budget['status'], disruptionsAllowed=1))
        return True
    cluster.controller('disruption-controller', disruption_controller)
    rc, log = drain(tmp_path, cluster)
    assert rc == 0, log
    assert 'RETRYING: [localhost]: Cordon and drain (an eviction a PodDisruptionBudget refuses is retried), node gpu-1' in log, log
    assert pods_on(cluster, NODE) == ['nvidia-sandbox-device-plugin-x1']


def test_a_drain_that_does_not_finish_stops_the_host_cordoned(tmp_path, kube):
    cluster = kube(fleet() + [pdb(allowed=0)])
    rc, log = drain(tmp_path, cluster, reboot_drain_timeout=3)
    assert rc != 0, log
    assert 'localhost was NOT rebooted: node gpu-1 could not be drained within 3 s (reboot_drain_timeout)' in log, log
    assert 'disruption budget' in log, log
    assert cluster.get('v1', 'Node', NODE)['spec']['unschedulable'] is True
    assert 'web-7d4b9-x2k1' in pods_on(cluster, NODE)


def test_a_pod_that_never_leaves_stops_the_host(tmp_path, kube):
    # evicted, but no kubelet ever removes it: the drain times out; the host must not reboot under it
    cluster = kube(fleet())
    rc, log = drain(tmp_path, cluster, reboot_drain_timeout=3)
    assert rc != 0, log
    assert ('localhost was NOT rebooted: after 3 s (reboot_drain_timeout) node gpu-1 still runs '
            'apps/web-7d4b9-x2k1') in log, log


def test_no_cluster_credentials_at_all_stops_the_host(tmp_path, kube):
    cluster = kube(fleet())
    env_free = {k: v for k, v in os.environ.items() if not k.startswith('K8S_AUTH')}
    assert env_free.get('KUBECONFIG') is None
    rc, log = drain(tmp_path, cluster, gpuvirt_kubeconfig='')
    # the message says what happened: no credentials, so the drain stopped after its first attempt
    assert rc != 0 and 'because no cluster credentials were found; the drain stopped after its first attempt' in log
    assert 'reboot_drain: false' in log, log
    assert cluster.writes() == []


def test_no_cluster_credentials_stop_at_once_without_retrying(tmp_path, kube):
    # nothing to retry for: without any credentials every attempt fails the same way, so the drain's until loop
    # (reboot_drain_timeout / reboot_drain_retry_delay attempts; 60 x 10 s by default) must not run
    cluster = kube(fleet())
    rc, log = drain(tmp_path, cluster, gpuvirt_kubeconfig='')
    assert rc != 0 and 'no cluster credentials were found; the drain stopped after its first attempt' in log, log
    assert 'RETRYING' not in log and 'within ' not in log.split('was NOT rebooted', 1)[1].split('\n', 1)[0], log
    assert cluster.writes() == []


def test_awx_bearer_token_from_the_environment_drains_before_reboot(tmp_path, kube):
    # The AWX path: no kubeconfig at all, the "OpenShift or Kubernetes API Bearer Token" credential sets
    # K8S_AUTH_HOST, K8S_AUTH_API_KEY and K8S_AUTH_SSL_CA_CERT (kubernetes.core reads these as host, api_key and
    # ca_cert when the task leaves them unset; kubernetes.core docs, k8s_drain module, "K8S_AUTH_*" environment).
    cluster = kube(fleet())
    cluster.controller('kubelet', kubelet)
    server = cluster.server
    extra_vars = {'reboot_node_name': NODE, 'gpuvirt_kubeconfig': '', 'reboot_drain_timeout': 20,
                  'reboot_drain_retry_delay': 1, 'ansible_python_interpreter': sys.executable}
    cache = tmp_path / 'tmp'
    cache.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith('K8S_AUTH') and k != 'KUBECONFIG'}
    env.update(HOME=str(tmp_path), TMPDIR=str(cache), K8S_AUTH_HOST=server.url,
               K8S_AUTH_API_KEY=server.tokens['automation'], K8S_AUTH_SSL_CA_CERT=server.ca)
    assert not (tmp_path / '.kube').exists()
    cmd = ['ansible-playbook', '-i', 'localhost,', os.path.join(HERE, 'drain.yml'), '-e', json.dumps(extra_vars)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert cluster.get('v1', 'Node', NODE)['spec']['unschedulable'] is True
    assert pods_on(cluster, NODE) == ['nvidia-sandbox-device-plugin-x1']
    # done as the automation identity the token belongs to
    writes = write_summary(cluster.writes())
    assert writes == ['patch nodes -/gpu-1', 'create pods apps/web-7d4b9-x2k1'], writes
