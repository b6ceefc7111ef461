# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wanted_devices must run in time linear in a host's facts.

One vm-vgpu-vf host (function vf, advertised by KubeVirt's own plugin, the row whose profiles are checked per
selector) reports n NVIDIA GPUs with n distinct device ids, n = 256 and 1024 (1024 is the most a saved or live facts
list may hold, host/saved_facts.py MAX_ITEMS). Asserted: growth (time(1024) < GROWTH * time(256) + SLACK_S, where
linear is 4 and quadratic 16; the old code, which re-filtered all GPUs for each selector, took 1.97 s for 1000)
and an absolute bound. SYNTHETIC facts, for timing only."""
from __future__ import absolute_import, division, print_function

import os
import sys
import timeit

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import saved_facts  # noqa: E402
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import wanted_devices  # noqa: E402

GROWTH = 7.0    # linear is 4, quadratic 16
SLACK_S = 0.05  # timer noise on a shared machine
MAX_S = 1.0     # absolute bound for the largest host, generous for a loaded 2-core machine


def vf_host(n):
    gpus = [{'bdf': '0000:%02x:%02x.0' % (i >> 5 & 0xff, i & 0x1f), 'vendor_id': '10de', 'device_id': '%04x' % i,
             'class_id': '0302', 'device_name': 'AD102GL [L40S]', 'is_vf': False} for i in range(n)]
    return {'node': 'big', 'host': 'big', 'pool': 'vm-vgpu-vf', 'vgpu_types': ['L40S-4Q'],
            'facts': {'pci_devices': {'gpus': gpus, 'devices': gpus}, 'mdev_types': {}}}


def best(n):
    hosts = [vf_host(n)]
    got = wanted_devices.wanted_devices(hosts)
    assert len(got['pci_devices']) == n, len(got['pci_devices'])
    return min(timeit.repeat(lambda: wanted_devices.wanted_devices(hosts), number=1, repeat=3))


def main():
    small, large = 256, saved_facts.MAX_ITEMS
    t_small, t_large = best(small), best(large)
    print('wanted_devices: %d GPUs %.4f s, %d GPUs %.4f s (ratio %.1f)'
          % (small, t_small, large, t_large, t_large / max(t_small, 1e-9)))
    failed = []
    if t_large >= GROWTH * t_small + SLACK_S:
        failed.append('growth: %.4f s >= %.1f * %.4f s + %.2f s' % (t_large, GROWTH, t_small, SLACK_S))
    if t_large >= MAX_S:
        failed.append('absolute: %.4f s >= %.1f s for %d GPUs' % (t_large, MAX_S, large))
    if failed:
        print('FAILED: ' + '; '.join(failed))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
