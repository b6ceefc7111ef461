# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu_vf_profiles module against the driver stand-in (tests/unit/vf_driver.py): the module's one writer and its
run_command are the stand-in's, so a refused write fails as the driver's does."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible.module_utils import basic
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from ansible_collections.gpuvirt.provision.plugins.modules import vgpu_vf_profiles

from vf_driver import VfBoard
from .harness import run_module

PF = '0000:41:00.0'
VF0 = '0000:41:00.4'
VF1 = '0000:41:00.5'


def _run(monkeypatch, board, args, check=False, diff=False):
    monkeypatch.setattr(vvp, 'write_attr', board.writer)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, argv, **kw: board.run(argv))
    proc = os.path.join(board.root, 'proc')  # an empty procfs: no process holds anything
    os.makedirs(proc, exist_ok=True)
    args = dict({'sysfs_root': board.root, 'proc_root': proc, 'sriov_manage': '/nonexistent/sm'}, **args)
    return run_module(monkeypatch, vgpu_vf_profiles, args, check=check, diff=diff)


def test_apply_then_nothing_to_do(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}}, diff=True)
    assert not res['failed'] and res['changed'], res
    assert res['said'] == ['%s got NVIDIA L40S-24Q (1155)' % VF0, '%s got NVIDIA L40S-24Q (1155)' % VF1]
    assert '%s %s: none\n' % (PF, VF0) in res['diff']['before']
    assert '%s %s: NVIDIA L40S-24Q\n' % (PF, VF0) in res['diff']['after']
    assert res['persist']['gpus'] == [{'pf': PF, 'vfs': {VF0: 1155, VF1: 1155}}]
    saved = tmp_path / 'saved.json'
    saved.write_text(json.dumps(res['persist']))
    again = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, 'saved_config': str(saved)})
    assert not again['failed'] and not again['changed'] and again['said'] == []


def test_check_mode_writes_nothing_and_reports_the_plan(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    res = _run(monkeypatch, board, {'config': {'L40S-12Q': 1}}, check=True)
    assert res['changed'] and [r['action'] for r in res['vfs']][:2] == ['set', 'none']
    assert board.writes == [] and set(board.current.values()) == {0}


def test_check_mode_on_vfs_that_are_off_reports_the_enable_only(monkeypatch, tmp_path):
    board = VfBoard(tmp_path, enabled=False)
    res = _run(monkeypatch, board, {'config': {'L40S-12Q': 1}}, check=True)
    assert res['changed'] and res['vfs'] == [dict(pf=PF, vf=None, action='enable', method='sriov_numvfs', before=None,
                                                  after=None, name_before=None, name_after=None)]
    assert board.writes == [] and board.commands == []


def test_a_refusal_names_the_value_and_writes_nothing(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 3}})
    assert res['failed'] and 'asks for 72 GB (3 x L40S-24Q)' in res['msg'] and board.writes == []
    res = _run(monkeypatch, board, {'state': 'present'})
    assert res['failed'] and 'config' in res['msg']


def test_a_hostile_saved_config_is_refused(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    saved = tmp_path / 'saved.json'
    saved.write_text(json.dumps({'types': {'1155': 'L40S-24Q\n$(reboot)'}}))
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 1}, 'saved_config': str(saved)})
    assert res['failed'] and 'the saved config names type' in res['msg'] and board.writes == []


def test_a_refusal_after_the_vfs_were_enabled_reports_the_change(monkeypatch, tmp_path):
    # the room check needs the creatable lists, which exist only once the VFs are: the enable is a change made,
    # and the refusal says so with changed=true
    board = VfBoard(tmp_path, enabled=False)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 3}})
    assert res['failed'] and res['changed'] and 'asks for 72 GB' in res['msg'], res
    assert 'already done: %s: VFs enabled (sriov_numvfs)' % PF in res['msg'] and res['said'] == [
        '%s: VFs enabled (sriov_numvfs)' % PF]


def test_more_vgpus_than_vfs_are_refused_before_the_vfs_are_enabled(monkeypatch, tmp_path):
    board = VfBoard(tmp_path, enabled=False)
    res = _run(monkeypatch, board, {'config': {'L40S-6Q': 5}})
    assert res['failed'] and not res.get('changed') and 'has 4 VFs (sriov_totalvfs)' in res['msg'], res
    assert board.writes == [] and board.commands == []


def test_a_failure_on_the_second_gpu_names_what_the_first_got(monkeypatch, tmp_path):
    board = VfBoard(tmp_path, pfs=(PF, '0000:42:00.0'))
    real = board.writer

    def failing(path, value):
        if '0000:42:00.4' in path:
            raise OSError(5, 'Input/output error', path)
        real(path, value)

    monkeypatch.setattr(board, 'writer', failing)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 1}})
    assert res['failed'] and res['changed'], res
    assert 'done before it: %s got NVIDIA L40S-24Q (1155)' % VF0 in res['msg'] and res['said'] == [
        '%s got NVIDIA L40S-24Q (1155)' % VF0]


def test_a_boot_config_that_cannot_be_saved_is_refused_before_any_write(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)

    def refuse(*args, **kwargs):
        raise vvp.VfProfileError('no')

    monkeypatch.setattr(vvp, 'persist_config', refuse)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 1}})
    assert res['failed'] and res['msg'] == 'no' and board.writes == []


def test_a_saved_config_that_is_deep_or_special_is_refused_naming_it(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    deep = tmp_path / 'deep.json'
    deep.write_text('[' * 100000 + ']' * 100000)
    fifo = tmp_path / 'fifo.json'
    os.mkfifo(str(fifo))
    for path in (deep, fifo):
        res = _run(monkeypatch, board, {'config': {'L40S-24Q': 1}, 'saved_config': str(path)})
        assert res['failed'] and 'saved_config %s' % path in res['msg'] and board.writes == [], res


@pytest.mark.parametrize('arg', ['sysfs_root', 'sriov_manage'])
def test_a_path_the_boot_time_restore_would_refuse_stops_the_run_before_any_write(monkeypatch, tmp_path, arg):
    # both paths go into the boot-time config, whose grammar the restore script checks again at boot; a space (a
    # root the lab or a test points the module at, a copied tree) must stop the run before the first profile
    board = VfBoard(tmp_path / ('sys root' if arg == 'sysfs_root' else 'sys'))
    value = {'sysfs_root': board.root, 'sriov_manage': os.path.join(str(tmp_path), 'sriov manage')}[arg]
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, arg: value})
    assert res['failed'] and res['msg'].startswith('%s is ' % arg), res
    assert board.writes == [] and board.commands == []


def test_a_renumbered_saved_type_is_warned_about_and_the_live_id_written(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    saved = tmp_path / 'saved.json'
    saved.write_text(json.dumps({'version': 1, 'managed_by': 'gpuvirt.provision', 'gpus': [],
                                 'types': {'999': 'NVIDIA L40S-24Q'}}))
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 1}, 'saved_config': str(saved)})
    assert not res.get('failed') and res['changed'], res
    assert any('names NVIDIA L40S-24Q as type id 999; the host lists it as 1155' in w for w in res.get('warnings', [])), res


# --- plan: the read-only path (the boot-time config of a host a MachineConfig delivers to) ---------------------------

def test_plan_returns_the_boot_config_and_writes_nothing_even_outside_check_mode(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, 'plan': True})
    assert not res['failed'] and not res['changed'], res
    assert board.writes == [] and board.commands == [] and set(board.current.values()) == {0}
    # the same config an apply saves (test_apply_then_nothing_to_do), so both ways give a host one config
    assert res['persist']['gpus'] == [{'pf': PF, 'vfs': {VF0: 1155, VF1: 1155}}]
    assert res['persist']['types'] == {'1155': 'NVIDIA L40S-24Q'}
    applied = _run(monkeypatch, VfBoard(tmp_path / 'other'), {'config': {'L40S-24Q': 2}})
    assert dict(applied['persist'], sysfs_root=None) == dict(res['persist'], sysfs_root=None)


def test_plan_after_the_profiles_were_restored_gives_the_same_config(monkeypatch, tmp_path):
    # second run on a node the MachineConfig's unit restored: the VFs keep their types; a full GPU lists none, so the
    # names come from the saved config the MachineConfig wrote
    board = VfBoard(tmp_path)
    first = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, 'plan': True})
    saved = tmp_path / 'saved.json'
    saved.write_text(json.dumps(first['persist']))
    board.set(VF0, 1155)
    board.set(VF1, 1155)
    again = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, 'plan': True, 'saved_config': str(saved)})
    assert not again['failed'] and again['persist'] == first['persist'], again
    assert [r['action'] for r in again['vfs']][:2] == ['keep', 'keep']


def test_plan_refuses_a_gpu_whose_vfs_are_not_enabled_naming_it(monkeypatch, tmp_path):
    board = VfBoard(tmp_path, enabled=False)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, 'plan': True})
    assert res['failed'] and ('GPU %s has no VFs enabled yet, so its boot-time config (which names each VF by its '
                              'PCI address) cannot be computed without enabling them' % PF) in res['msg'], res
    assert board.writes == [] and board.commands == []


@pytest.mark.parametrize('extra', [{'state': 'absent'}, {'gpus': [PF]}, {'remove_unlisted': True}])
def test_plan_takes_the_host_as_it_is(monkeypatch, tmp_path, extra):
    board = VfBoard(tmp_path)
    res = _run(monkeypatch, board, dict({'config': {'L40S-24Q': 2}, 'plan': True}, **extra))
    assert res['failed'] and 'plan computes the whole host' in res['msg'], res


def test_plan_checks_the_python_the_unit_will_run(monkeypatch, tmp_path):
    board = VfBoard(tmp_path)
    res = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, 'plan': True, 'python': '/nonexistent/python3'})
    assert res['failed'] and 'python is /nonexistent/python3, and /nonexistent cannot be read' in res['msg'], res


def test_on_coreos_only_plan_runs_every_writing_path_is_refused_first(monkeypatch, tmp_path):
    # RHCOS: the Machine Config Operator owns the host's files and units; plan writes nothing and is allowed, any
    # other call (with or without the boot-time restore, check mode too: it predicts a write) is refused before
    # anything
    monkeypatch.setattr(vvp, 'os_release_fields', lambda root_dir='/', host='': {'ID': 'rhcos', 'VARIANT_ID': 'coreos'})
    board = VfBoard(tmp_path)
    planned = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}, 'plan': True})
    assert not planned['failed'], planned
    for check in (False, True):
        res = _run(monkeypatch, board, {'config': {'L40S-24Q': 2}}, check=check)
        assert res['failed'] and 'runs Red Hat CoreOS (/etc/os-release ID=rhcos, VARIANT_ID=coreos)' in res['msg'], res
    assert board.writes == [] and set(board.current.values()) == {0}
