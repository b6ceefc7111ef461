# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""awx/configure.yml creates the AWX objects as code: every awx.awx task uses only options the installed awx.awx
modules document (their DOCUMENTATION, the same text their argument specs are built from), with the required ones
present and fixed values among the documented choices; every job template runs a playbook of this collection."""
from __future__ import annotations

import ast
import os
import sys

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


def _load(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def module_options(fqcn):
    """{option or alias: option doc} of an installed awx.awx module, from its DOCUMENTATION."""
    namespace, collection, name = fqcn.split('.')
    # Found by path on sys.path, not importlib: once another test in this worker has installed Ansible's collection
    # finder, find_spec of a collection the finder never loaded raises instead of answering.
    relative = os.path.join('ansible_collections', namespace, collection, 'plugins', 'modules', name + '.py')
    origins = [os.path.join(entry, relative) for entry in sys.path if entry]
    origin = next((path for path in origins if os.path.isfile(path)), None)
    assert origin is not None, '%s is not installed' % fqcn
    with open(origin, encoding='utf-8') as handle:
        tree = ast.parse(handle.read())
    doc = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
               and any(getattr(t, 'id', None) == 'DOCUMENTATION' for t in node.targets))
    options = {}
    for option, body in (yaml.safe_load(doc).get('options') or {}).items():
        for key in [option] + list(body.get('aliases') or []):
            options[key] = body
    return options


TASKS = [t for play in _load('awx/configure.yml') for t in play['tasks']]
AWX_TASKS = [(t['name'], m, t[m]) for t in TASKS for m in t if m.startswith('awx.awx.')]


def test_configure_uses_awx_modules():
    wanted = {'awx.awx.credential_type', 'awx.awx.job_template', 'awx.awx.workflow_job_template', 'awx.awx.project'}
    assert {task[1] for task in AWX_TASKS} >= wanted


@pytest.mark.parametrize('name, module, args', AWX_TASKS, ids=[task[0] for task in AWX_TASKS])
def test_each_task_uses_documented_options(name, module, args):
    options = module_options(module)
    unknown = sorted(set(args) - set(options))
    assert not unknown, '%s (%s): %s not options of the installed module' % (name, module, unknown)
    missing = sorted(o for o, body in options.items() if body.get('required') and o not in args
                     and not any(a in args for a in body.get('aliases') or []))
    assert not missing, '%s: required %s' % (name, missing)
    for key, value in args.items():
        choices = options[key].get('choices')
        if choices and isinstance(value, str) and '{{' not in value:
            assert value in choices, '%s: %s=%r not in %s' % (name, key, value, choices)
        if options[key].get('type') == 'bool' and not (isinstance(value, str) and '{{' in value):
            assert isinstance(value, bool), '%s: %s=%r is not a boolean' % (name, key, value)


def test_every_job_template_runs_a_playbook_of_the_collection():
    awx = _load('awx/vars.yml')
    phases = awx['awx_phases'] + awx['awx_day2']
    assert phases
    for phase in phases:
        assert os.path.isfile(os.path.join(ROOT, phase['playbook'])), phase


def test_credential_types_inject_only_declared_fields():
    for ctype in _load('awx/credential_types.yml'):
        fields = {f['id'] for f in ctype['inputs']['fields']}
        assert set(ctype['inputs'].get('required') or []) <= fields, ctype['name']
        secret = {f['id'] for f in ctype['inputs']['fields'] if f.get('secret')}
        assert secret, '%s: a credential type without a secret field' % ctype['name']


def test_the_workflow_runs_the_phases_in_site_yml_order():
    # The workflow is AWX's site.yml: the same phase playbooks in the same order (node labels before the GPU
    # Operator, the vendor-VFIO profiles after it; site.yml's comments say why). The render bracket and the summary
    # are site.yml's own plays, not phases of the workflow.
    site = [play['ansible.builtin.import_playbook'] for play in _load('playbooks/site.yml')]
    # site.yml imports each phase's body, phase_<name>.yml; the job template runs <name>.yml, gather.yml then it
    # (the launch check is every playbook's first play, AWX's jobs included: not a phase)
    phases = [p.replace('phase_', '', 1) for p in site
              if p not in ('launch_check.yml', 'render_open.yml', 'render_close.yml', 'summary.yml')]
    assert [os.path.basename(p['playbook']) for p in _load('awx/vars.yml')['awx_phases']] == phases
