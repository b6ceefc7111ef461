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
  - When O(pool) is a dedicated pool the run creates (O(settings.create_pool)), also a C(MachineConfigPool)
    selecting the worker configs and its own, for the nodes labelled C(node-role.kubernetes.io/<pool>) (or
    O(settings.node_selector), for O(settings.pool)).
  - Fails, before anything is written, when O(existing_pools) is given and lacks O(pool) while O(pool) is not a
    dedicated pool the run creates.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  pool:
    description:
      - MachineConfigPool the configuration is for (the pool of the role's loop item). O(settings.name) and
        O(settings.node_selector) are those of O(settings.pool) only; another pool gets the default name and
        selector, and is created with O(settings.create_pool) unless it is built in (C(master), C(worker)).
    type: str
    required: true
  inherit_from:
    description:
      - A pool whose IOMMU MachineConfig this run also writes (C(worker), when O(pool) is a custom pool and
        O(settings.pool) is worker). When O(pool) takes that pool's MachineConfigs (its C(machineConfigSelector) in
        O(pools), or, without it, the pattern of a custom pool, which inherits from worker), the MachineConfig
        returned is that pool's (named as O(settings.name) names it for O(settings.pool), else
        C(100-<inherit_from>-gpuvirt-iommu)), not a second one with the same kernel arguments for O(pool), which the
        render controller would merge into O(pool)'s config as well.
    type: str
  existing_pools:
    description:
      - Names of the cluster's MachineConfigPools; omit in render mode without a cluster. A pool that is not listed
        must be created (O(settings.create_pool)); in apply mode a listed pool is not built again.
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
  # settings (the machineconfig settings, one mapping): the doc fragment gpuvirt.provision.settings.machineconfig
  - gpuvirt.provision.settings.machineconfig
'''

EXAMPLES = r'''
- name: IOMMU and nouveau for a dedicated GPU pool
  gpuvirt.provision.machineconfig_manifests:
    pool: gpu
    settings:
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
  description: Name of the MachineConfig (with O(settings.render), with its content hash).
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
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig_settings

# the pool of the loop item, what the run read from the cluster (in render mode the pool names the inventory gives
# instead), and the pool whose MachineConfig this one inherits (from the pools of the whole fleet): each an option of
# its own, beside the settings
READS = ('pool', 'inherit_from', 'existing_pools', 'expected_nodes', 'nodes', 'pool_selector', 'pools')


def build(p):
    settings = machineconfig_settings.build(p['settings'])
    pool = p['pool']
    # name, node selector and whether the pool is created: the settings' answer for this pool
    create_pool = settings.creates_pool(pool)
    mc.check_pool_exists(pool, p['existing_pools'], create_pool)
    args = mc.iommu_kernel_args(settings.cpu_vendor, settings.iommu_passthrough, settings.extra_kernel_args)
    objects = []
    if mc.renders_pool(pool, create_pool, p['existing_pools'], settings.render):
        objects.append(mc.build_pool(pool, settings.node_selector_of(pool)))
    config = mc.build_machineconfig(pool, args, settings.blacklist_nouveau, settings.machineconfig_name(pool))
    if p['inherit_from'] and mc.takes_configs_of(pool, p['inherit_from'], p['pools']):
        # the same kernel arguments already reach the pool through the inherited pool's MachineConfig
        config = mc.build_machineconfig(p['inherit_from'], args, settings.blacklist_nouveau,
                                        settings.machineconfig_name(p['inherit_from']))
    if settings.render:
        # a content change is a new object; the pool names the one it must run (a GitOps health check reads it)
        config = mc.with_content_name(config)
        objects = [mc.expecting(obj, config['metadata']['name']) for obj in objects]
    selector = (mc.pool_selector(pool, settings.node_selector_of(pool)) if create_pool
                else dict(p['pool_selector'] or {}))
    label_nodes = mc.nodes_into_pool(pool, selector, p['expected_nodes'], p['nodes'], create_pool, pools=p['pools'])
    objects.append(config)
    return dict(objects=objects, machineconfig_name=config['metadata']['name'], kernel_args=args,
                label_nodes=label_nodes, selector=selector)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # the settings' schema is the record's (manifests/machineconfig_settings.py FIELDS): a new setting edits
            # no line here
            settings=dict(type='dict', required=True, options=machineconfig_settings.argument_spec()),
            pool=dict(type='str', required=True),
            inherit_from=dict(type='str'),
            existing_pools=dict(type='list', elements='str'),
            expected_nodes=dict(type='list', elements='str', default=[]),
            nodes=dict(type='list', elements='dict', default=[]),
            pool_selector=dict(type='dict'),
            pools=dict(type='list', elements='dict'),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, mc.ManifestError)


if __name__ == '__main__':
    main()
