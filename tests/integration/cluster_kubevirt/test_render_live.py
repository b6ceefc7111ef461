# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render mode with a cluster to read: the rendered HyperConverged / KubeVirt CR keeps the permitted devices and
feature gates others set on the live object, read from a real kube-apiserver (tests/integration/kube_cluster.py) as
the least-privilege automation identity; without a cluster, the render warns, naming the lists it replaces.

Why the render must hold the live entries: a GitOps sync replaces these lists with the rendered ones.
* Argo CD syncs with `kubectl apply` unless told otherwise (argoproj/argo-cd v3.5.1 docs/user-guide/
  sync-options.md, "Server-Side Apply": "By default, Argo CD executes the kubectl apply operation"), and kubectl
  applies a custom resource as a three-way JSON merge patch (kubernetes/kubectl v0.36.3 pkg/cmd/apply/patcher.go
  buildMergePatch, "JSONMergePatch which is used for custom resource definitions"), which replaces a list whole
  (RFC 7386, section 2: a value that is not an object replaces the target).
* The KubeVirt CR's lists are x-kubernetes-list-type: atomic (kubevirt/kubevirt v1.9.0 validations_generated.go,
  "kubevirt": permittedHostDevices.pciHostDevices, mediatedDevices, developerConfiguration.featureGates), so a
  server-side apply replaces them too: Argo CD's runs with --force-conflicts (same document), and Flux's "any
  changes to these fields will be reverted" (fluxcd/kustomize-controller v1.9.4 docs/spec/v1/kustomizations.md,
  "Merge").
* HyperConverged's permittedHostDevices lists are x-kubernetes-list-type: map, keyed on pciDeviceSelector /
  mdevNameSelector (kubevirt/hyperconverged-cluster-operator v1.18.1 config/crd/bases/
  hco.kubevirt.io_hyperconvergeds.yaml, v1beta1): server-side apply keeps other managers' entries there, the
  client-side apply above does not.
"""
from __future__ import annotations

import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import run_playbook, write_summary  # noqa: E402
import schema  # noqa: E402

QAT = {'pciDeviceSelector': '8086:4940', 'resourceName': 'intel.com/QAT', 'externalResourceProvider': True}
A100_MIG = {'mdevNameSelector': 'GRID A100-1-5C', 'resourceName': 'example.com/A100_1_5C'}
UNREAD = 'is rendered without the live object'


def run(tmp_path, inventory, **extra):
    extra.setdefault('kubevirt_machineconfig_enabled', False)
    out = tmp_path / 'render'
    rc, log = run_playbook(tmp_path, 'kubevirt', os.path.join(HERE, 'inventories', inventory + '.yml'),
                           render_root=str(out), **extra)
    return rc, log, out


def rendered(out, kind):
    found = []
    for path in sorted(glob.glob(str(out / '*.yaml'))):
        if '-helm-values-' in os.path.basename(path):  # chart values, not an object
            continue
        for doc in schema.validate_file(path):
            if doc['kind'] == kind:
                found.append(doc)
    return found


def said(log):
    return ' '.join(log.split())  # a warning as one line (the callback wraps it)


def live_hco():
    return {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
            'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'},
            'spec': {'permittedHostDevices': {'pciHostDevices': [QAT], 'mediatedDevices': [A100_MIG]}}}


def live_kubevirt():
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt',
            'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
            'spec': {'configuration': {
                'developerConfiguration': {'featureGates': ['Snapshot', 'HostDevices']},
                'permittedHostDevices': {'pciHostDevices': [
                    {'pciVendorSelector': '8086:4940', 'resourceName': 'intel.com/QAT'}]}}},
            'status': {'observedKubeVirtVersion': 'v1.9.0'}}


def test_a_render_that_can_read_the_cluster_keeps_the_live_hyperconverged_entries_and_writes_nothing(tmp_path, kube):
    cluster = kube([live_hco()])
    rc, log, out = run(tmp_path, 'passthrough-hco-new', gpuvirt_kubeconfig=cluster.kubeconfig,
                       kubevirt_devices_current={})
    assert rc == 0, log
    (hco,) = rendered(out, 'HyperConverged')
    phd = hco['spec']['permittedHostDevices']
    # the live entries first, as they are, then ours
    assert phd['pciHostDevices'][0] == QAT, phd
    assert [e['pciDeviceSelector'] for e in phd['pciHostDevices'][1:]] == ['10DE:2236', '10DE:26B9']
    assert phd['mediatedDevices'] == [A100_MIG], phd
    assert UNREAD not in said(log), log
    # a render reads, never writes
    assert cluster.writes() == [], write_summary(cluster.writes())


def test_a_render_that_can_read_the_cluster_keeps_the_live_kubevirt_gates_and_devices(tmp_path, kube):
    cluster = kube([live_kubevirt()], openshift=False)
    rc, log, out = run(tmp_path, 'mixed-kubevirt', gpuvirt_kubeconfig=cluster.kubeconfig, kubevirt_devices_current={})
    assert rc == 0, log
    (kv,) = rendered(out, 'KubeVirt')
    conf = kv['spec']['configuration']
    # the live gates as they are, and no GPU gate: the lab's KubeVirt is v1.9.0, where that gate is GA (kubevirt/kubevirt
    # pkg/virt-config/featuregate/inactive.go registers GPUGate with State GA from v1.5.0)
    assert conf['developerConfiguration']['featureGates'] == ['Snapshot', 'HostDevices'], conf
    assert conf['permittedHostDevices']['pciHostDevices'] == [
        {'pciVendorSelector': '8086:4940', 'resourceName': 'intel.com/QAT'},
        {'pciVendorSelector': '10DE:2236', 'resourceName': 'nvidia.com/GA102GL_A10', 'externalResourceProvider': True}]
    assert UNREAD not in said(log), log
    assert cluster.writes() == [], write_summary(cluster.writes())


def test_a_render_with_no_cluster_and_no_live_object_warns_naming_the_lists_it_replaces(tmp_path):
    rc, log, out = run(tmp_path, 'mixed-kubevirt', kubevirt_devices_current={})
    assert rc == 0, log
    text = said(log)
    assert 'KubeVirt kubevirt/kubevirt %s' % UNREAD in text, log
    for path in ('spec.configuration.permittedHostDevices.pciHostDevices (atomic)',
                 'spec.configuration.permittedHostDevices.mediatedDevices (atomic)'):
        assert path in text, log
    # for KubeVirt v1.9.0 the render adds no feature gate (GPU is GA there, inactive.go above), so it replaces no
    # live gate list and names none
    assert 'developerConfiguration.featureGates' not in text, log
    assert 'gpuvirt_kubeconfig' in text and 'kubevirt_devices_current' in text, log
    rc, log, out = run(tmp_path, 'passthrough-hco-new', kubevirt_devices_current={})
    assert rc == 0, log
    text = said(log)
    assert 'HyperConverged openshift-cnv/kubevirt-hyperconverged %s' % UNREAD in text, log
    assert 'spec.permittedHostDevices.pciHostDevices (map)' in text, log
    # a cluster named but not readable (a pipeline without access): the render goes on, and says why it merged nothing
    rc, log, out = run(tmp_path, 'passthrough-hco-new', kubevirt_devices_current={},
                       gpuvirt_kubeconfig=str(tmp_path / 'no-such-kubeconfig'))
    assert rc == 0, log
    text = said(log)
    hco_name = 'HyperConverged openshift-cnv/kubevirt-hyperconverged'
    assert '%s %s (the cluster could not be read (' % (hco_name, UNREAD) in text, log
    assert 'no-such-kubeconfig' in text, log
    # given the live object, nothing is replaced unseen: no warning
    rc, log, out = run(tmp_path, 'passthrough-hco-new')
    assert rc == 0 and UNREAD not in said(log), log


def test_the_dra_gate_render_keeps_the_live_gates_or_warns(tmp_path, kube):
    cluster = kube([live_kubevirt()], openshift=False)
    rc, log, out = run(tmp_path, 'dra-kubevirt', gpuvirt_kubeconfig=cluster.kubeconfig, dra_driver_current={},
                       dra_driver_kubevirt_version='v1.8.2')
    assert rc == 0, log
    (kv,) = rendered(out, 'KubeVirt')
    gates = kv['spec']['configuration']['developerConfiguration']['featureGates']
    assert gates[:2] == ['Snapshot', 'HostDevices'] and 'GPUsWithDRA' in gates, gates
    assert UNREAD not in said(log), log
    assert cluster.writes() == [], write_summary(cluster.writes())
    (tmp_path / 'second').mkdir()
    rc, log, out = run(tmp_path / 'second', 'dra-kubevirt', dra_driver_current={})
    assert rc == 0, log
    assert 'spec.configuration.developerConfiguration.featureGates (atomic)' in said(log), log
    assert 'dra_driver_current' in said(log), log


def test_a_name_that_climbs_out_of_its_path_is_refused_naming_it_before_the_read(tmp_path, kube):
    # kubernetes.core's client formats the name into the request path unquoted and urllib3 resolves '..' segments:
    # without the check in the read task this name reads the pull Secret of the GPU Operator's namespace, and the
    # registered result shows it
    # (the namespace is the shipped RBAC file's, made by the grant)
    pull = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque', 'data': {'password': 'c2VjcmV0'},
            'metadata': {'name': 'gpuvirt-vgpu-pull', 'namespace': 'nvidia-gpu-operator'}}
    cluster = kube([live_hco(), pull])
    climbing = 'x/../../../../../../api/v1/namespaces/nvidia-gpu-operator/secrets/gpuvirt-vgpu-pull'
    rc, log, out = run(tmp_path, 'passthrough-hco-new', gpuvirt_kubeconfig=cluster.kubeconfig,
                       kubevirt_devices_current={}, kubevirt_devices_hco_name=climbing)
    assert rc != 0, log
    assert 'kubevirt_devices_hco_name' in said(log) and 'DNS-1123 subdomain' in said(log), log
    assert 'c2VjcmV0' not in log
    secrets = [e['requestURI'] for e in cluster.requests() if e.get('objectRef', {}).get('resource') == 'secrets']
    assert secrets == [], secrets
    assert cluster.writes() == [], write_summary(cluster.writes())
