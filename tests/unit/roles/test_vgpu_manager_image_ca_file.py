# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the registry CA file of the vgpu_manager_image role is (vgpu_manager_image_registry_ca_file_on): the role's
validate.yml run for real (ansible-playbook). The build on another host than the controller, with the file AWX
writes from the registry credential, is run in tests/integration/ee/test_awx_job_vgpu_image.py."""

from __future__ import annotations

from play_runner import run_play

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Check the inputs
      ansible.builtin.include_role:
        name: gpuvirt.provision.vgpu_manager_image
        tasks_from: validate.yml
"""
MAIN = PLAY.replace('        tasks_from: validate.yml\n', '')
INPUTS = {'vgpu_manager_image_run_file': '/nonexistent/NVIDIA-Linux-x86_64-550.90.05-vgpu-kvm.run',
          'vgpu_manager_image_version': '550.90.05', 'vgpu_manager_image_registry': 'registry.example.com:5000',
          'vgpu_manager_image_context_dir': '/nonexistent/vgpu-manager/ubuntu22.04',
          'vgpu_manager_image_os_tag': 'ubuntu22.04'}


def _run(tmp_path, play=PLAY, **extra):
    rc, out = run_play(tmp_path, play, dict(INPUTS, **extra), ())
    return rc, ' '.join(out.split())


def test_a_missing_controller_file_names_the_controller_and_the_option(tmp_path):
    rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(tmp_path / 'absent.pem'),
                   vgpu_manager_image_registry_ca_file_on='controller')
    assert rc != 0, out
    assert 'absent.pem is not a file on the controller (vgpu_manager_image_registry_ca_file_on: controller)' in out, out


def test_a_missing_build_host_file_names_the_host(tmp_path):
    rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(tmp_path / 'absent.pem'))
    assert rc != 0, out
    assert 'absent.pem is not a file on localhost (vgpu_manager_image_registry_ca_file_on: build_host)' in out, out


def test_an_unknown_place_is_refused_before_any_task(tmp_path):
    rc, out = _run(tmp_path, play=MAIN, vgpu_manager_image_registry_ca_file='/etc/ssl/ca.pem',
                   vgpu_manager_image_registry_ca_file_on='buildhost')
    assert rc != 0, out
    assert 'vgpu_manager_image_registry_ca_file_on' in out and 'buildhost' in out, out
    assert 'Look at the registry CA file' not in out, out
