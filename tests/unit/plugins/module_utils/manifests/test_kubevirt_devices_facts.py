# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubevirt_devices_facts' decisions (module_utils, plain Python): the kubevirt_devices role's reads in one call, in
their order, only the reads the configuration needs, and what HCO's CRD says about the mdev gate. The client here
answers from a table; what the module sends to a real kube-apiserver is tested by the role's integration tests
(tests/integration/cluster_kubevirt/test_apply.py)."""
from __future__ import annotations

import copy
import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import cluster_facts as cf
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt_devices_facts as kdf
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_apply import Refused

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
import schema  # noqa: E402  pylint: disable=wrong-import-position

HCO_CRD_FILE = ('crds', 'hyperconverged-cluster-operator-v1.18.1-hco.kubevirt.io_hyperconvergeds.yaml')
HCO = {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
       'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'}}
KV = {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'}}
NODES = [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1'},
          'status': {'allocatable': {'nvidia.com/GA102GL_A10': '2'}}}]
FORBIDDEN = ('{"kind":"Status","apiVersion":"v1","status":"Failure","message":"hyperconvergeds.hco.kubevirt.io is '
             'forbidden: User \\"u\\" cannot list resource \\"hyperconvergeds\\"","reason":"Forbidden","code":403}')


def hco_crd():
    path = schema.reference_file(*HCO_CRD_FILE)
    if path is None:
        pytest.skip('the upstream HCO CRD is not in the reference folder (make reference)')
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


class Server(object):
    """Answers like the API server: ``crd`` HCO's CRD or None (404), ``objects`` {(apiVersion, kind): items} for
    the kinds discovery finds, ``refuse`` {(verb, kind): Refused}; records every request in order."""

    def __init__(self, crd=None, objects=None, refuse=None):
        self.crd = crd
        self.objects = {('v1', 'Node'): NODES}
        self.objects.update(objects or {})
        self.refuse = refuse or {}
        self.sent = []

    def list(self, api_version, kind, field_selector):
        self.sent.append(('list', api_version, kind, field_selector))
        if ('list', kind) in self.refuse:
            raise self.refuse[('list', kind)]
        return self.objects.get((api_version, kind))

    def get(self, api_version, kind, name):
        self.sent.append(('get', api_version, kind, name))
        if ('get', kind) in self.refuse:
            raise self.refuse[('get', kind)]
        return self.crd if name == kdf.HCO_CRD else None

    def client(self):
        return cf.Client(self.list, self.get)


CRD_GET = ('get', 'apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'hyperconvergeds.hco.kubevirt.io')
HCO_LIST = ('list', 'hco.kubevirt.io/v1beta1', 'HyperConverged', None)
KV_LIST = ('list', 'kubevirt.io/v1', 'KubeVirt', None)
NODE_LIST = ('list', 'v1', 'Node', None)


def test_hco_the_crd_then_the_hyperconvergeds_then_the_nodes():
    server = Server(crd=hco_crd(), objects={('hco.kubevirt.io/v1beta1', 'HyperConverged'): [HCO]})
    facts = kdf.read_facts(server.client(), 'hco')
    assert facts == {'hco_crd_served': True, 'hco_gate_supported': True, 'hyperconvergeds': [HCO], 'kubevirts': [],
                     'nodes': NODES}
    # the order the role's three k8s_info calls read in
    assert server.sent == [CRD_GET, HCO_LIST, NODE_LIST]


def test_hco_without_its_crd_lists_no_hyperconverged():
    # the role then says the CRD is not served (its assert); a list of an unserved kind would only be discovery
    server = Server()
    facts = kdf.read_facts(server.client(), 'hco')
    assert facts == {'hco_crd_served': False, 'hco_gate_supported': False, 'hyperconvergeds': [], 'kubevirts': [],
                     'nodes': NODES}
    assert server.sent == [CRD_GET, NODE_LIST]


@pytest.mark.parametrize('crd_served', [True, False])
def test_kubevirt_lists_the_kubevirt_crs_whether_or_not_hco_is_there(crd_served):
    # a KubeVirt config on a cluster serving HCO's CRD: the CR is read, and the role refuses for that reason
    server = Server(crd=hco_crd() if crd_served else None, objects={('kubevirt.io/v1', 'KubeVirt'): [KV]})
    facts = kdf.read_facts(server.client(), 'kubevirt')
    assert facts['kubevirts'] == [KV] and facts['hyperconvergeds'] == [] and facts['nodes'] == NODES
    assert facts['hco_crd_served'] is crd_served
    assert server.sent == [CRD_GET, KV_LIST, NODE_LIST]


def test_a_kind_discovery_does_not_find_is_listed_as_none():
    # KubeVirt not installed: k8s_info's api_found false, resources [] (the role's "was not found" message)
    facts = kdf.read_facts(Server().client(), 'kubevirt')
    assert facts['kubevirts'] == []


def test_a_server_without_v1_node_is_no_kubernetes_api_server():
    server = Server()
    server.objects = {}
    with pytest.raises(kdf.FactsError) as exc:
        kdf.read_facts(server.client(), 'kubevirt')
    assert 'not a Kubernetes API server' in str(exc.value)


@pytest.mark.parametrize('verb, kind, read', [
    ('get', 'CustomResourceDefinition', 'the read of CustomResourceDefinition hyperconvergeds.hco.kubevirt.io'),
    ('list', 'HyperConverged', 'the list of HyperConverged (hco.kubevirt.io/v1beta1)'),
    ('list', 'Node', 'the list of Node (v1)'),
])
def test_a_refused_read_is_named_with_the_servers_answer_and_stops(verb, kind, read):
    server = Server(crd=hco_crd(), objects={('hco.kubevirt.io/v1beta1', 'HyperConverged'): [HCO]},
                    refuse={(verb, kind): Refused(403, 'Forbidden', FORBIDDEN)})
    with pytest.raises(kdf.FactsError) as exc:
        kdf.read_facts(server.client(), 'hco')
    msg = str(exc.value)
    assert msg.startswith('The cluster refused %s (HTTP 403 Forbidden): ' % read), msg
    assert 'cannot list resource \\"hyperconvergeds\\"' in msg and 'docs/rbac/README.md' in msg, msg
    # nothing after the refused read was sent
    assert server.sent[-1][:3] == (verb, ) + {'CustomResourceDefinition': CRD_GET, 'HyperConverged': HCO_LIST,
                                              'Node': NODE_LIST}[kind][1:3]
    # no server at all: the connection problem in the client's words
    server = Server(refuse={('get', 'CustomResourceDefinition'): Refused(None, 'Max retries exceeded')})
    with pytest.raises(kdf.FactsError) as exc:
        kdf.read_facts(server.client(), 'hco')
    assert '(Max retries exceeded)' in str(exc.value)


@pytest.mark.parametrize('config', ['auto', 'HCO', '', None, ['hco']])
def test_a_configuration_that_is_not_resolved_is_refused_before_any_request(config):
    server = Server()
    with pytest.raises(ManifestError) as exc:
        kdf.read_facts(server.client(), config)
    assert 'kubevirt_config: %r is neither of hco, kubevirt' % (config,) in str(exc.value)
    assert server.sent == []


def _without_gate(crd):
    crd = copy.deepcopy(crd)
    for version in crd['spec']['versions']:
        gates = version['schema']['openAPIV3Schema']['properties']['spec']['properties'].get('featureGates', {})
        gates.get('properties', {}).pop(kdf.MDEV_GATE, None)
    return crd


def test_the_gate_is_read_from_the_v1beta1_schema():
    # HCO 1.18.1's CRD (upstream: deploy/crds/hco.kubevirt.io_hyperconvergeds.yaml) has the gate; an older HCO's
    # (before 1.9) has no such property: the annotation path
    real = hco_crd()
    assert kdf.gate_supported(real) is True
    assert kdf.gate_supported(_without_gate(real)) is False
    # only v1beta1 counts (the version the role reads and writes)
    only_v1 = copy.deepcopy(real)
    only_v1['spec']['versions'] = [v for v in only_v1['spec']['versions'] if v['name'] != 'v1beta1']
    assert kdf.gate_supported(only_v1) is False
    # the first v1beta1 entry decides, as the role's template took the first
    twice = copy.deepcopy(real)
    v1beta1 = [v for v in twice['spec']['versions'] if v['name'] == 'v1beta1'][0]
    twice['spec']['versions'] = [_without_gate(twice)['spec']['versions'][-1], v1beta1]
    assert kdf.gate_supported(twice) is False


@pytest.mark.parametrize('crd', [
    None, {}, {'spec': {}}, {'spec': {'versions': [{'name': 'v1beta1'}]}},
    {'spec': {'versions': [{'name': 'v1beta1', 'schema': {'openAPIV3Schema': {'properties': {'spec': {}}}}}]}},
    {'spec': {'versions': [{'name': 'v1beta1', 'schema': {'openAPIV3Schema': {'properties': {'spec': {
        'properties': {'featureGates': {'type': 'object'}}}}}}}]}},
])
def test_a_schema_missing_any_level_has_no_gate(crd):
    assert kdf.gate_supported(crd) is False
