# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drive the cluster-side I modules' main(): arguments in (as the roles pass them), result or failure out.

The builders are unit-tested in tests/unit/plugins/module_utils/manifests/; these tests check the modules' own
glue: option wiring, which checks run before anything is returned, and that failures are messages (with no
credential in them) rather than tracebacks.
"""
from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.modules import (
    gpu_operator_manifests, gpu_operator_pull_secret, node_labels_plan, verify_node_resources, verify_smoke_vm)

from .harness import run_module, settings_args

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..'))
import schema  # noqa: E402

VGM = {'repository': 'registry.example.com:5000/nvidia', 'version': '580.82.02'}
A10_VGPU_HOST = {
    'node': 'vgpu-a10', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q',
    'facts': {'pci_devices': {'gpus': [{'bdf': '0000:41:00.0', 'device_name': 'GA102GL [A10]', 'is_vf': False}]},
              'mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev',
                                          'types': [{'name': 'NVIDIA A10-12Q', 'short_name': 'A10-12Q'}]}]}}}


def run_gop(monkeypatch, args):
    """gpu_operator_manifests with ``args`` given flat: the settings and the reads split as the module takes them."""
    return run_module(monkeypatch, gpu_operator_manifests, settings_args(args, gpu_operator_manifests.READS))


def run_nl(monkeypatch, args):
    """node_labels_plan with ``args`` given flat: the settings and the reads split as the module takes them."""
    return run_module(monkeypatch, node_labels_plan, settings_args(args, node_labels_plan.READS))


def openshift_args(**over):
    args = {'platform': 'openshift', 'default_workload': 'vm-vgpu', 'vgpu_manager': VGM,
            'pull_secret_name': 'vgpu-pull', 'package_manifest': {'status': {'defaultChannel': 'v26.7'}},
            'alm_examples': schema.reference_text('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json'),
            'alm_examples_release': 'v26.7.0', 'alm_examples_source': 'gpu-operator-v26.7.0-csv-alm-examples.json'}
    args.update(over)
    return args


def test_openshift_objects_validate_and_carry_our_settings(monkeypatch):
    res = run_gop(monkeypatch, openshift_args(
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
    res = run_gop(monkeypatch, openshift_args(
        vgpu_manager={'repository': VGM['repository']}, vgpu_manager_image_version='580.82.02'))
    assert not res['failed'], res.get('msg')
    assert res['cluster_policy']['spec']['vgpuManager']['version'] == '580.82.02'
    res = run_gop(monkeypatch, openshift_args(
        vgpu_manager=dict(VGM, version='580.65.06'), vgpu_manager_image_version='580.82.02'))
    assert res['failed'] and '580.65.06' in res['msg'] and '580.82.02' in res['msg']


def test_openshift_without_alm_examples_leaves_the_policy_for_later(monkeypatch):
    # apply mode builds the ClusterPolicy only once the installed CSV can be read
    res = run_gop(monkeypatch, openshift_args(alm_examples=None))
    assert not res['failed'] and res['cluster_policy'] is None and len(res['install_objects']) == 3


def test_unknown_pinned_channel_is_named(monkeypatch):
    res = run_gop(monkeypatch, openshift_args(
        channel='stable', package_manifest={'status': {'channels': [{'name': 'v26.7'}], 'defaultChannel': 'v26.7'}}))
    assert res['failed'] and "'stable'" in res['msg'] and 'gpu_operator_channel' in res['msg']


def test_kubernetes_values_checked_against_the_chart(monkeypatch):
    chart = yaml.safe_load(schema.reference_text('helm', 'gpu-operator-v26.7.0-values.yaml'))
    res = run_gop(monkeypatch, {
        'platform': 'kubernetes', 'default_workload': 'vm-passthrough', 'chart_values': chart,
        'helm_values_extra': {'operator': {'nodeSelector': {'node-role.kubernetes.io/worker': ''}}}})
    assert not res['failed'], res.get('msg')
    assert res['namespace'] == 'gpu-operator' and res['cluster_policy'] is None
    assert [o['kind'] for o in res['install_objects']] == ['Namespace']
    assert res['helm_values']['sandboxWorkloads']['defaultWorkload'] == 'vm-passthrough'
    res = run_gop(monkeypatch, {
        'platform': 'kubernetes', 'chart_values': chart, 'helm_values_extra': {'vfioManager': {'enabeld': True}}})
    assert res['failed'] and 'vfioManager.enabeld' in res['msg']


def test_private_registry_needs_a_pull_secret(monkeypatch):
    res = run_gop(monkeypatch, openshift_args(pull_secret_name=None))
    assert res['failed'] and 'registry.example.com:5000' in res['msg'] and 'gpu_operator_pull_secret' in res['msg']
    res = run_gop(monkeypatch, openshift_args(pull_secret_name=None, registry_public=True))
    assert not res['failed'], res.get('msg')
    assert 'imagePullSecrets' not in res['cluster_policy']['spec']['vgpuManager']


@pytest.mark.parametrize('login, needle', [
    ({'registry': 'quay.io', 'username': 'u', 'password_given': True}, 'logs in to quay.io'),
    ({'registry': 'registry.example.com:5000', 'username': 'u', 'password_given': False},
     'gpu_operator_pull_secret.password'),
    ({'registry': '', 'username': 'u', 'password_given': True}, 'gpu_operator_pull_secret.registry'),
])
def test_registry_login_checked_without_the_password(monkeypatch, login, needle):
    res = run_gop(monkeypatch, openshift_args(registry_login=login))
    assert res['failed'] and needle in res['msg'], res.get('msg')


def test_vgpu_type_no_host_offers_is_named_with_what_was_checked(monkeypatch):
    res = run_gop(monkeypatch, openshift_args(
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
    res = run_nl(monkeypatch, {'hosts': [
        {'host': 'gpu-1', 'groups': ['gpu_container', 'gpu_vm_passthrough']},
        {'host': 'gpu-2', 'groups': ['gpu_vm_vgpu'], 'pool': 'vm-gpu'}]})
    assert res['failed']
    assert 'gpu-1 is in the pools container, vm-passthrough' in res['msg'] and "unknown pool 'vm-gpu'" in res['msg']


def test_a_render_writes_no_node_file_for_a_node_the_cluster_does_not_have(monkeypatch):
    # Argo CD / Flux apply a Node file as create-or-update: for a machine that has not joined it creates a Node no
    # kubelet runs, and OpenShift's machine approver then refuses the real kubelet's client certificate
    # (openshift/cluster-machine-approver pkg/controller/csr_check.go authorizeNodeClientCSR: "node %s already
    # exists, cannot approve")
    hosts = [{'host': 'h1', 'node': 'n1', 'groups': ['gpu_vm_passthrough']},
             {'host': 'h2', 'node': 'n2', 'groups': ['gpu_vm_passthrough']}]
    res = run_nl(monkeypatch, {'hosts': hosts, 'render': True, 'present_nodes': ['n1', 'cp-1']})
    assert not res['failed'], res.get('msg')
    assert [o['metadata']['name'] for o in res['render']] == ['n1'] and res['absent'] == ['n2']
    (warning,) = [w for w in res['warnings'] if 'n2' in w]
    assert 'node n2 (host h2) is not in the cluster: the render writes no Node file for it' in warning
    assert 'node n2 already exists, cannot approve' in warning
    # the names not known (no cluster read): every Node file, and a warning that says so and names the MachineSet
    res = run_nl(monkeypatch, {'hosts': hosts, 'render': True,
                               'present_unread': 'the cluster could not be read: 403'})
    assert [o['metadata']['name'] for o in res['render']] == ['n1', 'n2'] and res['absent'] == []
    assert any('could not check that the nodes exist (the cluster could not be read: 403)' in w
               and 'spec.template.spec.metadata.labels' in w for w in res['warnings'])
    # apply mode never leaves a node out silently: a node missing from the cluster stops the plan
    res = run_nl(monkeypatch, {'hosts': hosts, 'nodes': [{'metadata': {'name': 'n1'}}]})
    assert res['failed'] and 'node n2 is not in the cluster' in res['msg']


def test_a_render_names_the_pool_label_it_cannot_remove_with_the_command(monkeypatch):
    # a host moved from custom pool gpu-a to its own gpu-b: the render sets the new role label but cannot remove the
    # old one, so the node would be in two custom pools, which the Machine Config Operator refuses
    # (openshift/machine-config-operator pkg/helpers/helpers.go GetPoolsForNode: "belongs to 2 custom roles")
    nodes = [{'metadata': {'name': 'n1', 'labels': {'node-role.kubernetes.io/gpu-a': ''}}}]
    res = run_nl(monkeypatch, {
        'hosts': [{'host': 'h1', 'node': 'n1', 'groups': ['gpu_vm_passthrough']}], 'nodes': nodes, 'render': True,
        'present_nodes': ['n1'], 'pool_selector': {'node-role.kubernetes.io/gpu-a': ''},
        'pool_selectors': {'n1': {'node-role.kubernetes.io/gpu-b': ''}}})
    assert not res['failed'], res.get('msg')
    (line,) = res['render_removals']
    assert 'kubectl label node n1 node-role.kubernetes.io/gpu-a-' in line and 'belongs to 2 custom roles' in line
    assert line in res['warnings']
    assert res['render'][0]['metadata']['labels']['node-role.kubernetes.io/gpu-b'] == ''
    assert 'node-role.kubernetes.io/gpu-a' not in res['render'][0]['metadata']['labels']


def test_node_labels_plan_uses_the_default_vgpu_config_and_patches_only_differences(monkeypatch):
    # (each node already carries its owned-labels record, empty: nothing of ours switched off)
    record = {'gpuvirt.provision/owned-labels': ''}
    nodes = [{'metadata': {'name': 'n1', 'labels': {'nvidia.com/gpu.workload.config': 'vm-vgpu'}, 'annotations': record}},
             {'metadata': {'name': 'n2', 'labels': {'nvidia.com/gpu.workload.config': 'vm-passthrough'},
                           'annotations': record}}]
    res = run_nl(monkeypatch, {
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
    res = run_module(monkeypatch, verify_smoke_vm, {'settings': {'resource': 'nvidia.com/NVIDIA_A10-12Q',
                                                                 'image': 'quay.io/containerdisks/fedora:41'}})
    assert not res['failed']
    schema.validate(res['object'])
    assert res['object']['spec']['runStrategy'] == 'Halted'
    res = run_module(monkeypatch, verify_smoke_vm, {'settings': {'resource': '', 'image': 'x/y:1'}})
    assert res['failed'] and 'verify_smoke_vm_resource' in res['msg']


# The GPU Operator's validator on DRA nodes. DRA nodes keep the container workload, so the operator labels them
# nvidia.com/gpu.deploy.operator-validator=true (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0
# gpuStateLabels) and runs nvidia-operator-validator there; its plugin-validation init container waits for
# nvidia.com/gpu or nvidia.com/mig-* capacity and fails without it (cmd/nvidia-validator/main.go@v26.7.0
# Plugin.validate -> validateGPUResource: 30 tries, then "GPU resources are not discovered by the node"), which a
# DRA node never advertises. The operator drops that init container only when devicePlugin is disabled
# (controllers/object_controls.go@v26.7.0 TransformValidatorComponent, case "plugin": !config.DevicePlugin.IsEnabled()).
def test_dra_nodes_turn_the_device_plugin_off_so_the_validator_drops_its_plugin_check(monkeypatch):
    passthrough = {'host': 'pt-1', 'node': 'pt-1', 'pool': 'vm-passthrough'}
    res = run_gop(monkeypatch, openshift_args(dra_nodes=['dra-1'], hosts=[passthrough]))
    assert not res['failed'], res.get('msg')
    spec = res['cluster_policy']['spec']
    schema.validate(res['cluster_policy'], crd_sources=['v26.7.0'])
    assert spec['devicePlugin']['enabled'] is False
    # the rest of NVIDIA's devicePlugin defaults (the alm-examples) stay; the sandbox device plugin is another state
    # (state_manager.go isStateEnabled: "state-sandbox-device-plugin" reads SandboxDevicePlugin, not DevicePlugin)
    alm = json.loads(schema.reference_text('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json'))
    base = [e for e in alm if e['kind'] == 'ClusterPolicy'][0]['spec']['devicePlugin']
    assert {k: v for k, v in spec['devicePlugin'].items() if k != 'enabled'} == \
        {k: v for k, v in base.items() if k != 'enabled'}
    assert spec['sandboxDevicePlugin']['enabled'] is True
    # without DRA nodes NVIDIA's default stays
    res = run_gop(monkeypatch, openshift_args(hosts=[passthrough]))
    assert res['cluster_policy']['spec']['devicePlugin']['enabled'] == base['enabled']
    # Helm: the same field, a key of the chart's values.yaml
    chart = yaml.safe_load(schema.reference_text('helm', 'gpu-operator-v26.7.0-values.yaml'))
    res = run_gop(monkeypatch, {
        'platform': 'kubernetes', 'chart_values': chart, 'dra_nodes': ['dra-1'], 'hosts': [passthrough]})
    assert not res['failed'], res.get('msg')
    assert res['helm_values']['devicePlugin'] == {'enabled': False}


def test_dra_nodes_beside_device_plugin_nodes_are_refused_naming_both(monkeypatch):
    # devicePlugin.enabled false is cluster-wide (TransformValidatorComponent, isStateEnabled "state-device-plugin"):
    # it would take the classic device plugin from the container nodes, and nothing per node skips the check
    ctr = {'host': 'ctr-1', 'node': 'ctr-1', 'pool': 'container'}
    res = run_gop(monkeypatch, openshift_args(dra_nodes=['dra-1'], hosts=[ctr]))
    assert res['failed'], res
    assert 'dra-1' in res['msg'] and 'ctr-1 (pool container)' in res['msg'] and 'gpu_dra' in res['msg'], res['msg']
    # apply mode on OpenShift builds the ClusterPolicy only once OLM installed the operator (no alm_examples in the
    # first call): the refusal comes with that first call, before the Subscription is written
    res = run_gop(monkeypatch, openshift_args(dra_nodes=['dra-1'], hosts=[ctr], alm_examples=None))
    assert res['failed'] and 'ctr-1 (pool container)' in res['msg'], res
    chart = yaml.safe_load(schema.reference_text('helm', 'gpu-operator-v26.7.0-values.yaml'))
    res = run_gop(monkeypatch, {
        'platform': 'kubernetes', 'chart_values': chart, 'dra_nodes': ['dra-1'],
        'helm_values_extra': {'devicePlugin': {'enabled': True}}})
    assert res['failed'] and 'devicePlugin.enabled is True in gpu_operator_helm_values_extra' in res['msg'], res


# The vGPU Manager's OS tag is the cluster's, not the node's: the operator lists the GPU nodes with Limit(1) and
# takes that one node's NFD os_release ID and VERSION_ID (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0
# getGPUNodeOSInfo, from init), then appends it to vgpuManager.version for every vGPU Manager DaemonSet
# (controllers/object_controls.go@v26.7.0 resolveDriverTag: "%s-%s", image, n.gpuNodeOSTag).
def test_a_vgpu_fleet_on_two_os_tags_is_refused_naming_the_tags_and_hosts(monkeypatch):
    os_tags = {'vgpu-1': 'rhcos4.18', 'vgpu-2': 'rhcos4.19', 'ctr-1': 'rhcos4.18'}
    res = run_gop(monkeypatch, openshift_args(os_tags=os_tags))
    assert res['failed'], res
    assert 'rhcos4.18: ctr-1, vgpu-1' in res['msg'] and 'rhcos4.19: vgpu-2' in res['msg'], res['msg']
    # every GPU node counts (getGPUNodeOSInfo selects nvidia.com/gpu.present=true, not the vGPU nodes)
    res = run_gop(monkeypatch, openshift_args(
        os_tags={'vgpu-1': 'ubuntu22.04', 'ctr-1': 'ubuntu24.04'}))
    assert res['failed'] and 'ubuntu24.04: ctr-1' in res['msg'], res
    # one tag, hosts without the fact, or no vGPU Manager: nothing to refuse
    for over in ({'os_tags': {'vgpu-1': 'rhcos4.18', 'vgpu-2': 'rhcos4.18', 'ctr-1': None}},
                 {'os_tags': os_tags, 'vgpu_manager': None, 'default_workload': 'container'}):
        res = run_gop(monkeypatch, openshift_args(**over))
        assert not res['failed'], res.get('msg')
