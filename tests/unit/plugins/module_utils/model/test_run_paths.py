# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A relative path the user gives (gpuvirt_render_dir) is the inventory directory's, else the working directory's:
never the playbook's or the installed collection's."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import run_paths


def test_a_relative_path_is_the_inventory_directorys(tmp_path):
    inventory = tmp_path / 'inventories' / 'prod'
    inventory.mkdir(parents=True)
    (inventory / 'hosts.yml').write_text('all: {}\n')
    elsewhere = str(tmp_path / 'elsewhere')
    # -i DIR: the directory; -i FILE: the file's directory; the first source that is either
    assert run_paths.user_path('rendered', [str(inventory)], cwd=elsewhere) == str(inventory / 'rendered')
    assert run_paths.user_path('rendered', [str(inventory / 'hosts.yml')], cwd=elsewhere) == str(inventory / 'rendered')
    assert run_paths.user_path('../gitops/gpu', ['host1,', str(tmp_path / 'gone'), str(inventory)], cwd=elsewhere) \
        == str(tmp_path / 'inventories' / 'gitops' / 'gpu')


def test_without_an_inventory_directory_the_working_directory(tmp_path):
    # no -i (the default /etc/ansible/hosts, mostly absent) or an inline host list
    for sources in ([], ['/etc/ansible/hosts-absent'], ['gpu1,gpu2']):
        assert run_paths.user_path('out', sources, cwd=str(tmp_path)) == str(tmp_path / 'out')


def test_absolute_home_and_empty_paths(tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    assert run_paths.user_path('/srv/gitops/./gpu/', [str(tmp_path)]) == '/srv/gitops/gpu'
    assert run_paths.user_path('~/gitops', ['/nowhere']) == os.path.join(str(tmp_path), 'gitops')
    assert run_paths.user_path('', [str(tmp_path)]) == '' and run_paths.user_path(None, []) == ''


@pytest.mark.parametrize('value', [['a'], 3, 'a\0b'])
def test_anything_but_a_path_is_refused_naming_the_variable(value):
    with pytest.raises(run_paths.PathError, match='^gpuvirt_render_dir '):
        run_paths.user_path(value, [], 'gpuvirt_render_dir')
