# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""owned_files_absent: a file goes only when it is ours at the moment it is removed, reached through trusted
directories; everything else stays, named."""
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
    line = kw.pop('line', 1)
    marker = kw.pop('marker', HEADER)
    return dict(dict(files=[dict(path=str(p), marker=marker, line=line) for p in paths]), **kw)


@pytest.fixture
def base(tmp_path):
    # pytest's own directories are 0700 and root's; the tree under test is made like /etc's
    root = tmp_path / 'root'
    root.mkdir(mode=0o755)
    return root


def test_ours_goes_and_a_second_run_changes_nothing(monkeypatch, base):
    path = base / 'blacklist.conf'
    path.write_text(OURS)
    res = run_module(monkeypatch, ofa, _args(path))
    assert not res['failed'] and res['changed'] and res['removed'] == [str(path)] and res['kept'] == []
    assert not path.exists()
    res = run_module(monkeypatch, ofa, _args(path))
    assert not res['changed'] and res['removed'] == [] and res['kept'] == []


def test_check_mode_reports_and_removes_nothing(monkeypatch, base):
    path = base / 'blacklist.conf'
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
def test_anything_but_our_regular_file_stays_named(monkeypatch, base, make, reason):
    path, target = base / 'blacklist.conf', base / 'target.conf'
    make(path, target)
    res = run_module(monkeypatch, ofa, _args(path))
    assert not res['failed'] and not res['changed'] and res['removed'] == []
    assert [k['path'] for k in res['kept']] == [str(path)] and reason in res['kept'][0]['reason'], res
    assert os.path.lexists(str(path))
    if target.exists():
        assert target.read_text() == OURS, 'the link was followed'


def test_a_marker_on_its_own_line_or_anywhere(monkeypatch, base):
    # the vgpu_vf role's files: the script's header is its second line, the JSON config names us in managed_by
    script, config = base / 'restore', base / 'persist.json'
    script.write_text('# -*- coding: utf-8 -*-\n# Managed by gpuvirt.provision (vgpu_vf role).\n')
    config.write_text('{\n  "managed_by": "gpuvirt.provision",\n  "version": 1\n}\n')
    res = run_module(monkeypatch, ofa, dict(files=[
        dict(path=str(script), marker='# Managed by gpuvirt.provision (vgpu_vf role).', line=2),
        dict(path=str(config), marker='"managed_by": "gpuvirt.provision"', line=0)]))
    assert res['removed'] == [str(script), str(config)] and not script.exists() and not config.exists()
    # the same header on the first line is not the script's, and another manager's config is not ours
    script.write_text('# Managed by gpuvirt.provision (vgpu_vf role).\n')
    config.write_text('{"managed_by": "puppet", "note": "# Managed by gpuvirt.provision"}\n')
    res = run_module(monkeypatch, ofa, dict(files=[
        dict(path=str(script), marker='# Managed by gpuvirt.provision (vgpu_vf role).', line=2),
        dict(path=str(config), marker='"managed_by": "gpuvirt.provision"', line=0)]))
    assert res['removed'] == [] and [k['path'] for k in res['kept']] == [str(script), str(config)]


def test_a_directory_on_the_way_that_is_a_link_is_never_followed(monkeypatch, base):
    # the file's directory is a link to a real directory holding a file that carries our header
    real = base / 'real'
    real.mkdir(mode=0o755)
    (real / 'blacklist.conf').write_text(OURS)
    (base / 'modprobe.d').symlink_to(real)
    res = run_module(monkeypatch, ofa, _args(base / 'modprobe.d' / 'blacklist.conf'))
    assert res['removed'] == [] and 'symbolic link or not a directory' in res['kept'][0]['reason'], res
    assert (real / 'blacklist.conf').read_text() == OURS


@pytest.mark.parametrize('mode, kept', [(0o777, True), (0o775, True), (0o1777, False)])
def test_a_directory_others_can_write_is_not_trusted_unless_sticky(monkeypatch, base, mode, kept):
    shared = base / 'shared'
    shared.mkdir()
    os.chmod(str(shared), mode)
    path = shared / 'blacklist.conf'
    path.write_text(OURS)
    res = run_module(monkeypatch, ofa, _args(path))
    if kept:
        assert res['removed'] == [] and 'group- or world-writable' in res['kept'][0]['reason'], res
        assert path.exists()
    else:
        assert res['removed'] == [str(path)]


def test_a_directory_not_owned_by_root_is_not_trusted(monkeypatch, base):
    theirs = base / 'theirs'
    theirs.mkdir(mode=0o755)
    (theirs / 'blacklist.conf').write_text(OURS)
    os.chown(str(theirs), 1000, 1000)
    res = run_module(monkeypatch, ofa, _args(theirs / 'blacklist.conf'))
    assert res['removed'] == [] and 'owned by uid 1000, not root' in res['kept'][0]['reason'], res


def test_a_file_replaced_after_it_was_judged_is_not_removed(monkeypatch, base):
    # the window the module closes: our file is read, then something else is put at its name before the removal
    path, other = base / 'blacklist.conf', base / 'theirs.conf'
    path.write_text(OURS)
    other.write_text(OURS)
    real_stat = os.stat
    calls = []

    def stat_then_replace(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:  # the check just before the removal
            os.replace(str(other), str(path))
        return real_stat(*args, **kwargs)
    monkeypatch.setattr(owned_files.os, 'stat', stat_then_replace)
    res = run_module(monkeypatch, ofa, _args(path))
    assert res['removed'] == [] and 'replaced while it was read' in res['kept'][0]['reason'], res
    assert path.read_text() == OURS


@pytest.mark.parametrize('files, kw, needle', [
    ([dict(path='relative/x.conf', marker=HEADER)], {}, 'not an absolute, normalised path'),
    ([dict(path='/etc/modprobe.d/../shadow', marker=HEADER)], {}, 'not an absolute, normalised path'),
    ([dict(path='/', marker=HEADER)], {}, 'not an absolute, normalised path'),
    ([dict(path='/etc/x.conf', marker='short')], {}, 'is not 8 to 128 printable ASCII'),
    ([dict(path='/etc/x.conf', marker=HEADER, line=9)], {}, 'line is 9'),
    ([dict(path='/etc/x.conf', marker=HEADER)], dict(max_bytes=0), 'max_bytes is 0'),
])
def test_bad_inputs_are_refused_before_anything_is_removed(monkeypatch, base, files, kw, needle):
    path = base / 'blacklist.conf'
    path.write_text(OURS)
    res = run_module(monkeypatch, ofa, dict(dict(files=[dict(path=str(path), marker=HEADER)] + files), **kw))
    assert res['failed'] and needle in res['msg'] and 'Nothing was removed' in res['msg'], res
    assert path.read_text() == OURS
