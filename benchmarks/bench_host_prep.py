#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_prep.yml over N Podman hosts: plan, then roll.

Each host is a container of the molecule default scenario's image (Debian 12; no boot loader, no kernel: the
boot loader update and the initramfs rebuild are off, as in molecule/default) in the vm-passthrough pool, with a
stand-in sysfs under /opt/sys (one GPU on vfio-pci in IOMMU group 7) and the kernel_args role given an argument the
shared running kernel already has (quiet, IOMMU off), so no host needs a reboot. Per size N:

  converge   host_prep with host_prep_serial=N (every host rolled at once): the files written
  no-op      host_prep again: every plan empty, the rolling play runs on no host
  10% work   the nouveau blacklist removed on ceil(N/10) hosts: those hosts, and only those, are rolled
  before     (N <= GPUVIRT_BENCH_BEFORE_MAX, default 10) the no-op run of the playbook before plan-then-roll (one
             play, serial 1: every host validated and checked one after the other), from git (GPUVIRT_BENCH_BEFORE,
             default 4093abb:playbooks/host_prep.yml, the last one before plan-then-roll)

Asserted: the no-op run's time grows with N / forks, not N: from the smallest to the largest size the no-op run
takes at most (largest / smallest) / forks * 3 + 1 times as long (generous: Ansible's fixed start dominates small
runs); the 10% run rolls exactly the hosts that were changed. GPUVIRT_BENCH_SIZES (default 1,10,50) and
GPUVIRT_BENCH_FORKS (default 10) change the sizes and forks. Needs podman and the image
localhost/gpuvirt-debian12-systemd (molecule/default builds it: tools/images/build-base-image.sh).
"""
from __future__ import absolute_import, division, print_function

import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
IMAGE = os.environ.get('GPUVIRT_BENCH_IMAGE', 'localhost/gpuvirt-debian12-systemd')
PREFIX = 'gpuvirt-bench-hp-'
GPU = '0000:41:00.0'
# the stand-in sysfs: a GPU on vfio-pci in IOMMU group 7, as tests/unit/sysfs_tree.py lays it out
SYSFS = r'''set -e
r=/opt/sys; d=$r/devices/pci0000:00/%(gpu)s
mkdir -p $d $r/bus/pci/devices $r/bus/pci/drivers/vfio-pci $r/kernel/iommu_groups/7/devices
printf '0x030200\n' > $d/class; printf '0x10de\n' > $d/vendor; printf '0x2236\n' > $d/device
printf '0xa1\n' > $d/revision; printf -- '-1\n' > $d/numa_node
ln -sfn ../../../devices/pci0000:00/%(gpu)s $r/bus/pci/devices/%(gpu)s
ln -sfn ../../../bus/pci/drivers/vfio-pci $d/driver
ln -sfn ../../../../devices/pci0000:00/%(gpu)s $r/kernel/iommu_groups/7/devices/%(gpu)s
ln -sfn ../../../kernel/iommu_groups/7 $d/iommu_group
''' % {'gpu': GPU}
HOST_VARS = {
    'ansible_connection': 'containers.podman.podman', 'ansible_python_interpreter': '/usr/bin/python3',
    # root in the container already (the image has no sudo)
    'ansible_become': False,
    'kernel_args_iommu': False, 'kernel_args_extra': ['quiet'], 'kernel_args_update_bootloader': False,
    'nouveau_initramfs_rebuild': False, 'vfio_gpus': False, 'vfio_bdfs': [GPU], 'vfio_sysfs_root': '/opt/sys',
    'vfio_runtime_bind': False, 'vfio_initramfs_rebuild': False, 'reboot_drain': False,
}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def start(n):
    names = ['%s%d' % (PREFIX, i) for i in range(n)]
    for name in names:
        sh(['podman', 'run', '-d', '--rm', '--name', name, IMAGE, 'sleep', 'infinity'])
        sh(['podman', 'exec', name, 'sh', '-c', SYSFS])
    return names


def stop(names):
    for name in names:
        subprocess.run(['podman', 'rm', '-f', '-t', '0', name], capture_output=True, check=False)


def inventory(tmp, names):
    inv = {'all': {'children': {'gpu_vm_passthrough': {'hosts': dict((n, HOST_VARS) for n in names)}}}}
    path = os.path.join(tmp, 'inventory.json')
    with open(path, 'w') as f:
        json.dump(inv, f)
    return path


def run(playbook, inv, forks, extra=()):
    env = dict(os.environ, ANSIBLE_FORKS=str(forks))
    t0 = time.monotonic()
    proc = subprocess.run(['ansible-playbook', '-i', inv, playbook, '-e', 'gpuvirt_platform=kubernetes'] + list(extra),
                          capture_output=True, text=True, env=env, check=False)
    took = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit('bench_host_prep: %s failed:\n%s' % (playbook, out[-4000:]))
    changed = dict((m.group(1), int(m.group(2))) for m in re.finditer(r'^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)', out, re.M))
    return took, changed


def before_playbook(tmp):
    """The playbook before plan-then-roll, beside the current playbooks (it imports them by relative path)."""
    spec = os.environ.get('GPUVIRT_BENCH_BEFORE', '4093abb:playbooks/host_prep.yml')
    text = sh(['git', '-C', ROOT, 'show', spec]).stdout
    pdir = os.path.join(tmp, 'playbooks')
    shutil.copytree(os.path.join(ROOT, 'playbooks'), pdir)
    path = os.path.join(pdir, 'host_prep_before.yml')
    with open(path, 'w') as f:
        f.write(text)
    return path


def main():
    sizes = [int(s) for s in os.environ.get('GPUVIRT_BENCH_SIZES', '1,10,50').split(',')]
    forks = int(os.environ.get('GPUVIRT_BENCH_FORKS', '10'))
    before_max = int(os.environ.get('GPUVIRT_BENCH_BEFORE_MAX', '10'))
    if not shutil.which('podman') or subprocess.run(['podman', 'image', 'exists', IMAGE], check=False).returncode != 0:
        sys.exit('bench_host_prep: needs podman and the image %s (tools/images/build-base-image.sh '
                 'gpuvirt-debian12-systemd --systemd)' % IMAGE)
    playbook = os.path.join(ROOT, 'playbooks', 'host_prep.yml')
    print('machine: %s, %d CPUs, load average %s; forks %d'
          % (platform.platform(), os.cpu_count(), ' '.join('%.1f' % x for x in os.getloadavg()), forks))
    print('| hosts | converge s | no-op s | 10% work s (hosts rolled) | before: no-op s |')
    print('|---|---|---|---|---|')
    noop = {}
    tmp = tempfile.mkdtemp(prefix='gpuvirt-bench-hp-')
    before = before_playbook(tmp) if before_max else None
    try:
        for n in sizes:
            names = start(n)
            try:
                inv = inventory(tmp, names)
                t_conv, dummy = run(playbook, inv, forks, ['-e', 'host_prep_serial=%d' % n])
                t_noop, changed = run(playbook, inv, forks)
                assert not any(changed.values()), changed
                work = names[::10][:int(math.ceil(n / 10.0))]
                for name in work:
                    sh(['podman', 'exec', name, 'rm', '-f', '/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'])
                t_work, changed = run(playbook, inv, forks)
                rolled = sorted(h for h, c in changed.items() if c)
                assert rolled == sorted(work), (rolled, work)
                t_before = run(before, inv, forks)[0] if before and n <= before_max else None
                noop[n] = t_noop
                shown = '%.1f' % t_before if t_before else '-'
                print('| %d | %.1f | %.1f | %.1f (%d) | %s |' % (n, t_conv, t_noop, t_work, len(rolled), shown))
                sys.stdout.flush()
            finally:
                stop(names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lo, hi = min(sizes), max(sizes)
    bound = (float(hi) / lo) / forks * 3 + 1
    print('no-op %d -> %d hosts: %.2f times as long (bound %.1f)' % (lo, hi, noop[hi] / noop[lo], bound))
    if noop[hi] / noop[lo] > bound:
        sys.exit('bench_host_prep: the no-op run grows faster than hosts / forks')


if __name__ == '__main__':
    main()
