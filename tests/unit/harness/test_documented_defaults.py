# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A default that docs/troubleshooting.md states is the default the roles have.

A user who reads "`gpuvirt_cluster_mode` (it defaults to `render`)" leaves it unset and gets apply: the page is
read at the moment something went wrong, so a stale default there sends them the wrong way. Each statement
"`VAR` (it defaults to `VALUE`)" or "`VAR` (default `VALUE`)" is compared with every role argument spec that has
the option, and with the role's defaults/main.yml where it sets it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / 'docs' / 'troubleshooting.md'
STATED = re.compile(r'`([a-z][a-z0-9_]+)`[^`\n(]{0,20}?\((?:it\s+)?defaults?\s+(?:to\s+)?`([^`\n]*)`\)')


def stated_defaults(text):
    """``[(variable, value as written)]`` for each default the text states."""
    return STATED.findall(text)


def role_defaults():
    """``{variable: [(where, default)]}`` from every role's argument specs (all entry points) and defaults/main.yml."""
    found = {}
    for spec in sorted(ROOT.glob('roles/*/meta/argument_specs.yml')):
        role = spec.parts[-3]
        for entry, body in (yaml.safe_load(spec.read_text()).get('argument_specs') or {}).items():
            for name, option in ((body or {}).get('options') or {}).items():
                if 'default' in (option or {}):
                    found.setdefault(name, []).append(('roles/%s argument spec %s' % (role, entry), option['default']))
    for defaults in sorted(ROOT.glob('roles/*/defaults/main.yml')):
        for name, value in (yaml.safe_load(defaults.read_text()) or {}).items():
            found.setdefault(name, []).append(('roles/%s/defaults/main.yml' % defaults.parts[-3], value))
    return found


def disagreements(text, specs):
    """One line per stated default that no spec has, or that a spec or defaults file contradicts."""
    out = []
    for name, written in stated_defaults(text):
        if name not in specs:
            out.append('%s: the page states its default (%r) but no role argument spec has that option' % (name, written))
            continue
        value = yaml.safe_load(written) if written else ''
        for where, default in specs[name]:
            if value != default and written != str(default):
                out.append('%s: the page says it defaults to %r, %s says %r' % (name, written, where, default))
    return out


def test_the_page_states_the_cluster_mode_default():
    # the statement the check exists for: if the pattern stops finding it, the check below checks nothing
    assert ('gpuvirt_cluster_mode', 'apply') in stated_defaults(PAGE.read_text())


def test_every_stated_default_is_the_roles_default():
    assert disagreements(PAGE.read_text(), role_defaults()) == []


@pytest.mark.parametrize('text, expected', [
    ('`gpuvirt_cluster_mode` is unset (it defaults to `render`)', 'gpuvirt_cluster_mode: the page says it defaults to '
                                                                  "'render', roles/cluster argument spec main says 'apply'"),
    ('`gpu_operator_vgpu_config_default` (default `A10-12Q`) must', 'gpu_operator_vgpu_config_default: the page says'),
    ('`gpuvirt_no_such_option` (default `x`)', 'gpuvirt_no_such_option: the page states its default'),
])
def test_a_wrong_statement_is_caught(text, expected):
    found = disagreements(text, role_defaults())
    assert found and found[0].startswith(expected), found
