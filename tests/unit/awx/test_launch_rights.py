# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whoever may launch a job template or the workflow of awx/configure.yml chooses the answers of that template's
survey, nothing else: no template prompts for free extra variables (nor for a limit, an inventory, a branch, a
credential or tags), and each survey offers exactly the inputs awx/vars.yml lists for it.

AWX (24.6.1 awx/main/models/mixins.py, SurveyJobTemplateMixin._accept_or_ignore_variables) accepts a launch's
extra variables only as the answers of an enabled survey, each checked against its question
(_survey_element_validation), unless ``ask_variables_on_launch`` is on, which accepts any variable; an extra
variable beats every other variable of the play. A workflow job's extra variables - its survey answers - reach every
job it starts whatever the job template prompts for (awx/main/models/workflow.py, WorkflowJobNode.get_job_kwargs),
as do the artifacts (set_stats) of the jobs before it.

The option values are read as AWX would receive them: configure.yml's expressions are templated by Ansible with
each phase of awx/vars.yml as ``item``, the survey files read by the same ``file`` lookup."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

from test_configure_objects import module_options

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
AWX = os.path.join(ROOT, 'awx')
# The prompts a launcher gets besides the survey: none. Not even the limit, which would only narrow the hosts a
# play's own pattern selects, but which ansible-playbook reads from a file when it starts with "@"
# (test_a_limit_names_a_file_whose_lines_reach_the_output).
ALLOWED_PROMPTS = set()


def _load(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


VARS = _load('awx/vars.yml')
PHASES = VARS['awx_phases']
# every job template: the phases, and the day-2 templates outside the workflow (retire)
TEMPLATES = PHASES + VARS['awx_day2']
CATALOGUE = _load('awx/survey.yml')['inputs']
TASKS = {m: t[m] for play in _load('awx/configure.yml') for t in play['tasks'] for m in t
         if m in ('awx.awx.job_template', 'awx.awx.workflow_job_template')}
WORKFLOW = (TASKS['awx.awx.workflow_job_template'], 'site', VARS['awx_workflow_survey'])


_LOADER = {}


def _plugins():
    # once per process: the lookups and filters resolve as in a playbook run
    if not _LOADER:
        init_plugin_loader()
        _LOADER['ready'] = True


def rendered(value, item=None):
    """``value`` templated as ansible-playbook templates awx/configure.yml's task arguments: its vars_files
    (vars.yml) and the loop's ``item``, lookups relative to awx/."""
    _plugins()
    loader = DataLoader()
    loader.set_basedir(AWX)
    variables = dict(VARS, item=item or {})
    if isinstance(value, str):
        value = trust_as_template(value)
    return Templar(loader=loader, variables=variables).template(value)


def prompts(module):
    """{option name or alias: its canonical ask_* option} of an installed awx.awx module."""
    options = module_options(module)
    out = {}
    for key, body in options.items():
        if key.startswith('ask_') or any(a.startswith('ask_') for a in body.get('aliases') or []):
            out[key] = next(k for k, b in options.items() if b is body and k not in (body.get('aliases') or []))
    return out


def launch_prompt_problems(module, args):
    """What is wrong with the prompts ``args`` sets: every canonical prompt set exactly once to a literal boolean
    (so running configure.yml again also turns off a prompt enabled by hand), true only for ALLOWED_PROMPTS."""
    names = prompts(module)
    problems = []
    for canonical in sorted(set(names.values())):
        given = [(k, v) for k, v in args.items() if names.get(k) == canonical]
        if len(given) != 1:
            problems.append('%s: set %d times (%s); set it once, to false unless a launcher may choose it'
                            % (canonical, len(given), ', '.join(k for k, dummy in given) or 'never'))
            continue
        key, value = given[0]
        if not isinstance(value, bool):
            problems.append('%s: %r is not a literal boolean (a template decides at run time)' % (key, value))
        elif value and canonical not in ALLOWED_PROMPTS:
            problems.append('%s: true lets a launcher choose it' % key)
    return problems


@pytest.mark.parametrize('module', sorted(TASKS))
def test_no_template_prompts_at_launch(module):
    assert 'ask_variables_on_launch' in set(prompts(module).values())
    assert launch_prompt_problems(module, TASKS[module]) == []


@pytest.mark.parametrize('value', [True, 'yes', '{{ true }}', "{{ item.prompt | default(false) }}"])
def test_prompting_for_extra_variables_is_refused(value):
    # the check above fails on the finding itself: a prompt for extra variables, literal or templated, under its
    # name or its alias
    for key in ('ask_variables_on_launch', 'ask_extra_vars', 'ask_limit_on_launch'):
        args = dict(TASKS['awx.awx.job_template'])
        args.pop(prompts('awx.awx.job_template')[key])
        args[key] = value
        problems = launch_prompt_problems('awx.awx.job_template', args)
        assert len(problems) == 1 and key in problems[0], problems
    args = dict(TASKS['awx.awx.workflow_job_template'], ask_variables_on_launch=value)
    assert launch_prompt_problems('awx.awx.workflow_job_template', args)
    args = dict(TASKS['awx.awx.workflow_job_template'])
    args.pop('ask_variables_on_launch')
    assert launch_prompt_problems('awx.awx.workflow_job_template', args)


def offered(args, item):
    """The survey AWX receives from configure.yml for one template: enabled, and its questions' variables."""
    assert args.get('survey_enabled') is True
    survey = rendered(args['survey_spec'], item)
    return [question['variable'] for question in survey['spec']]


@pytest.mark.parametrize('phase', TEMPLATES, ids=[p['name'] for p in TEMPLATES])
def test_each_job_template_offers_exactly_its_listed_inputs(phase):
    assert offered(TASKS['awx.awx.job_template'], phase) == phase['survey']
    outside = set(phase['survey']) - set(CATALOGUE)
    assert not outside, '%s offers inputs awx/survey.yml does not describe: %s' % (phase['name'], outside)


def test_the_workflow_offers_exactly_its_listed_inputs():
    args, dummy, listed = WORKFLOW
    assert offered(args, None) == listed
    # every workflow input reaches every phase; each is also one a phase template offers on its own
    assert set(listed) <= {v for phase in PHASES for v in phase['survey']}


def test_every_offered_input_says_why_it_is_safe():
    for name in {v for phase in TEMPLATES for v in phase['survey']} | set(WORKFLOW[2]):
        assert len(str(CATALOGUE[name].get('why_safe') or '').strip()) > 40, name


def test_a_survey_file_with_another_input_is_caught(tmp_path):
    # the check reads the survey AWX receives, not the list: a survey file offering one more variable fails it
    survey = yaml.safe_load(open(os.path.join(AWX, 'surveys', 'vgpu_image.yml'), encoding='utf-8'))
    survey['spec'].append({'question_name': 'Build host', 'variable': 'vgpu_image_build_host', 'type': 'text',
                           'required': False})
    (tmp_path / 'surveys').mkdir()
    (tmp_path / 'surveys' / 'vgpu_image.yml').write_text(yaml.safe_dump(survey))
    args = dict(TASKS['awx.awx.job_template'],
                survey_spec="{{ lookup('ansible.builtin.file', '%s/surveys/' ~ item.name ~ '.yml') | from_yaml }}"
                % tmp_path)
    phase = next(p for p in PHASES if p['name'] == 'vgpu_image')
    assert offered(args, phase) != phase['survey']


def test_the_workflow_nodes_carry_no_variables():
    # a node's extra_data would reach its job as extra variables too; the nodes carry only the template and links
    nodes = rendered(WORKFLOW[0]['workflow_nodes'])
    assert [n['identifier'] for n in nodes] == [p['name'] for p in PHASES]
    for node in nodes:
        assert set(node) == {'identifier', 'unified_job_template', 'related'}, node


def test_the_templates_fix_no_variables():
    # a template's own extra_vars beat the inventory for every launch; the shipped templates set none
    for args in TASKS.values():
        assert 'extra_vars' not in args


def test_no_play_hands_variables_to_the_next_job():
    # set_stats data of a job becomes extra variables of the workflow's later jobs (WorkflowJobNode.get_job_kwargs,
    # ancestor artifacts), past every survey
    found = []
    for path in glob.glob(os.path.join(ROOT, 'playbooks', '**', '*.yml'), recursive=True) + \
            glob.glob(os.path.join(ROOT, 'roles', '**', '*.yml'), recursive=True):
        with open(path, encoding='utf-8') as handle:
            if re.search(r'^\s*-?\s*(ansible\.builtin\.)?set_stats:', handle.read(), re.M):
                found.append(os.path.relpath(path, ROOT))
    assert not found


def test_the_docs_table_lists_what_each_template_offers():
    # docs/awx.md, "What a launcher may choose": one row per template, its survey's variables in the second column
    with open(os.path.join(ROOT, 'docs', 'awx.md'), encoding='utf-8') as handle:
        text = handle.read()
    section = text[text.index('## What a launcher may choose'):]
    section = section[:section.index('\n## ')]
    rows = {}
    for line in section.splitlines():
        match = re.match(r'\| `gpuvirt\.provision (\w+)`[^|]*\| ([^|]*) \|', line)
        if match:
            rows[match.group(1)] = re.findall(r'`([a-z_]+)`', match.group(2))
    wanted = {p['name']: p['survey'] for p in TEMPLATES}
    wanted['site'] = WORKFLOW[2]
    assert rows == wanted


def test_a_limit_names_a_file_whose_lines_reach_the_output(tmp_path):
    # Why no template prompts for a limit: AWX hands a launch's limit to ansible-playbook as -l LIMIT (AWX 24.6.1
    # awx/main/tasks/jobs.py, RunJob.build_args), and ansible-playbook reads a limit "@FILE" from that file, printing
    # each line that names no host in the job's output. In a job, env/extravars holds the extra variables the
    # registry credential injects, its password among them. Should ansible-core stop reading such a file, this test
    # fails and the limit may be offered again.
    extravars = tmp_path / 'extravars'
    extravars.write_text('{"gpuvirt_registry_password": "not-for-the-launcher"}\n')
    (tmp_path / 'hosts').write_text('gpu-1 ansible_connection=local\n')
    (tmp_path / 'play.yml').write_text('- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n')
    env = dict(os.environ, ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i',
                           str(tmp_path / 'hosts'), str(tmp_path / 'play.yml'), '-l', '@%s' % extravars],
                          capture_output=True, text=True, check=False, env=env, cwd=str(tmp_path))
    assert 'not-for-the-launcher' in proc.stdout + proc.stderr, proc.stdout + proc.stderr
