# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kernel_cmdline module_utils: parsing, validation, compare, and the GRUB drop-in run through a real /bin/sh."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import subprocess

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils import kernel_cmdline as kc

REAL_DEBIAN = ('BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=c2e90424-2301-4b2b-afd4-760630f9f9d9 ro '
               'console=ttyS0,115200n8 intel_iommu=off quiet\n')


def test_split_real_cmdline():
    args = kc.split_cmdline(REAL_DEBIAN)
    assert args[0].startswith('BOOT_IMAGE=') and args[-2:] == ['intel_iommu=off', 'quiet']


def test_split_keeps_quoted_spaces():
    assert kc.split_cmdline('a="b c" d  e') == ['a="b c"', 'd', 'e']


@pytest.mark.parametrize('bad', ['foo;reboot', 'a=$(id)', 'x`id`', 'a b', 'quote"', 'a|b', 'a&&b', '', '-x', "a'b",
                                 'a>b', 'a\nb'])
def test_rejects_shell_metacharacters_naming_the_value(bad):
    with pytest.raises(kc.CmdlineError) as e:
        kc.validate_args([bad])
    assert repr(bad) in str(e.value)


def test_accepts_real_args():
    kc.validate_args(['intel_iommu=on', 'iommu=pt', 'vfio-pci.ids=10de:2236,10de:1aef', 'console=ttyS0,115200n8',
                      'hugepagesz=1G', 'rd.driver.blacklist=nouveau'])


def test_same_key_twice_rejected():
    with pytest.raises(kc.CmdlineError, match='same key'):
        kc.validate_args(['intel_iommu=on', 'intel_iommu=off'])


def test_bad_pattern_named():
    with pytest.raises(kc.CmdlineError, match=r"'nomodeset;x'"):
        kc.validate_patterns(['nomodeset;x'])


def test_contradiction_named():
    with pytest.raises(kc.CmdlineError, match="'iommu=pt'.*'iommu'"):
        kc.check_consistent(['iommu=pt'], ['iommu'])


def test_compare_off_to_on():
    current = kc.split_cmdline(REAL_DEBIAN)
    missing, unwanted = kc.compare(current, ['intel_iommu=on', 'iommu=pt'], ['quiet'])
    assert missing == ['intel_iommu=on', 'iommu=pt']
    assert unwanted == ['intel_iommu=off', 'quiet']


def test_compare_done():
    current = kc.split_cmdline('root=/dev/sda1 ro intel_iommu=on iommu=pt')
    assert kc.compare(current, ['intel_iommu=on', 'iommu=pt'], ['nomodeset']) == ([], [])


def test_apply_keeps_order_and_drops_other_values():
    out = kc.apply(['ro', 'intel_iommu=off', 'quiet', 'nomodeset=1'], ['intel_iommu=on'], ['nomodeset'])
    assert out == ['ro', 'quiet', 'intel_iommu=on']


def test_apply_idempotent():
    once = kc.apply(['ro', 'iommu=pt'], ['iommu=pt', 'intel_iommu=on'], [])
    assert kc.apply(once, ['iommu=pt', 'intel_iommu=on'], []) == once == ['ro', 'iommu=pt', 'intel_iommu=on']


def _effective(tmp_path, grub_default, dropin):
    (tmp_path / 'grub').write_text(grub_default)
    (tmp_path / 'dropin.cfg').write_text(dropin)
    # grub-mkconfig sources these files with /bin/sh: do the same.
    out = subprocess.check_output(
        ['/bin/sh', '-c', '. ./grub; . ./dropin.cfg; printf "%s\\n%s" "$GRUB_CMDLINE_LINUX" "$GRUB_CMDLINE_LINUX_DEFAULT"'],
        cwd=str(tmp_path))
    return out.decode().split('\n')


def test_dropin_filters_user_line_without_rewriting_it(tmp_path):
    grub = 'GRUB_CMDLINE_LINUX="console=ttyS0,115200n8 intel_iommu=off nomodeset"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\n'
    dropin = kc.render_grub_dropin(['intel_iommu=on', 'iommu=pt'], ['nomodeset'])
    linux, default = _effective(tmp_path, grub, dropin)
    assert linux == 'console=ttyS0,115200n8 intel_iommu=on iommu=pt'
    assert default == 'quiet'
    assert 'console=ttyS0' not in dropin  # the user's value is not copied into our file


def test_dropin_does_not_glob_or_duplicate(tmp_path):
    (tmp_path / 'iommu=pt').write_text('')  # a file a glob would match in the cwd
    grub = 'GRUB_CMDLINE_LINUX="iommu=pt *"\n'
    linux = _effective(tmp_path, grub, kc.render_grub_dropin(['iommu=pt'], []))[0]
    assert linux == '* iommu=pt'


def test_dropin_empty_user_line(tmp_path):
    linux = _effective(tmp_path, '', kc.render_grub_dropin(['intel_iommu=on'], []))[0]
    assert linux == 'intel_iommu=on'


def test_dropin_refuses_bad_arg():
    with pytest.raises(kc.CmdlineError, match=r'\$\(reboot\)'):
        kc.render_grub_dropin(['a=$(reboot)'], [])


def test_grub_default_edit_only_touches_our_args():
    text = '# comment\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="crashkernel=auto rhgb intel_iommu=off quiet"\nX=1\n'
    new = kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ['intel_iommu=on', 'iommu=pt'], [])
    assert new == ('# comment\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="crashkernel=auto rhgb quiet intel_iommu=on iommu=pt"'
                   '\nX=1\n')
    assert kc.grub_default_edit(new, 'GRUB_CMDLINE_LINUX', ['intel_iommu=on', 'iommu=pt'], []) == new


def test_grub_default_refuses_computed_value():
    with pytest.raises(kc.CmdlineError, match='computed'):
        kc.grub_default_edit('GRUB_CMDLINE_LINUX="$FOO quiet"\n', 'GRUB_CMDLINE_LINUX', ['a=1'], [])


def test_grub_default_adds_missing_variable():
    assert kc.grub_default_edit('A=1', 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []) == 'A=1\nGRUB_CMDLINE_LINUX="iommu=pt"\n'


@pytest.mark.parametrize('line, edited', [
    ('export GRUB_CMDLINE_LINUX="rhgb quiet"', 'export GRUB_CMDLINE_LINUX="rhgb quiet iommu=pt"'),
    ('GRUB_CMDLINE_LINUX="rhgb quiet" # keep quiet', 'GRUB_CMDLINE_LINUX="rhgb quiet iommu=pt" # keep quiet'),
    ("GRUB_CMDLINE_LINUX='rhgb quiet'", "GRUB_CMDLINE_LINUX='rhgb quiet iommu=pt'"),
    ('GRUB_CMDLINE_LINUX=quiet', 'GRUB_CMDLINE_LINUX="quiet iommu=pt"'),
    ('  export  GRUB_CMDLINE_LINUX="rhgb"\t# tab comment', '  export  GRUB_CMDLINE_LINUX="rhgb iommu=pt"\t# tab comment'),
    ('GRUB_CMDLINE_LINUX=""', 'GRUB_CMDLINE_LINUX="iommu=pt"'),
    ('GRUB_CMDLINE_LINUX="a"\'b c\'', 'GRUB_CMDLINE_LINUX="ab c iommu=pt"'),
    ('GRUB_CMDLINE_LINUX="console=ttyS0 \\"x\\" ro"', 'GRUB_CMDLINE_LINUX="console=ttyS0 \\"x\\" ro iommu=pt"'),
])
def test_grub_default_edit_round_trips_shell_assignments(line, edited):
    text = '# top\nGRUB_TIMEOUT=5\n%s\nGRUB_DISABLE_RECOVERY="true" # end\n' % line
    new = kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], [])
    assert new == '# top\nGRUB_TIMEOUT=5\n%s\nGRUB_DISABLE_RECOVERY="true" # end\n' % edited
    assert kc.grub_default_get(new, 'GRUB_CMDLINE_LINUX').split()[-1] == 'iommu=pt'
    # a second run changes nothing, byte for byte
    assert kc.grub_default_edit(new, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []) == new


def test_grub_default_get_reads_export_and_comment():
    text = 'export GRUB_CMDLINE_LINUX="rhgb quiet" # c\n'
    assert kc.grub_default_get(text, 'GRUB_CMDLINE_LINUX') == 'rhgb quiet'


@pytest.mark.parametrize('line, why', [
    ('GRUB_CMDLINE_LINUX="rhgb; quiet', 'unterminated'),
    ('GRUB_CMDLINE_LINUX="rhgb" quiet', 'not a single shell assignment'),
    ('GRUB_CMDLINE_LINUX="rhgb"; reboot', 'not a single shell assignment'),
    ('GRUB_CMDLINE_LINUX=`cat /x`', 'computed'),
])
def test_grub_default_refuses_lines_it_cannot_edit(line, why):
    with pytest.raises(kc.CmdlineError, match=why):
        kc.grub_default_edit(line + '\n', 'GRUB_CMDLINE_LINUX', ['iommu=pt'], [])


@pytest.mark.parametrize('other', [
    'GRUB_CMDLINE_LINUX_DEFAULT="rhgb\nquiet"',
    "GRUB_CMDLINE_LINUX_DEFAULT='rhgb\n  quiet'",
    'GRUB_CMDLINE_LINUX_DEFAULT="rhgb \\"x\n GRUB_CMDLINE_LINUX=y\\" quiet"',
    "GRUB_CMDLINE_LINUX_DEFAULT='rhgb\nGRUB_CMDLINE_LINUX=\"oops\n'",
    'GRUB_TERMINAL="serial \\\n console"',
    'GRUB_SERIAL_COMMAND=serial\\\n  --speed=115200 # GRUB_CMDLINE_LINUX="x',
    '# GRUB_CMDLINE_LINUX="commented out, with an open quote\nGRUB_DISTRIBUTOR="$(sed \'s, release .*$,,g\' /etc/system-release)"',
])
def test_grub_default_edit_keeps_other_multiline_assignments(tmp_path, other):
    # valid shell the edit does not own: values of other variables that span lines (or hold our name) are read
    # past and kept byte for byte, before and after our line
    text = '# top\n%s\nGRUB_CMDLINE_LINUX="rhgb quiet"\n%s\nGRUB_TIMEOUT=5\n' % (other, other)
    assert _effective(tmp_path, text, '')[0] == 'rhgb quiet'  # /bin/sh reads the file as we do
    new = kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], [])
    assert new == text.replace('GRUB_CMDLINE_LINUX="rhgb quiet"\n', 'GRUB_CMDLINE_LINUX="rhgb quiet iommu=pt"\n')
    assert kc.grub_default_get(new, 'GRUB_CMDLINE_LINUX') == 'rhgb quiet iommu=pt' == _effective(tmp_path, new, '')[0]
    assert kc.grub_default_edit(new, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []) == new


def test_grub_default_adds_the_variable_after_a_multiline_value():
    text = 'GRUB_CMDLINE_LINUX_DEFAULT="rhgb\nquiet"\nGRUB_TIMEOUT=5\n'
    assert kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []) == text + 'GRUB_CMDLINE_LINUX="iommu=pt"\n'


@pytest.mark.parametrize('text, opened', [
    ('GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT="rhgb\nquiet\n', 'line 2: the quote "'),
    ("GRUB_DISTRIBUTOR='x\n", "line 1: the quote '"),
    ('GRUB_TIMEOUT=5 \\', 'line 1: a backslash continuation'),
])
def test_grub_default_refuses_a_file_that_ends_inside_a_value(text, opened):
    # appending our line there would put it inside another variable's value
    with pytest.raises(kc.CmdlineError, match=re.escape(opened) + ' opened there is not closed'):
        kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], [])


@pytest.mark.parametrize('bad', ['quiet\n', 'iommu=pt\n', 'a\nb'])
def test_args_with_a_trailing_newline_are_refused(bad):
    with pytest.raises(kc.CmdlineError, match='not allowed'):
        kc.validate_args([bad])
    with pytest.raises(kc.CmdlineError, match='not allowed'):
        kc.validate_patterns([bad])


GRUBBY_INFO = '''index=0
kernel="/boot/vmlinuz-5.14.0-427.13.1.el9_4.x86_64"
args="ro crashkernel=1G-4G:192M,4G-64G:256M rhgb quiet intel_iommu=on"
root="/dev/mapper/rhel-root"
initrd="/boot/initramfs-5.14.0-427.13.1.el9_4.x86_64.img"
title="Red Hat Enterprise Linux (5.14.0-427.13.1.el9_4.x86_64) 9.4 (Plow)"
id="abc-5.14.0-427.13.1.el9_4.x86_64"
index=1
kernel="/boot/vmlinuz-0-rescue-abc"
args="ro crashkernel=1G-4G:192M rhgb quiet"
'''


def test_grubby_changes_union_over_entries():
    entries = kc.parse_grubby_info(GRUBBY_INFO)
    assert len(entries) == 2 and entries[0]['args'][-1] == 'intel_iommu=on'
    add, drop = kc.grubby_changes(entries, ['intel_iommu=on', 'iommu=pt'], ['rhgb'])
    assert add == ['iommu=pt', 'intel_iommu=on']
    assert drop == ['rhgb']
