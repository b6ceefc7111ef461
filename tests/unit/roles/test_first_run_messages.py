# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a new user's first runs print when something is missing: the real playbooks, run with ansible-playbook on
a machine with no cluster (no ~/.kube/config, no KUBECONFIG), each message naming the variable or host at fault and
the fix, and nothing else (no kubeconfig error for a missing inventory, no remote_src hint)."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))

INVENTORY = """
all:
  children:
    gpu_vm_passthrough:
      hosts:
        gpu-p01.example.com:
    gpu_vm_vgpu:
      hosts:
        gpu-v01.example.com:
          gpuvirt_vgpu_config: A10-12Q
        gpu-v02.example.com:
"""


def run(tmp_path, playbook, *args, inventory=True):
    """ansible-playbook PLAYBOOK as a user runs it, from a home with no kubeconfig; returns (rc, one-line output)."""
    env = {k: v for k, v in os.environ.items() if k != 'KUBECONFIG' and not k.startswith('K8S_AUTH_')}
    env['HOME'] = str(tmp_path)
    cmd = ['ansible-playbook', os.path.join(ROOT, 'playbooks', playbook), '-e',
           'ansible_python_interpreter=%s' % sys.executable]
    if inventory:
        (tmp_path / 'hosts.yml').write_text(INVENTORY)
        cmd += ['-i', str(tmp_path / 'hosts.yml')]
    else:
        # what ansible-playbook reads without -i, absent as on most controllers
        env['ANSIBLE_INVENTORY'] = str(tmp_path / 'etc-ansible-hosts')
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, check=False, env=env, cwd=str(tmp_path))
    return proc.returncode, ' '.join((proc.stdout + proc.stderr).split())


def test_site_without_an_inventory_says_so_and_how_to_pass_one(tmp_path):
    rc, out = run(tmp_path, 'site.yml', inventory=False)
    assert rc != 0, out
    assert 'No inventory was given' in out, out
    assert 'ansible-playbook -i inventories/prod playbooks/site.yml' in out and 'cp -r inventories/example' in out, out
    assert 'Invalid kube-config' not in out, out


def test_a_kubeconfig_path_that_names_no_file_names_the_variable_and_the_ways_out(tmp_path):
    missing = str(tmp_path / 'no-such' / 'kubeconfig')
    rc, out = run(tmp_path, 'preflight.yml', '-e', 'gpuvirt_kubeconfig=%s' % missing)
    assert rc != 0, out
    assert 'gpuvirt_kubeconfig is "%s": no such file on the controller' % missing in out, out
    assert 'export KUBECONFIG' in out and '-e gpuvirt_cluster_mode=render' in out, out
    assert 'remote_src' not in out, out


def test_check_mode_without_a_cluster_points_to_the_kubeconfig_and_render_mode(tmp_path):
    rc, out = run(tmp_path, 'preflight.yml', '--check')
    assert rc != 0, out
    assert ('The cluster did not answer (gpuvirt_cluster_mode: apply, the default), with no gpuvirt_kubeconfig, so '
            '~/.kube/config (neither K8S_AUTH_KUBECONFIG nor KUBECONFIG is set)') in out, out
    assert 'Set gpuvirt_kubeconfig to the path of a kubeconfig' in out and 'export KUBECONFIG' in out, out
    assert '--check also reads the cluster' in out and '-e gpuvirt_cluster_mode=render' in out, out


def test_a_vgpu_host_without_a_vgpu_config_stops_preflight_naming_it(tmp_path):
    rc, out = run(tmp_path, 'preflight.yml', '-e', 'gpuvirt_cluster_mode=render',
                  '-e', 'gpuvirt_render_dir=%s' % (tmp_path / 'rendered'), '-e', 'gpuvirt_platform=kubernetes')
    assert rc != 0, out
    assert 'gpu-v02.example.com: no vGPU config for the node label nvidia.com/vgpu.config' in out, out
    assert 'gpu-v01.example.com:' not in out.split('no vGPU config', maxsplit=1)[0][-40:], out
    assert 'Set gpuvirt_vgpu_config on each such host' in out and 'node_labels_vgpu_config_default' in out, out
    # preflight's first play: no host was contacted for facts (gather.yml comes after it)
    assert 'Preflight - GPU facts' not in out and 'gpuvirt_pci_devices' not in out, out
