# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_hosts: the per-host view of the fleet (module_utils/fleet.py) every phase consumes; pool_traits: a pool's
row of the pool table, for the plays that run per host. Documentation lives in the sidecars gpu_hosts.yml and
pool_traits.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.module_utils import fleet


def gpu_hosts(hostvars, groups, vgpu_configs=None):
    try:
        return fleet.gpu_hosts(hostvars, groups, vgpu_configs)
    except fleet.FleetError as exc:
        raise AnsibleFilterError('gpu_hosts: %s' % exc)


def pool_traits(pool):
    return fleet.pool_traits(pool)


class FilterModule(object):
    def filters(self):
        return {'gpu_hosts': gpu_hosts, 'pool_traits': pool_traits}
