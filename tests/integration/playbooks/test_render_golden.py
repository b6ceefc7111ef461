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

import json
import os
import subprocess
import sys

import pytest
import yaml

from test_render_example import example_copy, first_render, render  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
GOLDEN = os.path.join(HERE, 'golden')
INTEGRATION = os.path.join(ROOT, 'tests', 'integration')
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, INTEGRATION)
import schema  # noqa: E402
import vf_fleet  # noqa: E402
from kube_cluster import phase_body  # noqa: E402

PLACEHOLDER = '@TMP@'


def phase(tmp_path, suite, playbook, inventory):
    """One phase playbook on a test inventory of tests/integration/<suite>/inventories, the way that suite's
    test_render.py runs it: its body, phase_<name>.yml (the inventory gives the facts)."""
    out = tmp_path / 'render'
    extra_vars = {'render_root': str(out), 'reference_root': schema.reference_dir(),
                  'ansible_python_interpreter': sys.executable}
    cmd = ['ansible-playbook', '-i', os.path.join(INTEGRATION, suite, 'inventories', inventory + '.yml'),
           phase_body(playbook), '-e', json.dumps(extra_vars)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr, out


def site(tmp_path, *extra):
    inv = example_copy(tmp_path)
    return render(tmp_path, inv, *extra)


def vf_site(tmp_path, *extra):
    """The example with its L40S (gpu-p01, passed whole) replaced by an L40S host on vendor-specific VFIO in
    gpu_vm_vgpu, beside the A10 vGPU hosts on mdev (tests/integration/vf_fleet.py): a mixed vGPU fleet in one run."""
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


def _scrub(value, tmp):
    if isinstance(value, dict):
        return {k: _scrub(v, tmp) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, tmp) for v in value]
    if isinstance(value, str):
        return value.replace(tmp, PLACEHOLDER)
    return value


def snapshot(out, tmp):
    """{file name: [parsed YAML documents]} of everything rendered, the render manifest and lock aside; the Flux
    kustomization of a wave group as ``<group>--kustomization.yaml`` (the golden directory is flat)."""
    files = {}
    for name in sorted(os.listdir(out)):
        if name in ('.gpuvirt-render.json', '.gpuvirt-render.lock'):
            continue
        path = os.path.join(out, name)
        if os.path.isdir(path):
            assert name.startswith('flux-') and os.listdir(path) == ['kustomization.yaml'], (name, os.listdir(path))
            path, name = os.path.join(path, 'kustomization.yaml'), name + '--kustomization.yaml'
        with open(path, encoding='utf-8') as handle:
            files[name] = _scrub(list(yaml.safe_load_all(handle)), tmp)
    return files


def golden(case):
    directory = os.path.join(GOLDEN, case)
    files = {}
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
        with open(os.path.join(directory, name), encoding='utf-8') as handle:
            files[name[:-len('.json')]] = json.load(handle)
    return files


def write_golden(case, files):
    directory = os.path.join(GOLDEN, case)
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))
    for name, docs in files.items():
        with open(os.path.join(directory, name + '.json'), 'w', encoding='utf-8') as handle:
            json.dump(docs, handle, indent=1, sort_keys=True)
            handle.write('\n')


# the cases whose command a test of test_render_example.py runs too: rendered once (first_render), read here as that
# render left its directory
SHARED = {'site-example-openshift': (), 'site-example-kubernetes': ('-e', 'gpuvirt_platform=kubernetes')}


@pytest.mark.parametrize('case', sorted(CASES))
def test_render_matches_golden(tmp_path, tmp_path_factory, case):
    if case in SHARED:
        tmp_path, _inv, rc, log, _out, out = first_render(tmp_path_factory, *SHARED[case])
    else:
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
