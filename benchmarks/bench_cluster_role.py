# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster role's reads in one module call (cluster_facts) against the three kubernetes.core.k8s_info calls they
replaced: an A/B on one phase playbook, as the cluster tests run it.

Runs playbooks/phase_nodes.yml (the nodes phase's body, the tests' way: host facts in the inventory) in apply mode
against the real kube-apiserver (tools/kube/apiserver.py, OpenShift APIs and HCO's CRD served, as the
least-privilege automation identity) with gpuvirt_platform and gpuvirt_kubevirt_config auto, so the role asks all
three questions, on a SYNTHETIC fleet of three nodes whose labels are already right (a run writes nothing). "Before"
is the collection with roles/cluster as it was before the change (from git: the parent of the commit that brought
cluster_facts into the role, or GPUVIRT_BENCH_BEFORE=<commit>), the rest of the tree as it is here; "after" is the
tree as it is. Before and after alternate (the order swapped every round), each run with a fresh home and
temporary directory, as each test's first run has (kubernetes.core's discovery cache is empty).

Reported per run: seconds of the whole ansible-playbook run, seconds of the cluster role's tasks (the profile_tasks
callback), the automation's requests by verb from the audit log, and the load average (1 min) before the run.
Asserted: both versions send the same LIST requests and no write (the same questions, the same answers); the
"after" version sends no more GETs. ``GPUVIRT_BENCH_ROUNDS=4`` (the default) sets the rounds. Needs the API server
built (make kube-apiserver) and the reference set (make reference), as the cluster tests do."""
from __future__ import absolute_import, division, print_function

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402  pylint: disable=wrong-import-position

ROUNDS = int(os.environ.get('GPUVIRT_BENCH_ROUNDS', '4'))
W = 'nvidia.com/gpu.workload.config'
NODES = {'gpu_container': 'ctr-1', 'gpu_vm_passthrough': 'pt-1'}
# profile_tasks' summary line: "<role> : <task> ---- 1.23s"
TASK_LINE = re.compile(r'^(?P<task>.+?) -{3,} (?P<seconds>[0-9.]+)s$')


def before_ref():
    ref = os.environ.get('GPUVIRT_BENCH_BEFORE')
    if ref:
        return ref
    out = subprocess.run(['git', 'log', '--format=%H', '-S', 'gpuvirt.provision.cluster_facts', '--',
                          'roles/cluster/tasks/main.yml'], cwd=ROOT, capture_output=True, text=True, check=True)
    commits = out.stdout.split()
    if not commits:
        sys.exit('no commit brought cluster_facts into roles/cluster: set GPUVIRT_BENCH_BEFORE')
    return commits[-1] + '^'


def before_collection(work, ref):
    """A collections directory whose gpuvirt.provision is this tree with roles/cluster from ``ref``."""
    top = os.path.join(work, 'before', 'ansible_collections', 'gpuvirt', 'provision')
    os.makedirs(os.path.join(top, 'roles'))
    for name in os.listdir(ROOT):
        if name not in ('roles', '.git', '.build', '.venv'):
            os.symlink(os.path.join(ROOT, name), os.path.join(top, name))
    for name in os.listdir(os.path.join(ROOT, 'roles')):
        if name != 'cluster':
            os.symlink(os.path.join(ROOT, 'roles', name), os.path.join(top, 'roles', name))
    archive = subprocess.run(['git', 'archive', ref, 'roles/cluster'], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(['tar', '-x', '-C', top], input=archive.stdout, check=True)
    with open(os.path.join(top, 'roles', 'cluster', 'tasks', 'main.yml'), encoding='utf-8') as handle:
        assert 'cluster_facts' not in handle.read(), 'the "before" role already uses cluster_facts'
    return os.path.join(work, 'before')


def inventory(path):
    doc = {'all': {
        'vars': {'gpuvirt_platform': 'auto', 'gpuvirt_kubevirt_config': 'auto',
                 # no render session: these plays run outside a render run
                 'gpuvirt_render_dir': '',
                 # here, not as an extra variable (the launch check refuses Ansible's own variables there)
                 'ansible_python_interpreter': sys.executable},
        'children': {group: {'hosts': {name: {}}} for group, name in NODES.items()}}}
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(doc, handle)


def run_phase(server, inv, work, collections_path, label):
    home = tempfile.mkdtemp(prefix='home-%s-' % label, dir=work)
    extra = {'gpuvirt_cluster_mode': 'apply', 'gpuvirt_kubeconfig': server.kubeconfig_path('automation')}
    env = dict(os.environ, HOME=home, TMPDIR=home, ANSIBLE_COLLECTIONS_PATH=collections_path,
               ANSIBLE_CALLBACKS_ENABLED='ansible.posix.profile_tasks', PROFILE_TASKS_TASK_OUTPUT_LIMIT='all')
    load = os.getloadavg()[0]
    mark = server.audit_mark()
    started = time.time()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inv,
                           os.path.join(ROOT, 'playbooks', 'phase_nodes.yml'), '-e', json.dumps(extra)],
                          capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    seconds = time.time() - started
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    role = sum(float(m.group('seconds')) for m in (TASK_LINE.match(line) for line in proc.stdout.splitlines())
               if m and m.group('task').startswith('gpuvirt.provision.cluster : '))
    verbs = collections.Counter()
    for event in server.audit(mark):
        if event['user']['username'] == apiserver.AUTOMATION_USER:
            verb = event['verb'].upper()
            verbs[verb if verb in ('GET', 'LIST') else 'write' if event['verb'] in apiserver.WRITE_VERBS
                  else 'other'] += 1
    return {'seconds': seconds, 'role': role, 'verbs': verbs, 'load': load}


def main():
    work = tempfile.mkdtemp(prefix='bench-cluster-role-')
    server = apiserver.KubeAPIServer(os.path.join(work, 'kube-apiserver'))
    ref = before_ref()
    variants = {'before': before_collection(work, ref),
                'after': os.environ.get('ANSIBLE_COLLECTIONS_PATH') or os.path.join(ROOT, '.build', 'collections')}
    runs = {'before': [], 'after': []}
    try:
        server.start()
        server.reset(openshift=True, hco=True)
        for group, name in NODES.items():
            workload = 'container' if group == 'gpu_container' else 'vm-passthrough'
            server.create({'apiVersion': 'v1', 'kind': 'Node',
                           'metadata': {'name': name, 'labels': {'kubernetes.io/hostname': name, W: workload}}})
        inv = os.path.join(work, 'inventory.yml')
        inventory(inv)
        # one untimed run of each first: the first ansible-playbook of a machine pays cold file caches
        for label in ('before', 'after'):
            run_phase(server, inv, work, variants[label], label)
        for index in range(ROUNDS):
            for label in (('before', 'after') if index % 2 == 0 else ('after', 'before')):
                result = run_phase(server, inv, work, variants[label], label)
                runs[label].append(result)
                print('round %d %-6s %6.1f s (cluster role %5.1f s)  load %5.2f  %s' % (
                    index + 1, label, result['seconds'], result['role'], result['load'], dict(result['verbs'])),
                    flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print('phase_nodes.yml, apply mode, real kube-apiserver, %d rounds (before: roles/cluster at %s):' % (ROUNDS, ref))
    print('| version | run s (mean) | run s (each) | cluster role s (mean) | load average (1 min) | requests |')
    print('|---|---|---|---|---|---|')
    for label in ('before', 'after'):
        rows = runs[label]
        print('| %s | %.1f | %s | %.1f | %.1f to %.1f | %s |' % (
            label, sum(r['seconds'] for r in rows) / len(rows), ', '.join('%.1f' % r['seconds'] for r in rows),
            sum(r['role'] for r in rows) / len(rows), min(r['load'] for r in rows), max(r['load'] for r in rows),
            ', '.join('%d %s' % (n, verb) for verb, n in sorted(rows[-1]['verbs'].items()))))
    failed = []
    lists = {label: {r['verbs']['LIST'] for r in rows} for label, rows in runs.items()}
    if len(lists['before'] | lists['after']) != 1:
        failed.append('the LIST requests differ: %s' % lists)
    if any(r['verbs']['write'] for rows in runs.values() for r in rows):
        failed.append('a run wrote')
    if max(r['verbs']['GET'] for r in runs['after']) > max(r['verbs']['GET'] for r in runs['before']):
        failed.append('the "after" version sends more GETs')
    if failed:
        print('FAILED: ' + '; '.join(failed))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
