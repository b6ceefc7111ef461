# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reboot role's cordon and drain against a real kube-apiserver (evictions, PodDisruptionBudgets).

The API server decides every eviction: it refuses one a PodDisruptionBudget does not allow (HTTP 429) and marks an
allowed one's pod for graceful deletion. What no server runs here is played by the test through the API: the
disruption controller (a budget's status.disruptionsAllowed) and the kubelet (removing a pod once it is marked for
deletion and its containers have stopped).

No host is rebooted: drain.yml's reboot step writes a marker file instead, so "not rebooted" is the marker's
absence, and the rolling run (playbooks/host_prep.yml over two hosts) is stopped by its drain before any reboot.
Every run gets a clean environment: the test process's own cluster credentials (KUBECONFIG, K8S_AUTH_*) never
reach it, only what a test gives.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import write_summary  # noqa: E402

NODE = 'gpu-1'
RS = {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'name': 'web-7d4b9', 'uid': 'rs-1', 'controller': True}
DS = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'name': 'nvidia-sandbox-device-plugin-daemonset', 'uid': 'ds-1',
      'controller': True}


EVICTED = 'apps/web-7d4b9-x2k1'


def pod(name, namespace, node, owner, labels=None):
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': name, 'namespace': namespace, 'ownerReferences': [owner], 'labels': labels or {}},
            'spec': {'nodeName': node, 'containers': [{'name': 'c', 'image': 'registry.example.com/c:1'}]},
            # the kubelet's report of a running, ready pod (an unready one may be evicted past a healthy budget)
            'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}]}}


def fleet():
    return [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': NODE}},
            {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'worker-1'}},
            pod('web-7d4b9-x2k1', 'apps', NODE, RS, {'app': 'web'}),
            pod('nvidia-sandbox-device-plugin-x1', 'nvidia-gpu-operator', NODE, DS),
            pod('web-7d4b9-q9z8', 'apps', 'worker-1', RS, {'app': 'web'})]


def pdb(allowed):
    # policy/v1beta1 is what a 1.20 server serves; status is the disruption controller's
    return {'apiVersion': 'policy/v1beta1', 'kind': 'PodDisruptionBudget',
            'metadata': {'name': 'web', 'namespace': 'apps'},
            'spec': {'minAvailable': 1, 'selector': {'matchLabels': {'app': 'web'}}},
            'status': {'disruptionsAllowed': allowed, 'currentHealthy': 2, 'desiredHealthy': 1, 'expectedPods': 2,
                       'observedGeneration': 1}}


def kubelet(cluster):
    """The kubelet's part: a pod marked for deletion on its node is removed once its containers stopped (the
    API server's graceful deletion leaves that to the kubelet)."""
    for item in cluster.server.request('GET', '/api/v1/pods?fieldSelector=spec.nodeName=' + NODE)['items']:
        meta = item['metadata']
        if meta.get('deletionTimestamp'):
            cluster.server.request('DELETE', '/api/v1/namespaces/%s/pods/%s' % (meta['namespace'], meta['name']),
                                   {'kind': 'DeleteOptions', 'apiVersion': 'v1', 'gracePeriodSeconds': 0},
                                   ok=(200, 202, 404))
    return False


def playbook(tmp_path, path, inventory, extra_vars, env=None):
    """ansible-playbook ``path`` in a clean environment: HOME and TMPDIR of the test, no KUBECONFIG and no
    K8S_AUTH_* of the test process; ``env`` adds what the test gives the run. Returns (rc, output)."""
    cache = tmp_path / 'tmp'
    cache.mkdir(exist_ok=True)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG'}
    run_env.update(HOME=str(tmp_path), TMPDIR=str(cache))
    run_env.update(env or {})
    cmd = ['ansible-playbook', '-i', inventory, path,
           '-e', json.dumps(dict(extra_vars, ansible_python_interpreter=sys.executable))]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=run_env)
    return proc.returncode, proc.stdout + proc.stderr


def rebooted(tmp_path):
    """The marker drain.yml's reboot step writes: the host got past its drain to the reboot."""
    return (tmp_path / 'rebooted').exists()


def drain(tmp_path, cluster, env=None, **extra):
    args = {'reboot_node_name': NODE, 'gpuvirt_kubeconfig': cluster.kubeconfig, 'reboot_drain_timeout': 20,
            'reboot_drain_retry_delay': 1, 'drain_reboot_marker': str(tmp_path / 'rebooted')}
    args.update(extra)
    return playbook(tmp_path, os.path.join(HERE, 'drain.yml'), 'localhost,', args, env)


def evictions(cluster):
    """(namespace/pod, HTTP status) of every eviction the automation asked for, in order, refused ones included."""
    return [('%s/%s' % (e['objectRef']['namespace'], e['objectRef']['name']), e['responseStatus']['code'])
            for e in cluster.attempts() if e['objectRef'].get('subresource') == 'eviction']


def pods_on(cluster, node):
    return sorted(p['metadata']['name'] for p in
                  cluster.server.request('GET', '/api/v1/pods?fieldSelector=spec.nodeName=' + node)['items'])


def test_drain_cordons_and_evicts_all_but_daemonset_pods(tmp_path, kube):
    cluster = kube(fleet())
    cluster.controller('kubelet', kubelet)
    rc, log = drain(tmp_path, cluster)
    assert rc == 0, log
    assert cluster.get('v1', 'Node', NODE)['spec']['unschedulable'] is True
    assert pods_on(cluster, NODE) == ['nvidia-sandbox-device-plugin-x1']
    assert pods_on(cluster, 'worker-1') == ['web-7d4b9-q9z8']
    writes = write_summary(cluster.attempts())
    assert writes == ['patch nodes -/gpu-1', 'create pods apps/web-7d4b9-x2k1'], writes
    # one eviction, allowed at once (policy/v1beta1 Eviction: 201 Created), so no retry
    assert evictions(cluster) == [(EVICTED, 201)], evictions(cluster)
    assert rebooted(tmp_path), log


def test_a_budget_that_refuses_is_retried_until_it_allows(tmp_path, kube):
    cluster = kube(fleet() + [pdb(allowed=0)])
    cluster.controller('kubelet', kubelet)

    def disruption_controller(cluster):
        # the budget allows one disruption (another replica became ready elsewhere), but only once the API server
        # has refused the drain's first eviction with 429 (the audit log shows it), so a retry must follow
        if (EVICTED, 429) not in evictions(cluster):
            return False
        budget = cluster.get('policy/v1beta1', 'PodDisruptionBudget', 'web', 'apps')
        cluster.set_status(budget, dict(budget['status'], disruptionsAllowed=1))
        return True
    cluster.controller('disruption-controller', disruption_controller)
    rc, log = drain(tmp_path, cluster)
    assert rc == 0, log
    # refused while the budget allowed nothing (429 Too Many Requests, k8s.io/kubernetes v1.20
    # pkg/registry/core/pod/storage/eviction.go: checkAndDecrement), asked again, then allowed (201)
    asked = evictions(cluster)
    assert len(asked) >= 2 and asked[0] == (EVICTED, 429) and asked[-1] == (EVICTED, 201), asked
    assert 'RETRYING: [localhost]: Cordon and drain (an eviction a PodDisruptionBudget refuses is retried), node gpu-1' in log, log
    assert pods_on(cluster, NODE) == ['nvidia-sandbox-device-plugin-x1']
    assert rebooted(tmp_path), log


def test_a_drain_that_does_not_finish_stops_the_host_cordoned(tmp_path, kube):
    cluster = kube(fleet() + [pdb(allowed=0)])
    rc, log = drain(tmp_path, cluster, reboot_drain_timeout=3)
    assert rc != 0, log
    assert not rebooted(tmp_path), log
    assert 'localhost was NOT rebooted: node gpu-1 could not be drained within 3 s (reboot_drain_timeout)' in log, log
    assert 'disruption budget' in log, log
    # the refused eviction was asked for again every reboot_drain_retry_delay (1 s): one attempt and
    # ceil(3 / 1) retries, each refused by the budget
    assert evictions(cluster) == [(EVICTED, 429)] * 4, evictions(cluster)
    assert cluster.get('v1', 'Node', NODE)['spec']['unschedulable'] is True
    assert 'web-7d4b9-x2k1' in pods_on(cluster, NODE)


def test_a_pod_that_never_leaves_stops_the_host(tmp_path, kube):
    # evicted, but no kubelet ever removes it: the drain times out; the host must not reboot under it
    cluster = kube(fleet())
    rc, log = drain(tmp_path, cluster, reboot_drain_timeout=3)
    assert rc != 0, log
    assert not rebooted(tmp_path), log
    assert ('localhost was NOT rebooted: after 3 s (reboot_drain_timeout) node gpu-1 still runs '
            'apps/web-7d4b9-x2k1') in log, log
    assert evictions(cluster) == [(EVICTED, 201)], evictions(cluster)
    assert 'web-7d4b9-x2k1' in pods_on(cluster, NODE)


def test_no_cluster_credentials_at_all_stops_the_host(tmp_path, kube, monkeypatch):
    cluster = kube(fleet())
    # the test process itself holds working credentials for this cluster (as a CI runner or an admin's shell may):
    # the run must not see them, so this asserts what the run finds with none at all
    monkeypatch.setenv('KUBECONFIG', cluster.kubeconfig)
    monkeypatch.setenv('K8S_AUTH_KUBECONFIG', cluster.kubeconfig)
    rc, log = drain(tmp_path, cluster, gpuvirt_kubeconfig='')
    assert not (tmp_path / '.kube').exists()
    # the message says what happened: no credentials, so the drain stopped after its first attempt
    assert rc != 0 and 'because no cluster credentials were found; the drain stopped after its first attempt' in log
    assert 'reboot_drain: false' in log, log
    assert not rebooted(tmp_path), log
    # not one request reached the server as the automation identity
    assert cluster.requests() == [], write_summary(cluster.requests())


def test_no_cluster_credentials_stop_at_once_without_retrying(tmp_path, kube):
    # nothing to retry for: without any credentials every attempt fails the same way, so the drain's until loop
    # (reboot_drain_timeout / reboot_drain_retry_delay attempts; 60 x 10 s by default) must not run
    cluster = kube(fleet())
    rc, log = drain(tmp_path, cluster, gpuvirt_kubeconfig='')
    assert rc != 0 and 'no cluster credentials were found; the drain stopped after its first attempt' in log, log
    assert 'RETRYING' not in log and 'within ' not in log.split('was NOT rebooted', 1)[1].split('\n', 1)[0], log
    assert not rebooted(tmp_path), log
    assert cluster.attempts() == []


def test_awx_bearer_token_from_the_environment_drains_before_reboot(tmp_path, kube):
    # The AWX path: no kubeconfig at all, the "OpenShift or Kubernetes API Bearer Token" credential sets
    # K8S_AUTH_HOST, K8S_AUTH_API_KEY and K8S_AUTH_SSL_CA_CERT (kubernetes.core reads these as host, api_key and
    # ca_cert when the task leaves them unset; kubernetes.core docs, k8s_drain module, "K8S_AUTH_*" environment).
    cluster = kube(fleet())
    cluster.controller('kubelet', kubelet)
    server = cluster.server
    rc, log = drain(tmp_path, cluster, gpuvirt_kubeconfig='',
                    env={'K8S_AUTH_HOST': server.url, 'K8S_AUTH_API_KEY': server.tokens['automation'],
                         'K8S_AUTH_SSL_CA_CERT': server.ca})
    assert not (tmp_path / '.kube').exists()
    assert rc == 0, log
    assert cluster.get('v1', 'Node', NODE)['spec']['unschedulable'] is True
    assert pods_on(cluster, NODE) == ['nvidia-sandbox-device-plugin-x1']
    # done as the automation identity the token belongs to
    writes = write_summary(cluster.attempts())
    assert writes == ['patch nodes -/gpu-1', 'create pods apps/web-7d4b9-x2k1'], writes
    assert rebooted(tmp_path), log


# --- the rolling run --------------------------------------------------------------------------------------------

ROLLING_INVENTORY = """
all:
  vars:
    ansible_connection: local
    # the play becomes root on a real host; here both hosts are this machine and nothing needs root
    ansible_become: false
  children:
    gpu_container:
      hosts:
        gpu-1: {}
        gpu-2: {}
"""


def test_a_failed_drain_stops_the_rolling_run_before_the_next_host(tmp_path, kube):
    # playbooks/host_prep.yml itself over two hosts, one at a time (host_prep_serial 1, host_prep_max_fail_percentage
    # 0: its defaults). Both are this machine through the local connection, in the container pool, so the kernel
    # argument, vfio and nouveau roles have nothing to do and the one change left is the reboot for the pending
    # reason given. Each node runs a pod whose PodDisruptionBudget never allows a disruption (no disruption
    # controller runs), so no drain can finish: even a broken rolling rule could not reach a reboot.
    cluster = kube([{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1'}},
                    {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-2'}},
                    pod('web-7d4b9-a1', 'apps', 'gpu-1', RS, {'app': 'web'}),
                    pod('web-7d4b9-b2', 'apps', 'gpu-2', RS, {'app': 'web'}), pdb(allowed=0)])
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(ROLLING_INVENTORY)
    # host_prep_plan false: every host is rolled (the pending reason given here is no host state the plan reads, so
    # the plan would leave both hosts alone); the plan play still looks at both, read-only, before the roll
    rc, log = playbook(tmp_path, os.path.join(ROOT, 'playbooks', 'host_prep.yml'), str(inventory), {
        'gpuvirt_kubeconfig': cluster.kubeconfig, 'reboot_pending_reasons': ['test: a kernel change is pending'],
        'reboot_drain_timeout': 2, 'reboot_drain_retry_delay': 1, 'host_prep_plan': False})
    assert rc != 0, log
    # the first host was cordoned and its drain tried until its timeout
    assert cluster.get('v1', 'Node', 'gpu-1')['spec']['unschedulable'] is True
    assert ('apps/web-7d4b9-a1', 429) in evictions(cluster), evictions(cluster)
    # the second host was never started: no task of the rolling play ran on it, and not one request about its node
    # or its pod
    assert '[gpu-2]' not in log.split('PLAY [Prepare GPU hosts (kernel args, nouveau, vfio, one reboot)]', 1)[1], log
    about = [e for e in cluster.requests() if 'gpu-2' in e['requestURI']
             or e.get('objectRef', {}).get('name') in ('gpu-2', 'web-7d4b9-b2')]
    assert about == [], write_summary(about)
    assert not cluster.get('v1', 'Node', 'gpu-2')['spec'].get('unschedulable')
    # the message says the run stopped, why, and what to change for another behaviour
    said = ' '.join(log.split())
    assert 'gpu-1 was NOT rebooted: node gpu-1 could not be drained within 2 s (reboot_drain_timeout)' in said, log
    assert ('The rolling run stops here: host_prep stops at the first host that fails '
            '(host_prep_max_fail_percentage 0, the default)') in said, log
    assert 'the hosts after gpu-1 are left as they are' in said, log
    assert 'host_prep_serial' in said.split('The rolling run stops here', 1)[1], log


def _container_host_leaving_passthrough(tmp_path):
    """A host moved from the passthrough pool to the container pool: our GRUB drop-in with the IOMMU arguments and
    our vfio modprobe file on it, both to be taken back. Returns (inventory, {path: bytes before})."""
    from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline, modprobe
    etc = tmp_path / 'etc'
    (etc / 'default' / 'grub.d').mkdir(parents=True)
    (etc / 'modprobe.d').mkdir()
    (etc / 'default' / 'grub').write_text('GRUB_CMDLINE_LINUX="quiet"\n')
    dropin = etc / 'default' / 'grub.d' / '90-gpuvirt-kernel-args.cfg'
    dropin.write_text(kernel_cmdline.render_grub_dropin(['intel_iommu=on', 'iommu=pt'], []))
    vfio = etc / 'modprobe.d' / 'gpuvirt-vfio.conf'
    vfio.write_text('# %s\noptions vfio-pci ids=10de:2236\n' % modprobe.VFIO_HEADER)
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'all': {
        'vars': {'ansible_connection': 'local', 'ansible_become': False},
        'children': {'gpu_container': {'hosts': {'gpu-1': {
            'kernel_args_backend': 'grub_dropin', 'kernel_args_update_bootloader': False,
            'kernel_args_dropin_path': str(dropin), 'kernel_args_grub_default_path': str(etc / 'default' / 'grub'),
            'kernel_args_record_path': str(tmp_path / 'gpuvirt-provision' / 'host-state.json'),
            'vfio_modprobe_path': str(vfio), 'vfio_modules_load_path': str(etc / 'modules-load.d' / 'gpuvirt-vfio.conf'),
            'vfio_dracut_path': str(etc / 'dracut.conf.d' / 'gpuvirt-vfio.conf'),
            'vfio_initramfs_modules_path': str(etc / 'initramfs-tools' / 'modules'),
            'nouveau_initramfs_dir': str(tmp_path / 'boot'), 'reboot_allowed': False}}}}}}))
    return inventory, {p: p.read_bytes() for p in (dropin, vfio)}


def _gpu_vmi(node):
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachineInstance',
            'metadata': {'name': 'guest-0', 'namespace': 'gpu-vms'},
            'spec': {'domain': {'devices': {'hostDevices': [{'name': 'gpu0', 'deviceName': 'nvidia.com/GA102GL_A10'}]}}},
            'status': {'nodeName': node, 'phase': 'Running'}}


def test_a_pool_change_with_a_vm_on_the_node_is_refused_before_the_first_change(tmp_path, kube):
    # playbooks/host_prep.yml on a host that left the passthrough pool for the container pool: its plan takes back
    # the IOMMU kernel arguments the collection added (our GRUB drop-in, deleted) and the vfio binding file. A VMI runs
    # on its node, so the rolling play refuses before its first change, naming the VMI: the kernel arguments are taken
    # back before the vfio role's own VMI check, so a refusal there alone came after the drop-in was deleted.
    cluster = kube([{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1'}},
                    {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu-vms'}}, _gpu_vmi('gpu-1')])
    inventory, before = _container_host_leaving_passthrough(tmp_path)
    dropin, vfio = sorted(before, key=lambda p: 'modprobe' in str(p))
    rc, log = playbook(tmp_path, os.path.join(ROOT, 'playbooks', 'host_prep.yml'), str(inventory), {
        'gpuvirt_kubeconfig': cluster.kubeconfig, 'gpuvirt_platform': 'kubernetes'})
    assert rc != 0, log
    said = ' '.join(log.split())
    assert 'its node gpu-1 runs the VirtualMachineInstances gpu-vms/guest-0' in said, log
    assert 'host_prep_stop_vms: true' in said and 'Nothing was changed' in said, log
    # the plan's take-backs are named, and nothing was changed: both files as they were, the node not cordoned
    assert 'kernel_args remove ' + str(dropin) in said and 'vfio_absent remove ' + str(vfio) in said, log
    assert {p: p.read_bytes() for p in before} == before
    assert not cluster.get('v1', 'Node', 'gpu-1')['spec'].get('unschedulable')
    assert cluster.writes() == [], write_summary(cluster.writes())


def test_the_vm_gate_refuses_a_node_name_the_cluster_does_not_have(tmp_path, kube):
    # The host is gpu-1 in the inventory, its Node gpu-1.example.com (no gpuvirt_node_name given), and a GPU VM runs
    # there. Matched by the wrong name, no VMI is on "gpu-1" and the gate would pass while the VM loses its GPU at
    # the next boot; the gate reads the Node first and refuses, naming the fix, before any change.
    cluster = kube([{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1.example.com'}},
                    {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu-vms'}},
                    _gpu_vmi('gpu-1.example.com')])
    inventory, before = _container_host_leaving_passthrough(tmp_path)
    rc, log = playbook(tmp_path, os.path.join(ROOT, 'playbooks', 'host_prep.yml'), str(inventory), {
        'gpuvirt_kubeconfig': cluster.kubeconfig, 'gpuvirt_platform': 'kubernetes'})
    assert rc != 0, log
    said = ' '.join(log.split())
    assert 'but the cluster has no node gpu-1, so the VMs that would lose these GPUs cannot be told' in said, log
    assert 'Set gpuvirt_node_name' in said and 'Nothing was changed' in said, log
    assert {p: p.read_bytes() for p in before} == before
    assert cluster.writes() == [], write_summary(cluster.writes())
