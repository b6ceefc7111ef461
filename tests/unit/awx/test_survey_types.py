# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each question of the AWX surveys (awx/surveys/*.yml) feeds a variable that an argument spec declares (a role's
meta/argument_specs.yml, or playbooks/vars/run_inputs.yml for the plays' own variables), and every answer AWX
accepts for it is one the plays accept: the answer's type is the spec's type, a choice is a value the spec, the
tables and the plays' checks accept, an integer's bounds lie within the grammar the plays check it with.
AWX's question types and what it accepts for each: AWX 24.6.1 awx/main/models/mixins.py, SurveyJobTemplateMixin
_survey_element_validation (text, textarea, password, integer, float, multiplechoice, multiselect; an integer
answer is a JSON number within min and max, a multiplechoice answer one of the choices, as a string)."""
from __future__ import annotations

import ast
import glob
import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.filter.validate import GRAMMARS
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, validators

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'awx'))
import generate_surveys  # noqa: E402

# AWX survey type -> the argument spec types its answer may feed (a multiplechoice answer is a string: a flag's
# "true"/"false" reaches strict_bool as such)
SPEC_TYPES = {'text': {'str'}, 'multiplechoice': {'str', 'bool'}, 'integer': {'int'}}


def _load(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


SURVEYS = {os.path.basename(p)[:-4]: _load(os.path.relpath(p, ROOT))
           for p in sorted(glob.glob(os.path.join(ROOT, 'awx', 'surveys', '*.yml')))}
FIELDS = [(name, f) for name, survey in SURVEYS.items() for f in survey['spec']]
OPTIONS = generate_surveys.declared_options(ROOT)


def run_input_grammars():
    """{variable: grammar} of the plays' own checks (playbooks/run_inputs.yml, the checked filter's grammars)."""
    (play,) = _load('playbooks/run_inputs.yml')
    (task,) = [t for t in play['tasks'] if t.get('loop') and 'grammar' in t['loop'][0]]
    return {item['name']: item['grammar'] for item in task['loop']}


def cluster_modes():
    """The modes the cluster role's check accepts (roles/cluster/tasks/main.yml, "Check the cluster settings")."""
    tasks = _load('roles/cluster/tasks/main.yml')
    (task,) = [t for t in tasks if t.get('name') == 'Check the cluster settings']
    (rule,) = [r for r in task['ansible.builtin.assert']['that'] if r.startswith('gpuvirt_cluster_mode in ')]
    return ast.literal_eval(rule[len('gpuvirt_cluster_mode in '):])


def test_every_template_has_a_survey():
    awx = _load('awx/vars.yml')
    assert set(SURVEYS) == {p['name'] for p in awx['awx_phases'] + awx['awx_day2']} | {'site'}


@pytest.mark.parametrize('survey, field', FIELDS, ids=['%s-%s' % (s, f['variable']) for s, f in FIELDS])
def test_each_question_matches_the_spec_it_feeds(survey, field):
    where = OPTIONS.get(field['variable'])
    assert where, '%s: no argument spec declares it' % field['variable']
    for source, option in where:
        spec_type = option.get('type', 'str')
        # a list of host names as text: only a host_names question, whose play splits and checks each name
        host_names = generate_surveys.inputs(ROOT)[field['variable']].get('host_names') is True
        assert spec_type in SPEC_TYPES[field['type']] | ({'list'} if host_names else set()), (source, field)
        if spec_type == 'bool':
            assert field['choices'] == ['true', 'false'], field
            assert [validators.to_bool(c, field['variable']) for c in field['choices']] == [True, False]
        if option.get('choices') and 'choices' in field:
            assert set(field['choices']) <= set(option['choices']), (source, field['choices'], option['choices'])
        assert not option.get('no_log'), (source, field)
    # optional and without a default: an unanswered question passes nothing, so the inventory's value stands
    assert field['required'] is False and 'default' not in field, field
    if field['type'] == 'integer':
        grammar = run_input_grammars().get(field['variable'])
        assert grammar, '%s: no play checks this integer (playbooks/run_inputs.yml)' % field['variable']
        assert field['min'] <= field['max']
        for bound in (field['min'], field['max']):
            GRAMMARS[grammar](bound, field['variable'])


def _fields(variable):
    found = [f for dummy, f in FIELDS if f['variable'] == variable]
    assert found, variable
    return found


def test_pool_choices_are_the_pool_table():
    for field in _fields('gpuvirt_gpu_hosts_pattern'):
        assert field['choices'] == [fleet.GPU_HOSTS_PATTERN] + list(fleet.GPU_GROUPS)
        assert all(fleet.hosts_pattern_problem(c) is None for c in field['choices'])


def test_cluster_mode_choices_are_the_modes_the_cluster_role_accepts():
    for field in _fields('gpuvirt_cluster_mode'):
        assert field['choices'] == cluster_modes()


def test_rollout_bounds_agree_with_the_run_inputs_check():
    for field in _fields('host_prep_serial'):
        assert field['min'] >= 1
    with pytest.raises(validators.ValidationError):
        GRAMMARS['percentage'](_fields('host_prep_max_fail_percentage')[0]['max'] + 1, 'x')
