# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trusted-path rule of vgpu_vf_profiles (and the restore script's copy of it): the executables root runs, the
sysfs and procfs roots, and the writes into sysfs. Everything hostile lives under pytest's tmp_path (root-owned
and 0700 above it, /tmp sticky), where the rule accepts a plain root-made tree."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from vf_driver import VfBoard

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, '..', '..', '..', '..', '..', 'roles', 'vgpu_vf', 'files', 'gpuvirt_vgpu_vf_restore.py')
PF = '0000:41:00.0'
VF0 = '0000:41:00.4'


def _restore():
    spec = importlib.util.spec_from_file_location('gpuvirt_vgpu_vf_restore', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _exe(path, mode=0o755):
    path.write_text('#!/bin/sh\n')
    path.chmod(mode)
    return str(path)


def _trees(tmp_path):
    """{case: (path, ok)} over a tree of good and bad parts."""
    good = tmp_path / 'good'
    good.mkdir()
    wide = tmp_path / 'wide'
    wide.mkdir()
    wide.chmod(0o777)
    sticky = tmp_path / 'sticky'
    sticky.mkdir()
    sticky.chmod(0o1777)
    alien = tmp_path / 'alien'
    alien.mkdir()
    os.chown(str(alien), 1000, 1000)
    (tmp_path / 'link').symlink_to(good)
    return {
        'plain file': (_exe(good / 'x'), True),
        'under a sticky root-owned parent': (_exe(sticky / 'x'), True),
        'group/world-writable file': (_exe(good / 'w', 0o777), False),
        'world-writable parent': (_exe(wide / 'x'), False),
        'parent owned by another user': (_exe(alien / 'x'), False),
        'symlinked parent': (str(tmp_path / 'link' / 'x'), False),
        'dot-dot': (str(good) + '/../good/x', False),
        'double slash': (str(good) + '//x', False),
        'space': (str(good) + '/x y', False),
        'relative': ('good/x', False),
    }


def test_the_rule_accepts_a_root_owned_tree_and_refuses_every_weak_part(tmp_path):
    restore = _restore()
    for case, (path, ok) in _trees(tmp_path).items():
        for name, check, error in (('module', vvp.trusted_path, vvp.VfProfileError),
                                   ('script', restore.trusted, restore.ConfigError)):
            if ok:
                assert check(path, 'sriov_manage') is True, (name, case)
            else:
                with pytest.raises(error):
                    check(path, 'sriov_manage')
                    pytest.fail('%s accepted %s (%s)' % (name, path, case))


@pytest.mark.parametrize('value', ['/', '/etc', '/a/b', '/a//b', '//a', '/a/../b', '/a/./b', '/a/', '/a b', 'a',
                                   '/a\nb', '/a%b', '/a$b', 5, None])
def test_module_and_restore_script_share_one_path_grammar(value):
    restore = _restore()
    try:
        vvp._path(value, 'p')
        module_ok = True
    except vvp.VfProfileError:
        module_ok = False
    try:
        restore._path(value, 'p')
        script_ok = True
    except restore.ConfigError:
        script_ok = False
    assert module_ok == script_ok, value
    assert module_ok == (value in ('/', '/etc', '/a/b'))


def test_sriov_manage_outside_a_root_owned_tree_is_refused_before_anything(tmp_path):
    alien = tmp_path / 'home'
    alien.mkdir()
    os.chown(str(alien), 1000, 1000)
    with pytest.raises(vvp.VfProfileError, match='owned by uid 1000, not root'):
        vvp.check_inputs({'L40S-24Q': 1}, sriov_manage=_exe(alien / 'sriov-manage'))
    with pytest.raises(vvp.VfProfileError, match='expected a normalised absolute path'):
        vvp.check_inputs({'L40S-24Q': 1}, sriov_manage='/opt/nv tools/sriov-manage')
    # absent: the VFs are enabled through sriov_numvfs
    assert vvp.check_inputs({'L40S-24Q': 1}, sriov_manage=str(tmp_path / 'none' / 'sriov-manage'))


def test_the_unit_runs_only_a_trusted_python(tmp_path):
    wide = tmp_path / 'wide'
    wide.mkdir()
    wide.chmod(0o777)
    with pytest.raises(vvp.VfProfileError, match='the Python interpreter .* group- or world-writable'):
        vvp.unit_text('/etc/systemd/system/gpuvirt-vgpu-vf.service', '/usr/local/libexec/gpuvirt/vgpu-vf-restore',
                      '/etc/gpuvirt/vgpu-vf-profiles.json', _exe(wide / 'python3'), 300)
    # a root-owned link in a root-owned directory (/usr/bin/python3 -> python3.11) is followed to a trusted file
    good = tmp_path / 'bin'
    good.mkdir()
    _exe(good / 'python3.11')
    (good / 'python3').symlink_to('python3.11')
    assert 'ExecStart=%s ' % (good / 'python3') in vvp.unit_text(
        '/etc/systemd/system/gpuvirt-vgpu-vf.service', '/usr/local/libexec/gpuvirt/vgpu-vf-restore',
        '/etc/gpuvirt/vgpu-vf-profiles.json', str(good / 'python3'), 300)
    (good / 'python3x').symlink_to(_exe(wide / 'py'))
    with pytest.raises(vvp.VfProfileError, match='resolved'):
        vvp.unit_text('/etc/systemd/system/gpuvirt-vgpu-vf.service', '/usr/local/libexec/gpuvirt/vgpu-vf-restore',
                      '/etc/gpuvirt/vgpu-vf-profiles.json', str(good / 'python3x'), 300)


def test_the_unit_starts_a_failed_restore_again_until_it_succeeds(tmp_path):
    # one start waits at most the timeout, counted from early boot; on OpenShift kubelet, the vGPU Manager pod, its
    # driver build and its VF delay may take longer, so a failed start (exit 1) is retried every 30 s without a
    # start limit: Restart=on-failure is the one restart Type=oneshot takes (systemd.service(5), Restart=; since
    # systemd 245), StartLimitIntervalSec=0 in [Unit] turns the start limit off (systemd.unit(5))
    unit = vvp.unit_text('/etc/systemd/system/gpuvirt-vgpu-vf.service', '/etc/gpuvirt/vgpu-vf-restore',
                         '/etc/gpuvirt/vgpu-vf-profiles.json', '/usr/bin/python3', 300, on_host=False)
    sections = {}
    for line in unit.splitlines():
        if line.startswith('['):
            section = sections.setdefault(line, [])
        elif line and not line.startswith('#'):
            section.append(line)
    assert sections['[Unit]'][-2:] == ['ConditionPathExists=/etc/gpuvirt/vgpu-vf-profiles.json',
                                       'StartLimitIntervalSec=0']
    assert sections['[Service]'] == [
        'Type=oneshot', 'RemainAfterExit=yes',
        'ExecStart=/usr/bin/python3 /etc/gpuvirt/vgpu-vf-restore /etc/gpuvirt/vgpu-vf-profiles.json',
        'TimeoutStartSec=360', 'Restart=on-failure', 'RestartSec=30']
    analyze = shutil.which('systemd-analyze')
    if not analyze:
        pytest.skip('systemd-analyze is not installed: the unit is not checked by systemd itself')
    # systemd's own parser: it refuses a Restart= that Type=oneshot does not take (Restart=always would fail here)
    path = tmp_path / 'gpuvirt-vgpu-vf.service'
    path.write_text(unit)
    proc = subprocess.run([analyze, 'verify', '--man=no', str(path)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0 and 'gpuvirt-vgpu-vf' not in proc.stderr, proc.stderr


def test_sysfs_and_proc_roots_must_be_trusted_directories(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    os.chmod(board.root, 0o777)
    with pytest.raises(vvp.VfProfileError, match='sysfs_root .* group- or world-writable'):
        vvp.plan(board.root, vvp.check_inputs({'L40S-24Q': 1}), proc=None, sriov_manage='/nonexistent/sm')
    os.chmod(board.root, 0o755)
    with pytest.raises(vvp.VfProfileError, match='proc_root is /nonexistent'):
        vvp.check_inputs({'L40S-24Q': 1}, proc_root='/nonexistent')


def test_the_holder_scan_fails_closed_when_proc_cannot_be_listed(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    board.set(VF0, 1155)
    with pytest.raises(vvp.VfProfileError, match='cannot be listed'):
        vvp.vf_holders(board.root, str(tmp_path / 'no-proc'), VF0)


def test_a_write_does_not_follow_a_planted_link_nor_create_a_file(tmp_path):
    victim = tmp_path / 'victim'
    victim.write_text('0\n')
    link = tmp_path / 'current_vgpu_type'
    link.symlink_to(victim)
    restore = _restore()
    for writer in (vvp.write_attr, restore.write):
        with pytest.raises(OSError):
            writer(str(link), '1155')
        with pytest.raises(OSError):
            writer(str(tmp_path / 'absent'), '1155')
    assert victim.read_text() == '0\n' and not (tmp_path / 'absent').exists()


def test_the_restore_script_checks_sriov_manage_again_before_it_runs(tmp_path, capsys):
    restore = _restore()
    wide = tmp_path / 'wide'
    wide.mkdir()
    wide.chmod(0o777)
    board = VfBoard(tmp_path / 'sys', enabled=False)
    cfg = {'sysfs_root': board.root, 'sriov_manage': _exe(wide / 'sriov-manage'), 'timeout': 10, 'types': {}}
    assert restore.restore_gpu(cfg, PF, [(VF0, '1155')], 1e18) == 1
    assert 'group- or world-writable' in capsys.readouterr().out and board.writes == []


def test_installed_files_are_fixed_and_only_ours_are_touched(tmp_path):
    root = tmp_path / 'root'
    (root / 'etc/systemd/system').mkdir(parents=True)
    (root / 'etc/os-release').write_text('ID=ubuntu\n')
    files = vvp.installed_files(str(root))
    assert files['unit']['path'] == str(root / 'etc/systemd/system/gpuvirt-vgpu-vf.service')
    assert files['unit']['final'] == '/etc/systemd/system/gpuvirt-vgpu-vf.service' and not files['unit']['exists']
    assert files['dirs'] == [str(root / 'etc/gpuvirt'), str(root / 'usr/local/libexec/gpuvirt')]
    unit = root / 'etc/systemd/system/gpuvirt-vgpu-vf.service'
    unit.write_text('[Service]\nExecStart=/usr/sbin/sshd\n')
    with pytest.raises(vvp.VfProfileError, match='is not ours'):
        vvp.installed_files(str(root))
    unit.write_text(vvp.unit_text(files['unit']['final'], files['script']['final'], files['config']['final'],
                                  '/usr/bin/python3', 300))
    assert vvp.installed_files(str(root))['unit']['exists']
    (root / 'etc/gpuvirt/vgpu-vf-profiles.json').mkdir(parents=True)
    with pytest.raises(vvp.VfProfileError, match='is not ours'):
        vvp.installed_files(str(root))


def test_a_virtfn_link_to_another_gpus_vf_is_refused_before_any_write(tmp_path):
    board = VfBoard(tmp_path / 'sys', pfs=(PF, '0000:42:00.0'), vfs=2)
    pfdir = os.path.realpath(os.path.join(board.root, 'bus/pci/devices', PF))
    os.unlink(os.path.join(pfdir, 'virtfn1'))
    os.symlink('../0000:42:00.5', os.path.join(pfdir, 'virtfn1'))
    with pytest.raises(vvp.VfProfileError, match='whose physfn is .0000:42:00.0., not 0000:41:00.0'):
        vvp.plan(board.root, vvp.check_inputs([{'devices': [0], 'vgpu-devices': {'L40S-24Q': 2}}]), proc=None,
                 sriov_manage='/nonexistent/sm')
    assert board.writes == []


def test_a_live_creatable_id_wins_over_a_saved_one_of_the_same_name(tmp_path):
    board = VfBoard(tmp_path / 'sys')
    plans = vvp.plan(board.root, vvp.check_inputs({'L40S-24Q': 1}), proc=None, sriov_manage='/nonexistent/sm',
                     known=vvp.load_saved({'types': {'999': 'NVIDIA L40S-24Q'}}))
    assert [s['after'] for s in plans[0]['steps'] if s['action'] == 'set'] == ['1155']


def test_a_saved_id_that_the_host_numbers_otherwise_now_is_named():
    # after a driver update renumbers the types, the live id wins (above) and the user is told which saved id it
    # replaced; a saved type no creatable list shows any more (a full GPU) is no renumbering and says nothing
    saved = {'999': 'NVIDIA L40S-24Q', '1153': 'NVIDIA L40S-12Q', '1160': 'NVIDIA L40S-8Q'}
    live = {'1155': 'NVIDIA L40S-24Q', '1153': 'NVIDIA L40S-12Q'}
    warnings = vvp.renumbered(saved, live)
    assert warnings == ['the saved config names NVIDIA L40S-24Q as type id 999; the host lists it as 1155 now (a driver '
                        'update?): 1155 is used, and this run saves it for the boot-time restore']
    assert vvp.renumbered(live, live) == []


# Fedora CoreOS keeps ID=fedora and appends VARIANT_ID=coreos (fedora-release.spec, "CoreOS"); RHCOS writes
# ID="rhcos" with VARIANT_ID=coreos; plain Fedora and RHEL are no CoreOS
@pytest.mark.parametrize('os_id,refused', [('rhcos', True), ('"fedora-coreos"', True), ('scos', True),
                                           ('fedora\nVARIANT_ID=coreos', True), ('"rhcos"\nVARIANT_ID=coreos', True),
                                           ('fedora\nVARIANT_ID=workstation', False), ('ubuntu', False),
                                           ('rhel', False)])
def test_a_coreos_host_is_refused_before_any_file_is_named(tmp_path, os_id, refused):
    # RHCOS's files and units are the Machine Config Operator's (OpenShift docs, "Machine Config Operator"): the role
    # installs nothing over SSH there; the same rule host_prep.yml and retire.yml use (module_utils/host/os_release)
    root = tmp_path / 'root'
    (root / 'etc').mkdir(parents=True)
    (root / 'etc/os-release').write_text('NAME="x"\nID=%s\nVERSION_ID="9.6"\n' % os_id)
    if refused:
        with pytest.raises(vvp.VfProfileError, match=r'runs .* CoreOS \(/etc/os-release ID=.*Machine Config Operator.*'
                                                     r'build_vgpu_vf_machineconfig.*Nothing was changed'):
            vvp.installed_files(str(root))
    else:
        assert not vvp.installed_files(str(root))['unit']['exists']


def test_without_an_os_release_the_host_is_refused_and_usr_lib_is_the_fallback(tmp_path):
    # os-release(5): /etc/os-release, else /usr/lib/os-release; with neither, CoreOS cannot be ruled out: refused
    root = tmp_path / 'root'
    (root / 'usr/lib').mkdir(parents=True)
    (root / 'etc').mkdir()
    with pytest.raises(vvp.VfProfileError, match=r'gpu-1: neither .*/etc/os-release nor .*/usr/lib/os-release is a '
                                                 r'readable regular file.*Nothing was changed'):
        vvp.refuse_coreos(str(root), 'gpu-1')
    (root / 'etc/os-release').mkdir()  # not a regular file
    with pytest.raises(vvp.VfProfileError, match='neither'):
        vvp.installed_files(str(root))
    (root / 'usr/lib/os-release').write_text('ID="rhcos"\nVARIANT_ID=coreos\n')
    with pytest.raises(vvp.VfProfileError, match=r'runs Red Hat CoreOS'):
        vvp.installed_files(str(root))
    (root / 'usr/lib/os-release').write_text('ID=rhel\n')
    assert not vvp.installed_files(str(root))['unit']['exists']
