# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kernel_cmdline module: drives main() on files in a temporary directory."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

import json
import os

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record
from ansible_collections.gpuvirt.provision.plugins.modules import kernel_cmdline

from .harness import run_module

OFF = 'BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=c2e9 ro console=ttyS0,115200n8 intel_iommu=off quiet\n'
ON = 'BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=c2e9 ro console=ttyS0,115200n8 quiet intel_iommu=on iommu=pt\n'


def run(monkeypatch, args, commands=None, rc=0, **modes):
    """Run the module with ``args``; return its JSON result. ``commands`` collects run_command argv.

    run_command is always stubbed (answering ``rc``): update-grub and grub2-mkconfig would rewrite the boot
    configuration of the machine running the tests. ``modes``: check, diff.
    """
    return run_module(monkeypatch, kernel_cmdline, args, commands=[] if commands is None else commands, rc=rc,
                      bin_path=lambda name: '/usr/sbin/' + name, **modes)


@pytest.fixture(autouse=True)
def record_path(monkeypatch, tmp_path):
    """The ownership record under the test's directory: the module's default is the host's /var/lib one."""
    path = str(tmp_path / 'var' / 'lib' / 'gpuvirt-provision' / 'host-state.json')
    monkeypatch.setattr(host_record, 'DEFAULT_PATH', path)
    return path


@pytest.fixture
def host(tmp_path):
    (tmp_path / 'cmdline').write_text(OFF)
    return tmp_path


def dropin_args(host, **kw):
    base = dict(args=['intel_iommu=on', 'iommu=pt'], backend='grub_dropin',
                dropin_path=str(host / 'grub.d' / '90-gpuvirt.cfg'), proc_cmdline=str(host / 'cmdline'))
    base.update(kw)
    return base


def test_check_mode_changes_nothing(monkeypatch, host):
    cmds = []
    res = run(monkeypatch, dropin_args(host), cmds, check=True, diff=True)
    assert res['changed'] and res['reboot_required'] and not res['failed']
    assert res['commands'] == [['/usr/sbin/update-grub']] and cmds == []
    assert 'intel_iommu=on iommu=pt' in res['diff']['after']
    assert not (host / 'grub.d').exists()


def test_writes_then_idempotent(monkeypatch, host):
    cmds = []
    res = run(monkeypatch, dropin_args(host), cmds)
    assert res['changed'] and res['bootloader_updated'] and cmds == [['/usr/sbin/update-grub']]
    assert res['missing'] == ['intel_iommu=on', 'iommu=pt'] and res['unwanted'] == ['intel_iommu=off']
    cmds = []
    res = run(monkeypatch, dropin_args(host), cmds)
    assert not res['changed'] and cmds == []
    assert res['reboot_required']  # still pending until the host boots the new command line


def test_after_reboot_nothing_pending(monkeypatch, host):
    run(monkeypatch, dropin_args(host))
    (host / 'cmdline').write_text(ON)
    res = run(monkeypatch, dropin_args(host))
    assert not res['changed'] and not res['reboot_required'] and res['missing'] == []


def test_failed_update_grub_restores_file(monkeypatch, host):
    path = host / 'grub.d' / '90-gpuvirt.cfg'
    path.parent.mkdir()
    path.write_text('old\n')
    res = run(monkeypatch, dropin_args(host), rc=1)
    assert res['failed'] and 'update-grub failed' in res['msg']
    assert path.read_text() == 'old\n'
    res = run(monkeypatch, dropin_args(host), rc=1)  # retried, not "no change"
    assert res['failed']


def test_bad_arg_fails_before_change(monkeypatch, host):
    res = run(monkeypatch, dropin_args(host, args=['intel_iommu=on', 'x=$(reboot)']))
    assert res['failed'] and "'x=$(reboot)'" in res['msg']
    assert not (host / 'grub.d').exists()


def test_grub_default_backend(monkeypatch, host):
    grub = host / 'grub'
    grub.write_text('GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb quiet"\n')
    cmds = []
    res = run(monkeypatch, dict(args=['intel_iommu=on'], backend='grub_default', grub_default_path=str(grub),
                                grub_config='/boot/grub2/grub.cfg', proc_cmdline=str(host / 'cmdline'),
                                _ansible_tmpdir=str(host)), cmds)
    assert res['changed'] and cmds == [['/usr/sbin/grub2-mkconfig', '-o', '/boot/grub2/grub.cfg']]
    assert grub.read_text() == 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb quiet intel_iommu=on"\n'


def test_backend_none_only_compares(monkeypatch, host):
    (host / 'cmdline').write_text(ON)
    res = run(monkeypatch, dict(args=['intel_iommu=on', 'iommu=pt'], backend='none', proc_cmdline=str(host / 'cmdline')))
    assert not res['changed'] and not res['reboot_required'] and res['commands'] == []


def grub_args(host, **kw):
    base = dict(args=['intel_iommu=on', 'iommu=pt'], backend='grub_default', grub_default_path=str(host / 'grub'),
                grub_config='/boot/grub2/grub.cfg', proc_cmdline=str(host / 'cmdline'), _ansible_tmpdir=str(host))
    base.update(kw)
    return base


ROOT = 'rd.lvm.lv=rhel/root crashkernel=auto'


@pytest.mark.parametrize('text, line', [
    ('GRUB_TIMEOUT=5; GRUB_CMDLINE_LINUX="%s"\n' % ROOT, 1),
    ('GRUB_TIMEOUT=5 \\\n  GRUB_CMDLINE_LINUX="%s"\n' % ROOT, 2),
    ('[ -d /sys/firmware/efi ] && GRUB_CMDLINE_LINUX="%s"\n' % ROOT, 1),
    ('GRUB_TIMEOUT=5\nreadonly GRUB_CMDLINE_LINUX="%s"\n' % ROOT, 2),
    ('export GRUB_TIMEOUT=5 GRUB_CMDLINE_LINUX="%s"\n' % ROOT, 1),
])
@pytest.mark.parametrize('check', [False, True])
def test_grub_default_refuses_a_form_it_does_not_own(monkeypatch, host, text, line, check):
    grub = host / 'grub'
    grub.write_bytes(text.encode())
    cmds = []
    res = run(monkeypatch, grub_args(host), cmds, check=check)
    assert res['failed'] and not res['changed'] and cmds == [] and res['commands'] == []
    assert res['msg'].startswith('%s line %d ' % (grub, line)) and 'form the editor does not own' in res['msg']
    assert grub.read_bytes() == text.encode()  # unchanged, byte for byte


def test_grub_default_sh_cross_check_refuses_before_writing(monkeypatch, host):
    # "$((VAR=5))" in another value assigns our variable: only /bin/sh sees it, and nothing is written
    text = b'GRUB_CMDLINE_LINUX="rhgb quiet"\nGRUB_X="$((GRUB_CMDLINE_LINUX=5))"\n'
    grub = host / 'grub'
    grub.write_bytes(text)
    cmds = []
    res = run(monkeypatch, grub_args(host), cmds)
    assert res['failed'] and cmds == [] and grub.read_bytes() == text
    assert res['msg'].startswith("%s: /bin/sh reads GRUB_CMDLINE_LINUX as '5' before the edit and '5' after it" % grub)


def test_grub_default_keeps_crlf_byte_for_byte(monkeypatch, host):
    grub = host / 'grub'
    grub.write_bytes(b'GRUB_TIMEOUT=5\r\nGRUB_CMDLINE_LINUX="rhgb quiet"\r\nGRUB_DISABLE_RECOVERY="true"\r\n')
    res = run(monkeypatch, grub_args(host))
    assert res['changed'] and not res['failed']
    assert grub.read_bytes() == (b'GRUB_TIMEOUT=5\r\nGRUB_CMDLINE_LINUX="rhgb quiet intel_iommu=on iommu=pt"\r\n'
                                 b'GRUB_DISABLE_RECOVERY="true"\r\n')
    cmds = []
    res = run(monkeypatch, grub_args(host), cmds)
    assert not res['changed'] and cmds == []


def test_grub_default_names_a_file_that_is_not_utf8(monkeypatch, host):
    grub = host / 'grub'
    grub.write_bytes(b'GRUB_CMDLINE_LINUX="rhgb quiet"\n# caf\xe9\n')
    res = run(monkeypatch, grub_args(host))
    assert res['failed'] and res['msg'].startswith('%s is not UTF-8 text (byte 0xe9 at offset 37)' % grub)
    assert grub.read_bytes() == b'GRUB_CMDLINE_LINUX="rhgb quiet"\n# caf\xe9\n'


def test_grub_default_check_and_diff_mode(monkeypatch, host):
    grub = host / 'grub'
    grub.write_text('GRUB_CMDLINE_LINUX="rhgb quiet"\n')
    cmds = []
    res = run(monkeypatch, grub_args(host), cmds, check=True, diff=True)
    assert res['changed'] and cmds == [] and grub.read_text() == 'GRUB_CMDLINE_LINUX="rhgb quiet"\n'
    assert res['diff']['after'] == 'GRUB_CMDLINE_LINUX="rhgb quiet intel_iommu=on iommu=pt"\n'
    assert res['commands'] == [['/usr/sbin/grub2-mkconfig', '-o', '/boot/grub2/grub.cfg']]


def test_grub_default_takes_an_opposite_value_out_of_linux_default(monkeypatch, host):
    # GRUB appends GRUB_CMDLINE_LINUX_DEFAULT after GRUB_CMDLINE_LINUX and the kernel takes the last value:
    # intel_iommu=off there kept the IOMMU off after the reboot while the run reported success
    grub = host / 'grub'
    before = b'GRUB_CMDLINE_LINUX="rhgb"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet intel_iommu=off splash"\n'
    after = b'GRUB_CMDLINE_LINUX="rhgb intel_iommu=on iommu=pt"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n'
    grub.write_bytes(before)
    cmds = []
    checked = run(monkeypatch, grub_args(host), cmds, check=True, diff=True)
    assert checked['changed'] and cmds == [] and grub.read_bytes() == before
    res = run(monkeypatch, grub_args(host), cmds, diff=True)
    assert res['changed'] and not res['failed'] and grub.read_bytes() == after
    # check mode and diff showed exactly what the real run did
    assert checked['diff'] == res['diff'] and res['diff']['after'] == after.decode()
    assert checked['commands'] == res['commands'] == cmds == [['/usr/sbin/grub2-mkconfig', '-o', '/boot/grub2/grub.cfg']]
    cmds = []
    again = run(monkeypatch, grub_args(host), cmds, check=True, diff=True)
    assert not again['changed'] and cmds == [] and again['commands'] == [] and 'diff' not in again
    assert not run(monkeypatch, grub_args(host), cmds)['changed'] and grub.read_bytes() == after


@pytest.mark.parametrize('check', [False, True])
def test_grub_default_refuses_an_opposite_value_it_cannot_take_out(monkeypatch, host, check):
    grub = host / 'grub'
    text = b'GRUB_CMDLINE_LINUX="rhgb"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet $(echo intel_iommu=off)"\n'
    grub.write_bytes(text)
    cmds = []
    res = run(monkeypatch, grub_args(host), cmds, check=check)
    assert res['failed'] and not res['changed'] and cmds == [] and res['commands'] == [] and grub.read_bytes() == text
    assert res['msg'].startswith('%s: intel_iommu=off in GRUB_CMDLINE_LINUX_DEFAULT overrides intel_iommu=on' % grub)
    assert 'remove intel_iommu=off from GRUB_CMDLINE_LINUX_DEFAULT in %s by hand' % grub in res['msg']


# --- both ways: the ownership record ------------------------------------------------------------------------------

def _record(path):
    with open(path) as f:
        return json.load(f)


def test_dropin_present_records_then_absent_takes_the_dropin_back(monkeypatch, host, record_path):
    (host / 'cmdline').write_text(ON)
    res = run(monkeypatch, dropin_args(host))
    assert res['owned'] == ['intel_iommu=on', 'iommu=pt'] and res['record_changed']
    dropin = host / 'grub.d' / '90-gpuvirt.cfg'
    assert _record(record_path)['kernel_args'] == {'grub_dropin': ['intel_iommu=on', 'iommu=pt']}
    assert _record(record_path)['files'] == {'kernel_args': [str(dropin)]}
    assert not run(monkeypatch, dropin_args(host))['changed']  # second run: nothing, the record included

    cmds = []
    absent = dropin_args(host, state='absent', args=[])
    res = run(monkeypatch, absent, cmds, check=True)
    assert res['changed'] and res['files_removed'] == [str(dropin)] and dropin.exists() and cmds == []
    res = run(monkeypatch, absent, cmds)
    assert res['changed'] and not dropin.exists() and cmds == [['/usr/sbin/update-grub']]
    assert res['removed'] == ['intel_iommu=on', 'iommu=pt'] and res['reboot_required']
    assert res['unwanted'] == ['intel_iommu=on', 'iommu=pt']
    assert _record(record_path) == {'version': 1, 'kernel_args': {}, 'files': {}}
    cmds = []
    res = run(monkeypatch, absent, cmds)
    assert not res['changed'] and cmds == [] and not res['reboot_required']


def test_a_dropin_without_our_header_is_kept(monkeypatch, host):
    dropin = host / 'grub.d' / '90-gpuvirt.cfg'
    dropin.parent.mkdir()
    dropin.write_text('GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX intel_iommu=on"\n')
    cmds = []
    res = run(monkeypatch, dropin_args(host, state='absent', args=[]), cmds)
    assert not res['changed'] and cmds == [] and dropin.exists()
    assert res['kept'][0]['arg'] == str(dropin) and 'not written by us' in res['kept'][0]['reason']


def test_grub_default_an_argument_there_before_is_kept_ours_is_taken_back(monkeypatch, host, record_path):
    grub = host / 'grub'
    grub.write_text('GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb intel_iommu=on"\n')
    res = run(monkeypatch, grub_args(host))
    assert grub.read_text() == 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb intel_iommu=on iommu=pt"\n'
    # intel_iommu=on was on the boot loader's line before: the administrator's, not recorded
    assert res['owned'] == ['iommu=pt']
    assert _record(record_path)['kernel_args'] == {'grub_default': ['iommu=pt']}
    res = run(monkeypatch, grub_args(host))
    assert not res['changed'] and res['owned'] == ['iommu=pt']  # ours stays recorded though it is "there" now

    (host / 'cmdline').write_text(ON)
    cmds = []
    res = run(monkeypatch, grub_args(host, state='absent', args=[]), cmds)
    assert res['changed'] and res['removed'] == ['iommu=pt'] and res['unwanted'] == ['iommu=pt']
    assert cmds == [['/usr/sbin/grub2-mkconfig', '-o', '/boot/grub2/grub.cfg']] and res['reboot_required']
    assert grub.read_text() == 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb intel_iommu=on"\n'
    assert _record(record_path)['kernel_args'] == {}
    res = run(monkeypatch, grub_args(host, state='absent', args=[]))
    assert not res['changed'] and res['removed'] == []


def test_grub_default_an_argument_the_appended_variable_carries_is_kept_named(monkeypatch, host, record_path):
    grub = host / 'grub'
    grub.write_text('GRUB_CMDLINE_LINUX="rhgb"\n')
    run(monkeypatch, grub_args(host))
    # the administrator adds iommu=pt to GRUB_CMDLINE_LINUX_DEFAULT afterwards
    grub.write_text(grub.read_text() + 'GRUB_CMDLINE_LINUX_DEFAULT="quiet iommu=pt"\n')
    res = run(monkeypatch, grub_args(host, state='absent', args=[]))
    assert res['removed'] == ['intel_iommu=on']
    assert res['kept'] == [{'arg': 'iommu=pt', 'reason': "GRUB_CMDLINE_LINUX_DEFAULT carries it too: the "
                                                         "administrator's there"}]
    assert grub.read_text() == 'GRUB_CMDLINE_LINUX="rhgb iommu=pt"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet iommu=pt"\n'


@pytest.mark.parametrize('record', [
    b'{not json',
    b'{"version": 1, "kernel_args": {"grub_default": ["intel_iommu=on", "root=/dev/sda1"]}}',
    b'{"version": 1, "kernel_args": {"grub_default": "intel_iommu=on"}}',
])
def test_a_malformed_record_takes_nothing_back_and_says_so(monkeypatch, host, record_path, record):
    grub = host / 'grub'
    text = 'GRUB_CMDLINE_LINUX="root=/dev/sda1 rhgb intel_iommu=on iommu=pt"\n'
    grub.write_text(text)
    os.makedirs(os.path.dirname(record_path))
    with open(record_path, 'wb') as f:
        f.write(record)
    cmds = []
    res = run(monkeypatch, grub_args(host, state='absent', args=[]), cmds)
    assert not res['failed'] and not res['changed'] and cmds == [] and res['removed'] == []
    assert grub.read_text() == text and open(record_path, 'rb').read() == record
    assert res['record_problems']['kernel_args'] and 'nothing is taken back' in res['kept'][0]['reason']
    assert res['warnings'] and record_path in res['warnings'][0]


def test_a_linked_record_is_not_followed(monkeypatch, host, record_path, tmp_path):
    grub = host / 'grub'
    grub.write_text('GRUB_CMDLINE_LINUX="rhgb intel_iommu=on"\n')
    elsewhere = tmp_path / 'elsewhere.json'
    elsewhere.write_text('{"version": 1, "kernel_args": {"grub_default": ["intel_iommu=on"]}}')
    os.makedirs(os.path.dirname(record_path))
    os.symlink(str(elsewhere), record_path)
    res = run(monkeypatch, grub_args(host, state='absent', args=[]))
    assert not res['changed'] and 'symbolic link' in res['record_problems']['kernel_args']
    assert grub.read_text() == 'GRUB_CMDLINE_LINUX="rhgb intel_iommu=on"\n'
    # a present run does not write through it either
    res = run(monkeypatch, grub_args(host))
    assert res['failed'] and 'symbolic link' in res['msg']


def test_absent_with_arguments_and_a_record_path_elsewhere_are_refused(monkeypatch, host):
    res = run(monkeypatch, grub_args(host, state='absent'))
    assert res['failed'] and 'args and remove must be empty' in res['msg']
    res = run(monkeypatch, grub_args(host, record_path='/etc/shadow'))
    assert res['failed'] and 'record_path' in res['msg']


# -- proc_cmdline: read bounded, and only the kernel argument grammar ever shown ------------------------------------

# a file that is not a command line (a hostile review pointed proc_cmdline at /etc/shadow with remove *:*)
SHADOW = ('root:$6$s4lt$Zm9vYmFyYmF6cXV4:19700:0:99999:7:::\n'
          'daemon:*:19700:0:99999:7:::\n'
          'admin:!$y$j9T$aGVsbG8$d29ybGQ:19700:0:99999:7:::\n')


def test_a_file_that_is_not_a_command_line_is_never_shown(monkeypatch, host):
    (host / 'shadow').write_text(SHADOW)
    res = run(monkeypatch, dict(args=[], remove=['*:*'], backend='none', proc_cmdline=str(host / 'shadow')),
              check=True)
    assert not res['failed'], res
    flat = json.dumps(res)
    for secret in ('$6$', 'Zm9vYmFy', 'daemon', 'admin', 'root:'):
        assert secret not in flat, flat
    assert res['cmdline'] == [] and res['unwanted'] == [] and res['cmdline_unparseable'] == 3, res


def test_a_real_command_line_is_shown_whole(monkeypatch, host):
    # GRUB's BOOT_IMAGE with its device in parentheses and a quoted value with blanks are arguments, not noise
    line = 'BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0 root=/dev/mapper/rhel-root ro dyndbg="file x.c +p" intel_iommu=off\n'
    (host / 'cmdline').write_text(line)
    res = run(monkeypatch, dict(args=['intel_iommu=on'], backend='none', proc_cmdline=str(host / 'cmdline')))
    assert res['cmdline'] == line.split(' dyndbg', maxsplit=1)[0].split() + ['dyndbg="file x.c +p"', 'intel_iommu=off'], res
    assert res['cmdline_unparseable'] == 0 and res['unwanted'] == ['intel_iommu=off'], res


@pytest.mark.parametrize('target', ['/dev/zero', 'fifo', 'big'])
def test_a_device_a_fifo_or_a_huge_file_is_not_read_to_its_end(monkeypatch, host, target):
    # /dev/zero never ends and a FIFO blocks: neither is a regular file; a regular file past the bound is not a
    # kernel command line (the read stops one byte past it)
    if target == 'fifo':
        os.mkfifo(str(host / 'fifo'))
        target = str(host / 'fifo')
    elif target == 'big':
        (host / 'big').write_text('quiet ' * (kernel_cmdline.kc.PROC_CMDLINE_LIMIT // 6 + 1))
        target = str(host / 'big')
    res = run(monkeypatch, dict(args=['intel_iommu=on'], backend='none', proc_cmdline=target))
    assert res['failed'] and 'cannot read %s as a kernel command line' % target in res['msg'], res


def test_a_relative_proc_cmdline_is_refused_before_anything(monkeypatch, host):
    res = run(monkeypatch, dropin_args(host, proc_cmdline='cmdline'))
    assert res['failed'] and "proc_cmdline is 'cmdline': expected an absolute path" in res['msg'], res
    assert not (host / 'grub.d').exists()
