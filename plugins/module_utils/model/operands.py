# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's operands a pool row may switch off (the pool table's ``operands_off``), and why.

The GPU Operator deploys each operand's DaemonSet on the nodes whose ``nvidia.com/gpu.deploy.<operand>`` label is
``"true"``, and sets that label itself, per node, for the operands of the node's workload
(``nvidia.com/gpu.workload.config``) only where the node does not carry it yet (NVIDIA/gpu-operator v26.7.0
controllers/state_manager.go ``gpuStateLabels``, ``addGPUStateLabels``). So a pool whose nodes must not run one of
their workload's operands labels it ``"false"``; an operand the workload never deploys has nothing to switch off.

``WORKLOAD_OPERANDS`` is the operator's set per workload (``gpuStateLabels``); the pool table refuses a row whose
``operands_off`` names an operand its workload does not deploy. ``OFF_SOURCES`` says, per operand a row switches
off, why it may and must be off there (Markdown): docs/operator-contract.md's rows for these labels are generated
from it and from the rows that name the operand (``make docs``), and ``make docs`` stops, naming the operand, where
a row switches off an operand without its source here.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

# NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels: the operands the operator labels "true"
# on a node of each workload (the label is nvidia.com/gpu.deploy.<operand>); addGPUStateLabels adds mig-manager on a
# container node whose GPUs are MIG capable (GFD's nvidia.com/mig.capable).
WORKLOAD_OPERANDS = {
    'container': ('driver', 'gpu-feature-discovery', 'container-toolkit', 'device-plugin', 'dcgm', 'dcgm-exporter',
                  'node-status-exporter', 'operator-validator', 'mig-manager'),
    'vm-passthrough': ('sandbox-device-plugin', 'sandbox-validator', 'vfio-manager', 'kata-manager', 'cc-manager'),
    'vm-vgpu': ('sandbox-device-plugin', 'vgpu-manager', 'vgpu-device-manager', 'sandbox-validator', 'cc-manager'),
}

_STATE = ('NVIDIA/gpu-operator v26.7.0 `controllers/state_manager.go` `gpuStateLabels`, `addGPUStateLabels` (keeps '
          'a set value)')
# Why each operand a row switches off is off there (docs/operator-contract.md, the Node labels' rows).
OFF_SOURCES = {
    'device-plugin': 'DRA guide, "Limitations and considerations" (nvidia-device-plugin "Must be disabled"); '
                     'NVIDIA/gpu-operator `controllers/state_manager.go` `gpuStateLabels` / `addGPUStateLabels` '
                     '(sets a label only when missing or empty)',
    'dcgm': 'DRA guide, "Limitations and considerations" (dcgm "Recommended to disable"); ' + _STATE,
    'dcgm-exporter': 'DRA guide, "Limitations and considerations" (dcgm-exporter "Recommended to disable"); ' + _STATE,
    'sandbox-device-plugin':
        'NVIDIA/gpu-operator v26.7.0 `controllers/state_manager.go` `gpuStateLabels[gpuWorkloadConfigVMVgpu]` (a '
        '`vm-vgpu` operand), `addGPUStateLabels` (keeps a set value), `removeGPUStateLabels` (deletes only labels '
        'outside the workload\'s set); `assets/state-sandbox-device-plugin/0500_daemonset.yaml` (nodeSelector on '
        'this label `"true"`); KubeVirt\'s own device plugin advertises the VFs (docs/pools/vendor-vfio.md)',
    'vgpu-device-manager':
        _STATE + '; `assets/state-vgpu-device-manager/0600_daemonset.yaml` (nodeSelector); the vGPU Device Manager '
        'creates vGPUs through mdev only (gpu-operator issue "vGPU device manager is mdev-only", open)',
    'sandbox-validator':
        _STATE + '; `assets/state-sandbox-validation/0500_daemonset.yaml` (nodeSelector; init container '
        '`vgpu-devices-validation` with `WITH_WAIT` `"true"`); `cmd/nvidia-validator/main.go` '
        '`VGPUDevices.validate` -> `runValidation` waits for a device under `/sys/bus/mdev/devices` (go-nvlib '
        '`pkg/nvmdev` `GetAllDevices`), which a vendor-VFIO node never has',
}


def off_problem(workload, operands):
    """None when every operand of ``operands`` is one ``workload`` deploys, else what is wrong, in words."""
    deployed = WORKLOAD_OPERANDS.get(workload, ())
    stray = [o for o in operands if o not in deployed]
    if not stray:
        return None
    return ('the GPU Operator deploys no %s on a node of workload %r, so there is nothing to switch off (it '
            'deploys %s there: controllers/state_manager.go gpuStateLabels)'
            % (', '.join(stray), workload, ', '.join(deployed) or 'nothing'))
