# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_prep.yml converges a host to its pool's row both ways: on a container host (the pool table: kernel arguments,
vfio and the VF restore absent, the nouveau blacklist left as it is) every role runs in the state the row gives it. Run in
--check mode on this machine (the real playbook, localhost in gpu_container), so nothing here is changed."""

from __future__ import annotations

import os

from play_runner import run_play

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
INVENTORY = """
all:
  children:
    gpu_container:
      hosts:
        localhost:
          ansible_connection: local
"""


def test_a_container_host_runs_each_role_in_the_state_of_its_row(tmp_path):
    inv = tmp_path / 'inventory.yml'
    inv.write_text(INVENTORY)
    play = ''.join('- ansible.builtin.import_playbook: %s\n' % os.path.join(ROOT, 'playbooks', name)
                   for name in ('host_prep.yml', 'summary.yml'))
    # host_prep_plan false: the plan would find nothing of ours on this machine and leave the host out of the
    # rolling play; here every role must run in the state of the row
    rc, out = run_play(tmp_path, play, args=['-i', str(inv), '--check', '-e', 'gpuvirt_platform=kubernetes',
                                             '-e', 'reboot_drain=false', '-e', 'host_prep_plan=false'])
    assert rc == 0, out

    def result(task):
        """The lines a task printed, up to the next task."""
        return out.split('TASK [%s]' % task, 1)[1].split('TASK [', 1)[0]

    # kernel arguments: taken back (what the record lists: here none), never ensured (no IOMMU vendor looked for)
    assert 'skipping' in result("gpuvirt.provision.kernel_args : Look for the platform IOMMU's ACPI table (DMAR is "
                                "Intel VT-d, IVRS is AMD-Vi)"), out
    assert 'ok: [localhost]' in result('gpuvirt.provision.kernel_args : Ensure the kernel arguments in the boot '
                                       'loader, or take back the recorded ones'), out
    # vfio taken back (nothing of ours here), the nouveau blacklist neither written nor taken back on a container
    # host (the pool table's leave), the VF restore looked at and nothing of ours found
    assert 'ok: [localhost]' in result('gpuvirt.provision.vfio : Plan the removal of the vfio binding files (no change)')
    assert 'skipping' in result('Blacklist nouveau'), out
    assert 'TASK [gpuvirt.provision.nouveau :' not in out, out
    assert 'skipping' in result("gpuvirt.provision.vgpu_vf : Remove the boot-time restore's files that are ours"), out
    flat = ' '.join(out.split())
    assert 'localhost (node localhost, pool container): host prep ran; changed: nothing' in flat, out
