# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/upgrade.yml against a real kube-apiserver: two GPU nodes, a GPU VM on each, the vGPU Manager DaemonSet
given a new revision (what the GPU Operator does when vgpuManager.version changes), rolled node by node.

The API server decides every read and write (RBAC included: the automation identity holds its shipped file plus
docs/rbac/gpuvirt-automation-upgrade.yml, nothing else). What no server runs here, the test plays through the API,
each stand-in named after the controller it stands in for:

* the DaemonSet controller with ``updateStrategy: OnDelete`` (kubernetes pkg/controller/daemon): a node whose pod
  of a DaemonSet is gone gets a new pod labelled with the newest ControllerRevision's hash; a pod is never replaced
  while it exists (OnDelete), so nothing but the playbook's delete changes a node; status.observedGeneration
  follows metadata.generation;
* the kubelet: a pod marked for deletion is removed; a new pod turns Ready a moment later (or never, to fail);
* the vGPU device plugin: a node advertises its vGPU resources only while a Ready vGPU Manager pod runs there;
* KubeVirt's VM controller: a VM whose runStrategy is Halted (or running false) loses its VMI and its virt-launcher
  pod; an ``Always`` VM without a VMI gets one again on its node once the node is schedulable (the scheduler's
  part), with its launcher pod (labelled as kubevirt pkg/virt-controller/services/template.go podLabels labels it);
  a ``Manual`` VM is left as it is, a finished VMI included (pkg/virt-controller/watch/vm/vm.go);
* on a vendor-specific VFIO node, the driver and KubeVirt's own device plugin: the vGPU Manager pod's removal resets
  the VFs' profiles in the host stand-in's sysfs tree (tests/unit/vf_driver.py VfBoard, the vgpu_vf tests' host), and
  the node advertises as many VFs as have a profile; the hosts are reached by a local connection, so the vgpu_vf
  role the roll runs there writes that tree;
* virt-operator: the KubeVirt CR's status.observedKubeVirtVersion, set to the new version once the user's KubeVirt
  update is done.

What these cannot prove (docs/testing.md): that the real operator renders a new DaemonSet revision for a version
change, that the real k8s-driver-manager unloads the driver once the VMs are gone, that the guest survives, or that a
real kubelet's device plugin re-advertises the same counts.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402
from kube_cluster import write_summary  # noqa: E402

NS = 'gpu-operator'
# OpenShift's namespace of the GPU Operator (OLM), as the gpu_operator role installs it
OLM_NS = 'nvidia-gpu-operator'
VGM = 'nvidia-vgpu-manager-daemonset'
VALIDATOR = 'nvidia-sandbox-validator'
RES = 'nvidia.com/NVIDIA_A10-12Q'
# an L40S's VFs as KubeVirt's own device plugin advertises them, under the permitted PCI entry's resource name
VF_RES = 'nvidia.com/AD102GL_L40S'
NODES = ('gpu-1', 'gpu-2')


def node(name):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name},
            'status': {'conditions': [{'type': 'Ready', 'status': 'True'}],
                       'allocatable': {'cpu': '8', RES: '2'}, 'capacity': {'cpu': '8', RES: '2'}}}


# the labels nodes.yml gives a vm-vgpu-vf node (docs/pools/vendor-vfio.md, "Node labels"; model/fleet.py operands_off)
VF_LABELS = {'nvidia.com/gpu.workload.config': 'vm-vgpu', 'nvidia.com/gpu.deploy.sandbox-device-plugin': 'false',
             'nvidia.com/gpu.deploy.vgpu-device-manager': 'false', 'nvidia.com/gpu.deploy.sandbox-validator': 'false'}


def profiles(board):
    """The VFs' nvidia/current_vgpu_type as the host's files hold them (what the role wrote, or the driver reset)."""
    out = {}
    for vf in [v for vfs in board.vfs.values() for v in vfs]:
        with open(os.path.join(board.root, 'bus/pci/devices', vf, 'nvidia/current_vgpu_type'), encoding='utf-8') as f:
            out[vf] = f.read().strip()
    return out


def vfs_with_profile(board):
    return sum(1 for value in profiles(board).values() if value not in ('0', ''))


def daemonset(name, ns=NS):
    labels = {'app': name}
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': name, 'namespace': ns},
            'spec': {'selector': {'matchLabels': labels}, 'updateStrategy': {'type': 'OnDelete'},
                     'template': {'metadata': {'labels': labels},
                                  'spec': {'containers': [{'name': 'c', 'image': 'nvcr.io/nvidia/x:1'}]}}}}


def revision(ds, number, hash_):
    return {'apiVersion': 'apps/v1', 'kind': 'ControllerRevision',
            'metadata': {'name': '%s-%s' % (ds['metadata']['name'], hash_), 'namespace': ds['metadata']['namespace'],
                         'labels': {'controller-revision-hash': hash_},
                         'ownerReferences': [{'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'controller': True,
                                              'name': ds['metadata']['name'], 'uid': ds['metadata']['uid']}]},
            'data': {'spec': {}}, 'revision': number}


def pod(ds, node_name, hash_, ready=True, suffix='a'):
    name = ds['metadata']['name']
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': '%s-%s-%s' % (name, node_name, suffix), 'namespace': ds['metadata']['namespace'],
                         'labels': {'app': name, 'controller-revision-hash': hash_},
                         'ownerReferences': [{'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'controller': True,
                                              'name': name, 'uid': ds['metadata']['uid']}]},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'c', 'image': 'nvcr.io/nvidia/x:%s' % hash_}]},
            'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}]}}


def vm(name, node_name, strategy='Always'):
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
            'metadata': {'name': name, 'namespace': 'vms'},
            'spec': {'runStrategy': strategy,
                     'template': {'spec': {'nodeSelector': {'kubernetes.io/hostname': node_name},
                                           'domain': {'devices': {'gpus': [{'name': 'g1', 'deviceName': RES}]}}}}}}


def vmi(vm_obj, node_name, phase='Running'):
    meta = vm_obj['metadata']
    # a VMI in Scheduling has no status.nodeName yet: virt-controller writes it once its launcher pod runs
    status = {'nodeName': node_name, 'phase': phase} if phase != 'Scheduling' else {'phase': phase}
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachineInstance',
            'metadata': {'name': meta['name'], 'namespace': meta['namespace'],
                         'ownerReferences': [{'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
                                              'controller': True, 'name': meta['name'], 'uid': vm_obj['metadata']['uid']}]},
            'spec': {'domain': {'devices': {'gpus': [{'name': 'g1', 'deviceName': RES}]}}},
            'status': status}


def launcher(vmi_obj, node_name):
    """The VMI's virt-launcher pod, bound to ``node_name``, as virt-controller renders it (kubevirt
    pkg/virt-controller/services/template.go: labels kubevirt.io=virt-launcher and kubevirt.io/created-by=<VMI uid>,
    the VMI its controller owner, the GPU's deviceName among the compute container's resources)."""
    meta = vmi_obj['metadata']
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': 'virt-launcher-%s' % meta['name'], 'namespace': meta['namespace'],
                         'labels': {'kubevirt.io': 'virt-launcher', 'kubevirt.io/created-by': meta['uid']},
                         'ownerReferences': [{'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachineInstance',
                                              'controller': True, 'name': meta['name'], 'uid': meta['uid']}]},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'compute', 'image': 'quay.io/kubevirt/virt-launcher',
                                                            'resources': {'limits': {RES: '1'}}}]},
            'status': {'phase': 'Running'}}


def start_vmi(cluster, vm_obj, node_name, phase='Running'):
    made = cluster.create(vmi(vm_obj, node_name, phase))
    cluster.create(launcher(made, node_name))
    return made


def launchers(cluster):
    return items(cluster, '/api/v1/namespaces/vms/pods')


def ready(p):
    # a pod just created has no conditions until its status is written (the API server defaults phase Pending only)
    return any(c.get('type') == 'Ready' and c.get('status') == 'True' for c in p.get('status', {}).get('conditions') or [])


def items(cluster, path):
    return cluster.server.request('GET', path)['items']


def delete(cluster, path):
    cluster.server.request('DELETE', path, {'kind': 'DeleteOptions', 'apiVersion': 'v1', 'gracePeriodSeconds': 0},
                           ok=(200, 202, 404))


def setup(kube, never_ready_on=None, openshift=False, objects=(), new_revision=None, boards=None, strategies=None):
    """Two nodes; the vGPU Manager DaemonSet with an old and a new revision, the validator with one; every pod on
    the old vGPU Manager revision; a GPU VM (runStrategy Always) running on each node. Starts the stand-ins.

    ``openshift``: the operator's namespace is OpenShift's (OLM) and the vGPU Manager has only its old revision:
    the new one comes from the new operator release (``cluster.new_release()``, what the upgraded operator does when
    it reconciles the ClusterPolicy with its new templates). ``new_revision`` False does the same on Kubernetes (the
    new revision comes with a Helm upgrade of the operator).

    ``boards``: ``{node: VfBoard}``, the nodes on NVIDIA's vendor-specific VFIO interface (labelled as nodes.yml
    labels a vm-vgpu-vf node), each host's sysfs the driver stand-in's tree (tests/unit/vf_driver.py). There the
    kubelet stand-in's removal of the vGPU Manager pod is a driver reload: the VFs come back without a profile (the
    container's exit trap disables the VFs and unloads the driver; the new one enables them with none, as
    docs/pools/vendor-vfio.md says), and the device plugin stand-in is KubeVirt's own, advertising a VF only while its
    nvidia/current_vgpu_type is set (kubevirt v1.9.0 pkg/virt-handler/device-manager HasVGPUProfile).

    ``strategies``: ``{node: runStrategy}`` of the VM on that node (default Always)."""
    ns = OLM_NS if openshift else NS
    new_revision = not openshift if new_revision is None else new_revision
    boards = boards or {}
    nodes = [node(n) for n in NODES]
    for obj in nodes:
        if obj['metadata']['name'] in boards:
            obj['metadata']['labels'] = dict(VF_LABELS)
            obj['status']['allocatable'] = obj['status']['capacity'] = {'cpu': '8', VF_RES: '2'}
    cluster = kube(nodes + list(objects), openshift=openshift)
    cluster.server.grant_upgrade()
    vgm, validator = cluster.create(daemonset(VGM, ns)), cluster.create(daemonset(VALIDATOR, ns))
    cluster.create(revision(vgm, 1, 'old'))
    if new_revision:
        cluster.create(revision(vgm, 2, 'new'))
    cluster.create(revision(validator, 1, 'v1'))
    for n in NODES:
        cluster.create(pod(vgm, n, 'old'))
        cluster.create(pod(validator, n, 'v1'))
        made = cluster.create(vm('vm-' + n, n, (strategies or {}).get(n, 'Always')))
        start_vmi(cluster, made, n)
    time.sleep(0.3)
    cluster.mark = cluster.now()
    newest = {VGM: (vgm, 'new' if new_revision else 'old'), VALIDATOR: (validator, 'v1')}
    made_pods = {'n': 0}

    def new_release():
        # the operator writes the new template (the DaemonSet's generation moves), the DaemonSet controller its
        # ControllerRevision
        containers = [{'name': 'c', 'image': 'nvcr.io/nvidia/x:2'}]
        cluster.patch(vgm, {'spec': {'template': {'spec': {'containers': containers}}}})
        cluster.create(revision(vgm, 2, 'new'))
        newest[VGM] = (vgm, 'new')
    cluster.new_release = new_release
    cluster.ns = ns

    def daemonset_controller(c):
        for ds_name, (ds, hash_) in newest.items():
            for n in NODES:
                mine = [p for p in items(c, '/api/v1/namespaces/%s/pods' % ns)
                        if p['spec']['nodeName'] == n and p['metadata']['labels'].get('app') == ds_name]
                if mine:
                    continue
                made_pods['n'] += 1
                fresh = pod(ds, n, hash_, ready=False, suffix='r%d' % made_pods['n'])
                c.create(fresh)
        for ds in items(c, '/apis/apps/v1/namespaces/%s/daemonsets' % ns):
            if ds.get('status', {}).get('observedGeneration') != ds['metadata']['generation']:
                c.set_status(dict(ds, apiVersion='apps/v1', kind='DaemonSet'),
                             dict(ds.get('status') or {}, observedGeneration=ds['metadata']['generation']))
        return False

    def kubelet(c):
        for p in items(c, '/api/v1/namespaces/%s/pods' % ns):
            meta = p['metadata']
            if meta.get('deletionTimestamp'):
                board = boards.get(p['spec']['nodeName'])
                if board is not None and meta['labels'].get('app') == VGM:
                    for vf in [v for vfs in board.vfs.values() for v in vfs]:
                        board.set(vf, 0)
                delete(c, '/api/v1/namespaces/%s/pods/%s' % (ns, meta['name']))
            elif not ready(p) and p['spec']['nodeName'] != never_ready_on:
                c.set_status(dict(p, apiVersion='v1', kind='Pod'),
                             dict(p['status'], conditions=[{'type': 'Ready', 'status': 'True'}]))
        return False

    def device_plugin(c):
        pods = items(c, '/api/v1/namespaces/%s/pods' % ns)
        for n in NODES:
            serving = any(p['spec']['nodeName'] == n and p['metadata']['labels'].get('app') == VGM
                          and not p['metadata'].get('deletionTimestamp')
                          and ready(p) for p in pods)
            obj = c.get('v1', 'Node', n)
            want, res = '2' if serving else '0', RES
            if n in boards:
                want, res = str(vfs_with_profile(boards[n]) if serving else 0), VF_RES
            if obj['status']['allocatable'].get(res) != want:
                status = dict(obj['status'])
                status['allocatable'] = dict(status['allocatable'], **{res: want})
                c.set_status(obj, status)
        return False

    def vm_controller(c):
        for v in items(c, '/apis/kubevirt.io/v1/namespaces/vms/virtualmachines'):
            name, strategy = v['metadata']['name'], v['spec'].get('runStrategy')
            target = v['spec']['template']['spec']['nodeSelector']['kubernetes.io/hostname']
            running = c.get('kubevirt.io/v1', 'VirtualMachineInstance', name, 'vms')
            if not running and c.get('v1', 'Node', target) is None:
                continue
            if strategy == 'Halted' and running:
                delete(c, '/apis/kubevirt.io/v1/namespaces/vms/virtualmachineinstances/' + name)
            elif strategy == 'Always' and not running and not c.get('v1', 'Node', target)['spec'].get('unschedulable'):
                start_vmi(c, v, target)
        # a launcher pod whose VMI is gone goes too (the garbage collector, the VMI its owner; the kubelet ends it)
        alive = set(x['metadata']['uid'] for x in items(c, '/apis/kubevirt.io/v1/namespaces/vms/virtualmachineinstances'))
        for p in launchers(c):
            if p['metadata']['labels'].get('kubevirt.io/created-by') not in alive:
                delete(c, '/api/v1/namespaces/vms/pods/' + p['metadata']['name'])
        return False

    def tolerant(step):
        # a write raced by another writer (409) or an object deleted meanwhile (404) is retried on the next pass,
        # as a controller's requeue does
        def run(c):
            try:
                return step(c)
            except apiserver.APIError as exc:
                if exc.status in (404, 409):
                    return False
                raise
        return run

    for name, step in (('daemonset-controller', daemonset_controller), ('kubelet', kubelet),
                       ('device-plugin', device_plugin), ('virt-controller', vm_controller)):
        cluster.controller(name, tolerant(step), interval=0.2)
    return cluster


def upgrade(tmp_path, cluster, *args, inventory='localhost,', **extra):
    cache = tmp_path / 'tmp'
    cache.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG'}
    env.update(HOME=str(tmp_path), TMPDIR=str(cache))
    extra_vars = dict({'gpuvirt_kubeconfig': cluster.kubeconfig, 'upgrade_nodes': list(NODES),
                       'upgrade_poll_delay': 1, 'upgrade_node_timeout': 20, 'upgrade_vm_wait_timeout': 20},
                      **extra)
    extra_vars['ansible_python_interpreter'] = sys.executable
    cmd = ['ansible-playbook', '-i', inventory, os.path.join(ROOT, 'playbooks', 'upgrade.yml'),
           '-e', json.dumps(extra_vars)] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def hashes(cluster, node_name):
    return sorted(p['metadata']['labels']['controller-revision-hash'] for p in
                  items(cluster, '/api/v1/namespaces/%s/pods' % cluster.ns) if p['spec']['nodeName'] == node_name
                  and p['metadata']['labels'].get('app') == VGM and not p['metadata'].get('deletionTimestamp'))


def node_writes(cluster):
    """The automation's successful writes, cordon / VM / pod, in order (node patches, VM patches, pod deletes)."""
    return [w for w in write_summary(cluster.writes()) if not w.startswith('create ')]


def late_vm(cluster):
    """A GPU VM started on gpu-1 after gpu-1's batch has read the cluster and before its cordon: created, by a user,
    once the automation has listed the VMIs twice (the run's plan, then the batch's own read) and before its third
    list (the batch's read after the cordon). Its VMI is in Scheduling (no status.nodeName yet) with its virt-launcher
    pod already bound to gpu-1: a cordon does not move a bound pod. Returns what it saw."""
    seen = {'created': False}

    def user(c):
        lists = [e for e in c.requests() if e['verb'] == 'list'
                 and e.get('objectRef', {}).get('resource') == 'virtualmachineinstances']
        if len(lists) == 2:
            made = c.create(vm('vm-late', 'gpu-1'))
            start_vmi(c, made, 'gpu-1', phase='Scheduling')
            seen['created'] = True
            return True
        return len(lists) > 2
    cluster.controller('late-vm-user', user, interval=0.1)
    return seen


def test_stop_policy_rolls_node_by_node_and_starts_the_vms_again_then_a_rerun_is_a_no_op(tmp_path, kube):
    cluster = setup(kube)
    seen = late_vm(cluster)
    rc, log = upgrade(tmp_path, cluster, upgrade_vm_policy='stop')
    assert rc == 0, log
    assert seen['created'], 'the late VM was not created between the batch read and the cordon'
    writes = node_writes(cluster)
    # gpu-1 done (cordon, VM halted, pods replaced, uncordon, VM restored) before gpu-2 is touched
    first_gpu2 = min(i for i, w in enumerate(writes) if 'gpu-2' in w)
    assert all('gpu-2' not in w for w in writes[:first_gpu2])
    gpu1 = writes[:first_gpu2]
    assert gpu1[0] == 'patch nodes -/gpu-1', writes
    assert gpu1.index('patch virtualmachines vms/vm-gpu-1') < gpu1.index('delete pods gpu-operator/%s-gpu-1-a' % VGM)
    # the VM that landed on gpu-1 after the batch's first read: planned after the cordon, stopped by its policy (the
    # VM's node recorded for its restore) before gpu-1's operand pods went, and started again after
    assert gpu1.index('patch nodes -/gpu-1') < gpu1.index('patch virtualmachines vms/vm-late') < gpu1.index(
        'delete pods gpu-operator/%s-gpu-1-a' % VGM), writes
    stopped_on = sorted((b.get('metadata') or {}).get('annotations', {}).get('gpuvirt.provision/upgrade-stopped-node')
                        or '' for b in cluster.sent('virtualmachines') if b.get('spec') == {'runStrategy': 'Halted'})
    assert stopped_on == ['gpu-1', 'gpu-1', 'gpu-2'], cluster.sent('virtualmachines')
    assert cluster.get('kubevirt.io/v1', 'VirtualMachine', 'vm-late', 'vms')['spec']['runStrategy'] == 'Always'
    assert 'delete pods gpu-operator/%s-gpu-1-a' % VALIDATOR in gpu1, writes
    for n in NODES:
        assert hashes(cluster, n) == ['new'], (n, log)
        obj = cluster.get('v1', 'Node', n)
        assert not obj['spec'].get('unschedulable') and 'gpuvirt.provision/upgrade-cordoned' not in (
            obj['metadata'].get('annotations') or {})
        machine = cluster.get('kubevirt.io/v1', 'VirtualMachine', 'vm-' + n, 'vms')
        assert machine['spec']['runStrategy'] == 'Always'
        assert 'gpuvirt.provision/upgrade-stopped-run-strategy' not in (machine['metadata'].get('annotations') or {})
    # the VMs come back (the stand-in VM controller starts them once the node is schedulable)
    deadline = time.time() + 10
    while time.time() < deadline and not all(cluster.get('kubevirt.io/v1', 'VirtualMachineInstance', 'vm-' + n, 'vms')
                                             for n in NODES):
        time.sleep(0.2)
    assert all(cluster.get('kubevirt.io/v1', 'VirtualMachineInstance', 'vm-' + n, 'vms') for n in NODES)
    assert 'VM vms/vm-gpu-1: stop (runStrategy Halted), start again after (runStrategy Always)' in log, log

    mark = cluster.now()
    rc, log = upgrade(tmp_path, cluster, upgrade_vm_policy='stop')
    assert rc == 0, log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    assert 'node gpu-1: nothing to replace' in log, log


def test_wait_policy_waits_for_the_owner_to_stop_the_vm_or_the_guest_to_power_off(tmp_path, kube):
    # gpu-2's VM runs under Manual: when its guest powers itself off, KubeVirt leaves the finished VMI in place
    # (kubevirt pkg/virt-controller/watch/vm/vm.go, RunStrategyManual: nothing is done without a stop request)
    cluster = setup(kube, strategies={'gpu-2': 'Manual'})

    def owner(c):
        # once its node is cordoned, gpu-1's VM owner stops it (what the wait policy waits for), and gpu-2's guest
        # powers off: its VMI Succeeded, its launcher pod ended (the kubelet)
        if c.get('v1', 'Node', 'gpu-1')['spec'].get('unschedulable'):
            c.patch(c.get('kubevirt.io/v1', 'VirtualMachine', 'vm-gpu-1', 'vms'), {'spec': {'runStrategy': 'Halted'}})
        if c.get('v1', 'Node', 'gpu-2')['spec'].get('unschedulable'):
            done = c.get('kubevirt.io/v1', 'VirtualMachineInstance', 'vm-gpu-2', 'vms')
            if done['status'].get('phase') != 'Succeeded':
                c.set_status(done, dict(done['status'], phase='Succeeded'))
            for p in launchers(c):
                if p['metadata']['name'] == 'virt-launcher-vm-gpu-2' and p['status'].get('phase') != 'Succeeded':
                    c.set_status(dict(p, apiVersion='v1', kind='Pod'), dict(p['status'], phase='Succeeded'))
        return False
    cluster.controller('vm-owner', owner, interval=0.5)
    rc, log = upgrade(tmp_path, cluster, upgrade_vm_policy='wait')
    assert rc == 0, log
    assert [n for n in NODES if hashes(cluster, n) != ['new']] == []
    # the upgrade wrote no VM: the owner stopped one, the other's guest powered off, and they stay so
    assert not [w for w in node_writes(cluster) if 'virtualmachines' in w]
    # the wait ran for each batch, and the VMs stay as the owner left them
    waits = log.split("Wait until no GPU VM runs on the batch's nodes (policies wait and stop)")[1:]
    assert len(waits) == 2, log
    assert cluster.get('kubevirt.io/v1', 'VirtualMachine', 'vm-gpu-1', 'vms')['spec']['runStrategy'] == 'Halted'
    assert cluster.get('kubevirt.io/v1', 'VirtualMachineInstance', 'vm-gpu-2', 'vms')['status']['phase'] == 'Succeeded'


def test_refuse_policy_changes_nothing_and_names_the_vms(tmp_path, kube):
    cluster = setup(kube)
    rc, log = upgrade(tmp_path, cluster, upgrade_vm_policy='refuse')
    assert rc != 0
    assert 'node gpu-1 runs the GPU VM vms/vm-gpu-1 (policy refuse' in log, log
    assert 'vms/vm-gpu-2' in log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_check_mode_prints_the_plan_and_writes_nothing(tmp_path, kube):
    cluster = setup(kube)
    rc, log = upgrade(tmp_path, cluster, '--check', upgrade_vm_policy='stop')
    assert rc == 0, log
    assert 'batch 1: gpu-1' in log and 'batch 2: gpu-2' in log, log
    assert 'node gpu-2: cordon, replace %s' % VGM in log, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_a_failure_on_the_first_node_stops_the_roll_with_the_second_untouched(tmp_path, kube):
    cluster = setup(kube, never_ready_on='gpu-1')
    rc, log = upgrade(tmp_path, cluster, upgrade_vm_policy='stop', upgrade_node_timeout=4)
    assert rc != 0, log
    assert 'The upgrade stopped at gpu-1' in log, log
    assert 'Still pending: gpu-1.' in log, log
    assert 'pod %s-gpu-1-r' % VGM in log and 'is not Ready' in log, log
    assert not [w for w in write_summary(cluster.attempts()) if 'gpu-2' in w], write_summary(cluster.attempts())
    assert hashes(cluster, 'gpu-2') == ['old']
    assert cluster.get('kubevirt.io/v1', 'VirtualMachine', 'vm-gpu-2', 'vms')['spec']['runStrategy'] == 'Always'
    assert cluster.get('kubevirt.io/v1', 'VirtualMachineInstance', 'vm-gpu-2', 'vms')
    stuck = cluster.get('v1', 'Node', 'gpu-1')
    assert stuck['spec']['unschedulable'] is True
    assert stuck['metadata']['annotations']['gpuvirt.provision/upgrade-cordoned'] == 'true'


# The operator step on OpenShift (OLM) -----------------------------------------------------------------------------
OLM_V1A1 = 'operators.coreos.com/v1alpha1'
OLD_CSV, NEW_CSV = 'gpu-operator-certified.v26.7.0', 'gpu-operator-certified.v26.7.1'
PLAN = 'install-up1'


def cluster_version():
    # what tells OpenShift apart (the cluster role's platform detection lists ClusterVersions)
    return {'apiVersion': 'config.openshift.io/v1', 'kind': 'ClusterVersion', 'metadata': {'name': 'version'}}


def olm_state(cluster, approval='Manual', plan_csv=NEW_CSV):
    """The operator installed at OLD_CSV through its Subscription, and the InstallPlan OLM made for the channel's next
    CSV, as OLM's catalog operator leaves them (operator-framework/operator-lifecycle-manager
    pkg/controller/operators/catalog/operator.go: a Manual plan is created with spec.approved false and phase
    RequiresApproval, an Automatic one approved; the Subscription's status.installPlanRef names it, status.currentCSV
    the CSV it progresses to, state UpgradePending)."""
    ns = cluster.ns
    sub = cluster.create({'apiVersion': OLM_V1A1, 'kind': 'Subscription',
                          'metadata': {'name': 'gpu-operator-certified', 'namespace': ns},
                          'spec': {'channel': 'v26.7', 'installPlanApproval': approval, 'name': 'gpu-operator-certified',
                                   'source': 'certified-operators', 'sourceNamespace': 'openshift-marketplace'}})
    cluster.create(csv_object(OLD_CSV, ns))
    auto = approval == 'Automatic'
    cluster.create({'apiVersion': OLM_V1A1, 'kind': 'InstallPlan', 'metadata': {'name': PLAN, 'namespace': ns},
                    'spec': {'approval': approval, 'approved': auto, 'clusterServiceVersionNames': [plan_csv]},
                    'status': {'phase': 'Installing' if auto else 'RequiresApproval',
                               'catalogSources': ['certified-operators']}})
    cluster.set_status(sub, {'state': 'UpgradePending', 'installedCSV': OLD_CSV, 'currentCSV': plan_csv,
                             'lastUpdated': '2026-11-24T00:00:00Z',
                             'installPlanRef': {'apiVersion': OLM_V1A1, 'kind': 'InstallPlan', 'name': PLAN,
                                                'namespace': ns}})
    time.sleep(0.3)
    cluster.mark = cluster.now()


def flat(log):
    # the output callback folds long message lines: compare with runs of whitespace as one space
    return ' '.join(log.split())


def csv_object(name, ns):
    return {'apiVersion': OLM_V1A1, 'kind': 'ClusterServiceVersion', 'metadata': {'name': name, 'namespace': ns},
            'spec': {'displayName': 'NVIDIA GPU Operator', 'install': {'strategy': 'deployment'}},
            'status': {'phase': 'Succeeded', 'message': 'install strategy completed with no errors'}}


def olm_upgrade(c):
    """OLM, once the plan is approved: the new CSV created and driven to Succeeded, the Subscription naming it in
    status.installedCSV (state AtLatestKnown), the plan Complete, and the operator Deployment given the new CSV's
    template (the new operator, operator_takes_over, does the rest). It never touches a plan nobody approved."""
    plan = c.get(OLM_V1A1, 'InstallPlan', PLAN, c.ns)
    if not plan or not plan['spec'].get('approved'):
        return False
    target = plan['spec']['clusterServiceVersionNames'][0]
    c.create(csv_object(target, c.ns))
    c.set_status(plan, dict(plan['status'], phase='Complete'))
    sub = c.get(OLM_V1A1, 'Subscription', 'gpu-operator-certified', c.ns)
    c.set_status(sub, dict(sub['status'], state='AtLatestKnown', installedCSV=target, currentCSV=target))
    c.release_installed = target.rsplit('.v', 1)[-1]
    return True


# The operator itself --------------------------------------------------------------------------------------------
OPERATOR_LABELS = {'app': 'gpu-operator'}
LEASE = '53822513.nvidia.com'


def micro_now(offset=0.0):
    # a Lease's MicroTime / a condition's Time as the API server takes them
    stamp = time.time() + offset
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(stamp)) + '.%06dZ' % int((stamp % 1) * 1e6)


def operator_pod(cluster, image, name):
    p = cluster.create({'apiVersion': 'v1', 'kind': 'Pod',
                        'metadata': {'name': name, 'namespace': cluster.ns, 'labels': dict(OPERATOR_LABELS)},
                        # on a control-plane node, none of the GPU nodes the stand-ins look after
                        'spec': {'nodeName': 'control-plane-1', 'containers': [{'name': 'gpu-operator', 'image': image}]}})
    # the kubelet stand-in may mark the new pod Ready between the create and this write
    write_status(cluster, p, {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}]})


def write_status(cluster, obj, status):
    """Write ``status`` on ``obj``; on a conflict (another stand-in wrote the object since ``obj`` was read: 409 on
    its resourceVersion) write it again on the object as it now is, as a controller's requeue does."""
    meta = obj['metadata']
    for dummy in range(20):
        try:
            return cluster.set_status(obj, status)
        except apiserver.APIError as exc:
            if exc.status != 409:
                raise
        obj = cluster.get(obj['apiVersion'], obj['kind'], meta['name'], meta.get('namespace'))
    raise AssertionError('%s %s: its status write conflicted 20 times' % (obj['kind'], meta['name']))


def rolled_out(cluster):
    dep = cluster.get('apps/v1', 'Deployment', 'gpu-operator', cluster.ns)
    write_status(cluster, dep, {'observedGeneration': dep['metadata']['generation'], 'replicas': 1,
                                'updatedReplicas': 1, 'readyReplicas': 1, 'availableReplicas': 1})


def operator_release(cluster, version):
    """The running operator release as it leaves the cluster: its Deployment gpu-operator (the chart's
    templates/operator.yaml and the CSV's install strategy both name it so) rolled out, its one pod Ready and holding
    the leader Lease 53822513.nvidia.com (NVIDIA/gpu-operator cmd/gpu-operator/main.go LeaderElectionID; the holder is
    <pod name>_<uuid>, controller-runtime pkg/leaderelection NewResourceLock), and the ClusterPolicy ready (the chart's
    cluster-policy; the fake helm merges its spec on upgrade)."""
    image = 'nvcr.io/nvidia/gpu-operator:%s' % version
    cluster.create({'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'gpu-operator', 'namespace': cluster.ns},
                    'spec': {'replicas': 1, 'selector': {'matchLabels': dict(OPERATOR_LABELS)},
                             'template': {'metadata': {'labels': dict(OPERATOR_LABELS)},
                                          'spec': {'containers': [{'name': 'gpu-operator', 'image': image}]}}}})
    operator_pod(cluster, image, 'gpu-operator-old')
    rolled_out(cluster)
    cluster.create({'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': {'name': LEASE, 'namespace': cluster.ns},
                    'spec': {'holderIdentity': 'gpu-operator-old_7c1e', 'acquireTime': micro_now(-3600),
                             'renewTime': micro_now(), 'leaseDurationSeconds': 15}})
    policy = cluster.create({'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': 'cluster-policy'},
                             'spec': {'daemonsets': {'updateStrategy': 'OnDelete'},
                                      'driver': {'upgradePolicy': {'autoUpgrade': False}}, 'dcgm': {},
                                      'dcgmExporter': {}, 'devicePlugin': {}, 'gfd': {}, 'nodeStatusExporter': {},
                                      'operator': {}, 'toolkit': {}}})
    then = micro_now(-3600)[:19] + 'Z'
    cluster.set_status(policy, {'state': 'ready', 'conditions': [
        {'type': 'Ready', 'status': 'True', 'reason': 'Reconciled', 'message': '', 'lastTransitionTime': then},
        {'type': 'Error', 'status': 'False', 'reason': 'Ready', 'message': '', 'lastTransitionTime': then}]})
    cluster.release_installed = None


def operator_takes_over(cluster, after=15.0):
    """The new release once its operator step is done (``cluster.release_installed`` set by the OLM or Helm
    stand-in): the Deployment controller rolls the operator Deployment to the new image (the new pod Ready, the old
    one gone); ``after`` seconds after the run has seen the step done (its read of the new CSV, or the helm upgrade's
    new release Secret) the new pod wins the leader lease and reconciles the ClusterPolicy with its
    new templates (a new vGPU Manager revision: object_controls.go DaemonSet() Updates a template whose
    nvidia.com/last-applied-hash differs), and, its OnDelete pods now of an older revision, reports the ClusterPolicy
    not ready (isDaemonSetReady; internal/conditions/clusterpolicy.go flips Ready and Error). Not at once: a
    Succeeded CSV or a finished helm upgrade does not wait for any of it."""
    state = {'at': None, 'rolled': False}

    def step(c):
        version = c.release_installed
        if not version:
            return False
        if not state['rolled']:
            image = 'nvcr.io/nvidia/gpu-operator:%s' % version
            dep = c.get('apps/v1', 'Deployment', 'gpu-operator', c.ns)
            c.patch(dep, {'spec': {'template': {'spec': {'containers': [{'name': 'gpu-operator', 'image': image}]}}}})
            operator_pod(c, image, 'gpu-operator-new')
            delete(c, '/api/v1/namespaces/%s/pods/gpu-operator-old' % c.ns)
            rolled_out(c)
            state['rolled'] = True
        if state['at'] is None:
            # the clock starts once the run has the step's answer (the automation's read of the new CSV on OLM; the
            # release Secret on Helm, written as helm upgrade returns), so the takeover comes after the moment a
            # run that does not wait for it would plan the roll
            csv_read = [e for e in c.requests() if e['verb'] == 'get'
                        and e.get('objectRef', {}).get('resource') == 'clusterserviceversions']
            if csv_read or c.get('v1', 'Secret', 'sh.helm.release.v1.gpu-operator.v2', c.ns):
                state['at'] = time.monotonic()
            return False
        if time.monotonic() - state['at'] < after:
            return False
        lease = c.get('coordination.k8s.io/v1', 'Lease', LEASE, c.ns)
        c.patch(lease, {'spec': {'holderIdentity': 'gpu-operator-new_9d2f', 'acquireTime': micro_now(),
                                 'renewTime': micro_now(), 'leaseTransitions': 1}})
        c.new_release()
        policy = c.get('nvidia.com/v1', 'ClusterPolicy', 'cluster-policy')
        moved = micro_now()[:19] + 'Z'
        write_status(c, policy, {'state': 'notReady', 'conditions': [
            {'type': 'Ready', 'status': 'False', 'reason': 'Error', 'message': '', 'lastTransitionTime': moved},
            {'type': 'Error', 'status': 'True', 'reason': 'OperandNotReady',
             'message': 'ClusterPolicy is not ready; states not ready: [state-vgpu-manager]',
             'lastTransitionTime': moved}]})
        return True
    cluster.controller('gpu-operator-new', step, interval=0.3)


def test_olm_the_plan_for_the_target_is_approved_after_the_preflight_its_csv_waited_for_then_the_roll(tmp_path, kube):
    cluster = setup(kube, openshift=True, objects=[cluster_version()])
    operator_release(cluster, 'v26.7.0')
    olm_state(cluster)
    # one node rolled (the roll itself is the stop-policy test's): the operator step and the plan after it
    target = dict(upgrade_vm_policy='stop', upgrade_gpu_operator_version='v26.7.1', upgrade_operator_timeout=20,
                  upgrade_nodes=['gpu-1'])
    rc, log = upgrade(tmp_path, cluster, '--check', **target)
    assert rc == 0, log
    assert 'operator: approve InstallPlan %s (%s -> %s)' % (PLAN, OLD_CSV, NEW_CSV) in flat(log), log
    # the new release will replace the node's operand pods: its VM's policy is in the preview already
    assert 'after the operator: node gpu-1, VM vms/vm-gpu-1: stop' in flat(log), log
    assert cluster.attempts() == [], write_summary(cluster.attempts())

    cluster.controller('olm', olm_upgrade, interval=0.3)
    operator_takes_over(cluster)
    rc, log = upgrade(tmp_path, cluster, **target)
    assert rc == 0, log
    writes = node_writes(cluster)
    assert writes[0] == 'patch installplans %s/%s' % (OLM_NS, PLAN), writes
    # the approval carries what the plan read: a plan re-created under its name (another uid) or changed since
    # (another resourceVersion) is refused by the API server instead of approved
    (sent,) = cluster.sent('installplans')
    assert sent['spec'] == {'approved': True} and sent['metadata']['uid'] and sent['metadata']['resourceVersion']
    # and the API server holds it to them: the same approval replayed now (OLM has written the plan's status since:
    # another resourceVersion) is a conflict, and one naming another uid is refused too
    path = cluster.server.path(OLM_V1A1, 'installplans', OLM_NS, PLAN)
    status, _body = cluster.server.request('PATCH', path, sent, raw=True, content_type='application/merge-patch+json')
    assert status == 409, status
    now = cluster.get(OLM_V1A1, 'InstallPlan', PLAN, OLM_NS)['metadata']['resourceVersion']
    other = {'metadata': {'uid': '00000000-0000-4000-8000-000000000000', 'resourceVersion': now},
             'spec': {'approved': True}}
    status, _body = cluster.server.request('PATCH', path, other, raw=True, content_type='application/merge-patch+json')
    assert status in (409, 422), status
    asked = [(e['verb'], e.get('objectRef', {}).get('resource'), e.get('objectRef', {}).get('name'))
             for e in cluster.requests()]
    approved_at = asked.index(('patch', 'installplans', PLAN))
    # preflight first: the VMs and the InstallPlans were read before the approval
    assert ('list', 'virtualmachineinstances', None) in asked[:approved_at], asked
    # then the new CSV was waited for, before any node was touched
    first_node_write = next(i for i, a in enumerate(asked) if a[:2] == ('patch', 'nodes'))
    assert ('get', 'clusterserviceversions', NEW_CSV) in asked[approved_at:first_node_write], asked
    # the roll was planned again once the new operator held its lease and had rendered its DaemonSets (not at the
    # CSV's Succeeded, seconds before): gpu-1 runs the new release's vGPU Manager revision
    assert hashes(cluster, 'gpu-1') == ['new'], log
    assert ('get', 'leases', LEASE) in asked[approved_at:first_node_write], asked
    assert hashes(cluster, 'gpu-2') == ['old'], log

    mark = cluster.now()
    rc, log = upgrade(tmp_path, cluster, **target)
    assert rc == 0, log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    # the plan read the target's CSV (OLM's installedCSV alone does not say it has installed) and found it Succeeded
    assert 'operator: %s is installed (the target) and its CSV has succeeded, nothing to approve' % NEW_CSV in flat(
        log), log

    # a run stopped during the install: OLM had set installedCSV (it does once it created the CSV), the CSV was still
    # Installing. The rerun reads the CSV, waits for it (no InstallPlan to approve or follow) and only then plans;
    # OLM's stand-in drives it to Succeeded once the plan has read it Installing
    csv = cluster.get(OLM_V1A1, 'ClusterServiceVersion', NEW_CSV, cluster.ns)
    cluster.set_status(csv, dict(csv['status'], phase='Installing'))
    mark = cluster.now()

    def csv_succeeds(c):
        if not [e for e in c.requests(since=mark) if (e['verb'], e.get('objectRef', {}).get('resource'))
                == ('get', 'clusterserviceversions')]:
            return False
        now = c.get(OLM_V1A1, 'ClusterServiceVersion', NEW_CSV, c.ns)
        c.set_status(now, dict(now['status'], phase='Succeeded'))
        return True
    cluster.controller('olm-csv', csv_succeeds, interval=0.3)
    rc, log = upgrade(tmp_path, cluster, **target)
    assert rc == 0, log
    assert ('operator: %s is installed (the target) but its CSV is in phase Installing; wait for it to succeed'
            % NEW_CSV) in flat(log), log
    assert 'Wait until the CSV has succeeded or failed' in log, log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))


def test_olm_a_pending_plan_for_another_release_is_refused_with_nothing_written(tmp_path, kube):
    cluster = setup(kube, openshift=True, objects=[cluster_version()])
    olm_state(cluster, plan_csv='gpu-operator-certified.v26.7.2')
    # a short operator timeout: a broken refusal fails the test in seconds, not after 900 s
    rc, log = upgrade(tmp_path, cluster, upgrade_vm_policy='stop', upgrade_gpu_operator_version='v26.7.1',
                      upgrade_operator_timeout=4)
    assert rc != 0, log
    assert ('the InstallPlan %s/%s of Subscription %s/gpu-operator-certified installs gpu-operator-certified.v26.7.2, '
            'not %s' % (OLM_NS, PLAN, OLM_NS, NEW_CSV)) in flat(log), log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_olm_automatic_approval_is_refused_naming_the_variable_with_nothing_written(tmp_path, kube):
    cluster = setup(kube, openshift=True, objects=[cluster_version()])
    olm_state(cluster, approval='Automatic')
    # a short operator timeout: a broken refusal fails the test in seconds, not after 900 s
    rc, log = upgrade(tmp_path, cluster, upgrade_vm_policy='stop', upgrade_gpu_operator_version='v26.7.1',
                      upgrade_operator_timeout=4)
    assert rc != 0, log
    assert 'has installPlanApproval Automatic' in flat(log), log
    assert 'set gpu_operator_install_plan_approval to Manual' in flat(log), log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_olm_a_failed_install_plan_stops_the_run_at_once_and_is_refused_by_the_next_plan(tmp_path, kube):
    cluster = setup(kube, openshift=True, objects=[cluster_version()])
    olm_state(cluster)

    def olm_fails(c):
        # OLM's catalog operator sets an approved plan whose step fails to phase Failed, the error in a condition
        # (operator-framework/api v0.45.0 installplan_types.go InstallPlanPhaseFailed, InstallPlanCondition)
        plan = c.get(OLM_V1A1, 'InstallPlan', PLAN, c.ns)
        if not plan or not plan['spec'].get('approved'):
            return False
        c.set_status(plan, dict(plan['status'], phase='Failed', conditions=[
            {'type': 'Installed', 'status': 'False', 'reason': 'InstallComponentFailed',
             'message': 'error creating csv %s: forbidden' % NEW_CSV}]))
        return True

    cluster.controller('olm', olm_fails, interval=0.3)
    # a long operator timeout: the run must stop on the Failed phase, not wait it out
    target = dict(upgrade_vm_policy='stop', upgrade_gpu_operator_version='v26.7.1', upgrade_operator_timeout=300,
                  upgrade_nodes=['gpu-1'])
    started = time.monotonic()
    rc, log = upgrade(tmp_path, cluster, **target)
    assert rc != 0, log
    assert 'InstallPlan %s is in phase Failed: error creating csv %s: forbidden' % (PLAN, NEW_CSV) in flat(log), log
    assert time.monotonic() - started < 200, log
    # the approval only; no node was touched
    assert node_writes(cluster) == ['patch installplans %s/%s' % (OLM_NS, PLAN)], node_writes(cluster)

    mark = cluster.now()
    rc, log = upgrade(tmp_path, cluster, **target)
    assert rc != 0, log
    assert 'the InstallPlan %s/%s of Subscription %s/gpu-operator-certified is in phase Failed (error creating csv' % (
        OLM_NS, PLAN, OLM_NS) in flat(log), log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))


# Vendor-specific VFIO vGPU nodes: their VF profiles set again inside the roll -------------------------------------
L40S_24Q = '1155'   # the L40S-24Q type id on an L40S VF (the L40S capture, tests/unit/vf_driver.py L40S_TYPES)


def vf_inventory(tmp_path, boards):
    """gpu-1 and gpu-2 in gpu_vm_vgpu, each a host stand-in reached by a local connection whose sysfs is its board's
    tree (as tests/integration/cluster_operator/test_apply.py vf_hosts): the fleet view puts them in vm-vgpu-vf from
    the vGPU facts their boards show, and the roll runs the vgpu_vf role on them with the vGPU config l40s."""
    from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_types
    hosts = {}
    for name, board in boards.items():
        os.makedirs(os.path.join(board.root, 'module', 'nvidia'), exist_ok=True)
        with open(os.path.join(board.root, 'module', 'nvidia', 'version'), 'w', encoding='utf-8') as handle:
            handle.write('580.82.02\n')
        (tmp_path / ('root-' + name) / 'etc' / 'systemd' / 'system').mkdir(parents=True, exist_ok=True)
        # the role reads the root's os-release (a CoreOS host is refused; no os-release is refused too): this
        # machine's own
        shutil.copy('/etc/os-release', str(tmp_path / ('root-' + name) / 'etc' / 'os-release'))
        (tmp_path / ('proc-' + name)).mkdir(exist_ok=True)
        hosts[name] = {
            'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'gpuvirt_vgpu_config': 'l40s',
            'gpuvirt_pci_devices': {'gpus': [{'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '26b9',
                                              'device_name': 'AD102GL [L40S]', 'driver': 'nvidia', 'is_vf': False}],
                                    'iommu': {'enabled': True}},
            'gpuvirt_mdev_types': vgpu_types.discover(board.root),
            'gpuvirt_gpu_holders': {'held': False, 'holders': []},
            'vgpu_vf_sysfs_root': board.root, 'vgpu_vf_root_dir': str(tmp_path / ('root-' + name)),
            'vgpu_vf_proc_root': str(tmp_path / ('proc-' + name)),
            'vgpu_vf_sriov_manage': str(tmp_path / 'no-sriov-manage')}
    path = tmp_path / 'vf-inventory.json'
    path.write_text(json.dumps({'all': {'children': {'gpu_vm_vgpu': {'hosts': hosts}}}}))
    return str(path)


def vf_boards(tmp_path, memory_of=None):
    """An L40S board per node, its first two VFs on L40S-24Q (the profiles playbooks/vgpu_vf.yml set before the
    upgrade). ``memory_of``: {node: GiB}, a board whose driver lists less frame buffer after the reload."""
    from vf_driver import VfBoard
    boards = {}
    for name in NODES:
        board = VfBoard(tmp_path / ('sys-' + name), memory=(memory_of or {}).get(name, 48))
        for vf in board.vfs['0000:41:00.0'][:2]:
            board.set(vf, int(L40S_24Q))
        boards[name] = board
    return boards


VF_RUN = dict(upgrade_vm_policy='stop', gpu_operator_vgpu_configs={'l40s': {'L40S-24Q': 2}}, ansible_become=False,
              # no systemd on the test's hosts: the role writes the boot-time unit's files only
              vgpu_vf_systemd=False, kubevirt_devices_enabled=False)


def test_vendor_vfio_nodes_are_rolled_with_their_vf_profiles_set_again_then_a_rerun_is_a_no_op(tmp_path, kube):
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
    boards = vf_boards(tmp_path)
    cluster = setup(kube, boards=boards)
    inv = vf_inventory(tmp_path, boards)
    rc, log = upgrade(tmp_path, cluster, '--check', inventory=inv, **VF_RUN)
    assert rc == 0, log
    assert ('then give its VFs their vGPU profiles again: the vgpu_vf role on host gpu-1 (vGPU config l40s)'
            in flat(log)), log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    rc, log = upgrade(tmp_path, cluster, inventory=inv, **VF_RUN)
    assert rc == 0, log
    for name, board in boards.items():
        assert hashes(cluster, name) == ['new'], log
        # the new vGPU Manager pod brought the VFs back without a profile: the roll set the two again
        assert sorted(profiles(board).values()) == ['0', '0', L40S_24Q, L40S_24Q], (name, log)
        assert cluster.get('v1', 'Node', name)['status']['allocatable'][VF_RES] == '2'
        assert not cluster.get('v1', 'Node', name)['spec'].get('unschedulable')
    # each node's profiles were set before it was released, and before the next node was cordoned
    order = flat(log)
    assert order.index('Give the VFs their vGPU profiles (the vgpu_vf role) on gpu-1') < order.index(
        'Uncordon the batch') < order.index('Give the VFs their vGPU profiles (the vgpu_vf role) on gpu-2'), log

    mark = cluster.now()
    rc, log = upgrade(tmp_path, cluster, inventory=inv, **VF_RUN)
    assert rc == 0, log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    assert 'node gpu-1: nothing to replace' in log, log


def test_a_kubevirt_target_below_1_9_is_refused_for_vendor_vfio_nodes_before_any_change(tmp_path, kube):
    # KubeVirt advertises a vendor-specific VFIO vGPU (a VF with its vGPU profile set) as a PCI host device only from
    # v1.9.0 (its "vGPU: SRIOV support" and pkg/virt-handler/device-manager HasVGPUProfile; docs/pools/vendor-vfio.md):
    # apply mode refuses a lower target for a fleet with such hosts, as render mode does, before it cordons anything
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
    boards = vf_boards(tmp_path)
    cluster = setup(kube, boards=boards)
    # KubeVirt v1.7.3 runs: v1.8.0 is a step KubeVirt takes (one minor release), refused only for those hosts
    cluster.create({'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt',
                    'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'}, 'spec': {},
                    'status': {'observedKubeVirtVersion': 'v1.7.3'}})
    rc, log = upgrade(tmp_path, cluster, inventory=vf_inventory(tmp_path, boards), upgrade_kubevirt_version='v1.8.0',
                      **VF_RUN)
    assert rc != 0, log
    assert ('the fleet has NVIDIA vendor-specific VFIO vGPU hosts, which need KubeVirt 1.9.0 or later; KubeVirt would '
            'be v1.8.0') in flat(log), log
    assert 'skips a minor version' not in flat(log) and 'no KubeVirt CR' not in flat(log), log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    for name, board in boards.items():
        assert hashes(cluster, name) == ['old']
        assert sorted(profiles(board).values()) == ['0', '0', L40S_24Q, L40S_24Q]


def test_a_vendor_vfio_node_whose_profiles_cannot_be_set_again_stops_the_roll_with_the_second_untouched(
        tmp_path, kube):
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
    # gpu-1's reloaded driver lists 8 GiB of frame buffer per VF only: no L40S-24Q to set again
    boards = vf_boards(tmp_path, memory_of={'gpu-1': 8})
    cluster = setup(kube, boards=boards)
    rc, log = upgrade(tmp_path, cluster, inventory=vf_inventory(tmp_path, boards), **VF_RUN)
    text = flat(log)
    assert rc != 0, log
    assert 'The upgrade stopped at gpu-1' in text, log
    assert 'node gpu-1 (host gpu-1): its VF profiles could not be set again after its vGPU Manager pod was replaced' \
        in text, log
    assert 'L40S-24Q' in text.split('its VF profiles could not be set again')[1], log
    # gpu-2: not a write, its pods and its VFs' profiles as they were
    assert not [w for w in write_summary(cluster.attempts()) if 'gpu-2' in w], write_summary(cluster.attempts())
    assert hashes(cluster, 'gpu-2') == ['old']
    assert sorted(profiles(boards['gpu-2']).values()) == ['0', '0', L40S_24Q, L40S_24Q]
    stuck = cluster.get('v1', 'Node', 'gpu-1')
    assert stuck['spec']['unschedulable'] is True
    assert stuck['metadata']['annotations']['gpuvirt.provision/upgrade-cordoned'] == 'true'


# KubeVirt's configuration rendered again for the version it runs after the roll -----------------------------------
def kubevirt_as_rendered_for(cluster, version):
    """The KubeVirt CR virt-operator reports ``version`` for, as playbooks/kubevirt.yml left it at that version: the
    collection's own builder's object (the A10-12Q vGPU type permitted, KubeVirt's mdev handling off the way that
    version takes it) server-side applied under the kubevirt_devices role's field manager, as the role applies it."""
    from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt as kv
    made = cluster.create({'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt',
                           'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'}, 'spec': {},
                           'status': {'observedKubeVirtVersion': version}})
    obj, _changed, _report = kv.build_kubevirt(made, [], [{'selector': 'NVIDIA A10-12Q', 'resource_name': RES}],
                                               version=version)
    path = cluster.server.path('kubevirt.io/v1', 'kubevirts', 'kubevirt', 'kubevirt')
    status, body = cluster.server.request(
        'PATCH', path + '?fieldManager=gpuvirt-provision-kubevirt-devices&force=true', obj, raw=True,
        content_type='application/apply-patch+yaml')
    assert status == 200, body
    time.sleep(0.3)
    cluster.mark = cluster.now()


def kubevirt_inventory(tmp_path):
    """gpu-1, the example's A10 vGPU host (mdev; its saved facts) under the node name gpu-1."""
    with open(os.path.join(ROOT, 'inventories', 'example', '.gpuvirt_facts', 'gpu-v01.example.com.json'),
              encoding='utf-8') as handle:
        saved = json.load(handle)
    host = dict((k, saved[k]) for k in ('gpuvirt_pci_devices', 'gpuvirt_mdev_types', 'gpuvirt_gpu_holders'))
    host.update(gpuvirt_vgpu_config='A10-12Q', ansible_connection='local')
    path = tmp_path / 'kv-inventory.json'
    path.write_text(json.dumps({'all': {'children': {'gpu_vm_vgpu': {'hosts': {'gpu-1': host}}}}}))
    return str(path)


def test_kubevirt_crossing_1_8_gets_its_configuration_rendered_again_after_the_roll_then_a_rerun_is_a_no_op(
        tmp_path, kube):
    # The mdev switch: the DisableMDEVConfiguration gate up to v1.7, spec.configuration.mediatedDevicesConfiguration.
    # enabled from v1.8.0 (kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/types.go
    # MediatedDevicesConfiguration.Enabled "Replaces the deprecated DisableMDEVConfiguration feature gate", there from
    # v1.8.0-beta.0; pkg/virt-config/featuregate/inactive.go: the gate Deprecated since v1.8.0)
    cluster = setup(kube)
    kubevirt_as_rendered_for(cluster, 'v1.7.3')
    assert 'DisableMDEVConfiguration' in cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')[
        'spec']['configuration']['developerConfiguration']['featureGates']
    inv = kubevirt_inventory(tmp_path)
    run = dict(upgrade_vm_policy='stop', upgrade_nodes=['gpu-1'], gpuvirt_platform='kubernetes',
               gpuvirt_kubevirt_config='kubevirt', upgrade_kubevirt_timeout=30)
    # KubeVirt updates one minor release at a time (kubevirt/user-guide docs/cluster_admin/updating_and_deletion.md:
    # "Updating is only supported from N-1 to N release"): v1.9 from v1.7 is refused before any change
    rc, log = upgrade(tmp_path, cluster, '--check', inventory=inv, upgrade_kubevirt_version='v1.9.0', **run)
    assert rc != 0 and 'KubeVirt v1.7.3 -> v1.9.0 skips a minor version' in flat(log), log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    # the preview names the configuration change
    rc, log = upgrade(tmp_path, cluster, '--check', inventory=inv, upgrade_kubevirt_version='v1.8.0', **run)
    assert rc == 0, log
    assert ('kubevirt config: rendered again after the roll for KubeVirt v1.8.0: the DisableMDEVConfiguration gate '
            'replaced by mediatedDevicesConfiguration.enabled: false') in flat(log), log
    assert cluster.attempts() == [], write_summary(cluster.attempts())

    def virt_operator(c):
        # the user's KubeVirt upgrade, done once gpu-1 is rolled: virt-operator reports the new version
        if hashes(c, 'gpu-1') != ['new']:
            return False
        cr = c.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')
        c.set_status(cr, {'observedKubeVirtVersion': 'v1.8.0'})
        return True
    cluster.controller('virt-operator', virt_operator, interval=0.5)
    rc, log = upgrade(tmp_path, cluster, inventory=inv, upgrade_kubevirt_version='v1.8.0', **run)
    assert rc == 0, log
    assert write_summary(cluster.attempts())[-1] == 'patch kubevirts kubevirt/kubevirt', write_summary(cluster.attempts())
    config = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')['spec']['configuration']
    assert 'DisableMDEVConfiguration' not in ((config.get('developerConfiguration') or {}).get('featureGates') or [])
    assert config['mediatedDevicesConfiguration'] == {'enabled': False}
    assert [e['resourceName'] for e in config['permittedHostDevices']['mediatedDevices']] == [RES]

    mark = cluster.now()
    rc, log = upgrade(tmp_path, cluster, inventory=inv, upgrade_kubevirt_version='v1.8.0', **run)
    assert rc == 0, log
    assert cluster.attempts(since=mark) == [], write_summary(cluster.attempts(since=mark))
    assert 'mediatedDevicesConfiguration.enabled: false, as KubeVirt v1.8.0 takes it (no change)' in flat(log), log
