# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""awx/surveys/*.yml are what tools/awx/generate_surveys.py writes from awx/vars.yml, awx/survey.yml, the argument
specs and the pool table (a stale or hand-edited file fails here, naming it), and the generator maps a variable's
spec onto an AWX survey question only where every answer AWX accepts is one a launcher may choose: no path, image,
host name, build context, file, URL or secret, whatever the entry in awx/survey.yml says.
AWX's question types and checks: AWX 24.6.1 awx/main/models/mixins.py, SurveyJobTemplateMixin
_survey_element_validation (integer: an int within min and max; multiplechoice: one of the choices; text: a
string of min to max characters)."""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, validators

# the tables the generator reads (through tools/docs/generated_lists.py), imported before any test starts Ansible's
# collection loader (test_launch_rights.py templates with it), which refuses a new import from a collection that was
# first imported without it
for _table in ('fleet', 'platform'):
    importlib.import_module('ansible_collections.gpuvirt.provision.plugins.module_utils.model.' + _table)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
GENERATOR = os.path.join(ROOT, 'tools', 'awx', 'generate_surveys.py')
sys.path.insert(0, os.path.dirname(GENERATOR))
import generate_surveys  # noqa: E402

DECLARED = generate_surveys.declared_options(ROOT)
WHY = {'why_safe': 'a reason long enough to pass the check of the catalogue entry'}


def question(**more):
    return dict({'question_name': 'Q', 'question_description': 'D'}, **WHY, **more)


def test_the_surveys_are_those_the_generator_writes():
    assert generate_surveys.regenerate(ROOT, check=True) == []


def _copy(tmp_path):
    """The generator's inputs in a scratch repository."""
    root = tmp_path / 'repo'
    shutil.copytree(os.path.join(ROOT, 'awx'), root / 'awx')
    shutil.copytree(os.path.join(ROOT, 'playbooks', 'vars'), root / 'playbooks' / 'vars')
    for role in os.listdir(os.path.join(ROOT, 'roles')):
        spec = os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')
        if os.path.isfile(spec):
            os.makedirs(root / 'roles' / role / 'meta')
            shutil.copy(spec, root / 'roles' / role / 'meta')
    return root


def _check(root):
    return subprocess.run([sys.executable, GENERATOR, '--check', '--root', str(root)], capture_output=True,
                          text=True, check=False)


def test_a_hand_edited_or_extra_survey_is_named_and_rewritten(tmp_path):
    root = _copy(tmp_path)
    surveys = root / 'awx' / 'surveys'
    edited = surveys / 'vgpu_image.yml'
    text = edited.read_text()
    # a launcher-chosen build context added by hand, and a survey file no template has
    edited.write_text(text + '  - {question_name: Context, variable: vgpu_manager_image_context_dir, type: text}\n')
    (surveys / 'debug.yml').write_text(text)
    proc = _check(root)
    assert proc.returncode == 1, proc.stderr
    assert 'awx/surveys/vgpu_image.yml' in proc.stderr and 'awx/surveys/debug.yml' in proc.stderr, proc.stderr
    subprocess.run([sys.executable, GENERATOR, '--root', str(root)], check=True)
    assert edited.read_text() == text and not (surveys / 'debug.yml').exists()
    assert _check(root).returncode == 0


def test_an_input_added_to_a_phase_reaches_its_survey(tmp_path):
    root = _copy(tmp_path)
    path = root / 'awx' / 'vars.yml'
    data = yaml.safe_load(path.read_text())
    next(p for p in data['awx_phases'] if p['name'] == 'preflight')['survey'].append('verify_smoke_vm')
    path.write_text(yaml.safe_dump(data))
    proc = _check(root)
    assert proc.returncode == 1 and 'awx/surveys/preflight.yml' in proc.stderr, proc.stderr


def test_a_phase_listing_a_path_is_refused(tmp_path):
    root = _copy(tmp_path)
    path = root / 'awx' / 'vars.yml'
    data = yaml.safe_load(path.read_text())
    next(p for p in data['awx_phases'] if p['name'] == 'vgpu_image')['survey'].append('vgpu_manager_image_run_file')
    path.write_text(yaml.safe_dump(data))
    proc = _check(root)
    assert proc.returncode == 2 and 'vgpu_manager_image_run_file' in proc.stderr, proc.stderr


def test_int_maps_to_an_integer_within_the_given_bounds():
    got = generate_surveys.field('host_prep_serial', question(min=1, max=7), DECLARED['host_prep_serial'])
    assert (got['type'], got['min'], got['max'], got['required']) == ('integer', 1, 7, False)
    assert 'default' not in got
    for bad in ({}, {'min': 1}, {'min': 5, 'max': 1}, {'min': '1', 'max': 7}):
        with pytest.raises(generate_surveys.SurveyError, match='host_prep_serial'):
            generate_surveys.field('host_prep_serial', question(**bad), DECLARED['host_prep_serial'])


def test_bool_maps_to_true_or_false_that_strict_bool_reads():
    got = generate_surveys.field('verify_smoke_vm', question(), DECLARED['verify_smoke_vm'])
    assert (got['type'], got['choices']) == ('multiplechoice', ['true', 'false'])
    # a multiplechoice answer is the choice's string: the plays read flags through strict_bool
    assert [validators.to_bool(c, 'verify_smoke_vm') for c in got['choices']] == [True, False]


def test_choices_map_to_a_multiplechoice_within_the_spec_choices():
    got = generate_surveys.field('gpuvirt_platform', question(), DECLARED['gpuvirt_platform'])
    assert got['type'] == 'multiplechoice' and got['choices'] == DECLARED['gpuvirt_platform'][0][1]['choices']
    narrower = generate_surveys.field('gpuvirt_platform', question(choices=['openshift']), DECLARED['gpuvirt_platform'])
    assert narrower['choices'] == ['openshift']
    with pytest.raises(generate_surveys.SurveyError, match='gpuvirt_platform'):
        generate_surveys.field('gpuvirt_platform', question(choices=['openshift', 'nomad']),
                               DECLARED['gpuvirt_platform'])


def test_str_maps_to_text_of_one_to_max_characters():
    # min 1: AWX passes an unanswered optional text question with min 0 as "", replacing the inventory's value
    got = generate_surveys.field('verify_smoke_vm_name', question(max=63), DECLARED['verify_smoke_vm_name'])
    assert (got['type'], got['min'], got['max']) == ('text', 1, 63)
    with pytest.raises(generate_surveys.SurveyError, match='max length'):
        generate_surveys.field('verify_smoke_vm_name', question(), DECLARED['verify_smoke_vm_name'])


@pytest.mark.parametrize('variable', [
    'vgpu_manager_image_context_dir',        # the build context
    'vgpu_manager_image_run_file',           # the licensed .run, run in the build
    'vgpu_manager_image_registry',           # where the image and the credential go
    'verify_smoke_vm_image',                 # an image run on the cluster
    'gpuvirt_render_dir',                    # a directory written
    'gpuvirt_kubeconfig',                    # a file read, credentials
    'gpu_operator_helm_binary',              # a program run
])
def test_a_path_image_file_or_program_is_never_offered(variable):
    assert variable in DECLARED, variable
    with pytest.raises(generate_surveys.SurveyError, match=variable):
        generate_surveys.field(variable, question(max=10, choices=['x']), DECLARED[variable])


def test_a_host_selection_is_offered_only_as_a_choice_of_the_pool_groups():
    spec = DECLARED['host_prep_hosts']
    pools = [':'.join(fleet.GPU_GROUPS)] + list(fleet.GPU_GROUPS)
    assert generate_surveys.field('host_prep_hosts', question(choices=pools), spec)['choices'] == pools
    for bad in ({'max': 50}, {'choices': ['all']}, {'choices': pools + ['gpu_dra:kube_control_plane']}):
        with pytest.raises(generate_surveys.SurveyError, match='pool groups'):
            generate_surveys.field('host_prep_hosts', question(**bad), spec)
    # a build host is a host name: never a question (no spec declares it: the name alone refuses it)
    with pytest.raises(generate_surveys.SurveyError, match='vgpu_image_build_host'):
        generate_surveys.field('vgpu_image_build_host', question(max=50), [('x', {'type': 'str'})])


def test_a_secret_a_list_or_an_undeclared_variable_is_refused():
    with pytest.raises(generate_surveys.SurveyError, match='no_log'):
        generate_surveys.field('some_answer', question(max=8), [('x', {'type': 'str', 'no_log': True})])
    with pytest.raises(generate_surveys.SurveyError, match='type list'):
        generate_surveys.field('vfio_modules', question(), DECLARED['vfio_modules'])
    with pytest.raises(generate_surveys.SurveyError, match='no argument spec'):
        generate_surveys.field('gpuvirt_undeclared', question(max=8), None)
    with pytest.raises(generate_surveys.SurveyError, match='why_safe'):
        generate_surveys.field('host_prep_serial', {'question_name': 'Q', 'question_description': 'D', 'min': 1,
                                                    'max': 2}, DECLARED['host_prep_serial'])
