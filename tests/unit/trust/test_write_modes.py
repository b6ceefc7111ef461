# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A written file's mode is set on its open descriptor, never by name (docs/security.md, "Host output", "File deletion and writes").

A writer that closes its temporary file and then runs chmod on the temporary name follows whatever is at that name
by then: a symbolic link swapped in between the close and the chmod makes the link's target (/etc/shadow) 0644.
Each writer of the collection sets the mode with fchmod before it closes; these tests swap a link in after the data
is on disk, and forbid a chmod by name on the temporary file.
"""
from __future__ import annotations

import ast
import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render
from ansible_collections.gpuvirt.provision.plugins.modules import kernel_cmdline

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
# calls that change a file's mode or owner by its name (following a link there)
BY_NAME = {('os', 'chmod'), ('os', 'chown'), ('os', 'lchmod'), ('shutil', 'copymode'), ('shutil', 'copystat'),
           ('shutil', 'chown')}


def test_no_plugin_changes_a_mode_or_owner_by_name():
    found = []
    for folder, dummy, files in os.walk(os.path.join(ROOT, 'plugins')):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding='utf-8') as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and isinstance(node.func.value, ast.Name) and (node.func.value.id, node.func.attr) in BY_NAME:
                    found.append('%s:%d' % (os.path.relpath(path, ROOT), node.lineno))
    assert found == []


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / 'shadow'
    path.write_text('root:$6$secret:19700:0:99999:7:::\n')
    os.chmod(path, 0o600)
    return path


def _swap_after_fsync(monkeypatch, victim, tmp_name):
    """After the data is on disk (the fsync before the close), the temporary file is replaced by a link to victim."""
    real = os.fsync

    def fsync(fd):
        real(fd)
        os.unlink(tmp_name)
        os.symlink(str(victim), tmp_name)
    monkeypatch.setattr(os, 'fsync', fsync)


def test_the_record_s_mode_is_not_set_through_a_link_swapped_in(tmp_path, monkeypatch, victim):
    path = str(tmp_path / 'var' / 'lib' / 'gpuvirt-provision' / 'host-state.json')
    tmp_name = os.path.join(os.path.dirname(path), '.host-state.json.gpuvirt-tmp')
    _swap_after_fsync(monkeypatch, victim, tmp_name)
    host_record.write(path, host_record.with_args(host_record.empty(), 'grub_dropin', ['iommu=pt']))
    assert os.stat(victim).st_mode & 0o777 == 0o600


def test_a_rendered_file_s_mode_is_not_set_through_a_link_swapped_in(tmp_path, monkeypatch, victim):
    path = str(tmp_path / 'x.yaml')
    real_mkstemp = render.tempfile.mkstemp
    made = []

    def mkstemp(**kw):
        fd, name = real_mkstemp(**kw)
        made.append(name)
        return fd, name
    monkeypatch.setattr(render.tempfile, 'mkstemp', mkstemp)
    real = os.fsync

    def fsync(fd):
        real(fd)
        os.unlink(made[0])
        os.symlink(str(victim), made[0])
    monkeypatch.setattr(os, 'fsync', fsync)
    render.write_atomic(path, 'kind: ConfigMap\n', 0o644)
    assert os.stat(victim).st_mode & 0o777 == 0o600


def _no_chmod_by_name(monkeypatch, endswith):
    real = os.chmod

    def chmod(path, *args, **kwargs):
        if str(path).endswith(endswith):
            raise AssertionError('chmod by name on the temporary file %s' % path)
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, 'chmod', chmod)


def test_the_record_gets_its_mode_on_the_descriptor(tmp_path, monkeypatch):
    _no_chmod_by_name(monkeypatch, '.gpuvirt-tmp')
    old = os.umask(0o077)
    try:
        path = str(tmp_path / 'var' / 'lib' / 'gpuvirt-provision' / 'host-state.json')
        host_record.write(path, host_record.empty())
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o644


class _Module(object):
    """What write_file uses of AnsibleModule: the rename (atomic_move keeps an existing file's mode; a new file keeps
    the temporary file's)."""

    @staticmethod
    def atomic_move(src, dest):
        os.rename(src, dest)


def test_a_new_boot_loader_file_gets_its_mode_on_the_descriptor(tmp_path, monkeypatch):
    _no_chmod_by_name(monkeypatch, '.gpuvirt-tmp')
    path = str(tmp_path / '90-gpuvirt.cfg')
    kernel_cmdline.write_file(_Module(), path, None, b'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX iommu=pt"\n')
    assert os.stat(path).st_mode & 0o777 == 0o644
