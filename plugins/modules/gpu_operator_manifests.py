#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_operator_manifests
short_description: Build the NVIDIA GPU Operator objects (OLM or Helm values), ClusterPolicy and vGPU ConfigMap
version_added: 0.1.0
description:
  - Validates the GPU Operator settings and builds what installs and configures it. Nothing is sent anywhere.
  - OpenShift (O(platform=openshift)) returns the Namespace, OperatorGroup and Subscription to
    C(gpu-operator-certified) (channel from O(package_manifest) C(status.defaultChannel) unless O(channel) is
    pinned) and, once O(alm_examples) is given, the ClusterPolicy built from the CSV's C(alm-examples) example with
    only our fields set.
  - Kubernetes (O(platform=kubernetes)) returns the Namespace and the Helm values carrying the same settings; with
    O(chart_values) every key set is checked to exist in the chart's C(values.yaml).
  - With O(vgpu_configs), also a vgpu-device-manager ConfigMap; every vGPU type it uses must be offered by the GPUs
    of the vGPU hosts in O(hosts) (mdev or vendor-specific VFIO types from the C(mdev_types) facts).
  - Fails naming the value and the fix on bad input, including a private vGPU Manager registry without a pull secret.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  platform_traits:
    description:
      - The platform's traits as the cluster role resolved them (C(gpuvirt_cluster.traits), the inventory's
        C(gpuvirt_platform_traits) included); default the row of O(platform). What is built follows them, never
        the platform's name - C(gpu_operator_install=olm) builds the OLM objects and the ClusterPolicy, C(helm) the
        Helm values; the containerd paths that differ from the operator's defaults go to C(toolkit.env).
    type: dict
  namespace:
    description: Operator namespace; default the platform's C(gpu_operator_namespace) (C(nvidia-gpu-operator) on
      OpenShift, C(gpu-operator) on Kubernetes).
    type: str
  sandbox_enabled:
    description: C(sandboxWorkloads.enabled).
    type: bool
    default: true
  sandbox_mode:
    description: C(sandboxWorkloads.mode).
    type: str
    choices: [kubevirt, kata]
    default: kubevirt
  vgpu_manager:
    description:
      - The vGPU Manager image (C(repository), C(image), C(version)); omit when no host runs vGPU.
      - Without C(version), O(vgpu_manager_image_version) gives it.
    type: dict
  vgpu_manager_image_version:
    description:
      - The driver version the vGPU Manager image was built for (C(vgpu_manager_image_version), the image role's
        tag C(<version>-<os tag>)); the C(version) of O(vgpu_manager) when that gives none.
      - Both given and different fails, naming both values.
    type: str
  vfio_manager:
    description: C(vfioManager.enabled).
    type: bool
    default: true
  sandbox_device_plugin:
    description: C(sandboxDevicePlugin.enabled).
    type: bool
    default: true
  pull_secret_name:
    description: Name of the registry pull Secret for the vGPU Manager image.
    type: str
  registry_login:
    description:
      - The login the role will put in the pull Secret, without the password, checked here so a mistake is
        reported by a task that is not C(no_log) (the Secret itself is built by M(gpuvirt.provision.gpu_operator_pull_secret)).
      - C(registry), C(username) and C(password_given) (a bool); the registry must be the vGPU Manager image's.
      - C(credentials) false (a render that leaves the Secret out) checks the registry only.
    type: dict
  registry_public:
    description: The vGPU Manager registry needs no login (otherwise a pull secret is required).
    type: bool
    default: false
  vgpu_configs:
    description: 'Custom vGPU configs, C({name: {type: count}}) or C({name: [{devices, vgpu-devices}]}).'
    type: dict
  vgpu_config_default:
    description: Config used by vGPU nodes without their own (C(vgpuDeviceManager.config.default)).
    type: str
    default: default
  vgpu_configmap_name:
    description: Name of the custom vGPU ConfigMap.
    type: str
    default: gpuvirt-vgpu-devices-config
  hosts:
    description: 'GPU hosts, C({node, pool, vgpu_config, facts: {pci_devices, mdev_types}}), to check vGPU types.'
    type: list
    elements: dict
    default: []
  dra_nodes:
    description:
      - The nodes of the C(dra) pool. When there are any and the operator's driver is on (C(driver.enabled) not
        false), C(driver.manager.env) gets C(NODE_LABEL_FOR_GPU_POD_EVICTION=nvidia.com/dra-kubelet-plugin), so
        the driver manager evicts the DRA kubelet plugin before it unloads the driver; an entry naming another
        label fails.
      - With any, C(devicePlugin.enabled) is set false, so the operator validator stops waiting for
        C(nvidia.com/gpu) on them; O(hosts) holding a node of the classic device plugin's pool (C(container)) then
        fails, naming the hosts, and so does C(devicePlugin.enabled) true in O(helm_values_extra).
    type: list
    elements: str
    default: []
  os_tags:
    description:
      - 'The OS tag of every GPU host, C({host: os tag}) (C(gpuvirt_os_tag) from gather.yml); hosts without one are
        left out.'
      - With O(vgpu_manager), two or more distinct tags fail, naming each tag and its hosts, since the operator takes
        one GPU node's OS tag for every vGPU Manager image it pulls.
    type: dict
    default: {}
  dra_stack:
    description:
      - Which DRA stack serves the O(dra_nodes) (C(dra_driver_stack)). V(auto) takes the GPU Operator's own
        GPUCluster on OpenShift when every GPU node is a DRA node (O(hosts) empty), else the dra-driver-nvidia-gpu
        chart; V(gpucluster) where it cannot serve fails, naming the reason (GPU Operator v26.7.0 refuses a
        GPUCluster beside a ClusterPolicy).
    type: str
    choices: [auto, gpucluster, helm]
    default: auto
  dra_driver_version:
    description:
      - The DRA driver image version the GPUCluster runs (C(gpu_operator_dra_driver_version)); any version from
        0.4.0 on. Omitted, the one the GPU Operator release lists for it (its CSV's C(spec.relatedImages)
        C(nvidia-dra-driver-image), O(related_images); else by O(operator_release) or O(alm_examples_release),
        v0.5.0 for v26.7.0), not the older one its alm-examples show. Unknown for the release, it fails, naming the
        variable.
    type: str
  related_images:
    description: The installed CSV's C(spec.relatedImages) (apply mode), where the DRA driver's version is read.
    type: list
    elements: dict
  operator_release:
    description: The installed GPU Operator release (C(v26.7.0), from its CSV; apply mode).
    type: str
  alm_examples:
    description: The CSV's C(alm-examples) annotation (JSON text or parsed list); OpenShift only.
    type: raw
  alm_examples_source:
    description:
      - Where O(alm_examples) came from (a file name), named when they are not the alm-examples of the subscribed
        channel's CSV as the O(package_manifest) tells them (C(status.channels[].currentCSVDesc)).
      - Given, the file is checked against the channel (see O(alm_examples_release)); omitted, the alm-examples are
        taken to be the installed CSV's own (apply mode reads them from it).
    type: str
  alm_examples_release:
    description:
      - The GPU Operator release O(alm_examples) come from (C(v26.7.0)). Needed when the O(package_manifest) does not
        name the channel's CSV (render mode); the channel must then be that release's (C(v26.7)), else refused.
    type: str
  nfd_install:
    description:
      - OpenShift, also return the Node Feature Discovery operator's Namespace (C(openshift-nfd)), OperatorGroup and
        Subscription (C(nfd) from O(nfd_catalog_source)) in RV(nfd_objects); the GPU Operator needs NFD there.
    type: bool
    default: false
  nfd_instance:
    description:
      - The NodeFeatureDiscovery to create once the NFD operator runs (the NFD CSV's alm-examples entry), returned
        checked and in C(openshift-nfd) as RV(nfd_instance). Render mode needs it for a complete tree; apply mode
        otherwise takes the installed NFD CSV's own example.
    type: dict
  nfd_instance_required:
    description:
      - Fail when O(nfd_install) is true and O(nfd_instance) is empty (render mode, where no installed NFD CSV can
        supply its example and a tree without a NodeFeatureDiscovery labels no GPU node).
    type: bool
    default: false
  nfd_channel:
    description: Channel of the C(nfd) Subscription.
    type: str
    default: stable
  nfd_catalog_source:
    description: CatalogSource of the C(nfd) package.
    type: str
    default: redhat-operators
  package_manifest:
    description: The C(gpu-operator-certified) PackageManifest, for its default channel.
    type: dict
  channel:
    description: Pinned Subscription channel.
    type: str
  install_plan_approval:
    description: Subscription C(installPlanApproval).
    type: str
    choices: [Automatic, Manual]
    default: Automatic
  catalog_source:
    description: CatalogSource of the Subscription.
    type: str
    default: certified-operators
  catalog_namespace:
    description: Namespace of the CatalogSource.
    type: str
    default: openshift-marketplace
  helm_values_extra:
    description: More Helm values; our settings win over them.
    type: dict
    default: {}
  chart_values:
    description: The chart's default C(values.yaml), parsed; every key we set must exist there.
    type: dict
  upgrade_policy:
    description:
      - The operator's driver upgrade controller settings (C(driver.upgradePolicy)) as C(auto_upgrade),
        C(max_parallel_upgrades), C(max_unavailable); the missing keys default to false, 1 and C(25%).
      - C(auto_upgrade=true) with C(max_parallel_upgrades=0) (every node at once) is refused.
      - Omitted together with O(daemonsets_update_strategy), neither field is written (the CSV's or chart's
        defaults stay).
    type: dict
  daemonsets_update_strategy:
    description:
      - C(daemonsets.updateStrategy) of every operand DaemonSet. V(OnDelete) (the role's default) replaces the vGPU
        Manager and the other operands on a node only when C(playbooks/upgrade.yml) deletes their pods there;
        V(RollingUpdate) lets Kubernetes replace them node after node whatever runs there.
    type: str
    choices: [OnDelete, RollingUpdate]
attributes:
  check_mode:
    description: Builds data only; nothing changes in any mode.
    support: full
  diff_mode:
    description: Not supported; the role that applies or renders the result shows the diff.
    support: none
extends_documentation_fragment:
  - gpuvirt.provision.tables.platform
  - gpuvirt.provision.tables.default_workload
'''

EXAMPLES = r'''
- name: Build the OpenShift objects for a vGPU fleet
  gpuvirt.provision.gpu_operator_manifests:
    platform: openshift
    default_workload: vm-vgpu
    vgpu_manager: {repository: registry.example.com/nvidia, version: 580.82.02}
    pull_secret_name: gpuvirt-vgpu-pull
    package_manifest: "{{ pm.resources[0] }}"
  register: gop
'''

RETURN = r'''
install_objects:
  description: Namespace, then OperatorGroup and Subscription on OpenShift.
  returned: success
  type: list
  elements: dict
config_objects:
  description: The custom vGPU ConfigMap, when O(vgpu_configs) is given.
  returned: success
  type: list
  elements: dict
cluster_policy:
  description: >-
    The ClusterPolicy (OpenShift, when O(alm_examples) is given and RV(dra_stack) is V(helm)), else null.
  returned: success
  type: dict
dra_stack:
  description: >-
    Which DRA stack serves the O(dra_nodes): V(gpucluster) (OpenShift, every GPU node a DRA node: the GPU
    Operator's own GPUCluster, which may not exist beside a ClusterPolicy) or V(helm) (the dra-driver-nvidia-gpu chart).
  returned: success
  type: str
dra_stack_reason:
  description: Why RV(dra_stack) was chosen.
  returned: success
  type: str
gpu_cluster_objects:
  description: >-
    With RV(dra_stack) V(gpucluster) and O(alm_examples): the NVIDIADriver and the GPUCluster from the CSV's
    alm-examples (the DRA driver the release lists, see O(dra_driver_version), C(PassthroughSupport) and C(DeviceMetadata) on,
    computeDomains off), else empty.
  returned: success
  type: list
  elements: dict
helm_values:
  description: Helm values (Kubernetes), else null.
  returned: success
  type: dict
namespace:
  description: The operator namespace.
  returned: success
  type: str
channel:
  description: Subscription channel (OpenShift), else null.
  returned: success
  type: str
nfd_instance:
  description: The checked O(nfd_instance) (OpenShift with O(nfd_install)), else null.
  returned: success
  type: dict
nfd_objects:
  description: The NFD operator's Namespace, OperatorGroup and Subscription (OpenShift with O(nfd_install)), else empty.
  returned: success
  type: list
  elements: dict
warnings_list:
  description: Checks that could only be partly made (vGPU types checked against board names).
  returned: success
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import pull_secret as ps
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_policy as upol
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_config as vc


def build(p):
    traits = p.get('platform_traits') or platform.traits(p['platform'])
    if traits.get('name') != p['platform']:
        raise gop.ManifestError('platform_traits are those of %r, not of the platform %r: give gpuvirt_cluster.traits '
                                'with gpuvirt_cluster.platform' % (traits.get('name'), p['platform']))
    olm = traits.get('gpu_operator_install') == 'olm'
    p = dict(p, vgpu_manager=gop.resolve_vgpu_manager(p['vgpu_manager'], p['vgpu_manager_image_version']))
    namespace = p['namespace'] or traits['gpu_operator_namespace']
    gop.check_pull_secret(p['vgpu_manager'], p['pull_secret_name'], p['registry_public'])
    login = p['registry_login']
    if login:
        image_registry = gop.registry_of(p['vgpu_manager']['repository']) if p['vgpu_manager'] else None
        ps.check_login(p['pull_secret_name'] or 'pull secret', login.get('registry') or '',
                       login.get('username') or '', bool(login.get('password_given')), image_registry,
                       credentials=login.get('credentials', True))
    warnings, config_objects, vdm_config = [], [], None
    if p['vgpu_configs']:
        configs = vc.normalise_configs(p['vgpu_configs'])
        warnings = vc.validate(configs, p['hosts'], p['vgpu_config_default'])
        config_objects.append(vc.build_configmap(p['vgpu_configmap_name'], namespace, configs))
        vdm_config = {'name': p['vgpu_configmap_name'], 'default': p['vgpu_config_default']}
    gop.check_one_os_tag(p['os_tags'], p['vgpu_manager'])
    gop.check_dra_fleet(p['dra_nodes'], p['hosts'])
    overlay = gop.with_runtime_env(
        gop.settings(p['sandbox_enabled'], p['default_workload'], p['sandbox_mode'], p['vgpu_manager'], vdm_config,
                     p['vfio_manager'], p['sandbox_device_plugin'], p['pull_secret_name']), traits)
    if p.get('upgrade_policy') is not None or p.get('daemonsets_update_strategy'):
        # the operator's upgrade machinery set to the collection's policy (module_utils/manifests/upgrade_policy.py)
        overlay = gop.deep_merge(overlay, upol.overlay(p.get('upgrade_policy'),
                                                       p.get('daemonsets_update_strategy') or 'OnDelete'))
    result = dict(namespace=namespace, config_objects=config_objects, cluster_policy=None, helm_values=None,
                  channel=None, warnings_list=warnings, nfd_objects=[], nfd_instance=None, gpu_cluster_objects=[])
    result['dra_stack'], result['dra_stack_reason'] = gc.dra_stack(
        traits, p['dra_nodes'], [h.get('node') for h in p['hosts']], p['dra_stack'])
    install = [gop.build_namespace(namespace, traits.get('namespace_labels'))]
    if olm:
        result['channel'] = gop.default_channel(p['package_manifest'], p['channel'])
        install.append(gop.build_operator_group(namespace))
        install.append(gop.build_subscription(namespace, result['channel'], p['install_plan_approval'],
                                              p['catalog_source'], p['catalog_namespace']))
        if p['alm_examples'] is not None:
            if p['alm_examples_source']:
                # a file given by the user (render mode); alm-examples read from the installed CSV are its own
                gop.check_alm_examples_source(p['package_manifest'], result['channel'], p['alm_examples'],
                                              p['alm_examples_source'], p['alm_examples_release'], namespace)
            if result['dra_stack'] == gc.STACK_GPUCLUSTER:
                # the GPU Operator's own DRA stack instead of a ClusterPolicy: the two may not exist together
                result['gpu_cluster_objects'] = [gc.build_nvidia_driver(p['alm_examples'], p.get('upgrade_policy')),
                                                 gc.build_gpu_cluster(p['alm_examples'], p['dra_driver_version'],
                                                                      p['operator_release'] or p['alm_examples_release'],
                                                                      p['related_images'])]
            else:
                policy = gop.build_cluster_policy(p['alm_examples'], overlay)
                policy['spec'] = gop.with_dra_eviction(policy['spec'], p['dra_nodes'], "the CSV's alm-examples")
                policy['spec'] = gop.with_dra_validator(policy['spec'], p['dra_nodes'], p['hosts'],
                                                        "the CSV's alm-examples")
                result['cluster_policy'] = policy
        if p['nfd_install']:
            result['nfd_objects'] = gop.build_nfd_install(p['nfd_channel'], p['install_plan_approval'],
                                                          p['nfd_catalog_source'], p['catalog_namespace'])
            result['nfd_instance'] = gop.build_nfd_instance(p['nfd_instance'], p['nfd_instance_required'])
    else:
        values = gop.with_dra_eviction(gop.helm_values(overlay, p['helm_values_extra']), p['dra_nodes'],
                                       'gpu_operator_helm_values_extra')
        values = gop.with_dra_validator(values, p['dra_nodes'], p['hosts'], 'gpu_operator_helm_values_extra',
                                        p['helm_values_extra'])
        if p['chart_values'] is not None:
            gop.check_values_keys(values, p['chart_values'])
        result['helm_values'] = values
    result['install_objects'] = install
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            platform=dict(type='str', choices=list(platform.PLATFORM_NAMES), required=True),
            platform_traits=dict(type='dict'),
            namespace=dict(type='str'),
            sandbox_enabled=dict(type='bool', default=True),
            default_workload=dict(type='str', choices=list(gop.WORKLOADS), default='container'),
            sandbox_mode=dict(type='str', choices=list(gop.MODES), default='kubevirt'),
            vgpu_manager=dict(type='dict'),
            vgpu_manager_image_version=dict(type='str'),
            vfio_manager=dict(type='bool', default=True),
            sandbox_device_plugin=dict(type='bool', default=True),
            pull_secret_name=dict(type='str'),
            registry_login=dict(type='dict'),
            registry_public=dict(type='bool', default=False),
            vgpu_configs=dict(type='dict'),
            vgpu_config_default=dict(type='str', default='default'),
            vgpu_configmap_name=dict(type='str', default='gpuvirt-vgpu-devices-config'),
            hosts=dict(type='list', elements='dict', default=[]),
            dra_nodes=dict(type='list', elements='str', default=[]),
            os_tags=dict(type='dict', default={}),
            dra_stack=dict(type='str', choices=['auto'] + list(gc.STACKS), default='auto'),
            dra_driver_version=dict(type='str'),
            related_images=dict(type='list', elements='dict'),
            operator_release=dict(type='str'),
            alm_examples=dict(type='raw'),
            alm_examples_source=dict(type='str'),
            nfd_install=dict(type='bool', default=False),
            nfd_channel=dict(type='str', default=gop.NFD_CHANNEL),
            nfd_instance=dict(type='dict'),
            nfd_instance_required=dict(type='bool', default=False),
            alm_examples_release=dict(type='str'),
            nfd_catalog_source=dict(type='str', default=gop.NFD_CATALOG),
            package_manifest=dict(type='dict'),
            channel=dict(type='str'),
            install_plan_approval=dict(type='str', choices=list(gop.APPROVALS), default='Automatic'),
            catalog_source=dict(type='str', default=gop.CATALOG),
            catalog_namespace=dict(type='str', default=gop.CATALOG_NAMESPACE),
            helm_values_extra=dict(type='dict', default={}),
            chart_values=dict(type='dict'),
            upgrade_policy=dict(type='dict'),
            daemonsets_update_strategy=dict(type='str', choices=list(upol.UPDATE_STRATEGIES)),
        ),
        supports_check_mode=True,
    )
    try:
        result = build(module.params)
    except (gop.ManifestError, gc.ManifestError, ps.ManifestError, vc.ManifestError) as exc:
        module.fail_json(msg=str(exc))
    for warning in result['warnings_list']:
        module.warn(warning)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
