# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA path's apply checks, against the in-memory API stand-in (fake_apiserver.py), NOT a real API server.

Why a stand-in here: the DRA driver needs ``resource.k8s.io/v1`` (Kubernetes 1.34+), which the real kube-apiserver
these tests run (1.20, the one Debian ships as source) does not serve. Every other apply test runs against that real
server (test_apply.py); on it, the DRA role's refusal of a cluster without ``resource.k8s.io/v1`` is tested. What
this file checks is the role's own logic before any write (a DRA node still running the classic device plugin).
The stand-in answers discovery, GET and server-side-apply PATCH only; see its docstring.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, HERE)
import fake_apiserver  # noqa: E402


def node(name, alloc):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name}, 'status': {'allocatable': alloc}}


@pytest.fixture
def cluster(tmp_path):
    apis = []

    def start(objects):
        api = fake_apiserver.FakeAPI(objects)
        api.kubeconfig = fake_apiserver.kubeconfig(tmp_path / 'kubeconfig', api.start())
        apis.append(api)
        return api
    yield start
    for api in apis:
        api.stop()


def run(tmp_path, inventory, **extra):
    extra_vars = dict(extra, render_root=str(tmp_path / 'unused'), ansible_python_interpreter=sys.executable)
    cmd = ['ansible-playbook', '-i', os.path.join(HERE, 'inventories', inventory + '.yml'),
           os.path.join(ROOT, 'playbooks', 'kubevirt.yml'), '-e', json.dumps(extra_vars)]
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path))  # the client's discovery cache
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def test_dra_apply_refuses_a_node_running_the_classic_plugin_before_writing(tmp_path, cluster):
    # the DRA nodes as the nodes phase leaves them: the classic plugin switched off, the kubelet plugin's selector on
    # (the inventory's dra_driver_node_selector and the driver manager's eviction label)
    labels = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.deploy.device-plugin': 'false',
              'nvidia.com/dra-kubelet-plugin': 'true', 'gpuvirt.io/dra': 'true'}
    kv = {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
          'spec': {}, 'status': {'observedKubeVirtVersion': 'v1.8.2'}}
    plugin = {'apiVersion': 'v1', 'kind': 'Pod', 'spec': {'nodeName': 'dra-1'},
              'metadata': {'name': 'nvidia-device-plugin-daemonset-q8z4d', 'namespace': 'gpu-operator',
                           'labels': {'app': 'nvidia-device-plugin-daemonset'}}}
    nodes = [dict(node(n, {'cpu': '64'}), metadata={'name': n, 'labels': labels}) for n in ('dra-1', 'dra-2')]
    api = cluster([kv, plugin] + nodes)
    rc, log = run(tmp_path, 'dra-kubevirt', gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=api.kubeconfig,
                  dra_driver_kubevirt_version='')
    assert rc != 0 and 'DRA node dra-1' in log and 'nvidia-device-plugin-daemonset-q8z4d' in log, log
    assert 'dra-2' not in log.split('DRA node dra-1', 1)[1].split('\n', 1)[0]
    assert api.writes == []
