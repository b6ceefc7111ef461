# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What installs and configures the GPU Operator, from the phase's settings record: the module
gpu_operator_manifests's builder. Pure Python.

``build`` takes the settings (a GpuOperatorSettings record, gpu_operator_settings.py, or its dict) and what was read
from the cluster or a file (the PackageManifest, the alm-examples and where they come from, the installed CSV's
relatedImages and release, the chart's values.yaml). The part both install paths share comes first: the
Namespace, the vGPU device ConfigMap and the overlay (ClusterPolicy spec / Helm values, the same field names), so
the ClusterPolicy on OpenShift and the Helm values on Kubernetes always say the same thing. Then one of two
sections, chosen by the platform's trait ``gpu_operator_install``: ``olm`` (the OLM objects, the ClusterPolicy from
the CSV's alm-examples or the GPUCluster, the NFD operator) or ``helm`` (the values, checked against the chart).
The pieces (the Subscription, the ClusterPolicy merge, the DRA and OS-tag rules) are gpu_operator.py's.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator_settings as gos
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_config as vc


# Both install paths --------------------------------------------------------------------------------------------

def build(settings, package_manifest=None, alm_examples=None, alm_examples_source=None, alm_examples_release=None,
          related_images=None, operator_release=None, chart_values=None):
    """The module's result: ``namespace``, ``install_objects``, ``config_objects``, ``cluster_policy``,
    ``helm_values``, ``channel``, ``dra_stack`` (and its reason), ``gpu_cluster_objects``, ``nfd_objects``,
    ``nfd_instance`` and ``warnings_list``. ManifestError (naming the variable) on bad input, before anything is
    returned."""
    settings = gos.build(settings)
    traits = settings.traits()
    namespace = settings.operator_namespace()
    warnings, config_objects, vdm_config = device_manager_config(settings, namespace)
    result = dict(namespace=namespace, config_objects=config_objects, cluster_policy=None, helm_values=None,
                  channel=None, warnings_list=warnings, nfd_objects=[], nfd_instance=None, gpu_cluster_objects=[])
    spec = overlay(settings, vdm_config)
    result['dra_stack'], result['dra_stack_reason'] = gc.dra_stack(
        traits, settings.dra_nodes, [h.get('node') for h in settings.hosts], settings.dra_stack)
    install = [gop.build_namespace(namespace, traits.get('namespace_labels'))]
    if settings.olm():
        install += olm(settings, spec, namespace, result, package_manifest, alm_examples, alm_examples_source,
                       alm_examples_release, related_images, operator_release)
    else:
        result['helm_values'] = helm(settings, spec, chart_values)
    result['install_objects'] = install
    return result


def device_manager_config(settings, namespace):
    """``(warnings, [the custom vGPU ConfigMap], {name, default} for vgpuDeviceManager.config)`` when
    ``vgpu_configs`` are given (each vGPU type checked against the GPUs of the vGPU hosts), else ``([], [], None)``."""
    if not settings.vgpu_configs:
        return [], [], None
    configs = vc.normalise_configs(settings.vgpu_configs)
    warnings = vc.validate(configs, settings.hosts, settings.vgpu_config_default)
    return (warnings, [vc.build_configmap(settings.vgpu_configmap_name, namespace, configs)],
            {'name': settings.vgpu_configmap_name, 'default': settings.vgpu_config_default})


def overlay(settings, vdm_config=None):
    """Our fields of the ClusterPolicy spec / Helm values: the operands (gpu_operator.py ``settings``, the MIG manager
    and mig.strategy where the fleet has a MIG pool's host), the platform's
    containerd paths (``toolkit.env``) and the operator's upgrade machinery set to the collection's policy
    (upgrade_policy.py), when given."""
    spec = gop.with_runtime_env(
        gop.settings(sandbox_enabled=settings.sandbox_enabled, default_workload=settings.default_workload,
                     mode=settings.sandbox_mode, vgpu_manager=settings.vgpu_manager_image(),
                     vgpu_device_manager_config=vdm_config, vfio_manager=settings.vfio_manager,
                     sandbox_device_plugin=settings.sandbox_device_plugin, pull_secret_name=settings.pull_secret_name,
                     mig_strategy=settings.mig_overlay_strategy()),
        settings.traits())
    upgrades = settings.upgrade_overlay()
    if upgrades is not None:
        spec = gop.deep_merge(spec, upgrades)
    return spec


# OLM (OpenShift) -------------------------------------------------------------------------------------------------

def olm(settings, spec, namespace, result, package_manifest=None, alm_examples=None, alm_examples_source=None,
        alm_examples_release=None, related_images=None, operator_release=None):
    """The OperatorGroup and the Subscription (returned, after the Namespace); in ``result`` the channel, and once
    the alm-examples are given the ClusterPolicy (their example with ``spec`` overlaid) or, with the GPU Operator's
    own DRA stack, the NVIDIADriver and the GPUCluster; with ``nfd_install`` the NFD operator's objects and its
    NodeFeatureDiscovery.

    ``alm_examples_source``: the file they come from (render mode; checked to be the subscribed channel's, with
    ``alm_examples_release``); None: the installed CSV's own (apply mode), whose release is ``operator_release``."""
    result['channel'] = gop.default_channel(package_manifest, settings.channel)
    install = [gop.build_operator_group(namespace),
               gop.build_subscription(namespace, result['channel'], settings.install_plan_approval,
                                      settings.catalog_source, settings.catalog_namespace)]
    if alm_examples is not None:
        if alm_examples_source:
            # a file given by the user (render mode); alm-examples read from the installed CSV are its own
            gop.check_alm_examples_source(package_manifest, result['channel'], alm_examples, alm_examples_source,
                                          alm_examples_release, namespace)
        if result['dra_stack'] == gc.STACK_GPUCLUSTER:
            # the GPU Operator's own DRA stack instead of a ClusterPolicy: the two may not exist together
            result['gpu_cluster_objects'] = [
                gc.build_nvidia_driver(alm_examples, settings.upgrade_policy),
                gc.build_gpu_cluster(alm_examples, settings.dra_driver_version, operator_release or alm_examples_release,
                                     related_images)]
        else:
            policy = gop.build_cluster_policy(alm_examples, spec)
            policy['spec'] = gop.with_dra_eviction(policy['spec'], settings.dra_nodes, "the CSV's alm-examples")
            policy['spec'] = gop.with_dra_validator(policy['spec'], settings.dra_nodes, settings.hosts,
                                                    "the CSV's alm-examples")
            result['cluster_policy'] = policy
    if settings.nfd_install:
        result['nfd_objects'] = gop.build_nfd_install(settings.nfd_channel, settings.install_plan_approval,
                                                      settings.nfd_catalog_source, settings.catalog_namespace)
        result['nfd_instance'] = gop.build_nfd_instance(settings.nfd_instance, settings.nfd_instance_required)
    return install


# Helm (Kubernetes) -----------------------------------------------------------------------------------------------

def helm(settings, spec, chart_values=None):
    """The chart's values: ``spec`` over ``helm_values_extra``, the DRA rules applied, and every key checked to exist
    in the chart's ``values.yaml`` when it is given."""
    values = gop.with_dra_eviction(gop.helm_values(spec, settings.helm_values_extra), settings.dra_nodes,
                                   'gpu_operator_helm_values_extra')
    values = gop.with_dra_validator(values, settings.dra_nodes, settings.hosts, 'gpu_operator_helm_values_extra',
                                    settings.helm_values_extra)
    if chart_values is not None:
        gop.check_values_keys(values, chart_values)
    return values
