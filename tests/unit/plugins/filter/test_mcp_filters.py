# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MachineConfigPool filters as the nodes and machineconfig roles call them: what the filter adds on top of
module_utils/manifests/machineconfig.py (which input is which, the pool judged as the role builds it)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import mcp_nodes_waiting as mcp


def _pool(name, role):
    return {'metadata': {'name': name}, 'spec': {'nodeSelector': {'matchLabels': {'node-role.kubernetes.io/' + role: ''}}}}


def _node(name, *roles):
    return {'metadata': {'name': name, 'labels': dict(('node-role.kubernetes.io/' + r, '') for r in roles)}}


POOLS = [_pool('worker', 'worker'), _pool('other', 'other')]


def test_join_problems_judge_the_dedicated_pool_with_its_labels_added():
    # the pool gpu does not exist yet: the role creates it and labels the node into it. A worker node of no other
    # custom pool can join; one already in the custom pool "other" would be in two custom pools once labelled (the
    # MCO refuses such a node), which only the labels the role adds show
    assert mcp.mcp_join_problems(POOLS, [_node('n1', 'worker')], 'gpu', ['n1']) == ''
    problem = mcp.mcp_join_problems(POOLS, [_node('n1', 'worker', 'other')], 'gpu', ['n1'])
    assert problem.startswith('MachineConfigPool gpu would not hold every GPU node'), problem
    assert 'Node n1 is selected by more than one custom MachineConfigPool (gpu, other)' in problem, problem


def test_host_pools_read_each_hosts_own_pool_else_the_default():
    fleet = [{'host': 'gpu-1', 'node': 'n1'}, {'host': 'gpu-2', 'node': 'n2'}, {'host': 'gpu-3', 'node': 'n3'}]
    hostvars = {'gpu-1': {'gpuvirt_machineconfig_pool': 'gpu-a'}, 'gpu-2': {}}
    assert mcp.mcp_host_pools(fleet, hostvars, 'gpu') == {'n1': 'gpu-a', 'n2': 'gpu', 'n3': 'gpu'}
    # a pool that is no MachineConfigPool name is refused naming the host it came from
    with pytest.raises(AnsibleFilterError, match="host gpu-1: gpuvirt_machineconfig_pool is 'GPU A'"):
        mcp.mcp_host_pools(fleet, dict(hostvars, **{'gpu-1': {'gpuvirt_machineconfig_pool': 'GPU A'}}), 'gpu')
    # anything but the per-host view (a list) is refused
    with pytest.raises(AnsibleFilterError, match='expected the per-host view'):
        mcp.mcp_host_pools({'host': 'gpu-1', 'node': 'n1'}, hostvars, 'gpu')
