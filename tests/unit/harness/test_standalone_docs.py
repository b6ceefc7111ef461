# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Comments and docs stand alone: a clone of the repository has every page they point at.

No pointer to a design page or an issue tracker that is not in the repository, and the folder beside the checkout
(``../shared/reference``) only where the reference-folder lookup documents it as the last fallback."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SELF = os.path.relpath(os.path.abspath(__file__), ROOT)
# the documented reference-folder lookup: $GPUVIRT_REFERENCE, else .build/reference, else ../shared/reference
FALLBACK = {'Makefile', 'README.md', 'docs/testing.md', 'tests/unit/schema.py', 'tools/kube/apiserver.py',
            'tests/unit/harness/test_reference_fetch.py'}


def tracked():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files'], capture_output=True, text=True, check=True).stdout
    for name in out.splitlines():
        path = os.path.join(ROOT, name)
        if name == SELF or not os.path.isfile(path):
            continue
        try:
            with open(path, encoding='utf-8') as f:
                yield name, f.read()
        except UnicodeDecodeError:
            continue


@pytest.mark.parametrize('pattern', [r'DESIGN\.md', r'\bissue [0-9]', r'shared/'])
def test_no_pointer_outside_the_repository(pattern):
    bad = ['%s:%d: %s' % (name, n, line.strip())
           for name, text in tracked() if not (pattern == 'shared/' and name in FALLBACK)
           for n, line in enumerate(text.splitlines(), 1) if re.search(pattern, line)]
    assert not bad, 'point at the repository\'s own docs (docs/) instead:\n' + '\n'.join(bad)


def test_gitignore_lists_each_pattern_once():
    with open(os.path.join(ROOT, '.gitignore'), encoding='utf-8') as f:
        lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith('#')]
    assert len(lines) == len(set(lines)), sorted(ln for ln in lines if lines.count(ln) > 1)
