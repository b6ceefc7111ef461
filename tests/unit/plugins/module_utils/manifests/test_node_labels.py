# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pools from groups, label diffs and the pool-change guard (pure Python)."""
from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

W, V = nl.WORKLOAD_LABEL, nl.VGPU_LABEL


def node(name, owned='', **labels):
    """A Node; ``owned``: its owned-labels record (None: no record, a node labelled by the release before it)."""
    meta = {'name': name, 'labels': dict({'kubernetes.io/hostname': name}, **labels)}
    if owned is not None:
        meta['annotations'] = {nl.OWNED_ANNOTATION: owned}
    return {'metadata': meta}


def vmi(name, node_name, phase='Running', namespace='vms'):
    return {'metadata': {'name': name, 'namespace': namespace}, 'status': {'nodeName': node_name, 'phase': phase}}


def test_pool_from_groups():
    assert nl.node_pool('h1', ['all', 'gpu_vm_vgpu']) == 'vm-vgpu'
    assert nl.node_pool('h1', ['gpu_container'], explicit='container') == 'container'
    with pytest.raises(nl.ManifestError, match=r'h1 is in the pools container, vm-passthrough'):
        nl.node_pool('h1', ['gpu_container', 'gpu_vm_passthrough'])
    with pytest.raises(nl.ManifestError, match="unknown pool 'vm-gpu'"):
        nl.node_pool('h1', ['gpu_vm_vgpu'], explicit='vm-gpu')
    with pytest.raises(nl.ManifestError, match='disagrees'):
        nl.node_pool('h1', ['gpu_vm_vgpu'], explicit='container')
    with pytest.raises(nl.ManifestError, match='no GPU pool'):
        nl.node_pool('h1', ['workers'])


def test_diff_patches_only_what_differs():
    assert nl.label_diff({W: 'vm-vgpu', V: 'A10-12Q'}, nl.desired_labels('vm-vgpu', 'A10-12Q')) == {}
    assert nl.label_diff({W: 'vm-vgpu', V: 'A10-12Q'}, nl.desired_labels('vm-vgpu', 'A10-24Q')) == {V: 'A10-24Q'}
    # leaving the vGPU pool removes the stale vGPU config; an absent label is not "removed" again
    assert nl.label_diff({W: 'vm-vgpu', V: 'A10-12Q'}, nl.desired_labels('vm-passthrough')) == {
        W: 'vm-passthrough', V: None}
    assert nl.label_diff({}, nl.desired_labels('container')) == {W: 'container'}
    with pytest.raises(nl.ManifestError, match='gpuvirt_vgpu_config'):
        nl.desired_labels('vm-vgpu')


def test_guard_names_running_vmis_and_ignores_finished_or_other_nodes():
    vmis = [vmi('win11', 'gpu-1'), vmi('old', 'gpu-1', phase='Succeeded'), vmi('db', 'gpu-2')]
    msg = nl.guard('gpu-1', {W: 'vm-passthrough'}, {W: 'vm-vgpu', V: 'A10-12Q'}, vmis)
    assert 'vms/win11' in msg and 'old' not in msg and 'db' not in msg
    assert 'vm-passthrough -> vm-vgpu' in msg
    # first labelling of a node (no current value) is not a pool change
    assert nl.guard('gpu-1', {}, {W: 'vm-vgpu', V: 'A10-12Q'}, vmis) is None
    assert nl.guard('gpu-3', {W: 'container'}, {W: 'vm-passthrough'}, vmis) is None


def test_plan_reports_per_node_and_refuses_before_any_patch():
    wanted = [{'node': 'gpu-1', 'pool': 'vm-passthrough'}, {'node': 'vgpu-1', 'pool': 'vm-vgpu',
                                                            'vgpu_config': 'A10-12Q'},
              {'node': 'ctr-1', 'pool': 'container'}]
    nodes = [node('gpu-1', **{W: 'vm-passthrough'}), node('vgpu-1', **{W: 'vm-vgpu', V: 'A10-24Q'}), node('ctr-1')]
    patches, report = nl.plan(wanted, nodes, [])
    assert [p['metadata']['name'] for p in patches] == ['vgpu-1', 'ctr-1']
    for patch in patches:
        schema.validate(patch)
    assert report['gpu-1']['changes'] == {} and report['gpu-1']['unchanged'] == [W]
    assert report['vgpu-1']['changes'] == {V: 'A10-12Q'}
    with pytest.raises(nl.ManifestError) as err:
        nl.plan(wanted, nodes, [vmi('vdi-7', 'vgpu-1', phase='Scheduled')])
    assert 'vgpu-1' in str(err.value) and 'vms/vdi-7' in str(err.value)
    with pytest.raises(nl.ManifestError, match='gpu-9 is not in the cluster'):
        nl.plan([{'node': 'gpu-9', 'pool': 'container'}], nodes, [])
    with pytest.raises(nl.ManifestError, match='listed twice'):
        nl.plan([{'node': 'a', 'pool': 'container', 'host': 'h1'}, {'node': 'a', 'pool': 'container', 'host': 'h2'}],
                None, [])
    # render without cluster state: every label is set
    patches, dummy = nl.plan(wanted, None, None)
    assert patches[0]['metadata']['labels'] == {W: 'vm-passthrough'}
    assert patches[0]['metadata']['annotations'] == {nl.OWNED_ANNOTATION: ''}


ADMIN_OFF = {'nvidia.com/gpu.deploy.sandbox-validator': 'false', 'nvidia.com/gpu.deploy.vgpu-device-manager': 'false',
             'nvidia.com/gpu.deploy.sandbox-device-plugin': 'false'}


@pytest.mark.parametrize('pool, config', [('vm-vgpu', 'A10-4Q'), ('vm-passthrough', None), ('container', None)])
@pytest.mark.parametrize('owned', ['', None])
def test_an_admin_set_operand_off_label_survives(pool, config, owned):
    # an admin switched these operands off by hand; they are not in the node's record (or the node has none: the
    # release before it never set these), so the plan leaves them
    nodes = [node('n1', owned=owned, **dict(ADMIN_OFF, **{W: fleet.BY_NAME[pool].workload}))]
    patches, report = nl.plan([{'node': 'n1', 'pool': pool, 'vgpu_config': config}], nodes, [])
    assert not [k for k in report['n1']['changes'] if k in ADMIN_OFF]
    for patch in patches:
        assert not set(patch['metadata'].get('labels', {})) & set(ADMIN_OFF)
    assert report['n1']['owned_labels'] == ''


def test_our_operand_off_labels_go_when_the_node_leaves_the_pool_and_the_record_follows():
    vf = fleet.BY_NAME['vm-vgpu-vf']
    ours = sorted(nl.DEPLOY_LABEL_PREFIX + o for o in vf.operands_off)
    wanted = [{'node': 'n1', 'pool': 'vm-vgpu-vf', 'vgpu_config': 'L40S-24Q'}]
    patches, report = nl.plan(wanted, [node('n1', **{W: vf.workload})], [])
    assert patches[0]['metadata']['annotations'] == {nl.OWNED_ANNOTATION: ','.join(ours)}
    assert all(patches[0]['metadata']['labels'][k] == 'false' for k in ours)
    # the second run sees the record it wrote: nothing to write
    applied = dict({W: vf.workload}, **patches[0]['metadata']['labels'])
    again, dummy = nl.plan(wanted, [node('n1', owned=','.join(ours), **applied)], [])
    assert again == []
    # leaving for passthrough: our "false" labels go, the record empties
    patches, report = nl.plan([{'node': 'n1', 'pool': 'vm-passthrough'}],
                              [node('n1', owned=','.join(ours), **applied)], [])
    assert all(patches[0]['metadata']['labels'][k] is None for k in ours)
    assert patches[0]['metadata']['annotations'] == {nl.OWNED_ANNOTATION: ''}


def test_an_admin_false_before_we_wanted_it_stays_theirs_and_a_legacy_dra_node_keeps_the_old_rule():
    d = nl.DEVICE_PLUGIN_LABEL
    # the admin had the device plugin off before the node joined the DRA pool: we need not write it, nor own it
    patches, report = nl.plan([{'node': 'n1', 'pool': 'dra'}], [node('n1', **{W: 'container', d: 'false'})], [])
    assert d not in patches[0]['metadata']['labels']
    assert d not in report['n1']['owned_labels'].split(',')
    # a DRA node labelled by the release before the record: its three "false" are ours (that release set them) ...
    legacy = {W: 'container', d: 'false', nl.DCGM_LABEL: 'false', nl.DCGM_EXPORTER_LABEL: 'false'}
    patches, report = nl.plan([{'node': 'n1', 'pool': 'dra'}], [node('n1', owned=None, **legacy)], [])
    assert report['n1']['owned_labels'] == ','.join(sorted(nl.LEGACY_OWNED))
    # ... and go when it leaves, as they did before
    patches, report = nl.plan([{'node': 'n1', 'pool': 'container'}], [node('n1', owned=None, **legacy)], [])
    assert all(patches[0]['metadata']['labels'][k] is None for k in nl.LEGACY_OWNED)
    # the release before the record set the DRA row's operands_off, which it still switches off
    assert set(nl.LEGACY_OWNED) == set(nl.DEPLOY_LABEL_PREFIX + o for o in fleet.BY_NAME['dra'].operands_off)


def test_the_record_is_read_strictly():
    # only well-formed deploy label keys count; a record naming any other label removes nothing we would not set
    assert nl.owned_labels({}) is None
    assert nl.owned_labels({nl.OWNED_ANNOTATION: ''}) == set()
    assert nl.owned_labels({nl.OWNED_ANNOTATION: 'kubernetes.io/hostname, nvidia.com/gpu.deploy.dcgm,x y,'
                                                 'nvidia.com/gpu.deploy.bad-'}) == {nl.DCGM_LABEL}
    assert nl.owned_labels({nl.OWNED_ANNOTATION: None}) == set()
    desired = nl.desired_labels('container')
    assert nl.label_diff({'kubernetes.io/hostname': 'n1', W: 'container'}, desired,
                         nl.owned_labels({nl.OWNED_ANNOTATION: 'kubernetes.io/hostname'})) == {}


A10_FACTS = {'pci_devices': {'gpus': [{'bdf': '0000:41:00.0', 'device_name': 'GA102GL [A10]', 'is_vf': False}]},
             'mdev_types': {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev',
                                         'types': [{'name': 'NVIDIA A10-12Q', 'short_name': 'A10-12Q'}]}]}}


def test_vgpu_config_checked_against_the_node_gpus():
    # default ConfigMap: the config is named by its one type
    assert nl.vgpu_config_error('vgpu-1', 'A10-12Q', A10_FACTS) is None
    assert nl.vgpu_config_error('vgpu-1', 'default', A10_FACTS) is None
    msg = nl.vgpu_config_error('vgpu-1', 'L40S-24Q', A10_FACTS)
    assert 'vgpu-1' in msg and 'L40S-24Q' in msg and '0000:41:00.4 offers A10-12Q' in msg
    # custom configs: the name must be one of them and each of its types offered
    custom = {'small': [{'devices': 'all', 'vgpu-devices': {'A10-12Q': 2}}],
              'big': [{'devices': 'all', 'vgpu-devices': {'A10-24Q': 1}}]}
    assert nl.vgpu_config_error('vgpu-1', 'small', A10_FACTS, custom) is None
    assert 'A10-24Q' in nl.vgpu_config_error('vgpu-1', 'big', A10_FACTS, custom)
    assert "'A10-12Q' is not among the custom configs (big, small)" in nl.vgpu_config_error(
        'vgpu-1', 'A10-12Q', A10_FACTS, custom)
    # no facts for the node: nothing to check against
    assert nl.vgpu_config_error('vgpu-1', 'L40S-24Q', None) is None
    with pytest.raises(nl.ManifestError, match='needs type L40S-24Q'):
        nl.plan([{'node': 'vgpu-1', 'pool': 'vm-vgpu', 'vgpu_config': 'L40S-24Q', 'facts': A10_FACTS}], None, [])


def test_dra_nodes_run_container_operands_without_the_classic_device_plugin_and_dcgm():
    # NVIDIA's DRA passthrough guide: nvidia-device-plugin "must be disabled" on DRA nodes, dcgm and dcgm-exporter
    # "recommended to disable". The GPU Operator gates each operand on its label and never overwrites a set one
    # (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0, gpuStateLabels and addGPUStateLabels).
    d, dcgm, exporter = (nl.DEVICE_PLUGIN_LABEL, 'nvidia.com/gpu.deploy.dcgm', 'nvidia.com/gpu.deploy.dcgm-exporter')
    assert nl.node_pool('h1', ['gpu_dra']) == 'dra'
    plugin = nl.DRA_PLUGIN_LABEL
    # (the operands other rows switch off are only a leftover "false" of ours to remove here)
    others = dict((key, nl.RemoveIf('false')) for key in nl.row_operand_labels() if key not in (d, dcgm, exporter))
    assert nl.desired_labels('dra') == dict({W: 'container', d: 'false', dcgm: 'false', exporter: 'false', V: None,
                                             plugin: 'true'}, **others)
    assert all(isinstance(nl.desired_labels('dra')[key], nl.RemoveIf) for key in others)
    assert nl.label_diff({W: 'container'}, nl.desired_labels('dra')) == {d: 'false', dcgm: 'false', exporter: 'false',
                                                                         plugin: 'true'}
    # what the operator set on a container node before the node joined the DRA pool is switched off
    operator_set = {W: 'container', d: 'true', dcgm: 'true', exporter: 'true'}
    assert nl.label_diff(operator_set, nl.desired_labels('dra')) == {d: 'false', dcgm: 'false', exporter: 'false',
                                                                     plugin: 'true'}
    # a node leaving the DRA path gets its operands back: our "false" goes, the operator then sets "true"
    leaving = {W: 'container', d: 'false', dcgm: 'false', exporter: 'false', plugin: 'true'}
    assert nl.label_diff(leaving, nl.desired_labels('container')) == {d: None, dcgm: None, exporter: None,
                                                                      plugin: None}
    # the operator's own "true" on other nodes is left alone (removing it would only be undone: a write every run)
    for pool in ('container', 'vm-passthrough'):
        assert nl.label_diff(dict(operator_set, **{W: pool}), nl.desired_labels(pool)) == {}
    with pytest.raises(nl.ManifestError, match=r'h1 is in the pools vm-passthrough, dra'):
        nl.node_pool('h1', ['gpu_dra', 'gpu_vm_passthrough'])


def test_group_pools_in_table_order():
    # every row's group puts a host in its group's default pool (its first row; the fleet view picks a vGPU host's
    # row by its interface); several groups list their pools in table order
    for row in fleet.POOL_TABLE:
        default = fleet.GROUP_ROWS[row.group][0].name
        assert nl.group_pools(['all', row.group]) == [default] == [nl.group_pool(['all', row.group], 'h1')]
    assert nl.group_pools(list(reversed(fleet.GPU_GROUPS))) == [fleet.GROUP_ROWS[g][0].name for g in fleet.GPU_GROUPS]
    assert nl.group_pools(['workers']) == [] and nl.group_pools(None) == []


def test_a_host_in_two_gpu_groups_is_refused_naming_both_groups():
    # one rule, one message (fleet.several_pools_problem) for the filter, the node labels and the fleet view
    with pytest.raises(nl.ManifestError, match=r'h1 is in the pools container, vm-passthrough \(groups gpu_container, '
                                               r'gpu_vm_passthrough\)'):
        nl.group_pool(['all', 'gpu_container', 'gpu_vm_passthrough'], 'h1')
    with pytest.raises(nl.ManifestError, match=r'groups gpu_vm_passthrough, gpu_dra\)'):
        nl.node_pool('h1', ['gpu_dra', 'gpu_vm_passthrough'])
    assert nl.group_pool(['all', 'gpu_vm_vgpu'], 'h1') == 'vm-vgpu'
    assert nl.group_pool(['all'], 'h1') is None


def test_nodes_needing_the_iommu_are_labelled_into_the_dedicated_machineconfig_pool():
    # An OpenShift custom MachineConfigPool reaches only the nodes its nodeSelector matches, and nothing labels
    # them for us (openshift/machine-config-operator docs/custom-pools.md: "The first thing to do to create a custom
    # pool is labeling the node with a custom role"). The VM and DRA nodes get the pool's label; a container node
    # loses it only where it carries exactly our value.
    sel = {'node-role.kubernetes.io/gpu-worker': ''}
    wanted = [{'node': 'p1', 'pool': 'vm-passthrough'}, {'node': 'v1', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q'},
              {'node': 'd1', 'pool': 'dra'}, {'node': 'c1', 'pool': 'container'}, {'node': 'c2', 'pool': 'container'}]
    nodes = [node('p1'), node('v1'), node('d1'), node('c1', **{'node-role.kubernetes.io/gpu-worker': ''}),
             node('c2', **{'node-role.kubernetes.io/gpu-worker': 'theirs'})]
    patches, report = nl.plan(wanted, nodes, [], pool_selector=sel)
    by_name = {p['metadata']['name']: p['metadata']['labels'] for p in patches}
    for name in ('p1', 'v1', 'd1'):
        assert by_name[name]['node-role.kubernetes.io/gpu-worker'] == ''
    assert by_name['c1']['node-role.kubernetes.io/gpu-worker'] is None
    assert 'node-role.kubernetes.io/gpu-worker' not in by_name.get('c2', {})
    # render mode (no cluster state): the label is set on the IOMMU nodes, never removed blindly
    patches, dummy = nl.plan(wanted, None, [], pool_selector=sel)
    by_name = {p['metadata']['name']: p['metadata']['labels'] for p in patches}
    assert {n for n, labels in by_name.items() if labels.get('node-role.kubernetes.io/gpu-worker') == ''} == {
        'p1', 'v1', 'd1'}
    # without a dedicated pool nothing about pools is written
    patches, dummy = nl.plan(wanted, None, [])
    assert not any('node-role.kubernetes.io/gpu-worker' in p['metadata']['labels'] for p in patches)


@pytest.mark.parametrize('config', ['A10-12Q\nx: y', 'bad config', '-A10', 'x' * 64])
def test_a_vgpu_config_outside_the_label_value_grammar_is_refused(config):
    with pytest.raises(nl.ManifestError, match=r'vGPU config name.*not valid.*label value.*set gpuvirt_vgpu_config'):
        nl.desired_labels('vm-vgpu', config)


def test_dra_nodes_carry_the_label_the_driver_manager_evicts_the_kubelet_plugin_by():
    # NVIDIA, "DRA Driver for NVIDIA GPUs" (GPU Operator docs), "Known Issues": the driver manager does not evict
    # the DRA kubelet plugin unless the DRA nodes are labelled and driver.manager.env names the label; its install
    # step uses nvidia.com/dra-kubelet-plugin=true. NVIDIA/k8s-driver-manager cmd/driver-manager/main.go@v0.12.0
    # (the version gpu-operator v26.7.0 ships): evictAllGPUOperatorComponents rewrites that label's value with
    # maybeSetPaused ("true" -> "paused-for-driver-upgrade") and maybeSetTrue sets "true" back afterwards.
    assert nl.DRA_PLUGIN_LABEL == 'nvidia.com/dra-kubelet-plugin'
    assert nl.DRA_EVICTION_ENV == 'NODE_LABEL_FOR_GPU_POD_EVICTION'
    assert nl.desired_labels('dra')[nl.DRA_PLUGIN_LABEL] == 'true'
    assert nl.label_diff({}, nl.desired_labels('dra'))[nl.DRA_PLUGIN_LABEL] == 'true'
    # mid-upgrade the driver manager holds the label paused: writing "true" back would return the plugin to a node
    # whose driver is being unloaded
    paused = {W: 'container', nl.DEVICE_PLUGIN_LABEL: 'false', 'nvidia.com/gpu.deploy.dcgm': 'false',
              'nvidia.com/gpu.deploy.dcgm-exporter': 'false', nl.DRA_PLUGIN_LABEL: 'paused-for-driver-upgrade'}
    assert nl.label_diff(paused, nl.desired_labels('dra')) == {}
    # no other pool gets it; a node that left the DRA pool loses our "true"
    for pool in ('container', 'vm-passthrough'):
        assert nl.DRA_PLUGIN_LABEL not in nl.label_diff({}, nl.desired_labels(pool))
        assert nl.label_diff({W: pool, nl.DRA_PLUGIN_LABEL: 'true'}, nl.desired_labels(pool)) == {
            nl.DRA_PLUGIN_LABEL: None}


def test_dra_nodes_get_the_custom_kubelet_plugin_selector():
    # a pod is scheduled only onto nodes that carry every label of its nodeSelector (Kubernetes docs, "Assign Pods
    # to Nodes", nodeSelector): a DRA node without the custom selector's labels runs no kubelet plugin, so they are
    # put on the DRA nodes (docs/pools/dra.md, "Node selector")
    sel = {'gpuvirt.io/dra': 'true'}
    patches, report = nl.plan([{'node': 'dra-1', 'pool': 'dra'}, {'node': 'pt-1', 'pool': 'vm-passthrough'}],
                              [{'metadata': {'name': 'dra-1', 'labels': {}}},
                               {'metadata': {'name': 'pt-1', 'labels': {'gpuvirt.io/dra': 'true'}}}],
                              [], dra_selector=sel)
    by_node = dict((p['metadata']['name'], p['metadata']['labels']) for p in patches)
    assert by_node['dra-1']['gpuvirt.io/dra'] == 'true'
    # a node outside the DRA pool loses our value (it would otherwise run the DRA plugin too)
    assert by_node['pt-1']['gpuvirt.io/dra'] is None
    # bad keys and values are refused before any write, naming the variable and the value
    for bad, match in (({'gpuvirt.io/dra\n': 'true'}, r'dra_driver_node_selector key: .*gpuvirt.io/dra'),
                       ({'a/b/c': 'x'}, r"dra_driver_node_selector key: 'a/b/c' is not valid"),
                       ({'gpuvirt.io/dra': 'a b'}, r"dra_driver_node_selector\[gpuvirt.io/dra\]: 'a b'"),
                       ({nl.DRA_PLUGIN_LABEL: 'false'}, r'driver manager evicts the DRA kubelet plugin'),
                       ({W: 'vm-passthrough'}, r'sets nvidia.com/gpu.workload.config=vm-passthrough but a node of '
                                               r'pool dra must carry')):
        with pytest.raises(nl.ManifestError, match=match):
            nl.desired_labels('dra', dra_selector=bad)


# The GPU Operator's side, as NVIDIA/gpu-operator v26.7.0 has it (read at that tag; not copied):
# - controllers/state_manager.go gpuStateLabels[gpuWorkloadConfigVMVgpu]: the operands of a vm-vgpu node, each label
#   "true"; addGPUStateLabels sets a label only when the node lacks it or has it empty; removeGPUStateLabels deletes
#   only state labels outside the workload's set.
VM_VGPU_STATE_LABELS = ('sandbox-device-plugin', 'vgpu-manager', 'vgpu-device-manager', 'sandbox-validator',
                        'cc-manager', 'client')
# - the operand DaemonSets' nodeSelector, each its own label "true": assets/state-sandbox-device-plugin/
#   0500_daemonset.yaml (nvidia-sandbox-device-plugin-daemonset), assets/state-vgpu-device-manager/0600_daemonset.yaml
#   (nvidia-vgpu-device-manager), assets/state-sandbox-validation/0500_daemonset.yaml (nvidia-sandbox-validator),
#   assets/state-vgpu-manager/0500_daemonset.yaml (nvidia-vgpu-manager-daemonset).
DAEMONSETS = {'nvidia-sandbox-device-plugin-daemonset': 'sandbox-device-plugin',
              'nvidia-vgpu-device-manager': 'vgpu-device-manager',
              'nvidia-sandbox-validator': 'sandbox-validator',
              'nvidia-vgpu-manager-daemonset': 'vgpu-manager'}


def operator_reconciles(labels):
    """The node's labels after the operator's updateGPUStateLabels for a vm-vgpu node (addGPUStateLabels)."""
    out = dict(labels)
    for operand in VM_VGPU_STATE_LABELS:
        if not out.get('nvidia.com/gpu.deploy.' + operand):
            out['nvidia.com/gpu.deploy.' + operand] = 'true'
    return out


def scheduled(labels):
    """The operand DaemonSets whose nodeSelector selects a node with ``labels``."""
    return sorted(name for name, operand in DAEMONSETS.items()
                  if labels.get('nvidia.com/gpu.deploy.' + operand) == 'true')


def apply_patch(labels, patch):
    out = dict(labels)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def test_a_vendor_vfio_vgpu_node_runs_the_vgpu_manager_but_not_the_sandbox_plugin_device_manager_or_validator():
    vf_rows = [r for r in fleet.POOL_TABLE if r.interface == 'vendor-vfio']
    assert vf_rows
    for row in vf_rows:
        # the workload label keeps the vm-vgpu operands, of which the row switches off those that cannot serve VFs
        assert row.workload == 'vm-vgpu' and all(o in VM_VGPU_STATE_LABELS for o in row.operands_off)
        # fresh node: our labels first (nodes.yml runs before the operator phase), then the operator reconciles
        node = operator_reconciles(apply_patch({}, nl.label_diff({}, nl.desired_labels(row.name, 'L40S-24Q'))))
        assert scheduled(node) == ['nvidia-vgpu-manager-daemonset']
        # a node the operator labelled as an mdev vGPU node before: its "true" values are switched off
        before = operator_reconciles({W: 'vm-vgpu'})
        node = operator_reconciles(apply_patch(before, nl.label_diff(before, nl.desired_labels(row.name, 'L40S-24Q'))))
        assert scheduled(node) == ['nvidia-vgpu-manager-daemonset']
        # a second run changes nothing
        assert nl.label_diff(node, nl.desired_labels(row.name, 'L40S-24Q')) == {}
        # the node moves to the mdev row (its facts now show mdev): our "false" goes, the operator sets "true"
        mdev = fleet.GROUP_ROWS[row.group][0]
        # (the node's record names the labels we set: owned_after of the first patch)
        ours = set(nl.owned_after({}, nl.desired_labels(row.name, 'L40S-24Q'),
                                  nl.label_diff({}, nl.desired_labels(row.name, 'L40S-24Q')), set()))
        assert ours == {nl.DEPLOY_LABEL_PREFIX + o for o in row.operands_off}
        back = operator_reconciles(apply_patch(node, nl.label_diff(node, nl.desired_labels(mdev.name, 'A10-12Q'),
                                                                   ours)))
        assert scheduled(back) == sorted(DAEMONSETS)
    # an mdev vGPU node keeps every operand; the operator's own "true" is not touched
    node = operator_reconciles({W: 'vm-vgpu', V: 'A10-12Q'})
    assert nl.label_diff(node, nl.desired_labels('vm-vgpu', 'A10-12Q')) == {}
    assert scheduled(node) == sorted(DAEMONSETS)


def test_the_vfio_role_leaves_vendor_vfio_gpus_alone():
    # the VFs stay on the nvidia driver (KubeVirt v1.9.0 nvidia.go shouldPermitNvidia wants that driver); host
    # preparation reads the group's default row (host_prep.yml: gpu_pool), which must agree
    vf_rows = [r for r in fleet.POOL_TABLE if r.interface == 'vendor-vfio']
    assert vf_rows and 'host_vfio' in fleet.GROUP_COLUMNS
    for row in vf_rows:
        assert row.host_vfio is False and fleet.BY_GROUP[row.group].host_vfio is False


def test_a_vendor_vfio_node_without_facts_in_this_run_keeps_its_labels_and_record():
    # a run that left the host out (--limit, the pool answer of the AWX survey) has no facts for it: the fleet view
    # gives it its group's default row (vm-vgpu, mdev) with gathered false. Its operand-off labels and their record,
    # set by a run that knew it is on vendor-specific VFIO, must stay: removing them would start the sandbox device
    # plugin and the vGPU Device Manager on it (manifests/node_labels.py, the vm-vgpu-vf row's operands_off)
    vf = fleet.BY_NAME['vm-vgpu-vf']
    ours = sorted(nl.DEPLOY_LABEL_PREFIX + o for o in vf.operands_off)
    labelled = node('n1', owned=','.join(ours), **dict({W: vf.workload, V: 'L40S-24Q'}, **{k: 'false' for k in ours}))
    unknown = {'host': 'h1', 'node': 'n1', 'pool': 'vm-vgpu', 'vgpu_config': 'L40S-24Q', 'gathered': False}
    patches, report = nl.plan([unknown, {'node': 'n2', 'pool': 'vm-passthrough', 'gathered': False}],
                              [labelled, node('n2')], [])
    assert [p['metadata']['name'] for p in patches] == ['n2']
    assert report['n1']['changes'] == {} and 'no GPU facts for host h1 in this run' in report['n1']['left_alone']
    # the same host with its facts in the run (gathered true) gets the row they show: planned as usual
    patches, report = nl.plan([dict(unknown, gathered=True)], [labelled], [])
    assert 'left_alone' not in report['n1'] and all(patches[0]['metadata']['labels'][k] is None for k in ours)


def test_plan_names_every_vgpu_host_without_a_config_and_the_fix():
    wanted = [{'node': 'v1', 'host': 'gpu-v01.example.com', 'pool': 'vm-vgpu'},
              {'node': 'v2', 'host': 'gpu-v02.example.com', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q'},
              {'node': 'v3', 'host': 'gpu-v03.example.com', 'pool': 'vm-vgpu-vf'}]
    with pytest.raises(nl.ManifestError) as err:
        nl.plan(wanted, None, None)
    msg = str(err.value)
    assert 'host gpu-v01.example.com (node v1, pool vm-vgpu) has no vGPU config' in msg, msg
    assert 'host gpu-v03.example.com (node v3, pool vm-vgpu-vf)' in msg and 'gpu-v02' not in msg, msg
    assert 'set gpuvirt_vgpu_config on the host' in msg and 'node_labels_vgpu_config_default' in msg, msg


# Labels another controller also writes, each with the upstream code that writes it: a render synced by Argo CD
# (self-heal) or Flux writes its value back whenever the live one differs, so the render must not hold them.
SHARED = {
    # NVIDIA/k8s-driver-manager cmd/driver-manager/main.go@v0.12.0 evictAllGPUOperatorComponents / maybeSetPaused:
    # the label named by NODE_LABEL_FOR_GPU_POD_EVICTION goes "true" -> "paused-for-driver-upgrade" while the driver
    # is unloaded (the ClusterPolicy's driver.manager.env names nvidia.com/dra-kubelet-plugin on DRA fleets)
    'nvidia.com/dra-kubelet-plugin': ('dra', None, 'true'),
}


def test_every_label_another_controller_writes_has_its_test_and_its_reason():
    assert set(nl.SHARED_LABELS) == set(SHARED)


@pytest.mark.parametrize('label', sorted(SHARED))
def test_a_label_another_controller_writes_is_left_out_of_the_render_and_named(label):
    pool, config, value = SHARED[label]
    # a render without cluster state: the plan sets every label; the render holds all but the shared one
    patches, _report = nl.plan([{'node': 'n1', 'pool': pool, 'vgpu_config': config}], None, [])
    assert patches[0]['metadata']['labels'][label] == value
    objects, left_out = nl.render_patches(patches)
    (node,) = objects
    assert label not in node['metadata']['labels'], node
    assert node['metadata']['labels'][nl.WORKLOAD_LABEL] == fleet.BY_NAME[pool].workload
    assert left_out == {label: {value: ['n1']}}
    (line,) = nl.left_out_lines(left_out)
    assert 'kubectl label node n1 %s=%s' % (label, value) in line and 'playbooks/nodes.yml in apply mode' in line


def test_the_render_keeps_our_other_labels_and_the_record_and_drops_removals():
    patches = [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {
        'name': 'n1', 'labels': {nl.WORKLOAD_LABEL: 'vm-passthrough', nl.VGPU_LABEL: None},
        'annotations': {nl.OWNED_ANNOTATION: ''}}},
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n2', 'labels': {nl.DRA_PLUGIN_LABEL: 'true'}}}]
    objects, left_out = nl.render_patches(patches)
    # n2 held only the shared label: no object for it
    assert objects == [{'apiVersion': 'v1', 'kind': 'Node', 'metadata': {
        'name': 'n1', 'labels': {nl.WORKLOAD_LABEL: 'vm-passthrough'}, 'annotations': {nl.OWNED_ANNOTATION: ''}}}]
    assert left_out == {nl.DRA_PLUGIN_LABEL: {'true': ['n2']}}


def test_a_render_against_converged_nodes_holds_every_wanted_label_and_the_record():
    # A GitOps tool deletes from the live object what the file held at the last sync and holds no more (client-side
    # apply's last-applied-configuration, server-side apply's managed fields: kubernetes.io, "Declarative Management
    # of Kubernetes Objects Using Configuration Files"). So the second render, against nodes the first one converged,
    # must still hold the workload label: without it the GPU Operator runs its default workload's operands there
    # (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go getWorkloadConfig, defaultWorkload).
    first, _r = nl.plan([{'node': 'g1', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-24Q'}], None, [], render=True)
    (obj,) = nl.render_patches(first)[0]
    assert obj['metadata']['labels'] == {W: 'vm-vgpu', V: 'A10-24Q'}
    record = obj['metadata']['annotations'][nl.OWNED_ANNOTATION]
    converged = node('g1', owned=record, **obj['metadata']['labels'])
    # the vGPU config changes: the file holds the whole state, the report only the change
    second, report = nl.plan([{'node': 'g1', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q'}], [converged], [],
                             render=True)
    (obj,) = nl.render_patches(second)[0]
    assert obj['metadata']['labels'] == {W: 'vm-vgpu', V: 'A10-12Q'}
    assert obj['metadata']['annotations'] == {nl.OWNED_ANNOTATION: record}
    assert report['g1']['changes'] == {V: 'A10-12Q'}
    # nothing changes: the file is the same, not empty (an empty render would take every label off at the sync)
    third, report = nl.plan([{'node': 'g1', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-24Q'}], [converged], [],
                            render=True)
    assert nl.render_patches(third)[0] == nl.render_patches(first)[0] and report['g1']['changes'] == {}
    # apply mode still patches only what differs
    applied, _r = nl.plan([{'node': 'g1', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q'}], [converged], [])
    assert applied[0]['metadata'] == {'name': 'g1', 'labels': {V: 'A10-12Q'}}


def test_a_render_leaves_a_deploy_label_an_administrator_set_before_out_and_keeps_ours():
    # a "false" the administrator set before the collection wanted it stays theirs (not in the record), as in apply
    # mode; one the record names is ours and stays in the file; a removal is named, not rendered
    off = nl.fleet.BY_NAME['vm-vgpu-vf'].operands_off
    theirs, ours = nl.DEPLOY_LABEL_PREFIX + off[0], nl.DEPLOY_LABEL_PREFIX + off[1]
    labels = {W: 'vm-vgpu', V: 'L40S-24Q', theirs: 'false', ours: 'false'}
    current = node('s1', owned=ours, **labels)
    patches, _r = nl.plan([{'node': 's1', 'pool': 'vm-vgpu-vf', 'vgpu_config': 'L40S-24Q'}], [current], [],
                          render=True)
    (obj,) = nl.render_patches(patches)[0]
    assert ours in obj['metadata']['labels'] and theirs not in obj['metadata']['labels'], obj
    # the same node moved to passthrough: the vGPU label goes (named by render_removals, not in the file)
    patches, _r = nl.plan([{'node': 's1', 'pool': 'vm-passthrough'}], [current], [], render=True)
    (obj,) = nl.render_patches(patches)[0]
    assert obj['metadata']['labels'][W] == 'vm-passthrough' and V not in obj['metadata']['labels']
    assert any(V in line for line in nl.render_removals(patches))


def test_the_fleet_view_s_entries_reach_the_plan_whole():
    # a field the view carries (mig_config here, or one it gains later) reaches desired_labels by its name: the
    # module does not rebuild the entry key by key
    view = [{'host': 'gpu-m01.example.com', 'node': 'gpu-m01', 'groups': ['gpu_container_mig'], 'pool': None,
             'mig_config': 'all-1g.10gb', 'facts': None, 'gathered': True, 'vgpu_config': None},
            {'host': 'gpu-v01.example.com', 'groups': ['gpu_vm_vgpu'], 'vgpu_config': None},
            {'host': 'gpu-x01.example.com', 'groups': ['gpu_container', 'gpu_vm_passthrough']}]
    wanted, errors = nl.wanted_entries(view, 'A10-12Q')
    (two,) = errors
    assert 'gpu-x01.example.com' in two
    mig_host, vgpu_host = wanted
    assert mig_host['pool'] == 'container-mig' and mig_host['mig_config'] == 'all-1g.10gb'
    assert vgpu_host['node'] == 'gpu-v01.example.com' and vgpu_host['vgpu_config'] == 'A10-12Q'
    patches, _r = nl.plan([mig_host], None, [])
    assert patches[0]['metadata']['labels']['nvidia.com/mig.config'] == 'all-1g.10gb'


# --- retire (playbooks/retire.yml) ---------------------------------------------------------------------------------
# labels others write (NFD, GPU feature discovery, the operator's state labels for an operand no row switches off):
# never the collection's, whatever rows the table has (checked below, so a new row that owns one says so here)
FOREIGN = dict({'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'NVIDIA-A10',
                'feature.node.kubernetes.io/pci-10de.present': 'true', 'nvidia.com/gpu.count': '1'},
               **{key: 'true' for key in ['nvidia.com/gpu.deploy.driver', 'nvidia.com/gpu.deploy.operator-validator']
                  if key not in nl.row_operand_labels()})


def test_the_foreign_labels_are_none_a_row_writes():
    assert not set(FOREIGN) & set(nl.row_operand_labels()), FOREIGN
    assert not set(FOREIGN) & set(nl.desired_labels('vm-vgpu', vgpu_config='A10-12Q')), FOREIGN


VF_OFF = 'nvidia.com/gpu.deploy.sandbox-device-plugin'


def _retire(item, nodes, vmis=(), **kw):
    return nl.plan([item], nodes, list(vmis), retire=True, **kw)


def test_retire_removes_only_our_values_and_the_record_and_keeps_every_foreign_label():
    current = node('g1', owned='', **dict({W: 'vm-vgpu', V: 'A10-12Q'}, **FOREIGN))
    patches, report = _retire({'node': 'g1', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q'}, [current])
    (patch,) = patches
    assert patch['metadata'] == {'name': 'g1', 'labels': {W: None, V: None},
                                 'annotations': {nl.OWNED_ANNOTATION: None}}
    assert report['g1']['kept'] == []
    # checked again by the sink: a null record is the only removal of an annotation it sends
    ((name, body),) = nl.checked_patches(patches)
    assert name == 'g1' and body['metadata']['annotations'] == {nl.OWNED_ANNOTATION: None}
    (line,) = nl.report_lines(report, patches)
    assert 'retire: remove %s, %s' % (W, V) in line and 'owned-labels record: removed' in line


def test_retire_keeps_a_value_the_collection_did_not_set_and_an_operand_false_not_in_the_record():
    # an admin moved the node to container by hand, and switched DCGM off themselves (not in the record); the
    # record names the sandbox device plugin we switched off (vendor-VFIO vGPU row)
    current = node('g1', owned=VF_OFF, **{W: 'container', V: 'A10-12Q', VF_OFF: 'false',
                                          nl.DCGM_LABEL: 'false'})
    patches, report = _retire({'node': 'g1', 'pool': 'vm-vgpu-vf', 'vgpu_config': 'A10-24Q'}, [current])
    (patch,) = patches
    assert patch['metadata']['labels'] == {VF_OFF: None}
    assert report['g1']['kept'] == sorted([W, V, nl.DCGM_LABEL])


def test_retire_without_a_record_removes_only_the_legacy_dra_operands():
    current = node('g1', owned=None, **{W: 'vm-passthrough', nl.DCGM_LABEL: 'false', VF_OFF: 'false'})
    patches, _report = _retire({'node': 'g1', 'pool': 'vm-passthrough'}, [current])
    (patch,) = patches
    assert patch['metadata'] == {'name': 'g1', 'labels': {W: None, nl.DCGM_LABEL: None}}


def test_a_retired_node_is_not_taken_for_a_legacy_one_on_the_next_run():
    # the first retire removed our workload label and the record; the admin's DCGM "false" stays on later runs too
    current = node('g1', owned=None, **dict({nl.DCGM_LABEL: 'false'}, **FOREIGN))
    patches, report = _retire({'node': 'g1', 'pool': 'vm-passthrough'}, [current])
    assert patches == [], patches
    assert nl.DCGM_LABEL in report['g1']['kept']


def test_retire_of_a_node_already_clean_or_gone_sends_nothing():
    clean = node('g1', owned=None, **FOREIGN)
    patches, report = nl.plan([{'node': 'g1', 'pool': 'container'}, {'node': 'gone', 'pool': 'container'}],
                              [clean], [], retire=True)
    assert patches == []
    assert 'not in the cluster' in report['gone']['left_alone']
    assert report['g1']['changes'] == {}


def test_retire_is_refused_while_vms_run_on_the_node():
    current = node('g1', **{W: 'vm-passthrough'})
    with pytest.raises(nl.ManifestError, match=r'node g1: refusing .* vms/win'):
        _retire({'node': 'g1', 'pool': 'vm-passthrough'}, [current], [vmi('win', 'g1')])


def test_retire_of_a_vgpu_node_without_its_config_keeps_the_vgpu_label():
    current = node('g1', **{W: 'vm-vgpu', V: 'A10-12Q'})
    patches, report = _retire({'node': 'g1', 'pool': 'vm-vgpu'}, [current])
    assert patches[0]['metadata']['labels'] == {W: None}
    assert report['g1']['kept'] == [V]


def test_the_dra_plugin_label_stays_while_the_driver_manager_has_it_paused():
    current = node('g1', **{W: fleet.BY_NAME['dra'].workload, nl.DRA_PLUGIN_LABEL: nl.DRIVER_UPGRADE_PAUSED})
    patches, report = _retire({'node': 'g1', 'pool': 'dra'}, [current])
    assert nl.DRA_PLUGIN_LABEL not in patches[0]['metadata']['labels']
    assert nl.DRA_PLUGIN_LABEL in report['g1']['kept']


def test_a_node_in_a_pool_of_its_own_gets_that_pools_label_and_loses_the_default_pools():
    # A vendor-VFIO host in a MachineConfigPool of its own (gpuvirt_machineconfig_pool): its node is labelled into that
    # pool and loses the default GPU pool's label, since the Machine Config Operator refuses a node that two custom
    # pools select (openshift/machine-config-operator pkg/helpers/helpers.go GetPoolsForNode: "belongs to N custom
    # roles"); the other IOMMU nodes lose the per-host pool's label where it carries our value.
    sel = {'node-role.kubernetes.io/gpu-worker': ''}
    own = {'s1': {'node-role.kubernetes.io/gpu-vf': ''}, 'w1': {}}
    wanted = [{'node': 'p1', 'pool': 'vm-passthrough'}, {'node': 's1', 'pool': 'vm-vgpu', 'vgpu_config': 'A10-12Q'},
              {'node': 'w1', 'pool': 'vm-passthrough'}, {'node': 'c1', 'pool': 'container'}]
    nodes = [node('p1', **{'node-role.kubernetes.io/gpu-vf': ''}), node('s1', **sel), node('w1', **sel),
             node('c1', **{'node-role.kubernetes.io/gpu-vf': 'theirs'})]
    patches, dummy = nl.plan(wanted, nodes, [], pool_selector=sel, pool_selectors=own)
    by_name = {p['metadata']['name']: p['metadata']['labels'] for p in patches}
    assert by_name['s1']['node-role.kubernetes.io/gpu-vf'] == '' and by_name['s1']['node-role.kubernetes.io/gpu-worker'] is None
    assert by_name['p1']['node-role.kubernetes.io/gpu-worker'] == '' and by_name['p1']['node-role.kubernetes.io/gpu-vf'] is None
    # a host in worker (a built-in pool: no label of ours) leaves the dedicated pool
    assert by_name['w1']['node-role.kubernetes.io/gpu-worker'] is None and 'node-role.kubernetes.io/gpu-vf' not in by_name['w1']
    # another's value stays
    assert 'node-role.kubernetes.io/gpu-vf' not in by_name.get('c1', {})
    # retired, the node loses its own pool's label
    patches, dummy = nl.plan([dict(wanted[1], host='s1.example.com')],
                             [node('s1', **{'node-role.kubernetes.io/gpu-vf': '', nl.WORKLOAD_LABEL: 'vm-vgpu'})],
                             [], pool_selector=sel, pool_selectors=own, retire=True)
    assert patches[0]['metadata']['labels']['node-role.kubernetes.io/gpu-vf'] is None, patches
    with pytest.raises(nl.ManifestError, match='the MachineConfigPool selector of node s1'):
        nl.plan(wanted, nodes, [], pool_selector=sel, pool_selectors={'s1': ['x']})


def test_the_commands_a_render_prints_are_quoted_for_the_shell_a_user_pastes_them_into():
    # a selector key from the inventory (machineconfig_node_selector is checked only to be a string) must not become
    # a second command in the line a user copies
    lines = nl.render_removals([{'metadata': {'name': 'gpu-1', 'labels': {'a;touch /tmp/x #': None}}}])
    assert lines and lines[0].endswith("kubectl label node gpu-1 'a;touch /tmp/x #-'"), lines
