# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel_args role both ways, for real (ansible-playbook, every file under a temporary root, the boot-loader
update commands on PATH as recording stand-ins): present records on the host which arguments the collection added
(only those the boot loader lacked before); absent takes back exactly those, updates the boot loader and asks the
reboot role for one reboot while the running kernel still has them; a second run changes nothing; check mode
writes nothing and reports the plan; a malformed record takes back nothing and says so."""

from __future__ import annotations

import json
import os
import stat

import pytest

from play_runner import run_play

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the kernel_args role
      ansible.builtin.include_role:
        name: gpuvirt.provision.kernel_args
    - name: Show what it did
      ansible.builtin.debug:
        msg: >-
          RESULT={{ {'changed': kernel_args_result is changed, 'removed': kernel_args_result.removed,
                     'owned': kernel_args_result.owned, 'kept': kernel_args_result.kept | map(attribute='arg') | list,
                     'commands': kernel_args_result.commands, 'problems': kernel_args_result.record_problems,
                     'reasons': kernel_args_reboot_reasons} | to_json }}
"""

ADMIN_GRUB = 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root intel_iommu=on"\n'
RUNNING = 'BOOT_IMAGE=/vmlinuz root=/dev/mapper/rhel-root ro intel_iommu=on iommu=pt\n'


@pytest.fixture(autouse=True)
def _json_results(monkeypatch):
    monkeypatch.setenv('ANSIBLE_CALLBACK_RESULT_FORMAT', 'json')


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """update-grub and grub2-mkconfig on PATH as scripts that record each call: seen, never run."""
    bin_dir, log = tmp_path / 'bin', tmp_path / 'bootloader.log'
    bin_dir.mkdir()
    for tool in ('update-grub', 'grub2-mkconfig'):
        script = bin_dir / tool
        script.write_text('#!/bin/sh\necho "%s $*" >> %s\n' % (tool, log))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    return log


def _paths(tmp_path):
    root = tmp_path / 'root'
    return {
        'kernel_args_dropin_path': str(root / 'etc/default/grub.d/90-gpuvirt-kernel-args.cfg'),
        'kernel_args_grub_default_path': str(root / 'etc/default/grub'),
        'kernel_args_grub_config': str(root / 'boot/grub2/grub.cfg'),
        'kernel_args_proc_cmdline': str(root / 'proc/cmdline'),
        'kernel_args_record_path': str(root / 'var/lib/gpuvirt-provision/host-state.json'),
    }


def _host(tmp_path, running=RUNNING):
    paths = _paths(tmp_path)
    for path in paths.values():
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(paths['kernel_args_grub_default_path'], 'w') as f:
        f.write(ADMIN_GRUB)
    with open(paths['kernel_args_proc_cmdline'], 'w') as f:
        f.write(running)
    return paths


def _run(tmp_path, state, backend, args=(), **overrides):
    extra = dict(_paths(tmp_path), kernel_args_state=state, kernel_args_backend=backend,
                 kernel_args_iommu_vendor='intel', ansible_facts={'os_family': 'RedHat'})
    extra.update(overrides)
    return run_play(tmp_path, PLAY, extra, args=args)


def _result(out):
    line = next(ln for ln in out.splitlines() if '"msg": "RESULT=' in ln)
    return json.loads(json.loads(line.split('"msg": ', 1)[1].rstrip(','))[len('RESULT='):])


def _read(path):
    with open(path) as f:
        return f.read()


def test_grub_default_ours_taken_back_the_administrators_kept_one_reboot_then_nothing(tmp_path, tools):
    paths = _host(tmp_path)
    rc, out = _run(tmp_path, 'present', 'grub_default')
    assert rc == 0, out
    res = _result(out)
    # intel_iommu=on was on the line before the collection came: not recorded, so never taken back
    assert res['owned'] == ['iommu=pt'], res
    assert json.loads(_read(paths['kernel_args_record_path']))['kernel_args'] == {'grub_default': ['iommu=pt']}
    assert 'GRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root intel_iommu=on iommu=pt"' in _read(
        paths['kernel_args_grub_default_path'])

    rc, out = _run(tmp_path, 'absent', 'grub_default', args=('--check',))
    assert rc == 0, out
    planned = _result(out)
    assert planned['changed'] and planned['removed'] == ['iommu=pt'], planned
    assert 'iommu=pt' in _read(paths['kernel_args_grub_default_path']), 'check mode wrote the boot loader'
    assert tools.read_text().count('grub2-mkconfig') == 1, 'check mode ran the boot loader update'

    rc, out = _run(tmp_path, 'absent', 'grub_default')
    assert rc == 0, out
    res = _result(out)
    assert res['removed'] == ['iommu=pt'] and res['changed'], res
    assert planned['removed'] == res['removed'] and planned['reasons'] == res['reasons'], (planned, res)
    assert _read(paths['kernel_args_grub_default_path']) == ADMIN_GRUB
    assert res['reasons'] == ['kernel_args: took back iommu=pt, the running kernel still has iommu=pt'], res
    assert tools.read_text().count('grub2-mkconfig') == 2

    # second run: nothing recorded, nothing to take back, no boot-loader update, no reboot
    rc, out = _run(tmp_path, 'absent', 'grub_default')
    assert rc == 0, out
    assert _result(out) == {'changed': False, 'removed': [], 'owned': [], 'kept': [], 'commands': [],
                            'problems': {}, 'reasons': []}, out
    assert tools.read_text().count('grub2-mkconfig') == 2


def test_dropin_absent_deletes_our_dropin_and_updates_grub(tmp_path, tools):
    paths = _host(tmp_path)
    rc, out = _run(tmp_path, 'present', 'grub_dropin')
    assert rc == 0 and os.path.exists(paths['kernel_args_dropin_path']), out
    rc, out = _run(tmp_path, 'absent', 'grub_dropin')
    assert rc == 0, out
    res = _result(out)
    assert not os.path.exists(paths['kernel_args_dropin_path']) and res['removed'] == ['intel_iommu=on', 'iommu=pt']
    # the administrator's /etc/default/grub keeps intel_iommu=on after the drop-in is gone: only iommu=pt is a
    # reason to reboot
    assert res['reasons'] == ['kernel_args: took back intel_iommu=on iommu=pt, the running kernel still has '
                              'iommu=pt'], res
    assert tools.read_text() == 'update-grub \nupdate-grub \n'
    assert _read(paths['kernel_args_grub_default_path']) == ADMIN_GRUB


def test_a_malformed_record_takes_back_nothing_and_says_so(tmp_path, tools):
    paths = _host(tmp_path)
    # a prepared host (its arguments on the line) whose record lists an argument the collection never adds
    with open(paths['kernel_args_grub_default_path'], 'w') as f:
        f.write('GRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root intel_iommu=on iommu=pt"\n')
    with open(paths['kernel_args_record_path'], 'w') as f:
        f.write('{"version": 1, "kernel_args": {"grub_default": ["iommu=pt", "rd.lvm.lv=rhel/root"]}}')
    before = _read(paths['kernel_args_grub_default_path'])
    rc, out = _run(tmp_path, 'absent', 'grub_default')
    assert rc == 0, out
    res = _result(out)
    assert not res['changed'] and res['removed'] == [] and res['reasons'] == [], res
    assert 'kernel_args' in res['problems'] and 'nothing is taken back' in out, out
    assert _read(paths['kernel_args_grub_default_path']) == before
