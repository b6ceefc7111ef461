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
