# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendered manifest files: validated names, atomic writes with the final mode from the start."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils import render

CM = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'}}


def test_file_names():
    ns = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nvidia-gpu-operator'}}
    assert render.file_names([ns, CM], '10-operator') == [
        '10-operator-000-namespace-cluster-nvidia-gpu-operator.yaml', '10-operator-001-configmap-gpu-cfg.yaml']


@pytest.mark.parametrize('meta, named', [
    ({'name': '../../x'}, "metadata.name: '../../x'"),
    ({'name': 'ok', 'namespace': '../etc'}, "metadata.namespace: '../etc'"),
    ({'name': 'a/b'}, "metadata.name: 'a/b'"),
    ({'name': 'node\n'}, "metadata.name: 'node\\n'"),
])
def test_names_that_would_become_bad_paths_are_refused(meta, named):
    with pytest.raises(render.RenderError) as e:
        render.file_names([CM, {'kind': 'Node', 'metadata': meta}])
    assert str(e.value).startswith('object number 1: ' + named)


def test_bad_prefix_and_kind_refused():
    with pytest.raises(render.RenderError, match='prefix'):
        render.file_names([CM], '../x')
    with pytest.raises(render.RenderError, match='kind'):
        render.file_names([{'kind': 'Config/Map', 'metadata': {'name': 'x'}}])


@pytest.mark.parametrize('mode', [0o600, 0o644])
def test_write_is_atomic_with_the_final_mode_before_the_rename(tmp_path, monkeypatch, mode):
    dest = tmp_path / 'secret.yaml'
    dest.write_text('old')
    os.chmod(str(dest), 0o644)
    seen = []
    real_rename = os.rename

    def rename(src, dst):
        # the content is complete and the mode final while the file is still under its temporary name
        seen.append((os.path.dirname(src), stat.S_IMODE(os.stat(src).st_mode), open(src).read(), open(dst).read()))
        real_rename(src, dst)

    monkeypatch.setattr(render.os, 'rename', rename)
    render.write_atomic(str(dest), 'new: 1\n', mode)
    assert seen == [(str(tmp_path), mode, 'new: 1\n', 'old')]
    assert stat.S_IMODE(os.stat(str(dest)).st_mode) == mode and dest.read_text() == 'new: 1\n'
    assert os.listdir(str(tmp_path)) == ['secret.yaml']  # no temporary file left


def test_a_0600_file_is_never_readable_by_others_not_even_its_temporary_file(tmp_path, monkeypatch):
    """Under umask 0 (the widest a process may have) every file the writer creates, and every mode it sets, stays
    within 0600: the temporary file is made by mkstemp (0600), then chmod-ed to the final mode, then renamed."""
    seen = []
    real_mkstemp, real_chmod = render.tempfile.mkstemp, render.os.chmod

    def mkstemp(*args, **kwargs):
        fd, path = real_mkstemp(*args, **kwargs)
        seen.append(('created', stat.S_IMODE(os.fstat(fd).st_mode)))
        return fd, path

    def chmod(path, mode):
        seen.append(('chmod', mode))
        real_chmod(path, mode)

    monkeypatch.setattr(render.tempfile, 'mkstemp', mkstemp)
    monkeypatch.setattr(render.os, 'chmod', chmod)
    old = os.umask(0)
    try:
        render.write_atomic(str(tmp_path / 'pull-secret.yaml'), 'kind: Secret\n', 0o600)
    finally:
        os.umask(old)
    assert seen == [('created', 0o600), ('chmod', 0o600)]
    assert stat.S_IMODE(os.stat(str(tmp_path / 'pull-secret.yaml')).st_mode) == 0o600
    assert os.listdir(str(tmp_path)) == ['pull-secret.yaml']


@pytest.mark.parametrize('text, mode', [('0644', 0o644), ('0600', 0o600), ('600', 0o600)])
def test_file_mode_reads_octal_text(text, mode):
    assert render.file_mode(text) == mode


@pytest.mark.parametrize('text', ['0999', 'rw-r--r--', '01777', '', None, '-1'])
def test_file_mode_refuses_what_is_not_a_permission_mode(text):
    with pytest.raises(render.RenderError, match='is not an octal file mode'):
        render.file_mode(text)
