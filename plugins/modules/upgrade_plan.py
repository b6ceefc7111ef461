#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: upgrade_plan
short_description: Plan a node-by-node GPU upgrade - versions, node order, GPU VMs per node, refusals
version_added: 0.1.0
description:
  - Builds the plan C(playbooks/upgrade.yml) follows from objects already read from the cluster and the target
    versions of the inventory. Nothing is sent anywhere and nothing changes; it does not fail on a refusal, it
    returns it (RV(refusals)), so the play can print the whole plan first.
  - A node is rolled when one of the GPU Operator's operand pods on it belongs to an older revision of its DaemonSet
    (the pod's C(controller-revision-hash) label against the DaemonSet's newest ControllerRevision).
  - Each GPU VMI (C(gpus) or C(hostDevices), or not live-migratable because of a host device) on a node to roll is
    handled by O(vm_policy) or its entry in O(vm_policies) - V(wait), V(stop) or V(refuse). A VMI is on a node by its
    C(status.nodeName) or by a virt-launcher pod of it bound there (O(launchers)).
  - Says (RV(kubevirt_config)) what rendering the KubeVirt configuration again for the new KubeVirt version changes
    (the C(DisableMDEVConfiguration) gate before v1.8.0, C(mediatedDevicesConfiguration.enabled) from v1.8.0).
  - Refuses a KubeVirt minor version skip or downgrade, a vGPU Manager branch that is not the guests' branch, a
    missing vGPU Manager image tag, a node cordoned by someone else, not Ready or failed by the operator's upgrade
    controller, a GPU VM under V(refuse), and V(stop) for a VMI no VirtualMachine owns or a VM whose run strategy
    it does not give back (C(WaitAsReceiver)).
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  node_names:
    description: The GPU nodes to roll, in order.
    type: list
    elements: str
    required: true
  nodes:
    description: Node objects.
    type: list
    elements: dict
    default: []
  pods:
    description: The pods of the GPU Operator's namespace.
    type: list
    elements: dict
    default: []
  daemonsets:
    description: The DaemonSets of the GPU Operator's namespace.
    type: list
    elements: dict
    default: []
  revisions:
    description: The ControllerRevisions of the GPU Operator's namespace.
    type: list
    elements: dict
    default: []
  vmis:
    description: VirtualMachineInstance objects (all namespaces).
    type: list
    elements: dict
    default: []
  vms:
    description: VirtualMachine objects (all namespaces).
    type: list
    elements: dict
    default: []
  launchers:
    description:
      - The virt-launcher pods (label C(kubevirt.io=virt-launcher), all namespaces). A GPU VMI whose launcher pod is
        bound to a node (C(spec.nodeName)) counts on that node before its C(status.nodeName) is set.
    type: list
    elements: dict
    default: []
  vm_policy:
    description: What happens to a GPU VM on a node to roll.
    type: str
    choices: [wait, stop, refuse]
    default: wait
  vm_policies:
    description: "C({<namespace>/<vmi name>: wait, stop or refuse}), per VM, over O(vm_policy)."
    type: dict
    default: {}
  serial:
    description: Nodes per batch.
    type: int
    default: 1
  current:
    description: The running versions, C({gpu_operator, vgpu_manager, kubevirt}).
    type: dict
    default: {}
  target:
    description: The inventory's target versions, same keys; empty means unchanged.
    type: dict
    default: {}
  guest_driver_branch:
    description: The NVIDIA driver branch the guests run (C(580)); the vGPU Manager must be that branch.
    type: str
  vendor_vfio:
    description: The fleet has NVIDIA vendor-specific VFIO vGPU hosts (they need KubeVirt 1.9.0 or later).
    type: bool
    default: false
  supports:
    description: The target GPU Operator's supported C(kubernetes) and C(kubevirt) minor versions (lists).
    type: dict
  cluster_version:
    description: The Kubernetes version of the cluster (C(1.33.2)).
    type: str
  os_tags:
    description: The OS tags of the vGPU hosts; the vGPU Manager needs C(<version>-<os tag>) for each.
    type: list
    elements: str
    default: []
  image_tags:
    description: The tags the registry holds for the vGPU Manager image; omitted, the tags are not checked.
    type: list
    elements: str
  cluster_policy:
    description:
      - The live ClusterPolicy; when given, its C(daemonsets.updateStrategy) must be V(OnDelete) and its
        C(driver.upgradePolicy.autoUpgrade) false, else the plan refuses (the operator would roll by itself).
    type: dict
  nvidia_drivers:
    description:
      - The live NVIDIADriver objects (the GPUCluster path's driver); each must have
        C(spec.upgradePolicy.autoUpgrade) false, else the plan refuses (the operator would roll its driver pods by
        itself; the CRD defaults an absent C(autoUpgrade) to true).
    type: list
    elements: dict
    default: []
  vf_nodes:
    description:
      - The nodes the fleet view puts in a vendor-specific VFIO vGPU row (vm-vgpu-vf); a node whose labels say so
        (the row's workload and its C(nvidia.com/gpu.deploy.*=false) labels) counts too.
      - A new vGPU Manager pod brings such a node's VFs back without a vGPU profile, and KubeVirt advertises none
        until the profile is set again - each one rolled gets C(vf_reapply) in RV(nodes) (how the roll sets them
        again); one without an inventory host in O(vf_hosts), or (not O(vf_machineconfig)) whose vGPU config is not
        in O(vf_configs), is refused.
    type: list
    elements: str
    default: []
  vf_reapply:
    description: The user re-applies the VF profiles while the roll waits (C(vf_reapply) method V(self), a warning).
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
  vf_machineconfig:
    description:
      - The Machine Config Operator owns the hosts (OpenShift) - the roll restarts the boot-time unit
        C(gpuvirt-vgpu-vf.service) instead of running the vgpu_vf role's apply.
    type: bool
    default: false
  kubevirt_cr:
    description:
      - The live KubeVirt CR (HyperConverged's with O(hco)); RV(kubevirt_config) says what rendering the
        collection's configuration again for the target (else running) KubeVirt version changes.
    type: dict
  hco:
    description: The cluster's KubeVirt configuration is HyperConverged (OpenShift Virtualization).
    type: bool
    default: false
  revalidate_daemonsets:
    description:
      - The DaemonSets (names) whose pods on a rolled node are deleted too, so the node is validated again;
        returned per node as C(revalidate_pods), each pod matched to its DaemonSet by the owner's uid.
    type: list
    elements: str
    default: []
  olm:
    description:
      - "OpenShift: C({subscription, install_plans, namespace, csv}), the operator's Subscription (or none), the
        InstallPlans of its namespace, that namespace and the target's ClusterServiceVersion (or none). With a
        target C(gpu_operator) version the plan says which InstallPlan to approve (RV(operator)), or to wait for the
        target's CSV when the Subscription reports it installed but it has not succeeded, or refuses -
        C(installPlanApproval) not Manual, a pending plan for another CSV, no plan for the target, a downgrade."
      - Omitted, the OLM step is not planned.
    type: dict
  helm:
    description:
      - "Kubernetes: C({release, release_name, namespace, chart, chart_version, crds, chart_values, chart_meta}) -
        the C(kubernetes.core.helm_info) C(status) of the operator's Helm release (or none), its name, namespace and
        chart (C(gpu_operator_chart_ref)), C(gpu_operator_chart_version), and the text of C(helm show crds),
        C(helm show values) and C(helm show chart) of the target chart. With a target C(gpu_operator) version (which
        must be C(chart_version)) the plan says whether to upgrade the release (RV(operator)) - its CRDs first, each
        checked to be a CustomResourceDefinition of the chart's API groups, NFD's left out when the release's
        C(nfd.enabled) is false - or refuses: no release, a release not deployed, a downgrade, values that would let
        the operator roll nodes by itself or that the target chart does not have. A warning says when the chart's
        bundled Node Feature Discovery changes version."
      - Omitted, the Helm step is not planned.
    type: dict
  settle:
    description:
      - "C({node: {daemonsets: [...], allocatable: {resource: count}}}): instead of only planning, also say what still
        keeps each node from being released - a listed DaemonSet without a Ready pod of its newest revision on the
        node, a stale or unready operand pod, an C(nvidia.com/*) allocatable below its count before the roll."
    type: dict
    default: {}
attributes:
  check_mode:
    description: Reads data only; nothing changes in any mode.
    support: full
  diff_mode:
    description: Not supported.
    support: none
'''

EXAMPLES = r'''
- name: Plan the roll
  gpuvirt.provision.upgrade_plan:
    node_names: [gpu-1, gpu-2]
    nodes: "{{ nodes.resources }}"
    pods: "{{ pods.resources }}"
    daemonsets: "{{ daemonsets.resources }}"
    revisions: "{{ revisions.resources }}"
    vmis: "{{ vmis.resources }}"
    vms: "{{ vms.resources }}"
    vm_policy: stop
  register: plan
'''

RETURN = r'''
ok:
  description: No refusal.
  returned: success
  type: bool
refusals:
  description: Why the upgrade may not start, one sentence each naming the node, VM or variable and the fix.
  returned: success
  type: list
  elements: str
versions:
  description: Per component C(from), C(to), C(change).
  returned: success
  type: list
  elements: dict
nodes:
  description: >-
    Per node C(name), C(roll), C(stale_pods), C(vms) (C(namespace), C(name), C(vm), C(vm_uid), C(policy), C(run_strategy),
    C(action)), C(revalidate_pods) (C(name), C(daemonset)), C(gpu_allocatable), C(cordoned_by_upgrade), C(vendor_vfio)
    and C(vf_reapply) (null, or C(method) V(apply), V(restart), V(self) or V(none), C(host), C(config)), and
    C(uncordoned_by): the DaemonSets to replace there whose k8s-driver-manager uncordons the node itself.
  returned: success
  type: list
  elements: dict
operator:
  description: >-
    The operator step: C(action) (V(none); OLM V(approve), V(wait); Helm V(upgrade)), C(installed) and C(target) (the
    CSVs on OLM, the chart versions on Helm), C(plan) (C(name), C(uid), C(resource_version), C(csv)) of the InstallPlan
    to approve or wait for (OLM; null for a wait on the installed target's CSV alone), C(crds) (the target chart's
    CustomResourceDefinitions to apply first, NFD's left out with C(nfd.enabled) false), C(release_values) (the
    release's values, sent with the new chart) and C(warnings) on Helm, C(refusals), C(lines).
  returned: success
  type: dict
kubevirt_config:
  description: >-
    What rendering the KubeVirt configuration again after the roll changes - C(stale) (the live mdev switch is not
    the one the version takes), C(form_now), C(form_after) (V(gate) or V(field)), C(version), C(line).
  returned: success
  type: dict
batches:
  description: The nodes to roll, in batches of O(serial).
  returned: success
  type: list
  elements: list
notes:
  description: What else the upgrade does (a KubeVirt configuration re-render).
  returned: success
  type: list
  elements: str
warnings_list:
  description: What could not be checked.
  returned: success
  type: list
  elements: str
pending:
  description: Per node of O(settle), what still keeps it from being released (empty list when done).
  returned: success
  type: dict
summary:
  description: The plan as lines to print.
  returned: success
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node_names=dict(type='list', elements='str', required=True),
            nodes=dict(type='list', elements='dict', default=[]),
            pods=dict(type='list', elements='dict', default=[]),
            daemonsets=dict(type='list', elements='dict', default=[]),
            revisions=dict(type='list', elements='dict', default=[]),
            vmis=dict(type='list', elements='dict', default=[]),
            vms=dict(type='list', elements='dict', default=[]),
            launchers=dict(type='list', elements='dict', default=[]),
            vm_policy=dict(type='str', choices=list(up.POLICIES), default='wait'),
            vm_policies=dict(type='dict', default={}),
            serial=dict(type='int', default=1),
            current=dict(type='dict', default={}),
            target=dict(type='dict', default={}),
            guest_driver_branch=dict(type='str'),
            vendor_vfio=dict(type='bool', default=False),
            supports=dict(type='dict'),
            cluster_version=dict(type='str'),
            os_tags=dict(type='list', elements='str', default=[]),
            image_tags=dict(type='list', elements='str'),
            settle=dict(type='dict', default={}),
            cluster_policy=dict(type='dict'),
            revalidate_daemonsets=dict(type='list', elements='str', default=[]),
            olm=dict(type='dict'),
            nvidia_drivers=dict(type='list', elements='dict', default=[]),
            vf_nodes=dict(type='list', elements='str', default=[]),
            vf_reapply=dict(type='bool', default=False),
            helm=dict(type='dict'),
            vf_hosts=dict(type='dict', default={}),
            vf_configs=dict(type='list', elements='str', default=[]),
            vf_machineconfig=dict(type='bool', default=False),
            kubevirt_cr=dict(type='dict'),
            hco=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        result = up.plan(p['node_names'], p['nodes'], p['pods'], p['daemonsets'], p['revisions'], p['vmis'],
                         p['vms'], p['vm_policy'], p['vm_policies'], p['serial'], p['current'], p['target'],
                         p['guest_driver_branch'], p['vendor_vfio'], p['supports'], p['cluster_version'],
                         p['os_tags'], p['image_tags'], p['cluster_policy'], p['revalidate_daemonsets'],
                         p['olm'], p['nvidia_drivers'], p['vf_nodes'], p['vf_reapply'], p['helm'], p['vf_hosts'],
                         p['vf_configs'], p['vf_machineconfig'], p['kubevirt_cr'], p['hco'], launchers=p['launchers'])
        by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in p['nodes'])
        result['pending'] = dict(
            (name, up.settle(name, by_name.get(name), p['pods'], p['daemonsets'], p['revisions'],
                             (want or {}).get('daemonsets'), (want or {}).get('allocatable')))
            for name, want in p['settle'].items())
    except up.PlanError as exc:
        module.fail_json(msg=str(exc))
    for warning in result['warnings']:
        module.warn(warning)
    result['warnings_list'] = result.pop('warnings')
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
