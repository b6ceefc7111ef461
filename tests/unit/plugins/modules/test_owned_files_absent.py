# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""owned_files_absent: a file goes only when it is ours at the moment it is removed; everything else stays, named."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import owned_files
from ansible_collections.gpuvirt.provision.plugins.modules import owned_files_absent as ofa

from .harness import run_module

HEADER = '# Managed by gpuvirt.provision (nouveau role)'
OURS = HEADER + '.\nblacklist nouveau\noptions nouveau modeset=0\n'


def _args(*paths, **kw):
    return dict(dict(paths=[str(p) for p in paths], markers=[HEADER], first_line=True), **kw)


def test_ours_goes_and_a_second_run_changes_nothing(monkeypatch, tmp_path):
    path = tmp_path / 'blacklist.conf'
    path.write_text(OURS)
    res = run_module(monkeypatch, ofa, _args(path))
    assert not res['failed'] and res['changed'] and res['removed'] == [str(path)] and res['kept'] == []
    assert not path.exists()
    res = run_module(monkeypatch, ofa, _args(path))
    assert not res['changed'] and res['removed'] == [] and res['kept'] == []


def test_check_mode_reports_and_removes_nothing(monkeypatch, tmp_path):
    path = tmp_path / 'blacklist.conf'
    path.write_text(OURS)
    res = run_module(monkeypatch, ofa, _args(path), check=True)
    assert res['changed'] and res['removed'] == [str(path)] and path.read_text() == OURS


@pytest.mark.parametrize('make, reason', [
    (lambda p, t: p.write_text('blacklist nouveau\n' + HEADER + '\n'), 'no gpuvirt.provision header'),
    (lambda p, t: p.write_text('# Managed by someone else\n'), 'no gpuvirt.provision header'),
    (lambda p, t: (t.write_text(OURS), p.symlink_to(t)), 'a symbolic link'),
    (lambda p, t: os.mkfifo(str(p)), 'not a regular file'),
    (lambda p, t: p.mkdir(), 'not a regular file'),
    (lambda p, t: p.write_text(OURS + '#' * 70000), 'larger than any file we write'),
])
def test_anything_but_our_regular_file_stays_named(monkeypatch, tmp_path, make, reason):
    path, target = tmp_path / 'blacklist.conf', tmp_path / 'target.conf'
    make(path, target)
    res = run_module(monkeypatch, ofa, _args(path))
    assert not res['failed'] and not res['changed'] and res['removed'] == []
    assert [k['path'] for k in res['kept']] == [str(path)] and reason in res['kept'][0]['reason'], res
    assert os.path.lexists(str(path))
    if target.exists():
        assert target.read_text() == OURS, 'the link was followed'


def test_a_marker_anywhere_when_not_a_header(monkeypatch, tmp_path):
    # the vgpu_vf role's JSON config carries "managed_by", not a header line
    path = tmp_path / 'persist.json'
    path.write_text('{"version": 1, "managed_by": "gpuvirt.provision"}\n')
    res = run_module(monkeypatch, ofa, dict(paths=[str(path)], markers=['"managed_by"', HEADER]))
    assert res['removed'] == [str(path)] and not path.exists()


def test_a_file_replaced_after_it_was_judged_is_not_removed(monkeypatch, tmp_path):
    # the window the module closes: our file is read, then something else is put at the path before the removal
    path, other = tmp_path / 'blacklist.conf', tmp_path / 'theirs.conf'
    path.write_text(OURS)
    other.write_text(OURS)
    real_read = owned_files._read  # pylint: disable=protected-access

    def read_then_replace(p, max_bytes):
        got = real_read(p, max_bytes)
        os.replace(str(other), str(path))
        return got
    monkeypatch.setattr(owned_files, '_read', read_then_replace)
    res = run_module(monkeypatch, ofa, _args(path))
    assert res['removed'] == [] and 'replaced while it was read' in res['kept'][0]['reason'], res
    assert path.read_text() == OURS


@pytest.mark.parametrize('args, needle', [
    (dict(paths=['relative/x.conf']), 'not an absolute, normalised path'),
    (dict(paths=['/etc/modprobe.d/../shadow']), 'not an absolute, normalised path'),
    (dict(paths=['/']), 'not an absolute, normalised path'),
    (dict(markers=['short']), 'is not 8 to 128 printable ASCII'),
    (dict(markers=[]), 'at least one marker'),
    (dict(max_bytes=0), 'max_bytes is 0'),
])
def test_bad_inputs_are_refused_before_anything_is_removed(monkeypatch, tmp_path, args, needle):
    path = tmp_path / 'blacklist.conf'
    path.write_text(OURS)
    res = run_module(monkeypatch, ofa, dict(_args(path), **args))
    assert res['failed'] and needle in res['msg'] and 'Nothing was removed' in res['msg'], res
    assert path.read_text() == OURS
