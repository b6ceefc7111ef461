# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade plan: what changes, on which nodes, in which order, and what happens to each GPU VM. Pure Python.

Everything read from the cluster (Nodes, the operator's DaemonSets, their ControllerRevisions and pods, VMs, VMIs)
is untrusted input: a malformed object is skipped or named, never a crash. The plan refuses (``refusals``) before
any change when an upgrade would lose a VM or cannot be done safely; playbooks/upgrade.yml stops on any refusal.

Upstream behaviour each rule rests on:

* A DaemonSet pod is current when its ``controller-revision-hash`` label is the hash of the DaemonSet's newest
  ControllerRevision (the DaemonSet controller labels each pod with its revision's hash: kubernetes
  pkg/controller/daemon/update.go, ``controller-revision-hash`` = apps.DefaultDaemonSetUniqueLabelKey). With
  ``updateStrategy: OnDelete`` (upgrade_policy.py) a stale pod stays until deleted; deleting it is the per-node step.
* GPU VMs cannot live-migrate: KubeVirt sets a VMI with PCI host devices not live-migratable (condition
  ``LiveMigratable`` False, reason ``HostDeviceNotLiveMigratable``: kubevirt staging/src/kubevirt.io/api/core/v1/
  types.go VirtualMachineInstanceReasonHostDeviceNotMigratable), so evicting its virt-launcher pod kills the guest.
  A GPU VMI here is one with ``gpus`` or ``hostDevices`` in its spec, or that condition. Each GPU VMI on a node to
  roll is handled by policy: ``wait`` (until it stops),
  ``stop`` (the VM's runStrategy set to Halted, restored after: ``Always`` / ``RerunOnFailure`` start it again,
  kubevirt docs "Run Strategies"), ``refuse`` (named, nothing changes).
* KubeVirt is upgraded one minor version at a time (KubeVirt "Updates and Deletion": updates are supported from the
  previous minor release only; skipping one is refused).
* At KubeVirt 1.8 the ``DisableMDEVConfiguration`` feature gate is deprecated for
  ``spec.configuration.mediatedDevicesConfiguration`` (kubevirt release notes v1.8.0; kubevirt.py
  has_mdev_enabled_field); after the roll, upgrade.yml renders the KubeVirt / HyperConverged configuration again for
  the version the cluster then runs (kubevirt_config says what that changes). The NVIDIA vendor-specific VFIO path
  needs KubeVirt >= 1.9.0. KubeVirt v1.9.0 still honours the gate (mdev_gate_refusal says what a later one may do).
* A KubeVirt upgrade updates running VMIs by itself per the KubeVirt CR's ``spec.workloadUpdateStrategy``
  (workload_update says how): with ``Evict`` a GPU VM is shut down on every node, outside any VM policy here.
* On container and DRA pool nodes the new driver pod's k8s-driver-manager cordons, evicts the GPU pods and then
  uncordons the node itself (driver_manager_uncordons): the roll's cordon does not hold past that point there.
* The vGPU Manager's driver branch (the first number of the version, ``580`` of ``580.82.02``) must be the branch
  of the guest drivers the VMs run (NVIDIA vGPU software: host and guest drivers come from one release branch);
  the collection cannot read the guests, so the inventory declares it (``upgrade_guest_driver_branch``).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import (
    ManifestError, checked, version_tuple, as_dict as _d, as_list as _l, as_str as _s, meta_of as _meta)
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco as hco_mod
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt as kv_mod
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import upgrade_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.fleet import printable
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.upgrade_operator import helm_step, olm_step
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.upgrade_policy import (
    from_cluster_policy, from_nvidia_driver)

PlanError = ManifestError
POLICIES = upgrade_settings.POLICIES
REVISION_HASH = 'controller-revision-hash'
# the annotation upgrade.yml writes on a node it cordons, and on a VM it stops (with the run strategy to restore):
# a rerun after a failure resumes a node cordoned by itself, and restores a VM it stopped
CORDONED_BY = 'gpuvirt.provision/upgrade-cordoned'
STOPPED_BY = 'gpuvirt.provision/upgrade-stopped-run-strategy'
# k8s-operator-libs pkg/upgrade/consts.go: UpgradeStateLabelKeyFmt "nvidia.com/%s-driver-upgrade-state" with
# DriverName "gpu", and UpgradeStateFailed "upgrade-failed"
OPERATOR_STATE_LABEL = 'nvidia.com/gpu-driver-upgrade-state'
OPERATOR_STATE_FAILED = 'upgrade-failed'
# the run strategies under which KubeVirt's VM controller starts a VMI for a VM that has none (kubevirt
# pkg/virt-controller/watch/vm/vm.go: RunStrategyAlways and RunStrategyRerunOnFailure start one; RunStrategyOnce
# starts one "if vmi == nil"), so writing them back after the roll boots the VM; Manual and Halted leave it stopped
RESTARTING = ('Always', 'RerunOnFailure', 'Once')
# the run strategies (of KubeVirt's Always, RerunOnFailure, Manual, Halted, Once and WaitAsReceiver: kubevirt
# staging/src/kubevirt.io/api/core/v1/types.go VirtualMachineRunStrategy) the stop policy may set aside and write
# back (restore.yml restores only these): WaitAsReceiver is a VM waiting to receive a live migration (vm.go
# RunStrategyWaitAsReceiver creates a receiver VMI, and on a completed migration restores the VM's
# kubevirt.io/restore-run-strategy annotation itself), which Halted would break; the plan refuses stop for it
RESTORABLE = ('Always', 'RerunOnFailure', 'Manual', 'Halted', 'Once')
# the annotation the stop policy writes beside STOPPED_BY: the node the VM ran on, so a batch restores only the VMs
# of a node it has released (restore.yml)
STOPPED_ON = 'gpuvirt.provision/upgrade-stopped-node'
# KubeVirt labels each virt-launcher pod kubevirt.io=virt-launcher and kubevirt.io/created-by=<its VMI's uid>
# (kubevirt pkg/virt-controller/services/template.go podLabels: v1.AppLabel, v1.CreatedByLabel); the pod is the VM
LAUNCHER_APP = ('kubevirt.io', 'virt-launcher')
CREATED_BY = 'kubevirt.io/created-by'
# a finished VMI or launcher pod holds no device: KubeVirt leaves a finished VMI in place for Manual / Once VMs and
# for a VMI without VM (vm.go), so waiting for it to vanish would never end
FINISHED = ('Succeeded', 'Failed')
# The pool rows whose vGPUs are SR-IOV VFs given a vGPU profile (vf_rows: the rows of vf_profiles, NVIDIA's
# vendor-specific VFIO interface, vm-vgpu-vf): KubeVirt's device manager advertises such a VF only once its
# nvidia/current_vgpu_type is set (kubevirt/kubevirt v1.9.0 pkg/virt-handler/device-manager, HasVGPUProfile via
# nvidia.go shouldPermitNvidia; docs/pools/vendor-vfio.md). A new vGPU Manager pod reloads the nvidia driver and the VFs
# come back without a profile: the roll sets them again on the node's inventory host (the vgpu_vf role's apply; on a
# MachineConfig platform a restart of the boot-time unit gpuvirt-vgpu-vf.service the pool's MachineConfig installed)
# before it waits for the node's allocatable.
VF_REAPPLY_VARIABLE = 'upgrade_vgpu_vf_reapply'
_BRANCH_RE = re.compile(r'[0-9]{3}')


def _version(value, variable):
    try:
        return version_tuple(value)
    except ManifestError:
        raise PlanError("%s is %r, not a version like 1.9.0" % (variable, value))


def branch_of(driver_version):
    """``580`` of ``580.82.02``; None for a digest or anything else."""
    head = _s(driver_version).split('.', 1)[0]
    return head if _BRANCH_RE.fullmatch(head) else None


# versions ------------------------------------------------------------------------------------------------------
def kubevirt_step(current, target):
    """Refusals and notes for a KubeVirt change ``current`` -> ``target`` (strings, either may be empty)."""
    refusals, notes = [], []
    if not target or not current or _s(current).lstrip('v') == _s(target).lstrip('v'):
        return refusals, notes
    cur, tgt = _version(current, 'the running KubeVirt version'), _version(target, 'upgrade_kubevirt_version')
    if tgt < cur:
        refusals.append("KubeVirt %s -> %s is a downgrade, which KubeVirt does not support; set "
                        "upgrade_kubevirt_version to %s or later" % (current, target, current))
    elif tgt[0] != cur[0] or tgt[1] - cur[1] > 1:
        nxt = 'v%d.%d' % (cur[0], cur[1] + 1)
        refusals.append("KubeVirt %s -> %s skips a minor version: KubeVirt upgrades one minor release at a time; "
                        "upgrade to the latest %s.x first (upgrade_kubevirt_version), then to %s"
                        % (current, target, nxt, target))
    if cur < (1, 8, 0) <= tgt:
        notes.append("KubeVirt crosses 1.8: the DisableMDEVConfiguration gate gives way to "
                     "mediatedDevicesConfiguration; upgrade.yml renders the configuration again once KubeVirt reports "
                     "the new version")
    return refusals, notes


def versions(current, target, guest_branch=None, vendor_vfio=False, supports=None, cluster_version=None):
    """The version table and its refusals.

    ``current`` / ``target``: ``{gpu_operator, vgpu_manager, kubevirt}`` (strings; empty target = unchanged).
    ``supports``: the target GPU Operator release's support list from NVIDIA's platform support page, as the
    inventory gives it (``{kubernetes: ['1.33', ...], kubevirt: ['1.8', ...]}``); without it nothing is checked and
    a warning says so.
    """
    current, target = _d(current), _d(target)
    rows, refusals, notes, warnings = [], [], [], []
    for key in ('gpu_operator', 'vgpu_manager', 'kubevirt'):
        cur, tgt = _s(current.get(key)), _s(target.get(key))
        rows.append({'component': key, 'from': cur or None, 'to': tgt or cur or None,
                     'change': bool(tgt) and tgt.lstrip('v') != cur.lstrip('v')})
    by = dict((r['component'], r) for r in rows)
    vgm = by['vgpu_manager']['to']
    if vgm and guest_branch is not None and _s(str(guest_branch)):
        host = branch_of(vgm)
        if host is None:
            warnings.append("the vGPU Manager version %s names no driver branch; the guest driver branch %s is not "
                            "checked" % (vgm, guest_branch))
        elif host != str(guest_branch).strip():
            refusals.append("the vGPU Manager %s is branch %s but the guests run branch %s "
                            "(upgrade_guest_driver_branch): upgrade the guest drivers to branch %s first and set "
                            "upgrade_guest_driver_branch, or pick a %s.x vGPU Manager (vgpu_manager_image_version)"
                            % (vgm, host, guest_branch, host, guest_branch))
    elif vgm and by['vgpu_manager']['change']:
        warnings.append("upgrade_guest_driver_branch is not set: the vGPU Manager branch is not checked against the "
                        "guest drivers")
    kv_ref, kv_notes = kubevirt_step(by['kubevirt']['from'], by['kubevirt']['to'] if by['kubevirt']['change'] else '')
    refusals += kv_ref
    notes += kv_notes
    kv_to = by['kubevirt']['to']
    if vendor_vfio and kv_to and _version(kv_to, 'upgrade_kubevirt_version') < (1, 9, 0):
        refusals.append("the fleet has NVIDIA vendor-specific VFIO vGPU hosts, which need KubeVirt 1.9.0 or later; "
                        "KubeVirt would be %s" % kv_to)
    if by['gpu_operator']['change']:
        supports = _d(supports)
        if not supports:
            warnings.append("GPU Operator %s: upgrade_gpu_operator_supports is not set, so the Kubernetes and KubeVirt "
                            "versions it supports are not checked (NVIDIA's platform support page lists them)"
                            % by['gpu_operator']['to'])
        # the keys of upgrade_gpu_operator_supports (the software the release lists), not platform rows
        have_versions = {'kubernetes': cluster_version, 'kubevirt': kv_to}
        for what, have in have_versions.items():
            listed = [str(x).lstrip('v') for x in _l(supports.get(what))]
            if listed and have:
                minor = '%d.%d' % _version(have, what + ' version')[:2]
                if minor not in listed:
                    refusals.append("GPU Operator %s does not list %s %s as supported (upgrade_gpu_operator_supports."
                                    "%s: %s)" % (by['gpu_operator']['to'], what, minor, what, ', '.join(listed)))
    return rows, refusals, notes, warnings


KUBEVIRT_EVICT = 'Evict'


def _kubevirt_gpu_vmis(vmis):
    """The GPU VMIs (``namespace/name``) of the whole cluster that are not finished nor being deleted."""
    out = []
    for vmi in _l(vmis):
        meta = _meta(vmi)
        if (not _is_gpu_vmi(vmi) or meta.get('deletionTimestamp')
                or _d(_d(vmi).get('status')).get('phase') in ('Succeeded', 'Failed')):
            continue
        out.append('%s/%s' % (_s(meta.get('namespace')), _s(meta.get('name'))))
    return sorted(out)


def _names(keys, cap=5):
    return ', '.join(keys[:cap]) + (' and %d more' % (len(keys) - cap) if len(keys) > cap else '')


def workload_update(kubevirt_cr, vmis, target, hco=False):
    """``(refusals, notes)`` for what KubeVirt itself does to running GPU VMs when it is upgraded to ``target``
    (upgrade_kubevirt_version; '' when KubeVirt does not change).

    KubeVirt's workload updater (kubevirt/kubevirt pkg/virt-controller/watch/workload-updater/workload-updater.go
    getUpdateData, sync) finds, once the new release is deployed, every running VMI whose virt-launcher is of the older
    release; with ``LiveMigrate`` in ``spec.workloadUpdateStrategy.workloadUpdateMethods`` a live-migratable one is
    migrated, else with ``Evict`` it is evicted - ``batchEvictionSize`` VMIs (default 10) every
    ``batchEvictionInterval`` (default 1m), on any node. A GPU VMI is not live-migratable, so with ``Evict`` each GPU
    VM is shut down, outside the roll and its policies: refused while GPU VMs run. An empty list means no automated
    update (staging/src/kubevirt.io/api/core/v1/types.go KubeVirtWorkloadUpdateStrategy), the KubeVirt CR's default;
    HyperConverged writes its own ``spec.workloadUpdateStrategy`` into the KubeVirt CR (default ``[LiveMigrate]``,
    hyperconverged-cluster-operator api/v1beta1 hyperconverged_types.go; older HCO releases defaulted to
    ``[LiveMigrate, Evict]``). Without ``Evict`` a GPU VM keeps the older virt-launcher until it is restarted; KubeVirt
    counts such VMIs in ``status.outdatedVirtualMachineInstanceWorkloads``, which the notes report."""
    refusals, notes = [], []
    cr = _d(kubevirt_cr)
    if not cr:
        return refusals, notes
    meta = _meta(cr)
    where = '%s/%s' % (printable(_s(meta.get('namespace')) or '(none)', 63), printable(_s(meta.get('name')) or '(none)', 253))
    strategy = _d(_d(cr.get('spec')).get('workloadUpdateStrategy'))
    methods = [_s(m) for m in _l(strategy.get('workloadUpdateMethods'))]
    gpu = _kubevirt_gpu_vmis(vmis)
    outdated = _d(cr.get('status')).get('outdatedVirtualMachineInstanceWorkloads')
    if isinstance(outdated, int) and not isinstance(outdated, bool) and outdated > 0:
        notes.append("KubeVirt reports %d VMI(s) still on an older virt-launcher (KubeVirt CR %s "
                     "status.outdatedVirtualMachineInstanceWorkloads): a GPU VM among them is updated only when it is "
                     "restarted" % (outdated, where))
    if not target or not gpu:
        return refusals, notes
    if KUBEVIRT_EVICT in methods:
        size = strategy.get('batchEvictionSize')
        size = size if isinstance(size, int) and not isinstance(size, bool) else 10
        where_fix = ('HyperConverged kubevirt-hyperconverged spec.workloadUpdateStrategy.workloadUpdateMethods (HCO '
                     'writes the KubeVirt CR from it)' if hco else
                     'the KubeVirt CR %s spec.workloadUpdateStrategy.workloadUpdateMethods' % where)
        refusals.append(
            "the KubeVirt CR %s has spec.workloadUpdateStrategy.workloadUpdateMethods [%s]: once KubeVirt %s is "
            "deployed its workload updater evicts every VMI that cannot live-migrate, %d every batchEvictionInterval, "
            "on every node and outside upgrade_vm_policy; the %d GPU VM(s) (%s) would be shut down. Remove Evict from "
            "%s (leave [LiveMigrate], or empty), then run playbooks/upgrade.yml again; the GPU VMs then keep the older "
            "virt-launcher until each is restarted"
            % (where, ', '.join(printable(m, 40) for m in methods), target, size, len(gpu), _names(gpu), where_fix))
    else:
        notes.append("KubeVirt %s: the %d GPU VM(s) (%s) cannot live-migrate, so they keep the older virt-launcher "
                     "until each is restarted (workloadUpdateMethods [%s]; KubeVirt counts them in "
                     "status.outdatedVirtualMachineInstanceWorkloads)"
                     % (target, len(gpu), _names(gpu), ', '.join(printable(m, 40) for m in methods)))
    return refusals, notes


# The newest KubeVirt minor read to still honour DisableMDEVConfiguration (v1.9.0, mdev_gate_refusal).
MDEV_GATE_LAST_HONOURED = (1, 9)


def mdev_gate_refusal(kubevirt_cr, target):
    """The refusal (or '') for a KubeVirt target past v1.9 while the live KubeVirt CR turns mdev handling off with
    the ``DisableMDEVConfiguration`` gate alone.

    kubevirt/kubevirt v1.9.0 (and main after it, read 2026-08) still honours the gate: it is registered in state
    ``Deprecated`` (pkg/virt-config/featuregate/inactive.go), ``IsEnabled`` returns true for a gate listed in
    ``developerConfiguration.featureGates`` whatever its state (featuregate/feature-gates.go), and
    ``MediatedDevicesHandlingDisabled`` falls back to it when ``mediatedDevicesConfiguration.enabled`` is unset
    (pkg/virt-config/virt-config.go). The change that would make it a no-op at 1.9 (moving it to ``Discontinued``
    and dropping the fallback) was closed unmerged, and is in no release. KubeVirt's deprecation policy defines
    ``Deprecated`` as "going to be discontinued in the following release" (featuregate/feature-gates.go): a release
    after 1.9 may drop it, and virt-handler would then create and remove mediated devices under the GPU Operator's
    vGPU Device Manager. So a target past 1.9 is refused while the gate is the only switch; the field
    (``mediatedDevicesConfiguration.enabled: false``, which wins over the gate from v1.8.0) is written first."""
    cr = _d(kubevirt_cr)
    if not target or not cr:
        return ''
    if _version(target, 'upgrade_kubevirt_version')[:2] <= MDEV_GATE_LAST_HONOURED:
        return ''
    config = _d(_d(cr.get('spec')).get('configuration'))
    gates = [_s(g) for g in _l(_d(config.get('developerConfiguration')).get('featureGates'))]
    enabled = _d(config.get('mediatedDevicesConfiguration')).get('enabled')
    if kv_mod.DISABLE_MDEV_GATE not in gates or isinstance(enabled, bool):
        return ''
    meta = _meta(cr)
    return ("the KubeVirt CR %s/%s turns KubeVirt's mediated device handling off with the DisableMDEVConfiguration "
            "feature gate alone (no spec.configuration.mediatedDevicesConfiguration.enabled): KubeVirt 1.9 still honours "
            "the deprecated gate, a later release may drop it, and KubeVirt %s would then create and remove mediated "
            "devices under the GPU Operator. Run playbooks/kubevirt.yml for the KubeVirt running now (from 1.8.0 it "
            "writes mediatedDevicesConfiguration.enabled: false), then run playbooks/upgrade.yml again"
            % (printable(_s(meta.get('namespace')) or '(none)', 63), printable(_s(meta.get('name')) or '(none)', 253),
               target))


def missing_image_tags(version, os_tags, present):
    """The ``<version>-<os tag>`` tags the vGPU Manager needs that ``present`` (tags read from the registry) lacks."""
    if not version:
        return []
    have = set(_s(t) for t in _l(present))
    return ['%s-%s' % (version, tag) for tag in sorted(set(_s(t) for t in _l(os_tags) if _s(t)))
            if '%s-%s' % (version, tag) not in have]


# the nodes -----------------------------------------------------------------------------------------------------
def _owner_uid(obj, kind):
    """The uid of ``obj``'s owner of ``kind``, or ''. Owners are matched by uid, never by name: an object whose owner
    was deleted and re-created under the same name belongs to the old one (the garbage collector's view too)."""
    owner = [o for o in _l(_meta(obj).get('ownerReferences')) if _d(o).get('kind') == kind]
    return _s(owner[0].get('uid')) if owner else ''


def _names_by_uid(objects):
    return dict((_s(_meta(o).get('uid')), _s(_meta(o).get('name'))) for o in _l(objects) if _s(_meta(o).get('uid')))


def current_hashes(daemonsets, revisions):
    """``{daemonset name: hash of its newest ControllerRevision}``."""
    uids = _names_by_uid(daemonsets)
    best = {}
    for rev in _l(revisions):
        meta = _meta(rev)
        owner = _owner_uid(rev, 'DaemonSet')
        number = _d(rev).get('revision')
        hash_ = _s(_d(meta.get('labels')).get(REVISION_HASH))
        if owner not in uids or not isinstance(number, int) or isinstance(number, bool) or not hash_:
            continue
        name = uids[owner]
        if name not in best or number > best[name][0]:
            best[name] = (number, hash_)
    return dict((k, v[1]) for k, v in best.items())


def _daemonset_pods(node, pods, daemonsets):
    """``(pod, DaemonSet name)`` for each pod on ``node``, not being deleted, whose DaemonSet owner (by uid) is one
    of ``daemonsets``: a pod of a DaemonSet not read (another namespace's, or one deleted and re-created) is not
    this roll's."""
    uids = _names_by_uid(daemonsets)
    for pod in _l(pods):
        meta = _meta(pod)
        if _d(_d(pod).get('spec')).get('nodeName') != node or meta.get('deletionTimestamp'):
            continue
        ds = uids.get(_owner_uid(pod, 'DaemonSet'))
        if ds:
            yield pod, ds


def driver_manager_uncordons(daemonsets):
    """The names of the DaemonSets whose k8s-driver-manager init container cordons, drains and then uncordons the
    node by itself: ``ENABLE_GPU_POD_EVICTION`` or ``ENABLE_AUTO_DRAIN`` "true" in its env.

    NVIDIA/k8s-driver-manager v0.12.0 cmd/driver-manager/main.go uninstallDriver: with either on (and the node's
    ``nvidia.com/gpu-driver-upgrade-enabled`` annotation not "true", i.e. autoUpgrade off) it cordons the node,
    evicts the GPU pods, and once the old driver is unloaded calls UncordonNode unconditionally - also when no driver
    was loaded, and in cleanupOnFailure. NVIDIA/gpu-operator v26.7.0 sets ``ENABLE_GPU_POD_EVICTION: "true"`` on the
    driver DaemonSet (assets/state-driver/0500_daemonset.yaml: container and DRA pool nodes) and "false" (both) on
    the vGPU Manager's and the VFIO manager's, which leave the node as the roll set it."""
    out = set()
    for ds in _l(daemonsets):
        inits = _l(_d(_d(_d(_d(ds).get('spec')).get('template')).get('spec')).get('initContainers'))
        for init in inits:
            if _d(init).get('name') != 'k8s-driver-manager':
                continue
            env = dict((_s(_d(e).get('name')), _s(_d(e).get('value'))) for e in _l(_d(init).get('env')))
            if env.get('ENABLE_GPU_POD_EVICTION') == 'true' or env.get('ENABLE_AUTO_DRAIN') == 'true':
                out.add(_s(_meta(ds).get('name')))
    return out


def _rows(found):
    return sorted(({'name': _s(_meta(pod).get('name')), 'daemonset': ds} for pod, ds in found),
                  key=lambda p: p['name'])


def stale_pods(node, pods, daemonsets, revisions):
    """The operand pods on ``node`` whose DaemonSet has a newer revision: ``[{name, daemonset}]``."""
    hashes = current_hashes(daemonsets, revisions)
    return _rows((pod, ds) for pod, ds in _daemonset_pods(node, pods, daemonsets)
                 if ds in hashes and _s(_d(_meta(pod).get('labels')).get(REVISION_HASH)) != hashes[ds])


def node_pods_of(node, pods, daemonsets, names):
    """The pods on ``node`` (not being deleted) of the DaemonSets named ``names``, matched by their owner's uid:
    ``[{name, daemonset}]``. The operator's validators, deleted with the operands so the node is validated again."""
    wanted = set(_s(n) for n in _l(names))
    return _rows((pod, ds) for pod, ds in _daemonset_pods(node, pods, daemonsets) if ds in wanted)


def _is_gpu_vmi(vmi):
    devices = _d(_d(_d(_d(vmi).get('spec')).get('domain')).get('devices'))
    pinned = [c for c in _l(_d(_d(vmi).get('status')).get('conditions'))
              if _d(c).get('type') == 'LiveMigratable' and _d(c).get('reason') == 'HostDeviceNotLiveMigratable']
    return bool(_l(devices.get('gpus')) or _l(devices.get('hostDevices')) or pinned)


def _run_strategy(vm):
    spec = _d(_d(vm).get('spec'))
    if isinstance(spec.get('runStrategy'), str):
        return spec['runStrategy']
    if isinstance(spec.get('running'), bool):
        return 'Always' if spec['running'] else 'Halted'
    return None


def launcher_vmi_uid(pod):
    """The uid of the VMI a virt-launcher pod runs (its kubevirt.io/created-by label, else its VMI owner), or ''
    for a pod that is no virt-launcher."""
    labels = _d(_meta(pod).get('labels'))
    if labels.get(LAUNCHER_APP[0]) != LAUNCHER_APP[1]:
        return ''
    return _s(labels.get(CREATED_BY)) or _owner_uid(pod, 'VirtualMachineInstance')


def _live_launchers(launchers):
    """``(pod, vmi uid, node)`` for each virt-launcher pod bound to a node and not finished (a pod being deleted
    still runs its guest until it is gone)."""
    for pod in _l(launchers):
        uid = launcher_vmi_uid(pod)
        node = _s(_d(_d(pod).get('spec')).get('nodeName'))
        if uid and node and _d(_d(pod).get('status')).get('phase') not in FINISHED:
            yield pod, uid, node


def _launcher_requests_gpu(pod):
    """A launcher pod asking the device plugins for an ``nvidia.com/*`` device (KubeVirt puts each gpus / hostDevices
    entry's deviceName in the compute container's resources: template.go)."""
    for container in _l(_d(_d(pod).get('spec')).get('containers')):
        resources = _d(_d(container).get('resources'))
        for part in ('limits', 'requests'):
            if any(isinstance(k, str) and k.startswith('nvidia.com/') for k in _d(resources.get(part))):
                return True
    return False


def vmi_on_node(vmi, node, launchers=None):
    """Whether ``vmi`` runs on (or is bound to) ``node``: its status.nodeName, or a live virt-launcher pod of it bound
    there by spec.nodeName. A VMI in Scheduling has no status.nodeName yet while its launcher pod may already be bound
    (virt-controller sets nodeName once the pod runs); a cordon does not move a pod already bound."""
    if _s(_d(_d(vmi).get('status')).get('nodeName')) == node:
        return True
    uid = _s(_meta(vmi).get('uid'))
    return bool(uid) and any(u == uid and n == node for _pod, u, n in _live_launchers(launchers))


def settings_of(value):
    """The upgrade settings record (model/upgrade_settings.py) of ``value``, a record or the plain dict of the
    module's ``settings`` option; a bad value is a PlanError naming its inventory variable."""
    return checked(upgrade_settings.build, value, 'settings')


def vm_actions(node, vmis, vms, settings, launchers=None):
    """What happens to each GPU VMI on ``node`` (by its status.nodeName, or its virt-launcher pod's spec.nodeName in
    ``launchers``), by ``settings.vm_policy`` and ``settings.vm_policies``: ``[{namespace, name, vm, policy,
    run_strategy, action}]`` and the refusals."""
    settings = settings_of(settings)
    default_policy, overrides = settings.vm_policy, settings.vm_policies
    by_uid = dict((_s(_meta(vm).get('uid')), vm) for vm in _l(vms) if _s(_meta(vm).get('uid')))
    out, refusals = [], []
    for vmi in _l(vmis):
        meta = _meta(vmi)
        if not _is_gpu_vmi(vmi) or not vmi_on_node(vmi, node, launchers):
            continue
        if _d(vmi.get('status')).get('phase') in FINISHED:
            continue
        key = '%s/%s' % (_s(meta.get('namespace')), _s(meta.get('name')))
        # the VM that owns this VMI, by uid: a VM of the same name made after this VMI started is another VM, and
        # stopping it would not stop this VMI
        vm = by_uid.get(_owner_uid(vmi, 'VirtualMachine'))
        if vm is not None and _s(_meta(vm).get('namespace')) != _s(meta.get('namespace')):
            vm = None
        policy = overrides.get(key, default_policy)
        strategy = _run_strategy(vm) if vm else None
        spec = _d(_d(vm).get('spec'))
        row = {'namespace': _s(meta.get('namespace')), 'name': _s(meta.get('name')),
               'vm': _s(_meta(vm).get('name')) if vm else None,
               # sent with the stop's patch: the API server refuses a patch whose uid is not the object's (uid is
               # immutable), so a VM re-created since this plan is never the one stopped
               'vm_uid': _s(_meta(vm).get('uid')) if vm else None, 'policy': policy, 'run_strategy': strategy,
               # the deprecated spec.running, which may not be set beside runStrategy: stopped and restored as is
               'uses_running': not isinstance(spec.get('runStrategy'), str) and isinstance(spec.get('running'), bool)}
        if policy == 'refuse':
            row['action'] = 'refused'
            refusals.append("node %s runs the GPU VM %s (policy refuse; a GPU VM cannot live-migrate): stop it, or "
                            "set upgrade_vm_policy (or upgrade_vm_policies[%r]) to wait or stop" % (node, key, key))
        elif policy == 'wait':
            row['action'] = 'wait until it stops (upgrade_vm_wait_timeout)'
        elif vm is None:
            row['action'] = 'refused'
            refusals.append("node %s runs the GPU VMI %s, which no VirtualMachine owns (none, or one since deleted "
                            "or re-created under its name): stopping it would lose it for "
                            "good; stop it yourself or give it the policy wait (upgrade_vm_policies[%r])"
                            % (node, key, key))
        elif strategy not in RESTORABLE:
            row['action'] = 'refused'
            refusals.append("node %s runs the GPU VM %s with runStrategy %s, "
                            "which the stop policy does not set aside and give back "
                            "(only %s; WaitAsReceiver is a VM waiting to receive a live migration): let its "
                            "migration finish, or give it the policy wait (upgrade_vm_policies[%r])"
                            % (node, key, strategy, ', '.join(RESTORABLE), key))
        elif strategy in RESTARTING:
            row['action'] = 'stop (runStrategy Halted), start again after (runStrategy %s)' % strategy
        else:
            row['action'] = ('stop (runStrategy Halted); left stopped after: its run strategy %s does not start it '
                             '(start it with virtctl start)' % strategy)
        out.append(row)
    return sorted(out, key=lambda r: (r['namespace'], r['name'])), refusals


def node_state(node):
    """``(ok, reason)``: a node upgrade.yml may roll (schedulable or cordoned by upgrade.yml itself, Ready, and not
    failed by the operator's own upgrade controller)."""
    meta, spec = _meta(node), _d(_d(node).get('spec'))
    name = _s(meta.get('name'))
    if spec.get('unschedulable') and _d(meta.get('annotations')).get(CORDONED_BY) != 'true':
        return False, ("node %s is already cordoned by someone else: finish that maintenance and uncordon it (kubectl "
                       "uncordon %s), or leave it out (upgrade_nodes)" % (name, name))
    ready = [c for c in _l(_d(_d(node).get('status')).get('conditions')) if _d(c).get('type') == 'Ready']
    if not ready or ready[0].get('status') != 'True':
        return False, "node %s is not Ready: repair it first, or leave it out (upgrade_nodes)" % name
    if _d(meta.get('labels')).get(OPERATOR_STATE_LABEL) == OPERATOR_STATE_FAILED:
        return False, ("node %s is labelled %s=%s by the GPU Operator's upgrade controller: read its driver pod's log, "
                       "fix it, then remove the label" % (name, OPERATOR_STATE_LABEL, OPERATOR_STATE_FAILED))
    return True, ''


def vf_rows():
    """The pool rows whose VFs get vGPU profiles (vf_profiles), in table order."""
    return tuple(fleet.BY_NAME[name] for name in fleet.VF_PROFILE_POOLS)


def vf_row_of(node):
    """The vendor-VFIO pool row a Node's labels say it is in (nodes.yml: the row's workload in
    nvidia.com/gpu.workload.config and each of its operands_off labels "false"), or None."""
    labels = _d(_meta(node).get('labels'))
    for row in vf_rows():
        if labels.get(fleet.WORKLOAD_LABEL) == row.workload and row.operands_off and all(
                labels.get('nvidia.com/gpu.deploy.%s' % operand) == 'false' for operand in row.operands_off):
            return row
    return None


def vf_step(name, settings):
    """How the roll gives the vendor-VFIO node ``name`` its VF profiles back after its vGPU Manager pod is replaced,
    and the refusal when it cannot: ``(row, refusal)``.

    ``settings.vf_hosts``: ``{node: {host, config}}``, the inventory host of each vendor-VFIO node and its vGPU config
    name (one of ``settings.vf_configs``, gpu_operator_vgpu_configs' names). ``settings.kernel_args`` machineconfig:
    the Machine Config Operator owns the hosts (OpenShift), so the boot-time unit its MachineConfig installed is
    restarted instead of the role's apply. ``settings.vf_reapply`` (upgrade_vgpu_vf_reapply): the user re-applies the
    profiles while the roll waits."""
    settings = settings_of(settings)
    hosts, configs = settings.vf_hosts, settings.vf_configs
    if settings.vf_reapply:
        return {'method': 'self', 'host': None, 'config': None}, None
    entry = _d(_d(hosts).get(name))
    host, config = _s(entry.get('host')), _s(entry.get('config'))
    if not host:
        return {'method': 'none', 'host': None, 'config': None}, (
            "node %s is a vendor-specific VFIO vGPU node (its labels say so) but no inventory host of gpu_vm_vgpu maps "
            "to it, so the roll cannot give its VFs their vGPU profiles again after its vGPU Manager pod is replaced "
            "(KubeVirt advertises none until nvidia/current_vgpu_type is set): add its host to the inventory "
            "(gpuvirt_node_name %s), leave it out of upgrade_nodes, or set %s true if you re-apply the profiles "
            "yourself while the roll waits" % (name, name, VF_REAPPLY_VARIABLE))
    if settings.kernel_args == 'machineconfig':
        return {'method': 'restart', 'host': host, 'config': config or None}, None
    if config not in [_s(c) for c in _l(configs)]:
        return {'method': 'none', 'host': host, 'config': config or None}, (
            "node %s (host %s) is a vendor-specific VFIO vGPU node whose VF profiles the roll sets again with the "
            "vgpu_vf role, but its vGPU config %s is not among gpu_operator_vgpu_configs (%s): set gpuvirt_vgpu_config "
            "on the host (or node_labels_vgpu_config_default) to one of them, as playbooks/vgpu_vf.yml needs it"
            % (name, host, '"%s"' % config if config else '(none)', ', '.join(sorted(_s(c) for c in _l(configs)))
               or 'none'))
    return {'method': 'apply', 'host': host, 'config': config}, None


def vf_warning(names):
    """The warning for the vendor-VFIO nodes ``names`` rolled with upgrade_vgpu_vf_reapply true."""
    if not names:
        return []
    return ["%s true: the roll does not set the VF profiles of %s again; after each one's vGPU Manager pod is "
            "replaced, re-apply them while the roll waits (upgrade_node_timeout): playbooks/vgpu_vf.yml for its host "
            "on Kubernetes, systemctl restart gpuvirt-vgpu-vf.service on it on OpenShift"
            % (VF_REAPPLY_VARIABLE, ', '.join(names))]


# the KubeVirt configuration ------------------------------------------------------------------------------------
def mdev_form(kubevirt_cr):
    """How the live KubeVirt CR turns KubeVirt's mdev handling off, as this collection wrote it: 'field'
    (mediatedDevicesConfiguration.enabled false, recorded in the owner annotation), 'gate' (the
    DisableMDEVConfiguration gate among the gates the annotation records), or None (neither is ours)."""
    owned = hco_mod.read_owner_annotation(kubevirt_cr)
    if owned.get('mdevConfigurationDisabled'):
        return 'field'
    if kv_mod.DISABLE_MDEV_GATE in [_s(g) for g in _l(owned.get('featureGates'))]:
        return 'gate'
    return None


def kubevirt_config(kubevirt_cr, version_after, hco=False):
    """What rendering the collection's KubeVirt configuration again for KubeVirt ``version_after`` changes:
    ``{stale, form_now, form_after, version, line}``. ``stale``: the live CR's mdev switch is not the one that
    version takes (the gate before v1.8.0, mediatedDevicesConfiguration.enabled from v1.8.0: kubevirt.py
    has_mdev_enabled_field), so upgrade.yml re-renders it after the roll. Under HyperConverged (``hco``) HCO writes
    the KubeVirt CR: the line says HyperConverged is rendered again (its CRD decides its own switch)."""
    version = _s(version_after)
    out = {'stale': False, 'form_now': None, 'form_after': None, 'version': version or None}
    if hco:
        out['line'] = ('kubevirt config: HyperConverged is rendered again after the roll for the OpenShift '
                       'Virtualization / KubeVirt version the cluster then runs%s'
                       % (' (%s)' % version if version else ''))
        return out
    if not kubevirt_cr:
        out['line'] = 'kubevirt config: no KubeVirt CR read; nothing to render again'
        return out
    now = mdev_form(kubevirt_cr)
    out['form_now'] = now
    if not version:
        out['line'] = 'kubevirt config: the KubeVirt version is not known (no status.observedKubeVirtVersion); not re-rendered'
        return out
    try:
        after = 'field' if kv_mod.has_mdev_enabled_field(version) else 'gate'
    except ManifestError:
        out['line'] = 'kubevirt config: KubeVirt %s is not a version; not re-rendered' % version
        return out
    out['form_after'] = after
    names = {'gate': 'the DisableMDEVConfiguration gate', 'field': 'mediatedDevicesConfiguration.enabled: false'}
    if now is None:
        out['line'] = ('kubevirt config: the KubeVirt CR holds no mdev switch this collection wrote (playbooks/kubevirt.yml '
                       'writes it): rendered again after the roll only if KubeVirt reports another version then')
    elif now == after:
        out['line'] = 'kubevirt config: %s, as KubeVirt %s takes it (no change)' % (names[now], version)
    else:
        out['stale'] = True
        out['line'] = ('kubevirt config: rendered again after the roll for KubeVirt %s: %s replaced by %s'
                       % (version, names[now], names[after]))
    return out


def gpu_allocatable(node):
    return dict((k, v) for k, v in _d(_d(_d(node).get('status')).get('allocatable')).items()
                if isinstance(k, str) and k.startswith('nvidia.com/'))


def plan(settings, node_names, nodes, pods, daemonsets, revisions, vmis, vms, launchers=None, current=None,
         cluster_version=None, cluster_policy=None, nvidia_drivers=None, olm=None, helm=None, kubevirt_cr=None):
    """The whole plan (a dict), refusals included; raises PlanError only for bad inventory values.

    ``settings``: the upgrade settings (model/upgrade_settings.py: a record, or the plain dict of the module's
    ``settings`` option), read here by name: the target versions, ``vm_policy`` / ``vm_policies``, ``serial``, the
    vendor-VFIO fields, ``revalidate_daemonsets``, the platform's ``gpu_operator_install``, ``kernel_args`` and
    ``kubevirt_config``. Everything else is read from the cluster, and each read that is given adds its part:

    ``node_names``: the nodes this plan covers, in order (upgrade_nodes, or one batch of them).

    ``current``: the running versions ``{gpu_operator, vgpu_manager, kubevirt}``. Given, the version table compares
    the settings' targets with them and refuses what may not be done; omitted (a batch's plan, the KubeVirt check
    after the roll) nothing is compared and the KubeVirt version is the one ``kubevirt_cr`` reports.

    ``olm``: ``{subscription, install_plans, csv}`` read on OpenShift (``csv``: the target's ClusterServiceVersion,
    None when there is none) (None: no OLM step). The operator step (upgrade_operator.olm_step) is planned with the
    rest and its refusals are the plan's. When it will install a new operator release, every node that runs an
    operand pod is treated as one to roll for its GPU VMs' policies (the new release renders new DaemonSet
    templates, which the plan cannot read yet); the roll itself is planned again once the new CSV has succeeded.

    ``cluster_policy``: the live ClusterPolicy (None: none read). Its operands must be OnDelete and its driver
    autoUpgrade off, or the operator rolls the new version over every node by itself (upgrade_policy.py).

    ``nvidia_drivers``: the live NVIDIADriver objects (the GPUCluster path's driver, gpu_cluster.py); each must have
    ``spec.upgradePolicy.autoUpgrade`` false, or the operator's upgrade controller rolls its driver pods by itself
    (the v26.7.0 CRD defaults autoUpgrade to true, so an absent one counts as true).

    ``helm``: ``{release, crds, chart_values, chart_meta}`` read on Kubernetes (``chart_meta``: the target's ``helm
    show chart``) (None: no Helm step). The operator step (upgrade_operator.helm_step) is planned like OLM's; the
    running ``gpu_operator`` version is then the release's chart version. Each step is the platform's
    (``settings.gpu_operator_install``): the other's reads are refused.

    ``settings.vf_nodes``: the node names the fleet view puts in a vendor-VFIO row (vm-vgpu-vf); a node whose labels
    say so (vf_row_of) counts too. Each one rolled gets ``vf_reapply`` (vf_step: the vgpu_vf role's apply on its
    inventory host, or the boot-time unit's restart on a MachineConfig platform); one the roll cannot give its
    profiles back is refused, naming it. ``settings.vf_reapply`` (upgrade_vgpu_vf_reapply): the user does it (a
    warning).

    ``kubevirt_cr``: the live KubeVirt CR (HyperConverged's with ``settings.kubevirt_config`` hco);
    ``kubevirt_config`` says what rendering it again after the roll changes, for the target KubeVirt version (else
    the one it reports).

    ``launchers``: the virt-launcher pods (label kubevirt.io=virt-launcher, all namespaces): a GPU VMI whose launcher
    pod is bound to a node counts on that node before its status.nodeName is set (vmi_on_node)."""
    settings = settings_of(settings)
    serial, hco = settings.serial, settings.kubevirt_config == 'hco'
    names = _l(node_names)
    for name in names:
        if not isinstance(name, str) or not name:
            raise PlanError("upgrade_nodes holds %r, not a node name" % (name,))
    for install, read in (('olm', olm), ('helm', helm)):
        if read is not None and install != settings.gpu_operator_install:
            raise PlanError("the plan was given the reads of the %s operator step, but the GPU Operator is installed "
                            "by %s (gpuvirt_cluster.traits.gpu_operator_install)"
                            % (install, settings.gpu_operator_install))
    if current is None:
        # no running version read: nothing to compare, the KubeVirt version is the one its CR reports
        current = {'kubevirt': _s(_d(_d(kubevirt_cr).get('status')).get('observedKubeVirtVersion'))}
        target = {}
    else:
        target = settings.targets()
    operator = None
    if helm is not None:
        helm = _d(helm)
        try:
            operator = helm_step(settings, helm.get('release'), helm.get('crds'), helm.get('chart_values'),
                                 helm.get('chart_meta'))
        except ManifestError as exc:
            raise PlanError(str(exc))
        if operator['installed']:
            current = dict(_d(current), gpu_operator=operator['installed'])
    rows, refusals, notes, warnings = versions(current, target, settings.guest_driver_branch, settings.vendor_vfio,
                                               settings.supports, cluster_version)
    if isinstance(cluster_policy, dict) and cluster_policy:
        live = from_cluster_policy(_d(cluster_policy.get('spec')))
        if live['update_strategy'] != 'OnDelete' or live['auto_upgrade']:
            refusals.append("the ClusterPolicy has daemonsets.updateStrategy %s and driver.upgradePolicy.autoUpgrade "
                            "%s: the GPU Operator would roll a new version over every node by itself, VMs or not; run "
                            "playbooks/operator.yml first with gpu_operator_daemonsets_update_strategy OnDelete and "
                            "gpu_operator_upgrade_policy.auto_upgrade false (the defaults)"
                            % (live['update_strategy'], str(live['auto_upgrade']).lower()))
    for driver in _l(nvidia_drivers):
        if _d(driver).get('kind', 'NVIDIADriver') != 'NVIDIADriver':
            continue
        live = from_nvidia_driver(_d(driver).get('spec'))
        if live['auto_upgrade']:
            name = _s(_meta(driver).get('name')) or '(no name)'
            refusals.append("the NVIDIADriver %s has spec.upgradePolicy.autoUpgrade true (or unset: the CRD defaults it "
                            "to true): the GPU Operator would replace its driver pods on every node by itself, VMs or "
                            "not; run playbooks/operator.yml first with gpu_operator_upgrade_policy.auto_upgrade false "
                            "(the default), which writes it to the NVIDIADriver too" % name)
    if operator is not None:
        refusals += operator['refusals']
        warnings += operator.get('warnings', [])
    if olm is not None:
        olm = _d(olm)
        operator = olm_step(settings, olm.get('subscription'), olm.get('install_plans'), csv=olm.get('csv'))
        refusals += operator['refusals']
    operator_change = bool(operator) and operator['action'] in ('approve', 'wait', 'upgrade')
    vgm = [r for r in rows if r['component'] == 'vgpu_manager'][0]
    if vgm['change'] and settings.image_tags is not None:
        for tag in missing_image_tags(vgm['to'], settings.os_tags, settings.image_tags):
            refusals.append("the vGPU Manager image tag %s is not in the registry: build and push it first "
                            "(playbooks/vgpu_image.yml with vgpu_manager_image_version %s)" % (tag, vgm['to']))
    by_name = dict((_s(_meta(n).get('name')), n) for n in _l(nodes))
    uncordoning = driver_manager_uncordons(daemonsets)
    vf_names = set(settings.vf_nodes)
    vf_rolled = []
    out_nodes = []
    for name in names:
        node = by_name.get(name)
        if node is None:
            refusals.append("node %s (upgrade_nodes) does not exist in the cluster" % name)
            continue
        ok, why = node_state(node)
        stale = stale_pods(name, pods, daemonsets, revisions)
        # a new operator release replaces the operand pods of every node it runs on (checked here, rolled later)
        concerned = stale or (operator_change and any(True for _pod in _daemonset_pods(name, pods, daemonsets)))
        vms_here, vm_refusals = vm_actions(name, vmis, vms, settings, launchers) if concerned else ([], [])
        if not ok:
            refusals.append(why)
        refusals += vm_refusals
        resume = _d(_meta(node).get('annotations')).get(CORDONED_BY) == 'true'
        vendor_vfio = name in vf_names or vf_row_of(node) is not None
        vf_row = None
        if vendor_vfio and (concerned or resume):
            vf_rolled.append(name)
            vf_row, vf_ref = vf_step(name, settings)
            if vf_ref:
                refusals.append(vf_ref)
        out_nodes.append({'name': name, 'roll': bool(stale), 'stale_pods': stale, 'vms': vms_here,
                          'uncordoned_by': sorted(set(p['daemonset'] for p in stale) & uncordoning),
                          'vendor_vfio': vendor_vfio, 'vf_reapply': vf_row,
                          'revalidate_pods': node_pods_of(name, pods, daemonsets, settings.revalidate_daemonsets),
                          'gpu_allocatable': gpu_allocatable(node),
                          'cordoned_by_upgrade': _d(_meta(node).get('annotations')).get(CORDONED_BY) == 'true'})
    warnings += vf_warning(vf_rolled if settings.vf_reapply else [])
    kv_row = [r for r in rows if r['component'] == 'kubevirt'][0]
    if kubevirt_cr:
        wu_refusals, wu_notes = workload_update(kubevirt_cr, vmis, kv_row['to'] if kv_row['change'] else '', hco)
        refusals += wu_refusals
        notes += wu_notes
        gate = mdev_gate_refusal(kubevirt_cr, kv_row['to'] if kv_row['change'] else '')
        if gate:
            refusals.append(gate)
    if kv_row['change'] and kubevirt_cr is not None and not kubevirt_cr:
        # after the roll the run waits for the KubeVirt CR to report the target (upgrade_kubevirt_timeout): with no CR
        # it would wait that out for nothing
        refusals.append("upgrade_kubevirt_version is %s but the cluster has no KubeVirt CR (kubevirt.io/v1 KubeVirt) "
                        "whose version to follow: install KubeVirt first, or leave upgrade_kubevirt_version empty"
                        % kv_row['to'])
    rolling = [n['name'] for n in out_nodes if n['roll'] or n['cordoned_by_upgrade']]
    batches = [rolling[i:i + serial] for i in range(0, len(rolling), serial)]
    result = {'versions': rows, 'nodes': out_nodes, 'batches': batches, 'refusals': refusals, 'notes': notes,
              'warnings': warnings, 'ok': not refusals,
              'kubevirt_config': kubevirt_config(kubevirt_cr, kv_row['to'], hco),
              'operator': operator or {'action': 'none', 'installed': '', 'target': '', 'plan': None,
                                       'refusals': [], 'lines': []}}
    result['summary'] = summary(result)
    return result


def summary(p):
    """The plan as lines a person reads (check mode prints them)."""
    lines = []
    for row in p['versions']:
        lines.append('%s: %s -> %s%s' % (row['component'], row['from'] or '(none)', row['to'] or '(none)',
                                         '' if row['change'] else ' (unchanged)'))
    operator = p.get('operator') or {}
    lines += operator.get('lines') or []
    if operator.get('action') in ('approve', 'wait', 'upgrade'):
        lines.append('the batches below are planned again once the new operator release has rendered its DaemonSets')
        for node in p['nodes']:
            for vm in node['vms'] if not node['roll'] else []:
                lines.append('  after the operator: node %s, VM %s/%s: %s'
                             % (node['name'], vm['namespace'], vm['name'], vm['action']))
    for i, batch in enumerate(p['batches'], 1):
        lines.append('batch %d: %s' % (i, ', '.join(batch)))
    for node in p['nodes']:
        if not (node['roll'] or node['cordoned_by_upgrade']):
            lines.append('node %s: nothing to replace' % node['name'])
            continue
        lines.append('node %s: cordon, replace %s' % (node['name'], ', '.join(
            sorted(set(s['daemonset'] for s in node['stale_pods']))) or 'nothing (resume)'))
        for vm in node['vms']:
            lines.append('  VM %s/%s: %s' % (vm['namespace'], vm['name'], vm['action']))
        if node.get('uncordoned_by'):
            lines.append('  the new %s pod\'s k8s-driver-manager evicts the GPU pods and uncordons the node itself: '
                         'it stays schedulable from then on, while the roll waits and after a failure'
                         % ', '.join(node['uncordoned_by']))
        vf = node.get('vf_reapply') or {}
        if vf.get('method') == 'apply':
            lines.append('  then give its VFs their vGPU profiles again: the vgpu_vf role on host %s (vGPU config %s)'
                         % (vf['host'], vf['config']))
        elif vf.get('method') == 'restart':
            lines.append('  then give its VFs their vGPU profiles again: restart gpuvirt-vgpu-vf.service on host %s'
                         % vf['host'])
        elif vf.get('method') == 'self':
            lines.append('  then you give its VFs their vGPU profiles again (%s true), while the roll waits'
                         % VF_REAPPLY_VARIABLE)
        allocatable = ', '.join('%s=%s' % kv for kv in sorted(node['gpu_allocatable'].items()))
        lines.append('  then wait for %s, uncordon' % (allocatable or 'the operand pods'))
    if p.get('kubevirt_config'):
        lines.append(p['kubevirt_config']['line'])
    lines += ['note: ' + n for n in p['notes']] + ['warning: ' + w for w in p['warnings']]
    lines += ['REFUSED: ' + r for r in p['refusals']]
    return lines


def _ready(pod):
    conditions = _l(_d(_d(pod).get('status')).get('conditions'))
    return any(_d(c).get('type') == 'Ready' and _d(c).get('status') == 'True' for c in conditions)


def _quantity(value):
    """A device count as the kubelet reports it ("2"); anything else counts as 0."""
    text = _s(value) if not isinstance(value, int) or isinstance(value, bool) else str(value)
    # [0-9], not isdigit(): that takes '¹' and other scripts' digits (API data), which int() refuses
    return int(text) if re.fullmatch(r'[0-9]{1,18}', text) else 0


def settle(node_name, node, pods, daemonsets, revisions, required, allocatable):
    """What still keeps ``node_name`` from being released, as sentences (empty: done).

    ``required``: the DaemonSets whose pod this node must run again (those replaced here, the validators included);
    ``allocatable``: the node's ``nvidia.com/*`` allocatable before the roll, each to come back at least as high.

    ``revisions`` may be older than ``pods`` (the batch's read): a pod counts as current unless its hash is that of
    a revision older than the newest one read. The DaemonSet controller gives each pod it creates the hash of the
    DaemonSet's newest ControllerRevision (kubernetes pkg/controller/daemon/daemon_controller.go syncNodes, the
    ``hash`` of constructHistory's current revision), so a pod whose hash no revision read carries was made from a
    revision written after the read: the operator changed the template again during the batch, and the new pod is
    the newest there is."""
    problems = []
    hashes = current_hashes(daemonsets, revisions)
    older = older_hashes(daemonsets, revisions)
    uids = _names_by_uid(daemonsets)
    here = {}
    for pod in _l(pods):
        if _d(_d(pod).get('spec')).get('nodeName') != node_name:
            continue
        ds = uids.get(_owner_uid(pod, 'DaemonSet'))
        if ds:
            here.setdefault(ds, []).append(pod)
    for ds in sorted(set(_s(x) for x in _l(required)) | set(here)):
        mine = [p for p in here.get(ds, []) if not _meta(p).get('deletionTimestamp')]
        current = [p for p in mine if ds not in hashes or _s(_d(_meta(p).get('labels')).get(REVISION_HASH)) not in
                   older.get(ds, set()) | set([''])]
        if not current:
            problems.append('%s has no pod of its newest revision on the node yet' % ds)
        elif not any(_ready(p) for p in current):
            problems.append('%s pod %s is not Ready' % (ds, _s(_meta(current[0]).get('name'))))
    have = gpu_allocatable(node)
    for res, count in sorted(_d(allocatable).items()):
        if _quantity(have.get(res)) < _quantity(count):
            problems.append('allocatable %s is %s, was %s before the upgrade' % (res, have.get(res, 0), count))
    return problems


def older_hashes(daemonsets, revisions):
    """``{daemonset name: set of the hashes of its revisions older than its newest}`` (current_hashes' complement)."""
    uids = _names_by_uid(daemonsets)
    newest = current_hashes(daemonsets, revisions)
    out = {}
    for rev in _l(revisions):
        name = uids.get(_owner_uid(rev, 'DaemonSet'))
        hash_ = _s(_d(_meta(rev).get('labels')).get(REVISION_HASH))
        if name and hash_ and hash_ != newest.get(name):
            out.setdefault(name, set()).add(hash_)
    return out


# the batch's waits ---------------------------------------------------------------------------------------------
def vms_left(vmis, nodes, launchers=None):
    """The GPU VMIs that still run on (or are bound to) ``nodes``, as ``namespace/name (node)``: every one, planned
    or not (one may have been bound before the cordon), and none that has finished (FINISHED)."""
    out = []
    for vmi in _l(vmis):
        if not _is_gpu_vmi(vmi) or _d(_d(vmi).get('status')).get('phase') in FINISHED:
            continue
        for node in [_s(n) for n in _l(nodes)]:
            if vmi_on_node(vmi, node, launchers):
                out.append('%s/%s (%s)' % (_s(_meta(vmi).get('namespace')), _s(_meta(vmi).get('name')), node))
                break
    return sorted(out)


def launchers_left(launchers, nodes, vmis=None):
    """The virt-launcher pods of GPU VMs still live on ``nodes``, as ``namespace/pod (node)``: a launcher pod is the
    VM's process, so the device is free only once it has finished or is gone. A launcher counts as a GPU VM's when
    its VMI (by uid, in ``vmis``) is a GPU VMI or when it asks for an ``nvidia.com/*`` device."""
    gpu_uids = set(_s(_meta(v).get('uid')) for v in _l(vmis) if _is_gpu_vmi(v) and _s(_meta(v).get('uid')))
    wanted = set(_s(n) for n in _l(nodes))
    return sorted('%s/%s (%s)' % (_s(_meta(pod).get('namespace')), _s(_meta(pod).get('name')), node)
                  for pod, uid, node in _live_launchers(launchers)
                  if node in wanted and (uid in gpu_uids or _launcher_requests_gpu(pod)))


def restorable(vms, nodes):
    """The VMs the stop policy halted (STOPPED_BY) whose run strategy may be written back now: the value is one the
    upgrade writes (RESTORABLE, or "running" for spec.running), and the node it ran on (STOPPED_ON) is no longer
    cordoned by the upgrade. A VM stopped by an earlier release of this role (no STOPPED_ON) waits until no node is."""
    cordoned = set(_s(_meta(n).get('name')) for n in _l(nodes)
                   if _d(_meta(n).get('annotations')).get(CORDONED_BY) == 'true')
    out = []
    for vm in _l(vms):
        notes = _d(_meta(vm).get('annotations'))
        value = notes.get(STOPPED_BY)
        if value not in RESTORABLE + ('running',):
            continue
        on = notes.get(STOPPED_ON)
        if (on in cordoned) if isinstance(on, str) and on else cordoned:
            continue
        out.append(vm)
    return out
