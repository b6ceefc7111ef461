# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_apply's decisions (module_utils, plain Python): which objects are sent for real, what a refusal stops, what
a list holding a credential returns. The client here answers from a dict; what the module sends to a real
kube-apiserver is tested in tests/integration/cluster_operator/test_k8s_objects_apply.py."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_apply as ka
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

NS = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu'}}
CM = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'},
      'data': {'config.yaml': '2'}}
SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/dockerconfigjson',
          'metadata': {'name': 'pull', 'namespace': 'gpu'}, 'stringData': {'.dockerconfigjson': 's3cr3t-value'}}
# the namespaces the caller declares (the gpu_operator role: its operator namespace)
DECLARED = {'operator': ['gpu']}
# the API server's NotFound for an object whose Namespace does not exist (its Status body as sent)
NS_MISSING = ('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \\"gpu\\" not '
              'found","reason":"NotFound","details":{"name":"gpu","kind":"namespaces"},"code":404}')


def stored(obj, rv='7'):
    """``obj`` as the server stores it: with its bookkeeping."""
    out = copy.deepcopy(obj)
    out['metadata'].update(resourceVersion=rv, managedFields=[{'manager': 'gpuvirt-provision'}], uid='u-' + rv)
    return out


class Server(object):
    """Answers like the API server from ``objects`` (``label: stored object``); records every request."""

    def __init__(self, objects=(), refuse=None, namespaces=None):
        self.objects = {ka.label(o): o for o in objects}
        self.refuse = refuse or {}
        self.namespaces = namespaces
        self.sent = []

    def _ns_missing(self, obj):
        ns = obj['metadata'].get('namespace')
        return self.namespaces is not None and ns and ns not in self.namespaces

    def read(self, obj):
        self.sent.append(('read', ka.label(obj)))
        return copy.deepcopy(self.objects.get(ka.label(obj)))

    def _answer(self, obj, verb):
        self.sent.append((verb, ka.label(obj)))
        if (verb, ka.label(obj)) in self.refuse:
            raise ka.Refused(*self.refuse[(verb, ka.label(obj))])
        if self._ns_missing(obj):
            raise ka.Refused(404, 'Not Found', NS_MISSING)
        old = self.objects.get(ka.label(obj))
        new = stored(obj, rv=str(int(old['metadata']['resourceVersion']) + 1) if old else '1')
        if old:
            new['metadata']['uid'] = old['metadata']['uid']
        return new

    def dry_run(self, obj):
        return self._answer(obj, 'dry-run')

    def apply(self, obj):
        new = self._answer(obj, 'apply')
        self.objects[ka.label(obj)] = new
        if obj['kind'] == 'Namespace' and self.namespaces is not None:
            self.namespaces.add(obj['metadata']['name'])
        return new

    def client(self, wait=None):
        return ka.Client(self.read, self.dry_run, self.apply, wait)

    def writes(self):
        return [label for verb, label in self.sent if verb == 'apply']


def test_only_what_would_change_is_applied_and_a_second_run_applies_nothing():
    same = dict(CM, metadata={'name': 'same', 'namespace': 'gpu'})
    server = Server([stored(NS), stored(same)])
    records = ka.apply_objects([NS, CM, same], server.client(), DECLARED)[0]
    assert server.writes() == ['ConfigMap/gpu/cfg']
    assert [(r['name'], r['changed'], r['applied']) for r in records] == [
        ('gpu', False, False), ('cfg', True, True), ('same', False, False)]
    server.sent = []
    records = ka.apply_objects([NS, CM, same], server.client(), DECLARED)[0]
    assert server.writes() == [] and not any(r['changed'] for r in records)
    # every object read and dry-run, each once, in order
    assert server.sent == [('read', 'Namespace//gpu'), ('read', 'ConfigMap/gpu/cfg'), ('read', 'ConfigMap/gpu/same'),
                           ('dry-run', 'Namespace//gpu'), ('dry-run', 'ConfigMap/gpu/cfg'),
                           ('dry-run', 'ConfigMap/gpu/same')]


def test_preview_sends_dry_runs_only_and_reports_what_would_change():
    server = Server([stored(CM, rv='3')])
    changed = dict(CM, data={'config.yaml': '3'})
    records, diffs = ka.apply_objects([changed], server.client(), DECLARED, preview_only=True, diff=True)
    assert server.writes() == []
    assert records[0]['changed'] is True and records[0]['applied'] is False
    assert diffs == [{'before': {'data': {'config.yaml': '2'}, 'metadata': {'resourceVersion': '3'}},
                      'after': {'data': {'config.yaml': '3'}, 'metadata': {'resourceVersion': '4'}},
                      'before_header': 'ConfigMap/gpu/cfg', 'after_header': 'ConfigMap/gpu/cfg'}]


def test_an_object_in_a_namespace_the_list_creates_is_applied_after_it():
    server = Server(namespaces=set())
    records = ka.apply_objects([NS, CM], server.client(), DECLARED)[0]
    assert server.writes() == ['Namespace//gpu', 'ConfigMap/gpu/cfg']
    assert all(r['applied'] for r in records)


def test_a_missing_namespace_the_list_does_not_create_stops_a_run_that_applies_before_any_write():
    server = Server(namespaces=set())
    with pytest.raises(ka.ApplyError) as err:
        ka.apply_objects([CM], server.client(), DECLARED)
    assert str(err.value).startswith('the server-side dry run of ConfigMap/gpu/cfg refused (HTTP 404 Not Found): '
                                     '{"kind":"Status"'), str(err.value)
    assert str(err.value).endswith('nothing was applied.')
    assert server.writes() == []
    # a preview: an earlier call's list would have created it
    records = ka.apply_objects([CM], server.client(), DECLARED, preview_only=True)[0]
    assert records[0]['changed'] is True and server.writes() == []


def test_every_refused_dry_run_is_named_and_nothing_is_applied():
    other = dict(CM, metadata={'name': 'other', 'namespace': 'gpu'})
    server = Server(refuse={('dry-run', 'ConfigMap/gpu/cfg'): (422, 'Unprocessable Entity', 'invalid'),
                            ('dry-run', 'ConfigMap/gpu/other'): (403, 'Forbidden', 'forbidden')})
    with pytest.raises(ka.ApplyError) as err:
        ka.apply_objects([NS, CM, other], server.client(), DECLARED)
    assert 'ConfigMap/gpu/cfg refused (HTTP 422' in str(err.value)
    assert 'ConfigMap/gpu/other refused (HTTP 403' in str(err.value)
    assert server.writes() == []


def test_a_refused_apply_stops_naming_what_was_applied_and_what_was_not_sent():
    second = dict(CM, metadata={'name': 'second', 'namespace': 'gpu'})
    server = Server(refuse={('apply', 'ConfigMap/gpu/cfg'): (409, 'Conflict', 'conflict')})
    with pytest.raises(ka.ApplyError) as err:
        ka.apply_objects([NS, CM, second], server.client(), DECLARED)
    assert str(err.value) == ('the apply of ConfigMap/gpu/cfg refused (HTTP 409 Conflict): conflict; applied before '
                              'it: Namespace//gpu; not sent: ConfigMap/gpu/second.')
    assert server.writes() == ['Namespace//gpu', 'ConfigMap/gpu/cfg']
    assert [r['applied'] for r in err.value.records] == [True, False, False]


def test_wait_is_asked_for_each_applied_object_only_and_a_timeout_stops_the_call():
    waited = []

    def wait(obj):
        waited.append(ka.label(obj))
        return obj['metadata']['name'] != 'cfg', 4
    server = Server([stored(NS)])
    with pytest.raises(ka.ApplyError) as err:
        ka.apply_objects([NS, CM, dict(CM, metadata={'name': 'z', 'namespace': 'gpu'})], server.client(wait), DECLARED,
                         wait=True)
    assert waited == ['ConfigMap/gpu/cfg']  # the Namespace was not applied: nothing to wait for
    assert str(err.value).startswith('"ConfigMap" "cfg": Timed out waiting on resource (ConfigMap/gpu/cfg, applied, '
                                     'not ready after 4 s); applied before it: none; not sent: ConfigMap/gpu/z.')
    # no wait asked: none made
    waited[:] = []
    ka.apply_objects([dict(CM, data={'config.yaml': 'b'})], Server().client(wait), DECLARED)
    assert waited == []


def test_a_list_holding_a_secret_returns_no_content_no_diff_and_no_server_message():
    server = Server([stored(NS)])
    records, diffs = ka.apply_objects([NS, SECRET], server.client(), DECLARED, diff=True)
    assert diffs == [] and not any('diff' in r for r in records)
    assert 's3cr3t-value' not in repr(records)
    assert records[1] == {'kind': 'Secret', 'api_version': 'v1', 'namespace': 'gpu', 'name': 'pull',
                          'changed': True, 'applied': True}
    server = Server(refuse={('dry-run', 'Secret/gpu/pull'): (422, 'Unprocessable Entity', 's3cr3t-value is bad')})
    with pytest.raises(ka.ApplyError) as err:
        ka.apply_objects([SECRET], server.client(), DECLARED)
    assert 's3cr3t-value' not in str(err.value) and 'Secret/gpu/pull refused (HTTP 422' in str(err.value)


@pytest.mark.parametrize('bad, said', [
    ('nope', 'object number 1 is a str'),
    ({'kind': 'ConfigMap', 'metadata': {'name': 'x'}}, "object number 1: apiVersion: None is not valid"),
    ({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': '../x', 'namespace': 'gpu'}},
     "object number 1: metadata.name: '../x' is not valid"),
    ({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'namespace': 'a/b'}},
     "object number 1: metadata.namespace: 'a/b' is not valid"),
    ({'apiVersion': 'v1', 'kind': 'Config Map', 'metadata': {'name': 'x'}}, "object number 1: kind: 'Config Map'"),
    ({'apiVersion': 'v1', 'kind': 'SecretList', 'metadata': {'name': 'x'}}, "kind: 'SecretList' is a list"),
    ({'apiVersion': '../v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}}, "apiVersion: '../v1' is not valid"),
    ({'apiVersion': 'v1', 'kind': 'Secret', 'data': {'p': 'czNjcjN0'}},
     "object number 1 has no metadata mapping (it has keys ['apiVersion', 'data', 'kind'])"),
])
def test_the_sink_refuses_a_bad_object_naming_it_before_any_request(bad, said):
    with pytest.raises(ManifestError) as err:
        ka.checked_objects([NS, bad])
    assert said in str(err.value) and 'nothing was sent' in str(err.value), str(err.value)
    assert 'czNjcjN0' not in str(err.value)


def test_apply_objects_checks_the_table_itself_before_any_request():
    # the review's repro (r1): a ClusterRoleBinding handed straight to apply_objects
    binding = {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding', 'metadata': {'name': 'pwn'},
               'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': 'cluster-admin'},
               'subjects': [{'kind': 'ServiceAccount', 'name': 'default', 'namespace': 'tenant'}]}
    server = Server()
    with pytest.raises(ManifestError) as err:
        ka.apply_objects([NS, binding], server.client(), DECLARED)
    assert 'object number 1 (ClusterRoleBinding pwn): rbac.authorization.k8s.io/v1 ClusterRoleBinding is not an ' \
        'object the collection applies' in str(err.value), str(err.value)
    assert server.sent == []
    # the namespace rule: the same ConfigMap in a namespace the call did not declare
    with pytest.raises(ManifestError) as err:
        ka.apply_objects([CM], server.client(), {'operator': ['nvidia-gpu-operator']})
    assert 'the vGPU device ConfigMap goes in the operator namespace (nvidia-gpu-operator)' in str(err.value)
    assert server.sent == []


def test_a_list_holding_a_credential_hides_the_server_warnings_counting_them():
    warnings = ['metadata.labels: secret s3cr3t-value looks odd', 'unknown field "x"']
    assert ka.shown_warnings([NS, SECRET], warnings) == ['2 server warnings hidden (the list holds a credential)']
    assert ka.shown_warnings([SECRET], warnings[:1]) == ['1 server warning hidden (the list holds a credential)']
    assert ka.shown_warnings([NS, CM], warnings) == warnings
    assert ka.shown_warnings([SECRET], []) == []
