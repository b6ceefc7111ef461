# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubevirt devices settings record (manifests/kubevirt_devices_settings.py): one list of fields is the record,
the schema of both modules that merge into a CR and (held equal here) its documentation; a bad value is refused when
a record is made, naming its variable; the modules read the fields by name."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.doc_fragments import live_object
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt_devices_settings as kds
from ansible_collections.gpuvirt.provision.plugins.modules import (
    hco_permitted_devices, kubevirt_devices_plan, kubevirt_permitted_devices)

from ...modules.harness import argument_spec_of, run_module

SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.KUBEVIRT_DEVICES)['options']['settings']['suboptions']
LIVE_OBJECT = yaml.safe_load(live_object.ModuleDocFragment.DOCUMENTATION)['options']
MODULES = (hco_permitted_devices, kubevirt_permitted_devices)
DEVICE = {'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10'}


def test_the_resource_name_plan_takes_no_setting(monkeypatch):
    # the wanted devices (from the facts and the inventory's lists) and the Nodes read: nothing the record holds
    seen = argument_spec_of(monkeypatch, kubevirt_devices_plan)
    assert sorted(seen) == ['mediated_devices', 'nodes', 'pci_devices']


def test_a_record_is_read_only_and_a_none_or_an_empty_version_takes_the_default():
    record = kds.build({'disable_mdev_configuration': None, 'hco_version': '', 'kubevirt_version': '',
                        'feature_gates': None, 'hco_name': None})
    assert record.disable_mdev_configuration is True and record.adopt_conflicting is False
    assert record.hco_version is None and record.kubevirt_version is None
    assert record.feature_gates == ['GPU'] and record.hco_name == 'kubevirt-hyperconverged'
    assert (record.hco_namespace, record.kubevirt_name, record.kubevirt_namespace) == ('openshift-cnv', 'kubevirt',
                                                                                       'kubevirt')
    with pytest.raises(AttributeError):
        record.adopt_conflicting = True
    assert kds.build(record) is record
    # a version written as a number in YAML is its text, as a str option takes it
    assert kds.build({'hco_version': 4.18}).hco_version == '4.18'


def test_the_hco_gate_is_the_crd_s_answer_else_the_version_s_else_assumed():
    assert kds.build({'hco_version': '4.12.3'}).hco_gate_supported(True) is True
    assert kds.build({'hco_version': '4.18.0'}).hco_gate_supported(False) is False
    assert kds.build({'hco_version': '4.12.3'}).hco_gate_supported(None) is False
    assert kds.build({'hco_version': 'v1.10.0'}).hco_gate_supported(None) is True
    assert kds.build({}).hco_gate_supported(None) is True


@pytest.mark.parametrize('params, needle', [
    ({'disable_mdev_configuration': 'yes'}, "kubevirt_devices_disable_mdev_configuration is 'yes', not true or false"),
    ({'adopt_conflicting': 1}, 'kubevirt_devices_adopt_conflicting is 1, not true or false'),
    ({'hco_version': '4.x'}, "kubevirt_devices_hco_version is '4.x', not a version: give the HCO (1.x) or OpenShift"),
    ({'kubevirt_version': '1.9'}, "kubevirt_devices_kubevirt_version: '1.9' is not valid; expected a SemVer"),
    ({'hco_name': ['a']}, "kubevirt_devices_hco_name is ['a'], not a string"),
    ({'kubevirt_namespace': {'a': 1}}, "kubevirt_devices_kubevirt_namespace is {'a': 1}, not a string"),
    ({'feature_gates': 'GPU'}, "feature_gates is 'GPU', not a list"),
    ({'feature_gates': [['GPU']]}, "feature_gates holds ['GPU'], not a string"),
    ({'name': 'kubevirt'}, 'the kubevirt devices settings have no name; they are disable_mdev_configuration, '),
    # the names reach a request path: one that climbs out of it, or any other that is no Kubernetes name
    ({'hco_name': 'x/../../api/v1/namespaces/ns/secrets/s'}, 'kubevirt_devices_hco_name: '
     "'x/../../api/v1/namespaces/ns/secrets/s' is not valid; expected a DNS-1123 subdomain"),
    ({'hco_namespace': 'Openshift-CNV'}, "kubevirt_devices_hco_namespace: 'Openshift-CNV' is not valid; expected a "
     'DNS-1123 label'),
    ({'kubevirt_name': 'a' * 254}, 'kubevirt_devices_kubevirt_name: '),
    ({'kubevirt_namespace': 'kube.virt'}, "kubevirt_devices_kubevirt_namespace: 'kube.virt' is not valid"),
    # a version of thousands of digits is refused like any other bad version (int() of it would raise)
    ({'hco_version': '1.' + '9' * 5000}, 'kubevirt_devices_hco_version is '),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(params, needle):
    with pytest.raises(kds.ManifestError) as exc:
        kds.build(params)
    assert needle in str(exc.value)
    # a refusal repeats at most a few hundred characters of the value
    assert len(str(exc.value)) < 600


@pytest.mark.parametrize('params', [{'hco_name': 'kubevirt-hyperconverged.v1', 'hco_namespace': 'openshift-cnv'},
                                    {'kubevirt_name': 'k' * 253, 'kubevirt_namespace': 'n' * 63},
                                    {'hco_version': '4.999999999.1'}])
def test_the_names_and_versions_at_their_limits_are_accepted(params):
    record = kds.build(params)
    assert all(getattr(record, key) == value for key, value in params.items())


def test_a_given_kubevirt_version_is_refused_in_the_builder_s_own_sentence():
    with pytest.raises(kds.ManifestError) as exc:
        kds.build({'kubevirt_version': 'v1.9'})
    assert str(exc.value).endswith('; give the KubeVirt release the cluster runs, for example v1.9.0'), exc.value


@pytest.mark.parametrize('module, settings, needle', [
    (hco_permitted_devices, {'hco_version': '4.x'}, 'kubevirt_devices_hco_version is'),
    (kubevirt_permitted_devices, {'kubevirt_version': '1.9'}, "kubevirt_devices_kubevirt_version: '1.9' is not valid"),
    # AnsibleModule's own check of the suboptions, naming the key
    (kubevirt_permitted_devices, {'gates': ['GPU']}, 'gates'),
])
def test_a_module_refuses_a_bad_setting_before_anything_is_built(monkeypatch, module, settings, needle):
    out = run_module(monkeypatch, module, {'settings': settings, 'pci_devices': [DEVICE]})
    assert out['failed'] and needle in out['msg'] and 'object' not in out, out


def test_the_modules_read_their_fields_by_name(monkeypatch):
    out = run_module(monkeypatch, hco_permitted_devices, {
        'settings': {'hco_name': 'hc', 'hco_namespace': 'cnv', 'hco_version': '4.12.3', 'kubevirt_name': 'other'},
        'pci_devices': [DEVICE]})
    meta = out['object']['metadata']
    assert (meta['name'], meta['namespace']) == ('hc', 'cnv') and 'kubevirt.kubevirt.io/jsonpatch' in meta['annotations']
    out = run_module(monkeypatch, kubevirt_permitted_devices, {
        'settings': {'kubevirt_name': 'kv', 'kubevirt_namespace': 'virt', 'kubevirt_version': 'v1.4.0',
                     'disable_mdev_configuration': False, 'feature_gates': ['GPU', 'HostDevices'], 'hco_name': 'x'},
        'pci_devices': [DEVICE]})
    meta = out['object']['metadata']
    assert (meta['name'], meta['namespace']) == ('kv', 'virt')
    assert out['object']['spec']['configuration']['developerConfiguration']['featureGates'] == ['GPU', 'HostDevices']
