# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_objects_apply before any request: it checks its own objects whatever the task passed, and an empty list
needs no cluster at all. What it sends is tested against the real API server
(tests/integration/cluster_operator/test_k8s_objects_apply.py)."""
from __future__ import annotations

import os
import pathlib

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import apply_rules
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_client
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_operator
from ansible_collections.gpuvirt.provision.plugins.modules import (
    dra_manifests, gpu_operator_manifests, gpu_operator_pull_secret, hco_permitted_devices, k8s_objects_apply,
    kubevirt_permitted_devices, machineconfig_manifests, verify_smoke_vm, vgpu_vf_machineconfig)

from .harness import run_module, settings_args

# no server answers here: a module that tried to send would fail on the connection, not with our message
NOWHERE = {'validate_certs': False}
CM = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'},
      'data': {'config.yaml': '1'}}
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


@pytest.fixture(autouse=True)
def nowhere(monkeypatch):
    # the K8S_AUTH_* environment kubernetes.core's client reads when no option is given (docs/architecture.md)
    monkeypatch.setenv('K8S_AUTH_HOST', 'https://127.0.0.1:9')
    monkeypatch.setenv('K8S_AUTH_API_KEY', 'unused')


def test_bad_objects_are_refused_naming_each_before_any_client(monkeypatch):
    res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[
        CM, {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': '../../x', 'namespace': 'gpu'}},
        {'apiVersion': 'v1', 'kind': 'Secret', 'stringData': {'p': 'hunter2'}}]))
    assert res['failed']
    assert "object number 1: metadata.name: '../../x' is not valid" in res['msg'], res['msg']
    assert "object number 2 has no metadata mapping (it has keys ['apiVersion', 'kind', 'stringData'])" in res['msg']
    assert 'hunter2' not in res['msg'] and 'no connection' not in res['msg']
    # nor in the arguments the result echoes (a registered result keeps them): the list holds a Secret
    assert 'hunter2' not in repr(res), res['invocation']
    assert res['invocation']['module_args']['definitions'] == ['ConfigMap/gpu/cfg', 'ConfigMap/gpu/../../x',
                                                               'Secret//None']


def test_nothing_to_apply_sends_nothing_and_changes_nothing(monkeypatch):
    for check in (False, True):
        res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[]), check=check, diff=True)
        assert not res['failed'] and res['changed'] is False and res['objects'] == [], res


def test_no_connection_fails_saying_nothing_was_sent(monkeypatch):
    res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[CM], namespaces={'operator': 'gpu'}))
    assert res['failed'], res
    assert 'ConfigMap/gpu/cfg' in res['msg'] and '127.0.0.1' in res['msg'], res['msg']
    assert 'nothing was applied' in res['msg'] or 'nothing sent' in res['msg'], res['msg']
    # a list without a credential is echoed as given
    assert res['invocation']['module_args']['definitions'] == [CM]


def test_a_list_holding_a_credential_is_checked_by_the_table_too(monkeypatch):
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/service-account-token',
              'metadata': {'name': 'tok', 'namespace': 'gpu'}, 'stringData': {'token': 'hunter2'}}
    res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[secret], namespaces={'operator': 'gpu'}))
    assert res['failed'] and 'only registry pull Secrets' in res['msg'], res['msg']
    assert 'hunter2' not in repr(res)


# ---- the table (module_utils/manifests/apply_rules.py) against what every caller builds today ----------------------
# Each role's objects come from its builder module, with the example inventory's values (inventories/example) and
# the roles' defaults, and go through the module with the namespaces the role declares (its k8s_objects include);
# every one must pass the table, so the table cannot drift from the builders. No server answers: an object that
# passes fails on the connection, never on a rule.

def _script():
    with open(os.path.join(ROOT, 'roles', 'vgpu_vf', 'files', 'gpuvirt_vgpu_vf_restore.py'), encoding='utf-8') as handle:
        return handle.read()


def _built(monkeypatch, module, args):
    if module in (gpu_operator_manifests, dra_manifests, hco_permitted_devices, kubevirt_permitted_devices,
                  vgpu_vf_machineconfig):
        # the module's settings and reads, split (the arguments given flat)
        args = settings_args(args, module.READS)
    if module is machineconfig_manifests:
        # the settings and the pool's own options, split; the pool built is the run's main pool (settings.pool)
        args = settings_args(args, module.READS)
        args['settings'].setdefault('pool', args['pool'])
    res = run_module(monkeypatch, module, args)
    assert not res['failed'], (module.__name__, res.get('msg'))
    return res


def _reference(*parts):
    with open(os.path.join(os.environ.get('GPUVIRT_REFERENCE', os.path.join(ROOT, '.build', 'reference')), *parts),
              encoding='utf-8') as handle:
        return handle.read()


# a vGPU host as the gpu_operator role passes it (tests/unit/plugins/modules/test_cluster_operator_modules.py)
A10_VGPU_HOST = {
    'node': 'vgpu-a10', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q',
    'facts': {'pci_devices': {'gpus': [{'bdf': '0000:41:00.0', 'device_name': 'GA102GL [A10]', 'is_vf': False}]},
              'mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev',
                                          'types': [{'name': 'NVIDIA A10-12Q', 'short_name': 'A10-12Q'}]}]}}}
EXAMPLE_NFD = {'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery',
               'metadata': {'name': 'nfd-instance', 'namespace': 'openshift-nfd'},
               'spec': {'operand': {'image': 'registry.redhat.io/openshift4/ose-node-feature-discovery-rhel9:v4.18'}}}
PERSIST = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/sys',
           'sriov_manage': '/usr/lib/nvidia/sriov-manage', 'timeout': 300,
           'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}


def caller_lists(monkeypatch):
    """``(caller, objects, namespaces, field manager)`` for every k8s_objects include that applies, as the role
    builds and declares them."""
    gop_args = {'platform': 'openshift', 'default_workload': 'container',
                'vgpu_manager': {'repository': 'registry.example.com:5000/nvidia', 'version': '580.82.02'},
                'pull_secret_name': 'gpuvirt-vgpu-pull', 'package_manifest': {'status': {'defaultChannel': 'v26.7'}},
                'alm_examples': _reference('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json'),
                'alm_examples_release': 'v26.7.0', 'vgpu_configs': {'A10-12Q': {'A10-12Q': 2}},
                'vgpu_config_default': 'A10-12Q', 'hosts': [A10_VGPU_HOST], 'nfd_install': True, 'nfd_instance': EXAMPLE_NFD}
    ocp = _built(monkeypatch, gpu_operator_manifests, gop_args)
    dra = _built(monkeypatch, gpu_operator_manifests, dict(
        gop_args, dra_stack='gpucluster', dra_nodes=['gpu-d01'], hosts=[], vgpu_configs=None,
        vgpu_config_default='default', operator_release='v26.7.0'))
    k8s = _built(monkeypatch, gpu_operator_manifests, dict(gop_args, platform='kubernetes', nfd_install=False,
                                                           nfd_instance=None, alm_examples=None))
    secret = _built(monkeypatch, gpu_operator_pull_secret, {
        'name': 'gpuvirt-vgpu-pull', 'namespace': ocp['namespace'], 'registry': 'registry.example.com:5000',
        'username': 'robot', 'password': 'czNjcjN0LXZhbHVl'})
    assert ocp['gpu_cluster_objects'] == [] and len(dra['gpu_cluster_objects']) == 2
    mcs = _built(monkeypatch, machineconfig_manifests, {
        'pool': 'gpu-worker', 'cpu_vendor': 'intel', 'create_pool': True, 'existing_pools': ['master', 'worker'],
        'node_selector': {'node-role.kubernetes.io/gpu-worker': ''}, 'extra_kernel_args': []})
    amd = _built(monkeypatch, machineconfig_manifests, {'pool': 'worker', 'cpu_vendor': 'amd', 'iommu_passthrough': False,
                                                        'blacklist_nouveau': False, 'existing_pools': ['worker']})
    vf = _built(monkeypatch, vgpu_vf_machineconfig, {
        'pool': 'gpu-vf', 'script': _script(), 'hosts': [{'host': 'a', 'node': 'a', 'persist': PERSIST}]})
    claims = _built(monkeypatch, dra_manifests, {'operator_driver': True, 'dra_nodes': ['n1'], 'kubevirt_version': '1.8.1',
                                                 'claim_templates': [{'name': 'vfio-gpu', 'namespace': 'default'}]})
    hco_gate = _built(monkeypatch, dra_manifests, {'operator_driver': True, 'dra_nodes': ['n1'], 'platform': 'hco',
                                                   'kubevirt_version': '1.8.1'})
    devices_hco = _built(monkeypatch, hco_permitted_devices, {'hco_version': '4.18.0', 'pci_devices': [
        {'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10'}]})
    devices_kv = _built(monkeypatch, kubevirt_permitted_devices, {'kubevirt_version': 'v1.9.0', 'pci_devices': [
        {'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10'}]})
    vm = _built(monkeypatch, verify_smoke_vm, {'settings': {'name': 'gpuvirt-smoke', 'namespace': 'default',
                                                            'resource': 'nvidia.com/GA102GL_A10',
                                                            'image': 'quay.io/containerdisks/fedora:41',
                                                            'running': False}})
    operator = {'operator': ocp['namespace']}
    manager = 'gpuvirt-provision'
    # what the upgrade's Helm step applies: `helm show crds` output as the plan reads it (upgrade_operator.chart_crds)
    crds, problems = upgrade_operator.chart_crds(yaml.safe_dump(
        {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
         'metadata': {'name': 'clusterpolicies.nvidia.com'},
         'spec': {'group': 'nvidia.com', 'scope': 'Cluster',
                  'names': {'kind': 'ClusterPolicy', 'plural': 'clusterpolicies', 'singular': 'clusterpolicy',
                            'listKind': 'ClusterPolicyList'},
                  'versions': [{'name': 'v1', 'served': True, 'storage': True,
                                'schema': {'openAPIV3Schema': {'type': 'object'}}}]}}), 'chart gpu-operator')
    assert not problems, problems
    return [
        ('upgrade Helm chart CRDs', crds, {}, manager),
        ('gpu_operator install (OpenShift)', ocp['install_objects'], operator, manager),
        ('gpu_operator install (Kubernetes)', k8s['install_objects'], {'operator': k8s['namespace']}, manager),
        ('gpu_operator pull Secret', [secret['object']], operator, manager),
        ('gpu_operator vGPU ConfigMap', ocp['config_objects'], operator, manager),
        ('gpu_operator ClusterPolicy', [ocp['cluster_policy']], {}, manager),
        ('gpu_operator NVIDIADriver and GPUCluster', dra['gpu_cluster_objects'], {}, manager),
        ('gpu_operator NFD operator', ocp['nfd_objects'], {}, manager),
        ('gpu_operator NodeFeatureDiscovery', [ocp['nfd_instance']], {}, manager),
        ('machineconfig IOMMU MachineConfig and pool', mcs['objects'], {}, manager),
        ('machineconfig IOMMU MachineConfig (AMD, no passthrough, no blacklist)', amd['objects'], {}, manager),
        ('vgpu_vf VF MachineConfig', vf['objects'], {}, manager),
        ('dra_driver claim templates', claims['objects'], {'workload': ['default']}, manager),
        ('dra_driver KubeVirt gate', [claims['gate_object']], {'kubevirt': ['kubevirt', 'openshift-cnv']},
         'gpuvirt-provision-dra-gate'),
        ('dra_driver HyperConverged gate', [hco_gate['gate_object']], {'kubevirt': ['kubevirt', 'openshift-cnv']},
         'gpuvirt-provision-dra-gate'),
        ('kubevirt_devices HyperConverged', [devices_hco['object']], {'kubevirt': ['openshift-cnv', 'kubevirt']},
         'gpuvirt-provision-kubevirt-devices'),
        ('kubevirt_devices KubeVirt', [devices_kv['object']], {'kubevirt': ['openshift-cnv', 'kubevirt']},
         'gpuvirt-provision-kubevirt-devices'),
        ('verify smoke VM', [vm['object']], {'workload': 'default'}, manager),
    ]


def test_every_object_a_role_builds_passes_the_table(monkeypatch):
    lists = caller_lists(monkeypatch)
    kinds = set()
    for caller, objects, namespaces, manager in lists:
        assert objects and all(objects), caller
        res = run_module(monkeypatch, k8s_objects_apply, dict(
            NOWHERE, definitions=objects, namespaces=namespaces, field_manager=manager))
        assert res['failed'] and 'no connection to the API server' in res['msg'], (caller, res['msg'])
        kinds.update((o['apiVersion'], o['kind']) for o in objects)
    # every row of the table is one a builder makes: the table holds nothing no role builds
    assert kinds == set((r.api_version, r.kind) for r in apply_rules.RULES), kinds ^ set(
        (r.api_version, r.kind) for r in apply_rules.RULES)


def test_each_list_is_refused_in_a_namespace_its_role_does_not_declare(monkeypatch):
    for caller, objects, namespaces, manager in caller_lists(monkeypatch):
        if not namespaces or caller.startswith('gpu_operator install (Kubernetes)'):
            continue
        res = run_module(monkeypatch, k8s_objects_apply, dict(
            NOWHERE, definitions=objects, field_manager=manager, namespaces={'workload': 'elsewhere'}))
        assert res['failed'] and 'is refused' in res['msg'] and 'no connection' not in res['msg'], (caller, res['msg'])


def test_every_include_of_k8s_objects_is_one_of_the_callers_above():
    """A new caller of k8s_objects (apply mode) must be added above, with its builder's objects, before it ships."""
    found = []
    for base in ('roles', 'playbooks'):
        for path in sorted(pathlib.Path(ROOT, base).rglob('*.yml')):
            if 'roles/k8s_objects/' in str(path):
                continue
            text = path.read_text(encoding='utf-8')
            for task in _tasks(yaml.safe_load(text)):
                include = task.get('ansible.builtin.include_role') or task.get('ansible.builtin.import_role') or {}
                if isinstance(include, dict) and include.get('name') == 'gpuvirt.provision.k8s_objects':
                    found.append((str(path.relative_to(ROOT)), (task.get('vars') or {}).get('k8s_objects_render_prefix'),
                                  (task.get('vars') or {}).get('k8s_objects_namespaces')))
    assert sorted(found, key=str) == sorted(CALLERS, key=str), sorted(found, key=str)


def _tasks(tasks):
    for task in tasks if isinstance(tasks, list) else []:
        if isinstance(task, dict):
            yield task
            for key in ('block', 'rescue', 'always'):
                yield from _tasks(task.get(key))


OPERATOR_NS = {'operator': '{{ __gpu_operator_built.namespace }}'}
KUBEVIRT_DEVICES_NS = {'kubevirt': ['{{ kubevirt_devices_hco_namespace }}', '{{ kubevirt_devices_kubevirt_namespace }}']}
# (task file, render prefix, the namespaces it declares): what caller_lists builds for each
CALLERS = [
    ('roles/dra_driver/tasks/main.yml', '70-dra',
     {'workload': "{{ dra_driver_claim_templates | map(attribute='namespace') | list }}"}),
    ('roles/dra_driver/tasks/main.yml', '71-dra-gate',
     {'kubevirt': ['{{ dra_driver_kubevirt_namespace }}', '{{ dra_driver_hco_namespace }}']}),
    ('roles/gpu_operator/tasks/main.yml', '40-gpu-operator', OPERATOR_NS),
    ('roles/gpu_operator/tasks/main.yml', '41-gpu-operator-secret', OPERATOR_NS),
    ('roles/gpu_operator/tasks/main.yml', '42-gpu-operator-config', OPERATOR_NS),
    ('roles/gpu_operator/tasks/nfd.yml', '35-nfd-operator', None),
    ('roles/gpu_operator/tasks/nfd.yml', '36-nfd-instance', None),
    ('roles/gpu_operator/tasks/nfd.yml', '36-nfd-instance', None),
    ('roles/gpu_operator/tasks/openshift.yml', '43-gpu-operator-policy', None),
    ('roles/kubevirt_devices/tasks/main.yml', '60-kubevirt-devices', KUBEVIRT_DEVICES_NS),
    ('roles/machineconfig/tasks/rollout.yml', '{{ machineconfig_rollout_render_prefix }}', None),
    # render mode only (k8s_objects_mode: render): never reaches the apply
    ('roles/node_labels/tasks/main.yml', '30-node-labels', None),
    ('roles/verify/tasks/main.yml', '90-verify', {'workload': '{{ verify_smoke_vm_namespace }}'}),
]


@pytest.mark.parametrize('manager', ['kubectl', 'gpuvirt-provision-', 'helm', 'gpuvirt-provision-X', ''])
def test_a_foreign_field_manager_is_refused_before_any_client(monkeypatch, manager):
    res = run_module(monkeypatch, k8s_objects_apply, dict(
        NOWHERE, definitions=[CM], field_manager=manager, namespaces={'operator': 'gpu'}))
    assert res['failed'] and 'field_manager: %r is not a field manager of the collection' % manager in res['msg']
    assert 'no connection' not in res['msg']


def test_the_reviews_objects_are_refused_through_the_module(monkeypatch):
    binding = {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding', 'metadata': {'name': 'pwn'},
               'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': 'cluster-admin'},
               'subjects': [{'kind': 'ServiceAccount', 'name': 'default', 'namespace': 'tenant'}]}
    kube_system = dict(CM, metadata={'name': 'x', 'namespace': 'kube-system'})
    res = run_module(monkeypatch, k8s_objects_apply, dict(
        NOWHERE, definitions=[binding, kube_system], namespaces={'operator': 'gpu'}))
    assert res['failed'] and 'no connection' not in res['msg'], res['msg']
    assert 'object number 0 (ClusterRoleBinding pwn)' in res['msg']
    assert 'object number 1 (ConfigMap kube-system/x) is refused' in res['msg']
    res = run_module(monkeypatch, k8s_objects_apply, dict(
        NOWHERE, definitions=[kube_system], namespaces={'operator': 'kube-system'}))
    assert res['failed'] and 'kube-system is a namespace of the platform itself' in res['msg'], res['msg']


def test_server_warnings_of_a_list_holding_a_credential_are_counted_not_shown(monkeypatch):
    """ansible-core prints a result's warnings even under no_log, and an API server warning may quote a field. The
    server here is a stand-in for kubernetes.core's client (the requests are the module's own glue; what they send
    to a real API server: tests/integration/cluster_operator/test_k8s_objects_apply.py)."""
    said = 'unknown field "stringData.czNjcjN0LXZhbHVl"'

    def send(self, obj, dry_run):
        # one warning per object, each kept once, as Requests.send keeps them
        warning = '%s of %s' % (said, obj['kind'])
        if warning not in self.warnings:
            self.warnings.append(warning)
        return dict(obj, metadata=dict(obj['metadata'], resourceVersion='1'))
    monkeypatch.setattr(k8s_client, 'get_api_client', lambda **_kw: object())
    monkeypatch.setattr(k8s_objects_apply.Requests, 'read', lambda self, obj: None)
    monkeypatch.setattr(k8s_objects_apply.Requests, 'send', send)
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/dockerconfigjson',
              'metadata': {'name': 'pull', 'namespace': 'gpu'}, 'stringData': {'.dockerconfigjson': 'czNjcjN0LXZhbHVl'}}
    res = run_module(monkeypatch, k8s_objects_apply, dict(
        NOWHERE, definitions=[CM, secret], namespaces={'operator': 'gpu'}))
    assert not res['failed'] and res['changed'], res
    assert res['warnings'] == ['2 server warnings hidden (the list holds a credential)'], res['warnings']
    assert 'czNjcjN0LXZhbHVl' not in repr(res)
    # a list without a credential shows them as the server sent them
    res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[CM], namespaces={'operator': 'gpu'}))
    assert res['warnings'] == [said + ' of ConfigMap'], res
