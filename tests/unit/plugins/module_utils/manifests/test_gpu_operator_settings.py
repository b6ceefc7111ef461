# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator settings record (manifests/gpu_operator_settings.py): one list of fields is the record, the
module's schema and (held equal here) its documentation; a bad value is refused when a record is made, naming its
variable in the builders' own sentence; and a field added to the list reaches the builders through the module
without an edit of the module or of the role's second call."""
from __future__ import annotations

import ast
import pathlib

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator_install as install
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator_settings as gos
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform, settings_record
from ansible_collections.gpuvirt.provision.plugins.modules import gpu_operator_manifests as module

from ...modules.harness import run_module

ROOT = pathlib.Path(__file__).resolve().parents[5]
SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.GPU_OPERATOR)['options']['settings']['suboptions']
VGM = {'repository': 'registry.example.com:5000/nvidia', 'version': '580.82.02'}


def test_the_documentation_comparison_names_what_differs():
    # the comparison the drift test relies on: a field the fragment lacks, a default it states otherwise
    suboptions = dict(SUBOPTIONS)
    del suboptions['nfd_channel']
    suboptions['sandbox_mode'] = dict(suboptions['sandbox_mode'], default='kata')
    assert settings_record.documentation_differences(gos.FIELDS, suboptions) == [
        'nfd_channel: a field, not documented',
        "sandbox_mode: default is 'kata' in the documentation, 'kubevirt' in FIELDS"]


def test_the_platform_s_choices_are_the_table_s_when_asked(monkeypatch):
    # a platform row added at run time (tests/unit/plugins/module_utils/test_table_rows.py) is a choice at once
    monkeypatch.setattr(platform, 'PLATFORM_NAMES', platform.PLATFORM_NAMES + ('rke2-hypothetical',))
    assert gos.argument_spec()['platform']['choices'][-1] == 'rke2-hypothetical'


def test_a_record_is_read_only_and_a_none_takes_the_default():
    record = gos.build({'platform': 'openshift', 'vgpu_manager_image_version': 580.82, 'namespace': None})
    assert record.vgpu_manager_image_version == '580.82' and record.install_plan_approval == 'Automatic'
    assert record.operator_namespace() == platform.PLATFORMS['openshift'].gpu_operator_namespace and record.olm()
    with pytest.raises(AttributeError):
        record.platform = 'kubernetes'
    assert gos.build(record) is record and not record.replace(platform='kubernetes').olm()


# Each sentence is the one the module gave before the settings were one record (tests/unit/plugins/modules/
# test_cluster_operator_modules.py and manifests/test_gpu_operator.py pin most of them there too).
@pytest.mark.parametrize('params, needle', [
    ({'default_workload': 'vm-gpu'}, "default workload 'vm-gpu' is not one of container, vm-passthrough, vm-vgpu "
                                     "(gpu_operator_default_workload)"),
    ({'sandbox_mode': 'gvisor'}, "sandbox mode 'gvisor' is not one of kubevirt, kata (gpu_operator_sandbox_mode)"),
    ({'sandbox_enabled': False, 'default_workload': 'vm-passthrough'},
     'default workload vm-passthrough needs sandbox workloads on (gpu_operator_sandbox_enabled: true)'),
    ({'platform': 'kubernetes', 'platform_traits': platform.traits('openshift')},
     "platform_traits are those of 'openshift', not of the platform 'kubernetes': give gpuvirt_cluster.traits with "
     "gpuvirt_cluster.platform"),
    ({'vgpu_manager': {'repository': VGM['repository']}, 'pull_secret_name': 'p'},
     'the vGPU Manager image needs version (gpu_operator_vgpu_manager.version)'),
    ({'vgpu_manager': dict(VGM, version='580.65.06'), 'vgpu_manager_image_version': '580.82.02'},
     "gpu_operator_vgpu_manager.version is '580.65.06' but vgpu_manager_image_version is '580.82.02'"),
    ({'vgpu_manager': VGM}, 'is in a private registry (registry.example.com:5000) but no pull secret is given'),
    ({'vgpu_manager': VGM, 'pull_secret_name': 'p',
      'registry_login': {'registry': 'quay.io', 'username': 'u', 'password_given': True}}, 'logs in to quay.io'),
    ({'vgpu_manager': VGM, 'pull_secret_name': 'p', 'os_tags': {'a': 'rhcos4.18', 'b': 'rhcos4.19'}},
     'the GPU hosts run 2 OS tags (rhcos4.18: a; rhcos4.19: b)'),
    ({'dra_nodes': ['dra-1'], 'hosts': [{'host': 'ctr-1', 'pool': 'container'}]},
     'the classic device plugin\'s nodes (ctr-1 (pool container))'),
    ({'upgrade_policy': {'auto_upgrade': True, 'max_parallel_upgrades': 0}}, 'gpu_operator_upgrade_policy'),
    ({'namespace': 'GPU_Operator'}, "gpu_operator_namespace: 'GPU_Operator' is not valid"),
    ({'sandbox_enabled': 'yes'}, "gpu_operator_sandbox_enabled is 'yes', not true or false"),
    ({'hosts': ['gpu-1']}, "gpu_operator_hosts holds 'gpu-1', not a mapping"),
    ({'platform': 'nomad'}, "gpuvirt_cluster.platform is 'nomad', not one of openshift, kubernetes"),
    ({'sandbox_mod': 'kata'}, 'the GPU Operator settings have no sandbox_mod; they are platform, '),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(params, needle):
    with pytest.raises(gos.ManifestError) as exc:
        gos.build(params)
    assert needle in str(exc.value)
    # the builder refuses it the same way, before anything is built
    with pytest.raises(gos.ManifestError) as exc:
        install.build(params)
    assert needle in str(exc.value)


def test_a_new_field_reaches_the_builder_through_the_module_without_an_edit_of_the_module(monkeypatch):
    # a hypothetical setting, added to the list at run time: the module's schema, the record and the builder see it
    extra = gos.Field(name='driver_enabled', type='bool', default=True, variable='gpu_operator_driver_enabled')
    fields = gos.FIELDS + (extra,)
    monkeypatch.setattr(gos, 'FIELDS', fields)
    monkeypatch.setattr(gos, 'GpuOperatorSettings', gos.record_class(fields))
    real_helm = install.helm

    def helm(settings, spec, chart_values=None):
        # the builder reads the new field by name
        return dict(real_helm(settings, spec, chart_values), driver={'enabled': settings.driver_enabled})

    monkeypatch.setattr(install, 'helm', helm)
    out = run_module(monkeypatch, module, {'settings': {'platform': 'kubernetes', 'driver_enabled': False}})
    assert not out['failed'], out
    assert out['helm_values']['driver'] == {'enabled': False}
    out = run_module(monkeypatch, module, {'settings': {'platform': 'kubernetes', 'driver_enabled': 'maybe'}})
    assert out['failed'] and 'driver_enabled' in out['msg']
    # the module's source names no setting: the schema is the record's
    source = (ROOT / 'plugins' / 'modules' / 'gpu_operator_manifests.py').read_text(encoding='utf-8')
    tree = ast.parse(source)
    code = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    words = set(n.value for f in code for n in ast.walk(f) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    assert not words & set(f.name for f in fields), words & set(f.name for f in fields)
    # nor do the role's builds: both pass the one dict tasks/main.yml made
    for name in ('main.yml', 'openshift.yml'):
        tasks = yaml.safe_load((ROOT / 'roles' / 'gpu_operator' / 'tasks' / name).read_text(encoding='utf-8'))
        calls = [t['gpuvirt.provision.gpu_operator_manifests'] for t in tasks
                 if 'gpuvirt.provision.gpu_operator_manifests' in t]
        assert calls and all(sorted(set(c) - set(module.READS)) == ['settings'] for c in calls), (name, calls)
        assert all('__gpu_operator_settings' in c['settings'] for c in calls), (name, calls)
