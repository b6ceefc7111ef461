# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the vgpu_manager_image role tests run: the play of the role's input validation (validate.yml), the play of
the whole role, and the least inputs that pass validation without a build host (paths that do not exist are
only read later, on the build host)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

VALIDATE_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Check the inputs
      ansible.builtin.include_role:
        name: gpuvirt.provision.vgpu_manager_image
        tasks_from: validate.yml
"""
ROLE_PLAY = VALIDATE_PLAY.replace('        tasks_from: validate.yml\n', '')
INPUTS = {'vgpu_manager_image_run_file': '/nonexistent/NVIDIA-Linux-x86_64-550.90.05-vgpu-kvm.run',
          'vgpu_manager_image_version': '550.90.05', 'vgpu_manager_image_registry': 'registry.example.com:5000',
          'vgpu_manager_image_context_dir': '/nonexistent/vgpu-manager/ubuntu22.04',
          'vgpu_manager_image_os_tag': 'ubuntu22.04'}
