# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kernel_cmdline module_utils: parsing, validation, compare, and the GRUB drop-in run through a real /bin/sh."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re
import subprocess
import time

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc

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
        kc.grub_default_edit('GRUB_CMDLINE_LINUX="$FOO quiet"\n', 'GRUB_CMDLINE_LINUX', ['iommu=pt'], [])


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
    # past and kept byte for byte, before and after our line. A GRUB_CMDLINE_LINUX_DEFAULT over lines is beyond
    # the editor's reader: /bin/sh's reading (grub_default_update) shows it holds nothing that conflicts
    text = '# top\n%s\nGRUB_CMDLINE_LINUX="rhgb quiet"\n%s\nGRUB_TIMEOUT=5\n' % (other, other)
    assert _effective(tmp_path, text, '')[0] == 'rhgb quiet'  # /bin/sh reads the file as we do
    new = kc.grub_default_update(text.encode(), 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []).decode()
    assert new == text.replace('GRUB_CMDLINE_LINUX="rhgb quiet"\n', 'GRUB_CMDLINE_LINUX="rhgb quiet iommu=pt"\n')
    assert kc.grub_default_get(new, 'GRUB_CMDLINE_LINUX') == 'rhgb quiet iommu=pt' == _effective(tmp_path, new, '')[0]
    assert kc.grub_default_update(new.encode(), 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []) == new.encode()


def test_grub_default_adds_the_variable_after_a_multiline_value():
    text = b'GRUB_CMDLINE_LINUX_DEFAULT="rhgb\nquiet"\nGRUB_TIMEOUT=5\n'
    assert kc.grub_default_update(text, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []) == text + b'GRUB_CMDLINE_LINUX="iommu=pt"\n'


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


# --- /etc/default/grub: forms the editor does not own, the /bin/sh cross-check, bytes kept -------------------------

ROOT_ARGS = 'rd.lvm.lv=rhel/root crashkernel=auto'
IOMMU = ['intel_iommu=on', 'iommu=pt']


def sh_value(data, var='GRUB_CMDLINE_LINUX'):
    """The consumer's reading, independent of the code under test: grub-mkconfig sources /etc/default/grub with
    /bin/sh (its `. "${sysconfdir}/default/grub"`); so does this, with the real /bin/sh (dash on Debian), in an
    empty environment, the file passed as an argument."""
    return subprocess.check_output(
        ['/bin/sh', '-c', '. "$1" >/dev/null 2>&1; printf "%s" "$' + var + '"', 'sh', '/dev/stdin'],
        input=data, env={}).decode('utf-8', 'surrogateescape')


DEFAULT = 'GRUB_CMDLINE_LINUX_DEFAULT'


def sh_effective(data):
    """The command line GRUB boots by default, read independently of the code under test: grub-mkconfig's 10_linux
    writes ``linux ... ${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}`` for the normal entry, and the kernel
    acts on the last value of a repeated parameter: as {key: the arg that wins}."""
    args = (sh_value(data) + ' ' + sh_value(data, DEFAULT)).split()
    return dict((arg.split('=', 1)[0], arg) for arg in args)


# (file, what /bin/sh reads as GRUB_CMDLINE_LINUX, the line the refusal names)
HOSTILE = [
    ('GRUB_TIMEOUT=5; GRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS, ROOT_ARGS, 1),
    ('GRUB_TIMEOUT=5 \\\nGRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS, ROOT_ARGS, 2),
    ('GRUB_TIMEOUT=5\n[ -d /proc ] && GRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS, ROOT_ARGS, 2),
    ('readonly GRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS, ROOT_ARGS, 1),
    ('export GRUB_TIMEOUT=5 GRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS, ROOT_ARGS, 1),
    ('if true; then\n  GRUB_CMDLINE_LINUX="%s"; fi\n' % ROOT_ARGS, ROOT_ARGS, 2),
    (': ${GRUB_CMDLINE_LINUX:="%s"}\n' % ROOT_ARGS, ROOT_ARGS, 1),
    ('GRUB_X="${GRUB_CMDLINE_LINUX=%s}"\n' % ROOT_ARGS, ROOT_ARGS, 1),
    ('GRUB_CMDLINE_LINUX="%s"\nunset GRUB_CMDLINE_LINUX\n' % ROOT_ARGS, '', 2),
    ('GRUB_CMDLINE_LINUX="%s" GRUB_TIMEOUT=5\n' % ROOT_ARGS, ROOT_ARGS, 1),
    # only a newline ends a line for sh: after a form feed or a lone CR the name is inside GRUB_TIMEOUT's word
    ('GRUB_TIMEOUT=5\fGRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS, '', 1),
    ('GRUB_TIMEOUT=5\rGRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS, '', 1),
]


@pytest.mark.parametrize('text, reads, line', HOSTILE)
def test_grub_default_refuses_forms_it_does_not_own(text, reads, line):
    # each form is legal shell that sets (or drops) the variable; an editor that misses it appends a second
    # assignment and sh then drops the root/LVM args: the host does not boot
    assert sh_value(text.encode()) == reads
    with pytest.raises(kc.CmdlineError) as e:
        kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', IOMMU, [])  # names /etc/default/grub by default
    msg = str(e.value)
    assert msg.startswith('/etc/default/grub line %d ' % line)
    # a second word or a command after the owned assignment is "not a single shell assignment"
    assert ('form the editor does not own' in msg and 'GRUB_CMDLINE_LINUX="..."' in msg
            or 'is not a single shell assignment' in msg)
    with pytest.raises(kc.CmdlineError, match='form the editor does not own|not a single shell assignment'):
        kc.grub_default_update(text.encode(), 'GRUB_CMDLINE_LINUX', IOMMU, [])


@pytest.mark.parametrize('text', [
    'GRUB_CMDLINE_LINUX="ro"\nGRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX quiet ${#GRUB_CMDLINE_LINUX}"\n',
    "GRUB_CMDLINE_LINUX=\"ro\"\nGRUB_X='GRUB_CMDLINE_LINUX=1; readonly GRUB_CMDLINE_LINUX'\n",
    'GRUB_CMDLINE_LINUX="ro"\n# GRUB_TIMEOUT=5; GRUB_CMDLINE_LINUX=""\nX=1 # readonly GRUB_CMDLINE_LINUX\n',
    'GRUB_CMDLINE_LINUX="ro"\nGRUB_X=\\GRUB_CMDLINE_LINUX\n',
])
def test_grub_default_reads_past_names_that_set_nothing(text):
    # reads, comments, single-quoted text and escaped names set nothing: the edit goes on, and sh agrees
    new = kc.grub_default_update(text.encode(), 'GRUB_CMDLINE_LINUX', IOMMU, [])
    assert sh_value(new) == 'ro intel_iommu=on iommu=pt'
    assert new == text.replace('"ro"', '"ro intel_iommu=on iommu=pt"', 1).encode()


def test_sh_cross_check_catches_what_the_parser_misses(monkeypatch):
    # the original defect: a parser that does not see the assignment appends a new one; the sh cross-check alone
    # must refuse, naming both readings
    text = ('GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="%s"\n' % ROOT_ARGS).encode()
    monkeypatch.setattr(kc, '_assignments', lambda text, var, path: [])
    assert kc.grub_default_edit(text.decode(), 'GRUB_CMDLINE_LINUX', IOMMU, []).endswith(
        'GRUB_CMDLINE_LINUX="intel_iommu=on iommu=pt"\n')  # the blind parser would write this
    with pytest.raises(kc.CmdlineError) as e:
        kc.grub_default_update(text, 'GRUB_CMDLINE_LINUX', IOMMU, [], '/etc/default/grub')
    msg = str(e.value)
    assert msg.startswith('/etc/default/grub: /bin/sh reads GRUB_CMDLINE_LINUX as %r before' % ROOT_ARGS)
    assert "'intel_iommu=on iommu=pt' after it" in msg and 'nothing was written' in msg
    assert repr(ROOT_ARGS + ' intel_iommu=on iommu=pt') in msg


@pytest.mark.parametrize('value', ['ro', 'ro intel_iommu=on iommu=pt'])
def test_sh_cross_check_catches_an_arithmetic_assignment(value):
    # "$((VAR=5))" inside another value assigns VAR in the current shell; the static scan reads double-quoted text
    # as text, so here the cross-check is what refuses, both for an edit and for a file the parser thinks done
    text = 'GRUB_CMDLINE_LINUX="%s"\nGRUB_X="$((GRUB_CMDLINE_LINUX=5))"\n' % value
    assert sh_value(text.encode()) == '5'
    with pytest.raises(kc.CmdlineError, match="reads GRUB_CMDLINE_LINUX as '5' before"):
        kc.grub_default_update(text.encode(), 'GRUB_CMDLINE_LINUX', IOMMU, [])


def test_check_sh_edit_compares_argument_lists():
    # readings of (GRUB_CMDLINE_LINUX, GRUB_CMDLINE_LINUX_DEFAULT) before and after the edit
    kc.check_sh_edit(('ro  quiet\r', ''), ('ro quiet iommu=pt', ''), ['iommu=pt'], [], 'GRUB_CMDLINE_LINUX')
    kc.check_sh_edit(('ro intel_iommu=off', 'a'), ('ro intel_iommu=on', ' a'), ['intel_iommu=on'], [],
                     'GRUB_CMDLINE_LINUX')
    with pytest.raises(kc.CmdlineError, match="'ro intel_iommu=on' after it, not 'ro rhgb intel_iommu=on'"):
        kc.check_sh_edit(('ro rhgb', ''), ('ro intel_iommu=on', ''), ['intel_iommu=on'], [], 'GRUB_CMDLINE_LINUX')


def test_grub_default_update_keeps_crlf_and_other_bytes():
    data = (b'# top\r\nGRUB_TIMEOUT=5\r\nGRUB_X="a\rb" # lone CR kept\n'
            b'export GRUB_CMDLINE_LINUX="rhgb quiet" # c\r\nGRUB_DISABLE_RECOVERY="true"\r\n\xc3\xa9=1\r\n')
    data = data.replace(b'\xc3\xa9=1', b'# caf\xc3\xa9')
    new = kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, [])
    assert new == data.replace(b'"rhgb quiet" # c\r\n', b'"rhgb quiet intel_iommu=on iommu=pt" # c\r\n')
    assert kc.grub_default_update(new, 'GRUB_CMDLINE_LINUX', IOMMU, []) == new


def test_grub_default_appends_with_the_files_line_ends():
    assert kc.grub_default_update(b'GRUB_TIMEOUT=5\r\n', 'GRUB_CMDLINE_LINUX', ['iommu=pt'], []) == \
        b'GRUB_TIMEOUT=5\r\nGRUB_CMDLINE_LINUX="iommu=pt"\r\n'


def test_grub_default_names_a_file_that_is_not_utf8():
    with pytest.raises(kc.CmdlineError) as e:
        kc.grub_default_update(b'GRUB_TIMEOUT=5\n# caf\xe9\n', 'GRUB_CMDLINE_LINUX', IOMMU, [], '/etc/default/grub')
    assert str(e.value).startswith('/etc/default/grub is not UTF-8 text (byte 0xe9 at offset 20)')
    assert 'iconv' in str(e.value)


def test_sh_reading_gets_the_file_as_an_argument(tmp_path, monkeypatch):
    # a temporary directory with shell syntax in its name stays a name; the caller's environment does not leak
    odd = tmp_path / "a'; touch pwned; '$(touch pwned2)"
    odd.mkdir()
    monkeypatch.setenv('GRUB_CMDLINE_LINUX', 'leaked')
    monkeypatch.chdir(tmp_path)
    assert kc.sh_reading(b'GRUB_TIMEOUT=5\necho noise\n', 'GRUB_CMDLINE_LINUX', tmpdir=str(odd)) == ''
    assert kc.sh_reading(b'GRUB_CMDLINE_LINUX="a  b"\n', 'GRUB_CMDLINE_LINUX', tmpdir=str(odd)) == 'a  b'
    assert sorted(p.name for p in tmp_path.iterdir()) == [odd.name] and list(odd.iterdir()) == []


@pytest.mark.parametrize('data, why', [
    (b'if then\n', 'could not read it'),
    (b'exit 0\n', 'could not read it'),
    (b'sleep 30\n', 'did not finish reading it within 1 s'),
])
def test_sh_reading_refuses_a_file_sh_cannot_finish(data, why):
    with pytest.raises(kc.CmdlineError, match='^/etc/default/grub: /bin/sh ' + why):
        kc.sh_reading(data, 'GRUB_CMDLINE_LINUX', timeout=1)


def test_apply_is_linear_on_many_distinct_args():
    # a list lookup per arg made a 1 MB value of distinct args take minutes (benchmarks/bench_hostile.py times
    # 1 and 4 MB); 50k args took about 10 s that way and take well under one now
    args = ['a%d=%d' % (i, i) for i in range(50000)]
    start = time.time()
    out = kc.apply(args + args[:10], IOMMU, ['a1*'])
    assert time.time() - start < 5
    # a1* drops a1, a10..a19, ..., a10000..a19999 (11111 args); a0, a2..a9 are kept twice (not ensured)
    assert len(out) == 50000 - 11111 + 9 + 2 and out[-2:] == IOMMU


# --- property: whatever the file, either refused or sh's reading moves exactly by the edit ----------------------

ARG = st.sampled_from(['ro', 'quiet', 'rhgb', 'rd.lvm.lv=rhel/root', 'crashkernel=auto', 'intel_iommu=off',
                       'intel_iommu=on', 'iommu=pt', 'nomodeset', 'console=ttyS0,115200n8'])
VALUE = st.lists(ARG, max_size=5).map(' '.join)


@st.composite
def owned_line(draw, var='GRUB_CMDLINE_LINUX'):
    value = draw(VALUE)
    quoted = draw(st.sampled_from(['"%s"', "'%s'", '%s' if value and ' ' not in value else '"%s"']))
    indent, export = draw(st.sampled_from(['', '  ', '\t'])), draw(st.sampled_from(['', 'export ']))
    comment = draw(st.sampled_from(['', ' # comment', '\t#c']))
    return '%s%s%s=%s%s' % (indent, export, var, quoted % value, comment)


# legal shell that sets, reads or merely names the variable; the editor must refuse or get them right
STATIC_NOISE = [
    'GRUB_TIMEOUT=5', '# GRUB_CMDLINE_LINUX="x"', 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"',
    'GRUB_TIMEOUT=5; GRUB_CMDLINE_LINUX="{v}"', 'GRUB_TIMEOUT=5 \\', '[ -d /proc ] && GRUB_CMDLINE_LINUX="{v}"',
    'readonly GRUB_CMDLINE_LINUX="{v}"', 'export GRUB_TIMEOUT=1 GRUB_CMDLINE_LINUX="{v}"', 'unset GRUB_CMDLINE_LINUX',
    ': ${{GRUB_CMDLINE_LINUX:={v}}}', 'GRUB_X="$GRUB_CMDLINE_LINUX"', "GRUB_X='", "GRUB_CMDLINE_LINUX=x'",
    'GRUB_X="a', 'GRUB_CMDLINE_LINUX={v}"', 'GRUB_TIMEOUT=5\fGRUB_CMDLINE_LINUX="{v}"', 'export GRUB_CMDLINE_LINUX',
    'GRUB_CMDLINE_LINUX="{v}" # x; readonly GRUB_CMDLINE_LINUX', 'GRUB_X=a\\ GRUB_CMDLINE_LINUX="{v}"',
]
# what only the /bin/sh cross-check sees: assignments inside a double-quoted expansion
SH_ONLY_NOISE = ['GRUB_X="$((GRUB_CMDLINE_LINUX=5))"', 'GRUB_X="$(echo GRUB_CMDLINE_LINUX)"']


@st.composite
def grub_file(draw, noise):
    lines = draw(st.lists(st.one_of(owned_line(), owned_line('GRUB_CMDLINE_LINUX_DEFAULT'), st.sampled_from(
        noise).flatmap(lambda n: VALUE.map(lambda v: n.format(v=v)))), max_size=6))
    eol = draw(st.sampled_from(['\n', '\r\n']))
    return ''.join(line + eol for line in lines).encode()


CHANGES = st.tuples(st.sampled_from([[], ['iommu=pt'], IOMMU, ['intel_iommu=off']]),
                    st.sampled_from([[], ['rhgb'], ['crashkernel*'], ['quiet']]))


def conflicts(arg, ensure, remove):
    """Whether ``arg`` conflicts with the wanted state, written out here rather than taken from the code under
    test: a remove pattern matches it or its key, or it is another value of an ensured key."""
    key = arg.split('=', 1)[0]
    return arg not in ensure and (any(fnmatch.fnmatchcase(arg, p) or fnmatch.fnmatchcase(key, p) for p in remove)
                                  or key in set(e.split('=', 1)[0] for e in ensure))


def assert_sh_moves_by_the_edit(old, new, ensure, remove):
    expected = kc.apply(kc.split_cmdline(sh_value(old)), ensure, remove)
    assert kc.split_cmdline(sh_value(new)) == expected
    # GRUB_CMDLINE_LINUX_DEFAULT loses exactly the args that conflict, and the line GRUB boots has ours last
    default = [arg for arg in sh_value(old, DEFAULT).split() if not conflicts(arg, ensure, remove)]
    assert sh_value(new, DEFAULT).split() == default
    effective = sh_effective(new)
    assert all(effective[e.split('=', 1)[0]] == e for e in ensure)
    assert not any(conflicts(arg, ensure, remove) for arg in effective.values())
    old_lines, new_lines = old.split(b'\n'), new.split(b'\n')
    assert len(new_lines) - len(old_lines) in (0, 1)
    assert sum(a != b for a, b in zip(old_lines, new_lines)) <= 2  # only the two owned lines change


@settings(max_examples=150, deadline=None)
@given(grub_file(STATIC_NOISE), CHANGES)
def test_property_editor_alone_refuses_or_matches_sh(data, changes):
    ensure, remove = changes
    try:
        new = kc.grub_default_edit(data.decode(), 'GRUB_CMDLINE_LINUX', ensure, remove).encode()
    except kc.CmdlineError:
        return
    assert_sh_moves_by_the_edit(data, new, ensure, remove)


@settings(max_examples=150, deadline=None)
@given(grub_file(STATIC_NOISE + SH_ONLY_NOISE), CHANGES)
def test_property_update_refuses_or_matches_sh(data, changes):
    ensure, remove = changes
    try:
        new = kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', ensure, remove)
    except kc.CmdlineError:
        return
    assert_sh_moves_by_the_edit(data, new, ensure, remove)


@pytest.mark.parametrize('odd', ['\u00a0', '\x1c', '\x85', '\u2028', '\x0b', '\x0c', '\u200b'])
def test_a_value_with_a_space_grub_and_the_kernel_split_differently_is_refused(odd):
    # re-joining the arguments would turn it into a plain space and change an argument (here the one with root=)
    text = 'GRUB_CMDLINE_LINUX="root=/dev/x%sro quiet"\n' % odd
    with pytest.raises(kc.CmdlineError, match='U\\+%04X' % ord(odd)):
        kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ['iommu=pt'], [])


# --- GRUB_CMDLINE_LINUX_DEFAULT: GRUB appends it after GRUB_CMDLINE_LINUX, the last value of a parameter wins -----

def dropin_effective(data, ensure, remove, tmp_path):
    """The same view for the drop-in backend: /bin/sh sources the unchanged file, then our drop-in (the order
    grub-mkconfig uses)."""
    (tmp_path / 'grub').write_bytes(data)
    (tmp_path / 'dropin.cfg').write_text(kc.render_grub_dropin(ensure, remove))
    out = subprocess.check_output(
        ['/bin/sh', '-c', '. ./grub >/dev/null 2>&1; . ./dropin.cfg; printf "%s %s" "$GRUB_CMDLINE_LINUX" '
         '"$GRUB_CMDLINE_LINUX_DEFAULT"'], cwd=str(tmp_path), env={})
    return dict((arg.split('=', 1)[0], arg) for arg in out.decode().split())


def test_an_opposite_value_in_linux_default_is_taken_out_and_the_effective_line_has_ours():
    # GRUB boots "... intel_iommu=on iommu=pt splash intel_iommu=off": the kernel took off, the IOMMU stayed off
    data = (b'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root rhgb"\n'
            b'GRUB_CMDLINE_LINUX_DEFAULT="splash  intel_iommu=off\tquiet" # mine\n')
    new = kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, [])
    # only the conflicting token (and the blanks before it) goes; the rest of the line is kept as written
    assert new == (b'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root rhgb intel_iommu=on iommu=pt"\n'
                   b'GRUB_CMDLINE_LINUX_DEFAULT="splash\tquiet" # mine\n')
    assert sh_effective(new)['intel_iommu'] == 'intel_iommu=on'
    assert kc.grub_default_update(new, 'GRUB_CMDLINE_LINUX', IOMMU, []) == new  # a second run changes nothing


@pytest.mark.parametrize('line, edited', [
    ("GRUB_CMDLINE_LINUX_DEFAULT='intel_iommu=off'", "GRUB_CMDLINE_LINUX_DEFAULT=''"),
    ('export GRUB_CMDLINE_LINUX_DEFAULT=intel_iommu=off', 'export GRUB_CMDLINE_LINUX_DEFAULT=""'),
    ('GRUB_CMDLINE_LINUX_DEFAULT="iommu=nopt nomodeset quiet iommu=pt"', 'GRUB_CMDLINE_LINUX_DEFAULT="quiet iommu=pt"'),
    ('GRUB_CMDLINE_LINUX_DEFAULT="quiet intel_iommu=on"', None),  # ours, in either variable: nothing to do there
    ('GRUB_CMDLINE_LINUX_DEFAULT="quiet amd_iommu=off"', None),  # another parameter: not ours to touch
])
def test_linux_default_loses_only_what_conflicts(line, edited):
    data = ('GRUB_CMDLINE_LINUX="ro"\n%s\n' % line).encode()
    new = kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, ['nomodeset'])
    assert new == ('GRUB_CMDLINE_LINUX="ro intel_iommu=on iommu=pt"\n%s\n' % (edited or line)).encode()
    effective = sh_effective(new)
    assert effective['intel_iommu'] == 'intel_iommu=on' and effective['iommu'] == 'iommu=pt'
    assert 'nomodeset' not in effective


START_FILES = [
    'GRUB_CMDLINE_LINUX="ro rhgb"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet intel_iommu=off"\n',
    'GRUB_CMDLINE_LINUX="intel_iommu=off ro"\nGRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=off iommu=nopt nomodeset"\n',
    'GRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=on quiet"\n',
    "GRUB_CMDLINE_LINUX='ro'\nexport GRUB_CMDLINE_LINUX_DEFAULT='nomodeset=1 iommu=pt iommu=off'\n",
    'GRUB_CMDLINE_LINUX="ro"\nGRUB_CMDLINE_LINUX_DEFAULT="x"\nGRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=off"\n',
]


@pytest.mark.parametrize('text', START_FILES)
def test_both_backends_boot_the_same_effective_line(tmp_path, text):
    data = text.encode()
    new = kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, ['nomodeset'])
    assert sh_effective(new) == dropin_effective(data, IOMMU, ['nomodeset'], tmp_path)
    assert sh_effective(new)['intel_iommu'] == 'intel_iommu=on'


def test_sh_cross_check_catches_a_file_whose_effective_line_disagrees():
    # the value is computed: the editor cannot take the token out of it, and only /bin/sh reads it
    data = (b'GRUB_CMDLINE_LINUX="ro"\n'
            b'GRUB_CMDLINE_LINUX_DEFAULT="quiet $(printf intel_iommu=of)f"\n')
    with pytest.raises(kc.CmdlineError) as e:
        kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, [], '/etc/default/grub')
    msg = str(e.value)
    assert msg.startswith('/etc/default/grub: intel_iommu=off in GRUB_CMDLINE_LINUX_DEFAULT overrides '
                          'intel_iommu=on on the effective command line')
    assert 'GRUB_CMDLINE_LINUX_DEFAULT is computed' in msg and 'nothing was written' in msg


def test_sh_cross_check_reads_the_effective_line_not_one_variable(monkeypatch):
    # an editor that forgets GRUB_CMDLINE_LINUX_DEFAULT: both variables move exactly by its own (wrong) plan, so
    # only the effective line, judged from the wanted arguments alone, shows intel_iommu=off winning
    data = b'GRUB_CMDLINE_LINUX="ro"\nGRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=off quiet"\n'
    monkeypatch.setattr(kc, 'strip_conflicts', lambda args, ensure, remove: list(args))
    with pytest.raises(kc.CmdlineError, match='^/etc/default/grub: intel_iommu=off in GRUB_CMDLINE_LINUX_DEFAULT '
                                              'overrides intel_iommu=on'):
        kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, [])


def test_check_sh_edit_judges_the_effective_line():
    linux = 'GRUB_CMDLINE_LINUX'
    kc.check_sh_edit(('ro', 'quiet intel_iommu=off'), ('ro intel_iommu=on', 'quiet'), ['intel_iommu=on'], [], linux)
    with pytest.raises(kc.CmdlineError, match='intel_iommu=off in GRUB_CMDLINE_LINUX_DEFAULT overrides'):
        kc.check_sh_edit(('ro', 'intel_iommu=off'), ('ro intel_iommu=on', 'intel_iommu=off'), ['intel_iommu=on'], [],
                         linux)
    with pytest.raises(kc.CmdlineError, match="reads GRUB_CMDLINE_LINUX_DEFAULT as 'quiet splash' before the edit "
                                              "and 'quiet' after it, not 'quiet splash'"):
        kc.check_sh_edit(('ro', 'quiet splash'), ('ro intel_iommu=on', 'quiet'), ['intel_iommu=on'], [], linux)


def test_check_sh_edit_wants_every_ensured_arg_on_the_effective_line(monkeypatch):
    # an apply() that forgets to add: GRUB_CMDLINE_LINUX moves exactly by the (wrong) plan, the effective line,
    # judged from the wanted args alone, lacks iommu=pt
    monkeypatch.setattr(kc, 'apply', lambda args, ensure, remove: list(args))
    with pytest.raises(kc.CmdlineError, match="^/etc/default/grub: the effective command line /bin/sh reads after "
                                              "the edit .* is 'ro quiet', without iommu=pt; nothing was written"):
        kc.check_sh_edit(('ro', 'quiet'), ('ro', 'quiet'), ['iommu=pt'], [], 'GRUB_CMDLINE_LINUX')


@pytest.mark.parametrize('line', [
    'GRUB_TIMEOUT=5; GRUB_CMDLINE_LINUX_DEFAULT="quiet"',
    'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT quiet"',
])
def test_linux_default_the_editor_cannot_edit_is_fine_without_a_conflict(line):
    # the editor only ever takes tokens out of it: a form it does not own is left to /bin/sh's reading, so the
    # editor alone (no such reading) refuses it
    data = ('GRUB_CMDLINE_LINUX="ro"\n%s\n' % line).encode()
    new = kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, [])
    assert new == data.replace(b'"ro"', b'"ro intel_iommu=on iommu=pt"')
    with pytest.raises(kc.CmdlineError, match='GRUB_CMDLINE_LINUX_DEFAULT.*without /bin/sh reading the file'):
        kc.grub_default_edit(data.decode(), 'GRUB_CMDLINE_LINUX', IOMMU, [])


def test_linux_default_in_a_form_the_editor_does_not_own_is_refused_with_a_conflict():
    data = b'GRUB_CMDLINE_LINUX="ro"\nGRUB_TIMEOUT=5; GRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=off"\n'
    with pytest.raises(kc.CmdlineError) as e:
        kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', IOMMU, [])
    msg = str(e.value)
    assert msg.startswith('/etc/default/grub: intel_iommu=off in GRUB_CMDLINE_LINUX_DEFAULT overrides intel_iommu=on')
    assert 'line 2' in msg and 'form the editor does not own' in msg
    assert 'remove intel_iommu=off from GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub by hand' in msg


def test_linux_default_with_a_space_grub_and_the_kernel_split_differently_is_refused():
    text = 'GRUB_CMDLINE_LINUX="ro"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet\u00a0intel_iommu=off"\n'
    with pytest.raises(kc.CmdlineError, match='GRUB_CMDLINE_LINUX_DEFAULT in the grub defaults file holds the '
                                              'character U\\+00A0'):
        kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', IOMMU, [])


def test_effective_args_keep_the_last_value_of_each_parameter():
    args = ['ro', 'intel_iommu=on', 'quiet', 'iommu=pt', 'intel_iommu=off', 'quiet']
    assert kc.effective_args(args) == ['ro', 'iommu=pt', 'intel_iommu=off', 'quiet']


def test_the_effective_line_parser_is_linear():
    # 0.7 MB: 40k parameters, most repeated, over both variables and 20k other lines take about 2 s together;
    # a list lookup per arg (or a rescan per assignment) would take minutes
    n = 20000
    text = ('GRUB_TIMEOUT=5\n' * n + 'GRUB_CMDLINE_LINUX="%s"\n' % ' '.join('a%d=1' % (i % 997) for i in range(n))
            + 'GRUB_CMDLINE_LINUX_DEFAULT="%s"\n' % ' '.join('intel_iommu=off a%d=2' % i for i in range(n // 2)))
    start = time.time()
    effective = kc.grub_default_effective(text)
    new = kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', IOMMU, [])
    assert time.time() - start < 10
    assert effective[-1] == 'a%d=2' % (n // 2 - 1) and 'intel_iommu=off' in effective
    assert 'intel_iommu=off' not in new and new.count('intel_iommu=on') == 1


# property: the parser's effective line is /bin/sh's, and both backends boot the same effective line

PARAM = st.sampled_from(['ro', 'quiet', 'rhgb', 'rd.lvm.lv=rhel/root', 'intel_iommu=off', 'intel_iommu=on',
                         'iommu=pt', 'iommu=nopt', 'nomodeset', 'nomodeset=1', 'console=ttyS0,115200n8', 'splash'])


@st.composite
def assignment(draw, var):
    value = draw(st.lists(PARAM, max_size=6).flatmap(
        lambda args: st.lists(st.sampled_from([' ', '  ', '\t']), min_size=len(args), max_size=len(args)).map(
            lambda seps: ''.join(s + a for s, a in zip(seps, args))[1:] if args else '')))
    quoted = draw(st.sampled_from(['"%s"', "'%s'"] + (['%s'] if value and not set(value) & set(' \t') else [])))
    export = draw(st.sampled_from(['', 'export ']))
    comment = draw(st.sampled_from(['', ' # c']))
    return '%s%s=%s%s' % (export, var, quoted % value, comment)


@st.composite
def two_variable_file(draw):
    lines = draw(st.lists(st.one_of(assignment('GRUB_CMDLINE_LINUX'), assignment(DEFAULT),
                                    st.sampled_from(['GRUB_TIMEOUT=5', '# GRUB_CMDLINE_LINUX_DEFAULT="x"'])),
                          max_size=6))
    return ''.join(line + '\n' for line in lines).encode()


@settings(max_examples=150, deadline=None)
@given(two_variable_file())
def test_property_the_effective_line_parser_reads_what_sh_reads(data):
    last = {}  # the kernel's rule written out: a later value of a parameter replaces the earlier one
    for arg in (sh_value(data) + ' ' + sh_value(data, DEFAULT)).split():
        last.pop(arg.split('=', 1)[0], None)
        last[arg.split('=', 1)[0]] = arg
    assert kc.grub_default_effective(data.decode()) == list(last.values())


@settings(max_examples=100, deadline=None)
@given(two_variable_file(), CHANGES)
def test_property_both_backends_boot_the_same_effective_line(tmp_path_factory, data, changes):
    ensure, remove = changes
    new = kc.grub_default_update(data, 'GRUB_CMDLINE_LINUX', ensure, remove)
    assert sh_effective(new) == dropin_effective(data, ensure, remove, tmp_path_factory.mktemp('dropin'))
    assert kc.grub_default_update(new, 'GRUB_CMDLINE_LINUX', ensure, remove) == new


@pytest.mark.parametrize('chosen, family, major, backend', [
    ('auto', 'Debian', '12', 'grub_dropin'),
    ('auto', 'RedHat', '8', 'grub_default'),
    ('auto', 'RedHat', 8, 'grub_default'),
    ('auto', 'RedHat', '9', 'grubby'),
    ('auto', 'RedHat', '', 'grubby'),
    ('auto', 'Suse', '15', 'auto'),
    ('grubby', 'Debian', '12', 'grubby'),
])
def test_the_role_backend_is_one_rule_for_the_role_and_the_plan(chosen, family, major, backend):
    # roles/kernel_args and host_prep.yml's plan play both call it (filter kernel_args_backend)
    assert kc.role_backend(chosen, family, major) == backend


# What chooses PID 1 or the initramfs shell, the root disk, or turns a protection off (kernel-parameters.txt,
# dracut.cmdline(7), systemd-system.conf), spelled out here rather than read from the module: a key dropped from its
# denylist must fail this test
NEVER_REMOVED = ('init', 'rdinit', 'root', 'rootflags', 'rootfstype', 'nfsroot', 'ro', 'rw', 'resume', 'single',
                 'emergency', 'rescue', 's', 'S', '1', 'break', 'selinux', 'enforcing', 'apparmor', 'security', 'lsm',
                 'lockdown', 'module.sig_enforce', 'ima_appraise', 'ima_policy', 'systemd.unit', 'systemd.debug_shell',
                 'systemd.confirm_spawn', 'systemd.setenv', 'rd.lvm.lv', 'rd.luks.uuid', 'rd.break', 'rd.md.uuid',
                 'mount.usr')


@pytest.mark.parametrize('key', NEVER_REMOVED)
def test_a_remove_pattern_naming_a_boot_or_protection_key_is_refused(key):
    with pytest.raises(kc.CmdlineError) as e:
        kc.validate_patterns(['nomodeset', key])
    hit = str(e.value).split(' would remove ', 1)[1].split(': the collection', 1)[0].split(', ')
    assert key in hit, str(e.value)
    # with a value or a glob on the value too
    with pytest.raises(kc.CmdlineError, match='would remove'):
        kc.validate_patterns([key + '=*'])


def test_remove_patterns_of_the_parameters_the_collection_sets_are_taken():
    kc.validate_patterns(['nomodeset', 'nouveau.modeset=0', 'intel_iommu=*', 'vfio_pci.ids', 'rd.driver.blacklist=*'])


def test_an_unknown_cpu_vendor_is_refused_naming_the_two_known():
    assert kc.iommu_args('intel') == ['intel_iommu=on', 'iommu=pt'] and kc.iommu_args('amd', False) == ['amd_iommu=on']
    with pytest.raises(kc.CmdlineError, match=r"^CPU vendor 'arm' is not intel or amd$"):
        kc.iommu_args('arm')


def test_a_double_quoted_backslash_escapes_only_what_sh_escapes_there():
    # in double quotes a backslash escapes only \ " $ and ` (POSIX sh, 2.2.3); before anything else it stays
    text = 'GRUB_CMDLINE_LINUX="quiet a\\x b\\\\c \\"q\\" \\$d \\`e"\n'
    assert kc.grub_default_get(text, 'GRUB_CMDLINE_LINUX') == sh_value(text.encode()) == 'quiet a\\x b\\c "q" $d `e'


def test_the_host_rule_asks_for_iommu_passthrough_by_default():
    assert kc.host_iommu_args('intel') == ['intel_iommu=on', 'iommu=pt']
    assert kc.host_iommu_args('intel', False) == ['intel_iommu=on']


def test_sh_reads_a_file_with_bytes_that_are_not_utf8():
    # a Latin-1 byte in another variable (a distributor name saved by an old editor): read, kept as a surrogate
    data = b'GRUB_CMDLINE_LINUX="quiet"\nGRUB_DISTRIBUTOR="D\xe9bian"\n'
    assert kc.sh_readings(data, ['GRUB_CMDLINE_LINUX', 'GRUB_DISTRIBUTOR']) == ['quiet', 'D\udce9bian']
