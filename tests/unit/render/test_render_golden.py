# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Golden renders: what the playbooks render today for a few inventories, pinned file by file.

A refactor of how the playbooks and roles compute their input (the per-host view, the pool table, the platform)
must not change a rendered object. Each case renders in render mode with no host reachable and no API server, then
compares every rendered file -- its name and its parsed YAML content -- with the golden copy committed under
golden/<case>/ (one JSON file per rendered file, the list of its YAML documents). The render manifest
(.gpuvirt-render.json) holds timestamps and is left out; the temporary directory's path is replaced by a
placeholder wherever it appears.

Regenerate after an intended change with ``GPUVIRT_UPDATE_GOLDEN=1`` and review the diff of golden/.
"""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/unit: schema, vf_fleet, example_render
import schema  # noqa: E402
import vf_fleet  # noqa: E402
from example_render import example_copy, golden, phase as _phase, render, snapshot, write_golden  # noqa: E402


def phase(tmp_path, suite, playbook, inventory):
    return _phase(tmp_path, suite, playbook, inventory, schema.reference_dir())


def site(tmp_path, *extra):
    inv = example_copy(tmp_path)
    return render(tmp_path, inv, *extra)


def vf_site(tmp_path, *extra):
    """The example with its L40S (gpu-p01, passed whole) replaced by an L40S host on vendor-specific VFIO in
    gpu_vm_vgpu, beside the A10 vGPU hosts on mdev (tests/unit/vf_fleet.py): a mixed vGPU fleet in one run."""
    inv = example_copy(tmp_path)
    vf_fleet.add_l40s_host(inv, tmp_path)
    return render(tmp_path, inv, *extra)


CASES = {
    'site-example-openshift': site,
    'site-example-kubernetes': lambda tmp: site(tmp, '-e', 'gpuvirt_platform=kubernetes'),
    # a mixed vGPU fleet: A10s on mdev (mediatedDevices) and an L40S on vendor-specific VFIO (its VFs in
    # pciHostDevices for KubeVirt's own plugin, externalResourceProvider false), on both platforms
    'site-vf-mixed-openshift': vf_site,
    'site-vf-mixed-kubernetes': lambda tmp: vf_site(tmp, '-e', 'gpuvirt_platform=kubernetes'),
    'operator-mixed-openshift': lambda tmp: phase(tmp, 'cluster_operator', 'operator', 'mixed-openshift'),
    'nodes-mixed-openshift': lambda tmp: phase(tmp, 'cluster_operator', 'nodes', 'mixed-openshift'),
    'kubevirt-facts-hco': lambda tmp: phase(tmp, 'cluster_kubevirt', 'kubevirt', 'facts-hco'),
    'kubevirt-dra-kubevirt': lambda tmp: phase(tmp, 'cluster_kubevirt', 'kubevirt', 'dra-kubevirt'),
    # OpenShift whose GPU hosts are all DRA hosts: the GPU Operator's own DRA stack (GPUCluster) serves them
    # (docs/pools/dra.md, "The GPU Operator's DRA stack"): NVIDIADriver and GPUCluster instead of the ClusterPolicy,
    # no operand-off node labels, no DRA Helm values
    'operator-dra-openshift': lambda tmp: phase(tmp, 'cluster_operator', 'operator', 'dra-openshift'),
    'nodes-dra-openshift': lambda tmp: phase(tmp, 'cluster_operator', 'nodes', 'dra-openshift'),
    'kubevirt-dra-openshift': lambda tmp: phase(tmp, 'cluster_operator', 'kubevirt', 'dra-openshift'),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_render_matches_golden(tmp_path, case):
    rc, log, out = CASES[case](tmp_path)
    assert rc == 0, log
    found = snapshot(out, str(tmp_path))
    assert found, 'nothing rendered'
    if os.environ.get('GPUVIRT_UPDATE_GOLDEN') == '1':
        write_golden(case, found)
    expected = golden(case)
    assert sorted(found) == sorted(expected), 'rendered files differ from golden/%s' % case
    for name in sorted(found):
        assert found[name] == expected[name], '%s differs from golden/%s/%s.json' % (name, case, name)
