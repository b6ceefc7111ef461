# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/security.md's trust-boundary table is held to the tree: every source and every sink it lists has at least
one row, every row names a rule and at least one test, and every test it names exists (file and function), so the
table cannot claim a proof that is not there or drift from the tests when they are renamed."""
from __future__ import annotations

import ast
import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
DOC = os.path.join(ROOT, 'docs', 'security.md')
REF = re.compile(r'`(tests/[A-Za-z0-9_./-]+\.py)::([A-Za-z_][A-Za-z0-9_]*)`')


def section(text, title):
    """The lines of the ``## title`` section (up to the next ``## `` heading)."""
    lines = text.splitlines()
    start = lines.index('## ' + title) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith('## ')), len(lines))
    return lines[start:end]


def table(lines, heading):
    """The rows (lists of cells) of the table under ``### heading`` within ``lines``."""
    start = lines.index('### ' + heading) + 1
    rows = []
    for line in lines[start:]:
        if line.startswith('### '):
            break
        if line.startswith('|'):
            rows.append([c.strip() for c in line.strip().strip('|').split('|')])
    header, rule = rows[0], rows[1]
    assert set(''.join(rule)) <= set('-: '), 'no header rule under %s' % heading
    return header, rows[2:]


def defined_names(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        tree = ast.parse(handle.read())
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def load():
    with open(DOC, encoding='utf-8') as handle:
        lines = section(handle.read(), 'Trust boundaries')
    sources = table(lines, 'Sources')[1]
    sinks = table(lines, 'Sinks')[1]
    header, rows = table(lines, 'Rules: source to sink')
    return sources, sinks, header, rows


def test_every_row_has_a_rule_and_tests_that_exist():
    sources, sinks, header, rows = load()
    assert header == ['Source', 'Sink', 'Rule', 'Tests']
    source_names = {r[0] for r in sources}
    sink_names = {r[0] for r in sinks}
    assert len(rows) >= len(sink_names)
    missing = []
    for source, sink, rule, tests in rows:
        assert source in source_names, 'row names an unknown source %r' % source
        assert sink in sink_names, 'row names an unknown sink %r' % sink
        assert len(rule) > 20, 'row %s -> %s has no rule' % (source, sink)
        refs = REF.findall(tests)
        assert refs, 'row %s -> %s names no test' % (source, sink)
        for path, name in refs:
            if not os.path.isfile(os.path.join(ROOT, path)) or name not in defined_names(path):
                missing.append('%s::%s' % (path, name))
    assert not missing, 'the table names tests that do not exist: %s' % ', '.join(missing)


def test_every_source_and_sink_has_a_row():
    loaded = load()
    sources, sinks, rows = loaded[0], loaded[1], loaded[3]
    assert {r[0] for r in sources} <= {r[0] for r in rows}, 'a source with no row'
    assert {r[0] for r in sinks} <= {r[1] for r in rows}, 'a sink with no row'
