# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who holds the render directory, what the prune may delete, with what mode a file is written: the directory is a
Git checkout anyone with commit access writes to, so a committed lock or bookkeeping file is hostile input. Real
files in temporary directories, no mocks.

- A lock is this run's only when this run created it: the random session token it wrote, which the open step
  returns and every later step gives back. A pid (predictable in a CI or EE container) never makes it ours.
- A lock that is not this run's stops the render, named (path, pid, host, owner, age as recorded) with the option
  that takes it over; only that option does.
- The prune deletes a file only when its name is one the collection's builders write and it still holds what the
  bookkeeping says was written.
- Every file the render writes gets the collection's mode, never one found in the directory or a committed lock.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat

import pytest
import yaml
from hypothesis import event, given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session as rs

GOLDEN = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'render', 'golden')


def dump(obj):
    return '---\n' + yaml.safe_dump(obj, sort_keys=False)


def configmap(name):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': 'x'}}


def digest(data):
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode('utf-8')).hexdigest()


def committed_lock(dest, pid, **extra):
    """A lock as an attacker commits it: well formed, with an object of its own at mode 0666."""
    lock = dict({'format': 2, 'owner': 'site', 'pid': pid, 'started': 1.0, 'depth': 1, 'phases': [],
                 'objects': {'v1/ConfigMap/x/evil': {
                     'file': '60-kv-000-configmap-x-evil.yaml', 'writer': '60-kv', 'phase': 'kubevirt',
                     'object': configmap('evil'), 'mode': 0o666}}}, **extra)
    (dest / rs.LOCK).write_text(json.dumps(lock))
    return lock


def render_once(dest, *names, **kwargs):
    token = rs.open_session(str(dest), 'site', pid=os.getpid(), **kwargs)['session']
    for i, name in enumerate(names):
        rs.record(str(dest), configmap('c%d' % i), name, name, 'kubevirt', session=token)
    return rs.close_session(str(dest), dump, session=token)


# -- the lock --------------------------------------------------------------------------------------------------------

def test_a_committed_lock_with_this_runs_own_pid_is_not_adopted(tmp_path):
    # before: a lock naming the render's own pid was taken for an outer level of the same run (site.yml) and its
    # objects written at their recorded mode (0666) and listed in kustomization.yaml
    committed_lock(tmp_path, os.getpid())
    with pytest.raises(render.RenderError) as err:
        rs.open_session(str(tmp_path), 'site', pid=os.getpid())
    msg = str(err.value)
    assert str(tmp_path / rs.LOCK) in msg and 'pid %d' % os.getpid() in msg and 'gpuvirt_render_takeover_lock' in msg
    assert not (tmp_path / '60-kv-000-configmap-x-evil.yaml').exists()
    assert json.loads((tmp_path / rs.LOCK).read_text())['objects']  # changed nothing
    # a token it guessed or made up does not make it ours either
    with pytest.raises(render.RenderError, match='gpuvirt_render_takeover_lock'):
        rs.open_session(str(tmp_path), 'site', pid=os.getpid(), session='0' * 64)
    # taken over on request: its objects are dropped, none is written or listed
    result = render_once(tmp_path, '60-kv-000-configmap-x-c0.yaml', takeover=True)
    assert result['written'] == ['60-kv-000-configmap-x-c0.yaml', rs.KUSTOMIZATION, 'flux-5-kubevirt/' + rs.KUSTOMIZATION]
    assert not (tmp_path / '60-kv-000-configmap-x-evil.yaml').exists()
    assert yaml.safe_load((tmp_path / rs.KUSTOMIZATION).read_text())['resources'] == ['60-kv-000-configmap-x-c0.yaml']


def test_a_committed_lock_with_the_same_token_is_ours_only_with_that_token(tmp_path):
    token = rs.open_session(str(tmp_path), 'site', pid=os.getpid())['session']
    assert len(token) == 64 and int(token, 16) >= 0
    # the same run opening again (a phase imported by site.yml) with its token nests
    again = rs.open_session(str(tmp_path), 'kubevirt', pid=os.getpid(), session=token)
    assert again['reopened'] is True and again['session'] == token
    assert rs.close_session(str(tmp_path), dump, session=token)['closed'] is False
    # a step without the token, or with another one, neither records into the lock nor closes it
    for other in (None, '', 'f' * 64):
        with pytest.raises(render.RenderError, match='this run did not create'):
            rs.record(str(tmp_path), configmap('a'), '60-kv-000-configmap-x-a.yaml', 'w', 'kubevirt', session=other)
        with pytest.raises(render.RenderError, match='this run did not create'):
            rs.close_session(str(tmp_path), dump, session=other)
        with pytest.raises(render.RenderError, match='this run did not create'):
            render.place(str(tmp_path), [{'name': 'a.yaml', 'content': 'x', 'writer': 'w'}], 0o644, 'p', False,
                         session=other)
    assert json.loads((tmp_path / rs.LOCK).read_text())['objects'] == {}
    assert rs.close_session(str(tmp_path), dump, session=token)['closed'] is True
    assert not (tmp_path / rs.LOCK).exists()


def test_a_committed_lock_naming_a_live_pid_is_refused_naming_it_and_the_takeover_option(tmp_path):
    # pid 1 is alive in every container: before, such a lock blocked every render with no way but deleting it
    committed_lock(tmp_path, 1, host='ci-runner-7', started=1000.0)
    with pytest.raises(render.RenderError) as err:
        rs.open_session(str(tmp_path), 'site', pid=os.getpid(), now=1000.0 + 7200)
    msg = str(err.value)
    for part in (str(tmp_path / rs.LOCK), 'pid 1', "host 'ci-runner-7'", 'owner site', '2:00:00 ago',
                 'gpuvirt_render_takeover_lock=true'):
        assert part in msg, (part, msg)
    assert not (tmp_path / rs.MANIFEST).exists()  # refused before any change
    opened = rs.open_session(str(tmp_path), 'site', pid=os.getpid(), takeover=True)
    assert opened['interrupted'] == {'pid': 1, 'owner': 'site', 'host': 'ci-runner-7', 'started': 1000.0,
                                     'objects': 1}
    assert rs.close_session(str(tmp_path), dump, session=opened['session'])['closed'] is True


def test_the_lock_is_created_exclusively_0600_and_never_through_a_link(tmp_path):
    old = os.umask(0)
    try:
        token = rs.open_session(str(tmp_path), 'site', pid=os.getpid())['session']
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(tmp_path / rs.LOCK).st_mode) == 0o600
    lock = json.loads((tmp_path / rs.LOCK).read_text())
    assert lock['token'] == token and lock['pid'] == os.getpid() and isinstance(lock['host'], str)
    rs.close_session(str(tmp_path), dump, session=token)
    # a dangling link at the lock's name (its target would be created by a plain O_CREAT) is refused, not followed
    os.symlink(str(tmp_path / 'elsewhere'), str(tmp_path / rs.LOCK))
    with pytest.raises(render.RenderError, match='is not a regular file'):
        rs.open_session(str(tmp_path), 'site', pid=os.getpid(), takeover=True)
    assert not (tmp_path / 'elsewhere').exists()


# -- the prune -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['README.md', 'values.yaml', 'Chart.yaml', 'app-config.yaml', 'pull-secret.yaml',
                                  '60-a-000.yaml', '60-kv-000-configmap-x-a.yml', '60-kv-000-ConfigMap-x-a.yaml',
                                  '60-kv-000-configmap-x-a.yaml.bak', '43-helm-values-x.yaml.orig'])
def test_a_file_whose_hash_matches_but_whose_name_no_builder_writes_is_not_deleted(tmp_path, name):
    # the bookkeeping is committed: it can name any file of the checkout with the sha256 the file has now
    (tmp_path / name).write_text('a colleague\'s file\n')
    (tmp_path / rs.MANIFEST).write_text(json.dumps({'format': 2, 'complete': True, 'files': {
        name: {'phase': 'kubevirt', 'sha256': digest('a colleague\'s file\n'), 'resource': True}}}))
    result = render_once(tmp_path)
    assert result['pruned'] == [] and (tmp_path / name).read_text() == 'a colleague\'s file\n'
    assert result['warnings'] == ['%s is not a name this collection writes for an object or a Helm values file: not '
                                  'pruned, and no longer recorded as written by this render' % (tmp_path / name)]
    assert result['files'] == []


@pytest.mark.parametrize('name', ['../outside.yaml', 'sub/60-kv-000-configmap-x-a.yaml', '.git/config', '.git',
                                  rs.KUSTOMIZATION, '/etc/passwd', '.60-kv-000-configmap-x-a.yaml'])
def test_a_bookkeeping_entry_naming_a_path_or_a_hidden_or_kustomization_file_is_refused_changing_nothing(tmp_path,
                                                                                                         name):
    (tmp_path / 'sub').mkdir()
    (tmp_path / '.git').mkdir()
    for path in ('outside.yaml', 'sub/60-kv-000-configmap-x-a.yaml', '.git/config', rs.KUSTOMIZATION,
                 '.60-kv-000-configmap-x-a.yaml'):
        (tmp_path / path).write_text('theirs\n')
    dest = tmp_path
    text = json.dumps({'format': 2, 'complete': True,
                       'files': {name: {'phase': 'kubevirt', 'sha256': digest('theirs\n')}}})
    (dest / rs.MANIFEST).write_text(text)
    with pytest.raises(render.RenderError, match='%s: a file name in files is' % rs.MANIFEST):
        render_once(dest)
    assert (dest / rs.MANIFEST).read_text() == text and not (dest / rs.LOCK).exists()
    for path in ('outside.yaml', 'sub/60-kv-000-configmap-x-a.yaml', '.git/config', rs.KUSTOMIZATION):
        assert (tmp_path / path).read_text() == 'theirs\n'


def test_a_file_of_a_builders_name_is_pruned_only_while_it_holds_the_recorded_text(tmp_path):
    render_once(tmp_path, '60-kv-000-configmap-x-a.yaml', '60-kv-001-configmap-x-b.yaml')
    (tmp_path / '60-kv-001-configmap-x-b.yaml').write_text('edited\n')
    result = render_once(tmp_path)
    # the Flux kustomization of the group that no longer has a file goes too (it still holds what was recorded)
    assert result['pruned'] == ['60-kv-000-configmap-x-a.yaml', 'flux-5-kubevirt/' + rs.KUSTOMIZATION]
    assert (tmp_path / '60-kv-001-configmap-x-b.yaml').read_text() == 'edited\n'


def test_the_names_the_builders_write_are_the_names_the_prune_accepts():
    # every file of the golden renders (real renders of the example inventory and the test inventories)
    names = set()
    for case in os.listdir(GOLDEN):
        names.update(n[:-len('.json')] for n in os.listdir(os.path.join(GOLDEN, case)) if n.endswith('.yaml.json'))
    names = set(name for name in names if not name.endswith(rs.KUSTOMIZATION))  # the top one and the Flux groups'
    assert len(names) > 20
    assert [n for n in sorted(names) if not rs.prunable_name(n)] == []
    # what render.file_names makes, with and without a prefix, and the longest names it allows
    objects = [configmap('a'), {'kind': 'Node', 'metadata': {'name': 'gpu-1.example.com'}},
               {'kind': 'ResourceClaimTemplate', 'metadata': {'name': 'a' * 253, 'namespace': 'b' * 63}}]
    for prefix in ('', '43-gpu-operator-policy', 'X.y_z'):
        assert all(rs.prunable_name(n) for n in render.file_names(objects, prefix)[:2])
    for name in ('README.md', 'kustomization.yaml', '.gpuvirt-render.json', 'values.yaml', '43-helm-values.yaml',
                 '60-kv-000-configmap-x-.yaml', '60-KV-Configmap-X-a.yaml', 'configmap-a.yaml', ''):
        assert not rs.prunable_name(name), name


# -- file modes ------------------------------------------------------------------------------------------------------

def test_written_files_get_the_collections_mode_never_the_mode_found_in_the_directory(tmp_path):
    d = str(tmp_path)
    render_once(tmp_path, '60-kv-000-configmap-x-c0.yaml')
    for name in ('60-kv-000-configmap-x-c0.yaml', rs.KUSTOMIZATION, rs.MANIFEST):
        os.chmod(str(tmp_path / name), 0o666)
    # the same render again: every file already holds the rendered text, only its mode is wrong
    result = render_once(tmp_path, '60-kv-000-configmap-x-c0.yaml')
    assert result['written'] == ['60-kv-000-configmap-x-c0.yaml', rs.KUSTOMIZATION]
    for name in ('60-kv-000-configmap-x-c0.yaml', rs.KUSTOMIZATION, rs.MANIFEST):
        assert stat.S_IMODE(os.lstat(os.path.join(d, name)).st_mode) == 0o644, name
    # a Secret's file at 0600, whatever a committed file of that name had
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, configmap('c0'), '60-kv-000-configmap-x-c0.yaml', 'w', 'kubevirt', 0o600, session=token)
    rs.close_session(d, dump, session=token)
    assert stat.S_IMODE(os.lstat(os.path.join(d, '60-kv-000-configmap-x-c0.yaml')).st_mode) == 0o600


def test_a_taken_over_locks_recorded_mode_is_never_used(tmp_path):
    # the committed lock recorded its object at 0666, and this run renders the same object
    committed_lock(tmp_path, 4242)
    token = rs.open_session(str(tmp_path), 'site', pid=os.getpid(), takeover=True)['session']
    rs.record(str(tmp_path), configmap('evil'), '60-kv-000-configmap-x-evil.yaml', 'w', 'kubevirt', session=token)
    rs.close_session(str(tmp_path), dump, session=token)
    assert stat.S_IMODE(os.lstat(tmp_path / '60-kv-000-configmap-x-evil.yaml').st_mode) == 0o644


# -- the bookkeeping parser, over generated input ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 1 << 31) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=12)
file_names = st.sampled_from(['60-kv-000-configmap-x-a.yaml', 'a.yaml', 'README.md', '../a.yaml', '.git', '',
                              rs.KUSTOMIZATION, 'a/b.yaml', 'x' * 300, 'a\nb']) | st.text(max_size=8)
TIMES = [0, 1.5, 1e10, 1e12, -1, float('nan'), float('inf'), True, '1']
# each field of a bookkeeping file: values this collection writes, and values it never writes
RECORDED = {'phase': ['', 'kubevirt', None, 3, 'a b'], 'sha256': ['0' * 64, 'f' * 64, '', 'F' * 64, 5],
            'resource': [True, False, 'no'], 'other': [1]}
recorded = st.fixed_dictionaries({}, optional=dict((k, st.sampled_from(v)) for k, v in RECORDED.items())).map(
    lambda changes: dict({'sha256': '0' * 64}, **changes))
entries = st.dictionaries(file_names, recorded | json_values, max_size=3)
VALID_MANIFEST = {'format': 2, 'complete': True, 'files': {'60-kv-000-configmap-x-a.yaml': {
    'phase': 'kubevirt', 'sha256': '0' * 64, 'resource': True}}, 'kustomization': '0' * 64, 'finished': 1.5}
MANIFEST = {'format': [2, 1, 3, '2', True, 2.0], 'complete': [True, False, 'yes'], 'kustomization': ['', '0' * 64, 'x'],
            'finished': TIMES, 'other': [1]}


def changed(valid, candidates, **nested):
    """``valid`` with up to two fields changed: to one of ``candidates[field]``, or for a field of ``nested`` to what
    its strategy draws. Mostly one field at a time, so that the other checks pass and each check is reached."""
    field = st.one_of(st.sampled_from([(k, v) for k, values in sorted(candidates.items()) for v in values]),
                      *[st.tuples(st.just(k), strategy) for k, strategy in sorted(nested.items())])
    return st.lists(field, max_size=2).map(lambda items: dict(valid, **dict(items)))


manifests = changed(VALID_MANIFEST, MANIFEST, files=entries | json_values)
LOCK_ENTRY = {'file': ['60-kv-000-configmap-x-a.yaml', 'a.yaml', '../a.yaml', 5], 'writer': ['w', 5, 'x' * 2000],
              'phase': ['', 'p', None, 1], 'mode': [0o644, 0o600, 0o666, 0o7777, -1, '0644'],
              'writers': [[], ['a'], 'a', [1]], 'sha256': ['0' * 64]}
lock_entries = st.fixed_dictionaries({}, optional=dict((k, st.sampled_from(v)) for k, v in LOCK_ENTRY.items())).map(
    lambda changes: dict({'file': 'a.yaml', 'writer': 'w', 'object': {}}, **changes))
VALID_LOCK = {'format': 2, 'owner': 'site', 'pid': 7, 'started': 1.0, 'updated': 2.0, 'host': 'h', 'token': '0' * 64,
              'depth': 1, 'phases': [], 'objects': {}, 'files': {}, 'writing': {}}
LOCK = {'format': [1, 2, 3, '2', True], 'owner': ['site', 'kubevirt', 'a b', '', 5], 'started': TIMES, 'updated': TIMES,
        'pid': [1, rs.PID_MAX, rs.PID_MAX + 1, 0, -1, True, '1'], 'host': ['h', 'a.b-c', '', 'a b', '-h', 'x' * 300, 5],
        'token': ['0' * 64, 'f' * 64, '', 'A' * 64, 'x', None], 'depth': [0, 1, 1000, 1001, '1'],
        'phases': [[], ['p', ''], [1], ['a b'], 'p'], 'other': [1]}
locks = changed(VALID_LOCK, LOCK, objects=st.dictionaries(st.text(max_size=6), lock_entries, max_size=2) | json_values,
                files=st.dictionaries(st.just('a.yaml'), lock_entries, max_size=1) | json_values,
                writing=entries | json_values)


def _bytes(value):
    return json.dumps(value).encode('utf-8')


@settings(max_examples=200, deadline=None)
@given(data=st.one_of(manifests, manifests, json_values).map(_bytes) | st.binary(max_size=40))
def test_the_manifest_parser_accepts_only_the_shape_this_collection_writes(data):
    try:
        parsed = rs.parse(data, '/r/' + rs.MANIFEST, rs._check_manifest)
    except render.RenderError as e:
        assert str(e).startswith('/r/' + rs.MANIFEST)
        event('refused')
        return
    event('accepted')
    assert set(parsed) <= rs.MANIFEST_KEYS and parsed['format'] in (1, 2, 3) and not isinstance(parsed['format'], bool)
    assert set(parsed.get('flux', {})) <= rs.gitops.FLUX_GROUP_NAMES
    for name, entry in parsed.get('files', {}).items():
        assert rs.valid_name(name) and '/' not in name and not name.startswith('.') and name != rs.KUSTOMIZATION
        assert set(entry) <= rs.RECORDED_KEYS and rs.SHA256_RE.fullmatch(entry['sha256'] or '0' * 64)
        assert entry['sha256'] or parsed['format'] == 1


@settings(max_examples=150, deadline=None)
@given(data=st.one_of(locks, locks, json_values).map(_bytes))
def test_the_lock_parser_accepts_only_the_shape_this_collection_writes(data):
    try:
        parsed = rs.parse(data, '/r/' + rs.LOCK, rs._check_lock)
    except render.RenderError as e:
        assert str(e).startswith('/r/' + rs.LOCK)
        event('refused')
        return
    event('accepted')
    assert set(parsed) <= rs.LOCK_KEYS and 1 <= parsed['pid'] <= rs.PID_MAX
    assert rs.describe(parsed, now=0.0).startswith('pid %d on host ' % parsed['pid'])
    for where in ('objects', 'files'):
        for entry in parsed.get(where, {}).values():
            assert rs.valid_name(entry['file']) and 0 <= entry.get('mode', 0o644) <= 0o777
    # a lock is this run's by its token alone
    assert rs.is_this_runs(parsed, '0' * 64) == (parsed.get('token') == '0' * 64)
    assert not rs.is_this_runs(parsed, None) and not rs.is_this_runs(parsed, '')


# the grammar of render.file_names as one regular expression, to check object_file_name against: the names of
# objects, and those of the earlier version that carried a counter (pruned after an upgrade)
OBJECT_NAME = re.compile(r'(?:[A-Za-z0-9][A-Za-z0-9._-]{0,62}-)?(?:[0-9]{3,}-)?[a-z][a-z0-9]{0,62}-'
                         r'[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?-[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\.yaml')
# names of the shape file_names writes: each part of its grammar (at its longest too), and at most one part just
# outside it, so that about half the names are ones file_names writes and the others miss by one part
GOOD = (['', '30-node-labels-', 'a.b_C-', 'P' * 63 + '-'], ['000', '0001'], ['configmap', 'node', 'k' * 63],
        ['cluster', 'x', 'gpu-1', 'n' * 63], ['a', 'gpu-1.example.com', 'a-b-c', 'z' * 150], ['.yaml'])
BAD = (['P' * 64 + '-', '-', '.a-', 'a/b-'], ['12', 'a00', ''], ['Node', '9x', 'k' * 64, 'a_b', ''],
       ['n' * 64, 'a.b', '-x', 'x-', 'X', ''], ['a_b', '_a', '.a', 'a.', '', 'A', 'a/b'],
       ['.yml', '', '..yaml', '.yaml.x'])


def _spoiled(parts, spoil):
    parts = list(parts)
    if spoil is not None:
        parts[spoil[0]] = spoil[1]
    return parts[0] + '-'.join(parts[1:5]) + parts[5]


shaped = st.builds(_spoiled, st.tuples(*[st.sampled_from(good) for good in GOOD]),
                   st.none() | st.sampled_from([(i, bad) for i, bads in enumerate(BAD) for bad in bads]))


@settings(max_examples=300, deadline=None)
@given(name=shaped | st.text(alphabet='0a-.', max_size=20).map(lambda text: text + '.yaml'))
def test_object_file_name_is_the_grammar_of_file_names(name):
    event('a name of file_names' if render.object_file_name(name) else 'another name')
    assert render.object_file_name(name) == (len(name) <= 251 and OBJECT_NAME.fullmatch(name) is not None)


dns_label = st.from_regex(r'[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?', fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(prefix=st.sampled_from(['', '30-node-labels', '43-gpu-operator-policy', 'a.b_c']),
       kind=st.from_regex(r'[A-Za-z][A-Za-z0-9]{0,12}', fullmatch=True), namespace=st.none() | dns_label,
       name=st.lists(dns_label, min_size=1, max_size=3).map('.'.join))
def test_every_name_file_names_writes_is_one_the_prune_accepts(prefix, kind, namespace, name):
    obj = {'kind': kind, 'metadata': dict({'name': name}, **({'namespace': namespace} if namespace else {}))}
    (written,) = render.file_names([obj], prefix)
    assert rs.prunable_name(written), written
