# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vfio role's validate path for real (ansible-playbook against a sysfs copy): it judges vfio_bdfs with the
binder's rule, so an address the kernel prints with an 8-digit domain passes, and what the binder refuses (no
domain, upper case) stops the role before anything changes."""

from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vfio_bind
from play_runner import run_play, shown
from sysfs_tree import SysfsTree

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Validate the vfio inputs (no change)
      ansible.builtin.include_role:
        name: gpuvirt.provision.vfio
        tasks_from: validate
    - name: Show the selected devices
      ansible.builtin.debug:
        msg: "SELECTED={{ vfio_selected | to_json }}"
"""


def _run(tmp_path, bdfs):
    tree = SysfsTree(tmp_path / 'sys')
    tree.device('1a2b3c4d:00:00.0', '0302', '10de', '2236', group=7, parent='pci1a2b3c4d:00')
    return run_play(tmp_path, PLAY, {'vfio_gpus': False, 'vfio_bdfs': bdfs, 'vfio_sysfs_root': tree.root})


def test_an_8_digit_domain_is_accepted_as_the_binder_accepts_it(tmp_path):
    vfio_bind.validate_bdf('1a2b3c4d:00:00.0')
    rc, out = _run(tmp_path, ['1a2b3c4d:00:00.0'])
    assert rc == 0, out
    assert shown(out, 'SELECTED') == ['1a2b3c4d:00:00.0'], out


@pytest.mark.parametrize('bdf', ['41:00.0', '0000:C1:00.0'])
def test_what_the_binder_refuses_the_role_refuses(tmp_path, bdf):
    with pytest.raises(vfio_bind.BindError):
        vfio_bind.validate_bdf(bdf)
    rc, out = _run(tmp_path, [bdf])
    assert rc != 0, out
    assert 'vfio: address %s not understood' % bdf in out, out
