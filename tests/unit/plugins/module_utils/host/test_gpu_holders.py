# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_holders on /proc trees laid out like procfs, and on this machine's real /proc."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders as gh


def proc_pid(root, pid, cmdline, fds, cgroup):
    base = root / str(pid)
    (base / 'fd').mkdir(parents=True)
    (base / 'cmdline').write_bytes(b'\0'.join(c.encode() for c in cmdline) + b'\0')
    (base / 'comm').write_text(cmdline[0].rsplit('/', 1)[-1] + '\n')
    (base / 'cgroup').write_text(cgroup)
    for i, target in enumerate(fds):
        os.symlink(target, str(base / 'fd' / str(i)))


def test_holders_with_units_and_minors(tmp_path):
    proc = tmp_path / 'proc'
    gpus = proc / 'driver' / 'nvidia' / 'gpus'
    for bdf, minor in (('0000:41:00.0', 0), ('0000:c1:00.0', 1)):
        (gpus / bdf).mkdir(parents=True)
        (gpus / bdf / 'information').write_text('Model: \t\t NVIDIA A10\nDevice Minor: \t %d\n' % minor)
    proc_pid(proc, 1500, ['/usr/bin/nvidia-persistenced', '--user', 'nvidia-persistenced'],
             ['/dev/nvidiactl', '/dev/nvidia0', '/dev/nvidia0', '/dev/null'],
             '0::/system.slice/nvidia-persistenced.service\n')
    proc_pid(proc, 2001, ['python3', 'train.py'], ['/dev/nvidia1', 'socket:[123]'],
             '0::/user.slice/user-1000.slice/session-3.scope\n')
    proc_pid(proc, 2002, ['bash'], ['/dev/pts/0'], '0::/user.slice/user-1000.slice/session-3.scope\n')
    res = gh.scan(str(proc))
    assert res['held'] is True
    assert [(h['pid'], h['device'], h['minor'], h['bdf'], h['unit']) for h in res['holders']] == [
        (1500, '/dev/nvidiactl', None, None, 'nvidia-persistenced.service'),
        (1500, '/dev/nvidia0', 0, '0000:41:00.0', 'nvidia-persistenced.service'),
        (2001, '/dev/nvidia1', 1, '0000:c1:00.0', 'session-3.scope')]
    # named by the executable, never by the command line (its arguments are the process owner's to write)
    assert 'PID 1500 (nvidia-persistenced) holds /dev/nvidia0 (GPU 0000:41:00.0), unit nvidia-persistenced.service' \
        in res['message'].splitlines()
    assert 'PID 2001 (python3) holds /dev/nvidia1 (GPU 0000:c1:00.0), unit session-3.scope' in res['message']
    assert all('command' not in h for h in res['holders']) and 'train.py' not in res['message']
    # only GPU 0000:c1:00.0: its holder plus every control-device holder
    only = gh.scan(str(proc), ['0000:C1:00.0'])
    assert [(h['pid'], h['device']) for h in only['holders']] == [(1500, '/dev/nvidiactl'), (2001, '/dev/nvidia1')]


def test_cgroup_v1_line():
    text = '12:pids:/system.slice/dcgm.service\n1:name=systemd:/system.slice/dcgm.service\n'
    assert gh.unit_from_cgroup(text) == 'dcgm.service'
    assert gh.unit_from_cgroup('0::/\n') is None


def test_this_machine_has_no_holders():
    # no NVIDIA device exists here (the integration test checks lspci agrees): nothing can hold one
    if any(n.startswith('nvidia') for n in os.listdir('/dev')):
        return
    res = gh.scan('/proc')
    assert res['held'] is False and res['holders'] == [] and res['message'].startswith('no process holds')


def test_executable_is_the_basename_of_argv0(tmp_path):
    proc = tmp_path / 'proc'
    proc_pid(proc, 10, ['/usr/bin/nvidia-persistenced', '--user', 'nvidia-persistenced'], ['/dev/nvidia0'], '')
    proc_pid(proc, 11, ['/opt/my tools/dcgm-exporter', '-f', 'x'], ['/dev/nvidia0'], '')
    by_pid = {h['pid']: h for h in gh.scan(str(proc))['holders']}
    assert by_pid[10]['executable'] == 'nvidia-persistenced'
    assert by_pid[11]['executable'] == 'dcgm-exporter'  # a path with a space still gives argv[0]


def test_holder_category_matches_the_executable_exactly(tmp_path):
    # the real daemon's argv[0] is a path with arguments after it: its executable is still nvidia-persistenced
    proc = tmp_path / 'proc'
    proc_pid(proc, 10, ['/usr/bin/nvidia-persistenced', '--user', 'nvidia-persistenced'], ['/dev/nvidia0'], '')
    proc_pid(proc, 11, ['/usr/lib/xorg/Xorg', ':0'], ['/dev/nvidia0'], '')
    proc_pid(proc, 12, ['python3', '/srv/dcgm-exporter-wrapper.py'], ['/dev/nvidia0'], '')
    by_pid = {h['pid']: gh.holder_category(h) for h in gh.scan(str(proc))['holders']}
    assert by_pid == {10: 'persistenced', 11: 'display-manager', 12: 'other'}
    assert gh.holder_category({'executable': 'nv-hostengine'}) == 'dcgm'
    # a name merely containing a known one is something else (a substring match took these for known holders)
    assert gh.holder_category({'executable': 'dcgm-exporter-wrapper.py'}) == 'other'
    assert gh.holder_category({'executable': 'my-gdm-probe', 'unit': 'gdm.service'}) == 'other'
    # the command line is not read: a holder without an executable name is unknown, a hostile name too
    assert gh.holder_category({'command': 'nvidia-persistenced'}) == 'other'
    assert gh.holder_category({'executable': HOSTILE_NAME}) == 'other'
    assert gh.holder_category({}) == 'other'


HOSTILE_CMDLINE = ['/usr/bin/\x1b]0;pwned\x07app\n', '--password=s3cret', "{{ lookup('pipe', 'id') }}",
                   '\x1b[2J\nPID 1 (sshd) holds nothing']


def test_the_command_line_never_reaches_a_result_or_message(tmp_path):
    # any user who may open /dev/nvidiactl (often mode 0666) writes their command line: terminal escapes, a
    # newline that forges a message line, a template, a secret on an option. None of it is returned or shown.
    proc = tmp_path / 'proc'
    proc_pid(proc, 40, HOSTILE_CMDLINE, ['/dev/nvidiactl'], '0::/user.slice/session-3.scope\n')
    proc_pid(proc, 41, ['app', '--password=s3cret', '\x1b[31m{{ x }}\n'], ['/dev/nvidiactl'], '')
    res = gh.scan(str(proc))
    text = repr(res)
    for bad in ('s3cret', '\x1b', '{{', 'pwned', 'sshd', '\\x1b'):
        assert bad not in text and bad not in res['message'], (bad, text)
    assert res['message'].splitlines() == ['PID 40 (?) holds /dev/nvidiactl, unit session-3.scope',
                                           'PID 41 (app) holds /dev/nvidiactl']
    assert [sorted(h) for h in res['holders']] == [['bdf', 'device', 'executable', 'minor', 'pid', 'unit']] * 2


def test_a_message_names_at_most_16_holders(tmp_path):
    proc = tmp_path / 'proc'
    for pid in range(100, 120):
        proc_pid(proc, pid, ['app'], ['/dev/nvidiactl'], '')
    res = gh.scan(str(proc))
    lines = res['message'].splitlines()
    assert len(res['holders']) == 20 and len(lines) == gh.MESSAGE_HOLDERS + 1
    assert lines[0] == 'PID 100 (app) holds /dev/nvidiactl' and lines[-1] == 'and 4 more'


def test_a_gpu_directory_outside_the_pci_grammar_is_no_bdf(tmp_path):
    # the BDF is shown in the message: a copied /proc may name the directory anything
    proc = tmp_path / 'proc'
    info = proc / 'driver' / 'nvidia' / 'gpus' / '{{ x }}'
    info.mkdir(parents=True)
    (info / 'information').write_text('Device Minor: 0\n')
    proc_pid(proc, 50, ['app'], ['/dev/nvidia0'], '')
    res = gh.scan(str(proc))
    assert res['holders'][0]['bdf'] is None and res['message'] == 'PID 50 (app) holds /dev/nvidia0'


HOSTILE_NAME = "{{ lookup('ansible.builtin.pipe', 'touch MARKER') }}"


def test_an_executable_name_outside_the_grammar_is_reported_as_unknown(tmp_path):
    # any user of the host names their process: only a conservative name is passed on (it reaches saved facts)
    proc = tmp_path / 'proc'
    proc_pid(proc, 20, [HOSTILE_NAME, '--x'], ['/dev/nvidia0'], '')
    proc_pid(proc, 21, ['/tmp/a\nb'], ['/dev/nvidia0'], '')
    proc_pid(proc, 22, ['/usr/libexec/gdm-wayland-session', 'x'], ['/dev/nvidia0'], '')
    by_pid = {h['pid']: h for h in gh.scan(str(proc))['holders']}
    assert by_pid[20]['executable'] == '?' and by_pid[21]['executable'] == '?'
    assert by_pid[22]['executable'] == 'gdm-wayland-session'
    assert gh.holder_category(by_pid[20]) == 'other'


def test_a_unit_outside_the_systemd_grammar_is_none():
    # the old suffix search took any path component ending in .service, braces and spaces included
    assert gh.unit_from_cgroup('0::/user.slice/%s.service\n' % HOSTILE_NAME) is None
    assert gh.unit_from_cgroup('0::/system.slice/dev-disk-by\\x2duuid.swap\n') == 'dev-disk-by\\x2duuid.swap'


def test_numbers_are_checked_by_their_digits_before_int(tmp_path):
    proc = tmp_path / 'proc'
    proc_pid(proc, 30, ['app'], ['/dev/nvidia0'], '')
    # str.isdigit() takes '²' for a digit and int() then fails: neither is a pid nor an fd
    (proc / '\u00b2' / 'fd').mkdir(parents=True)
    os.symlink('/dev/nvidia0', str(proc / '30' / 'fd' / '\u00b2'))
    res = gh.scan(str(proc))
    assert [(h['pid'], h['device']) for h in res['holders']] == [(30, '/dev/nvidia0')]
    # int() of more than 4300 digits raises its own error naming nothing: the file is named instead
    info = proc / 'driver' / 'nvidia' / 'gpus' / '0000:41:00.0'
    info.mkdir(parents=True)
    (info / 'information').write_text('Device Minor: \t %s\n' % ('9' * 5000))
    with pytest.raises(gh.HoldersError) as err:
        gh.scan(str(proc))
    assert str(info / 'information') in str(err.value) and 'Device Minor' in str(err.value)
