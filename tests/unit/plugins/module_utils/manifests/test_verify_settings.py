# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify settings record (manifests/verify_settings.py): one list of fields is the record, the schema of
verify_smoke_vm and (held equal here) its documentation; a bad value is refused when a record is made, naming its
variable; the module reads the fields by name, and the record says which resource the smoke VM asks for."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify_settings as vs
from ansible_collections.gpuvirt.provision.plugins.modules import verify_node_resources, verify_smoke_vm

from ...modules.harness import argument_spec_of, run_module

SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.VERIFY)['options']['settings']['suboptions']
IMAGE = 'quay.io/containerdisks/fedora:41'
A10 = 'nvidia.com/GA102GL_A10'


def test_the_node_comparison_takes_no_setting(monkeypatch):
    # the resources the run expects (from the host facts) and the Nodes read: nothing the record holds
    seen = argument_spec_of(monkeypatch, verify_node_resources)
    assert sorted(seen) == ['expected', 'nodes']


def test_a_record_is_read_only_and_a_none_or_an_empty_resource_takes_the_default():
    record = vs.build({'image': IMAGE, 'resource': '', 'name': None, 'running': None})
    assert (record.name, record.namespace, record.resource, record.memory) == ('gpuvirt-smoke', 'default', None, '2Gi')
    assert record.image == IMAGE and record.running is False
    with pytest.raises(AttributeError):
        record.running = True
    assert vs.build(record) is record


def test_the_resource_given_wins_else_the_run_s_first_expected_one():
    expected = {'gpu-0': {}, 'gpu-1': {A10: 2, 'nvidia.com/NVIDIA_A10-12Q': 1}, 'gpu-2': {'nvidia.com/x': 1}}
    assert vs.build({'image': IMAGE}).resource_name(expected) == A10
    assert vs.build({'image': IMAGE, 'resource': 'nvidia.com/x'}).resource_name(expected) == 'nvidia.com/x'
    # none given, none expected: the builder refuses '' naming the variable to set
    assert vs.build({'image': IMAGE}).resource_name({}) == ''
    with pytest.raises(verify.ManifestError, match='set verify_smoke_vm_resource'):
        verify.smoke_vm('gpuvirt-smoke', 'default', '', IMAGE)


@pytest.mark.parametrize('params, needle', [
    ({}, 'smoke VM needs a containerDisk image (verify_smoke_vm_image)'),
    ({'image': ''}, 'smoke VM needs a containerDisk image (verify_smoke_vm_image)'),
    ({'image': 'x\n\ny'}, 'verify_smoke_vm_image'),
    ({'image': IMAGE + '\n--privileged'}, 'verify_smoke_vm_image'),
    ({'image': '$(id)/x:1'}, 'verify_smoke_vm_image'),
    ({'image': ['a']}, "verify_smoke_vm_image is ['a'], not a string"),
    ({'image': IMAGE, 'name': 'Evil..Name'}, 'verify_smoke_vm_name'),
    ({'image': IMAGE, 'name': 'a/../b'}, 'verify_smoke_vm_name'),
    ({'image': IMAGE, 'namespace': 'Kube System'}, 'verify_smoke_vm_namespace'),
    ({'image': IMAGE, 'namespace': '../default'}, 'verify_smoke_vm_namespace'),
    ({'image': IMAGE, 'namespace': 'a.b'}, 'verify_smoke_vm_namespace'),
    ({'image': IMAGE, 'resource': 'GA102GL_A10'}, 'set verify_smoke_vm_resource'),
    ({'image': IMAGE, 'resource': 'a b/$(x)'}, 'verify_smoke_vm_resource'),
    ({'image': IMAGE, 'resource': 'nvidia.com/' + 'A' * 64}, 'verify_smoke_vm_resource'),
    ({'image': IMAGE, 'resource': 'nvidia.com/x\n'}, 'verify_smoke_vm_resource'),
    ({'image': IMAGE, 'memory': '2Gi; rm'}, "the verify_smoke_vm module's settings.memory"),
    ({'image': IMAGE, 'memory': '2Gi\n'}, "the verify_smoke_vm module's settings.memory"),
    ({'image': IMAGE, 'memory': 'a' * 100}, "the verify_smoke_vm module's settings.memory"),
    ({'image': IMAGE, 'running': 'yes'}, "verify_smoke_vm_running is 'yes', not true or false"),
    ({'image': IMAGE, 'resource_name': A10}, 'the verify settings have no resource_name; they are '),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(params, needle):
    with pytest.raises(verify.ManifestError) as exc:
        vs.build(params)
    assert needle in str(exc.value)


@pytest.mark.parametrize('settings, needle', [
    ({}, 'verify_smoke_vm_image'),
    ({'image': IMAGE, 'namespace': '../default'}, 'verify_smoke_vm_namespace'),
    # AnsibleModule's own check of the suboptions, naming the key
    ({'image': IMAGE, 'resource_name': A10}, 'resource_name'),
])
def test_the_module_refuses_a_bad_setting_before_anything_is_built(monkeypatch, settings, needle):
    out = run_module(monkeypatch, verify_smoke_vm, {'settings': settings, 'expected': {'n': {A10: 1}}})
    assert out['failed'] and needle in out['msg'] and 'object' not in out, out


def test_the_module_reads_its_fields_by_name(monkeypatch):
    settings = {'name': 'smoke-1', 'namespace': 'gpu-tests', 'image': IMAGE, 'memory': '1Gi', 'running': True}
    vm = run_module(monkeypatch, verify_smoke_vm, {'settings': settings, 'expected': {'n': {A10: 1}}})['object']
    assert vm == verify.smoke_vm('smoke-1', 'gpu-tests', A10, IMAGE, '1Gi', True)
    assert (vm['metadata']['name'], vm['metadata']['namespace'], vm['spec']['runStrategy']) == (
        'smoke-1', 'gpu-tests', 'Always')
    given = run_module(monkeypatch, verify_smoke_vm, {'settings': dict(settings, resource='nvidia.com/x'),
                                                      'expected': {'n': {A10: 1}}})['object']
    assert given['spec']['template']['spec']['domain']['devices']['gpus'][0]['deviceName'] == 'nvidia.com/x'
    none = run_module(monkeypatch, verify_smoke_vm, {'settings': settings})
    assert none['failed'] and 'set verify_smoke_vm_resource' in none['msg']


@pytest.mark.parametrize('expected', [{'n1': 5}, {'n1': 'nvidia.com/A10'}, ['n1'], 'n1', {'n1': ['nvidia.com/A10']}])
def test_expectations_of_another_shape_are_refused_naming_verify_expected(expected):
    # a number would raise TypeError, a string would give its first character as the resource
    with pytest.raises(vs.ManifestError, match=r'^verify_expected is .*, not a mapping of node to \{resource: count\}'):
        vs.build({'image': 'quay.io/containerdisks/fedora:41'}).resource_name(expected)
    assert vs.build({'image': 'quay.io/containerdisks/fedora:41'}).resource_name(None) == ''


def test_a_refusal_repeats_at_most_a_few_hundred_characters_of_the_value():
    for params in ({'resource': 'x' * 20000}, {'name': 'a' * 100000}, {'running': 'y' * 100000},
                   {'image': 'quay.io/x:' + 't' * 100000}):
        with pytest.raises(vs.ManifestError) as exc:
            vs.build(dict({'image': 'quay.io/containerdisks/fedora:41'}, **params))
        assert len(str(exc.value)) < 700, (sorted(params), len(str(exc.value)))
    with pytest.raises(vs.ManifestError) as exc:
        vs.build('A' * 100000)
    assert len(str(exc.value)) < 700
    with pytest.raises(vs.ManifestError) as exc:
        vs.build({'k' * 1000: 1})
    assert len(str(exc.value)) < 700
