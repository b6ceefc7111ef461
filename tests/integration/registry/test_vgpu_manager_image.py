# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu_manager_image role against a real registry: Podman builds and pushes with credentials over verified TLS.

The tests run in file order and share one registry: the first push, then re-runs against what it left.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image as vi  # noqa: E402
from registry_harness import HERE, image_exists, play  # noqa: E402 pylint: disable=wrong-import-position

VERSION = '550.90.05'
RUN_NAME = 'NVIDIA-Linux-x86_64-%s-vgpu-kvm.run' % VERSION
REPO = 'gpuvirt/vgpu-manager'
TAG = VERSION + '-rhcos4.16'
BUILD = 'Build the image with Podman'
PUSH = 'Push the image with Podman (auth file, TLS verified against the CA)'
FACTS = 'Check the .run file and the context, compute the tag and the input labels (before any build)'


def stand_in_run(path, text='stand-in'):
    with open(path, 'w') as f:
        f.write('#!/bin/sh\n# %s\n[ "$1" = --version ] && echo %s\n' % (text, VERSION))
    os.chmod(path, 0o755)
    return path


def sha256(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp('inputs')
    return {'run': stand_in_run(str(d / RUN_NAME)), 'dir': d}


def role_vars(reg, inputs, **kw):
    v = dict(vgpu_manager_image_run_file=inputs['run'], vgpu_manager_image_version=VERSION,
             vgpu_manager_image_context_dir=os.path.join(HERE, 'context'),
             vgpu_manager_image_openshift_version='4.16.12', vgpu_manager_image_cuda_version='12.4.1',
             vgpu_manager_image_registry=reg.host, vgpu_manager_image_repository='gpuvirt',
             vgpu_manager_image_registry_username=reg.user,
             vgpu_manager_image_registry_password=reg.password,
             vgpu_manager_image_registry_ca_file=reg.ca)
    v.update(('vgpu_manager_image_' + k, val) for k, val in kw.items())
    return v


@pytest.fixture(scope='module')
def first_push(registry, inputs, tmp_path_factory):
    return play(role_vars(registry, inputs), tmp_path_factory.mktemp('first'))


def test_push_with_credentials_lands_in_the_registry(registry, inputs, first_push):
    r = first_push
    assert r.rc == 0, r.failure
    assert r.ran(BUILD) and r.ran(PUSH) and r.changed >= 2
    assert REPO in registry.catalog()
    assert TAG in registry.tags(REPO)
    labels = registry.labels(REPO, TAG)
    assert labels[vi.LABEL_RUN_SHA256] == sha256(inputs['run'])
    assert labels[vi.LABEL_CONTEXT_DIGEST] == vi.context_digest(os.path.join(HERE, 'context'))
    assert labels['version'] == VERSION  # the Containerfile's own label, from the DRIVER_VERSION build arg
    print('first build and push: %.1f s' % r.seconds)


def test_credentials_stay_out_of_process_lists_output_and_disk(registry, first_push, tmp_path):
    w = first_push.watcher
    assert {'podman', 'skopeo'} <= w.commands, w.commands  # the watcher did see the tools run
    assert w.leaks == []
    assert registry.password not in first_push.out
    assert w.auth_modes == {0o600}, w.auth_modes
    assert os.listdir(w.tmp_parent) == []  # temporary directory with the auth file removed


def test_second_run_changes_nothing(registry, inputs, first_push, tmp_path):
    digest = registry.manifest_digest(REPO, TAG)
    r = play(role_vars(registry, inputs), tmp_path)
    assert r.rc == 0, r.failure
    assert r.changed == 0 and not r.ran(BUILD) and not r.ran(PUSH)
    assert registry.manifest_digest(REPO, TAG) == digest
    print('up-to-date run: %.1f s' % r.seconds)


def test_check_mode_reports_and_changes_nothing(registry, inputs, first_push, tmp_path):
    r = play(role_vars(registry, inputs), tmp_path, check=True)
    assert r.rc == 0 and r.changed == 0, r.failure
    new = role_vars(registry, inputs, openshift_version='', os_tag='ubuntu22.04')
    r = play(new, tmp_path, check=True)
    assert r.rc == 0, r.failure
    assert r.changed == 1 and not r.ran(BUILD) and not r.ran(PUSH)
    assert 'would be built and pushed' in r.tasks['Report the image']['msg']
    assert VERSION + '-ubuntu22.04' not in registry.tags(REPO)
    assert not image_exists('%s/%s:%s-ubuntu22.04' % (registry.host, REPO, VERSION))


def test_a_changed_run_file_rebuilds(registry, inputs, first_push, tmp_path):
    other = stand_in_run(str(tmp_path / RUN_NAME), 'rebuilt from another .run')
    r = play(role_vars(registry, inputs, run_file=other), tmp_path)
    assert r.rc == 0, r.failure
    assert r.ran(BUILD) and r.changed >= 2
    assert vi.LABEL_RUN_SHA256 in r.tasks['Report the image']['msg']
    assert registry.labels(REPO, TAG)[vi.LABEL_RUN_SHA256] == sha256(other)


def test_force_rebuilds_and_pushes(registry, inputs, first_push, tmp_path):
    assert play(role_vars(registry, inputs), tmp_path).rc == 0  # back to the original .run
    before = registry.manifest_digest(REPO, TAG)
    r = play(role_vars(registry, inputs, force=True), tmp_path)
    assert r.rc == 0, r.failure
    assert r.ran(BUILD) and r.ran(PUSH) and r.changed >= 2
    assert '--no-cache' in r.tasks[BUILD]['cmd']
    assert registry.manifest_digest(REPO, TAG) != before
    assert registry.labels(REPO, TAG)[vi.LABEL_RUN_SHA256] == sha256(inputs['run'])


def test_wrong_password_fails_clearly_and_pushes_nothing(registry, inputs, first_push, tmp_path):
    wrong = 'wrong-' + registry.password[::-1]
    r = play(role_vars(registry, inputs, repository='wrongpw', registry_password=wrong), tmp_path)
    assert r.rc != 0
    assert 'refused the credentials' in r.failure and 'vgpu_manager_image_registry_password' in r.failure
    assert wrong not in r.out and r.watcher.leaks == []
    assert not r.ran(BUILD) and not r.ran(PUSH)
    assert not [n for n in registry.catalog() if n.startswith('wrongpw')]
    assert not image_exists('%s/wrongpw/vgpu-manager:%s' % (registry.host, TAG))
    assert os.listdir(str(tmp_path / 'build-tmp')) == []  # cleaned up after the failure too


def test_anonymous_pull_is_refused(registry, first_push, tmp_path):
    status, headers, body = registry.get('/v2/%s/manifests/%s' % (REPO, TAG), auth=False, accept='*/*')
    assert status == 401, (headers, body)
    certs = tmp_path / 'certs'
    certs.mkdir()
    shutil.copy(registry.ca, str(certs / 'ca.crt'))
    empty = tmp_path / 'auth.json'
    empty.write_text('{"auths": {}}')
    proc = subprocess.run(['podman', 'pull', '--authfile', str(empty), '--cert-dir', str(certs),
                           '%s/%s:%s' % (registry.host, REPO, TAG)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode != 0
    assert 'authentication required' in proc.stderr or 'unauthorized' in proc.stderr.lower(), proc.stderr


def test_tls_is_verified_by_default(registry, inputs, first_push, tmp_path):
    r = play(role_vars(registry, inputs, registry_ca_file='', os_tag='', openshift_version='4.17.1'), tmp_path)
    assert r.rc != 0
    assert 'vgpu_manager_image_registry_ca_file' in r.failure
    assert not r.ran(BUILD)
    assert not image_exists('%s/%s:%s-rhcos4.17' % (registry.host, REPO, VERSION))


@pytest.mark.parametrize('name,kw,words', [
    ('NVIDIA-Linux-x86_64-550.90.07-grid.run', dict(version='550.90.07'), ['guest driver', '-vgpu-kvm.run']),
    (RUN_NAME, dict(version='550.90.07'), ['is driver version 550.90.05', 'set the version to 550.90.05']),
    (RUN_NAME, dict(run_sha256='0' * 64), ['not the expected ' + '0' * 64]),
])
def test_wrong_run_file_is_rejected_before_any_build(registry, first_push, tmp_path, name, kw, words):
    bad = stand_in_run(str(tmp_path / name), 'bad input %s' % sorted(kw))
    v = role_vars(registry, {'run': bad}, os_tag='rhel9.9', openshift_version='', **kw)
    r = play(v, tmp_path)
    assert r.rc != 0
    assert r.tasks[FACTS].get('failed'), r.failure
    for w in words:
        assert w in r.failure
    assert not r.ran(BUILD) and not r.ran(PUSH)
    built = subprocess.run(['podman', 'images', '-q', '--filter', 'label=%s=%s' % (vi.LABEL_RUN_SHA256, sha256(bad))],
                           stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout.split()
    assert built == []
    assert not [t for t in registry.tags(REPO) if t.endswith('rhel9.9')]


@pytest.mark.parametrize('kw,words', [
    (dict(builder='buildah'), ['vgpu_manager_image_builder', 'podman, docker']),
    (dict(registry='https://registry.example.com'), ['no scheme']),
    (dict(registry_password=''), ['_password together']),
])
def test_bad_input_fails_before_any_change(registry, inputs, first_push, tmp_path, kw, words):
    r = play(role_vars(registry, inputs, **kw), tmp_path)
    assert r.rc != 0 and r.changed == 0
    for w in words:
        assert w in r.failure
    assert not r.ran(BUILD)


def test_pull_secret_manifest(registry, inputs, first_push, tmp_path):
    kubernetes_validate = pytest.importorskip('kubernetes_validate')
    path = tmp_path / 'out' / 'pull-secret.yaml'
    path.parent.mkdir()
    v = role_vars(registry, inputs, pull_secret=True, pull_secret_file=str(path),
                  pull_secret_namespace='nvidia-gpu-operator')
    r = play(v, tmp_path)
    assert r.rc == 0, r.failure
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600
    assert registry.password not in r.out
    doc = yaml.safe_load(path.read_text())
    kubernetes_validate.validate(doc, '1.34.0', strict=True)
    assert doc['type'] == 'kubernetes.io/dockerconfigjson'
    assert doc['metadata'] == {'name': 'vgpu-registry-secret', 'namespace': 'nvidia-gpu-operator',
                               'labels': {'app.kubernetes.io/managed-by': 'gpuvirt.provision'}}
    config = json.loads(base64.b64decode(doc['data']['.dockerconfigjson']))
    assert config == vi.dockerconfigjson(registry.host, registry.user, registry.password)
    # the secret's credentials do pull the image
    auth = tmp_path / 'auth.json'
    auth.write_text(json.dumps(config))
    os.chmod(str(auth), 0o600)
    certs = tmp_path / 'certs'
    certs.mkdir()
    shutil.copy(registry.ca, str(certs / 'ca.crt'))
    proc = subprocess.run(['skopeo', 'inspect', '--no-tags', '--authfile', str(auth), '--cert-dir', str(certs),
                           'docker://%s/%s:%s' % (registry.host, REPO, TAG)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    r = play(v, tmp_path)
    assert r.rc == 0 and r.changed == 0, r.failure


def test_context_from_a_git_repository(registry, inputs, first_push, tmp_path):
    """A clone of the same files (at a subdirectory, .git ignored) has the same context digest: nothing to do."""
    repo = tmp_path / 'gpu-driver-container'
    shutil.copytree(os.path.join(HERE, 'context'), str(repo / 'vgpu-manager' / 'test'), symlinks=True)
    git = ['git', '-C', str(repo), '-c', 'user.name=t', '-c', 'user.email=t@example.com']
    subprocess.check_call(git[:3] + ['init', '-q', '-b', 'main'])
    subprocess.check_call(git + ['add', '.'])
    subprocess.check_call(git + ['commit', '-q', '-m', 'context'])
    v = role_vars(registry, inputs, context_dir='', context_git_repo='file://' + str(repo),
                  context_git_version='main', context_git_subdir='vgpu-manager/test')
    r = play(v, tmp_path)
    assert r.rc == 0, r.failure
    assert r.ran('Clone the build context')
    assert r.changed == 0 and not r.ran(BUILD)


def test_docker_builder_without_an_engine_fails_before_any_build(registry, inputs, first_push, tmp_path):
    """The Docker path logs in through the Docker API; with no engine running it stops there and says so."""
    r = play(role_vars(registry, inputs, builder='docker', os_tag='ubuntu24.04', openshift_version=''), tmp_path)
    assert r.rc != 0
    assert 'Login to %s as %s failed' % (registry.host, registry.user) in r.failure
    assert 'Docker engine is not reachable' in r.failure
    assert registry.password not in r.out
    assert not r.ran('Build and push the image with Docker (credentials from the temporary Docker config)')
    assert VERSION + '-ubuntu24.04' not in registry.tags(REPO)


def test_phase_does_nothing_without_vgpu_hosts_or_run_file(tmp_path):
    r = play({}, tmp_path)
    assert r.rc == 0 and r.changed == 0, r.failure
    assert r.ran('Say why nothing is built')
    assert FACTS not in r.tasks


def test_phase_refuses_more_than_one_build_host(registry, inputs, tmp_path):
    r = play(dict(role_vars(registry, inputs), vgpu_image_build_host='all'), tmp_path, inventory='localhost,buildhost2,')
    assert r.rc != 0
    assert 'matches 2 hosts' in r.failure and 'name one host' in r.failure
    assert FACTS not in r.tasks
