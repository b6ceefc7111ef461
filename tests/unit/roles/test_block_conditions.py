# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A block's condition holds for every task of the block: a static rule over every task file of the roles and
playbooks.

Ansible evaluates a block's ``when`` again for each task of the block (and of its rescue and always sections), not
once at the block's start. A task in the block that sets a variable the condition reads (``set_fact``, ``register``)
can turn the condition false for the tasks after it, which are then skipped without an error: the reboot role's
block recorded the reboot (``reboot_done: true``) before its verification and uncordon, so after every reboot the
node stayed cordoned and the new command line was never checked; only the vm Molecule scenario's audit log showed
it. The rule: a task that sets a name the enclosing blocks' conditions read is the last task of that block (its
rescue and always sections count as after it).
"""
from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
TASK_FILES = sorted(list(ROOT.glob('roles/*/tasks/*.yml')) + list(ROOT.glob('roles/*/handlers/*.yml'))
                    + list(ROOT.glob('playbooks/*.yml')) + list(ROOT.glob('molecule/*/*.yml')))
NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
SECTIONS = ('block', 'rescue', 'always')


def condition_names(when):
    """Every identifier a ``when`` (a string, a boolean or a list of them) mentions."""
    if isinstance(when, bool) or when is None:
        return set()
    items = when if isinstance(when, list) else [when]
    return set(n for item in items for n in NAME.findall(str(item)))


def names_set(task):
    """The variables a task sets for the tasks after it: its register and its set_fact keys (both spellings)."""
    out = set()
    if isinstance(task.get('register'), str):
        out.add(task['register'])
    for key in ('ansible.builtin.set_fact', 'set_fact'):
        args = task.get(key)
        if isinstance(args, dict):
            out.update(k for k in args if k != 'cacheable')
    for section in SECTIONS:
        for sub in task.get(section) or []:
            if isinstance(sub, dict):
                out |= names_set(sub)
    return out


def problems(tasks, where, outer=frozenset()):
    """(where, task name, names) for each task that sets a name an enclosing block's when reads and is followed by
    another task the same condition guards."""
    found = []
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        if any(s in task for s in SECTIONS):
            guard = outer | condition_names(task.get('when'))
            # the tasks the block's condition guards, in the order they run: block, then rescue and always
            flat = [t for s in SECTIONS for t in (task.get(s) or []) if isinstance(t, dict)]
            for i, sub in enumerate(flat):
                hit = names_set(sub) & guard
                if hit and i < len(flat) - 1:
                    found.append((where, sub.get('name', '?'), sorted(hit)))
            for s in SECTIONS:
                found += problems(task.get(s), where, guard)
    return found


def task_lists(doc):
    """The task lists of a task file (a list of tasks) or a playbook (a list of plays)."""
    if not isinstance(doc, list):
        return []
    if any(isinstance(p, dict) and ('hosts' in p or 'import_playbook' in p or 'ansible.builtin.import_playbook' in p)
           for p in doc):
        return [p.get(k) for p in doc if isinstance(p, dict)
                for k in ('pre_tasks', 'tasks', 'post_tasks', 'handlers') if p.get(k)]
    return [doc]


def test_the_rule_finds_a_block_that_turns_its_own_condition_false():
    # the reboot role's shape before its fix: the record in the middle of the block
    tasks = [{'name': 'Reboot', 'when': ['not (reboot_done | default(false))'],
              'block': [{'name': 'Reboot it', 'ansible.builtin.reboot': {}},
                        {'name': 'Record', 'ansible.builtin.set_fact': {'reboot_done': True}},
                        {'name': 'Uncordon', 'kubernetes.core.k8s_drain': {'state': 'uncordon'}}]}]
    assert problems(tasks, 'x.yml') == [('x.yml', 'Record', ['reboot_done'])]
    # last in the block: nothing after it is guarded by the changed condition
    tasks[0]['block'] = tasks[0]['block'][::2] + tasks[0]['block'][1:2]
    assert problems(tasks, 'x.yml') == []
    # a register the condition reads counts too, and an outer block's condition holds for an inner block's tasks
    inner = [{'name': 'Outer', 'when': 'x is not defined',
              'block': [{'name': 'Inner', 'block': [{'name': 'Read', 'command': 'true', 'register': 'x'},
                                                    {'name': 'Use', 'debug': {}}]}]}]
    assert problems(inner, 'y.yml') == [('y.yml', 'Read', ['x'])]


@pytest.mark.parametrize('path', TASK_FILES, ids=[str(p.relative_to(ROOT)) for p in TASK_FILES])
def test_no_block_turns_its_own_condition_false_before_its_last_task(path):
    doc = yaml.safe_load(path.read_text())
    rel = str(path.relative_to(ROOT))
    found = [p for tasks in task_lists(doc) for p in problems(tasks, rel)]
    assert found == [], found
