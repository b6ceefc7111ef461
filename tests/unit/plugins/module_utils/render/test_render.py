# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendered manifest files: validated names, atomic writes with the final mode from the start."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render
# imported when the file is collected, not inside a test (a test before it in the same process may have
# installed Ansible's collection loader, through which a first import of a collection submodule fails)
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render_session

CM = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'}}


def test_file_names():
    ns = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nvidia-gpu-operator'}}
    assert render.file_names([ns, CM], '10-operator') == [
        '10-operator-namespace-cluster-nvidia-gpu-operator.yaml', '10-operator-configmap-gpu-cfg.yaml']


def node(name):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name}}


def test_a_name_depends_on_the_object_not_on_its_place_so_one_host_more_renames_nothing():
    # the Git history of a render directory: one host added must be one file added, not every later file renamed
    three = render.file_names([node('gpu-a'), node('gpu-c'), node('gpu-d')], '30-node-labels')
    four = render.file_names([node('gpu-a'), node('gpu-b'), node('gpu-c'), node('gpu-d')], '30-node-labels')
    assert set(four) - set(three) == {'30-node-labels-node-cluster-gpu-b.yaml'}
    assert set(three) - set(four) == set()
    assert render.file_names([node('gpu-d'), node('gpu-a')], '30-node-labels') == [three[2], three[0]]


def test_two_objects_of_one_name_each_end_in_the_hash_of_their_own_identity():
    # namespace "a-b" with name "c" and namespace "a" with name "b-c" join to one name; so do two API groups' kinds
    first = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'c', 'namespace': 'a-b'}}
    second = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'b-c', 'namespace': 'a'}}
    names = render.file_names([first, second], '60-x')
    assert len(set(names)) == 2 and all(n.startswith('60-x-configmap-a-b-c-') for n in names), names
    # stable: the same object gets the same name whatever else shares it, in whatever order
    assert render.file_names([second, first], '60-x') == names[::-1]
    assert names[0] == render.hashed_name('60-x-configmap-a-b-c.yaml', render.identity(first))
    group_a = {'apiVersion': 'a.example.com/v1', 'kind': 'Thing', 'metadata': {'name': 'x'}}
    group_b = {'apiVersion': 'b.example.com/v1', 'kind': 'Thing', 'metadata': {'name': 'x'}}
    assert len(set(render.file_names([group_a, group_b], '60-x'))) == 2
    # the same object twice (two writers) keeps one name: merged into one file by the render session
    assert render.file_names([CM, CM]) == ['configmap-gpu-cfg.yaml'] * 2


def test_a_long_name_is_cut_and_ends_in_its_hash_within_the_cap():
    long = node('n' * 240 + '.example.com')
    (name,) = render.file_names([long], '30-node-labels')
    assert len(name) == render.MAX_FILE_NAME and name.startswith('30-node-labels-node-cluster-nnn')
    assert name.endswith('-' + render.hashed_name('x.yaml', render.identity(long))[-len('.yaml') - 10:-len('.yaml')]
                         + '.yaml')
    other = node('n' * 240 + '.example.org')
    assert render.file_names([other], '30-node-labels') != [name]
    assert render.object_file_name(name)


def test_a_crafted_name_that_still_collides_is_refused_naming_both():
    first = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'c', 'namespace': 'a-b'}}
    second = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'b-c', 'namespace': 'a'}}
    hashed = render.hashed_name('configmap-a-b-c.yaml', render.identity(first))
    crafted = {'apiVersion': 'v1', 'kind': 'ConfigMap',
               'metadata': {'name': hashed[len('configmap-a-'):-len('.yaml')], 'namespace': 'a'}}
    assert render.file_names([crafted]) == [hashed]
    with pytest.raises(render.RenderError, match='two objects get the file name ' + hashed):
        render.file_names([first, second, crafted])


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
    within 0600: the temporary file is made by mkstemp (0600), its descriptor fchmod-ed to the final mode (never a
    chmod by name, which would follow a link swapped in), then renamed."""
    seen = []
    real_mkstemp, real_fchmod = render.tempfile.mkstemp, render.os.fchmod

    def mkstemp(*args, **kwargs):
        fd, path = real_mkstemp(*args, **kwargs)
        seen.append(('created', stat.S_IMODE(os.fstat(fd).st_mode)))
        return fd, path

    def fchmod(fd, mode):
        seen.append(('fchmod', mode))
        real_fchmod(fd, mode)

    monkeypatch.setattr(render.tempfile, 'mkstemp', mkstemp)
    monkeypatch.setattr(render.os, 'fchmod', fchmod)
    old = os.umask(0)
    try:
        render.write_atomic(str(tmp_path / 'pull-secret.yaml'), 'kind: Secret\n', 0o600)
    finally:
        os.umask(old)
    assert seen == [('created', 0o600), ('fchmod', 0o600)]
    assert stat.S_IMODE(os.stat(str(tmp_path / 'pull-secret.yaml')).st_mode) == 0o600
    assert os.listdir(str(tmp_path)) == ['pull-secret.yaml']


@pytest.mark.parametrize('text, mode', [('0644', 0o644), ('0600', 0o600), ('600', 0o600)])
def test_file_mode_reads_octal_text(text, mode):
    assert render.file_mode(text) == mode


@pytest.mark.parametrize('text', ['0999', 'rw-r--r--', '01777', '', None, '-1'])
def test_file_mode_refuses_what_is_not_a_permission_mode(text):
    with pytest.raises(render.RenderError, match='is not an octal file mode'):
        render.file_mode(text)


# render.place: the common end of render_file and render_manifests

SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'pull', 'namespace': 'gpu'},
          'data': {'.dockerconfigjson': 'c2VjcmV0'}}


def test_place_writes_what_differs_and_reports_the_diff(tmp_path):
    dest = str(tmp_path)
    placed = render.place(dest, [{'name': 'cm.yaml', 'object': CM, 'writer': 'x'},
                                 {'name': 'values.yaml', 'content': 'a: 1\n', 'writer': 'values.yaml'}],
                          0o644, '', False)
    assert placed == {'changed': True, 'deferred': False,
                      'files': [os.path.join(dest, 'cm.yaml'), os.path.join(dest, 'values.yaml')],
                      'diff': {'before': '', 'after': render.dump(CM) + 'a: 1\n'}}
    assert (tmp_path / 'cm.yaml').read_text() == render.dump(CM)
    again = render.place(dest, [{'name': 'cm.yaml', 'object': CM, 'writer': 'x'}], 0o644, '', False)
    assert again['changed'] is False and again['diff'] is None


def test_place_fixes_a_mode_without_a_diff(tmp_path):
    (tmp_path / 'values.yaml').write_text('a: 1\n')
    os.chmod(str(tmp_path / 'values.yaml'), 0o644)
    placed = render.place(str(tmp_path), [{'name': 'values.yaml', 'content': 'a: 1\n', 'writer': 'v'}], 0o600, '',
                          False)
    assert placed['changed'] is True and placed['diff'] is None
    assert stat.S_IMODE(os.stat(str(tmp_path / 'values.yaml')).st_mode) == 0o600


def test_place_in_check_mode_writes_nothing(tmp_path):
    placed = render.place(str(tmp_path), [{'name': 'cm.yaml', 'object': CM, 'writer': 'x'}], 0o644, '', True)
    assert placed['changed'] is True and not os.listdir(str(tmp_path))
    # a directory the play only pretended to create: no failure in check mode
    assert render.place(str(tmp_path / 'new'), [{'name': 'v.yaml', 'content': '', 'writer': 'v'}], 0o644, '',
                        True)['changed'] is True


def test_place_refuses_a_missing_directory(tmp_path):
    with pytest.raises(render.RenderError, match='is not a directory: create it first'):
        render.place(str(tmp_path / 'new'), [{'name': 'v.yaml', 'content': '', 'writer': 'v'}], 0o644, '', False)


def test_place_redacts_a_secrets_values_in_the_diff(tmp_path):
    placed = render.place(str(tmp_path), [{'name': 's.yaml', 'object': SECRET, 'writer': 's'}], 0o600, '', False)
    assert 'c2VjcmV0' not in placed['diff']['after'] and 'c2VjcmV0' in (tmp_path / 's.yaml').read_text()


def test_place_in_a_session_records_and_writes_nothing(tmp_path):
    dest = str(tmp_path)
    token = render_session.open_session(dest, 'site', pid=os.getpid())['session']
    entries = [{'name': 'cm.yaml', 'object': CM, 'writer': 'x'},
               {'name': 'values.yaml', 'content': 'a: 1\n', 'writer': 'values.yaml'}]
    preview = render.place(dest, entries, 0o644, 'p', True)
    assert preview['deferred'] is True and preview['changed'] is False
    assert not render_session.session(dest)['objects']
    placed = render.place(dest, entries, 0o644, 'p', False, session=token)
    assert placed == {'changed': False, 'deferred': True, 'diff': None,
                      'files': [os.path.join(dest, 'cm.yaml'), os.path.join(dest, 'values.yaml')]}
    lock = render_session.session(dest)
    assert len(lock['objects']) == 1 and list(lock['files']) == ['values.yaml']
    assert not set(os.listdir(dest)) & {"cm.yaml", "values.yaml"}  # written when the session closes


def test_place_in_a_session_names_the_files_noted_before_a_refusal(tmp_path):
    dest = str(tmp_path)
    token = render_session.open_session(dest, 'site', pid=os.getpid())['session']
    other = dict(CM, data={'a': '1'})
    render.place(dest, [{'name': 'cm.yaml', 'object': dict(CM, data={'a': '2'}), 'writer': 'first'}], 0o644, '', False,
                 session=token)
    with pytest.raises(render.RenderError, match='rendered twice, differently') as err:
        render.place(dest, [{'name': 'ns.yaml', 'object': dict(CM, metadata={'name': 'x', 'namespace': 'gpu'}),
                             'writer': 'second'},
                            {'name': 'cm2.yaml', 'object': other, 'writer': 'second'}], 0o644, '', False,
                     session=token)
    assert err.value.files == [os.path.join(dest, 'ns.yaml')]
