# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model of the fleet: the pool table and the per-host view every phase consumes.

A pool is a kind of GPU node. Each has one row in ``POOL_TABLE``: the inventory group that puts a host in it, the
value of the GPU Operator's workload label (nvidia.com/gpu.workload.config) on its nodes, whether its hosts need
the IOMMU on, whether the host binds its GPUs to vfio-pci itself, the kind of resource its nodes advertise and
whether it is a vGPU pool. Adding a pool kind is a new row here (plus its docs and tests).

``gpu_hosts`` turns the inventory (its groups and the hosts' variables) into the per-host view:
``[{host, node, pool, traits, groups, vgpu_config, vgpu_types, facts, gathered, os_tag}]``, one entry per GPU host, in the order
of the pool table's groups. Plain Python (no Ansible import): the filter gpuvirt.provision.gpu_hosts exposes it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpuvirt.provision.plugins.module_utils import resource_names, validators

Pool = namedtuple('Pool', ['name', 'group', 'workload', 'iommu', 'host_vfio', 'resource', 'vgpu'])

# One row per pool, in the order the playbooks list the GPU hosts.
#   workload: the nvidia.com/gpu.workload.config value (DRA nodes run the container operands, the DRA driver
#             allocates their GPUs); iommu: the hosts need the IOMMU on (kernel arguments / MachineConfig);
#   host_vfio: host preparation binds the GPUs to vfio-pci (gpuvirt_host_vfio may turn it off);
#   resource: what the node advertises: 'gpu' (nvidia.com/gpu), 'pci' (a passthrough PCI resource), 'mdev' (one
#             resource per vGPU type), 'dra' (a DRA device class, no extended resource).
POOL_TABLE = (
    Pool('container', 'gpu_container', 'container', False, False, 'gpu', False),
    Pool('vm-passthrough', 'gpu_vm_passthrough', 'vm-passthrough', True, True, 'pci', False),
    Pool('vm-vgpu', 'gpu_vm_vgpu', 'vm-vgpu', True, False, 'mdev', True),
    Pool('dra', 'gpu_dra', 'container', True, False, 'dra', False),
)
BY_NAME = dict((p.name, p) for p in POOL_TABLE)
BY_GROUP = dict((p.group, p) for p in POOL_TABLE)

POOLS = tuple(p.name for p in POOL_TABLE)
GPU_GROUPS = tuple(p.group for p in POOL_TABLE)
# The Ansible host pattern of every GPU host (the playbooks' default for gpuvirt_gpu_hosts_pattern).
GPU_HOSTS_PATTERN = ':'.join(GPU_GROUPS)
IOMMU_POOLS = tuple(p.name for p in POOL_TABLE if p.iommu)
VM_POOLS = IOMMU_POOLS
HOST_VFIO_POOLS = tuple(p.name for p in POOL_TABLE if p.host_vfio)
VGPU_POOLS = tuple(p.name for p in POOL_TABLE if p.vgpu)
# Group -> pool in the order the pools of a host wrongly put in several groups are listed (every phase refuses
# such a host; the filter gpuvirt.provision.gpu_pools lists them so).
GROUP_POOLS = dict((g, BY_GROUP[g].name) for g in ('gpu_vm_passthrough', 'gpu_vm_vgpu', 'gpu_container', 'gpu_dra'))
# The GPU Operator's workload values (its sandboxWorkloads.defaultWorkload choices).
WORKLOADS = tuple(sorted(set(p.workload for p in POOL_TABLE), key=[p.workload for p in POOL_TABLE].index))

WORKLOAD_LABEL = 'nvidia.com/gpu.workload.config'


def hosts_pattern_problem(pattern):
    """Why ``pattern`` is not a host pattern of GPU pool groups (``gpu_container:gpu_dra``), or None when it is.
    The plays select their hosts with it before any role runs, so it must not reach other hosts (``all``, a
    control-plane group, a regex ``~...``): only the pool groups, joined by ``:``, each at most once."""
    if not isinstance(pattern, str):
        return 'a host pattern is a string of pool groups joined by ":", got %s' % type(pattern).__name__
    if len(pattern) > 1024:
        return 'a host pattern of %d characters is longer than every pool group joined (1024 at most)' % len(pattern)
    parts = pattern.split(':')
    unknown = [p for p in parts if p not in GPU_GROUPS]
    if unknown:
        return ('%s %s not a GPU pool group; the pattern names pool groups joined by ":" (%s), and AWX\'s limit '
                'or -l narrows it to hosts' % (', '.join(repr(u[:64]) for u in unknown[:5]),
                                               'is' if len(unknown) == 1 else 'are', ', '.join(GPU_GROUPS)))
    if len(set(parts)) != len(parts):
        return 'the host pattern %r names a pool group twice' % pattern
    return None


def gpu_hosts_pattern(pattern, name):
    """``pattern`` when it names only GPU pool groups (hosts_pattern_problem), else ValidationError naming ``name``:
    the plays select their hosts with it, and a play's hosts: expression that fails stops the run whatever the
    limit or the tags (a check in an earlier play does not run when a limit leaves that play no host)."""
    problem = hosts_pattern_problem(pattern)
    if problem:
        raise validators.ValidationError('%s: %s' % (name, problem))
    return pattern


class FleetError(ValueError):
    """The inventory does not describe a fleet: a host in two pools, an unknown pool, a bad node name."""


def pool_traits(pool=None):
    """The traits of ``pool`` as a dict (the row of the pool table), {} for an unknown pool; with no pool, every
    pool's traits, {name: traits}, in table order."""
    if pool is None:
        return dict((p.name, p._asdict()) for p in POOL_TABLE)
    row = BY_NAME.get(pool)
    return dict(row._asdict()) if row else {}


def node_name(host, override=None):
    """The one rule for a host's Kubernetes node name: ``gpuvirt_node_name`` when set, else the short inventory
    name (the part before the first dot). A DNS-1123 subdomain (it becomes part of API paths and file names)."""
    if override:
        name, source = str(override), 'gpuvirt_node_name of %s' % host
    elif not host:
        raise FleetError('node_name: no inventory host name given')
    else:
        name, source = str(host).split('.', 1)[0], 'the short inventory name of %s' % host
    try:
        return validators.dns1123_subdomain(name, 'node_name (%s)' % source)
    except validators.ValidationError as exc:
        raise FleetError('%s. Set gpuvirt_node_name on the host to its name in `kubectl get nodes`.' % exc)


def host_pool(host, groups, explicit=None):
    """The one pool of ``host`` from its inventory groups ``groups``; ``explicit`` (gpuvirt_pool) must agree.
    A host in two GPU groups is refused, naming both; a host in none needs ``explicit``."""
    in_groups = sorted(g for g in (groups or []) if g in BY_GROUP)
    pools = sorted(set(BY_GROUP[g].name for g in in_groups))
    if explicit is not None and explicit not in BY_NAME:
        raise FleetError("%s: unknown pool %r (gpuvirt_pool); use one of %s" % (host, explicit, ', '.join(POOLS)))
    if len(pools) > 1:
        raise FleetError("%s is in the pools %s (groups %s): a node belongs to exactly one pool (the GPU Operator "
                         "reads one %s label); keep it in one of the groups %s"
                         % (host, ', '.join(pools), ', '.join(in_groups), WORKLOAD_LABEL, ', '.join(sorted(BY_GROUP))))
    if explicit is not None:
        if pools and pools[0] != explicit:
            raise FleetError("%s: gpuvirt_pool %s disagrees with its group (pool %s); fix one of them"
                             % (host, explicit, pools[0]))
        return explicit
    if not pools:
        raise FleetError("%s is in no GPU pool group; add it to one of %s" % (host, ', '.join(sorted(BY_GROUP))))
    return pools[0]


def gpu_host_names(groups, known=None):
    """The GPU hosts of the inventory, each once, in the order of the pool table's groups; only those in
    ``known`` (the hostvars) when given."""
    out = []
    for group in GPU_GROUPS:
        for host in (groups or {}).get(group) or []:
            if host not in out and (known is None or host in known):
                out.append(host)
    return out


def _var(hostvars, name, default=None):
    """A host variable, ``default`` when undefined (also when the mapping templates it to an undefined value)."""
    try:
        value = hostvars[name] if name in hostvars else default
    except KeyError:
        return default
    return default if value is None and default is not None else value


def gpu_hosts(hostvars, groups, vgpu_configs=None):
    """The per-host view of the fleet, from the inventory's ``hostvars`` and ``groups``.

    One entry per GPU host: ``host`` (inventory name), ``node`` (node_name's rule), ``pool`` (host_pool's rule:
    its one GPU group, ``gpuvirt_pool`` agreeing), ``traits`` (the pool's row of the pool table, so a phase
    selects hosts by what their pool does, ``selectattr('traits.iommu')``, never by pool name), ``groups`` (its
    GPU groups), ``vgpu_config``
    (``gpuvirt_vgpu_config`` or None), ``vgpu_types`` (the short vGPU type names that config creates, with the
    custom ``vgpu_configs``, as in gpu_operator_vgpu_configs), ``facts``
    (``pci_devices``, ``mdev_types``, ``gpu_holders``: the registered host facts, {} when absent) and ``gathered``
    (whether the host has its PCI facts, ``gpuvirt_pci_devices``) and ``os_tag`` (``gpuvirt_os_tag``, the OS the
    GPU Operator's driver images are tagged for, or None). Raises FleetError naming the host on bad input.
    """
    view = []
    for host in gpu_host_names(groups, hostvars):
        hv = hostvars[host]
        in_groups = [g for g in GPU_GROUPS if host in ((groups or {}).get(g) or [])]
        config = _var(hv, 'gpuvirt_vgpu_config')
        pci = _var(hv, 'gpuvirt_pci_devices')
        pool = host_pool(host, in_groups, _var(hv, 'gpuvirt_pool'))
        view.append({
            'host': host,
            'node': node_name(host, _var(hv, 'gpuvirt_node_name')),
            'pool': pool,
            'traits': pool_traits(pool),
            'groups': in_groups,
            'vgpu_config': config,
            'vgpu_types': resource_names.vgpu_config_types(config, vgpu_configs or {}),
            'facts': {'pci_devices': pci if pci is not None else {},
                      'mdev_types': _var(hv, 'gpuvirt_mdev_types', {}),
                      'gpu_holders': _var(hv, 'gpuvirt_gpu_holders', {})},
            'gathered': pci is not None,
            'os_tag': _var(hv, 'gpuvirt_os_tag') or None,
        })
    return view
