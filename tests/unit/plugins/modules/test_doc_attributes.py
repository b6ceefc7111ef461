# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module documents check_mode and diff_mode, its own words or a gpuvirt.provision.attributes fragment, and no
module repeats a fragment's block word for word; its other fragments (options) document no attributes."""
from __future__ import annotations

import ast
import glob
import importlib
import os

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import attributes

MODULES = sorted(glob.glob(os.path.join(os.path.dirname(attributes.__file__), '..', 'modules', '[a-z]*.py')))
# every block of the attributes fragment: DOCUMENTATION and each variant (READ_ONLY, BUILDS_ONLY, READS_CLUSTER, ...)
VARIANTS = sorted(name for name in vars(attributes.ModuleDocFragment) if name.isupper())
FRAGMENT_BLOCKS = [yaml.safe_load(getattr(attributes.ModuleDocFragment, name))['attributes'] for name in VARIANTS]
# every doc fragment module, imported when this file is collected: a test that ran before in the same process (under
# pytest-xdist, another file's test on the same worker) may have installed Ansible's collection loader
# (init_plugin_loader, tests/unit/trust/test_hostile_corpus.py), through which the first import of a submodule of
# the package imported here already fails ("collection metadata was not loaded")
FRAGMENT_NAMES = [os.path.basename(path)[:-3]
                  for path in glob.glob(os.path.join(os.path.dirname(attributes.__file__), '[a-z]*.py'))]
FRAGMENT_PACKAGE = 'ansible_collections.gpuvirt.provision.plugins.doc_fragments.'
FRAGMENT_MODULES = dict((name, importlib.import_module(FRAGMENT_PACKAGE + name)) for name in FRAGMENT_NAMES)


def _documentation(path):
    for node in ast.parse(open(path, encoding='utf-8').read()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ['DOCUMENTATION']:
            return yaml.safe_load(node.value.value)
    raise AssertionError('%s has no DOCUMENTATION' % path)


@pytest.mark.parametrize('path', MODULES, ids=os.path.basename)
def test_module_documents_check_and_diff_mode(path):
    doc = _documentation(path)
    own = doc.get('attributes')
    assert own not in FRAGMENT_BLOCKS, 'use the gpuvirt.provision.attributes fragment instead of a copy of it'
    for fragment in doc.get('extends_documentation_fragment') or []:
        if not fragment.startswith('gpuvirt.provision.attributes'):
            # an options fragment (tables, live_object): it documents no attributes
            name, dummy, variant = fragment[len('gpuvirt.provision.'):].partition('.')
            assert name in FRAGMENT_MODULES, '%s: no plugins/doc_fragments/%s.py' % (fragment, name)
            module = FRAGMENT_MODULES[name]
            text = getattr(module.ModuleDocFragment, variant.upper() or 'DOCUMENTATION')
            assert 'attributes' not in yaml.safe_load(text), fragment
            continue
        prefix, dummy, variant = fragment.partition('gpuvirt.provision.attributes')
        assert not prefix and (variant[1:].upper() or 'DOCUMENTATION') in VARIANTS, fragment
        assert own is None, 'attributes both in the module and from %s' % fragment
        own = yaml.safe_load(getattr(attributes.ModuleDocFragment, variant[1:].upper() or 'DOCUMENTATION'))['attributes']
    doc['attributes'] = own
    assert set(doc['attributes']) == {'check_mode', 'diff_mode'}
    assert all(a['support'] in ('full', 'partial', 'none') and a['description'] for a in doc['attributes'].values())
