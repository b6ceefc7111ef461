# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which rendered objects a GitOps tool may delete: the per-kind table of plugins/module_utils/render/gitops.py, and every
object of the golden renders held to it."""
from __future__ import annotations

import glob
import json
import os

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import gitops, render_session as rs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..', '..'))
GOLDEN = os.path.join(ROOT, 'tests', 'unit', 'render', 'golden')

OPTIONS = 'argocd.argoproj.io/sync-options'
FLUX = 'kustomize.toolkit.fluxcd.io/prune'


def obj(api, kind, **meta):
    return {'apiVersion': api, 'kind': kind, 'metadata': dict({'name': 'n'}, **meta)}


def options(out):
    return (out['metadata'].get('annotations') or {}).get(OPTIONS, '').split(',')


# Argo CD deletes what it applied once the file leaves the directory (pruning) or the Application is deleted,
# unless the live object carries Prune=false / Delete=false (argoproj/argo-cd v3.5.1 docs/user-guide/
# sync-options.md, "No Prune Resources" and "No Resource Deletion"; the live object decides: gitops-engine/pkg/
# sync/sync_context.go pruneObject -> isPruningDisabled(liveObj), controller/appcontroller.go shouldBeDeleted).
# Flux garbage-collects the same way unless the object says kustomize.toolkit.fluxcd.io/prune: disabled
# (fluxcd/kustomize-controller v1.9.4 docs/spec/v1/kustomizations.md, "Prune").
SHARED = [
    # a Node is registered by its kubelet (Kubernetes docs, Nodes, "Self-registration of Nodes"): deleting the
    # object takes the node out of the cluster; the render only labels it
    ('v1', 'Node'),
    # deleting the HyperConverged is the uninstall of OpenShift Virtualization (kubevirt/hyperconverged-cluster-
    # operator v1.18.1 docs/cluster-configuration.md, "Workloads protection on uninstall")
    ('hco.kubevirt.io/v1beta1', 'HyperConverged'),
    # deleting the KubeVirt CR uninstalls KubeVirt (kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/
    # types.go KubeVirtSpec.UninstallStrategy)
    ('kubevirt.io/v1', 'KubeVirt'),
    # the dedicated MachineConfigPool: machineconfig_pool may name a pool the administrator already has, which Argo
    # CD and Flux adopt on their first apply (a live object of the same identity becomes theirs) and would delete
    # with the render; kept, never pruned (Argo CD "No Prune Resources", Flux "Prune": prune disabled)
    ('machineconfiguration.openshift.io/v1', 'MachineConfigPool'),
]
OWNED = [
    ('v1', 'Namespace'), ('v1', 'ConfigMap'), ('v1', 'Secret'),
    ('operators.coreos.com/v1', 'OperatorGroup'), ('operators.coreos.com/v1alpha1', 'Subscription'),
    ('nfd.openshift.io/v1', 'NodeFeatureDiscovery'),
    # OLM creates no ClusterPolicy (NVIDIA/gpu-operator v26.7.0 bundle CSV: alm-examples only, no initialization
    # resource); on OpenShift the render creates it; on Kubernetes the chart does and the render has none
    ('nvidia.com/v1', 'ClusterPolicy'),
    ('machineconfiguration.openshift.io/v1', 'MachineConfig'),
    ('resource.k8s.io/v1', 'ResourceClaimTemplate'), ('kubevirt.io/v1', 'VirtualMachine'),
]


def test_objects_the_collection_patches_are_never_pruned_or_deleted_and_those_it_creates_stay_prunable():
    for api, kind in SHARED:
        out = rs.with_argocd(obj(api, kind), '30-node-labels-000-x.yaml')
        assert 'Prune=false' in options(out) and 'Delete=false' in options(out), kind
        assert out['metadata']['annotations'][FLUX] == 'disabled', kind
        assert out['metadata']['annotations']['argocd.argoproj.io/sync-wave'] == '30', kind
    for api, kind in OWNED:
        out = rs.with_argocd(obj(api, kind), '40-x.yaml')
        annotations = out['metadata']['annotations']
        assert FLUX not in annotations and not {'Prune=false', 'Delete=false'} & set(options(out)), kind


def test_an_option_the_object_had_is_kept_and_a_prune_or_delete_of_its_own_is_overridden():
    # one annotation, options joined with "," (sync-options.md, introduction); for an object we do not own, no
    # Prune=/Delete= value of its own may let Argo CD delete it
    node = obj('v1', 'Node', annotations={OPTIONS: 'Validate=false,Prune=true,Delete=confirm', 'keep': 'me'})
    out = gitops.for_gitops(node)
    assert out['metadata']['annotations'] == {OPTIONS: 'Validate=false,Prune=false,Delete=false', 'keep': 'me',
                                              FLUX: 'disabled'}
    assert node['metadata']['annotations'][OPTIONS] == 'Validate=false,Prune=true,Delete=confirm'  # not mutated
    ours = obj('machineconfiguration.openshift.io/v1', 'MachineConfig', annotations={OPTIONS: 'Prune=confirm'})
    assert gitops.for_gitops(ours) is ours


def test_a_kind_without_a_row_is_kept_never_deleted():
    # the clear default for a kind nobody classified yet: leave it in the cluster rather than delete a shared object
    unknown = obj('example.com/v1', 'Widget')
    assert gitops.rule(unknown) is gitops.DEFAULT and not gitops.DEFAULT.owned
    out = gitops.for_gitops(unknown)
    assert out['metadata']['annotations'] == {OPTIONS: 'Prune=false,Delete=false', FLUX: 'disabled'}


def golden_objects():
    for path in sorted(glob.glob(os.path.join(GOLDEN, '*', '*.yaml.json'))):
        if os.path.basename(path).endswith('kustomization.yaml.json') or '-helm-values-' in path:
            continue
        with open(path, encoding='utf-8') as handle:
            for doc in json.load(handle):
                yield os.path.relpath(path, GOLDEN), doc


def test_every_object_of_the_golden_renders_has_a_row_and_carries_what_it_says():
    seen = set()
    for name, doc in golden_objects():
        key = gitops.group_kind(doc)
        seen.add(key)
        # a new kind must be classified on purpose (a row in gitops.KINDS), not fall to the default
        assert key in gitops.KINDS, '%s: %s has no row in gitops.KINDS' % (name, key)
        annotations = doc['metadata'].get('annotations') or {}
        opts = annotations.get(OPTIONS, '').split(',')
        if gitops.KINDS[key].owned:
            assert FLUX not in annotations and not {'Prune=false', 'Delete=false'} & set(opts), name
        else:
            assert {'Prune=false', 'Delete=false'} <= set(opts) and annotations.get(FLUX) == 'disabled', name
        if 'argocd.argoproj.io/sync-wave' in annotations:  # rendered in a render run: the dry-run skip too
            assert ('SkipDryRunOnMissingResource=true' in opts) == gitops.KINDS[key].operator_crd, name
    # the example renders hold both sides of the rule
    assert {('', 'Node'), ('hco.kubevirt.io', 'HyperConverged'), ('kubevirt.io', 'KubeVirt')} <= seen
    assert {('nvidia.com', 'ClusterPolicy'), ('machineconfiguration.openshift.io', 'MachineConfig')} <= seen


# -- Flux: one Kustomization per group of waves -----------------------------------------------------------------
# Flux's kustomize-controller applies one Kustomization in stages: CRDs, ClusterRoles and Namespaces first, then
# every other object in one stage that is dry-run object by object before anything of it is applied, a failed dry
# run aborting the stage (fluxcd/pkg ssa/manager_apply.go ApplyAllStaged, ApplyAll). A custom resource whose CRD an
# operator installs fails its dry run until the operator runs; in one stage with the Subscription that installs
# that operator, neither is ever applied. So no group may hold a Subscription and such a custom resource.

def test_no_flux_group_holds_a_subscription_and_an_operators_custom_resource():
    groups = {}
    for where, doc in golden_objects():
        case, name = os.path.split(where[:-len('.json')])
        groups.setdefault((case, gitops.flux_group(name)), set()).add(gitops.group_kind(doc))
    checked = 0
    for (case, group), kinds in sorted(groups.items()):
        crs = sorted(kind for kind in kinds if kind in gitops.OPERATOR_CRS)
        if ('operators.coreos.com', 'Subscription') in kinds:
            checked += 1
            assert not crs, '%s: %s holds a Subscription and %s' % (case, group, crs)
    assert checked >= 3  # the OpenShift renders install the NFD and GPU operators through OLM


def test_the_machineconfigpool_comes_after_the_node_labels_and_before_the_operators():
    # the pool's health check (Argo CD sync wave, Flux dependsOn) must see the nodes its role label puts in it: the
    # label (Node files, 30) before the pool, and the pool before the NFD / GPU Operator objects (35 on)
    waves = {}
    for where, doc in golden_objects():
        name = os.path.basename(where[:-len('.json')])
        waves.setdefault(gitops.group_kind(doc), set()).add(gitops.wave(name))
    assert max(waves[('', 'Node')]) < min(waves[('machineconfiguration.openshift.io', 'MachineConfigPool')])
    assert max(waves[('machineconfiguration.openshift.io', 'MachineConfigPool')]) < min(
        waves[('operators.coreos.com', 'Subscription')] | waves[('nvidia.com', 'ClusterPolicy')])
    # and in Flux's first group, with the node labels, so that its health check holds the operators back
    assert gitops.flux_group('31-machineconfig-machineconfigpool-cluster-gpu-worker.yaml') == gitops.flux_group(
        '30-node-labels-node-cluster-gpu-1.yaml') == gitops.FLUX_GROUPS[0].directory


def test_flux_groups_cover_every_wave_once_and_a_file_without_a_wave_goes_last():
    covered = [n for group in gitops.FLUX_GROUPS for n in range(group.first, group.last + 1)]
    assert covered == list(range(0, 100))
    assert gitops.flux_group('plain.yaml') == gitops.FLUX_GROUPS[-1].directory
    texts = gitops.flux_kustomizations(['60-b.yaml', '36-a.yaml', '35-z.yaml'])
    assert sorted(texts) == ['flux-1-nodes', 'flux-2-nfd', 'flux-5-kubevirt']
    assert texts['flux-2-nfd'].splitlines()[-2:] == ['resources:', '  - ../36-a.yaml']


def test_each_rendered_pool_names_a_machineconfig_of_its_render_for_its_role():
    # the health checks of docs/gitops/ wait for the pool's status.configuration.source to list the MachineConfig the
    # pool's annotation names: it must be one the same render writes, for that pool, named by its content
    from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
    by_case = {}
    for where, doc in golden_objects():
        by_case.setdefault(os.path.dirname(where), []).append(doc)
    pools = 0
    for case, docs in sorted(by_case.items()):
        configs = dict((d['metadata']['name'], d) for d in docs if d['kind'] == 'MachineConfig')
        for pool in (d for d in docs if d['kind'] == 'MachineConfigPool'):
            pools += 1
            name = pool['metadata']['annotations'][mc.EXPECTED_CONFIG_ANNOTATION]
            assert name in configs, (case, pool['metadata']['name'], name, sorted(configs))
            config = configs[name]
            assert config['metadata']['labels'][mc.ROLE_LABEL] == pool['metadata']['name'], (case, name)
            assert name.endswith('-' + mc.content_hash(config)), (case, name)
    assert pools >= 3  # the OpenShift example renders hold a dedicated pool each, the vendor-VFIO one two


def test_a_file_name_led_by_digits_of_another_script_has_no_wave():
    # str.isdigit takes '¹' and other scripts' digits, which int() refuses: such a name is no wave, never a crash
    assert gitops.wave('40-gpu-operator-x.yaml') == 40
    for name in ('\u00b9-x.yaml', '\u0664\u0660-x.yaml', '1' * 10 + '-x.yaml', '-x.yaml', 'x.yaml'):
        assert gitops.wave(name) is None, name
