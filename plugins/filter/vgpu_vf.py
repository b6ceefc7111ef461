# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_vf role's file tasks compute their paths, the unit text and the boot-time config in the task itself,
from the public inputs through these filters: extra variables beat a registered result, so the module's result
(``__vgpu_vf_result``) must not decide where a file goes or what a unit run as root at boot says. The grammars are
the module's (module_utils/host/vgpu_vf_profiles.py); the host checks (trusted paths, files that are ours) are the
module's, made on the host before its first change in the same run. Documentation lives in the sidecars
vgpu_vf_paths.yml, vgpu_vf_unit.yml, vgpu_vf_config.yml and vgpu_vf_restart_argv.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

vvp = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.vgpu_vf_profiles')


def vgpu_vf_paths(root_dir):
    try:
        return vvp.install_paths(root_dir)
    except vvp.VfProfileError as e:
        raise AnsibleFilterError('vgpu_vf_paths: vgpu_vf_root_dir: %s' % e)


def vgpu_vf_owned_files(root_dir):
    try:
        return vvp.owned_files_of(root_dir)
    except vvp.VfProfileError as e:
        raise AnsibleFilterError('vgpu_vf_owned_files: vgpu_vf_root_dir: %s' % e)


def vgpu_vf_unit(root_dir, python, timeout, unit_type='oneshot'):
    try:
        vvp.install_paths(root_dir)
        files = dict(vvp.INSTALLED)
        return vvp.unit_text(files['unit'], files['script'], files['config'], python, timeout, on_host=False,
                             unit_type=unit_type)
    except vvp.VfProfileError as e:
        raise AnsibleFilterError('vgpu_vf_unit: %s' % e)


def vgpu_vf_config(persist, sysfs_root, sriov_manage, timeout):
    try:
        return vvp.checked_persist(persist, sysfs_root, sriov_manage, timeout)
    except vvp.VfProfileError as e:
        raise AnsibleFilterError('vgpu_vf_config: %s' % e)


def vgpu_vf_restart_argv(root_dir, python, vfs):
    try:
        return vvp.restart_argv(root_dir, python, vfs)
    except vvp.VfProfileError as e:
        raise AnsibleFilterError('vgpu_vf_restart_argv: %s' % e)


class FilterModule(object):
    def filters(self):
        return {'vgpu_vf_paths': vgpu_vf_paths, 'vgpu_vf_owned_files': vgpu_vf_owned_files, 'vgpu_vf_unit': vgpu_vf_unit,
                'vgpu_vf_config': vgpu_vf_config, 'vgpu_vf_restart_argv': vgpu_vf_restart_argv}
