# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mcp_nodes_waiting: the expected nodes not yet running a pool's rendered config; mcp_pool_selector: the node
labels a dedicated GPU MachineConfigPool selects; mcp_rendered_with: the pool's rendered configs that hold a
MachineConfig's current content; mcp_join_problems: why GPU nodes could not join a dedicated pool; mcp_host_pools:
each GPU node's pool (a host's gpuvirt_machineconfig_pool); mcp_pool_selectors: the labels each node's pool selects it
by; mcp_pool_groups: the pools of a list of nodes, each with its nodes (module_utils.manifests.machineconfig).
Documentation lives in the sidecars of the same names (mcp_nodes_waiting.yml, ...)."""
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


def mcp_join_problems(pools, nodes, pool, expected, node_selector=None, released=None):
    """The sentence that refuses a dedicated pool's labelling ('' when every expected node can join it)."""
    try:
        name = mc.check_name(pool, 'MachineConfigPool')
        if not isinstance(pools, list) or not isinstance(nodes, list) or not isinstance(expected, list):
            raise mc.ManifestError('expected the MachineConfigPool and Node objects and the node names as lists')
        if released is not None and not isinstance(released, list):
            raise mc.ManifestError('expected the other pools\' selectors as a list')
        problems = mc.pool_join_problems(name, mc.pool_selector(name, node_selector), expected, nodes, True, pools,
                                         released)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('mcp_join_problems: %s' % exc)
    return mc.join_problems_message(name, problems) if problems else ''


def mcp_host_pools(fleet, hostvars, default_pool):
    """{node: pool} for the per-host view's entries: each host's gpuvirt_machineconfig_pool, else the default."""
    try:
        if not isinstance(fleet, list):
            raise mc.ManifestError('expected the per-host view (gpuvirt.provision.gpu_hosts) as a list')
        entries = []
        for entry in fleet:
            host = entry.get('host') if isinstance(entry, dict) else None
            own = hostvars[host] if host in hostvars else {}
            entries.append({'host': host, 'node': entry.get('node') if isinstance(entry, dict) else None,
                            'pool': own.get(mc.HOST_POOL_VAR) if hasattr(own, 'get') else None})
        return mc.host_pools(entries, default_pool)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('mcp_host_pools: %s' % exc)


def mcp_pool_groups(node_pools, nodes, default_pool):
    try:
        return mc.pool_groups(node_pools, nodes, default_pool)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('mcp_pool_groups: %s' % exc)


def mcp_pool_selectors(node_pools, default_pool, default_selector=None):
    try:
        if not isinstance(node_pools, dict):
            raise mc.ManifestError('expected {node: pool} (gpuvirt.provision.mcp_host_pools)')
        return mc.pool_selectors(node_pools, mc.check_name(default_pool, 'machineconfig_pool'), default_selector)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('mcp_pool_selectors: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'mcp_nodes_waiting': mcp_nodes_waiting, 'mcp_pool_selector': mcp_pool_selector,
                'mcp_rendered_with': mcp_rendered_with, 'mcp_join_problems': mcp_join_problems,
                'mcp_host_pools': mcp_host_pools, 'mcp_pool_selectors': mcp_pool_selectors,
                'mcp_pool_groups': mcp_pool_groups}
