# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the GPU Operator settings (O(settings)): one entry per field of
plugins/module_utils/manifests/gpu_operator_settings.py FIELDS, whose argument_spec() is the module's schema. A unit
test (tests/unit/plugins/module_utils/manifests/test_gpu_operator_settings.py) holds the names, types, defaults and
choices here equal to the fields; the platforms and workloads are generated from the tables (make docs)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.gpu_operator_settings: gpu_operator_manifests
    DOCUMENTATION = r'''
options:
  settings:
    description:
      - The GPU Operator settings, one mapping built once from the inventory, the fleet view and the platform row
        (C(roles/gpu_operator) tasks/main.yml, C(__gpu_operator_settings)); its suboptions are the fields of the record
        the builders read (C(plugins/module_utils/manifests/gpu_operator_settings.py)). A bad value fails the module - one AnsibleModule
        cannot convert to the suboption's type, or outside its choices, named as the option (C(settings.<field>)); any
        other as its inventory variable. AnsibleModule converts what it can first (a number or a list to text, C(yes)
        to true), so the role passes each flag through its strict boolean check and each version as text.
    type: dict
    required: true
    suboptions:
      platform:
        description: Where the operator goes (C(gpuvirt_cluster.platform)).
        type: str
        choices:
          # BEGIN GENERATED platforms
          - openshift
          - kubernetes
          - rke2
          # END GENERATED platforms
        default: kubernetes
      platform_traits:
        description:
          - The platform's traits as the cluster role resolved them (C(gpuvirt_cluster.traits), the inventory's
            C(gpuvirt_platform_traits) included); default the row of O(settings.platform). What is built follows them,
            never the platform's name - C(gpu_operator_install=olm) builds the OLM objects and the ClusterPolicy,
            C(helm) the Helm values; the containerd paths that differ from the operator's defaults go to
            C(toolkit.env). Those of another platform fail, naming both.
        type: dict
      namespace:
        description: Operator namespace (C(gpu_operator_namespace)); default the platform's C(gpu_operator_namespace)
          (C(nvidia-gpu-operator) on OpenShift, C(gpu-operator) on Kubernetes).
        type: str
      sandbox_enabled:
        description: C(sandboxWorkloads.enabled) (C(gpu_operator_sandbox_enabled)).
        type: bool
        default: true
      default_workload:
        description: C(sandboxWorkloads.defaultWorkload), for nodes without a workload label (C(gpu_operator_default_workload)).
        type: str
        choices:
          # BEGIN GENERATED workloads
          - container
          - vm-passthrough
          - vm-vgpu
          # END GENERATED workloads
        default: container
      sandbox_mode:
        description: C(sandboxWorkloads.mode) (C(gpu_operator_sandbox_mode)).
        type: str
        choices: [kubevirt, kata]
        default: kubevirt
      vgpu_manager:
        description:
          - The vGPU Manager image (C(repository), C(image), C(version); C(gpu_operator_vgpu_manager)); omit when no
            host runs vGPU.
          - Without C(version), O(settings.vgpu_manager_image_version) gives it.
        type: dict
      vgpu_manager_image_version:
        description:
          - The driver version the vGPU Manager image was built for (C(vgpu_manager_image_version), the image role's
            tag C(<version>-<os tag>)); the C(version) of O(settings.vgpu_manager) when that gives none.
          - Both given and different fails, naming both values.
        type: str
      vfio_manager:
        description: C(vfioManager.enabled) (C(gpu_operator_vfio_manager)).
        type: bool
        default: true
      sandbox_device_plugin:
        description: C(sandboxDevicePlugin.enabled) (C(gpu_operator_sandbox_device_plugin)).
        type: bool
        default: true
      pull_secret_name:
        description: Name of the registry pull Secret for the vGPU Manager image.
        type: str
      registry_login:
        description:
          - The login the role will put in the pull Secret, without the password, checked here so a mistake is
            reported by a task that is not C(no_log) (the Secret itself is built by
            M(gpuvirt.provision.gpu_operator_pull_secret)).
          - C(registry), C(username) and C(password_given) (a bool); the registry must be the vGPU Manager image's.
          - C(credentials) false (a render that leaves the Secret out) checks the registry only.
        type: dict
      registry_public:
        description: The vGPU Manager registry needs no login (otherwise a pull secret is required; C(gpu_operator_registry_public)).
        type: bool
        default: false
      vgpu_configs:
        description: 'Custom vGPU configs, C({name: {type: count}}) or C({name: [{devices, vgpu-devices}]}) (C(gpu_operator_vgpu_configs)).'
        type: dict
      vgpu_config_default:
        description: Config used by vGPU nodes without their own (C(vgpuDeviceManager.config.default)).
        type: str
        default: default
      vgpu_configmap_name:
        description: Name of the custom vGPU ConfigMap.
        type: str
        default: gpuvirt-vgpu-devices-config
      upgrade_policy:
        description:
          - The operator's driver upgrade controller settings (C(driver.upgradePolicy); C(gpu_operator_upgrade_policy))
            as C(auto_upgrade), C(max_parallel_upgrades), C(max_unavailable); the missing keys default to false, 1 and
            C(25%).
          - C(auto_upgrade=true) with C(max_parallel_upgrades=0) (every node at once) is refused.
          - Omitted together with O(settings.daemonsets_update_strategy), neither field is written (the CSV's or
            chart's defaults stay).
        type: dict
      daemonsets_update_strategy:
        description:
          - C(daemonsets.updateStrategy) of every operand DaemonSet (C(gpu_operator_daemonsets_update_strategy)).
            V(OnDelete) (the role's default) replaces the vGPU Manager and the other operands on a node only when
            C(playbooks/upgrade.yml) deletes their pods there; V(RollingUpdate) lets Kubernetes replace them node after
            node whatever runs there.
        type: str
        choices: [OnDelete, RollingUpdate]
      mig_strategy:
        description:
          - The device plugin's MIG strategy, C(mig.strategy) (C(gpu_operator_mig_strategy)), written with
            C(migManager.enabled) true only when a host of O(settings.hosts) is in a MIG pool (the pool table's
            C(mig), C(gpu_container_mig)); without one neither field is written (the CSV's or chart's defaults stay).
          - V(mixed) advertises each MIG profile as C(nvidia.com/mig-<profile>) and serves C(all-balanced);
            V(single) advertises the MIG devices as C(nvidia.com/gpu) and needs one profile per node (an
            C(all-<profile>) config), so a MIG host whose C(mig_config) mixes profiles is refused, naming it.
        type: str
        choices: [mixed, single]
        default: mixed
      hosts:
        description: 'GPU hosts, C({node, pool, vgpu_config, mig_config, facts: {pci_devices, mdev_types}}), to check vGPU types and
          MIG configs (C(gpu_operator_hosts)).'
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
            C(nvidia.com/gpu) on them; O(settings.hosts) holding a node of the classic device plugin's pool
            (C(container)) then fails, naming the hosts, and so does C(devicePlugin.enabled) true in
            O(settings.helm_values_extra).
        type: list
        elements: str
        default: []
      os_tags:
        description:
          - 'The OS tag of every GPU host, C({host: os tag}) (C(gpuvirt_os_tag) from gather.yml); hosts without one are
            left out.'
          - With O(settings.vgpu_manager), two or more distinct tags fail, naming each tag and its hosts, since the
            operator takes one GPU node's OS tag for every vGPU Manager image it pulls.
        type: dict
        default: {}
      dra_stack:
        description:
          - Which DRA stack serves the O(settings.dra_nodes) (C(dra_driver_stack)). V(auto) takes the GPU Operator's
            own GPUCluster on OpenShift when every GPU node is a DRA node (O(settings.hosts) empty), else the
            dra-driver-nvidia-gpu chart; V(gpucluster) where it cannot serve fails, naming the reason (GPU Operator
            v26.7.0 refuses a GPUCluster beside a ClusterPolicy).
        type: str
        choices: [auto, gpucluster, helm]
        default: auto
      dra_driver_version:
        description:
          - The DRA driver image version the GPUCluster runs (C(gpu_operator_dra_driver_version)); any version from
            0.4.0 on. Omitted, the one the GPU Operator release lists for it (its CSV's C(spec.relatedImages)
            C(nvidia-dra-driver-image), O(related_images); else by O(operator_release) or O(alm_examples_release),
            v0.5.0 for v26.7.0), not the older one its alm-examples show. Unknown for the release, it fails, naming
            the variable.
        type: str
      channel:
        description: Pinned Subscription channel (C(gpu_operator_channel)); OpenShift.
        type: str
      install_plan_approval:
        description: Subscription C(installPlanApproval) (C(gpu_operator_install_plan_approval)); OpenShift.
        type: str
        choices: [Automatic, Manual]
        default: Automatic
      catalog_source:
        description: CatalogSource of the Subscription; OpenShift.
        type: str
        default: certified-operators
      catalog_namespace:
        description: Namespace of the CatalogSource; OpenShift.
        type: str
        default: openshift-marketplace
      nfd_install:
        description:
          - OpenShift, also return the Node Feature Discovery operator's Namespace (C(openshift-nfd)), OperatorGroup
            and Subscription (C(nfd) from O(settings.nfd_catalog_source)) in RV(nfd_objects); the GPU Operator needs
            NFD there.
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
      nfd_instance:
        description:
          - The NodeFeatureDiscovery to create once the NFD operator runs (the NFD CSV's alm-examples entry,
            C(gpu_operator_nfd_instance)), returned checked and in C(openshift-nfd) as RV(nfd_instance). Render mode
            needs it for a complete tree; apply mode otherwise takes the installed NFD CSV's own example.
        type: dict
      nfd_instance_required:
        description:
          - Fail when O(settings.nfd_install) is true and O(settings.nfd_instance) is empty (render mode, where no
            installed NFD CSV can supply its example and a tree without a NodeFeatureDiscovery labels no GPU node).
        type: bool
        default: false
      helm_values_extra:
        description: More Helm values (C(gpu_operator_helm_values_extra)); our settings win over them. Kubernetes.
        type: dict
        default: {}
'''
