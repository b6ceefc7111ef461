# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the kernel's pseudo file systems (sysfs, and procfs for gpu_holders): one reader of attributes, links and
directories for sysfs_pci, vfio_bind, vgpu_types and gpu_holders. Pure Python.

Every reader answers None (or an empty list) for what is absent or unreadable: a device can go away between two
reads, an attribute may not exist on this kernel, another user's process may not be inspected. The sysfs tree is
read under a root (``sysfs_root``, a sosreport or a test copy), so nothing here assumes /sys.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import stat

_HEX_RE = re.compile(r'0x[0-9a-fA-F]{1,16}')


# at most this much of one file is read: a sysfs attribute is a page, a procfs file of ours a few KiB; a copied tree
# may hold anything, and a caller's own bound (creatable_vgpu_types: 64 KiB) sees the one byte past it
READ_LIMIT = 1024 * 1024


def read_fd(fd, limit):
    """At most ``limit`` + 1 bytes of an open file (the one past the limit tells the caller it was exceeded)."""
    chunks, left = [], limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b''.join(chunks)


def read_bytes(path, limit=READ_LIMIT):
    """The file's bytes, at most ``limit`` + 1 of them; None when it is absent, cannot be read, or is not a regular
    file (a FIFO or a device in a copied tree would block or never end; sysfs and procfs files are regular)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    except (IOError, OSError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_fd(fd, limit)
    except (IOError, OSError):
        return None
    finally:
        os.close(fd)


def read_text(path, error):
    """The file's text without surrounding blanks; None when it is absent or cannot be read (a device that went
    away, an attribute this kernel lacks). Bytes that are not UTF-8 raise ``error`` (the caller's named
    exception class) naming the file, the line and what was expected, instead of a UnicodeDecodeError."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return data.decode('utf-8').strip()
    except UnicodeDecodeError as e:
        raise error('%s, line %d: byte 0x%02x at offset %d is not UTF-8; expected the text a sysfs attribute '
                    'holds (ids such as 0x10de, numbers, names)'
                    % (path, data.count(b'\n', 0, e.start) + 1, data[e.start], e.start))


def hex_id(value, digits):
    """An id as sysfs prints it (``0x10de``, class ``0x030200``) -> its first ``digits`` hex digits, lower-case,
    zero-filled on the left (``'10de'``, ``'0302'``); None for anything the kernel would not print there (absent,
    empty, no ``0x``, not hex), so a damaged copy of a tree gives no made-up id."""
    if not isinstance(value, str) or not _HEX_RE.fullmatch(value):
        return None
    return value[2:].lower().zfill(digits)[:digits]


def link_target(path):
    """Where the symlink points, as written in the link (``/dev/nvidia0``, ``../../../bus/pci/drivers/nvidia``);
    None when ``path`` is absent or no symlink."""
    try:
        return os.readlink(path)
    except (IOError, OSError):
        return None


def link_name(path):
    """The last component of the symlink's own target: the name the kernel gave the driver, IOMMU group, parent
    function or mdev type it links to. The link is read, not resolved (readlink, not realpath): resolving would
    follow further links a copied tree may have and report their names instead, and reads more for nothing.
    None when ``path`` is absent or no symlink."""
    target = link_target(path)
    return os.path.basename(target.rstrip('/')) if target is not None else None


def list_names(path):
    """The entries of a directory, sorted; an empty list when it is absent or cannot be read."""
    try:
        return sorted(os.listdir(path))
    except (IOError, OSError):
        return []
