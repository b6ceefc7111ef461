# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a pci.ids database (the host's, or the one a device plugin image ships) for vendor and device names."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import read_bytes

# Where distributions install pci.ids (Debian/Ubuntu: pciutils -> /usr/share/misc; EL/Fedora: hwdata).
DEFAULT_PATHS = ('/usr/share/misc/pci.ids', '/usr/share/hwdata/pci.ids', '/usr/share/pci.ids')
# pci.ids is about 1.5 MB today; a file many times that size is not one
MAX_BYTES = 32 * 1024 * 1024

_CACHE = {}
HEX = re.compile(r'[0-9a-fA-F]+')


class PciIdsError(ValueError):
    pass


def find_default():
    for path in DEFAULT_PATHS:
        if os.path.isfile(path):
            return path
    return None


class PciIds(object):
    """vendors: {id: name}; devices: {(vendor, device): name}; classes: {cccc: name}. Ids lower-case hex."""

    def __init__(self, vendors, devices, classes, path=None):
        self.vendors, self.devices, self.classes, self.path = vendors, devices, classes, path

    def vendor_name(self, vendor_id):
        return self.vendors.get((vendor_id or '').lower())

    def device_name(self, vendor_id, device_id):
        return self.devices.get(((vendor_id or '').lower(), (device_id or '').lower()))

    def vendor_ids_by_name(self):
        """name -> id, for splitting lspci's "vendor device" text (first id wins on duplicate names)."""
        out = {}
        for vid, name in sorted(self.vendors.items()):
            out.setdefault(name, vid)
        return out


def _hex(text, start, end):
    """Whether ``text[start:end]`` is there in full and all hex digits."""
    return end <= len(text) and HEX.fullmatch(text, start, end) is not None


def parse(text, path=None):
    """Parse pci.ids text. Vendor lines start in column 0, devices with one TAB, subsystems with two TABs
    (skipped: resource names use the device line); the "C" section holds class and subclass names."""
    if not isinstance(text, str):
        raise PciIdsError('pci.ids%s is %s, not text; expected the pci.ids database as a string'
                          % (' ' + path if path else '', type(text).__name__))
    vendors, devices, classes = {}, {}, {}
    vendor = cls = None
    for line in text.splitlines():
        if not line or line[0] == '#':
            continue
        if line.startswith('C '):
            # "C 03  Display controller"; a damaged header starts no class section
            cls = line[2:4].lower() if _hex(line, 2, 4) and line[4:5] in ('', ' ') else None
            vendor = None
            continue
        if line[0] != '\t':
            ident, sep, name = line.partition('  ')
            if sep and len(ident) == 4 and _hex(ident, 0, 4):
                vendor, cls = ident.lower(), None
                vendors[vendor] = name.strip()
            continue
        if line.startswith('\t\t'):
            continue
        ident, sep, name = line[1:].partition('  ')
        if not sep:
            continue
        if vendor is not None and len(ident) == 4 and _hex(ident, 0, 4):
            devices[(vendor, ident.lower())] = name.strip()
        elif cls is not None and len(ident) == 2 and _hex(ident, 0, 2):
            classes[cls + ident.lower()] = name.strip()
    return PciIds(vendors, devices, classes, path)


def load(path=None):
    """Load (and cache per path and mtime) a pci.ids file; ``path`` None means the host's."""
    path = path or find_default()
    if not path:
        raise PciIdsError('no pci.ids found at %s; install pciutils (or hwdata) or give the path of a pci.ids file'
                          % ', '.join(DEFAULT_PATHS))
    try:
        stamp = os.stat(path).st_mtime
    except OSError as e:
        raise PciIdsError('cannot read pci.ids %s: %s; give the path of an existing pci.ids file' % (path, e))
    cached = _CACHE.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    # bounded and a regular file only (a device or a FIFO given as the path would never end or block); pci.ids is
    # UTF-8 (it has non-ASCII vendor names); be lenient with a damaged copy
    data = read_bytes(path, MAX_BYTES)
    if data is None or len(data) > MAX_BYTES:
        raise PciIdsError('cannot read pci.ids %s: not a readable regular file of at most %d bytes; give the path of '
                          'an existing pci.ids file' % (path, MAX_BYTES))
    db = parse(data.decode('utf-8', 'replace'), path)
    _CACHE[path] = (stamp, db)
    return db


def from_option(value):
    """A plugin's ``pciids`` option -> a database: empty means none (devices keep their IDs), V(true) or C(host)
    the host's pci.ids, anything else the path of a pci.ids file."""
    if not value:
        return None
    return load(None if value in (True, 'host') else value)
