# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each field of the AWX survey (awx/survey.yml) feeds a variable that an argument spec declares (a role's
meta/argument_specs.yml, or playbooks/vars/run_inputs.yml for the plays' own variables): the field's type is the
spec's type, its choices are values the spec and the tables accept, and its default is one of its choices.
Survey field types: AWX's survey spec (awx/main/models/mixins.py SurveyJobTemplateMixin, `_survey_element_validation`:
text, textarea, password, integer, float, multiplechoice, multiselect)."""
from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, platform

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
# AWX survey type -> the argument spec type its answer arrives as (integer answers are JSON numbers)
SPEC_TYPE = {'text': 'str', 'textarea': 'str', 'password': 'str', 'multiplechoice': 'str', 'integer': 'int',
             'float': 'float', 'multiselect': 'list'}


def _load(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def declared_options():
    """{variable: [(where, option spec)]} over every role entry point and the run inputs."""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml'))):
        specs = _load(os.path.relpath(path, ROOT))['argument_specs']
        for entry, spec in specs.items():
            for name, option in (spec.get('options') or {}).items():
                found.setdefault(name, []).append(('%s (%s)' % (os.path.relpath(path, ROOT), entry), option))
    for name, option in _load('playbooks/vars/run_inputs.yml')['run_inputs_argument_spec'].items():
        found.setdefault(name, []).append(('playbooks/vars/run_inputs.yml', option))
    return found


SURVEY = _load('awx/survey.yml')['spec']
OPTIONS = declared_options()


@pytest.mark.parametrize('field', SURVEY, ids=[f['variable'] for f in SURVEY])
def test_each_field_matches_the_spec_it_feeds(field):
    where = OPTIONS.get(field['variable'])
    assert where, '%s: no argument spec declares it' % field['variable']
    for source, option in where:
        assert option.get('type', 'str') == SPEC_TYPE[field['type']], (source, field)
        if option.get('choices') and 'choices' in field:
            assert set(field['choices']) <= set(option['choices']), (source, field['choices'], option['choices'])
        assert (field['type'] == 'password') == bool(option.get('no_log')), (source, field)
    if 'choices' in field:
        assert field['default'] in field['choices'], field
    if field['type'] == 'integer':
        assert field['min'] <= field['default'] <= field['max'], field


def _field(variable):
    return next(f for f in SURVEY if f['variable'] == variable)


def test_pool_choices_are_the_pool_table():
    assert _field('gpuvirt_gpu_hosts_pattern')['choices'] == [fleet.GPU_HOSTS_PATTERN] + list(fleet.GPU_GROUPS)
    assert all(fleet.hosts_pattern_problem(c) is None for c in _field('gpuvirt_gpu_hosts_pattern')['choices'])


def test_platform_choices_are_the_platform_table():
    assert _field('gpuvirt_platform')['choices'] == ['auto'] + list(platform.PLATFORM_NAMES)


def test_rollout_bounds_agree_with_the_run_inputs_check():
    assert _field('host_prep_serial')['min'] >= 1
