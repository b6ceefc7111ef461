# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model of the fleet: the pool table and the per-host view every phase consumes.

A pool is a kind of GPU node. Each has one row in ``POOL_TABLE`` (a ``Pool`` with named columns and defaults; what
each column says is ``POOL_COLUMN_DOCS`` below, generated into docs/reference/pools-and-platforms.md): the inventory
group that puts a host in it, the value of the GPU Operator's workload label (nvidia.com/gpu.workload.config) on its
nodes, and every other trait a role branches on. Every list of pools, groups,
workloads and resource kinds the collection keeps is derived from the table (``derived``); the roles read a pool's
row through the filter gpuvirt.provision.pool_traits (or the view's ``traits``) and branch on its columns, never
on a pool's name or a column's value (what such a branch means is a column: dra_driver, not resource 'dra').
Adding a pool kind is a new row here (plus its docs and tests): docs/architecture.md, "The tables: pools and
platforms".

Rows may share a group when each names a distinct vGPU ``interface``: the group's first row is its default, and
the fleet view picks a host's row among its group's rows by the interface its facts show or predict
(``host_row``). ``gpu_hosts`` turns the inventory (its groups and the hosts' variables) into the per-host view:
``[{host, node, pool, traits, groups, vgpu_config, vgpu_types, mig_config, facts, gathered, os_tag,
interface, interface_reason}]``, one entry per GPU host, in the order of the pool table's groups. Plain Python
(no Ansible import): the filter gpuvirt.provision.gpu_hosts exposes it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import mig, operands, resource_names, validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import vgpu_interface_rule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.table_row import REQUIRED, row_class

# The columns of the pool table, each with its default (a new column with a default edits no row); what each
# means is POOL_COLUMN_DOCS, below.
Pool = row_class('Pool', (
    ('name', REQUIRED), ('group', REQUIRED), ('workload', REQUIRED), ('iommu', False), ('host_vfio', False),
    ('resource', REQUIRED), ('vgpu', False), ('advertiser', REQUIRED), ('function', 'pf'), ('permitted', None),
    ('interface', None), ('kubevirt_min', None), ('operands_off', ()), ('dra_driver', False),
    ('device_plugin', False), ('vf_profiles', False), ('mig', False),
), 'A row of the pool table (fleet.POOL_TABLE).')

# What each column of the pool table means (Markdown), in the order of Pool's columns:
# docs/reference/pools-and-platforms.md lists the columns from here (make docs), so a column is documented where it
# is added; a test holds the names equal to the columns.
POOL_COLUMN_DOCS = (
    ('name', 'the pool (`gpuvirt_pool`)'),
    ('group', 'the inventory group that puts a host in it'),
    ('workload', "the GPU Operator's `nvidia.com/gpu.workload.config` value on its nodes"),
    ('iommu', "its hosts need the IOMMU on (kernel arguments or MachineConfig; the MachineConfigPool's label)"),
    ('host_vfio', 'host preparation binds its GPUs to vfio-pci (and preflight refuses a GPU held by another driver)'),
    ('resource',
     'what its nodes advertise: `gpu` (`nvidia.com/gpu`), `pci`, `mdev` (one resource per vGPU type), `dra` (a '
     'DRA device class), `mig` (MIG slices: `nvidia.com/gpu` or `nvidia.com/mig-<profile>` by the MIG '
     'strategy)'),
    ('vgpu', 'a vGPU pool: `nvidia.com/vgpu.config` on its nodes, vGPU types checked'),
    ('advertiser',
     "who advertises its devices: `nvidia-device-plugin`, `sandbox-device-plugin` (the GPU Operator's), "
     "`kubevirt` (KubeVirt's own device plugin), `dra-driver`; gives `externalResourceProvider` (true for an "
     "external plugin, false for KubeVirt's)"),
    ('function',
     'the PCI functions it hands out: `pf` (whole GPUs) or `vf` (SR-IOV virtual functions: their VFs are '
     'permitted, not the PFs)'),
    ('permitted',
     'the KubeVirt `permittedHostDevices` list its devices go to: `pciHostDevices`, `mediatedDevices`, or none '
     '(container and DRA pools)'),
    ('interface',
     'the vGPU interface of the hosts the row is for: `mdev` or `vendor-vfio` (the spelling of the host facts, '
     '`host/vgpu_interface.py`), none when the row does not depend on it'),
    ('kubevirt_min',
     "the lowest KubeVirt version whose built-in device plugin serves the row's devices (`1.9.0` for "
     'vendor-VFIO vGPU VFs), none when any supported KubeVirt does'),
    ('operands_off',
     'the GPU Operator operands its nodes must not run although their workload deploys them '
     '(`nvidia.com/gpu.deploy.<operand>=false`; `model/operands.py`: what each workload deploys, and why each '
     'operand a row names is off, which docs/operator-contract.md lists per label)'),
    ('dra_driver',
     "NVIDIA's DRA driver allocates its nodes' GPUs (true exactly where `advertiser` is `dra-driver`): its "
     "kubelet plugin's label and install, no extended resource, the GPUCluster stack, the holders preflight "
     'lets pass'),
    ('device_plugin',
     "NVIDIA's classic device plugin advertises its nodes' GPUs (true exactly where `advertiser` is "
     '`nvidia-device-plugin`): the ClusterPolicy keeps it on, so DRA nodes cannot share it; preflight warns of '
     'a host NVIDIA driver'),
    ('vf_profiles',
     'its vGPUs are SR-IOV VFs the collection gives a vGPU profile (the `vgpu_vf` phase and its boot-time '
     "restore, set again after an upgrade's driver reload); needs `vgpu` and `function` `vf`"),
    ('mig',
     "the GPU Operator's MIG manager partitions its nodes' GPUs (`model/mig.py`): `nvidia.com/mig.config` from "
     "`gpuvirt_mig_config`, `migManager` and `mig.strategy` in the ClusterPolicy / Helm values, preflight's "
     'refusal of GPUs without MIG, the expected resources per MIG strategy; true exactly where `resource` is '
     '`mig`, and needs `device_plugin`'),
)

# Who may advertise a node's devices, and whether KubeVirt then leaves allocation to that plugin
# (externalResourceProvider: true in permittedHostDevices; None: no extended resource KubeVirt permits).
#   The GPU Operator deploys NVIDIA's device plugin (nvidia.com/gpu) on container nodes and the sandbox device
#   plugin (NVIDIA/kubevirt-gpu-device-plugin) on vm-passthrough / vm-vgpu nodes: OpenShift Virtualization guide,
#   "Add GPU Resources to the HyperConverged Custom Resource": "Set externalResourceProvider=true ... provided by an
#   external device plugin, in this case the sandbox-device-plugin". KubeVirt's own device plugin serves an entry
#   with externalResourceProvider false (kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/types.go
#   PciHostDevice.ExternalResourceProvider: "KubeVirt will leave the allocation and monitoring to an external
#   device plugin"; unset, virt-handler's device manager advertises it). The DRA driver publishes ResourceSlices.
ADVERTISERS = {
    'nvidia-device-plugin': True,
    'sandbox-device-plugin': True,
    'kubevirt': False,
    'dra-driver': None,
}
# The boolean columns that say an advertiser's part in what the collection does: each is true exactly on the rows
# that advertiser serves (check_table), so the code reads the column and no code compares an advertiser's name.
ADVERTISER_COLUMNS = {'dra_driver': 'dra-driver', 'device_plugin': 'nvidia-device-plugin'}
# The boolean columns that say what a resource kind means to the collection, each true exactly on the rows of that
# resource (check_table), so the code reads the column and no code compares a resource kind.
RESOURCE_COLUMNS = {'mig': 'mig'}
# The columns whose default is a boolean: each row's value is checked to be one (check_table), a new one too
BOOL_COLUMNS = tuple(name for name, default in Pool.COLUMNS if isinstance(default, bool))
FUNCTIONS = ('pf', 'vf')
PERMITTED_LISTS = ('pciHostDevices', 'mediatedDevices')
# The vGPU interfaces a row may be for: those a host's facts name (vgpu_interface_rule.INTERFACES) but 'none'.
ROW_INTERFACES = tuple(i for i in vgpu_interface_rule.INTERFACES if i != 'none')
# An operand's name in the GPU Operator's nvidia.com/gpu.deploy.<operand> labels (a label name's grammar).
OPERAND_RE = re.compile(r'[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?')
# A KubeVirt release version, as kubevirt_min gives it (major.minor.patch, no leading v).
KUBEVIRT_MIN_RE = re.compile(r'[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}')
# Columns the host plays read from a group's default row, before a host shows its vGPU interface (host preparation:
# the IOMMU, the vfio binding): the rows of one group must agree on them.
GROUP_COLUMNS = ('iommu', 'host_vfio')
# The GPU Operator's node label that picks a node's operands (its sandboxWorkloads.defaultWorkload applies where
# the label is absent): NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go, gpuWorkloadConfigLabelKey.
WORKLOAD_LABEL = 'nvidia.com/gpu.workload.config'

# One row per pool, in the order the playbooks list the GPU hosts. The two rows of gpu_vm_vgpu are the two vGPU
# interfaces (docs/pools/vgpu.md, "Which interface"; docs/pools/vendor-vfio.md): mdev first, the group's default for
# a host whose interface nothing tells yet. On vendor-specific VFIO the vGPUs are SR-IOV VFs that stay on the nvidia
# driver (no host vfio binding) and KubeVirt's own PCI device plugin serves them from v1.9.0 (kubevirt/kubevirt
# v1.9.0 pkg/virt-handler/device-manager/pci_device.go with nvidia.go shouldPermitNvidia: a VF on the nvidia driver
# with nvidia/current_vgpu_type set; no earlier release has it), permitted through pciHostDevices.
POOL_TABLE = (
    Pool(name='container', group='gpu_container', workload='container', resource='gpu',
         advertiser='nvidia-device-plugin', device_plugin=True),
    # MIG: the GPU Operator's MIG manager partitions the GPUs into the node's nvidia.com/mig.config (docs/pools/
    # container-mig.md); the container workload runs the MIG manager on MIG-capable nodes (gpu-operator v26.7.0
    # controllers/state_manager.go addGPUStateLabels: nvidia.com/gpu.deploy.mig-manager where GFD says mig.capable)
    Pool(name='container-mig', group='gpu_container_mig', workload='container', resource='mig',
         advertiser='nvidia-device-plugin', device_plugin=True, mig=True),
    Pool(name='vm-passthrough', group='gpu_vm_passthrough', workload='vm-passthrough', iommu=True, host_vfio=True,
         resource='pci', advertiser='sandbox-device-plugin', permitted='pciHostDevices'),
    Pool(name='vm-vgpu', group='gpu_vm_vgpu', workload='vm-vgpu', iommu=True, resource='mdev', vgpu=True,
         advertiser='sandbox-device-plugin', permitted='mediatedDevices', interface='mdev'),
    Pool(name='vm-vgpu-vf', group='gpu_vm_vgpu', workload='vm-vgpu', iommu=True, host_vfio=False, resource='pci',
         vgpu=True, advertiser='kubevirt', function='vf', permitted='pciHostDevices', interface='vendor-vfio',
         kubevirt_min='1.9.0', vf_profiles=True,
         # the vm-vgpu workload's operands that cannot serve these VFs (manifests/node_labels.py, with the sources):
         # KubeVirt's own plugin advertises them, the vGPU Device Manager configures only mdev, and the sandbox
         # validator waits for mdev devices that never appear; the vGPU Manager stays (it loads the driver)
         operands_off=('sandbox-device-plugin', 'vgpu-device-manager', 'sandbox-validator')),
    Pool(name='dra', group='gpu_dra', workload='container', iommu=True, resource='dra', advertiser='dra-driver',
         dra_driver=True,
         # NVIDIA's DRA passthrough guide (docs/operator-contract.md, "DRA driver prerequisites";
         # manifests/node_labels.py): the classic device plugin must not run on a DRA node (the DRA driver allocates
         # its GPUs), and DCGM and dcgm-exporter should not hold the GPUs the driver rebinds to vfio-pci
         operands_off=('device-plugin', 'dcgm', 'dcgm-exporter')),
)


# What the collection owns on a host, per pool: each thing present (host preparation writes it) or absent (host
# preparation takes back what the collection wrote, and only that: docs/day2.md, "What the collection owns on a
# host"). Derived from the columns that already say it, so no row can contradict itself:
#   kernel_args: the IOMMU kernel arguments, present where the pool needs the IOMMU (iommu);
#   nouveau: the nouveau blacklist, present where the pool needs the IOMMU (the VM pools: vfio-pci or the vGPU
#     Manager must get the GPU), else leave: host preparation neither writes nor takes it back on a pool without the
#     IOMMU (container). Not absent there: NVIDIA recommends blacklisting nouveau on GPU Operator nodes too
#     (github.com/NVIDIA/k8s-driver-manager/issues/37, a maintainer: "It is recommended to blacklist nouveau as it can
#     conflict with the nvidia driver"; the driver manager only unloads it when its pod starts, and NVIDIA/cloud-native-docs
#     pull request 98 adds a troubleshooting entry for a driver container that fails with nouveau loaded), and the
#     driver container itself neither unloads nor blacklists it (NVIDIA/gpu-driver-container ubuntu22.04/nvidia-driver:
#     nvidia-installer --no-nouveau-check, then modprobe nvidia). Taking it back from a container host would let nouveau
#     grab the GPUs at boot; only retirement does. Not present there either: NVIDIA's GPU Operator install needs nothing
#     on a container host (the driver manager unloads nouveau when its pod starts), and writing it would rebuild the
#     initramfs of every container host of a fleet, and reboot each where nouveau is loaded, on the first run after an
#     upgrade of the collection;
#   vfio: the vfio-pci binding files, present where host preparation binds the GPUs (host_vfio);
#   vf_unit: the vendor-VFIO boot-time VF restore (roles/vgpu_vf), present where the pool's VFs get vGPU profiles
#     (vf_profiles).
HOST_THINGS = ('kernel_args', 'nouveau', 'vfio', 'vf_unit')


def host_state(row):
    """{thing: 'present' | 'absent' | 'leave'} for each of HOST_THINGS on the hosts of pool ``row``."""
    def state(flag):
        return 'present' if flag else 'absent'
    return {'kernel_args': state(row.iommu), 'nouveau': 'present' if row.iommu else 'leave', 'vfio': state(row.host_vfio),
            'vf_unit': state(row.vf_profiles)}


class TableError(ValueError):
    """A row of the pool table that the collection cannot use (a duplicate name, an unknown advertiser)."""


def check_table(table):
    """``table`` when every row can be used, else TableError naming the row, the column and the fix."""
    names, groups = {}, {}
    for row in table:
        if row.name in names:
            raise TableError('pool %s: name %r is also the name of pool %s' % (row.name, row.name, row.name))
        names[row.name] = row
        # rows share a group only when the vGPU interface picks among them: each names a distinct one
        for other in groups.get(row.group, ()):
            if row.interface is None or other.interface is None or row.interface == other.interface:
                raise TableError('pool %s: group %r is also the group of pool %s; rows share a group only when each '
                                 'names a distinct interface (%s), got %r and %r'
                                 % (row.name, row.group, other.name, ', '.join(ROW_INTERFACES), row.interface,
                                    other.interface))
            for column in GROUP_COLUMNS:
                if getattr(row, column) != getattr(other, column):
                    raise TableError('pool %s: %s %r differs from pool %s of the same group (%r): host preparation '
                                     'reads the group\'s default row before a host shows its interface'
                                     % (row.name, column, getattr(row, column), other.name, getattr(other, column)))
        groups.setdefault(row.group, []).append(row)
        for column, allowed in (('advertiser', ADVERTISERS), ('function', FUNCTIONS),
                                ('permitted', PERMITTED_LISTS + (None,)), ('interface', ROW_INTERFACES + (None,))):
            if getattr(row, column) not in allowed:
                raise TableError('pool %s: %s %r is not one of %s'
                                 % (row.name, column, getattr(row, column), ', '.join(str(a) for a in allowed)))
        for column in BOOL_COLUMNS:
            if not isinstance(getattr(row, column), bool):
                raise TableError('pool %s: %s %r is not true or false' % (row.name, column, getattr(row, column)))
        for column, advertiser in ADVERTISER_COLUMNS.items():
            if getattr(row, column) != (row.advertiser == advertiser):
                raise TableError('pool %s: %s is %s but its advertiser is %r: %s is true exactly on the rows whose '
                                 'advertiser is %s' % (row.name, column, getattr(row, column), row.advertiser, column,
                                                       advertiser))
        for column, resource in RESOURCE_COLUMNS.items():
            if getattr(row, column) != (row.resource == resource):
                raise TableError('pool %s: %s is %s but its resource is %r: %s is true exactly on the rows whose '
                                 'resource is %s' % (row.name, column, getattr(row, column), row.resource, column,
                                                     resource))
        if row.mig and not row.device_plugin:
            raise TableError('pool %s: mig true needs NVIDIA\'s device plugin (device_plugin true): it advertises the '
                             'MIG devices the MIG manager creates' % row.name)
        if row.vf_profiles and not (row.vgpu and row.function == 'vf'):
            raise TableError('pool %s: vf_profiles true needs a vGPU pool (vgpu true) of SR-IOV VFs (function vf): the '
                             'profile is set on a VF' % row.name)
        if row.permitted and ADVERTISERS[row.advertiser] is None:
            raise TableError('pool %s: a resource KubeVirt permits (permitted %r) needs a device plugin to advertise '
                             'it, not advertiser %r' % (row.name, row.permitted, row.advertiser))
        if row.interface is not None and not row.vgpu:
            raise TableError('pool %s: interface %r is a vGPU interface; a row that is not a vGPU pool (vgpu false) '
                             'names none' % (row.name, row.interface))
        if not isinstance(row.operands_off, tuple) or not all(
                isinstance(o, str) and OPERAND_RE.fullmatch(o) for o in row.operands_off):
            raise TableError('pool %s: operands_off %r is not a tuple of GPU Operator operand names (the <operand> '
                             'of nvidia.com/gpu.deploy.<operand>)' % (row.name, row.operands_off))
        problem = operands.off_problem(row.workload, row.operands_off)
        if problem:
            raise TableError('pool %s: operands_off %r: %s' % (row.name, row.operands_off, problem))
        if row.kubevirt_min is not None and not (isinstance(row.kubevirt_min, str)
                                                 and KUBEVIRT_MIN_RE.fullmatch(row.kubevirt_min)):
            raise TableError('pool %s: kubevirt_min %r is not a KubeVirt version such as 1.9.0 (or None)'
                             % (row.name, row.kubevirt_min))
    return tuple(table)


def _in_order(values):
    out = []
    for value in values:
        if value not in out:
            out.append(value)
    return tuple(out)


def derived(table):
    """Every list the collection keeps of the pools, derived from ``table`` (the module's names below; a test
    that adds a row at run time sets them all from its table)."""
    table = check_table(table)
    groups = _in_order(p.group for p in table)
    group_rows = dict((g, tuple(p for p in table if p.group == g)) for g in groups)
    return {
        'POOL_TABLE': table,
        'BY_NAME': dict((p.name, p) for p in table),
        # Group -> its default row (its first: what a host of the group gets when its interface cannot be known),
        # and group -> all its rows, in table order.
        'BY_GROUP': dict((g, rows[0]) for g, rows in group_rows.items()),
        'GROUP_ROWS': group_rows,
        'POOLS': tuple(p.name for p in table),
        # Each group once, in table order (lists about groups: the host pattern, the survey's choices).
        'GPU_GROUPS': groups,
        # The Ansible host pattern of every GPU host (the playbooks' default for gpuvirt_gpu_hosts_pattern).
        'GPU_HOSTS_PATTERN': ':'.join(groups),
        'IOMMU_POOLS': tuple(p.name for p in table if p.iommu),
        'HOST_VFIO_POOLS': tuple(p.name for p in table if p.host_vfio),
        'VGPU_POOLS': tuple(p.name for p in table if p.vgpu),
        # The pools whose nodes need NVIDIA's classic device plugin (device_plugin), and those whose VFs get vGPU
        # profiles (vf_profiles) with the vGPU interfaces that pick them: a host that shows or predicts one of these
        # interfaces has its vGPUs on VFs.
        'DEVICE_PLUGIN_POOLS': tuple(p.name for p in table if p.device_plugin),
        'VF_PROFILE_POOLS': tuple(p.name for p in table if p.vf_profiles),
        # The pools whose GPUs the MIG manager partitions (mig): the ClusterPolicy's migManager and mig.strategy.
        'MIG_POOLS': tuple(p.name for p in table if p.mig),
        'VF_PROFILE_INTERFACES': _in_order(p.interface for p in table if p.vf_profiles and p.interface),
        # Group -> its default pool, in table order (the order gpu_pools lists the pools of a host wrongly put in
        # several).
        'GROUP_POOLS': dict((g, rows[0].name) for g, rows in group_rows.items()),
        # The GPU Operator's workload values (its sandboxWorkloads.defaultWorkload choices), in table order.
        'WORKLOADS': _in_order(p.workload for p in table),
        # What the nodes of the pools advertise, in table order.
        'RESOURCE_KINDS': _in_order(p.resource for p in table),
        # The resource kinds KubeVirt is told to permit (permittedHostDevices), and the pools with an extended
        # resource the kubelet counts (the verify phase's expected resources).
        'PERMITTED_RESOURCE_KINDS': _in_order(p.resource for p in table if p.permitted),
        'EXTENDED_RESOURCE_POOLS': tuple(p.name for p in table if ADVERTISERS[p.advertiser] is not None),
    }


_DERIVED = derived(POOL_TABLE)
POOL_TABLE = _DERIVED['POOL_TABLE']
BY_NAME = _DERIVED['BY_NAME']
BY_GROUP = _DERIVED['BY_GROUP']
GROUP_ROWS = _DERIVED['GROUP_ROWS']
POOLS = _DERIVED['POOLS']
GPU_GROUPS = _DERIVED['GPU_GROUPS']
GPU_HOSTS_PATTERN = _DERIVED['GPU_HOSTS_PATTERN']
IOMMU_POOLS = _DERIVED['IOMMU_POOLS']
HOST_VFIO_POOLS = _DERIVED['HOST_VFIO_POOLS']
VGPU_POOLS = _DERIVED['VGPU_POOLS']
DEVICE_PLUGIN_POOLS = _DERIVED['DEVICE_PLUGIN_POOLS']
VF_PROFILE_POOLS = _DERIVED['VF_PROFILE_POOLS']
MIG_POOLS = _DERIVED['MIG_POOLS']
VF_PROFILE_INTERFACES = _DERIVED['VF_PROFILE_INTERFACES']
GROUP_POOLS = _DERIVED['GROUP_POOLS']
WORKLOADS = _DERIVED['WORKLOADS']
RESOURCE_KINDS = _DERIVED['RESOURCE_KINDS']
PERMITTED_RESOURCE_KINDS = _DERIVED['PERMITTED_RESOURCE_KINDS']
EXTENDED_RESOURCE_POOLS = _DERIVED['EXTENDED_RESOURCE_POOLS']


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


def host_prep_state(pool):
    """What host preparation converges a host of ``pool`` to: ``host_state`` of its row, except that a thing the
    rows of the pool's group disagree on is 'leave' (host preparation reads the group's default row before the host
    shows its vGPU interface, so it cannot tell those rows apart: the vgpu_vf phase, which reads the interface,
    owns the VF restore of gpu_vm_vgpu hosts). {} for an unknown pool."""
    row = BY_NAME.get(pool)
    if row is None:
        return {}
    out = host_state(row)
    for other in POOL_TABLE:
        if other.group == row.group:
            for thing, value in host_state(other).items():
                if value != out[thing]:
                    out[thing] = 'leave'
    return out


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


def group_pools(groups):
    """The pools a host's inventory groups put it in, in table order (one, when the inventory is right): each GPU
    group's default row (the fleet view, ``host_row``, picks a vGPU host's row among its group's rows)."""
    return [BY_GROUP[group].name for group in GPU_GROUPS if group in (groups or [])]


def several_pools_problem(host, groups):
    """Why a host in the GPU groups ``groups`` cannot be provisioned: in several pools, or None. The one message
    every phase gives (the inventory check, node labels, preflight)."""
    in_groups = [group for group in GPU_GROUPS if group in (groups or [])]
    if len(in_groups) < 2:
        return None
    return ("%s is in the pools %s (groups %s): a node belongs to exactly one pool (the GPU Operator reads one %s "
            "label); keep it in one of the groups %s"
            % (host or 'the host', ', '.join(group_pools(in_groups)), ', '.join(in_groups), WORKLOAD_LABEL,
               ', '.join(GPU_GROUPS)))


def no_pool_problem(host):
    """The message for a host in no GPU pool group."""
    return "%s is in no GPU pool group; add it to one of %s" % (host or 'the host', ', '.join(GPU_GROUPS))


def host_pool(host, groups, explicit=None):
    """The one pool of ``host`` from its inventory groups ``groups``: its group's default row; ``explicit``
    (gpuvirt_pool) must be a row of that group. A host in two GPU groups is refused, naming both; a host in none
    needs ``explicit``."""
    pools = group_pools(groups)
    if explicit is not None and explicit not in BY_NAME:
        raise FleetError("%s: unknown pool %r (gpuvirt_pool); use one of %s" % (host, explicit, ', '.join(POOLS)))
    problem = several_pools_problem(host, groups)
    if problem:
        raise FleetError(problem)
    if explicit is not None:
        if pools and BY_NAME[explicit].group != BY_NAME[pools[0]].group:
            rows = GROUP_ROWS[BY_NAME[pools[0]].group]
            raise FleetError("%s: gpuvirt_pool %s disagrees with its group (pool %s); fix one of them"
                             % (host, explicit, ' or '.join(r.name for r in rows)))
        return explicit
    if not pools:
        raise FleetError(no_pool_problem(host))
    return pools[0]


def external_resource_provider(pool):
    """Whether KubeVirt leaves the devices of ``pool`` to an external device plugin (externalResourceProvider of
    its permittedHostDevices entries): its advertiser's (ADVERTISERS); None for a pool KubeVirt is not told of."""
    row = BY_NAME.get(pool)
    return ADVERTISERS[row.advertiser] if row is not None and row.permitted else None


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


# The parents' own interface names in the mdev_types facts (host/vgpu_types.py) -> the interface they show.
_PARENT_INTERFACES = {'mdev': 'mdev', 'vendor_vfio': 'vendor-vfio'}
MAX_REASON = 1024


def _sentences(items):
    """The evidence sentences of host facts that are strings (facts may come from a file)."""
    return [i for i in (items if isinstance(items, list) else []) if isinstance(i, str)]


def printable(text, cap=MAX_REASON):
    """``text`` for a log line or a message: printable ASCII only (a control character, a newline or anything
    outside ASCII from host evidence becomes ``?``), at most ``cap`` characters."""
    text = text if isinstance(text, str) else repr(text)
    return ''.join(c if ' ' <= c <= '~' else '?' for c in text[:cap])


def _where(path, key):
    return '%s[%d]' % (path, key) if isinstance(key, int) else '%s.%s' % (path, key)


# The shapes of the host facts the fleet's consumers read (this module, vgpu_interface_rule, wanted_devices,
# resource_names, the roles' templates): every value present must have its type. The full schema of each fact
# (grammars, bounds) is the saved-facts one (module_utils/host/saved_facts.py), which gather.yml and vgpu_vf.yml
# run the live results through; facts given as host variables reach the fleet unchecked, so it checks their types.
_STR = (str, type(None))
_DEVICE = {'bdf': str, 'vendor_id': _STR, 'device_id': _STR, 'device_name': _STR, 'vendor_name': _STR,
           'class_id': _STR, 'class_name': _STR, 'subsystem_name': _STR, 'subsystem_vendor_id': _STR,
           'subsystem_device_id': _STR, 'revision': _STR, 'prog_if': _STR, 'driver': _STR, 'physfn': _STR,
           'iommu_group': _STR, 'physical_slot': _STR, 'kind': _STR, 'is_vf': bool, 'vf_inferred': bool,
           'sysfs': bool, 'kernel_modules': [str], 'iommu_group_devices': [str], 'companions': [str],
           'sriov': ({'vfs': [str]}, type(None))}
_VTYPE = {'type_id': str, 'name': str, 'short_name': _STR}
_FACT_SHAPES = {
    'gpuvirt_pci_devices': {'devices': [_DEVICE], 'gpus': [_DEVICE], 'nvswitches': [_DEVICE],
                            'gpus_by_driver': {None: [str]}, 'iommu': {'enabled': bool}},
    'gpuvirt_mdev_types': {
        'host_interface': ({'interface': str, 'evidence': [str], 'kernel_release': _STR, 'driver_version': _STR},
                           type(None)),
        'parents': [{'parent': str, 'interface': _STR, 'physfn': _STR, 'types': [_VTYPE],
                     'devices': [{'uuid': _STR, 'type_id': _STR, 'name': _STR}], 'current_type': _STR}],
        'interfaces': [str], 'state': _STR, 'available_types': [str], 'message': _STR},
    'gpuvirt_gpu_holders': {'held': bool, 'message': _STR, 'holders': [{
        'pid': int, 'executable': _STR, 'device': _STR, 'bdf': _STR, 'unit': _STR}]},
}


def _shape_problem(value, shape, path):
    """The first value of ``value`` whose type ``shape`` does not allow: ``(path, value, expected)`` or None.
    ``shape``: a type or tuple of types; ``[item]`` a list of items; ``{key: shape}`` an object whose keys present
    have their shapes (other keys are not read; ``None`` as the key: every value); a tuple mixing shapes: any."""
    if isinstance(shape, tuple) and any(isinstance(s, (list, dict)) for s in shape):
        found = [_shape_problem(value, s, path) for s in shape]
        return None if None in found else found[0]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return path, value, 'a list'
        for i, item in enumerate(value):
            found = _shape_problem(item, shape[0], _where(path, i))
            if found:
                return found
        return None
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return path, value, 'an object'
        for key, item in value.items():
            if not isinstance(key, str):
                return path, key, 'string keys'
            inner = shape.get(key, shape.get(None))
            found = _shape_problem(item, inner, _where(path, key)) if inner is not None else None
            if found:
                return found
        return None
    types = shape if isinstance(shape, tuple) else (shape,)
    # bool is an int in Python: true is not a pid
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        return path, value, ' or '.join('null' if t is type(None) else t.__name__ for t in types)
    return None


def check_host_facts(host, hv):
    """Raise FleetError naming ``host``, the fact and the JSON path when a registered fact of its variables ``hv``
    has a value of a type its consumers cannot read (a list where a string is read, a number for a sentence)."""
    for fact, shape in _FACT_SHAPES.items():
        value = _var(hv, fact)
        if value is None:
            continue
        found = _shape_problem(value, shape, '$')
        if found:
            where, bad, expected = found
            raise FleetError('%s: its fact %s has %s at %s; expected %s. Gather the host\'s facts again '
                             '(playbooks/gather.yml with gpuvirt_regather true), or fix or remove %s where the '
                             'inventory sets it' % (host, fact, printable(repr(bad), 60), where, expected, fact))


def host_vgpu_interface(mdev_types=None, pci_devices=None, configured_driver=None):
    """The vGPU interface of a host from its facts: ``(interface, reason, shown)``.

    ``interface`` is 'mdev' or 'vendor-vfio', or None when nothing tells; ``shown`` is True when the host shows it
    (``mdev_types.host_interface.interface``, or, in facts saved before that existed, the parents' interfaces) and
    False when it is predicted (vgpu_interface_rule.predict: a host with no vGPU Manager loaded yet, from its kernel,
    the driver loaded or ``configured_driver`` - the vGPU Manager version the GPU Operator will install - and the
    GPUs' chips); ``reason`` is a sentence naming the evidence."""
    mdev_types = mdev_types if isinstance(mdev_types, dict) else {}
    facts = mdev_types.get('host_interface')
    facts = facts if isinstance(facts, dict) else None
    if facts and isinstance(facts.get('interface'), str) and facts['interface'] in ROW_INTERFACES:
        interface = facts['interface']
        return interface, printable('the host shows %s: %s' % (interface, '; '.join(_sentences(facts.get('evidence')))
                                                               or 'its mdev_types facts say so')), True
    parents = mdev_types.get('parents')
    shown = sorted(set(_PARENT_INTERFACES.get(p.get('interface'), '') for p in
                       (parents if isinstance(parents, list) else [])
                       if isinstance(p, dict) and isinstance(p.get('interface'), str)) - {''})
    if shown:
        # vendor VFIO wins where both show (host_facts' rule: a VF with nvidia/creatable_vgpu_types)
        interface = 'vendor-vfio' if 'vendor-vfio' in shown else 'mdev'
        return interface, 'the host shows %s: its vGPU types are on %s parents' % (interface, interface), True
    pci = pci_devices if isinstance(pci_devices, dict) else {}
    gpus = [g for g in (pci.get('gpus') if isinstance(pci.get('gpus'), list) else [])
            if isinstance(g, dict) and not g.get('is_vf')]
    driver = configured_driver if isinstance(configured_driver, str) else None
    interface, reason = vgpu_interface_rule.predict(facts, gpus, driver)
    if interface is None:
        return None, printable('not known yet: %s' % reason), False
    return interface, printable('predicted %s (no vGPU interface shown yet): %s' % (interface, reason)), False


def host_row(host, pool, mdev_types=None, pci_devices=None, configured_driver=None, explicit=False):
    """The row of ``host`` among its group's rows, by its vGPU interface: ``(row, interface, reason)``.

    ``pool``: host_pool's answer (the group's default row, or ``gpuvirt_pool`` when ``explicit``). A group whose
    rows do not depend on the interface keeps ``pool``'s row (interface None, reason ''). Otherwise the interface
    the facts show, else the predicted one (host_vgpu_interface), picks the row naming it; when nothing tells, the
    group's default row. An explicit ``gpuvirt_pool`` must agree with an interface the host shows, else FleetError
    naming both."""
    chosen = BY_NAME[pool]
    rows = GROUP_ROWS[chosen.group]
    if not any(r.interface for r in rows):
        return chosen, None, ''
    interface, reason, shown = host_vgpu_interface(mdev_types, pci_devices, configured_driver)
    if explicit:
        if shown and chosen.interface != interface:
            raise FleetError('%s: gpuvirt_pool %s is the pool of the %s vGPU interface, but %s (the pool of that '
                             'interface is %s); remove gpuvirt_pool (the collection picks the pool of the group %s '
                             'by the interface) or set it to the interface the host offers'
                             % (host, pool, chosen.interface, reason,
                                ' or '.join(r.name for r in rows if r.interface == interface) or 'none',
                                chosen.group))
        return chosen, interface, '%s; gpuvirt_pool %s (the %s interface)' % (reason, pool, chosen.interface)
    by_interface = dict((r.interface, r) for r in rows if r.interface)
    if interface in by_interface:
        return by_interface[interface], interface, reason
    return rows[0], interface, '%s; the group %s\'s default pool %s (%s)' % (
        reason, chosen.group, rows[0].name, rows[0].interface)


def configured_vgpu_driver(hv):
    """The vGPU Manager driver version a host's variables configure (gpu_operator_vgpu_manager.version, else
    vgpu_manager_image_version, as preflight reads them), or None."""
    manager = _var(hv, 'gpu_operator_vgpu_manager')
    version = manager.get('version') if isinstance(manager, dict) else None
    if not version:
        version = _var(hv, 'vgpu_manager_image_version')
    return version if isinstance(version, str) and version else None


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
    GPU Operator's driver images are tagged for, or None); ``interface`` (the vGPU interface its facts show or
    predict, 'mdev' or 'vendor-vfio', None when nothing tells or its group's rows do not depend on it: the row
    taken is ``traits.interface``) and ``interface_reason`` (the sentence naming the evidence, '' when the group's
    rows do not depend on it); ``mig_config`` (a MIG pool's host: ``gpuvirt_mig_config``, else mig.DEFAULT_CONFIG,
    the nvidia.com/mig.config label its node gets; None elsewhere). ``pool`` and ``traits`` are the row host_row
    picks among the group's rows.
    Raises FleetError naming the host on bad input.
    """
    view = []
    for host in gpu_host_names(groups, hostvars):
        hv = hostvars[host]
        in_groups = [g for g in GPU_GROUPS if host in ((groups or {}).get(g) or [])]
        config = _var(hv, 'gpuvirt_vgpu_config')
        pci = _var(hv, 'gpuvirt_pci_devices')
        explicit = _var(hv, 'gpuvirt_pool')
        mdev = _var(hv, 'gpuvirt_mdev_types', {})
        pool = host_pool(host, in_groups, explicit)
        check_host_facts(host, hv)
        row, interface, reason = host_row(host, pool, mdev, pci, configured_vgpu_driver(hv), explicit is not None)
        pool = row.name
        mig_config = None
        if row.mig:
            try:
                mig_config = mig.check_config(_var(hv, 'gpuvirt_mig_config') or mig.DEFAULT_CONFIG,
                                              'gpuvirt_mig_config of %s' % host)
            except mig.MigError as exc:
                raise FleetError(str(exc))
        view.append({
            'host': host,
            'node': node_name(host, _var(hv, 'gpuvirt_node_name')),
            'pool': pool,
            'traits': pool_traits(pool),
            'groups': in_groups,
            'vgpu_config': config,
            'vgpu_types': resource_names.vgpu_config_types(config, vgpu_configs or {}),
            # a MIG pool's config (gpuvirt_mig_config, else all-balanced), checked; None on the other pools' hosts
            'mig_config': mig_config,
            'facts': {'pci_devices': pci if pci is not None else {},
                      'mdev_types': mdev,
                      'gpu_holders': _var(hv, 'gpuvirt_gpu_holders', {})},
            'gathered': pci is not None,
            'os_tag': _var(hv, 'gpuvirt_os_tag') or None,
            'interface': interface,
            'interface_reason': reason,
        })
    return view
