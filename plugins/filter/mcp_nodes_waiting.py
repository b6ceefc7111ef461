# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mcp_nodes_waiting: the expected nodes not yet running a pool's rendered config (module_utils.manifests.
machineconfig). Documentation lives in the sidecar mcp_nodes_waiting.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.machineconfig import nodes_waiting


def mcp_nodes_waiting(nodes, expected, rendered):
    return nodes_waiting(nodes, expected, rendered)


class FilterModule(object):
    def filters(self):
        return {'mcp_nodes_waiting': mcp_nodes_waiting}
