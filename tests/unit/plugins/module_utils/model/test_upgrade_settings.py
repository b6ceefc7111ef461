# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade settings record (model/upgrade_settings.py): one list of fields is the record, the module's schema
and (held equal here) its documentation; a bad value is refused when a record is made, naming its variable; and a
field added to the list reaches the builders through the module without an edit of the module."""
from __future__ import annotations

import ast
import pathlib

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import upgrade_settings as us
from ansible_collections.gpuvirt.provision.plugins.modules import upgrade_plan as module

from ...modules.harness import run_module

ROOT = pathlib.Path(__file__).resolve().parents[5]
SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.UPGRADE)['options']['settings']['suboptions']


@pytest.mark.parametrize('field', us.FIELDS, ids=lambda f: f.name)
def test_each_field_is_documented_with_its_type_default_and_choices(field):
    doc = SUBOPTIONS[field.name]
    assert doc['type'] == field.type and doc.get('elements') == field.elements
    assert doc.get('default') == field.default
    assert doc.get('choices') == (list(field.choices) if field.choices is not None else None)
    assert doc['description']


def test_platform_facts_default_to_the_fallback_platform_s_row():
    row = platform.PLATFORMS[platform.FALLBACK]
    record = us.build({})
    assert (record.gpu_operator_install, record.gpu_operator_namespace, record.kernel_args) == (
        row.gpu_operator_install, row.gpu_operator_namespace, row.kernel_args)
    assert record.kubevirt_config == row.kubevirt_config


def test_a_record_is_read_only_and_a_none_takes_the_default():
    record = us.build({'serial': 3, 'image_tags': None, 'guest_driver_branch': 580})
    assert (record.serial, record.image_tags, record.guest_driver_branch) == (3, None, '580')
    with pytest.raises(AttributeError):
        record.serial = 4
    assert record.replace(serial=2).serial == 2 and us.build(record) is record
    assert record.targets() == {'gpu_operator': '', 'vgpu_manager': '', 'kubevirt': ''}


@pytest.mark.parametrize('params, needle', [
    ({'serial': 0}, "upgrade_serial is 0, not a whole number >= 1"),
    ({'serial': True}, "upgrade_serial is True, not a whole number >= 1"),
    ({'vm_policy': 'drain'}, "upgrade_vm_policy is 'drain', not one of wait, stop, refuse"),
    ({'vm_policies': {'db': 'stop'}}, "upgrade_vm_policies: 'db': 'stop' must map <namespace>/<vm name>"),
    ({'vm_policies': {'vms/db': 'drain'}}, "upgrade_vm_policies: 'vms/db': 'drain'"),
    ({'vf_reapply': 'yes'}, "upgrade_vgpu_vf_reapply is 'yes', not true or false"),
    ({'vf_nodes': [{'name': 'gpu-1'}]}, "upgrade_inventory_vf_nodes holds {'name': 'gpu-1'}, not a string"),
    ({'gpu_operator_version': ['v25.10']}, "upgrade_gpu_operator_version is ['v25.10'], not a string"),
    ({'gpu_operator_install': 'manifest'}, "gpuvirt_cluster.traits.gpu_operator_install is 'manifest', not one of"),
    ({'kubevirt_config': 'auto'}, "gpuvirt_cluster.kubevirt_config is 'auto', not one of hco, kubevirt"),
    ({'supports': ['1.33']}, "upgrade_gpu_operator_supports is ['1.33'], not a mapping"),
    ({'vm_polcy': 'stop'}, "the upgrade settings have no vm_polcy; they are vm_policy, "),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(params, needle):
    with pytest.raises(us.ValidationError) as exc:
        us.build(params)
    assert needle in str(exc.value)
    # the builders turn it into their PlanError, the same sentence
    with pytest.raises(up.PlanError) as exc:
        up.plan(params, [], [], [], [], [], [], [])
    assert needle in str(exc.value)


def test_a_new_field_reaches_the_builder_through_the_module_without_an_edit_of_the_module(monkeypatch):
    # a hypothetical setting, added to the list at run time: the module's schema, the record and the builder see it
    extra = us.Field(name='drain_grace', type='int', default=30, variable='upgrade_drain_grace')
    fields = us.FIELDS + (extra,)
    monkeypatch.setattr(us, 'FIELDS', fields)
    monkeypatch.setattr(us, 'UpgradeSettings', us.record_class(fields))
    seen = []
    real_plan = up.plan

    def plan(settings, *args, **kw):
        seen.append(settings)
        return real_plan(settings, *args, **kw)

    monkeypatch.setattr(up, 'plan', plan)
    out = run_module(monkeypatch, module, {'settings': {'drain_grace': 45, 'serial': 2}, 'node_names': []})
    assert not out['failed'], out
    assert [(s.drain_grace, s.serial) for s in seen] == [(45, 2)]
    out = run_module(monkeypatch, module, {'settings': {'drain_grace': 0}, 'node_names': []})
    assert out['failed'] and 'upgrade_drain_grace is 0, not a whole number >= 1' in out['msg']
    # the module's source names no setting: the schema is the record's
    source = (ROOT / 'plugins' / 'modules' / 'upgrade_plan.py').read_text(encoding='utf-8')
    main = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == 'main'][0]
    words = set(n.value for n in ast.walk(main) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    assert not words & set(f.name for f in fields), words & set(f.name for f in fields)
