# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drive the cluster-side I modules' main(): arguments in (as the roles pass them), result or failure out.

The builders are unit-tested in tests/unit/plugins/module_utils/manifests/; these tests check the modules' own
glue: option wiring, which checks run before anything is returned, and that failures are messages (with no
credential in them) rather than tracebacks.
"""
from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.modules import (
    gpu_operator_manifests, gpu_operator_pull_secret, node_labels_plan, verify_node_resources, verify_smoke_vm)

from .harness import run_module

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..'))
import schema  # noqa: E402

VGM = {'repository': 'registry.example.com:5000/nvidia', 'version': '580.82.02'}
A10_VGPU_HOST = {
    'node': 'vgpu-a10', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q',
    'facts': {'pci_devices': {'gpus': [{'bdf': '0000:41:00.0', 'device_name': 'GA102GL [A10]', 'is_vf': False}]},
              'mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev',
                                          'types': [{'name': 'NVIDIA A10-12Q', 'short_name': 'A10-12Q'}]}]}}}


def reference_text(*parts):
    with open(os.path.join(schema.reference_dir(), *parts), encoding='utf-8') as handle:
        return handle.read()


def openshift_args(**over):
    args = {'platform': 'openshift', 'default_workload': 'vm-vgpu', 'vgpu_manager': VGM,
            'pull_secret_name': 'vgpu-pull', 'package_manifest': {'status': {'defaultChannel': 'v26.7'}},
            'alm_examples': reference_text('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json'),
            'alm_examples_release': 'v26.7.0', 'alm_examples_source': 'gpu-operator-v26.7.0-csv-alm-examples.json'}
    args.update(over)
    return args


def test_openshift_objects_validate_and_carry_our_settings(monkeypatch):
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(
        vgpu_configs={'A10-12Q': {'A10-12Q': 2}}, vgpu_config_default='A10-12Q', hosts=[A10_VGPU_HOST],
        install_plan_approval='Manual'))
    assert not res['failed'] and not res['changed'], res.get('msg')
    assert res['namespace'] == 'nvidia-gpu-operator' and res['channel'] == 'v26.7'
    objs = res['install_objects'] + res['config_objects'] + [res['cluster_policy']]
    for obj in objs:
        schema.validate(obj, crd_sources=['v26.7.0'] if obj['kind'] == 'ClusterPolicy' else None)
    assert [o['kind'] for o in res['install_objects']] == ['Namespace', 'OperatorGroup', 'Subscription']
    assert res['install_objects'][2]['spec']['installPlanApproval'] == 'Manual'
    spec = res['cluster_policy']['spec']
    assert spec['vgpuManager']['imagePullSecrets'] == ['vgpu-pull']
    assert spec['vgpuDeviceManager']['config'] == {'name': 'gpuvirt-vgpu-devices-config', 'default': 'A10-12Q'}
    assert res['helm_values'] is None


def test_vgpu_manager_version_follows_the_image_version(monkeypatch):
    # NVIDIA OpenShift Virtualization guide, "Creating a ClusterPolicy for the GPU Operator":
    # "vgpuManager.version=<driver version>", the version the image was built for ("Building the vGPU Manager image")
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(
        vgpu_manager={'repository': VGM['repository']}, vgpu_manager_image_version='580.82.02'))
    assert not res['failed'], res.get('msg')
    assert res['cluster_policy']['spec']['vgpuManager']['version'] == '580.82.02'
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(
        vgpu_manager=dict(VGM, version='580.65.06'), vgpu_manager_image_version='580.82.02'))
    assert res['failed'] and '580.65.06' in res['msg'] and '580.82.02' in res['msg']


def test_openshift_without_alm_examples_leaves_the_policy_for_later(monkeypatch):
    # apply mode builds the ClusterPolicy only once the installed CSV can be read
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(alm_examples=None))
    assert not res['failed'] and res['cluster_policy'] is None and len(res['install_objects']) == 3


def test_unknown_pinned_channel_is_named(monkeypatch):
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(
        channel='stable', package_manifest={'status': {'channels': [{'name': 'v26.7'}], 'defaultChannel': 'v26.7'}}))
    assert res['failed'] and "'stable'" in res['msg'] and 'gpu_operator_channel' in res['msg']


def test_kubernetes_values_checked_against_the_chart(monkeypatch):
    chart = yaml.safe_load(reference_text('helm', 'gpu-operator-v26.7.0-values.yaml'))
    res = run_module(monkeypatch, gpu_operator_manifests, {
        'platform': 'kubernetes', 'default_workload': 'vm-passthrough', 'chart_values': chart,
        'helm_values_extra': {'operator': {'nodeSelector': {'node-role.kubernetes.io/worker': ''}}}})
    assert not res['failed'], res.get('msg')
    assert res['namespace'] == 'gpu-operator' and res['cluster_policy'] is None
    assert [o['kind'] for o in res['install_objects']] == ['Namespace']
    assert res['helm_values']['sandboxWorkloads']['defaultWorkload'] == 'vm-passthrough'
    res = run_module(monkeypatch, gpu_operator_manifests, {
        'platform': 'kubernetes', 'chart_values': chart, 'helm_values_extra': {'vfioManager': {'enabeld': True}}})
    assert res['failed'] and 'vfioManager.enabeld' in res['msg']


def test_private_registry_needs_a_pull_secret(monkeypatch):
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(pull_secret_name=None))
    assert res['failed'] and 'registry.example.com:5000' in res['msg'] and 'gpu_operator_pull_secret' in res['msg']
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(pull_secret_name=None, registry_public=True))
    assert not res['failed'], res.get('msg')
    assert 'imagePullSecrets' not in res['cluster_policy']['spec']['vgpuManager']


@pytest.mark.parametrize('login, needle', [
    ({'registry': 'quay.io', 'username': 'u', 'password_given': True}, 'logs in to quay.io'),
    ({'registry': 'registry.example.com:5000', 'username': 'u', 'password_given': False},
     'gpu_operator_pull_secret.password'),
    ({'registry': '', 'username': 'u', 'password_given': True}, 'gpu_operator_pull_secret.registry'),
])
def test_registry_login_checked_without_the_password(monkeypatch, login, needle):
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(registry_login=login))
    assert res['failed'] and needle in res['msg'], res.get('msg')


def test_vgpu_type_no_host_offers_is_named_with_what_was_checked(monkeypatch):
    res = run_module(monkeypatch, gpu_operator_manifests, openshift_args(
        vgpu_configs={'A10-12Q': {'A10-12Q': 2}, 'big': {'A10-24Q': 1}}, vgpu_config_default='A10-12Q',
        hosts=[A10_VGPU_HOST]))
    assert res['failed'] and 'A10-24Q' in res['msg'] and 'vgpu-a10' in res['msg'] and '0000:41:00.4' in res['msg']


def test_pull_secret_module_builds_a_valid_secret_and_hides_the_password(monkeypatch):
    args = {'name': 'vgpu-pull', 'namespace': 'nvidia-gpu-operator', 'registry': 'registry.example.com:5000',
            'username': 'builder', 'password': 'n0t-a-real-pass', 'image_repository': VGM['repository']}
    res = run_module(monkeypatch, gpu_operator_pull_secret, args)
    assert not res['failed'] and not res['changed']
    schema.validate(res['object'])
    res = run_module(monkeypatch, gpu_operator_pull_secret, dict(args, image_repository='quay.io/nvidia'))
    assert res['failed'] and 'quay.io' in res['msg'] and 'n0t-a-real-pass' not in res['msg']


def test_node_labels_plan_collects_every_host_error(monkeypatch):
    res = run_module(monkeypatch, node_labels_plan, {'hosts': [
        {'host': 'gpu-1', 'groups': ['gpu_container', 'gpu_vm_passthrough']},
        {'host': 'gpu-2', 'groups': ['gpu_vm_vgpu'], 'pool': 'vm-gpu'}]})
    assert res['failed']
    assert 'gpu-1 is in the pools container, vm-passthrough' in res['msg'] and "unknown pool 'vm-gpu'" in res['msg']


def test_node_labels_plan_uses_the_default_vgpu_config_and_patches_only_differences(monkeypatch):
    nodes = [{'metadata': {'name': 'n1', 'labels': {'nvidia.com/gpu.workload.config': 'vm-vgpu'}}},
             {'metadata': {'name': 'n2', 'labels': {'nvidia.com/gpu.workload.config': 'vm-passthrough'}}}]
    res = run_module(monkeypatch, node_labels_plan, {
        'hosts': [{'host': 'h1', 'node': 'n1', 'groups': ['gpu_vm_vgpu']},
                  {'host': 'h2', 'node': 'n2', 'groups': ['gpu_vm_passthrough']}],
        'nodes': nodes, 'vgpu_config_default': 'A10-12Q'})
    assert not res['failed'], res.get('msg')
    assert res['patches'] == [{'apiVersion': 'v1', 'kind': 'Node',
                               'metadata': {'name': 'n1', 'labels': {'nvidia.com/vgpu.config': 'A10-12Q'}}}]
    assert res['report']['n2']['changes'] == {}


def test_verify_node_resources_lists_short_nodes_first(monkeypatch):
    expected = {'a-ok': {'nvidia.com/GA102GL_A10': 1}, 'b-short': {'nvidia.com/GA102GL_A10': 2}}
    nodes = [{'metadata': {'name': 'a-ok'}, 'status': {'allocatable': {'nvidia.com/GA102GL_A10': '1'}}},
             {'metadata': {'name': 'b-short'}, 'status': {'allocatable': {'nvidia.com/GA102GL_A10': '1'}}}]
    res = run_module(monkeypatch, verify_node_resources, {'expected': expected, 'nodes': nodes})
    assert not res['failed'] and res['ok'] is False
    assert res['messages'][0].startswith('node b-short: expected nvidia.com/GA102GL_A10>=2')
    assert res['report']['a-ok']['missing'] == []


def test_smoke_vm_module(monkeypatch):
    res = run_module(monkeypatch, verify_smoke_vm, {'resource_name': 'nvidia.com/NVIDIA_A10-12Q',
                                                    'image': 'quay.io/containerdisks/fedora:41'})
    assert not res['failed']
    schema.validate(res['object'])
    assert res['object']['spec']['runStrategy'] == 'Halted'
    res = run_module(monkeypatch, verify_smoke_vm, {'resource_name': '', 'image': 'x'})
    assert res['failed'] and 'verify_smoke_vm_resource' in res['msg']
