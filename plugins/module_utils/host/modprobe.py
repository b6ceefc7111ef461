# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer of the kernel module configuration on a host: the modprobe.d blacklist that keeps a module off
the GPUs (the nouveau role's file and the OpenShift MachineConfig's Ignition file), and the vfio role's files:
the modprobe.d ``options``/``softdep`` lines, the modules-load.d list, the initramfs-tools module block and the
dracut ``add_drivers`` line. Every value is checked against its grammar here, whatever checked it before: the
dracut file is sourced by bash as root when the initramfs is built, and a modprobe.d line could be an
``install`` command, so one stray quote, space or newline would be root code on the host. Pure Python."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

# A kernel module's name as modprobe.d spells it (the kernel treats - and _ alike): the validators' grammar.
MODULE_RE = validators.KERNEL_MODULE_RE
# "blacklist" only stops the alias autoload (udev matching the GPU's modalias); a module loaded anyway (by name,
# or from an initramfs built before the blacklist) must still keep off the display: nouveau's modeset=0 does that.
MODULE_OPTIONS = {'nouveau': 'modeset=0'}


class ModprobeError(ValueError):
    """Invalid input; the message names the offending value."""


def blacklist_text(module, header=None):
    """``blacklist <module>`` and the module's options line, newline-terminated; ``header`` (one line of text)
    comes first as a ``#`` comment, for a file on a host that says who manages it."""
    if not isinstance(module, str) or len(module) > validators.KERNEL_MODULE_MAX or not MODULE_RE.fullmatch(module):
        raise ModprobeError("kernel module %r is not a module name (letters, digits, '_' and '-')" % (module,))
    _check_header(header)
    lines = ['# %s' % header] if header is not None else []
    lines.append('blacklist %s' % module)
    if module in MODULE_OPTIONS:
        lines.append('options %s %s' % (module, MODULE_OPTIONS[module]))
    return ''.join(line + '\n' for line in lines)


# The header of the vfio role's files (the bytes hosts configured before carry).
VFIO_HEADER = 'Managed by gpuvirt.provision (vfio role).'


def _check_header(header):
    # printable only: a control character (a newline, a form feed) would end the comment and start a line of its own
    if header is not None and (not isinstance(header, str) or not header.strip() or not header.isprintable()):
        raise ModprobeError("header %r is not one line of text" % (header,))


def _checked(values, name, check):
    """``values`` (a list) with each entry passed through ``check``; the error names ``name`` and the entry."""
    if not isinstance(values, (list, tuple)):
        raise ModprobeError('%s: %r is not a list' % (name, values))
    try:
        return [check(value, '%s[%d]' % (name, i)) for i, value in enumerate(values)]
    except validators.ValidationError as e:
        raise ModprobeError(str(e))


def _unique_modules(values, name):
    """Module names, checked, without a second spelling of one module (kmod treats '-' and '_' alike): the first
    spelling stays."""
    seen, out = set(), []
    for module in _checked(values, name, validators.kernel_module):
        key = module.replace('-', '_')
        if key not in seen:
            seen.add(key)
            out.append(module)
    return out


def _text(lines, header):
    _check_header(header)
    return ''.join(line + '\n' for line in (['# %s' % header] if header is not None else []) + lines)


def vfio_options_text(ids, softdeps, header=VFIO_HEADER):
    """The modprobe.d file: ``options vfio-pci ids=<ids>`` and ``softdep <driver> pre: vfio-pci`` for each of
    ``softdeps`` (so vfio-pci loads, and claims the ids, before the GPU drivers can)."""
    ids = _checked(ids, 'vfio ids', validators.pci_id)
    if not ids:
        raise ModprobeError('vfio ids: no vendor:device id; options vfio-pci ids= needs at least one')
    lines = ['options vfio-pci ids=%s' % ','.join(ids)]
    lines.extend('softdep %s pre: vfio-pci' % d for d in _unique_modules(softdeps, 'softdep drivers'))
    return _text(lines, header)


def modules_load_text(modules, header=VFIO_HEADER):
    """A modules-load.d file: one module name a line (systemd-modules-load loads each at boot)."""
    return _text(_unique_modules(modules, 'modules'), header)


def initramfs_tools_block(modules):
    """The lines of our block in /etc/initramfs-tools/modules (one module a line; blockinfile adds the markers and
    the last newline)."""
    return '\n'.join(_unique_modules(modules, 'modules'))


def dracut_text(modules, header=VFIO_HEADER):
    """A dracut.conf.d file (bash sources it): ``add_drivers+=" <modules> "``, the spaces around the list as
    dracut.conf(5) asks so that the value joins what other files add."""
    return _text(['add_drivers+=" %s "' % ' '.join(_unique_modules(modules, 'modules'))], header)


def vfio_files(ids, softdeps, modules):
    """Every file the vfio role writes, from one checked set of inputs: ``modprobe`` (modprobe.d), ``modules_load``
    (modules-load.d), ``initramfs_tools`` (the block in /etc/initramfs-tools/modules) and ``dracut``
    (dracut.conf.d). Nothing is returned unless every value fits its grammar."""
    return {
        'modprobe': vfio_options_text(ids, softdeps),
        'modules_load': modules_load_text(modules),
        'initramfs_tools': initramfs_tools_block(modules),
        'dracut': dracut_text(modules),
    }
