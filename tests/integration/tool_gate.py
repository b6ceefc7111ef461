# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A test that needs a tool of the machine (lspci, dockerd, root) skips where it is missing on a developer's machine
and fails where the run installed it: CI (.ci/run) and `make test` export GPUVIRT_REQUIRE_TOOLS=1, after their
install step (tools/bootstrap-host.sh), so a missing tool there is a broken install step, not a reason to skip
(tests/unit/harness/test_tool_gate.py)."""
from __future__ import annotations

import os
import shutil

import pytest

REQUIRE = 'GPUVIRT_REQUIRE_TOOLS'


def required(environ=None):
    """True when a missing tool must fail the test (GPUVIRT_REQUIRE_TOOLS=1; any other value, or none, skips)."""
    value = (os.environ if environ is None else environ).get(REQUIRE, '')
    if value not in ('', '0', '1'):
        pytest.fail('%s is %r; set it to 1 (a missing tool fails the test) or 0' % (REQUIRE, value), pytrace=False)
    return value == '1'


def lacking(reason, environ=None):
    """Skip with ``reason``, or fail with it where the tools are required."""
    if required(environ):
        pytest.fail('%s, but %s=1 (CI, make test): the tools were to be installed before the tests; check the install '
                    'step (tools/bootstrap-host.sh)' % (reason, REQUIRE), pytrace=False)
    pytest.skip(reason)


def need(tool, package, environ=None, path=None):
    """The path of ``tool``, or skip/fail naming the Debian package that has it."""
    found = shutil.which(tool, path=path)
    if not found:
        lacking('needs %s (Debian package %s), which is not installed' % (tool, package), environ)
    return found
