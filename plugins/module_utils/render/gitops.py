# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who owns a rendered object, per kind, and what that means for a GitOps tool. Pure Python, no Ansible imports.

A render directory is applied by Argo CD or Flux, which track every object they applied and delete it when it
leaves the directory (pruning) or when their Application / Kustomization is deleted. That is right for the objects
this collection creates (its MachineConfig, Secret, claim templates, ...), and wrong for the objects it only
patches: a Node registered by its kubelet, the HyperConverged that installs OpenShift Virtualization, the KubeVirt
CR of a KubeVirt install; and for the dedicated MachineConfigPool, whose name may be that of a pool the cluster
already had. ``KINDS`` is the one place that says which is which; the render session asks it for
every object it writes (``annotations``), and apply mode never does.

Adding a kind: a row in ``KINDS`` (owned or not, and whether its CRD comes from an operator), with the reason.
A kind without a row is treated as not owned (``DEFAULT``): the GitOps tool never deletes it, so a forgotten row
can leave an object behind, never delete one.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import copy
import re

# Argo CD annotations (Argo CD user guide, "Sync Options" and "Sync Phases and Waves"; the option names are
# argoproj/argo-cd v3.5.1 gitops-engine/pkg/sync/common/types.go SyncOptionPrune, SyncOptionDelete,
# SyncValueFalse, SyncOptionSkipDryRunOnMissingResource). Several options share one annotation, joined with ",".
SYNC_WAVE = 'argocd.argoproj.io/sync-wave'
SYNC_OPTIONS = 'argocd.argoproj.io/sync-options'
SKIP_DRY_RUN = 'SkipDryRunOnMissingResource=true'
# "No Prune Resources": the object is never pruned when it leaves the directory. Argo CD reads it from the live
# object at prune time (gitops-engine/pkg/sync/sync_context.go pruneObject -> isPruningDisabled(liveObj)), which
# still carries it from the last sync, after the file is gone.
NO_PRUNE = 'Prune=false'
# "No Resource Deletion": the object stays when the Application is deleted (controller/appcontroller.go
# shouldBeDeleted).
NO_DELETE = 'Delete=false'
# Flux kustomize-controller (docs/spec/v1/kustomizations.md at v1.9.4, "Prune" and "Controlling the apply behavior
# of resources"): an object annotated ``kustomize.toolkit.fluxcd.io/prune: disabled`` is neither garbage collected
# when it leaves the source nor deleted with its Kustomization.
FLUX_PRUNE = 'kustomize.toolkit.fluxcd.io/prune'
FLUX_PRUNE_DISABLED = 'disabled'

# ``owned``: this collection creates the object, so the GitOps tool may delete it with the render. ``operator_crd``:
# its CRD is installed by an operator the same sync installs, so Argo CD must skip its dry run while the CRD is not
# served yet (Argo CD user guide, Sync Options, "Skip Dry Run for new custom resources types").
Kind = collections.namedtuple('Kind', ['owned', 'operator_crd', 'why'])

KINDS = {
    # -- patched, not owned: a GitOps tool must never delete them ---------------------------------------------------
    ('', 'Node'): Kind(False, False,
                       'registered by its kubelet (Kubernetes docs, Nodes, "Self-registration of Nodes"); the '
                       'render only sets labels: deleting the object removes the node from the cluster'),
    ('hco.kubevirt.io', 'HyperConverged'): Kind(
        False, True, 'created by the OpenShift Virtualization / HCO install; deleting it is the uninstall '
        '(kubevirt/hyperconverged-cluster-operator v1.18.1 docs/cluster-configuration.md, "Workloads protection on '
        'uninstall"); the render only sets permitted devices and mdev handling, apply mode refuses to create one'),
    ('kubevirt.io', 'KubeVirt'): Kind(
        False, True, 'created by the KubeVirt install, or by HCO; deleting it uninstalls KubeVirt (kubevirt/kubevirt '
        'v1.9.0 staging/src/kubevirt.io/api/core/v1/types.go KubeVirtSpec.UninstallStrategy); the render only sets '
        'permitted devices and feature gates, apply mode refuses to create one'),
    # Only a dedicated pool is rendered (manifests/machineconfig.py build_pool refuses the built-in master/worker),
    # but its name is the administrator's choice (machineconfig_pool) and may be a pool the cluster already has:
    # Argo CD and Flux adopt a live object of the same name on their first apply, and would then delete it with
    # the render. Deleting a pool whose nodes still carry its label leaves them to worker and reboots them without
    # the pool's MachineConfigs; so the render never lets a GitOps tool delete a pool (its MachineConfig, owned,
    # still goes with the render).
    ('machineconfiguration.openshift.io', 'MachineConfigPool'): Kind(
        False, False, 'the dedicated GPU pool: possibly an administrator\'s pool of that name, adopted by the GitOps '
        'tool on its first sync; deleting a pool sends its nodes back to worker, rebooting them'),
    # -- created by this collection: the GitOps tool may prune them with the render --------------------------------
    ('', 'Namespace'): Kind(True, False, 'the operator namespaces the render installs into'),
    ('', 'ConfigMap'): Kind(True, False, "the vGPU device manager's configuration"),
    ('', 'Secret'): Kind(True, False, 'the registry pull Secret'),
    ('operators.coreos.com', 'OperatorGroup'): Kind(True, False, 'the OLM install of the GPU and NFD operators'),
    ('operators.coreos.com', 'Subscription'): Kind(True, False, 'the OLM install of the GPU and NFD operators'),
    ('nfd.openshift.io', 'NodeFeatureDiscovery'): Kind(True, True, 'the NFD instance the render installs'),
    # OLM creates no ClusterPolicy: the CSV only offers one in alm-examples and names no initialization resource
    # (NVIDIA/gpu-operator v26.7.0 bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml), so on
    # OpenShift the render creates it from that example. On Kubernetes the Helm chart creates it
    # (deployments/gpu-operator/templates/clusterpolicy.yaml, clusterPolicy.deployCR) and the render writes only
    # the chart's values, no ClusterPolicy object.
    ('nvidia.com', 'ClusterPolicy'): Kind(True, True, 'created by the render from the CSV alm-examples (OpenShift)'),
    # the same for the DRA stack's CR (same CSV; chart deployments/gpu-operator/templates/gpucluster.yaml,
    # gpuCluster.deployCR, off by default)
    ('nvidia.com', 'GPUCluster'): Kind(True, True, 'created by the render from the CSV alm-examples (OpenShift)'),
    # the GPUCluster path's driver (manifests/gpu_cluster.py build_nvidia_driver, from the same alm-examples): the
    # render creates it; the GPUCluster waits for it (gpu-operator v26.7.0 internal/nvidiadriver AssignOwners)
    ('nvidia.com', 'NVIDIADriver'): Kind(True, True, 'created by the render from the CSV alm-examples (OpenShift)'),
    ('machineconfiguration.openshift.io', 'MachineConfig'): Kind(True, False, 'the IOMMU / nouveau MachineConfig'),
    ('resource.k8s.io', 'ResourceClaimTemplate'): Kind(True, False, 'the DRA claim templates'),
    ('kubevirt.io', 'VirtualMachine'): Kind(True, False, 'the smoke-test VM'),
}

DEFAULT = Kind(False, False, 'no row in gitops.KINDS: kept, never deleted by a GitOps tool, until a row says '
                             'this collection owns it')

OPERATOR_CRS = frozenset(key for key, row in KINDS.items() if row.operator_crd)


def group_kind(obj):
    """``(API group, kind)`` of an object: ``('', 'Node')`` for the core group."""
    api_version = (obj or {}).get('apiVersion') or ''
    return api_version.rpartition('/')[0], (obj or {}).get('kind')


def rule(obj):
    """The row of ``obj``'s kind, or ``DEFAULT`` for a kind without one."""
    return KINDS.get(group_kind(obj), DEFAULT)


def _set_option(options, option):
    """``options`` with ``option`` (``Name=value``) in force: an option of the same name is replaced."""
    name = option.split('=', 1)[0]
    return [o for o in options if o.split('=', 1)[0] != name] + [option]


def annotations(obj, skip_dry_run=True):
    """The annotations of ``obj`` as rendered for a GitOps tool: its own, plus Argo CD's sync options and Flux's
    prune policy that its kind's row asks for (``skip_dry_run``: with the dry-run skip of an operator's custom
    resource, which belongs to a render run's ordering). Render mode only: apply mode is not synced by a GitOps
    tool."""
    row = rule(obj)
    out = dict(((obj or {}).get('metadata') or {}).get('annotations') or {})
    options = [o.strip() for o in (out.get(SYNC_OPTIONS) or '').split(',') if o.strip()]
    if skip_dry_run and row.operator_crd and SKIP_DRY_RUN not in options:
        options.append(SKIP_DRY_RUN)
    if not row.owned:
        # not ours to delete: whatever the object said, the GitOps tool must not prune or delete it
        options = _set_option(_set_option(options, NO_PRUNE), NO_DELETE)
        out[FLUX_PRUNE] = FLUX_PRUNE_DISABLED
    if options:
        out[SYNC_OPTIONS] = ','.join(options)
    return out


def for_gitops(obj, skip_dry_run=True):
    """A copy of ``obj`` with ``annotations(obj, skip_dry_run)``; ``obj`` itself when nothing is added."""
    wanted = annotations(obj, skip_dry_run)
    if wanted == (((obj or {}).get('metadata') or {}).get('annotations') or {}):
        return obj
    out = copy.deepcopy(obj)
    out.setdefault('metadata', {})['annotations'] = wanted
    return out


# -- Flux: one Kustomization per group of waves -------------------------------------------------------------------
# Flux applies everything one Kustomization builds in one server-side apply: first the CRDs, ClusterRoles and
# Namespaces (and class definitions), then every other object in one stage whose dry run must pass object by object
# before anything of that stage is applied; one failed dry run aborts the stage (fluxcd/pkg ssa/manager_apply.go
# ApplyAllStaged, ApplyAll: the dry runs run in an errgroup and the applies come after g.Wait()). A custom resource
# whose CRD an operator installs (ClusterPolicy, NodeFeatureDiscovery) fails its dry run until that operator runs,
# and so blocks the Subscription that would install it: one Kustomization for the whole render never converges on a
# fresh cluster. So the render also writes, per group of waves, a directory holding only a kustomization.yaml that
# lists the group's object files (``../<file>``): one Flux Kustomization each, chained with ``dependsOn``
# (docs/gitops.md). No group holds both a Subscription and a custom resource whose CRD an operator installs:
# NodeFeatureDiscovery (36) comes after the NFD Subscription (35), the GPU Operator's Subscription (40) after it,
# the ClusterPolicy / GPUCluster / NVIDIADriver (43) after that Subscription, and KubeVirt's devices (60 on) after
# the GPU stack whose resources they permit. The MachineConfigPool (31) sits in the first group, so that a health check on it
# holds the operators back until its nodes run the IOMMU arguments.
# A kustomization.yaml that names files outside its own directory builds in Flux: the kustomize-controller builds
# with kustomize's LoadRestrictionsNone inside the source's root (fluxcd/pkg kustomize/kustomize_generator.go Build,
# SecureBuild; kustomize-controller internal/controller/kustomization_controller.go). Plain `kustomize build` needs
# --load-restrictor LoadRestrictionsNone for it; Argo CD applies the top kustomization.yaml, which lists every
# object and orders them by sync wave.
FluxGroup = collections.namedtuple('FluxGroup', ['directory', 'first', 'last', 'holds'])

FLUX_GROUPS = (
    FluxGroup('flux-1-nodes', 0, 35, 'node labels, the MachineConfig and its pool, the NFD operator'),
    FluxGroup('flux-2-nfd', 36, 39, 'the NodeFeatureDiscovery instance'),
    FluxGroup('flux-3-gpu-operator', 40, 42, 'the GPU Operator, its pull secret and configuration'),
    FluxGroup('flux-4-gpu-stack', 43, 59, "the GPU Operator's ClusterPolicy (or GPUCluster and NVIDIADriver)"),
    FluxGroup('flux-5-kubevirt', 60, 99, "KubeVirt's permitted devices, the DRA claim templates, the smoke-test VM"),
)

FLUX_GROUP_NAMES = frozenset(group.directory for group in FLUX_GROUPS)


def wave(file_name):
    """The sync wave of a rendered file, its numeric prefix (``40-gpu-operator-...`` is 40); None without one."""
    lead = (file_name or '').split('-', 1)[0]
    # [0-9], not isdigit(): that takes '¹' and other scripts' digits, which int() refuses
    return int(lead) if re.fullmatch(r'[0-9]{1,9}', lead) else None


def flux_group(file_name):
    """The directory (FLUX_GROUPS) whose Flux kustomization lists ``file_name``: the group of its wave; a file
    without a wave, or of a wave after every group's, goes with the last group (applied after everything else)."""
    number = wave(file_name)
    for group in FLUX_GROUPS:
        if number is not None and group.first <= number <= group.last:
            return group.directory
    return FLUX_GROUPS[-1].directory


def flux_kustomizations(files):
    """``{directory: text}``: the Flux kustomization.yaml of each group that holds one of ``files`` (the object
    files of the render, in the render directory), listing its files as ``../<file>`` in name order. A group
    without a file gets none."""
    grouped = {}
    for name in sorted(files):
        grouped.setdefault(flux_group(name), []).append(name)
    out = {}
    for group in FLUX_GROUPS:
        if group.directory not in grouped:
            continue
        lines = ['# Written by gpuvirt.provision: the objects of sync waves %d-%d (%s), for one Flux Kustomization'
                 % (group.first, group.last, group.holds),
                 '# (docs/gitops.md, "Flux"): it lists files of the directory above, which Flux builds (plain',
                 '# kustomize build needs --load-restrictor LoadRestrictionsNone). Argo CD applies ../kustomization.yaml.',
                 'apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:']
        lines += ['  - ../%s' % name for name in grouped[group.directory]]
        out[group.directory] = '\n'.join(lines) + '\n'
    return out
