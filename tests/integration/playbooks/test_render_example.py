# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example inventory renders as shipped, with the GPU hosts unreachable (a GitOps pipeline with no SSH).

``ansible-playbook -i inventories/example playbooks/site.yml -e gpuvirt_cluster_mode=render``, on a copy of the
inventory: the GPU facts come from the saved facts it ships (.gpuvirt_facts/<host>.json, built
from real lspci captures by tools/example/facts.yml), no host is contacted (each points at an address of
TEST-NET-1, RFC 5737, which nothing answers), and every cluster object of the fleet is rendered, once, listed in
kustomization.yaml and valid against the real CRD/OpenAPI schemas. Then OpenShift -> Kubernetes in the same
directory: the OpenShift-only files are pruned.
"""
from __future__ import annotations

import base64
import glob
import json
import os
import subprocess

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
KUBECTL = os.path.join(ROOT, '.build', 'kube', 'bin', 'kubectl')
import schema  # noqa: E402
from example_render import example_copy, render  # noqa: E402


def objects(out):
    listed = yaml.safe_load((out / 'kustomization.yaml').read_text())['resources']
    found = {}
    for name in listed:
        if name.startswith('36-nfd-instance-'):
            # The NFD operator's CRD is not in the reference set (its OLM bundle installs it on OpenShift): the
            # NodeFeatureDiscovery is checked for what the operator and the API server key on, not by schema.
            (doc,) = [d for d in yaml.safe_load_all((out / name).read_text()) if d]
            assert (doc['apiVersion'], doc['kind'], doc['metadata']['namespace']) == (
                'nfd.openshift.io/v1', 'NodeFeatureDiscovery', 'openshift-nfd'), doc
            found.setdefault(doc['kind'], []).append(doc)
            continue
        # the ClusterPolicy is built from the v26.7.0 alm-examples the example pins: that release's CRD
        sources = ['v26.7.0'] if '-clusterpolicy-' in name else None
        for doc in schema.validate_file(str(out / name), crd_sources=sources):
            found.setdefault(doc['kind'], []).append(doc)
    return listed, found


def test_example_inventory_renders_openshift_then_kubernetes_without_reaching_a_host(tmp_path):
    inv = example_copy(tmp_path)
    rc, log, out = render(tmp_path, inv)
    assert rc == 0, log
    assert 'UNREACHABLE' not in log, log
    listed, found = objects(out)
    # every file we wrote is listed, once; nothing else of ours is in the directory
    assert sorted(listed) == sorted(p for p in os.listdir(out) if p.endswith('.yaml') and p != 'kustomization.yaml'
                                    and '-helm-values-' not in p)
    nodes = {n['metadata']['name']: n['metadata']['labels'] for n in found['Node']}
    assert nodes['gpu-c01']['nvidia.com/gpu.workload.config'] == 'container'
    assert nodes['gpu-p02']['nvidia.com/gpu.workload.config'] == 'vm-passthrough'  # gpuvirt_node_name
    assert nodes['gpu-v01']['nvidia.com/vgpu.config'] == 'A10-12Q'
    assert [s['spec']['name'] for s in found['Subscription']] == ['nfd', 'gpu-operator-certified']
    # the GPU Operator on OpenShift needs NFD running, i.e. a NodeFeatureDiscovery (NVIDIA, "Installing the Node
    # Feature Discovery (NFD) Operator": create the NodeFeatureDiscovery instance); after NFD's Subscription
    (nfd,) = found['NodeFeatureDiscovery']
    assert nfd['metadata']['name'] == 'nfd-instance'
    assert listed.index([n for n in listed if n.startswith('36-nfd-instance-')][0]) > listed.index(
        [n for n in listed if '-subscription-openshift-nfd-nfd' in n][0])
    (policy,) = found['ClusterPolicy']
    # the driver version alone, taken from vgpu_manager_image_version (the example sets no version of its own):
    # NVIDIA, "NVIDIA GPU Operator with OpenShift Virtualization", "Creating a ClusterPolicy for the GPU Operator"
    # ("vgpuManager.version=<driver version>"); NVIDIA/gpu-operator controllers/object_controls.go resolveDriverTag
    # appends "-<os tag>" itself, so 580.82.02-rhcos4.18 here would pull a tag that never exists
    assert policy['spec']['vgpuManager']['version'] == '580.82.02'
    (hco,) = found['HyperConverged']
    pci = hco['spec']['permittedHostDevices']['pciHostDevices']
    # from the saved facts of the passthrough hosts: the L40S (10de:26b9) and the P40 (10de:1b38) captures
    assert sorted(d['pciDeviceSelector'] for d in pci) == ['10DE:1B38', '10DE:26B9'], pci
    # the vGPU hosts' facts were saved before the vGPU Manager ran (no types yet): their configs' types are permitted
    # under the names the manager reports (NVIDIA's OpenShift Virtualization guide, "Add GPU Resources to the
    # HyperConverged Custom Resource": mdevNameSelector "NVIDIA A10-24Q", resourceName nvidia.com/NVIDIA_A10-24Q)
    assert [(d['mdevNameSelector'], d['resourceName']) for d in hco['spec']['permittedHostDevices'][
        'mediatedDevices']] == [('NVIDIA A10-12Q', 'nvidia.com/NVIDIA_A10-12Q'),
                                ('NVIDIA A10-4Q', 'nvidia.com/NVIDIA_A10-4Q')]
    # the dedicated MachineConfigPool selects node-role.kubernetes.io/gpu-worker and nothing else puts that label on
    # a node (openshift/machine-config-operator docs/custom-pools.md: a custom pool is populated by labelling nodes):
    # the rendered Node labels put exactly the IOMMU nodes (VM pools) into it, so its MachineConfig reaches them
    (mcp,) = found['MachineConfigPool']
    selector = mcp['spec']['nodeSelector']['matchLabels']
    assert selector == {'node-role.kubernetes.io/gpu-worker': ''}
    in_pool = sorted(name for name, labels in nodes.items() if all(labels.get(k) == v for k, v in selector.items()))
    assert in_pool == ['gpu-p01', 'gpu-p02', 'gpu-v01', 'gpu-v02'], nodes
    assert 'Secret' not in found  # a GitOps tree holds no registry password
    assert 'pull Secret gpuvirt-vgpu-pull' in log and 'is not rendered' in log
    assert found['MachineConfig'] and found['MachineConfigPool']
    manifest = json.loads((out / '.gpuvirt-render.json').read_text())
    assert manifest['complete'] is True and not (out / '.gpuvirt-render.lock').exists()
    # the real Kustomize (kubectl kustomize, built with the test API server: make kube-apiserver) accepts the
    # directory and yields exactly the objects listed, each once
    built = subprocess.run([KUBECTL, 'kustomize', str(out)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    kustomized = [d for d in yaml.safe_load_all(built.stdout) if d]
    assert len(kustomized) == sum(len(v) for v in found.values())
    assert len({(d['apiVersion'], d['kind'], d['metadata'].get('namespace'), d['metadata']['name'])
                for d in kustomized}) == len(kustomized)
    # no host was contacted, so nothing was saved over the shipped facts
    assert not glob.glob(str(inv / 'host_vars' / '*' / '*.json.*'))
    # the end of the render names the absolute directory
    # (the YAML callback wraps a long message at a space: judged with the whitespace collapsed)
    assert 'Render directory %s: wrote ' % out in ' '.join(log.split()), log
    # the same render again changes nothing and rewrites no byte (same bytes, inode and mtime of every file: the
    # bookkeeping records no time), so an unchanged render makes no commit
    before = state(out)
    rc, log, out = render(tmp_path, inv)
    assert rc == 0, log
    recap = [ln for ln in log.splitlines() if ln.startswith('localhost')][-1]
    assert 'changed=0' in recap, recap
    assert state(out) == before
    # --check --diff on the up-to-date render agrees with the real run: no change, no diff (the preview is the
    # close's own, with the sync waves and both writers of a merged object), nothing touched
    rc, log, out = render(tmp_path, inv, '--check', '--diff')
    assert rc == 0, log
    recap = [ln for ln in log.splitlines() if ln.startswith('localhost')][-1]
    assert 'changed=0' in recap, recap
    assert 'sync-wave' not in log and state(out) == before, log

    # Kubernetes (a string, as -e passes it): Helm values instead of OLM, the KubeVirt CR instead of HyperConverged
    rc, log, out = render(tmp_path, inv, '-e', 'gpuvirt_platform=kubernetes')
    assert rc == 0, log
    # the end of the render names every OpenShift file it deleted
    # (the Flux groups a Kubernetes render has no file for go too: flux-2-nfd, flux-4-gpu-stack)
    deleted = sorted(set(before) - set(state(out)) - {'.gpuvirt-render.lock'})
    assert 'flux-2-nfd/kustomization.yaml' in deleted and not (out / 'flux-2-nfd').exists()
    flat = ' '.join(log.split())
    assert len(deleted) >= 5 and 'deleted %d file(s) an earlier render wrote' % len(deleted) in flat, log
    assert all(name in flat for name in deleted), deleted
    listed, found = objects(out)
    assert 'ClusterPolicy' not in found and 'HyperConverged' not in found and 'MachineConfig' not in found
    assert 'Subscription' not in found
    (kubevirt,) = found['KubeVirt']
    assert sorted(d['pciVendorSelector'] for d in kubevirt['spec']['configuration']['permittedHostDevices'][
        'pciHostDevices']) == ['10DE:1B38', '10DE:26B9']
    (values_file,) = glob.glob(str(out / '43-gpu-operator-helm-values-*.yaml'))
    with open(values_file, encoding='utf-8') as handle:
        helm_values = yaml.safe_load(handle)
    # the same driver version on Kubernetes: the chart renders its ClusterPolicy from these values
    # (NVIDIA/gpu-operator deployments/gpu-operator/templates/clusterpolicy.yaml), so the same operator code
    # (resolveDriverTag) appends the OS tag; the chart's vgpuManager.version defaults to "" (values.yaml v26.7.0)
    assert helm_values['vgpuManager']['version'] == '580.82.02'
    # every key we set exists in the chart's values.yaml (Helm ignores an unknown key silently): GPU Operator v26.7.0,
    # the chart version the example installs (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml, reference set)
    with open(os.path.join(schema.reference_dir(), 'helm', 'gpu-operator-v26.7.0-values.yaml'),
              encoding='utf-8') as handle:
        chart = yaml.safe_load(handle)

    def unknown(values, defaults, path=()):
        for key, value in values.items():
            if not isinstance(defaults, dict) or key not in defaults:
                yield '.'.join(path + (key,))
            elif isinstance(value, dict) and key not in ('nodeSelector', 'labels', 'annotations'):
                yield from unknown(value, defaults[key], path + (key,))
    assert not list(unknown(helm_values, chart)), list(unknown(helm_values, chart))
    # the OpenShift files of the first render are gone: ours, and not produced by this one
    assert not glob.glob(str(out / '31-machineconfig-*')) and not glob.glob(str(out / '35-nfd-*'))
    assert not glob.glob(str(out / '36-nfd-*'))


def state(out):
    """Every file below the directory (the Flux groups' kustomizations as <group>/kustomization.yaml): its bytes,
    inode and modification time."""
    found = {}
    for top, _dirs, files in os.walk(out):
        for name in sorted(files):
            path = os.path.join(top, name)
            st = os.lstat(path)
            with open(path, 'rb') as handle:
                found[os.path.relpath(path, out)] = (handle.read(), st.st_ino, st.st_mtime_ns)
    return found


def ours(out):
    """The files of the directory the collection writes (not its bookkeeping, not a foreign file)."""
    return sorted(p for p in os.listdir(out) if p.endswith('.yaml') and p not in ('kustomization.yaml', 'foreign.yaml'))


def test_a_pool_removed_prunes_our_stale_files_keeps_foreign_ones_and_the_inventory_names_the_node(tmp_path):
    inv = example_copy(tmp_path)
    rc, log, out = render(tmp_path, inv)
    assert rc == 0, log
    before = ours(out)
    (out / 'foreign.yaml').write_text('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\n')
    # the vGPU pool loses its hosts; gpu-p02's node gets another name in the inventory, its saved facts unchanged
    hosts = yaml.safe_load((inv / 'hosts.yml').read_text())
    hosts['all']['children']['gpu_vm_vgpu']['hosts'] = {}
    hosts['all']['children']['gpu_vm_passthrough']['hosts']['gpu-p02.example.com']['gpuvirt_node_name'] = 'gpu-p02b'
    (inv / 'hosts.yml').write_text(yaml.safe_dump(hosts))
    # and its vGPU configs (a config no host offers is refused): the vGPU config ConfigMap is not rendered any more
    vgpu = yaml.safe_load((inv / 'group_vars' / 'all' / 'vgpu.yml').read_text())
    vgpu['gpu_operator_vgpu_configs'] = {}
    vgpu.pop('gpu_operator_vgpu_config_default')
    (inv / 'group_vars' / 'all' / 'vgpu.yml').write_text(yaml.safe_dump(vgpu))
    saved = json.loads((inv / '.gpuvirt_facts' / 'gpu-p02.example.com.json').read_text())
    assert saved['gpuvirt_node_name'] == 'gpu-p02'
    rc, log, out = render(tmp_path, inv)
    assert rc == 0, log
    after = ours(out)
    gone = sorted(set(before) - set(after))
    # the vGPU nodes' labels and the vGPU config ConfigMap went with the pool, gpu-p02's file with its old node
    # name; a file's name follows its object alone, so no other file was renamed
    assert any('gpu-v01' in name for name in gone) and any('configmap' in name for name in gone), gone
    assert [name for name in gone if not ('gpu-v0' in name or 'gpu-p02' in name or 'configmap' in name)] == [], gone
    assert sorted(set(after) - set(before)) == ['30-node-labels-node-cluster-gpu-p02b.yaml'], after
    assert not [name for name in after if 'gpu-v01' in name or 'gpu-v02' in name], after
    assert (out / 'foreign.yaml').read_text().endswith('name: mine\n')
    listed, found = objects(out)
    assert listed == sorted(p for p in after if '-helm-values-' not in p)
    assert 'foreign.yaml' not in listed
    nodes = sorted(n['metadata']['name'] for n in found['Node'])
    assert 'gpu-p02b' in nodes and 'gpu-p02' not in nodes, nodes
    (policy,) = found['ClusterPolicy']
    # the GPU Operator's CRD comes from the operator this render subscribes to: Argo CD must not dry-run it
    assert policy['metadata']['annotations']['argocd.argoproj.io/sync-options'] == 'SkipDryRunOnMissingResource=true'


def test_kubernetes_then_openshift_leaves_no_helm_values_file(tmp_path):
    inv = example_copy(tmp_path)
    rc, log, out = render(tmp_path, inv, '-e', 'gpuvirt_platform=kubernetes')
    assert rc == 0, log
    values = glob.glob(str(out / '*-helm-values-*.yaml'))
    assert values, os.listdir(out)
    manifest = json.loads((out / '.gpuvirt-render.json').read_text())
    assert all(os.path.basename(v) in manifest['files'] for v in values)
    assert not [v for v in yaml.safe_load((out / 'kustomization.yaml').read_text())['resources'] if '-helm-values-' in v]
    rc, log, out = render(tmp_path, inv)
    assert rc == 0, log
    assert not glob.glob(str(out / '*-helm-values-*.yaml')), os.listdir(out)


def test_diff_of_a_rendered_pull_secret_never_shows_the_password(tmp_path):
    inv = example_copy(tmp_path)
    password = 'Diff-Pa55-9f3a1c'
    rc, log, out = render(tmp_path, inv, '--diff', '-e', 'gpu_operator_render_pull_secret=true',
                          '-e', 'gpuvirt_registry_username=puller', '-e', 'gpuvirt_registry_password=' + password)
    assert rc == 0, log
    (path,) = glob.glob(str(out / '*-secret-*.yaml'))
    assert oct(os.stat(path).st_mode & 0o777) == '0o600'
    data = yaml.safe_load(open(path).read())['data']['.dockerconfigjson']
    assert password in base64.b64decode(data).decode()
    # the diff shows that the Secret's data changed, not what it holds
    assert '.dockerconfigjson: (redacted, changed)' in log, log
    assert password not in log and data not in log
    assert base64.b64encode(('puller:' + password).encode()).decode() not in log
