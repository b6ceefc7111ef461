"""Cluster access is given once, the way kubernetes.core intends: every play that runs a cluster module gives the
action group gpuvirt.provision.cluster (kubernetes.core's k8s and helm groups, meta/runtime.yml) the same
module_defaults from the collection-wide gpuvirt_* settings, and no role task passes kubeconfig, context or
validate_certs itself. The cluster roles read the one resolved fact gpuvirt_cluster, and depend on the role that
sets it."""
from __future__ import annotations

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
GROUP = 'group/gpuvirt.provision.cluster'
MODULE_DEFAULTS = {GROUP: {
    'kubeconfig': '{{ gpuvirt_kubeconfig | default(omit, true) }}',
    'context': '{{ gpuvirt_kube_context | default(omit, true) }}',
    'validate_certs': "{{ gpuvirt_validate_certs | default(true) | gpuvirt.provision.strict_bool('gpuvirt_validate_certs') }}",
}}
CLUSTER_ROLES = ('gpu_operator', 'node_labels', 'kubevirt_devices', 'machineconfig', 'dra_driver', 'verify')
# roles whose tasks call cluster modules (the cluster roles, their helpers, the drain, the image's version read)
ROLES_WITH_CLUSTER_MODULES = CLUSTER_ROLES + ('cluster', 'k8s_objects', 'reboot', 'vgpu_manager_image')
ACCESS = ('kubeconfig', 'context', 'validate_certs', 'kube_context', 'kubeconfig_path', 'verify_ssl')
BLOCK_KEYS = ('block', 'rescue', 'always', 'tasks', 'pre_tasks', 'post_tasks', 'handlers')


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in BLOCK_KEYS:
            if key in node:
                yield from _tasks(node[key])


def _uses_cluster(play):
    for task in _tasks(play.get('tasks', []) + play.get('pre_tasks', []) + play.get('post_tasks', [])):
        if any(k.startswith('kubernetes.core.') for k in task):
            return True
        for key in ('ansible.builtin.include_role', 'ansible.builtin.import_role'):
            if key in task and task[key]['name'].split('.')[-1] in ROLES_WITH_CLUSTER_MODULES:
                return True
    return False


def _plays():
    paths = sorted(ROOT.glob('playbooks/*.yml')) + sorted(ROOT.glob('tests/integration/*/*.yml'))
    for path in paths:
        for play in yaml.safe_load(path.read_text()) or []:
            if isinstance(play, dict) and 'hosts' in play:
                yield path.relative_to(ROOT), play


def test_runtime_declares_the_cluster_group_over_kubernetes_core():
    runtime = yaml.safe_load((ROOT / 'meta' / 'runtime.yml').read_text())
    (metadata,) = [m['metadata'] for m in runtime['action_groups']['cluster'] if isinstance(m, dict)]
    assert metadata['extend_group'] == ['kubernetes.core.k8s', 'kubernetes.core.helm']


def test_every_play_running_a_cluster_module_has_the_same_module_defaults():
    found = {str(path) for path, play in _plays() if _uses_cluster(play)}
    # the phases that talk to the cluster, and the drain, are all found
    # (the cluster phases' plays are in their bodies, phase_<name>.yml, which playbooks/<name>.yml imports)
    assert found >= {'playbooks/preflight.yml', 'playbooks/host_prep.yml', 'playbooks/phase_operator.yml',
                     'playbooks/phase_nodes.yml', 'playbooks/phase_kubevirt.yml', 'playbooks/phase_verify.yml'}
    bad = [(str(path), play['name']) for path, play in _plays()
           if _uses_cluster(play) and play.get('module_defaults') != MODULE_DEFAULTS]
    assert not bad, 'plays without the collection-wide module_defaults: %s' % bad


@pytest.mark.parametrize('role', ROLES_WITH_CLUSTER_MODULES)
def test_no_role_task_passes_cluster_access_itself(role):
    bad = []
    for path in sorted((ROOT / 'roles' / role / 'tasks').glob('*.yml')):
        for task in _tasks(yaml.safe_load(path.read_text()) or []):
            for module, args in task.items():
                if module.startswith('kubernetes.core.') and isinstance(args, dict):
                    bad += ['%s: %s %s' % (path.name, module, k) for k in ACCESS if k in args]
                # nor hands it to the internal k8s_objects role
            bad += ['%s: vars %s' % (path.name, k) for k in (task.get('vars') or {})
                    if k.startswith('k8s_objects_') and k[len('k8s_objects_'):] in ACCESS]
    assert not bad, bad


@pytest.mark.parametrize('role', CLUSTER_ROLES)
def test_cluster_roles_depend_on_the_cluster_role_and_declare_no_mode_of_their_own(role):
    meta = yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'main.yml').read_text())
    assert [d['role'] if isinstance(d, dict) else d for d in meta['dependencies']] == ['gpuvirt.provision.cluster']
    defaults = yaml.safe_load((ROOT / 'roles' / role / 'defaults' / 'main.yml').read_text()) or {}
    specs = yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())
    options = specs['argument_specs']['main'].get('options') or {}
    own = ['%s_%s' % (role, s) for s in ('mode', 'render_dir', 'kubeconfig', 'context', 'validate_certs', 'platform')]
    assert not [n for n in own if n in defaults or n in options]
