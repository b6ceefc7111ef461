# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discovery filters for data already in hand: parse_lspci, pci_resource_name, mdev_resource_name,
permitted_host_devices, expected_resources, vgpu_config_types. Documentation lives in the sidecar <name>.yml files."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

lspci_mod = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.lspci')
pciids_mod = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.pciids')
rn = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.resource_names')


def _prefix(prefix):
    # the default is resource_names.PREFIX, read when a filter runs: a default argument would import the module
    # when this file loads
    return rn.PREFIX if prefix is None else prefix


def _db(pciids):
    try:
        return pciids_mod.from_option(pciids)
    except pciids_mod.PciIdsError as e:
        raise AnsibleFilterError(str(e))


def parse_lspci(text, pciids=None, vendors=None):
    db = _db(pciids)
    try:
        devices = lspci_mod.parse(text, db.vendor_ids_by_name() if db else None)
    except lspci_mod.LspciError as e:
        raise AnsibleFilterError('parse_lspci: %s' % e)
    if db:  # fill what the plain format lacks, as far as the database knows
        for d in devices:
            if d['vendor_id'] and not d['vendor_name']:
                d['vendor_name'] = db.vendor_name(d['vendor_id'])
    if vendors:
        wanted = [v.lower() for v in ([vendors] if isinstance(vendors, str) else vendors)]
        devices = [d for d in devices if d['vendor_id'] in wanted]
    return devices


def pci_resource_name(device, pciids=None, prefix=None):
    try:
        return rn.pci_resource_name(device, _db(pciids), _prefix(prefix))
    except rn.ResourceNameError as e:
        raise AnsibleFilterError('pci_resource_name: %s' % e)


def mdev_resource_name(type_name, prefix=None):
    try:
        return rn.mdev_resource_name(type_name, _prefix(prefix))
    except rn.ResourceNameError as e:
        raise AnsibleFilterError('mdev_resource_name: %s' % e)


def permitted_host_devices(hosts, pciids=None, include_vfs=False, prefix=None, vgpu_types=None):
    try:
        return rn.permitted_host_devices(hosts, _db(pciids), include_vfs, _prefix(prefix), vgpu_types)
    except rn.ResourceNameError as e:
        raise AnsibleFilterError('permitted_host_devices: %s' % e)


def expected_resources(facts, pool, vgpu_config=None, vgpu_configs=None, pciids=None, prefix=None, mig_config=None,
                       mig_strategy=None):
    try:
        return rn.expected_resources(facts, pool, vgpu_config, vgpu_configs, _db(pciids), _prefix(prefix),
                                     mig_config=mig_config, mig_strategy=mig_strategy)
    except rn.ResourceNameError as e:
        raise AnsibleFilterError('expected_resources: %s' % e)


def vgpu_config_types(config, configs=None):
    return rn.vgpu_config_types(config, configs)


class FilterModule(object):
    def filters(self):
        return {
            'parse_lspci': parse_lspci,
            'pci_resource_name': pci_resource_name,
            'mdev_resource_name': mdev_resource_name,
            'permitted_host_devices': permitted_host_devices,
            'expected_resources': expected_resources,
            'vgpu_config_types': vgpu_config_types,
        }
