# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The harness's reset between two tests (tools/kube/apiserver.py KubeAPIServer.reset) on the real kube-apiserver.

A reset returns the server to what a fresh one holds plus the platform's shipped RBAC file, granted as the file
says. It keeps the previous grant's objects rather than making them again when every one of them is there as that
grant made it (and the platform is the same); whatever a test changed, added or deleted is undone. These tests
hold it to both halves: an untouched grant costs no write, and a touched one is made afresh.
"""
from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402

RBAC = 'rbac.authorization.k8s.io/v1'
RBAC_KINDS = (('roles', 'Role'), ('clusterroles', 'ClusterRole'), ('rolebindings', 'RoleBinding'),
              ('clusterrolebindings', 'ClusterRoleBinding'))


def admin_writes(cluster, since):
    return [(e['verb'], e['objectRef'].get('resource'), e['objectRef'].get('name'))
            for e in cluster.server.audit(since) if e['user']['username'] == 'admin'
            and e['verb'] in apiserver.WRITE_VERBS]


def rbac_on_server(server):
    """(kind, namespace, name) -> rules, or roleRef and subjects, of every RBAC object a fresh server lacks."""
    held = {}
    for plural, kind in RBAC_KINDS:
        for item in server.request('GET', server.path(RBAC, plural))['items']:
            meta = item['metadata']
            if meta['uid'] in server._baseline:  # pylint: disable=protected-access  # a fresh server's own
                continue
            held[(kind, meta.get('namespace', ''), meta['name'])] = (
                item.get('rules') if kind.endswith('Role') else (item['roleRef'], item.get('subjects')))
    return held


def rbac_in_file(platform):
    out = {}
    for obj in apiserver.rbac_objects(apiserver.RBAC_FILES[platform]):
        if obj['kind'] in dict(RBAC_KINDS).values():
            out[(obj['kind'], obj['metadata'].get('namespace', ''), obj['metadata']['name'])] = (
                obj.get('rules') if obj['kind'].endswith('Role') else (obj['roleRef'], obj.get('subjects')))
    return out


def test_an_untouched_grant_is_kept_and_a_touched_one_made_afresh(kube):
    cluster = kube(openshift=False)
    assert rbac_on_server(cluster.server) == rbac_in_file('kubernetes')

    # nothing changed since the grant: the next reset deletes nothing of it and grants nothing
    mark = cluster.now()
    cluster = kube(openshift=False)
    assert admin_writes(cluster, mark) == []
    assert rbac_on_server(cluster.server) == rbac_in_file('kubernetes')

    # a test edits a granted ClusterRole (every rule dropped), adds a binding of its own and a ConfigMap in a
    # granted namespace: the next reset undoes all three
    role = cluster.server.request('GET', cluster.server.path(RBAC, 'clusterroles', name='gpuvirt-automation'))
    role['rules'] = []
    cluster.server.request('PUT', cluster.server.path(RBAC, 'clusterroles', name='gpuvirt-automation'), role)
    cluster.create({'apiVersion': RBAC, 'kind': 'ClusterRoleBinding', 'metadata': {'name': 'test-extra'},
                    'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole',
                                'name': 'cluster-admin'},
                    'subjects': [{'kind': 'ServiceAccount', 'name': apiserver.AUTOMATION_SA,
                                  'namespace': apiserver.AUTOMATION_NS}]})
    cluster.create({'apiVersion': 'v1', 'kind': 'ConfigMap',
                    'metadata': {'name': 'left-over', 'namespace': apiserver.AUTOMATION_NS}})
    exotic = {'verb': 'delete', 'group': '', 'resource': 'namespaces', 'name': 'kube-system'}
    deadline = time.time() + 30  # the authorizer sees a new binding through its informer, a moment later
    while not cluster.server.can('automation', exotic) and time.time() < deadline:
        time.sleep(0.2)
    assert cluster.server.can('automation', exotic)  # through the added binding
    mark = cluster.now()
    cluster = kube(openshift=False)
    assert ('create', 'clusterroles', 'gpuvirt-automation') in admin_writes(cluster, mark)
    assert rbac_on_server(cluster.server) == rbac_in_file('kubernetes')
    assert cluster.get('v1', 'ConfigMap', 'left-over', apiserver.AUTOMATION_NS) is None
    assert not cluster.server.can('automation', exotic)

    # another platform: its own file, nothing of the other one's
    cluster = kube(openshift=True)
    assert rbac_on_server(cluster.server) == rbac_in_file('openshift')


def test_a_crd_a_test_made_goes_with_its_objects_and_discovery_follows(kube):
    cluster = kube(openshift=False)
    crd = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'probes.reset.gpuvirt.io'},
           'spec': {'group': 'reset.gpuvirt.io', 'scope': 'Namespaced',
                    'names': {'plural': 'probes', 'singular': 'probe', 'kind': 'Probe', 'listKind': 'ProbeList'},
                    'versions': [{'name': 'v1', 'served': True, 'storage': True,
                                  'schema': {'openAPIV3Schema': {'type': 'object',
                                                                 'x-kubernetes-preserve-unknown-fields': True}}}]}}
    for round_ in range(2):  # the second time after a reset that deleted the first CRD: discovery must follow
        cluster.server.create_crd(crd)
        cluster.create({'apiVersion': 'reset.gpuvirt.io/v1', 'kind': 'Probe',
                        'metadata': {'name': 'p%d' % round_, 'namespace': 'default'}})
        cluster = kube(openshift=False)
        assert cluster.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'probes.reset.gpuvirt.io') is None
