# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/mutation/mutate.py makes the mutants its operator list names, and no others: code, never a comment, a
docstring or a message; a task's logic, never its name or a comment. Its scopes name files and tests that exist."""
from __future__ import annotations

import importlib.util
import json
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SPEC = importlib.util.spec_from_file_location('mutate', os.path.join(ROOT, 'tools', 'mutation', 'mutate.py'))
mutate = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(mutate)

PY = '''"""A docstring: x == 1 and not y."""
LIMIT = 1024  # a comment: a < b
CLASSES = ('0300', '0380')


def f(a, b):
    if a >= LIMIT and not b:
        raise ValueError('a message with == and < in it')
    return -a
'''


def test_python_mutants_are_code_only():
    found = [(row, desc) for row, dummy, desc, dummy2 in mutate.py_mutants('x.py', PY)]
    assert found == [(2, "'1024' -> '1025'"), (2, "'1024' -> '1023'"), (3, '"\'0300\'" -> "\'\'"'),
                     (3, '"\'0380\'" -> "\'\'"'), (7, "'>=' -> '>'"), (7, "'and' -> 'or'"), (7, "'not' -> ''")], found
    # each mutant is the file with that one change, and still Python
    texts = [new for dummy, dummy2, dummy3, new in mutate.py_mutants('x.py', PY)]
    assert "CLASSES = ('0300', '')" in texts[3] and texts[3].replace("''", "'0380'", 1) == PY
    for text in texts:
        compile(text, 'x.py', 'exec')


YAML = '''---
# a comment: when: not x and y
- name: Fail when not allowed and pending
  ansible.builtin.fail:
    msg: not a condition
  when: __reasons | length > 0 and not __flags.allowed  # trailing: or
'''


def test_yaml_mutants_touch_conditions_not_names_or_comments():
    found = sorted(desc for row, dummy, desc, dummy2 in mutate.yaml_mutants('t.yml', YAML) if row == 6)
    assert found == ['>->>=', 'and->or', 'not-removed', 'when-dropped'], found
    assert all(row in (5, 6) for row, dummy, dummy2, dummy3 in mutate.yaml_mutants('t.yml', YAML))


def test_every_scope_names_files_and_tests_that_exist():
    with open(os.path.join(ROOT, 'tools', 'mutation', 'scopes.json'), encoding='utf-8') as f:
        scopes = json.load(f)
    assert {'host', 'drain', 'filter', 'reboot-role'} <= set(scopes)
    for name, scope in scopes.items():
        paths = [t.split('::', 1)[0] for t in scope['tests'] if t.startswith('tests/')]
        for rel, tests in scope.get('tests_for', {}).items():
            assert rel in scope['files'], (name, rel)
            paths += [t.split('::', 1)[0] for t in tests if t.startswith('tests/')]
        assert paths, name
        for rel in scope['files'] + paths:
            assert os.path.exists(os.path.join(ROOT, rel)), (name, rel)
