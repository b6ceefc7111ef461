# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make unit` runs the unit tests on every core (pytest-xdist), each test file whole on one worker, and the plugin
is pinned with the rest of the toolchain (docs/testing.md, "CI time")."""
from __future__ import annotations

import os
import re
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def pytest_line(*variables):
    """The pytest command `make unit` runs (make -n prints it without running it)."""
    proc = subprocess.run(['make', '-n', '-C', ROOT, 'unit'] + list(variables), capture_output=True, text=True,
                          check=False)
    (line,) = [ln for ln in proc.stdout.splitlines() if '/pytest ' in ln and 'tests/unit' in ln]
    return line.split()


def test_the_unit_tests_run_on_every_core_one_file_per_worker():
    argv = pytest_line()
    # logical: one worker per CPU (xdist's auto counts physical cores where psutil is installed)
    assert argv[argv.index('-n') + 1] == 'logical', argv
    # loadfile: a module-scoped fixture (tests/unit/roles/test_role_paths_strict.py starts every playbook run of its
    # module at once) is made on one worker only, and a file's tests keep their order
    assert argv[argv.index('--dist') + 1] == 'loadfile', argv
    # UNIT_JOBS=0: one process, as before (xdist's -n 0)
    argv = pytest_line('UNIT_JOBS=0')
    assert argv[argv.index('-n') + 1] == '0', argv


def test_pytest_xdist_is_pinned_with_the_toolchain():
    with open(os.path.join(ROOT, 'requirements-dev.txt'), encoding='utf-8') as handle:
        pins = [line.strip() for line in handle if line.strip() and not line.startswith('#')]
    assert [p for p in pins if re.fullmatch(r'pytest-xdist==[0-9.]+', p)], pins
