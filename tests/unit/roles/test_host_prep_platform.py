# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_prep.yml follows the platform table: where kernel arguments go to a MachineConfig (OpenShift), it changes
nothing on the hosts and says so; where they go to the host (Kubernetes), its roles run.

NVIDIA's "NVIDIA GPU Operator with OpenShift Virtualization" enables the IOMMU with a MachineConfig only
("Enabling the IOMMU driver on hosts") and lets the GPU Operator's vfio-manager bind passthrough GPUs; the Machine
Config Operator owns an RHCOS node's kernel command line and reboots. Run in --check mode on this machine (the play
is the real playbook, localhost in the vm-passthrough group), so a regression previews changes instead of making
them."""

from __future__ import annotations

import os

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet
from play_runner import run_play

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
INVENTORY = """
all:
  children:
    gpu_vm_passthrough:
      hosts:
        localhost:
          ansible_connection: local
"""


def _host_prep(tmp_path, platform):
    inv = tmp_path / 'inventory.yml'
    inv.write_text(INVENTORY)
    # the phase, then the end-of-run summary as site.yml prints it
    play = ''.join('- ansible.builtin.import_playbook: %s\n' % os.path.join(ROOT, 'playbooks', name)
                   for name in ('host_prep.yml', 'summary.yml'))
    return run_play(tmp_path, play, args=['-i', str(inv), '--check', '-e', 'gpuvirt_platform=' + platform,
                                          '-e', 'kernel_args_iommu_vendor=intel'])


def test_openshift_hosts_are_left_to_the_machine_config_operator(tmp_path):
    rc, out = _host_prep(tmp_path, 'openshift')
    assert rc == 0, out
    assert 'host_prep: nothing to do on localhost (platform openshift)' in out, out
    # no role of host preparation was even entered: no kernel argument, nouveau, vfio or reboot task
    for role in ('kernel_args', 'nouveau', 'vfio', 'reboot'):
        assert 'gpuvirt.provision.%s :' % role not in out, out
    # the summary tells the truth about it (it read a fact host_prep.yml never set, so said "not run"); the
    # callback folds long messages, so compare with the whitespace collapsed
    assert 'localhost (node localhost, pool vm-passthrough): host prep left the host alone (platform openshift: ' \
           'kernel arguments through MachineConfig); changed: nothing; rebooted: no' in ' '.join(out.split()), out


def test_kubernetes_hosts_are_prepared_over_ssh(tmp_path):
    rc, out = _host_prep(tmp_path, 'kubernetes')
    assert 'host_prep: nothing to do on localhost' not in out, out
    # the kernel_args role checked its inputs for this host, and the plan play read the host (one module call,
    # host_plan, deciding the arguments as the role does), whatever the preview then found here
    assert 'TASK [gpuvirt.provision.kernel_args : Check the kernel_args flags]' in out, out
    assert 'ok: [localhost]' in out.split('TASK [gpuvirt.provision.kernel_args : Check the kernel_args flags]', 1)[1], out
    assert 'TASK [Read the host and plan its changes (no change)]' in out, out


def test_a_host_of_no_known_pool_is_refused_naming_the_table_groups(tmp_path):
    # the message lists the pool table's groups (gpuvirt.provision.pool_traits), not a hand-typed copy of them
    inv = tmp_path / 'inventory.yml'
    inv.write_text(INVENTORY.replace('ansible_connection: local',
                                     'ansible_connection: local\n          gpuvirt_pool: bogus'))
    play = '- ansible.builtin.import_playbook: %s\n' % os.path.join(ROOT, 'playbooks', 'host_prep.yml')
    rc, out = run_play(tmp_path, play, args=['-i', str(inv), '--check', '-e', 'gpuvirt_platform=kubernetes'])
    flat = ' '.join(out.split())
    assert rc != 0 and 'has pool "bogus"' in flat, out
    assert '(set gpuvirt_pool or put the host in %s, the pool groups' % ', '.join(fleet.GPU_GROUPS) in flat, out
