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

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, resource_names, vgpu_names

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


NVIDIA_VENDOR = '10de'


def _is_nvidia_gpu(g):
    """An NVIDIA display-class function (vendor 10de, PCI class 03xx: VGA 0300 or 3D controller 0302, the classes
    of NVIDIA's data-centre GPUs and their SR-IOV VFs; a fact without a class is judged by its vendor alone)."""
    vendor = g.get('vendor_id')
    cls = g.get('class_id')
    return (isinstance(vendor, str) and vendor.lower() == NVIDIA_VENDOR
            and (cls is None or (isinstance(cls, str) and cls[:2] == '03')))


def _own_gpu_functions(node, gpus):
    """A pool whose devices KubeVirt's own device plugin advertises takes every vfio-pci function of a permitted
    ``vendor:device`` on every node (kubevirt/kubevirt v1.9.0 pkg/virt-handler/device-manager/pci_device.go
    discoverPermittedHostPCIDevices), so a selector it is given must be an NVIDIA GPU's: a host's facts may name
    only NVIDIA display-class functions, and a VF only with its physfn one of the host's own GPU PFs. Anything
    else is refused naming the host and the function (its facts would hand out another vendor's devices on
    every node under a GPU's resource name)."""
    pfs = set(g.get('bdf') for g in gpus
              if not g.get('is_vf') and _is_nvidia_gpu(g) and isinstance(g.get('bdf'), str))
    for g in gpus:
        bad = None
        if not _is_nvidia_gpu(g):
            bad = 'is not an NVIDIA GPU (vendor %s, class %s; wanted vendor 10de, class 03xx)' % (
                g.get('vendor_id'), g.get('class_id'))
        elif g.get('is_vf') and (not isinstance(g.get('physfn'), str) or g.get('physfn') not in pfs):
            bad = 'is a VF whose physfn %s is not one of this host\'s NVIDIA GPUs' % (g.get('physfn'),)
        if bad:
            raise WantedDevicesError(
                '%s: PCI function %s %s. Its pool\'s devices are advertised by KubeVirt\'s own device plugin, '
                'which hands out every function of a permitted vendor:device on every node, so only NVIDIA GPU '
                'functions are permitted: fix the host\'s facts (gather them again) or move it out of its pool'
                % (node, g.get('bdf'), bad))


def _functions(facts, row, node=None):
    """The host's facts with only the PCI functions its pool hands out: a pool of SR-IOV VFs (function ``vf``)
    permits the VFs, not the PFs they belong to. A PF whose VFs the facts do not show yet (a fresh host: the VFs
    exist only once the driver is loaded) stands for them: NVIDIA's VFs carry their PF's ``vendor:device`` (the
    PCI ids of the VFs in the sysfs recording of an A2 host, docs/pools/vendor-vfio.md, "The cluster side"), so the
    selector is known from the PF before any VF exists. The host's vGPU types are not mediated devices there: a
    pool of the PCI list takes no ``mdev_types``."""
    pci = dict(facts.get('pci_devices') or {})
    gpus = pci.get('gpus') or []
    if row.function == 'vf':
        # KubeVirt's own device plugin (the advertiser of externalResourceProvider false)
        if fleet.ADVERTISERS[row.advertiser] is False:
            _own_gpu_functions(node, [g if isinstance(g, dict) else {} for g in gpus])
        vfs = [g for g in gpus if g.get('is_vf')]
        parents = set(g.get('physfn') for g in vfs)
        pci['gpus'] = vfs + [dict(g, is_vf=True) for g in gpus if not g.get('is_vf') and g.get('bdf') not in parents]
    if row.permitted == 'pciHostDevices':
        return dict(facts, pci_devices=pci, mdev_types={})
    return dict(facts, pci_devices=pci)


def _profiles(host, facts):
    """The vGPU profiles (short type names) of ``host``'s config on the boards of ``facts`` (its permitted
    functions): a type of another board on the same host is not theirs."""
    models = vgpu_names.board_models([dict(g, is_vf=False) for g in (facts.get('pci_devices') or {}).get('gpus') or []])
    return sorted(set(t for t in host.get('vgpu_types') or []
                      if not models or vgpu_names.type_model(t) is None
                      or vgpu_names.model_on_boards(vgpu_names.type_model(t), models)))


def _provider(row):
    """What a pool row makes of a selector's entry: who advertises its devices and what they are (whole GPUs or
    VFs, on vfio-pci or with a vGPU profile) and in which list. Two rows alike here want the same entry."""
    return (row.advertiser, row.function, row.vgpu, row.host_vfio, row.permitted)


def _one_provider_problem(sel, users):
    """Hosts of two pools want one ``vendor:device`` selector from two providers: ``users`` is ``[(pool row, host),
    ...]`` in host order, the first host of each provider."""
    (row_a, host_a), (row_b, host_b) = users[:2]

    def said(row, host):
        return '%s (pool %s: %s, advertised by %s)' % (
            host, row.name, 'SR-IOV VFs' + (' with a vGPU profile' if row.vgpu else '') if row.function == 'vf'
            else 'whole GPUs' + (' on vfio-pci' if row.host_vfio else ''), row.advertiser)
    return ('PCI selector %s is wanted by host %s and by host %s. KubeVirt permits one resource name and one '
            'provider per vendor:device (permittedHostDevices.pciHostDevices is keyed by it; its own device plugin '
            'takes every vfio-pci function and every nvidia-bound VF with a vGPU profile of that id under the one '
            'name), and NVIDIA\'s VFs carry their PF\'s device id, so it cannot tell these devices apart: keep the '
            'hosts of one of the pools %s and %s for this GPU model out of this cluster, or give them one pool'
            % (sel, said(row_a, host_a), said(row_b, host_b), row_a.name, row_b.name))


def _mixed_profiles_problem(sel, name, profiles):
    """One ``vendor:device`` resource of a vGPU pool is given several profiles: ``profiles`` {profile: [hosts]}."""
    return ('the VFs of PCI selector %s get %d different vGPU profiles in this cluster: %s. KubeVirt advertises '
            'every VF of one vendor:device under one resource name (%s), whatever profile it carries, so a VM that '
            'asks for %s cannot choose its profile: it gets a VF of whichever profile the scheduler finds. Give all '
            'these hosts one profile in their vGPU config, or set kubevirt_devices_allow_mixed_profiles: true to '
            'accept that (and steer VMs with node selectors)'
            % (sel, len(profiles), '; '.join('%s on %s' % (p, ', '.join(hosts)) for p, hosts in sorted(profiles.items())),
               name, name))


def wanted_devices(hosts, pciids=None, include_vfs=False, prefix=resource_names.PREFIX, allow_mixed_profiles=False):
    """The per-host view's VM hosts -> ``{'pci_devices': [...], 'mediated_devices': [...]}`` (module docstring).

    Each host's facts go through resource_names.permitted_host_devices with the vGPU types its config creates;
    an entry keeps the first resource name computed for its selector and gains each node that offers it.

    Refused, before anything is built (WantedDevicesError): one selector wanted by hosts of two pools (KubeVirt
    has one resource name and one provider per selector, see _one_provider_problem), and, for a vGPU pool of the
    PCI list (its profile is set on the device, not in the selector), two profiles under one selector unless
    ``allow_mixed_profiles``."""
    out = dict((lst, {}) for lst, sel_key in PERMITTED.values())
    users = {}     # (list, selector) -> [(row, host)], the first host of each pool
    profiles = {}  # selector -> {profile: [hosts]}, vGPU pools of the PCI list
    for host in hosts or []:
        node, row = _checked(host)
        lst, sel_key = PERMITTED[row.permitted]
        hco_key = row.permitted
        facts = _functions(host['facts'], row, node)
        try:
            found = resource_names.permitted_host_devices([facts], pciids,
                                                          include_vfs or row.function == 'vf', prefix,
                                                          host.get('vgpu_types') or [],
                                                          external=fleet.ADVERTISERS[row.advertiser])
        except resource_names.ResourceNameError as exc:
            raise WantedDevicesError('%s: %s' % (node, exc))
        name = host.get('host') or node
        by_sel = {}  # selector -> the host's permitted GPUs of it, grouped once (linear in the facts)
        if row.vgpu and row.permitted == 'pciHostDevices':
            for g in facts['pci_devices'].get('gpus') or []:
                by_sel.setdefault(resource_names.selector(g.get('vendor_id') or '10de', g.get('device_id')),
                                  []).append(g)
        for entry in found[hco_key]:
            sel = entry[sel_key]
            seen = users.setdefault((lst, sel), [])
            # two pools whose devices KubeVirt would permit alike (one provider, the same kind of function) share
            # the entry; only a second provider for the selector is refused
            if _provider(row) not in [_provider(r) for r, h in seen]:
                seen.append((row, name))
            if row.vgpu and row.permitted == 'pciHostDevices':
                on_sel = dict(facts, pci_devices=dict(facts['pci_devices'], gpus=by_sel.get(sel, [])))
                for profile in _profiles(host, on_sel):
                    profiles.setdefault(sel, {}).setdefault(profile, []).append(name)
            cur = out[lst].setdefault(sel, dict({'selector': sel, 'resource_name': entry['resourceName'],
                                                 'nodes': [], 'source': 'facts'},
                                                **({} if entry['externalResourceProvider'] else {'external': False})))
            cur['nodes'].append(node)
    problems = [_one_provider_problem(sel, seen) for (lst, sel), seen in sorted(users.items()) if len(seen) > 1]
    if not allow_mixed_profiles:
        problems += [_mixed_profiles_problem(sel, out['pci_devices'][sel]['resource_name'], found)
                     for sel, found in sorted(profiles.items()) if len(found) > 1]
    if problems:
        raise WantedDevicesError(' '.join(p + '.' for p in problems))
    return dict((lst, list(entries.values())) for lst, entries in out.items())
