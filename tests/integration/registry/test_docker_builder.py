# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu_manager_image with vgpu_manager_image_builder: docker against the same real registry.

A private Docker engine is started for these tests (its own socket, data and exec roots in a temporary directory,
no bridge, no iptables, vfs storage) and stopped at the end; the base image is copied into it from Podman.
Skipped where dockerd is not installed or the tests do not run as root (the engine and the role's CA install
under /etc/docker/certs.d need root); failed instead in CI and `make test`, which install it (tool_gate.py).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image as vi  # noqa: E402
from tool_gate import lacking, need  # noqa: E402  (tests/integration, on the path through its conftest)
from registry_harness import BASE_IMAGE, DOCKER_CERTS_D, HERE, play  # noqa: E402 pylint: disable=wrong-import-position
from test_vgpu_manager_image import RUN_NAME, VERSION, sha256, stand_in_run  # noqa: E402

REPO = 'gpuvirt-docker/vgpu-manager'
TAG = VERSION + '-ubuntu22.04'
BUILD = 'Build and push the image with Docker (credentials from the temporary Docker config)'


@pytest.fixture(scope='module')
def dockerd(tmp_path_factory):
    need('dockerd', 'docker.io')
    if os.geteuid() != 0:
        lacking('needs root (the engine and the CA under /etc/docker/certs.d): the Docker path was not exercised')
    d = str(tmp_path_factory.mktemp('dockerd'))
    sock = 'unix://%s/docker.sock' % d
    env = dict(os.environ, DOCKER_HOST=sock)
    with open(os.path.join(d, 'log'), 'w') as log:
        proc = subprocess.Popen(['dockerd', '--data-root', d + '/data', '--exec-root', d + '/exec', '--pidfile',
                                 d + '/pid', '-H', sock, '--bridge=none', '--iptables=false', '--ip6tables=false',
                                 '--storage-driver=vfs'], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        for dummy in range(300):
            if subprocess.call(['docker', 'info'], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL) == 0:
                break
            assert proc.poll() is None, open(os.path.join(d, 'log')).read()
            time.sleep(0.2)
        else:
            pytest.fail('dockerd did not answer on %s:\n%s' % (sock, open(os.path.join(d, 'log')).read()))
        save = subprocess.Popen(['podman', 'save', 'localhost/' + BASE_IMAGE], stdout=subprocess.PIPE)
        subprocess.check_call(['docker', 'load', '-q'], stdin=save.stdout, env=env, stdout=subprocess.DEVNULL)
        save.stdout.close()
        assert save.wait() == 0
        yield {'DOCKER_HOST': sock}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def role_vars(reg, run, **kw):
    v = dict(vgpu_manager_image_builder='docker', vgpu_manager_image_run_file=run,
             vgpu_manager_image_version=VERSION, vgpu_manager_image_context_dir=os.path.join(HERE, 'context'),
             vgpu_manager_image_os_tag='ubuntu22.04', vgpu_manager_image_cuda_version='12.4.1',
             vgpu_manager_image_registry=reg.host, vgpu_manager_image_repository='gpuvirt-docker',
             vgpu_manager_image_registry_username=reg.user, vgpu_manager_image_registry_password=reg.password,
             vgpu_manager_image_registry_ca_file=reg.ca)
    v.update(('vgpu_manager_image_' + k, val) for k, val in kw.items())
    return v


def test_docker_builds_pushes_and_is_idempotent(registry, dockerd, tmp_path):
    run = stand_in_run(str(tmp_path / RUN_NAME), 'docker path')
    r = play(role_vars(registry, run), tmp_path, env=dockerd)
    assert r.rc == 0, r.failure
    assert r.ran(BUILD) and r.changed >= 1
    print('docker build and push: %.1f s' % r.seconds)
    assert REPO in registry.catalog() and TAG in registry.tags(REPO)
    labels = registry.labels(REPO, TAG)
    assert labels[vi.LABEL_RUN_SHA256] == sha256(run)
    assert labels['version'] == VERSION
    # the engine trusts the registry through the CA the role installed, TLS verified
    with open(os.path.join(DOCKER_CERTS_D, registry.host, 'ca.crt')) as got, open(registry.ca) as want:
        assert got.read() == want.read()
    assert r.watcher.leaks == [] and registry.password not in r.out
    assert r.watcher.auth_modes == {0o600}, r.watcher.auth_modes
    assert os.listdir(r.watcher.tmp_parent) == []

    digest = registry.manifest_digest(REPO, TAG)
    r = play(role_vars(registry, run), tmp_path, env=dockerd)
    assert r.rc == 0, r.failure
    assert r.changed == 0 and not r.ran(BUILD)
    assert registry.manifest_digest(REPO, TAG) == digest


def test_docker_wrong_password_fails_clearly_and_pushes_nothing(registry, dockerd, tmp_path):
    run = stand_in_run(str(tmp_path / RUN_NAME), 'docker wrong password')
    wrong = 'wrong-' + registry.password[::-1]
    r = play(role_vars(registry, run, repository='docker-wrongpw', registry_password=wrong), tmp_path, env=dockerd)
    assert r.rc != 0
    assert 'refused the credentials' in r.failure, r.failure
    assert wrong not in r.out and r.watcher.leaks == []
    assert not r.ran(BUILD)
    assert not [n for n in registry.catalog() if n.startswith('docker-wrongpw')]
