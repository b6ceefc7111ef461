# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in for the NVIDIA vGPU Manager's vendor-specific VFIO sysfs, for the tests of vgpu_vf_profiles.

Why not a plain directory: a plain file takes any write, so it can never refuse an id the way the driver does.
Why not FUSE: it needs /dev/fuse and a FUSE library in the test environment, for what one function can model.
So the module writes every attribute through one function (``vgpu_vf_profiles.write_attr``) and runs commands
through the caller's ``run``; ``VfBoard.writer`` and ``VfBoard.run`` take their place and keep a real sysfs-shaped
tree (SysfsTree, the kernel's links) in step with the modelled driver. The module reads that tree as it reads /sys.

What the model does, and where each rule comes from:
- the PF starts with its VFs off or on; ``sriov-manage -e <PF>`` or a write to ``sriov_numvfs`` makes them
  (virtfnN links, physfn, nvidia/ files) (vgpu-device-manager @ 4d31dc65 pkg/vgpu/vfio/vfio.go ensureVFs;
  OpenNebula/docs @ 7e66d99c source/open_cluster_deployment/kvm_node/vgpu.rst, "Enabling VFs on ...");
- ``nvidia/creatable_vgpu_types`` of a free VF lists the types that fit the frame buffer left, under the
  ``ID    : vGPU Name`` header (the L40S capture, tests/unit/fixtures/sysfs), and only the size already in use
  once one vGPU exists (time-sliced vGPUs of one GPU share one size); a VF that holds a vGPU lists none: capacity
  in use leaves the lists (vfio.go TypeResolver comment: "once existing vGPU devices consume the GPU's capacity,
  the creatable lists no longer include the types of the devices that were already created");
- writing an id the VF does not list fails with EINVAL, writing an id to a VF that holds one fails with EBUSY, and
  ``0`` removes the vGPU. Which errno the closed-source driver returns is not stated by any public source we could
  read (vgpu-device-manager's sysfs.go setVGPUType only wraps the write error; KubeVirt's "vGPU: SRIOV support",
  pkg/virt-handler/device-manager/common.go HasVGPUProfile, only reads current_vgpu_type): EINVAL is the kernel's
  answer for a sysfs store that rejects its value, and the one the NVIDIA vGPU driver gives for an mdev it cannot
  start (mdevctl's tracker, "mdevctl start fails with Invalid argument (os error 22)", on a Tesla P40). The module
  does not depend on which errno: it reports any OSError with its errno name.
"""
from __future__ import annotations

import errno
import os

from sysfs_tree import SysfsTree

HEADER = 'ID    : vGPU Name\n'
# the L40S's Q types (ids and names as the L40S capture lists them; frame buffer in GiB from the name)
L40S_TYPES = [(1147, 'NVIDIA L40S-1Q', 1), (1148, 'NVIDIA L40S-2Q', 2), (1149, 'NVIDIA L40S-3Q', 3),
              (1150, 'NVIDIA L40S-4Q', 4), (1151, 'NVIDIA L40S-6Q', 6), (1152, 'NVIDIA L40S-8Q', 8),
              (1153, 'NVIDIA L40S-12Q', 12), (1154, 'NVIDIA L40S-16Q', 16), (1155, 'NVIDIA L40S-24Q', 24),
              (1156, 'NVIDIA L40S-48Q', 48)]


class VfBoard(object):
    """One or more GPUs (PFs) of one model with ``numvfs`` VFs each (VF n of PF bb:00.0 at bb:00.4+n, the A10 and
    L40S layout: offset 4, stride 1)."""

    def __init__(self, root, pfs=('0000:41:00.0',), vfs=4, enabled=True, types=None, memory=48, device='26b9',
                 driver='nvidia'):
        self.tree = SysfsTree(root)
        self.root = self.tree.root
        self.types = list(types or L40S_TYPES)
        self.memory = memory
        self.nvfs = vfs
        self.device = device
        self.current = {}     # vf -> type id (0 none)
        self.vfs = {}         # pf -> [vf]
        self.writes = []      # (path relative to root, value) of every write that the driver accepted
        self.refused = []     # (path, value, errno)
        self.commands = []
        for pf in pfs:
            self.tree.device(pf, '0302', '10de', device, subsystem=('10de', '1851'), driver=driver, group=pf[5:7])
            pf_rel = self._rel(pf)
            self.tree.write(os.path.join(pf_rel, 'sriov_totalvfs'), '%d\n' % vfs)
            self.tree.write(os.path.join(pf_rel, 'sriov_numvfs'), '0\n')
            self.vfs[pf] = []
            if enabled:
                self._enable(pf)

    def _rel(self, bdf):
        return os.path.relpath(os.path.realpath(self.tree.path('bus', 'pci', 'devices', bdf)), self.root)

    def _enable(self, pf):
        if self.vfs[pf]:
            return
        bus = pf.rsplit(':', 1)[0]
        for n in range(self.nvfs):
            slot, fn = divmod(4 + n, 8)
            vf = '%s:%02x.%d' % (bus, slot, fn)
            self.tree.device(vf, '0302', '10de', self.device, subsystem=('10de', '1851'), driver='nvidia',
                             group='%d%d' % (int(pf[5:7], 16), n))
            self.tree.link(os.path.join(self._rel(pf), 'virtfn%d' % n), '../' + vf)
            self.tree.link(os.path.join(self._rel(vf), 'physfn'), '../' + pf)
            self.vfs[pf].append(vf)
            self.current[vf] = 0
        self.tree.write(os.path.join(self._rel(pf), 'sriov_numvfs'), '%d\n' % self.nvfs)
        self.refresh()

    def pf_of(self, vf):
        return next(pf for pf, vfs in self.vfs.items() if vf in vfs)

    def creatable(self, vf):
        """(id, name) the driver lists on ``vf`` now."""
        if self.current.get(vf):
            return []
        sizes = dict((t, size) for t, dummy, size in self.types)
        used = [sizes[self.current[v]] for v in self.vfs[self.pf_of(vf)] if self.current.get(v)]
        left = self.memory - sum(used)
        return [(t, name) for t, name, size in self.types if size <= left and (not used or size == used[0])]

    def refresh(self):
        for vfs in self.vfs.values():
            for vf in vfs:
                nd = os.path.join(self._rel(vf), 'nvidia')
                self.tree.write(os.path.join(nd, 'creatable_vgpu_types'),
                                HEADER + ''.join('%d  : %s\n' % pair for pair in self.creatable(vf)))
                self.tree.write(os.path.join(nd, 'current_vgpu_type'), '%d\n' % self.current[vf])

    def _fail(self, path, value, code):
        self.refused.append((os.path.relpath(path, self.root), value, code))
        raise OSError(code, os.strerror(code), path)

    def writer(self, path, value):
        """vgpu_vf_profiles.write_attr, as the driver answers it."""
        real = os.path.realpath(path)
        rel = os.path.relpath(real, self.root)
        parts = rel.split(os.sep)
        if parts[-2:] == ['nvidia', 'current_vgpu_type']:
            vf = parts[-3]
            if not value.strip().isdigit():
                self._fail(path, value, errno.EINVAL)
            tid = int(value)
            if tid == 0:
                self.current[vf] = 0
            elif self.current[vf]:
                self._fail(path, value, errno.EBUSY)
            elif tid not in [t for t, dummy in self.creatable(vf)]:
                self._fail(path, value, errno.EINVAL)
            else:
                self.current[vf] = tid
            self.writes.append((rel, value))
            self.refresh()
            return
        if parts[-1] == 'sriov_numvfs':
            pf = parts[-2]
            if int(value) != self.nvfs:
                self._fail(path, value, errno.EINVAL)
            self.writes.append((rel, value))
            self._enable(pf)
            return
        self._fail(path, value, errno.EACCES)

    def run(self, argv):
        """AnsibleModule.run_command for ``sriov-manage -e <PF>``: (rc, stdout, stderr)."""
        self.commands.append(list(argv))
        if len(argv) == 3 and argv[1] == '-e' and argv[2] in self.vfs:
            self._enable(argv[2])
            return 0, 'Enabling VFs on %s\n' % argv[2], ''
        return 1, '', 'unexpected command'

    def set(self, vf, tid):
        """Put a vGPU on ``vf`` behind the module's back (an earlier run, another tool)."""
        self.current[vf] = tid
        self.refresh()
