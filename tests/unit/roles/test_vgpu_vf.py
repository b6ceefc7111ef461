# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_vf role for real (ansible-playbook on localhost, every path under a temporary root): check mode writes
nothing, a run sets the profiles and installs the unit, its script and its JSON config, a second run changes
nothing, and a value that would reach the unit file unchecked stops the role before any change.

The sysfs tree here is a plain directory (the module runs in its own process, where the driver stand-in of
tests/unit/vf_driver.py cannot replace its writer): it takes every write, so the refusals the driver makes are
tested in tests/unit/plugins/module_utils/host/test_vgpu_vf_profiles.py."""
from __future__ import annotations

import json
import os
import shutil

from play_runner import run_play
from vf_driver import VfBoard

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the vgpu_vf role
      ansible.builtin.include_role:
        name: gpuvirt.provision.vgpu_vf
"""
PF = '0000:41:00.0'
VF0, VF1 = '0000:41:00.4', '0000:41:00.5'


def _vars(tmp_path, board, **overrides):
    root = tmp_path / 'root'
    extra = {
        'vgpu_vf_config': {'L40S-24Q': 2}, 'vgpu_vf_sysfs_root': board.root, 'vgpu_vf_systemd': False,
        'vgpu_vf_proc_root': str(tmp_path / 'proc'), 'vgpu_vf_sriov_manage': str(tmp_path / 'no-sriov-manage'),
        'vgpu_vf_root_dir': str(root),
    }
    (tmp_path / 'proc').mkdir(exist_ok=True)
    (root / 'etc/systemd/system').mkdir(parents=True, exist_ok=True)  # there on every systemd host
    # the role refuses a root without os-release (it might be CoreOS): this machine's own
    shutil.copy('/etc/os-release', str(root / 'etc/os-release'))
    extra.update(overrides)
    return extra, root


FILES = {'config': 'etc/gpuvirt/vgpu-vf-profiles.json', 'script': 'usr/local/libexec/gpuvirt/vgpu-vf-restore',
         'unit': 'etc/systemd/system/gpuvirt-vgpu-vf.service'}


def _file(extra, key):
    return os.path.join(extra['vgpu_vf_root_dir'], FILES[key])


def _installed(extra):
    return [k for k in FILES if os.path.exists(_file(extra, k))]


def _current(board, vf):
    return open(os.path.join(board.root, 'bus/pci/devices', vf, 'nvidia/current_vgpu_type')).read().strip()


def test_check_mode_changes_nothing(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    rc, out = run_play(tmp_path, PLAY, extra, args=['--check'])
    assert rc == 0, out
    assert '%s: set' % VF0 in out
    assert _current(board, VF0) == '0' and not _installed(extra)
    assert 'virt-handler on this node would be restarted (its VFs %s, %s change profiles)' % (VF0, VF1) in ' '.join(out.split()), out


def test_a_run_sets_the_profiles_and_installs_the_restore_and_a_second_run_changes_nothing(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc == 0, out
    assert '%s got NVIDIA L40S-24Q (1155)' % VF0 in out and '%s got NVIDIA L40S-24Q (1155)' % VF1 in out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['1155', '1155']
    saved = json.loads((root / 'etc/gpuvirt/vgpu-vf-profiles.json').read_text())
    assert saved == {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': board.root, 'sriov_manage': str(tmp_path / 'no-sriov-manage'),
                     'timeout': 300, 'gpus': [{'pf': PF, 'vfs': {VF0: 1155, VF1: 1155}}],
                     'types': {'1155': 'NVIDIA L40S-24Q'}}
    unit = (root / 'etc/systemd/system/gpuvirt-vgpu-vf.service').read_text()
    # the unit names the final paths, the prefix stripped
    assert ('ExecStart=/usr/bin/python3 /usr/local/libexec/gpuvirt/vgpu-vf-restore /etc/gpuvirt/vgpu-vf-profiles.json\n'
            in unit)
    assert 'Type=oneshot\n' in unit and 'TimeoutStartSec=360\n' in unit and 'Restart=on-failure\n' in unit
    assert os.access(_file(extra, 'script'), os.X_OK)
    # KubeVirt's virt-handler finds the VFs only when it starts (kubevirt v1.9.0 pkg/virt-handler/device-manager/
    # device_controller.go Run: one discovery, then only on a KubeVirt config change): the installed script was run
    # to restart it; no crictl on the test machine, so it says what to do by hand (its crictl calls:
    # tests/unit/roles/test_vgpu_vf_restore.py)
    assert ("2 VF profile(s) changed on this node; KubeVirt finds VFs only when its virt-handler starts, and there is "
            "no crictl" in ' '.join(out.split())), out
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc == 0 and 'changed=0' in out, out
    # nothing changed, nothing restarted
    assert 'VF profile(s) changed on this node' not in out and 'would be restarted' not in out, out


def test_absent_clears_the_profiles_and_removes_the_restore(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    assert run_play(tmp_path, PLAY, extra)[0] == 0
    rc, out = run_play(tmp_path, PLAY, dict(extra, vgpu_vf_state='absent'))
    assert rc == 0, out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['0', '0']
    assert not _installed(extra)
    # the script went with the restore: the run says how to restart virt-handler, whose plugin still lists the VFs
    assert ('VFs %s, %s changed profiles, and KubeVirt finds VFs only when its virt-handler starts: restart it on '
            'this node' % (VF0, VF1)) in ' '.join(out.split()), out


def test_a_python_that_would_add_a_directive_stops_the_role_before_any_change(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    extra['vgpu_vf_python'] = str(root / 'x\nExecStartPre=/bin/sh -c reboot')
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc != 0 and 'the Python interpreter is' in out and 'expected a normalised absolute path' in out, out
    assert _current(board, VF0) == '0' and not _installed(extra)


def test_a_file_that_is_not_ours_at_an_installed_path_stops_the_role_and_survives_absent(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    # a directory where the script goes, and a foreign unit of the same name: neither is written nor removed
    victim = root / FILES['script']
    (victim / 'sub').mkdir(parents=True)
    (victim / 'sub' / 'important').write_text('keep\n')
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc != 0 and 'is not ours' in out, out
    assert _current(board, VF0) == '0' and (victim / 'sub' / 'important').read_text() == 'keep\n'
    rc, out = run_play(tmp_path, PLAY, dict(extra, vgpu_vf_state='absent'))
    assert rc != 0 and 'is not ours' in out, out
    assert (victim / 'sub' / 'important').read_text() == 'keep\n'
    victim.joinpath('sub', 'important').unlink()
    victim.joinpath('sub').rmdir()
    victim.rmdir()
    unit = root / FILES['unit']
    unit.write_text('[Service]\nExecStart=/usr/sbin/sshd\n')
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc != 0 and 'is not ours' in out and unit.read_text() == '[Service]\nExecStart=/usr/sbin/sshd\n', out


def test_existing_directories_keep_their_mode(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    (root / 'etc/gpuvirt').mkdir(parents=True)
    (root / 'etc/gpuvirt').chmod(0o700)
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc == 0, out
    assert (root / 'etc/gpuvirt').stat().st_mode & 0o7777 == 0o700
    assert (root / 'usr/local/libexec/gpuvirt').stat().st_mode & 0o7777 == 0o755


def test_a_root_dir_under_a_world_writable_directory_is_refused_before_any_change(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    root.chmod(0o777)
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc != 0 and 'group- or world-writable' in out, out
    assert _current(board, VF0) == '0' and not _installed(extra)


def test_a_type_name_from_a_survey_that_is_no_type_stops_the_role_naming_it(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board, vgpu_vf_config={'L40S-24Q; reboot': 1})
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc != 0 and "'L40S-24Q; reboot' is not a vGPU type name" in out, out
    assert _current(board, VF0) == '0' and not _installed(extra)


def test_a_run_narrowed_to_one_gpu_keeps_the_others_boot_restore_and_so_does_a_narrowed_absent(tmp_path):
    board = VfBoard(tmp_path / 'sys', pfs=(PF, '0000:42:00.0'))
    extra, root = _vars(tmp_path, board)
    assert run_play(tmp_path, PLAY, extra)[0] == 0
    config = root / FILES['config']
    rc, out = run_play(tmp_path, PLAY, dict(extra, vgpu_vf_gpus=['0000:42:00.0']))
    assert rc == 0, out
    assert [g['pf'] for g in json.loads(config.read_text())['gpus']] == [PF, '0000:42:00.0']
    rc, out = run_play(tmp_path, PLAY, dict(extra, vgpu_vf_gpus=['0000:42:00.0'], vgpu_vf_state='absent'))
    assert rc == 0, out
    assert [g['pf'] for g in json.loads(config.read_text())['gpus']] == [PF]
    assert sorted(_installed(extra)) == ['config', 'script', 'unit'] and _current(board, VF0) == '1155'


def _hostile_result(tmp_path, persist):
    """A module result given with -e (extra variables beat a registered result): its paths, unit and config point
    elsewhere and say something else."""
    evil = tmp_path / 'evil'
    return {'said': [], 'vfs': [], 'changed': True,
            'unit': '# Managed by gpuvirt.provision\n[Service]\nExecStart=/bin/sh -c "id > /tmp/owned"\n',
            'persist': persist, 'unit_type': 'oneshot',
            'files': {'dirs': [str(evil / 'd')],
                      'unit': {'path': str(evil / 'x.service'), 'final': '/x.service', 'exists': True},
                      'script': {'path': str(evil / 'script'), 'final': '/script', 'exists': True},
                      'config': {'path': str(evil / 'config.json'), 'final': '/config.json', 'exists': True}}}


def test_a_module_result_given_from_outside_neither_moves_a_file_nor_writes_its_unit(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    persist = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/tmp/fake-sys',
               'sriov_manage': '/tmp/evil-sriov-manage', 'timeout': 300,
               'gpus': [{'pf': PF, 'vfs': {VF0: 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}
    rc, out = run_play(tmp_path, PLAY, dict(extra, __vgpu_vf_result=_hostile_result(tmp_path, persist)))
    assert rc == 0, out
    assert not (tmp_path / 'evil').exists()
    unit = (root / FILES['unit']).read_text()
    assert 'ExecStart=/usr/bin/python3 /usr/local/libexec/gpuvirt/vgpu-vf-restore /etc/gpuvirt/vgpu-vf-profiles.json\n' in unit
    assert 'owned' not in unit
    # the GPUs and types pass their grammar; the paths are the public inputs, never the result's
    saved = json.loads((root / FILES['config']).read_text())
    assert saved['sysfs_root'] == board.root and saved['sriov_manage'] == str(tmp_path / 'no-sriov-manage')
    assert saved['gpus'] == [{'pf': PF, 'vfs': {VF0: 1155}}]


def test_a_boot_config_given_from_outside_outside_its_grammar_is_never_written(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    persist = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': board.root,
               'sriov_manage': str(tmp_path / 'no-sriov-manage'), 'timeout': 300,
               'gpus': [{'pf': PF, 'vfs': {VF0: 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q\nExecStartPre=/bin/sh'}}
    rc, out = run_play(tmp_path, PLAY, dict(extra, __vgpu_vf_result=_hostile_result(tmp_path, persist)))
    assert rc != 0 and 'vgpu_vf_config: the boot-time config names type' in out, out
    assert not (root / FILES['config']).exists() and not (tmp_path / 'evil').exists()


def test_a_unit_form_given_from_outside_other_than_the_two_writes_no_file(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    persist = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': board.root,
               'sriov_manage': str(tmp_path / 'no-sriov-manage'), 'timeout': 300,
               'gpus': [{'pf': PF, 'vfs': {VF0: 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}
    result = dict(_hostile_result(tmp_path, persist), unit_type='oneshot\nExecStartPre=/bin/sh -c reboot')
    rc, out = run_play(tmp_path, PLAY, dict(extra, __vgpu_vf_result=result))
    assert rc != 0 and 'vgpu_vf_unit: unit_type is' in out and 'expected one of oneshot, forking' in out, out
    assert not _installed(extra) and not (tmp_path / 'evil').exists()


def _systemctl(tmp_path, first_line):
    """A stand-in ``systemctl`` first on PATH, printing ``first_line`` as ``systemctl --version`` does (this machine's
    own systemd is 252 and cannot be another version): the module finds it by PATH (get_bin_path) and runs it.
    Returns the environment for run_play."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / 'version').write_text(first_line + '\n+PAM +AUDIT default-hierarchy=unified\n')
    stand_in = bin_dir / 'systemctl'
    stand_in.write_text('#!/bin/sh\n[ "$1" = --version ] || exit 64\ncat %s\n' % (bin_dir / 'version'))
    stand_in.chmod(0o755)
    return dict(os.environ, PATH='%s:%s' % (bin_dir, os.environ.get('PATH', '')))


def test_the_unit_s_form_follows_the_host_s_systemd_and_an_upgraded_systemd_rewrites_it_once(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    unit = root / FILES['unit']
    # EL8: systemd 239 refuses Restart= on Type=oneshot, so the host gets the forking form (vgpu_vf_profiles.UNIT_TYPES)
    env = _systemctl(tmp_path, 'systemd 239 (239-78.el8)')
    rc, out = run_play(tmp_path, PLAY, extra, env=env)
    assert rc == 0, out
    text = unit.read_text()
    assert 'Type=forking\nGuessMainPID=no\nRemainAfterExit=yes\n' in text and 'Type=oneshot' not in text
    assert 'Restart=on-failure\nRestartSec=30\n' in text and 'StartLimitIntervalSec=0\n' in text
    rc, out = run_play(tmp_path, PLAY, extra, env=env)
    assert rc == 0 and 'changed=0' in out, out
    # the host's systemd upgraded to 252: check mode with diff shows the unit's change and writes nothing
    env = _systemctl(tmp_path, 'systemd 252 (252.17-1.el9)')
    rc, out = run_play(tmp_path, PLAY, extra, args=['--check', '--diff'], env=env)
    assert rc == 0 and '-Type=forking' in out and '+Type=oneshot' in out and '-GuessMainPID=no' in out, out
    assert unit.read_text() == text
    rc, out = run_play(tmp_path, PLAY, extra, env=env)
    assert rc == 0 and 'changed=1' in out, out
    assert 'Type=oneshot\nRemainAfterExit=yes\n' in unit.read_text() and 'forking' not in unit.read_text()
    rc, out = run_play(tmp_path, PLAY, extra, env=env)
    assert rc == 0 and 'changed=0' in out, out
    # the form given, the host's systemd is not read: a 252 host keeps the forking form when asked for it
    rc, out = run_play(tmp_path, PLAY, dict(extra, vgpu_vf_unit_type='forking'), env=env)
    assert rc == 0 and 'Type=forking\n' in unit.read_text(), out


def test_a_systemd_version_that_does_not_parse_stops_the_role_before_any_change(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    extra, root = _vars(tmp_path, board)
    env = _systemctl(tmp_path, 'systemd 252 (252.1) $(reboot)')
    rc, out = run_play(tmp_path, PLAY, extra, env=env)
    assert rc != 0 and 'systemctl --version printed' in out and 'vgpu_vf_unit_type' in out, out
    assert "'systemd 252 (252.1) $(reboot)'" in out and 'host ' in out, out
    assert _current(board, VF0) == '0' and not _installed(extra)


MC_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the vgpu_vf role's machineconfig entry point
      ansible.builtin.include_role:
        name: gpuvirt.provision.vgpu_vf
        tasks_from: machineconfig
"""


def test_the_machineconfig_entry_point_refuses_render_mode_before_reading_the_cluster(tmp_path):
    # a render holds no VF MachineConfig (docs/pools/vendor-vfio.md, "Render mode"): the entry point stops before any
    # cluster read; in apply mode it goes on to read the pools (and fails here only because no cluster answers)
    hosts = [{'host': 'gpu-s01', 'node': 'gpu-s01', 'persist': {}}]
    for mode in ('render', 'apply'):
        cluster = {'mode': mode, 'render_dir': str(tmp_path / 'render')}
        rc, out = run_play(tmp_path, MC_PLAY, {'gpuvirt_cluster': cluster, 'vgpu_vf_machineconfig_hosts': hosts})
        assert rc != 0, out
        read = "TASK [gpuvirt.provision.vgpu_vf : Read the cluster's MachineConfigPools]" in out
        if mode == 'render':
            assert 'is not for render mode' in out and not read, out
        else:
            assert 'is not for render mode' not in out and read, out
    assert not (tmp_path / 'render').exists()
    # the mode setting alone (the cluster role has not run): refused the same way
    rc, out = run_play(tmp_path, MC_PLAY, {'gpuvirt_cluster_mode': 'render', 'vgpu_vf_machineconfig_hosts': hosts})
    assert rc != 0 and 'is not for render mode' in out, out
    assert "TASK [gpuvirt.provision.vgpu_vf : Read the cluster's MachineConfigPools]" not in out, out
