# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every phase's settings record against its schema and its documentation, and every module that takes one: the
one list of fields (FIELDS) is the record's slots, the suboptions of the modules' ``settings`` option and, held equal
here, the phase's attribute of the settings doc fragment; a module takes ``settings`` beside only what the run read or
computed (its ``READS``), and documents it through the fragment alone. A new phase is one row of PHASES; a fragment
attribute or a module taking ``settings`` that no row names fails here.

The tests of each record (test_<phase>_settings.py) hold what differs: its checks, defaults and reads by name."""
from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.doc_fragments import live_object
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt_devices_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_vf_machineconfig_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import settings_record, upgrade_settings
from ansible_collections.gpuvirt.provision.plugins.modules import (
    dra_manifests, gpu_operator_manifests, hco_permitted_devices, kubevirt_permitted_devices, machineconfig_manifests,
    node_labels_plan, upgrade_plan, verify_smoke_vm, vgpu_vf_machineconfig)

from ...modules.harness import argument_spec_of

# phase (the fragment attribute's name, lower case): its record module, its record class, the modules taking it
PHASES = {
    'dra': (dra_settings, 'DraSettings', (dra_manifests,)),
    'gpu_operator': (gpu_operator_settings, 'GpuOperatorSettings', (gpu_operator_manifests,)),
    'kubevirt_devices': (kubevirt_devices_settings, 'KubevirtDevicesSettings',
                         (hco_permitted_devices, kubevirt_permitted_devices)),
    'machineconfig': (machineconfig_settings, 'MachineconfigSettings', (machineconfig_manifests,)),
    'node_labels': (node_labels_settings, 'NodeLabelsSettings', (node_labels_plan,)),
    'upgrade': (upgrade_settings, 'UpgradeSettings', (upgrade_plan,)),
    'verify': (verify_settings, 'VerifySettings', (verify_smoke_vm,)),
    'vgpu_vf_machineconfig': (vgpu_vf_machineconfig_settings, 'VgpuVfMachineconfigSettings', (vgpu_vf_machineconfig,)),
}
MODULES = [(phase, module) for phase, (_r, _c, modules) in sorted(PHASES.items()) for module in modules]
# the live object's options, documented by their own fragment where a module extends it
LIVE_OBJECT = yaml.safe_load(live_object.ModuleDocFragment.DOCUMENTATION)['options']
PLUGINS = os.path.join(os.path.dirname(os.path.abspath(fragments.__file__)), '..')


def suboptions(phase):
    return yaml.safe_load(getattr(fragments.ModuleDocFragment, phase.upper()))['options']['settings']['suboptions']


@pytest.mark.parametrize('phase', sorted(PHASES))
def test_the_record_the_schema_and_the_documentation_name_the_same_fields(phase):
    records, class_name, _modules = PHASES[phase]
    record = getattr(records, class_name)
    names = [f.name for f in records.FIELDS]
    assert list(record.__slots__) == names == [n for n, d in record.COLUMNS]
    assert list(records.argument_spec()) == names
    assert settings_record.documentation_differences(records.FIELDS, suboptions(phase)) == []
    assert yaml.safe_load(getattr(fragments.ModuleDocFragment, phase.upper()))['options']['settings']['required']


@pytest.mark.parametrize('phase, module', MODULES, ids=['%s-%s' % (p, m.__name__.rsplit('.', 1)[-1])
                                                        for p, m in MODULES])
def test_each_module_takes_its_phase_s_schema_as_its_settings_option(monkeypatch, phase, module):
    records = PHASES[phase][0]
    seen = argument_spec_of(monkeypatch, module)
    assert seen['settings'] == {'type': 'dict', 'required': True, 'options': records.argument_spec()}
    # besides the settings only what the run read or computed about the cluster and its hosts
    assert sorted(seen) == sorted(('settings',) + module.READS)
    doc = yaml.safe_load(module.DOCUMENTATION)
    fragments_used = doc['extends_documentation_fragment']
    assert 'gpuvirt.provision.settings.%s' % phase in fragments_used
    # the module's own options (and the live object's fragment, where extended) document the reads, and only them
    own = list(doc.get('options') or {})
    if 'gpuvirt.provision.live_object' in fragments_used:
        own += list(LIVE_OBJECT)
    assert 'settings' not in (doc.get('options') or {}) and sorted(own) == sorted(module.READS)


def test_every_phase_of_the_fragment_and_every_module_taking_settings_is_a_row_here():
    attributes = sorted(a.lower() for a in vars(fragments.ModuleDocFragment)
                        if a.isupper() and a != 'DOCUMENTATION')
    assert attributes == sorted(PHASES)
    extending = set()
    for path in glob.glob(os.path.join(PLUGINS, 'modules', '*.py')):
        with open(path, encoding='utf-8') as handle:
            if re.search(r'^\s*- gpuvirt\.provision\.settings\.', handle.read(), re.M):
                extending.add(os.path.basename(path)[:-3])
    assert extending == set(m.__name__.rsplit('.', 1)[-1] for _p, m in MODULES)
