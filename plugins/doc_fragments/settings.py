# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of each phase's settings (O(settings)), one attribute per phase, referenced as
gpuvirt.provision.settings.<phase>: one entry per field of the phase's record (FIELDS of
plugins/module_utils/manifests/<phase>_settings.py, model/upgrade_settings.py for the upgrade), whose argument_spec()
is the modules' schema. Each record's unit test (tests/unit/plugins/module_utils/manifests/test_<phase>_settings.py,
model/test_upgrade_settings.py) holds the names, types, defaults and choices here equal to its fields; the platforms
and workloads are generated from the tables (make docs)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.settings.dra: dra_manifests
    DRA = r'''
options:
  settings:
    description:
      - The DRA settings, one mapping built once from the inventory and the platform row (C(roles/dra_driver)
        tasks/main.yml, C(__dra_driver_settings)); its suboptions are the fields of the record the module reads
        (C(plugins/module_utils/manifests/dra_settings.py)). A bad value fails the module - one AnsibleModule
        cannot convert to the suboption's type, or outside its choices, named as the option (C(settings.<field>)); any
        other as its inventory variable. AnsibleModule converts what it can first (a number or a list to text, C(yes)
        to true), so the role passes each flag through its strict boolean check and each version as text.
    type: dict
    required: true
    suboptions:
      cluster_platform:
        description: The cluster platform (C(gpuvirt_cluster.platform)); the GPUCluster is taken on OpenShift only.
        type: str
        choices:
          # BEGIN GENERATED platforms
          - openshift
          - kubernetes
          - rke2
          # END GENERATED platforms
        default: kubernetes
      platform:
        description:
          - Where the KubeVirt gate goes when one is needed; C(kubevirt) the KubeVirt CR, C(hco) the HyperConverged
            C(kubevirt.kubevirt.io/jsonpatch) annotation (HCO overwrites the KubeVirt CR).
        type: str
        choices: [kubevirt, hco]
        default: kubevirt
      driver_mode:
        description:
          - Who installed the NVIDIA driver on the DRA nodes, an explicit choice; omit to derive it from O(settings.operator_driver)
            (true C(operator), false C(host)) or, when that is unknown, from O(pci_facts) (every GPU of every DRA node
            bound to C(nvidia) and no GPU Operator driver C(host)).
          - One that contradicts O(settings.operator_driver) (C(host) or C(gke) while the operator's driver is enabled, C(operator)
            while it is disabled) fails, naming both values.
        type: str
        choices: [host, operator, gke]
      operator_driver:
        description:
          - Whether the GPU Operator runs its driver container on the DRA nodes (its ClusterPolicy / Helm
            C(driver.enabled)); omit when no GPU Operator manages these nodes.
        type: bool
      node_selector:
        description:
          - Node labels the kubelet plugin is restricted to, besides C(nvidia.com/dra-kubelet-plugin=true) (always part
            of the selector). The nodes phase puts them on the DRA nodes; with O(nodes), a DRA node lacking one, or a
            node outside O(dra_nodes) carrying them all, fails.
        type: dict
      claim_templates:
        description:
          - Claim templates to build, each C(name), C(namespace) and optional C(count) (default 1).
          - C(count) GPUs are C(count) claim requests of one device each, at most 32; C(dra-gpu) for one GPU,
            C(dra-gpu-1) to C(dra-gpu-N) for more.
        type: list
        elements: dict
        default: []
      kubevirt_version:
        description: KubeVirt version (C(1.8.2)); omit to skip the gate decision.
        type: str
      stack:
        description:
          - Which DRA stack serves the O(dra_nodes) (C(dra_driver_stack)); V(auto) takes the GPU Operator's own
            GPUCluster (written by the operator phase) on OpenShift when O(other_nodes) is empty, else the chart;
            V(gpucluster) where it cannot serve fails, naming the reason.
        type: str
        choices: [auto, gpucluster, helm]
        default: auto
'''

    # gpuvirt.provision.settings.gpu_operator: gpu_operator_manifests
    GPU_OPERATOR = r'''
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

    # gpuvirt.provision.settings.kubevirt_devices: hco_permitted_devices, kubevirt_permitted_devices
    KUBEVIRT_DEVICES = r'''
options:
  settings:
    description:
      - The kubevirt devices settings, one mapping built once from the inventory and the run's mode
        (C(roles/kubevirt_devices) tasks/main.yml, C(__kubevirt_devices_settings)) and given whole to both modules
        that merge into a CR; its suboptions are the fields of the record they read
        (C(plugins/module_utils/manifests/kubevirt_devices_settings.py)). M(gpuvirt.provision.hco_permitted_devices)
        reads the C(hco_*) fields, O(settings.disable_mdev_configuration) and O(settings.adopt_conflicting);
        M(gpuvirt.provision.kubevirt_permitted_devices) the C(kubevirt_*) fields, O(settings.feature_gates) and
        O(settings.disable_mdev_configuration).
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        or a list to text, C(yes) to true), so the role passes each flag through its strict boolean check and each
        version as text.
    type: dict
    required: true
    suboptions:
      disable_mdev_configuration:
        description:
          - Turn KubeVirt's mediated device handling off (the GPU Operator creates the mediated devices) -
            HyperConverged's C(featureGates.disableMDevConfiguration) where its CRD has it, else the jsonpatch
            annotation; the KubeVirt CR's C(mediatedDevicesConfiguration.enabled) or the gate, by
            O(settings.kubevirt_version) (C(kubevirt_devices_disable_mdev_configuration)).
        type: bool
        default: true
      adopt_conflicting:
        description:
          - HyperConverged, when a foreign entry uses one of our selectors with another resource name, replace it
            (and own it) instead of failing (C(kubevirt_devices_adopt_conflicting)).
        type: bool
        default: false
      hco_version:
        description:
          - HCO version (C(1.x)) or OpenShift Virtualization version (C(4.x), which ships HCO C(1.(x-4)))
            (C(kubevirt_devices_hco_version)), used where HCO's CRD was not read (C(gate_supported) omitted); one
            that is not C(MAJOR.MINOR[.PATCH]) is refused, an empty one is none.
        type: str
      hco_name:
        description: HyperConverged name (the CRD admits only C(kubevirt-hyperconverged)) (C(kubevirt_devices_hco_name)).
        type: str
        default: kubevirt-hyperconverged
      hco_namespace:
        description: HyperConverged namespace (C(kubevirt_devices_hco_namespace)).
        type: str
        default: openshift-cnv
      kubevirt_version:
        description:
          - The KubeVirt release the cluster runs (SemVer, for example C(v1.9.0); C(kubevirt_devices_kubevirt_version),
            which the role gives in render mode only); decides between the field and the gate, and leaves out a
            C(GPU) gate of O(settings.feature_gates) from v1.5.0 on (GA there).
          - When omitted (or empty), O(current)'s C(status.observedKubeVirtVersion) is used; without either the module
            fails, naming both.
        type: str
      feature_gates:
        description:
          - Feature gates of the KubeVirt CR that must be on (others in the CR are kept); the role asks for C(GPU).
            C(DisableMDEVConfiguration) here is read as O(settings.disable_mdev_configuration).
        type: list
        elements: str
        default: [GPU]
      kubevirt_name:
        description: KubeVirt CR name (C(kubevirt_devices_kubevirt_name)).
        type: str
        default: kubevirt
      kubevirt_namespace:
        description: KubeVirt CR namespace (C(kubevirt_devices_kubevirt_namespace)).
        type: str
        default: kubevirt
'''

    # gpuvirt.provision.settings.machineconfig: machineconfig_manifests
    MACHINECONFIG = r'''
options:
  settings:
    description:
      - The machineconfig settings, one mapping built once from the inventory and the run's mode
        (C(roles/machineconfig) tasks/main.yml, C(__machineconfig_settings)) and given whole for each pool of the
        GPU nodes; its suboptions are the fields of the record the module reads
        (C(plugins/module_utils/manifests/machineconfig_settings.py)).
      - They are the run's, the same for every pool - O(settings.name) and O(settings.node_selector) apply to
        O(settings.pool) only, and O(settings.create_pool) creates O(settings.pool) and every other pool that is
        not built in.
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        or a list to text, C(yes) to true), so the role passes each flag through its strict boolean check and each
        version as text.
    type: dict
    required: true
    suboptions:
      cpu_vendor:
        description:
          - CPU vendor of the GPU nodes (C(machineconfig_cpu_vendor)); required.
        type: str
        choices: [intel, amd]
      iommu_passthrough:
        description: Add C(iommu=pt) (C(machineconfig_iommu_passthrough)).
        type: bool
        default: true
      extra_kernel_args:
        description: More kernel arguments (C(machineconfig_extra_kernel_args)).
        type: list
        elements: str
        default: []
      blacklist_nouveau:
        description: Add the nouveau blacklist file (C(machineconfig_blacklist_nouveau)).
        type: bool
        default: true
      pool:
        description:
          - The run's main MachineConfigPool (C(machineconfig_pool)), the one O(settings.name) and
            O(settings.node_selector) are for.
        type: str
        default: worker
      name:
        description:
          - The MachineConfig name of O(settings.pool) (C(machineconfig_name)); empty or omitted,
            C(100-<pool>-gpuvirt-iommu), as every other pool's.
          - With O(settings.render) the name gets the short hash of the content, C(<name>-<10 hex digits>) (see
            O(settings.render)).
        type: str
      create_pool:
        description:
          - Build a dedicated MachineConfigPool for O(settings.pool) and for every other pool that is not built in
            (C(machineconfig_create_pool)); in apply mode only when O(existing_pools) does not list it, with
            O(settings.render) always (see O(settings.render)).
        type: bool
        default: false
      node_selector:
        description:
          - Node labels the dedicated pool O(settings.pool) selects (C(machineconfig_node_selector)); empty,
            C(node-role.kubernetes.io/<pool>), as every other dedicated pool's.
        type: dict
        default: {}
      render:
        description:
          - Render mode (the run's C(gpuvirt_cluster.mode) is C(render)). With a dedicated pool the pool is always
            among RV(objects), also when O(existing_pools) lists it (the GitOps-created pool is live); a render
            directory holds every object it manages, so a pool left out would be pruned and deleted by the GitOps
            tool, and its nodes would fall back to worker, lose the IOMMU arguments and reboot.
          - The MachineConfig's name ends in the short hash of its content (C(<name>-<10 hex digits>)), so an edit is
            a new object whose old one the GitOps tool prunes, and the rendered pool carries the annotation
            C(gpuvirt.provision/expected-machineconfig) with that name, which the health checks of docs/gitops/
            compare with the pool's C(status.configuration.source) (healthy only once the pool runs this content).
        type: bool
        default: false
'''

    # gpuvirt.provision.settings.node_labels: node_labels_plan
    NODE_LABELS = r'''
options:
  settings:
    description:
      - The node labels settings, one mapping built once from the inventory and the platform row
        (C(roles/node_labels) tasks/main.yml, C(__node_labels_settings)); its suboptions are the fields of the record
        the planner reads (C(plugins/module_utils/manifests/node_labels_settings.py)). A bad value fails the module - one AnsibleModule
        cannot convert to the suboption's type, or outside its choices, named as the option (C(settings.<field>)); any
        other as its inventory variable. AnsibleModule converts what it can first (a number or a list to text, C(yes)
        to true), so the role passes each flag through its strict boolean check and each version as text.
    type: dict
    required: true
    suboptions:
      cluster_platform:
        description: The cluster platform (C(gpuvirt_cluster.platform)); the GPUCluster is taken on OpenShift only.
        type: str
        choices:
          # BEGIN GENERATED platforms
          - openshift
          - kubernetes
          - rke2
          # END GENERATED platforms
        default: kubernetes
      vgpu_config_default:
        description: vGPU config name for vGPU hosts without C(vgpu_config).
        type: str
      vgpu_configs:
        description:
          - The custom vGPU configs (as given to the gpu_operator role); omit when the operator's default ConfigMap
            is used.
          - A vGPU node's config must be one of them, or with the default ConfigMap a vGPU type name; when the host
            item carries C(facts) (C(pci_devices), C(mdev_types)) every type of the config must be offered by its GPUs.
        type: dict
      pool_selector:
        description:
          - The node labels of a dedicated OpenShift MachineConfigPool for the GPU nodes that need the IOMMU (the
            C(vm-passthrough), C(vm-vgpu) and C(dra) pools), as that pool's C(spec.nodeSelector.matchLabels).
          - Those nodes get the labels, so that the pool's IOMMU MachineConfig reaches them; any other GPU node loses
            a label that carries exactly this value. Omit when there is no dedicated pool.
        type: dict
      pool_selectors:
        description:
          - "Per node (C({node: labels})), the node labels of the MachineConfigPool that node is in, instead of
            O(settings.pool_selector) (a host in a pool of its own, C(gpuvirt_machineconfig_pool); C({}) for a built-in pool)."
          - Every GPU node loses each label of another of these pools (or of O(settings.pool_selector)) that it carries with
            exactly that value, since the Machine Config Operator refuses a node that two custom pools select.
        type: dict
        default: {}
      dra_selector:
        description:
          - The DRA kubelet plugin's node selector given by the user (C(dra_driver_node_selector)). The C(dra) nodes
            get its labels, so that the plugin runs there; any other GPU node loses a label that carries exactly this
            value. The C(dra) nodes always get C(nvidia.com/dra-kubelet-plugin=true), the label the GPU Operator's
            driver manager evicts the plugin by before a driver upgrade.
        type: dict
      retire:
        description:
          - The O(hosts) leave the fleet (C(playbooks/retire.yml)). Each node loses the labels the collection wrote on a
            node of its pool, only where it carries exactly the value the collection sets (an operand label set to
            C(false) only when the node's C(gpuvirt.provision/owned-labels) record names it), and that record; every
            other label stays (NFD's, the GPU Operator's, an administrator's other value).
          - A node not in the cluster has nothing to take back; VirtualMachineInstances running on a node refuse it,
            naming them. A node without a record and without the workload value of its pool was retired already (or
            never labelled), so no operand label there is taken for the collection's.
        type: bool
        default: false
      dra_stack:
        description:
          - Which DRA stack serves the C(dra) nodes (C(dra_driver_stack)); V(auto) takes the GPU Operator's own
            GPUCluster on OpenShift when every host is a C(dra) host, else the chart.
          - With the GPUCluster the C(dra) nodes do not get C(nvidia.com/gpu.deploy.device-plugin), C(dcgm) and
            C(dcgm-exporter) C(=false) (no ClusterPolicy deploys them, and the GPU Operator deletes those labels from
            every GPU node while a GPUCluster exists); a leftover C(false) of ours is removed.
        type: str
        choices: [auto, gpucluster, helm]
        default: auto
      render:
        description:
          - Render mode. A host whose node is not in O(present_nodes) gets no Node object in RV(render) (applied by a
            GitOps tool, it would create a Node no kubelet runs, whose name OpenShift's machine approver then refuses to
            the real kubelet), with a warning naming it; without O(present_nodes) one warning says the nodes could not
            be checked. A label the plan removes (a render cannot) is warned about with the C(kubectl label) command that
            removes it (RV(render_removals)).
        type: bool
        default: false
'''

    # gpuvirt.provision.settings.upgrade: upgrade_plan
    UPGRADE = r'''
options:
  settings:
    description:
      - The upgrade settings, one mapping built once from the inventory, the fleet view and the platform row
        (C(roles/upgrade) tasks/main.yml); its suboptions are the fields of the record the builders read
        (C(plugins/module_utils/model/upgrade_settings.py)). A bad value fails the module - one AnsibleModule
        cannot convert to the suboption's type, or outside its choices, named as the option (C(settings.<field>)); any
        other as its inventory variable. AnsibleModule converts what it can first (a number or a list to text, C(yes)
        to true), so the role passes each flag through its strict boolean check and each version as text.
    type: dict
    required: true
    suboptions:
      vm_policy:
        description: What happens to a GPU VM on a node to roll (C(upgrade_vm_policy)).
        type: str
        choices: [wait, stop, refuse]
        default: wait
      vm_policies:
        description: "C({<namespace>/<vmi name>: wait, stop or refuse}), per VM, over O(settings.vm_policy) (C(upgrade_vm_policies))."
        type: dict
        default: {}
      serial:
        description: Nodes per batch (C(upgrade_serial)), a whole number of 1 or more.
        type: int
        default: 1
      gpu_operator_version:
        description:
          - The target GPU Operator release (C(upgrade_gpu_operator_version)); empty leaves it as it runs. On Helm it
            must be O(settings.helm_chart_version).
        type: str
        default: ""
      vgpu_manager_version:
        description: The target vGPU Manager version (C(vgpu_manager_image_version)); empty leaves it as it runs.
        type: str
        default: ""
      kubevirt_version:
        description: The target KubeVirt version (C(upgrade_kubevirt_version)); empty leaves it as it runs.
        type: str
        default: ""
      guest_driver_branch:
        description:
          - The NVIDIA driver branch the guests run (C(580), C(upgrade_guest_driver_branch)); the vGPU Manager must be
            that branch. Empty, the branch is not checked (a warning says so).
        type: str
        default: ""
      supports:
        description:
          - The target GPU Operator's supported C(kubernetes) and C(kubevirt) minor versions (lists,
            C(upgrade_gpu_operator_supports)); empty, they are not checked (a warning says so).
        type: dict
        default: {}
      os_tags:
        description: The OS tags of the vGPU hosts; the vGPU Manager needs C(<version>-<os tag>) for each.
        type: list
        elements: str
        default: []
      image_tags:
        description: The tags the registry holds for the vGPU Manager image (C(upgrade_image_tags)); omitted, the tags are not checked.
        type: list
        elements: str
      revalidate_daemonsets:
        description:
          - The DaemonSets (names) whose pods on a rolled node are deleted too, so the node is validated again
            (C(upgrade_revalidate_daemonsets)); returned per node as C(revalidate_pods), each pod matched to its
            DaemonSet by the owner's uid.
        type: list
        elements: str
        default: []
      vendor_vfio:
        description: The fleet has NVIDIA vendor-specific VFIO vGPU hosts (they need KubeVirt 1.9.0 or later).
        type: bool
        default: false
      vf_nodes:
        description:
          - The nodes the fleet view puts in a vendor-specific VFIO vGPU row (vm-vgpu-vf); a node whose labels say so
            (the row's workload and its C(nvidia.com/gpu.deploy.*=false) labels) counts too.
          - A new vGPU Manager pod brings such a node's VFs back without a vGPU profile, and KubeVirt advertises none
            until the profile is set again - each one rolled gets C(vf_reapply) in RV(nodes) (how the roll sets them
            again); one without an inventory host in O(settings.vf_hosts), or (not on a MachineConfig platform) whose
            vGPU config is not in O(settings.vf_configs), is refused.
        type: list
        elements: str
        default: []
      vf_reapply:
        description:
          - The user re-applies the VF profiles while the roll waits (C(upgrade_vgpu_vf_reapply); C(vf_reapply) method
            V(self), a warning).
        type: bool
        default: false
      vf_hosts:
        description: "C({<node>: {host, config}}) - the inventory host of each vendor-specific VFIO node and its vGPU config name."
        type: dict
        default: {}
      vf_configs:
        description: The vGPU config names the inventory defines (the keys of C(gpu_operator_vgpu_configs)).
        type: list
        elements: str
        default: []
      gpu_operator_install:
        description:
          - How the GPU Operator is installed, the platform's trait (C(gpuvirt_cluster.traits.gpu_operator_install));
            the operator step planned is this one, O(olm) or O(helm).
        type: str
        choices: [olm, helm]
        default: helm
      gpu_operator_namespace:
        description: The GPU Operator's namespace (C(gpu_operator_namespace), else the platform's).
        type: str
        default: gpu-operator
      kernel_args:
        description:
          - Where the hosts' kernel arguments go, the platform's trait (C(gpuvirt_cluster.traits.kernel_args)). With
            V(machineconfig) the Machine Config Operator owns the hosts, and the roll restarts the boot-time unit
            C(gpuvirt-vgpu-vf.service) instead of running the vgpu_vf role's apply.
        type: str
        choices: [machineconfig, host]
        default: host
      kubevirt_config:
        description:
          - The CR that holds KubeVirt's configuration (C(gpuvirt_cluster.kubevirt_config)); V(hco) is
            HyperConverged (OpenShift Virtualization).
        type: str
        choices: [hco, kubevirt]
        default: kubevirt
      helm_release_name:
        description: The operator's Helm release (C(gpu_operator_release_name)); Helm platforms.
        type: str
        default: ""
      helm_chart_ref:
        description: The operator's chart (C(gpu_operator_chart_ref)); Helm platforms.
        type: str
        default: ""
      helm_chart_version:
        description: The chart version playbooks/operator.yml installs (C(gpu_operator_chart_version)); Helm platforms.
        type: str
        default: ""
'''

    # gpuvirt.provision.settings.verify: verify_smoke_vm
    VERIFY = r'''
options:
  settings:
    description:
      - The verify settings, one mapping built once from the inventory (C(roles/verify) tasks/main.yml,
        C(__verify_settings)); its suboptions are the fields of the record the module reads
        (C(plugins/module_utils/manifests/verify_settings.py)).
      - Each ends up in the VirtualMachine (and, rendered, in a file a GitOps tool applies), so each is checked
        against its grammar before the object exists.
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        or a list to text, C(yes) to true), so the role passes the flag through its strict boolean check.
    type: dict
    required: true
    suboptions:
      name:
        description: VM name (C(verify_smoke_vm_name)), a DNS-1123 subdomain.
        type: str
        default: gpuvirt-smoke
      namespace:
        description: VM namespace (C(verify_smoke_vm_namespace)), a DNS-1123 label.
        type: str
        default: default
      resource:
        description:
          - Device plugin resource the VM asks one GPU of, e.g. C(nvidia.com/GA102GL_A10)
            (C(verify_smoke_vm_resource)).
          - Empty or omitted, the first resource O(expected) holds (the run's, from the host facts); with neither
            the module fails, naming C(verify_smoke_vm_resource).
        type: str
      image:
        description:
          - containerDisk image (C(verify_smoke_vm_image)), an OCI reference C(registry/path[:tag][@digest]);
            required.
        type: str
      memory:
        description: Memory request, a Kubernetes quantity (no inventory variable; the role leaves the default).
        type: str
        default: 2Gi
      running:
        description:
          - Start the VM (C(runStrategy=Always)) instead of creating it halted (C(verify_smoke_vm_running)).
        type: bool
        default: false
'''

    # gpuvirt.provision.settings.vgpu_vf_machineconfig: vgpu_vf_machineconfig
    VGPU_VF_MACHINECONFIG = r'''
options:
  settings:
    description:
      - The settings of the C(vgpu_vf) role's cluster step, one mapping built once from the inventory
        (C(roles/vgpu_vf) tasks/machineconfig.yml, C(__vgpu_vf_machineconfig_settings)); its suboptions are the
        fields of the record the module reads (C(plugins/module_utils/manifests/vgpu_vf_machineconfig_settings.py)).
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        to text, a decimal text to a whole number).
    type: dict
    required: true
    suboptions:
      pool:
        description:
          - The MachineConfigPool that manages exactly the hosts' nodes (C(vgpu_vf_machineconfig_pool)), a DNS-1123
            label; the MachineConfig's role label and name.
        type: str
        default: worker
      python:
        description:
          - The Python 3 interpreter the unit runs the restore script with (C(vgpu_vf_python)), by the unit's path
            grammar (a normalised absolute path of letters, digits and ._/-).
        type: str
        default: /usr/bin/python3
      timeout:
        description:
          - Seconds (10 to 3600) the restore waits at boot for the driver's sysfs files (C(vgpu_vf_wait_timeout));
            the unit's C(TimeoutStartSec) follows it.
        type: int
        default: 300
      sysfs_root:
        description:
          - The sysfs root the restore reads at boot (C(vgpu_vf_machineconfig_sysfs_root); C(/sys) on a node), by the
            unit's path grammar; it replaces each host's own in the config.
        type: str
        default: /sys
      sriov_manage:
        description:
          - NVIDIA's script that enables VFs at boot (C(vgpu_vf_machineconfig_sriov_manage)), by the unit's path
            grammar; where it is not on the node (the GPU Operator's vGPU Manager container enables them), the
            restore waits for the VFs and never writes C(sriov_numvfs).
        type: str
        default: /usr/lib/nvidia/sriov-manage
'''
