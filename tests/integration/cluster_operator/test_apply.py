# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of playbooks/operator.yml, nodes.yml and verify.yml against the in-memory API stand-in.

No API server can run on the test machines. tests/integration/cluster_kubevirt/fake_apiserver.py (issue 7's)
answers discovery, GET and PATCH well enough for kubernetes.core's dynamic client; here it learns the OLM,
OpenShift config, GPU Operator and VMI kinds, and OLM's part (Subscription -> installed CSV -> Succeeded) is
seeded as status. This runs the real apply wiring (OpenShift detection, PackageManifest/Subscription/CSV reads,
server-side apply, merge-patched labels, the node wait, no-op second runs, failing before writes). It is NOT a
cluster: no admission, no OLM, no operator, no Helm (the Helm path is only reached, see its test).
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'cluster_kubevirt'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
import fake_apiserver  # noqa: E402
import schema  # noqa: E402

NS = 'nvidia-gpu-operator'
CSV = 'gpu-operator-certified.v26.7.0'
OLM_V1, OLM_V1A1 = 'operators.coreos.com/v1', 'operators.coreos.com/v1alpha1'
W, V = 'nvidia.com/gpu.workload.config', 'nvidia.com/vgpu.config'
# kinds the stand-in must serve for these roles, on top of its own
EXTRA = {
    'v1': [('secrets', 'Secret', True), ('configmaps', 'ConfigMap', True)],
    'config.openshift.io/v1': [('clusterversions', 'ClusterVersion', False)],
    'packages.operators.coreos.com/v1': [('packagemanifests', 'PackageManifest', True)],
    OLM_V1: [('operatorgroups', 'OperatorGroup', True)],
    OLM_V1A1: [('subscriptions', 'Subscription', True), ('clusterserviceversions', 'ClusterServiceVersion', True)],
    'nvidia.com/v1': [('clusterpolicies', 'ClusterPolicy', False)],
    'kubevirt.io/v1': [('virtualmachineinstances', 'VirtualMachineInstance', True),
                       ('virtualmachines', 'VirtualMachine', True)],
}


class OperatorAPI(fake_apiserver.FakeAPI):
    """The stand-in, with /apis listing each group once with all its versions (the dynamic client keys groups
    by name, so a group listed once per version would lose all but its last version)."""

    def start(self):
        url = super().start()
        base = self.server.RequestHandlerClass

        class Handler(base):
            def do_GET(self):
                if urllib.parse.urlparse(self.path).path.strip('/') != 'apis':
                    return base.do_GET(self)
                groups = {}
                for gv in fake_apiserver.RESOURCES:
                    if '/' in gv:
                        name, version = gv.split('/')
                        groups.setdefault(name, []).append({'groupVersion': gv, 'version': version})
                return self.send(200, {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [
                    {'name': n, 'versions': vs, 'preferredVersion': vs[0]} for n, vs in sorted(groups.items())]})

        self.server.RequestHandlerClass = Handler
        return url


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    apis = []

    def start(objects, openshift=True):
        resources = copy.deepcopy(fake_apiserver.RESOURCES)
        for gv, items in EXTRA.items():
            if gv == 'config.openshift.io/v1' and not openshift:
                continue
            resources.setdefault(gv, []).extend(items)
        # the stand-in reads these module globals per request; monkeypatch restores them after the test
        monkeypatch.setattr(fake_apiserver, 'RESOURCES', resources)
        monkeypatch.setattr(fake_apiserver, '_PLURAL', dict(
            ((gv, kind), plural) for gv, items in resources.items() for plural, kind, _ns in items))
        api = OperatorAPI(objects)
        api.kubeconfig = fake_apiserver.kubeconfig(tmp_path / 'kubeconfig', api.start())
        apis.append(api)
        return api
    yield start
    for api in apis:
        api.stop()


def run(tmp_path, playbook, inventory, *args, **extra):
    extra_vars = dict(extra, render_root=str(tmp_path / 'unused'), reference_root=schema.reference_dir(),
                      ansible_python_interpreter=sys.executable)
    cmd = ['ansible-playbook', '-i', os.path.join(HERE, 'inventories', inventory + '.yml'),
           os.path.join(ROOT, 'playbooks', playbook + '.yml'), '-e', json.dumps(extra_vars)] + list(args)
    env = dict(os.environ, HOME=str(tmp_path))  # the client's discovery cache goes under HOME
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def recap(output):
    line = [ln for ln in output.splitlines() if ln.startswith('localhost')][-1]
    return dict(field.split('=') for field in line.split(':', 1)[1].split())


def alm_text():
    with open(os.path.join(schema.reference_dir(), 'olm', 'gpu-operator-v26.7.0-csv-alm-examples.json'),
              encoding='utf-8') as handle:
        return handle.read()


def olm_cluster(phase='Succeeded', default_channel='v25.10'):
    """What OLM would show once the operator is installed: the PackageManifest, the Subscription's status
    naming the CSV, and the CSV carrying its alm-examples."""
    return [
        {'apiVersion': 'config.openshift.io/v1', 'kind': 'ClusterVersion', 'metadata': {'name': 'version'}},
        {'apiVersion': 'packages.operators.coreos.com/v1', 'kind': 'PackageManifest',
         'metadata': {'name': 'gpu-operator-certified', 'namespace': 'openshift-marketplace'},
         'status': {'defaultChannel': default_channel, 'channels': [{'name': 'v25.10'}, {'name': 'v26.7'}]}},
        {'apiVersion': OLM_V1A1, 'kind': 'Subscription', 'metadata': {'name': 'gpu-operator-certified', 'namespace': NS},
         'status': {'installedCSV': CSV, 'state': 'AtLatestKnown'}},
        {'apiVersion': OLM_V1A1, 'kind': 'ClusterServiceVersion',
         'metadata': {'name': CSV, 'namespace': NS, 'annotations': {'alm-examples': alm_text()}},
         'status': {'phase': phase, 'message': 'install strategy failed: deployment gpu-operator not ready'}},
    ]


def operator_apply(api, **extra):
    return dict(gpu_operator_mode='apply', gpu_operator_platform='auto', gpu_operator_kubeconfig=api.kubeconfig,
                gpu_operator_csv_timeout=20, **extra)


def test_openshift_apply_detects_openshift_and_builds_the_policy_from_the_installed_csv(tmp_path, cluster):
    api = cluster(olm_cluster())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(api))
    assert rc == 0, log
    assert 'n0t-a-real-pass' not in log
    sub = api.get(OLM_V1A1, 'Subscription', 'gpu-operator-certified', NS)
    # the channel is the API's PackageManifest default (v25.10), not the inventory's render-mode one (v26.7)
    assert sub['spec']['channel'] == 'v25.10' and sub['spec']['installPlanApproval'] == 'Manual'
    assert api.get(OLM_V1, 'OperatorGroup', 'nvidia-gpu-operator-group', NS)['spec']['targetNamespaces'] == [NS]
    assert api.get('v1', 'Secret', 'gpuvirt-vgpu-pull', NS)['type'] == 'kubernetes.io/dockerconfigjson'
    assert api.get('v1', 'ConfigMap', 'gpuvirt-vgpu-devices-config', NS) is not None
    cp = api.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy')
    assert cp['spec']['vgpuManager']['imagePullSecrets'] == ['gpuvirt-vgpu-pull']
    assert cp['spec']['sandboxWorkloads']['defaultWorkload'] == 'vm-vgpu'
    assert cp['spec']['vgpuDeviceManager']['config'] == {'name': 'gpuvirt-vgpu-devices-config', 'default': 'A10-12Q'}
    # what was sent is the CSV's example plus our settings, and valid for the CRD
    (sent,) = [w for w in api.writes if w['kind'] == 'ClusterPolicy']
    schema.validate(sent, crd_sources=['v26.7.0'])
    base = [e for e in json.loads(alm_text()) if e['kind'] == 'ClusterPolicy'][0]
    assert sent['spec']['driver'] == base['spec']['driver'] and sent['spec']['dcgm'] == base['spec']['dcgm']
    versions = {k: o['metadata']['resourceVersion'] for k, o in api.store.items()}
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(api))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert {k: o['metadata']['resourceVersion'] for k, o in api.store.items()} == versions


def test_openshift_apply_check_mode_writes_nothing(tmp_path, cluster):
    api = cluster(olm_cluster())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', '--check', **operator_apply(api))
    assert rc == 0, log
    assert api.writes == [] and api.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy') is None


def test_failed_csv_is_reported_and_no_policy_is_applied(tmp_path, cluster):
    api = cluster(olm_cluster(phase='Failed'))
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(api))
    assert rc != 0 and 'CSV %s failed' % CSV in log and 'deployment gpu-operator not ready' in log, log
    assert api.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy') is None


def test_apply_bad_vgpu_type_fails_before_any_write(tmp_path, cluster):
    api = cluster(olm_cluster())
    rc, log = run(tmp_path, 'operator', 'openshift-vgpu', **operator_apply(
        api, gpu_operator_vgpu_configs={'A10-12Q': {'A10-12Q': 2}, 'L40S-24Q': {'L40S-24Q': 2}, 'x': {'A10-48Q': 1}}))
    assert rc != 0 and 'A10-48Q' in log, log
    assert api.writes == []


def test_plain_kubernetes_reads_the_chart_values_before_any_write(tmp_path, cluster):
    api = cluster([], openshift=False)
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(
        api, gpu_operator_chart_values_file='', gpu_operator_helm_binary=str(tmp_path / 'no-helm')))
    # Kubernetes was detected (the chart is read only there); without helm that fails, and nothing was written
    assert rc != 0 and "Read the chart's values.yaml" in log and 'no-helm' in log, log
    assert api.writes == []


def test_plain_kubernetes_is_detected_and_goes_to_helm(tmp_path, cluster):
    api = cluster([], openshift=False)
    rc, log = run(tmp_path, 'operator', 'kubernetes-passthrough', **operator_apply(api))
    # the inventory gives the chart's values.yaml; the Helm install itself needs the helm binary and the chart
    # repository, neither available here
    assert 'Install the gpu-operator chart' in log, log
    assert [w['kind'] for w in api.writes] == ['Namespace']
    assert api.get('v1', 'Namespace', 'gpu-operator') is not None


def labelled_nodes():
    return [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels}}
            for name, labels in (('ctr-1', {'kubernetes.io/hostname': 'ctr-1'}), ('pt-1', {W: 'vm-passthrough'}),
                                 ('vgpu-1', {W: 'vm-vgpu', V: 'A10-12Q'}))]


def vmi(name, node, phase='Running'):
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachineInstance',
            'metadata': {'name': name, 'namespace': 'vdi'}, 'status': {'nodeName': node, 'phase': phase}}


def labels_apply(api):
    return dict(node_labels_mode='apply', node_labels_kubeconfig=api.kubeconfig)


def test_node_labels_apply_patches_only_differences_then_nothing(tmp_path, cluster):
    api = cluster(labelled_nodes() + [vmi('win11', 'pt-1'), vmi('old', 'vgpu-1', phase='Succeeded')])
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(api))
    assert rc == 0, log
    assert sorted(w['metadata']['name'] for w in api.writes) == ['ctr-1', 'vgpu-1']
    assert api.get('v1', 'Node', 'ctr-1')['metadata']['labels'] == {'kubernetes.io/hostname': 'ctr-1',
                                                                    W: 'container'}
    assert api.get('v1', 'Node', 'vgpu-1')['metadata']['labels'][V] == 'A10-24Q'
    writes = len(api.writes)
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(api))
    assert rc == 0 and recap(log)['changed'] == '0' and len(api.writes) == writes, log


def test_node_labels_apply_refuses_a_change_under_a_running_vmi(tmp_path, cluster):
    api = cluster(labelled_nodes() + [vmi('cad-3', 'vgpu-1')])
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(api))
    assert rc != 0 and 'vdi/cad-3' in log and 'A10-12Q -> A10-24Q' in log, log
    assert api.writes == []


def test_node_labels_apply_names_a_node_missing_from_the_cluster(tmp_path, cluster):
    api = cluster(labelled_nodes()[:2])
    rc, log = run(tmp_path, 'nodes', 'mixed-openshift', **labels_apply(api))
    assert rc != 0 and 'node vgpu-1 is not in the cluster' in log, log
    assert api.writes == []


def test_verify_apply_waits_then_reports_per_node(tmp_path, cluster):
    expected = {'gpu-1': {'nvidia.com/GA102GL_A10': 2}, 'gpu-2': {'nvidia.com/NVIDIA_A10-12Q': 1}}
    api = cluster([
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1'},
         'status': {'allocatable': {'nvidia.com/GA102GL_A10': '2'}}},
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-2'}, 'status': {'allocatable': {'cpu': '8'}}}])
    args = dict(verify_mode='apply', verify_kubeconfig=api.kubeconfig, verify_expected=expected,
                verify_timeout=2, verify_delay=1)
    rc, log = run(tmp_path, 'verify', 'kubernetes-passthrough', **args)
    assert rc != 0 and 'node gpu-2: expected nvidia.com/NVIDIA_A10-12Q>=1; advertised no nvidia.com/*' in log, log
    api.put({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-2'},
             'status': {'allocatable': {'nvidia.com/NVIDIA_A10-12Q': '4'}}})
    rc, log = run(tmp_path, 'verify', 'kubernetes-passthrough', verify_smoke_vm=True, **args)
    assert rc == 0 and 'node gpu-2: nvidia.com/NVIDIA_A10-12Q=4 advertised' in log, log
    (vm,) = [w for w in api.writes if w['kind'] == 'VirtualMachine']
    schema.validate(vm)


@pytest.mark.parametrize('openshift', [True, False])
def test_preflight_reaches_the_cluster_and_tells_openshift_apart(tmp_path, cluster, openshift):
    objects = [{'apiVersion': 'config.openshift.io/v1', 'kind': 'ClusterVersion', 'metadata': {'name': 'version'}}]
    api = cluster(objects if openshift else [], openshift=openshift)
    rc, log = run(tmp_path, 'preflight', 'preflight-apply', gpuvirt_kubeconfig=api.kubeconfig)
    assert rc == 0, log
    want = 'OpenShift (OLM, HyperConverged, MachineConfig)' if openshift else 'Kubernetes (Helm, KubeVirt CR)'
    assert 'Cluster answers: ' + want in log, log
    assert api.writes == [] and api.dry_runs == []


def test_preflight_fails_when_the_cluster_does_not_answer(tmp_path):
    # a kubeconfig pointing at a closed port: the run stops in preflight, before any phase
    closed = fake_apiserver.kubeconfig(tmp_path / 'kubeconfig', 'https://127.0.0.1:9')
    rc, log = run(tmp_path, 'preflight', 'preflight-apply', gpuvirt_kubeconfig=closed)
    assert rc != 0 and 'Check that the cluster answers' in log, log
