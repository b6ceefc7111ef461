# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the kernel_cmdline module would do on a host, both ways, without doing it. Plain Python (no Ansible
imports).

One function, ``decide``, for the module that acts (plugins/modules/kernel_cmdline.py, which then writes, deletes
or runs grubby and writes the ownership record) and for host_plan (which only reports): the plan and the run take
their decision from the same code, so they cannot drift apart.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import cmdline_owned as owned
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc


def read_dropin(path, read):
    """``(bytes, None)`` of a regular drop-in, ``(None, None)`` when there is none, ``(None, reason)`` when the path
    holds something we never wrote (a link, not a regular file, not ours). Never follows a symbolic link."""
    if os.path.islink(path):
        return None, 'a symbolic link, not the drop-in we wrote'
    if not os.path.lexists(path):
        return None, None
    if not os.path.isfile(path):
        return None, 'not a regular file'
    data = read(path)
    if not owned.dropin_is_ours(data):
        return None, 'its first line is not the kernel_args role\'s header: not written by us'
    return data, None


def admin_args(path, read, tmpdir):
    """The arguments the administrator's /etc/default/grub gives GRUB (both variables, as /bin/sh reads them), or
    None when it cannot be read: those stay on the command line after our drop-in is gone."""
    data = read(path)
    if data is None:
        return []
    try:
        values = kc.sh_readings(data, [owned.VAR, kc.appended_variable(owned.VAR)], path, tmpdir)
    except kc.CmdlineError:
        return None
    return kc.split_cmdline(values[0]) + kc.split_cmdline(values[1])


def _config(kind=None, path=None, old=None, new=None, add=(), drop=()):
    return dict(kind=kind, path=path, old=old, new=new, add=list(add), drop=list(drop))


def _present(backend, ensure, remove, recorded, dropin_path, grub_default_path, read, tmpdir, grubby_info):
    """``(config, now)``: the boot loader change and the backend's owned arguments after it (to record)."""
    if backend == 'grub_dropin':
        d = kc.bootloader_decision(backend, ensure, remove, dropin_path, grub_default_path, read, tmpdir)
        # the drop-in holds only ours: deleting it gives the administrator's lines back as they were
        return _config('write' if d['changed'] else None, d['path'], d['old'], d['new']), list(ensure)
    if backend == 'grub_default':
        # raises CmdlineError naming the file when it is missing or in a form the editor refuses
        d = kc.bootloader_decision(backend, ensure, remove, dropin_path, grub_default_path, read, tmpdir)
        linux, default = owned.grub_default_args(kc.decode_grub_default(d['old'], grub_default_path),
                                                 grub_default_path)
        new_linux, dummy = owned.grub_default_args(kc.decode_grub_default(d['new'], grub_default_path),
                                                   grub_default_path)
        now = owned.owned_after(recorded, owned.added(linux + (default or []), ensure), new_linux)
        return _config('write' if d['changed'] else None, d['path'], d['old'], d['new']), now
    if backend == 'grubby':
        info = grubby_info()
        entries = kc.parse_grubby_info(info)
        d = kc.bootloader_decision(backend, ensure, remove, dropin_path, grub_default_path, read, tmpdir, info)
        # ours: an argument no entry had before (one that some entries had is the administrator's)
        now = owned.owned_after(recorded, owned.added(owned.grubby_args(entries), ensure),
                                owned.grubby_after(entries, d['add'], d['drop']))
        return _config('grubby' if d['changed'] else None, add=d['add'], drop=d['drop']), now
    return _config(), recorded


def _absent(backend, recorded, problem, dropin_path, grub_default_path, read, tmpdir, grubby_info, out):
    """``(config, now, admin_keeps)``: take back what the record (``recorded``, None when malformed) says is ours;
    ``now`` is what stays recorded, ``admin_keeps`` the arguments the administrator's lines keep."""
    if backend == 'grub_dropin':
        data, reason = read_dropin(dropin_path, read)
        if reason:
            out['kept'].append(dict(arg=dropin_path, reason=reason))
            return _config(), recorded, []
        if data is None:
            return _config(), [], []
        ours = owned.dropin_args(data)
        admin = admin_args(grub_default_path, read, tmpdir)
        out['removed'].extend(ours)
        # the administrator's lines come back as they were: what they carry stays after the reboot too
        return _config('delete', dropin_path, data), [], ours if admin is None else admin
    if recorded is None:
        out['kept'].append(dict(arg='*', reason='the record of the kernel arguments is not usable (%s): nothing '
                                                'is taken back' % problem))
        return _config(), None, []
    if not recorded:
        return _config(), [], []
    if backend == 'grub_default':
        data = read(grub_default_path)
        if data is None:
            raise kc.CmdlineError('%s does not exist: is GRUB installed?' % grub_default_path)
        linux, default = owned.grub_default_args(kc.decode_grub_default(data, grub_default_path), grub_default_path)
        remove, kept, dummy = owned.grub_default_removal(recorded, linux, default)
        out['kept'].extend(kept)
        config = _config()
        if remove:
            # exact arguments as patterns (no glob character is allowed in an argument): only these go
            new = kc.grub_default_update(data, owned.VAR, [], remove, grub_default_path, tmpdir)
            config = _config('write' if new != data else None, grub_default_path, data, new, drop=remove)
            out['removed'].extend(remove)
        return config, [k['arg'] for k in kept], [k['arg'] for k in kept]
    if backend == 'grubby':
        remove, kept, dummy = owned.grubby_removal(recorded, kc.parse_grubby_info(grubby_info()))
        out['kept'].extend(kept)
        out['removed'].extend(remove)
        # a kept argument stays recorded (still ours) and, like the grub defaults file's, stays after the reboot
        return _config('grubby' if remove else None, drop=remove), [k['arg'] for k in kept], [k['arg'] for k in kept]
    return _config(), recorded, []


def decide(state, backend, ensure, remove, record, problems, dropin_path, grub_default_path, read, tmpdir=None,
           grubby_info=None):
    """What kernel_cmdline does with ``state`` (present or absent) on ``backend`` (not auto), given the host's
    ownership record as ``host_record.read`` returned it (``record``, ``problems``). ``read`` returns a file's
    bytes or None; ``grubby_info`` is called (only when needed) for the output of ``grubby --info=ALL``.

    Returns a dict: ``config`` (``kind`` None, ``write`` (``path``, ``old``, ``new``), ``delete`` (``path``,
    ``old``) or ``grubby`` (``add``, ``drop``)), ``removed`` and ``kept`` (state absent), ``now`` (the backend's
    owned arguments after the change, None when the record is not usable for absent), ``admin_keeps``,
    ``record`` (the record to write) and ``record_changed``. Raises CmdlineError where the module fails."""
    section = record['kernel_args']
    recorded = None if section is None else section.get(backend, [])
    out = dict(removed=[], kept=[], admin_keeps=[], record=None, record_changed=False)
    if state == 'present':
        config, now = _present(backend, ensure, remove, recorded or [], dropin_path, grub_default_path, read,
                               tmpdir, grubby_info)
    else:
        config, now, out['admin_keeps'] = _absent(backend, recorded, (problems or {}).get('kernel_args'),
                                                  dropin_path, grub_default_path, read, tmpdir, grubby_info, out)
    out.update(config=config, now=now)
    if backend != 'none' and now is not None:
        files = [dropin_path] if backend == 'grub_dropin' and state == 'present' else []
        new_record = host_record.with_files(host_record.with_args(
            dict(record, kernel_args=section or {}), backend, now), 'kernel_args', files)
        # a malformed part of another kind is left as it is on disk unless the record is rewritten anyway
        if host_record.render(new_record) != host_record.render(record) or (problems or {}).get('kernel_args'):
            out.update(record=new_record, record_changed=True)
    return out
