# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No branch on a pool's or a platform's name outside the tables: the code reads the row's traits.

A comparison with a pool name (fleet.POOLS) or a platform name (platform.PLATFORM_NAMES) as a quoted literal in
plugins/, roles/ or playbooks/ (``== 'openshift'``, ``'vm-vgpu' in``, ``in ('dra', ...)``, a Jinja
``selectattr('pool', '==', 'dra')``) is a branch a new row would not reach. The tables' own modules are exempt.
A literal compared with a trait of another vocabulary that shares a word is not a name: the resource kind
``dra`` (fleet.RESOURCE_KINDS) and the GPU Operator's workload ``container`` (fleet.WORKLOADS).
"""
from __future__ import annotations

import pathlib
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, platform

ROOT = pathlib.Path(__file__).resolve().parents[4]
SCANNED = ('plugins', 'roles', 'playbooks')
SUFFIXES = ('.py', '.yml', '.yaml', '.j2')
# the tables themselves
EXEMPT = ('plugins/module_utils/model/fleet.py', 'plugins/module_utils/model/platform.py')
# a comparison whose other side is one of these traits compares that trait's vocabulary, not a name
OTHER_VOCABULARY = re.compile(r'resource|workload')


def _patterns(names):
    q = r'''(?P<q>['"])(?P<name>%s)(?P=q)''' % '|'.join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return [re.compile(p) for p in (
        r'(?:==|!=)\s*' + q,                                   # x == 'name'
        q + r'\s*(?:==|!=|\bin\b|\bnot\s+in\b)',               # 'name' == x, 'name' in x
        r'\bis\s+(?:not\s+)?' + q,                             # x is 'name'
        r'\bin\s*[\(\[][^\)\]]*?' + q,                          # x in ('a', 'name')
        r'''['"](?:==|!=|eq|ne|equalto|in)['"]\s*,\s*[\(\[]?[^\)\]]*?''' + q,   # selectattr('x', '==', 'name')
    )]


def name_branches(root, names):
    """``['path:line: text']`` of every comparison with a quoted name of ``names`` under ``root``."""
    found = []
    patterns = _patterns(names)
    for top in SCANNED:
        for path in sorted((root / top).rglob('*')):
            rel = path.relative_to(root).as_posix()
            if not path.is_file() or not rel.endswith(SUFFIXES) or rel in EXEMPT:
                continue
            for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
                if line.lstrip().startswith('#'):
                    continue
                for pattern in patterns:
                    match = pattern.search(line)
                    if match and not OTHER_VOCABULARY.search(line[max(0, match.start() - 60):match.start()]):
                        found.append('%s:%d: %s' % (rel, number, line.strip()))
                        break
    return found


def test_no_branch_on_a_pool_or_platform_name_outside_the_tables():
    found = name_branches(ROOT, fleet.POOLS + platform.PLATFORM_NAMES)
    assert not found, ('branches on a pool or platform name; read the row (pool_traits, gpuvirt_cluster.traits) '
                       'instead:\n' + '\n'.join(found))


def test_the_scan_finds_each_form(tmp_path):
    # each form the scan must see, in a scratch tree: it would be blind if a pattern never matched
    (tmp_path / 'plugins').mkdir()
    (tmp_path / 'roles').mkdir()
    (tmp_path / 'playbooks').mkdir()
    (tmp_path / 'plugins' / 'a.py').write_text(
        "if p['platform'] == 'openshift':\n"
        "if 'vm-vgpu' in pools:\n"
        "if pool in ('container', 'x'):\n"
        "if name is 'dra':\n"
        "# if pool == 'dra': a comment\n"
        "if row.resource == 'dra':\n"
        "if default_workload != 'container':\n", encoding='utf-8')
    (tmp_path / 'roles' / 'b.yml').write_text(
        "x: \"{{ hosts | selectattr('pool', '==', 'vm-passthrough') | list }}\"\n"
        "when: gpuvirt_cluster.platform != \"kubernetes\"\n"
        "y: \"{{ hosts | selectattr('traits.resource', '==', 'dra') | list }}\"\n", encoding='utf-8')
    (tmp_path / 'playbooks' / 'c.yml').write_text("z: \"{{ 'openshift' | upper }}\"\n", encoding='utf-8')
    found = name_branches(tmp_path, fleet.POOLS + platform.PLATFORM_NAMES)
    assert [f.split(': ', 1)[0] for f in found] == [
        'plugins/a.py:1', 'plugins/a.py:2', 'plugins/a.py:3', 'plugins/a.py:4', 'roles/b.yml:1', 'roles/b.yml:2']
