"""plugins/module_utils is grouped into rooms by what the code serves, and imports only go down the layers.

The rooms and arrows are documented in docs/architecture.md ("The rooms of plugins/module_utils"): model imports
only model; host imports model and host; render imports model and render; manifests imports model, host and
manifests. A module dropped at the top of module_utils, a new room nobody documented, or an import against the
arrows fails here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[4]
MODULE_UTILS = ROOT / 'plugins' / 'module_utils'
PACKAGE = 'ansible_collections.gpuvirt.provision.plugins.module_utils'

MAY_IMPORT = {
    'model': {'model'},
    'host': {'model', 'host'},
    'render': {'model', 'render'},
    'manifests': {'model', 'host', 'manifests'},
}


def rooms_on_disk():
    return sorted(p.name for p in MODULE_UTILS.iterdir() if p.is_dir() and p.name != '__pycache__')


def imported_rooms(path):
    """Every module_utils room a file imports from, with the line number."""
    tree = ast.parse(path.read_text(encoding='utf-8'))
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module + '.' + alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith(PACKAGE + '.'):
                found.append((name[len(PACKAGE) + 1:].split('.')[0], node.lineno))
    return found


def test_every_module_sits_in_a_room():
    loose = sorted(p.name for p in MODULE_UTILS.glob('*.py') if p.name != '__init__.py')
    assert loose == [], 'move these into a room (docs/architecture.md): %s' % loose


def test_the_rooms_on_disk_are_the_documented_rooms():
    assert rooms_on_disk() == sorted(MAY_IMPORT)
    text = (ROOT / 'docs' / 'architecture.md').read_text(encoding='utf-8')
    documented = re.findall(r'^\| `([a-z_]+)/` \|', text, flags=re.M)
    assert sorted(documented) == sorted(MAY_IMPORT)


def test_imports_follow_the_arrows():
    wrong = []
    for room, allowed in sorted(MAY_IMPORT.items()):
        for path in sorted((MODULE_UTILS / room).glob('*.py')):
            for target, line in imported_rooms(path):
                if target not in allowed:
                    wrong.append('%s:%d imports %s' % (path.relative_to(ROOT), line, target))
    assert wrong == []


def test_the_arrow_check_sees_an_import_against_the_arrows(tmp_path):
    # the check itself can fail: a model module importing a manifest builder is reported
    bad = tmp_path / 'bad.py'
    bad.write_text('from %s.manifests import hco\nimport %s.render.render\n' % (PACKAGE, PACKAGE), encoding='utf-8')
    assert imported_rooms(bad) == [('manifests', 1), ('render', 2)]
