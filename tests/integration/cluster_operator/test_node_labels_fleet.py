# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nodes phase on a fleet, against the real kube-apiserver (tests/integration/kube_cluster.py): one module call
(gpuvirt.provision.node_labels_apply) sends a merge patch per node that differs and nothing for the others, as the
API server's audit log shows; a second run and check mode write nothing; a refused patch stops the call naming the
node and the HTTP status; the VMI refusal and the sink's own checks come before any write.

The fleet is SYNTHETIC (FLEET nodes: container, passthrough and vGPU hosts in turn, the vGPU hosts with one A10's
facts, given in the inventory as gather.yml leaves them); the playbooks run as the least-privilege automation
identity (docs/rbac/gpuvirt-automation.yml)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
from kube_cluster import recap, run_playbook, write_summary  # noqa: E402

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl  # noqa: E402

W, V, OWNED = nl.WORKLOAD_LABEL, nl.VGPU_LABEL, nl.OWNED_ANNOTATION
FLEET = 12
GROUPS = (('gpu_container', 'container'), ('gpu_vm_passthrough', 'vm-passthrough'), ('gpu_vm_vgpu', 'vm-vgpu'))
A10 = {'gpus': [{'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
                 'kind': 'gpu', 'is_vf': False}]}


def fleet(n=FLEET):
    """``[(node, group, workload)]``: n GPU hosts, the groups in turn."""
    return [('gpu-%02d' % i,) + GROUPS[i % len(GROUPS)] for i in range(n)]


def right_labels(workload):
    """What the phase leaves on a node of ``workload`` (the vGPU config: the inventory's default)."""
    return dict({W: workload}, **({V: 'A10-24Q'} if workload == 'vm-vgpu' else {}))


def node(name, labels, record=None):
    meta = {'name': name, 'labels': dict({'kubernetes.io/hostname': name}, **labels)}
    if record is not None:
        meta['annotations'] = {OWNED: record}
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': meta}


def inventory(tmp_path, hosts):
    children = {}
    for name, group, _workload in hosts:
        children.setdefault(group, {'hosts': {}})['hosts'][name] = (
            {'gpuvirt_pci_devices': A10, 'gpuvirt_mdev_types': {'parents': []}} if group == 'gpu_vm_vgpu' else {})
    path = tmp_path / 'fleet.yml'
    path.write_text(yaml.safe_dump({'all': {
        'vars': {'gpuvirt_platform': 'openshift', 'node_labels_vgpu_config_default': 'A10-24Q',
                 'gpuvirt_render_dir': ''},
        'children': children}}), encoding='utf-8')
    return str(path)


def apply_phase(tmp_path, cluster, inv, *args):
    return run_playbook(tmp_path, 'nodes', inv, *args, gpuvirt_cluster_mode='apply',
                        gpuvirt_kubeconfig=cluster.kubeconfig)


def patches_sent(events):
    """``{node: [HTTP status, ...]}`` of the PATCH requests to nodes in ``events``."""
    out = {}
    for event in events:
        if event['verb'] == 'patch' and event['objectRef'].get('resource') == 'nodes':
            out.setdefault(event['objectRef']['name'], []).append(event['responseStatus']['code'])
    return out


def test_one_call_patches_each_differing_node_once_and_a_second_run_sends_nothing(tmp_path, kube):
    hosts = fleet()
    # every third node already right, its record written: the call must not touch it
    right = {name for i, (name, _g, _w) in enumerate(hosts) if i % 3 == 0}
    cluster = kube([node(name, right_labels(w), record='') if name in right else node(name, {})
                    for name, _g, w in hosts])
    inv = inventory(tmp_path, hosts)
    rc, log = apply_phase(tmp_path, cluster, inv)
    assert rc == 0, log
    sent = patches_sent(cluster.attempts())
    assert sent == {name: [200] for name, _g, _w in hosts if name not in right}, sent
    assert [summary for summary in write_summary(cluster.attempts()) if not summary.startswith('patch nodes')] == []
    for name, _group, workload in hosts:
        meta = cluster.get('v1', 'Node', name)['metadata']
        assert meta['labels'] == dict({'kubernetes.io/hostname': name}, **right_labels(workload)), meta
        assert meta['annotations'][OWNED] == '', meta
    # one task for the fleet, not a loop item per node; one report message
    task = log.split('TASK [gpuvirt.provision.node_labels : Patch the labels that differ]')[1].split('TASK [')[0]
    assert task.split() == ['*' * len(task.split()[0]), 'changed:', '[localhost]'], task
    said = ' '.join(log.split())
    assert 'gpu-01 (pool vm-passthrough): set %s=vm-passthrough' % W in said, log
    assert 'gpu-00 (pool container): labels already right' in said, log
    # the nodes are read as lists, never node by node (the old loop read each before its patch)
    node_reads = [e['verb'] for e in cluster.requests() if (e.get('objectRef') or {}).get('resource') == 'nodes'
                  and e['verb'] != 'patch']
    assert set(node_reads) == {'list'}, node_reads
    second = cluster.now()
    rc, log = apply_phase(tmp_path, cluster, inv)
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))
    assert [e['verb'] for e in cluster.requests(since=second)
            if (e.get('objectRef') or {}).get('resource') == 'nodes'] == node_reads


def test_check_mode_sends_dry_runs_only_and_diff_shows_each_nodes_labels(tmp_path, kube):
    hosts = fleet(6)
    cluster = kube([node(name, {V: 'A10-12Q'} if w == 'container' else {}) for name, _g, w in hosts])
    rc, log = apply_phase(tmp_path, cluster, inventory(tmp_path, hosts), '--check', '--diff')
    assert rc == 0, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    # the API server checked each patch (dryRun=All), one per node, and kept nothing
    assert sorted(e['objectRef']['name'] for e in cluster.dry_runs()) == sorted(n for n, _g, _w in hosts)
    assert all(cluster.get('v1', 'Node', name)['metadata']['labels'] == node(name, {V: 'A10-12Q'} if w == 'container'
                                                                             else {})['metadata']['labels']
               for name, _g, w in hosts)
    said = ' '.join(log.split())
    # per node, the labels its patch touches before and as the server answered: gpu-00 loses its stale vGPU config
    diff = said.split('--- before: node gpu-00 +++ after: node gpu-00')[1].split('--- before')[0]
    assert '- %s: A10-12Q' % V in diff and '+ %s: container' % W in diff, diff
    assert "+ annotations: + %s: ''" % OWNED in diff, diff
    # the same run for real writes exactly what the preview showed
    rc, log = apply_phase(tmp_path, cluster, inventory(tmp_path, hosts))
    assert rc == 0, log
    assert sorted(patches_sent(cluster.attempts())) == sorted(n for n, _g, _w in hosts)
    assert cluster.get('v1', 'Node', 'gpu-00')['metadata']['labels'] == {'kubernetes.io/hostname': 'gpu-00',
                                                                         W: 'container'}


def run_apply_module(tmp_path, cluster, patches, *args):
    """gpuvirt.provision.node_labels_apply alone, with the play's cluster access as every phase gives it."""
    play = [{'name': 'Patch', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
             'module_defaults': {'group/gpuvirt.provision.cluster': {'kubeconfig': cluster.kubeconfig}},
             'tasks': [{'name': 'Patch the nodes', 'gpuvirt.provision.node_labels_apply': {'patches': patches}}]}]
    path = tmp_path / 'apply.yml'
    path.write_text(yaml.safe_dump(play), encoding='utf-8')
    (tmp_path / 'tmp').mkdir(exist_ok=True)
    proc = subprocess.run(['ansible-playbook', '-i', 'localhost,', str(path), '-e',
                           json.dumps({'ansible_python_interpreter': sys.executable})] + list(args),
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path / 'tmp')))
    return proc.returncode, proc.stdout + proc.stderr


def planned(cluster, hosts):
    """The plan as node_labels_plan makes it from the nodes as they are now (read as the admin)."""
    nodes = [cluster.get('v1', 'Node', name) for name, _g, _w in hosts]
    wanted = [{'node': name, 'host': name, 'pool': w, 'vgpu_config': 'A10-24Q' if w == 'vm-vgpu' else None}
              for name, _g, w in hosts]
    return nl.plan(wanted, [n for n in nodes if n], [])[0]


def test_a_node_deleted_between_plan_and_apply_stops_the_call_naming_it_and_the_status(tmp_path, kube):
    hosts = fleet(6)
    cluster = kube([node(name, {}) for name, _g, _w in hosts])
    patches = planned(cluster, hosts)
    assert [p['metadata']['name'] for p in patches] == [n for n, _g, _w in hosts]
    # gone after the plan read it (a node scaled away, replaced, renamed)
    cluster.server.request('DELETE', '/api/v1/nodes/gpu-02', ok=(200,))
    rc, log = run_apply_module(tmp_path, cluster, patches)
    assert rc != 0, log
    said = ' '.join(log.split())
    assert 'node gpu-02: the API server refused its label patch: HTTP 404 Not Found' in said, log
    assert 'patched before it: gpu-00, gpu-01' in said and 'not sent: gpu-03, gpu-04, gpu-05' in said, log
    # it stopped there: the nodes after it were not sent
    assert patches_sent(cluster.attempts()) == {'gpu-00': [200], 'gpu-01': [200], 'gpu-02': [404]}
    # run again (a new plan): only what still differs is sent
    hosts = [h for h in hosts if h[0] != 'gpu-02']
    since = cluster.now()
    rc, log = run_apply_module(tmp_path, cluster, planned(cluster, hosts))
    assert rc == 0, log
    assert sorted(patches_sent(cluster.attempts(since=since))) == ['gpu-03', 'gpu-04', 'gpu-05']


def test_the_sink_refuses_a_hostile_patch_before_sending_any(tmp_path, kube):
    # a launch variable cannot replace the plan (the launch check), but the module checks its own input anyway
    hosts = fleet(3)
    cluster = kube([node(name, {}) for name, _g, _w in hosts])
    patches = planned(cluster, hosts)
    patches.append({'apiVersion': 'v1', 'kind': 'Node',
                    'metadata': {'name': 'gpu-01', 'labels': {W: 'vm-passthrough\nx'},
                                 'annotations': {'kubectl.kubernetes.io/last-applied-configuration': '{}'}}})
    patches.append({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': '../etc', 'labels': {W: 'container'}}})
    rc, log = run_apply_module(tmp_path, cluster, patches)
    assert rc != 0, log
    assert 'patches[3] (node gpu-01)' in log and 'patches[4] node name' in log, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_a_running_vmi_stops_the_fleet_before_any_node_is_patched(tmp_path, kube):
    hosts = fleet()
    vgpu = [name for name, _g, w in hosts if w == 'vm-vgpu'][-1]
    vmi = {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachineInstance',
           'metadata': {'name': 'cad-3', 'namespace': 'vdi'}, 'spec': {'domain': {'devices': {}}},
           # virt-handler's to write; the fixture writes it through the status subresource
           'status': {'nodeName': vgpu, 'phase': 'Running'}}
    cluster = kube([node(name, {W: 'vm-vgpu', V: 'A10-12Q'} if name == vgpu else {}) for name, _g, _w in hosts]
                   + [vmi])
    rc, log = apply_phase(tmp_path, cluster, inventory(tmp_path, hosts))
    assert rc != 0 and 'vdi/cad-3' in log and 'A10-12Q -> A10-24Q' in log, log
    # every other node differs too, and none was patched
    assert cluster.attempts() == [], write_summary(cluster.attempts())
