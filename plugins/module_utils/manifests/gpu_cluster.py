# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's own DRA stack (``GPUCluster``, nvidia.com/v1alpha1, GPU Operator v26.7.0+) and which DRA
stack serves a fleet: the GPUCluster (through the OLM-installed operator) or the dra-driver-nvidia-gpu Helm chart.
Pure Python.

What the v26.7.0 code does, and so what this module decides (docs/pools/dra.md, "The GPU Operator's DRA stack"):

* ``api/nvidia/v1alpha1/gpucluster_types.go`` (GPUClusterSpec): the DRA stack "does not manage the NVIDIA driver or
  the device-plugin; the driver is installed separately (host-installed or via an NVIDIADriver CR)". Its
  ``draDriver.featureGates`` map becomes the kubelet plugin's FEATURE_GATES, and ``PassthroughSupport: true`` mounts
  /sys, /proc and /lib/modules into the ``gpus`` container (``manifests/state-dra-driver/0500_daemonset.yaml``);
  the ``vfio.gpu.nvidia.com`` DeviceClass is always rendered (``0430_deviceclass-vfio-gpu.yaml``). So the
  KubeVirt passthrough path is served.
* ``controllers/gpucluster_controller.go`` (validatePrerequisites): "a ClusterPolicy CR and GPUCluster CR may not
  exist at the same time" (the GPUCluster stays notReady); ``controllers/clusterpolicy_controller.go`` (Reconcile):
  "ClusterPolicy and GPUCluster cannot co-exist" (the ClusterPolicy goes notReady); ``controllers/
  nodelabeling_controller.go`` (Reconcile) stops labelling nodes while both exist. The container, vm-passthrough
  and vm-vgpu pools need the ClusterPolicy, so a fleet with any of them keeps the Helm chart.
* Node selection is not configurable ("Scheduling is opinionated and not configurable here", DRADriver
  KubeletPluginSpec): the kubelet plugin DaemonSet selects ``nvidia.com/gpu.deploy.dra-driver=true``, which the
  node-labeling controller (updateGPUClusterStateLabels, ``controllers/state_manager.go`` gpuClusterStateLabels)
  puts on every node with ``nvidia.com/gpu.present=true``: with a GPUCluster every GPU node is a DRA node.
* The CRD pins the name (XValidation ``self.metadata.name == 'gpu-cluster'``: a singleton).
* The driver: a GPUCluster makes the node-labeling controller route every GPU node to an NVIDIADriver
  (``usesNvidiaDriverCRD := nlc.gpuCluster != nil``, nvidiadriverutil.AssignOwners), and the kubelet plugin's
  init container waits for it (``driver-validation``, DRIVER_INSTALL_DIR default /run/nvidia/driver).

Kubernetes keeps the Helm chart: the GPU Operator is installed there from its chart, not OLM, and the collection's
DRA role already drives the DRA chart with the same values.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked, version_tuple
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_policy as upol

API_VERSION = 'nvidia.com/v1alpha1'
KIND = 'GPUCluster'
# the CRD's XValidation: "GPUCluster is a singleton, metadata.name must be 'gpu-cluster'"
NAME = 'gpu-cluster'
NVIDIA_DRIVER_KIND = 'NVIDIADriver'
NVIDIA_DRIVER_NAME = 'gpu-driver'  # the alm-examples name, which the shipped RBAC names

STACK_GPUCLUSTER = 'gpucluster'
STACK_HELM = 'helm'
STACKS = (STACK_GPUCLUSTER, STACK_HELM)

# the same gates the Helm path sets (manifests/dra.py helm_values): VFIO passthrough and the device metadata
# KubeVirt reads; computeDomains (multi-node NVLink) is not the passthrough path and stays off.
FEATURE_GATES = {'PassthroughSupport': True, 'DeviceMetadata': True}
# the alm-examples image of the DRA driver; its version is the one the GPU Operator release itself lists
IMAGE = 'dra-driver-nvidia-gpu'
REPOSITORY = 'nvcr.io/nvidia'
RELATED_IMAGE_NAME = 'nvidia-dra-driver-image'
# The DRA driver each GPU Operator release runs for its GPUCluster: its CSV's spec.relatedImages entry
# nvidia-dra-driver-image and the operator's DRA_DRIVER_IMAGE (v26.7.0 bundle: nvcr.io/nvidia/dra-driver-nvidia-gpu:
# v0.5.0@sha256:9b46...) and its chart's draDriver.version (v26.7.0 deployments/gpu-operator/values.yaml: v0.5.0):
# the image a disconnected cluster mirrors. The CSV's alm-examples GPUCluster says v0.4.1, an example older than the
# release's own list; the list wins.
RELEASE_DRA_DRIVER = {'v26.7.0': 'v0.5.0'}
# the oldest DRA driver with the VFIO passthrough the GPUCluster path needs (PassthroughSupport: dra-driver 0.4.0)
MIN_DRA_DRIVER = (0, 4, 0)

COEXISTENCE = (
    "GPU Operator v26.7.0 refuses a GPUCluster beside a ClusterPolicy (controllers/gpucluster_controller.go "
    "validatePrerequisites: 'a ClusterPolicy CR and GPUCluster CR may not exist at the same time'; "
    "controllers/clusterpolicy_controller.go Reconcile: 'ClusterPolicy and GPUCluster cannot co-exist')")


def dra_stack(platform_traits, dra_nodes, other_nodes=(), requested='auto'):
    """Which stack serves the DRA nodes: ``(stack, reason)``.

    ``platform_traits``: the cluster platform's row (platform.traits): where its ``gpu_operator_install`` is
    ``olm`` the operator's own GPUCluster can serve, where it is ``helm`` the DRA driver comes from its own chart;
    ``dra_nodes``: the nodes of the DRA pool; ``other_nodes``: the GPU nodes of every other pool (container,
    vm-passthrough, vm-vgpu), which the ClusterPolicy serves; ``requested``: ``auto``, ``gpucluster`` or ``helm``
    (``dra_driver_stack``). ``auto`` takes the GPUCluster on OpenShift when every GPU node is a DRA node, the Helm
    chart otherwise; ``gpucluster`` where it cannot serve is refused, naming the reason and the code.
    """
    if requested not in ('auto',) + STACKS:
        raise ManifestError("dra_driver_stack is %r; use auto, gpucluster or helm" % (requested,))
    if not dra_nodes:
        return STACK_HELM, 'no DRA node'
    if requested == STACK_HELM:
        return STACK_HELM, 'dra_driver_stack is helm'
    reason = None
    traits = platform_traits or {}
    if traits.get('gpu_operator_install') != 'olm':
        reason = ("the GPU Operator is installed from its Helm chart on %s (no OLM), so the DRA driver comes from its "
                  "own chart" % traits.get('name'))
    elif other_nodes:
        reason = ("GPU nodes outside the DRA pool (%s) need the ClusterPolicy, and %s; the GPUCluster would also run "
                  "its kubelet plugin on every GPU node (nvidia.com/gpu.deploy.dra-driver, "
                  "controllers/state_manager.go gpuClusterStateLabels)"
                  % (', '.join(sorted(other_nodes)), COEXISTENCE))
    if reason is None:
        return STACK_GPUCLUSTER, ('%s and every GPU node in the DRA pool: the OLM-installed operator serves it'
                                  % traits.get('name'))
    if requested == STACK_GPUCLUSTER:
        raise ManifestError("dra_driver_stack is gpucluster, but %s; set dra_driver_stack to auto or helm (the "
                            "dra-driver-nvidia-gpu chart)" % reason)
    return STACK_HELM, reason


def alm_example(alm_examples, kind, api_version=API_VERSION):
    """The ``kind`` example of a CSV's ``alm-examples`` annotation (a JSON string or the parsed list), which must
    be of ``api_version``: the builders edit its spec by that version's schema."""
    if isinstance(alm_examples, str):
        try:
            alm_examples = json.loads(alm_examples)
        except ValueError as exc:
            raise ManifestError("the CSV's alm-examples annotation is not JSON (%s)" % exc)
    found = [e for e in alm_examples or [] if isinstance(e, dict) and e.get('kind') == kind]
    if not found:
        raise ManifestError(
            "the CSV's alm-examples hold no %s (kinds: %s): the GPU Operator's own DRA stack needs v26.7.0 or later "
            "(its CSV owns gpuclusters.nvidia.com); pin a newer channel, or set dra_driver_stack: helm"
            % (kind, ', '.join(sorted(str(e.get('kind')) for e in alm_examples or [] if isinstance(e, dict)))))
    if found[0].get('apiVersion') != api_version:
        raise ManifestError("the alm-examples %s is %r, expected %s" % (kind, found[0].get('apiVersion'), api_version))
    return copy.deepcopy(found[0])


def related_dra_image(related_images):
    """The DRA driver version a CSV's ``spec.relatedImages`` lists (``nvidia-dra-driver-image``), or None."""
    for entry in related_images or []:
        if isinstance(entry, dict) and entry.get('name') == RELATED_IMAGE_NAME:
            ref = str(entry.get('image') or '').split('@', 1)[0]
            tag = ref.rsplit(':', 1)[1] if ':' in ref.rsplit('/', 1)[-1] else ''
            if tag:
                return tag
    return None


def image_version(given=None, release=None, related_images=None):
    """The DRA driver image version the GPUCluster runs: ``given`` (``gpu_operator_dra_driver_version``) when set,
    else the one the installed CSV lists (``related_images``: its spec.relatedImages), else the one the GPU Operator
    ``release`` lists (RELEASE_DRA_DRIVER); none of them is refused, naming the variable. Any SemVer from 0.4.0 on
    (the VFIO passthrough), ``v`` prefixed."""
    version = given or related_dra_image(related_images) or RELEASE_DRA_DRIVER.get(release or '')
    if not version:
        raise ManifestError("the DRA driver version for GPU Operator %s is not known: set gpu_operator_dra_driver_version "
                            "to the one its CSV lists (spec.relatedImages %s, for example v0.5.0 for v26.7.0)"
                            % (release or '(release not given)', RELATED_IMAGE_NAME))
    version = str(version).lstrip('v')
    checked(validators.semver, version, 'gpu_operator_dra_driver_version')
    if version_tuple(version) < MIN_DRA_DRIVER:
        raise ManifestError("gpu_operator_dra_driver_version is %r; the GPUCluster's VFIO passthrough needs a DRA "
                            "driver from 0.4.0 on (the one the GPU Operator release lists: %s)"
                            % (given, ', '.join('%s %s' % kv for kv in sorted(RELEASE_DRA_DRIVER.items()))))
    return 'v' + version


def build_gpu_cluster(alm_examples, version=None, release=None, related_images=None):
    """The GPUCluster: the CSV's alm-examples entry (NVIDIA's defaults for that operator version) with the DRA
    driver the release lists (``image_version``), the passthrough gates on and computeDomains off. Name
    ``gpu-cluster``."""
    obj = alm_example(alm_examples, KIND)
    spec = obj.setdefault('spec', {})
    dra = spec.setdefault('draDriver', {})
    dra['repository'] = dra.get('repository') or REPOSITORY
    dra['image'] = dra.get('image') or IMAGE
    dra['version'] = image_version(version, release, related_images)
    gates = dict(dra.get('featureGates') or {})
    gates.update(FEATURE_GATES)
    dra['featureGates'] = gates
    dra['computeDomains'] = dict(dra.get('computeDomains') or {}, enabled=False)
    obj['metadata'] = {'name': NAME}
    return obj


def build_nvidia_driver(alm_examples, upgrade_policy=None):
    """The NVIDIADriver the GPUCluster waits for (the CSV's alm-examples entry as NVIDIA ships it: every GPU node,
    the driver container): without a ClusterPolicy nothing else installs the driver on OpenShift's nodes.

    Its ``spec.upgradePolicy`` gets the collection's policy (``upgrade_policy``, ``gpu_operator_upgrade_policy``;
    None: the defaults, autoUpgrade false and maxParallelUpgrades 1), as the ClusterPolicy's ``driver.upgradePolicy``
    does (upgrade_policy.py): the alm-examples ship ``autoUpgrade: true`` and the v26.7.0 NVIDIADriver CRD defaults
    it to true, so the operator's upgrade controller would replace the driver pods of every node by itself, VMs or
    not, as soon as the driver version changes. The example's other upgradePolicy keys (drain, podDeletion,
    waitForCompletion) stay: with autoUpgrade false "all other options are ignored" (the CRD's description)."""
    obj = alm_example(alm_examples, NVIDIA_DRIVER_KIND)
    spec = obj.setdefault('spec', {})
    if spec.get('driverType', 'gpu') != 'gpu':
        raise ManifestError("the alm-examples NVIDIADriver has driverType %r; the DRA nodes need gpu"
                            % spec.get('driverType'))
    example_policy = spec.get('upgradePolicy') if isinstance(spec.get('upgradePolicy'), dict) else {}
    spec['upgradePolicy'] = dict(example_policy, **upol.upgrade_policy(upgrade_policy))
    # Written out as the API server defaults it (v26.7.0 CRD: spec.default, required, default false): not the
    # fallback driver, and its empty nodeSelector matches every GPU node (internal/nvidiadriver/nvidiadriver.go
    # desiredOwnerForNode, labels.SelectorFromSet({}) matches all), which on this path are all DRA nodes.
    spec.setdefault('default', False)
    # only the name is ours: annotations (a sync hook), ownerReferences or finalizers of the example are not copied
    obj['metadata'] = {'name': NVIDIA_DRIVER_NAME}
    return obj


def check_driver_mode(stack, driver_mode):
    """On the GPUCluster path the driver comes from the alm-examples NVIDIADriver (the driver container, root
    /run/nvidia/driver, the GPUCluster's default ``hostPaths.driverInstallDir``); another driver mode is refused."""
    if stack == STACK_GPUCLUSTER and driver_mode != 'operator':
        raise ManifestError(
            "the DRA driver mode is %s, but the GPUCluster path installs the driver through the CSV's NVIDIADriver "
            "(the driver container); set dra_driver_nvidia_driver to operator (or empty), or dra_driver_stack to helm"
            % (driver_mode,))
