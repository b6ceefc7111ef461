# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_hosts: the per-host view of the fleet (module_utils/model/fleet.py) every phase consumes; pool_traits: a pool's
row of the pool table, for the plays that run per host; pool_host_state: what host preparation converges a
pool's hosts to (present or absent per thing the collection owns); hosts_pattern_problem: why a host pattern is not one of
pool groups; wanted_devices: the devices KubeVirt must permit, from
the view's VM hosts (module_utils/model/wanted_devices.py). Documentation lives in the sidecars gpu_hosts.yml,
pool_traits.yml, pool_host_state.yml, hosts_pattern_problem.yml and wanted_devices.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

fleet = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.fleet')
wd = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.wanted_devices')
pciids_db = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.pciids')


def gpu_hosts(hostvars, groups, vgpu_configs=None):
    try:
        return fleet.gpu_hosts(hostvars, groups, vgpu_configs)
    except fleet.FleetError as exc:
        raise AnsibleFilterError('gpu_hosts: %s' % exc)


def pool_traits(pool):
    return fleet.pool_traits(pool)


def pool_host_state(pool):
    return fleet.host_prep_state(pool)


def hosts_pattern_problem(pattern):
    return fleet.hosts_pattern_problem(pattern) or ''


def wanted_devices(hosts, pciids=None, include_vfs=False, allow_mixed_profiles=False):
    try:
        return wd.wanted_devices(hosts, pciids_db.from_option(pciids), include_vfs,
                                 allow_mixed_profiles=str(allow_mixed_profiles).lower() == 'true')
    except (wd.WantedDevicesError, pciids_db.PciIdsError) as exc:
        raise AnsibleFilterError('wanted_devices: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'gpu_hosts': gpu_hosts, 'pool_traits': pool_traits, 'pool_host_state': pool_host_state,
                'hosts_pattern_problem': hosts_pattern_problem, 'wanted_devices': wanted_devices}
