# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mcp_nodes_waiting: the expected nodes not yet running a pool's rendered config; mcp_pool_selector: the node
labels a dedicated GPU MachineConfigPool selects; mcp_rendered_with: the pool's rendered configs that hold a
MachineConfig's current content; mcp_join_problems: why GPU nodes could not join a dedicated pool
(module_utils.manifests.machineconfig). Documentation lives in the sidecars mcp_nodes_waiting.yml,
mcp_pool_selector.yml, mcp_rendered_with.yml and mcp_join_problems.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

mc = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.machineconfig')


def mcp_nodes_waiting(nodes, expected, rendered):
    return mc.nodes_waiting(nodes, expected, rendered)


def mcp_pool_selector(pool, node_selector=None):
    try:
        return mc.pool_selector(mc.check_name(pool, 'MachineConfigPool'), node_selector)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('mcp_pool_selector: %s' % exc)


def mcp_rendered_with(machineconfigs, machineconfig, pool):
    try:
        return mc.rendered_with(machineconfigs, machineconfig, pool)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('mcp_rendered_with: %s' % exc)


def mcp_join_problems(pools, nodes, pool, expected, node_selector=None):
    """The sentence that refuses a dedicated pool's labelling ('' when every expected node can join it)."""
    try:
        name = mc.check_name(pool, 'MachineConfigPool')
        if not isinstance(pools, list) or not isinstance(nodes, list) or not isinstance(expected, list):
            raise mc.ManifestError('expected the MachineConfigPool and Node objects and the node names as lists')
        problems = mc.pool_join_problems(name, mc.pool_selector(name, node_selector), expected, nodes, True, pools)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('mcp_join_problems: %s' % exc)
    return mc.join_problems_message(name, problems) if problems else ''


class FilterModule(object):
    def filters(self):
        return {'mcp_nodes_waiting': mcp_nodes_waiting, 'mcp_pool_selector': mcp_pool_selector,
                'mcp_rendered_with': mcp_rendered_with, 'mcp_join_problems': mcp_join_problems}
