# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The devices KubeVirt must permit, straight from the per-host view of the fleet.

``wanted_devices`` takes the VM hosts of :func:`fleet.gpu_hosts` (``[{node, pool, facts, vgpu_types}]``) and
returns what the kubevirt_devices role plans with: ``{'pci_devices': [...], 'mediated_devices': [...]}``, each
entry ``{selector, resource_name, nodes, source}``, one per selector (a PCI ``vendor:device`` or a vGPU type
name), listing the nodes it was found on in host order. The pool table decides which list a host feeds: its row's
``permitted`` column names the KubeVirt list (pciHostDevices: its GPUs, only their VFs for a row of function
``vf``; mediatedDevices: its vGPU types); a pool without one (the container and DRA pools) is refused here, so a
new pool kind is a row in the pool table, not a branch here. An entry of a pool that KubeVirt's own device plugin
serves (advertiser ``kubevirt``) carries ``external: false`` (externalResourceProvider). Resource names come from
the facts (resource_names.permitted_host_devices), never from hand-typed YAML; the HyperConverged/KubeVirt key
names (``pciDeviceSelector``, ``mdevNameSelector``) appear only where the objects are built.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, resource_names

# KubeVirt's permittedHostDevices lists (a pool row's ``permitted`` column): the wanted list each feeds and its
# selector key (kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/types.go PermittedHostDevices:
# pciHostDevices[].pciVendorSelector / mediatedDevices[].mdevNameSelector; HCO's pciDeviceSelector).
PERMITTED = {
    'pciHostDevices': ('pci_devices', 'pciDeviceSelector'),
    'mediatedDevices': ('mediated_devices', 'mdevNameSelector'),
}


def resource_lists():
    """Which list of wanted devices each resource kind KubeVirt permits feeds: {kind: (wanted list, HCO list,
    selector key)}, from the pool table's ``permitted`` column."""
    return dict((row.resource, (PERMITTED[row.permitted][0], row.permitted, PERMITTED[row.permitted][1]))
                for row in fleet.POOL_TABLE if row.permitted)


RESOURCE_LISTS = resource_lists()


class WantedDevicesError(ValueError):
    """A host entry KubeVirt cannot be given devices for (no node, a pool without a VM resource, no facts)."""


def vm_pools():
    """The pools whose nodes advertise a resource KubeVirt permits (pool table order)."""
    return tuple(p.name for p in fleet.POOL_TABLE if p.permitted)


def _checked(host):
    node = host.get('node') if isinstance(host, dict) else None
    pool = host.get('pool') if isinstance(host, dict) else None
    if not isinstance(node, str) or not node or pool not in vm_pools() or not isinstance(host.get('facts'), dict):
        raise WantedDevicesError(
            'kubevirt_devices_hosts entry %s: needs node, pool (%s; got %s) and facts.'
            % (node if isinstance(node, str) and node else host, ' or '.join(vm_pools()),
               pool if pool is not None else 'none'))
    return node, fleet.BY_NAME[pool]


def _functions(facts, row):
    """The host's facts with only the PCI functions its pool hands out: a pool of SR-IOV VFs (function ``vf``)
    permits the VFs, not the PFs they belong to."""
    if row.function != 'vf':
        return facts
    pci = dict(facts.get('pci_devices') or {})
    pci['gpus'] = [g for g in pci.get('gpus') or [] if g.get('is_vf')]
    return dict(facts, pci_devices=pci)


def wanted_devices(hosts, pciids=None, include_vfs=False, prefix=resource_names.PREFIX):
    """The per-host view's VM hosts -> ``{'pci_devices': [...], 'mediated_devices': [...]}`` (module docstring).

    Each host's facts go through resource_names.permitted_host_devices with the vGPU types its config creates;
    an entry keeps the first resource name computed for its selector and gains each node that offers it."""
    out = dict((lst, {}) for lst, sel_key in PERMITTED.values())
    for host in hosts or []:
        node, row = _checked(host)
        lst, sel_key = PERMITTED[row.permitted]
        hco_key = row.permitted
        try:
            found = resource_names.permitted_host_devices([_functions(host['facts'], row)], pciids,
                                                          include_vfs or row.function == 'vf', prefix,
                                                          host.get('vgpu_types') or [],
                                                          external=fleet.ADVERTISERS[row.advertiser])
        except resource_names.ResourceNameError as exc:
            raise WantedDevicesError('%s: %s' % (node, exc))
        for entry in found[hco_key]:
            sel = entry[sel_key]
            cur = out[lst].setdefault(sel, dict({'selector': sel, 'resource_name': entry['resourceName'],
                                                 'nodes': [], 'source': 'facts'},
                                                **({} if entry['externalResourceProvider'] else {'external': False})))
            cur['nodes'].append(node)
    return dict((lst, list(entries.values())) for lst, entries in out.items())
