# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel command line editing and comparison, pure Python (no Ansible imports).

An "arg" is one kernel parameter as it appears on the command line (``intel_iommu=on``, ``quiet``).
A "pattern" selects args to remove: a shell-style glob matched against the whole arg or against its
key (the part before ``=``), so ``intel_iommu`` and ``intel_iommu=*`` both remove ``intel_iommu=off``.
Ensuring ``key=value`` implicitly removes every other value of that key, so the result never carries
two contradicting copies (the kernel would silently take one of them).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

# Kernel args end up in files that /bin/sh sources (GRUB drop-ins) and on command lines: allow only a
# conservative character set, so no value can inject shell syntax.
_ARG_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.,:=+/@%-]*$')
_PATTERN_RE = re.compile(r'^[A-Za-z0-9_*?][A-Za-z0-9_.,:=+/@%*?-]*$')
_VAR_LINE_RE = re.compile(r'^(\s*)([A-Z_][A-Z0-9_]*)=(.*)$')

DROPIN_HEADER = "# Managed by gpuvirt.provision (kernel_args role). Local changes are overwritten.\n"


class CmdlineError(ValueError):
    """Invalid input; the message names the offending value."""


def split_cmdline(text):
    """Split a kernel command line into args; double quotes keep spaces inside one arg (kernel rule)."""
    args, cur, quoted, have = [], [], False, False
    for ch in (text or ''):
        if ch == '"':
            quoted = not quoted
            cur.append(ch)
            have = True
        elif ch.isspace() and not quoted:
            if have:
                args.append(''.join(cur))
            cur, have = [], False
        else:
            cur.append(ch)
            have = True
    if have:
        args.append(''.join(cur))
    return args


def arg_key(arg):
    return arg.split('=', 1)[0]


def validate_args(args):
    for arg in args:
        if not isinstance(arg, str) or not _ARG_RE.match(arg):
            raise CmdlineError(
                "kernel arg %r is not allowed: only letters, digits and _ . , : = + / @ %% - may appear "
                "(no spaces, quotes or shell metacharacters)" % (arg,))
    keys = {}
    for arg in args:
        key = arg_key(arg)
        if key in keys and keys[key] != arg:
            raise CmdlineError("kernel args %r and %r set the same key %r twice" % (keys[key], arg, key))
        keys[key] = arg


def validate_patterns(patterns):
    for pat in patterns:
        if not isinstance(pat, str) or not _PATTERN_RE.match(pat):
            raise CmdlineError(
                "remove pattern %r is not allowed: only letters, digits, globs * ? and _ . , : = + / @ %% -"
                % (pat,))


def matches(arg, pattern):
    return fnmatch.fnmatchcase(arg, pattern) or fnmatch.fnmatchcase(arg_key(arg), pattern)


def check_consistent(ensure, remove):
    """An arg that is both ensured and removed is a contradiction the caller must resolve."""
    for arg in ensure:
        for pat in remove:
            if matches(arg, pat):
                raise CmdlineError("kernel arg %r is also matched by remove pattern %r" % (arg, pat))


def _unwanted(arg, ensure, remove):
    if arg in ensure:
        return False
    if any(matches(arg, pat) for pat in remove):
        return True
    return any(arg_key(arg) == arg_key(e) for e in ensure)


def apply(args, ensure, remove):
    """Return ``args`` with unwanted args dropped and missing ensured args appended (order kept)."""
    out = []
    for arg in args:
        if _unwanted(arg, ensure, remove) or arg in out and arg in ensure:
            continue
        out.append(arg)
    out.extend(e for e in ensure if e not in out)
    return out


def compare(current, ensure, remove):
    """Compare a running command line (list of args) with the wanted state.

    Returns ``(missing, unwanted)``: ensured args absent from ``current``, and args in ``current``
    that must go. Either non-empty means the running kernel does not have the wanted args yet.
    """
    missing = [e for e in ensure if e not in current]
    unwanted = [a for a in current if _unwanted(a, ensure, remove)]
    return missing, unwanted


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


def grub_default_get(text, var):
    """Value of a simple ``VAR="..."`` assignment in /etc/default/grub (last one wins, like sh)."""
    value = None
    for line in text.splitlines():
        m = _VAR_LINE_RE.match(line)
        if m and m.group(2) == var:
            value = _unquote(m.group(3))
    return value


def grub_default_edit(text, var, ensure, remove):
    """Edit only our args inside ``VAR`` of /etc/default/grub (EL8 has no grub.d drop-ins).

    The user's other args and every other line stay as they are. ``$`` or backquotes in the value
    mean it is computed by shell code we cannot edit safely: refuse instead of guessing.
    """
    validate_args(ensure)
    validate_patterns(remove)
    check_consistent(ensure, remove)
    lines = text.splitlines(True)
    idx = None
    for i, line in enumerate(lines):
        m = _VAR_LINE_RE.match(line)
        if m and m.group(2) == var:
            idx = i
    if idx is None:
        new = ' '.join(ensure)
        sep = '' if not text or text.endswith('\n') else '\n'
        return text + sep + '%s="%s"\n' % (var, new)
    m = _VAR_LINE_RE.match(lines[idx])
    current = _unquote(m.group(3))
    if '$' in current or '`' in current:
        raise CmdlineError("%s in the grub defaults file is computed (%r); edit it by hand" % (var, current))
    new = ' '.join(apply(split_cmdline(current), ensure, remove))
    eol = '\n' if lines[idx].endswith('\n') else ''
    lines[idx] = '%s%s="%s"%s' % (m.group(1), var, new, eol)
    return ''.join(lines)


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
    add, drop = [], []
    for entry in entries:
        missing, unwanted = compare(entry['args'], ensure, remove)
        add.extend(a for a in missing if a not in add)
        drop.extend(a for a in unwanted if a not in drop)
    return add, drop
