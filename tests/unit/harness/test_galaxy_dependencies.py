# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""galaxy.yml declares exactly the collections the content calls (by FQCN in roles, playbooks, plugins and
molecule), and requirements.yml (the same list for users installing from Galaxy) agrees with it."""
from __future__ import annotations

import importlib.util
import os
import re

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
SCANNED = ('roles', 'playbooks', 'plugins', 'molecule')
SUFFIXES = ('.yml', '.yaml', '.py', '.j2', '.json')
FQCN = re.compile(r'(?<![\w.])([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.[a-z_][a-z0-9_]*')
CORE_IMPORT = re.compile(r'^[ \t]*(?:from|import)[ \t]+ansible\.[\w.]+.*$', re.M)
# ansible-core itself and this collection are no dependencies
NOT_DEPENDENCIES = {'ansible.builtin', 'ansible.legacy', 'gpuvirt.provision'}


def _is_collection(namespace, name):
    try:
        return importlib.util.find_spec('ansible_collections.%s.%s' % (namespace, name)) is not None
    except (ImportError, ValueError):
        return False


def used_collections():
    """Collections named by an FQCN (namespace.name.plugin) anywhere in the content, where namespace.name is an
    installed collection: attribute chains such as item.spec.name are not."""
    found = {}
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith('.') and d != '__pycache__']
            for filename in filenames:
                if not filename.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, filename)
                with open(path, encoding='utf-8', errors='replace') as handle:
                    text = handle.read()
                if filename.endswith('.py'):
                    # a Python import of ansible.<package> is ansible-core (ansible.utils.vars), not a collection
                    text = CORE_IMPORT.sub('', text)
                for namespace, name in set(FQCN.findall(text)):
                    fqcn = '%s.%s' % (namespace, name)
                    if fqcn not in NOT_DEPENDENCIES and _is_collection(namespace, name):
                        found.setdefault(fqcn, os.path.relpath(path, ROOT))
    return found


def test_galaxy_dependencies_are_exactly_the_collections_the_content_uses():
    with open(os.path.join(ROOT, 'galaxy.yml'), encoding='utf-8') as handle:
        declared = set((yaml.safe_load(handle).get('dependencies') or {}))
    used = used_collections()
    assert 'kubernetes.core' in used and 'community.docker' in used  # the scan sees the roles' modules
    unused = sorted(declared - set(used))
    undeclared = sorted('%s (%s)' % (c, used[c]) for c in set(used) - declared)
    assert not unused and not undeclared, 'galaxy.yml declares unused %s; lacks %s' % (unused, undeclared)


def test_user_requirements_list_the_galaxy_dependencies():
    with open(os.path.join(ROOT, 'galaxy.yml'), encoding='utf-8') as handle:
        declared = yaml.safe_load(handle)['dependencies']
    with open(os.path.join(ROOT, 'requirements.yml'), encoding='utf-8') as handle:
        listed = {c['name']: c.get('version') for c in yaml.safe_load(handle)['collections']}
    assert listed == declared
