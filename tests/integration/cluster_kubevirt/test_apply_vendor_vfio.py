# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of playbooks/kubevirt.yml for a mixed vGPU fleet against a real kube-apiserver: an A10 host on mdev
beside an L40S host on NVIDIA's vendor-specific VFIO interface (tests/unit/vf_fleet.py builds its facts),
both in gpu_vm_vgpu. The L40S's VFs go to KubeVirt's own device plugin (externalResourceProvider false), the A10's
vGPU type to the mediated devices; the refusals and the KubeVirt version gate stop the run before any write.

Fixtures and helpers are test_apply.py's (the kube fixture, node(), the run's extra vars), reused as they are.
"""
from __future__ import annotations

import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import recap, run_playbook, write_summary  # noqa: E402
from test_apply import devices_apply, node  # noqa: E402
import vf_fleet  # noqa: E402

L40S = {'pciVendorSelector': '10DE:26B9', 'resourceName': 'nvidia.com/AD102GL_L40S', 'externalResourceProvider': False}
A10_VGPU = {'mdevNameSelector': 'NVIDIA A10-12Q', 'resourceName': 'nvidia.com/NVIDIA_A10-12Q',
            'externalResourceProvider': True}


def saved(host):
    with open(os.path.join(ROOT, 'inventories', 'example', '.gpuvirt_facts', host + '.json'), encoding='utf-8') as f:
        return json.load(f)


def facts_vars(doc):
    return dict((k, doc[k]) for k in ('gpuvirt_pci_devices', 'gpuvirt_mdev_types', 'gpuvirt_gpu_holders') if k in doc)


def inventory(tmp_path, platform='kubernetes', l40s_configs=('L40S-24Q',), whole_l40s=False, extra=None):
    """gpu-a10 (the example's A10, no vGPU Manager yet: mdev), one L40S vendor-VFIO host per entry of
    ``l40s_configs`` (gpu-s01, gpu-s02...), and with ``whole_l40s`` the example's L40S passed whole (gpu-p01)."""
    vgpu = {'gpu-a10': dict(facts_vars(saved('gpu-v01.example.com')), gpuvirt_vgpu_config='A10-12Q')}
    for i, config in enumerate(l40s_configs):
        name = 'gpu-s%02d' % (i + 1)
        vgpu[name] = dict(facts_vars(vf_fleet.l40s_host_facts(tmp_path, name)), gpuvirt_vgpu_config=config)
    children = {'gpu_vm_vgpu': {'hosts': vgpu}}
    if whole_l40s:
        children['gpu_vm_passthrough'] = {'hosts': {'gpu-p01': facts_vars(saved('gpu-p01.example.com'))}}
    hco = platform == 'openshift'
    inv = {'all': {'vars': dict({
        'gpuvirt_render_dir': "{{ '' if gpuvirt_render_owner is defined else render_root }}",
        'gpuvirt_platform': platform, 'gpuvirt_kubevirt_config': 'hco' if hco else 'kubevirt',
        # the vGPU Manager the example installs (inventories/example/group_vars/all/vgpu.yml)
        'vgpu_manager_image_version': '580.82.02'}, **(extra or {})), 'children': children}}
    path = tmp_path / ('vf-%s.yml' % platform)
    path.write_text(yaml.safe_dump(inv))
    return str(path)


def run(tmp_path, inv, *args, **extra):
    return run_playbook(tmp_path, 'kubevirt', inv, *args, **extra)


def kubevirt_cr(version='v1.9.0', name='kubevirt', namespace='kubevirt'):
    # status.observedKubeVirtVersion is virt-operator's to write once it has deployed that version: the fixture
    # writes it in its place (status subresource)
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': name, 'namespace': namespace},
            'spec': {'configuration': {'developerConfiguration': {'featureGates': ['Snapshot']}}},
            'status': {'observedKubeVirtVersion': version}}


def hco_cluster_objects(version):
    """HyperConverged and the KubeVirt CR HCO creates beside it (kubevirt-kubevirt-hyperconverged in its namespace:
    kubevirt/hyperconverged-cluster-operator v1.18.1 controllers/handlers/kubevirt.go NewKubeVirtWithNameOnly),
    whose status.observedKubeVirtVersion virt-operator writes."""
    hco = {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
           'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'}, 'spec': {}}
    return [hco, kubevirt_cr(version, 'kubevirt-kubevirt-hyperconverged', 'openshift-cnv')]


NODES = [node('gpu-a10', {'nvidia.com/NVIDIA_A10-12Q': '2'}), node('gpu-s01', {'cpu': '64'}),
         node('gpu-s02', {'cpu': '64'}), node('gpu-p01', {'nvidia.com/AD102GL_L40S': '1'})]


def test_mixed_vgpu_fleet_on_kubernetes_permits_both_and_writes_nothing_the_second_time(tmp_path, kube):
    cluster = kube([kubevirt_cr()] + NODES, openshift=False)
    inv = inventory(tmp_path)
    rc, log = run(tmp_path, inv, **devices_apply(cluster, kubevirt_devices_advertise_timeout=2,
                                                 kubevirt_devices_advertise_delay=1))
    assert rc == 0, log
    assert write_summary(cluster.attempts()) == ['patch kubevirts kubevirt/kubevirt'], log
    phd = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')['spec']['configuration']['permittedHostDevices']
    # gpu-s01 advertised nothing yet: KubeVirt's own plugin advertises the entry once permitted, so no wait for it
    assert 'RETRYING' not in log, log
    assert phd['pciHostDevices'] == [L40S] and phd['mediatedDevices'] == [A10_VGPU]
    second = cluster.now()
    rc, log = run(tmp_path, inv, **devices_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_mixed_vgpu_fleet_on_openshift_reads_the_version_from_hco_s_kubevirt_cr(tmp_path, kube):
    cluster = kube(hco_cluster_objects('v1.9.0') + NODES)
    inv = inventory(tmp_path, 'openshift')
    rc, log = run(tmp_path, inv, **devices_apply(cluster))
    assert rc == 0, log
    assert write_summary(cluster.attempts()) == ['patch hyperconvergeds openshift-cnv/kubevirt-hyperconverged'], log
    phd = cluster.get('hco.kubevirt.io/v1beta1', 'HyperConverged', 'kubevirt-hyperconverged', 'openshift-cnv')[
        'spec']['permittedHostDevices']
    assert phd['pciHostDevices'] == [{'pciDeviceSelector': '10DE:26B9', 'resourceName': 'nvidia.com/AD102GL_L40S',
                                      'externalResourceProvider': False}]
    second = cluster.now()
    rc, log = run(tmp_path, inv, **devices_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log
    assert cluster.attempts(since=second) == [], write_summary(cluster.attempts(since=second))


def test_an_older_kubevirt_stops_the_run_before_any_write_naming_versions_and_hosts(tmp_path, kube):
    cluster = kube([kubevirt_cr('v1.8.2')] + NODES, openshift=False)
    rc, log = run(tmp_path, inventory(tmp_path), **devices_apply(cluster))
    said = ' '.join(log.split())
    assert rc != 0 and 'The cluster runs KubeVirt v1.8.2, but gpu-s01 need KubeVirt 1.9.0 or later' in said, log
    assert 'gpu-a10' not in said.split('The cluster runs')[1].split('.')[0], log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    # OpenShift: the same field of HCO's KubeVirt CR; the OpenShift Virtualization release is not known yet
    cluster = kube(hco_cluster_objects('v1.8.2') + NODES)
    rc, log = run(tmp_path, inventory(tmp_path, 'openshift'), **devices_apply(cluster))
    said = ' '.join(log.split())
    assert rc != 0 and 'KubeVirt v1.8.2' in said and 'which OpenShift Virtualization release ships KubeVirt 1.9.0 is not known' in said, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_an_l40s_passed_whole_beside_l40s_vfs_is_refused_naming_both_hosts(tmp_path, kube):
    cluster = kube([kubevirt_cr()] + NODES, openshift=False)
    rc, log = run(tmp_path, inventory(tmp_path, whole_l40s=True), **devices_apply(cluster))
    said = ' '.join(log.split())
    assert rc != 0 and 'PCI selector 10DE:26B9 is wanted by host gpu-p01' in said and 'gpu-s01' in said, log
    assert 'cannot tell these devices apart' in said, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())


def test_two_l40s_profiles_are_refused_unless_allowed(tmp_path, kube):
    cluster = kube([kubevirt_cr()] + NODES, openshift=False)
    inv = inventory(tmp_path, l40s_configs=('L40S-24Q', 'L40S-12Q'))
    rc, log = run(tmp_path, inv, **devices_apply(cluster))
    said = ' '.join(log.split())
    assert rc != 0 and 'L40S-12Q on gpu-s02; L40S-24Q on gpu-s01' in said and 'cannot choose its profile' in said, log
    assert cluster.attempts() == [], write_summary(cluster.attempts())
    # a string from a survey is coerced; the opt-in permits the one resource for both hosts
    rc, log = run(tmp_path, inv, **devices_apply(cluster, kubevirt_devices_allow_mixed_profiles='true'))
    assert rc == 0, log
    phd = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')['spec']['configuration']['permittedHostDevices']
    assert phd['pciHostDevices'] == [L40S]
    rc, log = run(tmp_path, inv, **devices_apply(cluster, kubevirt_devices_allow_mixed_profiles='maybe'))
    assert rc != 0 and 'kubevirt_devices_allow_mixed_profiles' in log, log


def test_verify_expects_one_vf_per_vgpu_on_the_vendor_vfio_node(tmp_path, kube):
    # gpu-s01's config makes two L40S-24Q vGPUs on its one GPU: two VFs, advertised by KubeVirt's own plugin under
    # the permitted name. The kubelet's allocatable is written by the fixture in the kubelet's place.
    extra = {'gpu_operator_vgpu_configs': {'A10-12Q': {'A10-12Q': 2}, 'l40s-2x24': {'L40S-24Q': 2}}}
    inv = inventory(tmp_path, l40s_configs=('l40s-2x24',), extra=extra)
    cluster = kube([node('gpu-a10', {'nvidia.com/NVIDIA_A10-12Q': '2'}),
                    node('gpu-s01', {'nvidia.com/AD102GL_L40S': '1'})], openshift=False)
    args = dict(gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=cluster.kubeconfig, verify_timeout=2, verify_delay=1)
    rc, log = run_playbook(tmp_path, 'verify', inv, **args)
    said = ' '.join(log.split())
    assert rc != 0 and 'node gpu-s01: expected nvidia.com/AD102GL_L40S>=2; advertised nvidia.com/AD102GL_L40S=1' in said, log
    cluster.set_status(cluster.get('v1', 'Node', 'gpu-s01'), {'allocatable': {'nvidia.com/AD102GL_L40S': '2'}})
    rc, log = run_playbook(tmp_path, 'verify', inv, **args)
    assert rc == 0 and 'node gpu-s01: nvidia.com/AD102GL_L40S=2 advertised' in log, log


def without_facts(inv, host):
    """The inventory ``inv`` as a run sees it that left ``host`` out (--limit, or the AWX survey's pool answer): the
    host stays in its group, with no GPU facts (gather.yml contacts only the hosts of the run)."""
    with open(inv, encoding='utf-8') as handle:
        data = yaml.safe_load(handle)
    for group in data['all']['children'].values():
        for key in ('gpuvirt_pci_devices', 'gpuvirt_mdev_types', 'gpuvirt_gpu_holders'):
            (group['hosts'].get(host) or {}).pop(key, None)
    path = inv.replace('.yml', '-without-%s.yml' % host)
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(data, handle)
    return path


def test_a_run_that_left_a_vm_host_out_keeps_the_devices_an_earlier_run_permitted_for_it(tmp_path, kube):
    cluster = kube([kubevirt_cr()] + NODES, openshift=False)
    inv = inventory(tmp_path)
    rc, log = run(tmp_path, inv, **devices_apply(cluster))
    assert rc == 0, log
    # the A10 host left out: the entries this collection added stay (its A10-12Q is no other host's), and stay
    # ours, with a warning naming them and the host; the L40S host's entry is still wanted
    since = cluster.now()
    rc, log = run(tmp_path, without_facts(inv, 'gpu-a10'), **devices_apply(cluster))
    assert rc == 0, log
    said = ' '.join(log.split())
    assert 'kept NVIDIA A10-12Q' in said and 'no GPU facts for gpu-a10 in this run' in said, log
    cr = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')
    phd = cr['spec']['configuration']['permittedHostDevices']
    assert phd['pciHostDevices'] == [L40S] and phd['mediatedDevices'] == [A10_VGPU], phd
    assert cluster.attempts(since=since) == [], write_summary(cluster.attempts(since=since))
    # the run with every host again removes only what no host wants: nothing here
    rc, log = run(tmp_path, inv, **devices_apply(cluster))
    assert rc == 0 and recap(log)['changed'] == '0', log


def test_a_render_that_left_a_vm_host_out_and_has_no_live_object_is_refused(tmp_path):
    inv = without_facts(inventory(tmp_path), 'gpu-a10')
    rc, log = run(tmp_path, inv, gpuvirt_cluster_mode='render', kubevirt_devices_kubevirt_version='v1.9.0')
    said = ' '.join(log.split())
    assert rc != 0 and 'no GPU facts in this run for gpu-a10' in said and 'a sync of it would remove theirs' in said, log
    unused = str(tmp_path / 'unused')
    assert not os.path.isdir(unused) or os.listdir(unused) == [], os.listdir(unused)


def test_a_nodes_run_that_left_a_vendor_vfio_host_out_keeps_its_operand_labels_and_record(tmp_path, kube):
    # the nodes phase (node_labels) on the same fleet: gpu-s01's vendor-VFIO row switches the mdev-only operands off
    # (manifests/node_labels.py, from NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels)
    cluster = kube(NODES, openshift=False)
    inv = inventory(tmp_path)
    labels = dict(gpuvirt_cluster_mode='apply', gpuvirt_kubeconfig=cluster.kubeconfig)
    rc, log = run_playbook(tmp_path, 'nodes', inv, **labels)
    assert rc == 0, log
    before = cluster.get('v1', 'Node', 'gpu-s01')['metadata']
    owned = before['annotations']['gpuvirt.provision/owned-labels']
    assert owned and all(before['labels'][k] == 'false' for k in owned.split(',')), before
    # a run that left gpu-s01 out: without facts its row would be the group's default (vm-vgpu, mdev), which does
    # not switch those operands off; its labels and record stay, and the report says why
    since = cluster.now()
    rc, log = run_playbook(tmp_path, 'nodes', without_facts(inv, 'gpu-s01'), **labels)
    assert rc == 0, log
    said = ' '.join(log.split())
    assert 'gpu-s01 (pool vm-vgpu): left alone: no GPU facts for host gpu-s01 in this run' in said, log
    assert cluster.get('v1', 'Node', 'gpu-s01')['metadata']['labels'] == before['labels']
    assert [a for a in write_summary(cluster.attempts(since=since)) if 'gpu-s01' in a] == [], log
