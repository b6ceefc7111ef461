# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_plan, given the roles' raw inputs, decides on the host what the roles' validate.yml decide there: the same
kernel argument list (kernel_args_wanted) and the same vfio selection (vfio_selected). Both run for real in one play
on this machine (its ACPI tables, its CPU, its lspci), the validate paths first, then the module with the values the
plan play of playbooks/host_prep.yml passes it. The OS facts it returns are those of setup's distribution subset."""

from __future__ import annotations

import base64
import json

import pytest

from play_runner import run_play
from sysfs_tree import SysfsTree

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    # the role reads the CPU vendor from the hardware facts (host_prep.yml's plan play gathered them before)
    - name: Gather the CPU facts
      ansible.builtin.setup:
        gather_subset: ['!all', '!min', hardware]
    - name: The OS facts as setup gathers them
      ansible.builtin.setup:
        gather_subset: ['!all', '!min', distribution]
      register: dist
    - name: The roles' validate paths
      ansible.builtin.include_role:
        name: gpuvirt.provision.{{ item }}
        tasks_from: validate
        public: true
      loop: [kernel_args, vfio]
    - name: The module, from the raw inputs
      gpuvirt.provision.host_plan:
        host: "{{ inventory_hostname }}"
        gather_os_facts: true
        stop_coreos: true
        kernel_args:
          enabled: true
          state: present
          iommu: "{{ __kernel_args_flags.iommu }}"
          iommu_passthrough: "{{ __kernel_args_flags.iommu_passthrough }}"
          iommu_vendor: "{{ kernel_args_iommu_vendor }}"
          extra: "{{ kernel_args_extra }}"
          backend: none
        vfio:
          state: present
          gpus: "{{ __vfio_flags.gpus }}"
          include_nvswitch: "{{ __vfio_flags.include_nvswitch }}"
          require_devices: "{{ __vfio_flags.require_devices }}"
          device_ids: "{{ __vfio_checked.device_ids }}"
          bdfs: "{{ vfio_bdfs }}"
          rebind_drivers: "{{ vfio_rebind_drivers }}"
          persistent_ids: "{{ vfio_persistent_ids }}"
        sysfs_root: "{{ vfio_sysfs_root }}"
      register: plan
    - name: Show both
      ansible.builtin.debug:
        msg: "BOTH={{ [kernel_args_wanted, plan.kernel_args_wanted, vfio_selected, plan.vfio_selected,
          dist.ansible_facts | dict2items | rejectattr('key', 'in', ['gather_subset', 'module_setup'])
          | items2dict, plan.ansible_facts] | to_json | b64encode }}"
"""


@pytest.mark.parametrize('extra', [
    {},
    {'kernel_args_iommu_vendor': 'amd', 'kernel_args_iommu_passthrough': False, 'kernel_args_extra': ['quiet']},
    {'kernel_args_iommu': False, 'vfio_device_ids': ['10de:2236'], 'vfio_include_nvswitch': True},
])
def test_the_module_decides_what_the_validate_paths_decide(tmp_path, extra):
    tree = SysfsTree(tmp_path / 'sys')
    tree.device('0000:41:00.0', '0302', '10de', '2236', driver='vfio-pci', group=7)
    tree.device('0000:41:00.1', '0403', '10de', '1aef', driver='vfio-pci', group=7)
    rc, out = run_play(tmp_path, PLAY, dict({'vfio_sysfs_root': tree.root, 'vfio_bdfs': ['0000:41:00.0']}, **extra))
    assert rc == 0, out
    token = out.split('BOTH=', 1)[1].split()[0].strip('"\'')
    role_args, module_args, role_selected, module_selected, setup, facts = json.loads(base64.b64decode(token))
    assert module_args == role_args, out
    assert module_selected == role_selected, out
    assert '0000:41:00.0' in module_selected
    # the OS facts the module returns are setup's distribution subset, fact for fact
    assert facts == setup and 'ansible_os_family' in facts, out
