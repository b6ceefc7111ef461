# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run playbooks/operator.yml, nodes.yml and verify.yml for real (ansible-playbook, render mode) against the test
inventories here, then validate every rendered file against the real schemas (tests/unit/schema.py) and check the
fields that matter. No API server can run on the test machines: apply mode is not exercised here.
"""
from __future__ import annotations

import base64
import glob
import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from kube_cluster import phase_body  # noqa: E402
import schema  # noqa: E402

W, V = 'nvidia.com/gpu.workload.config', 'nvidia.com/vgpu.config'


def run(tmp_path, playbook, inventory, **extra):
    # the phase's body (phase_<name>.yml, what site.yml imports): these inventories give the host facts as gather.yml
    # leaves them, or hosts with none beside explicit inputs, names nothing answers; playbooks/<name>.yml runs
    # gather.yml first (tests/integration/playbooks/test_phase_alone.py)
    out = tmp_path / 'render'
    extra_vars = dict(extra, render_root=str(out), reference_root=schema.reference_dir(),
                      ansible_python_interpreter=sys.executable)
    cmd = ['ansible-playbook', '-i', os.path.join(HERE, 'inventories', inventory + '.yml'),
           phase_body(playbook), '-e', json.dumps(extra_vars)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr, out


def recap(output):
    line = [ln for ln in output.splitlines() if ln.startswith('localhost')][-1]
    return dict(field.split('=') for field in line.split(':', 1)[1].split())


def reference_json(*parts):
    with open(os.path.join(schema.reference_dir(), *parts), encoding='utf-8') as handle:
        return json.load(handle)


def release_of_subscription(out):
    """The GPU Operator release the rendered Subscription's channel installs, as the reference set holds its CRD:
    channel v<major>.<minor> carries the CSVs gpu-operator-certified.v<major>.<minor>.<patch> (NVIDIA, "Installing
    the NVIDIA GPU Operator" on OpenShift)."""
    for path in glob.glob(str(out / '*-subscription-*gpu-operator-certified.yaml')):
        with open(path, encoding='utf-8') as handle:
            channel = yaml.safe_load(handle)['spec']['channel']
        crds = glob.glob(os.path.join(schema.reference_dir(), 'crds', 'gpu-operator-%s.*-nvidia.com_clusterpolicies.yaml'
                                      % channel))
        assert len(crds) == 1, 'no single ClusterPolicy CRD of channel %s in the reference set: %s' % (channel, crds)
        return os.path.basename(crds[0]).split('-')[2]
    raise AssertionError('a ClusterPolicy was rendered without the GPU Operator Subscription')


def rendered(out):
    """Validate every rendered file; return {kind: [objects]}, Helm values under 'HelmValues', modes by kind."""
    files = sorted(glob.glob(str(out / '*.yaml')))
    assert files, 'nothing rendered'
    by_kind = {}
    for path in files:
        if '-helm-values-' in os.path.basename(path):
            with open(path, encoding='utf-8') as handle:
                by_kind.setdefault('HelmValues', []).append(yaml.safe_load(handle))
            continue
        if os.path.basename(path).startswith('36-nfd-instance-'):
            # The NFD operator's CRD is not in the reference set (its OLM bundle installs it on OpenShift): the
            # NodeFeatureDiscovery is checked for what the operator and the API server key on, not by schema.
            with open(path, encoding='utf-8') as handle:
                (doc,) = [d for d in yaml.safe_load_all(handle) if d]
            assert (doc['apiVersion'], doc['kind'], doc['metadata']['namespace']) == (
                'nfd.openshift.io/v1', 'NodeFeatureDiscovery', 'openshift-nfd'), doc
            by_kind.setdefault(doc['kind'], []).append(doc)
            continue
        # the ClusterPolicy must be valid for the CRD of the release the rendered Subscription installs
        sources = [release_of_subscription(out)] if '-clusterpolicy-' in os.path.basename(path) else None
        for doc in schema.validate_file(path, crd_sources=sources):
            by_kind.setdefault(doc['kind'], []).append(doc)
            by_kind.setdefault('_modes', {})[doc['kind']] = stat.S_IMODE(os.stat(path).st_mode)
    return by_kind


def changed_paths(base, new, path=()):
    if isinstance(base, dict) or isinstance(new, dict):
        if not (isinstance(base, (dict, type(None))) and isinstance(new, (dict, type(None)))):
            return {path}
        base, new = base or {}, new or {}
        return set().union(*[changed_paths(base.get(k), new.get(k), path + (k,)) for k in set(base) | set(new)])
    return set() if base == new else {path}


def chart_keys_exist(values, defaults, path=()):
    for key, value in values.items():
        assert isinstance(defaults, dict) and key in defaults, 'chart has no value %s' % '.'.join(path + (key,))
        if isinstance(value, dict) and key != 'nodeSelector':
            chart_keys_exist(value, defaults[key], path + (key,))


def assert_failed_before_writing(rc, log, out, *needles):
    assert rc != 0, log
    for needle in needles:
        assert needle in log, log
    assert not out.exists() or not os.listdir(out), 'files were written before the failure: %s' % os.listdir(out)


def test_openshift_vgpu_operator(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'openshift-vgpu')
    assert rc == 0, log
    assert 'n0t-a-real-pass' not in log
    objs = rendered(out)
    namespaces = {n['metadata']['name']: n for n in objs['Namespace']}
    assert sorted(namespaces) == ['nvidia-gpu-operator', 'openshift-nfd']
    groups = {g['metadata']['namespace']: g for g in objs['OperatorGroup']}
    assert groups['nvidia-gpu-operator']['spec']['targetNamespaces'] == ['nvidia-gpu-operator']
    subs = {s['metadata']['namespace']: s for s in objs['Subscription']}
    sub = subs['nvidia-gpu-operator']
    assert sub['spec']['channel'] == 'v26.7' and sub['spec']['installPlanApproval'] == 'Manual'
    # NVIDIA, "Installing the Node Feature Discovery (NFD) Operator"
    # (https://docs.nvidia.com/datacenter/cloud-native/openshift/latest/install-nfd.html): "The Node Feature Discovery
    # (NFD) Operator is a prerequisite for the NVIDIA GPU Operator", installed from Red Hat's catalog into openshift-nfd.
    assert groups['openshift-nfd']['spec']['targetNamespaces'] == ['openshift-nfd']
    assert (subs['openshift-nfd']['spec']['name'], subs['openshift-nfd']['spec']['source']) == ('nfd', 'redhat-operators')
    assert (sub['spec']['name'], sub['spec']['source']) == ('gpu-operator-certified', 'certified-operators')
    (secret,) = objs['Secret']
    assert objs['_modes']['Secret'] == 0o600
    auths = json.loads(base64.b64decode(secret['data']['.dockerconfigjson']))['auths']
    assert base64.b64decode(auths['registry.example.com:5000']['auth']).decode() == 'builder:n0t-a-real-pass'
    (cm,) = objs['ConfigMap']
    conf = yaml.safe_load(cm['data']['config.yaml'])
    assert conf['vgpu-configs']['L40S-24Q'] == [{'devices': 'all', 'vgpu-devices': {'L40S-24Q': 2}}]
    (cp,) = objs['ClusterPolicy']
    schema.validate(cp, crd_sources=['v26.7.0'])
    base = [e for e in reference_json('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json')
            if e['kind'] == 'ClusterPolicy'][0]
    ours = {('spec', 'sandboxWorkloads', 'enabled'), ('spec', 'sandboxWorkloads', 'defaultWorkload')} | {
        ('spec', 'vgpuManager', k) for k in ('enabled', 'repository', 'image', 'version', 'imagePullSecrets')} | {
        ('spec', 'vgpuDeviceManager', 'config', k) for k in ('name', 'default')} | {
        # the collection's upgrade policy for VM fleets (plugins/module_utils/manifests/upgrade_policy.py): the CSV's
        # alm-examples leave daemonsets.updateStrategy RollingUpdate and driver.upgradePolicy.autoUpgrade true, so
        # the operator would replace the vGPU Manager under running VMs (NVIDIA/gpu-operator v26.7.0,
        # assets/state-vgpu-manager/0500_daemonset.yaml follows daemonsets.updateStrategy)
        ('spec', 'daemonsets', 'updateStrategy'), ('spec', 'driver', 'upgradePolicy', 'autoUpgrade')}
    assert changed_paths(base, cp) <= ours, changed_paths(base, cp) - ours
    assert cp['spec']['daemonsets']['updateStrategy'] == 'OnDelete'
    assert cp['spec']['driver']['upgradePolicy']['autoUpgrade'] is False
    assert cp['spec']['vgpuManager']['imagePullSecrets'] == [secret['metadata']['name']]
    assert cp['spec']['vgpuDeviceManager']['config'] == {'name': cm['metadata']['name'], 'default': 'A10-12Q'}
    assert cp['spec']['sandboxWorkloads']['defaultWorkload'] == 'vm-vgpu'
    rc, log, dummy = run(tmp_path, 'operator', 'openshift-vgpu')
    assert rc == 0 and recap(log)['changed'] == '0', log


def test_kubernetes_passthrough_helm_values(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'kubernetes-passthrough')
    assert rc == 0, log
    objs = rendered(out)
    assert set(objs) - {'_modes'} == {'Namespace', 'HelmValues'}
    (values,) = objs['HelmValues']
    with open(os.path.join(schema.reference_dir(), 'helm', 'gpu-operator-v26.7.0-values.yaml'), encoding='utf-8') as h:
        chart_keys_exist(values, yaml.safe_load(h))
    assert values['sandboxWorkloads'] == {'enabled': True, 'defaultWorkload': 'vm-passthrough', 'mode': 'kubevirt'}
    assert values['vgpuManager'] == {'enabled': False} and values['vfioManager'] == {'enabled': True}
    assert values['operator']['nodeSelector'] == {'node-role.kubernetes.io/worker': ''}
    (ns,) = objs['Namespace']
    assert ns['metadata']['name'] == 'gpu-operator'


def test_mixed_openshift_pinned_channel_existing_secret_board_check(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'mixed-openshift',
                       gpu_operator_vgpu_configs={'A10-24Q': {'A10-24Q': 1}}, gpu_operator_vgpu_config_default='A10-24Q')
    assert rc == 0, log
    assert 'boards only' in log
    objs = rendered(out)
    assert 'Secret' not in objs
    (sub,) = [s for s in objs['Subscription'] if s['metadata']['name'] == 'gpu-operator-certified']
    assert sub['spec']['channel'] == 'v26.7'
    assert objs['ClusterPolicy'][0]['spec']['vgpuManager']['imagePullSecrets'] == ['existing-quay-pull']


def test_mixed_openshift_node_labels(tmp_path):
    rc, log, out = run(tmp_path, 'nodes', 'mixed-openshift')
    assert rc == 0, log
    nodes = {n['metadata']['name']: n['metadata'].get('labels') for n in rendered(out)['Node']}
    # each file holds the node's whole wanted state, also where the cluster's node already has it (pt-1) or differs
    # in one label (vgpu-1): a GitOps tool deletes from the live object what the file held at the last sync and holds
    # no more (kubernetes.io, "Declarative Management of Kubernetes Objects Using Configuration Files"), so a file of
    # the changes alone would take the workload label off at the next sync; the report names only the changes
    assert nodes == {'ctr-1': {W: 'container'}, 'vgpu-1': {W: 'vm-vgpu', V: 'A10-24Q'}, 'pt-1': {W: 'vm-passthrough'}}
    assert 'pt-1 (pool vm-passthrough): labels already right' in log
    # every node gets its owned-labels record (none of these switches an operand off: empty), the one write on pt-1
    records = {n['metadata']['name']: n['metadata']['annotations']['gpuvirt.provision/owned-labels']
               for n in rendered(out)['Node']}
    assert records == {name: '' for name in ('ctr-1', 'pt-1', 'vgpu-1')}


def test_openshift_vgpu_node_labels_without_cluster_state(tmp_path):
    rc, log, out = run(tmp_path, 'nodes', 'openshift-vgpu')
    assert rc == 0, log
    nodes = {n['metadata']['name']: n['metadata']['labels'] for n in rendered(out)['Node']}
    # vgpu-l40s's facts show NVIDIA's vendor-specific VFIO interface (a VF with nvidia/creatable_vgpu_types): its row
    # is vm-vgpu-vf, whose nodes keep the vm-vgpu workload (the vGPU Manager) with the operands that cannot serve
    # VFs switched off (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels / addGPUStateLabels;
    # manifests/node_labels.py says why each)
    off = {'nvidia.com/gpu.deploy.sandbox-device-plugin': 'false', 'nvidia.com/gpu.deploy.vgpu-device-manager': 'false',
           'nvidia.com/gpu.deploy.sandbox-validator': 'false'}
    assert nodes == {'vgpu-a10': {W: 'vm-vgpu', V: 'A10-12Q'}, 'vgpu-l40s': dict({W: 'vm-vgpu', V: 'L40S-24Q'}, **off)}
    # the rendered patch carries the record of the labels we switched off (only those are ours to remove later)
    records = {n['metadata']['name']: n['metadata']['annotations']['gpuvirt.provision/owned-labels']
               for n in rendered(out)['Node']}
    assert records == {'vgpu-a10': '', 'vgpu-l40s': ','.join(sorted(off))}


def test_vgpu_config_change_under_running_vm_fails_naming_it(tmp_path):
    vmis = [{'metadata': {'name': 'cad-3', 'namespace': 'eng'}, 'status': {'nodeName': 'vgpu-1', 'phase': 'Running'}}]
    rc, log, out = run(tmp_path, 'nodes', 'mixed-openshift', node_labels_vmis=vmis)
    assert_failed_before_writing(rc, log, out, 'vgpu-1', 'eng/cad-3', 'A10-12Q -> A10-24Q')


def test_vgpu_config_no_node_gpu_offers_fails_before_writing(tmp_path):
    # default ConfigMap: vgpu-1 (an A10, vGPU Manager not loaded yet) is checked by its board
    rc, log, out = run(tmp_path, 'nodes', 'mixed-openshift', node_labels_vgpu_config_default='L40S-24Q')
    assert_failed_before_writing(rc, log, out, 'node vgpu-1: vGPU config L40S-24Q', 'GA102GL [A10]')
    # custom configs (the operator phase's variable): the config's types against the node's vGPU types
    rc, log, out = run(tmp_path, 'nodes', 'openshift-vgpu',
                       gpu_operator_vgpu_configs={'A10-12Q': {'A10-12Q': 2}, 'L40S-24Q': {'L40S-48Q': 1}})
    assert_failed_before_writing(rc, log, out, 'node vgpu-l40s: vGPU config L40S-24Q needs type L40S-48Q',
                                 '0000:c1:00.4 offers L40S-24Q')


def test_node_in_two_pools_and_unknown_pool_fail(tmp_path):
    rc, log, out = run(tmp_path, 'nodes', 'two-pools')
    assert_failed_before_writing(rc, log, out, 'gpu-1 is in the pools container, vm-passthrough')
    rc, log, out = run(tmp_path, 'nodes', 'mixed-openshift', gpuvirt_pool='vm-gpu')
    assert_failed_before_writing(rc, log, out, "unknown pool 'vm-gpu'")


def test_every_phase_reads_a_host_s_pool_the_same_way(tmp_path):
    # the operator and verify phases take the pool from the same per-host view as the node labels: a host in two
    # groups is refused there too (never silently put in one of them), and gpuvirt_pool must agree with the group
    for playbook in ('operator', 'verify'):
        rc, log, out = run(tmp_path, playbook, 'two-pools')
        assert_failed_before_writing(rc, log, out, 'gpu-1 is in the pools container, vm-passthrough')
    rc, log, out = run(tmp_path, 'operator', 'mixed-openshift', gpuvirt_pool='vm-vgpu')
    assert_failed_before_writing(rc, log, out, 'gpuvirt_pool vm-vgpu disagrees with its group (pool container)')


def test_vgpu_type_no_host_offers_fails_before_writing(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'openshift-vgpu',
                       gpu_operator_vgpu_configs={'A10-12Q': {'A10-12Q': 2}, 'L40S-24Q': {'L40S-24Q': 2},
                                                  'big': {'A10-48Q': 1}})
    assert_failed_before_writing(rc, log, out, 'A10-48Q', 'vgpu-a10', 'vgpu-l40s', '0000:41:00.4 offers A10-12Q')


def test_private_registry_without_pull_secret_fails_before_writing(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'openshift-vgpu', gpu_operator_pull_secret={})
    assert_failed_before_writing(rc, log, out, 'registry.example.com:5000', 'gpu_operator_pull_secret')


def test_render_leaves_the_pull_secret_out_unless_asked_and_names_it(tmp_path):
    # a GitOps repository must not hold the registry password: by default the Secret is named, not rendered
    rc, log, out = run(tmp_path, 'operator', 'openshift-vgpu', gpu_operator_render_pull_secret=False)
    assert rc == 0, log
    objs = rendered(out)
    assert 'Secret' not in objs
    assert 'the pull Secret gpuvirt-vgpu-pull (type kubernetes.io/dockerconfigjson' in ' '.join(log.split()), log
    for path in glob.glob(str(out / '*')):
        with open(path, encoding='utf-8') as handle:
            assert 'n0t-a-real-pass' not in handle.read(), path
    # the ClusterPolicy still names the Secret the nodes pull with
    (cp,) = objs['ClusterPolicy']
    assert cp['spec']['vgpuManager']['imagePullSecrets'] == ['gpuvirt-vgpu-pull']


def test_pull_secret_for_another_registry_fails_without_showing_the_password(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'openshift-vgpu',
                       gpu_operator_pull_secret={'registry': 'quay.io', 'username': 'u', 'password': 'hunter2-xyz'})
    # the mistake is reported (by a task that sees no password), the password never is
    assert_failed_before_writing(rc, log, out, 'logs in to quay.io', 'registry.example.com:5000',
                                 'gpu_operator_pull_secret.registry')
    assert 'hunter2-xyz' not in log, log


def test_pull_secret_without_password_fails_naming_the_field(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'openshift-vgpu',
                       gpu_operator_pull_secret={'registry': 'registry.example.com:5000', 'username': 'builder'})
    assert_failed_before_writing(rc, log, out, 'gpu_operator_pull_secret.password')


def test_verify_reports_expected_vs_advertised_and_renders_smoke_vm(tmp_path):
    expected = {'gpu-1': {'nvidia.com/GA102GL_A10': 1}, 'worker-gpu-2.example.com': {'nvidia.com/GA102GL_A10': 1}}
    nodes = [{'metadata': {'name': 'gpu-1'}, 'status': {'allocatable': {'nvidia.com/GA102GL_A10': '1'}}},
             {'metadata': {'name': 'worker-gpu-2.example.com'}, 'status': {'allocatable': {'cpu': '8'}}}]
    rc, log, out = run(tmp_path, 'verify', 'kubernetes-passthrough', verify_expected=expected, verify_nodes=nodes)
    assert rc != 0, log
    assert 'node worker-gpu-2.example.com: expected nvidia.com/GA102GL_A10>=1; advertised no nvidia.com/*' in log
    nodes[1]['status']['allocatable']['nvidia.com/GA102GL_A10'] = '1'
    rc, log, out = run(tmp_path, 'verify', 'kubernetes-passthrough', verify_expected=expected, verify_nodes=nodes,
                       verify_smoke_vm=True)
    assert rc == 0, log
    (vm,) = rendered(out)['VirtualMachine']
    assert vm['spec']['template']['spec']['domain']['devices']['gpus'] == [
        {'name': 'gpu1', 'deviceName': 'nvidia.com/GA102GL_A10'}]


@pytest.mark.skipif(not any('permitted_host_devices' in open(p, encoding='utf-8').read()
                            for p in glob.glob(os.path.join(ROOT, 'plugins', 'filter', '*.py'))),
                    reason='the discovery filters are not in the tree yet')
def test_verify_expected_names_from_host_facts(tmp_path):
    nodes = [{'metadata': {'name': 'gpu-1'}, 'status': {'allocatable': {'nvidia.com/GA102GL_A10': '1'}}},
             {'metadata': {'name': 'worker-gpu-2.example.com'}, 'status': {'allocatable': {}}}]
    rc, log, dummy = run(tmp_path, 'verify', 'kubernetes-passthrough', verify_nodes=nodes)
    assert rc != 0 and 'worker-gpu-2.example.com: expected nvidia.com/GA102GL_A10>=1' in log, log


def test_rendered_labels_come_before_the_operator(tmp_path):
    # nodes.yml alone (it needs nothing operator.yml sets), then operator.yml, into one directory as site.yml does
    rc, log, out = run(tmp_path, 'nodes', 'openshift-vgpu')
    assert rc == 0, log
    rc, log, dummy = run(tmp_path, 'operator', 'openshift-vgpu')
    assert rc == 0, log
    names = sorted(os.path.basename(p) for p in glob.glob(str(out / '*.yaml')))
    labels = [n for n in names if '-node-' in n]
    operator = [n for n in names if 'gpu-operator' in n or '-clusterpolicy-' in n]
    assert labels and operator, names
    # NVIDIA, "NVIDIA GPU Operator with OpenShift Virtualization", section "Labeling worker nodes": a node without
    # nvidia.com/gpu.workload.config gets the default workload, and "vGPU Device Configuration": set
    # nvidia.com/vgpu.config "prior to installing the GPU Operator". Applied in file order (GitOps), every label
    # must come before the operator's Namespace, Subscription and ClusterPolicy.
    assert names.index(labels[-1]) < names.index(operator[0]), names


def test_alm_examples_file_of_another_channel_is_refused_naming_both(tmp_path):
    other = reference_json('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json')
    other = json.loads(json.dumps(other).replace('"enabled": true', '"enabled": false', 1))
    pm = {'status': {'defaultChannel': 'v26.7', 'channels': [
        {'name': 'v26.7', 'currentCSV': 'gpu-operator-certified.v26.7.0',
         'currentCSVDesc': {'annotations': {'alm-examples': json.dumps(other)}}}]}}
    rc, log, out = run(tmp_path, 'operator', 'openshift-vgpu', gpu_operator_package_manifest=pm,
                       gpu_operator_channel='v26.7')
    # NVIDIA, "NVIDIA GPU Operator with OpenShift Virtualization", "Creating a ClusterPolicy for the GPU Operator":
    # the ClusterPolicy is the alm-examples of the installed CSV (oc get csv ... alm-examples); a file from another
    # CSV than the subscribed channel's would carry another version's defaults: refused, naming both.
    assert_failed_before_writing(rc, log, out, 'gpu-operator-v26.7.0-csv-alm-examples.json',
                                 'gpu-operator-certified.v26.7.0, the CSV of channel v26.7')


def test_a_pinned_channel_of_another_release_than_the_alm_examples_file_is_refused(tmp_path):
    # GPU Operator channels are the operator's minor versions and each carries that version's CSVs (NVIDIA,
    # "Installing the NVIDIA GPU Operator" on OpenShift), and the ClusterPolicy must come from the alm-examples of the
    # installed CSV ("Creating a ClusterPolicy for the GPU Operator"): channel v25.10 with the v26.7.0 file would give
    # a v25.10 operator a v26.7 ClusterPolicy. Refused before any write, naming both.
    rc, log, out = run(tmp_path, 'operator', 'mixed-openshift', gpu_operator_channel='v25.10')
    assert_failed_before_writing(rc, log, out, 'are from release v26.7.0, whose channel is v26.7',
                                 'the Subscription follows channel v25.10')
    # and a file whose release is not said is refused too: nothing shows it is the channel's
    rc, log, out = run(tmp_path, 'operator', 'mixed-openshift', gpu_operator_alm_examples_release='')
    assert_failed_before_writing(rc, log, out, 'name the GPU Operator release the alm-examples in',
                                 'gpu_operator_alm_examples_release')


# DRA nodes keep the container workload, so the GPU Operator runs nvidia-operator-validator there
# (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0 gpuStateLabels); its plugin-validation init container
# waits for nvidia.com/gpu or nvidia.com/mig-* capacity and fails without it (cmd/nvidia-validator/main.go@v26.7.0
# Plugin.validate -> validateGPUResource), and the operator removes that init container only when devicePlugin is
# disabled (controllers/object_controls.go@v26.7.0 TransformValidatorComponent, case "plugin").
def test_dra_nodes_render_a_cluster_policy_without_the_device_plugin(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'dra-mixed-openshift')
    assert rc == 0, log
    (cp,) = rendered(out)['ClusterPolicy']
    schema.validate(cp, crd_sources=['v26.7.0'])
    assert cp['spec']['devicePlugin']['enabled'] is False
    base = [e for e in reference_json('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json')
            if e['kind'] == 'ClusterPolicy'][0]
    assert base['spec']['devicePlugin']['enabled'] is True, 'NVIDIA default changed: revisit this test'
    assert ('spec', 'devicePlugin', 'enabled') in changed_paths(base, cp)
    rc, log, dummy = run(tmp_path, 'operator', 'dra-mixed-openshift')
    assert rc == 0 and recap(log)['changed'] == '0', log


def test_dra_nodes_beside_container_nodes_are_refused_before_writing(tmp_path):
    # devicePlugin.enabled is cluster-wide (isStateEnabled "state-device-plugin"): false would take the classic
    # device plugin from ctr-1, true leaves the validator crash-looping on dra-1; the render stops naming both
    chart = os.path.join(schema.reference_dir(), 'helm', 'gpu-operator-v26.7.0-values.yaml')
    rc, log, out = run(tmp_path, 'operator', 'dra-nodes', gpu_operator_chart_values_file=chart)
    assert rc != 0, log
    assert 'DRA nodes (dra-1)' in log and 'ctr-1 (pool container)' in log and 'gpu_dra' in log, log
    assert not glob.glob(str(out / '*.yaml')), os.listdir(out)


# The GPU Operator reads one GPU node's OS tag for the whole cluster (NVIDIA/gpu-operator
# controllers/state_manager.go@v26.7.0 getGPUNodeOSInfo: nodes with nvidia.com/gpu.present=true, Limit(1)) and
# appends it to vgpuManager.version for every vGPU Manager DaemonSet (controllers/object_controls.go@v26.7.0
# resolveDriverTag).
def test_a_vgpu_fleet_on_two_os_tags_is_refused_naming_both_before_writing(tmp_path):
    rc, log, out = run(tmp_path, 'operator', 'vgpu-two-os')
    assert rc != 0, log
    assert 'rhcos4.18: vgpu-1' in log and 'rhcos4.19: ctr-1' in log and 'One OS per cluster' in log, log
    assert not glob.glob(str(out / '*.yaml')), os.listdir(out)
    # one OS: rendered
    rc, log, out = run(tmp_path, 'operator', 'vgpu-two-os', gpuvirt_os_tag='rhcos4.18')
    assert rc == 0, log
    assert rendered(out)['ClusterPolicy'][0]['spec']['vgpuManager']['version'] == '580.82.02'
