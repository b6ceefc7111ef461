# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MachineConfig / MachineConfigPool builders (validated against the OpenShift CRDs) and pool status."""
from __future__ import annotations

import json
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible.errors import AnsibleFilterError
# imported when this file is collected (not inside a test: see tests/unit/trust/test_sink_inputs.py's imports)
from ansible_collections.gpuvirt.provision.plugins.filter.mcp_nodes_waiting import mcp_join_problems
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402


def test_machineconfig_has_args_and_nouveau_file():
    obj = mc.build_machineconfig('gpu', mc.iommu_kernel_args('intel'))
    schema.validate(obj)  # both 4.18 and 4.20 CRDs
    assert obj['metadata']['labels'] == {'machineconfiguration.openshift.io/role': 'gpu'}
    assert obj['spec']['kernelArguments'] == ['intel_iommu=on', 'iommu=pt']
    assert obj['spec']['config']['ignition']['version'].startswith('3.')
    (file_,) = obj['spec']['config']['storage']['files']
    assert file_['path'].startswith('/etc/modprobe.d/') and file_['mode'] == 420
    text = mc.decode_data_url(file_['contents']['source'])
    assert 'blacklist nouveau' in text.splitlines() and 'options nouveau modeset=0' in text.splitlines()


def test_amd_and_no_nouveau():
    obj = mc.build_machineconfig('worker', mc.iommu_kernel_args('amd', extra=['iommu=pt']), blacklist_nouveau=False)
    schema.validate(obj)
    # amd_iommu=on is no option of the AMD driver (Linux Documentation/admin-guide/kernel-parameters.txt, amd_iommu=;
    # drivers/iommu/amd/init.c parse_amd_iommu_options: it logs "Unknown option"), but it is kept as the SSH path
    # writes it: taking it out of an applied MachineConfig would make the MCO reboot every node of the pool
    assert obj['spec']['kernelArguments'] == ['amd_iommu=on', 'iommu=pt']
    assert mc.iommu_kernel_args('amd') == kernel_cmdline.iommu_args('amd', True)
    assert 'storage' not in obj['spec']['config']
    assert mc.iommu_kernel_args('amd', passthrough_mode=False) == ['amd_iommu=on']
    assert mc.iommu_kernel_args('intel', passthrough_mode=False) == ['intel_iommu=on']


def test_render_mode_always_renders_the_pool_apply_mode_skips_an_existing_one():
    # render: a pool file left out is pruned and the GitOps tool deletes the pool, so it is rendered even when the
    # live cluster (machineconfig_existing_pools) has it, as it has once the render was first synced
    assert mc.renders_pool('gpu-worker', True, ['master', 'worker', 'gpu-worker'], render=True)
    assert mc.renders_pool('gpu-worker', True, None, render=True)
    # apply: an existing pool's spec is the administrator's, created only when missing
    assert not mc.renders_pool('gpu-worker', True, ['master', 'worker', 'gpu-worker'])
    assert mc.renders_pool('gpu-worker', True, ['master', 'worker'])
    assert not mc.renders_pool('gpu-worker', False, [], render=True)


def test_a_rendered_machineconfig_is_named_by_its_content_and_its_pool_names_it():
    # After an edit the pool reads Updated until the render controller has rendered it (at least renderDelay, 5 s:
    # openshift/machine-config-operator pkg/controller/render/render_controller.go); a new name per content lets a
    # health check wait for the pool's status.configuration.source (openshift/api machineconfiguration/v1 types.go
    # MachineConfigPoolStatusConfiguration.Source: the MachineConfigs the current rendered config was made from,
    # copied from spec only once every machine runs it: pkg/controller/node/status.go calculateStatus) to list it.
    intel = mc.build_machineconfig('gpu', mc.iommu_kernel_args('intel'))
    named = mc.with_content_name(intel)
    schema.validate(named)
    assert named['metadata']['name'] == '100-gpu-gpuvirt-iommu-' + mc.content_hash(intel)
    assert len(mc.content_hash(intel)) == 10 and named['spec'] == intel['spec']
    assert intel['metadata']['name'] == '100-gpu-gpuvirt-iommu'  # not mutated
    # same content, same name (a second render writes nothing); another content, another name
    assert mc.with_content_name(mc.build_machineconfig('gpu', mc.iommu_kernel_args('intel'))) == named
    amd = mc.with_content_name(mc.build_machineconfig('gpu', mc.iommu_kernel_args('amd')))
    no_nouveau = mc.with_content_name(mc.build_machineconfig('gpu', mc.iommu_kernel_args('intel'), False))
    other_pool = mc.with_content_name(mc.build_machineconfig('gpu2', mc.iommu_kernel_args('intel'), name='100-gpu-gpuvirt-iommu'))
    assert len({named['metadata']['name'], amd['metadata']['name'], no_nouveau['metadata']['name'],
                other_pool['metadata']['name']}) == 4
    # the render's own annotations (sync wave, GitOps options) are no content
    annotated = dict(intel, metadata=dict(intel['metadata'], annotations={'argocd.argoproj.io/sync-wave': '31'}))
    assert mc.content_hash(annotated) == mc.content_hash(intel)
    # the pool carries the name it must run, its other annotations kept
    pool = mc.build_pool('gpu')
    pool['metadata']['annotations'] = {'keep': 'me'}
    out = mc.expecting(pool, named['metadata']['name'])
    schema.validate(out)
    assert out['metadata']['annotations'] == {'keep': 'me', mc.EXPECTED_CONFIG_ANNOTATION: named['metadata']['name']}
    assert pool['metadata']['annotations'] == {'keep': 'me'}
    # a name too long for an object name with its hash is refused, named
    with pytest.raises(mc.ManifestError) as err:
        mc.with_content_name(dict(intel, metadata=dict(intel['metadata'], name='a' * 250)))
    assert 'MachineConfig name (with its content hash)' in str(err.value)


def test_a_custom_pool_takes_the_worker_machineconfigs_as_its_selector_says():
    # "Custom pools are pools that inherit from the worker pool" (openshift/machine-config-operator
    # docs/custom-pools.md); the render controller merges every MachineConfig the pool's machineConfigSelector picks
    # (pkg/controller/render/render_controller.go)
    gpu = mc.build_pool('gpu-vf')
    own_only = {'metadata': {'name': 'gpu-vf'}, 'spec': {'machineConfigSelector': {'matchLabels': {mc.ROLE_LABEL: 'gpu-vf'}}}}
    assert mc.takes_configs_of('gpu-vf', 'worker', [gpu])
    assert not mc.takes_configs_of('gpu-vf', 'worker', [own_only])
    assert mc.takes_configs_of('gpu-vf', 'worker')  # not read (render mode): the documented pattern
    assert not mc.takes_configs_of('worker', 'worker') and not mc.takes_configs_of('master', 'worker')


@pytest.mark.parametrize('call,needle', [
    (lambda: mc.iommu_kernel_args('arm'), "'arm'"),
    (lambda: mc.iommu_kernel_args('intel', extra=['a;reboot']), 'a;reboot'),
    (lambda: mc.build_machineconfig('GPU_Pool', ['iommu=pt']), 'GPU_Pool'),
    (lambda: mc.build_pool('worker'), 'worker'),
    (lambda: mc.check_pool_exists('gpu', ['master', 'worker'], False), "'gpu' does not exist"),
])
def test_bad_input_is_named(call, needle):
    with pytest.raises(mc.ManifestError) as err:
        call()
    assert needle in str(err.value)


def test_pool_check_passes_when_creating_or_present():
    mc.check_pool_exists('gpu', ['worker'], True)
    mc.check_pool_exists('worker', ['worker'], False)


def test_dedicated_pool_is_valid_and_selects_worker_configs():
    obj = mc.build_pool('gpu')
    schema.validate(obj)
    expr = obj['spec']['machineConfigSelector']['matchExpressions'][0]
    assert expr['values'] == ['worker', 'gpu']
    assert obj['spec']['nodeSelector']['matchLabels'] == {'node-role.kubernetes.io/gpu': ''}


def pool(updated, ready, total, conds, sources=('100-gpu-gpuvirt-iommu',), degraded=0, gen=2, observed=2):
    return {'metadata': {'name': 'gpu', 'generation': gen},
            'status': {'machineCount': total, 'updatedMachineCount': updated, 'readyMachineCount': ready,
                       'degradedMachineCount': degraded, 'observedGeneration': observed,
                       'configuration': {'source': [{'name': s} for s in sources]},
                       'conditions': [{'type': t, 'status': v, 'message': m} for t, v, m in conds]}}


DONE = [('Updated', 'True', ''), ('Updating', 'False', ''), ('Degraded', 'False', '')]


def test_pool_done():
    st = mc.pool_status(pool(3, 3, 3, DONE), '100-gpu-gpuvirt-iommu')
    assert st['done'] and not st['degraded'] and '3/3' in st['message']


def test_pool_updating_or_not_rendered_yet():
    assert not mc.pool_status(pool(1, 1, 3, [('Updating', 'True', '')]))['done']
    st = mc.pool_status(pool(3, 3, 3, DONE, sources=('00-worker',)), '100-gpu-gpuvirt-iommu')
    assert not st['done'] and 'does not include 100-gpu-gpuvirt-iommu' in st['message']
    assert not mc.pool_status(pool(3, 3, 3, DONE, observed=1))['done']


def ours(args, nouveau=True):
    return mc.build_machineconfig('worker', args, nouveau)


def rendered(name, args, files=()):
    return {'metadata': {'name': name}, 'spec': {'kernelArguments': list(args), 'config': {'storage': {'files': [
        {'path': p, 'contents': {'source': src}} for p, src in files]}}}}


NOUVEAU = (mc.NOUVEAU_PATH, mc.data_url(mc.NOUVEAU_TEXT))


def test_only_a_rendered_config_of_the_pool_holding_our_current_content_counts():
    # the render controller's rendered-<pool>-<hash> holds the merged content of the pool's MachineConfigs
    # (openshift/machine-config-operator pkg/controller/common/helpers.go MergeMachineConfigs); an edit of ours
    # is in a new one only
    old = rendered('rendered-worker-aaa', ['rd.foo', 'intel_iommu=on', 'iommu=pt'], [NOUVEAU])
    new = rendered('rendered-worker-bbb', ['intel_iommu=on', 'iommu=pt', 'pcie_acs_override=downstream'], [NOUVEAU])
    other_pool = rendered('rendered-gpu-ccc', ['intel_iommu=on', 'iommu=pt', 'pcie_acs_override=downstream'],
                          [NOUVEAU])
    no_file = rendered('rendered-worker-ddd', ['intel_iommu=on', 'iommu=pt', 'pcie_acs_override=downstream'])
    other_text = rendered('rendered-worker-eee', ['intel_iommu=on', 'iommu=pt', 'pcie_acs_override=downstream'],
                          [(mc.NOUVEAU_PATH, mc.data_url('blacklist nouveau\n'))])
    every = [old, new, other_pool, no_file, other_text, ours(['intel_iommu=on'])]
    edited = ours(['intel_iommu=on', 'iommu=pt', 'pcie_acs_override=downstream'])
    assert mc.rendered_with(every, edited, 'worker') == ['rendered-worker-bbb']
    assert mc.rendered_with(every, ours(['intel_iommu=on', 'iommu=pt']), 'worker') == [
        'rendered-worker-aaa', 'rendered-worker-bbb']


def test_a_pool_still_on_the_rendered_config_before_our_edit_is_not_done():
    # after an edit the pool keeps saying Updated with the previous rendered config (pkg/controller/node/status.go
    # calculateStatus copies spec.configuration to status only once every machine runs the new one)
    stale = pool(3, 3, 3, DONE)
    stale['status']['configuration']['name'] = 'rendered-gpu-aaa'
    st = mc.pool_status(stale, '100-gpu-gpuvirt-iommu', rendered_configs=['rendered-gpu-bbb'])
    assert not st['done'] and not st['current']
    assert ('rendered config rendered-gpu-aaa does not hold the current content of 100-gpu-gpuvirt-iommu yet'
            in st['message'])
    assert mc.pool_status(stale, '100-gpu-gpuvirt-iommu', rendered_configs=['rendered-gpu-aaa'])['done']


def test_checked_pool_status_fails_only_on_what_the_caller_asked():
    degraded = pool(2, 2, 3, DONE[:2] + [('Degraded', 'True', 'Failed to render configuration')], degraded=1)
    with pytest.raises(mc.PoolFailure) as failure:
        mc.checked_pool_status(degraded, True, False, machineconfig_name='100-gpu-gpuvirt-iommu')
    assert str(failure.value) == 'MachineConfigPool ' + failure.value.status['message']
    assert failure.value.status == mc.pool_status(degraded, '100-gpu-gpuvirt-iommu')
    assert mc.checked_pool_status(degraded, False, True)['degraded']
    paused = pool(1, 3, 3, [('Updated', 'False', ''), ('Updating', 'False', 'Pool is paused; will not update to x')])
    paused['spec'] = {'paused': True}
    assert mc.checked_pool_status(paused, True, False)['paused']
    with pytest.raises(mc.PoolFailure, match='the pool is paused'):
        mc.checked_pool_status(paused, False, True)
    # a paused pool already done is no failure
    done = pool(3, 3, 3, DONE)
    done['spec'] = {'paused': True}
    assert mc.checked_pool_status(done, True, True)['done']


def test_a_paused_pool_is_reported_with_the_command_that_unpauses_it():
    # openshift/machine-config-operator pkg/controller/node/node_controller.go syncMachineConfigPool: a paused pool
    # only gets its status synced, pkg/controller/node/status.go calculateStatus: Updated False, Updating False
    # "Pool is paused; will not update to ..."
    paused = pool(1, 3, 3, [('Updated', 'False', ''), ('Updating', 'False', 'Pool is paused; will not update to x')])
    paused['spec'] = {'paused': True}
    st = mc.pool_status(paused, '100-gpu-gpuvirt-iommu')
    assert st['paused'] and not st['done'] and not st['degraded']
    assert 'paused' in st['message'] and "oc patch mcp gpu --type merge -p '{\"spec\":{\"paused\":false}}'" \
        in st['message']
    # a paused pool that already runs our content is done: nothing to say
    done = pool(3, 3, 3, DONE)
    done['spec'] = {'paused': True}
    st = mc.pool_status(done, '100-gpu-gpuvirt-iommu')
    assert st['done'] and st['paused'] and 'paused' not in st['message']
    assert not mc.pool_status(pool(1, 3, 3, []))['paused']


def test_pool_degraded_reports_reason():
    conds = [('NodeDegraded', 'True', 'Node gpu-2 is reporting: "unexpected on-disk state"'), ('Updated', 'False', '')]
    st = mc.pool_status(pool(1, 1, 3, conds, degraded=1))
    assert st['degraded'] and not st['done']
    assert 'unexpected on-disk state' in st['reason'] and 'gpu-2' in st['message']


def test_a_pool_with_no_machine_is_never_done():
    # 0/0 updated used to read as a finished rollout: the MachineConfig reached no node. The MCO's pool status
    # (openshift/machine-config-operator pkg/controller/node/status.go calculateStatus) has machineCount = the nodes
    # the pool selects and Updated=True once updated == ready == machineCount with none unavailable: true at 0.
    st = mc.pool_status(pool(0, 0, 0, DONE), '100-gpu-gpuvirt-iommu')
    assert not st['done'] and 'selects no node' in st['message']


def gpu_node(name, labels=None, current=None, state='Done'):
    notes = {}
    if current:
        notes = {mc.CURRENT_CONFIG: current, mc.DESIRED_CONFIG: current, mc.MCD_STATE: state}
    return {'metadata': {'name': name, 'labels': labels or {}, 'annotations': notes}}


def test_done_needs_each_expected_node_on_the_rendered_config():
    # the machine-config-daemon's annotations (openshift/machine-config-operator pkg/daemon/constants/constants.go)
    p = pool(2, 2, 2, DONE)
    p['status']['configuration']['name'] = 'rendered-gpu-2'
    nodes = [gpu_node('gpu-1', current='rendered-gpu-2'), gpu_node('gpu-2', current='rendered-gpu-1')]
    st = mc.pool_status(p, '100-gpu-gpuvirt-iommu', expected_nodes=['gpu-1', 'gpu-2'], nodes=nodes, dedicated=True)
    assert not st['done']
    assert st['waiting'] == ['gpu-2 (currentConfig rendered-gpu-1, desiredConfig rendered-gpu-1, state Done)']
    nodes[1] = gpu_node('gpu-2', current='rendered-gpu-2')
    assert mc.pool_status(p, '100-gpu-gpuvirt-iommu', expected_nodes=['gpu-1', 'gpu-2'], nodes=nodes,
                          dedicated=True)['done']


def test_a_dedicated_pool_must_hold_exactly_the_expected_nodes():
    # The pool's machines are the nodes its spec.nodeSelector matches (openshift/machine-config-operator
    # pkg/controller/node/node_controller.go getNodesForPool), counted as status.machineCount (status.go
    # calculateStatus): a dedicated pool holding another count than our GPU nodes selects the wrong nodes.
    p = pool(3, 3, 3, DONE)
    p['status']['configuration']['name'] = 'rendered-gpu-2'
    nodes = [gpu_node('gpu-1', current='rendered-gpu-2'), gpu_node('gpu-2', current='rendered-gpu-2')]
    st = mc.pool_status(p, '100-gpu-gpuvirt-iommu', expected_nodes=['gpu-1', 'gpu-2'], nodes=nodes, dedicated=True)
    assert not st['done'] and 'expected exactly 2 machine(s), the nodes gpu-1, gpu-2' in st['message']
    # an existing (shared) pool may hold more machines than our GPU nodes
    assert mc.pool_status(p, '100-gpu-gpuvirt-iommu', expected_nodes=['gpu-1', 'gpu-2'], nodes=nodes)['done']


def test_nodes_into_pool():
    worker = {'node-role.kubernetes.io/worker': ''}
    gpu = {'node-role.kubernetes.io/gpu': ''}
    nodes = [gpu_node('a', dict(worker)), gpu_node('b')]
    with pytest.raises(mc.ManifestError, match=r"no Node in the cluster for c:"):
        mc.nodes_into_pool('worker', worker, ['a', 'c'], nodes, dedicated=False)
    with pytest.raises(mc.ManifestError, match=r"does not select b \(lacks node-role.kubernetes.io/worker=\)"):
        mc.nodes_into_pool('worker', worker, ['a', 'b'], nodes, dedicated=False)
    assert mc.nodes_into_pool('gpu', gpu, ['a', 'b'], nodes, dedicated=True) == [
        {'name': 'a', 'labels': gpu}, {'name': 'b', 'labels': gpu}]
    assert mc.nodes_into_pool('gpu', gpu, [], nodes, dedicated=True) == []


def test_a_dedicated_pool_that_already_selects_a_node_we_do_not_expect_is_refused_before_any_write():
    # A custom pool manages every node its spec.nodeSelector matches, and custom pools take priority over worker
    # (OpenShift docs, "Node configuration management with machine config pools": "A node can only be included in
    # one MCP ... it is managed by the infra custom pool, not the worker pool"; openshift/machine-config-operator
    # docs/custom-pools.md: a custom pool is populated by labelling nodes with its role). A node we did not plan for
    # would get the IOMMU MachineConfig, a drain and a reboot, and the pool's machine count would not equal ours.
    gpu = {'node-role.kubernetes.io/gpu': ''}
    nodes = [gpu_node('a'), gpu_node('b'), gpu_node('db-1', dict(gpu))]
    with pytest.raises(mc.ManifestError) as exc:
        mc.nodes_into_pool('gpu', gpu, ['a', 'b'], nodes, dedicated=True)
    assert str(exc.value).startswith("MachineConfigPool 'gpu' would hold 3 machine(s), not the 2 GPU node(s) a, b")
    assert 'also selects db-1' in str(exc.value)
    # a shared pool (worker) may hold other machines: not refused
    worker = {'node-role.kubernetes.io/worker': ''}
    nodes = [gpu_node('a', dict(worker)), gpu_node('db-1', dict(worker))]
    assert mc.nodes_into_pool('worker', worker, ['a'], nodes, dedicated=False) == []


# --- the vgpu_vf role's boot-time restore as a MachineConfig (vendor-specific VFIO hosts on OpenShift) ----------

VF_SCRIPT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles', 'vgpu_vf', 'files',
                         'gpuvirt_vgpu_vf_restore.py')


def _script():
    with open(VF_SCRIPT, encoding='utf-8') as handle:
        return handle.read()


def test_vgpu_vf_machineconfig_carries_the_roles_unit_and_script_in_ignitions_shape():
    obj = mc.build_vgpu_vf_machineconfig('gpu', _script(), timeout=600)
    schema.validate(obj)
    # the role label (the pool's machineConfigSelector) and the owner labels (only such an object is ever deleted)
    assert obj['metadata'] == {'name': '100-gpu-gpuvirt-vgpu-vf', 'labels': {
        'machineconfiguration.openshift.io/role': 'gpu', 'app.kubernetes.io/managed-by': 'gpuvirt.provision',
        'gpuvirt.provision/machineconfig': 'vgpu-vf'}}
    config = obj['spec']['config']
    # Ignition spec 3.2.0 (coreos/ignition docs/configuration-v3_2.md): systemd.units[] {name, enabled, contents};
    # storage.files[] {path, mode (decimal), overwrite, contents.source (a data URL)}: the shape of the IOMMU one
    assert config['ignition']['version'] == mc.IGNITION_VERSION
    (unit,) = config['systemd']['units']
    assert unit['name'] == 'gpuvirt-vgpu-vf.service' and unit['enabled'] is True
    (script,) = config['storage']['files']
    # not under /usr/local: on RHCOS it is a link into /var, and /usr is read-only; /etc is the MCO's to write
    assert script['path'] == '/etc/gpuvirt/vgpu-vf-restore' and script['mode'] == 0o755 and script['overwrite'] is True
    assert mc.decode_data_url(script['contents']['source']) == _script()
    # the unit runs the script this MachineConfig writes, on the config path it would read, with the timeout given
    lines = unit['contents'].splitlines()
    assert 'ExecStart=/usr/bin/python3 /etc/gpuvirt/vgpu-vf-restore /etc/gpuvirt/vgpu-vf-profiles.json' in lines
    assert 'ConditionPathExists=/etc/gpuvirt/vgpu-vf-profiles.json' in lines and 'TimeoutStartSec=660' in lines
    # the role's unit text as it is (vgpu_vf_profiles.unit_text): a failed start is retried, without a start limit
    assert {'Restart=on-failure', 'RestartSec=30', 'StartLimitIntervalSec=0'} <= set(lines)
    assert not any(line.startswith('ExecStart=') and '/usr/local' in line for line in lines)


def test_the_vf_machineconfigs_script_restarts_virt_handler_through_rhcos_crictl_after_it_set_a_profile(
        tmp_path, monkeypatch, capsys):
    # the script as the node gets it, decoded from the MachineConfig and loaded as the unit runs it
    import types
    obj = mc.build_vgpu_vf_machineconfig('gpu', _script())
    (script,) = obj['spec']['config']['storage']['files']
    node = types.ModuleType('restore_on_node')
    exec(compile(mc.decode_data_url(script['contents']['source']), 'vgpu-vf-restore', 'exec'), node.__dict__)
    # RHCOS carries crictl: openshift/os packages-openshift.yaml installs cri-tools (with cri-o), whose package puts
    # it at /usr/bin/crictl; the script tries that path first
    assert node.CRICTL[0] == '/usr/bin/crictl'
    # KubeVirt v1.9.0 discovers PCI host devices only when virt-handler starts (pkg/virt-handler/device-manager/
    # device_controller.go Run; no periodic rescan while mdev handling is off, heartbeat.go): after the restore set
    # a profile, the script stops virt-handler's container (kubelet label io.kubernetes.container.name) so the
    # kubelet starts a new one. crictl here is a stand-in recording its argv (no container runtime runs in tests).
    log = tmp_path / 'argv'
    crictl = tmp_path / 'crictl'
    crictl.write_text('#!/bin/sh\necho "$@" >> %s\n[ "$1" = ps ] && echo %s\nexit 0\n' % (log, 'ab' * 32))
    crictl.chmod(0o755)
    monkeypatch.setattr(node, 'CRICTL', (str(crictl),))
    assert node.restart_virt_handler([]) == [] and not log.exists()
    assert node.restart_virt_handler(['0000:41:00.4']) == ['ab' * 32]
    # listed in KubeVirt's namespaces only (a tenant may name a container virt-handler): kubevirt, openshift-cnv
    # (OpenShift Virtualization, the namespace on RHCOS), kubevirt-hyperconverged
    assert log.read_text().splitlines() == [
        'ps --quiet --state running --label io.kubernetes.container.name=virt-handler '
        '--label io.kubernetes.pod.namespace=' + ns for ns in ('kubevirt', 'openshift-cnv', 'kubevirt-hyperconverged')
    ] + ['stop --timeout 20 ' + 'ab' * 32]


def test_vgpu_vf_machineconfig_writes_a_given_config_checked_by_the_roles_grammar():
    persist = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/sys',
               'sriov_manage': '/usr/lib/nvidia/sriov-manage', 'timeout': 300,
               'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}
    obj = mc.build_vgpu_vf_machineconfig('worker', _script(), config=persist)
    files = dict((f['path'], f) for f in obj['spec']['config']['storage']['files'])
    text = mc.decode_data_url(files['/etc/gpuvirt/vgpu-vf-profiles.json']['contents']['source'])
    assert json.loads(text)['gpus'] == persist['gpus'] and files['/etc/gpuvirt/vgpu-vf-profiles.json']['mode'] == 0o644
    bad = dict(persist, gpus=[{'pf': '0000:41:00.0; reboot', 'vfs': {}}])
    with pytest.raises(mc.ManifestError, match='100-worker-gpuvirt-vgpu-vf: the boot-time config holds GPU entry'):
        mc.build_vgpu_vf_machineconfig('worker', _script(), config=bad)


@pytest.mark.parametrize('kwargs,needle', [
    ({'pool': 'GPU_Pool'}, "'GPU_Pool' is not a DNS label"),
    ({'name': 'Bad Name'}, "'Bad Name' is not a DNS label"),
    ({'script_text': '#!/bin/sh\nreboot\n'}, "expected the vgpu_vf role's script"),
    ({'script_text': None}, 'is not text'),
    ({'python': '/usr/bin/python3 -c import os'}, 'the Python interpreter is'),
    ({'timeout': 5}, 'expected 10 to 3600 seconds'),
])
def test_vgpu_vf_machineconfig_bad_input_is_named(kwargs, needle):
    args = dict(pool='gpu', script_text=_script())
    args.update(kwargs)
    with pytest.raises(mc.ManifestError) as err:
        mc.build_vgpu_vf_machineconfig(**args)
    assert needle in str(err.value)


# --- which config the VF MachineConfig of a pool carries, and which pool may carry it -------------------------------

def _persist(vfs=None, pf='0000:41:00.0', tid=1155, name='NVIDIA L40S-24Q'):
    vfs = vfs or ('0000:41:00.4', '0000:41:00.5')
    return {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/sys',
            'sriov_manage': '/usr/lib/nvidia/sriov-manage', 'timeout': 300,
            'gpus': [{'pf': pf, 'vfs': dict((vf, tid) for vf in vfs)}], 'types': {str(tid): name}}


def _mcp(name, selector):
    return {'metadata': {'name': name}, 'spec': {'nodeSelector': selector}}


WORKER_POOL = _mcp('worker', {'matchLabels': {'node-role.kubernetes.io/worker': ''}})
VF_POOL = _mcp('gpu-vf', {'matchLabels': {'node-role.kubernetes.io/gpu-vf': ''}})


def _node(name, *roles):
    return {'metadata': {'name': name, 'labels': dict(('node-role.kubernetes.io/' + r, '') for r in roles)}}


def _hosts(*pairs):
    return [{'host': h + '.example.com', 'node': h, 'persist': p} for h, p in pairs]


def test_identical_hosts_give_one_config_with_the_public_paths():
    hosts = _hosts(('vf-1', _persist()), ('vf-2', dict(_persist(), sysfs_root='/elsewhere', timeout=30)))
    config = mc.vgpu_vf_pool_config('gpu-vf', hosts, timeout=900)
    # the result's own paths and timeout are not taken: the public inputs are (a registered result can be replaced)
    assert config['sysfs_root'] == '/sys' and config['timeout'] == 900
    assert config['gpus'] == _persist()['gpus'] and config['types'] == {'1155': 'NVIDIA L40S-24Q'}


def test_hosts_that_compute_different_configs_are_refused_naming_each_group():
    hosts = _hosts(('vf-1', _persist()), ('vf-2', _persist()), ('vf-3', _persist(pf='0000:c1:00.0', vfs=['0000:c1:00.4'])),
                   ('vf-4', _persist(tid=1153, name='NVIDIA L40S-12Q')))
    with pytest.raises(mc.ManifestError) as err:
        mc.vgpu_vf_pool_config('gpu-vf', hosts)
    text = str(err.value)
    assert ('the vendor-VFIO hosts of MachineConfigPool gpu-vf need one boot-time VF config (a MachineConfig reaches '
            'every node of its pool alike), but they compute 3 different ones: '
            'vf-1.example.com, vf-2.example.com: 0000:41:00.0: 0000:41:00.4 NVIDIA L40S-24Q, 0000:41:00.5 NVIDIA '
            'L40S-24Q | vf-3.example.com: 0000:c1:00.0: 0000:c1:00.4 NVIDIA L40S-24Q | vf-4.example.com: '
            '0000:41:00.0: 0000:41:00.4 NVIDIA L40S-12Q, 0000:41:00.5 NVIDIA L40S-12Q.') in text, text
    assert 'a MachineConfigPool of their own' in text and 'Nothing was changed' in text


def test_a_config_outside_the_roles_grammar_is_refused_naming_the_host():
    with pytest.raises(mc.ManifestError, match='vf-1.example.com: the boot-time config holds GPU entry'):
        mc.vgpu_vf_pool_config('gpu-vf', _hosts(('vf-1', dict(_persist(), gpus=[{'pf': '41:00.0', 'vfs': {}}]))))
    with pytest.raises(mc.ManifestError, match='vf-1.example.com: its node name'):
        mc.vgpu_vf_pool_config('gpu-vf', [{'host': 'vf-1.example.com', 'node': 'Bad Node', 'persist': _persist()}])
    with pytest.raises(mc.ManifestError, match='no vendor-VFIO host gave its boot-time config'):
        mc.vgpu_vf_pool_config('gpu-vf', [])


def test_a_custom_pool_takes_its_nodes_from_worker():
    # "A node can only be included in one MCP ... Custom pools take priority on selecting nodes to manage based on
    # node labels; nodes that do not belong to a custom pool are managed by the worker pool" (openshift/openshift-docs
    # modules/architecture-machine-config-pools.adoc; openshift/machine-config-operator docs/custom-pools.md)
    nodes = [_node('vf-1', 'worker', 'gpu-vf'), _node('vf-2', 'worker', 'gpu-vf'), _node('w-3', 'worker')]
    pools = [WORKER_POOL, VF_POOL]
    assert mc.pool_nodes('gpu-vf', pools, nodes) == ['vf-1', 'vf-2']
    assert mc.pool_nodes('worker', pools, nodes) == ['w-3']
    expressions = _mcp('gpu-x', {'matchExpressions': [{'key': 'gpu', 'operator': 'In', 'values': ['l40s']}]})
    nodes.append({'metadata': {'name': 'x-1', 'labels': {'gpu': 'l40s'}}})
    assert mc.pool_nodes('gpu-x', pools + [expressions], nodes) == ['x-1']
    assert mc.pool_nodes('gpu-x', pools + [_mcp('gpu-x', {})], nodes) == []


def test_the_pool_must_exist_and_manage_exactly_the_hosts_nodes():
    hosts = _hosts(('vf-1', _persist()), ('vf-2', _persist()))
    nodes = [_node('vf-1', 'worker', 'gpu-vf'), _node('vf-2', 'worker', 'gpu-vf'), _node('w-3', 'worker')]
    config = mc.vgpu_vf_pool_config('gpu-vf', hosts, [WORKER_POOL, VF_POOL], nodes)
    assert config['gpus'] == _persist()['gpus']
    with pytest.raises(mc.ManifestError) as err:
        mc.vgpu_vf_pool_config('worker', hosts, [WORKER_POOL, VF_POOL], nodes)
    assert ('MachineConfigPool worker must manage exactly the vendor-VFIO hosts\' nodes (vf-1, vf-2) to carry their '
            'VF config, but it also manages w-3; it does not manage vf-1, vf-2.') in str(err.value), str(err.value)
    with pytest.raises(mc.ManifestError) as err:
        mc.vgpu_vf_pool_config('gpu-vf', hosts[:1], [WORKER_POOL, VF_POOL], nodes)
    assert 'but it also manages vf-2.' in str(err.value), str(err.value)
    with pytest.raises(mc.ManifestError) as err:
        mc.vgpu_vf_pool_config('gpu-l40s', hosts, [WORKER_POOL, VF_POOL], nodes)
    assert "MachineConfigPool 'gpu-l40s' does not exist (the cluster has: gpu-vf, worker)" in str(err.value)


def test_a_rendered_config_holds_our_content_only_with_our_unit_as_it_is_now():
    ours = mc.build_vgpu_vf_machineconfig('gpu-vf', _script(), config=_persist())
    same = {'metadata': {'name': 'rendered-gpu-vf-1'}, 'spec': json.loads(json.dumps(ours['spec']))}
    assert mc.rendered_with([same], ours, 'gpu-vf') == ['rendered-gpu-vf-1']
    edited = mc.build_vgpu_vf_machineconfig('gpu-vf', _script(), python='/usr/libexec/platform-python',
                                            config=_persist())
    # only the unit changed (its ExecStart): the rendered config before that edit does not hold it
    assert edited['spec']['config']['storage'] == ours['spec']['config']['storage']
    assert mc.rendered_with([same], edited, 'gpu-vf') == []


# --- which pools the Machine Config Operator puts a node in ------------------------------------------------------
# openshift/machine-config-operator pkg/helpers/helpers.go GetPoolsForNode/ListPools @7ff337a4f (main, as on
# release-4.16 onwards) and pkg/controller/node/node_controller.go getPoolsForNode @release-4.13: two custom pools ->
# refused ("belongs to N custom roles"); one custom pool -> it, then worker; a custom pool and master -> master on
# 4.14+ (the custom pool's config never applied), refused on 4.13 and older; master (with worker) -> master; else
# worker; an empty selector selects nothing; a Windows node is in no pool.

MASTER_POOL = _mcp('master', {'matchLabels': {'node-role.kubernetes.io/master': ''}})
GPU_POOL = _mcp('gpu', {'matchLabels': {'node-role.kubernetes.io/gpu': ''}})
INFRA_POOL = _mcp('infra', {'matchLabels': {'node-role.kubernetes.io/infra': ''}})
ALL_POOLS = [MASTER_POOL, WORKER_POOL, GPU_POOL, INFRA_POOL]


def _roles(*roles):
    return dict(('node-role.kubernetes.io/' + r, '') for r in roles)


@pytest.mark.parametrize('roles, pools', [
    (('worker',), ['worker']),
    (('master',), ['master']),
    (('master', 'worker'), ['master']),        # compact / single-node: master wins over worker
    (('worker', 'gpu'), ['gpu', 'worker']),     # a custom pool takes its nodes from worker, worker second
    (('gpu',), ['gpu']),
    (('storage',), []),                          # no pool selects it: not an error, the MCO leaves it alone
    ((), []),
])
def test_node_pools_follow_the_machine_config_operator(roles, pools):
    assert mc.node_pools('n-1', _roles(*roles), ALL_POOLS) == pools


def test_a_pool_without_a_selector_and_a_windows_node_hold_nothing():
    assert mc.node_pools('n-1', _roles('worker', 'gpu'), [WORKER_POOL, _mcp('gpu', {})]) == ['worker']
    assert mc.node_pools('n-1', _roles('worker', 'gpu'), [WORKER_POOL, {'metadata': {'name': 'gpu'}}]) == ['worker']
    assert mc.node_pools('w-1', dict(_roles('worker'), **{'kubernetes.io/os': 'windows'}), ALL_POOLS) == []


def test_a_node_of_two_custom_pools_is_refused_naming_the_node_and_pools():
    with pytest.raises(mc.PoolConflict) as err:
        mc.node_pools('gpu-1', _roles('worker', 'gpu', 'infra'), ALL_POOLS)
    assert str(err.value).startswith('Node gpu-1 is selected by more than one custom MachineConfigPool (gpu, infra): '
                                     'the Machine Config Operator refuses a node of two custom pools ("belongs to 2 '
                                     'custom roles")'), str(err.value)
    assert err.value.pools == [] and err.value.custom == ['gpu', 'infra'] and err.value.node == 'gpu-1'


def test_a_control_plane_node_a_custom_pool_selects_is_refused_and_stays_in_master():
    with pytest.raises(mc.PoolConflict) as err:
        mc.node_pools('cp-1', _roles('master', 'worker', 'gpu'), ALL_POOLS)
    assert str(err.value).startswith('Node cp-1 is a control-plane node (MachineConfigPool master selects it) and '
                                     'custom MachineConfigPool gpu selects it too'), str(err.value)
    assert err.value.pools == ['master', 'worker'] and err.value.master
    # what the MCO counts all the same (4.14+): master's, never gpu's
    assert mc.primary_pool('cp-1', _roles('master', 'gpu'), ALL_POOLS) == 'master'
    assert mc.primary_pool('gpu-1', _roles('worker', 'gpu', 'infra'), ALL_POOLS) is None


def test_pool_nodes_on_a_compact_cluster_counts_masters_in_master_only():
    nodes = [_node('cp-1', 'master', 'worker'), _node('cp-2', 'master', 'worker'), _node('w-1', 'worker'),
             _node('gpu-1', 'worker', 'gpu'), _node('both-1', 'worker', 'gpu', 'infra'), _node('cp-3', 'master', 'gpu')]
    assert mc.pool_nodes('master', ALL_POOLS, nodes) == ['cp-1', 'cp-2', 'cp-3']
    assert mc.pool_nodes('worker', ALL_POOLS, nodes) == ['w-1']
    assert mc.pool_nodes('gpu', ALL_POOLS, nodes) == ['gpu-1']   # both-1 refused, cp-3 stays in master
    assert mc.pool_nodes('infra', ALL_POOLS, nodes) == []


ROLE_NAMES = ('master', 'worker', 'gpu', 'infra', 'storage')


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sets(st.sampled_from(ROLE_NAMES)), min_size=1, max_size=6))
def test_every_node_is_in_at_most_one_pool_and_only_where_the_rules_put_it(role_sets):
    nodes = [_node('n-%d' % i, *sorted(roles)) for i, roles in enumerate(role_sets)]
    counted = [name for pool in ALL_POOLS for name in mc.pool_nodes(pool['metadata']['name'], ALL_POOLS, nodes)]
    assert len(counted) == len(set(counted))           # one primary pool at most
    for i, roles in enumerate(role_sets):
        custom = sorted(roles & {'gpu', 'infra'})
        try:
            pools = mc.node_pools('n-%d' % i, _roles(*roles), ALL_POOLS)
        except mc.PoolConflict as err:
            assert len(custom) > 1 or (custom and 'master' in roles)
            assert 'n-%d' % i in str(err) and all(c in str(err) for c in custom)
            continue
        assert len(custom) <= 1 and not (custom and 'master' in roles)
        primary = pools[0] if pools else None
        assert primary == (custom[0] if custom else 'master' if 'master' in roles else
                           'worker' if 'worker' in roles else None)
        assert ('n-%d' % i in counted) == (primary is not None)


# --- the checks before a GPU node is labelled into a pool ---------------------------------------------------------

def test_a_node_another_custom_pool_selects_is_refused_before_it_is_labelled():
    gpu = {'node-role.kubernetes.io/gpu': ''}
    nodes = [_node('gpu-1', 'worker'), _node('gpu-2', 'worker', 'infra')]
    # without the cluster's pools, only the selector is known: the node would be labelled, and the MCO refuse it
    assert [n['name'] for n in mc.nodes_into_pool('gpu', gpu, ['gpu-1', 'gpu-2'], nodes, True)] == ['gpu-1', 'gpu-2']
    with pytest.raises(mc.ManifestError) as err:
        mc.nodes_into_pool('gpu', gpu, ['gpu-1', 'gpu-2'], nodes, True, pools=[MASTER_POOL, WORKER_POOL, INFRA_POOL])
    text = str(err.value)
    assert text.startswith('MachineConfigPool gpu would not hold every GPU node, so its MachineConfig would not reach '
                           'them: Node gpu-2 is selected by more than one custom MachineConfigPool (gpu, infra)'), text
    assert ('Take the node out of infra (remove the labels it selects by: node-role.kubernetes.io/infra=), or set '
            'machineconfig_pool: infra and machineconfig_create_pool: false') in text, text
    assert 'gpu-1' not in text and text.endswith('Nothing was changed.'), text
    # the pool may exist already (a second run): the same answer
    with pytest.raises(mc.ManifestError, match='gpu-2 is selected by more than one custom'):
        mc.nodes_into_pool('gpu', gpu, ['gpu-2'], nodes, True, pools=[WORKER_POOL, GPU_POOL, INFRA_POOL])


def test_a_control_plane_gpu_node_is_not_labelled_into_a_custom_pool():
    gpu = {'node-role.kubernetes.io/gpu': ''}
    nodes = [_node('cp-1', 'master', 'worker')]
    with pytest.raises(mc.ManifestError) as err:
        mc.nodes_into_pool('gpu', gpu, ['cp-1'], nodes, True, pools=[MASTER_POOL, WORKER_POOL])
    assert 'Node cp-1 is a control-plane node' in str(err.value), str(err.value)
    assert 'set machineconfig_pool: master and machineconfig_create_pool: false' in str(err.value), str(err.value)
    # master is the pool of a compact cluster's GPU hosts
    master = {'node-role.kubernetes.io/master': ''}
    assert mc.nodes_into_pool('master', master, ['cp-1'], nodes, False, pools=[MASTER_POOL, WORKER_POOL]) == []


def test_worker_does_not_hold_a_master_or_a_custom_pools_node():
    worker = {'node-role.kubernetes.io/worker': ''}
    nodes = [_node('cp-1', 'master', 'worker'), _node('gpu-1', 'worker', 'gpu'), _node('w-1', 'worker')]
    assert mc.nodes_into_pool('worker', worker, ['w-1'], nodes, False, pools=ALL_POOLS) == []
    with pytest.raises(mc.ManifestError) as err:
        mc.nodes_into_pool('worker', worker, ['cp-1', 'gpu-1', 'w-1'], nodes, False, pools=ALL_POOLS)
    text = str(err.value)
    assert ('Node cp-1 is in MachineConfigPool master, not worker: the Machine Config Operator puts a node that '
            'master selects in master (compact and single-node clusters). Set machineconfig_pool: master') in text
    assert ('Node gpu-1 is in custom MachineConfigPool gpu, not worker: a custom pool takes the worker nodes it '
            'selects. Set machineconfig_pool: gpu') in text, text
    # a node outside the selector is still named with the labels it lacks
    with pytest.raises(mc.ManifestError, match=r'does not select s-1 \(lacks node-role.kubernetes.io/worker=\)'):
        mc.nodes_into_pool('worker', worker, ['s-1'], [_node('s-1', 'storage')], False, pools=ALL_POOLS)


def test_the_nodes_phase_filter_refuses_a_node_another_custom_pool_selects_and_lets_the_others_join():
    nodes = [_node('gpu-1', 'worker'), _node('gpu-2', 'worker', 'infra'), _node('ctr-1', 'worker', 'gpu-worker')]
    pools = [MASTER_POOL, WORKER_POOL, INFRA_POOL]
    assert mcp_join_problems(pools, nodes, 'gpu-worker', ['gpu-1']) == ''
    # ctr-1 already carries the pool's label but is not expected: the node-label phase takes it off, not a refusal
    text = mcp_join_problems(pools, nodes, 'gpu-worker', ['gpu-1', 'gpu-2'])
    assert text.startswith('MachineConfigPool gpu-worker would not hold every GPU node') and 'gpu-2' in text, text
    assert 'more than one custom MachineConfigPool (gpu-worker, infra)' in text and 'ctr-1' not in text, text
    # a selector of its own: the node it names is judged with those labels
    assert 'gpu-1' in mcp_join_problems(pools, nodes, 'gpu-worker', ['gpu-1'], {'node-role.kubernetes.io/infra': ''})
    with pytest.raises(AnsibleFilterError, match="mcp_join_problems: MachineConfigPool 'Bad' is not a DNS label"):
        mcp_join_problems(pools, nodes, 'Bad', ['gpu-1'])


# --- per-host pools (gpuvirt_machineconfig_pool): one MachineConfig per pool --------------------------------------------

def test_host_pools_default_to_machineconfig_pool_and_name_a_bad_value_with_its_host():
    fleet = [{'host': 'p1.example.com', 'node': 'p1', 'pool': None}, {'host': 's1.example.com', 'node': 's1', 'pool': 'gpu-vf'},
             {'host': 's2.example.com', 'node': 's2', 'pool': ''}]
    assert mc.host_pools(fleet, 'gpu-worker') == {'p1': 'gpu-worker', 's1': 'gpu-vf', 's2': 'gpu-worker'}
    with pytest.raises(mc.ManifestError, match=r"host s1.example.com: gpuvirt_machineconfig_pool is 'GPU VF', not a "
                                               r"MachineConfigPool name"):
        mc.host_pools([{'host': 's1.example.com', 'node': 's1', 'pool': 'GPU VF'}], 'gpu-worker')
    with pytest.raises(mc.ManifestError, match='node s1 is given two MachineConfigPools, gpu-vf'):
        mc.host_pools([fleet[1], {'host': 'x.example.com', 'node': 's1', 'pool': 'gpu-other'}], 'gpu-worker')


def test_pool_groups_put_the_default_pool_first_and_give_each_pool_its_nodes():
    groups = mc.pool_groups({'s1': 'gpu-vf', 's2': 'gpu-vf', 'a1': 'gpu-a'}, ['p1', 's1', 'a1', 's2', 'p2'], 'gpu-worker')
    assert groups == [{'pool': 'gpu-worker', 'nodes': ['p1', 'p2']}, {'pool': 'gpu-a', 'nodes': ['a1']},
                      {'pool': 'gpu-vf', 'nodes': ['s1', 's2']}]
    # every node in a pool of its own: the default pool has no MachineConfig to carry
    assert mc.pool_groups({'s1': 'gpu-vf'}, ['s1'], 'gpu-worker') == [{'pool': 'gpu-vf', 'nodes': ['s1']}]
    assert mc.pool_groups({}, [], 'gpu-worker') == [{'pool': 'gpu-worker', 'nodes': []}]


def test_pool_selectors_follow_the_pools_the_role_creates():
    assert mc.pool_selectors({'p1': 'gpu-worker', 's1': 'gpu-vf', 'w1': 'worker'}, 'gpu-worker',
                             {'example.com/gpu': 'yes'}) == {
        'p1': {'example.com/gpu': 'yes'}, 's1': {'node-role.kubernetes.io/gpu-vf': ''}, 'w1': {}}
    # the same object the machineconfig role creates for the per-host pool
    assert mc.build_pool('gpu-vf')['spec']['nodeSelector']['matchLabels'] == mc.pool_selectors(
        {'s1': 'gpu-vf'}, 'gpu-worker')['s1']


def test_a_node_moving_into_a_pool_of_its_own_may_join_once_the_default_pools_label_goes():
    # s1 carries the default GPU pool's label from an earlier run; the nodes phase takes it off (released) as it
    # labels s1 into gpu-vf, so s1 is judged without it. Without that, it would be a node of two custom pools.
    gpu_worker = _mcp('gpu-worker', {'matchLabels': {'node-role.kubernetes.io/gpu-worker': ''}})
    nodes = [_node('s1', 'worker', 'gpu-worker'), _node('p1', 'worker', 'gpu-worker')]
    pools = [MASTER_POOL, WORKER_POOL, gpu_worker]
    released = [{'node-role.kubernetes.io/gpu-worker': ''}, {'node-role.kubernetes.io/gpu-vf': ''}]
    assert mcp_join_problems(pools, nodes, 'gpu-vf', ['s1'], {}, released) == ''
    assert mcp_join_problems(pools, nodes, 'gpu-worker', ['p1'], {}, released) == ''
    assert 'more than one custom MachineConfigPool (gpu-vf, gpu-worker)' in mcp_join_problems(pools, nodes, 'gpu-vf', ['s1'])
    # an administrator's other custom pool is never released
    infra = [_node('s1', 'worker', 'infra')]
    assert 'gpu-vf, infra' in mcp_join_problems(pools + [INFRA_POOL], infra, 'gpu-vf', ['s1'], {}, released)


def _read_back(obj, uid='u-1', version='7'):
    # as the API server returns an object: its uid and resourceVersion set
    return dict(obj, metadata=dict(obj['metadata'], uid=uid, resourceVersion=version))


def test_only_the_collections_own_vf_machineconfig_of_a_pool_without_vendor_vfio_hosts_is_stale():
    script = '#!/usr/bin/python3\n# %s\n' % mc.vvp.MARKER
    ours_vf = _read_back(mc.build_vgpu_vf_machineconfig('gpu-vf', script), 'u-vf')
    ours_old = _read_back(mc.build_vgpu_vf_machineconfig('gpu-old', script), 'u-old')
    assert ours_old['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'gpuvirt.provision',
                                              'gpuvirt.provision/machineconfig': 'vgpu-vf',
                                              'machineconfiguration.openshift.io/role': 'gpu-old'}
    # an administrator's MachineConfig of the same name and content, without the owner labels; one that carries
    # them but another unit; the IOMMU one of that pool
    foreign = _read_back(dict(ours_old, metadata={'name': '100-gpu-old2-gpuvirt-vgpu-vf',
                                                  'labels': {mc.ROLE_LABEL: 'gpu-old'}}), 'u-f')
    other_unit = _read_back(mc.build_vgpu_vf_machineconfig('gpu-old', script, name='99-gpu-old-other'), 'u-o')
    other_unit['spec']['config']['systemd']['units'][0]['name'] = 'other.service'
    iommu = _read_back(mc.build_machineconfig('gpu-old', ['iommu=pt']), 'u-i')
    objs = [ours_vf, ours_old, foreign, other_unit, iommu]
    assert mc.vgpu_vf_stale(objs, ['gpu-vf']) == [
        {'name': '100-gpu-old-gpuvirt-vgpu-vf', 'pool': 'gpu-old', 'uid': 'u-old', 'resource_version': '7'}]
    assert [s['name'] for s in mc.vgpu_vf_stale(objs, [])] == ['100-gpu-old-gpuvirt-vgpu-vf', '100-gpu-vf-gpuvirt-vgpu-vf']
    assert mc.vgpu_vf_stale(objs, ['gpu-vf', 'gpu-old']) == []
    with pytest.raises(mc.ManifestError, match='has no uid or resourceVersion'):
        mc.vgpu_vf_stale([mc.build_vgpu_vf_machineconfig('gpu-old', script)], [])
    with pytest.raises(mc.ManifestError, match="MachineConfigPool to keep 'Bad'"):
        mc.vgpu_vf_stale(objs, ['Bad'])
