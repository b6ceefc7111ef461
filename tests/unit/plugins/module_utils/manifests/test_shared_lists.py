# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lists a render of the HyperConverged / KubeVirt CR shares with the live object: their merge type is the one
the upstream schema declares, and the warning of a render that did not read the live object names them."""
from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import common, dra, hco, kubevirt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

# the reference set's copies of the upstream schemas (reference README, section A)
HCO_CRD = 'hyperconverged-cluster-operator-v1.18.1-hco.kubevirt.io_hyperconvergeds.yaml'
KUBEVIRT_SCHEMA = 'kubevirt-v1.9.0-kubevirt-openAPIV3Schema-from-validations_generated.go.yaml'


def load(name):
    with open(os.path.join(schema.reference_dir(), 'crds', name), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def field(root, path):
    for key in path:
        root = root['properties'][key]
    return root


def declared(node):
    return {'atomic': 'atomic', 'map': 'map'}[node['x-kubernetes-list-type']]


@pytest.mark.parametrize('path,how', [item for item in hco.SHARED_LISTS if item[0][0] == 'spec'])
def test_hyperconverged_lists_are_the_merge_type_its_crd_declares(path, how):
    # kubevirt/hyperconverged-cluster-operator v1.18.1 config/crd/bases/hco.kubevirt.io_hyperconvergeds.yaml,
    # version v1beta1 (the one the collection addresses): permittedHostDevices.pciHostDevices / mediatedDevices are
    # x-kubernetes-list-type: map, keyed on their selector
    (v1beta1,) = [v for v in load(HCO_CRD)['spec']['versions'] if v['name'] == 'v1beta1']
    assert declared(field(v1beta1['schema']['openAPIV3Schema'], path)) == how


@pytest.mark.parametrize('path,how', kubevirt.SHARED_LISTS)
def test_kubevirt_cr_lists_are_the_merge_type_its_schema_declares(path, how):
    # kubevirt/kubevirt v1.9.0 pkg/virt-operator/resource/generate/components/validations_generated.go, "kubevirt":
    # x-kubernetes-list-type: atomic on all three
    assert declared(field(load(KUBEVIRT_SCHEMA)['openAPIV3Schema'], path)) == how


def test_the_warning_names_the_lists_the_object_sets_and_the_hint():
    obj, dummy, dummy = kubevirt.build_kubevirt(None, [{'selector': '10DE:2236', 'resource_name': 'nvidia.com/A10'}],
                                                [], version='v1.9.0')
    text = common.unmerged_warning(obj, kubevirt.SHARED_LISTS, 'set gpuvirt_kubeconfig')
    assert text.startswith('KubeVirt kubevirt/kubevirt is rendered without the live object (set gpuvirt_kubeconfig): ')
    assert 'spec.configuration.permittedHostDevices.pciHostDevices (atomic)' in text
    # KubeVirt v1.9.0: the object sets no gate (GPU is GA since v1.5.0: kubevirt/kubevirt
    # pkg/virt-config/featuregate/inactive.go), so the warning names no gate list
    assert 'featureGates' not in text
    # the gate object of the DRA role sets only the gates, and names only them
    gate = dra.kubevirt_gate_object(None, ['GPUsWithDRA'])
    text = common.unmerged_warning(gate, kubevirt.SHARED_LISTS, 'x')
    assert 'featureGates (atomic)' in text and 'permittedHostDevices' not in text
    # a HyperConverged under an older HCO: the jsonpatch annotation is one string, replaced whole
    obj, dummy, dummy = hco.build_hco(None, [], [{'selector': 'NVIDIA A10-12Q', 'resource_name': 'nvidia.com/Q'}],
                                      gate_supported=False)
    text = common.unmerged_warning(obj, hco.SHARED_LISTS, 'x')
    assert 'spec.permittedHostDevices.mediatedDevices (map)' in text and 'pciHostDevices' not in text
    assert 'metadata.annotations.kubevirt.kubevirt.io/jsonpatch (text)' in text
    assert common.unmerged_warning({'kind': 'KubeVirt', 'metadata': {}, 'spec': {}}, kubevirt.SHARED_LISTS, 'x') is None
