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


SELECTED = '''import re

NAME_RE = re.compile(r'[a-z]{1,%d}' % 8)
OTHER = 3


def refuse(value):
    if not NAME_RE.fullmatch(value) or len(value) > 8:
        raise ValueError(value)
    return value


class Reader:
    def check(self, n):
        return n >= OTHER

    def log(self, n):
        return n == 1


def helper(a):
    return a and True
'''


def test_a_scope_naming_functions_runs_exactly_the_mutants_inside_them():
    every = mutate.py_mutants('x.py', SELECTED)
    scope = {'functions': {'x.py': ['NAME_RE', 'refuse', 'Reader.check']}}
    chosen = mutate.scope_mutants(scope, 'x.py', SELECTED)
    # inside the named definitions: all of their mutants, and none of the others (OTHER, Reader.log, helper)
    assert sorted({row for row, dummy, dummy2, dummy3 in chosen}) == [3, 8, 15], chosen
    assert chosen == [m for m in every if m[0] in (3, 8, 15)]
    assert {row for row, dummy, dummy2, dummy3 in every} - {3, 8, 15} == {4, 18, 22}
    # a file the scope names no functions for keeps every mutant; a name the file lacks is an error, not nothing
    assert mutate.scope_mutants({}, 'x.py', SELECTED) == every
    assert mutate.scope_mutants({'functions': {'y.py': ['f']}}, 'x.py', SELECTED) == every
    try:
        mutate.scope_mutants({'functions': {'x.py': ['refuse', 'gone']}}, 'x.py', SELECTED)
    except ValueError as exc:
        assert 'gone' in str(exc)
    else:
        raise AssertionError('a missing function was not refused')


def test_every_function_a_scope_names_is_defined_in_its_file():
    with open(os.path.join(ROOT, 'tools', 'mutation', 'scopes.json'), encoding='utf-8') as f:
        scopes = json.load(f)
    for name, scope in scopes.items():
        for rel, names in scope.get('functions', {}).items():
            assert rel in scope['files'], (name, rel)
            with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
                text = f.read()
            assert names and mutate.scope_mutants(scope, rel, text), (name, rel)


def test_the_copy_is_a_checkout_linked_as_the_collection_never_inside_ansible_collections(tmp_path):
    tree, collections = mutate.copy_tree(str(tmp_path))
    # pytest imports a test by its package path: a tree inside an ansible_collections directory makes that
    # package a plain one and Ansible's collection loader then skips its builtin filters
    assert 'ansible_collections' not in os.path.relpath(tree, str(tmp_path)).split(os.sep)
    assert os.path.realpath(os.path.join(collections, 'ansible_collections', 'gpuvirt', 'provision')) == \
        os.path.realpath(tree)
    assert os.path.isfile(os.path.join(tree, 'tools', 'mutation', 'mutate.py'))
    assert not os.path.lexists(os.path.join(tree, '.venv'))  # ignored paths stay behind


def test_jobs_run_each_mutant_once_in_its_own_tree_and_report_survivors_in_file_order(tmp_path, monkeypatch):
    # two made-up mutants of one file: the first keeps the line the scope's test checks (it survives), the second
    # changes it (killed). With --jobs 2 they run at once, each in a tree of its own (the test's sleep makes them
    # overlap), and the checkout's file is never the one changed.
    rel = 'tools/mutation/scopes.json'
    original = open(os.path.join(ROOT, rel), encoding='utf-8').read()
    seen = tmp_path / 'seen'
    test = tmp_path / 'test_marker.py'
    test.write_text(
        'import os, time\n'
        'def test_marker():\n'
        '    with open(%r, "a") as f:\n'
        '        f.write(os.getcwd() + "\\n")\n'
        '    time.sleep(1)\n'
        '    assert open(%r).read().startswith("{")\n' % (str(seen), rel))
    made = [(1, 0, 'kept', original + '\n'), (1, 0, 'broken', 'x' + original)]
    monkeypatch.setattr(mutate, 'scope_mutants', lambda scope, name, text: list(made) if name == rel else [])

    class Args:
        jobs, only, limit, seed = 2, None, 0, 0
    killed, total, survivors = mutate.run_scope('made-up', {'files': [rel], 'tests': [str(test)]}, Args)
    assert (killed, total, survivors) == (1, 2, [rel + ':1:0 kept'])
    runs = seen.read_text().split()
    # the unmutated run, then one run per mutant, the two mutants in two different trees
    assert len(runs) == 3 and runs[1] != runs[2], runs
    assert open(os.path.join(ROOT, rel), encoding='utf-8').read() == original


def test_a_tree_without_git_is_copied_without_the_build_directories(monkeypatch):
    # a copy of the tree shipped to another machine (no .git there, or no git): every file but the checkout's
    # build, lab and tool directories
    def no_git(*args, **kwargs):
        raise OSError('git: not found')
    monkeypatch.setattr(mutate.subprocess, 'run', no_git)
    files = mutate.tree_files()
    assert 'tools/mutation/mutate.py' in files and 'galaxy.yml' in files
    assert not [f for f in files if f.split('/')[0] in ('.git', '.venv', '.build', '.lab') or '__pycache__' in f]
