# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/retire.yml's cluster part against the real kube-apiserver (tests/integration/kube_cluster.py, with the
upstream HyperConverged CRD), run as the least-privilege automation identity.

The fleet is SYNTHETIC: two passthrough hosts given with their GPU facts in the inventory (as gather.yml leaves
them): gpu-1 has an A10 and an L40S, gpu-2 an A10. The kubevirt phase permits both devices first (the real path
that writes the owned-permitted-host-devices record), then gpu-1 is retired. No host is touched: the cluster plays
run with --skip-tags retire_host (the host play's tag, also what a user runs for a machine that is gone); the host
play's own steps are the vfio and reboot roles, tested on their own (tests/unit/roles/test_vfio_absent.py,
tests/integration/cluster_operator/test_drain.py). One test runs the host play, on a host that cannot be reached,
to show that its failure stops the run before any cluster write."""
from __future__ import annotations

import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import recap, run_playbook, write_summary  # noqa: E402

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco as hco_mod  # noqa: E402
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl  # noqa: E402

W, OWNED = nl.WORKLOAD_LABEL, nl.OWNED_ANNOTATION
HCO = ('hco.kubevirt.io/v1beta1', 'HyperConverged', 'kubevirt-hyperconverged', 'openshift-cnv')
QAT = {'pciDeviceSelector': '8086:4940', 'resourceName': 'intel.com/QAT', 'externalResourceProvider': True}
A10, L40S = 'nvidia.com/GA102GL_A10', 'nvidia.com/AD102GL_L40S'
# Labels the collection never writes: NFD's and the GPU Operator's (gpu-feature-discovery's product label, the
# operator's deploy label "true"), and an administrator's "false" that the owned-labels record does not name.
SANDBOX = 'nvidia.com/gpu.deploy.sandbox-device-plugin'
FOREIGN = {'feature.node.kubernetes.io/pci-10de.present': 'true', 'nvidia.com/gpu.present': 'true',
           'nvidia.com/gpu.product': 'NVIDIA-A10', SANDBOX: 'true',
           nl.DCGM_LABEL: 'false'}


def gpu(bdf, device_id, name):
    return {'bdf': bdf, 'class_id': '0302', 'class_name': '3D controller', 'vendor_id': '10de',
            'vendor_name': 'NVIDIA Corporation', 'device_id': device_id, 'device_name': name,
            'subsystem_vendor_id': '10de', 'subsystem_device_id': '1482', 'revision': 'a1', 'driver': 'vfio-pci',
            'kernel_modules': ['nouveau'], 'iommu_group': bdf[5:7], 'iommu_group_devices': [bdf], 'numa_node': 0,
            'kind': 'gpu', 'is_vf': False, 'physfn': None, 'sriov': None, 'companions': []}


def facts(*gpus):
    # every fact gather.yml registers, so that it asks no host (playbooks/gather.yml, "Reach the host")
    return {'gpuvirt_pci_devices': {'devices': list(gpus), 'gpus': list(gpus), 'nvswitches': [],
                                    'gpus_by_driver': {'vfio-pci': [g['bdf'] for g in gpus]},
                                    'iommu': {'enabled': True, 'groups': 57, 'message': 'IOMMU is on'}},
            'gpuvirt_mdev_types': {'parents': []}, 'gpuvirt_gpu_holders': {'held': False, 'holders': []},
            'gpuvirt_os_tag': ''}


def inventory(tmp_path, gpu1_vars=None):
    hosts = {'gpu-1': dict(facts(gpu('0000:41:00.0', '2236', 'GA102GL [A10]'),
                                 gpu('0000:61:00.0', '26b9', 'AD102GL [L40S]')), **(gpu1_vars or {})),
             'gpu-2': facts(gpu('0000:41:00.0', '2236', 'GA102GL [A10]'))}
    path = tmp_path / 'fleet.yml'
    path.write_text(yaml.safe_dump({'all': {
        'vars': {'gpuvirt_platform': 'openshift', 'gpuvirt_kubevirt_config': 'hco', 'gpuvirt_render_dir': '',
                 'kubevirt_machineconfig_enabled': False},
        'children': {'gpu_vm_passthrough': {'hosts': hosts}}}}), encoding='utf-8')
    return str(path)


def node(name, alloc, labels, record='', cordoned=False):
    meta = {'name': name, 'labels': dict({'kubernetes.io/hostname': name, W: 'vm-passthrough'}, **labels),
            'annotations': {OWNED: record}}
    # allocatable is the kubelet's (status subresource): the fixture writes it in the kubelet's place
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': meta, 'spec': {'unschedulable': cordoned},
            'status': {'allocatable': alloc}}


def hco_object():
    return {'apiVersion': HCO[0], 'kind': HCO[1], 'metadata': {'name': HCO[2], 'namespace': HCO[3]},
            'spec': {'permittedHostDevices': {'pciHostDevices': [QAT]}}}


def cluster_with_both_permitted(tmp_path, kube, cordoned=False):
    """gpu-1 (A10, L40S; cordoned, as a drain that was given up left it, when asked) and gpu-2 (A10), labelled
    as the nodes phase leaves passthrough nodes plus FOREIGN, and the kubevirt phase run once: both devices permitted
    and recorded as ours, QAT foreign."""
    cluster = kube([hco_object(),
                    node('gpu-1', {A10: '1', L40S: '1'}, FOREIGN, cordoned=cordoned),
                    node('gpu-2', {A10: '1'}, FOREIGN)])
    inv = inventory(tmp_path)
    rc, log = run_playbook(tmp_path, 'kubevirt', inv, gpuvirt_cluster_mode='apply',
                           gpuvirt_kubeconfig=cluster.kubeconfig)
    assert rc == 0, log
    assert permitted(cluster) == sorted(['intel.com/QAT', A10, L40S])
    cluster.mark = cluster.now()  # what the setup wrote is not the retire's doing
    return cluster, inv


def permitted(cluster):
    return sorted(e['resourceName'] for e in
                  cluster.get(*HCO)['spec']['permittedHostDevices']['pciHostDevices'])


def retire(tmp_path, cluster, inv, *args, hosts=('gpu-1',)):
    return run_playbook(tmp_path, 'retire', inv, '--skip-tags', 'retire_host', *args,
                        retire_hosts=list(hosts) if not isinstance(hosts, str) else hosts,
                        gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=cluster.kubeconfig)


def test_retire_takes_back_our_labels_and_devices_only_and_a_second_run_writes_nothing(tmp_path, kube):
    cluster, inv = cluster_with_both_permitted(tmp_path, kube, cordoned=True)
    before_gpu2 = cluster.get('v1', 'Node', 'gpu-2')['metadata']

    # check mode: the plan, and nothing written (the node patch and the HyperConverged apply as dry runs only)
    rc, log = retire(tmp_path, cluster, inv, '--check', '--diff')
    assert rc == 0, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    said = ' '.join(log.split())
    assert 'gpu-1 (pool vm-passthrough): retire: remove %s' % W in said, log
    assert 'owned-labels record: removed' in said, log
    assert ('node gpu-1: labels to remove: %s' % W) in said and 'permitted devices: to remove 10DE:26B9' in said, log
    assert cluster.get('v1', 'Node', 'gpu-1')['metadata']['labels'][W] == 'vm-passthrough'
    assert permitted(cluster) == sorted(['intel.com/QAT', A10, L40S])

    rc, log = retire(tmp_path, cluster, inv, '--diff')
    assert rc == 0, log
    meta = cluster.get('v1', 'Node', 'gpu-1')['metadata']
    # ours gone (the workload label and the record); NFD's, the operator's and the admin's "false" stay
    assert meta['labels'] == dict({'kubernetes.io/hostname': 'gpu-1'}, **FOREIGN), meta
    assert OWNED not in (meta.get('annotations') or {}), meta
    # the other GPU node is not touched
    assert cluster.get('v1', 'Node', 'gpu-2')['metadata']['labels'] == before_gpu2['labels']
    # the A10 is still on gpu-2: it stays; the L40S only gpu-1 had: it goes; the foreign QAT stays
    assert permitted(cluster) == sorted(['intel.com/QAT', A10]), cluster.get(*HCO)['spec']
    owned = hco_mod.read_owner_annotation(cluster.get(*HCO))
    assert owned == {'pciHostDevices': ['10DE:2236']}, owned
    # left schedulable (the drain had been given up, the node cordoned)
    assert not cluster.get('v1', 'Node', 'gpu-1').get('spec', {}).get('unschedulable'), log
    writes = write_summary(cluster.attempts())
    assert sorted(writes) == ['patch hyperconvergeds openshift-cnv/kubevirt-hyperconverged',
                              'patch nodes -/gpu-1', 'patch nodes -/gpu-1'], writes
    said = ' '.join(log.split())
    assert ('retire: gpu-1 - host: not run in this run (--skip-tags retire_host) | node gpu-1: labels removed: %s; '
            'kept (not ours): %s, %s; uncordoned | permitted devices: removed 10DE:26B9; still permitted for the '
            'other hosts: %s' % (W, nl.DCGM_LABEL, SANDBOX, A10)) in said, log

    second = cluster.now()
    rc, log = retire(tmp_path, cluster, inv)
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))
    assert 'node gpu-1: none of our labels left' in ' '.join(log.split()), log


def test_a_pattern_is_refused_before_any_change(tmp_path, kube):
    # every other wrong answer (a group, a host outside the GPU groups, nothing) and the survey's text answer:
    # tests/unit/roles/test_retire_names.py, on the same vars/retire.yml
    cluster = kube([hco_object(), node('gpu-1', {A10: '1', L40S: '1'}, FOREIGN), node('gpu-2', {A10: '1'}, FOREIGN)])
    rc, log = retire(tmp_path, cluster, inventory(tmp_path), hosts='gpu-*')
    assert rc != 0 and 'never a pattern or a group' in ' '.join(log.split()), log
    assert 'Nothing was changed' in log and 'Take back the retired hosts' not in log, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_a_host_whose_host_play_fails_changes_nothing_in_the_cluster(tmp_path, kube):
    # the host play itself runs here; gpu-1 cannot be reached (nothing listens on port 9), so it fails there and
    # the run stops (serial 1, max_fail_percentage 0) before the cluster plays
    cluster = kube([hco_object(), node('gpu-1', {A10: '1', L40S: '1'}, FOREIGN), node('gpu-2', {A10: '1'}, FOREIGN)])
    inv = inventory(tmp_path, {'ansible_host': '127.0.0.1', 'ansible_port': 9, 'ansible_connection': 'ssh',
                               'ansible_ssh_common_args': '-o ConnectTimeout=3 -o StrictHostKeyChecking=no'})
    rc, log = run_playbook(tmp_path, 'retire', inv, retire_hosts=['gpu-1'], gpuvirt_cluster_mode='apply',
                           gpuvirt_kubeconfig=cluster.kubeconfig)
    assert rc != 0 and 'UNREACHABLE' in log, log
    assert 'Take back the retired hosts' not in log, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    assert cluster.get('v1', 'Node', 'gpu-1')['metadata']['labels'][W] == 'vm-passthrough'
    assert cluster.get(*HCO)['spec']['permittedHostDevices'] == {'pciHostDevices': [QAT]}
