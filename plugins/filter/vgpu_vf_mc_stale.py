# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu_vf_mc_stale: the collection's VF MachineConfigs whose pool holds no vendor-VFIO host any more
(module_utils.manifests.machineconfig.vgpu_vf_stale). Documentation lives in the sidecar vgpu_vf_mc_stale.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

mc = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.machineconfig')


def vgpu_vf_mc_stale(machineconfigs, keep_pools):
    try:
        return mc.vgpu_vf_stale(machineconfigs, keep_pools)
    except mc.ManifestError as exc:
        raise AnsibleFilterError('vgpu_vf_mc_stale: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'vgpu_vf_mc_stale': vgpu_vf_mc_stale}
