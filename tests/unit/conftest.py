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
# upstream reference data lives beside the checkout (not copied into the repo); CI and developers have it
REFERENCE = os.environ.get('GPUVIRT_REFERENCE') or os.path.join(HERE, '..', '..', '..', 'shared', 'reference')
sys.path.insert(0, HERE)  # sysfs_tree


@pytest.fixture
def fixtures_dir():
    return FIXTURES


@pytest.fixture
def reference_dir():
    assert os.path.isdir(REFERENCE), 'reference data not found at %s; set GPUVIRT_REFERENCE' % REFERENCE
    return REFERENCE


@pytest.fixture
def sysfs(tmp_path):
    from sysfs_tree import SysfsTree
    return SysfsTree(tmp_path / 'sys')
