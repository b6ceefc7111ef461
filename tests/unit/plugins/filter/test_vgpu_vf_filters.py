# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_vf role's checking filters: the same paths and unit text the module computes, from the public inputs
alone, and a boot config rebuilt from a result only within its grammar."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuvirt.provision.plugins.filter import vgpu_vf as f
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp

GOOD = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/elsewhere', 'sriov_manage': '/x',
        'timeout': 30, 'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': 1155}}],
        'types': {'1155': 'NVIDIA L40S-24Q'}}


def test_the_paths_and_unit_are_the_modules():
    paths = f.vgpu_vf_paths('/srv/root')
    assert paths == {'unit': '/srv/root/etc/systemd/system/gpuvirt-vgpu-vf.service',
                     'script': '/srv/root/usr/local/libexec/gpuvirt/vgpu-vf-restore',
                     'config': '/srv/root/etc/gpuvirt/vgpu-vf-profiles.json',
                     'dirs': ['/srv/root/etc/gpuvirt', '/srv/root/usr/local/libexec/gpuvirt']}
    assert f.vgpu_vf_paths('/')['unit'] == '/etc/systemd/system/gpuvirt-vgpu-vf.service'
    finals = dict(vvp.INSTALLED)
    assert f.vgpu_vf_unit('/srv/root', '/usr/bin/python3', '300') == vvp.unit_text(
        finals['unit'], finals['script'], finals['config'], '/usr/bin/python3', 300, on_host=False)
    assert 'ExecStart=/usr/bin/python3 /usr/local/libexec/gpuvirt/vgpu-vf-restore' in f.vgpu_vf_unit('/', '/usr/bin/python3', 300)


def test_the_owned_files_are_the_paths_with_each_file_s_own_marker():
    # the unit's header on its first line, the script's on its second (after the coding line), the config's key
    assert f.vgpu_vf_owned_files('/srv/root') == [
        {'path': '/srv/root/etc/systemd/system/gpuvirt-vgpu-vf.service',
         'marker': '# Managed by gpuvirt.provision (vgpu_vf role).', 'line': 1},
        {'path': '/srv/root/usr/local/libexec/gpuvirt/vgpu-vf-restore',
         'marker': '# Managed by gpuvirt.provision (vgpu_vf role).', 'line': 2},
        {'path': '/srv/root/etc/gpuvirt/vgpu-vf-profiles.json', 'marker': '"managed_by": "gpuvirt.provision"',
         'line': 0}]


@pytest.mark.parametrize('root', ['relative', '/a/../etc', '/a b', '/a\n', '/a//b', 5, '/a/'])
def test_a_prefix_outside_the_path_grammar_is_refused(root):
    with pytest.raises(AnsibleFilterError, match='root_dir'):
        f.vgpu_vf_paths(root)
    with pytest.raises(AnsibleFilterError, match='vgpu_vf_owned_files: vgpu_vf_root_dir'):
        f.vgpu_vf_owned_files(root)
    with pytest.raises(AnsibleFilterError):
        f.vgpu_vf_unit(root, '/usr/bin/python3', 300)


@pytest.mark.parametrize('python, timeout', [('/usr/bin/python3\nExecStartPre=/bin/sh', 300), ('python3', 300),
                                             ('/usr/bin/py%n', 300), ('/usr/bin/python3', 5), ('/usr/bin/python3', True),
                                             ('/usr/bin/python3', '300\n')])
def test_a_unit_value_outside_its_grammar_is_refused(python, timeout):
    with pytest.raises(AnsibleFilterError):
        f.vgpu_vf_unit('/', python, timeout)


def test_the_config_keeps_checked_gpus_and_types_and_takes_the_public_paths():
    out = f.vgpu_vf_config(GOOD, '/sys', '/usr/lib/nvidia/sriov-manage', 300)
    assert out == dict(GOOD, sysfs_root='/sys', sriov_manage='/usr/lib/nvidia/sriov-manage', timeout=300)


@pytest.mark.parametrize('change', [
    {'types': {'1155': 'NVIDIA L40S-24Q\nx'}}, {'types': {'11a': 'x'}}, {'gpus': [{'pf': '0000:41:00.0 ', 'vfs': {}}]},
    {'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': '1155'}}]},
    {'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': True}}]},
    {'gpus': [{'pf': '0000:41:00.0', 'vfs': {}, 'cmd': 'x'}]}, {'extra': 1}, {'gpus': 'x'},
])
def test_a_config_outside_its_grammar_is_refused(change):
    with pytest.raises(AnsibleFilterError, match='vgpu_vf_config'):
        f.vgpu_vf_config(dict(GOOD, **change), '/sys', '/usr/lib/nvidia/sriov-manage', 300)


@pytest.mark.parametrize('sysfs, manage, timeout', [('/sys x', '/m', 300), ('/sys', 'm', 300), ('/sys', '/m', 9)])
def test_the_public_paths_and_timeout_are_checked_too(sysfs, manage, timeout):
    with pytest.raises(AnsibleFilterError):
        f.vgpu_vf_config(GOOD, sysfs, manage, timeout)


def test_the_restart_argv_runs_the_installed_script_for_the_vfs_given():
    assert f.vgpu_vf_restart_argv('/', '/usr/bin/python3', ['0000:41:00.4', '0000:41:00.5']) == [
        '/usr/bin/python3', '/usr/local/libexec/gpuvirt/vgpu-vf-restore', '--restart-virt-handler',
        '0000:41:00.4', '0000:41:00.5']
    assert f.vgpu_vf_restart_argv('/srv/root', '/usr/bin/python3', ['0000:41:00.4'])[1] == \
        '/srv/root/usr/local/libexec/gpuvirt/vgpu-vf-restore'


@pytest.mark.parametrize('root,python,vfs,needle', [
    ('/', 'python3', ['0000:41:00.4'], 'vgpu_vf_python'),
    ('/', '/usr/bin/python3 -c', ['0000:41:00.4'], 'vgpu_vf_python'),
    ('/srv/../etc', '/usr/bin/python3', ['0000:41:00.4'], 'root_dir'),
    ('/', '/usr/bin/python3', ['--all'], "'--all' is not a VF"),
    ('/', '/usr/bin/python3', ['0000:41:00.4;reboot'], 'is not a VF'),
    ('/', '/usr/bin/python3', [], 'non-empty list'),
    ('/', '/usr/bin/python3', '0000:41:00.4', 'non-empty list'),
])
def test_a_restart_argv_value_outside_its_grammar_is_refused(root, python, vfs, needle):
    with pytest.raises(AnsibleFilterError, match='vgpu_vf_restart_argv') as err:
        f.vgpu_vf_restart_argv(root, python, vfs)
    assert needle in str(err.value)
