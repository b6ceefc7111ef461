#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The no-op host_prep.yml on the lab VM against the same checks done raw over SSH.

Needs the lab VM up and prepared (`make demo`, or `make lab-up` on a disk `make demo` prepared): the playbook then
has nothing to do. Runs host_prep.yml (inventories/lab/hosts.yml) GPUVIRT_BENCH_RUNS times (default 3) and, as
many times, one SSH command that reads what the plan reads (the boot loader drop-in, /proc/cmdline, the modprobe.d,
modules-load.d and initramfs-tools files, the initramfs images' times, the stand-in device's driver, nouveau
loaded, os-release and the ACPI tables). Prints the best of each and their ratio; asserts the ratio is at most
GPUVIRT_BENCH_LAB_RATIO (default 10) and that the playbook changed nothing. LAB_DIR (default .lab) as in tools/lab/*.sh.
"""
from __future__ import absolute_import, division, print_function

import os
import re
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
LAB_DIR = os.environ.get('LAB_DIR', os.path.join(ROOT, '.lab'))
# what host_plan reads on the lab host (in the plan play's one call), in one shell
CHECKS = ('cat /etc/default/grub.d/90-gpuvirt-kernel-args.cfg /proc/cmdline /etc/modprobe.d/gpuvirt-vfio.conf '
          '/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf /etc/modules-load.d/gpuvirt-vfio.conf '
          '/etc/initramfs-tools/modules; stat -c "%n %Y %a %u %g" /boot/initrd.img-* /etc/modprobe.d/gpuvirt-*.conf; '
          'readlink /sys/bus/pci/devices/0000:00:10.0/driver /sys/bus/pci/devices/0000:00:10.0/iommu_group; '
          'test -d /sys/module/nouveau; cat /etc/os-release; ls /sys/firmware/acpi/tables; true')


def timed(cmd, env=None):
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit('bench_host_prep_lab: %s failed:\n%s' % (' '.join(cmd[:3]), (proc.stdout + proc.stderr)[-3000:]))
    return took, proc.stdout + proc.stderr


def main():
    ssh_config = os.path.join(LAB_DIR, 'run', 'ssh_config')
    if not os.path.exists(ssh_config):
        sys.exit('bench_host_prep_lab: no %s: start the lab VM (make demo, or make lab-up on a prepared disk)'
                 % ssh_config)
    runs = int(os.environ.get('GPUVIRT_BENCH_RUNS', '3'))
    bound = float(os.environ.get('GPUVIRT_BENCH_LAB_RATIO', '10'))
    env = dict(os.environ, LAB_DIR=LAB_DIR)
    play, raw, tasks = [], [], None
    for dummy in range(runs):
        took, out = timed(['ansible-playbook', '-i', os.path.join(ROOT, 'inventories', 'lab', 'hosts.yml'),
                           os.path.join(ROOT, 'playbooks', 'host_prep.yml')], env)
        recap = re.search(r'^lab-gpu-0\s+:\s+ok=(\d+)\s+changed=(\d+)', out, re.M)
        if not recap or int(recap.group(2)) != 0:
            sys.exit('bench_host_prep_lab: the lab VM is not converged (run make demo first):\n%s' % out[-3000:])
        tasks = int(recap.group(1))
        play.append(took)
        raw.append(timed(['ssh', '-F', ssh_config, 'lab-gpu-0', CHECKS])[0])
    ratio = min(play) / min(raw)
    print('lab VM, no-op host_prep.yml: %.1f s (%d tasks ok on the host); the same checks over raw SSH: %.2f s; '
          'ratio %.1f (bound %.0f)' % (min(play), tasks, min(raw), ratio, bound))
    if ratio > bound:
        sys.exit('bench_host_prep_lab: the no-op run takes more than %.0f times the raw checks' % bound)


if __name__ == '__main__':
    main()
