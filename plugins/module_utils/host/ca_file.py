# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a CA certificate bundle named by a user (the registry CA file of the vgpu_manager_image role), on whichever
host it is: once, bounded, and checked before anything uses it. Pure Python.

The path comes from the inventory, an AWX survey or a launch prompt, and the file is sent to another host, so it
is opened once without following a link (O_NOFOLLOW; O_NONBLOCK so a FIFO cannot block), must be a regular file
by the descriptor read (fstat: no stat-then-open race), at most validators.PEM_BUNDLE_MAX + 1 bytes are read, and
the bytes must be a PEM certificate bundle (validators.pem_certificates). What is returned is what was checked.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import sysfs
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators


class CaFileError(ValueError):
    """The CA file cannot be used; ``reason`` is 'not_a_file' (absent, a link, a directory, a FIFO, unreadable)
    or 'not_pem' (a file whose content is not a PEM certificate bundle). The message never holds the content."""

    def __init__(self, message, reason):
        super(CaFileError, self).__init__(message)
        self.reason = reason


def read_certificates(path, name):
    """The checked PEM text of the CA bundle at ``path``; CaFileError naming ``name`` and the path otherwise."""
    not_a_file = '%s %s is not a regular file (%%s)' % (name, path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except (IOError, OSError) as e:
        why = 'a symbolic link, not followed' if e.errno == errno.ELOOP else (e.strerror or str(e))
        raise CaFileError(not_a_file % why, 'not_a_file')
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CaFileError(not_a_file % 'a directory, device or FIFO', 'not_a_file')
        data = sysfs.read_fd(fd, validators.PEM_BUNDLE_MAX)
    except (IOError, OSError) as e:
        raise CaFileError(not_a_file % (e.strerror or str(e)), 'not_a_file')
    finally:
        os.close(fd)
    try:
        return validators.pem_certificates(data, '%s %s' % (name, path))
    except validators.ValidationError as e:
        raise CaFileError(str(e), 'not_pem')
