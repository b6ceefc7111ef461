# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a render goes and what a refused one leaves: the real playbooks, run with ansible-playbook as a user runs
them (the collection's playbooks by name, from a directory of their own)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


def run(cwd, *args, env=None):
    env = dict({k: v for k, v in os.environ.items() if k != 'KUBECONFIG' and not k.startswith('K8S_AUTH_')}, **(env or {}))
    env['HOME'] = str(cwd)
    env['GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS'] = 'ansible_python_interpreter'
    cmd = ['ansible-playbook', '-e', 'ansible_python_interpreter=%s' % sys.executable] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=str(cwd))
    return proc.returncode, ' '.join((proc.stdout + proc.stderr).split())


def test_a_relative_render_dir_is_the_inventory_directorys_not_the_collections_nor_the_working_one(tmp_path):
    inventory = tmp_path / 'inventory'
    (inventory / 'group_vars' / 'all').mkdir(parents=True)
    (inventory / 'hosts.yml').write_text('all:\n  hosts:\n    localhost:\n      ansible_connection: local\n')
    (inventory / 'group_vars' / 'all' / 'render.yml').write_text(
        'gpuvirt_cluster_mode: render\ngpuvirt_render_dir: gitops/rendered\n')
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    # the collection's own playbooks, by name (their playbook_dir is the collection's install path)
    (elsewhere / 'render.yml').write_text(
        '- name: Open\n  ansible.builtin.import_playbook: gpuvirt.provision.render_open\n'
        '  vars: {gpuvirt_render_owner: site}\n'
        '- name: Close\n  ansible.builtin.import_playbook: gpuvirt.provision.render_close\n'
        '  vars: {gpuvirt_render_owner: site}\n')
    rc, out = run(elsewhere, '-i', str(inventory), 'render.yml')
    assert rc == 0, out
    rendered = inventory / 'gitops' / 'rendered'
    assert (rendered / 'kustomization.yaml').is_file() and not (rendered / '.gpuvirt-render.lock').exists()
    assert not (elsewhere / 'gitops').exists() and not os.path.exists(os.path.join(ROOT, 'playbooks', 'gitops'))
    # the end of the render says where it went, as an absolute path
    assert 'Render directory %s: wrote 1 of ' % rendered in out, out


INVENTORY = """
all:
  children:
    gpu_vm_vgpu:
      hosts:
        gpu-v01.example.com:
          gpuvirt_vgpu_config: A10-12Q
        gpu-v02.example.com:
"""


def test_a_render_that_preflight_refuses_takes_no_lock_and_leaves_the_directory_as_it_was(tmp_path):
    (tmp_path / 'hosts.yml').write_text(INVENTORY)
    rendered = tmp_path / 'rendered'
    rendered.mkdir()
    (rendered / 'README.md').write_text('ours\n')
    args = ('-i', str(tmp_path / 'hosts.yml'), os.path.join(ROOT, 'playbooks', 'site.yml'),
            '-e', 'gpuvirt_cluster_mode=render', '-e', 'gpuvirt_render_dir=%s' % rendered,
            '-e', 'gpuvirt_platform=kubernetes')
    rc, out = run(tmp_path, *args)
    assert rc != 0 and 'gpu-v02.example.com: no vGPU config for the node label' in out, out
    # no lock, no bookkeeping: the next render finds the directory as the last complete one left it
    assert sorted(os.listdir(str(rendered))) == ['README.md'], out


def test_without_the_reference_files_a_render_stops_in_preflight_naming_both_fixes(tmp_path):
    # the example inventory renders its ClusterPolicy from the reference files, which a fresh checkout lacks
    inventory = tmp_path / 'inventory'
    shutil.copytree(os.path.join(ROOT, 'inventories', 'example'), str(inventory))
    empty = tmp_path / 'no-reference'
    empty.mkdir()
    env = {'GPUVIRT_REFERENCE': str(empty)}
    rc, out = run(tmp_path, '-i', str(inventory), os.path.join(ROOT, 'playbooks', 'preflight.yml'),
                  '-e', 'gpuvirt_cluster_mode=render', '-e', 'gpuvirt_render_dir=%s' % (tmp_path / 'rendered'), env=env)
    assert rc != 0, out
    missing = str(empty / 'olm' / 'gpu-operator-v26.7.0-csv-alm-examples.json')
    assert 'gpu_operator_alm_examples_file is "%s": no such file on the controller' % missing in out, out
    assert 'make reference' in out and 'GPUVIRT_REFERENCE_MIRROR=URL make reference' in out, out
    assert 'set GPUVIRT_REFERENCE to a directory that holds them' in out, out
    assert 'File not found' not in out and 'GPU facts' not in out, out  # before any host is asked
    assert not (tmp_path / 'rendered').exists()
