# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ownership record on a host: what the collection added that carries no mark of its own, so that a later run
can take back exactly that and nothing else. Plain Python (no Ansible imports).

A kernel argument is one word on a line the administrator shares with us (``GRUB_CMDLINE_LINUX`` of
``/etc/default/grub``, grubby's entries): nothing in the word says who put it there. The collection writes it
here when it adds it, only when the boot loader did not have it before (an ``intel_iommu=on`` that was there first
is the administrator's), per boot-loader backend, with the files it wrote for that (the GRUB drop-in).

The record is host data: anyone root on the host may have edited it, and a run reads it before deciding what to
remove. So it is read without following a symbolic link, bounded in size, parsed with a strict schema, and every
argument in it must be one the collection could have added (the kernel_cmdline allow-list and denied keys): a
record naming ``root=...`` is malformed, never a reason to remove ``root=``. A malformed part takes back nothing
of its kind, and the reader says why; it never raises on any bytes.

Shape (version 1)::

    {"version": 1,
     "kernel_args": {"grub_default": ["intel_iommu=on", "iommu=pt"]},
     "files": {"kernel_args": ["/etc/default/grub.d/90-gpuvirt-kernel-args.cfg"]}}
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import stat

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc

VERSION = 1
DEFAULT_PATH = '/var/lib/gpuvirt-provision/host-state.json'
# The record's directory is the collection's own: a path elsewhere is refused (a value from an inventory or -e
# must not point a root write at another file).
DIRECTORY = 'gpuvirt-provision'
# A record holds a few dozen words; anything larger is not ours and is not read whole.
MAX_BYTES = 64 * 1024
MAX_ITEMS = 64
BACKENDS = ('grub_dropin', 'grub_default', 'grubby')
# The roles whose written files the record lists.
FILE_KINDS = ('kernel_args',)
KINDS = ('kernel_args', 'files')
_NAME_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\.json')
_FILE_RE = re.compile(r'(?:/[A-Za-z0-9_][A-Za-z0-9_.+-]{0,254}){1,16}')


class RecordError(ValueError):
    """A record path or content the collection does not use; the message names it."""


def check_path(path, name='record_path'):
    """``path`` when it is an absolute, normalised ``*.json`` file directly in a ``gpuvirt-provision``
    directory, else RecordError naming ``name``."""
    if not isinstance(path, str) or not path.startswith('/') or os.path.normpath(path) != path \
            or os.path.basename(os.path.dirname(path)) != DIRECTORY or not _NAME_RE.fullmatch(os.path.basename(path)):
        raise RecordError('%s %r is not a record file of the collection: expected an absolute *.json path directly '
                          'in a %s directory, such as %s' % (name, path, DIRECTORY, DEFAULT_PATH))
    return path


def empty():
    return {'version': VERSION, 'kernel_args': {}, 'files': {}}


def _args(value, where):
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise RecordError('%s is not a list of at most %d kernel arguments' % (where, MAX_ITEMS))
    try:
        kc.validate_args(value)
    except kc.CmdlineError as e:
        raise RecordError('%s: %s' % (where, e))
    if len(set(value)) != len(value):
        raise RecordError('%s lists an argument twice' % where)
    return list(value)


def _files(value, where):
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise RecordError('%s is not a list of at most %d paths' % (where, MAX_ITEMS))
    for path in value:
        if not isinstance(path, str) or not _FILE_RE.fullmatch(path) or os.path.normpath(path) != path:
            raise RecordError('%s: %r is not an absolute path of letters, digits and _ . + -' % (where, path))
    if len(set(value)) != len(value):
        raise RecordError('%s lists a path twice' % where)
    return list(value)


def _section(value, keys, check, where):
    if not isinstance(value, dict):
        raise RecordError('%s is not an object' % where)
    unknown = sorted(k for k in value if k not in keys)
    if unknown:
        raise RecordError('%s has the unknown key %r (expected some of %s)' % (where, unknown[0], ', '.join(keys)))
    return dict((k, check(v, '%s.%s' % (where, k))) for k, v in value.items())


_SECTIONS = {
    'kernel_args': (BACKENDS, _args),
    'files': (FILE_KINDS, _files),
}


def parse(data):
    """``(record, problems)`` from the bytes of a record (None: no record). ``record`` always has every kind; a kind
    that did not pass the schema is None in it (take back nothing of that kind), and ``problems`` says why, as
    ``{kind: reason}``. A record that is not one JSON object of version 1 leaves every kind None. Never raises."""
    record, problems = empty(), {}
    if data is None:
        return record, problems
    try:
        if not isinstance(data, bytes) or len(data) > MAX_BYTES:
            raise RecordError('larger than %d bytes' % MAX_BYTES)
        value = json.loads(data.decode('utf-8'))
        if not isinstance(value, dict):
            raise RecordError('not a JSON object')
        # an integer exactly (1.0 and true equal 1 in Python; the collection never writes them)
        version = value.get('version')
        if not isinstance(version, int) or isinstance(version, bool) or version != VERSION:
            raise RecordError('version is %r, expected %d' % (value.get('version'), VERSION))
        unknown = sorted(k for k in value if k not in KINDS + ('version',))
        if unknown:
            raise RecordError('unknown key %r' % unknown[0])
    except (RecordError, ValueError, UnicodeDecodeError, RecursionError) as e:
        return _unreadable('is not a record of this collection (%s)' % (str(e)[:200] or type(e).__name__))
    for kind in KINDS:
        keys, check = _SECTIONS[kind]
        try:
            record[kind] = _section(value.get(kind, {}), keys, check, kind)
        except (RecordError, RecursionError) as e:
            record[kind] = None
            problems[kind] = str(e)[:300]
    return dict(record, version=VERSION), problems


def render(record):
    """The bytes of ``record`` (every kind present and valid: a kind that is None renders as empty, so a malformed
    part is replaced, never written back). Sorted keys, one trailing newline: the same record, the same bytes."""
    out = {'version': VERSION}
    for kind in KINDS:
        keys, check = _SECTIONS[kind]
        section = record.get(kind) or {}
        out[kind] = dict((k, check(v, '%s.%s' % (kind, k))) for k, v in sorted(section.items())
                         if k in keys and v)
    return (json.dumps(out, sort_keys=True, indent=1) + '\n').encode('ascii')


def read(path):
    """``(record, problems)`` of the record at ``path`` (``parse``), never following a symbolic link: a link, a
    directory or another kind of file there is a problem of every kind, not a record. Never raises for what is
    on the host (a path that fails ``check_path`` raises RecordError)."""
    check_path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return parse(None)
    except OSError as e:
        return _unreadable('cannot be read (%s)' % e.strerror)
    if stat.S_ISLNK(st.st_mode):
        return _unreadable('is a symbolic link, not a record we wrote')
    if not stat.S_ISREG(st.st_mode):
        return _unreadable('is not a regular file')
    if st.st_size > MAX_BYTES:
        return _unreadable('is larger than %d bytes' % MAX_BYTES)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
        with os.fdopen(fd, 'rb') as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        return _unreadable('cannot be read (%s)' % e.strerror)
    return parse(data)


def _unreadable(reason):
    return dict(dict((k, None) for k in KINDS), version=VERSION), dict((k, 'the record %s' % reason) for k in KINDS)


def write(path, record):
    """Write ``record`` to ``path`` atomically: a temporary file beside it, created exclusively and never through
    a symbolic link, mode 0644, flushed to disk, then renamed over the record. The directory is created (0755)
    when missing; a directory, the record or the temporary name that is a symbolic link is refused (RecordError):
    a planted link would turn this root write into one of another file."""
    check_path(path)
    data = render(record)
    parent = os.path.dirname(path)
    for d in (os.path.dirname(parent), parent):
        if os.path.islink(d):
            raise RecordError('%s is a symbolic link: refusing to write the record through it' % d)
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o755)
        if os.path.islink(parent) or not os.path.isdir(parent):
            raise RecordError('%s is not a directory: refusing to write the record there' % parent)
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
        raise RecordError('%s is a symbolic link or not a regular file: refusing to replace it' % path)
    tmp = os.path.join(parent, '.%s.gpuvirt-tmp' % os.path.basename(path))
    if os.path.lexists(tmp):
        if os.path.islink(tmp) or not os.path.isfile(tmp):
            raise RecordError('%s is in the way and is not a regular file: remove it' % tmp)
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    try:
        with os.fdopen(fd, 'wb') as f:
            # the mode is set on the open descriptor: a chmod by name after the close would follow whatever was
            # swapped in at the temporary name (a link to /etc/shadow made world-readable)
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return data


def _with_entry(record, section, key, values):
    """``record`` (not changed) with ``key`` of its ``section`` set to a copy of ``values``; an empty list drops
    the key."""
    entries = dict(record.get(section) or {})
    if values:
        entries[key] = list(values)
    else:
        entries.pop(key, None)
    return dict(record, **{section: entries})


def with_args(record, backend, args):
    """``record`` with the arguments of ``backend`` set to ``args`` (an empty list drops the backend)."""
    return _with_entry(record, 'kernel_args', backend, args)


def with_files(record, kind, files):
    """``record`` with the files of ``kind`` set to ``files`` (an empty list drops the kind)."""
    return _with_entry(record, 'files', kind, files)
