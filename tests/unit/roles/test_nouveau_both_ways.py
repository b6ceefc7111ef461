# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nouveau role both ways, for real (ansible-playbook, the blacklist under a temporary root): absent takes back
the blacklist only when its first line is the role's header, never through a link, and asks for no reboot (nothing
changes on the running host); a second run changes nothing; check mode writes nothing and reports the plan."""

from __future__ import annotations

import json
import os

import pytest

from play_runner import run_play

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the nouveau role
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
    - name: Show what it did
      ansible.builtin.debug:
        msg: >-
          RESULT={{ {'written': nouveau_blacklist_result | default({}) is changed,
                     'removed': nouveau_absent_result | default({}) is changed,
                     'reasons': nouveau_reboot_reasons} | to_json }}
"""


@pytest.fixture(autouse=True)
def _json_results(monkeypatch):
    monkeypatch.setenv('ANSIBLE_CALLBACK_RESULT_FORMAT', 'json')


def _path(tmp_path):
    return tmp_path / 'root' / 'etc' / 'modprobe.d' / 'gpuvirt-blacklist-nouveau.conf'


def _run(tmp_path, args=(), **overrides):
    path = _path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {'nouveau_modprobe_path': str(path), 'nouveau_initramfs_rebuild': False,
             'ansible_facts': {'os_family': 'Debian'}}
    extra.update(overrides)
    return run_play(tmp_path, PLAY, extra, args=args)


def _result(out):
    line = next(ln for ln in out.splitlines() if '"msg": "RESULT=' in ln)
    return json.loads(json.loads(line.split('"msg": ', 1)[1].rstrip(','))[len('RESULT='):])


def test_ours_is_taken_back_check_mode_first_then_nothing_and_never_a_reboot(tmp_path):
    rc, out = _run(tmp_path, nouveau_state='present')
    assert rc == 0 and _result(out)['written'], out
    path = _path(tmp_path)
    ours = path.read_text()
    assert ours.startswith('# Managed by gpuvirt.provision (nouveau role)'), ours

    rc, out = _run(tmp_path, args=('--check',), nouveau_state='absent')
    assert rc == 0 and _result(out) == {'written': False, 'removed': True, 'reasons': []}, out
    assert path.read_text() == ours, 'check mode removed the blacklist'

    rc, out = _run(tmp_path, nouveau_state='absent')
    assert rc == 0 and _result(out) == {'written': False, 'removed': True, 'reasons': []}, out
    assert not path.exists() and 'nouveau may load for a GPU that no other driver' in ' '.join(out.split()), out

    rc, out = _run(tmp_path, nouveau_state='absent')
    assert rc == 0 and _result(out) == {'written': False, 'removed': False, 'reasons': []}, out


@pytest.mark.parametrize('how', ['theirs', 'link', 'old_switch'])
def test_a_blacklist_that_is_not_ours_stays_named(tmp_path, how):
    path = _path(tmp_path)
    path.parent.mkdir(parents=True)
    theirs = 'blacklist nouveau\noptions nouveau modeset=0\n'
    if how == 'link':
        target = tmp_path / 'elsewhere.conf'
        target.write_text('# Managed by gpuvirt.provision (nouveau role): a planted copy\nblacklist nouveau\n')
        os.symlink(str(target), str(path))
    else:
        path.write_text(theirs)
    state = {'nouveau_blacklist': False} if how == 'old_switch' else {'nouveau_state': 'absent'}
    rc, out = _run(tmp_path, **state)
    assert rc == 0 and _result(out) == {'written': False, 'removed': False, 'reasons': []}, out
    assert os.path.lexists(str(path)), out
    flat = ' '.join(out.split())
    reason = 'a symbolic link' if how == 'link' else 'no gpuvirt.provision header'
    assert 'keeps %s (%s' % (path, reason) in flat, out
