# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/reference/ is generated from the modules' DOCUMENTATION blocks and the roles' argument specs: it must match
what the generator writes now, so a changed option without `make docs` fails here."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
GENERATOR = os.path.join(ROOT, 'tools', 'docs', 'generate_reference.py')


def test_reference_is_up_to_date():
    proc = subprocess.run([sys.executable, GENERATOR, '--check'], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_module_and_role_has_a_page():
    pages = set(os.listdir(os.path.join(ROOT, 'docs', 'reference')))
    modules = [f[:-3] for f in os.listdir(os.path.join(ROOT, 'plugins', 'modules')) if f.endswith('.py') and f != '__init__.py']
    roles = os.listdir(os.path.join(ROOT, 'roles'))
    missing = [m for m in modules if 'module_%s.md' % m not in pages] + [r for r in roles if 'role_%s.md' % r not in pages]
    assert modules and roles and not missing, missing


def test_check_mode_detects_a_stale_page(tmp_path):
    # the generator itself must notice drift (a check that cannot fail would prove nothing)
    out = tmp_path / 'ref'
    subprocess.run([sys.executable, GENERATOR, '--out', str(out)], check=True, capture_output=True)
    page = out / 'module_pci_devices.md'
    page.write_text(page.read_text() + '\nhand edit\n')
    proc = subprocess.run([sys.executable, GENERATOR, '--check', '--out', str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and 'module_pci_devices.md' in proc.stdout + proc.stderr
