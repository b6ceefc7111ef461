# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""modprobe.blacklist_text: the one text of a modprobe.d blacklist (nouveau role and MachineConfig)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils import modprobe


def test_nouveau_gets_its_modeset_option():
    assert modprobe.blacklist_text('nouveau') == 'blacklist nouveau\noptions nouveau modeset=0\n'


def test_a_module_without_options_is_only_blacklisted():
    assert modprobe.blacklist_text('nvidiafb') == 'blacklist nvidiafb\n'


def test_the_header_comes_first_as_a_comment():
    assert modprobe.blacklist_text('nouveau', 'Managed by me') == \
        '# Managed by me\nblacklist nouveau\noptions nouveau modeset=0\n'


@pytest.mark.parametrize('module', ['', 'nouveau\nblacklist x', 'a b', '../x', None, 3, 'x' * 65])
def test_a_bad_module_name_is_refused(module):
    with pytest.raises(modprobe.ModprobeError, match='is not a module name'):
        modprobe.blacklist_text(module)


@pytest.mark.parametrize('header', ['', '  ', 'two\nlines', 'cr\r', 'ff\x0c', 'ls\u2028', 5])
def test_a_header_that_is_not_one_line_is_refused(header):
    with pytest.raises(modprobe.ModprobeError, match='is not one line of text'):
        modprobe.blacklist_text('nouveau', header)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=70), st.one_of(st.none(), st.text(max_size=40)))
def test_any_text_is_either_refused_or_gives_one_blacklist_line(module, header):
    try:
        text = modprobe.blacklist_text(module, header)
    except modprobe.ModprobeError:
        return
    lines = text.splitlines()
    assert text.endswith('\n') and text.count('\n') == len(lines)
    assert [line for line in lines if not line.startswith('#')][0] == 'blacklist ' + module
    assert sum(1 for line in lines if line.startswith('#')) == (0 if header is None else 1)
