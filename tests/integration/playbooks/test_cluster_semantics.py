# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The phases do what the GPU Operator, OpenShift and KubeVirt actually do: each expectation names its source.

Playbooks run for real (ansible-playbook) on this machine with the local connection; GPU facts are given in the
inventory. Sources are cited next to each assertion (docs/operator-contract.md holds the whole table).
"""
from __future__ import annotations

import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
VERSION = '580.82.02'


def run(tmp_path, inventory, playbooks, *args, env=None):
    path = tmp_path / 'hosts.yml'
    path.write_text(yaml.safe_dump(inventory))
    cmd = ['ansible-playbook', '-i', str(path)] + [os.path.join(ROOT, 'playbooks', p) for p in playbooks] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT,
                          env=dict(os.environ, **(env or {})))
    return proc.returncode, proc.stdout + proc.stderr


def flat(text):
    return ' '.join(text.replace('\\n', ' ').split())


def stub_tools(bin_dir):
    """skopeo that finds no image in the registry and a podman that is never reached in check mode."""
    bin_dir.mkdir()
    (bin_dir / 'skopeo').write_text('#!/bin/sh\necho "manifest unknown: manifest unknown" >&2\nexit 1\n')
    (bin_dir / 'podman').write_text('#!/bin/sh\necho "podman must not run in check mode" >&2\nexit 3\n')
    for name in ('skopeo', 'podman'):
        os.chmod(bin_dir / name, 0o755)
    return str(bin_dir)


def test_image_phase_builds_one_tag_per_os_of_the_vgpu_hosts(tmp_path):
    run_file = tmp_path / ('NVIDIA-Linux-x86_64-%s-vgpu-kvm.run' % VERSION)
    run_file.write_text('#!/bin/sh\n')
    context = tmp_path / 'context'
    context.mkdir()
    (context / 'Containerfile').write_text('FROM scratch\n')
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    inventory = {'all': {
        'vars': dict(local, vgpu_manager_image_run_file=str(run_file), vgpu_manager_image_version=VERSION,
                     vgpu_manager_image_context_dir=str(context), vgpu_manager_image_registry='registry.example.com',
                     vgpu_manager_image_repository='nvidia'),
        'hosts': {'localhost': {}},
        'children': {'gpu_vm_vgpu': {'hosts': {
            # the operator's OS tags of two Ubuntu releases, as gather.yml registers them
            'vgpu-jammy': {'gpuvirt_os_tag': 'ubuntu22.04'},
            'vgpu-noble': {'gpuvirt_os_tag': 'ubuntu24.04'},
            'vgpu-jammy-2': {'gpuvirt_os_tag': 'ubuntu22.04'}}}}}}
    path = stub_tools(tmp_path / 'bin') + os.pathsep + os.environ['PATH']
    rc, log = run(tmp_path, inventory, ['vgpu_image.yml'], '--check', env={'PATH': path})
    assert rc == 0, log
    text = flat(log)
    # NVIDIA/gpu-operator controllers/object_controls.go resolveDriverTag pulls <repository>/<image>:<version>-<os
    # tag> with the OS tag of the GPU node (controllers/state_manager.go getGPUNodeOSInfo), and NVIDIA's "NVIDIA GPU
    # Operator with OpenShift Virtualization", section "Building the vGPU Manager image", tags the image
    # ${VERSION}-${OS_TAG}: each OS in use needs its own tag, and each is built once.
    for tag in ('ubuntu22.04', 'ubuntu24.04'):
        ref = 'registry.example.com/nvidia/vgpu-manager:%s-%s' % (VERSION, tag)
        assert text.count('%s: would be built and pushed' % ref) == 1, log
    assert 'podman must not run' not in log


def test_os_tag_filter_matches_the_operator_rule(tmp_path):
    cases = {'ID=ubuntu\nVERSION_ID="22.04"\n': 'ubuntu22.04', 'ID="rhcos"\nVERSION_ID="4.18"\n': 'rhcos4.18',
             'ID="rhel"\nVERSION_ID="9.4"\n': 'rhel9'}
    inventory = {'all': {'hosts': {'localhost': {'ansible_connection': 'local',
                                                 'ansible_python_interpreter': sys.executable}}}}
    play = [{'hosts': 'localhost', 'gather_facts': False, 'vars': {'texts': list(cases)}, 'tasks': [
        {'ansible.builtin.debug': {'msg': '{{ texts | map("gpuvirt.provision.os_tag") | join(" ") }}'}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    proc = subprocess.run(['ansible-playbook', '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml')],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # NVIDIA/gpu-operator controllers/state_manager.go getGPUNodeOSInfo: osTag = ID + VERSION_ID from the NFD
    # os_release labels, VERSION_ID cut to its major part for "ol", "rocky" and "rhel".
    assert 'msg: %s' % ' '.join(cases.values()) in proc.stdout, proc.stdout


A10 = {'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
       'class_id': '0302', 'kind': 'gpu', 'is_vf': False, 'driver': None, 'iommu_group': '41', 'companions': []}


def gpu_facts(mdev=None):
    return {'gpuvirt_pci_devices': {'gpus': [A10], 'nvswitches': [], 'devices': [A10],
                                    'iommu': {'enabled': True, 'message': 'IOMMU on: 1 group'}},
            'gpuvirt_mdev_types': mdev or {'parents': []},
            'gpuvirt_gpu_holders': {'held': False, 'holders': [], 'message': 'no process holds /dev/nvidia*'},
            'gpuvirt_os_tag': 'ubuntu22.04'}


def container_fleet(tmp_path, **cluster):
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'ansible_become': False}
    return {'all': {
        'vars': dict(local, gpuvirt_cluster_mode='render', gpuvirt_render_dir=str(tmp_path / 'render'),
                     gpuvirt_platform='kubernetes', **cluster),
        'children': {'gpu_container': {'hosts': {
            'gpu-1.example.com': gpu_facts(),
            'gpu-2.example.com': dict(gpu_facts(), gpuvirt_node_name='worker-gpu-2')}}}}}


def test_render_names_nodes_like_apply_and_the_drain(tmp_path):
    rc, log = run(tmp_path, container_fleet(tmp_path), ['nodes.yml'])
    assert rc == 0, log
    names = sorted(yaml.safe_load(p.read_text())['metadata']['name'] for p in (tmp_path / 'render').glob('*.yaml')
                   if p.name != 'kustomization.yaml')
    # One rule (docs/contracts.md, "Node names"): gpuvirt_node_name, else the short inventory name, the name the reboot role's
    # drain (reboot_node_name) and gather.yml already used. Kubernetes node names are the kubelet's hostname
    # (https://kubernetes.io/docs/concepts/architecture/nodes/#node-name-uniqueness), not the FQDN the inventory uses.
    assert names == ['gpu-1', 'worker-gpu-2'], names


def test_apply_preflight_names_the_hosts_without_a_node(tmp_path, kube):
    # on the real API server (tests/integration/kube_cluster.py), as the least-privilege automation account
    cluster = kube([{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1'}}], openshift=False)
    inventory = container_fleet(tmp_path, gpuvirt_kubeconfig=cluster.kubeconfig)
    inventory['all']['vars']['gpuvirt_cluster_mode'] = 'apply'
    cache = tmp_path / 'tmp'
    cache.mkdir()
    env = {'HOME': str(tmp_path), 'TMPDIR': str(cache)}
    rc, log = run(tmp_path, inventory, ['preflight.yml'], env=env)
    # kubernetes.core.k8s_info (https://docs.ansible.com/ansible/latest/collections/kubernetes/core/
    # k8s_info_module.html) lists the Nodes; the one host whose node is missing is named with the name looked for
    assert rc != 0, log
    assert 'No Node in the cluster for gpu-2.example.com -> worker-gpu-2 (host -> node name)' in flat(log), log
    assert 'gpu-1.example.com ->' not in flat(log), log
    assert cluster.attempts() == [] and cluster.dry_runs() == []
    cluster.create({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'worker-gpu-2'}})
    rc, log = run(tmp_path, inventory, ['preflight.yml'], env=env)
    assert rc == 0, log


def test_a_render_against_the_named_cluster_leaves_an_administrator_s_deploy_label_to_them(tmp_path, kube):
    # A render that names its cluster reads the Nodes, and their labels and owned-labels records decide what is the
    # collection's, as in apply mode: gpu-1 (a DRA host, whose row switches the device plugin, DCGM and its exporter
    # off) already carries nvidia.com/gpu.deploy.dcgm=false, set by an administrator (the record names none). The file
    # leaves it out: a GitOps tool owns what a file holds and would delete it once the host leaves the pool
    # (kubernetes.io, "Declarative Management of Kubernetes Objects Using Configuration Files").
    dcgm = 'nvidia.com/gpu.deploy.dcgm'
    cluster = kube([{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {
        'name': 'gpu-1', 'labels': {dcgm: 'false'}, 'annotations': {'gpuvirt.provision/owned-labels': ''}}}],
        openshift=False)
    inventory = container_fleet(tmp_path, gpuvirt_kubeconfig=cluster.kubeconfig)
    inventory['all']['children'] = {'gpu_dra': {'hosts': {'gpu-1.example.com': gpu_facts()}}}
    cache = tmp_path / 'tmp'
    cache.mkdir()
    rc, log = run(tmp_path, inventory, ['nodes.yml'], env={'HOME': str(tmp_path), 'TMPDIR': str(cache)})
    assert rc == 0, log
    (node,) = [yaml.safe_load(p.read_text()) for p in (tmp_path / 'render').glob('*.yaml')
               if p.name != 'kustomization.yaml']
    labels, record = node['metadata']['labels'], node['metadata']['annotations']['gpuvirt.provision/owned-labels']
    assert dcgm not in labels and dcgm not in record.split(','), node
    assert labels['nvidia.com/gpu.deploy.device-plugin'] == 'false', node
    assert 'nvidia.com/gpu.deploy.device-plugin' in record.split(','), node
    assert cluster.attempts() == [], 'a render writes nothing to the cluster'
