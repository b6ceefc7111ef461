# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which processes hold /dev/nvidia* (from /proc/<pid>/fd), with their command and systemd unit, so a rebind
to vfio-pci can be refused naming them. ``proc_root`` lets tests and sosreports point at a copy."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

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


def executable(holder):
    """Basename of argv[0]: the ``executable`` field scan() records, else the first word of ``command``
    (``[comm]`` for a process without a command line)."""
    name = holder.get('executable')
    if not name:
        words = (holder.get('command') or '').split()
        name = words[0] if words else ''
        if name.startswith('[') and name.endswith(']'):
            name = name[1:-1]
    return name.rsplit('/', 1)[-1].lower()


def holder_category(holder):
    """dcgm-exporter | dcgm | persistenced | display-manager | other, by the exact executable name."""
    name = executable(holder)
    for category, names in HOLDER_EXECUTABLES:
        if name in names:
            return category
    return 'other'


def _executable(proc, pid):
    """Basename of argv[0], else comm: the name holders are recognised by. Any user names their processes as they
    like, and the name travels into saved facts, so only a conservative grammar passes; anything else is "?"."""
    raw = sysfs.read_bytes(os.path.join(proc, pid, 'cmdline'))
    if raw:
        name = os.path.basename(raw.split(b'\0', 1)[0].decode('utf-8', 'replace'))
    else:
        name = (_read(os.path.join(proc, pid, 'comm')) or '').rstrip('\n')
    if not name:
        return None
    if len(name) > 255 or not validators.EXECUTABLE_NAME_RE.fullmatch(name):
        return UNKNOWN_EXECUTABLE
    return name


def command(proc, pid):
    raw = sysfs.read_bytes(os.path.join(proc, pid, 'cmdline'))
    if raw:
        return raw.rstrip(b'\0').replace(b'\0', b' ').decode('utf-8', 'replace')
    comm = _read(os.path.join(proc, pid, 'comm'))
    return '[%s]' % comm.strip() if comm else None


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
            out[int(m.group('minor'))] = bdf.lower()
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
            holders.append({'pid': int(pid), 'command': command(proc, pid), 'executable': _executable(proc, pid),
                            'device': target, 'minor': minor,
                            'bdf': bdf, 'unit': unit_from_cgroup(_read(os.path.join(proc, pid, 'cgroup')))})
    lines = ['PID %d (%s) holds %s%s%s' % (
        h['pid'], h['command'], h['device'],
        ' (GPU %s)' % h['bdf'] if h['bdf'] else '',
        ', unit %s' % h['unit'] if h['unit'] else '') for h in holders]
    if not holders:
        lines = ['no process holds /dev/nvidia*']
    if unreadable:
        lines.append('%d processes could not be inspected (run as root to see them all)' % unreadable)
    return {'held': bool(holders), 'holders': holders, 'message': '\n'.join(lines), 'unreadable': unreadable}
