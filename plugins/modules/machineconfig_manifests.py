#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: machineconfig_manifests
short_description: Build the OpenShift MachineConfig for IOMMU and nouveau, and optionally a GPU pool
version_added: 0.1.0
description:
  - Returns a C(MachineConfig) labelled for O(pool) with the IOMMU C(kernelArguments) (C(intel_iommu=on) plus
    C(iommu=pt) on Intel, C(amd_iommu=on) plus C(iommu=pt) on AMD as the SSH path writes them) and, when asked, the
    nouveau blacklist as an Ignition file
    (C(/etc/modprobe.d/blacklist-nouveau.conf), base64 data URL).
  - With O(create_pool), also a C(MachineConfigPool) selecting the worker configs and its own, for the nodes
    labelled C(node-role.kubernetes.io/<pool>) (or O(node_selector)).
  - Fails, before anything is written, when O(existing_pools) is given and lacks O(pool) while O(create_pool)
    is false.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  pool:
    description: MachineConfigPool the configuration is for.
    type: str
    required: true
  cpu_vendor:
    description: CPU vendor of the pool's nodes.
    type: str
    choices: [intel, amd]
    required: true
  iommu_passthrough:
    description: Add C(iommu=pt).
    type: bool
    default: true
  extra_kernel_args:
    description: More kernel arguments.
    type: list
    elements: str
    default: []
  blacklist_nouveau:
    description: Add the nouveau blacklist file.
    type: bool
    default: true
  name:
    description:
      - MachineConfig name; default C(100-<pool>-gpuvirt-iommu).
      - With O(render) the name gets the short hash of the content, C(<name>-<10 hex digits>) (see O(render)).
    type: str
  create_pool:
    description:
      - Also build a dedicated MachineConfigPool named O(pool); in apply mode only when O(existing_pools) does not
        list it, with O(render) always (see O(render)).
    type: bool
    default: false
  render:
    description:
      - Render mode. With O(create_pool) the pool is always among RV(objects), also when O(existing_pools) lists
        it (the GitOps-created pool is live); a render directory holds every object it manages, so a pool left out
        would be pruned and deleted by the GitOps tool, and its nodes would fall back to worker, lose the IOMMU
        arguments and reboot.
      - The MachineConfig's name ends in the short hash of its content (C(<name>-<10 hex digits>)), so an edit is a
        new object whose old one the GitOps tool prunes, and the rendered pool carries the annotation
        C(gpuvirt.provision/expected-machineconfig) with that name, which the health checks of docs/gitops/ compare
        with the pool's C(status.configuration.source) (healthy only once the pool runs this content).
    type: bool
    default: false
  inherit_from:
    description:
      - A pool whose IOMMU MachineConfig this run also writes (C(worker), when O(pool) is a custom pool and the
        run's C(machineconfig_pool) is worker). When O(pool) takes that pool's MachineConfigs (its
        C(machineConfigSelector) in O(pools), or, without it, the pattern of a custom pool, which inherits from
        worker), the MachineConfig returned is that pool's (named O(inherit_name)), not a second one with the same
        kernel arguments for O(pool), which the render controller would merge into O(pool)'s config as well.
    type: str
  inherit_name:
    description: The name of O(inherit_from)'s MachineConfig; default C(100-<inherit_from>-gpuvirt-iommu).
    type: str
  node_selector:
    description: Node labels the dedicated pool selects.
    type: dict
  existing_pools:
    description:
      - Names of the cluster's MachineConfigPools; omit in render mode without a cluster. A pool that is not listed
        must be created (O(create_pool)); in apply mode a listed pool is not built again.
    type: list
    elements: str
  expected_nodes:
    description:
      - Names of the GPU nodes that must be in the pool (apply mode). A name with no Node in O(nodes) fails.
      - For an existing pool, a node its node selector does not select fails (a MachineConfig only reaches the
        nodes of its pool). For a dedicated pool, the nodes lacking its labels are returned in RV(label_nodes),
        to be labelled before the MachineConfig is applied.
    type: list
    elements: str
    default: []
  nodes:
    description: The cluster's Node objects (as returned by C(kubernetes.core.k8s_info)); with O(expected_nodes).
    type: list
    elements: dict
    default: []
  pool_selector:
    description: The existing pool's C(spec.nodeSelector.matchLabels), read from the cluster.
    type: dict
  pools:
    description:
      - The cluster's MachineConfigPool objects (as returned by C(kubernetes.core.k8s_info)); with O(expected_nodes).
      - Each expected node is then judged as the Machine Config Operator assigns nodes to pools (for a dedicated
        pool, with the labels it would get). The module fails, before any write, for a node another custom pool
        already selects (the operator refuses a node of two custom pools), a control-plane node (master keeps it),
        or, for an existing pool, a node whose pool is another one (master on a compact cluster, a custom pool for
        worker).
    type: list
    elements: dict
extends_documentation_fragment:
  - gpuvirt.provision.attributes
'''

EXAMPLES = r'''
- name: IOMMU and nouveau for a dedicated GPU pool
  gpuvirt.provision.machineconfig_manifests:
    pool: gpu
    cpu_vendor: intel
    create_pool: true
  register: mc
'''

RETURN = r'''
objects:
  description: The MachineConfigPool (when created) then the MachineConfig (with O(inherit_from), possibly that pool's).
  returned: success
  type: list
  elements: dict
machineconfig_name:
  description: Name of the MachineConfig (with O(render), with its content hash).
  returned: success
  type: str
kernel_args:
  description: Kernel arguments set.
  returned: success
  type: list
  elements: str
label_nodes:
  description: Nodes of a dedicated pool to label into it, as C(name) and the C(labels) to merge.
  returned: success
  type: list
  elements: dict
selector:
  description: The node labels the pool selects.
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc


def build(p):
    mc.check_pool_exists(p['pool'], p['existing_pools'], p['create_pool'])
    args = mc.iommu_kernel_args(p['cpu_vendor'], p['iommu_passthrough'], p['extra_kernel_args'])
    objects = []
    if mc.renders_pool(p['pool'], p['create_pool'], p['existing_pools'], p['render']):
        objects.append(mc.build_pool(p['pool'], p['node_selector']))
    config = mc.build_machineconfig(p['pool'], args, p['blacklist_nouveau'], p['name'])
    if p['inherit_from'] and mc.takes_configs_of(p['pool'], p['inherit_from'], p['pools']):
        # the same kernel arguments already reach the pool through the inherited pool's MachineConfig
        config = mc.build_machineconfig(p['inherit_from'], args, p['blacklist_nouveau'], p['inherit_name'])
    if p['render']:
        # a content change is a new object; the pool names the one it must run (a GitOps health check reads it)
        config = mc.with_content_name(config)
        objects = [mc.expecting(pool, config['metadata']['name']) for pool in objects]
    selector = (mc.pool_selector(p['pool'], p['node_selector']) if p['create_pool']
                else dict(p['pool_selector'] or {}))
    label_nodes = mc.nodes_into_pool(
        p['pool'], selector, p['expected_nodes'], p['nodes'], p['create_pool'], pools=p['pools'])
    objects.append(config)
    return dict(objects=objects, machineconfig_name=config['metadata']['name'], kernel_args=args,
                label_nodes=label_nodes, selector=selector)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pool=dict(type='str', required=True),
            cpu_vendor=dict(type='str', choices=['intel', 'amd'], required=True),
            iommu_passthrough=dict(type='bool', default=True),
            extra_kernel_args=dict(type='list', elements='str', default=[]),
            blacklist_nouveau=dict(type='bool', default=True),
            name=dict(type='str'),
            create_pool=dict(type='bool', default=False),
            node_selector=dict(type='dict'),
            existing_pools=dict(type='list', elements='str'),
            expected_nodes=dict(type='list', elements='str', default=[]),
            nodes=dict(type='list', elements='dict', default=[]),
            pool_selector=dict(type='dict'),
            pools=dict(type='list', elements='dict'),
            render=dict(type='bool', default=False),
            inherit_from=dict(type='str'),
            inherit_name=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, mc.ManifestError)


if __name__ == '__main__':
    main()
