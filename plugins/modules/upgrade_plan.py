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
  - Builds the plan C(playbooks/upgrade.yml) follows from objects already read from the cluster and the upgrade
    settings of the inventory (O(settings), one mapping). Nothing is sent anywhere and nothing changes; it does not fail on a refusal, it
    returns it (RV(refusals)), so the play can print the whole plan first.
  - A node is rolled when one of the GPU Operator's operand pods on it belongs to an older revision of its DaemonSet
    (the pod's C(controller-revision-hash) label against the DaemonSet's newest ControllerRevision).
  - Each GPU VMI (C(gpus) or C(hostDevices), or not live-migratable because of a host device) on a node to roll is
    handled by O(settings.vm_policy) or its entry in O(settings.vm_policies) - V(wait), V(stop) or V(refuse). A VMI is on a node by its
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
  # settings (the upgrade settings, one mapping): the doc fragment gpuvirt.provision.settings.upgrade
  node_names:
    description: The GPU nodes this plan covers, in order (C(upgrade_nodes), or one batch of them).
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
        bound to a node counts on that node before its C(status.nodeName) is set.
    type: list
    elements: dict
    default: []
  current:
    description:
      - The running versions read from the cluster, C({gpu_operator, vgpu_manager, kubevirt}). Given, the version
        table compares the target versions of O(settings) with them and refuses what may not be done.
      - Omitted (a batch's plan, the KubeVirt check after the roll), nothing is compared and the KubeVirt version is
        the one O(kubevirt_cr) reports.
    type: dict
  cluster_version:
    description: The Kubernetes version of the cluster (C(1.33.2)).
    type: str
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
  kubevirt_cr:
    description:
      - The live KubeVirt CR (HyperConverged's with O(settings.kubevirt_config=hco)); RV(kubevirt_config) says what
        rendering the collection's configuration again for the target (else running) KubeVirt version changes.
    type: dict
  olm:
    description:
      - "OpenShift: C({subscription, install_plans, csv}), the operator's Subscription (or none), the InstallPlans of
        its namespace (O(settings.gpu_operator_namespace)) and the target's ClusterServiceVersion (or none). With a
        target O(settings.gpu_operator_version) the plan says which InstallPlan to approve (RV(operator)), or to wait
        for the target's CSV when the Subscription reports it installed but it has not succeeded, or refuses -
        C(installPlanApproval) not Manual, a pending plan for another CSV, no plan for the target, a downgrade."
      - Omitted, the OLM step is not planned; given where O(settings.gpu_operator_install) is not V(olm), refused.
    type: dict
  helm:
    description:
      - "Kubernetes: C({release, crds, chart_values, chart_meta}) - the C(kubernetes.core.helm_info) C(status) of the
        operator's Helm release (or none; its name, namespace, chart and version are O(settings.helm_release_name),
        O(settings.gpu_operator_namespace), O(settings.helm_chart_ref) and O(settings.helm_chart_version)), and the
        text of C(helm show crds), C(helm show values) and C(helm show chart) of the target chart. With a target
        O(settings.gpu_operator_version) (which must be O(settings.helm_chart_version)) the plan says whether to
        upgrade the release (RV(operator)) - its CRDs first, each checked to be a CustomResourceDefinition of the
        chart's API groups, NFD's left out when the release's C(nfd.enabled) is false - or refuses: no release, a
        release not deployed, a downgrade, values that would let the operator roll nodes by itself or that the target
        chart does not have. A warning says when the chart's bundled Node Feature Discovery changes version."
      - Omitted, the Helm step is not planned; given where O(settings.gpu_operator_install) is not V(helm), refused.
    type: dict
  settle:
    description:
      - "C({node: {daemonsets: [...], allocatable: {resource: count}}}): instead of only planning, also say what still
        keeps each node from being released - a listed DaemonSet without a Ready pod of its newest revision on the
        node, a stale or unready operand pod, an C(nvidia.com/*) allocatable below its count before the roll."
    type: dict
    default: {}
extends_documentation_fragment:
  - gpuvirt.provision.settings.upgrade
  - gpuvirt.provision.attributes.reads_data
'''

EXAMPLES = r'''
- name: Plan the roll
  gpuvirt.provision.upgrade_plan:
    settings:
      vm_policy: stop
      serial: 1
      vgpu_manager_version: 580.82.02
    node_names: [gpu-1, gpu-2]
    nodes: "{{ nodes.resources }}"
    pods: "{{ pods.resources }}"
    daemonsets: "{{ daemonsets.resources }}"
    revisions: "{{ revisions.resources }}"
    vmis: "{{ vmis.resources }}"
    vms: "{{ vms.resources }}"
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
  description: The nodes to roll, in batches of O(settings.serial).
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
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import upgrade_settings


def build(p):
    settings = up.settings_of(p['settings'])
    result = up.plan(settings, p['node_names'], p['nodes'], p['pods'], p['daemonsets'], p['revisions'], p['vmis'],
                     p['vms'], launchers=p['launchers'], current=p['current'],
                     cluster_version=p['cluster_version'], cluster_policy=p['cluster_policy'],
                     nvidia_drivers=p['nvidia_drivers'], olm=p['olm'], helm=p['helm'],
                     kubevirt_cr=p['kubevirt_cr'])
    by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in p['nodes'])
    result['pending'] = dict(
        (name, up.settle(name, by_name.get(name), p['pods'], p['daemonsets'], p['revisions'],
                         (want or {}).get('daemonsets'), (want or {}).get('allocatable')))
        for name, want in p['settle'].items())
    # 'warnings' is a reserved result key: the module warns them and returns them under another name
    result['warnings_list'] = result.pop('warnings')
    return result


# what the run read from the cluster (or, in render mode, was given) for the plan: every option but the settings
READS = ('node_names', 'nodes', 'pods', 'daemonsets', 'revisions', 'vmis', 'vms', 'launchers', 'current',
         'cluster_version', 'cluster_policy', 'nvidia_drivers', 'kubevirt_cr', 'olm', 'helm', 'settle')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # the settings' schema is the record's (model/upgrade_settings.py FIELDS): a new setting edits no line here
            settings=dict(type='dict', required=True, options=upgrade_settings.argument_spec()),
            node_names=dict(type='list', elements='str', required=True),
            nodes=dict(type='list', elements='dict', default=[]),
            pods=dict(type='list', elements='dict', default=[]),
            daemonsets=dict(type='list', elements='dict', default=[]),
            revisions=dict(type='list', elements='dict', default=[]),
            vmis=dict(type='list', elements='dict', default=[]),
            vms=dict(type='list', elements='dict', default=[]),
            launchers=dict(type='list', elements='dict', default=[]),
            current=dict(type='dict'),
            cluster_version=dict(type='str'),
            cluster_policy=dict(type='dict'),
            nvidia_drivers=dict(type='list', elements='dict', default=[]),
            kubevirt_cr=dict(type='dict'),
            olm=dict(type='dict'),
            helm=dict(type='dict'),
            settle=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, up.PlanError, warnings='warnings_list')


if __name__ == '__main__':
    main()
