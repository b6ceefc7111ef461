#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_labels_plan
short_description: Plan the GPU Operator node labels per pool, refusing pool changes under running VMs
version_added: 0.1.0
description:
  - For each GPU host, finds its one pool from its inventory group (the pool table) and the labels
    C(nvidia.com/gpu.workload.config) and, for vGPU nodes, C(nvidia.com/vgpu.config) it must carry.
  # BEGIN GENERATED group_pool_prose
  - "Group - pool (the pool table): C(gpu_container) - C(container), C(gpu_container_mig) -
    C(container-mig), C(gpu_vm_passthrough) - C(vm-passthrough), C(gpu_vm_vgpu) - C(vm-vgpu) (mdev),
    C(gpu_vm_vgpu) - C(vm-vgpu-vf) (vendor-vfio), C(gpu_dra) - C(dra)."
  # END GENERATED group_pool_prose
  - Compares with the current Node labels and returns one partial Node per node whose labels differ (a value of
    null removes a label), plus a per-node report. Nothing is sent anywhere.
  - Fails, naming them, on a host in two pools, an unknown pool, a node missing from the cluster, a vGPU config
    whose types the node's GPUs do not offer, or a change of pool or vGPU config on a node where
    VirtualMachineInstances run.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  hosts:
    description:
      - C({host, node, groups, pool, vgpu_config, mig_config, facts}); C(pool) (gpuvirt_pool) is optional and must
        agree.
      - C(facts) (the host's C(pci_devices) and C(mdev_types) facts) is optional; with it the vGPU config is checked.
      - C(mig_config) (the fleet view's) is the C(nvidia.com/mig.config) label of a host of a MIG pool (the pool
        table's C(mig)); C(all-balanced) when absent. Checked to be a config the MIG manager generates that creates
        MIG devices (C(all-balanced), C(all-<profile>)).
      - C(gathered) (the fleet view's) false marks a host without GPU facts in this run; in a group whose pool its
        vGPU interface picks (C(gpu_vm_vgpu)), its node's labels are then left alone and the report says why
        (C(left_alone)).
    type: list
    elements: dict
    required: true
  nodes:
    description: Node objects of the cluster; omit when unknown (render mode without cluster state).
    type: list
    elements: dict
  vmis:
    description: VirtualMachineInstance objects of the cluster (all namespaces).
    type: list
    elements: dict
    default: []
  present_nodes:
    description:
      - Render mode, the names of the cluster's Nodes (read from the cluster, or of C(node_labels_current_nodes));
        omitted when not known.
    type: list
    elements: str
  present_unread:
    description: Render mode, why O(present_nodes) is not known, for the warning.
    type: str
    default: ''
attributes:
  check_mode:
    description: Builds data only; nothing changes in any mode.
    support: full
  diff_mode:
    description: Not supported; the role shows the label changes.
    support: none
extends_documentation_fragment:
  # settings (the node labels settings, one mapping): the doc fragment gpuvirt.provision.settings.node_labels
  - gpuvirt.provision.settings.node_labels
'''

EXAMPLES = r'''
- name: Plan the node labels
  gpuvirt.provision.node_labels_plan:
    hosts:
      - {host: gpu-1, node: gpu-1, groups: [gpu_vm_vgpu], vgpu_config: A10-12Q}
    nodes: "{{ nodes.resources }}"
    vmis: "{{ vmis.resources }}"
  register: plan
'''

RETURN = r'''
patches:
  description:
    - Partial Node objects carrying only the labels to change (null removes) and, when it changes, the
      C(gpuvirt.provision/owned-labels) annotation (the deploy labels set to false by this collection, the only
      ones it removes; null removes the record, with O(settings.retire)).
  returned: success
  type: list
  elements: dict
before:
  description:
    - For the diff of M(gpuvirt.provision.node_labels_apply), per patched node, the values the cluster holds now of
      exactly the labels and annotations its patch sets (an absent one left out); empty without cluster state.
  returned: success
  type: dict
message:
  description:
    - The plan as one message, a line per node in the order of O(hosts) (its pool and the labels it sets and
      removes, labels already right, or why it is left alone), saying when its owned-labels record is written.
  returned: success
  type: list
  elements: str
render:
  description:
    - The Node objects a render holds (render mode), each node's labels to set, without removals (a manifest cannot
      hold null; RV(message) names them) and without the labels another controller also writes (the DRA kubelet
      plugin's C(nvidia.com/dra-kubelet-plugin), which the GPU Operator's driver manager pauses during a driver
      upgrade, so a GitOps sync would write C(true) back mid-upgrade), and the owned-labels record when it changes.
  returned: success
  type: list
  elements: dict
render_left_out:
  description:
    - One line per label RV(render) leaves out, naming its nodes and the command that sets it once.
  returned: success
  type: list
  elements: str
render_removals:
  description:
    - Render mode, one line per node whose labels the plan removes, which a render cannot; it names the labels and
      the C(kubectl label node) command that removes them once (a pool-role label of an earlier custom pool puts the
      node in two custom MachineConfigPools, which the Machine Config Operator refuses).
  returned: success
  type: list
  elements: str
absent:
  description: Render mode, the nodes of O(hosts) that are not in O(present_nodes), for which RV(render) holds nothing.
  returned: success
  type: list
  elements: str
report:
  description: >-
    Per node, its pool, the label changes and the labels already right; C(left_alone), why a node's labels were not
    planned (a host without GPU facts in this run whose pool its vGPU interface picks; with O(settings.retire), a node not in
    the cluster); with O(settings.retire), C(kept), the labels of the collection's keys left because their value is not one
    it set or its record does not name them.
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels_settings

# what the run read or was given about the cluster and its hosts: each an option of its own, beside the settings
READS = ('hosts', 'nodes', 'vmis', 'present_nodes', 'present_unread')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # the settings' schema is the record's (manifests/node_labels_settings.py FIELDS): a new setting edits no
            # line here
            settings=dict(type='dict', required=True, options=node_labels_settings.argument_spec()),
            hosts=dict(type='list', elements='dict', required=True),
            nodes=dict(type='list', elements='dict'),
            vmis=dict(type='list', elements='dict', default=[]),
            present_nodes=dict(type='list', elements='str'),
            present_unread=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        settings = node_labels_settings.build(p['settings'])
    except nl.ManifestError as exc:
        module.fail_json(msg=str(exc))
    # the fleet view's entries whole: a field the view gains reaches the builder with no edit here
    wanted, errors = nl.wanted_entries(p['hosts'], settings.vgpu_config_default)
    if errors:
        module.fail_json(msg='\n'.join(errors))
    absent = []
    if settings.render:
        # no Node file for a node the cluster does not have: applied, it would create a Node no kubelet runs
        absent = nl.absent_nodes(wanted, p['present_nodes'])
        for node, host in absent:
            module.warn(nl.ABSENT_NODE % (node, host, node, host))
        if p['present_nodes'] is None and not settings.retire:
            module.warn(nl.UNCHECKED_NODES % (p['present_unread'] or 'no cluster named for the render and no '
                                              'node_labels_current_nodes'))
        wanted = [w for w in wanted if (w['node'], w['host']) not in absent]
    try:
        dra_nodes = [w['node'] for w in wanted if nl.fleet.BY_NAME[w['pool']].dra_driver]
        other_nodes = [w['node'] for w in wanted if not nl.fleet.BY_NAME[w['pool']].dra_driver]
        # the same decision as the operator and kubevirt phases': the GPUCluster or the DRA chart
        patches, report = nl.plan(wanted, p['nodes'], p['vmis'], settings.custom_vgpu_configs(),
                                  settings.pool_selector, settings.dra_selector,
                                  settings.stack(dra_nodes, other_nodes), retire=settings.retire,
                                  pool_selectors=settings.pool_selectors, render=settings.render)
    except nl.ManifestError as exc:
        module.fail_json(msg=str(exc))
    rendered, left_out = nl.render_patches(patches)
    removals = nl.render_removals(patches) if settings.render else []
    for line in removals:
        module.warn(line)
    module.exit_json(changed=False, patches=patches, report=report, message=nl.report_lines(report, patches),
                     before=nl.patch_before(patches, p['nodes']), render=rendered,
                     render_left_out=nl.left_out_lines(left_out), render_removals=removals,
                     absent=[node for node, dummy in absent])


if __name__ == '__main__':
    main()
