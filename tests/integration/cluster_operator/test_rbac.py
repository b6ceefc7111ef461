# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped least-privilege RBAC (the file each platform row names in its rbac column:
docs/rbac/gpuvirt-automation.yml for OpenShift, gpuvirt-automation-kubernetes.yml for Kubernetes and RKE2) is what the
phases need, and no more, proved against the real API server for every row of the platform table.

Every apply test runs as the service account those files bind (the harness grants the file of the platform it
serves, as is). Here:
* the harness grants exactly the shipped file: the bindings to the account on the server are the file's, with the
  file's rules;
* as that account, real requests and SelfSubjectAccessReviews show it cannot read a Secret in kube-system nor in
  any namespace but its own (and there only the pull Secret by name), cannot create a VM outside the verify
  namespace, and can touch only its own namespaces;
* a second service account gets none of it, or all of it but one rule, and the run stops on the API server's
  refusal naming the verb and resource.
"""
from __future__ import annotations

import copy
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform as platform_table  # noqa: E402
import kube_cluster  # noqa: E402

W = 'nvidia.com/gpu.workload.config'
RBAC = 'rbac.authorization.k8s.io/v1'
SA = {'kind': 'ServiceAccount', 'name': apiserver.AUTOMATION_SA, 'namespace': apiserver.AUTOMATION_NS}
# per platform row: the GPU Operator's namespace (its gpu_operator_namespace), the namespaces the file lets the
# automation label (that one, and the NFD operator's where OLM installs NFD: roles/gpu_operator's openshift-nfd),
# and the names of the objects it may touch there
OPERATOR_NS = dict((row.name, row.gpu_operator_namespace) for row in platform_table.PLATFORM_TABLE)
OWN_NAMESPACES = dict((row.name, {row.gpu_operator_namespace} | {'openshift-nfd'} if row.nfd_install == 'olm'
                       else {row.gpu_operator_namespace}) for row in platform_table.PLATFORM_TABLE)
PULL_SECRET, VGPU_CONFIGMAP = 'gpuvirt-vgpu-pull', 'gpuvirt-vgpu-devices-config'
VERIFY_NS, SMOKE_VM = 'default', 'gpuvirt-smoke'
PLATFORMS = platform_table.PLATFORM_NAMES


def shipped(platform):
    return apiserver.rbac_objects(apiserver.RBAC_FILES[platform])


def start(kube, platform, objects=()):
    return kube(list(objects), platform=platform)


def as_automation(cluster, method, path, body=None, content_type='application/json'):
    return cluster.server.request(method, path, body, user='automation', raw=True, content_type=content_type)[0]


def can(cluster, verb, resource, namespace='', name='', group=''):
    return cluster.server.can('automation', {'verb': verb, 'group': group, 'resource': resource,
                                             'namespace': namespace, 'name': name})


def secret(name, namespace):
    return {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': name, 'namespace': namespace},
            'type': 'Opaque', 'data': {'token': 'c2VjcmV0'}}


def vm(name, namespace):
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
            'metadata': {'name': name, 'namespace': namespace},
            'spec': {'running': False, 'template': {'spec': {'domain': {'devices': {}}}}}}


def bound_to_automation(cluster):
    """(kind, namespace, name) -> rules of every role the server binds to the automation account."""
    out = {}
    for kind, plural in (('ClusterRoleBinding', 'clusterrolebindings'), ('RoleBinding', 'rolebindings')):
        for binding in cluster.server.request('GET', '/apis/%s/%s' % (RBAC, plural))['items']:
            if not any(dict((k, s.get(k)) for k in SA) == SA for s in binding.get('subjects') or []):
                continue
            ref, ns = binding['roleRef'], binding['metadata'].get('namespace')
            role = cluster.get(RBAC, ref['kind'], ref['name'], ns if ref['kind'] == 'Role' else None)
            out[(ref['kind'], ns or '', ref['name'])] = role['rules']
    return out


@pytest.mark.parametrize('platform', PLATFORMS)
def test_the_harness_grants_exactly_the_shipped_file(kube, platform):
    cluster = start(kube, platform)
    objects = shipped(platform)
    roles = dict(((o['kind'], o['metadata'].get('namespace', ''), o['metadata']['name']), o['rules'])
                 for o in objects if o['kind'] in ('Role', 'ClusterRole'))
    on_server = bound_to_automation(cluster)
    assert set(on_server) == set(roles)
    for key, rules in roles.items():
        # the server stores the rules as given, fields it does not default aside
        stored = [dict((k, v) for k, v in rule.items() if v) for rule in on_server[key]]
        assert stored == rules, key
    # no other file is granted alongside
    for other in PLATFORMS:
        for ns in OWN_NAMESPACES[other] - OWN_NAMESPACES[platform]:
            assert cluster.get('v1', 'Namespace', ns) is None, (platform, other, ns)


@pytest.mark.parametrize('platform', PLATFORMS)
def test_no_secret_outside_its_own_namespace_and_name_is_readable(kube, platform):
    ours = OPERATOR_NS[platform]
    planted = [secret('token', 'kube-system'), secret('token', VERIFY_NS), secret('token', 'tenant-a'),
               secret('token', ours)]
    cluster = start(kube, platform, planted)
    # real requests as the automation account: 403 Forbidden, not a 404 that would only say "not there"
    for obj in planted:
        meta = obj['metadata']
        assert as_automation(cluster, 'GET', '/api/v1/namespaces/%s/secrets/token' % meta['namespace']) == 403, meta
        assert as_automation(cluster, 'GET', '/api/v1/namespaces/%s/secrets' % meta['namespace']) == 403, meta
    assert as_automation(cluster, 'GET', '/api/v1/secrets') == 403
    assert as_automation(cluster, 'GET', '/api/v1/secrets?watch=1') == 403
    # the control: the one Secret it owns is allowed (absent here: 404, past authorization)
    assert as_automation(cluster, 'GET', '/api/v1/namespaces/%s/secrets/%s' % (ours, PULL_SECRET)) == 404
    # every namespace the server has, and any name: only the pull Secret, by name, in the operator namespace
    namespaces = [n['metadata']['name'] for n in cluster.server.request('GET', '/api/v1/namespaces')['items']]
    assert 'kube-system' in namespaces and ours in namespaces
    for namespace in namespaces + ['']:
        for verb in ('get', 'list', 'watch'):
            for name in ('', 'token', PULL_SECRET, VGPU_CONFIGMAP):
                allowed = can(cluster, verb, 'secrets', namespace, name)
                assert allowed == (namespace == ours and verb == 'get' and name == PULL_SECRET), \
                    (verb, namespace, name)
                allowed = can(cluster, verb, 'configmaps', namespace, name)
                assert allowed == (namespace == ours and verb == 'get' and name == VGPU_CONFIGMAP), \
                    (verb, namespace, name)


@pytest.mark.parametrize('platform', PLATFORMS)
def test_no_vm_outside_the_verify_namespace(kube, platform):
    cluster = start(kube, platform, [{'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'tenant-a'}}])
    base = '/apis/kubevirt.io/v1/namespaces/%s/virtualmachines'
    apply_type = 'application/apply-patch+yaml'
    # a plain create and a server-side apply (how the automation writes) elsewhere: refused
    for namespace in ('tenant-a', 'kube-system'):
        assert as_automation(cluster, 'POST', base % namespace, vm(SMOKE_VM, namespace)) == 403
        assert as_automation(cluster, 'PATCH', (base % namespace) + '/%s?fieldManager=t' % SMOKE_VM,
                             json.dumps(vm(SMOKE_VM, namespace)), apply_type) == 403
        assert not can(cluster, 'create', 'virtualmachines', namespace, SMOKE_VM, 'kubevirt.io')
    # in the verify namespace, another VM: refused; the smoke VM: allowed (a dry run, stored nowhere). A server-side
    # apply that creates is authorized as create WITH the object's name (kube-apiserver, k8s.io/apiserver
    # pkg/endpoints/handlers/patch.go, createAuthorizerAttributes), so resourceNames bound it; a POST carries no name
    # and is refused.
    assert as_automation(cluster, 'POST', base % VERIFY_NS, vm('other', VERIFY_NS)) == 403
    assert as_automation(cluster, 'PATCH', (base % VERIFY_NS) + '/other?fieldManager=t',
                         json.dumps(vm('other', VERIFY_NS)), apply_type) == 403
    assert as_automation(cluster, 'PATCH', (base % VERIFY_NS) + '/%s?fieldManager=t&dryRun=All' % SMOKE_VM,
                         json.dumps(vm(SMOKE_VM, VERIFY_NS)), apply_type) == 201
    assert cluster.get('kubevirt.io/v1', 'VirtualMachine', SMOKE_VM, VERIFY_NS) is None
    # and it deletes nothing, anywhere
    assert not can(cluster, 'delete', 'virtualmachines', VERIFY_NS, SMOKE_VM, 'kubevirt.io')


@pytest.mark.parametrize('platform', PLATFORMS)
def test_only_its_own_namespaces_are_touched_by_name(kube, platform):
    cluster = start(kube, platform)
    for ns in OWN_NAMESPACES[platform]:
        assert can(cluster, 'patch', 'namespaces', '', ns)
        assert not can(cluster, 'delete', 'namespaces', '', ns)
    for ns in ('kube-system', 'default', 'tenant-a', apiserver.AUTOMATION_NS):
        assert not can(cluster, 'patch', 'namespaces', '', ns)
        # server-side apply asks for create with the object's name: no namespace at all can be made
        assert not can(cluster, 'create', 'namespaces', '', ns)
    assert not can(cluster, 'create', 'namespaces')
    # a Namespace patch as a real request, outside its own: 403
    assert as_automation(cluster, 'PATCH', '/api/v1/namespaces/kube-system', {'metadata': {'labels': {'x': 'y'}}},
                         'application/merge-patch+json') == 403
    # no RBAC of its own making, nowhere
    for resource in ('roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'):
        for verb in ('create', 'patch', 'escalate', 'bind'):
            assert not can(cluster, verb, resource, '', '', 'rbac.authorization.k8s.io'), (verb, resource)


def test_the_helm_file_binds_its_own_account_and_widens_nothing_for_the_automation(kube):
    cluster = start(kube, 'kubernetes', [secret('token', 'kube-system')])
    helm = apiserver.rbac_objects(apiserver.HELM_RBAC_FILE)
    for obj in helm:
        if obj['kind'] == 'Namespace':
            continue
        cluster.create(obj)
    bindings = [o for o in helm if o['kind'] in ('ClusterRoleBinding', 'RoleBinding')]
    assert bindings and all(s['name'] != apiserver.AUTOMATION_SA for b in bindings for s in b['subjects'])
    assert as_automation(cluster, 'GET', '/api/v1/namespaces/kube-system/secrets/token') == 403
    assert set(bound_to_automation(cluster)) == set(
        (o['kind'], o['metadata'].get('namespace', ''), o['metadata']['name'])
        for o in shipped('kubernetes') if o['kind'] in ('Role', 'ClusterRole'))


# --- a second account: none of it, or all of it but one rule ------------------------------------------------------

def nodes():
    return [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': n, 'labels': {}}}
            for n in ('ctr-1', 'pt-1', 'vgpu-1')]


def run_nodes(tmp_path, kubeconfig):
    return kube_cluster.run_playbook(tmp_path, 'nodes', os.path.join(HERE, 'inventories', 'mixed-openshift.yml'),
                                     gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=kubeconfig)


def grant_limited(cluster, objects):
    """The file's roles and bindings again, for the second account (its namespaces are there: the harness made
    them for the automation)."""
    for obj in copy.deepcopy(objects):
        if obj['kind'] in ('Namespace', 'ServiceAccount'):
            continue
        obj['metadata']['name'] = 'gpuvirt-limited'
        if obj['kind'].endswith('Binding'):
            obj['roleRef']['name'] = 'gpuvirt-limited'
            obj['subjects'] = [{'kind': 'ServiceAccount', 'name': 'gpuvirt-limited',
                                'namespace': apiserver.AUTOMATION_NS}]
        cluster.create(obj)


def test_the_shipped_role_labels_the_nodes(tmp_path, kube):
    cluster = kube(nodes())
    grant_limited(cluster, shipped('openshift'))
    rc, log = run_nodes(tmp_path, cluster.server.kubeconfig_path('limited'))
    assert rc == 0, log
    assert cluster.get('v1', 'Node', 'ctr-1')['metadata']['labels'][W] == 'container'


def test_without_any_grant_the_first_read_is_refused_by_name(tmp_path, kube):
    cluster = kube(nodes())
    rc, log = run_nodes(tmp_path, cluster.server.kubeconfig_path('limited'))
    assert rc != 0, log
    assert ('User \\"%s\\" cannot list resource \\"nodes\\"' % apiserver.LIMITED_USER) in log, log
    assert cluster.attempts(user=apiserver.LIMITED_USER) == []


def test_a_role_without_the_crd_read_is_refused_after_the_cluster_answered(tmp_path, kube):
    # the cluster role asks in one call whether the cluster answers, then whether it serves HCO's CRD
    # (gpuvirt_kubevirt_config auto): the first read passes, the second is refused; the message says the cluster
    # answered and names the read and the grant, not "did not answer" with the kubeconfig's ways out
    objects = shipped('openshift')
    for obj in objects:
        if obj['kind'] == 'ClusterRole':
            obj['rules'] = [r for r in obj['rules'] if r['resources'] != ['customresourcedefinitions']]
    cluster = kube(nodes())
    grant_limited(cluster, objects)
    rc, log = run_nodes(tmp_path, cluster.server.kubeconfig_path('limited'))
    assert rc != 0, log
    said = ' '.join(log.split())
    assert ('the cluster answered, but the read of CustomResourceDefinition hyperconvergeds.hco.kubevirt.io '
            'refused (HTTP 403 Forbidden)') in said, log
    assert 'cannot get resource \\"customresourcedefinitions\\"' in said, log
    assert 'the "cluster" rows of docs/rbac/README.md' in said and 'The cluster did not answer' not in said, log
    assert cluster.attempts(user=apiserver.LIMITED_USER) == []


def test_a_role_without_node_patch_is_refused_naming_the_verb_and_resource(tmp_path, kube):
    objects = shipped('openshift')
    for obj in objects:
        for rule in obj.get('rules', []) if obj['kind'] == 'ClusterRole' else []:
            if rule['resources'] == ['nodes']:
                rule['verbs'] = [v for v in rule['verbs'] if v != 'patch']
    cluster = kube(nodes())
    grant_limited(cluster, objects)
    rc, log = run_nodes(tmp_path, cluster.server.kubeconfig_path('limited'))
    assert rc != 0, log
    assert 'cannot patch resource \\"nodes\\"' in log, log
    # the node_labels role merge-patches the nodes directly (no dry run first): the patches were sent and the API
    # server refused every one (403), so nothing was written
    attempts = cluster.attempts(user=apiserver.LIMITED_USER)
    sent = sorted(set(zip(kube_cluster.write_summary(attempts), [e['responseStatus']['code'] for e in attempts])))
    assert sent and {code for _summary, code in sent} == {403}, sent
    assert {summary.split(' -/')[0] for summary, _code in sent} == {'patch nodes'}, sent
    assert cluster.writes(user=apiserver.LIMITED_USER) == []
