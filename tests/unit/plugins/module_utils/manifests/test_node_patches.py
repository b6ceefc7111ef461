# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sending the node label plan (node_labels_apply's logic, pure Python): the sink's own check of every patch, one
request per node in order and a stop at the first refusal, the report message and the diff. The requests themselves
go to the real API server in tests/integration/cluster_operator/test_node_labels_fleet.py."""
from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl

W, V, OWNED = nl.WORKLOAD_LABEL, nl.VGPU_LABEL, nl.OWNED_ANNOTATION


def patch(name, labels=None, annotations=None, **top):
    meta = {'name': name}
    if labels is not None:
        meta['labels'] = labels
    if annotations is not None:
        meta['annotations'] = annotations
    return dict({'apiVersion': 'v1', 'kind': 'Node', 'metadata': meta}, **top)


def cluster_node(name, labels, annotations=None):
    return {'metadata': {'name': name, 'labels': labels, 'annotations': annotations or {}}}


def test_the_plans_own_patches_pass_as_merge_patch_bodies():
    nodes = [cluster_node('n1', {'kubernetes.io/hostname': 'n1', V: 'A10-12Q'}),
             cluster_node('n2', {W: 'vm-passthrough'}, {OWNED: ''})]
    patches, _report = nl.plan([{'node': 'n1', 'pool': 'container'}, {'node': 'n2', 'pool': 'vm-passthrough'}],
                               nodes, [])
    assert nl.checked_patches(patches) == [
        ('n1', {'metadata': {'labels': {W: 'container', V: None}, 'annotations': {OWNED: ''}}})]
    # a record naming deploy labels passes too
    record = ','.join(sorted(nl.LEGACY_OWNED))
    assert nl.checked_patches([patch('n3', annotations={OWNED: record})]) == [
        ('n3', {'metadata': {'annotations': {OWNED: record}}})]


@pytest.mark.parametrize('bad, said', [
    (patch('n1', {W: 'container'}, kind='Pod'), 'patches[0]: expected a partial Node'),
    (patch('n1', {W: 'container'}, apiVersion='v2'), 'patches[0]: expected a partial Node'),
    (patch('n1', {W: 'container'}, spec={'unschedulable': True}), 'patches[0]: expected a partial Node'),
    ({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n1', 'finalizers': ['x'], 'labels': {W: 'c'}}},
     "patches[0] (node n1): only labels and the %s annotation are patched, not metadata 'finalizers'" % OWNED),
    (patch('N1', {W: 'container'}), 'patches[0] node name'),
    (patch('../etc', {W: 'container'}), 'patches[0] node name'),
    (patch('n' * 254, {W: 'container'}), 'patches[0] node name'),
    (patch(None, {W: 'container'}), 'patches[0] node name'),
    (patch('n1', {'a b': 'x'}), "patches[0] (node n1) label key: 'a b' is not valid"),
    (patch('n1', {'-x.io/k': 'x'}), 'patches[0] (node n1) label key'),
    (patch('n1', {W: 'container\nx: y'}), 'patches[0] (node n1) label %s' % W),
    (patch('n1', {W: 'x' * 64}), 'patches[0] (node n1) label %s' % W),
    (patch('n1', {W: 7}), 'patches[0] (node n1) label %s: 7 is not a string' % W),
    (patch('n1', {W: True}), 'patches[0] (node n1) label %s: True is not a string' % W),
    (patch('n1', ['x']), 'patches[0] (node n1): labels must be a mapping'),
    (patch('n1', annotations={'kubectl.kubernetes.io/last-applied-configuration': '{}'}),
     'patches[0] (node n1): the only annotation patched is %s' % OWNED),
    (patch('n1', annotations={OWNED: 'kubernetes.io/hostname'}),
     "patches[0] (node n1): annotation %s names 'kubernetes.io/hostname'" % OWNED),
    (patch('n1', annotations={OWNED: 'nvidia.com/gpu.deploy.dcgm,,'}), 'patches[0] (node n1) annotation %s entry'
     % OWNED),
    # None is sent: it removes the record of a retired node (playbooks/retire.yml); a number never is
    (patch('n1', annotations={OWNED: 7}), 'patches[0] (node n1): annotation %s must be a string' % OWNED),
    (patch('n1', {}), 'patches[0] (node n1): sets no label and no annotation'),
    ('n1', 'patches[0]: expected a partial Node'),
])
def test_the_sink_refuses_what_the_plan_never_sends(bad, said):
    with pytest.raises(nl.ManifestError) as err:
        nl.checked_patches([bad])
    assert said in str(err.value), str(err.value)


def test_every_bad_patch_is_named_at_once_and_a_node_only_once():
    with pytest.raises(nl.ManifestError) as err:
        nl.checked_patches([patch('n1', {W: 'container'}), patch('n2', {W: 'x\n'}), patch('n1', {V: None}),
                            patch('n3', {})])
    lines = str(err.value).splitlines()
    assert [line.split(':')[0] for line in lines] == ['patches[1] (node n2) label %s' % W, 'patches[2]',
                                                      'patches[3] (node n3)'], lines
    assert 'node n1 is patched twice' in lines[1]
    with pytest.raises(nl.ManifestError, match='patches must be a list'):
        nl.checked_patches({'n1': {}})


def recorder(refuse=None):
    """A ``send`` that records each request and answers as the API server would (the merged Node), or refuses
    ``refuse`` = (node, status, reason)."""
    sent = []

    def send(name, body):
        sent.append(name)
        if refuse and name == refuse[0]:
            raise nl.PatchError(*refuse)
        labels = {k: v for k, v in body['metadata'].get('labels', {}).items() if v is not None}
        return {'metadata': {'name': name, 'labels': labels, 'annotations': body['metadata'].get('annotations', {})}}
    return send, sent


def test_one_request_per_node_in_order():
    items = nl.checked_patches([patch('n%d' % i, {W: 'container'}) for i in range(5)])
    send, sent = recorder()
    done = nl.send_patches(items, send)
    assert sent == ['n0', 'n1', 'n2', 'n3', 'n4']
    assert [(name, node['metadata']['labels']) for name, _body, node in done][0] == ('n0', {W: 'container'})
    assert nl.send_patches([], send) == [] and len(sent) == 5


def test_the_first_refusal_stops_the_call_naming_the_node_status_and_what_was_and_was_not_sent():
    items = nl.checked_patches([patch('n%d' % i, {W: 'container'}) for i in range(5)])
    send, sent = recorder(refuse=('n2', 404, 'Not Found: nodes "n2" not found'))
    with pytest.raises(nl.ManifestError) as err:
        nl.send_patches(items, send)
    msg = str(err.value)
    assert sent == ['n0', 'n1', 'n2']
    assert msg.startswith('node n2: the API server refused its label patch: HTTP 404 Not Found: nodes "n2" not '
                          'found; patched before it: n0, n1; not sent: n3, n4.'), msg
    assert 'run the phase again' in msg
    send, sent = recorder(refuse=('n0', 403, 'Forbidden'))
    with pytest.raises(nl.ManifestError, match='HTTP 403 Forbidden; no node patched before it; not sent: n1, n2'):
        nl.send_patches(items, send)
    # a connection lost halfway: no HTTP status to give
    send, sent = recorder(refuse=('n1', None, 'Connection reset by peer'))
    with pytest.raises(nl.ManifestError, match='^node n1: no answer from the API server: Connection reset by peer; '
                                               'patched before it: n0; not sent: n2, n3, n4'):
        nl.send_patches(items, send)
    # a long tail is cut, counted
    many = nl.checked_patches([patch('n%03d' % i, {W: 'container'}) for i in range(60)])
    send, sent = recorder(refuse=('n000', 500, 'Internal Server Error'))
    with pytest.raises(nl.ManifestError, match=r'not sent: n001, .*, n020 and 39 more\.'):
        nl.send_patches(many, send)


def test_before_holds_only_the_touched_keys_and_the_diff_shows_them():
    nodes = [cluster_node('n1', {'kubernetes.io/hostname': 'n1', 'feature.node.kubernetes.io/x': 'true',
                                 V: 'A10-12Q'}, {'other/annotation': 'x'})]
    patches = [patch('n1', {W: 'container', V: None}, {OWNED: ''})]
    before = nl.patch_before(patches, nodes)
    assert before == {'n1': {'labels': {V: 'A10-12Q'}, 'annotations': {}}}
    assert nl.patch_before(patches, None) == {}
    (name, body), = nl.checked_patches(patches)
    send, _sent = recorder()
    diff = nl.patch_diff(name, body, before['n1'], send(name, body))
    assert diff == {'before_header': 'node n1', 'after_header': 'node n1',
                    'before': {'labels': {V: 'A10-12Q'}, 'annotations': {}},
                    'after': {'labels': {W: 'container'}, 'annotations': {OWNED: ''}}}
    # a labels-only patch shows no annotation part
    (name, body), = nl.checked_patches([patch('n1', {W: 'container'})])
    assert set(nl.patch_diff(name, body, None, send(name, body))['after']) == {'labels'}


def test_the_report_is_one_line_per_node_in_host_order():
    nodes = [cluster_node('b', {W: 'vm-passthrough'}), cluster_node('a', {V: 'A10-12Q'}, {OWNED: ''}),
             cluster_node('c', {W: 'container'}, {OWNED: ''})]
    wanted = [{'node': 'b', 'pool': 'vm-passthrough'}, {'node': 'a', 'pool': 'container'},
              {'node': 'c', 'pool': 'container'},
              {'node': 'd', 'host': 'hd', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q', 'gathered': False}]
    patches, report = nl.plan(wanted, nodes, [])
    lines = nl.report_lines(report, patches)
    assert lines[0] == 'b (pool vm-passthrough): labels already right; owned-labels record: (empty)'
    assert lines[1] == 'a (pool container): set %s=container; remove %s' % (W, V)
    assert lines[2] == 'c (pool container): labels already right'
    assert lines[3].startswith('d (pool vm-vgpu): left alone: no GPU facts for host hd in this run')
    assert len(lines) == 4
