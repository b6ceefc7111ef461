# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_vf role's leave entry point for real (ansible-playbook on localhost, the boot-time restore's files under
a temporary root): a host that left the vendor-VFIO pool loses our unit, script and config, and only those carrying
our marker; check mode removes nothing; a second run changes nothing; when the VMIs cannot be read nothing goes."""
from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from play_runner import run_play

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Take back the boot-time restore
      ansible.builtin.include_role:
        name: gpuvirt.provision.vgpu_vf
        tasks_from: leave
    - name: Show what it did
      ansible.builtin.debug:
        msg: "RESULT={{ vgpu_vf_leave_result.removed | default([]) | to_json }}"
"""
FILES = {'unit': 'etc/systemd/system/gpuvirt-vgpu-vf.service', 'script': 'usr/local/libexec/gpuvirt/vgpu-vf-restore',
         'config': 'etc/gpuvirt/vgpu-vf-profiles.json'}
# what the role writes carries the marker (vgpu_vf_profiles.unit_text, the script's header, the config's managed_by)
OURS = {'unit': '# Managed by gpuvirt.provision (vgpu_vf role).\n[Unit]\n',
        'script': '#!/usr/bin/python3\n# Managed by gpuvirt.provision (vgpu_vf role).\n',
        'config': json.dumps({'managed_by': 'gpuvirt.provision', 'version': 1})}


@pytest.fixture(autouse=True)
def _json_results(monkeypatch):
    monkeypatch.setenv('ANSIBLE_CALLBACK_RESULT_FORMAT', 'json')


def _host(tmp_path, theirs=()):
    root = tmp_path / 'root'
    for key, rel in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('[Unit]\nDescription=the administrator\'s own\n' if key in theirs else OURS[key])
    return root


def _run(tmp_path, root, args=(), **overrides):
    extra = {'vgpu_vf_root_dir': str(root), 'vgpu_vf_systemd': False, 'vgpu_vf_check_vmis': False}
    extra.update(overrides)
    return run_play(tmp_path, PLAY, extra, args=args)


def _removed(out):
    line = next(ln for ln in out.splitlines() if '"msg": "RESULT=' in ln)
    paths = json.loads(json.loads(line.split('"msg": ', 1)[1].rstrip(','))[len('RESULT='):])
    # the removed paths, by the kind of file each is
    return [kind for path in paths for kind, rel in FILES.items() if path.endswith('/' + rel)]


def _left(root):
    return sorted(key for key, rel in FILES.items() if (root / rel).exists())


def test_ours_go_the_administrators_unit_stays_check_mode_first_then_nothing(tmp_path):
    root = _host(tmp_path, theirs=('unit',))
    rc, out = _run(tmp_path, root, args=('--check',))
    assert rc == 0 and _removed(out) == ['script', 'config'], out
    assert _left(root) == ['config', 'script', 'unit'], 'check mode removed a file'
    rc, out = _run(tmp_path, root)
    assert rc == 0 and _removed(out) == ['script', 'config'], out
    assert _left(root) == ['unit'] and 'keeps %s (no gpuvirt.provision header)' % (root / FILES['unit']) in out, out
    rc, out = _run(tmp_path, root)
    assert rc == 0 and _removed(out) == [], out


def test_nothing_goes_when_the_vmis_cannot_be_read(tmp_path, monkeypatch):
    root = _host(tmp_path)
    # no cluster reachable: the VMIs cannot be read, so the host stops before any change
    monkeypatch.setenv('K8S_AUTH_KUBECONFIG', str(tmp_path / 'no-such-kubeconfig'))
    rc, out = _run(tmp_path, root, vgpu_vf_check_vmis=True)
    assert rc != 0 and 'VirtualMachineInstances on its node could not be read' in ' '.join(out.split()), out
    assert _left(root) == ['config', 'script', 'unit']


def test_the_roles_remover_uses_the_writers_markers():
    # writer (installed_files), planner (host_plan) and remover (owned_files_absent in the role) must agree on what
    # is ours, file by file: every take-back in the role gives the files the filter builds from OWNED_MARKERS
    for name in ('leave.yml', 'unpersist.yml'):
        with open(os.path.join(ROOT, 'roles', 'vgpu_vf', 'tasks', name)) as handle:
            tasks = yaml.safe_load(handle)
        calls = [t['gpuvirt.provision.owned_files_absent'] for t in tasks if 'gpuvirt.provision.owned_files_absent' in t]
        assert calls, name
        for call in calls:
            assert call['files'] == '{{ vgpu_vf_root_dir | gpuvirt.provision.vgpu_vf_owned_files }}', (name, call)
    files = vvp.owned_files_of('/srv/root')
    assert [(f['path'], f['marker'], f['line']) for f in files] == [
        ('/srv/root' + final, vvp.OWNED_MARKERS[key][0], vvp.OWNED_MARKERS[key][1]) for key, final in vvp.INSTALLED]
