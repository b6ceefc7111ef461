# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster the apply tests talk to: a real kube-apiserver 1.20 + etcd (tools/kube/apiserver.py).

One server per pytest session (~10 s to start with the CRDs); every test gets it reset (objects it made
deleted, the platform's APIs served) and its own TMPDIR/HOME, because kubernetes.core caches API discovery there
per server and user, and a cache from a test that served other APIs would outlive the reset.

The playbooks run as the least-privilege automation identity, never as an admin: every reset grants it the
shipped RBAC file of the platform the test serves (docs/rbac/gpuvirt-automation.yml on OpenShift,
gpuvirt-automation-kubernetes.yml on Kubernetes), parsed from the file as is, and nothing else. What no server runs here (OLM, the
Machine Config Operator, kubelets, the GPU Operator) a test stands in for by writing, through this API and as the
admin, what that controller would write; each such place names the controller it stands in for.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402  pylint: disable=wrong-import-position
# tests/unit, on the path through conftest.py
from example_render import phase_body  # noqa: E402  pylint: disable=wrong-import-position


class Cluster(object):
    """One test's view of the shared server: its objects, its kubeconfig, and the writes since the test began."""

    def __init__(self, server, tmp_path):
        self.server = server
        self.tmp_path = tmp_path
        self.kubeconfig = server.kubeconfig_path('automation')
        self.admin_kubeconfig = server.kubeconfig_path('admin')
        self.mark = server.audit_mark()
        self._controllers = []

    # objects ---------------------------------------------------------------------------------------------------
    def create(self, obj):
        return self.server.create(obj)

    def get(self, api_version, kind, name, namespace=None):
        return self.server.get(api_version, kind, name, namespace)

    def set_status(self, obj, status):
        return self.server.set_status(obj, status)

    def patch(self, obj, patch):
        meta = obj['metadata']
        plural = self.server.plural(obj['apiVersion'], obj['kind'])
        return self.server.request('PATCH', self.server.path(obj['apiVersion'], plural, meta.get('namespace'),
                                                             meta['name']), patch,
                                   content_type='application/merge-patch+json')

    # audit -----------------------------------------------------------------------------------------------------
    def writes(self, since=None, user=apiserver.AUTOMATION_USER):
        """``user``'s (the automation identity's) successful writes since the test began (or since ``since``): what
        changed. A "nothing was written" assertion uses ``attempts`` instead, which also counts the refused ones."""
        return self.server.writes(self.mark if since is None else since, user=user)

    def attempts(self, since=None, user=apiserver.AUTOMATION_USER):
        """Every write (create/update/patch/delete, not a dry run) ``user`` sent since the test began (or since
        ``since``), whatever the server answered: one refused by RBAC (403), a conflict (409), a rejected object
        (422) or a PodDisruptionBudget (429) was still attempted. "No write" assertions count these."""
        return [e for e in self.server.audit(self.mark if since is None else since)
                if e['verb'] in apiserver.WRITE_VERBS and e['user']['username'] == user
                and 'dryRun=All' not in e.get('requestURI', '')]

    def requests(self, since=None, user=apiserver.AUTOMATION_USER):
        """Every request ``user`` made (reads too) since the test began (or since ``since``)."""
        return [e for e in self.server.audit(self.mark if since is None else since)
                if e['user']['username'] == user]

    def dry_runs(self, since=None):
        return self.server.dry_runs(self.mark if since is None else since)

    def now(self):
        return self.server.audit_mark()

    def sent(self, kind_plural):
        """The request bodies of the writes to one resource (e.g. ``clusterpolicies``)."""
        return [e.get('requestObject') for e in self.writes() if e['objectRef']['resource'] == kind_plural
                and not e['objectRef'].get('subresource')]

    # controllers -----------------------------------------------------------------------------------------------
    def controller(self, name, step, interval=0.3):
        """Run ``step(cluster)`` every ``interval`` seconds in the background until the test ends: the stand-in for
        the named controller. ``step`` returns True once it has nothing left to do."""
        stop = threading.Event()
        errors = []

        def loop():
            while not stop.is_set():
                try:
                    if step(self):
                        return
                except Exception as exc:  # pylint: disable=broad-except  # reported by the test at teardown
                    errors.append('%s: %r' % (name, exc))
                    return
                stop.wait(interval)
        thread = threading.Thread(target=loop, name=name, daemon=True)
        thread.start()
        self._controllers.append((name, stop, thread, errors))

    def stop_controllers(self):
        errors = []
        for _name, stop, thread, errs in self._controllers:
            stop.set()
            thread.join(timeout=120)  # a step in flight finishes before the next test resets the server
            errors += errs
        self._controllers = []
        return errors


def run_playbook(tmp_path, playbook, inventory, *args, **extra):
    """ansible-playbook ``playbook`` with ``inventory`` and ``extra`` as extra vars; returns (rc, output)."""
    extra_vars = dict(extra, ansible_python_interpreter=sys.executable)
    extra_vars.setdefault('render_root', str(tmp_path / 'unused'))
    # the phase's body (phase_<name>.yml, what site.yml imports): these inventories give the host facts as gather.yml
    # leaves them, or hosts with none beside explicit inputs, names nothing answers; playbooks/<name>.yml runs
    # gather.yml first (tests/integration/playbooks/test_phase_alone.py)
    cmd = ['ansible-playbook', '-i', inventory, phase_body(playbook),
           '-e', json.dumps(extra_vars)] + list(args)
    cache = tmp_path / 'tmp'
    cache.mkdir(exist_ok=True)
    # kubernetes.core caches discovery under TMPDIR (k8srcp-*.json) and the client may use HOME
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(cache))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def recap(output):
    line = [ln for ln in output.splitlines() if ln.startswith('localhost')][-1]
    return dict(field.split('=') for field in line.split(':', 1)[1].split())


def write_summary(events):
    """``verb resource namespace/name`` per audit event (``-`` for cluster-scoped; the audit log files a Namespace
    under its own name as namespace)."""
    return ['%s %s %s/%s' % (e['verb'], e['objectRef'].get('resource'),
                             '-' if e['objectRef'].get('resource') == 'namespaces' else
                             e['objectRef'].get('namespace') or '-', e['objectRef'].get('name')) for e in events]


@pytest.fixture(scope='session')
def kube_server(tmp_path_factory):
    server = apiserver.KubeAPIServer(str(tmp_path_factory.mktemp('kube-apiserver')))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kube(kube_server, tmp_path):
    """``kube(objects, openshift=True, hco=None, dra=False, platform=None)``: reset the server (serving OpenShift's and
    HCO's APIs or not; HCO follows OpenShift unless given; resource.k8s.io/v1 when ``dra``; ``platform``, a row of the
    platform table, instead of ``openshift``: its detection API served, its RBAC file granted), create ``objects``
    (statuses through the status subresource), and return the test's Cluster."""
    made = []

    def start(objects=(), openshift=True, hco=None, dra=False, platform=None):
        kube_server.reset(openshift=openshift, hco=hco, dra=dra, platform=platform)
        cluster = Cluster(kube_server, tmp_path)
        for obj in objects:
            cluster.create(obj)
        # what the fixture created is not the automation's doing
        time.sleep(0.3)
        cluster.mark = kube_server.audit_mark()
        made.append(cluster)
        return cluster
    yield start
    errors = []
    for cluster in made:
        errors += cluster.stop_controllers()
    assert not errors, errors
