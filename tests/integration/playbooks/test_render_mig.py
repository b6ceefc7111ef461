# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""site.yml in render mode with a MIG container host: the example inventory's gpu-c01 (an HGX H100, its saved facts
from a real capture) moved into gpu_container_mig, rendered for OpenShift, then for Kubernetes in the same directory.

Expectations, from NVIDIA/gpu-operator v26.7.0: the MIG manager reads nvidia.com/mig.config from the node
(NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager: the label it watches) and is enabled by migManager.enabled in the
ClusterPolicy or the chart's values; mig.strategy picks how the device plugin names the slices
(NVIDIA/k8s-device-plugin v0.20.0 internal/rm/rm.go: single keeps nvidia.com/gpu, mixed names
nvidia.com/mig-<profile>). A fleet without a MIG host renders neither (the golden renders)."""
from __future__ import annotations

import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from test_render_example import example_copy, render  # noqa: E402

MIG_HOST = 'gpu-c01.example.com'


def move_to_mig(inv):
    hosts = yaml.safe_load((inv / 'hosts.yml').read_text())
    children = hosts['all']['children']
    entry = children['gpu_container']['hosts'].pop(MIG_HOST)
    children['gpu_container_mig'] = {'hosts': {MIG_HOST: dict(entry, gpuvirt_mig_config='all-1g.10gb')}}
    (inv / 'hosts.yml').write_text(yaml.safe_dump(hosts))


def docs(out, marker):
    found = []
    for name in sorted(os.listdir(out)):
        if marker in name and name.endswith('.yaml'):
            found += [d for d in yaml.safe_load_all((out / name).read_text()) if d]
    return found


def test_a_mig_host_gets_its_mig_config_label_and_the_operator_its_mig_manager_on_both_platforms(tmp_path):
    inv = example_copy(tmp_path)
    move_to_mig(inv)
    rc, log, out = render(tmp_path, inv)
    assert rc == 0, log
    nodes = dict((n['metadata']['name'], n['metadata'].get('labels') or {}) for n in docs(out, '-node-labels-'))
    assert nodes['gpu-c01']['nvidia.com/mig.config'] == 'all-1g.10gb', nodes['gpu-c01']
    assert nodes['gpu-c01']['nvidia.com/gpu.workload.config'] == 'container'
    # the other container host is no MIG host: its label is left alone (a value there may be an administrator's)
    assert 'nvidia.com/mig.config' not in nodes['gpu-c02'], nodes['gpu-c02']
    (policy,) = docs(out, '-clusterpolicy-')
    assert policy['spec']['migManager']['enabled'] is True, policy['spec'].get('migManager')
    assert policy['spec']['mig']['strategy'] == 'mixed', policy['spec'].get('mig')

    rc, log, out = render(tmp_path, inv, '-e', 'gpuvirt_platform=kubernetes', '-e', 'gpu_operator_mig_strategy=single')
    assert rc == 0, log
    (values,) = docs(out, '-helm-values-')
    values = values if isinstance(values, dict) else json.loads(values)
    assert values['migManager']['enabled'] is True and values['mig']['strategy'] == 'single', values
    assert not docs(out, '-clusterpolicy-'), 'the OpenShift ClusterPolicy file was left behind'
