# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the upgrade plan says about KubeVirt's own behaviour across its upgrade: the workload updater's evictions
(spec.workloadUpdateStrategy), the outdated VMIs it reports, the DisableMDEVConfiguration gate past v1.9; and the
driver-manager that uncordons container and DRA pool nodes itself."""
from __future__ import annotations

import pytest

from .test_upgrade_plan import (  # noqa: F401  (the planner tests' cluster shapes)
    cluster, ds, plan, pod, rev, vm, vmi)


def kubevirt_cr(methods=None, size=None, outdated=None, gates=(), mdev_enabled=None, version='v1.8.2'):
    # the KubeVirt CR as virt-operator reports it (kubevirt.io/v1 KubeVirt: spec.workloadUpdateStrategy,
    # spec.configuration, status.outdatedVirtualMachineInstanceWorkloads)
    spec = {'configuration': {'developerConfiguration': {'featureGates': list(gates)}}}
    if mdev_enabled is not None:
        spec['configuration']['mediatedDevicesConfiguration'] = {'enabled': mdev_enabled}
    if methods is not None:
        spec['workloadUpdateStrategy'] = {'workloadUpdateMethods': list(methods)}
        if size is not None:
            spec['workloadUpdateStrategy']['batchEvictionSize'] = size
    status = {'observedKubeVirtVersion': version}
    if outdated is not None:
        status['outdatedVirtualMachineInstanceWorkloads'] = outdated
    return {'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'}, 'spec': spec, 'status': status}


# the workload updater ---------------------------------------------------------------------------------------------
# kubevirt/kubevirt pkg/virt-controller/watch/workload-updater/workload-updater.go getUpdateData: an outdated running
# VMI goes to the migration list when LiveMigrate is allowed and it is migratable, else to the eviction list when
# Evict is allowed; sync evicts batchEvictionSize (default 10) of them every batchEvictionInterval, on any node. GPU
# VMIs are not migratable (HostDeviceNotLiveMigratable), so Evict shuts them down.
@pytest.mark.parametrize('methods', [['LiveMigrate', 'Evict'], ['Evict']])
def test_evict_in_the_workload_update_methods_with_gpu_vms_running_is_refused(methods):
    # a GPU VM on a node outside upgrade_nodes counts too: the updater acts on the whole cluster
    p = plan(vmis=[vmi('a', 'gpu-1'), vmi('b', 'gpu-9')], vms=[vm('a'), vm('b')], names=('gpu-2',),
             current={'kubevirt': 'v1.8.2'}, target={'kubevirt': 'v1.9.0'}, kubevirt_cr=kubevirt_cr(methods, 3))
    assert not p['ok']
    (refusal,) = [r for r in p['refusals'] if 'workloadUpdateMethods' in r]
    assert refusal.startswith('the KubeVirt CR kubevirt/kubevirt has spec.workloadUpdateStrategy.workloadUpdateMethods '
                              '[%s]: once KubeVirt v1.9.0 is deployed its workload updater evicts every VMI that cannot '
                              'live-migrate, 3 every batchEvictionInterval' % ', '.join(methods))
    assert 'the 2 GPU VM(s) (vms/a, vms/b) would be shut down' in refusal
    assert 'Remove Evict from the KubeVirt CR kubevirt/kubevirt spec.workloadUpdateStrategy.workloadUpdateMethods' in refusal


def test_under_hyperconverged_the_refusal_names_hyperconverged():
    p = plan(vmis=[vmi('a', 'gpu-1')], vms=[vm('a')], current={'kubevirt': 'v1.8.2'}, target={'kubevirt': 'v1.9.0'},
             kubevirt_cr=kubevirt_cr(['LiveMigrate', 'Evict']), kubevirt_config='hco')
    (refusal,) = [r for r in p['refusals'] if 'workloadUpdateMethods' in r]
    # batchEvictionSize unset: the updater's default, 10 (defaultBatchDeletionCount)
    assert ', 10 every batchEvictionInterval' in refusal
    assert 'Remove Evict from HyperConverged kubevirt-hyperconverged spec.workloadUpdateStrategy' in refusal


@pytest.mark.parametrize('methods,vmis,target', [
    (['LiveMigrate', 'Evict'], [], 'v1.9.0'),                            # no GPU VM runs
    (['LiveMigrate', 'Evict'], [vmi('c', 'gpu-1', gpu=False)], 'v1.9.0'),  # a VM without GPU migrates or is evicted:
    (['LiveMigrate', 'Evict'], [vmi('a', 'gpu-1')], ''),                 # no KubeVirt upgrade in this run
    (['LiveMigrate', 'Evict'], [vmi('a', 'gpu-1')], 'v1.8.2'),           # the running version
    (['LiveMigrate'], [vmi('a', 'gpu-1')], 'v1.9.0'),                    # HCO's default: no eviction
    ([], [vmi('a', 'gpu-1')], 'v1.9.0'),                                 # empty: no automated update
    (None, [vmi('a', 'gpu-1')], 'v1.9.0'),                               # the KubeVirt CR's default (unset)
])
def test_no_refusal_without_evict_gpu_vms_and_a_kubevirt_upgrade(methods, vmis, target):
    p = plan(vmis=vmis, vms=[vm('a'), vm('c')], names=(), current={'kubevirt': 'v1.8.2'},
             target={'kubevirt': target}, kubevirt_cr=kubevirt_cr(methods))
    assert p['ok'], p['refusals']


def test_a_finished_or_deleted_gpu_vmi_is_no_reason_to_refuse():
    done = vmi('a', 'gpu-1')
    done['status']['phase'] = 'Succeeded'
    going = vmi('b', 'gpu-1')
    going['metadata']['deletionTimestamp'] = '2026-11-29T00:00:00Z'
    p = plan(vmis=[done, going], names=(), current={'kubevirt': 'v1.8.2'}, target={'kubevirt': 'v1.9.0'},
             kubevirt_cr=kubevirt_cr(['Evict']))
    assert p['ok'], p['refusals']


def test_gpu_vms_keep_the_old_launcher_after_a_kubevirt_upgrade_without_evict():
    p = plan(vmis=[vmi('a', 'gpu-1')], vms=[vm('a')], names=(), current={'kubevirt': 'v1.8.2'},
             target={'kubevirt': 'v1.9.0'}, kubevirt_cr=kubevirt_cr(['LiveMigrate']))
    assert ('note: KubeVirt v1.9.0: the 1 GPU VM(s) (vms/a) cannot live-migrate, so they keep the older virt-launcher '
            'until each is restarted (workloadUpdateMethods [LiveMigrate]; KubeVirt counts them in '
            'status.outdatedVirtualMachineInstanceWorkloads)') in p['summary']


def test_the_outdated_workloads_kubevirt_reports_are_noted():
    # workload-updater.go sync writes the count of outdated VMIs to status.outdatedVirtualMachineInstanceWorkloads
    p = plan(names=(), kubevirt_cr=kubevirt_cr(outdated=4))
    assert ('note: KubeVirt reports 4 VMI(s) still on an older virt-launcher (KubeVirt CR kubevirt/kubevirt '
            'status.outdatedVirtualMachineInstanceWorkloads): a GPU VM among them is updated only when it is '
            'restarted') in p['summary']
    assert not [line for line in plan(names=(), kubevirt_cr=kubevirt_cr(outdated=0))['summary'] if 'older' in line]


# the DisableMDEVConfiguration gate past 1.9 -----------------------------------------------------------------------
# kubevirt/kubevirt v1.9.0: the gate is registered Deprecated (pkg/virt-config/featuregate/inactive.go), IsEnabled
# returns true for a listed gate whatever its state (featuregate/feature-gates.go), and MediatedDevicesHandlingDisabled
# falls back to it when mediatedDevicesConfiguration.enabled is unset (pkg/virt-config/virt-config.go): 1.9 honours
# it. "Deprecated" is "going to be discontinued in the following release" (feature-gates.go): a later one may not.
def test_a_target_past_1_9_with_the_gate_alone_is_refused():
    p = plan(names=(), current={'kubevirt': 'v1.9.0'}, target={'kubevirt': 'v1.10.0'},
             kubevirt_cr=kubevirt_cr(gates=['DisableMDEVConfiguration'], version='v1.9.0'))
    (refusal,) = [r for r in p['refusals'] if 'DisableMDEVConfiguration' in r]
    assert refusal == (
        "the KubeVirt CR kubevirt/kubevirt turns KubeVirt's mediated device handling off with the "
        "DisableMDEVConfiguration feature gate alone (no spec.configuration.mediatedDevicesConfiguration.enabled): "
        "KubeVirt 1.9 still honours the deprecated gate, a later release may drop it, and KubeVirt v1.10.0 would then "
        "create and remove mediated devices under the GPU Operator. Run playbooks/kubevirt.yml for the KubeVirt "
        "running now (from 1.8.0 it writes mediatedDevicesConfiguration.enabled: false), then run "
        "playbooks/upgrade.yml again")


@pytest.mark.parametrize('cur,tgt,gates,enabled', [
    ('v1.8.2', 'v1.9.0', ['DisableMDEVConfiguration'], None),     # 1.9.0 still honours the gate
    ('v1.7.2', 'v1.8.0', ['DisableMDEVConfiguration'], None),
    ('v1.9.0', 'v1.10.0', ['DisableMDEVConfiguration'], False),   # the field is set: it wins over the gate
    ('v1.9.0', 'v1.10.0', [], False),
    ('v1.9.0', 'v1.10.0', [], None),                              # mdev handling on: nothing to keep off
    ('v1.9.0', '', ['DisableMDEVConfiguration'], None),           # no KubeVirt upgrade in this run
])
def test_no_gate_refusal_where_kubevirt_still_honours_it_or_the_field_decides(cur, tgt, gates, enabled):
    p = plan(names=(), current={'kubevirt': cur}, target={'kubevirt': tgt},
             kubevirt_cr=kubevirt_cr(gates=gates, mdev_enabled=enabled, version=cur))
    assert not [r for r in p['refusals'] if 'DisableMDEVConfiguration' in r], p['refusals']


# the driver-manager that uncordons --------------------------------------------------------------------------------
def _with_driver_manager(daemonset, eviction, drain='false'):
    # NVIDIA/gpu-operator v26.7.0 assets: state-driver/0500_daemonset.yaml ENABLE_GPU_POD_EVICTION "true", the
    # vGPU Manager's and the VFIO manager's "false" (ENABLE_AUTO_DRAIN "false" in all three)
    daemonset['spec']['template'] = {'spec': {'initContainers': [
        {'name': 'k8s-driver-manager', 'command': ['driver-manager'], 'args': ['uninstall_driver'],
         'env': [{'name': 'ENABLE_GPU_POD_EVICTION', 'value': eviction},
                 {'name': 'ENABLE_AUTO_DRAIN', 'value': drain}]}]}}
    return daemonset


def test_a_node_whose_driver_pod_is_replaced_is_said_to_be_uncordoned_by_the_driver_manager():
    # NVIDIA/k8s-driver-manager v0.12.0 cmd/driver-manager/main.go uninstallDriver: with GPU pod eviction on it
    # cordons, evicts the GPU pods, and calls UncordonNode once the old driver is unloaded
    c = cluster()
    c['daemonsets'] = [_with_driver_manager(ds('nvidia-driver-daemonset', 'u1'), 'true')]
    c['revisions'] = [rev('nvidia-driver-daemonset', 'u1', 1, 'old'), rev('nvidia-driver-daemonset', 'u1', 2, 'new')]
    c['pods'] = [pod('drv-gpu-1', 'nvidia-driver-daemonset', 'gpu-1', 'old')]
    p = plan(cluster=c, names=('gpu-1',))
    assert p['nodes'][0]['uncordoned_by'] == ['nvidia-driver-daemonset']
    assert ("  the new nvidia-driver-daemonset pod's k8s-driver-manager evicts the GPU pods and uncordons the node "
            "itself: it stays schedulable from then on, while the roll waits and after a failure") in p['summary']


@pytest.mark.parametrize('eviction,drain,said', [('false', 'false', False), ('false', 'true', True),
                                                 ('true', 'false', True)])
def test_the_vgpu_manager_leaves_the_node_cordoned(eviction, drain, said):
    c = cluster()
    c['daemonsets'] = [_with_driver_manager(ds('nvidia-vgpu-manager-daemonset', 'u1'), eviction, drain)]
    p = plan(cluster=c, names=('gpu-1',))
    assert bool(p['nodes'][0]['uncordoned_by']) is said
    assert any('uncordons the node itself' in line for line in p['summary']) is said
