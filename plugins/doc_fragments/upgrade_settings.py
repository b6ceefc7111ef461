# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the upgrade settings (O(settings)): one entry per field of
plugins/module_utils/model/upgrade_settings.py FIELDS, whose argument_spec() is the modules' schema. A unit test
(tests/unit/plugins/module_utils/model/test_upgrade_settings.py) holds the names, types, defaults and choices here
equal to the fields."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.upgrade_settings: upgrade_plan
    DOCUMENTATION = r'''
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
