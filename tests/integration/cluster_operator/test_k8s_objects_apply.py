# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role k8s_objects in apply mode, against the real kube-apiserver (tests/integration/kube_cluster.py): its one
module call (gpuvirt.provision.k8s_objects_apply) reads and dry-runs every object and applies only those that
change, as the API server's audit log shows; a second run writes nothing; --check sends dry runs only and --diff
shows the change; an object whose Namespace the same list creates is applied after it, and one whose Namespace
nothing creates stops the list before any write; a list holding a Secret never shows it, whatever -e says.

The play runs as the least-privilege automation identity (docs/rbac/gpuvirt-automation.yml: the GPU Operator's
namespace and the names it may write there), the namespace tests as the admin (the identity creates no
Namespace)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
from kube_cluster import recap, write_summary  # noqa: E402

NAMESPACE = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nvidia-gpu-operator'}}
CONFIGMAP = {'apiVersion': 'v1', 'kind': 'ConfigMap',
             'metadata': {'name': 'gpuvirt-vgpu-devices-config', 'namespace': 'nvidia-gpu-operator'},
             'data': {'config.yaml': 'version: v1\n'}}
OPERATOR_GROUP = {'apiVersion': 'operators.coreos.com/v1', 'kind': 'OperatorGroup',
                  'metadata': {'name': 'nvidia-gpu-operator-group', 'namespace': 'nvidia-gpu-operator'},
                  'spec': {'targetNamespaces': ['nvidia-gpu-operator']}}
PASSWORD = 'czNjcjN0LXZhbHVl'
SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/dockerconfigjson',
          'metadata': {'name': 'gpuvirt-vgpu-pull', 'namespace': 'nvidia-gpu-operator'},
          'stringData': {'.dockerconfigjson': json.dumps({'auths': {'r.example': {'auth': PASSWORD}}})}}
# what a launcher could pass to switch a protection off, if any read a variable (tests/unit/roles/test_k8s_objects.py)
# the namespaces the gpu_operator role declares for its lists (k8s_objects_namespaces)
OPERATOR = {'k8s_objects_namespaces': {'operator': 'nvidia-gpu-operator'}}
SWITCH_OFF = ['-e', 'k8s_objects_no_log=false',
              '-e', json.dumps({'__k8s_objects_flags': {'no_log': False, 'force_conflicts': False, 'wait': False,
                                                        'dry_run': False}})]


def run_role(tmp_path, kubeconfig, objects, *args, **role_vars):
    """The role in apply mode on localhost, with the cluster access every phase gives (module_defaults)."""
    play = [{'name': 'Apply', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
             'module_defaults': {'group/gpuvirt.provision.cluster': {'kubeconfig': kubeconfig}},
             'tasks': [{'name': 'Apply the objects', 'ansible.builtin.include_role': {'name': 'gpuvirt.provision.k8s_objects'},
                        'vars': dict({'k8s_objects_mode': 'apply', 'k8s_objects_list': objects}, **role_vars)},
                       {'name': 'Show the result', 'ansible.builtin.debug': {
                           'msg': 'RESULT={{ __k8s_objects_result | to_json }}'}}]}]
    path = tmp_path / 'apply.yml'
    path.write_text(yaml.safe_dump(play), encoding='utf-8')
    (tmp_path / 'tmp').mkdir(exist_ok=True)
    # kubernetes.core caches discovery under TMPDIR and the client may use HOME (kube_cluster.run_playbook)
    proc = subprocess.run(['ansible-playbook', '-i', 'localhost,', str(path), '-e',
                           json.dumps({'ansible_python_interpreter': sys.executable})] + list(args),
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path / 'tmp')))
    return proc.returncode, proc.stdout + proc.stderr


def result(out):
    line = next(ln for ln in out.splitlines() if 'RESULT=' in ln)
    return json.loads(line.split('RESULT=', 1)[1].rstrip('"').replace('\\"', '"'))


def test_only_what_changes_is_written_and_a_second_run_writes_nothing(tmp_path, kube):
    cluster = kube()
    objects = [NAMESPACE, CONFIGMAP, OPERATOR_GROUP]
    rc, out = run_role(tmp_path, cluster.kubeconfig, objects, **OPERATOR)
    assert rc == 0, out
    # the Namespace is there already (the RBAC file makes it): the dry run shows no change, so it is not sent
    assert write_summary(cluster.attempts()) == ['patch configmaps nvidia-gpu-operator/gpuvirt-vgpu-devices-config',
                                                 'patch operatorgroups nvidia-gpu-operator/nvidia-gpu-operator-group']
    assert len(cluster.dry_runs()) == 3
    assert recap(out)['changed'] == '1', out
    assert result(out) == ['gpuvirt-vgpu-devices-config', 'nvidia-gpu-operator-group']
    stored = cluster.get('v1', 'ConfigMap', 'gpuvirt-vgpu-devices-config', 'nvidia-gpu-operator')
    assert stored['data'] == CONFIGMAP['data']
    assert [m['manager'] for m in stored['metadata']['managedFields']] == ['gpuvirt-provision']

    mark = cluster.now()
    rc, out = run_role(tmp_path, cluster.kubeconfig, objects, **OPERATOR)
    assert rc == 0, out
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    assert len(cluster.dry_runs(since=mark)) == 3
    assert recap(out)['changed'] == '0' and result(out) == [], out

    # --check --diff: what would change, as a dry run only
    mark = cluster.now()
    edited = dict(CONFIGMAP, data={'config.yaml': 'version: v2\n'})
    rc, out = run_role(tmp_path, cluster.kubeconfig, [NAMESPACE, edited, OPERATOR_GROUP], '--check', '--diff',
                       **OPERATOR)
    assert rc == 0, out
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    assert recap(out)['changed'] == '1' and result(out) == [], out
    # the diff of the one object that would change
    assert 'version: v2' in out and 'ConfigMap/nvidia-gpu-operator/gpuvirt-vgpu-devices-config' in out, out

    # an object outside the module's table (the outside review's ClusterRoleBinding) stops the list before any
    # request, not even a read or a dry run; so does the ConfigMap in a namespace the call does not declare
    binding = {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding', 'metadata': {'name': 'pwn'},
               'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': 'cluster-admin'},
               'subjects': [{'kind': 'ServiceAccount', 'name': 'default', 'namespace': 'nvidia-gpu-operator'}]}
    mark = cluster.now()
    rc, out = run_role(tmp_path, cluster.kubeconfig, [CONFIGMAP, binding], **OPERATOR)
    assert rc != 0 and 'ClusterRoleBinding pwn): rbac.authorization.k8s.io/v1 ClusterRoleBinding is not an object ' \
        'the collection applies' in out, out
    rc, out = run_role(tmp_path, cluster.kubeconfig, [CONFIGMAP],
                       k8s_objects_namespaces={'operator': 'gpuvirt-objects-other'})
    assert rc != 0 and 'goes in the operator namespace (gpuvirt-objects-other)' in out, out
    assert cluster.attempts(since=mark) == [] and cluster.dry_runs(since=mark) == []


def test_a_namespace_the_list_creates_comes_first_and_a_missing_one_stops_the_list(tmp_path, kube):
    cluster = kube()
    admin = cluster.admin_kubeconfig
    namespace = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpuvirt-objects-test'}}
    config = dict(CONFIGMAP, metadata={'name': 'cfg', 'namespace': 'gpuvirt-objects-test'})
    elsewhere = dict(CONFIGMAP, metadata={'name': 'cfg', 'namespace': 'gpuvirt-objects-elsewhere'})
    # a preview: the Namespace may come from an earlier call's list, so both would be created
    declared = {'k8s_objects_namespaces': {'operator': ['gpuvirt-objects-test', 'gpuvirt-objects-elsewhere']}}
    rc, out = run_role(tmp_path, admin, [config, elsewhere], '--check', **declared)
    assert rc == 0, out
    assert recap(out)['changed'] == '1', out
    # a run that applies: nothing creates gpuvirt-objects-elsewhere, so the list stops before any write
    mark = cluster.now()
    rc, out = run_role(tmp_path, admin, [namespace, config, elsewhere], **declared)
    assert rc != 0, out
    assert 'the server-side dry run of ConfigMap/gpuvirt-objects-elsewhere/cfg refused (HTTP 404' in out, out
    assert 'ConfigMap/gpuvirt-objects-test/cfg refused' not in out, out
    assert cluster.attempts(since=mark, user='admin') == [], write_summary(cluster.attempts(since=mark, user='admin'))
    mark = cluster.now()
    rc, out = run_role(tmp_path, admin, [namespace, config], **declared)
    assert rc == 0, out
    assert write_summary(cluster.attempts(since=mark, user='admin')) == [
        'patch namespaces -/gpuvirt-objects-test', 'patch configmaps gpuvirt-objects-test/cfg']


def test_a_secret_is_applied_once_and_never_shown_whatever_the_extra_variables_say(tmp_path, kube):
    cluster = kube()
    for _round in range(2):
        mark = cluster.now()
        rc, out = run_role(tmp_path, cluster.kubeconfig, [SECRET], *(SWITCH_OFF + ['-vvv', '--diff']),
                           k8s_objects_wait=True, k8s_objects_wait_timeout=30, **OPERATOR)
        assert rc == 0, out
        assert PASSWORD not in out
        writes = write_summary(cluster.attempts(since=mark))
        assert writes == (['patch secrets nvidia-gpu-operator/gpuvirt-vgpu-pull'] if _round == 0 else []), writes
    stored = cluster.get('v1', 'Secret', 'gpuvirt-vgpu-pull', 'nvidia-gpu-operator')
    assert stored['type'] == 'kubernetes.io/dockerconfigjson' and '.dockerconfigjson' in stored['data']
