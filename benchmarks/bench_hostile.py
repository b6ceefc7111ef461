# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile host output at MB scale: every parser of host output must run in time linear in its input.

Each case builds an adversarial input of about 1 MB and of about 4 MB (one huge line, or many lines: the shapes
that made a parser backtrack, slice a line once per suffix, or compare every token with every other) and times
the parser on both. Two bounds are asserted: growth (4 MB takes less than GROWTH times 1 MB plus SLACK_S, where
linear is 4 and quadratic 16) and an absolute one (PER_MB_S seconds per MB). A parser may also refuse the input
with its module's named error; any other exception fails the benchmark.

The many-lines cases repeat real captures from tests/unit/fixtures (see fixtures/SOURCES.md) and the pci.ids of
the reference data or of this host when there is one; the rest is SYNTHETIC, for timing only."""
from __future__ import absolute_import, division, print_function

import glob
import json
import os
import sys
import timeit

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, kernel_cmdline as kc, lspci, pciids, vgpu_types  # noqa: E402
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image  # noqa: E402

MB = 1024 * 1024
GROWTH = 7.0      # time(4 MB) < GROWTH * time(1 MB) + SLACK_S: linear is 4, quadratic 16 (the old lspci: 15 to 22)
SLACK_S = 0.25    # timer noise on a shared machine, where the 1 MB run takes a few milliseconds
PER_MB_S = 3.0    # absolute: seconds per MB of input, generous for a loaded 2-core machine
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as f:
        return f.read()


def times(unit, size):
    """``unit`` repeated to about ``size`` characters."""
    return unit * max(1, size // max(1, len(unit)))


def line(prefix, piece, size, suffix=''):
    return prefix + times(piece, size - len(prefix) - len(suffix)) + suffix


def host_pciids():
    found = sorted(glob.glob(os.path.join(os.environ.get('GPUVIRT_REFERENCE', ''), 'pciids', '*')))
    for path in found + list(pciids.DEFAULT_PATHS):
        if os.path.isfile(path):
            with open(path, encoding='utf-8', errors='replace') as f:
                return f.read()
    return '10de  NVIDIA Corporation\n\t2236  GA102GL [A10]\n\t\t10de 1482  A10\nC 03  Display controller\n'


def mdevctl_json(size):
    entry = {'nvidia-%d' % i: {'available_instances': i % 8, 'device_api': 'vfio-pci', 'name': 'GRID A10-%dQ' % i,
                               'description': 'num_heads=4, frl_config=60, framebuffer=%dM, max_instance=8' % i}
             for i in range(16)}
    unit = json.dumps({'0000:41:00.4': [entry]})
    return '[' + ','.join([unit] * max(1, size // len(unit))) + ']'


NNK = fixture('lspci', 'a10-nnk-d10de-vfio-pci_nvidia-cloud-native-docs.txt')
NNK_HEAD = NNK.splitlines()[0]
PLAIN_V = fixture('lspci', 'l40s-10de26b9-lspci-s-v-elided_cloud-hypervisor.txt')
MM = '41:00.0 "3D controller [0302]" "NVIDIA Corporation [10de]" "GA102GL [A10] [2236]" -ra1 -p00 ' \
     '"NVIDIA Corporation [10de]" "Device [1482]"\n'
CREATABLE = fixture('sysfs', 'l40s-vf-0000_26_00.4-nvidia', 'creatable_vgpu_types')
OS_RELEASE = 'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nVERSION_ID="4.18"\n# comment\n\n'
GRUB = 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="crashkernel=auto rhgb quiet"\n'
PCIIDS = host_pciids()


def grub_edit(text):
    return kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ['intel_iommu=on', 'iommu=pt'], ['rhgb'])


# (parser, case, its named error or None, builder of an input of about `size` characters, call)
CASES = [
    ('lspci -nnk', 'one line, trailing (prog-if 00)', lspci.LspciError,
     lambda n: line(NNK_HEAD, ' (prog-if 00)', n), lspci.parse),
    ('lspci -nnk', 'one line, (rev a1) (prog-if ..[VGA])', lspci.LspciError,
     lambda n: line(NNK_HEAD, ' (rev a1) (prog-if 00 [VGA controller])', n), lspci.parse),
    ('lspci -nnk', 'one line, blanks between fields', lspci.LspciError,
     lambda n: line('0000:41:00.0', ' ', n, '3D controller [0302]: NVIDIA Corporation x [10de:2236] (rev a1)'),
     lspci.parse),
    ('lspci -nnk', 'one line, open brackets', lspci.LspciError,
     lambda n: line('0000:41:00.0 VGA compatible controller: x', ' [', n, ']'), lspci.parse),
    ('lspci -nnk', 'one line, company suffixes', lspci.LspciError,
     lambda n: line('0000:00:00.0 VGA compatible controller: ', 'Ltd', n), lspci.parse),
    ('lspci -nnk', 'many lines, real capture', lspci.LspciError, lambda n: times(NNK, n), lspci.parse),
    ('lspci -nnk', 'many lines, continuations only', lspci.LspciError,
     lambda n: NNK_HEAD + '\n' + times('\tCapabilities: [bcc] Single Root I/O Virtualization (SR-IOV)\n'
                                       '\tFlags: bus master, NUMA node 1\n\tSubsystem: NVIDIA Corporation Device '
                                       '[10de:1482]\n', n), lspci.parse),
    ('lspci -v', 'many lines, real capture', lspci.LspciError, lambda n: times(PLAIN_V, n), lspci.parse),
    ('lspci -mm', 'one line, names and -r00', lspci.LspciError,
     lambda n: line('41:00.0 "3D controller" "NVIDIA Corporation" "GA102GL"', ' x -r00', n), lspci.parse),
    ('lspci -mm', 'one line, quoted names', lspci.LspciError,
     lambda n: line('41:00.0 "3D controller"', ' "NVIDIA [10de]"', n), lspci.parse),
    ('lspci -mm', 'many lines', lspci.LspciError, lambda n: times(MM, n), lspci.parse),
    ('lspci -vmm', 'one record, huge value', lspci.LspciError,
     lambda n: 'Slot:\t00:00.0\nVendor:\t' + times('x\t', n) + '\nDevice:\t' + times(' [', 64), lspci.parse),
    ('pci.ids', 'real file repeated', pciids.PciIdsError, lambda n: times(PCIIDS, n), pciids.parse),
    ('pci.ids', 'one line of blanks', pciids.PciIdsError, lambda n: line('10de', ' ', n, 'x'), pciids.parse),
    ('pci.ids', 'many class headers', pciids.PciIdsError, lambda n: times('C 0\n\t0  x\nC 03\n\t\t', n),
     pciids.parse),
    ('os-release', 'many lines', vgpu_image.VgpuImageError, lambda n: times(OS_RELEASE, n),
     vgpu_image.os_tag_from_os_release),
    ('os-release', 'one line of quotes', vgpu_image.VgpuImageError, lambda n: line('ID=', '"', n),
     vgpu_image.os_tag_from_os_release),
    ('os-release', 'one line of =', vgpu_image.VgpuImageError, lambda n: line('VERSION_ID', '=', n),
     vgpu_image.os_tag_from_os_release),
    ('creatable_vgpu_types', 'real file repeated', vgpu_types.VgpuError, lambda n: times(CREATABLE, n),
     vgpu_types.parse_creatable),
    ('creatable_vgpu_types', 'one line of colons', vgpu_types.VgpuError, lambda n: line('1', ' :', n),
     vgpu_types.parse_creatable),
    ('vGPU description', 'one line of commas', vgpu_types.VgpuError,
     lambda n: line('framebuffer=', ', =', n), vgpu_types.parse_description),
    ('mdevctl JSON', 'many parents and types', vgpu_types.VgpuError, mdevctl_json,
     lambda text: vgpu_types.summarise(vgpu_types.parse_mdevctl_json(text))),
    ('mdevctl JSON', 'deep nesting', vgpu_types.VgpuError, lambda n: '[' * (n // 2) + ']' * (n // 2),
     vgpu_types.parse_mdevctl_json),
    ('mdevctl JSON', 'one huge string', vgpu_types.VgpuError,
     lambda n: line('[{"p": [{"t": {"name": "', 'x', n, '"}}]}]'), vgpu_types.parse_mdevctl_json),
    ('/proc/cmdline', 'many args', kc.CmdlineError, lambda n: times('intel_iommu=on iommu=pt ', n),
     kc.split_cmdline),
    ('/proc/cmdline', 'quotes and blanks', kc.CmdlineError, lambda n: times('" a', n), kc.split_cmdline),
    ('/proc/<pid>/cgroup', 'one long line', None, lambda n: line('0::/system.slice/', 'a.service/', n),
     gpu_holders.unit_from_cgroup),
    ('grubby --info', 'many lines', kc.CmdlineError,
     lambda n: times('index=0\nkernel="/boot/vmlinuz"\nargs="ro quiet intel_iommu=on"\n', n), kc.parse_grubby_info),
    ('grub default', 'many lines, our variable last', kc.CmdlineError,
     lambda n: times('GRUB_TIMEOUT=5\n', n) + GRUB, grub_edit),
    ('grub default', 'one huge value', kc.CmdlineError,
     lambda n: line('GRUB_CMDLINE_LINUX="', 'quiet ', n, '"\n'), grub_edit),
    ('grub default', 'another value over many lines', kc.CmdlineError,
     lambda n: 'GRUB_CMDLINE_LINUX_DEFAULT="' + times('a GRUB_CMDLINE_LINUX=\n', n) + '"\n' + GRUB, grub_edit),
    ('grub default', 'quotes and backslashes', kc.CmdlineError,
     lambda n: times('X=\'"\\\n', n) + GRUB, grub_edit),
    ('grub default', 'our name on every line', kc.CmdlineError,
     lambda n: times('# GRUB_CMDLINE_LINUX="\n', n) + GRUB, grub_edit),
]


def distinct_args(size):
    """About ``size`` characters of kernel args, no two alike: the shape that made a list lookup per arg
    quadratic (a 1 MB GRUB value took 99.9 s, grubby output 10.5 s)."""
    out, total, i = [], 0, 0
    while total < size:
        arg = 'a%d=%d' % (i, i)
        out.append(arg)
        total += len(arg) + 1
        i += 1
    return ' '.join(out)


def grub_update(text):
    """The grub_default backend as the module runs it: the edit, then the /bin/sh reading of old and new."""
    return kc.grub_default_update(text.encode('utf-8'), 'GRUB_CMDLINE_LINUX', ['intel_iommu=on', 'iommu=pt'],
                                  ['a1*'])


def grubby_plan(text):
    return kc.grubby_changes(kc.parse_grubby_info(text), ['intel_iommu=on', 'iommu=pt'], ['a1*'])


def grub_cmdline_cases():
    """Cases for the GRUB value and grubby output made of distinct args, and the sh-cross-checked edit."""
    return [
        ('grub default', 'one value of distinct args', kc.CmdlineError,
         lambda n: 'GRUB_CMDLINE_LINUX="%s"\n' % distinct_args(n), grub_edit),
        ('grub default + /bin/sh', 'one value of distinct args', kc.CmdlineError,
         lambda n: 'GRUB_CMDLINE_LINUX="%s"\n' % distinct_args(n), grub_update),
        ('grub default + /bin/sh', 'many lines, our variable last', kc.CmdlineError,
         lambda n: times('GRUB_TIMEOUT=5\n', n) + GRUB, grub_update),
        ('grubby --info', 'one entry of distinct args', kc.CmdlineError,
         lambda n: 'index=0\nkernel="/boot/vmlinuz"\nargs="%s"\n' % distinct_args(n), grubby_plan),
        ('grubby --info', 'many entries, distinct args', kc.CmdlineError,
         lambda n: ''.join('index=%d\nkernel="/boot/vmlinuz-%d"\nargs="ro a%d"\n' % (i, i, i)
                           for i in range(max(1, n // 40))), grubby_plan),
    ]


CASES.extend(grub_cmdline_cases())


def timed(call, text, error):
    def run():
        try:
            call(text)
        except Exception as e:  # pylint: disable=broad-except
            if error is None or not isinstance(e, error):
                raise AssertionError('%s raised %s: %s, not its named error' % (call.__name__, type(e).__name__, e))
    return min(timeit.repeat(run, number=1, repeat=2))


def main(only=None):
    """Run every case, or those whose parser name contains ``only``."""
    failures = []
    print('hostile host output, 1 MB and 4 MB (bound: 4 MB < %.0f x 1 MB + %.2f s, and %.1f s per MB)'
          % (GROWTH, SLACK_S, PER_MB_S))
    for parser, case, error, build, call in CASES:
        if only and only not in parser:
            continue
        small, large = build(MB), build(4 * MB)
        t1, t4 = timed(call, small, error), timed(call, large, error)
        mb4 = len(large) / float(MB)
        ok = t4 < GROWTH * t1 + SLACK_S and t4 < PER_MB_S * mb4
        print('%-22s %-38s %7.3f s  %7.3f s  x%5.1f  %s'
              % (parser, case, t1, t4, t4 / max(t1, 1e-6), 'ok' if ok else 'TOO SLOW'))
        if not ok:
            failures.append('%s, %s: %.3f s on %.1f MB, %.3f s on %.1f MB' % (
                parser, case, t1, len(small) / float(MB), t4, mb4))
    assert not failures, 'parsers of host output are not linear: ' + '; '.join(failures)


def pciids_and_plain_lspci(size):
    """Half a pci.ids of many vendors (23,831 made the old parser walk every vendor name on every lspci line: 31.6
    s), half plain lspci lines whose vendor is none of them; a form feed between the two. SYNTHETIC."""
    vendors = ''.join('%04x  Vendor %d Inc.\n' % (i % 0x10000, i) for i in range(size // 2 // 24))  # all distinct
    lines = times('41:00.0 3D controller: Unknown Maker GA102GL [A10] (rev a1)\n', size // 2)
    return vendors + '\f' + lines


def lspci_with_pciids(text):
    ids, lines = text.split('\f', 1)
    return lspci.parse(lines, pciids.parse(ids).vendor_ids_by_name())


CASES.append(('lspci + pci.ids', 'many vendors, plain lines', (lspci.LspciError, pciids.PciIdsError),
              pciids_and_plain_lspci, lspci_with_pciids))


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else None)
