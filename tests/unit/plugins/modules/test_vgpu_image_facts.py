# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu_image_facts module: drives main() on a build context in a temporary directory."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image as vi
from ansible_collections.gpuvirt.provision.plugins.modules import vgpu_image_facts

from .harness import run_module

KVM = 'NVIDIA-Linux-x86_64-550.90.05-vgpu-kvm.run'


@pytest.fixture
def inputs(tmp_path):
    ctx = tmp_path / 'vgpu-manager' / 'rhel9'
    ctx.mkdir(parents=True)
    (ctx / 'Dockerfile').write_text('ARG DRIVER_VERSION\nFROM base\n')
    run_file = tmp_path / KVM
    run_file.write_text('#!/bin/sh\n')
    return dict(run_file=str(run_file), version='550.90.05', context_dir=str(ctx), registry='quay.example.com',
                repository='nvidia', cuda_version='12.4.1')


def test_computes_ref_labels_and_changes_nothing(monkeypatch, inputs):
    out = run_module(monkeypatch, vgpu_image_facts, dict(inputs, openshift_version='4.16.12'), check=True)
    assert out['failed'] is False and out['changed'] is False
    assert out['ref'] == 'quay.example.com/nvidia/vgpu-manager:550.90.05-rhcos4.16'
    assert out['containerfile'] == 'Dockerfile'
    sha = hashlib.sha256(b'#!/bin/sh\n').hexdigest()
    assert out['run']['sha256'] == sha
    assert out['labels'][vi.LABEL_RUN_SHA256] == sha
    assert out['labels'][vi.LABEL_CONTEXT_DIGEST] == out['context_digest'] == vi.context_digest(inputs['context_dir'])
    assert out['build_args'] == {'DRIVER_VERSION': '550.90.05', 'DRIVER_ARCH': 'x86_64', 'CUDA_VERSION': '12.4.1'}


def test_run_file_copied_into_context_does_not_change_the_digest(monkeypatch, inputs, tmp_path):
    before = run_module(monkeypatch, vgpu_image_facts, dict(inputs, os_tag='rhel9.4'))['context_digest']
    (tmp_path / 'vgpu-manager' / 'rhel9' / KVM).write_text('#!/bin/sh\n')
    assert run_module(monkeypatch, vgpu_image_facts, dict(inputs, os_tag='rhel9.4'))['context_digest'] == before


@pytest.mark.parametrize('change,word', [
    (dict(os_tag=''), 'no os_tag'),
    (dict(os_tag='rhel9.4', version='550.90.07'), 'is driver version 550.90.05'),
    (dict(os_tag='rhel9.4', sha256='f' * 64), 'not the expected'),
    (dict(os_tag='rhel9.4', registry='https://quay.io'), 'no scheme'),
    (dict(os_tag='rhel9.4', containerfile='Containerfile'), 'no Containerfile'),
])
def test_bad_input_fails_naming_the_fix(monkeypatch, inputs, change, word):
    out = run_module(monkeypatch, vgpu_image_facts, dict(inputs, **change))
    assert out['failed'] is True
    assert word in out['msg']


def test_grid_driver_is_rejected(monkeypatch, inputs, tmp_path):
    grid = tmp_path / 'NVIDIA-Linux-x86_64-550.90.07-grid.run'
    grid.write_text('guest')
    out = run_module(monkeypatch, vgpu_image_facts, dict(inputs, run_file=str(grid), version='550.90.07', os_tag='rhel9.4'))
    assert out['failed'] is True and 'guest driver' in out['msg'] and '-vgpu-kvm.run' in out['msg']


def test_os_tag_from_a_clusterversion_object(monkeypatch, inputs):
    cv = {'apiVersion': 'config.openshift.io/v1', 'kind': 'ClusterVersion', 'metadata': {'name': 'version'},
          'status': {'desired': {'version': '4.17.2'}, 'history': [{'state': 'Completed', 'version': '4.17.2'}]}}
    out = run_module(monkeypatch, vgpu_image_facts, dict(inputs, clusterversion=cv))
    assert out['os_tag'] == 'rhcos4.17' and out['openshift_version'] == '4.17.2'
    assert out['ref'].endswith(':550.90.05-rhcos4.17')
