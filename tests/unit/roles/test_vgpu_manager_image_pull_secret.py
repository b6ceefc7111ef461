# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_manager_image role's pull Secret file, written for real (its pull_secret.yml tasks, ansible-playbook):
through the collection's render writer, so it is created 0600 and renamed into place, never readable by others."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys

import yaml
# imported when the file is collected, not inside a test (a test before it in the same process may have
# installed Ansible's collection loader, through which a first import of a collection submodule fails)
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import pull_secret

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TASKS = os.path.join(ROOT, 'roles', 'vgpu_manager_image', 'tasks', 'pull_secret.yml')
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Write the pull Secret
      ansible.builtin.include_role:
        name: gpuvirt.provision.vgpu_manager_image
        tasks_from: pull_secret.yml
"""


def test_the_task_uses_the_render_writer_with_mode_0600():
    (task,) = [t for t in yaml.safe_load(open(TASKS).read()) if 'manifest (mode 0600)' in t['name']]
    # ansible.builtin.copy would create the file with the umask's mode and chmod it afterwards
    assert 'ansible.builtin.copy' not in task and task['gpuvirt.provision.render_manifests']['mode'] == '0600'
    assert task['no_log'] is True


def test_the_secret_file_is_0600_even_under_umask_0_and_the_password_stays_out_of_the_output(tmp_path):
    (tmp_path / 'play.yml').write_text(PLAY)
    out = tmp_path / 'out'
    out.mkdir()
    path = out / 'pull-secret.yaml'
    password = 'Pull-Pa55-4b1d'
    extra = {'ansible_python_interpreter': sys.executable, 'vgpu_manager_image_registry': 'registry.example.com:5000',
             'vgpu_manager_image_registry_username': 'puller', 'vgpu_manager_image_registry_password': password,
             'vgpu_manager_image_pull_secret_namespace': 'nvidia-gpu-operator',
             'vgpu_manager_image_pull_secret_file': str(path)}
    cmd = ['ansible-playbook', '-i', 'localhost,', str(tmp_path / 'play.yml'), '--diff', '-e', json.dumps(extra)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, preexec_fn=lambda: os.umask(0))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600
    assert os.listdir(str(out)) == ['pull-secret.yaml']  # no temporary file left beside it
    assert password not in log
    doc = yaml.safe_load(path.read_text())
    assert doc['type'] == 'kubernetes.io/dockerconfigjson'
    config = json.loads(base64.b64decode(doc['data']['.dockerconfigjson']))
    assert config['auths']['registry.example.com:5000']['password'] == password


def test_the_secret_comes_from_the_one_builder_and_every_task_with_the_credential_is_no_log():
    tasks = yaml.safe_load(open(TASKS).read())
    (build,) = [t for t in tasks if 'gpuvirt.provision.gpu_operator_pull_secret' in t]
    assert build['gpuvirt.provision.gpu_operator_pull_secret']['password'] == \
        '{{ vgpu_manager_image_registry_password }}'
    assert all(t.get('no_log') is True for t in tasks), [t['name'] for t in tasks if t.get('no_log') is not True]
    # no dockerconfigjson spelled in Jinja beside the builder
    assert 'b64encode' not in open(TASKS).read()


def test_the_written_secret_is_the_builders_with_the_managed_by_label(tmp_path):
    (tmp_path / 'play.yml').write_text(PLAY)
    path = tmp_path / 'pull-secret.yaml'
    extra = {'ansible_python_interpreter': sys.executable, 'vgpu_manager_image_registry': 'registry.example.com:5000',
             'vgpu_manager_image_registry_username': 'puller', 'vgpu_manager_image_registry_password': 'Pw-1',
             'vgpu_manager_image_pull_secret_file': str(path)}
    proc = subprocess.run(['ansible-playbook', '-i', 'localhost,', str(tmp_path / 'play.yml'), '-e', json.dumps(extra)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = yaml.safe_load(path.read_text())
    assert doc == pull_secret.build_pull_secret('vgpu-registry-secret', 'nvidia-gpu-operator',
                                                'registry.example.com:5000', 'puller', 'Pw-1',
                                                labels={'app.kubernetes.io/managed-by': 'gpuvirt.provision'})
    assert doc['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'gpuvirt.provision'}
