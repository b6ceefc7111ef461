# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read one sysfs attribute as text, the one reader sysfs_pci, vfio_bind and vgpu_types share. Pure Python."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


def read_text(path, error):
    """The file's text without surrounding blanks; None when it is absent or cannot be read (a device that went
    away, an attribute this kernel lacks). Bytes that are not UTF-8 raise ``error`` (the caller's named
    exception class) naming the file, the line and what was expected, instead of a UnicodeDecodeError."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except (IOError, OSError):
        return None
    try:
        return data.decode('utf-8').strip()
    except UnicodeDecodeError as e:
        raise error('%s, line %d: byte 0x%02x at offset %d is not UTF-8; expected the text a sysfs attribute '
                    'holds (ids such as 0x10de, numbers, names)'
                    % (path, data.count(b'\n', 0, e.start) + 1, data[e.start], e.start))
