# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel command line editing and comparison, pure Python (no Ansible imports).

An "arg" is one kernel parameter as it appears on the command line (``intel_iommu=on``, ``quiet``).
A "pattern" selects args to remove: a shell-style glob matched against the whole arg or against its
key (the part before ``=``), so ``intel_iommu`` and ``intel_iommu=*`` both remove ``intel_iommu=off``.
Ensuring ``key=value`` implicitly removes every other value of that key, so the result never carries
two contradicting copies (the kernel would silently take one of them).

The "effective" command line is what the kernel acts on: for a repeated parameter the last value wins, so
``intel_iommu=on ... intel_iommu=off`` boots with the IOMMU off. GRUB's normal entry boots
``GRUB_CMDLINE_LINUX`` followed by ``GRUB_CMDLINE_LINUX_DEFAULT``, so an edit that looks at one of them only can
report success while the other undoes it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import re
import signal
import subprocess
import tempfile

# Kernel args end up in files that /bin/sh sources (GRUB drop-ins) and on command lines: allow only a
# conservative character set, so no value can inject shell syntax.
ARG_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.,:=+/@%-]*')
_PATTERN_RE = re.compile(r'[A-Za-z0-9_*?][A-Za-z0-9_.,:=+/@%*?-]*')
# An assignment line of /etc/default/grub: indentation, optional "export", NAME=, then the value as a shell word.
_ASSIGN_RE = re.compile(r'(?P<indent>[ \t]*)(?P<export>export[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=')
_UNQUOTED_SAFE_RE = re.compile(r'[A-Za-z0-9_.,:=+/@%-]+')
_WORD_END = ' \t;&|<>()'
_NAME_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')

GRUB_DEFAULT_PATH = '/etc/default/grub'
# The shell grub-mkconfig runs as (its first line), used to read the defaults file the way it does.
SH = '/bin/sh'
SH_TIMEOUT_S = 30
_SH_MARK = 'gpuvirt-sh-end:'

# The IOMMU switch a GPU host boots with, by CPU vendor (amd_iommu=on is AMD's default: harmless), and iommu=pt
# (pass-through for the host's own DMA): the one rule for a host's boot loader and an OpenShift MachineConfig.
IOMMU_ARGS = {'intel': 'intel_iommu=on', 'amd': 'amd_iommu=on'}
IOMMU_PASSTHROUGH_ARG = 'iommu=pt'
# The kernel_args role's vendor when the IOMMU is switched off: no argument at all, not even iommu=pt.
IOMMU_OFF = 'none'

DROPIN_HEADER = "# Managed by gpuvirt.provision (kernel_args role). Local changes are overwritten.\n"


# The kernel keeps at most COMMAND_LINE_SIZE bytes of its command line (2048 on x86, arch/x86/include/asm/setup.h;
# 4096 on arm64) and silently truncates the rest, which can cut root= or rd.lvm.lv= off the end: the arguments the
# collection adds are bounded well below that, each and together.
ARG_MAX = 1024
ARGS_TOTAL_MAX = 1024


class CmdlineError(ValueError):
    """Invalid input; the message names the offending value."""


def _arg_spans(text):
    """``[(start, end)]`` of each arg of a kernel command line: blanks separate args, double quotes keep blanks
    inside one arg (kernel rule). One pass: linear."""
    spans, start, quoted = [], None, False
    for pos, ch in enumerate(text or ''):
        if ch.isspace() and not quoted:
            if start is not None:
                spans.append((start, pos))
            start = None
            continue
        if start is None:
            start = pos
        if ch == '"':
            quoted = not quoted
    if start is not None:
        spans.append((start, len(text)))
    return spans


def split_cmdline(text):
    """Split a kernel command line into args; double quotes keep spaces inside one arg (kernel rule)."""
    return [text[start:end] for start, end in _arg_spans(text)]


# What a running kernel's command line may hold and be shown (in a result, a message, a reboot reason): the
# grammar of the args the collection writes (ARG_RE), plus the parentheses of GRUB's BOOT_IMAGE=(hd0,gpt2)/vmlinuz
# and one double-quoted value with blanks (dyndbg="file x.c +p"). Anything else - a line of a file that is not a
# command line, bytes that are not text - is counted, never shown.
RUNNING_ARG_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.,:=+/@%()-]*(?:="[A-Za-z0-9_.,:=+/@%() -]*")?')
# A kernel keeps at most COMMAND_LINE_SIZE bytes of its command line (2048 on x86, 4096 on arm64; the kernel's
# arch/*/include/uapi/asm/setup.h): what is read of proc_cmdline is bounded well above that, and a longer file is
# not a running kernel's command line.
PROC_CMDLINE_LIMIT = 64 * 1024


def check_proc_cmdline(path, name='proc_cmdline'):
    """The path of the running kernel's command line: absolute and normalised; raises CmdlineError naming it."""
    if not isinstance(path, str) or not path.startswith('/') or os.path.normpath(path) != path \
            or '\n' in path or '\0' in path or len(path) > 4096:
        raise CmdlineError('%s is %r: expected an absolute path without .., // or a newline, such as /proc/cmdline'
                           % (name, path))
    return path


def running_args(text):
    """``(args, unparseable)``: the args of a running command line that fit RUNNING_ARG_RE, in order, and how many
    tokens did not (never returned, so never echoed back)."""
    tokens = split_cmdline(text)
    args = [t for t in tokens if len(t) <= 4096 and RUNNING_ARG_RE.fullmatch(t)]
    return args, len(tokens) - len(args)


def read_running(path, read_bytes):
    """``running_args`` of the file at ``path``, read with ``read_bytes(path, limit)`` (sysfs.read_bytes: a regular
    file only, never blocking, at most limit + 1 bytes); None when it cannot be read, is not a regular file or is
    longer than PROC_CMDLINE_LIMIT (no kernel command line is)."""
    data = read_bytes(path, PROC_CMDLINE_LIMIT)
    if data is None or len(data) > PROC_CMDLINE_LIMIT:
        return None
    return running_args(data.decode('utf-8', 'replace'))


def unparseable_note(count):
    """The words a message adds for tokens it does not show ('' for none)."""
    return '; %d unparseable token%s not shown' % (count, '' if count == 1 else 's') if count else ''


def arg_key(arg):
    return arg.split('=', 1)[0]


# Parameters the collection never adds nor removes, whoever asks (kernel_args_extra / kernel_args_remove, an inventory
# or a survey): each chooses what runs as PID 1 or in the initramfs (init, rdinit, rd.break, rd.shell, single-user
# and rescue targets), which disk is the root (root, rootflags, the rd.* device and LVM/LUKS/MD selection), or turns
# a protection off (selinux, enforcing, apparmor, security, lsm, lockdown, module.sig_enforce, ima_*). The kernel's
# and dracut's own parameter lists (kernel-parameters.txt, dracut.cmdline(7), systemd-system.conf) name them.
DENIED_KEYS = frozenset((
    'init', 'rdinit', 'root', 'rootflags', 'rootfstype', 'nfsroot', 'ro', 'rw', 'resume', 'single', 'emergency',
    'rescue', 's', 'S', '1', 'break', 'selinux', 'enforcing', 'apparmor', 'security', 'lsm', 'lockdown',
    'module.sig_enforce', 'ima_appraise', 'ima_policy', 'systemd.unit', 'systemd.debug_shell',
    'systemd.confirm_spawn', 'systemd.setenv'))
# dracut's rd.* parameters are denied but for the driver lists (the nouveau blacklist uses rd.driver.blacklist)
DENIED_PREFIXES = ('rd.',)
ALLOWED_RD = frozenset(('rd.driver.blacklist', 'rd.driver.pre', 'rd.driver.post'))


# What the collection adds at all: an allow-list of parameter names (a denylist of dangerous ones always misses
# one: systemd.wants= starts a root shell, an unknown KEY=VALUE becomes PID 1's environment). The IOMMU, VFIO, GPU
# driver and PCI parameters the pools need, and the memory and CPU tuning GPU VM hosts commonly carry.
ALLOWED_KEY = re.compile(
    r'(?:intel_iommu|amd_iommu|iommu|iommu\.[a-z_]+|vfio[-_]pci\.[a-z_]+|vfio[-_]iommu[-_]type1\.[a-z_]+'
    r'|vfio\.[a-z_]+|kvm(?:[-_](?:intel|amd))?\.[a-z_]+|modprobe\.blacklist|rd\.driver\.(?:blacklist|pre|post)'
    r'|nouveau\.[a-z_]+|nvidia(?:[-_](?:drm|modeset|uvm))?\.[A-Za-z0-9_]+|nomodeset|video|pci|pcie_aspm'
    r'|pcie_acs_override|pcie_ports|hugepagesz|hugepages|default_hugepagesz|transparent_hugepage|isolcpus'
    r'|nohz_full|rcu_nocbs|irqaffinity|numa_balancing|intel_pstate|processor\.max_cstate|intel_idle\.max_cstate'
    r'|quiet|splash|rhgb|crashkernel|console|earlyprintk|loglevel|panic|nosmt|rootdelay)')


def denied_key(key):
    """True when the collection must never add or remove the parameter ``key`` (module names use - and _ alike)."""
    norm = key.replace('-', '_')
    if key in DENIED_KEYS or norm in DENIED_KEYS:
        return True
    return key.startswith(DENIED_PREFIXES) and key not in ALLOWED_RD


def validate_args(args):
    for arg in args:
        if isinstance(arg, str) and len(arg) > ARG_MAX:
            raise CmdlineError("kernel arg %r... is %d characters: at most %d are allowed (the kernel truncates a "
                               "command line past 2048 bytes on x86, which can cut root= off)"
                               % (arg[:40], len(arg), ARG_MAX))
        if not isinstance(arg, str) or not ARG_RE.fullmatch(arg):
            raise CmdlineError(
                "kernel arg %r is not allowed: only letters, digits and _ . , : = + / @ %% - may appear "
                "(no spaces, quotes or shell metacharacters)" % (arg,))
        if denied_key(arg_key(arg)) or not ALLOWED_KEY.fullmatch(arg_key(arg)):
            raise CmdlineError(
                "kernel arg %r is not one the collection sets: %r is not an IOMMU, VFIO, GPU driver, PCI, memory or "
                "CPU tuning parameter (what runs at boot, the root disk and protections - init, root, rd.*, "
                "systemd.*, selinux, lockdown - are never set); set it outside the collection if you mean it"
                % (arg, arg_key(arg)))
    total = sum(len(arg) + 1 for arg in args)
    if total > ARGS_TOTAL_MAX:
        raise CmdlineError("the kernel args given are %d characters together: at most %d are allowed (the kernel "
                           "truncates a command line past 2048 bytes on x86, which can cut root= off)"
                           % (total, ARGS_TOTAL_MAX))
    keys = {}
    for arg in args:
        key = arg_key(arg)
        if key in keys and keys[key] != arg:
            raise CmdlineError("kernel args %r and %r set the same key %r twice" % (keys[key], arg, key))
        keys[key] = arg


def iommu_args(cpu_vendor, passthrough=True):
    """``['intel_iommu=on', 'iommu=pt']`` for an Intel host (``amd_iommu=on`` for AMD); no ``iommu=pt`` without
    ``passthrough``."""
    if not isinstance(cpu_vendor, str) or cpu_vendor not in IOMMU_ARGS:
        raise CmdlineError("CPU vendor %r is not %s" % (cpu_vendor, ' or '.join(sorted(IOMMU_ARGS, reverse=True))))
    return [IOMMU_ARGS[cpu_vendor]] + ([IOMMU_PASSTHROUGH_ARG] if passthrough else [])


def host_iommu_args(vendor, passthrough=True):
    """The IOMMU arguments of a host the kernel_args role prepares: ``iommu_args`` for intel or amd, nothing for
    ``'none'`` (the role's vendor when the IOMMU is switched off). ``passthrough`` must be a real boolean: a
    string "false" from -e would otherwise count as true."""
    if not isinstance(passthrough, bool):
        raise CmdlineError("passthrough is %r; expected a boolean" % (passthrough,))
    if vendor == IOMMU_OFF:
        return []
    return iommu_args(vendor, passthrough)


def validate_patterns(patterns):
    for pat in patterns:
        if not isinstance(pat, str) or not _PATTERN_RE.fullmatch(pat):
            raise CmdlineError(
                "remove pattern %r is not allowed: only letters, digits, globs * ? and _ . , : = + / @ %% -"
                % (pat,))
        # a pattern may carry a value (root=*): judge its key part too, and the key with any value
        hit = sorted(k for k in DENIED_KEYS | set(('rd.lvm.lv', 'rd.luks.uuid', 'rd.break', 'rd.md.uuid', 'mount.usr'))
                     if matches(k, pat) or fnmatch.fnmatchcase(k + '=x', pat)
                     or fnmatch.fnmatchcase(k, arg_key(pat)))
        if hit:
            raise CmdlineError(
                "remove pattern %r would remove %s: the collection never removes what chooses the root disk, PID 1 "
                "or a protection; name the arguments to remove more narrowly" % (pat, ', '.join(hit)))


# The files the boot-loader backends write, each where its reader looks (a test tree mirrors the layout): the
# drop-in a .cfg file directly in a grub.d directory, GRUB's defaults file named grub, its config grub.cfg; absolute
# and normalised (no .. nor //), so no value can point a root write at another file.
_DROPIN_NAME = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}[.]cfg')


def check_paths(dropin_path, grub_default_path, grub_config):
    for name, path, ok in (
            ('dropin_path', dropin_path, lambda p: os.path.basename(os.path.dirname(p)) == 'grub.d'
             and _DROPIN_NAME.fullmatch(os.path.basename(p))),
            ('grub_default_path', grub_default_path, lambda p: os.path.basename(p) == 'grub'),
            ('grub_config', grub_config, lambda p: os.path.basename(p) == 'grub.cfg')):
        if not isinstance(path, str) or not path.startswith('/') or os.path.normpath(path) != path \
                or '\n' in path or not ok(path):
            raise CmdlineError(
                '%s %r is not a boot-loader file of the shape its reader reads (a .cfg file directly in a grub.d '
                'directory, a file named grub, a file named grub.cfg; absolute, without .. or //)' % (name, path))


def matches(arg, pattern):
    return fnmatch.fnmatchcase(arg, pattern) or fnmatch.fnmatchcase(arg_key(arg), pattern)


def check_consistent(ensure, remove):
    """An arg that is both ensured and removed is a contradiction the caller must resolve."""
    for arg in ensure:
        for pat in remove:
            if matches(arg, pat):
                raise CmdlineError("kernel arg %r is also matched by remove pattern %r" % (arg, pat))


class _Wanted(object):
    """``ensure`` and ``remove`` as sets and a key table, so judging one arg costs the same however long the
    command line is (a list lookup per arg made a 1 MB GRUB value take minutes)."""

    def __init__(self, ensure, remove):
        self.ensure = set(ensure)
        self.keys = set(arg_key(e) for e in ensure)
        self.remove = list(remove)

    def unwanted(self, arg):
        if arg in self.ensure:
            return False
        if any(matches(arg, pat) for pat in self.remove):
            return True
        return arg_key(arg) in self.keys


def apply(args, ensure, remove):
    """Return ``args`` with unwanted args dropped and missing ensured args appended (order kept)."""
    wanted = _Wanted(ensure, remove)
    out, seen = [], set()
    for arg in args:
        if wanted.unwanted(arg) or arg in seen and arg in wanted.ensure:
            continue
        out.append(arg)
        seen.add(arg)
    for e in ensure:
        if e not in seen:
            out.append(e)
            seen.add(e)
    return out


def compare(current, ensure, remove):
    """Compare a running command line (list of args) with the wanted state.

    Returns ``(missing, unwanted)``: ensured args absent from ``current``, and args in ``current``
    that must go. Either non-empty means the running kernel does not have the wanted args yet.
    """
    have, wanted = set(current), _Wanted(ensure, remove)
    missing = [e for e in ensure if e not in have]
    unwanted = [a for a in current if wanted.unwanted(a)]
    return missing, unwanted


def effective_args(args):
    """The args of a command line the kernel acts on: the last value of each parameter (key) wins, so only the
    last arg of each key is kept, in the order of those last args. One pass: linear."""
    return [pair[0] for pair in _effective_sources([(arg, None) for arg in args])]


def _effective_sources(pairs):
    """``effective_args`` over ``[(arg, source)]``, keeping each winning arg's source (the variable it came from)."""
    seen, out = set(), []
    for arg, source in reversed(pairs):
        key = arg_key(arg)
        if key not in seen:
            seen.add(key)
            out.append((arg, source))
    out.reverse()
    return out


def strip_conflicts(args, ensure, remove):
    """``args`` without the ones that conflict with the wanted state: matched by a remove pattern, or another
    value of an ensured key. Everything else stays, ensured args and repeats included: what the editor leaves
    of the variable GRUB appends after the one it ensures the args in (see ``grub_default_edit``)."""
    wanted = _Wanted(ensure, remove)
    return [arg for arg in args if not wanted.unwanted(arg)]


def dropin_remove_patterns(ensure, remove):
    """Patterns the GRUB drop-in strips from the user's lines: the removals plus every ensured key."""
    pats = list(remove)
    for e in ensure:
        for p in (arg_key(e), arg_key(e) + '=*'):
            if p not in pats:
                pats.append(p)
    return pats


def render_grub_dropin(ensure, remove):
    """Text of a /etc/default/grub.d/*.cfg drop-in.

    grub-mkconfig sources /etc/default/grub, then the drop-ins, with /bin/sh. Instead of copying the
    user's GRUB_CMDLINE_LINUX into our file (which would go stale when they edit it), the drop-in
    filters their values at mkconfig time and appends ours. ``set -f`` (inside the command
    substitution's subshell only) keeps globbing off while splitting the values into words.
    """
    validate_args(ensure)
    validate_patterns(remove)
    check_consistent(ensure, remove)
    pats = dropin_remove_patterns(ensure, remove)
    lines = [DROPIN_HEADER]
    lines.append("# ensure: %s\n" % (' '.join(ensure) or '-'))
    lines.append("# remove: %s\n" % (' '.join(remove) or '-'))
    if pats:
        # a bare pattern also matches the arg's key (see matches()): add "<pattern>=*" for the shell
        case = []
        for p in pats:
            for q in (p, p + '=*') if '=' not in p else (p,):
                if q not in case:
                    case.append(q)
        lines.append(
            "_gpuvirt_filter() { (set -f; o=; for a in $1; do case \"$a\" in %s) ;; "
            "*) o=\"$o $a\" ;; esac; done; printf '%%s' \"${o# }\") }\n" % '|'.join(case))
        lines.append('GRUB_CMDLINE_LINUX="$(_gpuvirt_filter "$GRUB_CMDLINE_LINUX")"\n')
        lines.append('GRUB_CMDLINE_LINUX_DEFAULT="$(_gpuvirt_filter "$GRUB_CMDLINE_LINUX_DEFAULT")"\n')
        lines.append('unset -f _gpuvirt_filter\n')
    if ensure:
        lines.append('GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }%s"\n' % ' '.join(ensure))
    return ''.join(lines)


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
        return value[1:-1]
    return value


def _shell_word(line, pos, where):
    """Read the shell word at ``line[pos:]``: ``(value, end, style, computed)``.

    Quoting as /bin/sh does it: '...' is literal, "..." keeps backslash escapes of \\ " $ ` and newline, outside
    quotes a backslash escapes the next character. ``style`` is the quoting of the whole word (single, double,
    none, mixed); ``computed`` is true when an unquoted or double-quoted $ or backquote makes the value depend on
    shell code. One pass over the line: linear time."""
    out, styles, computed, n = [], set(), False, len(line)
    while pos < n and line[pos] not in _WORD_END:
        ch = line[pos]
        if ch == "'":
            end = line.find("'", pos + 1)
            if end < 0:
                raise CmdlineError('%s: unterminated single quote; expected the value to close on this line' % where)
            out.append(line[pos + 1:end])
            styles.add('single')
            pos = end + 1
        elif ch == '"':
            pos += 1
            styles.add('double')
            while True:
                if pos >= n:
                    raise CmdlineError('%s: unterminated double quote; expected the value to close on this line'
                                       % where)
                c = line[pos]
                if c == '"':
                    pos += 1
                    break
                if c == '\\' and pos + 1 < n and line[pos + 1] in '\\"$`':
                    out.append(line[pos + 1])
                    pos += 2
                    continue
                if c in '$`':
                    computed = True
                out.append(c)
                pos += 1
        elif ch == '\\':
            if pos + 1 >= n:
                raise CmdlineError('%s: a backslash continues the value on the next line; expected it on one line'
                                   % where)
            out.append(line[pos + 1])
            styles.add('none')
            pos += 2
        elif ch == '`' or line.startswith('$(', pos):
            # command substitution: the value is computed; keep the rest of the line as it is, unparsed
            out.append(line[pos:])
            return ''.join(out), n, 'mixed', True
        else:
            if ch == '$':
                computed = True
            out.append(ch)
            styles.add('none')
            pos += 1
    style = styles.pop() if len(styles) == 1 else ('none' if not styles else 'mixed')
    return ''.join(out), pos, style, computed


def _parse_assignment(body, where):
    """The assignment at the start of ``body`` (a line without its end of line), as a dict: indent, export, name,
    value, style, computed and trailer (blanks and a comment after the value, kept verbatim). Anything else after
    the value (a second word, ``;`` and another command) is refused: such a line is not a single shell
    assignment."""
    m = _ASSIGN_RE.match(body)
    value, end, style, computed = _shell_word(body, m.end(), where)
    trailer = body[end:]
    rest = trailer.lstrip(' \t')
    if rest and not rest.startswith('#'):
        raise CmdlineError('%s is not a single shell assignment (%r follows the value); expected NAME="value" with '
                           'an optional comment: edit it by hand' % (where, rest[:50]))
    return {'indent': m.group('indent'), 'export': m.group('export') or '', 'name': m.group('name'),
            'value': value, 'style': style, 'computed': computed, 'trailer': trailer, 'where': where}


def _quote(value, style):
    if style == 'single' and "'" not in value:
        return "'%s'" % value
    if style == 'none' and _UNQUOTED_SAFE_RE.fullmatch(value):
        return value
    return '"%s"' % ''.join('\\' + c if c in '\\"$`' else c for c in value)


def _lines(text):
    """``text`` cut after each newline, the newline kept. Only a newline ends a line for /bin/sh: a form feed, a
    lone carriage return or U+2028 (where str.splitlines cuts) is part of the line."""
    parts = text.split('\n')
    out = [part + '\n' for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _body(line):
    """The line without its end of line: the newline and the carriage returns before it (CRLF files)."""
    return line.rstrip('\r\n')


def _scan(body, state, hits=()):
    """The quoting in force after ``body`` when ``state`` was in force before it: None (a new command may start
    on the next line), a quote character (a quoted value goes on), or a backslash (the line continues); and
    ``[(pos, quoting)]`` for each position of ``hits`` that is shell code (quoting None) or inside double quotes
    ('"'). A hit inside single quotes, after a backslash or in a comment is plain text and not listed. One pass
    over the line."""
    pos, n, found = 0, len(body), []
    while pos < n:
        if state == "'":
            end = body.find("'", pos)
            if end < 0:
                return state, found
            state, pos = None, end + 1
            continue
        if pos in hits:
            found.append((pos, state))
        ch = body[pos]
        if ch == '\\':
            if pos + 1 >= n:
                return state or '\\', found
            pos += 2
            continue
        if state == '"':
            if ch == '"':
                state = None
        elif ch in '"\'':
            state = ch
        elif ch == '#' and (pos == 0 or body[pos - 1] in ' \t;&|()'):
            return None, found
        pos += 1
    return state, found


def _sets_by_expansion(body, pos, var):
    """``${VAR=word}`` and ``${VAR:=word}`` assign VAR while they expand."""
    return body.endswith('${', 0, pos) and body.startswith(('=', ':='), pos + len(var))


def _reads(body, pos):
    """``$VAR``, ``${VAR}``, ``${#VAR}`` and the other ``${VAR...}`` forms read VAR."""
    return body.endswith(('$', '${', '${#'), 0, pos)


def _where(path, number, body):
    return '%s line %d (%r)' % (path, number, body[:200])


def _assignments(text, var, path):
    """``[(index, assignment)]`` for every line that assigns ``var`` in the one form the editor owns: a plain
    ``[export] VAR=value`` at the start of a line, alone on it (a trailing comment aside).

    Any other place where shell code names ``var`` (after ``;``, ``&&`` or a backslash continuation, after
    ``readonly``, ``unset`` or ``read``, as ``${VAR:=...}``) is refused, naming the line: /bin/sh would set the
    variable there and the editor would not see it. Reading it (``$VAR``) is fine. A line inside a quoted value
    or a comment is no shell code, so a value of another variable that spans lines (or merely holds the name) is
    read past and kept byte for byte."""
    name_re = re.compile(r'(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])' % re.escape(var))
    found, state, opened = [], None, 0
    for number, line in enumerate(_lines(text), 1):
        body = _body(line)
        at_start = state is None
        if at_start:
            opened = number
        hits = set(m.start() for m in name_re.finditer(body)) if var in body else ()
        owned = _ASSIGN_RE.match(body) if at_start and hits else None
        state, named = _scan(body, None if state == '\\' else state, hits)
        for pos, quoting in named:
            where = _where(path, number, body)
            sets = _sets_by_expansion(body, pos, var)
            if not sets and (_reads(body, pos) or quoting == '"'):
                continue
            if not sets and owned and pos == owned.start('name'):
                found.append((number - 1, _parse_assignment(body, where)))
                continue
            raise CmdlineError(
                '%s sets or names %s in a form the editor does not own; expected one plain assignment alone on '
                'a line, %s="..." (export and a trailing comment allowed): rewrite it so and run again'
                % (where, var, var))
    if state is not None:
        raise CmdlineError('%s line %d: %s opened there is not closed by the end of the file; expected the grub '
                           'defaults file to be complete shell assignments: fix it by hand'
                           % (path, opened, 'a backslash continuation' if state == '\\' else 'the quote %s' % state))
    return found


def appended_variable(var):
    """The variable GRUB appends after ``var`` on the normal boot entry: grub-mkconfig's 10_linux boots
    ``${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}`` (the recovery entry the first alone); the other
    ``GRUB_CMDLINE_*`` variables pair the same way."""
    return var + '_DEFAULT'


def grub_default_get(text, var, path=GRUB_DEFAULT_PATH):
    """Value of ``VAR`` in /etc/default/grub (``export VAR=...`` too; the last assignment wins, like sh)."""
    found = _assignments(text, var, path)
    return found[-1][1]['value'] if found else None


def grub_default_effective(text, var='GRUB_CMDLINE_LINUX', path=GRUB_DEFAULT_PATH):
    """The effective command line (``effective_args``) of GRUB's normal entry as the editor reads the file:
    ``var`` then ``appended_variable(var)``. A computed value is refused: only /bin/sh can read it."""
    args = []
    for name in (var, appended_variable(var)):
        found = _assignments(text, name, path)
        if found:
            a = found[-1][1]
            if a['computed']:
                raise CmdlineError("%s in the grub defaults file is computed (%s); only /bin/sh can read it"
                                   % (name, a['where']))
            args.extend(split_cmdline(a['value']))
    return effective_args(args)


def _odd_character(value):
    """The first character of a kernel command line value that is neither printable nor a plain space or tab,
    shown as U+XXXX; None when there is none."""
    for ch in value:
        if ch in ' \t':
            continue
        if ch.isspace() or not ch.isprintable():
            return 'U+%04X' % ord(ch)
    return None


def _refuse_odd(a, var):
    odd = _odd_character(a['value'])
    if odd is not None:
        # The editor re-joins or cuts the arguments at blanks: a no-break space, form feed or other Unicode space
        # inside an argument would be rewritten, and GRUB (space, tab, newline) and the kernel (its own ctype) split
        # on different characters anyway, so nobody can say which arguments such a value holds.
        raise CmdlineError("%s in the grub defaults file holds the character %s (%s), which GRUB and the kernel "
                           "split differently; replace it with a plain space by hand" % (var, odd, a['where']))


def _assignment_line(line, a, var, value):
    """``line`` (an owned assignment of ``var``, parsed as ``a``) with ``value``: indentation, ``export``, quoting
    style, trailing comment and end of line (CRLF too) kept."""
    eol = line[len(_body(line)):]
    return '%s%s%s=%s%s%s' % (a['indent'], a['export'], var, _quote(value, a['style']), a['trailer'], eol)


def _without(value, keep):
    """``value`` without the args not in ``keep``, each cut with the blanks before it (after it, for the first
    arg): every other character of the value stays as written."""
    spans = _arg_spans(value)
    if not spans:
        return value
    out, kept, last_end = [value[:spans[0][0]]], False, None
    for start, end in spans:
        if value[start:end] in keep:
            if kept:
                out.append(value[last_end:start])
            out.append(value[start:end])
            kept = True
        last_end = end
    out.append(value[last_end:])
    return ''.join(out)


def _edit(text, var, ensure, remove, path):
    """``grub_default_edit``, and why the appended variable was left as it is (None when the editor read it):
    the /bin/sh cross-check names that reason if the effective line still conflicts."""
    validate_args(ensure)
    validate_patterns(remove)
    check_consistent(ensure, remove)
    lines = _lines(text)
    found = _assignments(text, var, path)
    if found:
        idx, a = found[-1]
        if a['computed']:
            raise CmdlineError("%s in the grub defaults file is computed (%s); edit it by hand" % (var, a['where']))
        _refuse_odd(a, var)
        current = split_cmdline(a['value'])
        wanted = apply(current, ensure, remove)
        if wanted != current:
            lines[idx] = _assignment_line(lines[idx], a, var, ' '.join(wanted))
    # The appended variable only ever loses the args that conflict with ours (the drop-in filters it the same
    # way): our args go to ``var`` alone. One the editor cannot read is left to /bin/sh's reading, which refuses
    # it only if it holds a conflict.
    after, left = appended_variable(var), None
    try:
        after_found = _assignments(text, after, path)
    except CmdlineError as e:
        after_found, left = [], str(e)
    if after_found:
        idx, a = after_found[-1]
        if a['computed']:
            left = '%s is computed (%s)' % (after, a['where'])
        else:
            _refuse_odd(a, after)
            value = _without(a['value'], set(strip_conflicts(split_cmdline(a['value']), ensure, remove)))
            if value != a['value']:
                lines[idx] = _assignment_line(lines[idx], a, after, value)
    new = ''.join(lines)
    if not found:
        eol = '\r\n' if lines and lines[0].endswith('\r\n') else '\n'
        sep = '' if not text or text.endswith('\n') else eol
        new += sep + '%s="%s"%s' % (var, ' '.join(ensure), eol)
    return new, left


def grub_default_edit(text, var, ensure, remove, path=GRUB_DEFAULT_PATH):
    """Edit only our args inside ``VAR`` of /etc/default/grub (EL8 has no grub.d drop-ins), and take the args
    that conflict with ours out of ``VAR_DEFAULT``, which GRUB boots after it (``appended_variable``).

    Each edited line keeps its indentation, ``export``, quoting style, trailing comment and end of line (CRLF
    too); in ``VAR_DEFAULT`` only the conflicting args go, the rest of the value as written. Every other line
    stays byte for byte, and nothing changes when the args are already right. ``$`` or backquotes in ``VAR``
    mean it is computed by shell code we cannot edit safely: refuse instead of guessing. So does a file that
    sets ``VAR`` in any form but the one the editor owns (see ``_assignments``). A ``VAR_DEFAULT`` the editor
    cannot read (computed, or set in a form it does not own) is refused too: without /bin/sh's reading nobody can
    say whether it undoes our args; ``grub_default_update`` has that reading and goes on when it does not.
    """
    new, left = _edit(text, var, ensure, remove, path)
    if left is not None:
        raise CmdlineError('%s; without /bin/sh reading the file the editor cannot tell whether it holds an argument '
                           'that overrides ours: edit it by hand' % left)
    return new


def decode_grub_default(data, path=GRUB_DEFAULT_PATH):
    """The text of a grub defaults file read as bytes; a file that is not UTF-8 is refused, naming it."""
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as e:
        raise CmdlineError('%s is not UTF-8 text (byte 0x%02x at offset %d); expected a UTF-8 (or ASCII) grub '
                           'defaults file: convert it (for example iconv -f LATIN1 -t UTF-8) and run again'
                           % (path, bytearray(data[e.start:e.start + 1])[0], e.start))


def sh_readings(data, names, path=GRUB_DEFAULT_PATH, tmpdir=None, timeout=SH_TIMEOUT_S):
    """The values /bin/sh gives the variables ``names`` after sourcing ``data`` (the bytes of a grub defaults
    file), as a list: one run of the file for all of them.

    grub-mkconfig reads /etc/default/grub with ``. "${sysconfdir}/default/grub"`` under /bin/sh, so this is the
    consumer's own reading. The bytes go to a temporary file in ``tmpdir`` that the shell gets as ``$1`` (never
    inside the command string), in an empty environment, with stdin from /dev/null and a time limit. Sourcing
    runs whatever commands the file holds, as grub-mkconfig does on each run. The file's own output goes to
    stderr; a marker before the values proves the shell got to the end, and a NUL (which no shell value can
    hold) ends each value."""
    for var in names:
        if len(var) > 64 or not _NAME_RE.fullmatch(var):
            raise CmdlineError('variable name %r is not a shell name' % (var,))
    fd, tmp = tempfile.mkstemp(prefix='gpuvirt-grub-', dir=tmpdir)
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
        script = '. "$1" >&2 </dev/null; printf "%s%s" %s' % (
            _SH_MARK, '%s\\000' * len(names), ' '.join('"${%s-}"' % var for var in names))
        # a session of its own: on timeout the whole group goes, children that hold the pipes open included
        proc = subprocess.Popen([SH, '-c', script, 'sh', tmp], env={}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise CmdlineError('%s: %s did not finish reading it within %d s; expected the grub defaults file to be '
                               'plain assignments: fix it by hand' % (path, SH, timeout))
    finally:
        os.unlink(tmp)
    values = out.decode('utf-8', 'surrogateescape')[len(_SH_MARK):].split('\0')
    if proc.returncode != 0 or not out.startswith(_SH_MARK.encode()) or len(values) != len(names) + 1:
        raise CmdlineError('%s: %s could not read it (exit status %d: %s); expected a file grub-mkconfig can source: '
                           'fix it by hand' % (path, SH, proc.returncode,
                                               err.decode('utf-8', 'replace').strip()[-300:] or 'no message'))
    return values[:-1]


def sh_reading(data, var, path=GRUB_DEFAULT_PATH, tmpdir=None, timeout=SH_TIMEOUT_S):
    """The value /bin/sh gives ``var`` after sourcing ``data`` (``sh_readings`` of one variable)."""
    return sh_readings(data, [var], path, tmpdir, timeout)[0]


def _shown(value):
    return repr(value) if len(value) <= 300 else '%r... (%d characters)' % (value[:300], len(value))


def _check_moved(before, after, expected, var, path, how):
    if split_cmdline(after) != expected:
        raise CmdlineError(
            '%s: /bin/sh reads %s as %s before the edit and %s after it, not %s (%s); nothing was written: set the '
            'arguments in that file by hand' % (path, var, _shown(before), _shown(after), _shown(' '.join(expected)),
                                                how))


def check_sh_edit(before, after, ensure, remove, var, path=GRUB_DEFAULT_PATH, left=None):
    """Refuse unless /bin/sh's readings after the edit are right; ``before`` and ``after`` are its readings of
    ``(var, appended_variable(var))``, ``left`` why the editor left the appended variable alone (or None).

    ``var`` must read as before plus the added args, minus the removed ones, and the appended variable (when the
    editor read it) as before without the args that conflict: the editor's parser and the consumer's must agree
    before anything is written. And the effective command line GRUB boots (``var``, then the appended variable,
    the last value of each parameter winning) must hold every ensured arg and nothing removed, judged from the
    wanted args alone, so no reading of a single variable can hide an ``intel_iommu=off`` the kernel takes last."""
    after_var = appended_variable(var)
    changes = '%s ensured and %s removed' % (' '.join(ensure) or 'none', ' '.join(remove) or 'none')
    _check_moved(before[0], after[0], apply(split_cmdline(before[0]), ensure, remove), var, path,
                 'the old arguments with ' + changes)
    pairs = [(arg, var) for arg in split_cmdline(after[0])] + [(arg, after_var) for arg in split_cmdline(after[1])]
    effective = _effective_sources(pairs)
    wanted, ours = _Wanted(ensure, remove), dict((arg_key(e), e) for e in ensure)
    for arg, source in effective:
        if wanted.unwanted(arg):
            why = ('overrides %s' % ours[arg_key(arg)] if arg_key(arg) in ours
                   else 'is matched by the remove pattern %s' % next(p for p in remove if matches(arg, p)))
            reason = ('the editor cannot take it out: %s' % left if left and source == after_var
                      else 'the editor did not take it out (the file sets %s in a way only /bin/sh sees)' % source)
            raise CmdlineError(
                '%s: %s in %s %s on the effective command line /bin/sh reads after the edit (%s, then %s, the last '
                'value of a parameter winning), and %s; nothing was written: remove %s from %s in %s by hand'
                % (path, arg, source, why, var, after_var, reason, arg, source, path))
    line = [pair[0] for pair in effective]
    have = set(line)
    missing = [e for e in ensure if e not in have]
    if missing:
        raise CmdlineError('%s: the effective command line /bin/sh reads after the edit (%s, then %s) is %s, without '
                           '%s; nothing was written: set the arguments in that file by hand'
                           % (path, var, after_var, _shown(' '.join(line)), ' '.join(missing)))
    if left is None:
        # a value the editor left alone may read ``var`` ("$GRUB_CMDLINE_LINUX quiet") and so move with it
        _check_moved(before[1], after[1], strip_conflicts(split_cmdline(before[1]), ensure, remove), after_var, path,
                     'the old arguments without those that conflict with ' + changes)


def grub_default_update(data, var, ensure, remove, path=GRUB_DEFAULT_PATH, tmpdir=None, timeout=SH_TIMEOUT_S):
    """The bytes of the grub defaults file with our args in ``var`` and the conflicting ones out of
    ``appended_variable(var)``: ``grub_default_edit`` on the text, cross-checked with /bin/sh (``check_sh_edit``)
    before the caller writes anything. Unchanged bytes come back when nothing is to do, and even then /bin/sh
    must already read the wanted effective command line."""
    new, left = _edit(decode_grub_default(data, path), var, ensure, remove, path)
    new = new.encode('utf-8')
    names = (var, appended_variable(var))
    before = sh_readings(data, names, path, tmpdir, timeout)
    after = before if new == data else sh_readings(new, names, path, tmpdir, timeout)
    check_sh_edit(before, after, ensure, remove, var, path, left)
    return new


def parse_grubby_info(text):
    """Parse ``grubby --info=ALL`` into ``[{'kernel': path, 'args': [..]}]``."""
    entries, cur = [], None
    for line in text.splitlines():
        if '=' not in line:
            continue
        key, value = line.split('=', 1)
        value = _unquote(value)
        if key == 'index':
            cur = {'kernel': None, 'args': []}
            entries.append(cur)
        elif cur is not None and key == 'kernel':
            cur['kernel'] = value
        elif cur is not None and key == 'args':
            cur['args'] = split_cmdline(value)
    return [e for e in entries if e['kernel']]


def grubby_changes(entries, ensure, remove):
    """Args to pass to ``grubby --update-kernel=ALL --args=... --remove-args=...`` (empty: nothing to do)."""
    add, drop = _Union(), _Union()
    for entry in entries:
        missing, unwanted = compare(entry['args'], ensure, remove)
        add.extend(missing)
        drop.extend(unwanted)
    return add.items, drop.items


class _Union(object):
    """Items in first-seen order without repeats; a set answers "seen?" so many entries stay linear."""

    def __init__(self):
        self.items, self._seen = [], set()

    def extend(self, items):
        for item in items:
            if item not in self._seen:
                self._seen.add(item)
                self.items.append(item)


def role_backend(chosen, os_family, major_version):
    """The backend the kernel_args role asks the module for, and host_plan plans with: ``chosen`` unless it is
    ``auto``; else by the OS (Debian and Ubuntu ``grub_dropin``, Red Hat 8 ``grub_default``, a later Red Hat
    ``grubby``); ``auto`` elsewhere, where the module picks by what the host has (pick_backend)."""
    if chosen != 'auto':
        return chosen
    if os_family == 'Debian':
        return 'grub_dropin'
    if os_family == 'RedHat':
        try:
            major = int(major_version)
        except (TypeError, ValueError):
            major = 0
        return 'grub_default' if major == 8 else 'grubby'
    return 'auto'


def pick_backend(isdir, which):
    """The backend of ``backend: auto``: ``grub_dropin`` where GRUB reads drop-ins and ``update-grub`` exists
    (Debian, Ubuntu), else ``grubby`` where it exists, else ``grub_default``. ``isdir`` and ``which`` look at the
    host (os.path.isdir, AnsibleModule.get_bin_path)."""
    if isdir('/etc/default/grub.d') and which('update-grub'):
        return 'grub_dropin'
    if which('grubby'):
        return 'grubby'
    return 'grub_default'


def bootloader_decision(backend, ensure, remove, dropin_path, grub_default_path, read, tmpdir=None,
                        grubby_info=None):
    """What ``backend`` would change in the boot loader configuration: the one decision of the kernel_cmdline
    module (which then writes) and of host_plan (which only reports). ``read`` returns a file's bytes or None.

    Returns a dict: ``changed``; for a file backend ``path``, ``old`` (bytes or None) and ``new`` (bytes); for
    grubby ``add`` and ``drop`` (the arguments ``grubby --update-kernel=ALL`` would add and remove, from
    ``grubby_info``, the output of ``grubby --info=ALL``). ``none`` changes nothing."""
    out = dict(changed=False, path=None, old=None, new=None, add=[], drop=[])
    if backend == 'grub_dropin':
        old = read(dropin_path)
        new = render_grub_dropin(ensure, remove).encode('utf-8')
        out.update(path=dropin_path, old=old, new=new, changed=old != new)
    elif backend == 'grub_default':
        data = read(grub_default_path)
        if data is None:
            raise CmdlineError('%s does not exist: is GRUB installed?' % grub_default_path)
        # edited by the parser, then cross-checked with /bin/sh reading the old and the new bytes
        new = grub_default_update(data, 'GRUB_CMDLINE_LINUX', ensure, remove, grub_default_path, tmpdir)
        out.update(path=grub_default_path, old=data, new=new, changed=new != data)
    elif backend == 'grubby':
        add, drop = grubby_changes(parse_grubby_info(grubby_info or ''), ensure, remove)
        out.update(add=add, drop=drop, changed=bool(add or drop))
    elif backend != 'none':
        raise CmdlineError('backend %r is not one of grub_dropin, grub_default, grubby, none' % (backend,))
    return out
