# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU Operator builders: OLM objects, ClusterPolicy from the real alm-examples, Helm values vs the real chart."""
from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

VGM = {'repository': 'registry.example.com:5000/nvidia', 'version': '580.82.02'}


def alm_text():
    return schema.reference_text('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json')


def chart_defaults():
    return yaml.safe_load(schema.reference_text('helm', 'gpu-operator-v26.7.0-values.yaml'))


def leaf_paths(node, path=()):
    if isinstance(node, dict) and node:
        out = set()
        for key, value in node.items():
            out |= leaf_paths(value, path + (key,))
        return out
    return {path}


def changed_paths(base, new, path=()):
    """Every leaf path where ``new`` differs from ``base`` (independent of the builder's merge)."""
    if isinstance(base, dict) or isinstance(new, dict):
        if not (isinstance(base, (dict, type(None))) and isinstance(new, (dict, type(None)))):
            return {path}
        base, new, out = base or {}, new or {}, set()
        for key in set(base) | set(new):
            out |= changed_paths(base.get(key), new.get(key), path + (key,))
        return out
    return set() if base == new else {path}


def test_vgpu_cluster_policy_is_the_alm_base_with_only_our_fields():
    overlay = gop.settings(default_workload='vm-vgpu', vgpu_manager=VGM,
                           vgpu_device_manager_config={'name': 'custom-vgpu', 'default': 'A10-12Q'},
                           pull_secret_name='vgpu-pull')
    cp = gop.build_cluster_policy(alm_text(), overlay)
    schema.validate(cp, crd_sources=['v26.7.0'])
    base = [e for e in json.loads(alm_text()) if e['kind'] == 'ClusterPolicy'][0]
    assert cp['metadata']['name'] == 'gpu-cluster-policy'
    allowed = {('spec', 'sandboxWorkloads', 'enabled'), ('spec', 'sandboxWorkloads', 'defaultWorkload'),
               ('spec', 'vgpuManager', 'enabled'), ('spec', 'vgpuManager', 'repository'),
               ('spec', 'vgpuManager', 'image'), ('spec', 'vgpuManager', 'version'),
               ('spec', 'vgpuManager', 'imagePullSecrets'), ('spec', 'vgpuDeviceManager', 'config', 'name'),
               ('spec', 'vgpuDeviceManager', 'config', 'default')}
    changed = changed_paths(base, cp)
    assert changed and changed <= allowed, changed - allowed
    assert cp['spec']['vgpuManager']['imagePullSecrets'] == ['vgpu-pull']
    assert cp['spec']['sandboxWorkloads'] == {'enabled': True, 'defaultWorkload': 'vm-vgpu', 'mode': 'kubevirt'}
    # untouched operands keep NVIDIA's defaults
    assert cp['spec']['driver'] == base['spec']['driver']


def test_passthrough_policy_disables_vgpu_operands():
    cp = gop.build_cluster_policy(json.loads(alm_text()), gop.settings(default_workload='vm-passthrough'))
    schema.validate(cp, crd_sources=['v26.7.0'])
    assert cp['spec']['vgpuManager'] == {'enabled': False}
    assert cp['spec']['vgpuDeviceManager']['enabled'] is False
    assert cp['spec']['vfioManager'] == {'enabled': True}


def test_helm_values_keys_exist_in_the_chart():
    overlay = gop.settings(default_workload='vm-vgpu', vgpu_manager=VGM,
                           vgpu_device_manager_config={'name': 'custom-vgpu'}, pull_secret_name='vgpu-pull')
    values = gop.helm_values(overlay, extra={'operator': {'nodeSelector': {'x': 'y'}}})
    gop.check_values_keys(values, chart_defaults())
    assert leaf_paths(values) >= {('vgpuManager', 'repository'), ('vgpuDeviceManager', 'config', 'default')}
    with pytest.raises(gop.ManifestError, match='vgpuManager.repo '):
        gop.check_values_keys({'vgpuManager': {'repo': 'x'}}, chart_defaults())


def test_olm_objects_validate_and_channel_comes_from_the_package_manifest():
    pm = {'status': {'defaultChannel': 'v26.7', 'channels': [{'name': 'v26.7'}, {'name': 'v25.10'}]}}
    assert gop.default_channel(pm) == 'v26.7'
    assert gop.default_channel(pm, pinned='v25.10') == 'v25.10'
    with pytest.raises(gop.ManifestError, match="'stable'"):
        gop.default_channel(pm, pinned='stable')
    with pytest.raises(gop.ManifestError, match='gpu_operator_channel'):
        gop.default_channel(None)
    openshift = platform.traits('openshift')
    ns = gop.build_namespace(openshift['gpu_operator_namespace'], openshift['namespace_labels'])
    sub = gop.build_subscription(ns['metadata']['name'], 'v26.7', 'Manual')
    for obj in (ns, gop.build_operator_group('nvidia-gpu-operator'), sub):
        schema.validate(obj)
    assert sub['spec'] == {'channel': 'v26.7', 'installPlanApproval': 'Manual', 'name': 'gpu-operator-certified',
                           'source': 'certified-operators', 'sourceNamespace': 'openshift-marketplace'}
    with pytest.raises(gop.ManifestError, match='installPlanApproval'):
        gop.build_subscription('ns', 'v26.7', 'manual')


def test_bad_settings_and_missing_pull_secret_are_named():
    with pytest.raises(gop.ManifestError, match='version'):
        gop.settings(default_workload='vm-vgpu', vgpu_manager={'repository': 'r.example.com/x'})
    with pytest.raises(gop.ManifestError, match="'vm-gpu'"):
        gop.settings(default_workload='vm-gpu')
    with pytest.raises(gop.ManifestError, match='sandbox'):
        gop.settings(sandbox_enabled=False, default_workload='vm-passthrough')
    with pytest.raises(gop.ManifestError, match=r'registry.example.com:5000.*gpu_operator_pull_secret'):
        gop.check_pull_secret(VGM, None)
    gop.check_pull_secret(VGM, None, public_registry=True)
    gop.check_pull_secret(VGM, 'vgpu-pull')
    assert gop.registry_of('quay.io/org/img') == 'quay.io'
    assert gop.registry_of('library/x') == 'docker.io'


def test_alm_examples_without_cluster_policy_is_refused():
    with pytest.raises(gop.ManifestError, match='NVIDIADriver'):
        gop.alm_cluster_policy([{'kind': 'NVIDIADriver'}])
    with pytest.raises(gop.ManifestError, match='not JSON'):
        gop.alm_cluster_policy('{oops')


def test_csv_wait_states():
    assert gop.csv_phase({}, None)[0] is False
    sub = {'status': {'installedCSV': 'gpu-operator-certified.v26.7.0'}}
    assert gop.csv_phase(sub, {'status': {'phase': 'Installing'}}) == (
        False, 'CSV gpu-operator-certified.v26.7.0 is Installing')
    assert gop.csv_phase(sub, {'status': {'phase': 'Succeeded'}})[0] is True
    with pytest.raises(gop.ManifestError, match='failed'):
        gop.csv_phase(sub, {'status': {'phase': 'Failed', 'message': 'boom'}})


def test_vgpu_manager_version_is_the_driver_version_alone():
    overlay = gop.settings(default_workload='vm-vgpu', vgpu_manager=VGM, pull_secret_name='vgpu-pull')
    cp = gop.build_cluster_policy(alm_text(), overlay)
    schema.validate(cp, crd_sources=['v26.7.0'])
    # NVIDIA, "NVIDIA GPU Operator with OpenShift Virtualization", section "Creating a ClusterPolicy for the GPU
    # Operator": "vgpuManager.version=<driver version>"; the image is tagged <version>-<os tag> in "Building the vGPU
    # Manager image" and NVIDIA/gpu-operator controllers/object_controls.go resolveDriverTag appends
    # "-" + gpuNodeOSTag to the version itself.
    assert cp['spec']['vgpuManager']['version'] == '580.82.02'


@pytest.mark.parametrize('tagged', ['580.82.02-rhcos4.18', '580.82.02-ubuntu22.04', '550.90.05-rhel9'])
def test_vgpu_manager_version_with_an_os_tag_is_refused_naming_the_fix(tagged):
    # NVIDIA/gpu-operator controllers/object_controls.go resolveDriverTag: image = "<repo>/<image>:<version>" then
    # "-" + gpuNodeOSTag, so a version already ending in an OS tag names a tag that is never pushed.
    with pytest.raises(gop.ManifestError) as err:
        gop.settings(default_workload='vm-vgpu', vgpu_manager=dict(VGM, version=tagged), pull_secret_name='p')
    assert tagged in str(err.value) and 'set it to %s' % tagged.split('-')[0] in str(err.value)


def test_vgpu_manager_version_accepts_a_digest():
    # resolveDriverTag appends no OS tag when the image holds "sha256:" (NVIDIA/gpu-operator
    # controllers/object_controls.go).
    digest = 'sha256:' + 'a' * 64
    overlay = gop.settings(vgpu_manager=dict(VGM, version=digest), pull_secret_name='p')
    assert overlay['vgpuManager']['version'] == digest


def test_nfd_operator_objects_validate_and_follow_red_hat_s_package():
    objs = gop.build_nfd_install()
    for obj in objs:
        schema.validate(obj)
    # NVIDIA, "Installing the Node Feature Discovery (NFD) Operator"
    # (https://docs.nvidia.com/datacenter/cloud-native/openshift/latest/install-nfd.html): NFD is a prerequisite of
    # the GPU Operator on OpenShift, from Red Hat's OperatorHub catalog, running in openshift-nfd.
    assert [o['kind'] for o in objs] == ['Namespace', 'OperatorGroup', 'Subscription']
    assert objs[2]['spec'] == {'channel': 'stable', 'installPlanApproval': 'Automatic', 'name': 'nfd',
                               'source': 'redhat-operators', 'sourceNamespace': 'openshift-marketplace'}
    assert {o['metadata'].get('namespace', o['metadata']['name']) for o in objs} == {'openshift-nfd'}


def test_alm_examples_release_must_be_the_channels():
    # channel v<major>.<minor> carries the CSVs v<major>.<minor>.<patch> (NVIDIA, "Installing the NVIDIA GPU
    # Operator" on OpenShift); without a PackageManifest naming the CSV, the file's release decides
    gop.check_alm_examples_release('v26.7', 'v26.7.0', 'f.json')
    gop.check_alm_examples_release('v26.7', '26.7.1', 'f.json')
    with pytest.raises(gop.ManifestError, match=r'f.json are from release v26.7.0, whose channel is v26.7, but the '
                                                r'Subscription follows channel v25.10'):
        gop.check_alm_examples_release('v25.10', 'v26.7.0', 'f.json')
    with pytest.raises(gop.ManifestError, match='gpu_operator_alm_examples_release'):
        gop.check_alm_examples_release('v26.7', None, 'f.json')
    with pytest.raises(gop.ManifestError, match="'v26.7\\\\n' is not a release"):
        gop.check_alm_examples_release('v26.7', 'v26.7\n', 'f.json')


def test_nfd_instance_is_checked_and_placed_in_openshift_nfd():
    nfd = {'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery', 'metadata': {'name': 'nfd-instance'},
           'spec': {'operand': {'image': 'registry.example.com/nfd:v4.18'}}}
    assert gop.build_nfd_instance(nfd)['metadata'] == {'name': 'nfd-instance', 'namespace': 'openshift-nfd'}
    assert gop.build_nfd_instance({}) is None
    for bad, needle in ((dict(nfd, kind='ConfigMap'), "kind 'ConfigMap'"),
                        (dict(nfd, metadata={'name': '../x'}), "'../x' is not a DNS subdomain"),
                        (dict(nfd, metadata={'name': 'n', 'namespace': 'default'}), "namespace 'default'")):
        with pytest.raises(gop.ManifestError, match=needle):
            gop.build_nfd_instance(bad)


# One source of truth for the vGPU Manager version: the vgpu_manager_image role pushes <version>-<os tag> (NVIDIA,
# "NVIDIA GPU Operator with OpenShift Virtualization", "Building the vGPU Manager image": ${VERSION}-${OS_TAG}) and
# the ClusterPolicy carries <version> (same guide, "Creating a ClusterPolicy for the GPU Operator":
# "vgpuManager.version=<driver version>"; NVIDIA/gpu-operator controllers/object_controls.go resolveDriverTag appends
# the OS tag), so both must be the same driver version.
def test_vgpu_manager_version_comes_from_the_image_version_when_unset():
    vgm = gop.resolve_vgpu_manager({'repository': VGM['repository']}, '580.82.02')
    overlay = gop.settings(default_workload='vm-vgpu', vgpu_manager=vgm, pull_secret_name='p')
    assert overlay['vgpuManager']['version'] == '580.82.02'
    assert gop.helm_values(overlay)['vgpuManager']['version'] == '580.82.02'
    # the same version in both places is fine; nothing to take from an empty image version
    assert gop.resolve_vgpu_manager(VGM, '580.82.02') == VGM
    assert gop.resolve_vgpu_manager(VGM, '') == VGM and gop.resolve_vgpu_manager(VGM, None) == VGM
    # no vGPU Manager wanted: the image version does not turn one on
    assert not gop.resolve_vgpu_manager({}, '580.82.02')


def test_vgpu_manager_version_differing_from_the_image_version_is_refused_naming_both():
    with pytest.raises(gop.ManifestError) as err:
        gop.resolve_vgpu_manager(dict(VGM, version='580.65.06'), '580.82.02')
    msg = str(err.value)
    assert "gpu_operator_vgpu_manager.version is '580.65.06'" in msg
    assert "vgpu_manager_image_version is '580.82.02'" in msg and 'remove gpu_operator_vgpu_manager.version' in msg


def test_an_image_version_with_an_os_tag_is_refused_under_its_own_name():
    with pytest.raises(gop.ManifestError, match="vgpu_manager_image_version is '580.82.02-rhcos4.18'"):
        gop.resolve_vgpu_manager({'repository': VGM['repository']}, '580.82.02-rhcos4.18')


@pytest.mark.parametrize('call, needle', [
    (lambda: gop.build_namespace('GPU_Operator', False), "gpu_operator_namespace: 'GPU_Operator' is not valid"),
    (lambda: gop.build_namespace('gpu-operator\n--post-renderer', False), 'gpu_operator_namespace'),
    (lambda: gop.settings(vgpu_manager=dict(VGM, repository='Registry.example.com/NVIDIA')),
     'gpu_operator_vgpu_manager.repository'),
    (lambda: gop.settings(vgpu_manager=dict(VGM, repository='nvidia')), 'gpu_operator_vgpu_manager.repository'),
    (lambda: gop.settings(vgpu_manager=dict(VGM, image='vgpu manager')), 'gpu_operator_vgpu_manager.image'),
])
def test_names_that_reach_the_cluster_or_helm_are_checked_against_their_grammar(call, needle):
    with pytest.raises(gop.ManifestError, match=needle):
        call()


def test_driver_manager_is_told_the_dra_kubelet_plugin_label_when_it_manages_the_driver_on_dra_nodes():
    # NVIDIA, "DRA Driver for NVIDIA GPUs" (GPU Operator docs), "Known Issues": the driver manager will not evict
    # the DRA kubelet plugin unless the DRA nodes' label is passed in driver.manager.env; its install step sets
    # NODE_LABEL_FOR_GPU_POD_EVICTION=nvidia.com/dra-kubelet-plugin. k8s-driver-manager
    # cmd/driver-manager/main.go@v0.12.0 reads that env (flag node-label-for-gpu-pod-eviction) and pauses the label
    # in evictAllGPUOperatorComponents; gpu-operator v26.7.0 deployments/gpu-operator/values.yaml: driver.manager.env
    # defaults to [] and driver.enabled to true.
    env = {'name': 'NODE_LABEL_FOR_GPU_POD_EVICTION', 'value': 'nvidia.com/dra-kubelet-plugin'}
    values = gop.with_dra_eviction(gop.helm_values(gop.settings()), ['dra-1'], 'gpu_operator_helm_values_extra')
    assert values['driver']['manager']['env'] == [env]
    # ClusterPolicy: the same field under spec; entries the alm-examples carry stay
    spec = {'driver': {'enabled': True, 'manager': {'env': [{'name': 'ENABLE_AUTO_DRAIN', 'value': 'false'}]}}}
    out = gop.with_dra_eviction(spec, ['dra-1'], "the CSV's alm-examples")
    assert out['driver']['manager']['env'] == [{'name': 'ENABLE_AUTO_DRAIN', 'value': 'false'}, env]
    assert spec['driver']['manager']['env'] == [{'name': 'ENABLE_AUTO_DRAIN', 'value': 'false'}]
    # idempotent: already there, nothing added
    assert gop.with_dra_eviction(out, ['dra-1'], 'x') == out
    # no DRA node, or the operator's driver off (a host driver: no driver manager runs): unchanged
    assert gop.with_dra_eviction(spec, [], 'x') == spec
    off = {'driver': {'enabled': False}}
    assert gop.with_dra_eviction(off, ['dra-1'], 'x') == off
    # another label would leave the plugin on the node while its driver is unloaded
    refusal = r"gpu_operator_helm_values_extra\) sets NODE_LABEL_FOR_GPU_POD_EVICTION='pool'.*dra-1"
    with pytest.raises(gop.ManifestError, match=refusal):
        gop.with_dra_eviction({'driver': {'manager': {'env': [{'name': 'NODE_LABEL_FOR_GPU_POD_EVICTION',
                                                               'value': 'pool'}]}}},
                              ['dra-1'], 'gpu_operator_helm_values_extra')


def test_nfd_instance_is_required_for_a_render_that_installs_nfd():
    # NVIDIA, "Installing the Node Feature Discovery (NFD) Operator" (OpenShift guide): after installing the
    # operator, create a NodeFeatureDiscovery; NFD then labels GPU nodes feature.node.kubernetes.io/pci-10de.present,
    # which the GPU Operator selects nodes on (shared seeds, gpu-operator-complete-guide, "Node Feature Discovery").
    with pytest.raises(gop.ManifestError, match='gpu_operator_nfd_instance is empty.*pci-10de.*alm-examples'):
        gop.build_nfd_instance({}, required=True)
    with pytest.raises(gop.ManifestError, match='gpu_operator_nfd_instance'):
        gop.build_nfd_instance(None, required=True)
    assert gop.build_nfd_instance(None) is None  # apply mode: the installed CSV's example is used
