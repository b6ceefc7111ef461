# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which processes hold /dev/nvidia* (from /proc/<pid>/fd), with their executable name and systemd unit, so a
rebind to vfio-pci can be refused naming them. ``proc_root`` lets tests and sosreports point at a copy.

A process's command line (/proc/<pid>/cmdline) is never returned or shown: any user who may open /dev/nvidiactl
writes it as they like (terminal escapes, newlines, a password on an option), and a refusal message reaches the
operator's terminal and the controller's logs. A holder is named by its executable name (the basename of argv[0],
else comm) where it fits a conservative grammar, else "?", with its pid, device, GPU and unit."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pci_address
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import sysfs
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

# Every number is checked by its digits before int(): a copied /proc may hold anything, and int() of more than
# 4300 digits raises an error that names nothing. Minors are 20 bits; pid_max is at most 2^22 (proc(5)).
DEVICE = re.compile(r'/dev/nvidia(?:(?P<minor>[0-9]{1,7})|ctl|-uvm|-uvm-tools|-modeset|-nvswitchctl'
                    r'|-caps/[a-z0-9-]{1,64})')
DEVICE_MAX = 64
PID = re.compile(r'[0-9]{1,7}')
FD = re.compile(r'[0-9]{1,10}')
DEVICE_MINOR = re.compile(r'Device Minor:\s*(?P<minor>[0-9]{1,7})\s*')
UNKNOWN_EXECUTABLE = '?'
# a refusal names at most this many holders, then "and N more"
MESSAGE_HOLDERS = 16

# The one rule for what a holder is: its executable name (basename of argv[0]) compared exactly, lower-cased.
# Preflight and the DRA rebind check both use holder_category().
HOLDER_EXECUTABLES = (
    ('dcgm-exporter', ('dcgm-exporter',)),
    ('dcgm', ('nv-hostengine',)),
    ('persistenced', ('nvidia-persistenced',)),
    ('display-manager', ('xorg', 'x', 'xwayland', 'gdm', 'gdm3', 'gdm-x-session', 'gdm-wayland-session', 'sddm',
                         'lightdm', 'gnome-shell', 'kwin_x11', 'kwin_wayland')),
)


class HoldersError(ValueError):
    """A /proc file that cannot be understood; the message names it (scan's callers catch ValueError)."""


def _read(path):
    return sysfs.read_text(path, HoldersError)


def unit_from_cgroup(text):
    """The innermost systemd unit in /proc/<pid>/cgroup ("0::/system.slice/nvidia-persistenced.service")."""
    for line in (text or '').splitlines():
        path = line.split(':', 2)[-1]
        units = [c for c in path.split('/') if len(c) <= 255 and validators.SYSTEMD_UNIT_RE.fullmatch(c)]
        if units:
            return units[-1]
    return None


def _name_or_unknown(name):
    if not isinstance(name, str) or len(name) > 255 or not validators.EXECUTABLE_NAME_RE.fullmatch(name):
        return UNKNOWN_EXECUTABLE
    return name


def executable(holder):
    """The ``executable`` field scan() records (basename of argv[0], else comm), lower-cased; "?" where it is
    absent or outside the grammar (a holder given by a caller may hold anything)."""
    return _name_or_unknown(holder.get('executable')).lower()


def holder_category(holder):
    """dcgm-exporter | dcgm | persistenced | display-manager | other, by the exact executable name."""
    name = executable(holder)
    for category, names in HOLDER_EXECUTABLES:
        if name in names:
            return category
    return 'other'


def executable_name(proc, pid):
    """Basename of argv[0], else comm: the name holders are recognised and named by. Any user names their processes
    as they like, and the name travels into messages and saved facts, so only a conservative grammar passes;
    anything else is "?". Only argv[0] is looked at: the rest of the command line is never read into a result."""
    raw = sysfs.read_bytes(os.path.join(proc, pid, 'cmdline'))
    if raw:
        name = os.path.basename(raw.split(b'\0', 1)[0].decode('utf-8', 'replace'))
    else:
        try:
            name = (_read(os.path.join(proc, pid, 'comm')) or '').rstrip('\n')
        except HoldersError:
            name = UNKNOWN_EXECUTABLE  # a comm that is not UTF-8: named "?", as any name outside the grammar
    if not name:
        return None
    return _name_or_unknown(name)


_executable = executable_name


def holder_line(holder):
    """One holder as a refusal names it: pid, executable name ("?" outside its grammar), device, GPU, unit."""
    return 'PID %s (%s) holds %s%s%s' % (
        holder.get('pid'), _name_or_unknown(holder.get('executable')), holder.get('device'),
        ' (GPU %s)' % holder['bdf'] if holder.get('bdf') else '',
        ', unit %s' % holder['unit'] if holder.get('unit') else '')


def message(holders, unreadable=0):
    """The refusal text of ``holders``: one line each (holder_line), at most MESSAGE_HOLDERS of them, then "and N
    more"; "no process holds /dev/nvidia*" for none; the count of processes that could not be inspected."""
    lines = [holder_line(h) for h in holders[:MESSAGE_HOLDERS]]
    if len(holders) > MESSAGE_HOLDERS:
        lines.append('and %d more' % (len(holders) - MESSAGE_HOLDERS))
    if not holders:
        lines = ['no process holds /dev/nvidia*']
    if unreadable:
        lines.append('%d processes could not be inspected (run as root to see them all)' % unreadable)
    return '\n'.join(lines)


def minor_bdfs(proc):
    """GPU minor -> BDF from /proc/driver/nvidia/gpus/<bdf>/information ("Device Minor: 0")."""
    base = os.path.join(proc, 'driver', 'nvidia', 'gpus')
    out = {}
    for bdf in sysfs.list_names(base):
        path = os.path.join(base, bdf, 'information')
        for line in (_read(path) or '').splitlines():
            if not line.startswith('Device Minor:'):
                continue
            m = DEVICE_MINOR.fullmatch(line) if len(line) <= 64 else None
            if not m:
                raise HoldersError('%s: %r is not "Device Minor: <number of at most 7 digits>"; give proc_root a '
                                   'copy of procfs as the NVIDIA driver writes it' % (path, line[:80]))
            # the directory's name is shown in messages: a PCI address, else unknown (the holder is kept)
            out[int(m.group('minor'))] = bdf.lower() if pci_address.is_sysfs_bdf(bdf.lower()) else None
    return out


def scan(proc='/proc', gpus=None):
    """holders + held + message; ``gpus`` (BDFs) keeps per-GPU holders of those GPUs and every control-device
    holder (nvidiactl, nvidia-uvm... keep the nvidia module in use)."""
    bdfs = minor_bdfs(proc)
    wanted = set(b.lower() for b in gpus or [])
    holders, unreadable = [], 0
    try:
        # the process directories; other names (self, net, an out-of-range number) are not processes
        pids = [p for p in os.listdir(proc) if PID.fullmatch(p)]
    except OSError as e:
        raise ValueError('cannot list %s (%s); give proc_root, the directory procfs is mounted on' % (proc, e))
    for pid in sorted(pids, key=int):
        fd_dir = os.path.join(proc, pid, 'fd')
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            unreadable += 1  # another user's process without root, or it exited
            continue
        seen = set()
        for fd in sorted(fds, key=lambda n: int(n) if FD.fullmatch(n) else -1):  # fd order, stable output
            target = sysfs.link_target(os.path.join(fd_dir, fd))
            m = DEVICE.fullmatch(target) if target is not None and len(target) <= DEVICE_MAX else None
            if not m or target in seen:
                continue
            seen.add(target)
            minor = int(m.group('minor')) if m.group('minor') else None  # null for control devices
            bdf = bdfs.get(minor) if minor is not None else None
            if wanted and bdf is not None and bdf not in wanted:  # another GPU (unknown BDF: kept, to be safe)
                continue
            holders.append({'pid': int(pid), 'executable': executable_name(proc, pid),
                            'device': target, 'minor': minor,
                            'bdf': bdf, 'unit': unit_from_cgroup(_read(os.path.join(proc, pid, 'cgroup')))})
    return {'held': bool(holders), 'holders': holders, 'message': message(holders, unreadable),
            'unreadable': unreadable}
