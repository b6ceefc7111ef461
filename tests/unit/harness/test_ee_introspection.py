# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A user's own execution environment gets what the collection needs from ansible-builder's introspection of the
installed collection (meta/execution-environment.yml), and our EE definition installs exactly the collections the
content calls, at the versions the tests run against."""
from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_builder._target_scripts import introspect

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
BIN = os.path.dirname(sys.executable)


def _load(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def _lines(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return [ln.strip() for ln in handle if ln.strip() and not ln.lstrip().startswith('#')]


def _bundled_collection(fqcn):
    """The directory of a collection the `ansible` package installed (what the tests run against)."""
    namespace, name = fqcn.split('.')
    spec = importlib.util.find_spec('ansible_collections.%s.%s' % (namespace, name))
    return list(spec.submodule_search_locations)[0]


def _bundled_version(fqcn):
    with open(os.path.join(_bundled_collection(fqcn), 'MANIFEST.json'), encoding='utf-8') as handle:
        return json.load(handle)['collection_info']['version']


@pytest.fixture(scope='module')
def introspected(tmp_path_factory):
    """`ansible-builder introspect` over the built, installed collection and the collections galaxy.yml names."""
    base = tmp_path_factory.mktemp('ee')
    built, installed = base / 'built', base / 'installed'
    proc = subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', str(built),
                           ROOT], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tarball,) = built.iterdir()
    proc = subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--force', '--no-deps',
                           '-p', str(installed), str(tarball)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for fqcn in _load('galaxy.yml')['dependencies']:
        namespace, name = fqcn.split('.')
        shutil.copytree(_bundled_collection(fqcn), str(installed / 'ansible_collections' / namespace / name))
    proc = subprocess.run([os.path.join(BIN, 'ansible-builder'), 'introspect', str(installed)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = yaml.safe_load(proc.stdout)
    by_source = {}
    for kind in ('python', 'system'):
        for line in data.get(kind) or []:
            requirement, source = (line.split('# from collection ', 1) + [''])[:2]
            by_source.setdefault((kind, source.strip()), []).append(requirement.strip())
    return by_source


def test_introspection_reports_our_system_packages(introspected):
    assert introspected.get(('system', 'gpuvirt.provision')) == _lines('meta/ee-bindep.txt')


def test_introspection_reports_what_our_dependencies_need(introspected):
    # kubernetes.core declares its Python client itself (its requirements.txt): a user's EE gets it through us
    assert any(r.startswith('kubernetes') for r in introspected.get(('python', 'kubernetes.core'), []))
    assert introspected.get(('python', 'community.docker'))


def test_our_python_requirements_reach_a_users_ee(introspected):
    """Each library we declare is listed by introspection, or left out by ansible-builder only because
    ansible-core itself requires it (ansible-builder's EXCLUDE_REQUIREMENTS: pyyaml, json...)."""
    listed = [re.split(r'[<>=!~ \[]', r, maxsplit=1)[0].lower()
              for r in introspected.get(('python', 'gpuvirt.provision'), [])]
    core_requires = [re.split(r'[<>=!~ \[;(]', r, maxsplit=1)[0].lower()
                     for r in importlib.metadata.requires('ansible-core')]
    for requirement in _lines('meta/ee-requirements.txt'):
        name = re.split(r'[<>=!~ \[]', requirement, maxsplit=1)[0].lower()
        assert name in listed or (name in introspect.EXCLUDE_REQUIREMENTS and name in core_requires), requirement


def _third_party_imports():
    """{top-level module: first file} imported by our plugins, other than the standard library and Ansible."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, 'plugins')):
        dirnames[:] = [d for d in dirnames if d != '__pycache__']
        for filename in filenames:
            if not filename.endswith('.py'):
                continue
            path = os.path.join(dirpath, filename)
            with open(path, encoding='utf-8') as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for module in names:
                    top = module.split('.')[0]
                    if top in sys.stdlib_module_names or top in ('ansible', 'ansible_collections', '__future__'):
                        continue
                    found.setdefault(top, os.path.relpath(path, ROOT))
    return found


def test_every_library_our_plugins_import_is_declared():
    imports = _third_party_imports()
    assert 'yaml' in imports  # the scan sees the render plugins' PyYAML
    declared = [re.split(r'[<>=!~ \[]', r, maxsplit=1)[0].lower() for r in _lines('meta/ee-requirements.txt')]
    distributions = importlib.metadata.packages_distributions()
    missing = sorted('%s (%s)' % (module, path) for module, path in imports.items()
                     if not any(d.lower() in declared for d in distributions.get(module, [module])))
    assert not missing, 'meta/ee-requirements.txt lacks %s' % missing


def test_ee_installs_exactly_the_galaxy_dependencies_at_the_tested_versions():
    declared = _load('galaxy.yml')['dependencies']
    pinned = {c['name']: str(c['version']) for c in _load('ee/requirements.yml')['collections']}
    assert sorted(pinned) == sorted(declared), 'ee/requirements.yml %s, galaxy.yml %s' % (
        sorted(pinned), sorted(declared))
    for fqcn, version in pinned.items():
        assert version == _bundled_version(fqcn), '%s: the EE pins %s, the tests run %s' % (
            fqcn, version, _bundled_version(fqcn))
