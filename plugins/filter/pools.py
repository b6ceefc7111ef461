# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_pools: the pools a host's inventory groups put it in; gpu_pool: the one pool, refusing a host in two GPU
groups. Both use the one group -> pool table the node_labels logic uses. Documentation lives in the sidecars
gpu_pools.yml and gpu_pool.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

node_labels = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.node_labels')


def gpu_pools(group_names):
    return node_labels.group_pools(group_names)


def gpu_pool(group_names):
    try:
        return node_labels.group_pool(group_names) or ''
    except node_labels.ManifestError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {'gpu_pools': gpu_pools, 'gpu_pool': gpu_pool}
