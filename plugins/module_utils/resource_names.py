# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes resource names for GPUs, as KubeVirt VMs request them and HCO must permit them
(docs/pools/passthrough.md and docs/pools/vgpu.md, Resource names)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.vgpu_names import full_type_name, reported_short_name, short_type_name

PREFIX = 'nvidia.com/'


class ResourceNameError(ValueError):
    pass


def pci_name_part(device_name):
    """The KubeVirt GPU device plugin's naming: upper-case, "/", "." and whitespace -> "_", every other
    character outside [A-Za-z0-9_] dropped. "GA102GL [A10]" -> "GA102GL_A10"."""
    if not isinstance(device_name, str) or not device_name.strip():
        raise ResourceNameError('a PCI device name is needed to build a resource name, got %r; pass the device '
                                'dict from pci_devices or its device_name' % (device_name,))
    name = re.sub(r'[/.\s]', '_', device_name.strip().upper())
    return re.sub(r'[^A-Za-z0-9_]', '', name)


def mdev_name_part(type_name):
    """vGPU type name with whitespace -> "_": "NVIDIA A10-12Q" -> "NVIDIA_A10-12Q"."""
    if not isinstance(type_name, str) or not type_name.strip():
        raise ResourceNameError('a vGPU type name such as "NVIDIA A10-12Q" is needed, got %r' % (type_name,))
    return re.sub(r'\s', '_', type_name.strip())


def selector(vendor_id, device_id):
    """HCO pciDeviceSelector: VENDOR:DEVICE upper-case hex ("10DE:2236")."""
    for label, value in (('vendor_id', vendor_id), ('device_id', device_id)):
        if not isinstance(value, str) or not re.fullmatch(r'[0-9a-fA-F]{4}', value):
            raise ResourceNameError('%s %r is not 4 hex digits (such as 10de / 2236)' % (label, value))
    return ('%s:%s' % (vendor_id, device_id)).upper()


def pci_resource_name(device, pciids=None, prefix=PREFIX):
    """``device``: a pci_devices entry (dict) or a device name. With ``pciids`` (a PciIds) the name comes from
    that database by vendor/device id, as the plugin does with the pci.ids in its image; the device's own
    device_name is the fallback."""
    name = device
    if isinstance(device, dict):
        name = None
        if pciids is not None and device.get('vendor_id') and device.get('device_id'):
            name = pciids.device_name(device['vendor_id'], device['device_id'])
        name = name or device.get('device_name')
        if not name:
            raise ResourceNameError('device %s has no device_name and its id %s:%s is not in %s'
                                    % (device.get('bdf'), device.get('vendor_id'), device.get('device_id'),
                                       getattr(pciids, 'path', None) or 'the given pci.ids'))
    return prefix + pci_name_part(name)


def mdev_resource_name(type_name, prefix=PREFIX):
    if isinstance(type_name, dict):
        type_name = type_name.get('name')
    return prefix + mdev_name_part(type_name)


def _facts(host):
    """Accept {'pci_devices': ..., 'mdev_types': ...} or the registered fact names gpuvirt_pci_devices / ..."""
    if not isinstance(host, dict):
        raise ResourceNameError('each host entry must be a dict with pci_devices / mdev_types facts, got %s'
                                % type(host).__name__)
    pci = host.get('pci_devices', host.get('gpuvirt_pci_devices')) or {}
    mdev = host.get('mdev_types', host.get('gpuvirt_mdev_types')) or {}
    return pci, mdev


def _add_mdev(entries, name, prefix):
    entries.setdefault(name, {'mdevNameSelector': name, 'resourceName': mdev_resource_name(name, prefix),
                              'externalResourceProvider': True})


def permitted_host_devices(hosts, pciids=None, include_vfs=False, prefix=PREFIX, vgpu_types=None):
    """Facts of many hosts -> deduplicated HCO permittedHostDevices lists.

    pciHostDevices come from the GPUs (PFs; VFs only with ``include_vfs``), one entry per vendor:device;
    mediatedDevices from every vGPU type offered on any parent, one per type name, or only the types named in
    ``vgpu_types`` (short or full names: the types a node's vGPU config creates, which are all its device plugin
    advertises); a host that shows no vGPU interface yet (the vGPU Manager is not loaded: a first run, or a render
    from facts gathered before) gets its ``vgpu_types`` under the name the vGPU Manager will report
    (:func:`full_type_name`). Entries are sorted so the result is stable whatever the host order."""
    keep = set(short_type_name(t) for t in vgpu_types or [])
    if isinstance(hosts, dict):
        hosts = [hosts]
    pci, mdev = {}, {}
    for host in hosts or []:
        pci_facts, mdev_facts = _facts(host)
        gpus = pci_facts.get('gpus')
        if gpus is None:
            gpus = [d for d in pci_facts.get('devices', []) if d.get('kind') == 'gpu']
        for gpu in gpus:
            if gpu.get('is_vf') and not include_vfs:
                continue
            sel = selector(gpu.get('vendor_id') or '10de', gpu.get('device_id'))
            pci.setdefault(sel, {'pciDeviceSelector': sel, 'resourceName': pci_resource_name(gpu, pciids, prefix),
                                 'externalResourceProvider': True})
        for parent in mdev_facts.get('parents', []):
            wanted = [t for t in parent.get('types', [])
                      if t.get('name') and (not keep or short_type_name(t['name']) in keep)]
            if wanted and parent.get('interface') == 'vendor_vfio':
                # KubeVirt's mediated devices are found on the mdev bus only (kubevirt/kubevirt
                # pkg/virt-handler/device-manager/mediated_device.go): this entry could never match.
                raise ResourceNameError(
                    'vGPU type %s is offered on %s through NVIDIA\'s vendor-specific VFIO interface '
                    '(nvidia/creatable_vgpu_types, no mdev bus): a mediatedDevices entry would never match; move the '
                    'host to gpu_vm_passthrough or out of gpu_vm_vgpu until vGPU creation there is supported'
                    % (wanted[0]['name'], parent.get('parent')))
            for t in wanted:
                _add_mdev(mdev, t['name'], prefix)
        if not mdev_facts.get('parents'):
            for short in sorted(keep):
                _add_mdev(mdev, full_type_name(short), prefix)
    return {'pciHostDevices': [pci[k] for k in sorted(pci)], 'mediatedDevices': [mdev[k] for k in sorted(mdev)]}


def vgpu_config_types(config, configs=None):
    """Short names of the vGPU types a node's vGPU config (label nvidia.com/vgpu.config) creates: a custom config's
    types from ``configs`` (as in gpu_operator_vgpu_configs: {name: {type: count}}, or the full form {name:
    [{devices, vgpu-devices: {type: count}}]}), else the GPU Operator's default ConfigMap, where every config is
    named by its one type. Empty for no config."""
    if not config:
        return []
    if config in (configs or {}):
        value = configs[config]
        entries = [value] if isinstance(value, dict) else [(e or {}).get('vgpu-devices') or {} for e in value or []]
        return sorted(set(short_type_name(t) for entry in entries for t in entry))
    return [short_type_name(config)]


def expected_resources(host, pool, vgpu_config=None, vgpu_configs=None, pciids=None, prefix=PREFIX):
    """{resource name: minimum count} that a node of ``pool`` advertises once the GPU Operator runs, from its facts.

    The pool table's resource kind of ``pool`` decides: ``gpu`` (container): nvidia.com/gpu, one per GPU; ``pci``
    (vm-passthrough): the plugin's pci.ids name, one per GPU (PFs); ``mdev`` (vm-vgpu): one resource per type of
    the node's vGPU config (all offered types when it has none), named from the full type name the host reports
    (NVIDIA A10-12Q); at least one device of each. A pool without an extended resource (dra) is refused."""
    # imported here: fleet reads vgpu_config_types from this module
    from ansible_collections.gpuvirt.provision.plugins.module_utils import fleet
    kind = fleet.pool_traits(pool).get('resource')
    pci_facts, mdev_facts = _facts(host)
    gpus = [g for g in (pci_facts.get('gpus') or []) if not g.get('is_vf')]
    want = {}
    if kind == 'gpu':
        if gpus:
            want[prefix + 'gpu'] = len(gpus)
    elif kind == 'pci':
        for gpu in gpus:
            name = pci_resource_name(gpu, pciids, prefix)
            want[name] = want.get(name, 0) + 1
    elif kind == 'mdev':
        offered = {}
        for parent in mdev_facts.get('parents', []):
            for t in parent.get('types', []):
                if t.get('name'):
                    offered.setdefault(reported_short_name(t), t['name'])
        wanted = vgpu_config_types(vgpu_config, vgpu_configs) or sorted(offered)
        for short in wanted:
            # before the vGPU Manager loads the host reports no types: the name is the NVIDIA spelling
            want[mdev_resource_name(offered.get(short, full_type_name(short)), prefix)] = 1
    else:
        raise ResourceNameError('unknown pool %r: use one of %s (pools whose nodes advertise an extended resource)'
                                % (pool, ', '.join(p.name for p in fleet.POOL_TABLE if p.resource in ('gpu', 'pci', 'mdev'))))
    return want
