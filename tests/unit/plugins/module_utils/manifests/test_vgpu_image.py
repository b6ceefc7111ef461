# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu_image helpers: .run file checks, os_tag, image reference, context digest, labels, pull secret."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image as vi

ROOT_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))

KVM = 'NVIDIA-Linux-x86_64-550.90.05-vgpu-kvm.run'


def write(path, text, mode=0o644):
    path.write_text(text)
    os.chmod(str(path), mode)
    return str(path)


@pytest.mark.parametrize('name,expected', [
    (KVM, ('x86_64', '550.90.05')),
    ('/srv/nvidia/NVIDIA-Linux-aarch64-535.183.04-vgpu-kvm.run', ('aarch64', '535.183.04')),
    ('NVIDIA-Linux-x86_64-470.63-vgpu-kvm.run', ('x86_64', '470.63')),
])
def test_parse_run_name_accepts_host_drivers(name, expected):
    assert vi.parse_run_name(name) == expected


@pytest.mark.parametrize('name,words', [
    ('NVIDIA-Linux-x86_64-550.90.07-grid.run', ['guest driver', 'NVIDIA-Linux-x86_64-550.90.07-vgpu-kvm.run']),
    ('NVIDIA-Linux-x86_64-550.90.07-grid-azure.run', ['guest driver']),
    ('NVIDIA-Linux-x86_64-550.90.07.run', ['not a vGPU Manager', 'NVIDIA-Linux-x86_64-550.90.07-vgpu-kvm.run']),
    ('nvidia-driver.run', ['vgpu_manager_image_run_file']),
    ('NVIDIA-Linux-ppc64le-550.90.05-vgpu-kvm.run', ['ppc64le']),
    ('NVIDIA-Linux-x86_64-5.9-vgpu-kvm.run', ['not an NVIDIA driver version']),
])
def test_parse_run_name_rejects_with_the_fix(name, words):
    with pytest.raises(vi.VgpuImageError) as e:
        vi.parse_run_name(name)
    for w in words:
        assert w in str(e.value)


def test_check_run_file_returns_checksum(tmp_path):
    path = write(tmp_path / KVM, '#!/bin/sh\necho vgpu\n', 0o755)
    facts = vi.check_run_file(path, '550.90.05')
    assert facts['sha256'] == hashlib.sha256(b'#!/bin/sh\necho vgpu\n').hexdigest()
    assert (facts['name'], facts['arch'], facts['size']) == (KVM, 'x86_64', 20)
    assert vi.check_run_file(path, '550.90.05', 'SHA256:' + facts['sha256'].upper())['sha256'] == facts['sha256']


def test_check_run_file_version_mismatch_names_both(tmp_path):
    path = write(tmp_path / KVM, 'x')
    with pytest.raises(vi.VgpuImageError) as e:
        vi.check_run_file(path, '550.90.07')
    msg = str(e.value)
    assert 'version 550.90.05' in msg and '550.90.07' in msg and 'NVIDIA-Linux-x86_64-550.90.07-vgpu-kvm.run' in msg


def test_check_run_file_sha256_mismatch_and_bad_checksum(tmp_path):
    path = write(tmp_path / KVM, 'x')
    with pytest.raises(vi.VgpuImageError, match='not the expected ' + '0' * 64):
        vi.check_run_file(path, '550.90.05', '0' * 64)
    with pytest.raises(vi.VgpuImageError, match='not 64 hex digits'):
        vi.check_run_file(path, '550.90.05', 'abc')


def test_check_run_file_missing_file(tmp_path):
    with pytest.raises(vi.VgpuImageError, match='does not exist'):
        vi.check_run_file(str(tmp_path / KVM), '550.90.05')


@pytest.mark.parametrize('version,tag', [
    ('4.16.12', 'rhcos4.16'), ('v4.14', 'rhcos4.14'), ('4.17.0-0.nightly-2024-08-01-012345', 'rhcos4.17'),
    ('4.9.0', 'rhcos4.9'),
])
def test_os_tag_from_openshift(version, tag):
    assert vi.os_tag_from_openshift(version) == tag


@pytest.mark.parametrize('version', ['3.11.0', '4', 'latest', '', None, '4.x'])
def test_os_tag_from_openshift_rejects(version):
    with pytest.raises(vi.VgpuImageError, match='not a 4.x version'):
        vi.os_tag_from_openshift(version)


def test_openshift_version_from_clusterversion():
    cv = {'status': {'desired': {'version': '4.16.13'},
                     'history': [{'state': 'Partial', 'version': '4.16.13'},
                                 {'state': 'Completed', 'version': '4.16.12'}]}}
    assert vi.openshift_version_from_clusterversion(cv) == '4.16.12'
    assert vi.openshift_version_from_clusterversion({'status': {'desired': {'version': '4.15.1'}}}) == '4.15.1'
    with pytest.raises(vi.VgpuImageError):
        vi.openshift_version_from_clusterversion({'status': {}})


def test_resolve_os_tag():
    assert vi.resolve_os_tag('ubuntu22.04') == 'ubuntu22.04'
    assert vi.resolve_os_tag('', '4.16.3') == 'rhcos4.16'
    assert vi.resolve_os_tag('rhcos4.16', '4.16.3') == 'rhcos4.16'
    with pytest.raises(vi.VgpuImageError, match='contradicts'):
        vi.resolve_os_tag('rhcos4.15', '4.16.3')
    with pytest.raises(vi.VgpuImageError, match='no os_tag'):
        vi.resolve_os_tag('', '')
    for bad in ('Ubuntu 22.04', 'latest', 'ubuntu22.04;rm'):
        with pytest.raises(vi.VgpuImageError, match='vgpu_manager_image_os_tag'):
            vi.resolve_os_tag(bad)


def test_image_ref():
    ref = vi.image_ref('127.0.0.1:5443', '/gpuvirt/test/', 'vgpu-manager', '550.90.05', 'rhcos4.16')
    assert ref == {'registry': '127.0.0.1:5443', 'repository': 'gpuvirt/test/vgpu-manager',
                   'tag': '550.90.05-rhcos4.16', 'image': '127.0.0.1:5443/gpuvirt/test/vgpu-manager',
                   'ref': '127.0.0.1:5443/gpuvirt/test/vgpu-manager:550.90.05-rhcos4.16'}
    assert vi.image_ref('quay.io', '', 'vgpu-manager', '550.90.05', 'ubuntu22.04')['ref'] == \
        'quay.io/vgpu-manager:550.90.05-ubuntu22.04'


@pytest.mark.parametrize('registry,repo,name,word', [
    ('https://quay.io', '', 'vgpu-manager', 'no scheme'),
    ('quay.io/nvidia', '', 'vgpu-manager', 'no scheme'),
    ('', '', 'vgpu-manager', 'host[:port]'),
    ('quay.io', 'NVIDIA', 'vgpu-manager', "'NVIDIA'"),
    ('quay.io', 'a//b', 'Vgpu', "'Vgpu'"),
])
def test_image_ref_rejects(registry, repo, name, word):
    with pytest.raises(vi.VgpuImageError) as e:
        vi.image_ref(registry, repo, name, '550.90.05', 'ubuntu22.04')
    assert word in str(e.value)


def context(tmp_path):
    ctx = tmp_path / 'ctx'
    (ctx / 'drivers').mkdir(parents=True)
    (ctx / '.git').mkdir()
    write(ctx / 'Dockerfile', 'FROM x\n')
    write(ctx / 'nvidia-driver', '#!/bin/sh\n', 0o755)
    write(ctx / '.git' / 'HEAD', 'ref: main\n')
    write(ctx / 'drivers' / 'README.md', 'drivers\n')
    return ctx


def test_context_digest_tracks_content_mode_and_names_but_not_run_or_git(tmp_path):
    ctx = context(tmp_path)
    first = vi.context_digest(str(ctx), exclude=[KVM])
    write(ctx / KVM, 'driver')
    write(ctx / '.git' / 'HEAD', 'ref: other\n')
    assert vi.context_digest(str(ctx), exclude=[KVM]) == first
    assert vi.context_digest(str(ctx)) != first
    os.chmod(str(ctx / 'nvidia-driver'), 0o644)
    second = vi.context_digest(str(ctx), exclude=[KVM])
    assert second != first
    write(ctx / 'drivers' / 'README.md', 'changed\n')
    third = vi.context_digest(str(ctx), exclude=[KVM])
    assert third != second
    os.rename(str(ctx / 'drivers' / 'README.md'), str(ctx / 'drivers' / 'README'))
    assert vi.context_digest(str(ctx), exclude=[KVM]) != third
    with pytest.raises(vi.VgpuImageError, match='vgpu_manager_image_context_dir'):
        vi.context_digest(str(tmp_path / 'missing'))


def test_find_containerfile(tmp_path):
    ctx = context(tmp_path)
    assert vi.find_containerfile(str(ctx)) == 'Dockerfile'
    write(ctx / 'Containerfile', 'FROM y\n')
    assert vi.find_containerfile(str(ctx)) == 'Containerfile'
    assert vi.find_containerfile(str(ctx), 'Dockerfile') == 'Dockerfile'
    with pytest.raises(vi.VgpuImageError, match='vgpu_manager_image_containerfile'):
        vi.find_containerfile(str(ctx), 'Dockerfile.rhel9')


def test_build_args_and_labels():
    args = vi.build_args('550.90.05', '12.4.1', 'x86_64', {'BASE_IMAGE': 'localhost/base'})
    assert args == {'DRIVER_VERSION': '550.90.05', 'DRIVER_ARCH': 'x86_64', 'CUDA_VERSION': '12.4.1',
                    'BASE_IMAGE': 'localhost/base'}
    assert 'CUDA_VERSION' not in vi.build_args('550.90.05')
    with pytest.raises(vi.VgpuImageError, match='build argument name'):
        vi.build_args('550.90.05', extra={'A B': '1'})
    labels = vi.image_labels('a' * 64, 'b' * 64, args, '550.90.05')
    assert labels[vi.LABEL_RUN_SHA256] == 'a' * 64 and labels[vi.LABEL_CONTEXT_DIGEST] == 'b' * 64
    other = vi.image_labels('a' * 64, 'b' * 64, dict(args, CUDA_VERSION='12.5.0'), '550.90.05')
    assert vi.label_differences(labels, other) == [vi.LABEL_BUILD_ARGS_DIGEST]
    assert vi.label_differences(labels, dict(labels, extra='x')) == []
    assert vi.label_differences(labels, None) == sorted(labels)


def test_dockerconfigjson_and_pull_secret():
    doc = vi.dockerconfigjson('127.0.0.1:5443', 'builder', 'p@ss:w0rd')
    entry = doc['auths']['127.0.0.1:5443']
    assert base64.b64decode(entry['auth']).decode() == 'builder:p@ss:w0rd'
    secret = vi.pull_secret('vgpu-registry', 'nvidia-gpu-operator', '127.0.0.1:5443', 'builder', 'p@ss:w0rd')
    assert secret['type'] == 'kubernetes.io/dockerconfigjson'
    assert json.loads(base64.b64decode(secret['data']['.dockerconfigjson'])) == doc
    with pytest.raises(vi.VgpuImageError):
        vi.dockerconfigjson('quay.io', 'builder', '')


def test_pull_secret_passes_the_kubernetes_schema():
    kubernetes_validate = pytest.importorskip('kubernetes_validate')
    secret = vi.pull_secret('vgpu-registry', 'nvidia-gpu-operator', 'quay.io', 'u', 'p')
    kubernetes_validate.validate(secret, '1.34.0', strict=True)
    secret['data']['extra'] = 1
    with pytest.raises(Exception):
        kubernetes_validate.validate(secret, '1.34.0', strict=True)


# Extra podman build options come from the inventory or -e: only options that change how the build runs pass;
# one that turns TLS off for the base-image pull, mounts host files, or beats a recorded input is refused, since the
# labels would then say "up to date" for an image built from other inputs.
@pytest.mark.parametrize('arg', ['--tls-verify=false', '--volume=/:/host:rw', '-v', '/:/host',
                                 '--build-arg=DRIVER_VERSION=evil', '--label=x=y', '--file=/etc/passwd', '-f',
                                 '--tag=evil', '--authfile=/root/.docker/config.json', '--secret=id=x,src=/etc/shadow',
                                 '--security-opt=seccomp=unconfined', '--isolation=chroot\n--tls-verify=false',
                                 '--isolation=chroot ', '--jobs=1; id', '--network=container:x', '', 7])
def test_build_extra_args_refuse_what_changes_trust_or_inputs(arg):
    with pytest.raises(vi.VgpuImageError, match='vgpu_manager_image_build_extra_args'):
        vi.check_build_extra_args(['--isolation=chroot', arg])


def test_build_extra_args_allow_how_the_build_runs_and_are_recorded():
    allowed = ['--isolation=chroot', '--jobs=2', '--layers=false', '--pull=never', '--network=host',
               '--ulimit=nofile=20000:20000']
    assert vi.check_build_extra_args(allowed) == allowed
    args = vi.build_args('580.95.02')
    plain = vi.image_labels('a' * 64, 'b' * 64, args, '580.95.02')
    # no extra options: the digest is the one images already in registries carry
    assert plain == vi.image_labels('a' * 64, 'b' * 64, args, '580.95.02', [])
    extra = vi.image_labels('a' * 64, 'b' * 64, args, '580.95.02', allowed)
    assert plain[vi.LABEL_BUILD_ARGS_DIGEST] != extra[vi.LABEL_BUILD_ARGS_DIGEST]


def test_the_podman_build_appends_only_the_checked_extra_args():
    with open(os.path.join(ROOT_DIR, 'roles', 'vgpu_manager_image', 'tasks', 'podman.yml'), encoding='utf-8') as f:
        text = f.read()
    # the argv is built in the task by the checking filter from the public input (an extra variable replacing the
    # module's result cannot add an option); the filter applies check_build_extra_args (its own tests:
    # tests/unit/plugins/filter/test_vgpu_image_filters.py)
    assert "'build_extra_args': vgpu_manager_image_build_extra_args" in text
    assert 'gpuvirt.provision.vgpu_image_build' in text
    assert '+ vgpu_manager_image_build_extra_args' not in text
    with pytest.raises(vi.VgpuImageError):
        vi.check_build_extra_args(['--tls-verify=false'])
