# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The text of a modprobe.d file that keeps a kernel module off the GPUs, the one copy the nouveau role (a file
on the host) and the OpenShift MachineConfig (an Ignition file) write. Pure Python."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# A kernel module's name as modprobe.d spells it (the kernel treats - and _ alike).
MODULE_RE = re.compile(r'[A-Za-z0-9_-]{1,64}')
# "blacklist" only stops the alias autoload (udev matching the GPU's modalias); a module loaded anyway (by name,
# or from an initramfs built before the blacklist) must still keep off the display: nouveau's modeset=0 does that.
MODULE_OPTIONS = {'nouveau': 'modeset=0'}


class ModprobeError(ValueError):
    """Invalid input; the message names the offending value."""


def blacklist_text(module, header=None):
    """``blacklist <module>`` and the module's options line, newline-terminated; ``header`` (one line of text)
    comes first as a ``#`` comment, for a file on a host that says who manages it."""
    if not isinstance(module, str) or not MODULE_RE.fullmatch(module):
        raise ModprobeError("kernel module %r is not a module name (letters, digits, '_' and '-')" % (module,))
    # printable only: a control character (a newline, a form feed) would end the comment and start a line of its own
    if header is not None and (not isinstance(header, str) or not header.strip() or not header.isprintable()):
        raise ModprobeError("header %r is not one line of text" % (header,))
    lines = ['# %s' % header] if header is not None else []
    lines.append('blacklist %s' % module)
    if module in MODULE_OPTIONS:
        lines.append('options %s %s' % (module, MODULE_OPTIONS[module]))
    return ''.join(line + '\n' for line in lines)
