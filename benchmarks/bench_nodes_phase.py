# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nodes phase must label a fleet in time that grows by at most MAX_S_PER_NODE per node, and a second run must
send the same number of requests whatever the fleet's size.

The phase's body (playbooks/phase_nodes.yml, as the tests run it: host facts given in the inventory, what saved facts
leave after gather.yml) runs in apply mode against the real kube-apiserver (tools/kube/apiserver.py, as the
least-privilege automation identity of docs/rbac/gpuvirt-automation.yml) on n nodes, n = SIZES: a third container
nodes, a third passthrough, a third vGPU (one A10 each), every node carrying only its hostname label, so the first run
patches every node and the second none. SYNTHETIC fleet, for timing and request counts only.

Reported per size and run: seconds, the automation's requests by verb from the API server's audit log (GET, LIST,
PATCH, other), and per node. Asserted: the first run PATCHes each node once and the second run writes nothing; the
second run's requests are the same at every size; the first run's time per added node (the slope between the
smallest and the largest size, which leaves out Ansible's fixed start) is at most MAX_S_PER_NODE.

``GPUVIRT_BENCH_SIZES=24,96`` runs other sizes. Needs the API server built (make kube-apiserver) and the reference
set (make reference), as the cluster tests do."""
from __future__ import absolute_import, division, print_function

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402  pylint: disable=wrong-import-position

SIZES = tuple(int(n) for n in os.environ.get('GPUVIRT_BENCH_SIZES', '24,96,384').split(','))
MAX_S_PER_NODE = 0.1
A10 = {'gpus': [{'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
                 'kind': 'gpu', 'is_vf': False}]}
GROUPS = ('gpu_container', 'gpu_vm_passthrough', 'gpu_vm_vgpu')


def fleet(n):
    """{group: {host: host vars}}: n hosts, the groups in turn; the vGPU hosts carry their GPU facts."""
    out = {group: {} for group in GROUPS}
    for i in range(n):
        group = GROUPS[i % len(GROUPS)]
        out[group]['gpu-%04d' % i] = ({'gpuvirt_pci_devices': A10, 'gpuvirt_mdev_types': {'parents': []}}
                                      if group == 'gpu_vm_vgpu' else {})
    return out


def inventory(path, hosts):
    doc = {'all': {
        'vars': {'gpuvirt_platform': 'openshift', 'node_labels_vgpu_config_default': 'A10-24Q',
                 # no render session: these plays run outside a render run
                 'gpuvirt_render_dir': '',
                 # in the inventory: the launch check refuses Ansible's own names as extra variables
                 'ansible_python_interpreter': sys.executable},
        'children': {group: {'hosts': members} for group, members in hosts.items()}}}
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(doc, handle)


def run_phase(server, inv, work):
    """One run of the phase's body; returns (seconds, {verb: count} of the automation's requests, output)."""
    mark = server.audit_mark()
    extra = {'gpuvirt_cluster_mode': 'apply', 'gpuvirt_kubeconfig': server.kubeconfig_path('automation')}
    env = dict(os.environ, HOME=work, TMPDIR=work)
    started = time.time()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inv,
                           os.path.join(ROOT, 'playbooks', 'phase_nodes.yml'), '-e', json.dumps(extra)],
                          capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    seconds = time.time() - started
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    verbs = collections.Counter()
    for event in server.audit(mark):
        if event['user']['username'] == apiserver.AUTOMATION_USER:
            verb = event['verb'].upper()
            verbs[verb if verb in ('GET', 'LIST', 'PATCH') else 'other'] += 1
    return seconds, verbs, proc.stdout


def measure(server, n, work):
    server.reset(openshift=True)
    hosts = fleet(n)
    for members in hosts.values():
        for name in members:
            server.create({'apiVersion': 'v1', 'kind': 'Node',
                           'metadata': {'name': name, 'labels': {'kubernetes.io/hostname': name}}})
    inv = os.path.join(work, 'inventory-%d.yml' % n)
    inventory(inv, hosts)
    home = os.path.join(work, 'home-%d' % n)
    os.makedirs(home)
    return [run_phase(server, inv, home)[:2] for _run in ('first', 'second')]


def requests_text(verbs):
    return '%d GET, %d LIST, %d PATCH%s' % (verbs['GET'], verbs['LIST'], verbs['PATCH'],
                                            ', %d other' % verbs['other'] if verbs['other'] else '')


def main():
    work = tempfile.mkdtemp(prefix='bench-nodes-phase-')
    server = apiserver.KubeAPIServer(os.path.join(work, 'kube-apiserver'))
    results = {}
    try:
        server.start()
        for n in SIZES:
            results[n] = measure(server, n, work)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print('nodes phase body, apply mode, real kube-apiserver (%d CPUs):' % os.cpu_count())
    print('| nodes | run | seconds | s/node | requests |')
    print('|---|---|---|---|---|')
    for n, runs in results.items():
        for name, (seconds, verbs) in zip(('first', 'second'), runs):
            print('| %d | %s | %.1f | %.3f | %s |' % (n, name, seconds, seconds / n, requests_text(verbs)))
    failed = []
    for n, ((_t1, first), (_t2, second)) in results.items():
        if first['PATCH'] != n:
            failed.append('%d nodes: the first run sent %d PATCH, not one per node' % (n, first['PATCH']))
        if second['PATCH'] or second['other']:
            failed.append('%d nodes: the second run wrote (%s)' % (n, requests_text(second)))
    seconds = {n: runs[0][0] for n, runs in results.items()}
    small, large = min(SIZES), max(SIZES)
    if large > small:
        slope = (seconds[large] - seconds[small]) / (large - small)
        print('first run: %.3f s per added node (%d -> %d nodes)' % (slope, small, large))
        if slope > MAX_S_PER_NODE:
            failed.append('first run: %.3f s per added node > %.2f s' % (slope, MAX_S_PER_NODE))
    second_counts = {n: dict(runs[1][1]) for n, runs in results.items()}
    if len({json.dumps(c, sort_keys=True) for c in second_counts.values()}) > 1:
        failed.append('the second run\'s requests grow with the fleet: %s' % second_counts)
    if failed:
        print('FAILED: ' + '; '.join(failed))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
