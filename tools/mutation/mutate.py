# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mutation testing over the repository's own operator list: does a test fail when the code is broken?

Each mutant is one small change (one operator, one place) to one file of a scope; the scope's tests run against
it in a copy of the tree (the checkout is never edited), and a mutant the tests still pass on "survives": a
behaviour no test pins. Run one scope or all, with nice (it is CPU heavy):

    python tools/mutation/mutate.py --list
    nice python tools/mutation/mutate.py --scope drain
    nice python tools/mutation/mutate.py --scope host --limit 40 --seed 1
    nice python tools/mutation/mutate.py --scope trust-host --jobs 8      # eight mutants at a time
    nice python tools/mutation/mutate.py --scope trust-host --only plugins/module_utils/host/modprobe.py:40

A scope may name, per file, the functions (and module-level names: a grammar's compiled pattern, a bound) whose
mutants it runs (``"functions": {"<file>": ["name", "Class.method"]}``): every mutant inside those definitions,
none outside, so a score "for the refusals" counts exactly the refusal code of a large file, not a random sample.

Not part of `make test` (`make mutation` runs every scope; docs/testing.md, "Mutation testing", has the measured
scores and the survivors left on purpose). Python files are mutated token by token (tokenize: strings, comments
and docstrings are left alone but for the short code-like string constants); YAML task files line by line outside
comments and task names.
"""
from __future__ import annotations

import argparse
import ast
import concurrent.futures
import io
import json
import keyword
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tokenize

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))

# Python: token operators. (token type, exact text) -> replacements; one mutant per replacement and place.
PY_SWAPS = {
    '==': ['!='], '!=': ['=='], '<': ['<='], '<=': ['<'], '>': ['>='], '>=': ['>'],
    'and': ['or'], 'or': ['and'], 'True': ['False'], 'False': ['True'], 'is': ['is not'],
    'continue': ['break'], 'break': ['continue'], '+': ['-'], '-': ['+'],
}
# a string constant that reads like data (a class code, a key, a suffix), not a message: emptied
CODE_STRING = re.compile(r'''[rbu]?(['"])[A-Za-z0-9_.:/-]{1,16}\1''')

# YAML task files: (name, pattern, replacement) applied to each match outside comments and `name:` lines
YAML_OPERATORS = [
    ('and->or', re.compile(r'(?<=\s)and(?=\s)'), 'or'),
    ('or->and', re.compile(r'(?<=\s)or(?=\s)'), 'and'),
    ('not-removed', re.compile(r'(?<![A-Za-z_])not\s+(?!in\b)'), ''),
    ('true->false', re.compile(r'(?<![A-Za-z_])true(?![A-Za-z_])'), 'false'),
    ('false->true', re.compile(r'(?<![A-Za-z_])false(?![A-Za-z_])'), 'true'),
    ('==->!=', re.compile(r'=='), '!='),
    ('!=->==', re.compile(r'!='), '=='),
    ('>->>=', re.compile(r'(?<=\s)>(?=\s)'), '>='),
    ('<-><=', re.compile(r'(?<=\s)<(?=\s)'), '<='),
    ('list->[]', re.compile(r'(?<=\{\{ )\[(?=\')'), '[] if true else ['),
    ('number+1', re.compile(r'(?<=default\()[0-9]+(?=\))'), None),
    # a one-line condition made always true (a list or a folded block is left alone: dropping its first line
    # would only make the file invalid YAML, a mutant every test kills for the wrong reason)
    ('when-dropped', re.compile(r'^(\s*)when: (?![>|])\S.*$'), r'\1when: true'),
]


def py_mutants(path, text):
    """[(line, column, description, new text)] for one Python file."""
    out = []
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    prev = None
    for tok in tokens:
        (row, col), (erow, ecol) = tok.start, tok.end
        begin, end = starts[row - 1] + col, starts[erow - 1] + ecol
        swaps = []
        if tok.type in (tokenize.OP, tokenize.NAME) and tok.string in PY_SWAPS:
            swaps = PY_SWAPS[tok.string]
            operand_before = prev is not None and (
                prev.type in (tokenize.NUMBER, tokenize.STRING) or prev.type == tokenize.NAME
                and not keyword.iskeyword(prev.string) or prev.type == tokenize.OP and prev.string in (')', ']', '}'))
            if tok.string in ('+', '-') and not operand_before:
                swaps = []  # a sign, not an operation
        elif tok.type == tokenize.NAME and tok.string == 'not':
            swaps = ['']
        elif tok.type == tokenize.NUMBER and re.fullmatch(r'[0-9]+', tok.string):
            swaps = [str(int(tok.string) + 1)] + ([str(int(tok.string) - 1)] if int(tok.string) > 0 else [])
        elif tok.type == tokenize.STRING and CODE_STRING.fullmatch(tok.string):
            swaps = ["''"]
        for new in swaps:
            desc = '%r -> %r' % (tok.string, new)
            out.append((row, col + 1, desc, text[:begin] + new + text[end:]))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            prev = tok
    return out


def yaml_mutants(path, text):
    out = []
    lines = text.splitlines(keepends=True)
    for n, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith('#') or re.match(r'-?\s*name:', stripped):
            continue
        code = line.split(' #', 1)[0]
        for name, pattern, repl in YAML_OPERATORS:
            for match in pattern.finditer(code):
                new_piece = (str(int(match.group(0)) + 1) if name == 'number+1' else match.expand(repl))
                new_line = line[:match.start()] + new_piece + line[match.end():]
                out.append((n + 1, match.start() + 1, name, ''.join(lines[:n] + [new_line] + lines[n + 1:])))
    return out


def mutants(path, text):
    return py_mutants(path, text) if path.endswith('.py') else yaml_mutants(path, text)


def definition_lines(text, names):
    """{name: (first line, last line)} of each named top-level definition of a Python file: a function or class
    (``Class.method`` for a method), or a module-level assignment (a compiled grammar, a bound), decorators
    included. A name the file does not define is an error: a scope that names a removed function must not
    silently measure nothing."""
    tree = ast.parse(text)
    found = {}

    def walk(nodes, prefix):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                found[prefix + node.name] = (first, node.end_lineno)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, prefix + node.name + '.')
            elif not prefix and isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = (node.lineno, node.end_lineno)

    walk(tree.body, '')
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError('not defined at the top level of the file: %s' % ', '.join(missing))
    return {n: found[n] for n in names}


def scope_mutants(scope, rel, text):
    """The mutants of one file of a scope: all of them, or only those inside the definitions the scope's
    ``functions`` names for that file."""
    found = mutants(rel, text)
    names = scope.get('functions', {}).get(rel)
    if names is None:
        return found
    spans = list(definition_lines(text, names).values())
    return [m for m in found if any(first <= m[0] <= last for first, last in spans)]


def load_scopes():
    with open(os.path.join(HERE, 'scopes.json'), encoding='utf-8') as f:
        return json.load(f)


# what a copy of the tree without git leaves out: the checkout's own build, lab and tool directories
NOT_COPIED = ('.git', '.venv', '.build', '.lab', '.whl', '.devicecheck', '.hypothesis', 'tests/output')


def tree_files():
    """The files git knows about (tracked, or untracked and not ignored); where the tree is no git checkout (a
    copy shipped to another machine) or git is missing, every file but those under NOT_COPIED."""
    try:
        listed = subprocess.run(['git', '-C', ROOT, 'ls-files', '-co', '--exclude-standard', '-z'],
                                capture_output=True, check=True).stdout.decode().split('\0')
        return [name for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for top, dirs, files in os.walk(ROOT):
            rel_top = os.path.relpath(top, ROOT)
            dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel_top, d)) not in NOT_COPIED
                       and '__pycache__' != d]
            # a worktree's .git is a file
            found += [name for name in (os.path.normpath(os.path.join(rel_top, f)) for f in files)
                      if name not in NOT_COPIED]
        return found


def copy_tree(dest_root):
    """The files of the tree (``tree_files``), copied to ``dest_root``/tree and linked
    as the collection ansible_collections/gpuvirt/provision under ``dest_root``/collections, the layout of a
    checkout (its .build/collections link): the tests' own path is not inside an ``ansible_collections`` package,
    where pytest's package-relative imports would shadow Ansible's collection loader (every builtin filter then
    fails to load, and a test that templates fails without any mutant). The checkout itself is never mutated.
    Returns (tree, collections)."""
    tree = os.path.join(dest_root, 'tree')
    collections = os.path.join(dest_root, 'collections')
    os.makedirs(os.path.join(collections, 'ansible_collections', 'gpuvirt'))
    os.symlink(tree, os.path.join(collections, 'ansible_collections', 'gpuvirt', 'provision'))
    for name in tree_files():
        src = os.path.join(ROOT, name)
        if not os.path.isfile(src) or os.path.islink(src):
            continue
        target = os.path.join(tree, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(src, target)
    # the collections the playbooks use besides this one (kubernetes.core, ...) stay where the checkout finds them
    return tree, collections


def run_tests(tree, collections, tests, timeout):
    # the copy's collection is the only gpuvirt.provision on the path; other entries (a wheel directory) stay
    kept = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep)
            if p and not os.path.isdir(os.path.join(p, 'ansible_collections', 'gpuvirt'))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([collections] + kept),
               ANSIBLE_CONFIG=os.path.join(tree, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=collections + ':' + os.environ.get('ANSIBLE_COLLECTIONS_PATH', ''),
               PYTHONDONTWRITEBYTECODE='1', HYPOTHESIS_DATABASE='none')
    cmd = [sys.executable, '-m', 'pytest', '-x', '-q', '-p', 'no:cacheprovider', '-o', 'addopts='] + tests
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        rc = proc.returncode
        tail = (proc.stdout + proc.stderr)[-600:]
    except subprocess.TimeoutExpired:
        rc, tail = 'timeout', ''
    return rc, time.time() - start, tail


def run_scope(name, scope, args):
    """Run one scope's mutants, ``args.jobs`` at a time, each worker in its own copy of the tree. Returns (killed,
    total, survivors), or None when the scope's tests fail unmutated."""
    jobs = max(1, args.jobs)
    work = tempfile.mkdtemp(prefix='gpuvirt-mutation-')
    try:
        trees = [copy_tree(os.path.join(work, str(n))) for n in range(jobs)]
        tree, collections = trees[0]
        tests = scope['tests']
        rc, base, tail = run_tests(tree, collections, tests, 1800)
        if rc != 0:
            print('%s: the tests fail without any mutant (rc %s); fix that first:\n%s' % (name, rc, tail))
            return None
        timeout = max(60, base * 4)
        todo = []
        for rel in scope['files']:
            with open(os.path.join(tree, rel), encoding='utf-8') as f:
                text = f.read()
            todo += [(rel, text) + m for m in scope_mutants(scope, rel, text)]
        if args.only:
            todo = [m for m in todo if any(('%s:%d:%d %s' % (m[0], m[2], m[3], m[4])).startswith(o)
                                           for o in args.only)]
        if args.limit and len(todo) > args.limit:
            todo = sorted(random.Random(args.seed).sample(todo, args.limit), key=lambda m: (m[0], m[2], m[3]))
        print('%s: %d mutants (tests take %.0f s unmutated; %d at a time)' % (name, len(todo), base, jobs), flush=True)
        free = queue.Queue()
        for pair in trees:
            free.put(pair)
        lock = threading.Lock()
        done = {'n': 0}

        def one(item):
            rel, original, row, col, desc, new = item
            own_tree, own_collections = free.get()
            path = os.path.join(own_tree, rel)
            try:
                with open(path, 'w', encoding='utf-8') as f:
                    f.write(new)
                try:
                    # a file's own tests where the scope names them (tests_for), else the scope's
                    rc, took, dummy = run_tests(own_tree, own_collections,
                                                scope.get('tests_for', {}).get(rel, tests), timeout)
                finally:
                    with open(path, 'w', encoding='utf-8') as f:
                        f.write(original)
            finally:
                free.put((own_tree, own_collections))
            label = '%s:%d:%d %s' % (rel, row, col, desc)
            with lock:
                done['n'] += 1
                verdict = 'killed' if rc != 0 else 'SURVIVED'
                print('  [%d/%d] %s %s (%.0f s)' % (done['n'], len(todo), verdict, label, took), flush=True)
            return label if rc == 0 else None

        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            # in the order of the file (the list's order), whichever worker ran each
            survivors = [label for label in pool.map(one, todo) if label]
        killed = len(todo) - len(survivors)
        score = 100.0 * killed / len(todo) if todo else 100.0
        print('%s: %d/%d killed (%.0f%%)' % (name, killed, len(todo), score))
        for s in survivors:
            print('  survived: ' + s)
        return killed, len(todo), survivors
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--scope', action='append', help='a scope of scopes.json (repeatable; default: all)')
    parser.add_argument('--list', action='store_true', help='print the scopes and their mutant counts, run nothing')
    parser.add_argument('--limit', type=int, default=0, help='at most this many mutants per scope (a seeded sample)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--jobs', type=int, default=1,
                        help='mutants run at once, each in its own copy of the tree (default 1; about one per core)')
    parser.add_argument('--only', action='append', metavar='FILE:ROW[:COL DESC]',
                        help='only the mutants whose "file:row:col description" starts with this (repeatable): '
                             'run a survivor again after the test that kills it')
    args = parser.parse_args(argv)
    scopes = load_scopes()
    chosen = args.scope or sorted(scopes)
    unknown = [s for s in chosen if s not in scopes]
    if unknown:
        parser.error('unknown scope %s; scopes: %s' % (', '.join(unknown), ', '.join(sorted(scopes))))
    if args.list:
        for name in chosen:
            count = 0
            for rel in scopes[name]['files']:
                with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
                    count += len(scope_mutants(scopes[name], rel, f.read()))
            print('%-14s %5d mutants  files: %s  tests: %s' % (
                name, count, ' '.join(scopes[name]['files']), ' '.join(scopes[name]['tests'])))
        return 0
    results = {}
    for name in chosen:
        results[name] = run_scope(name, scopes[name], args)
    print('mutation scores:')
    failed = False
    for name, result in results.items():
        if result is None:
            failed = True
            print('  %-12s tests fail unmutated' % name)
        else:
            killed, total, dummy = result
            print('  %-12s %d/%d killed (%.0f%%)' % (name, killed, total, 100.0 * killed / total if total else 100))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
