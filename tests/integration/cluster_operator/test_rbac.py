# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped least-privilege role (docs/rbac/gpuvirt-automation.yml) is what the phases need, and no less.

Every apply test runs as the service account that role is bound to; here a second service account gets none of
it, or all of it but one rule, and the run must stop on the API server's refusal naming the verb and resource.
"""
from __future__ import annotations

import copy
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402
import kube_cluster  # noqa: E402

W = 'nvidia.com/gpu.workload.config'


def shipped_role():
    with open(os.path.join(ROOT, 'docs', 'rbac', 'gpuvirt-automation.yml'), encoding='utf-8') as handle:
        (role,) = [d for d in yaml.safe_load(handle)['items'] if d['kind'] == 'ClusterRole']
    return role


def nodes():
    return [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': n, 'labels': {}}}
            for n in ('ctr-1', 'pt-1', 'vgpu-1')]


def run_nodes(tmp_path, kubeconfig):
    return kube_cluster.run_playbook(tmp_path, 'nodes', os.path.join(HERE, 'inventories', 'mixed-openshift.yml'),
                                     gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=kubeconfig)


def grant(cluster, role):
    role = copy.deepcopy(role)
    role['metadata'] = {'name': 'gpuvirt-limited'}
    cluster.create(role)
    cluster.create({'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding',
                    'metadata': {'name': 'gpuvirt-limited'},
                    'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole',
                                'name': 'gpuvirt-limited'},
                    'subjects': [{'kind': 'ServiceAccount', 'name': 'gpuvirt-limited', 'namespace': 'gpuvirt-system'}]})


def test_the_shipped_role_labels_the_nodes(tmp_path, kube):
    cluster = kube(nodes())
    grant(cluster, shipped_role())
    rc, log = run_nodes(tmp_path, cluster.server.kubeconfig_path('limited'))
    assert rc == 0, log
    assert cluster.get('v1', 'Node', 'ctr-1')['metadata']['labels'][W] == 'container'


def test_without_any_grant_the_first_read_is_refused_by_name(tmp_path, kube):
    cluster = kube(nodes())
    rc, log = run_nodes(tmp_path, cluster.server.kubeconfig_path('limited'))
    assert rc != 0, log
    assert ('User \\"%s\\" cannot list resource \\"nodes\\"' % apiserver.LIMITED_USER) in log, log
    assert cluster.writes(user=apiserver.LIMITED_USER) == []


def test_a_role_without_node_patch_is_refused_naming_the_verb_and_resource(tmp_path, kube):
    role = shipped_role()
    for rule in role['rules']:
        if rule['resources'] == ['nodes']:
            rule['verbs'] = [v for v in rule['verbs'] if v != 'patch']
    cluster = kube(nodes())
    grant(cluster, role)
    rc, log = run_nodes(tmp_path, cluster.server.kubeconfig_path('limited'))
    assert rc != 0, log
    assert 'cannot patch resource \\"nodes\\"' in log, log
    assert cluster.writes(user=apiserver.LIMITED_USER) == []
