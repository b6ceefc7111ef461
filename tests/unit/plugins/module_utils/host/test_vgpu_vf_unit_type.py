# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boot-time unit's two forms and the choice between them: the host's systemd version read from
``systemctl --version`` (host output, parsed by its grammar), oneshot from 245 on, forking before; each form's whole
text; and both checked by the real ``systemd-analyze verify`` of this machine."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp

FINALS = dict(vvp.INSTALLED)


def _unit(unit_type, timeout=300):
    return vvp.unit_text(FINALS['unit'], FINALS['script'], FINALS['config'], '/usr/bin/python3', timeout,
                         on_host=False, unit_type=unit_type)


# first lines as systemctl prints them: "systemd " PROJECT_VERSION " (" GIT_VERSION ")" (systemd src/basic/util.c,
# version()); EL8 (239), EL9 and RHCOS (252), Ubuntu 20.04 (245), Debian 12 (252), an -rc and a point release
@pytest.mark.parametrize('line, version', [
    ('systemd 239 (239-78.el8)', 239),
    ('systemd 252 (252.17-1.el9)', 252),
    ('systemd 245 (245.4-4ubuntu3.22)', 245),
    ('systemd 252 (252.38-1~deb12u1)', 252),
    ('systemd 256~rc3 (256~rc3-1.fc41)', 256),
    ('systemd 257.1 (257.1-1-arch)', 257),
    ('systemd 219', 219),
])
def test_the_version_is_read_from_the_first_line_alone(line, version):
    assert vvp.systemd_version(line + '\n+PAM +AUDIT -APPARMOR default-hierarchy=unified\n', 'host gpu1') == version


def test_this_machine_s_own_systemctl_reads():
    systemctl = shutil.which('systemctl')
    if systemctl is None:
        pytest.skip('no systemctl here')
    out = subprocess.run([systemctl, '--version'], capture_output=True, text=True, check=True).stdout
    assert vvp.systemd_version(out, 'host here') >= 1


@pytest.mark.parametrize('output', [
    '', '\n', 'systemd', 'systemd 252(252.1)', ' systemd 252 (252.1)', 'systemd 252 (252.1) ', 'Systemd 252',
    'systemd -1', 'systemd 0', 'systemd 99999 (x)', 'systemd 252 (a b)', 'systemd 252 ($(reboot))',
    'systemd 252 (252.1)\x1b[2J', 'systemd 252 (252.1)\r', 'warning: running in chroot\nsystemd 252 (252.1)',
    'systemd 25２ (252.1)', 'x' * 5000,
])
def test_output_that_does_not_read_as_a_version_is_refused_naming_the_host_and_the_line(output):
    with pytest.raises(vvp.VfProfileError) as err:
        vvp.systemd_version(output, 'host gpu1')
    msg = str(err.value)
    assert msg.startswith('host gpu1: systemctl --version printed ') and 'vgpu_vf_unit_type' in msg
    assert repr(output.split('\n', 1)[0])[:80] in msg and len(msg) < 600


@pytest.mark.parametrize('version, form', [(219, 'forking'), (239, 'forking'), (244, 'forking'), (245, 'oneshot'),
                                           (252, 'oneshot'), (257, 'oneshot')])
def test_oneshot_from_245_on_forking_before(version, form):
    # Restart= other than no on Type=oneshot: refused before 245 (systemd 239 of EL8, redhat-plumbers/systemd-rhel8
    # src/core/service.c service_verify: "Service has Restart= setting other than no, which isn't allowed for
    # Type=oneshot services. Refusing."), allowed from 245 (commit 10e7272, "allow Restart= for oneshot units")
    assert vvp.unit_type_for(version) == form


@pytest.mark.parametrize('value', [None, 0, -1, True, '252', 2.5])
def test_a_version_that_is_no_whole_number_is_refused(value):
    with pytest.raises(vvp.VfProfileError, match='the systemd version is'):
        vvp.unit_type_for(value)


COMMON_HEAD = (
    '# Managed by gpuvirt.provision (vgpu_vf role).\n'
    '[Unit]\n'
    'Description=Re-create NVIDIA vGPU VFs and their profiles (gpuvirt.provision)\n'
    'After=systemd-modules-load.service nvidia-vgpu-mgr.service nvidia-vgpud.service\n'
    'ConditionPathExists=/etc/gpuvirt/vgpu-vf-profiles.json\n'
    # no start limit: systemd.unit(5), StartLimitIntervalSec= "set it to 0 to disable any kind of rate limiting"
    'StartLimitIntervalSec=0\n'
    '\n'
    '[Service]\n'
)
COMMON_TAIL = (
    'RemainAfterExit=yes\n'
    'ExecStart=/usr/bin/python3 /usr/local/libexec/gpuvirt/vgpu-vf-restore /etc/gpuvirt/vgpu-vf-profiles.json\n'
    'TimeoutStartSec=360\n'
    'Restart=on-failure\n'
    'RestartSec=30\n'
    '\n'
    '[Install]\n'
    'WantedBy=multi-user.target\n'
)


def test_the_oneshot_form_whole():
    # systemd.service(5): Type=oneshot, "the service manager will consider the unit up after the main process
    # exits"; Restart=on-failure allowed on it from systemd 245 (commit 10e7272)
    assert _unit('oneshot') == COMMON_HEAD + 'Type=oneshot\n' + COMMON_TAIL


def test_the_forking_form_whole():
    # systemd 239 (redhat-plumbers/systemd-rhel8 src/core/service.c): service_enter_start runs ExecStart= of a
    # forking service as its control process and stays in "start" (the start job waiting) until it exits, under
    # TimeoutStartSec= as a oneshot's; on a non-zero exit service_sigchld_event enters service_enter_signal, then
    # service_enter_dead, which arms RestartSec= and enters auto-restart (Restart=on-failure, service_shall_restart);
    # on exit 0, with no PIDFile= and GuessMainPID=no no main PID is taken, and service_enter_running leaves an
    # empty cgroup with RemainAfterExit=yes "active (exited)"
    assert _unit('forking') == COMMON_HEAD + 'Type=forking\nGuessMainPID=no\n' + COMMON_TAIL


@pytest.mark.parametrize('value', ['auto', 'simple', 'Oneshot', '', None, 'oneshot\nExecStartPre=/bin/sh'])
def test_a_form_that_is_not_one_of_the_two_is_refused(value):
    with pytest.raises(vvp.VfProfileError, match='unit_type is'):
        _unit(value)


def _verify(tmp_path, text):
    path = tmp_path / 'gpuvirt-vgpu-vf.service'
    path.write_text(text)
    return subprocess.run(['systemd-analyze', 'verify', str(path)], capture_output=True, text=True, check=False,
                          timeout=60)


@pytest.mark.skipif(shutil.which('systemd-analyze') is None, reason='no systemd-analyze here')
@pytest.mark.parametrize('unit_type', vvp.UNIT_TYPES)
def test_both_forms_pass_this_machine_s_systemd_analyze_verify_without_a_word(tmp_path, unit_type):
    # This machine's systemd (Debian 12: 252) checks the syntax and the service rules of its own version: an unknown
    # key only prints a warning (exit 0), so the output must be empty too. It cannot judge 239's rules; the forking
    # form uses only settings 239 has (Type=forking, GuessMainPID=, RemainAfterExit=, Restart=, RestartSec=,
    # TimeoutStartSec=, and StartLimitIntervalSec= in [Unit]: redhat-plumbers/systemd-rhel8
    # src/core/load-fragment-gperf.gperf.m4).
    done = _verify(tmp_path, _unit(unit_type))
    assert done.returncode == 0 and done.stdout == '' and done.stderr == '', done


@pytest.mark.skipif(shutil.which('systemd-analyze') is None, reason='no systemd-analyze here')
def test_systemd_analyze_verify_here_refuses_a_oneshot_rule_it_has(tmp_path):
    # the check above has teeth: the rule 252 keeps for oneshot (no Restart=always; src/core/service.c
    # service_verify) fails verify, as 239's wider rule fails the oneshot form there
    done = _verify(tmp_path, _unit('oneshot').replace('Restart=on-failure', 'Restart=always'))
    assert done.returncode != 0 and "isn't allowed for Type=oneshot services" in done.stderr, done
