# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run playbooks/kubevirt.yml for real (ansible-playbook, render mode) against the test inventories here, then
validate every rendered file against the real schemas (tests/unit/schema.py) and check the fields that matter.

No API server can run on the test machines: apply mode is not exercised here.
"""
from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
import schema  # noqa: E402

# the phase's body (phase_<name>.yml, what site.yml imports): these inventories give the host facts as gather.yml
# leaves them, or hosts with none beside explicit inputs, names nothing answers; playbooks/<name>.yml runs
# gather.yml first (tests/integration/playbooks/test_phase_alone.py)
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'phase_kubevirt.yml')
CHART_VALUES = 'k8s-dra-driver-gpu-v0.4.0-dra-driver-nvidia-gpu-values.yaml'


def run(tmp_path, inventory, **extra):
    out = tmp_path / 'render'
    extra_vars = dict(extra, render_root=str(out), ansible_python_interpreter=sys.executable)
    cmd = ['ansible-playbook', '-i', os.path.join(HERE, 'inventories', inventory + '.yml'), PLAYBOOK,
           '-e', json.dumps(extra_vars)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr, out


def recap(output):
    line = [ln for ln in output.splitlines() if ln.startswith('localhost')][-1]
    return dict(field.split('=') for field in line.split(':', 1)[1].split())


def chart_keys_exist(values, defaults, path=()):
    for key, value in values.items():
        assert isinstance(defaults, dict) and key in defaults, 'chart 0.4.0 has no value %s' % '.'.join(path + (key,))
        if isinstance(value, dict) and key not in ('featureGates', 'nodeSelector'):
            chart_keys_exist(value, defaults[key], path + (key,))


def rendered(out):
    """Validate every rendered file; return {kind: [objects]} plus the Helm values under 'HelmValues'."""
    files = sorted(glob.glob(str(out / '*.yaml')))
    assert files, 'nothing rendered'
    by_kind = {}
    for path in files:
        if '-helm-values-' in os.path.basename(path):
            with open(path, encoding='utf-8') as handle:
                values = yaml.safe_load(handle)
            with open(os.path.join(schema.reference_dir(), 'helm', CHART_VALUES), encoding='utf-8') as handle:
                chart_keys_exist(values, yaml.safe_load(handle))
            by_kind.setdefault('HelmValues', []).append(values)
            continue
        for doc in schema.validate_file(path):
            by_kind.setdefault(doc['kind'], []).append(doc)
    return by_kind


def test_passthrough_hco_new_pool_created_foreign_entry_kept_and_idempotent(tmp_path):
    rc, log, out = run(tmp_path, 'passthrough-hco-new')
    assert rc == 0, log
    objs = rendered(out)
    (hco,) = objs['HyperConverged']
    assert hco['apiVersion'] == 'hco.kubevirt.io/v1beta1'
    pci = hco['spec']['permittedHostDevices']['pciHostDevices']
    assert pci[0]['resourceName'] == 'intel.com/QAT'
    assert {(e['pciDeviceSelector'], e['resourceName']) for e in pci[1:]} == {
        ('10DE:2236', 'nvidia.com/GA102GL_A10'), ('10DE:26B9', 'nvidia.com/AD102GL_L40S')}
    assert all(e['externalResourceProvider'] for e in pci)
    assert hco['spec']['featureGates'] == {'disableMDevConfiguration': True}
    assert 'kubevirt.kubevirt.io/jsonpatch' not in hco['metadata']['annotations']
    (pool,) = objs['MachineConfigPool']
    (mc,) = objs['MachineConfig']
    assert pool['metadata']['name'] == 'gpu'
    assert mc['metadata']['labels']['machineconfiguration.openshift.io/role'] == 'gpu'
    assert mc['spec']['kernelArguments'] == ['amd_iommu=on', 'iommu=pt']
    src = mc['spec']['config']['storage']['files'][0]['contents']['source']
    assert 'blacklist nouveau' in base64.b64decode(src.split(',', 1)[1]).decode()
    rc, log, dummy = run(tmp_path, 'passthrough-hco-new')
    assert rc == 0, log
    assert recap(log)['changed'] == '0', log


def test_vgpu_old_hco_uses_jsonpatch_and_mediated_devices(tmp_path):
    rc, log, out = run(tmp_path, 'vgpu-hco-old')
    assert rc == 0, log
    objs = rendered(out)
    (hco,) = objs['HyperConverged']
    assert 'featureGates' not in hco['spec']
    ops = json.loads(hco['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch'])
    assert {'op': 'add', 'path': '/spec/configuration/developerConfiguration/featureGates/-',
            'value': 'DisableMDEVConfiguration'} in ops
    mdev = hco['spec']['permittedHostDevices']['mediatedDevices']
    assert {(e['mdevNameSelector'], e['resourceName']) for e in mdev} == {
        ('NVIDIA A10-12Q', 'nvidia.com/NVIDIA_A10-12Q'), ('NVIDIA L40S-24Q', 'nvidia.com/NVIDIA_L40S-24Q')}
    (mc,) = objs['MachineConfig']
    assert mc['spec']['kernelArguments'] == ['intel_iommu=on', 'iommu=pt']
    assert 'MachineConfigPool' not in objs


def test_an_unquoted_version_is_refused_before_it_picks_the_other_mdev_switch(tmp_path):
    # YAML reads an unquoted 4.20 as 4.2: as text that is OpenShift Virtualization 4.2, before the
    # disableMDevConfiguration gate (4.14+), so the render would write the jsonpatch annotation instead
    rc, log, out = run(tmp_path, 'passthrough-hco-new', kubevirt_devices_hco_version=4.20)
    assert rc != 0, log
    assert 'give each version as quoted text ("4.20", "v1.9.0")' in ' '.join(log.split()), log
    assert not glob.glob(str(out / '*.yaml')), sorted(os.listdir(out)) if out.is_dir() else None
    rc, log, out = run(tmp_path, 'passthrough-hco-new', kubevirt_devices_hco_version='4.20')
    assert rc == 0, log


def test_mixed_upstream_kubevirt_prefers_advertised_names(tmp_path):
    rc, log, out = run(tmp_path, 'mixed-kubevirt')
    assert rc == 0, log
    assert 'nvidia.com/GRID_T4-1Q' in log and 'using nvidia.com/NVIDIA_T4-1Q' in log  # the warning
    objs = rendered(out)
    assert 'HyperConverged' not in objs
    (kv,) = objs['KubeVirt']
    conf = kv['spec']['configuration']
    # rendered for KubeVirt v1.9.0 (kubevirt_devices_kubevirt_version, named by the inventory: a render assumes
    # none): mediatedDevicesConfiguration.enabled replaces the DisableMDEVConfiguration gate, deprecated since v1.8.0
    # (kubevirt/kubevirt staging/src/kubevirt.io/api/core/v1/types.go MediatedDevicesConfiguration.Enabled); no GPU
    # gate, GA from v1.5.0 (pkg/virt-config/featuregate/inactive.go: GPUGate State GA)
    assert conf['developerConfiguration']['featureGates'] == ['Snapshot']
    assert conf['mediatedDevicesConfiguration'] == {'enabled': False}
    assert conf['permittedHostDevices']['pciHostDevices'] == [
        {'pciVendorSelector': '10DE:2236', 'resourceName': 'nvidia.com/GA102GL_A10', 'externalResourceProvider': True}]
    assert conf['permittedHostDevices']['mediatedDevices'][0]['resourceName'] == 'nvidia.com/NVIDIA_T4-1Q'


def test_a_render_that_names_no_kubevirt_and_reads_none_stops_naming_both_ways(tmp_path):
    # KubeVirt v1.7 and older lack mediatedDevicesConfiguration (kubevirt/kubevirt staging/src/kubevirt.io/api/core/v1/
    # types.go: the field is there from v1.8.0-beta.0): a render that assumed v1.9.0 wrote only the field, which such a
    # KubeVirt prunes, and KubeVirt went on creating and deleting mediated devices
    rc, log, out = run(tmp_path, 'mixed-kubevirt', kubevirt_devices_kubevirt_version='')
    assert rc != 0, log
    said = ' '.join(log.split())
    # the inventory gives the live CR (kubevirt_devices_current) without the status virt-operator writes
    assert ('the KubeVirt version is not known: kubevirt_devices_kubevirt_version is not set and the KubeVirt CR '
            'reports no status.observedKubeVirtVersion') in said, log
    assert 'Set kubevirt_devices_kubevirt_version to the KubeVirt release the cluster runs' in said, log
    assert 'gpuvirt_kubeconfig or gpuvirt_kube_context' in said and 'kubevirt_devices_current' in said, log


def test_dra_on_kubevirt_1_8(tmp_path):
    rc, log, out = run(tmp_path, 'dra-kubevirt')
    assert rc == 0, log
    assert 'nvidia-persistenced' in log  # reported, not blocking with DRA driver 0.4.x
    objs = rendered(out)
    (values,) = objs['HelmValues']
    # no dra_driver_nvidia_driver in the inventory: the GPU Operator's driver container runs on the DRA nodes
    # (driver.enabled true by default), so the root is the operator's (NVIDIA DRA guide, "KubeVirt VFIO GPU
    # passthrough", "Install the DRA Driver": "/run/nvidia/driver for a GPU Operator-managed driver"; chart
    # dra-driver-nvidia-gpu 0.4.0 values.yaml comment on nvidiaDriverRoot)
    assert values['nvidiaDriverRoot'] == '/run/nvidia/driver'
    # same guide, "Feature status" and "Install the DRA Driver": both Alpha gates, off by default, set to true
    assert values['featureGates'] == {'PassthroughSupport': True, 'DeviceMetadata': True}
    templates = {t['metadata']['name']: t for t in objs['ResourceClaimTemplate']}
    assert set(templates) == {'vfio-gpu', 'vfio-gpu-x2'}
    devices = templates['vfio-gpu-x2']['spec']['spec']['devices']
    # the chart's DeviceClass for VFIO is vfio.gpu.nvidia.com (NVIDIA/k8s-dra-driver-gpu v0.4.0
    # deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-vfio-gpu.yaml); ExactCount/count is the
    # resource.k8s.io/v1 DeviceRequest "exactly" form (kubernetes.io/docs/concepts/scheduling-eviction/
    # dynamic-resource-allocation); two GPUs are two requests of one device each, because KubeVirt attaches one
    # device per request (kubevirt v1.9 pkg/dra/utils.go resolveDevice: "count > 1 is not supported")
    assert [r['name'] for r in devices['requests']] == ['dra-gpu-1', 'dra-gpu-2']
    assert all(r['exactly'] == {'deviceClassName': 'vfio.gpu.nvidia.com', 'allocationMode': 'ExactCount', 'count': 1}
               for r in devices['requests'])
    assert devices['config'][0]['requests'] == ['dra-gpu-1', 'dra-gpu-2']
    iommu = devices['config'][0]['opaque']['parameters']['iommu']
    # the opaque VfioDeviceConfig of NVIDIA/k8s-dra-driver-gpu v0.4.0 demo/specs/quickstart/v1/gpu-test-vfio-config.yaml
    # (api/nvidia.com/resource/v1beta1/vfiodeviceconfig.go): LegacyOnly is the /dev/vfio/<group> backend (KubeVirt has no
    # IOMMUFD support), enableAPIDevice mounts /dev/vfio/vfio, which libvirt opens
    assert iommu == {'backendPolicy': 'LegacyOnly', 'enableAPIDevice': True}
    (kv,) = objs['KubeVirt']
    # NVIDIA DRA guide, "Prerequisites": "KubeVirt v1.8.0 or later with the GPUsWithDRA feature gate enabled ... only
    # needs to be set explicitly on v1.8.x"; the KubeVirt CR's gate list is spec.configuration.developerConfiguration
    # .featureGates (kubevirt/kubevirt staging/src/kubevirt.io/api/core/v1/types.go DeveloperConfiguration), and the
    # gates already there (GPU, Snapshot) are kept
    assert kv['spec']['configuration']['developerConfiguration']['featureGates'] == ['GPU', 'Snapshot', 'GPUsWithDRA']


def test_dra_on_hco_puts_the_gate_on_hyperconverged_never_on_the_kubevirt_cr(tmp_path):
    # HCO owns the KubeVirt CR and reverts edits to it; a KubeVirt setting HCO has no field for goes through the
    # HyperConverged kubevirt.kubevirt.io/jsonpatch annotation (kubevirt/hyperconverged-cluster-operator
    # docs/cluster-configuration.md, "Jsonpatch Annotations").
    current = {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
               'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'}, 'spec': {}}
    rc, log, out = run(tmp_path, 'dra-kubevirt', gpuvirt_kubevirt_config='hco', dra_driver_current=current)
    assert rc == 0, log
    objs = rendered(out)
    assert 'KubeVirt' not in objs
    (hco,) = objs['HyperConverged']
    patch = json.loads(hco['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch'])
    assert {'op': 'add', 'path': '/spec/configuration/developerConfiguration/featureGates/-',
            'value': 'GPUsWithDRA'} in patch, patch


def test_dra_render_needs_the_platform_named(tmp_path):
    rc, log, out = run(tmp_path, 'dra-kubevirt', gpuvirt_platform='auto')
    assert_failed_before_writing(rc, log, out, 'gpuvirt_platform to one of openshift, kubernetes')


def test_dra_kubelet_plugin_defaults_to_the_labelled_dra_nodes(tmp_path):
    # chart 0.4.x: kubeletPlugin.nodeSelector is empty and its affinity matches every NVIDIA node; node_labels sets
    # nvidia.com/dra-kubelet-plugin=true on the DRA nodes only, the label the GPU Operator's driver manager is told
    # to evict the plugin by (NVIDIA GPU Operator docs, "DRA Driver for NVIDIA GPUs", Known Issues)
    rc, log, out = run(tmp_path, 'dra-kubevirt', dra_driver_node_selector={})
    assert rc == 0, log
    (values,) = rendered(out)['HelmValues']
    assert values['kubeletPlugin'] == {'nodeSelector': {'nvidia.com/dra-kubelet-plugin': 'true'}}


def test_dra_on_kubevirt_1_9_needs_no_gate_and_host_driver_root(tmp_path):
    # the GPU Operator's driver turned off (Helm driver.enabled false): the driver is the host's, root "/" (NVIDIA DRA
    # guide, "Install the DRA Driver": "/ for a host-installed driver"); GPUsWithDRA is on by default from KubeVirt 1.9
    # (same guide, "Prerequisites")
    rc, log, out = run(tmp_path, 'dra-kubevirt', dra_driver_kubevirt_version='1.9.0',
                       gpu_operator_helm_values_extra={'driver': {'enabled': False}})
    assert rc == 0, log
    objs = rendered(out)
    assert 'KubeVirt' not in objs
    assert objs['HelmValues'][0]['nvidiaDriverRoot'] == '/'


def test_dra_host_driver_root_while_the_operator_driver_runs_fails_before_writing(tmp_path):
    # an explicit host root while the GPU Operator's driver container runs on the DRA nodes would point the kubelet
    # plugin at "/" while the driver is under /run/nvidia/driver (NVIDIA DRA guide, "Install the DRA Driver")
    rc, log, out = run(tmp_path, 'dra-kubevirt', dra_driver_nvidia_driver='host')
    assert_failed_before_writing(rc, log, out, 'dra_driver_nvidia_driver is host', 'driver.enabled true',
                                 '/run/nvidia/driver')


def assert_failed_before_writing(rc, log, out, *needles):
    assert rc != 0, log
    for needle in needles:
        assert needle in log, log
    assert not out.exists() or not os.listdir(out), 'files were written before the failure: %s' % os.listdir(out)


def test_resource_name_no_node_advertises_fails_before_writing(tmp_path):
    rc, log, out = run(tmp_path, 'mixed-kubevirt', kubevirt_devices_pci_devices=[
        {'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10_TYPO', 'nodes': ['gpu-1']}])
    assert_failed_before_writing(rc, log, out, 'nvidia.com/GA102GL_A10_TYPO', 'not advertised')


def test_dra_node_running_classic_plugin_fails_before_writing(tmp_path):
    pods = [{'metadata': {'name': 'nvidia-device-plugin-daemonset-7xk2p'}, 'spec': {'nodeName': 'dra-2'}}]
    rc, log, out = run(tmp_path, 'dra-kubevirt', dra_driver_plugin_pods=pods)
    assert_failed_before_writing(rc, log, out, 'DRA node dra-2', 'nvidia-device-plugin-daemonset-7xk2p')


def test_machineconfig_for_missing_pool_fails_before_writing(tmp_path):
    rc, log, out = run(tmp_path, 'vgpu-hco-old', machineconfig_pool='gpu-workers')
    assert_failed_before_writing(rc, log, out, "'gpu-workers' does not exist")


def test_display_manager_holding_a_gpu_fails_before_writing(tmp_path):
    holders = {'held': True, 'holders': [{'pid': 1500, 'executable': 'Xorg', 'device': '/dev/nvidia0',
                                          'minor': 0, 'unit': 'gdm.service'}]}
    # host vars cannot be overridden per host from -e; the playbook reads hostvars, so give every host the holder
    rc, log, out = run(tmp_path, 'dra-kubevirt', gpuvirt_gpu_holders=holders)
    assert_failed_before_writing(rc, log, out, 'PID 1500', 'display manager')


def test_render_without_platform_fails_naming_the_fix(tmp_path):
    rc, log, out = run(tmp_path, 'mixed-kubevirt', gpuvirt_platform='auto')
    assert_failed_before_writing(rc, log, out, 'gpuvirt_platform')


@pytest.mark.skipif(not any('permitted_host_devices' in open(p, encoding='utf-8').read()
                            for p in glob.glob(os.path.join(ROOT, 'plugins', 'filter', '*.py'))),
                    reason='the discovery filters are not in the tree yet')
def test_names_from_host_facts(tmp_path):
    rc, log, out = run(tmp_path, 'facts-hco')
    assert rc == 0, log
    # OpenShift with kubevirt_machineconfig_enabled left unset: no IOMMU MachineConfig (it would drain and reboot its
    # whole pool, never started unasked), and one warning that says so and how to turn it on
    said = ' '.join(log.split())  # the message as one line (the callback wraps it)
    assert said.count('WARNING: kubevirt_machineconfig_enabled is not set, so this OpenShift run writes no IOMMU') == 1, log
    assert 'MachineConfig' not in rendered(out)
    (hco,) = rendered(out)['HyperConverged']
    assert hco['spec']['permittedHostDevices']['pciHostDevices'] == [
        {'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/GA102GL_A10', 'externalResourceProvider': True}]


def test_bad_name_fails_before_the_machineconfig_is_written_too(tmp_path):
    # the playbook's first play checks every role in check mode, so the MachineConfig role (which runs first)
    # writes nothing when the permitted-devices input is bad
    nodes = [{'metadata': {'name': 'gpu-1'}, 'status': {'allocatable': {'nvidia.com/GA102GL_A10': '1'}}},
             {'metadata': {'name': 'gpu-2'}, 'status': {'allocatable': {'cpu': '8'}}}]
    rc, log, out = run(tmp_path, 'passthrough-hco-new', kubevirt_devices_nodes=nodes)
    assert_failed_before_writing(rc, log, out, 'nvidia.com/AD102GL_L40S', 'not advertised')


def test_hco_before_1_9_by_upstream_version(tmp_path):
    rc, log, out = run(tmp_path, 'passthrough-hco-new', kubevirt_devices_hco_version='v1.8.0',
                       kubevirt_machineconfig_enabled=False)
    assert rc == 0, log
    assert 'kubevirt_machineconfig_enabled is not set' not in ' '.join(log.split()), log   # set (false): no warning
    (hco,) = rendered(out)['HyperConverged']
    assert 'featureGates' not in hco['spec']
    assert 'DisableMDEVConfiguration' in hco['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch']


def test_one_render_writes_each_object_once_lists_it_and_prunes_only_its_own(tmp_path):
    # kubevirt_devices (permitted devices) and dra_driver (the GPUsWithDRA gate) both render the KubeVirt CR: one
    # file, one merged object (two files would leave the second to win silently when applied)
    # Kustomize takes a resource id (group/version/kind, namespace, name) once: sigs.k8s.io/kustomize
    # api/resmap/reswrangler.go Append fails with "may not add resource with an already registered id"; and
    # `kubectl apply -f <dir>` applies the files in order, the last one applied winning
    # (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/).
    out = tmp_path / 'render'
    out.mkdir()
    (out / 'foreign.yaml').write_text('kind: ConfigMap\n')
    (out / '60-kubevirt-devices-009-stale-cluster-old.yaml').write_text('stale\n')
    # an earlier complete render wrote that stale file, and recorded its sha256: it is ours to prune
    (out / '.gpuvirt-render.json').write_text(json.dumps({'format': 2, 'complete': True, 'files': {
        '60-kubevirt-devices-009-stale-cluster-old.yaml': {'phase': 'kubevirt',
                                                           'sha256': hashlib.sha256(b'stale\n').hexdigest()}}}))
    rc, log, out = run(tmp_path, 'kubevirt-with-dra')
    assert rc == 0, log
    kubevirts = [path for path in glob.glob(str(out / '*.yaml')) if '-kubevirt-' in os.path.basename(path)
                 and 'KubeVirt' in open(path, encoding='utf-8').read().split('kind: ', 1)[-1][:8]]
    assert len(kubevirts) == 1, kubevirts
    (kv,) = list(schema.validate_file(kubevirts[0]))
    conf = kv['spec']['configuration']
    assert conf['developerConfiguration']['featureGates'][0] == 'Snapshot'
    assert 'GPUsWithDRA' in conf['developerConfiguration']['featureGates']
    assert conf['permittedHostDevices']['pciHostDevices'][0]['resourceName'] == 'nvidia.com/GA102GL_A10'
    names = sorted(os.listdir(out))
    assert 'foreign.yaml' in names and '60-kubevirt-devices-009-stale-cluster-old.yaml' not in names, names
    assert '.gpuvirt-render.lock' not in names
    kustomization = yaml.safe_load((out / 'kustomization.yaml').read_text())
    listed = kustomization['resources']
    assert listed == sorted(listed) and 'foreign.yaml' not in listed and os.path.basename(kubevirts[0]) in listed
    assert all(os.path.exists(out / name) for name in listed)
    manifest = json.loads((out / '.gpuvirt-render.json').read_text())
    # ours: the objects listed, and the DRA driver's Helm values (recorded and pruned, but not a Kubernetes object)
    values = [name for name in names if '-helm-values-' in name]
    assert values == ['70-dra-helm-values-dra-driver-nvidia-gpu.yaml'] and not set(values) & set(listed)
    assert manifest['complete'] is True and sorted(manifest['files']) == sorted(listed + values)
    # the earlier render's bookkeeping was of format 2 (no Flux groups): migrated, the group of waves 60 on lists the
    # objects, the Helm values not (docs/gitops.md, "Flux")
    assert manifest['format'] == 3 and sorted(manifest['flux']) == ['flux-5-kubevirt']
    group = yaml.safe_load((out / 'flux-5-kubevirt' / 'kustomization.yaml').read_text())['resources']
    assert group == ['../' + name for name in listed]
    # Argo CD sync waves from the file prefix: the claim templates (70) after the KubeVirt CR (60)
    assert kv['metadata']['annotations']['argocd.argoproj.io/sync-wave'] == '60'
    # a second render changes nothing
    rc, log, out = run(tmp_path, 'kubevirt-with-dra')
    assert rc == 0 and recap(log)['changed'] == '0', log


def test_dra_host_left_out_of_the_run_is_said_unchecked_not_passed_as_holding_nothing(tmp_path):
    """A DRA host with no holders in this run (a limit or the pool answer left it out) is not checked as if nothing
    held its GPUs: the holders check runs for the hosts the run knows, and the run names the others."""
    with open(os.path.join(HERE, 'inventories', 'dra-kubevirt.yml')) as handle:
        inventory = yaml.safe_load(handle)
    # dra-1 is the host whose GPU nvidia-persistenced holds; left out, its holders are not known
    del inventory['all']['children']['gpu_dra']['hosts']['dra-1']['gpuvirt_gpu_holders']
    path = tmp_path / 'dra-left-out.yml'
    path.write_text(yaml.safe_dump(inventory))
    out = tmp_path / 'render'
    extra_vars = {'render_root': str(out), 'ansible_python_interpreter': sys.executable}
    proc = subprocess.run(['ansible-playbook', '-i', str(path), PLAYBOOK, '-e', json.dumps(extra_vars)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    text = ' '.join(log.split())
    # before: the left-out host's holders were an empty list, "checked" silently
    assert 'DRA hosts without GPU facts in this run (a limit or the pool answer left them out): dra-1.' in text, log
    # the check ran for dra-2 only (dra_preflight's loop label is the node)
    assert '(item=dra-2)' in log and '(item=dra-1)' not in log, log
