# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""site.yml in render mode for a mixed vGPU fleet (tests/unit/vf_fleet.py: the example's A10s on mdev beside
an L40S on vendor-specific VFIO; the objects are pinned by the golden cases site-vf-mixed-*): what the run says
about the KubeVirt version it could not check, and the refusal of one GPU model both whole and as VFs, made in
preflight before any phase renders a file."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from example_render import example_copy, render  # noqa: E402
import vf_fleet  # noqa: E402


def test_a_render_without_a_cluster_notes_the_kubevirt_version_it_could_not_check(tmp_path):
    inv = example_copy(tmp_path)
    vf_fleet.add_l40s_host(inv, tmp_path)
    rc, log, out = render(tmp_path, inv)
    assert rc == 0, log
    said = ' '.join(log.split())
    note = ('NOTE: KubeVirt version not checked (no cluster read: render mode without gpuvirt_kubeconfig or '
            'gpuvirt_kube_context): this fleet needs KubeVirt 1.9.0 or later for gpu-s01.example.com')
    # said by preflight's gate and again by the summary, the run's last play
    assert said.count(note) >= 2, log
    assert 'NOTE: KubeVirt version not checked' in said.split('PLAY [Summary of the run]')[1], log


def test_a_render_naming_a_kubevirt_too_old_for_the_fleet_is_refused_in_preflight(tmp_path):
    # the KubeVirt CR path (Kubernetes): the render names the KubeVirt it targets, and that version decides what it
    # writes, so the gate judges it. kubevirt/kubevirt v1.9.0 pkg/virt-handler/device-manager/nvidia.go
    # shouldPermitNvidia: no earlier release's own device plugin serves a VF on the nvidia driver
    inv = example_copy(tmp_path)
    vf_fleet.add_l40s_host(inv, tmp_path)
    rc, log, out = render(tmp_path, inv, '-e', 'gpuvirt_platform=kubernetes', '-e',
                          'kubevirt_devices_kubevirt_version=v1.8.2')
    said = ' '.join(log.split())
    assert rc != 0, log
    assert ('The render targets KubeVirt v1.8.2 (kubevirt_devices_kubevirt_version), but gpu-s01.example.com need '
            'KubeVirt 1.9.0 or later' in said), log
    rendered = [n for n in os.listdir(out) if n.endswith('.yaml')] if os.path.isdir(out) else []
    assert rendered == [], rendered


def test_one_model_whole_and_as_vfs_is_refused_in_preflight_before_any_file_is_rendered(tmp_path):
    inv = example_copy(tmp_path)
    # the example's gpu-p01 is an L40S passed whole: keep it beside the L40S VFs
    vf_fleet.add_l40s_host(inv, tmp_path, drop=())
    rc, log, out = render(tmp_path, inv)
    said = ' '.join(log.split())
    assert rc != 0 and 'PCI selector 10DE:26B9 is wanted by host gpu-p01.example.com' in said, log
    assert 'and by host gpu-s01.example.com' in said and 'cannot tell these devices apart' in said, log
    assert 'Preflight - the devices KubeVirt must tell apart' in said.split('fatal:', maxsplit=1)[0].rsplit('PLAY [', maxsplit=1)[1], log
    rendered = [n for n in os.listdir(out) if n.endswith('.yaml')] if os.path.isdir(out) else []
    assert rendered == [], rendered


def test_a_custom_pool_of_a_worker_run_gets_the_worker_iommu_machineconfig_not_a_second_one(tmp_path):
    # machineconfig_pool worker, the L40S host in the existing custom pool gpu-vf-l40s (gpuvirt_machineconfig_pool):
    # a custom pool inherits the worker MachineConfigs (openshift/machine-config-operator docs/custom-pools.md), so
    # worker's IOMMU MachineConfig reaches it; a second one with the same kernel arguments for gpu-vf-l40s would be
    # merged into its config as well
    inv = example_copy(tmp_path)
    vf_fleet.add_l40s_host(inv, tmp_path)
    rc, log, out = render(tmp_path, inv, '-e', 'machineconfig_pool=worker', '-e', 'machineconfig_create_pool=false')
    assert rc == 0, log
    iommu = sorted(n for n in os.listdir(out) if n.startswith('31-machineconfig-machineconfig-'))
    assert len(iommu) == 1 and iommu[0].startswith('31-machineconfig-machineconfig-cluster-100-worker-gpuvirt-iommu-'), iommu
    assert not [n for n in os.listdir(out) if n.startswith('31-machineconfig-machineconfigpool-')]  # none created
