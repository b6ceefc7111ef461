# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time discovery on a large synthetic host against the cost of running lspci here.

The host: 8 GPUs (L40S ids), each with 32 SR-IOV VFs carrying NVIDIA vendor-VFIO types (the 23 real types of
tests/unit/fixtures/sysfs/l40s-vf-*), 4 NVSwitches, one IOMMU group per function. Its lspci text is generated
in the -vmmnnkD layout of FORMAT-NOTES.md: SYNTHETIC, for timing only."""
from __future__ import absolute_import, division, print_function

import os
import shutil
import subprocess
import sys
import tempfile
import timeit

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))

from sysfs_tree import SysfsTree  # noqa: E402
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import lspci, sysfs_pci, vgpu_types  # noqa: E402

CREATABLE = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'sysfs', 'l40s-vf-0000_26_00.4-nvidia',
                         'creatable_vgpu_types')


def vmm(bdf, cls, clsname, dev, name, driver):
    return ('Slot:\t%s\nClass:\t%s [%s]\nVendor:\tNVIDIA Corporation [10de]\nDevice:\t%s [%s]\n'
            'SVendor:\tNVIDIA Corporation [10de]\nSDevice:\tDevice [1851]\nRev:\ta1\nDriver:\t%s\n'
            'Module:\tnouveau\nNUMANode:\t0\n' % (bdf, clsname, cls, name, dev, driver))


def build(root):
    tree, text, group = SysfsTree(root), [], 0
    with open(CREATABLE) as f:
        creatable = f.read()
    for i in range(4):
        bdf = '0000:%02x:00.0' % (0x07 + i)
        tree.device(bdf, '0680', '10de', '22a3', ('10de', '1796'), driver='nvidia-nvswitch', group=group, numa=0)
        text.append(vmm(bdf, '0680', 'Bridge', '22a3', 'GH100 [H100 NVSwitch]', 'nvidia-nvswitch'))
        group += 1
    for g in range(8):
        bus = 0x1b + g * 0x20
        pf = '0000:%02x:00.0' % bus
        tree.device(pf, '0302', '10de', '26b9', ('10de', '1851'), driver='nvidia', group=group, numa=g // 4)
        text.append(vmm(pf, '0302', '3D controller', '26b9', 'AD102GL [L40S]', 'nvidia'))
        group += 1
        vfs = []
        for v in range(32):
            fn = 4 + v  # offset 4, stride 1, as the real A10/A2 listings show
            vf = '0000:%02x:%02x.%d' % (bus, fn // 8, fn % 8)
            tree.device(vf, '0302', '10de', '26b9', ('10de', '1851'), driver='nvidia', group=group, numa=g // 4)
            tree.vendor_vgpu(vf, creatable)
            text.append(vmm(vf, '0302', '3D controller', '26b9', 'AD102GL [L40S]', 'nvidia'))
            vfs.append(vf)
            group += 1
        tree.sriov(pf, vfs)
    return tree, '\n'.join(text)


# Adversarial host output: each piece is a shape that made a backtracking regex take super-linear time. The
# parsers must stay linear, so a 30 KB line parses in well under HOSTILE_BOUND_S seconds (the old line regex
# took about 13 s on 3 KB and did not finish on 30 KB).
HOSTILE_BOUND_S = 0.5
HOSTILE_SIZE = 30 * 1024


def hostile_inputs():
    n = HOSTILE_SIZE
    return [
        ('BDF + 30 KB of blanks', '0000:00:00.0' + ' ' * n),
        ('blanks between every field', '0000:41:00.0' + ' ' * n + '3D controller:' + ' ' * n + 'x' + ' ' * n + 'y'),
        ('blanks before a bracket', '0000:41:00.0 VGA: x' + ' [' * (n // 2)),
        ('-vmm value with blanks', 'Slot:\t00:00.0\nVendor:\tx' + ' ' * n + 'y\nDevice:\t' + '\t' * n),
        ('vmm Slot key + tabs', 'Slot:' + '\t' * n + 'x'),
        ('company suffixes', '0000:00:00.0 VGA: ' + 'Ltd' * (n // 3)),
        ('SR-IOV capability lines', '0000:41:00.0 VGA: x\n' + '\tCapabilities: ' * (n // 15)),
    ]


def hostile():
    worst = 0.0
    for name, text in hostile_inputs():
        elapsed = min(timeit.repeat(lambda: lspci.parse(text), number=1, repeat=3))
        worst = max(worst, elapsed)
        print('hostile lspci input, %-28s %8.2f ms' % (name + ':', elapsed * 1000.0))
        assert elapsed < HOSTILE_BOUND_S, 'lspci.parse took %.2f s on %r (bound %.1f s): a regex backtracks' % (
            elapsed, name, HOSTILE_BOUND_S)
    return worst


def best(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1000.0


def main():
    hostile()
    tmp = tempfile.mkdtemp(prefix='gpuvirt-bench-')
    try:
        tree, text = build(os.path.join(tmp, 'sys'))
        devices = lspci.parse(text)
        result = sysfs_pci.discover(text, tree.root)
        vgpu = vgpu_types.discover(tree.root)
        print('synthetic host: %d PCI functions (%d GPUs incl. VFs, %d NVSwitches), %d vGPU parents, %d types each'
              % (len(devices), len(result['gpus']), len(result['nvswitches']), len(vgpu['parents']),
                 len(vgpu['parents'][0]['types'])))
        print('parse lspci text (%d KiB):          %8.2f ms' % (len(text) // 1024, best(lambda: lspci.parse(text), 5)))
        print('pci_devices discovery (lspci+sysfs): %8.2f ms' % best(lambda: sysfs_pci.discover(text, tree.root), 3))
        print('mdev_types discovery (sysfs):        %8.2f ms' % best(lambda: vgpu_types.discover(tree.root), 3))
        if shutil.which('lspci'):
            real = subprocess.run(['lspci', '-vmmnnkD'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  universal_newlines=True, check=True).stdout
            n = len(lspci.parse(real))
            ms = best(lambda: subprocess.run(['lspci', '-vmmnnkD'], stdout=subprocess.PIPE,
                                             stderr=subprocess.DEVNULL, check=True), 5)
            print('running lspci -vmmnnkD here (%d devices): %8.2f ms' % (n, ms))
        else:
            print('lspci not installed: install pciutils to compare')
    finally:
        shutil.rmtree(tmp)


if __name__ == '__main__':
    main()
