# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's os-release (/etc/os-release, else /usr/lib/os-release), read bounded, and the one rule for "this host
is CoreOS". Pure Python.

On a CoreOS host the Machine Config Operator owns the kernel command line, the initramfs, the files, the units and
the reboots, so every host phase that writes over SSH leaves it alone or refuses it (host_prep, retire, vgpu_vf).
The rule lives here once, for all of them. CoreOS is told by either field:

- ``VARIANT_ID=coreos``: Fedora CoreOS keeps ``ID=fedora`` and gets its variant appended to the ordinary
  os-release (fedora-release.spec, "CoreOS": ``echo "VARIANT_ID=coreos" >> .../os-release.coreos``); RHCOS sets it
  too (``ID="rhcos"``, ``VARIANT_ID=coreos``, as the Machine Config Operator's own os-release fixtures show);
- an ``ID`` of a CoreOS distribution (``rhcos``; ``scos``, CentOS Stream CoreOS of OKD; ``fedora-coreos``, which
  no release writes but older inventories and docs name), for a file without the variant.

os-release(5): ``KEY=value`` lines, the value optionally quoted; ``ID`` and ``VARIANT_ID`` are "a lower-case
string (no spaces or other characters outside of 0-9, a-z, '.', '_' and '-')". A value that does not fit that
grammar is read as absent (never shown, never matched). The last line of a key counts, trailing blanks after
the value taken off: a shell sourcing the file, systemd and Python's ``platform.freedesktop_os_release`` (its
``_parse_os_release`` assigns each line's value over the one before) all take the last.

os-release(5): "The file /etc/os-release takes precedence over /usr/lib/os-release. Applications should check for
the former, and exclusively use its data if it exists, and only fall back to /usr/lib/os-release if it is missing"
(Python's reader tries the same two, in that order, and raises when neither can be read). Where neither is a
readable regular file, whether the host is CoreOS cannot be told, so the callers refuse it (``read_any``) instead of
taking it for another system: fail closed.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import read_bytes

LIMIT = 64 * 1024
KEYS = ('ID', 'VARIANT_ID')
VALUE_RE = re.compile(r'[a-z0-9._-]{1,64}')
COREOS_IDS = ('rhcos', 'scos', 'fedora-coreos')
# os-release(5): /etc/os-release, else /usr/lib/os-release
PATHS = ('/etc/os-release', '/usr/lib/os-release')
COREOS_VARIANT = 'coreos'
NAMES = {'rhcos': 'Red Hat CoreOS', 'scos': 'CentOS Stream CoreOS', 'fedora': 'Fedora CoreOS',
         'fedora-coreos': 'Fedora CoreOS'}


class OsReleaseError(ValueError):
    """The file is not an os-release file (too large), or no os-release file can be read."""


def parse(data):
    """{'ID': str, 'VARIANT_ID': str} of os-release bytes: each the last line's value of its key, trailing blanks
    and quotes taken off, '' where absent or outside the grammar."""
    found = dict((key, None) for key in KEYS)
    for line in (data or b'').decode('latin-1').splitlines():
        key, sep, value = line.partition('=')
        if not sep or key not in found:
            continue
        value = value.rstrip(' \t')
        if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
            value = value[1:-1]
        found[key] = value if VALUE_RE.fullmatch(value) else ''
    return dict((key, value or '') for key, value in found.items())


def read(path, read_file=read_bytes):
    """parse() of the file at ``path``; None when it is absent, unreadable or not a regular file; OsReleaseError for
    a file over LIMIT (no os-release is: the host might be CoreOS, so it is not guessed)."""
    data = read_file(path, LIMIT)
    if data is not None and len(data) > LIMIT:
        raise OsReleaseError('%s is larger than %d bytes: not an os-release file; nothing was changed' % (path, LIMIT))
    return None if data is None else parse(data)


def read_any(paths, host='the host', read_file=read_bytes):
    """read() of the first of ``paths`` that is a readable regular file (os-release(5): /etc/os-release, else
    /usr/lib/os-release); OsReleaseError naming the host and every path when none is: without it the host may be
    CoreOS, so it is not taken for another system."""
    for path in paths:
        fields = read(path, read_file)
        if fields is not None:
            return fields
    where = ('neither %s is' % ' nor '.join(paths)) if len(paths) > 1 else '%s is not' % paths[0]
    raise OsReleaseError('%s: %s a readable regular file, so whether the host is CoreOS (whose Machine Config '
                         'Operator owns it) cannot be told. Restore the distribution\'s os-release (os-release(5)). '
                         'Nothing was changed.' % (host, where))


def coreos(fields):
    """True where the fields name a CoreOS host (module docstring)."""
    return fields.get('VARIANT_ID') == COREOS_VARIANT or fields.get('ID') in COREOS_IDS


def name(fields):
    """The CoreOS distribution's name for a message ('CoreOS' where the ID names none)."""
    return NAMES.get(fields.get('ID') or '', 'CoreOS')
