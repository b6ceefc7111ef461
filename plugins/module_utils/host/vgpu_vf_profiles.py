# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vGPU profiles on SR-IOV VFs, NVIDIA's vendor-specific VFIO interface (docs/pools/vendor-vfio.md). Pure Python.

The host interface, as upstream drives it (NVIDIA/vgpu-device-manager @ 4d31dc65, its unreleased vendor-VFIO
backend, pkg/vgpu/vfio/vfio.go SetVGPUConfig and ensureVFs, sysfs.go setVGPUType; the OpenNebula vGPU guide,
OpenNebula/docs @ 7e66d99c, source/open_cluster_deployment/kvm_node/vgpu.rst):

- a GPU is an SR-IOV PF on the ``nvidia`` driver; its VFs come from ``/usr/lib/nvidia/sriov-manage -e <PF>``
  (else, here, from writing ``sriov_totalvfs`` to ``sriov_numvfs``); VFs stay on the ``nvidia`` driver;
- per VF, ``nvidia/creatable_vgpu_types`` lists the types creatable on it *now* (capacity in use disappears from
  it) and writing a decimal id to ``nvidia/current_vgpu_type`` creates the vGPU, ``0`` removes it;
- a GPU's index is its place among the NVIDIA GPU PFs sorted by PCI address (vfio.go gpuAddresses), the index a
  vgpu-device-manager config's ``devices: [i, ...]`` means.

Three phases, so a bad input fails before the first change: ``check_inputs`` (the config, the addresses, the
paths), ``plan`` (reads sysfs; every wanted type checked against each chosen VF's creatable list, every VF to be
changed checked for holders) and ``apply`` (writes, each through ``write_attr``, re-reading the VF's creatable list
just before its write as upstream does, and reading ``current_vgpu_type`` back after it).

Every write goes through one function, ``write_attr``, and every command through the caller's ``run``: the tests'
stand-in for the driver (tests/unit/vf_driver.py) replaces both, so a refused write fails with an errno as the
driver's does, which a plain directory cannot do.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import stat

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, os_release, owned_files, pci_address, sysfs
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.vgpu_names import short_type_name
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.vgpu_types import VgpuError, parse_creatable

SRIOV_MANAGE = '/usr/lib/nvidia/sriov-manage'
NUMBER = re.compile(r'[0-9]{1,9}')
VIRTFN = re.compile(r'virtfn([0-9]{1,5})')
# a short type name as a vgpu-device-manager config spells it ("L40S-24Q", "A10-12Q"); the names the driver lists
# follow vgpu_types.CREATABLE_LINE, so nothing else could ever match
TYPE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,63}')
# MIG-backed types carry the GPU instance size: A100-1-5C, H100-3-40C (vgpu_names._TYPE_MODEL)
MIG_BACKED = re.compile(r'[A-Za-z0-9]+-[0-9]+-[0-9]+[A-Z]+')
MAX_COUNT = 64
# a type's name as creatable_vgpu_types prints it (vgpu_types.CREATABLE_LINE)
CREATABLE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9 ._-]{0,127}')
# /dev/vfio/<group> (legacy container) and /dev/vfio/devices/vfio<N> (the cdev a VF has under vfio-dev/)
VFIO_GROUP_DEV = re.compile(r'/dev/vfio/([0-9]{1,7})')
VFIO_CDEV = re.compile(r'/dev/vfio/devices/(vfio[0-9]{1,7})')
STATES = ('present', 'absent')


class VfProfileError(ValueError):
    """Bad input or a host that cannot take the profiles; the message names the value or device and the fix."""


def write_attr(path, value):
    """Write one sysfs attribute. The one writer of this module: the driver answers a refused value with an
    OSError carrying its errno, which the caller reports. Opened without following a link at the last component and
    without creating or truncating (a sysfs attribute exists; a link planted in a copied tree is refused, ELOOP)."""
    fd = os.open(path, os.O_WRONLY | getattr(os, 'O_NOFOLLOW', 0))
    try:
        st = os.fstat(fd)
        # a sysfs attribute is a regular file with one link; a hard link planted in a copied tree has more
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise OSError(errno.EPERM, 'not a sysfs attribute (a special file, or a file with %d links)' % st.st_nlink)
        data = value.encode('ascii')
        if os.write(fd, data) != len(data):
            raise OSError(errno.EIO, 'short write to %s' % path)
        # sysfs ignores the size; a copied tree (tests) is a plain file, where a shorter value must not leave a tail
        try:
            os.ftruncate(fd, len(data))
        except OSError:
            pass
    finally:
        os.close(fd)


# the path grammar of everything this module names in a unit, a config or an argv: absolute, a conservative alphabet
# (systemd would split a space, expand a % specifier or a $VARIABLE, and a newline would start a new directive)
UNIT_PATH = re.compile(r'/[A-Za-z0-9._/-]{0,254}')


def _path(value, name):
    """The one path grammar (the restore script's ``_path`` is the same rule): absolute, letters, digits and ._/-,
    normalised (no ``.`` or ``..`` component, no ``//``, no trailing ``/``)."""
    if (not isinstance(value, str) or not UNIT_PATH.fullmatch(value) or '//' in value
            or (value != '/' and value.endswith('/'))
            or any(part in ('.', '..') for part in value.split('/'))):
        raise VfProfileError('%s is %s; expected a normalised absolute path of letters, digits and ._/- (no . or .. '
                             'component, no //): it goes into a systemd unit, an argv or a root-owned file, where a '
                             'space, %% or $ would change the command' % (name, _brief(value)))
    return value


def trusted_path(value, name, kind='file', missing_ok=False):
    """The trusted-path rule: ``value`` passes ``_path``, and it and every directory above it up to ``/`` are owned
    by root and not group- or world-writable; a parent may be world-writable only with the sticky bit (/tmp). Each
    component is lstat'ed: a symlink anywhere is refused. ``kind`` is ``file`` (a regular file), ``dir`` or None
    (either). Returns whether the path exists; a missing path (or parent) raises unless ``missing_ok``, and then
    every component that does exist is still checked."""
    _path(value, name)
    parts = [part for part in value.split('/') if part]
    chain = ['/'] + ['/' + '/'.join(parts[:i + 1]) for i in range(len(parts))]
    for i, path in enumerate(chain):
        leaf = i == len(chain) - 1
        try:
            st = os.lstat(path)
        except OSError as e:
            if e.errno == errno.ENOENT and missing_ok:
                return False
            raise VfProfileError('%s is %s, and %s cannot be read (%s); give a path that exists'
                                 % (name, value, path, _errno_text(e)))
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            raise VfProfileError('%s is %s, and %s is a symbolic link; give the real path (a link could be pointed '
                                 'elsewhere)' % (name, value, path))
        if not leaf and not stat.S_ISDIR(mode):
            raise VfProfileError('%s is %s, and %s is not a directory' % (name, value, path))
        if st.st_uid != 0:
            raise VfProfileError('%s is %s, and %s is owned by uid %d, not root; whoever owns it could change what '
                                 'root runs or writes: give a root-owned path' % (name, value, path, st.st_uid))
        if mode & 0o022 and (leaf or not mode & stat.S_ISVTX):
            raise VfProfileError('%s is %s, and %s is group- or world-writable (mode %04o); give a path only root '
                                 'can change' % (name, value, path, stat.S_IMODE(mode)))
    if kind == 'file' and not stat.S_ISREG(st.st_mode):
        raise VfProfileError('%s is %s, which is not a regular file' % (name, value))
    if kind == 'dir' and not stat.S_ISDIR(st.st_mode):
        raise VfProfileError('%s is %s, which is not a directory' % (name, value))
    return True


def trusted_executable(value, name, missing_ok=False):
    """An executable root runs: the trusted-path rule, with one allowance: the last component may be a root-owned
    symlink (/usr/bin/python3 -> python3.11 on most distributions), and then its target, resolved, must pass the
    rule itself as a regular file. Returns whether it exists."""
    _path(value, name)
    try:
        st = os.lstat(value)
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        trusted_path(os.path.dirname(value), name + ' (its directory)', kind='dir')
        if st.st_uid != 0:
            raise VfProfileError('%s is %s, a symbolic link owned by uid %d, not root' % (name, value, st.st_uid))
        return trusted_path(os.path.realpath(value), '%s (%s, resolved)' % (name, value), kind='file')
    return trusted_path(value, name, kind='file', missing_ok=missing_ok)


def _read(path):
    try:
        return sysfs.read_text(path, VfProfileError)
    except VgpuError as e:
        raise VfProfileError(str(e))


def _dev(root, bdf, *parts):
    return os.path.join(root, 'bus', 'pci', 'devices', bdf, *parts)


def _brief(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + '...'


def _count(value, where):
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_COUNT:
        raise VfProfileError('%s is %s; expected a whole number from 1 to %d (one vGPU per VF, and no GPU has more '
                             'VFs)' % (where, _brief(value), MAX_COUNT))
    return value


def _type_name(value, where):
    name = short_type_name(value) if isinstance(value, str) else None
    if not name or len(name) > 64 or not TYPE_NAME.fullmatch(name):
        raise VfProfileError('%s: %s is not a vGPU type name; give the name as nvidia-smi and the vGPU '
                             'documentation spell it, such as L40S-24Q or A10-12Q' % (where, _brief(value)))
    if MIG_BACKED.fullmatch(name):
        raise VfProfileError('%s: %s is a MIG-backed vGPU type; MIG-backed profiles need MIG mode and GPU instances '
                             'first, which this collection does not manage yet: pick a time-sliced type such as '
                             '%s' % (where, name, name.split('-', 1)[0] + '-' + name.rsplit('-', 1)[1]))
    return name


def normalise_config(config):
    """The node's vGPU config in vgpu-device-manager's form (``{type: count}`` for every GPU, or a list of
    ``{devices: all | [index, ...], vgpu-devices: {type: count}}``) -> ``[{devices, types: [(name, count)]}]``,
    short names sorted. Anything else raises naming the value."""
    entries = [{'devices': 'all', 'vgpu-devices': config}] if isinstance(config, dict) else config
    if not isinstance(entries, list) or not entries:
        raise VfProfileError('the vGPU config is %s; expected {type: count} such as {L40S-24Q: 2}, or a list of '
                             '{devices: all or [GPU index, ...], vgpu-devices: {type: count}}' % _brief(config))
    out = []
    for i, entry in enumerate(entries):
        where = 'vGPU config entry %d' % i
        if not isinstance(entry, dict) or set(entry) - {'devices', 'vgpu-devices'}:
            raise VfProfileError('%s is %s; expected {devices: all or [GPU index, ...], vgpu-devices: '
                                 '{type: count}}' % (where, _brief(entry)))
        devices = entry.get('devices', 'all')
        if devices != 'all' and not (isinstance(devices, list) and devices and all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 256 for d in devices)):
            raise VfProfileError('%s: devices is %s; expected all or a list of GPU indices (0 is the NVIDIA GPU with '
                                 'the lowest PCI address)' % (where, _brief(devices)))
        wanted = entry.get('vgpu-devices')
        if not isinstance(wanted, dict) or not wanted:
            raise VfProfileError('%s: vgpu-devices is %s; expected {type: count} such as {L40S-24Q: 2}'
                                 % (where, _brief(wanted)))
        types = {}
        for name, count in wanted.items():
            short = _type_name(name, where)
            if short in types:
                raise VfProfileError('%s names %s twice; give each type once with its count' % (where, short))
            types[short] = _count(count, '%s: the count of %s' % (where, short))
        out.append({'devices': devices, 'types': sorted(types.items())})
    return out


def check_inputs(config, gpus=None, state='present', sriov_manage=SRIOV_MANAGE, sysfs_root=None, proc_root=None):
    """Everything the caller gave, before sysfs is read: returns the normalised config (None for absent)."""
    if state not in STATES:
        raise VfProfileError('state is %s; expected present or absent' % _brief(state))
    for bdf in gpus or []:
        if not pci_address.is_sysfs_bdf(bdf):
            raise VfProfileError('GPU address %s is not a PCI address as sysfs spells it; give the full, lower-case '
                                 'form with its domain, such as 0000:41:00.0' % _brief(bdf))
    # run as root now and at every boot: absent means sriov_numvfs is written instead
    trusted_executable(sriov_manage, 'sriov_manage', missing_ok=True)
    for value, name in ((sysfs_root, 'sysfs_root'), (proc_root, 'proc_root')):
        if value is not None:
            trusted_path(value, name, kind='dir')
    if state == 'absent':
        return None
    return normalise_config(config)


def _pci_key(bdf):
    return int(bdf.replace(':', '').replace('.', ''), 16)


def gpu_pfs(root):
    """NVIDIA GPU PFs (vendor 10de, class 0300 or 0302, no physfn), sorted numerically by address: index i of the
    list is GPU index i (vgpu-device-manager @ 4d31dc65 pkg/vgpu/vfio/sysfs.go gpuAddresses, isNvidiaGPU)."""
    found = []
    for bdf in sysfs.list_names(os.path.join(root, 'bus', 'pci', 'devices')):
        if not pci_address.is_sysfs_bdf(bdf):
            continue
        vendor = sysfs.hex_id(_read(_dev(root, bdf, 'vendor')), 4)
        cls = sysfs.hex_id(_read(_dev(root, bdf, 'class')), 4)
        if vendor == '10de' and cls in ('0300', '0302') and sysfs.link_target(_dev(root, bdf, 'physfn')) is None:
            found.append(bdf)
    return sorted(found, key=_pci_key)


def _number(root, bdf, *parts):
    path = _dev(root, bdf, *parts)
    value = _read(path)
    if value is None:
        return None
    if not NUMBER.fullmatch(value):
        raise VfProfileError('%s reads %s; expected a non-negative integer' % (path, _brief(value)))
    return int(value)


def virtual_functions(root, pf):
    """The PF's VFs in virtfn order (vfio.go virtualFunctions); names outside the PCI address grammar refused."""
    base = _dev(root, pf)
    pairs = []
    for name in sysfs.list_names(base):
        match = VIRTFN.fullmatch(name)
        if not match:
            continue
        vf = sysfs.link_name(os.path.join(base, name))
        if vf is None or not pci_address.is_sysfs_bdf(vf):
            raise VfProfileError('%s points at %s, not a PCI address; give sysfs_root the sysfs the kernel '
                                 'mounted' % (os.path.join(base, name), _brief(vf)))
        # the VF must name this PF as its physfn (the kernel links both ways: pci_iov_sysfs_link in
        # drivers/pci/iov.c), and no VF may be listed twice
        physfn = sysfs.link_name(_dev(root, vf, 'physfn'))
        if physfn != pf:
            raise VfProfileError('%s points at VF %s, whose physfn is %s, not %s; give sysfs_root the sysfs the kernel '
                                 'mounted' % (os.path.join(base, name), vf, _brief(physfn), pf))
        if vf in [v for dummy, v in pairs]:
            raise VfProfileError('VF %s is listed twice under %s; give sysfs_root the sysfs the kernel mounted'
                                 % (vf, base))
        pairs.append((int(match.group(1)), vf))
    return [vf for dummy, vf in sorted(pairs)]


def vf_state(root, vf):
    """{bdf, current (id str, '0' none), creatable [(id, name)], has_nvidia}."""
    ndir = _dev(root, vf, 'nvidia')
    current = _read(os.path.join(ndir, 'current_vgpu_type'))
    creatable = _read(os.path.join(ndir, 'creatable_vgpu_types'))
    if current is None or creatable is None:
        return {'bdf': vf, 'has_nvidia': False, 'current': '0', 'creatable': []}
    if not NUMBER.fullmatch(current):
        raise VfProfileError('%s reads %s; expected the id of the vGPU type on the VF, 0 for none'
                             % (os.path.join(ndir, 'current_vgpu_type'), _brief(current)))
    try:
        listed = parse_creatable(creatable, os.path.join(ndir, 'creatable_vgpu_types'))
    except VgpuError as e:
        raise VfProfileError(str(e))
    return {'bdf': vf, 'has_nvidia': True, 'current': str(int(current)), 'creatable': listed}


def read_gpu(root, pf, sriov_manage=SRIOV_MANAGE):
    """One PF: driver, VF counts, how its VFs would be enabled, and each VF's state."""
    total = _number(root, pf, 'sriov_totalvfs')
    numvfs = _number(root, pf, 'sriov_numvfs')
    vfs = virtual_functions(root, pf)
    return {
        'pf': pf, 'driver': sysfs.link_name(_dev(root, pf, 'driver')), 'totalvfs': total, 'numvfs': numvfs or 0,
        'enable': 'sriov-manage' if os.path.isfile(sriov_manage) and os.access(sriov_manage, os.X_OK)
        else 'sriov_numvfs',
        'vfs': [vf_state(root, vf) for vf in vfs],
    }


def vf_holders(root, proc, vf):
    """Processes holding the VF's VFIO device (a VM's QEMU, virt-launcher): an fd on /dev/vfio/<its IOMMU group> or
    on /dev/vfio/devices/<its cdev under vfio-dev/>. [{pid, executable, device, unit}] (gpu_holders' executable
    name: the command line is never shown)."""
    group = sysfs.link_name(_dev(root, vf, 'iommu_group'))
    cdevs = set(sysfs.list_names(_dev(root, vf, 'vfio-dev')))
    found = []
    try:
        pids = [p for p in os.listdir(proc) if gpu_holders.PID.fullmatch(p)]
    except OSError as e:
        # fail closed: a VF whose holders cannot be looked up is not changed
        raise VfProfileError('proc_root %s cannot be listed (%s), so the holders of VF %s cannot be checked; give '
                             'the directory procfs is mounted on (/proc)' % (proc, _errno_text(e), vf))
    for pid in sorted(pids, key=int):
        fd_dir = os.path.join(proc, pid, 'fd')
        for fd in sysfs.list_names(fd_dir):
            target = sysfs.link_target(os.path.join(fd_dir, fd))
            if target is None or len(target) > 64:
                continue
            g, c = VFIO_GROUP_DEV.fullmatch(target), VFIO_CDEV.fullmatch(target)
            if (g and group is not None and g.group(1) == group) or (c and c.group(1) in cdevs):
                cgroup = sysfs.read_text(os.path.join(proc, pid, 'cgroup'), gpu_holders.HoldersError)
                found.append({'pid': int(pid), 'executable': gpu_holders.executable_name(proc, pid), 'device': target,
                              'unit': gpu_holders.unit_from_cgroup(cgroup)})
                break
    return found


def _holder_text(holders):
    parts = []
    for h in holders[:gpu_holders.MESSAGE_HOLDERS]:
        unit = ' in unit %s' % h['unit'] if h['unit'] else ''
        parts.append('PID %d (%s) holds %s%s' % (h['pid'], gpu_holders.executable(h), h['device'], unit))
    if len(holders) > gpu_holders.MESSAGE_HOLDERS:
        parts.append('and %d more' % (len(holders) - gpu_holders.MESSAGE_HOLDERS))
    return ', '.join(parts)


def select(config, pfs, gpus=None):
    """{pf: [(name, count)]} from the normalised config: entries by GPU index; ``gpus`` narrows to those PFs."""
    wanted = {}
    for entry in config:
        indices = range(len(pfs)) if entry['devices'] == 'all' else entry['devices']
        for index in indices:
            if index >= len(pfs):
                raise VfProfileError('the vGPU config names GPU index %d, but the host has %d NVIDIA GPU%s (%s)'
                                     % (index, len(pfs), '' if len(pfs) == 1 else 's', ', '.join(pfs) or 'none'))
            if pfs[index] in wanted:
                raise VfProfileError('GPU index %d (%s) is in two vGPU config entries; give each GPU one entry'
                                     % (index, pfs[index]))
            wanted[pfs[index]] = list(entry['types'])
    if gpus:
        missing = [g for g in gpus if g not in pfs]
        if missing:
            raise VfProfileError('%s %s not an NVIDIA GPU PF on this host; its GPUs are %s'
                                 % (', '.join(missing), 'is' if len(missing) == 1 else 'are', ', '.join(pfs) or 'none'))
        wanted = dict((pf, types) for pf, types in wanted.items() if pf in gpus)
    return wanted


def check_gpu(gpu):
    """A PF that cannot take vendor-VFIO profiles raises naming it and the fix."""
    pf = gpu['pf']
    if gpu['driver'] != 'nvidia':
        raise VfProfileError('GPU %s is on %s, not the nvidia driver; vendor-specific VFIO vGPUs need the NVIDIA vGPU '
                             'Manager (vgpu-kvm host driver) to own the PF: load it, and do not bind the GPU to '
                             'vfio-pci (the vfio role leaves vGPU hosts alone)' % (pf, gpu['driver'] or 'no driver'))
    if not gpu['totalvfs']:
        raise VfProfileError('GPU %s has no SR-IOV (no sriov_totalvfs, or 0): it offers no VFs to give profiles to; '
                             'enable SR-IOV in the firmware, or use the mdev path if the host shows /sys/class/mdev_bus'
                             % pf)
    for vf in gpu['vfs']:
        if not vf['has_nvidia']:
            raise VfProfileError('VF %s of GPU %s has no nvidia/current_vgpu_type and creatable_vgpu_types: the host '
                                 'does not offer vendor-specific VFIO (a host on mdev lists its types under '
                                 '/sys/class/mdev_bus), or the vGPU Manager is not loaded' % (vf['bdf'], pf))


def _names(gpu, known=None):
    names = dict(known or {})
    for vf in gpu['vfs']:
        names.update(vf['creatable'])
    return names


# the frame buffer of a time-sliced type, from its name: L40S-24Q -> 24 (GiB), A10-2B -> 2
FRAMEBUFFER = re.compile(r'(?:NVIDIA |GRID )?[A-Za-z0-9]+-([0-9]{1,3})[A-Z]{1,2}')


def _check_room(gpu, wanted, names):
    """On a GPU with no vGPU yet every VF lists every type that fits the whole GPU, the largest being the whole
    frame buffer (L40S-48Q on a 48 GB L40S): more vGPUs than fit are refused here, before any write, rather than by
    the driver halfway through."""
    if not wanted or any(vf['current'] != '0' for vf in gpu['vfs']):
        return
    sizes = {}
    for tid, name in names.items():
        match = FRAMEBUFFER.fullmatch(name)
        if match:
            sizes[tid] = int(match.group(1))
    listed = [sizes[t] for vf in gpu['vfs'] for t, dummy in vf['creatable'] if t in sizes]
    if not listed or any(tid not in sizes for dummy, tid, dummy2 in wanted):
        return
    whole = max(listed)
    need = sum(sizes[tid] * count for dummy, tid, count in wanted)
    if need > whole:
        raise VfProfileError('GPU %s has %d GB of frame buffer for vGPUs (its largest type) and the config asks for %d '
                             'GB (%s); lower the counts' % (gpu['pf'], whole, need, ', '.join(
                                 '%d x %s' % (count, name) for name, dummy, count in wanted)))


def plan_gpu(gpu, types, state='present', remove_unlisted=False, proc=None, root='/sys', known=None):
    """The steps for one PF's enabled VFs: [{vf, before, after, action: keep | set | clear | none, name}].

    Deterministic: VFs in virtfn order; VFs already on a wanted type keep it (up to its count); the remaining
    vGPUs go, type by type in name order, to the free VFs in order, each only where its VF lists it creatable
    now. VFs on another type are left alone unless ``remove_unlisted`` (or state absent), and then only when no
    process holds them.

    ``known``: {id: name} saved when the profiles were set (``load_saved``). A type in use leaves the creatable
    lists (vfio.go TypeResolver: "once existing vGPU devices consume the GPU's capacity, the creatable lists no
    longer include the types of the devices that were already created"), so on a full GPU only the saved names say
    which type its VFs hold."""
    pf = gpu['pf']
    names = _names(gpu, known)
    ids = {}
    # a name the VFs list now takes its live id; a saved id only names a type no creatable list shows any more
    live = [pair for vf in gpu['vfs'] for pair in vf['creatable']]
    for tid, name in live + list(names.items()):
        ids.setdefault(short_type_name(name), tid)
    unnamed = sorted(set(v['current'] for v in gpu['vfs'] if v['current'] != '0' and v['current'] not in names))
    wanted = []
    if state == 'present':
        for name, count in types:
            if name in ids:
                wanted.append((name, ids[name], count))
                continue
            offered = sorted(set(short_type_name(n) for n in names.values()))
            held = sorted(set(names.get(v['current'], v['current']) for v in gpu['vfs'] if v['current'] != '0'))
            raise VfProfileError(
                'GPU %s does not list %s among its creatable vGPU types (%s)%s%s' % (
                    pf, name, ', '.join(offered) or 'none now: every VF is taken or the GPU is full',
                    ' (its VFs hold type ids %s, which no creatable list and no saved config name)'
                    % ', '.join(unnamed) if unnamed else '',
                    '; its VFs hold %s, and a GPU lists only what still fits beside the vGPUs it has: to move it to '
                    '%s, clear its profiles first (state absent for this GPU, with its VMs stopped), then apply'
                    % (', '.join(held), name) if held else '; pick one of those'))
    _check_room(gpu, wanted, names)
    left = dict((tid, count) for dummy, tid, count in wanted)
    steps = []
    for vf in gpu['vfs']:
        cur = vf['current']
        if cur != '0' and left.get(cur, 0) > 0:
            left[cur] -= 1
            steps.append({'vf': vf['bdf'], 'before': cur, 'after': cur, 'action': 'keep'})
        elif cur != '0' and (remove_unlisted or state == 'absent'):
            steps.append({'vf': vf['bdf'], 'before': cur, 'after': '0', 'action': 'clear'})
        elif cur != '0':
            steps.append({'vf': vf['bdf'], 'before': cur, 'after': cur, 'action': 'leave'})
        else:
            steps.append({'vf': vf['bdf'], 'before': '0', 'after': '0', 'action': 'none'})
    clearing = any(s['action'] == 'clear' for s in steps)
    by_vf = dict((vf['bdf'], vf) for vf in gpu['vfs'])
    for name, tid, dummy in wanted:
        for step in steps:
            if left[tid] <= 0:
                break
            free = step['action'] == 'none' or (step['action'] == 'clear' and step['after'] == '0')
            if not free:
                continue
            listed = [t for t, dummy2 in by_vf[step['vf']]['creatable']]
            # a VF about to be cleared lists less than it will: its capacity comes back with the clear
            if tid not in listed and not clearing:
                continue
            step.update(after=tid, action='set' if step['action'] == 'none' else 'change')
            left[tid] -= 1
        if left[tid] > 0:
            others = [s['vf'] for s in steps if s['action'] == 'leave']
            raise VfProfileError(
                'GPU %s cannot take %d more %s: %d VF%s enabled, %s; %s' % (
                    pf, left[tid], name, len(steps), '' if len(steps) == 1 else 's',
                    'no free VF lists %s as creatable now' % name,
                    ('VF%s %s hold%s other types: set remove_unlisted (role: vgpu_vf_remove_unlisted) to clear them, '
                     'or lower the count' % ('' if len(others) == 1 else 's', ', '.join(others[:4]),
                                             's' if len(others) == 1 else ''))
                    if others else 'lower the count to what the board offers (a GPU time-slices one vGPU size)'))
    for step in steps:
        step['name_before'] = names.get(step['before']) if step['before'] != '0' else None
        step['name_after'] = names.get(step['after']) if step['after'] != '0' else None
        if step['action'] in ('clear', 'change') and proc is not None:
            holders = vf_holders(root, proc, step['vf'])
            if holders:
                raise VfProfileError(
                    'VF %s of GPU %s is on %s and in use: %s. Stop that VM (or process) first; its profile is '
                    'changed only while nothing holds the VF' % (step['vf'], pf, step['name_before'] or
                                                                 'type %s' % step['before'], _holder_text(holders)))
    return steps


def live_types(plans):
    """{id: name} of every type the planned GPUs' VFs list as creatable now (read by ``plan``, no I/O here)."""
    live = {}
    for x in plans:
        for vf in x['gpu']['vfs']:
            live.update(vf['creatable'])
    return live


def renumbered(saved, live):
    """Warnings for each type the saved config names by another id than the host's creatable lists do now (a driver
    update renumbers them): the live id is the one used, and the user is told, since the saved ids also restore the
    VFs at boot until the next run saves the new ones. ``saved``, ``live``: {id: name}."""
    live_ids = {}
    for tid, name in sorted(live.items()):
        live_ids.setdefault(name, tid)
    out = []
    for tid, name in sorted(saved.items()):
        if name in live_ids and live_ids[name] != tid:
            out.append('the saved config names %s as type id %s; the host lists it as %s now (a driver update?): '
                       '%s is used, and this run saves it for the boot-time restore' % (name, tid, live_ids[name],
                                                                                        live_ids[name]))
    return out


def plan(root, config, gpus=None, state='present', remove_unlisted=False, proc='/proc', sriov_manage=SRIOV_MANAGE,
         known=None):
    """Read the host and plan every GPU; raises before any change. Returns [{pf, enable: None | method, gpu, steps,
    types}] in PF order. A GPU whose VFs are not enabled yet has ``enable`` set and no steps: its plan is made after
    the VFs appear (``plan_gpu`` on the re-read PF), still before any profile is written."""
    trusted_path(root, 'sysfs_root', kind='dir')
    if proc is not None:
        trusted_path(proc, 'proc_root', kind='dir')
    pfs = gpu_pfs(root)
    if state == 'absent':
        wanted = dict((pf, []) for pf in (gpus or pfs))
        if gpus:
            select([{'devices': 'all', 'types': []}], pfs, gpus)
    else:
        wanted = select(config, pfs, gpus)
    if not wanted:
        raise VfProfileError('no NVIDIA GPU PF on this host (%s) matches the vGPU config; nothing to give profiles '
                             'to' % os.path.join(root, 'bus', 'pci', 'devices'))
    gpus_read = []
    for pf in sorted(wanted, key=_pci_key):
        gpu = read_gpu(root, pf, sriov_manage)
        check_gpu(gpu)
        gpus_read.append(gpu)
    # every GPU's lists name types: a type in use on one GPU is still listed by an idle GPU of the same model
    known = dict(known or {})
    for pf in pfs:
        for vf in virtual_functions(root, pf):
            known.update(vf_state(root, vf)['creatable'])
    out = []
    for gpu in gpus_read:
        pf = gpu['pf']
        enable = None
        if not gpu['vfs']:
            if state == 'absent':
                out.append({'pf': pf, 'enable': None, 'gpu': gpu, 'steps': [], 'types': [], 'known': known})
                continue
            enable = gpu['enable']
            # its VFs (and their creatable lists) appear only once enabled: what can be checked now is checked now,
            # before the enable, which is a change
            need = sum(count for dummy, count in wanted[pf])
            if need > gpu['totalvfs']:
                raise VfProfileError('GPU %s has %d VFs (sriov_totalvfs) and the config asks for %d vGPUs on it (one '
                                     'per VF); lower the counts' % (pf, gpu['totalvfs'], need))
        steps = plan_gpu(gpu, wanted[pf], state, remove_unlisted, proc, root, known) if gpu['vfs'] else []
        out.append({'pf': pf, 'enable': enable, 'gpu': gpu, 'steps': steps, 'types': wanted[pf], 'known': known})
    return out


def finish_plan(root, plans, run, state='present', remove_unlisted=False, proc='/proc', sriov_manage=SRIOV_MANAGE,
                writer=None, known=None, done=None):
    """Enable the VFs of the GPUs that need it (the one change made before every GPU is planned: it writes no
    profile), then plan those GPUs on their new VFs. Every profile is checked before the first profile write.
    ``done``: the one list of changes made so far, across GPUs; each enable is added to it as it happens, so a
    refusal after it can say so."""
    done = [] if done is None else done
    for p in plans:
        if not p['enable']:
            continue
        enable_vfs(root, p['gpu'], run, sriov_manage, writer)
        done.append('%s: VFs enabled (%s)' % (p['pf'], p['enable']))
        p['gpu'] = read_gpu(root, p['pf'], sriov_manage)
        check_gpu(p['gpu'])
        p['steps'] = plan_gpu(p['gpu'], p['types'], state, remove_unlisted, proc, root,
                              dict(p.get('known') or {}, **(known or {})))
    return plans


def changed(plans):
    return any(p['enable'] or any(s['action'] in ('set', 'clear', 'change') for s in p['steps']) for p in plans)


def _errno_text(e):
    code = errno.errorcode.get(e.errno, str(e.errno)) if e.errno is not None else 'no errno'
    return '%s (%s)' % (code, e.strerror or e)


def enable_vfs(root, gpu, run, sriov_manage=SRIOV_MANAGE, writer=None):
    """Enable the PF's VFs: ``sriov-manage -e <PF>`` (argv, the PF checked by the PCI address grammar) when the
    script is there, else ``sriov_totalvfs`` into ``sriov_numvfs``."""
    pf = gpu['pf']
    if not pci_address.is_sysfs_bdf(pf):
        raise VfProfileError('GPU address %s is not a PCI address' % _brief(pf))
    if gpu['enable'] == 'sriov-manage':
        rc, out, err = run([sriov_manage, '-e', pf])
        if rc != 0:
            raise VfProfileError('%s -e %s failed (rc %s): %s' % (sriov_manage, pf, rc, (err or out or '').strip()[:500]))
    else:
        try:
            (writer or write_attr)(_dev(root, pf, 'sriov_numvfs'), str(gpu['totalvfs']))
        except (IOError, OSError) as e:
            raise VfProfileError('writing %d to %s failed: %s' % (gpu['totalvfs'], _dev(root, pf, 'sriov_numvfs'),
                                                                  _errno_text(e)))
    vfs = virtual_functions(root, pf)
    if not vfs:
        raise VfProfileError('GPU %s shows no VFs after enabling them; see dmesg (the vGPU Manager must be loaded '
                             'and SR-IOV on in the firmware)' % pf)


def _write_type(root, vf, tid, writer, done):
    path = _dev(root, vf, 'nvidia', 'current_vgpu_type')
    try:
        writer(path, tid)
    except (IOError, OSError) as e:
        raise VfProfileError('writing %s to %s failed: %s%s' % (
            tid, path, _errno_text(e), '; done before it: %s' % '; '.join(done) if done else ''))
    back = vf_state(root, vf)['current']
    if back != tid:
        raise VfProfileError('%s reads %s after %s was written%s' % (
            path, back, tid, '; done before it: %s' % '; '.join(done) if done else ''))


def apply_gpu(root, gpu_plan, writer=None, done=None):
    """Write one GPU's steps: clears first (capacity comes back), then sets, each set re-checked against the VF's
    creatable list just before its write (vfio.go SetVGPUConfig re-reads it per VF too). ``done`` is the one list
    of changes across GPUs (a failure names everything before it, on any GPU); returns the lines this GPU added."""
    writer = writer or write_attr
    done = [] if done is None else done
    start = len(done)
    for step in gpu_plan['steps']:
        if step['action'] in ('clear', 'change'):
            _write_type(root, step['vf'], '0', writer, done)
            done.append('%s cleared' % step['vf'])
    for step in gpu_plan['steps']:
        if step['action'] not in ('set', 'change'):
            continue
        listed = [t for t, dummy in vf_state(root, step['vf'])['creatable']]
        if step['after'] not in listed:
            raise VfProfileError('VF %s no longer lists %s (%s) as creatable (it lists %s): the GPU has no room left '
                                 'for it; lower the count%s' % (
                                     step['vf'], step['name_after'], step['after'], ', '.join(listed) or 'nothing',
                                     '; done before it: %s' % '; '.join(done) if done else ''))
        _write_type(root, step['vf'], step['after'], writer, done)
        done.append('%s got %s (%s)' % (step['vf'], step['name_after'], step['after']))
    return done[start:]


def report(plans):
    """[{pf, vf, before, after, action, ...}] flattened, and the diff texts."""
    rows, before, after = [], [], []
    for p in plans:
        if p['enable']:
            rows.append({'pf': p['pf'], 'vf': None, 'action': 'enable', 'method': p['enable'],
                         'before': None, 'after': None, 'name_before': None, 'name_after': None})
        for s in p['steps']:
            rows.append(dict(s, pf=p['pf']))
            shown_before = s['name_before'] or ('none' if s['before'] == '0' else s['before'])
            shown_after = s['name_after'] or ('none' if s['after'] == '0' else s['after'])
            before.append('%s %s: %s\n' % (p['pf'], s['vf'], shown_before))
            after.append('%s %s: %s\n' % (p['pf'], s['vf'], shown_after))
    return rows, ''.join(before), ''.join(after)


def check_saved_paths(sysfs_root='/sys', sriov_manage=SRIOV_MANAGE):
    """The two paths that go into the boot-time config, checked as persist_config checks them; the module calls this
    before its first change, so a root that the restore would refuse at boot stops the run before any write."""
    _unit_path(sysfs_root, 'sysfs_root')
    _unit_path(sriov_manage, 'sriov_manage')


def persist_config(plans, sysfs_root='/sys', sriov_manage=SRIOV_MANAGE, timeout=300):
    """The boot-time config (JSON, read by the role's restore script): only checked values, the wanted VF -> id of
    every GPU; VFs kept on another type are not recorded (they were not ours)."""
    check_saved_paths(sysfs_root, sriov_manage)
    gpus, types = [], {}
    for p in plans:
        for s in p['steps']:
            if s['action'] in ('keep', 'set', 'change') and s['name_after']:
                types[s['after']] = s['name_after']
        vfs = dict((s['vf'], int(s['after'])) for s in p['steps'] if s['action'] in ('keep', 'set', 'change'))
        bad = [v for v in [p['pf']] + list(vfs) if not pci_address.is_sysfs_bdf(v)]
        if bad:
            raise VfProfileError('%s %s not a PCI address; nothing is saved for boot' % (
                ', '.join(_brief(b) for b in bad), 'is' if len(bad) == 1 else 'are'))
        if vfs:
            gpus.append({'pf': p['pf'], 'vfs': dict(sorted(vfs.items()))})
    return {'version': 1, MARKER_KEY: 'gpuvirt.provision', 'sysfs_root': sysfs_root, 'sriov_manage': sriov_manage, 'timeout': int(timeout),
            'gpus': gpus, 'types': dict(sorted(types.items()))}


def planned_boot_config(plans, sysfs_root='/sys', sriov_manage=SRIOV_MANAGE, timeout=300):
    """The boot-time config the role would install on this host now, computed without writing anything (the
    module's ``plan``): ``persist_config`` of the plans, refused where a GPU's VFs are not enabled yet. The config
    names each VF by its PCI address, and a VF exists only once it is enabled, which is a write; so a GPU without
    VFs has no honest config yet. On OpenShift the GPU Operator's vGPU Manager container enables them itself once it
    has loaded the driver (NVIDIA/gpu-driver-container vgpu-manager/rhel9/nvidia-driver, ``_enable_vfs``:
    ``sriov-manage -e ALL`` after ``_load_driver``)."""
    off = [p['pf'] for p in plans if p['enable']]
    if off:
        raise VfProfileError(
            'GPU %s %s no VFs enabled yet, so its boot-time config (which names each VF by its PCI address) cannot be '
            'computed without enabling them, and plan writes nothing. The GPU Operator\'s vGPU Manager enables them '
            'once it has loaded the driver (sriov-manage -e ALL): check its nvidia-vgpu-manager pod on the node, then '
            'run again once %s virtfn links' % (
                ', '.join(off), 'has' if len(off) == 1 else 'have',
                'its PF shows' if len(off) == 1 else 'their PFs show'))
    return persist_config(plans, sysfs_root, sriov_manage, timeout)


def merge_saved(saved, persist, touched):
    """The boot config after a run narrowed to some GPUs: ``persist`` (this run's GPUs, ``touched`` the PFs it
    planned) plus every saved GPU it did not touch, so a narrowed run keeps the others' boot restore and a narrowed
    absent drops only its GPUs. Saved entries are checked by their grammar; a malformed one raises."""
    if saved is None:
        return persist
    gpus = saved.get('gpus') if isinstance(saved, dict) else None
    if not isinstance(gpus, list):
        raise VfProfileError('the saved config holds gpus %s; expected a list; remove the file to start afresh'
                             % _brief(gpus))
    kept = []
    for gpu in gpus:
        pf = gpu.get('pf') if isinstance(gpu, dict) else None
        vfs = gpu.get('vfs') if isinstance(gpu, dict) else None
        if not (isinstance(pf, str) and pci_address.is_sysfs_bdf(pf) and isinstance(vfs, dict) and all(
                isinstance(vf, str) and pci_address.is_sysfs_bdf(vf) and isinstance(tid, int)
                and not isinstance(tid, bool) and 0 < tid < 10 ** 9 for vf, tid in vfs.items())):
            raise VfProfileError('the saved config holds GPU entry %s; expected {pf: <PCI address>, vfs: {<VF>: '
                                 '<type id>}}; remove the file to start afresh' % _brief(gpu))
        if pf not in touched:
            kept.append({'pf': pf, 'vfs': dict(sorted(vfs.items()))})
    out = dict(persist)
    out['gpus'] = sorted(kept + list(persist['gpus']), key=lambda g: _pci_key(g['pf']))
    types = load_saved(saved) if kept else {}
    types.update(persist['types'])
    out['types'] = dict(sorted(types.items()))
    return out


def read_saved(path):
    """A saved boot config's bytes: a regular file (lstat, then fstat: a FIFO would block), no link followed
    (O_NOFOLLOW | O_NONBLOCK), at most sysfs.READ_LIMIT (1 MiB); anything else raises naming it."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise VfProfileError('saved_config %s is not a regular file; remove it to start afresh' % path)
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise VfProfileError('saved_config %s is not a regular file; remove it to start afresh' % path)
        data = os.read(fd, sysfs.READ_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > sysfs.READ_LIMIT:
        raise VfProfileError('saved_config %s is larger than %d bytes; remove it to start afresh'
                             % (path, sysfs.READ_LIMIT))
    return data


def load_saved(data):
    """{id: name} from a saved boot config (persist_config's ``types``), each checked by its grammar: the file is
    ours, but it is read back from the host. A config without types gives {}; anything malformed raises."""
    if data is None:
        return {}
    types = data.get('types') if isinstance(data, dict) else None
    if not isinstance(types, dict):
        raise VfProfileError('the saved config holds %s; expected the JSON object this module wrote, with "types": '
                             '{id: name}; remove the file to start afresh' % _brief(data))
    out = {}
    for tid, name in types.items():
        if not (isinstance(tid, str) and NUMBER.fullmatch(tid) and isinstance(name, str)
                and CREATABLE_NAME.fullmatch(name)):
            raise VfProfileError('the saved config names type %s as %s; expected a decimal id and a vGPU type name; '
                                 'remove the file to start afresh' % (_brief(tid), _brief(name)))
        out[str(int(tid))] = name
    return out


UNIT_NAME = re.compile(r'[A-Za-z0-9_.@-]{1,200}\.service')

# the boot-time restore's files, at fixed paths under one prefix (``root_dir``, / on a host); only these are ever
# written or removed, each only when it is a regular file carrying MARKER (MARKER_KEY in the JSON)
UNIT_NAME_FIXED = 'gpuvirt-vgpu-vf.service'
INSTALLED = (
    ('unit', '/etc/systemd/system/' + UNIT_NAME_FIXED),
    ('script', '/usr/local/libexec/gpuvirt/vgpu-vf-restore'),
    ('config', '/etc/gpuvirt/vgpu-vf-profiles.json'),
)
# our own leaf directories: created (0755 root) when absent, never changed when present
OWN_DIRS = ('/etc/gpuvirt', '/usr/local/libexec/gpuvirt')
MARKER = '# Managed by gpuvirt.provision'
MARKER_KEY = 'managed_by'


def _under(root_dir, path):
    return path if root_dir == '/' else root_dir + path


def os_release_fields(root_dir='/', host='this host'):
    """os_release.read_any() of ``<root_dir>/etc/os-release``, else ``<root_dir>/usr/lib/os-release``
    (os-release(5)); VfProfileError where neither is a readable regular file (the host may be CoreOS)."""
    try:
        return os_release.read_any([_under(root_dir, path) for path in os_release.PATHS], host, sysfs.read_bytes)
    except os_release.OsReleaseError as e:
        raise VfProfileError(str(e))


def refuse_coreos(root_dir='/', host='this host'):
    """Raise, before any change, on a CoreOS host (os_release.coreos, the rule host_prep and retire use): its files
    and systemd units are the Machine Config Operator's (it renders every MachineConfig of the node's pool into the
    node's config, and /usr/local is a link into /var there), so a unit, a script and a config written over SSH
    would be outside what the MCO rolls and checks."""
    fields = os_release_fields(root_dir, host)
    if os_release.coreos(fields):
        raise VfProfileError(
            '%s runs %s (/etc/os-release ID=%s, VARIANT_ID=%s), whose files and systemd units belong to the Machine '
            'Config Operator: the vgpu_vf role does not set VF profiles or install their boot-time restore over SSH '
            'there. Deliver the restore unit and its script as a MachineConfig of the node\'s pool '
            '(module_utils/manifests/machineconfig.py build_vgpu_vf_machineconfig; docs/pools/vendor-vfio.md, '
            '"OpenShift"). Nothing was changed.'
            % (host, os_release.name(fields), fields['ID'] or '(none)', fields['VARIANT_ID'] or '(none)'))


def installed_files(root_dir='/'):
    """{unit|script|config: {path (on this machine, under root_dir), final (as the unit names it), exists, ours}}
    plus ``dirs``: our leaf directories to create. Raises before any change when root_dir, a parent of a file, or an
    existing file is not ours to write: a parent not trusted, an existing path that is not a regular file, or a
    regular file without our marker; and on a CoreOS host (``refuse_coreos``)."""
    trusted_path(root_dir, 'root_dir', kind='dir')
    refuse_coreos(root_dir)
    out = {}
    for key, final in INSTALLED:
        path = _under(root_dir, final)
        trusted_path(os.path.dirname(path), 'the directory of the %s' % key, kind='dir', missing_ok=True)
        exists = trusted_path(path, 'the %s file' % key, kind=None, missing_ok=True)
        if exists and not _ours(path, key):
            raise VfProfileError('%s exists and is not ours (not a regular file carrying "%s"): it is left alone, '
                                 'and nothing is installed over it; move it away if it is a stale copy'
                                 % (path, OWNED_MARKERS[key][0]))
        out[key] = {'path': path, 'final': final, 'exists': exists}
    out['dirs'] = [_under(root_dir, d) for d in OWN_DIRS]
    return out


def install_paths(root_dir='/'):
    """{unit, script, config: the path under ``root_dir``; dirs: our leaf directories}, from the path grammar alone
    (nothing is read): what the role's file tasks compute in the task itself from the public ``vgpu_vf_root_dir``,
    so a replaced module result cannot move a write. The module checks the same prefix on the host
    (``installed_files``) before its first change."""
    _path(root_dir, 'root_dir')
    out = dict((key, _under(root_dir, final)) for key, final in INSTALLED)
    out['dirs'] = [_under(root_dir, d) for d in OWN_DIRS]
    return out


def restart_argv(root_dir, python, vfs):
    """The argument vector that has the installed restore script restart KubeVirt's virt-handler after the role
    changed the profiles of ``vfs`` (the script's ``--restart-virt-handler`` mode): ``python`` by the path grammar
    (the module checked it on the host by the trusted-path rule in the same run), the script at its fixed path under
    ``root_dir``, each VF by the PCI address grammar. Raises naming what does not fit."""
    script = install_paths(root_dir)['script']
    _path(python, 'the Python interpreter (vgpu_vf_python)')
    if not isinstance(vfs, list) or not vfs or len(vfs) > 4096:
        raise VfProfileError('the VFs whose profiles changed are %s; expected a non-empty list of PCI addresses'
                             % _brief(vfs))
    bad = [vf for vf in vfs if not pci_address.is_sysfs_bdf(vf)]
    if bad:
        raise VfProfileError('%s is not a VF\'s PCI address as sysfs spells it; nothing is run' % _brief(bad[0]))
    return [python, script, '--restart-virt-handler'] + list(vfs)


def owned_files_of(root_dir='/'):
    """The boot-time restore's files as owned_files_absent takes them back: ``[{path, marker, line}]`` for the unit,
    the script and the config under ``root_dir`` (``install_paths``: nothing is read), each with its OWNED_MARKERS
    rule, the one the writer and host_plan judge by."""
    paths = install_paths(root_dir)
    return [dict(path=paths[key], marker=OWNED_MARKERS[key][0], line=OWNED_MARKERS[key][1])
            for key, _final in INSTALLED]


def _timeout(value, name='wait_timeout'):
    """A whole number of seconds from 10 to 3600; a decimal string counts (an inventory or -e value), as the
    module's int option takes it."""
    if isinstance(value, str) and NUMBER.fullmatch(value):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 10 <= value <= 3600:
        raise VfProfileError('%s is %s; expected 10 to 3600 seconds' % (name, _brief(value)))
    return value


def checked_persist(persist, sysfs_root='/sys', sriov_manage=SRIOV_MANAGE, timeout=300):
    """The boot-time config to write, rebuilt from a module result: its GPUs and types each checked by their grammar
    (PCI addresses, decimal ids, type names as creatable_vgpu_types prints them), its paths and timeout the public
    inputs (checked by the path grammar), never the result's. Raises VfProfileError naming what does not fit."""
    keys = {'version', MARKER_KEY, 'sysfs_root', 'sriov_manage', 'timeout', 'gpus', 'types'}
    if not isinstance(persist, dict) or set(persist) != keys:
        raise VfProfileError('the boot-time config is %s; expected the module\'s persist result (version, %s, '
                             'sysfs_root, sriov_manage, timeout, gpus, types)' % (_brief(persist), MARKER_KEY))
    check_saved_paths(sysfs_root, sriov_manage)
    gpus, types = persist['gpus'], persist['types']
    if not isinstance(gpus, list) or not isinstance(types, dict):
        raise VfProfileError('the boot-time config holds gpus %s and types %s; expected a list and a mapping'
                             % (_brief(gpus), _brief(types)))
    for gpu in gpus:
        if not (isinstance(gpu, dict) and set(gpu) == {'pf', 'vfs'} and isinstance(gpu['pf'], str)
                and pci_address.is_sysfs_bdf(gpu['pf']) and isinstance(gpu['vfs'], dict) and all(
                    isinstance(vf, str) and pci_address.is_sysfs_bdf(vf) and isinstance(tid, int)
                    and not isinstance(tid, bool) and 0 < tid < 10 ** 9 for vf, tid in gpu['vfs'].items())):
            raise VfProfileError('the boot-time config holds GPU entry %s; expected {pf: <PCI address>, vfs: {<VF>: '
                                 '<type id>}}' % _brief(gpu))
    for tid, name in types.items():
        if not (isinstance(tid, str) and NUMBER.fullmatch(tid) and isinstance(name, str)
                and CREATABLE_NAME.fullmatch(name)):
            raise VfProfileError('the boot-time config names type %s as %s; expected a decimal id and a vGPU type '
                                 'name' % (_brief(tid), _brief(name)))
    return {'version': 1, MARKER_KEY: 'gpuvirt.provision', 'sysfs_root': sysfs_root, 'sriov_manage': sriov_manage,
            'timeout': _timeout(timeout), 'gpus': [{'pf': g['pf'], 'vfs': dict(g['vfs'])} for g in gpus],
            'types': dict(types)}


# What proves each installed file ours, as the role writes it: (marker, the line it starts, 0 for anywhere). The
# unit's first line and the script's second (after its coding line) are the role's header; the JSON config names
# the collection in MARKER_KEY. The one rule of the writer (installed_files), the planner (host_plan) and the
# remover (roles/vgpu_vf/tasks/leave.yml and unpersist.yml give owned_files_absent owned_files_of's list, through
# the vgpu_vf_owned_files filter).
OWNED_MARKERS = {
    'unit': (MARKER + ' (vgpu_vf role).', 1),
    'script': (MARKER + ' (vgpu_vf role).', 2),
    'config': ('"%s": "gpuvirt.provision"' % MARKER_KEY, 0),
}


def _ours(path, key):
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        return False
    data = sysfs.read_bytes(path)
    if data is None or len(data) > sysfs.READ_LIMIT:
        return False
    return has_marker(data, key)


def has_marker(data, key):
    """Whether the bytes of the installed file ``key`` (unit, script, config) carry its marker (OWNED_MARKERS)."""
    marker, line = OWNED_MARKERS[key]
    return owned_files.carries(data, marker, line)


def _unit_path(value, name):
    return _path(value, name)


# The unit's two forms, one per systemd generation; both restart a failed start every 30 s without a start limit.
# ``oneshot``: Type=oneshot with Restart=on-failure, which systemd allows since v245 (commit 10e7272, "allow
# Restart= for oneshot units"; systemd.service(5), Restart=). Before it, service_verify() refuses the unit ("Service
# has Restart= setting other than no, which isn't allowed for Type=oneshot services. Refusing.";
# redhat-plumbers/systemd-rhel8, the 239 of EL8, src/core/service.c). ``forking``: for those, Type=forking, which
# Restart= is allowed on, with a start process that forks nothing (service.c of that 239: service_enter_start
# spawns ExecStart= as the control process of a forking service and waits for its exit under TimeoutStartSec=, as it
# waits for a oneshot's main process; a non-zero exit goes through service_enter_signal to service_enter_dead, which
# arms the restart timer (Restart=on-failure, RestartSec=) and enters auto-restart; a zero exit reaches
# service_enter_running, where an empty cgroup with RemainAfterExit=yes is "active (exited)", as a oneshot's is).
# So a start job (boot, ``systemctl start``/``restart``) waits for one run of the script in both forms and fails
# when that run fails, and the ordering is the same. GuessMainPID=no: no process left in the cgroup is ever taken
# for a main process (systemd.service(5), GuessMainPID=, for Type=forking without PIDFile=).
UNIT_TYPES = ('oneshot', 'forking')
UNIT_TYPE_CHOICES = ('auto',) + UNIT_TYPES
ONESHOT_RESTART_SINCE = 245
# the first line of ``systemctl --version``: "systemd 252 (252.17-1.el9)", "systemd 239 (239-78.el8)",
# "systemd 245 (245.4-4ubuntu3.22)"; src/basic/util.c version() prints "systemd " PROJECT_VERSION " (" GIT_VERSION ")"
# (a point release or an -rc in the first number is taken, the major number read)
SYSTEMD_VERSION_LINE = re.compile(
    r'systemd ([0-9]{1,4})(?:\.[0-9]{1,4})?(?:~rc[0-9]{1,3})?(?: \([A-Za-z0-9._~+-]{1,128}\))?')


def systemd_version(output, host='this host'):
    """The systemd version from ``systemctl --version``'s output (text the host printed: untrusted). Only the first
    line is read, and it must match SYSTEMD_VERSION_LINE whole; anything else raises naming the host and the line."""
    text = output if isinstance(output, str) else ''
    first = text.split('\n', 1)[0]
    found = SYSTEMD_VERSION_LINE.fullmatch(first)
    if not found or not 1 <= int(found.group(1)) <= 9999:
        raise VfProfileError('%s: systemctl --version printed %s as its first line; expected "systemd <version> '
                             '(<package version>)" such as "systemd 252 (252.17-1.el9)". The boot-time unit\'s form '
                             'depends on it; set vgpu_vf_unit_type to oneshot (systemd 245 or later) or forking (any '
                             'systemd) to choose it without reading the host. Nothing was changed.'
                             % (host, _brief(first)))
    return int(found.group(1))


def unit_type_for(version):
    """The unit's form for a systemd version: oneshot from 245 on, forking before (UNIT_TYPES)."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise VfProfileError('the systemd version is %s; expected a positive whole number' % _brief(version))
    return 'oneshot' if version >= ONESHOT_RESTART_SINCE else 'forking'


def check_unit_type(value, name='unit_type', choices=UNIT_TYPES):
    if not isinstance(value, str) or value not in choices:
        raise VfProfileError('%s is %s; expected one of %s' % (name, _brief(value), ', '.join(choices)))
    return value


# Where the interpreter of a unit built off the host (a MachineConfig, on the controller) may be: directories only
# root writes on the distributions the collection supports, and a Python 3 by its name. The host's own trusted-path
# rule (trusted_executable) cannot run there, and the value comes from the controller's inventory, not the host's.
SYSTEM_BIN_DIRS = ('/usr/bin', '/usr/libexec', '/usr/local/bin', '/bin', '/usr/sbin', '/sbin')
SYSTEM_PYTHON = re.compile(r'python3(?:\.[0-9]{1,2})?|platform-python')


def system_interpreter(python, name):
    """``python`` when it is a Python 3 of a system directory (SYSTEM_BIN_DIRS, SYSTEM_PYTHON), else
    VfProfileError naming ``name``."""
    _path(python, name)
    directory, base = os.path.split(python)
    if directory not in SYSTEM_BIN_DIRS or not SYSTEM_PYTHON.fullmatch(base):
        raise VfProfileError('%s is %s: a unit built off the host runs as root at every boot, so its interpreter is '
                             'a Python 3 (python3, python3.N or platform-python) of a directory only root writes: %s'
                             % (name, _brief(python), ', '.join(SYSTEM_BIN_DIRS)))
    return python


def unit_text(unit_path, script, config, python, timeout, on_host=True, unit_type='oneshot'):
    """The systemd unit that re-creates the VFs and profiles at boot, in the form ``unit_type`` (UNIT_TYPES: oneshot
    for systemd 245 and later, forking before), after the module load and the host's vGPU Manager services; the
    script waits for the sysfs files itself (``timeout``), so a vGPU Manager that loads later (the GPU Operator's,
    once kubelet runs its DaemonSet) is waited for too, not raced. ``on_host`` False (a unit built on the
    controller, for a MachineConfig) holds ``python`` to a Python 3 of a system directory (system_interpreter): the
    host's trusted-path rule cannot run there."""
    _unit_path(unit_path, 'the unit path')
    if not UNIT_NAME.fullmatch(os.path.basename(unit_path)):
        raise VfProfileError('the unit path %s does not end in a unit name such as gpuvirt-vgpu-vf.service'
                             % _brief(unit_path))
    for value, name in ((script, 'the restore script path'), (config, 'the config path')):
        _unit_path(value, name)
    # the unit runs it as root at every boot
    if on_host:
        trusted_executable(python, 'the Python interpreter')
    else:
        system_interpreter(python, 'the Python interpreter')
        timeout = _timeout(timeout)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 10 <= timeout <= 3600:
        raise VfProfileError('wait_timeout is %s; expected 10 to 3600 seconds' % _brief(timeout))
    check_unit_type(unit_type)
    # A start that fails (exit 1: the driver or the VFs did not come within ``timeout``, counted from early boot,
    # while on OpenShift kubelet, the vGPU Manager pod, its driver build and its VF delay come first) is started
    # again every 30 s until one succeeds: Restart=on-failure (allowed for Type=oneshot since systemd 245, commit
    # 10e7272; systemd.service(5) Restart=; RHEL 9 and RHCOS ship 252; the forking form before it, UNIT_TYPES) and no
    # start limit (StartLimitIntervalSec=0 in [Unit], systemd.unit(5)), else the default limit (5 starts in 10 s)
    # could end the retries. A success stays final (RemainAfterExit), so a later driver reload needs
    # ``systemctl restart`` (docs/pools/vendor-vfio.md).
    return (MARKER + ' (vgpu_vf role).\n'
            '[Unit]\n'
            'Description=Re-create NVIDIA vGPU VFs and their profiles (gpuvirt.provision)\n'
            'After=systemd-modules-load.service nvidia-vgpu-mgr.service nvidia-vgpud.service\n'
            'ConditionPathExists=%s\n'
            'StartLimitIntervalSec=0\n'
            '\n'
            '[Service]\n'
            '%s'
            'RemainAfterExit=yes\n'
            'ExecStart=%s %s %s\n'
            'TimeoutStartSec=%d\n'
            'Restart=on-failure\n'
            'RestartSec=30\n'
            '\n'
            '[Install]\n'
            'WantedBy=multi-user.target\n'
            % (config, 'Type=oneshot\n' if unit_type == 'oneshot' else 'Type=forking\nGuessMainPID=no\n',
               python, script, config, timeout + 60))
