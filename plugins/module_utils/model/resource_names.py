# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes resource names for GPUs, as KubeVirt VMs request them and HCO must permit them
(docs/pools/passthrough.md and docs/pools/vgpu.md, Resource names)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import mig
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.vgpu_names import (
    board_models, full_type_name, model_on_boards, reported_short_name, short_type_name, type_model)

PREFIX = 'nvidia.com/'

# An extended resource name is a qualified name with a prefix (k8s.io/apimachinery pkg/util/validation
# IsQualifiedName; k8s.io/kubernetes pkg/apis/core/helper IsExtendedResourceName): a DNS-1123 subdomain prefix of
# at most 253 characters, '/', then a name part of 1 to 63 characters. Names built from host output (pci.ids
# names, mdev type names) are checked against it before they reach an HCO/KubeVirt object.
QUALIFIED_PREFIX_MAX = 253
QUALIFIED_NAME_MAX = 63
_DNS_LABEL = r'[a-z0-9](?:[-a-z0-9]*[a-z0-9])?'
QUALIFIED_PREFIX_RE = re.compile(_DNS_LABEL + r'(?:\.' + _DNS_LABEL + r')*')
QUALIFIED_NAME_RE = re.compile(r'[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?')


class ResourceNameError(ValueError):
    pass


def _shown(text):
    """``text`` for an error message: a name from host output can be 10,000 characters long."""
    text = repr(text)
    return text if len(text) <= 100 else '%s...(%d characters)' % (text[:100], len(text))


def checked_resource_name(name, source):
    """``name`` when it is an extended resource name (prefix/name, see above; a name built with an empty prefix
    is checked as the name part alone), else ResourceNameError naming
    ``source`` (where the name came from: which fact, which device) and the grammar. Linear: the parts are
    length-checked before a fullmatch."""
    prefix, slash, part = name.partition('/')
    if not slash:  # the caller asked for no prefix (prefix=''): the name part alone
        prefix, part = None, name
    prefix_ok = prefix is None or (0 < len(prefix) <= QUALIFIED_PREFIX_MAX and QUALIFIED_PREFIX_RE.fullmatch(prefix))
    if prefix_ok and 0 < len(part) <= QUALIFIED_NAME_MAX and QUALIFIED_NAME_RE.fullmatch(part):
        return name
    raise ResourceNameError(
        'resource name %s built from %s is not a Kubernetes extended resource name: expected <prefix>/<name>, '
        "the name 1 to 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit; fix the "
        'name on the host (or in the pci.ids given) or leave that device out'
        % (_shown(name), source))


def pci_name_part(device_name):
    """The KubeVirt GPU device plugin's naming: upper-case, "/", "." and whitespace -> "_", every other
    character outside [A-Za-z0-9_] dropped. "GA102GL [A10]" -> "GA102GL_A10"."""
    if not isinstance(device_name, str) or not device_name.strip():
        raise ResourceNameError('a PCI device name is needed to build a resource name, got %r; pass the device '
                                'dict from pci_devices or its device_name' % (device_name,))
    name = re.sub(r'[/.\s]', '_', device_name.strip().upper())
    return re.sub(r'[^A-Za-z0-9_]', '', name)


def mdev_name_part(type_name, source=None):
    """vGPU type name with whitespace -> "_": "NVIDIA A10-12Q" -> "NVIDIA_A10-12Q"."""
    if not isinstance(type_name, str) or not type_name.strip():
        raise ResourceNameError('a vGPU type name such as "NVIDIA A10-12Q" is needed, got %s%s'
                                % (_shown(type_name) if isinstance(type_name, str) else repr(type_name),
                                   ' from %s' % source if source else ''))
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
    name, source = device, 'the PCI device name %s' % _shown(device)
    if isinstance(device, dict):
        name = None
        if pciids is not None and device.get('vendor_id') and device.get('device_id'):
            name = pciids.device_name(device['vendor_id'], device['device_id'])
            source = 'the name %s gives GPU %s (%s:%s)' % (
                getattr(pciids, 'path', None) or 'the given pci.ids', device.get('bdf'), device['vendor_id'],
                device['device_id'])
        if not name:
            name = device.get('device_name')
            source = 'the device_name of GPU %s (%s:%s) in the pci_devices fact' % (
                device.get('bdf'), device.get('vendor_id'), device.get('device_id'))
        if not name:
            raise ResourceNameError('device %s has no device_name and its id %s:%s is not in %s'
                                    % (device.get('bdf'), device.get('vendor_id'), device.get('device_id'),
                                       getattr(pciids, 'path', None) or 'the given pci.ids'))
    return checked_resource_name(prefix + pci_name_part(name), source)


def mdev_resource_name(type_name, prefix=PREFIX, source=None):
    """``source`` says where the type name came from (which fact, which parent device) for the error."""
    if isinstance(type_name, dict):
        type_name = type_name.get('name')
    return checked_resource_name(prefix + mdev_name_part(type_name, source), source or 'the vGPU type name %s' % _shown(type_name))


def _facts(host):
    """Accept {'pci_devices': ..., 'mdev_types': ...} or the registered fact names gpuvirt_pci_devices / ..."""
    if not isinstance(host, dict):
        raise ResourceNameError('each host entry must be a dict with pci_devices / mdev_types facts, got %s'
                                % type(host).__name__)
    pci = host.get('pci_devices', host.get('gpuvirt_pci_devices')) or {}
    mdev = host.get('mdev_types', host.get('gpuvirt_mdev_types')) or {}
    return pci, mdev


def _add_mdev(entries, name, prefix, source, external=True):
    if name not in entries:
        entries[name] = {'mdevNameSelector': name, 'resourceName': mdev_resource_name(name, prefix, source),
                         'externalResourceProvider': external}


def permitted_host_devices(hosts, pciids=None, include_vfs=False, prefix=PREFIX, vgpu_types=None, external=True):
    """Facts of many hosts -> deduplicated HCO permittedHostDevices lists.

    pciHostDevices come from the GPUs (PFs; VFs only with ``include_vfs``), one entry per vendor:device;
    mediatedDevices from every vGPU type offered on any parent, one per type name, or only the types named in
    ``vgpu_types`` (short or full names: the types a node's vGPU config creates, which are all its device plugin
    advertises); a host that shows no vGPU interface yet (the vGPU Manager is not loaded: a first run, or a render
    from facts gathered before) gets its ``vgpu_types`` under the name the vGPU Manager will report
    (:func:`full_type_name`). Entries are sorted so the result is stable whatever the host order.
    ``external``: externalResourceProvider of the entries, whether a device plugin other than KubeVirt's own
    advertises them (the pool row's advertiser, fleet.ADVERTISERS)."""
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
                                 'externalResourceProvider': bool(external)})
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
                _add_mdev(mdev, t['name'], prefix, 'vGPU type %s of mdev parent %s in the mdev_types fact'
                          % (_shown(t['name']), parent.get('parent')), bool(external))
        if not mdev_facts.get('parents'):
            for short in sorted(keep):
                _add_mdev(mdev, full_type_name(short), prefix, 'vGPU config type %s' % _shown(short), bool(external))
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


def vgpu_config_counts(config, configs=None):
    """``{short type name: vGPUs per GPU}`` that a custom vGPU config (in ``configs``, as for
    :func:`vgpu_config_types`) creates, or None for a config of the GPU Operator's default ConfigMap (named by its
    one type: as many as fit, which the name does not say). A count that is not a positive whole number counts 1."""
    if not config or config not in (configs or {}):
        return None
    value = configs[config]
    entries = [value] if isinstance(value, dict) else [(e or {}).get('vgpu-devices') or {} for e in value or []]
    out = {}
    for entry in entries:
        for vtype, count in entry.items():
            try:
                count = max(int(str(count)), 1)
            except ValueError:
                count = 1
            short = short_type_name(vtype)
            out[short] = max(out.get(short, 0), count)
    return out


def _vf_expected(gpus, vgpu_config, vgpu_configs, pciids, prefix):
    """A vGPU pool whose SR-IOV VFs get vGPU profiles (vf_profiles): one VF per vGPU, each VF advertised under its
    vendor:device's PCI resource name. Per GPU (PF) the vGPUs its config's types of that board create (a custom
    config's counts); a default config says no count: at least one per GPU."""
    counts = vgpu_config_counts(vgpu_config, vgpu_configs)
    pfs = [g for g in gpus if not g.get('is_vf')]
    vfs = [g for g in gpus if g.get('is_vf')]
    want = {}
    for pf in pfs:
        mine = [v for v in vfs if v.get('physfn') == pf.get('bdf')]
        name = pci_resource_name(mine[0] if mine else pf, pciids, prefix)
        models = board_models([pf])
        per_gpu = sum(n for t, n in (counts or {}).items()
                      if not models or type_model(t) is None or model_on_boards(type_model(t), models)) or 1
        want[name] = want.get(name, 0) + per_gpu
    return want


def _gpu_expected(gpus, mdev_facts, vgpu_config, vgpu_configs, pciids, prefix):
    """Resource kind ``gpu``: nvidia.com/gpu, one per GPU (PF)."""
    return {prefix + 'gpu': len(gpus)} if gpus else {}


def _pci_expected(gpus, mdev_facts, vgpu_config, vgpu_configs, pciids, prefix):
    """Resource kind ``pci``: the plugin's pci.ids name of each GPU (PF), one per GPU."""
    want = {}
    for gpu in gpus:
        name = pci_resource_name(gpu, pciids, prefix)
        want[name] = want.get(name, 0) + 1
    return want


def _mdev_expected(gpus, mdev_facts, vgpu_config, vgpu_configs, pciids, prefix):
    """Resource kind ``mdev``: one resource per type of the node's vGPU config (all offered types when it has none),
    named from the full type name the host reports (NVIDIA A10-12Q)."""
    want = {}
    offered = {}
    for parent in mdev_facts.get('parents', []):
        for t in parent.get('types', []):
            if t.get('name'):
                offered.setdefault(reported_short_name(t), (t['name'], parent.get('parent')))
    wanted = vgpu_config_types(vgpu_config, vgpu_configs) or sorted(offered)
    for short in wanted:
        # before the vGPU Manager loads the host reports no types: the name is the NVIDIA spelling
        if short in offered:
            name, parent = offered[short]
            source = 'vGPU type %s of mdev parent %s in the mdev_types fact' % (_shown(name), parent)
        else:
            name, source = full_type_name(short), 'vGPU config type %s' % _shown(short)
        want[mdev_resource_name(name, prefix, source)] = 1
    return want


# What a node advertises, per resource kind of the pool table (fleet.POOL_TABLE's resource column): one function
# each. A kind without one (dra: a DRA device class, no extended resource) has nothing to expect; mig is its column's
# (expected_resources reads the row's mig: the names follow the MIG strategy, not the kind alone).
EXPECTED_BY_RESOURCE = {'gpu': _gpu_expected, 'pci': _pci_expected, 'mdev': _mdev_expected}


def expected_resources(host, pool, vgpu_config=None, vgpu_configs=None, pciids=None, prefix=PREFIX, mig_config=None,
                       mig_strategy=None):
    """{resource name: minimum count} that a node of ``pool`` advertises once the GPU Operator runs, from its facts.

    The pool table's resource kind of ``pool`` decides (EXPECTED_BY_RESOURCE): ``gpu`` (container): nvidia.com/gpu,
    one per GPU; ``pci`` (vm-passthrough): the plugin's pci.ids name, one per GPU (PFs); ``mdev`` (vm-vgpu): one
    resource per type of the node's vGPU config (all offered types when it has none), named from the full type name
    the host reports (NVIDIA A10-12Q); at least one device of each. A pool whose VFs get vGPU profiles (vf_profiles,
    vm-vgpu-vf): the PCI name of its VFs, one per vGPU its config creates (_vf_expected). A pool whose GPUs the MIG
    manager partitions (mig): its MIG devices per ``mig_strategy`` (mig.DEFAULT_STRATEGY when None) and
    ``mig_config`` (mig.DEFAULT_CONFIG when None), at least one per GPU (mig.expected: single nvidia.com/gpu, mixed
    nvidia.com/mig-<profile> of an all-<profile> config, nothing named for all-balanced under mixed). A pool without
    an extended resource (dra) is refused."""
    # imported here: fleet reads vgpu_config_types from this module
    from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet
    traits = fleet.pool_traits(pool)
    pci_facts, mdev_facts = _facts(host)
    if traits.get('vf_profiles'):
        return _vf_expected(pci_facts.get('gpus') or [], vgpu_config, vgpu_configs, pciids, prefix)
    if traits.get('mig'):
        return mig.expected([g for g in (pci_facts.get('gpus') or []) if not g.get('is_vf')],
                            mig_config or mig.DEFAULT_CONFIG, mig_strategy or mig.DEFAULT_STRATEGY, prefix)
    expect = EXPECTED_BY_RESOURCE.get(traits.get('resource'))
    if expect is None:
        raise ResourceNameError('unknown pool %r: use one of %s (pools whose nodes advertise an extended resource)'
                                % (pool, ', '.join(fleet.EXTENDED_RESOURCE_POOLS)))
    gpus = [g for g in (pci_facts.get('gpus') or []) if not g.get('is_vf')]
    return expect(gpus, mdev_facts, vgpu_config, vgpu_configs, pciids, prefix)
