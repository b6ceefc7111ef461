# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Taking back a file the collection wrote, judged and removed in one step. Pure Python, for the module
owned_files_absent.

A file is ours only when it is a regular file of bounded size whose given line starts with our marker (or, for a
file without a header, that carries the marker anywhere). Judging in one task and deleting by path in a later one
leaves seconds in which the path can be pointed elsewhere; here:

* the directory is reached from ``/`` one component at a time, each opened without following a link, owned by root
  and not group- or world-writable (world-writable only with the sticky bit, as /tmp: the writers' trusted-path
  rule), and everything after works relative to that directory's descriptor: a link swapped in for a parent
  directory is never followed;
* the file is never opened unless lstat says it is a regular file (a FIFO or a device is never opened), and is then
  opened without following a link;
* it is removed only if its name in that directory still names the very file read, and the file stays open until
  after the removal, so its inode number cannot be freed and handed to a new file in between.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

MAX_BYTES = 1 << 20
MAX_LINE = 8


class OwnedFilesError(ValueError):
    """A refusal before any change; the message names the value."""


def checked_path(path):
    """``path`` if it is an absolute, normalised path below ``/`` (no ``..``, no ``//``, no NUL), else the error."""
    if not isinstance(path, str) or not path.startswith('/') or path == '/' or '\0' in path \
            or os.path.normpath(path) != path or path.startswith('//'):
        raise OwnedFilesError('%r is not an absolute, normalised path to a file' % (path,))
    return path


def checked_marker(marker):
    """Printable ASCII of 8 to 128 characters (a short one would match foreign files)."""
    if not isinstance(marker, str) or not 8 <= len(marker) <= 128 or any(not 32 <= ord(c) < 127 for c in marker):
        raise OwnedFilesError('marker %r is not 8 to 128 printable ASCII characters' % (marker,))
    return marker


def checked_line(line):
    """0 (the marker anywhere) or the line (1 to MAX_LINE) that must start with it."""
    if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line <= MAX_LINE:
        raise OwnedFilesError('line is %r: give 0 (anywhere) or 1 to %d' % (line, MAX_LINE))
    return line


def carries(data, marker, line):
    """Whether ``data`` (bytes) carries ``marker``: at the start of line ``line`` (1-based), or anywhere (0)."""
    encoded = marker.encode('ascii')
    if line == 0:
        return encoded in data
    lines = data.split(b'\n', line)
    return len(lines) >= line and lines[line - 1].startswith(encoded)


def file_reason(st, max_bytes):
    """Why the object ``st`` (an lstat result) is no file the collection wrote, before it is opened: a link, not a
    regular file, or larger than ``max_bytes``; None when it may be one. The rule of every take-back of ours."""
    if stat.S_ISLNK(st.st_mode):
        return 'a symbolic link, not a file we wrote'
    if not stat.S_ISREG(st.st_mode):
        return 'not a regular file'
    if st.st_size > max_bytes:
        return 'larger than any file we write (%d bytes)' % st.st_size
    return None


def _directory_reason(st):
    if st.st_uid != 0:
        return 'owned by uid %d, not root' % st.st_uid
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return 'group- or world-writable (mode %04o)' % stat.S_IMODE(st.st_mode)
    return None


def _open_directory(path):
    """``(fd, name, reason)``: a descriptor of ``path``'s directory reached without following a link, and the file's
    name in it; ``(None, None, None)`` when a directory on the way does not exist; a reason when one is not
    trusted."""
    parts = path.strip('/').split('/')
    flags = os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0)
    fd = os.open('/', flags)
    try:
        walked = ''
        for part in [None] + parts[:-1]:
            if part is not None:
                walked += '/' + part
                try:
                    nxt = os.open(part, flags | getattr(os, 'O_NOFOLLOW', 0), dir_fd=fd)
                except FileNotFoundError:
                    os.close(fd)
                    return None, None, None
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        os.close(fd)
                        return None, None, '%s is a symbolic link or not a directory' % walked
                    raise
                os.close(fd)
                fd = nxt
            reason = _directory_reason(os.fstat(fd))
            if reason:
                os.close(fd)
                return None, None, 'its directory %s is %s: left alone' % (walked or '/', reason)
        return fd, parts[-1], None
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise


def take_back(path, marker, line=0, max_bytes=MAX_BYTES, remove=True):
    """``(removed, reason)`` for the file at ``path``: removed is True when it was ours and is gone (or, with
    ``remove`` False, would go); reason says why something there stays (None when nothing is there)."""
    dfd, name, reason = _open_directory(path)
    if dfd is None:
        return False, reason
    try:
        try:
            before = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return False, None
        reason = file_reason(before, max_bytes)
        if reason:
            return False, reason
        try:
            fd = os.open(name, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0),
                         dir_fd=dfd)
        except FileNotFoundError:
            return False, None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return False, 'a symbolic link, not a file we wrote'
            raise
        # held open until after the removal: its inode cannot be freed and its number reused meanwhile
        with os.fdopen(fd, 'rb') as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
                return False, 'replaced while it was read: left alone'
            data = handle.read(max_bytes + 1)
            if len(data) > max_bytes:
                return False, 'larger than any file we write'
            if not carries(data, marker, line):
                return False, 'no gpuvirt.provision %s' % ('header' if line else 'marker')
            if not remove:
                return True, None
            now = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
                return False, 'replaced while it was read: left alone'
            os.unlink(name, dir_fd=dfd)
        return True, None
    finally:
        os.close(dfd)
