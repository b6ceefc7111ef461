# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade roll's waits: the GPU VMs still on a batch's nodes, the VMs to start again, whether a new operator
release has taken over (module_utils.manifests.upgrade_plan and upgrade_reconcile). Documentation lives in the
sidecars upgrade_vms_left.yml, upgrade_launchers_left.yml, upgrade_restorable.yml and upgrade_operator_pending.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

up = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.upgrade_plan')
ur = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.upgrade_reconcile')


def upgrade_vms_left(vmis, nodes, launchers=None):
    return up.vms_left(vmis, nodes, launchers)


def upgrade_launchers_left(launchers, nodes, vmis=None):
    return up.launchers_left(launchers, nodes, vmis)


def upgrade_restorable(vms, nodes):
    return up.restorable(vms, nodes)


def upgrade_operator_pending(objects, step, pods=None, deployments=None, leases=None):
    try:
        return ur.pending(step, objects, pods, deployments, leases)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {'upgrade_vms_left': upgrade_vms_left, 'upgrade_launchers_left': upgrade_launchers_left,
                'upgrade_restorable': upgrade_restorable, 'upgrade_operator_pending': upgrade_operator_pending}
