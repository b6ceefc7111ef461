# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/upgrade.yml in render mode: the upgrade as a Git change.

A copy of the example inventory (its saved facts, no host reachable, no cluster read) is rendered first as a GitOps
directory holds it (playbooks/operator.yml and kubevirt.yml, each alone); then upgrade.yml renders the upgrade into
the same directory. What changes there is exactly what the upgrade changes, each object with its Argo CD sync wave,
plus UPGRADE.md (the sync order); a refused upgrade writes nothing and leaves no lock; a second render writes no
byte. OpenShift (OLM, HyperConverged) and Kubernetes (Helm, the KubeVirt CR).
"""
from __future__ import annotations

import hashlib
import os

import yaml

# tests/unit, on the path through the integration tests' conftest.py
from example_render import example_copy, render

WAVE = 'argocd.argoproj.io/sync-wave'
SUB = '40-gpu-operator-subscription-nvidia-gpu-operator-gpu-operator-certified.yaml'
NFD_SUB = '35-nfd-operator-subscription-openshift-nfd-nfd.yaml'
POLICY = '43-gpu-operator-policy-clusterpolicy-cluster-gpu-cluster-policy.yaml'
HCO = '60-kubevirt-devices-hyperconverged-openshift-cnv-kubevirt-hyperconverged.yaml'
VALUES = '43-gpu-operator-helm-values-gpu-operator.yaml'
KV = '60-kubevirt-devices-kubevirt-kubevirt-kubevirt.yaml'


def playbook(tmp_path, inv, name, *extra):
    return render(tmp_path, inv, *extra, playbook=name)


def state(out):
    """{relative path: (sha256, inode, mtime_ns)} of every file in the directory, the Flux group directories'
    kustomization.yaml files included."""
    found = {}
    for top, dirs, files in os.walk(out):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            with open(path, 'rb') as handle:
                st = os.stat(path)
                found[os.path.relpath(path, out)] = (hashlib.sha256(handle.read()).hexdigest(), st.st_ino,
                                                     st.st_mtime_ns)
    return found


def load(out, name):
    with open(os.path.join(out, name), encoding='utf-8') as handle:
        return [d for d in yaml.safe_load_all(handle) if d]


def recipe_rows(out):
    """The sync-order table of UPGRADE.md: [(wave, files pattern)]."""
    with open(os.path.join(out, 'UPGRADE.md'), encoding='utf-8') as handle:
        text = handle.read()
    rows = [line.split(' | ') for line in text.splitlines() if line.startswith('| ') and line[2].isdigit()]
    return [(row[1], row[2].strip('`')) for row in rows], text


def baseline(tmp_path, inv, *extra):
    for name in ('operator.yml', 'kubevirt.yml'):
        rc, log, out = playbook(tmp_path, inv, name, *extra)
        assert rc == 0, log
    return out


def changed(before, after):
    return sorted(name for name in after if before.get(name, (None,))[0] != after[name][0])


def assert_wave(out, name, rows):
    """The object's sync wave (render/gitops.py writes its file prefix) is the recipe's step for its files."""
    (obj,) = load(out, name)
    wave = obj['metadata']['annotations'][WAVE]
    assert wave == name[:2], (name, wave)
    assert [w for w, files in rows if name.startswith(files.rstrip('*'))] == [wave], (name, rows)


def test_openshift_olm_upgrade_render(tmp_path):
    inv = example_copy(tmp_path)
    out = baseline(tmp_path, inv)
    before = state(out)
    targets = ('-e', 'upgrade_gpu_operator_version=v26.7.0', '-e', 'vgpu_manager_image_version=580.95.05',
               '-e', 'upgrade_kubevirt_version=v1.10.0')

    # the example subscribes with Automatic approval (the gpu_operator default): OLM would install the new CSV at
    # the sync, outside the roll (OLM's catalog operator approves an Automatic plan itself: operator-lifecycle-manager
    # pkg/controller/operators/catalog/operator.go createInstallPlan); refused before the directory is taken
    rc, log, _written = playbook(tmp_path, inv, 'upgrade.yml', *targets)
    assert rc != 0, log
    assert 'The upgrade is not rendered, nothing was written: gpu_operator_install_plan_approval is Automatic' in log
    assert state(out) == before and not os.path.exists(out / '.gpuvirt-render.lock')

    manual = ('-e', 'gpu_operator_install_plan_approval=Manual')
    rc, log, _written = playbook(tmp_path, inv, 'upgrade.yml', *(targets + manual))
    assert rc == 0, log
    after = state(out)
    # exactly the objects the upgrade changes, and the recipe; the HyperConverged is rendered again for the new
    # KubeVirt and stays byte for byte (its mdev switch follows the OpenShift Virtualization version, hco.py)
    assert changed(before, after) == sorted([SUB, NFD_SUB, POLICY, 'UPGRADE.md', '.gpuvirt-render.json']), \
        changed(before, after)
    assert after[HCO] == before[HCO]
    (sub,) = load(out, SUB)
    # OLM leaves a Manual plan in RequiresApproval until spec.approved is true (operator-framework/api
    # installplan_types.go; upgrade_operator.py): the sync installs nothing, upgrade.yml approves the target
    assert sub['spec']['installPlanApproval'] == 'Manual' and sub['spec']['channel'] == 'v26.7'
    (policy,) = load(out, POLICY)
    assert policy['spec']['vgpuManager']['version'] == '580.95.05'
    assert policy['spec']['daemonsets']['updateStrategy'] == 'OnDelete'
    assert policy['spec']['driver']['upgradePolicy']['autoUpgrade'] is False
    rows, text = recipe_rows(out)
    # Argo CD syncs wave by wave, lowest first (Argo CD user guide, "Sync Phases and Waves")
    assert [w for w, _files in rows] == ['40', '43', '60']
    for name in (SUB, POLICY, HCO):
        assert_wave(out, name, rows)
    assert 'gpu-operator-certified.v26.7.0' in text and 'only once KubeVirt reports v1.10.0' in text
    assert 'playbooks/upgrade.yml -e upgrade_gpu_operator_version=v26.7.0 -e upgrade_kubevirt_version=v1.10.0' in text
    with open(out / 'kustomization.yaml', encoding='utf-8') as handle:
        assert 'UPGRADE.md' not in handle.read()

    # a second render writes no byte: same content, same inode, same modification time
    rc, log, _written = playbook(tmp_path, inv, 'upgrade.yml', *(targets + manual))
    assert rc == 0, log
    assert state(out) == after
    assert 'wrote 0 of its' in log


def test_kubernetes_helm_upgrade_render(tmp_path):
    inv = example_copy(tmp_path)
    # the directory was rendered for KubeVirt v1.7.2 (the gate); the upgrade goes to v1.8.0
    platform = inv / 'group_vars' / 'all' / 'platform.yml'
    text = platform.read_text()
    assert 'kubevirt_devices_kubevirt_version: v1.9.0' in text
    platform.write_text(text.replace('kubevirt_devices_kubevirt_version: v1.9.0',
                                     'kubevirt_devices_kubevirt_version: v1.7.2'))
    k8s = ('-e', 'gpuvirt_platform=kubernetes')
    out = baseline(tmp_path, inv, *k8s)
    before = state(out)
    assert load(out, KV)[0]['spec']['configuration']['developerConfiguration']['featureGates'] == \
        ['DisableMDEVConfiguration']

    # refusals decided without a cluster, each named: a chart version that is not the inventory's, a KubeVirt
    # minor skip (KubeVirt upgrades one minor release at a time: "Updates and Deletion")
    rc, log, _written = playbook(tmp_path, inv, 'upgrade.yml', *(k8s + ('-e', 'upgrade_gpu_operator_version=v26.7.1',
                                                                 '-e', 'upgrade_kubevirt_version=v1.9.0')))
    assert rc != 0, log
    assert 'upgrade_gpu_operator_version is v26.7.1 but gpu_operator_chart_version is v26.7.0' in log
    assert 'KubeVirt v1.7.2 -> v1.9.0 skips a minor version' in log
    assert state(out) == before and not os.path.exists(out / '.gpuvirt-render.lock')

    targets = k8s + ('-e', 'upgrade_gpu_operator_version=v26.7.1', '-e', 'gpu_operator_chart_version=v26.7.1',
                     '-e', 'vgpu_manager_image_version=580.95.05', '-e', 'upgrade_kubevirt_version=v1.8.0')
    rc, log, _written = playbook(tmp_path, inv, 'upgrade.yml', *targets)
    assert rc == 0, log
    after = state(out)
    assert changed(before, after) == sorted([VALUES, KV, 'UPGRADE.md', '.gpuvirt-render.json']), \
        changed(before, after)
    with open(out / VALUES, encoding='utf-8') as handle:
        header = handle.read()
    assert '--version v26.7.1' in header
    (values,) = load(out, VALUES)
    assert values['vgpuManager']['version'] == '580.95.05'
    assert values['daemonsets']['updateStrategy'] == 'OnDelete'
    assert values['driver']['upgradePolicy']['autoUpgrade'] is False
    # KubeVirt 1.8.0 has mediatedDevicesConfiguration.enabled and deprecates the DisableMDEVConfiguration gate
    # (kubevirt/kubevirt v1.8.0 release notes; kubevirt.py has_mdev_enabled_field): the field, not the gate
    (kv,) = load(out, KV)
    config = kv['spec']['configuration']
    assert config['mediatedDevicesConfiguration'] == {'enabled': False}
    assert 'DisableMDEVConfiguration' not in str(config.get('developerConfiguration'))
    rows, text = recipe_rows(out)
    assert [w for w, _files in rows] == ['before 40', '40', '43', '60']
    assert_wave(out, KV, rows)
    assert [files for w, files in rows if w == '43'] == [VALUES]
    # Helm never upgrades a chart's crds/ (Helm docs, "Custom Resource Definitions"); Flux's HelmRelease skips them
    # on upgrade unless spec.upgrade.crds is CreateReplace (helm-controller HelmRelease API: "Default is Skip")
    assert 'helm show crds gpu-operator --repo https://helm.ngc.nvidia.com/nvidia --version v26.7.1' in text
    assert 'spec.upgrade.crds: CreateReplace' in text

    rc, log, _written = playbook(tmp_path, inv, 'upgrade.yml', *targets)
    assert rc == 0, log
    assert state(out) == after
