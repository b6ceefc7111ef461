# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which kernel arguments are the collection's, both ways: what a run adds (and so records, host_record.py) and
what a later run may take back. Plain Python (no Ansible imports).

The rule: an argument is ours only when the boot loader did not have it before the collection added it. Taking
back removes only recorded arguments the boot loader still has, and on ``grub_default`` only from
``GRUB_CMDLINE_LINUX`` (where the collection puts them): one that ``GRUB_CMDLINE_LINUX_DEFAULT`` also carries is
the administrator's there, and is kept with the reason.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc

VAR = 'GRUB_CMDLINE_LINUX'


def _unique(items):
    out, seen = [], set()
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def added(before, ensure):
    """The ensured arguments the boot loader lacked before (``before``: every argument it had): ours to record."""
    have = set(before)
    return [arg for arg in ensure if arg not in have]


def owned_after(recorded, new, after):
    """The record after a change: what was recorded plus what was added now, of those the boot loader still has."""
    have = set(after)
    return [arg for arg in _unique(list(recorded or []) + list(new)) if arg in have]


def grub_default_args(text, path=kc.GRUB_DEFAULT_PATH):
    """``(linux, default)``: the arguments of ``GRUB_CMDLINE_LINUX`` and ``GRUB_CMDLINE_LINUX_DEFAULT`` as the
    editor reads the file (its last plain assignment of each). ``default`` is None when the editor cannot read it
    (computed, or set in a form it does not own): nobody can then say the administrator does not carry an argument
    there. A ``GRUB_CMDLINE_LINUX`` the editor cannot read raises CmdlineError (the editor refuses it anyway)."""
    linux = kc.split_cmdline(kc.grub_default_get(text, VAR, path) or '')
    try:
        found = kc._assignments(text, kc.appended_variable(VAR), path)
    except kc.CmdlineError:
        return linux, None
    if found and found[-1][1]['computed']:
        return linux, None
    return linux, kc.split_cmdline(found[-1][1]['value']) if found else []


def _valued_names(args):
    """The names that ``args`` carry with a value (``iommu`` of ``iommu=pt``)."""
    return set(kc.arg_key(arg) for arg in args if '=' in arg)


def _bare_taking_more(arg, valued, where):
    """A kept entry when ``arg`` is a bare flag whose name ``where`` also carries with a value (``valued``): a
    removal by that bare name takes ``name=value`` too. The grub defaults editor matches a bare pattern by name, and
    so does grubby's ``--remove-args`` (rhboot/grubby grubby.c, updateActualImage: an argument without a value
    removes the first element whose name matches, argNameMatch). Else None."""
    if '=' in arg or arg not in valued:
        return None
    return dict(arg=arg, reason='%s also has %s=...: taking back the bare %s would remove that too (the boot loader '
                                'tools remove a bare name with any value); remove %s by hand if it should go'
                                % (where, arg, arg, arg))


def _removal(recorded, present, carried, where, held=None):
    """``(remove, kept, gone)`` for taking back ``recorded`` from ``where``, which has the arguments ``present``
    (and ``carried``, ``present`` among them, with values): gone when not present, kept when a bare flag whose name
    ``carried`` holds with a value (``_bare_taking_more``) or when ``held(arg)`` gives a reason, else removed."""
    remove, kept, gone = [], [], []
    have, valued = set(present), _valued_names(carried)
    for arg in _unique(recorded or []):
        bare = _bare_taking_more(arg, valued, where)
        reason = held(arg) if held and arg in have and not bare else None
        if arg not in have:
            gone.append(arg)
        elif bare:
            kept.append(bare)
        elif reason:
            kept.append(dict(arg=arg, reason=reason))
        else:
            remove.append(arg)
    return remove, kept, gone


def grub_default_removal(recorded, linux, default):
    """``(remove, kept, gone)`` for taking back ``recorded`` from a grub defaults file whose variables hold
    ``linux`` and ``default`` (``grub_default_args``): remove what ``GRUB_CMDLINE_LINUX`` still has, unless the
    appended variable has it too or cannot be read, or it is a bare flag whose name either variable carries with a
    value (``_bare_taking_more``); ``gone``: recorded arguments no longer there at all."""
    appended = set(default or [])

    def held(arg):
        if default is None:
            return '%s cannot be read by the editor: it may carry %s too' % (kc.appended_variable(VAR), arg)
        if arg in appended:
            return '%s carries it too: the administrator\'s there' % kc.appended_variable(VAR)
        return None
    return _removal(recorded, linux, list(linux) + list(default or []), 'the grub defaults file', held)


def grubby_args(entries):
    """Every argument any of grubby's boot entries has."""
    return _unique(arg for entry in entries for arg in entry['args'])


def grubby_removal(recorded, entries):
    """``(remove, kept, gone)``: the recorded arguments some boot entry still has, those kept (a bare flag whose name
    some entry carries with a value: ``_bare_taking_more``), and those no entry has."""
    args = grubby_args(entries)
    return _removal(recorded, args, args, 'a boot entry')


def grubby_after(entries, add, drop):
    """Every argument of the entries after ``grubby --update-kernel=ALL --args=add --remove-args=drop``."""
    dropped = set(drop)
    return _unique([arg for arg in grubby_args(entries) if arg not in dropped] + list(add))


def dropin_is_ours(data):
    """Whether the drop-in's bytes are ours: its first line is the kernel_args role's header."""
    return isinstance(data, bytes) and data.startswith(kc.DROPIN_HEADER.encode('ascii'))


def dropin_args(data):
    """The arguments the drop-in ensures, from its ``# ensure:`` line ([] when it has none)."""
    for line in (data or b'').decode('utf-8', 'replace').splitlines()[:4]:
        if line.startswith('# ensure: '):
            words = line[len('# ensure: '):].split()
            return [] if words == ['-'] else [w for w in words if kc.ARG_RE.fullmatch(w)]
    return []


def still_running(removed, running, kept_by_admin=()):
    """The removed arguments the running kernel still has (a reboot is pending for them), less those the
    administrator's own lines keep (they stay after the reboot too)."""
    have, keep = set(running), set(kept_by_admin)
    return [arg for arg in removed if arg in have and arg not in keep]
