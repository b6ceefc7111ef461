# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_vf role's boot-time restore script, against the driver stand-in (tests/unit/vf_driver.py) standing for
a host just rebooted: no VFs, no profiles. Its one writer (``write``) is the stand-in's, as for the module."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
import time

import pytest

from vf_driver import VfBoard

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, '..', '..', '..', 'roles', 'vgpu_vf', 'files', 'gpuvirt_vgpu_vf_restore.py')
PF = '0000:41:00.0'
VF0, VF1 = '0000:41:00.4', '0000:41:00.5'


@pytest.fixture
def restore(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location('gpuvirt_vgpu_vf_restore', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, 'POLL', 0.01)
    # never a crictl of the machine running the tests: the tests that want one give their stand-in (FakeCrictl)
    monkeypatch.setattr(module, 'CRICTL', (str(tmp_path / 'no-crictl'),))
    return module


def _config(tmp_path, board, vfs=None, **over):
    data = {'version': 1, 'sysfs_root': board.root, 'sriov_manage': str(tmp_path / 'no-sriov-manage'),
            'timeout': 10, 'gpus': [{'pf': PF, 'vfs': vfs or {VF0: 1155, VF1: 1155}}],
            'types': {'1155': 'NVIDIA L40S-24Q'}}
    data.update(over)
    path = tmp_path / 'config.json'
    path.write_text(json.dumps(data))
    return str(path)


class Container(object):
    """The GPU Operator's vGPU Manager container on the stand-in, as NVIDIA/gpu-driver-container
    vgpu-manager/rhel9/nvidia-driver (main @ 06a208ca) runs it: the driver is loaded (the PF's driver link and
    sriov_numvfs, reading 0, are there from ``modprobe nvidia``), then ``_enable_vfs`` sleeps
    DELAY_BEFORE_VF_CREATION and runs ``sriov-manage -e ALL``. Its write to sriov_numvfs fails where someone else
    enabled the VFs first (the kernel refuses a new count while VFs exist: drivers/pci/iov.c sriov_numvfs_store,
    EBUSY), and under ``set -e`` the container's EXIT trap (``_shutdown``) then disables the VFs. ``files_delay``
    holds each VF's nvidia/ files back after the VFs appear (nvidia-vgpud fills them in)."""

    def __init__(self, board, pf=PF, delay=0.3, files_delay=0.0):
        self.board, self.pf, self.failed = board, pf, False
        self.thread = threading.Thread(target=self._run, args=(delay, files_delay))

    def _run(self, delay, files_delay):
        time.sleep(delay)
        if self.board.vfs[self.pf]:
            self.failed = True  # sriov-manage -e ALL fails: _shutdown disables the VFs
            self.board.tree.write(os.path.join(self.board._rel(self.pf), 'sriov_numvfs'), '0\n')
            return
        refresh = self.board.refresh
        self.board.refresh = lambda: None
        try:
            self.board._enable(self.pf)
        finally:
            self.board.refresh = refresh
        time.sleep(files_delay)
        self.board.refresh()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.thread.join()


def test_after_a_reboot_the_container_enables_the_vfs_and_the_profiles_come_back(
        tmp_path, restore, monkeypatch, capsys):
    # no sriov-manage on the host (the container has its own): the VFs appear 0.3 s in, their nvidia/ files 0.2 s
    # later; the script waits for both and never writes sriov_numvfs itself
    board = VfBoard(tmp_path / 'sys', enabled=False)
    monkeypatch.setattr(restore, 'write', board.writer)
    reads = []
    real_read = restore.read
    monkeypatch.setattr(restore, 'read', lambda path: reads.append(path) or real_read(path))
    with Container(board, files_delay=0.2) as container:
        rc = restore.main(['restore', _config(tmp_path, board)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert not container.failed
    assert [rel for rel, dummy in board.writes if rel.endswith('sriov_numvfs')] == [] and board.refused == []
    assert [board.current[vf] for vf in (VF0, VF1)] == [1155, 1155]
    numvfs = os.path.join(board.root, 'bus', 'pci', 'devices', PF, 'sriov_numvfs')
    assert reads.count(numvfs) > 2  # it polled: the VFs were not there at its first look
    assert ('<6>GPU %s: no executable %s on this host; waiting up to 10s for the vGPU Manager container to enable the VFs '
            '(sriov_numvfs reads 0)\n' % (PF, tmp_path / 'no-sriov-manage')) in out
    assert re.search(r'<6>GPU %s: 4 VFs enabled after [0-9.]+s\n' % PF, out)
    assert '<6>VF %s got NVIDIA L40S-24Q (1155)\n' % VF0 in out
    # a second start (systemctl restart) changes nothing
    writes = list(board.writes)
    assert restore.main(['restore', _config(tmp_path, board)]) == 0
    assert board.writes == writes and '<6>VF %s already on NVIDIA L40S-24Q (1155)' % VF0 in capsys.readouterr().out


def test_vfs_the_container_never_enables_fail_the_run_for_a_restart(tmp_path, restore, monkeypatch, capsys):
    # exit 1, so that Restart=on-failure starts it again (unit_text); nothing written meanwhile
    board = VfBoard(tmp_path / 'sys', enabled=False)
    monkeypatch.setattr(restore, 'write', board.writer)
    cfg = restore.load(_config(tmp_path, board))
    assert restore.restore_gpu(cfg, PF, cfg['gpus'][0][1], time.monotonic() + 0.2) == 2
    assert board.writes == [] and board.vfs[PF] == []
    assert ("<3>GPU %s: timed out after 10s waiting for its VFs (sriov_numvfs still reads 0); is the GPU Operator's "
            "vGPU Manager running on this node? Nothing restored on it" % PF) in capsys.readouterr().out


def _restore_while(tmp_path, restore, monkeypatch, sys_dir, appear):
    """Run the restore while ``appear()`` (in a thread, 0.3 s in) lays out the stand-in under ``sys_dir`` and
    returns its board, as the driver (or the lab's stand-in) appears during boot: (rc, [board])."""
    boards = []

    def later():
        time.sleep(0.3)
        boards.append(appear())

    def write(path, value):
        while not boards:  # the files can be seen while the stand-in is still being built
            time.sleep(0.01)
        boards[0].writer(path, value)

    monkeypatch.setattr(restore, 'write', write)
    data = {'version': 1, 'sysfs_root': str(sys_dir), 'sriov_manage': str(tmp_path / 'no-sriov-manage'),
            'timeout': 10, 'gpus': [{'pf': PF, 'vfs': {VF0: 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}
    (tmp_path / 'config.json').write_text(json.dumps(data))
    thread = threading.Thread(target=later)
    thread.start()
    try:
        return restore.main(['restore', str(tmp_path / 'config.json')]), boards
    finally:
        thread.join()


def test_a_driver_that_loads_later_is_waited_for_and_said_so(tmp_path, restore, monkeypatch, capsys):
    # the driver (the stand-in) appears 0.3 s after the script started, as the vGPU Manager loads during boot; the
    # VM lab (molecule/vm) checks the same lines in the guest's journal after its real reboot
    sys_dir = tmp_path / 'sys'
    sys_dir.mkdir()
    rc, boards = _restore_while(tmp_path, restore, monkeypatch, sys_dir, lambda: VfBoard(sys_dir))
    assert rc == 0
    assert boards[0].current[VF0] == 1155
    lines = capsys.readouterr().out.splitlines()
    pf_dir = os.path.join(str(sys_dir), 'bus', 'pci', 'devices', PF)
    assert lines[0] == ('<6>GPU %s: waiting up to 10s for %s, %s (the driver is not loaded yet)'
                        % (PF, os.path.join(pf_dir, 'sriov_numvfs'), os.path.join(pf_dir, 'driver')))
    assert re.fullmatch(r"<6>GPU %s: the driver's files appeared after 0\.[3-9]s|<6>GPU %s: the driver's files "
                        r"appeared after [1-9][0-9]*\.[0-9]s" % (PF, PF), lines[1])
    assert lines[-3:-1] == ['<6>VF %s got NVIDIA L40S-24Q (1155)' % VF0, '<6>vGPU profiles restored on 1 GPU(s)']
    # then virt-handler's restart (no crictl here: the line saying what to do)
    assert lines[-1].startswith('<4>1 VF profile(s) changed on this node'), lines


def _late_root(tmp_path, restore, monkeypatch, mode):
    """The sysfs root itself appears 0.3 s in (the lab's stand-in appears after boot), with ``mode``."""
    sys_dir = tmp_path / 'late-sys'

    def appear():
        sys_dir.mkdir()
        os.chmod(str(sys_dir), mode)
        return VfBoard(sys_dir)

    return _restore_while(tmp_path, restore, monkeypatch, sys_dir, appear)


def test_a_sysfs_root_that_appears_after_boot_is_waited_for_then_checked(tmp_path, restore, monkeypatch, capsys):
    rc, boards = _late_root(tmp_path, restore, monkeypatch, 0o755)
    assert rc == 0 and boards[0].current[VF0] == 1155, capsys.readouterr().out
    # the same root appearing world-writable is refused before any write
    second = tmp_path / 'second'
    second.mkdir()
    rc, boards = _late_root(second, restore, monkeypatch, 0o777)
    out = capsys.readouterr().out
    assert rc == 1 and boards[0].writes == [] and 'group- or world-writable' in out, out


def test_sriov_manage_is_run_with_the_pf_as_argv(tmp_path, restore, monkeypatch):
    board = VfBoard(tmp_path / 'sys')
    (tmp_path / 'sys' / os.path.relpath(os.path.realpath(os.path.join(board.root, 'bus/pci/devices', PF)),
                                        board.root) / 'sriov_numvfs').write_text('0\n')
    script = tmp_path / 'sriov-manage'
    script.write_text('#!/bin/sh\nprintf "%%s|" "$@" > %s/argv\n' % tmp_path)
    script.chmod(0o755)
    monkeypatch.setattr(restore, 'write', board.writer)
    # EL8 runs the script with its /usr/bin/python3, 3.6 (no 3.6 here): subprocess.run there takes no capture_output=
    # and no text= (both "Changed in version 3.7", docs.python.org subprocess.run), so any other keyword fails it
    real_run = restore.subprocess.run
    py36 = {'stdin', 'input', 'stdout', 'stderr', 'shell', 'cwd', 'timeout', 'check', 'encoding', 'errors', 'env',
            'universal_newlines'}

    def run_36(argv, **kw):
        if set(kw) - py36:
            raise TypeError('__init__() got an unexpected keyword argument %r' % sorted(set(kw) - py36)[0])
        return real_run(argv, **kw)
    monkeypatch.setattr(restore.subprocess, 'run', run_36)
    assert restore.main(['restore', _config(tmp_path, board, sriov_manage=str(script))]) == 0
    assert (tmp_path / 'argv').read_text() == '-e|%s|' % PF


def test_a_driver_that_never_comes_is_a_journal_error_after_the_timeout(tmp_path, restore, capsys):
    board = VfBoard(tmp_path / 'sys', pfs=('0000:c1:00.0',))
    cfg = restore.load(_config(tmp_path, board))
    start = time.monotonic()
    assert restore.restore_gpu(cfg, PF, cfg['gpus'][0][1], time.monotonic() + 0.2) == 2
    assert time.monotonic() - start >= 0.2
    numvfs = os.path.join(board.root, 'bus/pci/devices', PF, 'sriov_numvfs')
    assert '<3>GPU %s: timed out after 10s waiting for %s' % (PF, numvfs) in capsys.readouterr().out


def test_a_vf_someone_else_set_is_left_alone(tmp_path, restore, monkeypatch, capsys):
    board = VfBoard(tmp_path / 'sys')
    board.set(VF0, 1153)
    monkeypatch.setattr(restore, 'write', board.writer)
    assert restore.main(['restore', _config(tmp_path, board, vfs={VF0: 1155})]) == 1
    assert board.current[VF0] == 1153
    assert "<4>VF %s holds type '1153', not NVIDIA L40S-24Q (1155): left alone" % VF0 in capsys.readouterr().out


@pytest.mark.parametrize('over,message', [
    ({'gpus': [{'pf': PF, 'vfs': {VF0 + '\n': 1155}}]}, 'is not <VF PCI address>'),
    ({'gpus': [{'pf': '../../etc', 'vfs': {}}]}, 'is not {pf: <PCI address>'),
    ({'sysfs_root': '/sys/../etc'}, 'sysfs_root is'),
    ({'sriov_manage': 'sriov-manage'}, 'sriov_manage is'),
    ({'timeout': 10 ** 6}, 'timeout is'),
])
def test_a_config_outside_its_grammar_is_refused_before_anything(tmp_path, restore, monkeypatch, capsys,
                                                                 over, message):
    board = VfBoard(tmp_path / 'sys', enabled=False)
    monkeypatch.setattr(restore, 'write', board.writer)
    assert restore.main(['restore', _config(tmp_path, board, **over)]) == 2
    assert message in capsys.readouterr().out and board.writes == []


@pytest.mark.parametrize('content', ['[' * 100000 + ']' * 100000, '{"version": 1, "timeout": 10, "gpus": 5}',
                                     'fifo', 'x' * (1024 * 1024 + 1)])
def test_a_config_that_is_deep_mistyped_special_or_huge_exits_2(tmp_path, restore, capsys, content):
    path = tmp_path / 'config.json'
    if content == 'fifo':
        os.mkfifo(str(path))  # an open without O_NONBLOCK would block here for ever
    else:
        path.write_text(content)
    assert restore.main(['restore', str(path)]) == 2
    assert capsys.readouterr().out.startswith('<3>')


# KubeVirt's virt-handler after a restore -------------------------------------------------------------------------
# What it does upstream (kubevirt v1.9.0, the first release that takes an NVIDIA VF, and main since, unchanged):
# pkg/virt-handler/device-manager/device_controller.go Run calls refreshPermittedDevices once at start and then only
# from the KubeVirt config-change callback; pci_device.go discoverPermittedHostPCIDevices + nvidia.go
# shouldPermitNvidia take a VF on the nvidia driver only while its nvidia/current_vgpu_type is non-zero; and
# splitPermittedDevices never restarts a plugin already running under a resource name, so its devices are fixed at
# its start. heartbeat.go re-runs the discovery only through RefreshMediatedDeviceTypes, which does nothing while
# KubeVirt's mdev handling is off (as the collection sets it). So profiles written after virt-handler started reach
# KubeVirt only through a new virt-handler: the script stops its container (the kubelet starts it again).
CID = 'a3f1c2d4e5b6978812345678abcdef0123456789abcdef0123456789abcdef01'


class FakeCrictl(object):
    """A stand-in for crictl (no container runtime runs here): an executable at a root-owned path that records its
    argv, prints ``ps_out`` for ``ps`` and exits ``stop_rc`` for ``stop``."""

    def __init__(self, tmp_path, ps_out=CID + '\n', ps_rc=0, stop_rc=0):
        self.path, self.log = tmp_path / 'bin' / 'crictl', tmp_path / 'crictl.log'
        self.path.parent.mkdir()
        (tmp_path / 'ps.out').write_text(ps_out)
        self.path.write_text('#!/bin/sh\nprintf "%%s " "$@" >> %s\necho >> %s\n'
                             'case "$1" in ps) cat %s; exit %d;; stop) exit %d;; esac\nexit 9\n'
                             % (self.log, self.log, tmp_path / 'ps.out', ps_rc, stop_rc))
        self.path.chmod(0o755)

    def calls(self):
        return [line.strip() for line in self.log.read_text().splitlines()] if self.log.exists() else []


PS_CALL = 'ps --quiet --state running --label io.kubernetes.container.name=virt-handler --label io.kubernetes.pod.namespace='
# one list per namespace KubeVirt runs in: a container named virt-handler elsewhere is a tenant's, never stopped
PS_CALLS = [PS_CALL + ns for ns in ('kubevirt', 'openshift-cnv', 'kubevirt-hyperconverged')]


def _crictl(tmp_path, restore, monkeypatch, **kw):
    fake = FakeCrictl(tmp_path, **kw)
    monkeypatch.setattr(restore, 'CRICTL', (str(tmp_path / 'absent' / 'crictl'), str(fake.path)))
    return fake


def test_a_restore_that_set_profiles_stops_virt_handler_so_it_finds_the_vfs(tmp_path, restore, monkeypatch, capsys):
    board = VfBoard(tmp_path / 'sys')
    monkeypatch.setattr(restore, 'write', board.writer)
    fake = _crictl(tmp_path, restore, monkeypatch)
    assert restore.main(['restore', _config(tmp_path, board)]) == 0
    out = capsys.readouterr().out
    assert [board.current[vf] for vf in (VF0, VF1)] == [1155, 1155]
    # the container of virt-handler listed by the kubelet's container-name label, then stopped with a grace
    assert fake.calls() == PS_CALLS + ['stop --timeout 20 %s' % CID], out
    assert ("<6>2 VF profile(s) changed on this node; KubeVirt finds VFs only when its virt-handler starts: stopped "
            "its container %s with %s; the kubelet starts it again\n" % (CID[:13], fake.path)) in out
    # a second start finds every profile in place, writes nothing, and leaves virt-handler alone
    assert restore.main(['restore', _config(tmp_path, board)]) == 0
    assert fake.calls() == PS_CALLS + ['stop --timeout 20 %s' % CID]


def test_a_failed_restore_that_set_one_profile_still_stops_virt_handler(tmp_path, restore, monkeypatch, capsys):
    board = VfBoard(tmp_path / 'sys')
    monkeypatch.setattr(restore, 'write', board.writer)
    fake = _crictl(tmp_path, restore, monkeypatch)
    # VF0 gets its L40S-24Q; VF1's L40S-12Q (1153) is no longer creatable beside it (exit 1, retried by systemd):
    # KubeVirt must see VF0 now
    vfs = {VF0: 1155, VF1: 1153}
    assert restore.main(['restore', _config(tmp_path, board, vfs=vfs, types={'1155': 'NVIDIA L40S-24Q'})]) == 1
    assert board.current[VF0] == 1155
    assert fake.calls() == PS_CALLS + ['stop --timeout 20 %s' % CID], capsys.readouterr().out


def test_without_crictl_the_journal_says_how_to_restart_virt_handler_and_the_exit_is_the_restores(
        tmp_path, restore, monkeypatch, capsys):
    board = VfBoard(tmp_path / 'sys')
    monkeypatch.setattr(restore, 'write', board.writer)
    assert restore.main(['restore', _config(tmp_path, board)]) == 0
    out = capsys.readouterr().out
    assert ("<4>2 VF profile(s) changed on this node; KubeVirt finds VFs only when its virt-handler starts, and there "
            "is no crictl (%s) to restart it: restart virt-handler on this node (kubectl -n <KubeVirt namespace: "
            "kubevirt, or openshift-cnv> delete pod -l kubevirt.io=virt-handler --field-selector "
            "spec.nodeName=<this node>), or install cri-tools\n" % (tmp_path / 'no-crictl')) in out, out


@pytest.mark.parametrize('ps_out,ps_rc,stop_rc,calls,line', [
    # no virt-handler yet (the kubelet not started): the one that starts later finds the profiles
    # two containers of that name in KubeVirt's namespaces (one per node is virt-handler's): none stopped
    (CID + '\n' + CID[::-1] + '\n', 0, 0, PS_CALLS,
     '2 containers named virt-handler run in kubevirt, openshift-cnv, kubevirt-hyperconverged: nothing stopped; '
     'restart virt-handler'),
    ('', 0, 0, PS_CALLS,
     '<6>1 VF profile(s) changed on this node; KubeVirt finds VFs only when its virt-handler starts; no virt-handler '
     'container runs on this node yet'),
    # what crictl prints is never passed on unless it is a container id
    (CID + '\n--all\n', 0, 0, PS_CALLS[:1], "printed '--all', not container ids: nothing stopped"),
    ('$(reboot)\n', 0, 0, PS_CALLS[:1], "printed '$(reboot)', not container ids: nothing stopped"),
    (CID + '\n', 1, 0, PS_CALLS[:1], 'ps failed (%s): restart virt-handler on this node' % CID),
    (CID + '\n', 0, 1, PS_CALLS + ['stop --timeout 20 ' + CID], 'stop %s failed (rc 1): restart virt-handler' % CID),
])
def test_what_crictl_answers_decides_what_is_stopped_and_never_fails_the_restore(
        tmp_path, restore, monkeypatch, capsys, ps_out, ps_rc, stop_rc, calls, line):
    board = VfBoard(tmp_path / 'sys')
    monkeypatch.setattr(restore, 'write', board.writer)
    fake = _crictl(tmp_path, restore, monkeypatch, ps_out=ps_out, ps_rc=ps_rc, stop_rc=stop_rc)
    assert restore.main(['restore', _config(tmp_path, board, vfs={VF0: 1155})]) == 0
    out = capsys.readouterr().out
    assert fake.calls() == calls and line in out, out


def test_what_crictl_says_on_failure_reaches_the_journal_as_one_line_without_control_characters(
        tmp_path, restore, monkeypatch, capsys):
    # a forged journal line (<6>...) or a terminal escape in another program's output must not reach the journal as
    # such (docs/security.md, "Logs and messages")
    board = VfBoard(tmp_path / 'sys')
    monkeypatch.setattr(restore, 'write', board.writer)
    fake = _crictl(tmp_path, restore, monkeypatch, stop_rc=1)
    fake.path.write_text(fake.path.read_text().replace(
        'stop) exit 1', "stop) printf 'boom\\033[2J\\n<6>vGPU profiles restored on 9 GPU(s)\\n' >&2; exit 1"))
    assert restore.main(['restore', _config(tmp_path, board, vfs={VF0: 1155})]) == 0
    out = capsys.readouterr().out
    assert 'stop %s failed (boom?[2J): restart virt-handler' % CID in out, out
    assert '\n<6>vGPU profiles restored on 9' not in out and '\x1b' not in out, out


def test_a_crictl_others_could_change_is_not_run(tmp_path, restore, monkeypatch, capsys):
    board = VfBoard(tmp_path / 'sys')
    monkeypatch.setattr(restore, 'write', board.writer)
    fake = _crictl(tmp_path, restore, monkeypatch)
    fake.path.chmod(0o777)
    assert restore.main(['restore', _config(tmp_path, board, vfs={VF0: 1155})]) == 0
    out = capsys.readouterr().out
    assert fake.calls() == [] and 'group- or world-writable' in out and 'not run; restart virt-handler' in out, out


def test_the_roles_restart_mode_stops_virt_handler_for_the_vfs_it_names_and_refuses_anything_else(
        tmp_path, restore, monkeypatch, capsys):
    fake = _crictl(tmp_path, restore, monkeypatch)
    assert restore.main(['restore', '--restart-virt-handler', VF0, VF1]) == 0
    assert fake.calls() == PS_CALLS + ['stop --timeout 20 %s' % CID]
    assert '<6>2 VF profile(s) changed on this node' in capsys.readouterr().out
    for bad in (['--restart-virt-handler', '0000:41:00.4;reboot'], ['--restart-virt-handler', '--all']):
        assert restore.main(['restore'] + bad) == 2
    assert fake.calls() == PS_CALLS + ['stop --timeout 20 %s' % CID]


def test_every_subprocess_call_keeps_to_python_36_keywords():
    # EL8 runs the script with its /usr/bin/python3, 3.6: subprocess.run there takes no capture_output= and no text=
    # (both "Changed in version 3.7", docs.python.org subprocess.run). The test above runs one call path; this reads
    # every call in the file, so a new one (such as the virt-handler restart's) cannot slip back to 3.7 keywords.
    import ast
    py36 = {'stdin', 'input', 'stdout', 'stderr', 'shell', 'cwd', 'timeout', 'check', 'encoding', 'errors', 'env',
            'universal_newlines'}
    with open(SCRIPT) as f:
        tree = ast.parse(f.read())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr in ('run', 'Popen', 'check_output', 'check_call', 'call')
             and isinstance(n.func.value, ast.Name) and n.func.value.id == 'subprocess']
    assert len(calls) >= 2, calls
    for call in calls:
        assert {k.arg for k in call.keywords} <= py36, (call.lineno, [k.arg for k in call.keywords])
