# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node labels the GPU Operator reads, per pool: desired labels, label diff, pool-change guard, and the sending of the
plan (the sink's own check of each patch, one request per node, the stop at the first refusal). Pure Python: the
request itself is a function the module passes in.

``nvidia.com/gpu.workload.config`` (container | vm-passthrough | vm-vgpu) picks the operands the operator
runs on a node; ``nvidia.com/vgpu.config`` picks the vGPU device manager config. Changing either under a
running VM tears its GPU away (the operator rebinds or recreates the devices), so a change is refused
while VirtualMachineInstances run on the node, naming them.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, mig, validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_config as vc

WORKLOAD_LABEL = fleet.WORKLOAD_LABEL
VGPU_LABEL = 'nvidia.com/vgpu.config'
# A MIG pool's nodes (their row's mig): the config the GPU Operator's MIG manager partitions the GPUs into
# (model/mig.py, with the sources). Ours on those nodes: the MIG manager only reads it (and writes
# nvidia.com/mig.config.state), and the GPU Operator sets it only on a MIG-capable node that lacks it, to
# migManager.config.default "all-disabled" (NVIDIA/gpu-operator v26.7.0 controllers/nodelabeling_controller.go:
# "!hasMIGConfigLabel(labels)"), so a value we set stays and a render may hold it (not in SHARED_LABELS). Nodes of
# other pools keep theirs: a config an administrator set there is not the collection's (no record says it was ours).
# The MIG manager's own deploy label, nvidia.com/gpu.deploy.mig-manager, is not set here: the GPU Operator sets it
# on every MIG-capable node of the container workload (controllers/state_manager.go addGPUStateLabels, from GFD's
# nvidia.com/mig.capable), and the driver manager pauses it during a driver upgrade (k8s-driver-manager v0.12.0
# cmd/driver-manager/main.go nvidiaMIGManagerDeployLabel).
MIG_CONFIG_LABEL = mig.MIG_CONFIG_LABEL
# The GPU Operator runs an operand on a node only where its nvidia.com/gpu.deploy.<operand> label is "true", and
# sets each label of the node's workload config only when the node lacks it or has it empty, so a "false" we set
# stays (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0: gpuStateLabels, addGPUStateLabels).
DEVICE_PLUGIN_LABEL = 'nvidia.com/gpu.deploy.device-plugin'
DCGM_LABEL = 'nvidia.com/gpu.deploy.dcgm'
DCGM_EXPORTER_LABEL = 'nvidia.com/gpu.deploy.dcgm-exporter'
# A pool row's operands_off (model/fleet.py): operands its nodes' workload config deploys but that must not run there,
# switched off by these labels. The DRA row (dra): NVIDIA's DRA passthrough guide (docs/operator-contract.md, "DRA
# driver prerequisites"): the classic device plugin must not run on a DRA node (the DRA driver allocates its GPUs), and
# DCGM and dcgm-exporter should not hold the GPUs the driver rebinds to vfio-pci. The vendor-VFIO vGPU row (vm-vgpu-vf)
# keeps the vm-vgpu workload, whose operands are (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go
# gpuStateLabels[gpuWorkloadConfigVMVgpu]) the sandbox-device-plugin, vgpu-manager, vgpu-device-manager,
# sandbox-validator, cc-manager and client labels, each DaemonSet selecting its label "true"
# (assets/state-sandbox-device-plugin/0500_daemonset.yaml, state-vgpu-device-manager/0600_daemonset.yaml,
# state-sandbox-validation/0500_daemonset.yaml, state-vgpu-manager/0500_daemonset.yaml: nodeSelector
# nvidia.com/gpu.deploy.<operand>: "true"). On those nodes:
# - the sandbox device plugin must not advertise the VFs: KubeVirt's own device plugin does (the row's advertiser);
# - the vGPU Device Manager creates vGPUs only through mdev (NVIDIA/gpu-operator issue "vGPU device manager is
#   mdev-only", open at v26.7.0); the vgpu_vf role sets the VF profiles instead;
# - the sandbox validator's vgpu-devices-validation init container waits, without end, for a device under
#   /sys/bus/mdev/devices (cmd/nvidia-validator/main.go VGPUDevices.validate -> runValidation with WITH_WAIT "true",
#   go-nvlib pkg/nvmdev GetAllDevices reads mdevDevicesRoot): a vendor-VFIO vGPU is a VF, never an mdev, so the pod
#   would stay in Init and keep the ClusterPolicy's sandbox-validation state from becoming ready.
# The vGPU Manager stays: it loads the driver that creates the VFs. The operator's removeGPUStateLabels deletes only
# state labels outside the workload's set, and these are in it, so our "false" stays (addGPUStateLabels keeps a
# non-empty value).
DEPLOY_LABEL_PREFIX = 'nvidia.com/gpu.deploy.'
# The GPU Operator's driver manager evicts, before it unloads the driver, the pods of every operand whose
# nvidia.com/gpu.deploy.* label it knows, plus those selected by the one label named in its env
# NODE_LABEL_FOR_GPU_POD_EVICTION: it rewrites that label's "true" to "paused-for-driver-upgrade", so a DaemonSet
# selecting <label>=true leaves the node, and sets "true" back after the upgrade (NVIDIA/k8s-driver-manager
# cmd/driver-manager/main.go@v0.12.0, the version gpu-operator v26.7.0's values.yaml ships: fetchCurrentLabels,
# evictAllGPUOperatorComponents, maybeSetPaused, maybeSetTrue). NVIDIA's "DRA Driver for NVIDIA GPUs" page of
# the GPU Operator docs, "Known Issues": the driver manager does not know the DRA kubelet plugin; label the DRA
# nodes and pass that label in driver.manager.env, and select the plugin by it (its install step:
# NODE_LABEL_FOR_GPU_POD_EVICTION=nvidia.com/dra-kubelet-plugin, kubeletPlugin.nodeSelector
# nvidia.com/dra-kubelet-plugin: "true"). DRA nodes carry it; the DRA chart's kubelet plugin selects it.
DRA_PLUGIN_LABEL = 'nvidia.com/dra-kubelet-plugin'
DRA_EVICTION_ENV = 'NODE_LABEL_FOR_GPU_POD_EVICTION'
# the value the driver manager gives the label while it upgrades the driver (maybeSetPaused)
DRIVER_UPGRADE_PAUSED = 'paused-for-driver-upgrade'
# The labels this collection switched off on a node, as a record on the node: the annotation's value is the sorted,
# comma-separated nvidia.com/gpu.deploy.<operand> keys we set to "false" (an annotation value is any string, its key
# a qualified name under a DNS-subdomain prefix like a label key: Kubernetes API conventions, "Annotations", and
# k8s.io/apimachinery pkg/api/validation ValidateAnnotations). Only a label named there is ours to remove when the
# node leaves the pool: a "false" an admin set (to keep an operand off) stays. The record is written on every GPU
# node, empty when it names nothing, so that "no record" means only a node labelled by a release without it.
OWNED_ANNOTATION = 'gpuvirt.provision/owned-labels'
# A node without the record was labelled by the release before it, which set (and removed) only the DRA operand
# labels, these three; on such a node they keep the old rule (remove our value "false"), every other deploy label
# stays. A fixed list: what that release wrote, whatever the pool table's operands_off say now.
LEGACY_OWNED = (DEVICE_PLUGIN_LABEL, DCGM_LABEL, DCGM_EXPORTER_LABEL)
# The pool table and every list of pools live in module_utils/model/fleet.py (read there at call time, so a row added
# to the table reaches this module too).
# VMI phases in which the VM no longer holds its devices.
_FINISHED = ('Succeeded', 'Failed')


class UnlessPaused(str):
    """A desired label value that is also satisfied while the driver manager has paused it for a driver upgrade
    (the value then holds ``paused-for-driver-upgrade``): writing it back mid-upgrade would bring the evicted
    kubelet plugin back onto a node whose driver is being unloaded. The driver manager restores the value itself."""


class RemoveIf(str):
    """A desired label value meaning "remove the label when the node carries exactly this value".

    A node that leaves the DRA pool keeps ``<operand>=false`` from it; that value is ours and goes. Any other
    value (the operator's "true") is the operator's to manage: removing it would only make the operator set it
    again, a write on every run.
    """


class RemoveIfOwned(RemoveIf):
    """A :class:`RemoveIf` for an nvidia.com/gpu.deploy.<operand> label: it goes only when the node's
    OWNED_ANNOTATION record names it (we set it), or, on a node without a record, when it is in LEGACY_OWNED. An
    admin may set the same label "false" to keep an operand off; that one is not ours."""


def owned_labels(annotations):
    """The deploy labels a node's OWNED_ANNOTATION names, as a set; None when the node has no record.

    The record is on the node, where anyone who may patch nodes can edit it: only well-formed deploy label keys
    count, and the caller removes only keys it would itself set (desired_labels), never a key read from here."""
    annotations = annotations or {}
    if OWNED_ANNOTATION not in annotations:
        return None
    value = annotations.get(OWNED_ANNOTATION)
    out = set()
    for key in (value if isinstance(value, str) else '').split(','):
        key = key.strip()
        try:
            validators.label_key(key, OWNED_ANNOTATION)
        except validators.ValidationError:
            continue
        if key.startswith(DEPLOY_LABEL_PREFIX):
            out.add(key)
    return out


def owned_after(current, desired, patch, owned):
    """The deploy labels ours after ``patch``: those ``desired`` sets "false" that we write now or that were ours
    before (the record, or LEGACY_OWNED without one). A "false" an admin set before we wanted it stays theirs."""
    current = current or {}
    before = owned if owned is not None else set(LEGACY_OWNED)
    out = []
    for key, value in desired.items():
        if not key.startswith(DEPLOY_LABEL_PREFIX) or value is None or isinstance(value, RemoveIf):
            continue
        if patch.get(key) == value or (key in before and current.get(key) == value):
            out.append(key)
    return sorted(out)


def group_pools(groups):
    """The pools a host's inventory groups put it in, in table order (one, when the inventory is right)."""
    return fleet.group_pools(groups)


def group_pool(groups, host=None):
    """The one pool a host's GPU groups put it in, or None when it is in none. A host in two GPU groups is
    refused, naming both (fleet.several_pools_problem, the one message): picking the first would prepare it for a
    pool the inventory author may not mean."""
    problem = fleet.several_pools_problem(host, groups)
    if problem:
        raise ManifestError(problem)
    pools = fleet.group_pools(groups)
    return pools[0] if pools else None


def node_pool(host, groups, explicit=None):
    """The one pool of ``host`` from its GPU groups; ``explicit`` (gpuvirt_pool) must agree (fleet.host_pool)."""
    try:
        return fleet.host_pool(host, groups, explicit)
    except fleet.FleetError as exc:
        raise ManifestError(str(exc))


def wanted_entries(items, vgpu_config_default=None):
    """The fleet view's per-host entries (gpuvirt.provision.gpu_hosts) as ``plan`` takes them: each entry whole, so
    a field the view gains reaches ``plan`` and ``desired_labels`` by its name with no edit here; its pool resolved
    from its groups (``pool``, where given, must agree: node_pool), ``host`` and ``node`` named (each the other's
    fallback), and ``vgpu_config`` defaulted to ``vgpu_config_default``. Returns ``(wanted, errors)``, one sentence
    per host whose pool cannot be told."""
    wanted, errors = [], []
    for item in items or []:
        host = item.get('host') or item.get('node')
        try:
            pool = node_pool(host, item.get('groups') or [], item.get('pool'))
        except ManifestError as exc:
            errors.append(str(exc))
            continue
        wanted.append(dict(item, host=host, node=item.get('node') or host, pool=pool,
                           vgpu_config=item.get('vgpu_config') or vgpu_config_default))
    return wanted, errors


def check_dra_selector(selector, variable='dra_driver_node_selector'):
    """The DRA kubelet plugin's node selector as ``{key: value}`` strings, each key and value checked; the
    driver manager's label (DRA_PLUGIN_LABEL) may only be "true" (the plugin must be selected by it)."""
    if selector in (None, ''):
        return {}
    if not isinstance(selector, dict):
        raise ManifestError("%s must be a mapping of node labels, got %r" % (variable, selector))
    out = {}
    for key, value in selector.items():
        checked(validators.label_key, key, '%s key' % variable)
        value = str(value).lower() if isinstance(value, bool) else value
        checked(validators.label_value, value, '%s[%s]' % (variable, key))
        out[key] = value
    if out.get(DRA_PLUGIN_LABEL, 'true') != 'true':
        raise ManifestError(
            "%s sets %s to %r: the GPU Operator's driver manager evicts the DRA kubelet plugin before a driver "
            "upgrade only by this label's value \"true\"; remove the key from %s (it is always part of the selector)"
            % (variable, DRA_PLUGIN_LABEL, out[DRA_PLUGIN_LABEL], variable))
    return out


def row_operand_labels():
    """Every nvidia.com/gpu.deploy.<operand> label some pool row switches off (operands_off), in table order."""
    out = []
    for row in fleet.POOL_TABLE:
        for operand in row.operands_off:
            key = DEPLOY_LABEL_PREFIX + operand
            if key not in out:
                out.append(key)
    return out


def desired_labels(pool, vgpu_config=None, pool_selector=None, dra_selector=None, dra_stack='helm',
                   other_selectors=None, mig_config=None):
    """Labels a node of ``pool`` must carry; ``None`` values mean the label must go.

    ``mig_config``: a MIG pool's config (the fleet view's ``mig_config``; mig.DEFAULT_CONFIG when None), its
    nvidia.com/mig.config label (MIG_CONFIG_LABEL); other pools leave that label alone.

    ``dra_stack``: ``helm`` (the DRA chart beside the ClusterPolicy: the DRA nodes switch their row's operands_off,
    the device plugin, DCGM and dcgm-exporter, off by label) or ``gpucluster`` (the GPU Operator's own DRA stack,
    manifests/gpu_cluster.py): then no ClusterPolicy deploys those operands, and the GPU Operator deletes their
    deploy labels from every GPU node (v26.7.0 controllers/nodelabeling_controller.go updateGPUStateLabels:
    removeLabelsFromNode of devicePluginOnlyStateLabelKeys, value-blind), so setting them would be undone at each
    reconcile: a leftover ``false`` of ours goes, as the operator would remove it.

    ``dra_selector``: the DRA kubelet plugin's node selector beyond DRA_PLUGIN_LABEL (``dra_driver_node_selector``):
    the DRA nodes get its labels, so the plugin runs there; any other node loses them when it carries exactly that
    value (docs/pools/dra.md, "Node selector").

    ``pool_selector``: the labels a dedicated OpenShift MachineConfigPool selects its nodes by (the IOMMU
    MachineConfig reaches only the nodes of its pool). A node of an IOMMU pool gets them; any other node loses
    them when it carries exactly our value (a node that left the VM pools must not keep rebooting into the GPU
    pool's kernel arguments).

    ``other_selectors``: the selectors of the collection's other dedicated pools (a host in a pool of its own,
    ``gpuvirt_machineconfig_pool``): the node loses each of their labels it carries with exactly that value, since the
    Machine Config Operator refuses a node two custom pools select (machineconfig.node_pools)."""
    if pool not in fleet.BY_NAME:
        raise ManifestError("unknown pool %r; use one of %s" % (pool, ', '.join(fleet.POOLS)))
    row = fleet.BY_NAME[pool]
    labels = {WORKLOAD_LABEL: row.workload}
    # the row's operands_off; a node of another row loses only our leftover "false" (the operator's "true" is its
    # own). Under the GPU Operator's own DRA stack (gpucluster) no ClusterPolicy deploys the operands a DRA row
    # switches off and the operator deletes their labels (``dra_stack`` above): a leftover "false" of ours goes.
    operands_off = () if row.dra_driver and dra_stack == 'gpucluster' else row.operands_off
    for key in row_operand_labels():
        labels[key] = 'false' if key[len(DEPLOY_LABEL_PREFIX):] in operands_off else RemoveIfOwned('false')
    if row.vgpu:
        if not vgpu_config:
            raise ManifestError("vGPU nodes need a vGPU config name for %s (gpuvirt_vgpu_config on the host, or "
                                "node_labels_vgpu_config_default)" % VGPU_LABEL)
        checked(validators.label_value, vgpu_config, 'vGPU config name',
                hint="; it becomes the %s label value: set gpuvirt_vgpu_config (or node_labels_vgpu_config_default) "
                     "to a name of gpu_operator_vgpu_configs or of the operator's default ConfigMap, such as A10-12Q"
                % VGPU_LABEL)
        labels[VGPU_LABEL] = vgpu_config
    else:
        # a vGPU config left on a node that left the vGPU pool is stale and misleading
        labels[VGPU_LABEL] = None
    if row.mig:
        try:
            labels[MIG_CONFIG_LABEL] = mig.check_config(mig_config or mig.DEFAULT_CONFIG)
        except mig.MigError as exc:
            raise ManifestError(str(exc))
    for key, value in (pool_selector or {}).items():
        labels[key] = str(value) if row.iommu else RemoveIf(str(value))
    for selector in other_selectors or []:
        for key, value in (selector or {}).items():
            if key not in labels:
                labels[key] = RemoveIf(str(value))
    is_dra = row.dra_driver
    labels[DRA_PLUGIN_LABEL] = UnlessPaused('true') if is_dra else RemoveIf('true')
    for key, value in check_dra_selector(dra_selector).items():
        if key == DRA_PLUGIN_LABEL:
            continue
        if is_dra and key in labels and labels[key] is not None and not isinstance(labels[key], RemoveIf) \
                and str(labels[key]) != value:
            raise ManifestError(
                "dra_driver_node_selector sets %s=%s but a node of pool %s must carry %s=%s (the GPU Operator reads "
                "it); the kubelet plugin would select no node: pick another label for dra_driver_node_selector"
                % (key, value, pool, key, labels[key]))
        if is_dra:
            labels[key] = value
        elif key not in labels or isinstance(labels[key], RemoveIf):
            labels[key] = RemoveIf(value)
    return labels


def retired_labels(desired):
    """What a node leaving the fleet loses, from ``desired`` (desired_labels of its pool): each label the collection
    sets on a node of that pool goes only when the node carries exactly the value it would set (a :class:`RemoveIf`
    of that value), an operand it switched off (``false``) only when the node's owned-labels record names it
    (:class:`RemoveIfOwned`), the DRA kubelet plugin's label only at ``true`` (while the driver manager has it paused
    for an upgrade it stays). A label the pool removes anyway (``None``: a vGPU config on a non-vGPU node) is not one
    the collection wrote, so it stays; so does every label outside ``desired`` (NFD's, the GPU Operator's own)."""
    out = {}
    for key, value in desired.items():
        if value is None:
            continue
        if isinstance(value, RemoveIf):
            out[key] = value
        elif key.startswith(DEPLOY_LABEL_PREFIX):
            out[key] = RemoveIfOwned(value)
        else:
            out[key] = RemoveIf(value)
    return out


def vgpu_config_error(node, config, facts, custom_configs=None):
    """Why ``nvidia.com/vgpu.config=<config>`` cannot work on ``node``, or None.

    With custom configs (normalised, see vgpu_config.normalise_configs) the config must be one of them and each
    of its types offered by the node's GPUs. Without, the operator's default ConfigMap is in use: there every
    config but ``default`` is one vGPU type named after it, so the name itself must be a type the node offers.
    Without facts for the node nothing can be checked here (the operator role checks its custom configs).
    """
    if custom_configs:
        if config not in custom_configs:
            return ("node %s: vGPU config %r is not among the custom configs (%s); fix gpuvirt_vgpu_config or "
                    "gpu_operator_vgpu_configs" % (node, config, ', '.join(sorted(custom_configs))))
        types = vc.config_types(custom_configs[config])
    elif config == 'default':
        return None
    else:
        types = [config]
    if not facts or not (facts.get('pci_devices') or facts.get('mdev_types')):
        return None
    for vtype in types:
        ok, dummy, seen = vc.host_offers({'node': node, 'facts': facts}, vtype)
        if not ok:
            return ("node %s: vGPU config %s needs type %s, which no GPU of the node offers (checked: %s); pick a "
                    "type those GPUs offer (gpuvirt_vgpu_config)" % (node, config, vtype, seen))
    return None


def label_diff(current, desired, owned=None):
    """``{label: new value or None (remove)}`` for the labels that differ; absent-and-unwanted is no change, and
    a :class:`RemoveIf` label goes only when the node carries that value (a :class:`RemoveIfOwned` one also only
    when ``owned``, the node's record (owned_labels), names it; without a record, when it is in LEGACY_OWNED)."""
    current = current or {}
    ours = owned if owned is not None else set(LEGACY_OWNED)
    patch = {}
    for key, value in desired.items():
        if isinstance(value, UnlessPaused) and DRIVER_UPGRADE_PAUSED in str(current.get(key, '')):
            continue
        if isinstance(value, RemoveIfOwned) and key not in ours:
            continue
        if isinstance(value, RemoveIf):
            if key in current and current[key] == str(value):
                patch[key] = None
        elif value is None:
            if key in current:
                patch[key] = None
        elif current.get(key) != value:
            patch[key] = value
    return patch


def running_vmis(vmis, node):
    """``namespace/name`` of the VMIs scheduled on ``node`` that have not finished."""
    names = []
    for vmi in vmis or []:
        status = vmi.get('status') or {}
        if status.get('nodeName') == node and status.get('phase') not in _FINISHED:
            meta = vmi.get('metadata') or {}
            names.append('%s/%s' % (meta.get('namespace', 'default'), meta.get('name')))
    return sorted(names)


def guard(node, current, patch, vmis):
    """Refuse to change the pool or vGPU config of a node on which VMs run; return None when allowed."""
    touched = [k for k in (WORKLOAD_LABEL, VGPU_LABEL) if k in patch and (current or {}).get(k) is not None]
    if not touched:
        return None
    running = running_vmis(vmis, node)
    if not running:
        return None
    changes = ', '.join('%s %s -> %s' % (k, current.get(k), patch[k] if patch[k] is not None else '(removed)')
                        for k in touched)
    return ("node %s: refusing to change %s while VirtualMachineInstances run on it: %s; stop or migrate them "
            "first" % (node, changes, ', '.join(running)))


def row_unknown(item):
    """Why the labels of ``item``'s node are left alone in this run, '' when they are not: a host with no GPU facts in
    the run (``gathered`` false: left out by a limit or a pool survey) in a group whose rows its vGPU
    interface picks among (the pool table's ``interface`` column). Its pool is then the group's default row, a guess:
    for a vendor-VFIO host it would remove the operand labels its row switched off, and its record."""
    if item.get('gathered') is not False:
        return ''
    rows = fleet.GROUP_ROWS[fleet.BY_NAME[item['pool']].group]
    if len(rows) < 2:
        return ''
    return ('no GPU facts for host %s in this run (left out by a limit or the pool answer): the '
            'group %s has a pool per vGPU interface (%s) and its facts tell which; its labels are left as they are. '
            'Run the phase with the host included (or its saved facts, in render mode) to set them'
            % (item.get('host', item['node']), rows[0].group, ', '.join(r.name for r in rows)))


def _retire_one(item, current_by_name, records, vmis, pool_selector, dra_selector, dra_stack, other_selectors=None):
    """``(report entry, partial Node or None)`` for one retired node, or ``(message, None)`` when it is refused (VMs
    run on it). The pool's row does not matter here: every operand label any row switches off goes only when the
    record names it, so a host of a group whose row its facts pick is retired the same either way."""
    name = item['node']
    if current_by_name is not None and name not in current_by_name:
        return {'pool': item['pool'], 'changes': {}, 'owned_labels': None, 'unchanged': [], 'kept': [],
                'left_alone': 'not in the cluster: no label to take back'}, None
    row = fleet.BY_NAME[item['pool']]
    config = item.get('vgpu_config')
    # without its vGPU config the value the collection wrote is unknown: nvidia.com/vgpu.config stays (reported)
    desired = desired_labels(item['pool'], config or 'unknown', pool_selector, dra_selector, dra_stack,
                             other_selectors, item.get('mig_config'))
    unknown = []
    if row.vgpu and not config:
        del desired[VGPU_LABEL]
        unknown.append(VGPU_LABEL)
    wanted = retired_labels(desired)
    current = current_by_name.get(name, {}) if current_by_name is not None else {}
    annotations = records.get(name) or {}
    owned = owned_labels(annotations)
    if owned is None and current.get(WORKLOAD_LABEL) != desired[WORKLOAD_LABEL]:
        # No record: a node labelled by the release before the record (LEGACY_OWNED is ours there), which always
        # wrote the workload label too, or a node this play already retired (both gone). Without our workload value
        # it is the latter, and a "false" left there is an administrator's.
        owned = set()
    patch = label_diff(current, wanted, owned)
    blocked = guard(name, current, patch, vmis)
    if blocked:
        return blocked, None
    kept = sorted(k for k in list(wanted) + unknown if k in current and k not in patch)
    entry = {'pool': item['pool'], 'changes': patch, 'owned_labels': None, 'unchanged': [], 'kept': kept,
             'retire': True}
    meta = {'name': name}
    if patch:
        meta['labels'] = patch
    if OWNED_ANNOTATION in annotations:
        meta['annotations'] = {OWNED_ANNOTATION: None}
    return entry, ({'apiVersion': 'v1', 'kind': 'Node', 'metadata': meta} if len(meta) > 1 else None)


def plan(wanted, nodes, vmis, custom_configs=None, pool_selector=None, dra_selector=None, dra_stack='helm',
         retire=False, pool_selectors=None, render=False):
    """Plan the label changes for every wanted node.

    ``wanted``: ``[{node, pool, vgpu_config, mig_config, facts}]`` (``facts``: the host's pci_devices/mdev_types,
    optional; ``mig_config``: a MIG pool's config, mig.DEFAULT_CONFIG when absent);
    ``nodes``: Node objects from the cluster (or given in render mode), ``None`` when unknown (render without
    cluster state: every label is set); ``vmis``: VMI objects; ``custom_configs``: the custom vGPU configs
    (normalised), None when the operator's default ConfigMap is used; ``pool_selector``: the node labels of a
    dedicated MachineConfigPool for the IOMMU pools (see desired_labels), None when there is none;
    ``pool_selectors``: ``{node: selector}`` for the nodes in a MachineConfigPool of their own
    (``gpuvirt_machineconfig_pool``; ``{}`` for a built-in pool), instead of ``pool_selector``; every node loses the
    labels of the other pools' selectors it carries with exactly their value;
    ``dra_selector``: ``dra_driver_node_selector`` (see desired_labels); ``dra_stack``: see desired_labels.
    ``retire``: the nodes leave the fleet (retire.yml): each loses the labels the collection wrote there
    (retired_labels) and its owned-labels record; a node no longer in the cluster has nothing to take back.
    ``render``: each patch holds the node's whole wanted state (rendered_labels), not what differs from ``nodes``.
    Returns ``(patches, report)``; raises ManifestError naming every blocked, missing or unusable node.
    """
    current_by_name, records = None, {}
    if nodes is not None:
        current_by_name = {(n.get('metadata') or {}).get('name'): (n.get('metadata') or {}).get('labels') or {}
                           for n in nodes}
        records = {(n.get('metadata') or {}).get('name'): (n.get('metadata') or {}).get('annotations') or {}
                   for n in nodes}
    errors, patches, report = [], [], {}
    seen = {}
    selectors = dict(pool_selectors or {})
    for node_name, sel in selectors.items():
        if not isinstance(sel, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in sel.items()):
            raise ManifestError('the MachineConfigPool selector of node %s is %r; expected node labels as '
                                '{name: value} strings (gpuvirt.provision.mcp_pool_selectors)' % (node_name, sel))
    every_selector = [pool_selector or {}] + list(selectors.values())
    for item in wanted:
        name = item['node']
        own = selectors.get(name, pool_selector)
        others = [sel for sel in every_selector if sel and sel != (own or {})]
        if name in seen:
            errors.append("node %s is listed twice (hosts %s and %s): one host per node" % (
                name, seen[name], item.get('host', name)))
            continue
        seen[name] = item.get('host', name)
        if retire:
            entry, patch = _retire_one(item, current_by_name, records, vmis, own, dra_selector, dra_stack, others)
            if isinstance(entry, str):
                errors.append(entry)
                continue
            report[name] = entry
            if patch:
                patches.append(patch)
            continue
        unknown = row_unknown(item)
        if unknown:
            # a run that left the host out (a limit, a pool survey) knows neither its interface nor its row: the
            # labels and the record a run with its facts set stay as they are
            report[name] = {'pool': item['pool'], 'changes': {}, 'owned_labels': None, 'unchanged': [],
                            'left_alone': unknown}
            continue
        row = fleet.BY_NAME.get(item['pool'])
        if row is not None and row.vgpu and not item.get('vgpu_config'):
            # desired_labels would refuse it too, without the host: name it, beside every other node's problem
            errors.append("host %s (node %s, pool %s) has no vGPU config for the %s label: set gpuvirt_vgpu_config on "
                          "the host (for example A10-12Q), or node_labels_vgpu_config_default for all vGPU hosts"
                          % (item.get('host', name), name, item['pool'], VGPU_LABEL))
            continue
        if row is not None and row.mig:
            try:
                mig.check_config(item.get('mig_config') or mig.DEFAULT_CONFIG, 'gpuvirt_mig_config of host %s (node %s)'
                                 % (item.get('host', name), name))
            except mig.MigError as exc:
                errors.append(str(exc))
                continue
        desired = desired_labels(item['pool'], item.get('vgpu_config'), own, dra_selector, dra_stack, others,
                                 item.get('mig_config'))
        if fleet.BY_NAME[item['pool']].vgpu:
            unusable = vgpu_config_error(name, desired[VGPU_LABEL], item.get('facts'), custom_configs)
            if unusable:
                errors.append(unusable)
                continue
        if current_by_name is not None and name not in current_by_name:
            errors.append("node %s is not in the cluster; check gpuvirt_node_name for host %s"
                          % (name, item.get('host', name)))
            continue
        current = current_by_name.get(name, {}) if current_by_name is not None else {}
        annotations = records.get(name) or {}
        owned = owned_labels(annotations)
        patch = label_diff(current, desired, owned)
        blocked = guard(name, current, patch, vmis)
        if blocked:
            errors.append(blocked)
            continue
        record = ','.join(owned_after(current, desired, patch, owned))
        report[name] = {'pool': item['pool'], 'changes': patch, 'owned_labels': record,
                        'unchanged': sorted(k for k, v in desired.items()
                                            if k not in patch and v is not None and not isinstance(v, RemoveIf))}
        meta = {'name': name}
        if render:
            # the file holds the whole state, the record with it: see rendered_labels
            meta['labels'] = rendered_labels(desired, patch, record)
            meta['annotations'] = {OWNED_ANNOTATION: record}
        elif patch:
            meta['labels'] = patch
        # the record is written with the labels, in the same merge patch (compared as the exact string: a second
        # run writes nothing)
        if not render and annotations.get(OWNED_ANNOTATION) != record:
            meta['annotations'] = {OWNED_ANNOTATION: record}
        if len(meta) > 1:
            patches.append({'apiVersion': 'v1', 'kind': 'Node', 'metadata': meta})
    if errors:
        raise ManifestError('\n'.join(errors))
    return patches, report


# --- rendering the plan (GitOps) ----------------------------------------------------------------------------------
# Labels another controller also writes, with what writes them: a render is synced by Argo CD or Flux, which write
# the rendered value back whenever the live one differs (Argo CD with self-heal, every Flux reconcile), so a
# rendered value would undo the other controller's. Apply mode leaves their other values alone (UnlessPaused); a
# render cannot, so it leaves these labels out and says on which nodes to set them once.
SHARED_LABELS = {
    # NVIDIA/k8s-driver-manager cmd/driver-manager/main.go@v0.12.0: evictAllGPUOperatorComponents pauses the label
    # named by NODE_LABEL_FOR_GPU_POD_EVICTION ("true" -> "paused-for-driver-upgrade", maybeSetPaused) to evict the
    # DRA kubelet plugin before it unloads the driver, and sets it back (maybeSetTrue) once the driver is loaded
    DRA_PLUGIN_LABEL: "the GPU Operator's driver manager sets it to %s during a driver upgrade to evict the DRA "
                      "kubelet plugin, and back to true after" % DRIVER_UPGRADE_PAUSED,
}


def rendered_labels(desired, patch, record):
    """The labels a render's Node file holds: every label ``desired`` sets (not only those that differ from the
    live node) and the removals of ``patch`` (None: render_removals names them; the file leaves them out). A
    GitOps tool deletes from the live object what a file held when last synced and no longer holds (client-side
    apply: the last-applied-configuration annotation; server-side apply: the fields its manager no longer applies;
    kubernetes.io, "Declarative Management of Kubernetes Objects Using Configuration Files"), so a file that held
    only a changed vGPU config would take nvidia.com/gpu.workload.config off the node at the next sync, and the GPU
    Operator would then run the default workload's operands there. A deploy label ("false") goes in only when the
    owned-labels ``record`` names it: one an administrator set before the collection wanted it stays theirs, as in
    apply mode (owned_after)."""
    ours = set(record.split(',')) if record else set()
    out = {}
    for key, value in desired.items():
        if value is None or isinstance(value, RemoveIf):
            continue
        if key.startswith(DEPLOY_LABEL_PREFIX) and key not in ours:
            continue
        out[key] = value
    out.update((key, None) for key, value in patch.items() if value is None)
    return out


def render_patches(patches):
    """The Node objects a render holds for ``patches`` (plan's): each node's labels to set, without a removal (a
    manifest cannot hold null; the report names them) and without a SHARED_LABELS label, and its owned-labels
    record when it changes. Returns ``(objects, left_out)``, ``left_out`` ``{label: {value: [nodes]}}``: what the
    render leaves to be set once outside it."""
    objects, left_out = [], {}
    for patch in patches:
        meta = patch.get('metadata') or {}
        name = meta.get('name')
        labels = {}
        for key, value in sorted((meta.get('labels') or {}).items()):
            if value is None:
                continue
            if key in SHARED_LABELS:
                left_out.setdefault(key, {}).setdefault(str(value), []).append(name)
                continue
            labels[key] = value
        out = {'name': name}
        if labels:
            out['labels'] = labels
        if 'annotations' in meta:
            out['annotations'] = meta['annotations']
        if len(out) > 1:
            objects.append({'apiVersion': 'v1', 'kind': 'Node', 'metadata': out})
    return objects, left_out


# A render must not hold a Node file for a node that is not in the cluster: Argo CD and Flux apply a file as
# create-or-update, so the file creates a Node object no kubelet runs (NotReady for good). On OpenShift the machine
# approver then refuses the real kubelet's client certificate when its machine joins under that name
# (openshift/cluster-machine-approver pkg/controller/csr_check.go authorizeNodeClientCSR: "node %s already exists,
# cannot approve"), and the Machine Config Operator counts the fake node in its pool, which is never Updated.
ABSENT_NODE = ('node %s (host %s) is not in the cluster: the render writes no Node file for it (applied by Argo CD '
               'or Flux, a Node file creates a Node no kubelet runs, and the machine approver then refuses the real '
               'kubelet\'s certificate: "node %s already exists, cannot approve"). Render again once the node has '
               'joined, or check gpuvirt_node_name for host %s')
UNCHECKED_NODES = ('the render could not check that the nodes exist (%s): it writes a Node file for every GPU host, '
                   'and Argo CD or Flux create the Node of a host whose machine has not joined yet (a Node no kubelet '
                   'runs, whose name the machine approver then refuses to the real kubelet). Render with the cluster '
                   'named (gpuvirt_kubeconfig) or node_labels_current_nodes given, and on a cluster whose machines '
                   'come from MachineSets set the pool-role labels in the MachineSet '
                   '(spec.template.spec.metadata.labels) so that new nodes join with them. Without the nodes\' labels '
                   'the render also cannot tell a gpu.deploy "false" an administrator set from one it writes: each '
                   'one its pool switches off is then written and recorded as the collection\'s')


NODE_ROLE_PREFIX = 'node-role.kubernetes.io/'


def absent_nodes(wanted, present):
    """The ``wanted`` entries (plan's) whose node is not among ``present`` (the names of the cluster's Nodes), as
    ``[(node, host)]`` in their order; ``[]`` when ``present`` is None (not known)."""
    if present is None:
        return []
    present = set(present)
    return [(item['node'], item.get('host', item['node'])) for item in wanted if item['node'] not in present]


def render_removals(patches):
    """One line per node whose plan removes labels a render cannot remove (a manifest cannot hold null): the labels
    and the ``kubectl label node`` command that removes them once. A pool-role label left behind
    (``node-role.kubernetes.io/<pool>`` of a host moved to another custom MachineConfigPool) puts the node in two
    custom pools, which the Machine Config Operator refuses ("belongs to 2 custom roles",
    openshift/machine-config-operator pkg/helpers/helpers.go GetPoolsForNode): the line says so."""
    lines = []
    for patch in patches:
        meta = patch.get('metadata') or {}
        gone = sorted(key for key, value in (meta.get('labels') or {}).items() if value is None)
        if not gone:
            continue
        name = meta.get('name')
        line = ('node %s: the render cannot remove %s (a manifest cannot hold a removal); remove it once with: '
                'kubectl label node %s %s' % (name, ', '.join(gone), shlex.quote(str(name)),
                                              ' '.join(shlex.quote(key + '-') for key in gone)))
        roles = [key for key in gone if key.startswith(NODE_ROLE_PREFIX)]
        if roles:
            line += ('. Until then the node keeps %s: with the label of its new pool it is in two custom '
                     'MachineConfigPools, and the Machine Config Operator refuses such a node ("belongs to 2 custom '
                     'roles") and rolls out neither pool\'s MachineConfigs' % ', '.join(roles))
        lines.append(line)
    return lines


def left_out_lines(left_out):
    """One line per label a render left out: why, and the command that sets it once on its nodes."""
    lines = []
    for key in sorted(left_out):
        for value, nodes in sorted(left_out[key].items()):
            lines.append('%s=%s is not in the render (%s; a GitOps sync would write it back mid-upgrade): set it once '
                         'on %s with: kubectl label node %s %s=%s (or run playbooks/nodes.yml in apply mode, which '
                         'leaves a paused value alone)'
                         % (key, value, SHARED_LABELS[key], ', '.join(sorted(nodes)),
                            ' '.join(shlex.quote(node) for node in sorted(nodes)), key, shlex.quote(value)))
    return lines


# --- sending the plan: node_labels_apply ------------------------------------------------------------------------
# A Node merge patch (RFC 7386, as `kubectl label` sends): null removes a label whoever set it, where server-side
# apply would only drop labels its field manager owns. The patch is the sink's input, whoever built it: it is
# checked again before it is sent, whatever the task passed.
PATCH_PARTS = ('labels', 'annotations')
MERGE_PATCH = 'application/merge-patch+json'


def patch_before(patches, nodes):
    """For the diff: per patched node, the values the cluster holds now of exactly the labels and annotations its
    patch sets (``{node: {'labels': {...}, 'annotations': {...}}}``, an absent key left out); ``{}`` without cluster
    state. Only the touched keys: a node's whole label set (NFD alone adds dozens) would be carried through Ansible
    for every node of the fleet."""
    if nodes is None:
        return {}
    current = {(n.get('metadata') or {}).get('name'): n.get('metadata') or {} for n in nodes}
    out = {}
    for patch in patches:
        meta = patch['metadata']
        have = current.get(meta['name']) or {}
        out[meta['name']] = {part: {key: (have.get(part) or {})[key] for key in meta.get(part) or {}
                                    if key in (have.get(part) or {})}
                             for part in PATCH_PARTS}
    return out


def report_lines(report, patches):
    """The plan as one message: a line per node, in the order of the hosts (its pool, and the labels it sets and
    removes, or why it is left alone), saying when its owned-labels record is written too."""
    records = {p['metadata']['name']: p['metadata']['annotations'][OWNED_ANNOTATION]
               for p in patches if OWNED_ANNOTATION in (p['metadata'].get('annotations') or {})}
    lines = []
    for name, entry in report.items():
        head = '%s (pool %s): ' % (name, entry['pool'])
        if entry.get('left_alone'):
            lines.append(head + 'left alone: ' + entry['left_alone'])
            continue
        changes = entry.get('changes') or {}
        sets = ['%s=%s' % (k, v) for k, v in sorted(changes.items()) if v is not None]
        removes = sorted(k for k, v in changes.items() if v is None)
        said = '; '.join(part for part in ('set ' + ', '.join(sets) if sets else '',
                                           'remove ' + ', '.join(removes) if removes else '') if part)
        if entry.get('retire'):
            line = head + ('retire: ' + said if said else 'retire: none of our labels left')
            if entry.get('kept'):
                line += '; kept (a value the collection did not set, or not in its record): %s' % ', '.join(
                    entry['kept'])
        else:
            line = head + (said or 'labels already right')
        if name in records:
            # the value unquoted (a YAML callback would double quotes), '(empty)' when it names no label
            line += '; owned-labels record: %s' % ('removed' if records[name] is None else records[name] or '(empty)')
        lines.append(line)
    return lines


class PatchError(Exception):
    """The patch of ``node`` failed: ``status``, the HTTP status the API server answered (None: no answer),
    ``reason``, its message or the connection's error."""

    def __init__(self, node, status, reason):
        self.node, self.status, self.reason = node, status, reason
        super(PatchError, self).__init__('node %s: %s' % (node, self.said()))

    def said(self):
        if self.status is None:
            return 'no answer from the API server: %s' % self.reason
        return 'the API server refused its label patch: HTTP %s %s' % (self.status, self.reason)


def _checked_record(value, where):
    """The owned-labels record a patch writes: '' or comma-separated nvidia.com/gpu.deploy.<operand> label keys, or
    None, which removes the record (a retired node)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ManifestError('%s: annotation %s must be a string, got %r' % (where, OWNED_ANNOTATION, value))
    for key in value.split(',') if value else []:
        checked(validators.label_key, key, '%s annotation %s entry' % (where, OWNED_ANNOTATION))
        if not key.startswith(DEPLOY_LABEL_PREFIX):
            raise ManifestError('%s: annotation %s names %r, not a %s<operand> label' % (
                where, OWNED_ANNOTATION, key, DEPLOY_LABEL_PREFIX))
    return value


def _checked_patch(index, patch):
    """``(name, body)`` of one partial Node, or ManifestError naming ``patches[index]`` and what is wrong."""
    where = 'patches[%d]' % index
    if not isinstance(patch, dict) or patch.get('apiVersion') != 'v1' or patch.get('kind') != 'Node' \
            or set(patch) - {'apiVersion', 'kind', 'metadata'} or not isinstance(patch.get('metadata'), dict):
        raise ManifestError('%s: expected a partial Node {apiVersion: v1, kind: Node, metadata: {name, labels, '
                            'annotations}}, got %r' % (where, patch))
    meta = patch['metadata']
    name = checked(validators.dns1123_subdomain, meta.get('name'), '%s node name' % where)
    where = '%s (node %s)' % (where, name)
    extra = sorted(set(meta) - {'name'} - set(PATCH_PARTS), key=str)
    if extra:
        raise ManifestError('%s: only labels and the %s annotation are patched, not metadata %s'
                            % (where, OWNED_ANNOTATION, ', '.join(map(repr, extra))))
    body = {}
    labels = meta.get('labels')
    if labels:
        if not isinstance(labels, dict):
            raise ManifestError('%s: labels must be a mapping, got %r' % (where, labels))
        for key, value in labels.items():
            checked(validators.label_key, key, '%s label key' % where)
            if value is not None:
                checked(validators.label_value, value, '%s label %s' % (where, key))
        body['labels'] = dict(labels)
    annotations = meta.get('annotations')
    if annotations:
        if not isinstance(annotations, dict) or set(annotations) != {OWNED_ANNOTATION}:
            raise ManifestError('%s: the only annotation patched is %s, got %r' % (where, OWNED_ANNOTATION,
                                                                                   annotations))
        body['annotations'] = {OWNED_ANNOTATION: _checked_record(annotations[OWNED_ANNOTATION], where)}
    if not body:
        raise ManifestError('%s: sets no label and no annotation (the plan sends only nodes that differ)' % where)
    return name, {'metadata': body}


def checked_patches(patches):
    """The patches as ``[(node name, merge patch body)]``, each checked (a v1 Node, its name a DNS-1123 subdomain,
    label keys and values by their grammars, a value null to remove, no annotation but the owned-labels record,
    one patch per node); ManifestError naming every bad one, before anything is sent."""
    if not isinstance(patches, list):
        raise ManifestError('patches must be a list of partial Nodes, got %r' % (patches,))
    errors, out, seen = [], [], set()
    for index, patch in enumerate(patches):
        try:
            name, body = _checked_patch(index, patch)
        except ManifestError as exc:
            errors.append(str(exc))
            continue
        if name in seen:
            errors.append('patches[%d]: node %s is patched twice: one patch per node' % (index, name))
            continue
        seen.add(name)
        out.append((name, body))
    if errors:
        raise ManifestError('\n'.join(errors))
    return out


def send_patches(items, send):
    """Send ``items`` (checked_patches) in order, one ``send(name, body)`` each, which returns the Node as the
    server answered it; returns ``[(name, body, node)]``. At the first refusal (a PatchError) nothing more is sent:
    ManifestError naming the node, the HTTP status and the server's message, the nodes patched before it and those
    not sent. A second run sends only what still differs, so the run can simply be repeated once fixed."""
    done = []
    for name, body in items:
        try:
            node = send(name, body)
        except PatchError as exc:
            left = [n for n, _b in items[len(done) + 1:]]
            raise ManifestError(
                'node %s: %s; %s; %s. Nothing else was sent; fix the cause and run the phase again (it patches only '
                'what still differs)'
                % (exc.node, exc.said(),
                   'patched before it: %s' % names_text(n for n, _b, _n in done) if done
                   else 'no node patched before it',
                   'not sent: %s' % names_text(left) if left else 'none left after it'))
        done.append((name, body, node))
    return done


def names_text(names, most=20):
    """``a, b, c`` for a message, the first ``most`` and how many more."""
    names = list(names)
    shown = ', '.join(names[:most])
    return shown + (' and %d more' % (len(names) - most) if len(names) > most else '')


def patch_diff(name, body, before, node):
    """The per-node diff: the touched labels and annotation before (``before``, patch_before's entry) and as the
    server returned the node after the patch (a dry run's answer in check mode)."""
    meta = (node or {}).get('metadata') or {}
    after = {part: {key: (meta.get(part) or {})[key] for key in body['metadata'].get(part) or {}
                    if key in (meta.get(part) or {})} for part in PATCH_PARTS}
    before = before or {}
    return {'before_header': 'node %s' % name, 'after_header': 'node %s' % name,
            'before': {part: dict(before.get(part) or {}) for part in PATCH_PARTS if body['metadata'].get(part)},
            'after': {part: after[part] for part in PATCH_PARTS if body['metadata'].get(part)}}
