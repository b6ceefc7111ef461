# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render runs of the playbooks as a user runs them, with no host reachable and no API server: the example
inventory through ``site.yml``, or one phase body on a test inventory. Shared by the golden renders (unit) and the
render tests of the integration suites.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
INTEGRATION = os.path.join(ROOT, 'tests', 'integration')
# the golden renders (render/test_render_golden.py): one directory per case, one JSON file per rendered file
GOLDEN = os.path.join(HERE, 'render', 'golden')
PLACEHOLDER = '@TMP@'


def example_copy(tmp_path):
    """A copy of inventories/example whose hosts point at 192.0.2.1 (TEST-NET-1, RFC 5737: nothing answers)."""
    inv = tmp_path / 'inventory'
    shutil.copytree(os.path.join(ROOT, 'inventories', 'example'), inv)
    hosts = yaml.safe_load((inv / 'hosts.yml').read_text())
    for group in hosts['all']['children'].values():
        for name in (group.get('hosts') or {}):
            group['hosts'][name] = dict(group['hosts'][name] or {}, ansible_host='192.0.2.1',
                                        ansible_ssh_common_args='-o ConnectTimeout=2')
    (inv / 'hosts.yml').write_text(yaml.safe_dump(hosts))
    return inv


def render(tmp_path, inv, *extra, playbook='site.yml'):
    """``playbook`` (site.yml) in render mode on inventory ``inv`` into tmp_path/rendered; returns (rc, output,
    out)."""
    out = tmp_path / 'rendered'
    cmd = ['ansible-playbook', '-i', str(inv), os.path.join(ROOT, 'playbooks', playbook),
           '-e', 'gpuvirt_cluster_mode=render', '-e', 'gpuvirt_render_dir=%s' % out,
           '-e', 'ansible_python_interpreter=%s' % sys.executable] + list(extra)
    # the example names $KUBECONFIG (else ~/.kube/config), and a render that names a cluster reads the live
    # HyperConverged from it (docs/gitops.md): point it at no file, so that no cluster of the machine is read
    env = dict(os.environ, KUBECONFIG=str(tmp_path / 'no-kubeconfig'))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr, out


def phase_body(playbook):
    """playbooks/phase_<playbook>.yml where there is one (a phase that reads host facts), else <playbook>.yml."""
    body = os.path.join(ROOT, 'playbooks', 'phase_%s.yml' % playbook)
    return body if os.path.exists(body) else os.path.join(ROOT, 'playbooks', playbook + '.yml')


def phase(tmp_path, suite, playbook, inventory, reference_root):
    """One phase playbook on a test inventory of tests/integration/<suite>/inventories, the way that suite's
    test_render.py runs it: its body, phase_<name>.yml (the inventory gives the facts). Returns (rc, output, out)."""
    out = tmp_path / 'render'
    extra_vars = {'render_root': str(out), 'reference_root': reference_root,
                  'ansible_python_interpreter': sys.executable}
    cmd = ['ansible-playbook', '-i', os.path.join(INTEGRATION, suite, 'inventories', inventory + '.yml'),
           phase_body(playbook), '-e', json.dumps(extra_vars)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr, out


def _scrub(value, tmp):
    if isinstance(value, dict):
        return {k: _scrub(v, tmp) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, tmp) for v in value]
    if isinstance(value, str):
        return value.replace(tmp, PLACEHOLDER)
    return value


def snapshot(out, tmp):
    """{file name: [parsed YAML documents]} of everything rendered, the render manifest and lock aside, the path
    ``tmp`` replaced by a placeholder; the Flux kustomization of a wave group as ``<group>--kustomization.yaml`` (the
    golden directory is flat)."""
    files = {}
    for name in sorted(os.listdir(out)):
        if name in ('.gpuvirt-render.json', '.gpuvirt-render.lock'):
            continue
        path = os.path.join(out, name)
        if os.path.isdir(path):
            assert name.startswith('flux-') and os.listdir(path) == ['kustomization.yaml'], (name, os.listdir(path))
            path, name = os.path.join(path, 'kustomization.yaml'), name + '--kustomization.yaml'
        with open(path, encoding='utf-8') as handle:
            files[name] = _scrub(list(yaml.safe_load_all(handle)), tmp)
    return files


def golden(case):
    """The committed golden render of ``case``, as ``snapshot`` returns a render."""
    directory = os.path.join(GOLDEN, case)
    files = {}
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
        with open(os.path.join(directory, name), encoding='utf-8') as handle:
            files[name[:-len('.json')]] = json.load(handle)
    return files


def write_golden(case, files):
    """Replace golden/<case>/ with ``files`` (GPUVIRT_UPDATE_GOLDEN=1)."""
    directory = os.path.join(GOLDEN, case)
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        os.remove(os.path.join(directory, name))
    for name, docs in files.items():
        with open(os.path.join(directory, name + '.json'), 'w', encoding='utf-8') as handle:
            json.dump(docs, handle, indent=1, sort_keys=True)
            handle.write('\n')
