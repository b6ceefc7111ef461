"""Every boolean flag a user sets (inventory, survey, -e) goes through strict_bool.

Ansible's own ``bool`` filter turns a typo such as ``"flase"`` or ``"off "`` into
False without a word, so a flag read with ``| default(...) | bool`` can silently
disable a step.  A flag with a default comes from the user; it must be coerced
by ``gpuvirt.provision.strict_bool``, which rejects what is not a boolean.
"""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
# user input read with a default, then Ansible's lenient bool
LENIENT = re.compile(r'default\([^)]*\)\s*\|\s*bool\b')
FILES = sorted(p for p in list(ROOT.glob('roles/*/tasks/*.yml')) + [ROOT / 'playbooks' / n for n in ('kubevirt.yml', 'gather.yml')])


@pytest.mark.parametrize('path', FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_flags_use_strict_bool(path):
    bad = [(n, line.strip()) for n, line in enumerate(path.read_text().splitlines(), 1) if LENIENT.search(line)]
    assert not bad, '%s reads user flags with the lenient bool filter: %s' % (path.relative_to(ROOT), bad)
