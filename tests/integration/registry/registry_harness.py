# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real registry (docker-registry, htpasswd, TLS from a throw-away CA) and a runner for the role's playbook.

Imported by conftest.py (the registry fixture) and the tests (play, image_exists).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.vgpu_image import context_digest

try:
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen
except ImportError:  # pragma: no cover
    pytest.skip('Python 3 only', allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'vgpu_image.yml')
BASE_IMAGE = 'gpuvirt-debian12-systemd'
DOCKER_CERTS_D = '/etc/docker/certs.d'
ACCEPT = ', '.join(['application/vnd.oci.image.manifest.v1+json',
                    'application/vnd.docker.distribution.manifest.v2+json'])


class Registry(object):
    def __init__(self, directory):
        env = {}
        with open(os.path.join(directory, 'env')) as f:
            for line in f:
                key, sep, value = line.strip().partition('=')
                if sep:
                    env[key] = value
        self.dir = directory
        self.host = env['REGISTRY']
        self.user = env['REGISTRY_USER']
        with open(env['REGISTRY_PASSWORD_FILE']) as f:
            self.password = f.read().strip()
        self.ca = env['REGISTRY_CA']
        self.tls = ssl.create_default_context(cafile=self.ca)  # verification on

    def get(self, path, auth=True, accept=None):
        """(status, headers, body) of GET https://<registry><path>, with basic auth unless auth=False."""
        req = Request('https://%s%s' % (self.host, path))
        if auth:
            token = base64.b64encode(('%s:%s' % (self.user, self.password)).encode()).decode()
            req.add_header('Authorization', 'Basic ' + token)
        if accept:
            req.add_header('Accept', accept)
        try:
            resp = urlopen(req, context=self.tls, timeout=30)
            return resp.status, resp.headers, resp.read()
        except HTTPError as e:
            return e.code, e.headers, e.read()

    def catalog(self):
        status, headers, body = self.get('/v2/_catalog')
        assert status == 200, body
        return json.loads(body)['repositories']

    def tags(self, repo):
        status, headers, body = self.get('/v2/%s/tags/list' % repo)
        return (json.loads(body).get('tags') or []) if status == 200 else []

    def manifest_digest(self, repo, tag):
        status, headers, body = self.get('/v2/%s/manifests/%s' % (repo, tag), accept=ACCEPT)
        assert status == 200, body
        return headers['Docker-Content-Digest']

    def labels(self, repo, tag):
        """Labels of the image config, read through the registry API (manifest -> config blob)."""
        status, headers, body = self.get('/v2/%s/manifests/%s' % (repo, tag), accept=ACCEPT)
        assert status == 200, body
        config = json.loads(body)['config']['digest']
        status, headers, blob = self.get('/v2/%s/blobs/%s' % (repo, config))
        assert status == 200, blob
        return json.loads(blob)['config'].get('Labels') or {}


@pytest.fixture(scope='session')
def registry(tmp_path_factory):
    subprocess.check_call([os.path.join(ROOT, 'tools', 'images', 'build-base-image.sh'), BASE_IMAGE, '--systemd'])
    directory = str(tmp_path_factory.mktemp('registry') / 'srv')
    subprocess.check_call([os.path.join(HERE, 'registry.sh'), 'start', directory])
    reg = None
    try:
        reg = Registry(directory)
        yield reg
    finally:
        subprocess.call([os.path.join(HERE, 'registry.sh'), 'stop', directory])
        if reg is not None:
            cleanup_host(reg.host)


def cleanup_host(host):
    """Remove what the tests left on this machine for the registry at ``host``."""
    # the Docker path installs the registry's CA for the Docker engine (the port is this run's own)
    shutil.rmtree(os.path.join(DOCKER_CERTS_D, host), ignore_errors=True)
    # local images the tests built carry the registry's (random) port in their name
    names = subprocess.run(['podman', 'images', '--format', '{{.Repository}}:{{.Tag}}'],
                           stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout.split()
    mine = [n for n in names if n.startswith(host + '/')]
    if mine:
        subprocess.call(['podman', 'rmi', '--force'] + mine, stdout=subprocess.DEVNULL)
    # and the untagged ones that rebuilds left behind (they carry the test context's digest label)
    label = 'label=io.gpuvirt.vgpu-manager.context-digest=' + context_digest(os.path.join(HERE, 'context'))
    left = subprocess.run(['podman', 'images', '-q', '--filter', 'dangling=true', '--filter', label],
                          stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout.split()
    if left:
        subprocess.call(['podman', 'rmi', '--force'] + sorted(set(left)), stdout=subprocess.DEVNULL)


class Watcher(threading.Thread):
    """Polls every process's command line for a secret, and the modes of auth files under a directory."""

    def __init__(self, secret, tmp_parent):
        super(Watcher, self).__init__()
        self.secret = secret.encode()
        self.tmp_parent = tmp_parent
        self.leaks = []
        self.commands = set()
        self.auth_modes = set()
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for pid in os.listdir('/proc'):
                if not pid.isdigit():
                    continue
                try:
                    with open('/proc/%s/cmdline' % pid, 'rb') as f:
                        argv = f.read().split(b'\0')
                except (IOError, OSError):
                    continue
                if argv and argv[0]:
                    self.commands.add(os.path.basename(argv[0]).decode(errors='replace'))
                if any(self.secret in a for a in argv):
                    self.leaks.append(b' '.join(argv).decode(errors='replace'))
            for dirpath, dirnames, files in os.walk(self.tmp_parent):
                if 'config.json' in files:
                    try:
                        self.auth_modes.add(os.stat(os.path.join(dirpath, 'config.json')).st_mode & 0o777)
                    except OSError:
                        pass
            time.sleep(0.01)


class Result(object):
    def __init__(self, proc, watcher, seconds):
        self.rc = proc.returncode
        self.out = proc.stdout + proc.stderr
        self.watcher = watcher
        self.seconds = seconds
        try:
            self.doc = json.loads(proc.stdout)
        except ValueError:
            self.doc = {'plays': [], 'stats': {}}
        stats = self.doc.get('stats', {}).get('localhost', {})
        self.changed = stats.get('changed', 0)
        self.tasks = {}
        self.failures = []
        for play in self.doc.get('plays', []):
            for task in play.get('tasks', []):
                res = task['hosts'].get('localhost', {})
                self.tasks[task['task']['name'].split(' : ', 1)[-1]] = res
                if res.get('failed'):
                    self.failures.append(res.get('msg', ''))

    @property
    def failure(self):
        return ' | '.join(str(m) for m in self.failures) or self.out[-3000:]

    def ran(self, name):
        """The task ran (not skipped and present)."""
        res = self.tasks.get(name)
        return res is not None and not res.get('skipped')


def play(variables, tmp_path, check=False, watch_secret=None, inventory='localhost,', env=None):
    """Run the role's playbook with ``variables`` (in a 0600 vars file); return a Result."""
    tmp_parent = str(tmp_path / 'build-tmp')
    os.makedirs(tmp_parent, exist_ok=True)
    # the phase playbook users run, on the controller as the build host
    variables = dict(variables, vgpu_manager_image_tmp_parent=tmp_parent, ansible_connection='local',
                     ansible_python_interpreter=sys.executable)
    varsfile = str(tmp_path / 'vars.json')
    fd = os.open(varsfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        json.dump(variables, f)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_NOCOLOR='1', **(env or {}))
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inventory,
           PLAYBOOK, '-e', '@' + varsfile] + (['--check'] if check else [])
    watcher = Watcher(watch_secret or variables.get('vgpu_manager_image_registry_password') or 'x' * 32, tmp_parent)
    watcher.start()
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
    finally:
        watcher.done.set()
        watcher.join()
    return Result(proc, watcher, time.time() - start)


def image_exists(ref):
    return subprocess.call(['podman', 'image', 'exists', ref]) == 0
