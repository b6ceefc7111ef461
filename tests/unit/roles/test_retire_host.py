# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""retire.yml's host play takes back everything the collection owns on a host (vfio files, the VF restore, the
recorded kernel arguments, the nouveau blacklist), each role in its absent state, and says so in one line. Run in
--check mode on this machine (the real playbook, localhost in gpu_vm_passthrough), so nothing here is changed; what
each role takes back and keeps is tested per role (test_vfio_absent, test_kernel_args_both_ways,
test_nouveau_both_ways, test_vgpu_vf_leave)."""

from __future__ import annotations

import os

from play_runner import run_play
# imported when the file is collected, not inside a test (a test before it in the same process may have
# installed Ansible's collection loader, through which a first import of a collection submodule fails)
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan, modprobe

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
INVENTORY = """
all:
  children:
    gpu_vm_passthrough:
      hosts:
        localhost:
          ansible_connection: local
"""


def test_the_host_play_runs_every_role_absent_and_says_what_it_took_back(tmp_path):
    inv = tmp_path / 'inventory.yml'
    inv.write_text(INVENTORY)
    play = '- ansible.builtin.import_playbook: %s\n' % os.path.join(ROOT, 'playbooks', 'retire.yml')
    # the host play only (its tag): the check play and the cluster plays need an API server, and are run against
    # one in tests/integration/cluster_kubevirt/test_retire.py
    rc, out = run_play(tmp_path, play, {'retire_hosts': ['localhost'], 'reboot_drain': False},
                       args=['-i', str(inv), '--check', '--tags', 'retire_host'])
    assert rc == 0, out
    for task in ('gpuvirt.provision.vfio : Plan the removal of the vfio binding files (no change)',
                 "gpuvirt.provision.vgpu_vf : Judge the boot-time restore's files (no link followed, nothing removed yet)",
                 'gpuvirt.provision.kernel_args : Ensure the kernel arguments in the boot loader, or take back the '
                 'recorded ones',
                 'gpuvirt.provision.nouveau : Remove the nouveau blacklist the role wrote',
                 'gpuvirt.provision.reboot : Collect the pending reboot reasons'):
        assert 'TASK [%s]' % task in out, (task, out)
    # the present paths never run here
    assert 'skipping' in out.split('TASK [gpuvirt.provision.nouveau : Blacklist nouveau]', 1)[1].split('TASK [', 1)[0]
    flat = ' '.join(out.split())
    assert 'retire: localhost: took back nothing (none of our host state left); initramfs not rebuilt; not ' \
           'rebooted.' in flat, out
    assert 'The cluster part (labels, permitted devices) follows once every retired host is done.' in flat, out
    # the take-back plan is printed before any change (this machine holds nothing of the collection's), and the VM
    # gate has nothing to check
    assert 'retire plan for localhost: nothing to change' in flat, out
    assert flat.index('retire plan for localhost') < flat.index('TASK [gpuvirt.provision.vfio : Plan the removal')


def test_the_blacklist_taken_back_is_named_from_the_roles_own_result(tmp_path):
    # the summary line names what the nouveau role removed (its result), not its default path, which is not visible
    # after include_role: a retire that took a blacklist back once failed at this line on the lab VM
    modprobe_d = tmp_path / 'etc' / 'modprobe.d'
    modprobe_d.mkdir(parents=True)
    blacklist = modprobe_d / 'gpuvirt-blacklist-nouveau.conf'
    blacklist.write_text(modprobe.blacklist_text('nouveau', host_plan.NOUVEAU_HEADER))
    inv = tmp_path / 'inventory.yml'
    inv.write_text(INVENTORY + '          nouveau_modprobe_path: %s\n' % blacklist)
    play = '- ansible.builtin.import_playbook: %s\n' % os.path.join(ROOT, 'playbooks', 'retire.yml')
    rc, out = run_play(tmp_path, play, {'retire_hosts': ['localhost'], 'reboot_drain': False},
                       args=['-i', str(inv), '--check', '--tags', 'retire_host'])
    assert rc == 0, out
    flat = ' '.join(out.split())
    assert 'retire plan for localhost: nouveau_blacklist remove %s' % blacklist in flat, out
    assert 'retire: localhost: took back %s;' % blacklist in flat, out
    assert blacklist.exists()
