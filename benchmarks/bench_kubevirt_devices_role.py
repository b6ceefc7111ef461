# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubevirt_devices role's reads in one module call (kubevirt_devices_facts) against the three
kubernetes.core.k8s_info calls they replaced: an A/B on the kubevirt phase, as the cluster_kubevirt tests run it.

Runs playbooks/phase_kubevirt.yml (the phase's body, the tests' way: the inventory
tests/integration/cluster_kubevirt/inventories/passthrough-hco-new.yml, the extra variables of test_apply.py's
devices_apply) in apply mode against the real kube-apiserver (tools/kube/apiserver.py, OpenShift APIs and HCO's CRD
served, as the least-privilege automation identity), with gpuvirt_platform and gpuvirt_kubevirt_config auto. The
cluster holds a HyperConverged and two nodes that advertise the fleet's resources, as test_apply.py's first test
makes them; one untimed run of each version first writes the merged HyperConverged, so every timed run writes
nothing (the second run of that test). Both plays of the phase run the role: the check-mode preview and the real
play. "Before" is the collection with roles/kubevirt_devices as it was before the change (from git: the parent of
the commit that brought kubevirt_devices_facts into the role, or GPUVIRT_BENCH_BEFORE=<commit>), the rest of the
tree as it is here; "after" is the tree as it is. Before and after alternate (the order swapped every round), each
run with a fresh home and temporary directory, as each test's first run has.

Reported per run: seconds of the whole ansible-playbook run, seconds of the kubevirt_devices role's tasks and of its
read tasks (the profile_tasks callback), the automation's requests by verb from the audit log, and the load average
(1 min) before the run. Asserted: both versions send the same LIST requests and no write (the apply's dry runs
are counted apart); the "after" version sends no more GETs. ``GPUVIRT_BENCH_ROUNDS=4`` (the default) sets the rounds. Needs the API server built (make
kube-apiserver) and the reference set (make reference), as the cluster tests do."""
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

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402  pylint: disable=wrong-import-position

ROUNDS = int(os.environ.get('GPUVIRT_BENCH_ROUNDS', '4'))
INVENTORY = os.path.join(ROOT, 'tests', 'integration', 'cluster_kubevirt', 'inventories', 'passthrough-hco-new.yml')
ROLE = 'gpuvirt.provision.kubevirt_devices : '
# the read tasks, before (three k8s_info tasks) and after (one)
READS = ('Look for the HyperConverged CRD', 'Read the HyperConverged objects', 'Read the KubeVirt CRs',
         'Read the nodes')
# profile_tasks' summary line: "<role> : <task> ---- 1.23s"
TASK_LINE = re.compile(r'^(?P<task>.+?) -{3,} (?P<seconds>[0-9.]+)s$')
QAT = {'pciDeviceSelector': '8086:4940', 'resourceName': 'intel.com/QAT', 'externalResourceProvider': True}


def before_ref():
    ref = os.environ.get('GPUVIRT_BENCH_BEFORE')
    if ref:
        return ref
    out = subprocess.run(['git', 'log', '--format=%H', '-S', 'gpuvirt.provision.kubevirt_devices_facts', '--',
                          'roles/kubevirt_devices/tasks/read.yml'], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    commits = out.stdout.split()
    if not commits:
        sys.exit('no commit brought kubevirt_devices_facts into roles/kubevirt_devices: set GPUVIRT_BENCH_BEFORE')
    return commits[-1] + '^'


def before_collection(work, ref):
    """A collections directory whose gpuvirt.provision is this tree with roles/kubevirt_devices from ``ref``."""
    top = os.path.join(work, 'before', 'ansible_collections', 'gpuvirt', 'provision')
    os.makedirs(os.path.join(top, 'roles'))
    for name in os.listdir(ROOT):
        if name not in ('roles', '.git', '.build', '.venv'):
            os.symlink(os.path.join(ROOT, name), os.path.join(top, name))
    for name in os.listdir(os.path.join(ROOT, 'roles')):
        if name != 'kubevirt_devices':
            os.symlink(os.path.join(ROOT, 'roles', name), os.path.join(top, 'roles', name))
    archive = subprocess.run(['git', 'archive', ref, 'roles/kubevirt_devices'], cwd=ROOT, capture_output=True,
                             check=True)
    subprocess.run(['tar', '-x', '-C', top], input=archive.stdout, check=True)
    with open(os.path.join(top, 'roles', 'kubevirt_devices', 'tasks', 'read.yml'), encoding='utf-8') as handle:
        assert 'kubevirt_devices_facts' not in handle.read(), 'the "before" role already uses kubevirt_devices_facts'
    return os.path.join(work, 'before')


def run_phase(server, work, collections_path, label):
    home = tempfile.mkdtemp(prefix='home-%s-' % label, dir=work)
    # test_apply.py's devices_apply
    extra = {'kubevirt_machineconfig_enabled': False, 'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'auto',
             'gpuvirt_kubevirt_config': 'auto', 'gpuvirt_kubeconfig': server.kubeconfig_path('automation'),
             'kubevirt_devices_current': {}, 'render_root': os.path.join(home, 'unused'),
             'ansible_python_interpreter': sys.executable}
    env = dict(os.environ, HOME=home, TMPDIR=home, ANSIBLE_COLLECTIONS_PATH=collections_path,
               ANSIBLE_CALLBACKS_ENABLED='ansible.posix.profile_tasks', PROFILE_TASKS_TASK_OUTPUT_LIMIT='all',
               # the test harness's allowance (tests/integration/conftest.py): the interpreter as an extra variable
               GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS='ansible_python_interpreter')
    load = os.getloadavg()[0]
    mark = server.audit_mark()
    started = time.time()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', INVENTORY,
                           os.path.join(ROOT, 'playbooks', 'phase_kubevirt.yml'), '-e', json.dumps(extra)],
                          capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    seconds = time.time() - started
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    role = reads = 0.0
    for match in (TASK_LINE.match(line) for line in proc.stdout.splitlines()):
        if match and match.group('task').startswith(ROLE):
            role += float(match.group('seconds'))
            if match.group('task')[len(ROLE):].startswith(READS):
                reads += float(match.group('seconds'))
    verbs = collections.Counter()
    for event in server.audit(mark):
        if event['user']['username'] == apiserver.AUTOMATION_USER:
            verb = event['verb'].upper()
            if event['verb'] in apiserver.WRITE_VERBS:
                # the server-side apply's dry run (k8s_objects_apply sends one first, in both plays) writes nothing
                verb = 'dry run' if 'dryRun=All' in event.get('requestURI', '') else 'write'
            verbs[verb if verb in ('GET', 'LIST', 'dry run', 'write') else 'other'] += 1
    return {'seconds': seconds, 'role': role, 'reads': reads, 'verbs': verbs, 'load': load}


def main():
    work = tempfile.mkdtemp(prefix='bench-kubevirt-devices-')
    server = apiserver.KubeAPIServer(os.path.join(work, 'kube-apiserver'))
    ref = before_ref()
    variants = {'before': before_collection(work, ref),
                'after': os.environ.get('ANSIBLE_COLLECTIONS_PATH') or os.path.join(ROOT, '.build', 'collections')}
    runs = {'before': [], 'after': []}
    try:
        server.start()
        server.reset(openshift=True, hco=True)
        # SYNTHETIC: test_apply.py's HyperConverged (a foreign QAT entry) and nodes advertising the fleet's resources
        server.create({'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
                       'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'},
                       'spec': {'featureGates': {'disableMDevConfiguration': False},
                                'permittedHostDevices': {'pciHostDevices': [QAT]}}})
        for name, resource in (('gpu-1', 'nvidia.com/GA102GL_A10'), ('gpu-2', 'nvidia.com/AD102GL_L40S')):
            node = server.create({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name}})
            server.set_status(node, {'allocatable': {resource: '1'}})
        # one untimed run of each first: the first writes the merged HyperConverged, and the first ansible-playbook
        # of a machine pays cold file caches
        for label in ('before', 'after'):
            run_phase(server, work, variants[label], label)
        for index in range(ROUNDS):
            for label in (('before', 'after') if index % 2 == 0 else ('after', 'before')):
                result = run_phase(server, work, variants[label], label)
                runs[label].append(result)
                print('round %d %-6s %6.1f s (kubevirt_devices role %5.1f s, its reads %5.1f s)  load %5.2f  %s' % (
                    index + 1, label, result['seconds'], result['role'], result['reads'], result['load'],
                    dict(result['verbs'])), flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print('phase_kubevirt.yml, apply mode, real kube-apiserver, %d rounds (before: roles/kubevirt_devices at %s):'
          % (ROUNDS, ref))
    print('| version | run s (mean) | run s (each) | role s (mean) | its reads s (mean) | load average (1 min) '
          '| requests |')
    print('|---|---|---|---|---|---|---|')
    for label in ('before', 'after'):
        rows = runs[label]
        print('| %s | %.1f | %s | %.1f | %.1f | %.1f to %.1f | %s |' % (
            label, sum(r['seconds'] for r in rows) / len(rows), ', '.join('%.1f' % r['seconds'] for r in rows),
            sum(r['role'] for r in rows) / len(rows), sum(r['reads'] for r in rows) / len(rows),
            min(r['load'] for r in rows), max(r['load'] for r in rows),
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
