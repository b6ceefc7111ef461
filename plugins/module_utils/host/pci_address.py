# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCI addresses (domain:bus:device.function), one grammar for the lspci parser and the vfio binder. Pure Python.

lspci prints "BB:DD.F" with an optional domain (with -D, or by itself when any device has a non-zero domain, which
is 5 hex digits for VMD segments such as 10000:00:05.0; the kernel prints the domain with %04x of a 32-bit number, so
up to 8 digits). sysfs names a device by the full, lower-case form
(/sys/bus/pci/devices/0000:41:00.0): what the binder accepts, so a name never escapes that directory.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# No two adjacent quantifiers match the same characters: matching stays linear in the input.
BDF = r'(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]'
BDF_RE = re.compile(BDF)


def is_sysfs_bdf(value):
    """True for a device name as sysfs spells it: a BDF with its domain, lower-case (0000:41:00.0)."""
    return isinstance(value, str) and bool(BDF_RE.fullmatch(value)) and value.count(':') == 2 and value == value.lower()
