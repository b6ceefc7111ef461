# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's own DRA stack (GPUCluster, v26.7.0): which stack serves a fleet, and the objects built from
the CSV's alm-examples, checked against the CSV, the stand-in CRD written from the Go types and the NVIDIADriver
CRD of the reference set."""
from __future__ import annotations

import json
import os
import sys

import jsonschema
import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..', '..'))
sys.path.insert(0, os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import schema  # noqa: E402
import stand_in_gpucluster  # noqa: E402
# imported when the file is collected, not inside a test (a test before it in the same process may have
# installed Ansible's collection loader, through which a first import of a collection submodule fails)
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra

CSV = 'gpu-operator-v26.7.0-bundle-gpu-operator-certified.clusterserviceversion.yaml'
ALM = 'gpu-operator-v26.7.0-csv-alm-examples.json'


def alm_examples():
    with open(os.path.join(schema.reference_dir(), 'olm', ALM), encoding='utf-8') as handle:
        return json.load(handle)


def csv():
    with open(os.path.join(schema.reference_dir(), 'olm', CSV), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def stand_in_validate(obj):
    """Strict, as schema.validate checks the real CRDs: a field the Go types do not have is an error."""
    strict = schema._strict(stand_in_gpucluster.SCHEMA)  # pylint: disable=protected-access
    errors = sorted(e.message for e in jsonschema.Draft7Validator(strict).iter_errors(obj))
    assert not errors, errors


# --- the evidence the decision rests on, pinned ---------------------------------------------------------------

def test_the_v26_7_0_csv_owns_the_gpucluster_and_its_alm_examples_carry_one():
    # GPU Operator v26.7.0 bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml: spec.customresource
    # definitions.owned lists gpuclusters.nvidia.com (v1alpha1), and the alm-examples annotation holds a GPUCluster
    # named gpu-cluster (the CRD's XValidation pins that name) with a draDriver image of dra-driver-nvidia-gpu.
    owned = {(c['name'], c['version']) for c in csv()['spec']['customresourcedefinitions']['owned']}
    assert ('gpuclusters.nvidia.com', 'v1alpha1') in owned
    assert ('nvidiadrivers.nvidia.com', 'v1alpha1') in owned
    example = gc.alm_example(alm_examples(), 'GPUCluster')
    assert example['metadata']['name'] == gc.NAME == stand_in_gpucluster.SINGLETON_NAME
    assert example['spec']['draDriver']['image'] == gc.IMAGE
    # the example turns computeDomains on; the passthrough path turns it off (build_gpu_cluster)
    assert example['spec']['draDriver']['computeDomains'] == {'enabled': True}


def test_the_stand_in_crd_takes_the_upstream_example_and_refuses_what_the_go_types_refuse():
    # the CSV's own GPUCluster example must be valid against the stand-in written from gpucluster_types.go
    stand_in_validate(gc.alm_example(alm_examples(), 'GPUCluster'))
    bad = gc.alm_example(alm_examples(), 'GPUCluster')
    bad['spec']['draDriver']['image'] = 'nvcr.io/nvidia/dra-driver'   # kubebuilder Pattern ^[a-zA-Z0-9\-]+$
    with pytest.raises(AssertionError):
        stand_in_validate(bad)
    typo = gc.alm_example(alm_examples(), 'GPUCluster')
    typo['spec']['draDriver']['featureGate'] = {'PassthroughSupport': True}  # not a field: pruned by the server
    with pytest.raises(AssertionError):
        stand_in_validate(typo)


# --- which stack serves the fleet -----------------------------------------------------------------------------

def test_openshift_with_only_dra_gpu_hosts_takes_the_gpucluster():
    stack, reason = gc.dra_stack(platform.traits('openshift'), ['dra-1', 'dra-2'], [])
    assert stack == gc.STACK_GPUCLUSTER, reason


def test_a_mixed_openshift_fleet_keeps_the_chart_because_v26_7_0_refuses_a_gpucluster_beside_a_clusterpolicy():
    # GPU Operator v26.7.0 controllers/gpucluster_controller.go validatePrerequisites: "a ClusterPolicy CR and
    # GPUCluster CR may not exist at the same time"; controllers/clusterpolicy_controller.go Reconcile: "ClusterPolicy
    # and GPUCluster cannot co-exist". The container / vm-passthrough / vm-vgpu nodes need the ClusterPolicy.
    stack, reason = gc.dra_stack(platform.traits('openshift'), ['dra-1'], ['ctr-1', 'vgpu-1'])
    assert stack == gc.STACK_HELM
    assert 'ctr-1, vgpu-1' in reason
    assert 'validatePrerequisites' in reason and 'cannot co-exist' in reason
    with pytest.raises(ManifestError, match='dra_driver_stack is gpucluster.*ClusterPolicy.*set dra_driver_stack'):
        gc.dra_stack(platform.traits('openshift'), ['dra-1'], ['ctr-1'], 'gpucluster')


def test_kubernetes_keeps_the_chart_and_refuses_the_gpucluster():
    assert gc.dra_stack(platform.traits('kubernetes'), ['dra-1'], [])[0] == gc.STACK_HELM
    with pytest.raises(ManifestError, match='Helm chart on kubernetes'):
        gc.dra_stack(platform.traits('kubernetes'), ['dra-1'], [], 'gpucluster')


def test_helm_can_be_asked_for_and_anything_else_is_refused():
    assert gc.dra_stack(platform.traits('openshift'), ['dra-1'], [], 'helm')[0] == gc.STACK_HELM
    with pytest.raises(ManifestError, match="dra_driver_stack is 'olm'"):
        gc.dra_stack(platform.traits('openshift'), ['dra-1'], [], 'olm')


def test_the_gpucluster_path_takes_only_the_operators_driver():
    gc.check_driver_mode(gc.STACK_GPUCLUSTER, 'operator')
    gc.check_driver_mode(gc.STACK_HELM, 'host')
    with pytest.raises(ManifestError, match='driver mode is host.*NVIDIADriver'):
        gc.check_driver_mode(gc.STACK_GPUCLUSTER, 'host')


# --- the objects ----------------------------------------------------------------------------------------------

def test_the_gpucluster_pins_the_driver_turns_passthrough_on_and_compute_domains_off():
    obj = gc.build_gpu_cluster(alm_examples(), release='v26.7.0')
    assert obj['apiVersion'] == 'nvidia.com/v1alpha1' and obj['kind'] == 'GPUCluster'
    assert obj['metadata'] == {'name': 'gpu-cluster'}
    dra = obj['spec']['draDriver']
    # v26.7.0 manifests/state-dra-driver/0500_daemonset.yaml: FEATURE_GATES from draDriver.featureGates, and
    # PassthroughSupport true mounts /sys, /proc and /lib/modules into the gpus container (vfio rebinding)
    assert dra['featureGates'] == {'PassthroughSupport': True, 'DeviceMetadata': True}
    assert dra['computeDomains'] == {'enabled': False}
    # the driver the v26.7.0 release lists, not its alm-examples' v0.4.1: the CSV's spec.relatedImages
    # nvidia-dra-driver-image and DRA_DRIVER_IMAGE (nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0@sha256:9b46...),
    # deployments/gpu-operator/values.yaml draDriver.version v0.5.0
    assert (dra['repository'], dra['image'], dra['version']) == ('nvcr.io/nvidia', 'dra-driver-nvidia-gpu', 'v0.5.0')
    # NVIDIA's other defaults stay as the CSV ships them
    assert obj['spec']['dcgmExporter'] == {'enabled': True}
    stand_in_validate(obj)


def test_the_nvidia_driver_is_the_csvs_and_valid_against_its_crd():
    obj = gc.build_nvidia_driver(alm_examples())
    example = gc.alm_example(alm_examples(), 'NVIDIADriver')
    # the CSV's example, with spec.default written out as the v26.7.0 CRD defaults it (required, default false),
    # and the collection's upgrade policy (test_the_nvidia_driver_gets_the_collections_upgrade_policy)
    example['spec']['default'] = False
    example['spec']['upgradePolicy'].update(autoUpgrade=False, maxParallelUpgrades=1, maxUnavailable='25%')
    assert obj == example
    assert obj['spec']['driverType'] == 'gpu' and obj['spec']['nodeSelector'] == {}
    schema.validate(obj, crd_sources=['v26.7.0'])


def test_only_the_name_of_the_example_nvidia_driver_metadata_is_kept():
    # an alm-examples file (inventory or CSV) with a sync hook, owners or finalizers on its NVIDIADriver: the
    # rendered object carries none of them (they would steer Argo CD or block deletion)
    examples = alm_examples()
    for entry in examples:
        if entry['kind'] == 'NVIDIADriver':
            entry['metadata'].update({'annotations': {'argocd.argoproj.io/hook': 'PreSync'},
                                      'ownerReferences': [{'kind': 'X'}], 'finalizers': ['example.com/block'],
                                      'namespace': 'elsewhere'})
    assert gc.build_nvidia_driver(examples)['metadata'] == {'name': 'gpu-driver'}
    for entry in examples:
        if entry['kind'] == 'NVIDIADriver':
            entry['apiVersion'] = 'nvidia.com/v2'
    with pytest.raises(ManifestError, match="NVIDIADriver is 'nvidia.com/v2'"):
        gc.build_nvidia_driver(examples)


def test_alm_examples_without_a_gpucluster_are_refused_naming_the_release_needed():
    older = [e for e in alm_examples() if e['kind'] != 'GPUCluster']
    with pytest.raises(ManifestError, match='no GPUCluster.*v26.7.0 or later'):
        gc.build_gpu_cluster(older, release='v26.7.0')


def _bundle_related_images():
    with open(os.path.join(schema.reference_dir(), 'olm',
                           'gpu-operator-v26.7.0-bundle-gpu-operator-certified.clusterserviceversion.yaml'),
              encoding='utf-8') as handle:
        return yaml.safe_load(handle)['spec']['relatedImages']


def test_the_installed_csvs_related_images_name_the_driver():
    # the v26.7.0 bundle's own list (reference copy): the image a disconnected cluster mirrors
    assert gc.related_dra_image(_bundle_related_images()) == 'v0.5.0'
    obj = gc.build_gpu_cluster(alm_examples(), related_images=[
        {'name': 'nvidia-dra-driver-image', 'image': 'nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.1@sha256:' + '0' * 64}])
    assert obj['spec']['draDriver']['version'] == 'v0.5.1'
    # a version given wins over the list
    assert gc.build_gpu_cluster(alm_examples(), 'v0.4.1', 'v26.7.0')['spec']['draDriver']['version'] == 'v0.4.1'


@pytest.mark.parametrize('version', ['0.3.0', 'latest', '0.4.1\n--set x'])
def test_a_driver_without_passthrough_or_out_of_grammar_is_refused(version):
    with pytest.raises(ManifestError, match='gpu_operator_dra_driver_version'):
        gc.build_gpu_cluster(alm_examples(), version, 'v26.7.0')


def test_a_release_whose_driver_is_not_known_is_refused_naming_the_variable():
    with pytest.raises(ManifestError, match='GPU Operator v27.1.0 is not known: set gpu_operator_dra_driver_version'):
        gc.build_gpu_cluster(alm_examples(), release='v27.1.0')


# --- what the GPUCluster path changes in the other phases -----------------------------------------------------

OPERANDS = ('nvidia.com/gpu.deploy.device-plugin', 'nvidia.com/gpu.deploy.dcgm', 'nvidia.com/gpu.deploy.dcgm-exporter')


def test_gpucluster_dra_nodes_get_no_operand_off_labels_and_a_leftover_false_goes():
    # v26.7.0 controllers/nodelabeling_controller.go updateGPUStateLabels: with a GPUCluster the operator deletes
    # devicePluginOnlyStateLabelKeys() (controllers/state_manager.go: the ClusterPolicy stack's deploy labels,
    # device-plugin, dcgm and dcgm-exporter among them) from every GPU node, whatever their value
    helm = nl.desired_labels('dra')
    assert {key: helm[key] for key in OPERANDS} == {key: 'false' for key in OPERANDS}
    ours = nl.desired_labels('dra', dra_stack='gpucluster')
    for key in OPERANDS:
        assert isinstance(ours[key], nl.RemoveIf) and ours[key] == nl.RemoveIf('false'), (key, ours[key])
    patches, _report = nl.plan([{'node': 'dra-1', 'pool': 'dra'}],
                               [{'metadata': {'name': 'dra-1', 'labels': {OPERANDS[0]: 'false', OPERANDS[1]: 'true'}}}],
                               [], dra_stack='gpucluster')
    labels = patches[0]['metadata']['labels']
    assert labels[OPERANDS[0]] is None           # our leftover false goes
    assert OPERANDS[1] not in labels             # a value that is not ours is left to the operator


def test_without_a_clusterpolicy_the_device_plugin_label_does_not_block_a_dra_node():
    node = {'metadata': {'name': 'dra-1', 'labels': {'nvidia.com/gpu.present': 'true'}}, 'status': {}}
    # beside a ClusterPolicy the operator deploys the classic plugin on a container-workload GPU node
    # (controllers/state_manager.go gpuStateLabels); with a GPUCluster nothing deploys it
    assert dra.classic_plugin_conflicts([node], ['dra-1'])
    assert dra.classic_plugin_conflicts([node], ['dra-1'], cluster_policy=False) == []
    running = [{'metadata': {'name': 'nvidia-device-plugin-x'}, 'spec': {'nodeName': 'dra-1'}}]
    assert dra.classic_plugin_conflicts([node], ['dra-1'], running, cluster_policy=False)


@pytest.mark.parametrize('kind', ['GPUCluster', 'NVIDIADriver'])
def test_an_example_of_another_api_version_is_refused_by_the_one_lookup(kind):
    # both builders edit the spec by the v1alpha1 schema (the stand-in CRD); one lookup checks the version for both
    examples = alm_examples()
    for entry in examples:
        if entry['kind'] == kind:
            entry['apiVersion'] = 'nvidia.com/v1beta1'
    with pytest.raises(ManifestError, match="%s is 'nvidia.com/v1beta1', expected nvidia.com/v1alpha1" % kind):
        gc.alm_example(examples, kind)


def test_the_nvidia_driver_gets_the_collections_upgrade_policy():
    # the CSV's alm-examples NVIDIADriver ships upgradePolicy.autoUpgrade true, and the v26.7.0 NVIDIADriver CRD
    # defaults it to true: the operator's upgrade controller would replace the driver pods by itself
    example = gc.alm_example(alm_examples(), 'NVIDIADriver')
    assert example['spec']['upgradePolicy']['autoUpgrade'] is True
    up = gc.build_nvidia_driver(alm_examples())['spec']['upgradePolicy']
    assert (up['autoUpgrade'], up['maxParallelUpgrades'], up['maxUnavailable']) == (False, 1, '25%')
    # NVIDIA's other keys (ignored with autoUpgrade false, the CRD's description) stay as shipped
    assert up['drain'] == example['spec']['upgradePolicy']['drain']
    obj = gc.build_nvidia_driver(alm_examples(), {'auto_upgrade': True, 'max_parallel_upgrades': 2})
    assert obj['spec']['upgradePolicy']['autoUpgrade'] is True and obj['spec']['upgradePolicy']['maxParallelUpgrades'] == 2
    schema.validate(obj, crd_sources=['v26.7.0'])
    with pytest.raises(ManifestError, match='every node at once'):
        gc.build_nvidia_driver(alm_examples(), {'auto_upgrade': True, 'max_parallel_upgrades': 0})
