# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vfio role both ways, for real (ansible-playbook, every path under a temporary root): a host whose pool binds
its GPUs to vfio-pci gets the role's files (present); moved to a pool that binds none (absent), the same role takes
back exactly what it wrote, rebuilds the initramfs once and asks the reboot role for one reboot; a second run
changes nothing and asks for nothing; check mode writes nothing and reports the same plan; a file at our path that
we did not write is kept and reported."""

from __future__ import annotations

import json
import os
import stat

import pytest

from play_runner import run_play
from sysfs_tree import SysfsTree

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the vfio role
      ansible.builtin.include_role:
        name: gpuvirt.provision.vfio
    - name: Show what it did
      ansible.builtin.debug:
        msg: >-
          RESULT={{ {'changed': vfio_absent_result | default({}) is changed,
                     'removed': vfio_absent_result.removed | default([]),
                     'kept': vfio_absent_result.kept | default([]) | map(attribute='path') | list,
                     'rebuilt': vfio_absent_initramfs_result | default({}) is changed,
                     'reasons': vfio_reboot_reasons | default([])} | to_json }}
"""

PATHS = {
    'vfio_modprobe_path': 'etc/modprobe.d/gpuvirt-vfio.conf',
    'vfio_modules_load_path': 'etc/modules-load.d/gpuvirt-vfio.conf',
    'vfio_dracut_path': 'etc/dracut.conf.d/gpuvirt-vfio.conf',
    'vfio_initramfs_modules_path': 'etc/initramfs-tools/modules',
}
# the administrator's lines of /etc/initramfs-tools/modules: they stay, byte for byte
ADMIN_MODULES = '# List of modules that you want to include in your initramfs.\nraid1\n'


@pytest.fixture(autouse=True)
def _json_results(monkeypatch):
    # one JSON line, whatever its length (the YAML result format folds long strings)
    monkeypatch.setenv('ANSIBLE_CALLBACK_RESULT_FORMAT', 'json')


def _run(tmp_path, state, os_family='Debian', args=(), **overrides):
    root = tmp_path / 'root'
    for rel in PATHS.values():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
    extra = {
        'vfio_state': state, 'vfio_gpus': False, 'vfio_runtime_bind': False, 'vfio_initramfs_rebuild': False,
        'vfio_persistent_ids': ['10de:2236'], 'vfio_sysfs_root': SysfsTree(tmp_path / 'sys').root,
        'vfio_check_vmis': False, 'ansible_facts': {'os_family': os_family},
    }
    extra.update((var, str(root / rel)) for var, rel in PATHS.items())
    extra.update(overrides)
    rc, out = run_play(tmp_path, PLAY, extra, args=args)
    return rc, out, root


def _result(out):
    """The RESULT the play printed (the JSON result format escapes the message once more)."""
    line = next(ln for ln in out.splitlines() if '"msg": "RESULT=' in ln)
    return json.loads(json.loads(line.split('"msg": ', 1)[1].rstrip(','))[len('RESULT='):])


def _files(root):
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob('*')) if p.is_file()}


def _fake_initramfs_tool(tmp_path, monkeypatch):
    """update-initramfs and dracut on PATH as a script that records each call: the rebuild is seen, never run."""
    bin_dir, log = tmp_path / 'bin', tmp_path / 'initramfs.log'
    bin_dir.mkdir()
    for tool in ('update-initramfs', 'dracut'):
        script = bin_dir / tool
        script.write_text('#!/bin/sh\necho "%s $*" >> %s\n' % (tool, log))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    return log


def _passthrough_host(tmp_path, os_family='Debian'):
    """The files the present state writes on a passthrough host, next to the administrator's module lines."""
    modules = tmp_path / 'root' / PATHS['vfio_initramfs_modules_path']
    modules.parent.mkdir(parents=True, exist_ok=True)
    modules.write_text(ADMIN_MODULES)
    rc, out, root = _run(tmp_path, 'present', os_family=os_family)
    assert rc == 0, out
    return root


def test_passthrough_to_container_takes_back_our_three_files_rebuilds_and_asks_one_reboot(tmp_path, monkeypatch):
    root = _passthrough_host(tmp_path)
    files = _files(root)
    assert len(files) == 3 and '# BEGIN gpuvirt.provision vfio' in files[PATHS['vfio_initramfs_modules_path']]
    log = _fake_initramfs_tool(tmp_path, monkeypatch)
    rc, out, root = _run(tmp_path, 'absent', vfio_initramfs_rebuild=True)
    assert rc == 0, out
    result = _result(out)
    assert result['changed'] and result['rebuilt'], result
    assert sorted(result['removed']) == sorted(str(root / PATHS[v]) for v in (
        'vfio_modprobe_path', 'vfio_modules_load_path', 'vfio_initramfs_modules_path')), result
    # only the administrator's lines are left, and the initramfs was rebuilt once
    assert _files(root) == {PATHS['vfio_initramfs_modules_path']: ADMIN_MODULES}, out
    assert log.read_text() == 'update-initramfs -u -k all\n', out
    assert len(result['reasons']) == 1 and 'leave vfio-pci at the next boot' in result['reasons'][0], result

    # a second run: nothing to take back, no rebuild, no reboot
    rc, out, root = _run(tmp_path, 'absent', vfio_initramfs_rebuild=True)
    assert rc == 0, out
    assert _result(out) == {'changed': False, 'removed': [], 'kept': [], 'rebuilt': False, 'reasons': []}, out
    assert log.read_text() == 'update-initramfs -u -k all\n', out


def test_dracut_host_loses_its_dracut_file_too(tmp_path):
    root = _passthrough_host(tmp_path, os_family='RedHat')
    rc, out, root = _run(tmp_path, 'absent', os_family='RedHat')
    assert rc == 0, out
    assert str(root / PATHS['vfio_dracut_path']) in _result(out)['removed'], out
    assert _files(root) == {PATHS['vfio_initramfs_modules_path']: ADMIN_MODULES}, out


def test_check_mode_writes_nothing_and_reports_the_plan_of_the_real_run(tmp_path):
    root = _passthrough_host(tmp_path)
    before = _files(root)
    rc, out, root = _run(tmp_path, 'absent', args=('--check',))
    assert rc == 0, out
    planned = _result(out)
    assert _files(root) == before, out
    assert planned['changed'] and planned['reasons'], planned
    rc, out, root = _run(tmp_path, 'absent')
    assert rc == 0, out
    real = _result(out)
    assert planned['removed'] == real['removed'] and planned['reasons'] == real['reasons'], (planned, real)


def test_a_file_at_our_path_without_our_header_is_kept_and_reported(tmp_path):
    root = tmp_path / 'root'
    theirs = root / PATHS['vfio_modprobe_path']
    theirs.parent.mkdir(parents=True)
    theirs.write_text('options vfio-pci ids=10de:2236\n')
    rc, out, root = _run(tmp_path, 'absent')
    assert rc == 0, out
    result = _result(out)
    assert result == {'changed': False, 'removed': [], 'kept': [str(theirs)], 'rebuilt': False, 'reasons': []}, out
    assert theirs.read_text() == 'options vfio-pci ids=10de:2236\n'
    assert 'no gpuvirt.provision header' in out and 'remove it yourself' in out, out


def test_an_unknown_state_is_refused_before_any_change(tmp_path):
    rc, out, root = _run(tmp_path, 'gone')
    assert rc != 0 and 'vfio_state must be one of: present, absent, got: gone' in out, out
    assert _files(root) == {}
