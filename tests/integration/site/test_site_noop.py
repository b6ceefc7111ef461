# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole job, twice: ``playbooks/site.yml`` in apply mode against the real kube-apiserver, and the second run
attempts no create, update, patch or delete (refused attempts counted, from the server's audit log).

Two flavours, one fresh reset of the session's server each (module-scoped, so both tests of a flavour share its two
runs):

* OpenShift: OLM Subscription and CSV (the OLM stand-in of tests/integration/cluster_operator/test_apply.py), NFD,
  the ClusterPolicy from the CSV's alm-examples, node labels, HyperConverged permitted devices, the IOMMU
  MachineConfig with its pool rollout (the Machine Config Operator stand-in of
  tests/integration/cluster_kubevirt/test_apply.py), the DRA claim template and KubeVirt gate (chart path), and the
  verify phase with its smoke VM; run as the automation identity with the shipped RBAC.
* Kubernetes: the GPU Operator through the recorded fake helm (tests/integration/fake_helm.py), the KubeVirt CR,
  the same DRA chart path and verify with its smoke VM; run as the Helm identity
  (docs/rbac/gpuvirt-automation-helm.yml), since the gpu-operator chart is installed in this run.

The GPU hosts are played as the cluster tests play them: their facts are saved facts (docs/saved-facts.md), so the
hosts join ``gpuvirt_offline`` and the host phases (preflight's judging, host preparation) leave them alone; no vGPU
host, so the image phase says so and ends. The DRA driver's chart is left to its own install
(``dra_driver_chart_install: false``); its DeviceClass and the kubelet plugin's ResourceSlices are written as the
admin, as tests/integration/cluster_kubevirt/test_apply_dra.py does. A kubelet's allocatable is written by the
fixture in the kubelet's place.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import Cluster, recap, write_summary  # noqa: E402
import apiserver  # noqa: E402  (tools/kube, on sys.path through kube_cluster)
import fake_helm  # noqa: E402
import schema  # noqa: E402


def _load(name, relpath):
    """A helper module of another target's tests (its controller stand-ins), loaded under its own name: both
    targets have a test_apply.py."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'tests', 'integration', relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OPERATOR = _load('site_operator_apply', os.path.join('cluster_operator', 'test_apply.py'))
KUBEVIRT = _load('site_kubevirt_apply', os.path.join('cluster_kubevirt', 'test_apply.py'))
DRA = _load('site_dra_apply', os.path.join('cluster_kubevirt', 'test_apply_dra.py'))

A10 = 'nvidia.com/GA102GL_A10'
MC_NAME = '100-worker-gpuvirt-iommu'
USERS = (apiserver.AUTOMATION_USER, apiserver.HELM_USER)


def saved_facts(host):
    """One A10 (10de:2236) at 0000:65:00.0 bound to vfio-pci, as gather.yml saves it (format 2)."""
    gpu = {'bdf': '0000:65:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
           'kind': 'gpu', 'is_vf': False, 'driver': 'vfio-pci', 'iommu_group': '40'}
    return {'format_version': 2, 'host': host, 'source': 'playbooks/gather.yml',
            'gpuvirt_pci_devices': {'devices': [gpu], 'gpus': [gpu], 'nvswitches': [],
                                    'gpus_by_driver': {'vfio-pci': ['0000:65:00.0']},
                                    'iommu': {'enabled': True, 'groups': 80, 'message': ''}},
            'gpuvirt_gpu_holders': {'held': False, 'unreadable': 0, 'message': '', 'holders': []},
            'gpuvirt_os_tag': 'rhcos4.18'}


def inventory(path, platform):
    """The fleet: pt-1 (VFIO passthrough) and dra-1 (DRA passthrough), facts saved beside the inventory."""
    common = {
        'gpuvirt_cluster_mode': 'apply', 'gpuvirt_render_dir': '', 'gpuvirt_platform': 'auto',
        'gpuvirt_kubevirt_config': 'auto', 'gpuvirt_facts_source': 'saved',
        'gpu_operator_default_workload': 'vm-passthrough',
        'gpu_operator_csv_timeout': 60, 'gpu_operator_olm_poll_delay': 1,
        'kubevirt_devices_advertise_delay': 1,
        'machineconfig_wait_delay': 1, 'machineconfig_wait_timeout': 60,
        # the chart path on both platforms, the chart left to its own install (the Helm account's job)
        'dra_driver_stack': 'helm', 'dra_driver_chart_install': False,
        'kubevirt_machineconfig_enabled': "{{ gpuvirt_cluster.traits.kernel_args == 'machineconfig' }}",
        'verify_smoke_vm': True, 'verify_timeout': 30, 'verify_delay': 1,
    }
    if platform == 'kubernetes':
        common['gpu_operator_chart_values_file'] = schema.reference_file('helm', 'gpu-operator-v26.7.0-values.yaml')
    groups = {'gpu_vm_passthrough': {'hosts': {'pt-1': {}}}, 'gpu_dra': {'hosts': {'dra-1': {}}}}
    doc = {'all': {'vars': common, 'children': groups}}
    path.mkdir()
    (path / 'hosts.yml').write_text(yaml.safe_dump(doc))
    (path / '.gpuvirt_facts').mkdir()
    for host in ('pt-1', 'dra-1'):
        (path / '.gpuvirt_facts' / (host + '.json')).write_text(json.dumps(saved_facts(host)))
    return str(path / 'hosts.yml')


def node(name, alloc, labels):
    # allocatable is the kubelet's to write (status subresource): written here in the kubelet's place
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels},
            'status': {'allocatable': alloc}}


def cluster_objects(platform):
    worker = {'node-role.kubernetes.io/worker': ''}
    gpu = dict(worker, **{'nvidia.com/gpu.present': 'true'})
    objects = [node('pt-1', {'cpu': '64', A10: '1'}, gpu), node('dra-1', {'cpu': '64'}, gpu),
               DRA.kubevirt(platform), DRA.chart_device_class(), DRA.resource_slice('dra-1')]
    if platform == 'openshift':
        objects += [OPERATOR.cluster_version()] + OPERATOR.package_manifests()
        objects += [KUBEVIRT.hco_object(), KUBEVIRT.pool('master', ['00-master'], KUBEVIRT.DONE),
                    KUBEVIRT.pool('worker', ['00-worker'], KUBEVIRT.DONE)]
    return objects


def run_site(tmp_path, inv, kubeconfig, env_extra):
    extra_vars = {'ansible_python_interpreter': sys.executable, 'gpuvirt_kubeconfig': kubeconfig}
    cmd = ['ansible-playbook', '-i', inv, os.path.join(ROOT, 'playbooks', 'site.yml'), '-e', json.dumps(extra_vars)]
    cache = tmp_path / 'tmp'
    cache.mkdir(exist_ok=True)
    # kubernetes.core caches discovery under TMPDIR (k8srcp-*.json) and the client may use HOME
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(cache), **env_extra)
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    log = proc.stdout + proc.stderr
    runs = sorted(tmp_path.glob('site-run-*.log'))
    (tmp_path / ('site-run-%d.log' % (len(runs) + 1))).write_text(log)
    return proc.returncode, log, time.time() - started


def attempts(cluster, since):
    """Every write the run's identities sent since ``since``, refused ones and all (not dry runs)."""
    out = []
    for user in USERS:
        out += cluster.attempts(since=since, user=user)
    return out


@pytest.fixture(scope='module', params=['openshift', 'kubernetes'])
def site_twice(request, kube_server, tmp_path_factory):
    platform = request.param
    tmp_path = tmp_path_factory.mktemp('site-' + platform)
    openshift = platform == 'openshift'
    kube_server.reset(openshift=openshift, dra=True)
    cluster = Cluster(kube_server, tmp_path)
    for obj in cluster_objects(platform):
        cluster.create(obj)
    env_extra = {}
    if openshift:
        cluster.controller('olm', OPERATOR.olm())
        cluster.controller('machine-config-operator', KUBEVIRT.mco(KUBEVIRT.rollout_done(['00-worker', MC_NAME])))
        kubeconfig = cluster.kubeconfig
    else:
        env_extra = fake_helm.install(str(tmp_path / 'bin'), tmp_path / 'helm-calls.jsonl', schema.reference_dir())
        cluster.server.grant_helm()
        kubeconfig = cluster.server.kubeconfig_path('helm')
    time.sleep(0.3)
    cluster.mark = kube_server.audit_mark()
    inv = inventory(tmp_path / 'inventory', platform)
    first = run_site(tmp_path, inv, kubeconfig, env_extra)
    second_mark = cluster.now()
    second = run_site(tmp_path, inv, kubeconfig, env_extra) if first[0] == 0 else None
    yield {'platform': platform, 'cluster': cluster, 'first': first, 'second': second, 'second_mark': second_mark}
    errors = cluster.stop_controllers()
    assert not errors, errors


def test_the_first_run_goes_through_every_phase(site_twice):
    rc, log, seconds = site_twice['first']
    assert rc == 0, log
    cluster, openshift = site_twice['cluster'], site_twice['platform'] == 'openshift'
    print('%s: first site.yml run %.0f s' % (site_twice['platform'], seconds))
    # each phase left its object on the server: node labels, the operator, KubeVirt's devices, the MachineConfig
    # (OpenShift), the DRA claim template and gate, the smoke VM
    labels = cluster.get('v1', 'Node', 'pt-1')['metadata']['labels']
    assert labels['nvidia.com/gpu.workload.config'] == 'vm-passthrough', labels
    if openshift:
        assert cluster.get('nvidia.com/v1', 'ClusterPolicy', 'gpu-cluster-policy') is not None
        hco = cluster.get(*KUBEVIRT.HCO)
        assert A10 in [e['resourceName'] for e in hco['spec']['permittedHostDevices']['pciHostDevices']], hco['spec']
        assert cluster.get(KUBEVIRT.MC_V1, 'MachineConfig', MC_NAME) is not None
        assert 'GPUsWithDRA' in hco['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch']
    else:
        assert cluster.get('nvidia.com/v1', 'ClusterPolicy', 'cluster-policy') is not None
        kv = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')['spec']['configuration']
        assert A10 in [e['resourceName'] for e in kv['permittedHostDevices']['pciHostDevices']], kv
        assert 'GPUsWithDRA' in kv['developerConfiguration']['featureGates'], kv
    assert cluster.get(DRA.RESOURCE, 'ResourceClaimTemplate', 'vfio-gpu', 'default') is not None
    vm = cluster.get('kubevirt.io/v1', 'VirtualMachine', 'gpuvirt-smoke', 'default')
    assert vm is not None, log
    assert 'node pt-1: %s=1 advertised' % A10 in log, log


def test_the_second_run_attempts_no_write(site_twice):
    assert site_twice['first'][0] == 0, site_twice['first'][1]
    rc, log, seconds = site_twice['second']
    print('%s: second site.yml run %.0f s' % (site_twice['platform'], seconds))
    cluster = site_twice['cluster']
    tried = attempts(cluster, site_twice['second_mark'])
    assert tried == [], write_summary(tried)
    assert rc == 0 and recap(log)['changed'] == '0', log
