# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_objects role in apply mode must cost one module execution per object list, whatever its length, and a run
with nothing to change must write nothing.

The role runs on localhost (module_defaults as every phase gives them) against the real kube-apiserver
(tools/kube/apiserver.py, as the admin: the list creates its Namespace) on a list of n objects, n = SIZES: a Namespace
and n-1 ConfigMaps in it. Four runs per size: the first creates every object, the second changes nothing, the third
previews a change of every ConfigMap (--check), the fourth applies it. SYNTHETIC objects, for timing and request
counts only.

Reported per size and run: seconds (the whole ansible-playbook run, Ansible's start included) and the admin's
requests from the API server's audit log: writes (PATCH for real), dry runs (PATCH with dryRun=All) and reads.
Asserted: the first run writes n objects, the second and third none, the fourth n-1; every run sends one dry run per
object; the time per added object (the slope from the smallest to the largest size) of the no-op run is at most
MAX_S_PER_OBJECT.

``GPUVIRT_BENCH_SIZES=5,40`` runs other sizes. Needs the API server built (make kube-apiserver) and the reference
set (make reference), as the cluster tests do."""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402  pylint: disable=wrong-import-position

SIZES = tuple(int(n) for n in os.environ.get('GPUVIRT_BENCH_SIZES', '5,40').split(','))
# one execution for the list: an object more is a GET and a dry-run PATCH, milliseconds each (the loop it replaced
# paid about a second and a half of module start per object and per step)
MAX_S_PER_OBJECT = 0.1
ADMIN = 'admin'


def objects(namespace, n, generation):
    return [{'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': namespace}}] + [
        {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cm-%03d' % i, 'namespace': namespace},
         'data': {'generation': str(generation)}} for i in range(n - 1)]


def play(kubeconfig):
    return [{'name': 'Apply', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
             'module_defaults': {'group/gpuvirt.provision.cluster': {'kubeconfig': kubeconfig}},
             'tasks': [{'name': 'Apply the objects',
                        'ansible.builtin.include_role': {'name': 'gpuvirt.provision.k8s_objects'},
                        'vars': {'k8s_objects_mode': 'apply', 'k8s_objects_list': '{{ bench_objects }}'}}]}]


def counts(events):
    out = {'write': 0, 'dry_run': 0, 'read': 0}
    for event in events:
        if event['user']['username'] != ADMIN:
            continue
        if event['verb'] in apiserver.WRITE_VERBS:
            out['dry_run' if 'dryRun=All' in event.get('requestURI', '') else 'write'] += 1
        else:
            out['read'] += 1
    return out


def main():
    work = tempfile.mkdtemp(prefix='bench-k8s-objects-')
    server = apiserver.KubeAPIServer(os.path.join(work, 'server')).start()
    failures, table = [], []
    try:
        server.reset(openshift=True)
        path = os.path.join(work, 'play.yml')
        with open(path, 'w') as handle:
            json.dump(play(server.kubeconfig_path(ADMIN)), handle)
        env = dict(os.environ, HOME=work, TMPDIR=work)
        for n in SIZES:
            namespace = 'bench-%d' % n
            for run, generation, args, writes in (('create', 1, [], n), ('no-op', 1, [], 0),
                                                  ('--check', 2, ['--check'], 0), ('change', 2, [], n - 1)):
                mark = server.audit_mark()
                start = time.time()
                proc = subprocess.run(['ansible-playbook', '-i', 'localhost,', path, '-e', json.dumps(
                    {'bench_objects': objects(namespace, n, generation),
                     'ansible_python_interpreter': sys.executable})] + args,
                    capture_output=True, text=True, check=False, cwd=ROOT, env=env)
                seconds = time.time() - start
                if proc.returncode:
                    sys.exit('%s run of %d objects failed:\n%s' % (run, n, (proc.stdout + proc.stderr)[-4000:]))
                got = counts(server.audit(mark))
                table.append((n, run, seconds, got))
                print('%4d objects  %-8s %6.1f s  %s' % (n, run, seconds, got), flush=True)
                if got['write'] != writes or got['dry_run'] != n:
                    failures.append('%s run of %d objects: %s, expected %d writes and %d dry runs'
                                    % (run, n, got, writes, n))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    noop = {n: s for n, run, s, _got in table if run == 'no-op'}
    if len(SIZES) > 1:
        slope = (noop[max(SIZES)] - noop[min(SIZES)]) / float(max(SIZES) - min(SIZES))
        print('no-op run: %.3f s per added object (%d -> %d objects)' % (slope, min(SIZES), max(SIZES)))
        if slope > MAX_S_PER_OBJECT:
            failures.append('no-op run: %.3f s per added object, more than %.3f' % (slope, MAX_S_PER_OBJECT))
    if failures:
        sys.exit('\n'.join(failures))


if __name__ == '__main__':
    main()
