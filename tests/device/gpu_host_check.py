# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the collection's host readers on a real NVIDIA GPU machine and check them against the machine itself.

Not part of `make test` (CI has no GPU): run by hand on a GPU host, from the repository root, with any Python 3
(no Ansible needed: the readers in plugins/module_utils are plain Python):

    python3 tests/device/gpu_host_check.py OUTDIR

It writes OUTDIR/capture/ (raw lspci, sysfs and /proc text of every NVIDIA function, for fixtures) and
OUTDIR/result.json (what our readers returned), prints one line per check and exits 1 if any check fails:
- the devices `sysfs_pci.discover` finds from `lspci -vmmnnkD` are exactly the NVIDIA functions `lspci -Dn` lists;
- for each, vendor, device, class, driver, IOMMU group and NUMA node equal what /sys says, read directly here;
- `vgpu_types.discover` and `gpu_holders.scan` run on the live /sys and /proc without an error;
- a child process that holds /dev/nvidia<minor> and /dev/nvidiactl open is found by `gpu_holders.scan`, with
  its pid, its executable and the BDF the driver gives that minor (/proc/driver/nvidia/gpus/<bdf>/information);
- the ``host_interface`` facts (which vGPU interface the host offers: mdev, vendor-vfio or none) equal what the
  machine shows when looked at directly (/sys/class/mdev_bus, each device's nvidia/creatable_vgpu_types), with
  the kernel release of uname and the driver version of /sys/module/nvidia/version;
- where nvidia-smi runs, the MIG pool's preflight table (``mig.unsupported_gpus``, by PCI device id) agrees with
  the driver on every GPU: nvidia-smi reports a MIG mode (Enabled or Disabled) exactly for the GPUs the table
  says support MIG, and ``[N/A]`` for the others.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import platform
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SYS_PCI = '/sys/bus/pci/devices'
# another vendor id checks the readers on a machine without NVIDIA devices (a dry run of this script)
VENDOR = os.environ.get('GPUVIRT_CHECK_VENDOR', '10de')


def import_readers():
    """The readers import each other as ansible_collections.gpuvirt.provision...: point a temporary
    collection tree at this checkout."""
    base = tempfile.mkdtemp(prefix='gpuvirt-device-')
    os.makedirs(os.path.join(base, 'ansible_collections', 'gpuvirt'))
    os.symlink(ROOT, os.path.join(base, 'ansible_collections', 'gpuvirt', 'provision'))
    sys.path.insert(0, base)
    from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, sysfs_pci, vgpu_types
    return sysfs_pci, vgpu_types, gpu_holders


def run(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False).stdout


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError) as exc:
        return '<%s>' % exc.__class__.__name__


def link(path):
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def vendor_functions():
    rows = {}
    for line in run(['lspci', '-Dn']).splitlines():
        m = re.match(r'^(\S+) ([0-9a-f]{4}): (%s):([0-9a-f]{4})' % re.escape(VENDOR), line)
        if m:
            rows[m.group(1)] = {'class': m.group(2), 'vendor': m.group(3), 'device': m.group(4)}
    return rows


def capture(out, bdfs):
    cap = os.path.join(out, 'capture')
    os.makedirs(cap, exist_ok=True)
    texts = {
        'lspci-nnk-D.txt': run(['lspci', '-nnkD']),
        'lspci-vmmnnkD.txt': run(['lspci', '-vmmnnkD']),
        'lspci-Dn.txt': run(['lspci', '-Dn']),
        'proc-cmdline.txt': read('/proc/cmdline'),
        'uname-r.txt': platform.release(),
        'sys-module-nvidia-version.txt': read('/sys/module/nvidia/version'),
        'proc-driver-nvidia-gpus.txt': '\n'.join(
            '%s:\n%s' % (b, read(os.path.join('/proc/driver/nvidia/gpus', b, 'information')))
            for b in sorted(os.listdir('/proc/driver/nvidia/gpus'))) if os.path.isdir('/proc/driver/nvidia/gpus') else '',
        'os-release.txt': read('/etc/os-release'),
        'iommu-groups.txt': '\n'.join(sorted(os.listdir('/sys/kernel/iommu_groups')))
        if os.path.isdir('/sys/kernel/iommu_groups') else '<no /sys/kernel/iommu_groups>',
    }
    for bdf in bdfs:
        base = os.path.join(SYS_PCI, bdf)
        lines = []
        for name in sorted(os.listdir(base)):
            path = os.path.join(base, name)
            if os.path.islink(path):
                lines.append('%s -> %s' % (name, os.readlink(path)))
            elif os.path.isdir(path):
                lines.append('%s/ %s' % (name, ' '.join(sorted(os.listdir(path))[:40])))
            elif name in ('vendor', 'device', 'class', 'subsystem_vendor', 'subsystem_device', 'numa_node',
                          'sriov_totalvfs', 'sriov_numvfs', 'current_link_speed', 'current_link_width',
                          'reset_method', 'driver_override', 'irq', 'revision'):
                lines.append('%s = %s' % (name, read(path)))
            else:
                lines.append(name)
        for name in ('creatable_vgpu_types', 'current_vgpu_type'):
            path = os.path.join(base, 'nvidia', name)
            if os.path.exists(path):
                lines.append('nvidia/%s = %s' % (name, read(path)))
        texts['sysfs-%s.txt' % bdf.replace(':', '_')] = '\n'.join(lines)
    for name, text in texts.items():
        with open(os.path.join(cap, name), 'w') as handle:
            handle.write(text if text.endswith('\n') else text + '\n')


HOLD = 'import os, sys, time\nfds = [os.open(p, os.O_RDWR) for p in sys.argv[1:]]\nprint("held", flush=True)\ntime.sleep(60)\n'


def holder_check(gpu_holders, bdfs, check, result):
    """A process we start holds one GPU's device node: scan must name it and that GPU."""
    minors = gpu_holders.minor_bdfs('/proc')
    result['minor_bdfs'] = minors
    if not minors:
        check(not os.path.exists('/dev/nvidia0'), 'minor_bdfs read /proc/driver/nvidia/gpus (%r)' % minors)
        return
    minor, bdf = sorted(minors.items())[0]
    check(bdf in bdfs, 'the minor %d maps to %s, an NVIDIA function lspci lists' % (minor, bdf))
    child = subprocess.Popen([sys.executable, '-c', HOLD, '/dev/nvidia%d' % minor, '/dev/nvidiactl'],
                             stdout=subprocess.PIPE, universal_newlines=True)
    try:
        ready = child.stdout.readline().strip() == 'held'
        check(ready, 'a child process opened /dev/nvidia%d and /dev/nvidiactl' % minor)
        if not ready:
            return
        scanned = gpu_holders.scan(proc='/proc', gpus=[bdf])
        result['holders_with_child'] = scanned
        mine = [h for h in scanned['holders'] if str(h.get('pid')) == str(child.pid)]
        check(scanned['held'] and mine, 'scan found the child pid %d among %d holders' % (child.pid, len(scanned['holders'])))
        got = json.dumps(mine, sort_keys=True, default=str)
        check(('"%s"' % bdf) in got and 'nvidia%d' % minor in got,
              'the child holder names %s and nvidia%d: %s' % (bdf, minor, got[:400]))
    finally:
        child.kill()
        child.wait()


def interface_truth():
    """Which vGPU interface the machine offers, looked at directly: a vendor-VFIO VF has
    nvidia/creatable_vgpu_types; an mdev parent is listed under /sys/class/mdev_bus."""
    vendor = [b for b in sorted(os.listdir(SYS_PCI)) if os.path.exists(os.path.join(SYS_PCI, b, 'nvidia',
                                                                                    'creatable_vgpu_types'))]
    mdev_bus = '/sys/class/mdev_bus'
    mdev = sorted(os.listdir(mdev_bus)) if os.path.isdir(mdev_bus) else []
    return 'vendor-vfio' if vendor else 'mdev' if mdev else 'none'


def interface_check(vgpu_types, check, result):
    facts = vgpu_types.discover(root='/sys', proc_root='/proc')['host_interface']
    result['host_interface'] = facts
    want = interface_truth()
    check(facts['interface'] == want, 'host_interface %r, the machine shows %r: %s'
          % (facts['interface'], want, '; '.join(facts['evidence'])))
    check(facts['kernel_release'] == platform.release(),
          'host_interface kernel %r, uname -r %r' % (facts['kernel_release'], platform.release()))
    version = read('/sys/module/nvidia/version')
    loaded = not version.startswith('<')
    check(facts['driver_version'] == (version if loaded else None),
          'host_interface driver %r, /sys/module/nvidia/version %r' % (facts['driver_version'], version))


def mig_check(gpus, check, result):
    """The MIG table against the driver: nvidia-smi's mig.mode.current is Enabled or Disabled on a GPU that supports
    MIG and [N/A] on one that does not (NVIDIA's nvidia-smi documentation, "MIG Mode")."""
    try:
        text = run(['nvidia-smi', '--query-gpu=pci.bus_id,mig.mode.current', '--format=csv,noheader'])
    except (OSError, subprocess.CalledProcessError) as exc:
        result['mig'] = 'not checked: %r' % (exc,)
        return
    from ansible_collections.gpuvirt.provision.plugins.module_utils.model import mig
    unsupported = set(bdf for bdf, dummy, dummy2 in mig.unsupported_gpus(gpus))
    modes = {}
    for line in text.splitlines():
        if ',' in line:
            bus, mode = [part.strip() for part in line.split(',', 1)]
            # nvidia-smi prints an 8-digit domain (00000000:00:06.0); sysfs a 4-digit one
            modes[bus[-12:].lower()] = mode
    result['mig'] = {'modes': modes, 'unsupported_by_table': sorted(unsupported)}
    for gpu in gpus:
        mode = modes.get(gpu['bdf'].lower())
        check(mode is not None, '%s: nvidia-smi reports the GPU' % gpu['bdf'])
        if mode is not None:
            check((mode in ('Enabled', 'Disabled')) == (gpu['bdf'] not in unsupported),
                  '%s (device %s): MIG mode %r, the table says %s' % (
                      gpu['bdf'], gpu.get('device_id'), mode,
                      'no MIG' if gpu['bdf'] in unsupported else 'MIG capable'))


def main(out):
    os.makedirs(out, exist_ok=True)
    sysfs_pci, vgpu_types, gpu_holders = import_readers()
    truth = vendor_functions()
    capture(out, sorted(truth))
    failures = []

    def check(ok, what):
        print('%s %s' % ('ok  ' if ok else 'FAIL', what))
        if not ok:
            failures.append(what)

    found = sysfs_pci.discover(run(['lspci', '-vmmnnkD']), root='/sys', vendors=(VENDOR,))
    by_bdf = dict((d['bdf'], d) for d in found['devices'])
    check(sorted(by_bdf) == sorted(truth),
          'discover found the NVIDIA functions lspci -Dn lists: %s vs %s' % (sorted(by_bdf), sorted(truth)))
    for bdf, want in sorted(truth.items()):
        dev = by_bdf.get(bdf)
        if dev is None:
            continue
        base = os.path.join(SYS_PCI, bdf)
        numa = read(os.path.join(base, 'numa_node'))
        direct = {
            'vendor_id': want['vendor'],
            'device_id': want['device'],
            'class_id': want['class'],
            'driver': link(os.path.join(base, 'driver')),
            'iommu_group': link(os.path.join(base, 'iommu_group')),
            'numa_node': int(numa) if re.fullmatch(r'[0-9]+', numa) else None,  # -1 (no NUMA information): None
            'is_vf': os.path.islink(os.path.join(base, 'physfn')),
        }
        for key, value in sorted(direct.items()):
            check(dev.get(key) == value, '%s %s: ours %r, the machine %r' % (bdf, key, dev.get(key), value))
        check(dev.get('kind') in ('gpu', 'nvswitch', 'audio', 'usb', 'serial', 'other', 'bridge'),
              '%s kind %r' % (bdf, dev.get('kind')))

    result = {'discover': found}
    mig_check([d for d in found['gpus'] if not d.get('is_vf')], check, result)
    holder_check(gpu_holders, sorted(truth), check, result)
    try:
        interface_check(vgpu_types, check, result)
    except Exception as exc:  # report, do not hide
        check(False, 'host_interface read on the live host: %r' % (exc,))
    for name, call in (('vgpu_types', lambda: vgpu_types.discover(root='/sys')),
                       ('gpu_holders', lambda: gpu_holders.scan(proc='/proc'))):
        try:
            result[name] = call()
            check(True, '%s ran on the live host' % name)
        except Exception as exc:  # report, do not hide: a reader that fails on a real host is a finding
            result[name] = repr(exc)
            check(False, '%s ran on the live host: %r' % (name, exc))
    with open(os.path.join(out, 'result.json'), 'w') as handle:
        json.dump(result, handle, indent=2, sort_keys=True, default=str)
    print('%d checks failed' % len(failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else 'gpu-host-check'))
