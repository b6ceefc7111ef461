# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every filter is registered under the name its sidecar documentation (plugins/filter/NAME.yml) gives, and each
name once: the roles call them by that name, which the filters' own unit tests (calling the functions) never
exercise (an emptied or misspelt registration survived them under make mutation)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib
import os

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FILTERS = os.path.join(ROOT, 'plugins', 'filter')


def test_every_registered_filter_has_its_documentation_and_each_documented_one_is_registered():
    registered = {}
    for path in sorted(glob.glob(os.path.join(FILTERS, '*.py'))):
        module = importlib.import_module('ansible_collections.gpuvirt.provision.plugins.filter.'
                                         + os.path.basename(path)[:-3])
        for name, func in module.FilterModule().filters().items():
            assert name not in registered, '%s is registered by %s and %s' % (name, registered[name], path)
            assert callable(func), name
            registered[name] = os.path.basename(path)
    documented = {}
    for path in glob.glob(os.path.join(FILTERS, '*.yml')):
        with open(path, encoding='utf-8') as f:
            documented[os.path.basename(path)[:-4]] = yaml.safe_load(f)['DOCUMENTATION']['name']
    assert sorted(registered) == sorted(documented)
    assert all(name == doc_name for name, doc_name in documented.items()), documented
