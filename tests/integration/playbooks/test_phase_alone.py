# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A phase playbook run alone gathers the host facts it reads, as an AWX job of the workflow does (each job is its
own ansible-playbook run: the facts preflight registered are gone) and as a relaunch or the command line does.

Render mode on a copy of the example inventory, no host reachable: the facts come from the saved facts beside the
inventory (.gpuvirt_facts/<host>.json, docs/saved-facts.md), read by the gather.yml that playbooks/<phase>.yml
imports. What the phase renders alone is what site.yml renders for it (the golden renders of
test_render_golden.py), file for file.
"""
from __future__ import annotations

import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from example_render import example_copy, golden, snapshot  # noqa: E402
import vf_fleet  # noqa: E402


def render_phase(tmp_path, inv, playbook):
    out = tmp_path / 'rendered'
    cmd = ['ansible-playbook', '-i', str(inv), os.path.join(ROOT, 'playbooks', playbook),
           '-e', 'gpuvirt_cluster_mode=render', '-e', 'gpuvirt_render_dir=%s' % out,
           '-e', 'ansible_python_interpreter=%s' % sys.executable]
    # no cluster of the machine is read (as test_render_example.render)
    env = dict(os.environ, KUBECONFIG=str(tmp_path / 'no-kubeconfig'))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr, out


def rendered_like_site(out, tmp_path, case):
    """The phase's files (the kustomization.yaml files aside, the top one and each Flux group's: they list this run's
    files only) and site.yml's for them."""
    rendered = snapshot(str(out), str(tmp_path))
    found = {k: v for k, v in rendered.items() if not k.endswith('kustomization.yaml')}
    site = golden(case)
    # each Flux group the phase wrote lists only files of that group in site.yml's render, and every one it lists
    # was written
    for name in [k for k in rendered if k.endswith('--kustomization.yaml')]:
        listed = rendered[name][0]['resources']
        assert set(listed) <= set(site[name][0]['resources']), (name, listed)
        assert all(entry[len('../'):] in found for entry in listed), (name, listed, sorted(found))
    return found, {name: site.get(name) for name in found}


def test_kubevirt_alone_renders_the_permitted_devices_from_the_saved_facts(tmp_path):
    inv = example_copy(tmp_path)
    rc, log, out = render_phase(tmp_path, inv, 'kubevirt.yml')
    # before the phase gathered: "Nothing to permit: give kubevirt_devices_hosts (host facts) ..."
    assert rc == 0, log
    found, site = rendered_like_site(out, tmp_path, 'site-example-openshift')
    hco = '60-kubevirt-devices-hyperconverged-openshift-cnv-kubevirt-hyperconverged.yaml'
    # the rendered MachineConfig's name ends in its content hash (manifests/machineconfig.py with_content_name)
    assert hco in found and [name for name in found if name.startswith(
        '31-machineconfig-machineconfig-cluster-100-gpu-worker-gpuvirt-iommu-')], sorted(found)
    devices = found[hco][0]['spec']['permittedHostDevices']
    assert devices['pciHostDevices'] and devices['mediatedDevices'], devices
    assert found == site


def test_nodes_alone_labels_a_vendor_vfio_host_known_only_from_its_saved_facts(tmp_path):
    inv = example_copy(tmp_path)
    vf_fleet.add_l40s_host(inv, tmp_path)
    rc, log, out = render_phase(tmp_path, inv, 'nodes.yml')
    assert rc == 0, log
    found, site = rendered_like_site(out, tmp_path, 'site-vf-mixed-openshift')
    # the vendor-VFIO row (vm-vgpu-vf) switches off the operands that serve mdev only (manifests/node_labels.py
    # says why, from NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels); without facts the
    # host would get its group's default row, mdev, and none of these
    node = found['30-node-labels-node-cluster-gpu-s01.yaml'][0]['metadata']
    for operand in ('sandbox-device-plugin', 'sandbox-validator', 'vgpu-device-manager'):
        assert node['labels']['nvidia.com/gpu.deploy.' + operand] == 'false', node
    assert found == site


def test_a_host_the_run_selected_but_cannot_reach_stops_the_phase_before_it_renders(tmp_path):
    """A selected GPU host that does not answer is not a host the run left out: the run stops in gather.yml, before
    the phase renders anything (it would otherwise take the host for one a limit left out and keep, without
    knowing, what an earlier run permitted for it). Ansible's any_errors_fatal does not act on an unreachable host,
    so gather.yml reaches each host it must contact first and fails the run when one does not answer."""
    inv = example_copy(tmp_path)
    hosts = yaml.safe_load((inv / 'hosts.yml').read_text())
    # gathered live, not from its saved facts: 192.0.2.1 (TEST-NET-1, example_copy) never answers
    hosts['all']['children']['gpu_vm_passthrough']['hosts']['gpu-p02.example.com']['gpuvirt_facts_source'] = 'live'
    (inv / 'hosts.yml').write_text(yaml.safe_dump(hosts))
    rc, log, out = render_phase(tmp_path, inv, 'kubevirt.yml')
    assert rc != 0, log
    text = ' '.join(log.split())
    assert 'gpu-p02.example.com could not be reached to gather its GPU facts' in text, log[-3000:]
    # nothing rendered: the phase's plays never ran (before: rc 4, and the HyperConverged rendered with a
    # "kept" warning for gpu-p02, the render marked complete)
    assert not [p for p in out.rglob('*') if p.is_file()] if out.exists() else True, sorted(out.rglob('*'))
    assert 'Permit the GPU devices in HyperConverged or the KubeVirt CR' not in log
