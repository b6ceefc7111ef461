# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The edges of the grammars (validators.py) and of the render directory's own-file checks (render.py,
render_session.py) that the mutation scopes trust-grammar and trust-render (tools/mutation/scopes.json) found no
test pinning: each bound taken at its value and refused one past it, each check refusing exactly what it names
while its valid neighbour passes, and each refusal's message naming what it refused."""
from __future__ import annotations

import base64
import json
import os
import stat
import tempfile
import threading

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators as v
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session as rs

CA = 'vgpu_manager_image_registry_ca_file'


# validators.shown: the printable form of a refused value in a message


def test_a_shown_value_of_80_characters_is_kept_whole_and_one_of_81_is_cut_to_80_and_dots():
    assert v.shown('a' * 78) == "'" + 'a' * 78 + "'"  # the repr: 80 characters
    assert v.shown('a' * 79) == "'" + 'a' * 79 + '...'  # the repr: 81 characters, its first 80 kept
    assert v.shown('a' * 5000) == "'" + 'a' * 79 + '...'
    assert v.shown('abcdef', cap=8) == "'abcdef'" and v.shown('abcdefg', cap=8) == "'abcdefg..."


class _Raw:
    """A value whose repr holds raw characters (a str's repr escapes control characters itself)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def test_a_shown_value_keeps_printable_ascii_from_blank_to_tilde_and_marks_anything_else():
    assert v.shown(' a~') == "' a~'"
    assert v.shown(_Raw(' !}~')) == ' !}~'
    assert v.shown(_Raw('\x1f\x7f\x80\u00e9\u200b\U0001f600')) == '??????'
    assert v.shown('gr\u00fc\u00dfe') == "'gr??e'"  # printable to Python, so kept by repr: marked
    assert v.shown('a\nb\x00') == "'a\\nb\\x00'"  # escaped by repr: printable ASCII already


# validators.pem_certificates: each block one DER SEQUENCE whose definite length fills it


def _pem(der):
    body = base64.b64encode(der).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return '\n'.join(['-----BEGIN CERTIFICATE-----'] + lines + ['-----END CERTIFICATE-----']) + '\n'


# what the DER's header is: the DER, a SEQUENCE of 0x7f or 0x80 bytes in each form X.690 8.1.3 allows or not
DER_TAKEN = {
    'short form, 127 bytes': b'\x30\x7f' + b'\x05' * 0x7f,
    'long form of one length byte, 128 bytes': b'\x30\x81\x80' + b'\x05' * 0x80,
    'long form of four length bytes': b'\x30\x84\x00\x00\x00\x80' + b'\x05' * 0x80,
}
DER_REFUSED = {
    'indefinite length (0x80) of 128 bytes': b'\x30\x80' + b'\x05' * 0x80,
    'long form of five length bytes': b'\x30\x85\x00\x00\x00\x00\x80' + b'\x05' * 0x80,
    'long form of a length below 128': b'\x30\x81\x7f' + b'\x05' * 0x7f,
}


@pytest.mark.parametrize('der', list(DER_TAKEN.values()), ids=list(DER_TAKEN))
def test_a_certificate_of_a_definite_length_in_at_most_four_bytes_is_taken(der):
    assert v.pem_certificates(_pem(der), CA) == _pem(der)


@pytest.mark.parametrize('der', list(DER_REFUSED.values()), ids=list(DER_REFUSED))
def test_a_certificate_of_an_indefinite_overlong_or_non_minimal_length_is_refused(der):
    with pytest.raises(v.ValidationError, match='^%s is not a PEM certificate bundle \\(certificate 1 does not decode '
                                                'to one DER certificate\\)' % CA):
        v.pem_certificates(_pem(der), CA)


def test_a_certificate_bundle_is_taken_up_to_64_kib_and_refused_one_byte_past():
    cert = _pem(DER_TAKEN['short form, 127 bytes'])
    at_bound = (cert + '\n' * (v.PEM_BUNDLE_MAX - len(cert))).encode()  # blank lines after a block are allowed
    assert len(at_bound) == 65536
    assert v.pem_certificates(at_bound, CA) == at_bound.decode()
    with pytest.raises(v.ValidationError, match=r'^%s is not a PEM certificate bundle \(it is larger than 65536 '
                                                r'bytes\)' % CA):
        v.pem_certificates(at_bound + b'\n', CA)


# render.py: the files of the render directory, read without following a link or blocking


def test_a_limited_read_holds_the_file_up_to_its_limit_and_one_byte_more_never_more(tmp_path):
    path = tmp_path / 'f'
    for limit in (10, 65536, 70000):
        for size in (limit - 1, limit, limit + 1, limit + 2, limit + 200000):
            data = bytes(i % 251 for i in range(size))
            path.write_bytes(data)
            assert render.read_bytes(str(path), limit) == data[:limit + 1], (limit, size)
    path.write_bytes(b'x' * 200000)
    assert render.read_bytes(str(path)) == b'x' * 200000


def test_bookkeeping_on_disk_is_read_up_to_32_mib_and_refused_one_byte_past(tmp_path):
    path = tmp_path / rs.MANIFEST
    at_bound = b'{}' + b' ' * (32 * 1024 * 1024 - 2)  # JSON allows the trailing blanks
    path.write_bytes(at_bound)
    assert rs._load(str(path), lambda data, where: None) == {}
    path.write_bytes(at_bound + b' ')
    with pytest.raises(render.RenderError, match=r'\.gpuvirt-render\.json is larger than 33554432 bytes'):
        rs._load(str(path), lambda data, where: None)


def test_a_link_to_a_regular_file_is_never_read_or_hashed(tmp_path):
    target = tmp_path / 'target.yaml'
    target.write_text('kind: ConfigMap\n')
    link = tmp_path / 'link.yaml'
    link.symlink_to(target)
    assert render.read_bytes(str(target)) == b'kind: ConfigMap\n' and render.read(str(target)) == 'kind: ConfigMap\n'
    assert render.file_sha256(str(target)) == render.sha256_text('kind: ConfigMap\n')
    assert render.read_bytes(str(link)) is None and render.read(str(link)) is None
    assert render.file_sha256(str(link)) is None


def test_a_fifo_is_not_read_and_its_open_never_waits_for_a_writer(tmp_path):
    fifo = tmp_path / 'fifo.yaml'
    os.mkfifo(str(fifo))
    result = []
    reader = threading.Thread(target=lambda: result.append(render.read_bytes(str(fifo))), daemon=True)
    reader.start()
    reader.join(10)
    blocked = reader.is_alive()
    if blocked:  # free the reader stuck in open(): a writer's end opened and closed
        os.close(os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert not blocked, 'opening a FIFO waited for a writer'
    assert result == [None]


def test_a_file_in_the_way_is_refused_naming_the_writer_given_or_else_its_own_name(tmp_path):
    (tmp_path / 'other').write_text('x')
    path = tmp_path / 'configmap-ns-a.yaml'
    path.symlink_to(tmp_path / 'other')
    with pytest.raises(render.RenderError, match=r'is a symbolic link; the render writes the kubevirt role there'):
        render.check_replaceable(str(path), 'x', writer='the kubevirt role')
    with pytest.raises(render.RenderError, match=r'is a symbolic link; the render writes configmap-ns-a\.yaml there'):
        render.check_replaceable(str(path), 'x')
    path.unlink()
    path.write_text('kind: ConfigMap\n')
    render.check_replaceable(str(path), 'kind: ConfigMap\n', writer='the kubevirt role')  # it holds the content
    with pytest.raises(render.RenderError, match=r'was not written by this collection .*the render writes the '
                                                 r'kubevirt role there\)'):
        render.check_replaceable(str(path), 'other\n', writer='the kubevirt role')


# render_session.py: the lock, the manifest and the names a render prunes


LOCK_PATH = '/r/' + rs.LOCK
MANIFEST_PATH = '/r/' + rs.MANIFEST
LOCK = {'format': rs.FORMAT, 'owner': 'site', 'pid': 7, 'started': 1.0}
MANIFEST = {'format': rs.FORMAT, 'complete': True, 'files': {}}


def _lock(**change):
    return rs.parse(json.dumps(dict(LOCK, **change)).encode(), LOCK_PATH, rs._check_lock)


def _manifest(**change):
    return rs.parse(json.dumps(dict(MANIFEST, **change)).encode(), MANIFEST_PATH, rs._check_manifest)


def test_a_locks_pid_is_taken_up_to_linux_pid_max_limit_and_refused_one_past():
    # PID_MAX_LIMIT on 64-bit: 4 * 1024 * 1024 (the kernel's include/linux/threads.h)
    assert _lock(pid=4194304)['pid'] == 4194304 and _lock(pid=1)['pid'] == 1
    for bad in (4194305, 0):
        with pytest.raises(render.RenderError, match=r'^%s: pid is %d; not what this collection writes' % (LOCK_PATH, bad)):
            _lock(pid=bad)


def test_a_bookkeeping_list_holds_at_most_10000_entries():
    files = {'f%05d.yaml' % i: {'sha256': '0' * 64} for i in range(10001)}
    within = dict(list(files.items())[:10000])
    assert len(_manifest(files=within)['files']) == 10000
    with pytest.raises(render.RenderError, match=r'^%s: files has 10001 entries, more than a render writes \(10000\)'
                       % MANIFEST_PATH):
        _manifest(files=files)
    phases = ['p%d' % i for i in range(10001)]
    assert len(_lock(phases=phases[:10000])['phases']) == 10000
    with pytest.raises(render.RenderError, match=r'^%s: phases is ' % LOCK_PATH):
        _lock(phases=phases)


def test_a_locks_key_and_writer_are_taken_up_to_1024_characters_and_refused_one_past():
    entry = {'file': 'configmap-ns-a.yaml', 'object': {}}
    lock = _lock(objects={'k' * 1024: dict(entry, writer='w' * 1024, writers=['w' * 1024])})
    assert list(lock['objects']) == ['k' * 1024]
    with pytest.raises(render.RenderError, match=r'^%s: an entry of objects is ' % LOCK_PATH):
        _lock(objects={'k' * 1025: dict(entry, writer='w')})
    with pytest.raises(render.RenderError, match=r'^%s: objects\[k\]\.writer is ' % LOCK_PATH):
        _lock(objects={'k': dict(entry, writer='w' * 1025)})
    with pytest.raises(render.RenderError, match=r'^%s: objects\[k\]\.writers is ' % LOCK_PATH):
        _lock(objects={'k': dict(entry, writer='w', writers=['w' * 1025])})
    with pytest.raises(render.RenderError, match=r'^%s: objects\[k\]\.writer is \[\]' % LOCK_PATH):
        _lock(objects={'k': dict(entry, writer=[])})  # short, but no text


def test_a_recorded_time_is_taken_up_to_the_year_5138_and_refused_one_second_past():
    assert _manifest(finished=100000000000)['finished'] == 1e11 and _manifest(finished=1e11)['finished'] == 1e11
    assert _lock(started=1e11, updated=0)['started'] == 1e11
    for bad in (100000000001, 1e11 + 1):
        with pytest.raises(render.RenderError, match=r'^%s: finished is 100000000001' % MANIFEST_PATH):
            _manifest(finished=bad)


def test_a_manifest_of_a_newer_format_asks_for_an_upgrade_up_to_2_to_the_30th():
    assert _manifest(format=rs.FORMAT)['format'] == 3 == rs.FORMAT
    for newer in (4, 5, 1 << 30):
        with pytest.raises(render.RenderError, match=r'^%s has format %d, written by a newer version of this '
                                                     r'collection; upgrade the collection$' % (MANIFEST_PATH, newer)):
            _manifest(format=newer)
    for bad in ((1 << 30) + 1, 1 << 31, 0):
        with pytest.raises(render.RenderError, match=r'^%s: format is %d; not what this collection writes'
                                                     % (MANIFEST_PATH, bad)):
            _manifest(format=bad)


def test_a_recorded_files_phase_and_resource_are_refused_showing_the_value_recorded():
    good = {'sha256': '0' * 64, 'phase': 'kubevirt'}
    for resource in (True, False):
        assert _manifest(files={'a.yaml': dict(good, resource=resource)})['files']['a.yaml']['resource'] is resource
    with pytest.raises(render.RenderError, match=r"^%s: files\[a\.yaml\]\.phase is 'kube virt'; " % MANIFEST_PATH):
        _manifest(files={'a.yaml': dict(good, phase='kube virt')})
    with pytest.raises(render.RenderError, match=r"^%s: files\[a\.yaml\]\.resource is 'yes'; " % MANIFEST_PATH):
        _manifest(files={'a.yaml': dict(good, resource='yes')})
    with pytest.raises(render.RenderError, match=r"^%s: files\[a\.yaml\]\.resource is None; " % MANIFEST_PATH):
        _manifest(files={'a.yaml': dict(good, resource=None)})


def test_a_file_name_a_render_writes_is_at_most_251_characters():
    assert rs.valid_name('a' * 251) and rs.valid_name('a' * 246 + '.yaml')
    assert not rs.valid_name('a' * 252) and not rs.valid_name('a' * 247 + '.yaml')


def test_the_recipe_and_a_helm_values_file_are_prunable_by_their_own_grammar():
    # a role's words of 70 characters: no kind (at most 63) and a prefix longer than 63, so no object's name
    helm = '10-' + 'w' * 70 + '-helm-values-gpu-operator.yaml'
    assert not render.object_file_name(helm) and not render.object_file_name('UPGRADE.md')
    assert rs.prunable_name('UPGRADE.md') and rs.prunable_name(helm)
    for other in ('UPGRADE.txt', 'README.md', helm.replace('-helm-values-', '-helm-value-'),
                  helm.replace('10-', '1-', 1), rs.KUSTOMIZATION):
        assert not rs.prunable_name(other), other


def _check_token():
    return 'check-' + 'c' * 64


def test_a_check_mode_lock_is_in_its_private_directory_only_when_that_is_this_users_0700_directory(
        tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    token = _check_token()
    directory = tmp_path / (rs.CHECK_DIR_PREFIX + 'c' * 64)
    assert rs.lock_path('/r', token) is None  # no session directory: no lock
    directory.mkdir(mode=0o700)
    os.chmod(str(directory), 0o700)
    assert rs.lock_path('/r', token) == str(directory / rs.LOCK)
    assert rs.lock_path('/r', '0' * 64) == '/r/' + rs.LOCK  # a real run's lock is in the render directory
    os.chmod(str(directory), 0o750)
    with pytest.raises(render.RenderError, match=r'is not the private directory this check-mode run created'):
        rs.lock_path('/r', token)
    directory.rmdir()
    directory.write_text('')
    os.chmod(str(directory), 0o600)
    assert stat.S_ISREG(os.lstat(str(directory)).st_mode)
    with pytest.raises(render.RenderError, match=r'is not the private directory this check-mode run created'):
        rs.lock_path('/r', token)


def test_a_phase_is_taken_up_to_63_characters_of_its_grammar_and_refused_one_past_naming_it():
    for good in ('k' * 63, 'kubevirt', 'gpu_operator-2.x'):
        assert rs.check_phase(good) is None
    for bad in ('k' * 64, 'kube virt', 'kube/virt'):
        with pytest.raises(render.RenderError, match=r"^phase '%s' is not valid; expected at most 63 letters, digits, "
                                                     r'"\.", "_" and "-", such as kubevirt$' % bad):
            rs.check_phase(bad)


def test_a_locks_format_is_taken_from_1_to_the_current_and_refused_below_or_above_naming_it():
    for good in (1, rs.FORMAT):
        assert _lock(format=good)['format'] == good
    for bad in (0, rs.FORMAT + 1):
        with pytest.raises(render.RenderError, match=r'^%s: format is %d; not what this collection writes'
                                                     % (LOCK_PATH, bad)):
            _lock(format=bad)


def test_a_locks_depth_is_taken_from_0_to_1000_and_refused_one_past_either_way():
    for good in (0, 1, 1000):
        assert _lock(depth=good)['depth'] == good
    for bad in (-1, 1001):
        with pytest.raises(render.RenderError, match=r'^%s: depth is %d; not what this collection writes'
                                                     % (LOCK_PATH, bad)):
            _lock(depth=bad)


LOCK_OBJECT = {'file': 'configmap-ns-a.yaml', 'writer': 'w', 'object': {}}


def test_a_lock_entrys_phase_is_checked_by_the_phase_grammar_showing_the_value_recorded():
    # a files entry is kept under the name of its file: both kinds of entry under the key k
    for where, entry in (('objects', LOCK_OBJECT), ('files', {'file': 'k', 'writer': 'w', 'content': ''})):
        for good in ('k' * 63, None):
            assert _lock(**{where: {'k': dict(entry, phase=good)}})[where]['k']['phase'] == good
        for bad in ('k' * 64, 'kube virt'):
            with pytest.raises(render.RenderError, match=r"^%s: %s\[k\]\.phase is '%s'; not what this collection "
                                                         r'writes' % (LOCK_PATH, where, bad)):
                _lock(**{where: {'k': dict(entry, phase=bad)}})


def test_a_lock_entrys_mode_is_taken_from_0_to_0777_and_refused_one_past_either_way():
    for good in (0, 0o600, 0o777):
        assert _lock(objects={'k': dict(LOCK_OBJECT, mode=good)})['objects']['k']['mode'] == good
    for bad in (-1, 0o1000):
        with pytest.raises(render.RenderError, match=r'^%s: objects\[k\]\.mode is %d; not what this collection writes'
                                                     % (LOCK_PATH, bad)):
            _lock(objects={'k': dict(LOCK_OBJECT, mode=bad)})


def test_a_lock_files_entry_must_name_the_file_it_is_kept_under_showing_the_name_recorded():
    entry = {'file': 'a.yaml', 'writer': 'w', 'content': ''}
    assert _lock(files={'a.yaml': entry})['files']['a.yaml']['file'] == 'a.yaml'
    with pytest.raises(render.RenderError, match=r"^%s: files\[b\.yaml\]\.file is 'a\.yaml'; not what this "
                                                 r'collection writes' % LOCK_PATH):
        _lock(files={'b.yaml': entry})


def test_a_lock_entrys_writers_are_taken_up_to_10000_and_refused_one_past():
    writers = ['w%d' % i for i in range(10001)]
    assert len(_lock(objects={'k': dict(LOCK_OBJECT, writers=writers[:10000])})['objects']['k']['writers']) == 10000
    with pytest.raises(render.RenderError, match=r"^%s: objects\[k\]\.writers is \['w0', " % LOCK_PATH):
        _lock(objects={'k': dict(LOCK_OBJECT, writers=writers)})


def test_what_a_locks_close_is_writing_is_recorded_with_its_sha256_never_an_empty_one():
    # an empty sha256 is a format 1 manifest's only: the lock's ``writing`` is format 2's, always hashed
    assert _manifest(format=1, files={'a.yaml': {'sha256': ''}})['files']['a.yaml']['sha256'] == ''
    assert _lock(writing={'a.yaml': {'sha256': '0' * 64}})['writing']['a.yaml']['sha256'] == '0' * 64
    with pytest.raises(render.RenderError, match=r"^%s: writing\[a\.yaml\]\.sha256 is ''; not what this collection "
                                                 r'writes' % LOCK_PATH):
        _lock(writing={'a.yaml': {'sha256': ''}})


@pytest.mark.parametrize('where', ['flux', 'writing_flux'])
def test_a_recorded_flux_kustomization_is_a_group_directory_of_the_render_with_its_sha256(where):
    parse = _manifest if where == 'flux' else _lock
    path = MANIFEST_PATH if where == 'flux' else LOCK_PATH
    assert parse(**{where: {'flux-1-nodes': '0' * 64}})[where] == {'flux-1-nodes': '0' * 64}
    with pytest.raises(render.RenderError, match=r"^%s: a directory in %s is 'flux-0-other'; not what this "
                                                 r'collection writes' % (path, where)):
        parse(**{where: {'flux-0-other': '0' * 64}})
    for bad in ('0' * 63, 'x', 'sha256:' + '0' * 64):
        with pytest.raises(render.RenderError, match=r"^%s: %s\[flux-1-nodes\] is '%s'; not what this collection "
                                                     r'writes' % (path, where, bad)):
            parse(**{where: {'flux-1-nodes': bad}})
