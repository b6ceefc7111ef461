# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's own DRA stack (GPUCluster, v26.7.0) on the real kube-apiserver: an OpenShift fleet whose GPU
hosts are all DRA hosts gets the NVIDIADriver and the GPUCluster of the installed CSV's alm-examples instead of a
ClusterPolicy, and its DRA nodes no operand-off labels; Kubernetes refuses the GPUCluster before any write.

The GPUCluster CRD is not in the reference set: OLM creates it from the bundle when it installs the CSV (the CSV
owns gpuclusters.nvidia.com); here the OLM stand-in creates the stand-in CRD written from the v26.7.0 Go types
(tools/kube/stand_in_gpucluster.py). No GPU Operator runs: what its controllers do with the objects is cited where
a test relies on it.
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
from test_apply import (CSV, NS, RELEASE, alm_text, cluster_version, olm, operator_apply,  # noqa: E402
                        package_manifests, run)
from kube_cluster import recap, write_summary  # noqa: E402
from test_apply import fake_helm_env  # noqa: E402
import schema  # noqa: E402
import stand_in_gpucluster  # noqa: E402

INVENTORY = 'dra-openshift'
OPERANDS = ('nvidia.com/gpu.deploy.device-plugin', 'nvidia.com/gpu.deploy.dcgm', 'nvidia.com/gpu.deploy.dcgm-exporter')


def olm_with_owned_crds():
    """OLM's part (test_apply.olm), plus the CRD the GPU Operator's CSV owns and the reference set lacks: an approved
    InstallPlan creates the bundle's CRDs with the CSV (operator-framework/operator-lifecycle-manager, the catalog
    operator's InstallPlan steps). ClusterPolicy and NVIDIADriver are served from the real v26.7.0 CRDs already."""
    base = olm()

    def step(cluster):
        base(cluster)
        installed = cluster.get('operators.coreos.com/v1alpha1', 'ClusterServiceVersion', CSV, NS) is not None
        if installed and cluster.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition',
                                     stand_in_gpucluster.CRD_NAME) is None:
            cluster.server.create_crd(stand_in_gpucluster.crd())
        return False
    return step


def test_an_openshift_dra_only_fleet_gets_the_gpucluster_and_nvidiadriver_and_no_clusterpolicy(tmp_path, kube):
    cluster = kube([cluster_version()] + package_manifests())
    cluster.controller('olm', olm_with_owned_crds())
    rc, log = run(tmp_path, 'operator', INVENTORY, **operator_apply(cluster))
    assert rc == 0, log
    # GPU Operator v26.7.0 controllers/gpucluster_controller.go validatePrerequisites: "a ClusterPolicy CR and
    # GPUCluster CR may not exist at the same time" (and clusterpolicy_controller.go Reconcile: "ClusterPolicy and
    # GPUCluster cannot co-exist"): the run writes the GPUCluster and no ClusterPolicy at all
    assert cluster.sent('clusterpolicies') == []
    assert cluster.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy') is None
    gpu_cluster = cluster.get('nvidia.com/v1alpha1', 'GPUCluster', 'gpu-cluster')
    assert gpu_cluster is not None, log
    # the CRD's XValidation pins the singleton's name (CEL does not run on 1.20: checked here)
    assert gpu_cluster['metadata']['name'] == stand_in_gpucluster.SINGLETON_NAME
    dra = gpu_cluster['spec']['draDriver']
    # v26.7.0 manifests/state-dra-driver/0500_daemonset.yaml: draDriver.featureGates is the kubelet plugin's
    # FEATURE_GATES; PassthroughSupport mounts /sys, /proc and /lib/modules for the vfio rebinding
    assert dra['featureGates'] == {'PassthroughSupport': True, 'DeviceMetadata': True}
    # the DRA driver the installed release lists (v26.7.0 CSV spec.relatedImages nvidia-dra-driver-image, the
    # operator's DRA_DRIVER_IMAGE, values.yaml draDriver.version: v0.5.0), not its alm-examples' v0.4.1
    assert dra['computeDomains'] == {'enabled': False} and dra['version'] == 'v0.5.0'
    # gpucluster_types.go GPUClusterSpec: the GPUCluster does not manage the driver ("host-installed or via an
    # NVIDIADriver CR"); with no ClusterPolicy the CSV's NVIDIADriver installs it on every GPU node
    driver = cluster.get('nvidia.com/v1alpha1', 'NVIDIADriver', 'gpu-driver')
    assert driver['spec']['driverType'] == 'gpu' and driver['spec']['default'] is False
    (sent_driver,) = cluster.sent('nvidiadrivers')
    schema.validate(sent_driver, crd_sources=[RELEASE])
    (sent_cluster,) = cluster.sent('gpuclusters')
    base = [e for e in json.loads(alm_text()) if e['kind'] == 'GPUCluster'][0]
    assert sent_cluster['spec']['dcgmExporter'] == base['spec']['dcgmExporter']
    second = cluster.now()
    rc, log = run(tmp_path, 'operator', INVENTORY, **operator_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.writes(since=second) == [], write_summary(cluster.writes(since=second))


def test_kubernetes_refuses_the_gpucluster_before_any_write(tmp_path, kube, monkeypatch):
    # the recorded fake helm on PATH, so the helm binary check (which comes first) passes and the stack is judged
    fake_helm_env(tmp_path, monkeypatch)
    cluster = kube(openshift=False)
    # the chart's values.yaml from the reference set (no helm binary here), as the Kubernetes inventories give it
    values = os.path.join(schema.reference_dir(), 'helm', 'gpu-operator-v26.7.0-values.yaml')
    rc, log = run(tmp_path, 'operator', INVENTORY, **operator_apply(
        cluster, dra_driver_stack='gpucluster', gpu_operator_chart_values_file=values))
    assert rc != 0
    assert 'dra_driver_stack is gpucluster' in log and 'Helm chart on kubernetes' in log, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_gpucluster_dra_nodes_get_no_operand_off_labels_and_lose_ours(tmp_path, kube):
    # v26.7.0 controllers/nodelabeling_controller.go updateGPUStateLabels: with a GPUCluster the operator deletes
    # devicePluginOnlyStateLabelKeys (device-plugin, dcgm, dcgm-exporter among them) from every GPU node, value-blind;
    # setting them would be undone at each reconcile. Our leftover "false" goes, nothing else is set to false.
    leftover = {key: 'false' for key in OPERANDS}
    cluster = kube([
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'dra-1', 'labels': dict(
            leftover, **{'nvidia.com/gpu.present': 'true'})}},
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'dra-2', 'labels': {
            'nvidia.com/gpu.present': 'true'}}}])
    args = {'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'auto', 'gpuvirt_kubeconfig': cluster.kubeconfig}
    rc, log = run(tmp_path, 'nodes', INVENTORY, **args)
    assert rc == 0, log
    for name in ('dra-1', 'dra-2'):
        labels = cluster.get('v1', 'Node', name)['metadata']['labels']
        assert not set(OPERANDS) & set(labels), (name, labels)
        assert labels['nvidia.com/gpu.workload.config'] == 'container'
    second = cluster.now()
    rc, log = run(tmp_path, 'nodes', INVENTORY, **args)
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.writes(since=second) == [], write_summary(cluster.writes(since=second))
