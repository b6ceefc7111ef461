# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""render_manifests writes a file holding a Secret for its owner alone, whatever mode the task asks for: the mode
a task gives could come from a variable, and an extra variable can set any variable."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpuvirt.provision.plugins.modules import render_manifests

from .harness import run_module

SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'pull', 'namespace': 'x'},
          'stringData': {'password': 'Pa55-w0rd'}}
CONFIGMAP = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'a', 'namespace': 'x'}}


def modes(res):
    return [stat.S_IMODE(os.stat(path).st_mode) for path in res['files']]


@pytest.mark.parametrize('asked, written', [('0644', 0o600), ('0666', 0o600), ('0640', 0o600), ('0400', 0o400)])
def test_a_secret_is_written_for_its_owner_alone_whatever_mode_is_asked(monkeypatch, tmp_path, asked, written):
    res = run_module(monkeypatch, render_manifests, dict(dest=str(tmp_path), objects=[SECRET], mode=asked))
    assert not res['failed'], res
    assert modes(res) == [written]


def test_a_list_holding_a_secret_is_written_0600_whole_and_one_without_keeps_its_mode(monkeypatch, tmp_path):
    res = run_module(monkeypatch, render_manifests, dict(dest=str(tmp_path), objects=[CONFIGMAP, SECRET],
                                                         prefix='a', mode='0644'))
    assert modes(res) == [0o600, 0o600]
    res = run_module(monkeypatch, render_manifests, dict(dest=str(tmp_path), objects=[CONFIGMAP], prefix='b',
                                                         mode='0644'))
    assert modes(res) == [0o644]


def test_a_secret_rendered_0644_before_is_made_private(monkeypatch, tmp_path):
    path = tmp_path / 'pull-secret.yaml'
    res = run_module(monkeypatch, render_manifests, dict(dest=str(tmp_path), objects=[SECRET],
                                                         file_name=path.name))
    os.chmod(str(path), 0o644)  # as a release that took the mode from a variable left it
    res = run_module(monkeypatch, render_manifests, dict(dest=str(tmp_path), objects=[SECRET],
                                                         file_name=path.name, mode='0644'))
    assert res['changed'] and modes(res) == [0o600]
