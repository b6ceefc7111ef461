"""Internal facts and registered results carry the `__` prefix; only a role's or playbook's outputs do not.

A name a role registers or sets with set_fact and that nothing outside the role reads is internal: it is
spelled `__<role>_...` (ansible-lint's var-naming accepts the leading underscores), so a reader of the
inventory or of another role knows it is not an interface. The same holds for a playbook's own facts. A name
without the prefix must be read somewhere else in the repository (another role, a playbook, a test, the
docs): that is what makes it an output.
"""
from __future__ import annotations

import glob
import os
import re
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
BLOCK_KEYS = ('block', 'rescue', 'always', 'tasks', 'pre_tasks', 'post_tasks', 'handlers')


def _set_names(node, out):
    if isinstance(node, list):
        for item in node:
            _set_names(item, out)
    elif isinstance(node, dict):
        if isinstance(node.get('register'), str):
            out.add(node['register'])
        facts = node.get('ansible.builtin.set_fact')
        if isinstance(facts, dict):
            out.update(k for k in facts if k != 'cacheable')
        for key in BLOCK_KEYS:
            if key in node:
                _set_names(node[key], out)


def _owners():
    """{owner: (files that belong to it, names it sets)}: a role directory or one playbook."""
    owners = {}
    for role in sorted(glob.glob(os.path.join(ROOT, 'roles', '*'))):
        names = set()
        for path in glob.glob(os.path.join(role, 'tasks', '*.yml')) + glob.glob(os.path.join(role, 'handlers', '*.yml')):
            with open(path, encoding='utf-8') as f:
                _set_names(yaml.safe_load(f), names)
        owners[os.path.relpath(role, ROOT) + '/'] = names
    for path in sorted(glob.glob(os.path.join(ROOT, 'playbooks', '*.yml'))):
        names = set()
        with open(path, encoding='utf-8') as f:
            _set_names(yaml.safe_load(f), names)
        owners[os.path.relpath(path, ROOT)] = names
    return owners


def _tracked_texts():
    files = subprocess.run(['git', 'ls-files'], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    texts = {}
    for rel in files:
        if rel.endswith(('.json', '.gz', '.png')) or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        with open(os.path.join(ROOT, rel), encoding='utf-8', errors='replace') as f:
            texts[rel] = f.read()
    return texts


def test_names_set_without_prefix_are_read_elsewhere():
    texts = _tracked_texts()
    owners = _owners()
    assert sum(len(n) for n in owners.values()) > 100, 'the task files were not read'
    wrong = []
    for owner, names in owners.items():
        for name in sorted(n for n in names if not n.startswith('__')):
            # a dotted use (module name, result attribute) is not a read of the variable
            used = re.compile(r'(?<![\w.])' + re.escape(name) + r'\b')
            if not any(used.search(text) for rel, text in texts.items()
                       if not (rel.startswith(owner) if owner.endswith('/') else rel == owner)):
                wrong.append('%s: %s (internal: spell it __%s)' % (owner, name, name))
    assert not wrong, '\n'.join(wrong)


@pytest.mark.parametrize('text, found', [
    ('- ansible.builtin.set_fact:\n    x_internal: 1\n  register: __x_out\n', {'x_internal', '__x_out'}),
    ('- block:\n  - register: y\n    ansible.builtin.command: true\n', {'y'}),
])
def test_name_collection_sees_set_fact_register_and_blocks(text, found):
    out = set()
    _set_names(yaml.safe_load(text), out)
    assert out == found
