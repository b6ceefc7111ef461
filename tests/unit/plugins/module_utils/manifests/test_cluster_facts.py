# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_facts' decisions (module_utils, plain Python): the three questions of the cluster role in one call, in
their order, which refusal is a cluster that did not answer, and the node read that shows a platform's detection
annotations. The client here answers from a table; what the
module sends to a real kube-apiserver is tested by the cluster role's integration tests
(tests/integration/cluster_operator/test_apply.py, preflight; test_rbac.py, the refusals)."""
from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import cluster_facts as cf
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_apply import Refused
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform

HCO_CRD = 'hyperconvergeds.hco.kubevirt.io'
# the platform table's detection reads, as the role passes them
DETECT = [{'api_version': row.detect_api, 'kind': row.detect_kind}
          for row in platform.PLATFORMS.values() if row.detect_api]
# the detection annotations, as the role passes them: each row's detect_node_annotation
NODE_DETECT = [row.detect_node_annotation for row in platform.PLATFORM_TABLE if row.detect_node_annotation]
FORBIDDEN = ('{"kind":"Status","apiVersion":"v1","status":"Failure","message":"customresourcedefinitions.'
             'apiextensions.k8s.io \\"hyperconvergeds.hco.kubevirt.io\\" is forbidden: User \\"u\\" cannot get '
             'resource \\"customresourcedefinitions\\"","reason":"Forbidden","code":403}')


class Server(object):
    """Answers like the API server: ``served`` the (apiVersion, kind) pairs discovery finds, ``crds`` the CRD
    names stored, ``refuse`` {(verb, kind): Refused}; records every request in order."""

    def __init__(self, served=(('v1', 'Node'),), crds=(), refuse=None, nodes=()):
        self.served = set(served) | {(cf.CRD_API_VERSION, cf.CRD_KIND)}
        self.crds = set(crds)
        self.refuse = refuse or {}
        self.nodes = list(nodes)
        self.sent = []

    def list(self, api_version, kind, field_selector, limit=None):
        self.sent.append(('list', api_version, kind, field_selector) + ((limit,) if limit else ()))
        if ('list', kind) in self.refuse:
            raise self.refuse[('list', kind)]
        if (api_version, kind) not in self.served:
            return None
        items = [n for n in self.nodes if kind == 'Node'
                 and field_selector in (None, 'metadata.name=' + n['metadata']['name'])]
        return items[:limit] if limit else items

    def get(self, api_version, kind, name):
        self.sent.append(('get', api_version, kind, name))
        if ('get', kind) in self.refuse:
            raise self.refuse[('get', kind)]
        return {'metadata': {'name': name}} if name in self.crds else None

    def client(self):
        return cf.Client(self.list, self.get)


def test_the_platform_table_has_a_detection_read_to_pass():
    # the role passes each row's detect_api/detect_kind: the table must keep one (OpenShift's ClusterVersion)
    assert {'api_version': 'config.openshift.io/v1', 'kind': 'ClusterVersion'} in DETECT


@pytest.mark.parametrize('openshift, hco', [(True, True), (True, False), (False, True), (False, False)])
def test_three_questions_in_order_one_answer(openshift, hco):
    served = {('v1', 'Node')} | ({('config.openshift.io/v1', 'ClusterVersion')} if openshift else set())
    server = Server(served=served, crds={HCO_CRD} if hco else ())
    facts = cf.read_facts(server.client(), cf.checked_apis(DETECT), cf.checked_crds([HCO_CRD]))
    assert facts == {'answered': True, 'served_apis': ['config.openshift.io/v1'] if openshift else [],
                     'node_annotations': [], 'served_crds': [HCO_CRD] if hco else []}
    # the answer check first (the read every phase needs, matching no node), then detection, then the CRD
    assert server.sent == [('list', 'v1', 'Node', 'metadata.name=gpuvirt-cluster-check'),
                           ('list', 'config.openshift.io/v1', 'ClusterVersion', None),
                           ('get', 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', HCO_CRD)]


def test_nothing_asked_beyond_the_answer_check_sends_one_read():
    # gpuvirt_platform and gpuvirt_kubevirt_config named: the role asks neither question
    server = Server(served={('v1', 'Node'), ('config.openshift.io/v1', 'ClusterVersion')}, crds={HCO_CRD})
    assert cf.read_facts(server.client(), [], []) == {'answered': True, 'served_apis': [], 'node_annotations': [],
                                                      'served_crds': []}
    assert server.sent == [('list', 'v1', 'Node', cf.ANSWER_FIELD_SELECTOR)]


def test_a_refused_first_read_is_a_cluster_that_did_not_answer_and_nothing_else_is_sent():
    body = '{"message":"nodes is forbidden: User \\"u\\" cannot list resource \\"nodes\\""}'
    server = Server(refuse={('list', 'Node'): Refused(403, 'Forbidden', body)})
    with pytest.raises(cf.FactsError) as exc:
        cf.read_facts(server.client(), cf.checked_apis(DETECT), [HCO_CRD])
    assert exc.value.answered is False
    assert 'the list of Node (v1) with fieldSelector metadata.name=gpuvirt-cluster-check refused (HTTP 403 ' \
        'Forbidden)' in str(exc.value), str(exc.value)
    assert 'cannot list resource \\"nodes\\"' in str(exc.value)
    assert len(server.sent) == 1
    # no server at all: the connection problem in the client's words
    server = Server(refuse={('list', 'Node'): Refused(None, 'Max retries exceeded with url: /api/v1/nodes')})
    with pytest.raises(cf.FactsError) as exc:
        cf.read_facts(server.client(), [], [])
    assert exc.value.answered is False and 'refused (Max retries exceeded with url: /api/v1/nodes)' in str(exc.value)


def test_a_server_without_v1_node_is_no_kubernetes_api_server():
    with pytest.raises(cf.FactsError) as exc:
        cf.read_facts(Server(served=()).client(), [], [])
    assert exc.value.answered is False and 'not a Kubernetes API server' in str(exc.value)


def test_a_later_refusal_is_a_cluster_that_answered_naming_the_read():
    server = Server(refuse={('get', cf.CRD_KIND): Refused(403, 'Forbidden', FORBIDDEN)})
    with pytest.raises(cf.FactsError) as exc:
        cf.read_facts(server.client(), cf.checked_apis(DETECT), [HCO_CRD])
    assert exc.value.answered is True
    msg = str(exc.value)
    assert msg.startswith('the cluster answered, but the read of CustomResourceDefinition %s refused (HTTP 403 '
                          'Forbidden): ' % HCO_CRD), msg
    assert 'cannot get resource \\"customresourcedefinitions\\"' in msg, msg
    server = Server(refuse={('list', 'ClusterVersion'): Refused(403, 'Forbidden', '')})
    with pytest.raises(cf.FactsError) as exc:
        cf.read_facts(server.client(), cf.checked_apis(DETECT), [HCO_CRD])
    assert exc.value.answered is True
    assert str(exc.value) == ('the cluster answered, but the list of ClusterVersion (config.openshift.io/v1) '
                              'refused (HTTP 403 Forbidden)')
    # it stopped there: the CRD was not asked about
    assert [s[0] for s in server.sent] == ['list', 'list']


def rke2_node(name, annotations):
    return {'metadata': {'name': name, 'annotations': annotations}}


def test_the_platform_table_has_rke2_s_node_annotation_to_pass():
    # the role passes each row's detect_node_annotation, RKE2's among them (every RKE2 node's agent annotates it
    # rke2.io/node-args: k3s pkg/nodeconfig/nodeconfig.go NodeArgsAnnotation, version.Program=rke2)
    assert 'rke2.io/node-args' in NODE_DETECT


@pytest.mark.parametrize('annotations, found', [
    ({'rke2.io/node-args': '["server"]', 'rke2.io/node-config-hash': 'X'}, ['rke2.io/node-args']),
    # an annotation no row asks for: another program's agent (version.Program=example) is not asked about
    ({'example.io/node-args': '["server"]'}, []),
    ({}, []),
])
def test_asked_node_annotations_replace_the_answer_check_by_one_list_of_nodes(annotations, found):
    # still one read of Node: with a limit instead of the name no node has, so that the nodes show their annotations;
    # every node carries the key (RKE2's agent annotates each: k3s pkg/nodeconfig/nodeconfig.go), or none does
    server = Server(nodes=[rke2_node('n1', annotations), rke2_node('n2', dict(annotations))])
    facts = cf.read_facts(server.client(), cf.checked_apis(DETECT), [],
                          cf.checked_node_annotations(NODE_DETECT))
    assert facts == {'answered': True, 'served_apis': [], 'node_annotations': found, 'served_crds': []}
    assert server.sent == [('list', 'v1', 'Node', None, cf.NODE_READ_LIMIT),
                           ('list', 'config.openshift.io/v1', 'ClusterVersion', None)]


@pytest.mark.parametrize('first, second', [({'rke2.io/node-args': '[]'}, {}), ({}, {'rke2.io/node-args': '[]'})])
def test_one_node_s_annotation_does_not_decide_the_platform(first, second):
    # its kubelet (NodeRestriction limits labels, not annotations) or anyone who may patch Nodes can write it: an
    # annotation some nodes carry and others do not is refused, naming the counts, before any other read
    server = Server(nodes=[rke2_node('aaa-edge', first), rke2_node('n2', second), rke2_node('n3', second)])
    with pytest.raises(cf.FactsError) as exc:
        cf.read_facts(server.client(), cf.checked_apis(DETECT), [], cf.checked_node_annotations(NODE_DETECT))
    count = 1 if first else 2
    assert exc.value.answered is True
    assert ('%d of the 3 nodes read carry the annotation rke2.io/node-args' % count) in str(exc.value)
    assert 'set gpuvirt_platform' in str(exc.value)
    assert server.sent == [('list', 'v1', 'Node', None, cf.NODE_READ_LIMIT)]


def test_a_cluster_without_nodes_shows_no_annotation():
    server = Server()
    facts = cf.read_facts(server.client(), [], [], NODE_DETECT)
    assert facts['node_annotations'] == [] and server.sent == [('list', 'v1', 'Node', None, cf.NODE_READ_LIMIT)]


def test_a_refused_node_read_with_annotations_is_a_cluster_that_did_not_answer():
    server = Server(refuse={('list', 'Node'): Refused(403, 'Forbidden', '')})
    with pytest.raises(cf.FactsError) as exc:
        cf.read_facts(server.client(), [], [], NODE_DETECT)
    assert exc.value.answered is False
    assert str(exc.value) == 'the list of Node (v1) with limit %d refused (HTTP 403 Forbidden)' % cf.NODE_READ_LIMIT


@pytest.mark.parametrize('keys, words', [
    ('rke2.io/node-args', 'node_annotations: expected a list'),
    (['rke2.io/'], "node_annotations[0]: 'rke2.io/' is not valid"),
    (['-bad.io/x'], "node_annotations[0]: '-bad.io/x' is not valid"),
    (['rke2.io/node-args', 7], 'node_annotations[1]: 7 is not a string'),
    (['a'] * (cf.MOST + 1), 'at most %d' % cf.MOST),
])
def test_bad_node_annotation_keys_are_refused_naming_the_entry(keys, words):
    with pytest.raises(ManifestError) as exc:
        cf.checked_node_annotations(keys)
    assert words in str(exc.value), str(exc.value)


@pytest.mark.parametrize('apis, words', [
    ('config.openshift.io/v1', 'apis: expected a list'),
    ([{'api_version': 'config.openshift.io/v1'}], 'apis[0]: expected a mapping of exactly api_version and kind'),
    ([{'api_version': 'config.openshift.io/v1', 'kind': 'ClusterVersion', 'name': 'x'}], 'apis[0]: expected'),
    ([{'api_version': '../v1', 'kind': 'ClusterVersion'}], "apis[0].api_version: '../v1' is not an apiVersion"),
    ([{'api_version': 'v1', 'kind': 'Node/x'}], "apis[0].kind: 'Node/x' is not a kind"),
    ([{'api_version': 'v1', 'kind': 'Node'}] * (cf.MOST + 1), 'at most %d' % cf.MOST),
])
def test_bad_detection_reads_are_refused_naming_the_entry(apis, words):
    with pytest.raises(ManifestError) as exc:
        cf.checked_apis(apis)
    assert words in str(exc.value), str(exc.value)


@pytest.mark.parametrize('crds, words', [
    (HCO_CRD, 'crds: expected a list'),
    (['../x'], "crds[0]: '../x' is not valid"),
    (['hyperconvergeds'], "crds[0]: 'hyperconvergeds' is not a CustomResourceDefinition name"),
    ([HCO_CRD, 7], 'crds[1]: 7 is not a string'),
])
def test_bad_crd_names_are_refused_naming_the_entry(crds, words):
    with pytest.raises(ManifestError) as exc:
        cf.checked_crds(crds)
    assert words in str(exc.value), str(exc.value)


def test_none_asks_nothing():
    assert cf.checked_apis(None) == [] and cf.checked_crds(None) == [] and cf.checked_node_annotations(None) == []
