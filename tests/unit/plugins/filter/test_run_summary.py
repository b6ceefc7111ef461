# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The summary lines say what ran and what it changed (filters summary_host_line, summary_kubevirt_line,
summary_phases_line), one input per case a run can leave."""
from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.filter.run_summary import (
    summary_host_line, summary_kubevirt_line, summary_phases_line)
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet

PASSTHROUGH = {'host': 'lab-gpu-0', 'node': 'lab-gpu-0', 'pool': 'vm-passthrough', 'gathered': True,
               'traits': fleet.pool_traits('vm-passthrough'), 'interface_reason': ''}
VF = {'host': 'gpu-v03', 'node': 'gpu-v03', 'pool': 'vm-vgpu-vf', 'gathered': True, 'interface': 'vendor-vfio',
      'interface_reason': 'the host shows vendor-vfio', 'traits': fleet.pool_traits('vm-vgpu-vf')}


@pytest.mark.parametrize('entry, report, vf, want, line', [
    (PASSTHROUGH, {'changed': ['kernel arguments', 'vfio-pci'], 'rebooted': True, 'reboot_reasons': ['IOMMU on']}, {},
     {'nvidia.com/GA102GL_A10': 2},
     'lab-gpu-0 (node lab-gpu-0, pool vm-passthrough): host prep ran; changed: kernel arguments, vfio-pci; '
     'rebooted: yes (IOMMU on); expects nvidia.com/GA102GL_A10 x2'),
    (PASSTHROUGH, {'changed': []}, {}, {},
     'lab-gpu-0 (node lab-gpu-0, pool vm-passthrough): host prep ran; changed: nothing; rebooted: no; '
     'expects nothing (no NVIDIA GPU in its facts)'),
    (dict(PASSTHROUGH, gathered=False), {}, {}, {},
     'lab-gpu-0 (node lab-gpu-0, pool vm-passthrough): host prep not run; changed: nothing (not run); rebooted: no; '
     'expects unknown (no GPU facts: run gather.yml first)'),
    (PASSTHROUGH, {'left_alone': 'OpenShift: the MachineConfig does it'}, {}, {},
     'lab-gpu-0 (node lab-gpu-0, pool vm-passthrough): host prep left the host alone (OpenShift: the MachineConfig '
     'does it); changed: nothing; rebooted: no; expects nothing (no NVIDIA GPU in its facts)'),
    (VF, {'changed': []}, {'ran': True, 'vfs': ['0000:41:00.4 L40S-24Q']}, {'nvidia.com/AD102GL_L40S': 1},
     'gpu-v03 (node gpu-v03, pool vm-vgpu-vf, vGPU interface vendor-vfio: the host shows vendor-vfio): host prep ran; '
     'changed: nothing; rebooted: no; VF profiles: 0000:41:00.4 L40S-24Q; expects nvidia.com/AD102GL_L40S x1'),
    (VF, {}, {}, {},
     'gpu-v03 (node gpu-v03, pool vm-vgpu-vf, vGPU interface vendor-vfio: the host shows vendor-vfio): host prep not '
     'run; changed: nothing (not run); rebooted: no; VF profiles: not set; expects nothing (no NVIDIA GPU in its facts)'),
])
def test_host_line(entry, report, vf, want, line):
    assert summary_host_line(entry, report, vf, want) == line


KV_REPORT = {'featureGates': ['GPU'], 'mediatedDevicesConfiguration': {'enabled': False}}


@pytest.mark.parametrize('args, line', [
    # the lab: no device wanted, but the run set the gate and switched mdev configuration off
    (([], 'kubevirt', 'apply', True, ['kubevirt'], KV_REPORT),
     'KubeVirt CR permits no GPU device (no host of the run wants one); updated by this run (with feature gates GPU; '
     'mediated device configuration off)'),
    (([], 'kubevirt', 'apply', False, [], KV_REPORT),
     'KubeVirt CR permits no GPU device (no host of the run wants one); already as wanted, not written (with feature '
     'gates GPU; mediated device configuration off)'),
    # the mediated device switch on, the gates given as a map (only those set true are named)
    (([], 'kubevirt', 'apply', False, [], {'featureGates': {'GPU': True, 'HostDevices': False},
                                           'mediatedDevicesConfiguration': {'enabled': True}}),
     'KubeVirt CR permits no GPU device (no host of the run wants one); already as wanted, not written (with feature '
     'gates GPU; mediated device configuration on)'),
    ((['nvidia.com/GA102GL_A10'], 'hco', 'apply', True, [], {}, True),
     'HyperConverged permits nvidia.com/GA102GL_A10; would be updated (not written: a preview)'),
    ((['nvidia.com/GA102GL_A10'], 'hco', 'render', None, ['60-kubevirt-devices-x.yaml'], {}),
     'HyperConverged permits nvidia.com/GA102GL_A10; rendered'),
])
def test_kubevirt_line(args, line):
    assert summary_kubevirt_line(*args) == line


def test_phases_line_names_what_ran_and_what_did_not():
    assert summary_phases_line([
        {'name': 'preflight', 'ran': True},
        {'name': 'vGPU Manager image', 'ran': True, 'note': 'nothing to build: no vGPU host'},
        {'name': 'verify', 'ran': False, 'note': 'stopped before it'},
        {'name': 'vGPU profiles on VFs', 'ran': False},
    ]) == ('Ran: preflight, vGPU Manager image (nothing to build: no vGPU host). '
           'Not run: verify (stopped before it); vGPU profiles on VFs (not run).')
    assert summary_phases_line([]) == 'Ran: no phase.'
