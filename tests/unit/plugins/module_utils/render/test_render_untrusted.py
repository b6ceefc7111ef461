# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The render directory's own files are untrusted: it is a Git checkout others commit to. Its bookkeeping
(.gpuvirt-render.json, a killed render's lock) never makes a render delete or write outside the directory, or
through a symbolic link, or over a file the collection did not write; real files in temporary directories."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

import pytest
import yaml
from hypothesis import HealthCheck, event, example, given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session as rs


def dump(obj):
    return '---\n' + yaml.safe_dump(obj, sort_keys=False)


def configmap(name):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': 'x'}}


def digest(data):
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode('utf-8')).hexdigest()


def dead_pid():
    import subprocess
    proc = subprocess.Popen(['true'])
    proc.wait()
    return proc.pid


@pytest.fixture
def tree(tmp_path):
    """tmp/outside.yaml (what must survive) and tmp/render (the render directory)."""
    (tmp_path / 'outside.yaml').write_text('kind: Secret\nthe: outside\n')
    (tmp_path / 'render').mkdir()
    return tmp_path


def manifest(dest, files, version=2):
    (dest / rs.MANIFEST).write_text(json.dumps({'format': version, 'complete': True, 'files': files}))


def render_once(dest, *names, **kwargs):
    token = rs.open_session(str(dest), 'site', pid=os.getpid(), **kwargs)['session']
    for i, name in enumerate(names):
        rs.record(str(dest), configmap('c%d' % i), name, name, 'kubevirt', session=token)
    return rs.close_session(str(dest), dump, session=token)


def builder_name(letter):
    """A name render.file_names writes, so one the prune may delete."""
    return '60-kv-000-configmap-x-%s.yaml' % letter


@pytest.mark.parametrize('name', ['../outside.yaml', 'ABS', 'sub/../../outside.yaml', '..', 'x\n.yaml', 'a\x00b',
                                  'a\u2028b', 'a' * 10000, rs.KUSTOMIZATION, '.gpuvirt-render.lock'])
def test_a_manifest_naming_a_file_outside_or_no_name_of_ours_is_refused_and_deletes_nothing(tree, name):
    outside = tree / 'outside.yaml'
    name = str(outside) if name == 'ABS' else name
    manifest(tree / 'render', {name: {'phase': 'kubevirt', 'sha256': digest(outside.read_bytes())}})
    with pytest.raises(render.RenderError, match='%s: a file name in files is .*restore it from the Git history'
                       % rs.MANIFEST):
        render_once(tree / 'render')
    assert outside.read_text() == 'kind: Secret\nthe: outside\n'


@pytest.mark.parametrize('where', ['objects', 'files', 'writing'])
def test_a_killed_renders_lock_naming_a_file_outside_is_refused_and_deletes_nothing(tree, where):
    outside, dest = tree / 'outside.yaml', tree / 'render'
    entry = {'file': '../outside.yaml', 'writer': 'w', 'phase': 'kubevirt', 'mode': 0o644,
             'sha256': digest(outside.read_bytes()), 'resource': True}
    entry['object' if where == 'objects' else 'content'] = configmap('a') if where == 'objects' else 'x'
    lock = {'format': 1, 'owner': 'site', 'pid': dead_pid(), 'started': 1.0, 'objects': {}, 'files': {}}
    lock[where] = {'../outside.yaml': entry}
    (dest / rs.LOCK).write_text(json.dumps(lock))
    with pytest.raises(render.RenderError, match=r'%s: .*\.\./outside\.yaml.*restore it' % rs.LOCK):
        render_once(dest)
    assert outside.exists()


@pytest.mark.parametrize('text, what', [
    ('[]', 'must hold a JSON object'),
    ('{"format": 2, "files": []}', 'files is'),
    ('{"format": 2, "files": {"a.yaml": {"sha256": 5}}}', r'files\[a.yaml\].sha256 is 5'),
    ('{"format": 2, "files": {"a.yaml": {"sha256": ""}}}', r"files\[a.yaml\].sha256 is ''"),
    ('{"format": 2, "files": {"a.yaml": "x"}}', r"files\[a.yaml\] is 'x'"),
    ('{"format": 2, "files": {}, "complete": "yes"}', "complete is 'yes'"),
    ('{"format": "2"}', "format is '2'"),
    ('{"format": 7}', 'format 7, written by a newer version of this collection; upgrade'),
    ('{"format": 2, "files": {"a.yaml": {"sha256": "%s", "phase": "x\\ny"}}}' % ('0' * 64), 'phase is'),
    ('{"format": 2, "files": ' + '[' * 100000 + ']' * 100000 + '}', 'is not valid JSON'),
    ('{"format": 2, "files": {}', 'is not valid JSON'),
    ('\xff\xfe', 'is not valid JSON'),
    ('{"format": 2, "files": {}, "finished": NaN}', 'finished is nan'),
    ('{"format": 2, "files": {}, "finished": Infinity}', 'finished is inf'),
    ('{"format": 2, "files": {}, "extra": 1}', "a key of the manifest is 'extra'"),
    ('{"format": 2, "files": {"a.yaml": {"sha256": "%s", "delete": true}}}' % ('0' * 64),
     r"a key of files\[a.yaml\] is 'delete'"),
    ('{"format": 2, "files": {%s}}' % ', '.join('"f%05d.yaml": {"sha256": "%s"}' % (i, '0' * 64) for i in range(10001)),
     'files has 10001 entries, more than a render writes'),
])
def test_a_manifest_of_another_shape_is_refused_naming_it_never_a_traceback(tree, text, what):
    dest = tree / 'render'
    (dest / rs.MANIFEST).write_bytes(text.encode('latin-1') if text.startswith('\xff') else text.encode('utf-8'))
    with pytest.raises(render.RenderError, match='%s.*%s' % (rs.MANIFEST, what)):
        rs.open_session(str(dest), 'site', pid=os.getpid())
    assert not (dest / rs.LOCK).exists()  # refused before any change


@pytest.mark.parametrize('change, what', [
    (dict(pid=0), 'pid is 0'), (dict(pid=-1), 'pid is -1'), (dict(pid=True), 'pid is True'),
    (dict(pid='1'), "pid is '1'"), (dict(owner='site\n'), "owner is 'site\\\\n'"), (dict(objects=[]), 'objects is'),
    (dict(objects={'k': {'file': 'a.yaml', 'writer': 'w', 'phase': 'p', 'object': 'x'}}), r'objects\[k\].object'),
    (dict(files={'a.yaml': {'file': 'b.yaml', 'writer': 'w', 'content': ''}}), r'files\[a.yaml\].file'),
    (dict(depth='2'), "depth is '2'"), (dict(phases=[1]), 'phases is'),
    (dict(objects={'k': {'file': 'a.yaml', 'writer': 'w', 'object': {}, 'writers': 'w'}}),
     r"objects\[k\].writers is 'w'"),
    (dict(token='1'), "token is '1'"), (dict(token='A' * 64), "token is 'AAAA"), (dict(token=None), 'token is None'),
    (dict(host='a b'), "host is 'a b'"), (dict(host='-x'), "host is '-x'"), (dict(started=float('nan')), 'started is nan'),
    (dict(updated=-1), 'updated is -1'), (dict(started=1e300), r'started is 1e\+300'), (dict(extra=1), "a key of the lock is 'extra'"),
    (dict(objects={'k': {'file': 'a.yaml', 'writer': 'w', 'object': {}, 'sha256': ''}}), r"a key of objects\[k\] is 'sha256'"),
])
def test_a_lock_of_another_shape_is_refused_naming_it(tree, change, what):
    dest = tree / 'render'
    lock = dict({'format': 2, 'owner': 'site', 'pid': dead_pid(), 'started': 1.0, 'objects': {}}, **change)
    (dest / rs.LOCK).write_text(json.dumps(lock))
    # refused as it is, even when asked to take it over: the message says what is wrong with it
    with pytest.raises(render.RenderError, match='%s: %s' % (rs.LOCK, what)):
        rs.open_session(str(dest), 'site', pid=os.getpid(), takeover=True)
    assert json.loads((dest / rs.LOCK).read_text()) == json.loads(json.dumps(lock))


def test_a_bookkeeping_file_over_the_size_limit_is_refused_unread(tree, monkeypatch):
    dest = tree / 'render'
    monkeypatch.setattr(rs, 'MAX_BOOKKEEPING', 1000)
    manifest(dest, dict(('f%04d.yaml' % i, {'phase': 'p', 'sha256': '0' * 64}) for i in range(100)))
    with pytest.raises(render.RenderError, match='%s is larger than 1000 bytes' % rs.MANIFEST):
        rs.open_session(str(dest), 'site', pid=os.getpid())


@pytest.mark.parametrize('name', [rs.MANIFEST, rs.LOCK])
def test_a_bookkeeping_file_that_is_a_symlink_is_never_followed(tree, name):
    dest = tree / 'render'
    (tree / 'elsewhere.json').write_text(json.dumps({'format': 2, 'files': {}}))
    os.symlink('../elsewhere.json', str(dest / name))
    with pytest.raises(render.RenderError, match='%s is not a regular file' % name):
        rs.open_session(str(dest), 'site', pid=os.getpid())
    assert os.path.islink(str(dest / name))


def test_a_symlink_at_an_objects_file_name_is_refused_never_read_or_written_through(tree):
    outside, dest = tree / 'outside.yaml', tree / 'render'
    os.symlink('../outside.yaml', str(dest / '60-a-000.yaml'))
    with pytest.raises(render.RenderError, match='60-a-000.yaml is a symbolic link; the render writes 60-a-000.yaml'):
        render_once(dest, '60-a-000.yaml')
    assert os.path.islink(str(dest / '60-a-000.yaml')) and outside.read_text() == 'kind: Secret\nthe: outside\n'
    # without a session too: the diff never shows the link's target
    os.unlink(str(dest / rs.LOCK))
    with pytest.raises(render.RenderError, match='is a symbolic link'):
        render.place(str(dest), [{'name': '60-a-000.yaml', 'object': configmap('a'), 'writer': 'w'}], 0o644, 'p',
                     False)
    assert os.path.islink(str(dest / '60-a-000.yaml'))


@pytest.mark.parametrize('name', ['60-a-000.yaml', rs.KUSTOMIZATION])
def test_a_directory_at_a_name_the_render_writes_is_refused(tree, name):
    dest = tree / 'render'
    (dest / name).mkdir()
    with pytest.raises(render.RenderError, match='%s is not a regular file' % name):
        render_once(dest, '60-a-000.yaml')


def test_a_foreign_or_edited_file_at_an_objects_file_name_is_refused_before_any_write(tree):
    dest = tree / 'render'
    (dest / '60-a-000.yaml').write_text('mine\n')
    with pytest.raises(render.RenderError, match='60-a-000.yaml exists and was not written by this collection'):
        render_once(dest, '30-b-000.yaml', '60-a-000.yaml')
    assert (dest / '60-a-000.yaml').read_text() == 'mine\n'
    assert not (dest / '30-b-000.yaml').exists()  # refused before the first write
    os.unlink(str(dest / rs.LOCK))
    # ours, then edited in the checkout: a render that would change it stops, naming it
    os.unlink(str(dest / '60-a-000.yaml'))
    render_once(dest, '60-a-000.yaml')
    (dest / '60-a-000.yaml').write_text('edited\n')
    token = rs.open_session(str(dest), 'site', pid=os.getpid())['session']
    rs.record(str(dest), configmap('other'), '60-a-000.yaml', 'w', 'kubevirt', session=token)
    with pytest.raises(render.RenderError, match='60-a-000.yaml exists and was not written .*changed since'):
        rs.close_session(str(dest), dump, session=token)
    assert (dest / '60-a-000.yaml').read_text() == 'edited\n'


def test_a_file_holding_exactly_the_rendered_text_or_ours_unchanged_is_replaced(tree):
    dest = tree / 'render'
    render_once(dest, '60-a-000.yaml')
    token = rs.open_session(str(dest), 'site', pid=os.getpid())['session']
    rs.record(str(dest), configmap('changed'), '60-a-000.yaml', 'w', 'kubevirt', session=token)
    assert rs.close_session(str(dest), dump, session=token)['written'] == ['60-a-000.yaml']


# -- the Flux group directories (gitops.FLUX_GROUPS) ------------------------------------------------------------

A, B = '60-kv-000-configmap-x-a.yaml', '30-nodes-configmap-x-b.yaml'  # names the builders write (prunable)


def test_a_manifest_naming_another_flux_directory_is_refused_and_changes_nothing(tree):
    dest = tree / 'render'
    render_once(dest, A)
    data = json.loads((dest / rs.MANIFEST).read_text())
    for bad in ('../outside', 'flux-9-x', '.git', 'flux-5-kubevirt/..'):
        text = json.dumps(dict(data, flux={bad: '0' * 64}))
        (dest / rs.MANIFEST).write_text(text)
        with pytest.raises(render.RenderError, match='a directory in flux is'):
            render_once(dest, A)
        assert (dest / rs.MANIFEST).read_text() == text and not (dest / rs.LOCK).exists()


def test_a_symlink_or_file_at_a_flux_directory_is_refused_before_any_write_never_followed(tree):
    dest, elsewhere = tree / 'render', tree / 'elsewhere'
    elsewhere.mkdir()
    os.symlink('../elsewhere', str(dest / 'flux-5-kubevirt'))
    with pytest.raises(render.RenderError, match='flux-5-kubevirt is a symbolic link'):
        render_once(dest, A)
    assert os.listdir(str(elsewhere)) == [] and not (dest / A).exists()
    os.unlink(str(dest / rs.LOCK))  # a refused close keeps its lock
    os.unlink(str(dest / 'flux-5-kubevirt'))
    (dest / 'flux-5-kubevirt').write_text('a file\n')
    with pytest.raises(render.RenderError, match='flux-5-kubevirt is not a directory'):
        render_once(dest, A)
    assert (dest / 'flux-5-kubevirt').read_text() == 'a file\n' and not (dest / A).exists()


def test_a_foreign_or_edited_flux_kustomization_is_refused_and_a_stale_one_kept_with_a_warning(tree):
    dest = tree / 'render'
    (dest / 'flux-5-kubevirt').mkdir()
    (dest / 'flux-5-kubevirt' / rs.KUSTOMIZATION).write_text('resources: [mine.yaml]\n')
    with pytest.raises(render.RenderError, match='was not written by this collection'):
        render_once(dest, A)
    assert (dest / 'flux-5-kubevirt' / rs.KUSTOMIZATION).read_text() == 'resources: [mine.yaml]\n'
    assert not (dest / A).exists()
    os.unlink(str(dest / rs.LOCK))  # a refused close keeps its lock
    os.unlink(str(dest / 'flux-5-kubevirt' / rs.KUSTOMIZATION))
    render_once(dest, A)
    # edited since it was written, and its group has no file any more: kept, named in a warning; the directory with it
    (dest / 'flux-5-kubevirt' / rs.KUSTOMIZATION).write_text('edited\n')
    result = render_once(dest, B)
    assert 'flux-5-kubevirt/kustomization.yaml was changed since this collection wrote it' in '\n'.join(
        result['warnings'])
    assert (dest / 'flux-5-kubevirt' / rs.KUSTOMIZATION).read_text() == 'edited\n'
    # a stale one whose directory was replaced by a link to a copy elsewhere: neither is entered nor deleted
    os.unlink(str(dest / 'flux-5-kubevirt' / rs.KUSTOMIZATION))
    render_once(dest, A)
    elsewhere = tree / 'elsewhere'
    os.rename(str(dest / 'flux-5-kubevirt'), str(elsewhere))
    os.symlink('../elsewhere', str(dest / 'flux-5-kubevirt'))
    result = render_once(dest, B)
    assert result['pruned'] == [A]
    assert 'flux-5-kubevirt is a symbolic link' in '\n'.join(result['warnings'])
    assert os.path.islink(str(dest / 'flux-5-kubevirt')) and (elsewhere / rs.KUSTOMIZATION).exists()
    # a stale one as written: deleted with its then empty directory
    os.unlink(str(dest / 'flux-5-kubevirt'))
    render_once(dest, A)
    result = render_once(dest, B)
    assert result['pruned'] == [A, 'flux-5-kubevirt/kustomization.yaml']
    assert not (dest / 'flux-5-kubevirt').exists()


def test_a_stale_flux_directory_holding_other_files_keeps_them(tree):
    dest = tree / 'render'
    render_once(dest, A)
    (dest / 'flux-5-kubevirt' / 'notes.md').write_text('mine\n')
    result = render_once(dest, B)
    assert 'flux-5-kubevirt/kustomization.yaml' in result['pruned']
    assert os.listdir(str(dest / 'flux-5-kubevirt')) == ['notes.md']


def test_prune_leaves_a_symlink_a_directory_and_an_edited_file_in_place_with_a_warning(tree):
    outside, dest = tree / 'outside.yaml', tree / 'render'
    a, b, c, d = (builder_name(letter) for letter in 'abcd')
    render_once(dest, a, b, c, d)
    os.unlink(str(dest / a))
    os.symlink('../outside.yaml', str(dest / a))
    os.unlink(str(dest / b))
    (dest / b).mkdir()
    (dest / c).write_text('edited by a colleague\n')
    result = render_once(dest)
    assert result['pruned'] == [d, 'flux-5-kubevirt/kustomization.yaml']
    warned = '\n'.join(result['warnings'])
    assert '%s is not a regular file' % a in warned and '%s is not a regular file' % b in warned
    assert '%s was changed since this collection wrote it: not pruned' % c in warned
    assert os.path.islink(str(dest / a)) and outside.exists() and (dest / b).is_dir()
    assert (dest / c).read_text() == 'edited by a colleague\n'
    # no longer ours: neither listed nor pruned by the next render
    assert result['files'] == [] and render_once(dest)['warnings'] == []


def test_an_old_format_manifest_prunes_only_what_its_hash_proves_ours(tree):
    dest = tree / 'render'
    a, b = builder_name('a'), builder_name('b')
    (dest / a).write_text('a\n')
    (dest / b).write_text('b\n')
    manifest(dest, {a: {'phase': 'nodes', 'sha256': ''}, b: {'phase': 'kubevirt', 'sha256': digest('b\n')}}, version=1)
    result = render_once(dest)
    assert result['pruned'] == [b] and (dest / a).read_text() == 'a\n'
    assert result['warnings'] == ['%s has no sha256 in the render bookkeeping (an older format): it cannot be proven '
                                  'to be this collection\'s and is not pruned; remove it by hand if it is stale'
                                  % (dest / a)]
    assert json.loads((dest / rs.MANIFEST).read_text())['format'] == rs.FORMAT


def test_an_old_format_lock_of_a_killed_render_prunes_nothing_and_says_so(tree):
    dest = tree / 'render'
    (dest / '60-a-000.yaml').write_text('half\n')
    lock = {'format': 1, 'owner': 'site', 'pid': dead_pid(), 'started': 1.0, 'objects': {'v1/ConfigMap/x/a': {
        'file': '60-a-000.yaml', 'writer': 'w', 'phase': 'kubevirt', 'object': configmap('a'), 'mode': 0o644}}}
    (dest / rs.LOCK).write_text(json.dumps(lock))
    opened = rs.open_session(str(dest), 'site', pid=os.getpid(), takeover=True)
    assert 'older format' in opened['warnings'][0] and 'none of them is pruned' in opened['warnings'][0]
    assert rs.close_session(str(dest), dump, session=opened['session'])['pruned'] == []
    assert (dest / '60-a-000.yaml').exists()


def test_a_render_directory_that_is_a_symlink_is_refused(tree):
    os.symlink('render', str(tree / 'link'))
    with pytest.raises(render.RenderError, match='link is a symbolic link; set the render directory to the real'):
        rs.open_session(str(tree / 'link') + '/', 'site', pid=os.getpid())
    with pytest.raises(render.RenderError, match='link is a symbolic link'):
        render.place(str(tree / 'link'), [{'name': 'a.yaml', 'content': 'x', 'writer': 'w'}], 0o644, 'p', False)
    assert os.listdir(str(tree / 'render')) == []


# hostile names and values for the bookkeeping: climbing out, absolute, control and separator characters, very
# long, the names of the symlink and the directory planted in the render directory, our own bookkeeping names
HOSTILE_NAMES = ['../outside.yaml', '../../outside.yaml', '/etc/passwd', 'OUTSIDE', 'link.yaml', 'dir.yaml',
                 'ours.yaml', 'new.yaml', 'x\n.yaml', 'x\x00.yaml', 'x\u2028.yaml', 'x\r', 'a' * 10000, '.', '..', '',
                 rs.KUSTOMIZATION, rs.LOCK, rs.MANIFEST, 'dir.yaml/', 'dir.yaml/inner.yaml',
                 'link.yaml/../../outside.yaml']
# valid names of what is planted as often as hostile ones, so that many examples get past the shape checks
PLANTED = ['link.yaml', 'dir.yaml', 'ours.yaml', 'new.yaml', builder_name('ours')]
names = st.one_of(st.sampled_from(PLANTED), st.sampled_from(HOSTILE_NAMES), st.text(max_size=20))
hashes = st.sampled_from(['OUTSIDE', 'OURS', 'OURS', '', '0' * 64, 5, None])
recorded = st.fixed_dictionaries({'phase': st.sampled_from(['kubevirt', 'kubevirt', 'nodes', '', None, 3, '../x']),
                                  'sha256': hashes, 'resource': st.sampled_from([True, False, 'x'])})


def snapshot(root):
    """Every path under root with what it is (link target, directory, or the file's bytes)."""
    seen = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            if os.path.islink(path):
                seen[path] = ('link', os.readlink(path))
            elif os.path.isdir(path):
                seen[path] = ('dir',)
            else:
                with open(path, 'rb') as f:
                    seen[path] = ('file', f.read())
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.dictionaries(names, recorded, max_size=4), writing=st.dictionaries(names, recorded, max_size=3),
       objects=st.lists(st.sampled_from(PLANTED), max_size=2),
       killed=st.booleans(), version=st.sampled_from([1, 2]))
@example(files=dict((name, {'phase': 'kubevirt', 'sha256': 'OURS', 'resource': True}) for name in PLANTED),
         writing={}, objects=[], killed=False, version=2)
@example(files={}, writing=dict((name, {'phase': 'kubevirt', 'sha256': 'OURS', 'resource': True}) for name in PLANTED),
         objects=[], killed=True, version=2)
@example(files={}, writing=dict((name, {'phase': 'kubevirt', 'sha256': 'OUTSIDE', 'resource': True})
                                for name in PLANTED), objects=['new.yaml'], killed=True, version=2)
def test_hostile_bookkeeping_never_deletes_or_writes_outside_or_a_non_regular_file(files, writing, objects, killed,
                                                                                   version):
    with tempfile.TemporaryDirectory() as root:
        outside = os.path.join(root, 'outside.yaml')
        with open(outside, 'w') as f:
            f.write('kind: Secret\n')
        dest = os.path.join(root, 'render')
        os.mkdir(dest)
        os.symlink('../outside.yaml', os.path.join(dest, 'link.yaml'))
        os.mkdir(os.path.join(dest, 'dir.yaml'))
        for name in ('ours.yaml', builder_name('ours')):
            with open(os.path.join(dest, name), 'w') as f:
                f.write('ours\n')
        with open(os.path.join(dest, 'dir.yaml', 'inner.yaml'), 'w') as f:
            f.write('inner\n')
        outside_hash, ours_hash = digest(b'kind: Secret\n'), digest(b'ours\n')

        def real(table):
            """The placeholders made real: OUTSIDE as a name is the outside file's absolute path, as a hash its
            sha256; OURS the sha256 of ours.yaml."""
            hashed = {'OUTSIDE': outside_hash, 'OURS': ours_hash}
            out = {}
            for name, entry in table.items():
                out[outside if name == 'OUTSIDE' else name] = dict(entry, sha256=hashed.get(entry['sha256'],
                                                                                            entry['sha256']))
            return out

        files, writing = real(files), real(writing)
        with open(os.path.join(dest, rs.MANIFEST), 'w') as f:
            json.dump({'format': version, 'complete': True, 'files': files}, f)
        if killed:
            lock = {'format': version, 'owner': 'site', 'pid': dead_pid(), 'started': 1.0, 'writing': writing,
                    'objects': dict((k, {'file': k, 'writer': 'w', 'phase': 'kubevirt', 'object': configmap('a')})
                                    for k in writing)}
            with open(os.path.join(dest, rs.LOCK), 'w') as f:
                json.dump(lock, f)
        before = snapshot(root)
        try:
            token = rs.open_session(dest, 'site', pid=os.getpid(), takeover=killed)['session']
            for i, name in enumerate(objects):
                rs.record(dest, configmap('c%d' % i), name, 'w', 'kubevirt', session=token)
            event('pruned %d' % len(rs.close_session(dest, dump, session=token)['pruned']))
        except render.RenderError:
            event('refused')
        after = snapshot(root)
        # outside the render directory, and every symbolic link and directory inside it: exactly as before
        for path, what in before.items():
            if not path.startswith(dest + os.sep) or what[0] != 'file' or os.path.dirname(path) != dest:
                assert after.get(path) == what, path
        # new below the render directory: only the Flux kustomization of a wave group, in its own directory
        flux = set(os.path.join(dest, group) for group in rs.gitops.FLUX_GROUP_NAMES)
        assert [p for p in after if p not in before and os.path.dirname(p) != dest
                and os.path.dirname(p) not in flux] == []
        assert [p for p in after if p not in before and os.path.dirname(p) in flux
                and os.path.basename(p) != rs.KUSTOMIZATION] == []
        # inside: only regular files (ours.yaml, a rendered file) or bookkeeping may change or go, and the group
        # directories appear
        assert all(what[0] == 'file' or path in flux for path, what in after.items() if path not in before)
        # a name no builder writes is never deleted, whatever the bookkeeping says: changed only when this render
        # wrote it (over a file holding what a valid manifest recorded)
        if after.get(os.path.join(dest, 'ours.yaml')) != before[os.path.join(dest, 'ours.yaml')]:
            assert 'ours.yaml' in objects
        ours = builder_name('ours')
        if after.get(os.path.join(dest, ours)) != before[os.path.join(dest, ours)]:
            # gone or replaced: only when a valid manifest proved it ours, or this render wrote it
            assert files.get(ours, {}).get('sha256') == ours_hash or ours in objects or \
                writing.get(ours, {}).get('sha256') == ours_hash
