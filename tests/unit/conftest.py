# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared unit-test fixtures: the fixtures directory, the reference directory and a sysfs tree builder."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, 'fixtures')
sys.path.insert(0, HERE)  # sysfs_tree, schema

# pylint: disable-next=wrong-import-position
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import launch_names as _inventory_only  # noqa: E402

# The playbooks these tests run get ansible_python_interpreter as an extra variable (this machine's interpreter
# discovery can find a broken shim), some also the connection and become settings of a host stand-in. The
# launch check refuses Ansible's own variables as extra variables unless the controller's owner allows them
# (docs/security.md, "Launch time"); the test harness is that owner here. It also allows the inputs of one host
# (launch_names.INVENTORY_ONLY: node names, pools, the host roles' paths) as extra variables: the harnesses point
# the host roles at temporary trees that way; the tests of the refusal clear the allowance.
os.environ['GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS'] = ','.join(sorted(
    set(filter(None, os.environ.get('GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS', '').split(',')))
    | set('ansible_python_interpreter,ansible_become,ansible_connection'.split(','))
    | set(_inventory_only.INVENTORY_ONLY)))


@pytest.fixture
def fixtures_dir():
    return FIXTURES


@pytest.fixture
def reference_dir():
    # upstream reference data (not copied into the repo): $GPUVIRT_REFERENCE, else .build/reference
    # (make reference), else the reference folder beside the checkout; schema.reference_dir() holds that order
    from schema import reference_dir as find
    reference = find()
    assert os.path.isdir(reference), 'reference data not found at %s; run make reference or set GPUVIRT_REFERENCE' % reference
    return reference


@pytest.fixture
def sysfs(tmp_path):
    from sysfs_tree import SysfsTree
    return SysfsTree(tmp_path / 'sys')
