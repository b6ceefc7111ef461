# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Taking back a file the collection wrote, judged and removed in one step: the file is ours only when it is a
regular file (no symbolic link followed) of bounded size that carries our marker, and it is removed only if the
path still names the very file that was read. Pure Python, for the module owned_files_absent.

Judging in one task and deleting by path in a later one leaves seconds in which the file at the path can be
replaced; here the two are microseconds apart in one process, and the removal is skipped when the inode changed.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

MAX_BYTES = 1 << 20


class OwnedFilesError(ValueError):
    """A refusal before any change; the message names the value."""


def checked_path(path):
    """``path`` if it is an absolute, normalised path below ``/`` (no ``..``, no ``//``, no NUL), else the error."""
    if not isinstance(path, str) or not path.startswith('/') or path == '/' or '\0' in path \
            or os.path.normpath(path) != path or path.startswith('//'):
        raise OwnedFilesError('%r is not an absolute, normalised path to a file' % (path,))
    return path


def checked_markers(markers):
    """At least one marker, each printable ASCII of 8 to 128 characters (a short one would match foreign files)."""
    if not isinstance(markers, list) or not markers:
        raise OwnedFilesError('markers must name at least one marker; got %r' % (markers,))
    for marker in markers:
        if not isinstance(marker, str) or not 8 <= len(marker) <= 128 \
                or any(not 32 <= ord(c) < 127 for c in marker):
            raise OwnedFilesError('marker %r is not 8 to 128 printable ASCII characters' % (marker,))
    return markers


def carries(data, markers, first_line):
    """Whether ``data`` (bytes) carries one of ``markers``: at the start of its first line, or anywhere."""
    encoded = [m.encode('ascii') for m in markers]
    if first_line:
        head = data.split(b'\n', 1)[0]
        return any(head.startswith(m) for m in encoded)
    return any(m in data for m in encoded)


def _read(path, max_bytes):
    """``(data, st, reason)``: the bytes of the regular file at ``path`` and its fstat, or a reason to keep what is
    there; ``(None, None, None)`` when nothing is there. lstat first: a device or a FIFO is never opened."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return None, None, None
    if stat.S_ISLNK(before.st_mode):
        return None, None, 'a symbolic link, not a file we wrote'
    if not stat.S_ISREG(before.st_mode):
        return None, None, 'not a regular file'
    if before.st_size > max_bytes:
        return None, None, 'larger than any file we write (%d bytes)' % before.st_size
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except FileNotFoundError:
        return None, None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, None, 'a symbolic link, not a file we wrote'
        raise
    with os.fdopen(fd, 'rb') as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            return None, None, 'replaced while it was read: left alone'
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        return None, None, 'larger than any file we write'
    return data, st, None


def take_back(path, markers, first_line=False, max_bytes=MAX_BYTES, remove=True):
    """``(removed, reason)`` for the file at ``path``: removed is True when it was ours and is gone (or, with
    ``remove`` False, would go); reason says why something there stays (None when nothing is there)."""
    data, st, reason = _read(path, max_bytes)
    if data is None:
        return False, reason
    if not carries(data, markers, first_line):
        return False, 'no gpuvirt.provision %s' % ('header' if first_line else 'marker')
    if not remove:
        return True, None
    now = os.lstat(path)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
        return False, 'replaced while it was read: left alone'
    os.unlink(path)
    return True, None
