# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the node labels settings (O(settings)): one entry per field of
plugins/module_utils/manifests/node_labels_settings.py FIELDS, whose argument_spec() is the module's schema. A unit
test (tests/unit/plugins/module_utils/manifests/test_node_labels_settings.py) holds the names, types, defaults and
choices here equal to the fields; the platforms are generated from the table (make docs)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.node_labels_settings: node_labels_plan
    DOCUMENTATION = r'''
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
