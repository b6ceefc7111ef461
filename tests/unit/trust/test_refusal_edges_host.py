# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The edges of the host writers' and takers-back's refusals (docs/security.md: "the ownership record", "File
deletion and writes"): each bound taken at its value and refused one past it, each check refusing exactly what it
names while its valid neighbour passes, and each step that reads or removes a file judged again when the file is
changed between the check and that step. These are the cases the mutation scope trust-host
(tools/mutation/scopes.json) found no test pinning.

A change "between two steps" is made by wrapping the one os call the code makes first (lstat, stat, makedirs) so
that it changes the real file right after (or before) it answers: the moment another process could act, taken
deterministically. Every file and directory is real, under tmp_path."""
from __future__ import annotations

import errno
import json
import os
import re
import threading

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record, owned_files, sysfs
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vfio_files_absent as vfa

HEADER = '# Managed by gpuvirt.provision (nouveau role).'
MIB = 1 << 20
RECORD = {'version': 1, 'kernel_args': {'grubby': ['intel_iommu=on']}, 'files': {}}


def _on_call(monkeypatch, name, path, action, call=1, before=False):
    """os.<name> answers as it does, but its ``call``-th look at ``path`` (by name: the code may look relative to a
    directory's descriptor) runs ``action`` right after it answers, or right before with ``before``."""
    real = getattr(os, name)
    seen = []

    def wrapped(target, *args, **kwargs):
        mine = not isinstance(target, int) and os.path.basename(os.fsdecode(target)) == os.path.basename(str(path))
        if mine:
            seen.append(target)
        if mine and before and len(seen) == call:
            action()
        result = real(target, *args, **kwargs)
        if mine and not before and len(seen) == call:
            action()
        return result
    monkeypatch.setattr(os, name, wrapped)
    return seen


def _unblocked(fifo, call):
    """``(blocked, result)`` of ``call()`` run in a thread. A call still inside it after 10 s (an open of the FIFO
    ``fifo`` waiting for a writer) is released by opening the FIFO's writing end once, and counts as blocked."""
    out = {}

    def run():
        try:
            out['result'] = call()
        except Exception as e:  # pylint: disable=broad-except
            out['error'] = e
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    blocked = worker.is_alive()
    if blocked:
        os.close(os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
    if 'error' in out:
        raise out['error']
    return blocked, out.get('result')


def _swap_for_fifo(path):
    def action():
        os.unlink(str(path))
        os.mkfifo(str(path))
    return action


# --- the ownership record (host_record) ---

@pytest.fixture
def record_path(tmp_path):
    directory = tmp_path / 'gpuvirt-provision'
    directory.mkdir()
    return directory / 'host-state.json'


def test_a_record_of_another_version_is_refused_naming_the_version_it_has():
    assert host_record.parse(json.dumps(RECORD).encode()) == (RECORD, {})
    record, problems = host_record.parse(json.dumps(dict(RECORD, version=2)).encode())
    assert record['kernel_args'] is None and record['files'] is None
    assert problems['kernel_args'] == 'the record is not a record of this collection (version is 2, expected 1)'


@pytest.mark.parametrize('length', [200, 201])
def test_why_a_record_is_not_ours_is_shown_up_to_200_characters(length):
    # "unknown key 'k...'" is 14 characters and the key's
    key = 'k' * (length - 14)
    record, problems = host_record.parse(json.dumps(dict(RECORD, **{key: 1})).encode())
    reason = "unknown key '%s'" % key
    assert len(reason) == length and record['kernel_args'] is None
    assert problems['kernel_args'] == 'the record is not a record of this collection (%s)' % reason[:200]
    assert problems['kernel_args'].endswith("')" if length == 200 else "k)")


@pytest.mark.parametrize('length', [300, 301])
def test_why_a_kind_is_malformed_is_shown_up_to_300_characters_and_the_other_kind_stays(length):
    frame = "files has the unknown key '%s' (expected some of kernel_args)"
    key = 'k' * (length - len(frame % ''))
    record, problems = host_record.parse(json.dumps(dict(RECORD, files={key: []})).encode())
    reason = frame % key
    assert len(reason) == length
    assert record['files'] is None and record['kernel_args'] == RECORD['kernel_args']
    assert problems == {'files': reason[:300]}
    assert problems['files'].endswith(')' if length == 300 else 'kernel_args')


def test_a_record_swapped_for_a_link_after_its_lstat_is_not_read_through_it(monkeypatch, record_path, tmp_path):
    elsewhere = tmp_path / 'elsewhere.json'
    elsewhere.write_text(json.dumps(RECORD))
    record_path.write_text(json.dumps(dict(RECORD, kernel_args={'grubby': ['iommu=pt']})))
    assert host_record.read(str(record_path))[0]['kernel_args'] == {'grubby': ['iommu=pt']}

    def swap():
        record_path.unlink()
        record_path.symlink_to(elsewhere)
    _on_call(monkeypatch, 'lstat', record_path, swap)
    record, problems = host_record.read(str(record_path))
    assert record['kernel_args'] is None and record['files'] is None
    assert problems['kernel_args'] == 'the record cannot be read (%s)' % os.strerror(errno.ELOOP)


def test_a_record_swapped_for_a_fifo_after_its_lstat_is_read_without_waiting_for_a_writer(monkeypatch, record_path):
    record_path.write_text(json.dumps(RECORD))
    _on_call(monkeypatch, 'lstat', record_path, _swap_for_fifo(record_path))
    blocked, (record, problems) = _unblocked(record_path, lambda: host_record.read(str(record_path)))
    assert not blocked, 'the read waited for a writer to open the FIFO'
    assert record['kernel_args'] is None and problems['kernel_args'].startswith(
        'the record is not a record of this collection (')


def test_a_record_that_grows_past_64_kib_after_its_lstat_is_refused(monkeypatch, record_path):
    data = json.dumps(RECORD).encode()
    data += b' ' * (host_record.MAX_BYTES - len(data))
    record_path.write_bytes(data)
    assert host_record.read(str(record_path)) == (RECORD, {})  # 64 KiB exactly: read whole

    def grow():
        with open(str(record_path), 'ab') as f:
            f.write(b' ')
    _on_call(monkeypatch, 'lstat', record_path, grow)
    record, problems = host_record.read(str(record_path))
    assert record['kernel_args'] is None
    assert problems['kernel_args'] == 'the record is not a record of this collection (larger than 65536 bytes)'


def test_a_record_directory_made_and_then_swapped_for_a_link_is_never_written_through(monkeypatch, record_path,
                                                                                      tmp_path):
    directory = str(record_path.parent)
    os.rmdir(directory)
    host_record.write(str(record_path), RECORD)  # the directory made, the record written
    assert host_record.read(str(record_path)) == (RECORD, {})
    os.unlink(str(record_path))
    os.rmdir(directory)
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    real_makedirs = os.makedirs

    def makedirs_then_swap(name, *args, **kwargs):
        real_makedirs(name, *args, **kwargs)
        os.rmdir(name)
        os.symlink(str(elsewhere), name)
    monkeypatch.setattr(os, 'makedirs', makedirs_then_swap)
    with pytest.raises(host_record.RecordError,
                       match='^%s is not a directory: refusing to write the record there$' % re.escape(directory)):
        host_record.write(str(record_path), RECORD)
    assert os.listdir(str(elsewhere)) == []


def test_a_regular_temporary_file_left_behind_is_replaced_and_anything_else_there_is_refused(record_path):
    tmp = record_path.parent / '.host-state.json.gpuvirt-tmp'
    tmp.write_text('an interrupted write')
    host_record.write(str(record_path), RECORD)
    assert host_record.read(str(record_path)) == (RECORD, {}) and not tmp.exists()
    tmp.mkdir()
    in_the_way = '^%s is in the way and is not a regular file: remove it$' % re.escape(str(tmp))
    with pytest.raises(host_record.RecordError, match=in_the_way):
        host_record.write(str(record_path), dict(RECORD, kernel_args={}))
    assert host_record.read(str(record_path)) == (RECORD, {}) and tmp.is_dir()


# --- taking back a file (owned_files) ---

@pytest.fixture
def base(tmp_path):
    # pytest's own directories are 0700 and root's; the tree under test is made like /etc's
    root = tmp_path / 'root'
    root.mkdir(mode=0o755)
    return root


def test_a_file_is_taken_back_up_to_1_mib_by_default_and_kept_one_byte_past(base):
    path = base / 'blacklist.conf'
    head = (HEADER + '\n').encode()
    path.write_bytes(head + b'#' * (MIB - len(head)))
    assert owned_files.take_back(str(path), HEADER, 1) == (True, None) and not path.exists()
    path.write_bytes(head + b'#' * (MIB + 1 - len(head)))
    assert owned_files.take_back(str(path), HEADER, 1) == (False, 'larger than any file we write (1048577 bytes)')
    assert path.exists()


def test_a_file_is_taken_back_at_its_given_max_bytes_and_kept_one_byte_past(base):
    path = base / 'blacklist.conf'
    data = HEADER + '\nblacklist nouveau\n'
    path.write_text(data)
    assert owned_files.take_back(str(path), HEADER, 1, max_bytes=len(data)) == (True, None) and not path.exists()
    path.write_text(data)
    assert owned_files.take_back(str(path), HEADER, 1, max_bytes=len(data) - 1) == (
        False, 'larger than any file we write (%d bytes)' % len(data))
    assert path.read_text() == data


def test_the_marker_line_is_1_to_8_or_0_and_never_a_boolean(base):
    assert [owned_files.checked_line(n) for n in (0, 1, 8)] == [0, 1, 8]
    for bad in (9, -1, True, False, '1'):
        with pytest.raises(owned_files.OwnedFilesError, match=r'^line is %s: give 0 \(anywhere\) or 1 to 8$'
                           % (repr(bad).replace('(', r'\('))):
            owned_files.checked_line(bad)
    # the eighth line, the last one a header may be on
    path = base / 'restore'
    path.write_text('#\n' * 7 + HEADER + '\n')
    assert owned_files.take_back(str(path), HEADER, 8) == (True, None) and not path.exists()


@pytest.mark.parametrize('marker', ['m' * 8, 'm' * 128, 'a marker', '~' * 8, ' ' * 8])
def test_a_marker_of_8_to_128_printable_characters_is_taken(marker):
    assert owned_files.checked_marker(marker) == marker


@pytest.mark.parametrize('marker', ['m' * 7, 'm' * 129, 'm' * 7 + '\x1f', 'm' * 7 + '\x7f', 'm' * 7 + '\x80', 8])
def test_a_marker_shorter_longer_or_with_a_control_character_is_refused_naming_it(marker):
    with pytest.raises(owned_files.OwnedFilesError) as raised:
        owned_files.checked_marker(marker)
    assert str(raised.value) == 'marker %r is not 8 to 128 printable ASCII characters' % (marker,)


def test_a_marker_on_the_last_line_without_a_newline_is_found(base):
    path = base / 'restore'
    path.write_text('#!/bin/sh\n' + HEADER)
    assert owned_files.take_back(str(path), HEADER, 2) == (True, None) and not path.exists()
    # a file shorter than the marker's line does not carry it
    path.write_text(HEADER)
    assert owned_files.take_back(str(path), HEADER, 2) == (False, 'no gpuvirt.provision header')
    assert path.exists()


def test_by_default_the_marker_may_be_anywhere_and_the_file_is_removed(base):
    path = base / 'persist.json'
    path.write_text('{\n  "note": "%s"\n}\n' % HEADER)
    assert owned_files.take_back(str(path), HEADER) == (True, None) and not path.exists()
    path.write_text('{\n  "note": "someone else\'s"\n}\n')
    assert owned_files.take_back(str(path), HEADER) == (False, 'no gpuvirt.provision marker')
    assert path.exists()


def test_a_directory_on_the_way_that_is_a_file_is_named_and_the_path_left_alone(base):
    plain = base / 'modprobe.d'
    plain.write_text(HEADER + '\n')
    assert owned_files.take_back(str(plain / 'blacklist.conf'), HEADER, 1) == (
        False, '%s is a symbolic link or not a directory' % plain)
    assert plain.read_text() == HEADER + '\n'
    real = base / 'real'
    real.mkdir(mode=0o755)
    (real / 'blacklist.conf').write_text(HEADER + '\n')
    assert owned_files.take_back(str(real / 'blacklist.conf'), HEADER, 1) == (True, None)


def test_an_untrusted_directory_is_named_by_its_whole_path(base):
    shared = base / 'shared'
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    (shared / 'blacklist.conf').write_text(HEADER + '\n')
    assert owned_files.take_back(str(shared / 'blacklist.conf'), HEADER, 1) == (
        False, 'its directory %s is group- or world-writable (mode 0777): left alone' % shared)
    assert (shared / 'blacklist.conf').exists()


def _in_chroot(root, call):
    """``repr(call())`` (or of what it raised) in a child process whose ``/`` is ``root``: the real ``/`` cannot
    be made untrusted, a directory of the test's own can be made the ``/`` of one process (chroot, as root)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(read)
            os.chroot(str(root))
            os.chdir('/')
            out = repr(call())
        except BaseException as e:  # pylint: disable=broad-except
            out = 'raised %r' % (e,)
        os.write(write, out.encode())
        os._exit(0)  # pylint: disable=protected-access
    os.close(write)
    with os.fdopen(read, 'rb') as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out


@pytest.mark.parametrize('mode, result', [
    (0o777, (False, 'its directory / is group- or world-writable (mode 0777): left alone')),
    (0o755, (True, None)),
])
def test_an_untrusted_root_directory_is_named_as_slash(base, mode, result):
    os.chmod(str(base), mode)
    (base / 'blacklist.conf').write_text(HEADER + '\n')
    assert _in_chroot(base, lambda: owned_files.take_back('/blacklist.conf', HEADER, 1)) == repr(result)
    assert (base / 'blacklist.conf').exists() is (not result[0])


def test_a_dangling_link_or_a_link_to_a_directory_is_kept_as_a_link(base):
    dangling, to_dir = base / 'dangling.conf', base / 'to_dir.conf'
    dangling.symlink_to(base / 'absent.conf')
    to_dir.symlink_to(base)
    for link in (dangling, to_dir):
        assert owned_files.take_back(str(link), HEADER, 1) == (False, 'a symbolic link, not a file we wrote')
        assert link.is_symlink()


def _swap_for_link(path, moved):
    """What makes ``path`` a link to ``moved`` (its file renamed there), to run between two of the code's calls."""
    def swap():
        os.rename(str(path), str(moved))
        path.symlink_to(moved)
    return swap


def test_a_file_swapped_for_a_link_to_it_after_its_lstat_is_not_opened_through_it(monkeypatch, base):
    path, moved = base / 'blacklist.conf', base / 'moved.conf'
    path.write_text(HEADER + '\n')
    _on_call(monkeypatch, 'stat', path, _swap_for_link(path, moved))
    assert owned_files.take_back(str(path), HEADER, 1) == (False, 'a symbolic link, not a file we wrote')
    assert path.is_symlink() and moved.read_text() == HEADER + '\n'


def test_a_file_gone_after_its_lstat_is_nothing_there(monkeypatch, base):
    path = base / 'blacklist.conf'
    path.write_text(HEADER + '\n')
    _on_call(monkeypatch, 'stat', path, path.unlink)
    assert owned_files.take_back(str(path), HEADER, 1) == (False, None)


def test_a_file_swapped_for_a_fifo_after_its_lstat_is_judged_without_waiting_for_a_writer(monkeypatch, base):
    path = base / 'blacklist.conf'
    path.write_text(HEADER + '\n')
    _on_call(monkeypatch, 'stat', path, _swap_for_fifo(path))
    blocked, result = _unblocked(path, lambda: owned_files.take_back(str(path), HEADER, 1))
    assert not blocked, 'the open waited for a writer to open the FIFO'
    assert result == (False, 'replaced while it was read: left alone') and path.exists()


def test_a_file_replaced_by_another_of_ours_after_its_lstat_is_left_alone(monkeypatch, base):
    path, other = base / 'blacklist.conf', base / 'other.conf'
    path.write_text(HEADER + '\n')
    other.write_text(HEADER + '\nanother file\n')
    _on_call(monkeypatch, 'stat', path, lambda: os.replace(str(other), str(path)))
    assert owned_files.take_back(str(path), HEADER, 1) == (False, 'replaced while it was read: left alone')
    assert path.read_text() == HEADER + '\nanother file\n'


def test_a_file_that_grows_past_max_bytes_after_its_lstat_is_left_alone(monkeypatch, base):
    path = base / 'blacklist.conf'
    data = HEADER + '\nblacklist nouveau\n'
    path.write_text(data)

    def grow():
        with open(str(path), 'a') as f:
            f.write('#')
    _on_call(monkeypatch, 'stat', path, grow)
    assert owned_files.take_back(str(path), HEADER, 1, max_bytes=len(data)) == (
        False, 'larger than any file we write')
    assert path.read_text() == data + '#'


def test_a_file_swapped_for_a_link_to_it_before_the_removal_is_left_alone(monkeypatch, base):
    path, moved = base / 'blacklist.conf', base / 'moved.conf'
    path.write_text(HEADER + '\n')
    _on_call(monkeypatch, 'stat', path, _swap_for_link(path, moved), call=2, before=True)
    assert owned_files.take_back(str(path), HEADER, 1) == (False, 'replaced while it was read: left alone')
    assert path.is_symlink() and moved.read_text() == HEADER + '\n'


# --- the vfio role's files (vfio_files_absent) ---

VFIO = vfa.HEADER + '\noptions vfio-pci ids=10de:2236\n'


def test_a_vfio_file_is_read_up_to_1_mib_and_kept_one_byte_past(tmp_path):
    path = tmp_path / 'gpuvirt-vfio.conf'
    path.write_text(VFIO + '#' * (MIB - len(VFIO)))
    text, reason = vfa.read_regular(str(path))
    assert reason is None and len(text) == MIB and vfa.is_ours(text)
    path.write_text(VFIO + '#' * (MIB + 1 - len(VFIO)))
    assert vfa.read_regular(str(path)) == (None, 'larger than any file we write (1048577 bytes)')


def test_a_vfio_file_that_grows_past_1_mib_after_its_lstat_is_kept(monkeypatch, tmp_path):
    path = tmp_path / 'modules'
    path.write_text(VFIO + '#' * (MIB - len(VFIO)))

    def grow():
        with open(str(path), 'a') as f:
            f.write('#')
    _on_call(monkeypatch, 'lstat', path, grow)
    assert vfa.read_regular(str(path)) == (None, 'larger than any file we write')


def test_a_vfio_file_swapped_for_a_link_after_its_lstat_is_not_read_through_it(monkeypatch, tmp_path):
    path, elsewhere = tmp_path / 'gpuvirt-vfio.conf', tmp_path / 'elsewhere.conf'
    path.write_text('options vfio-pci ids=10de:2236\n')
    elsewhere.write_text(VFIO)
    assert vfa.read_regular(str(path)) == ('options vfio-pci ids=10de:2236\n', None)

    def swap():
        path.unlink()
        path.symlink_to(elsewhere)
    _on_call(monkeypatch, 'lstat', path, swap)
    # the module fails naming the error (its OSError branch) rather than judge the link's target
    with pytest.raises(OSError) as raised:
        vfa.read_regular(str(path))
    assert raised.value.errno == errno.ELOOP


def test_a_vfio_file_swapped_for_a_fifo_after_its_lstat_is_kept_without_waiting(monkeypatch, tmp_path):
    path = tmp_path / 'gpuvirt-vfio.conf'
    path.write_text(VFIO)
    _on_call(monkeypatch, 'lstat', path, _swap_for_fifo(path))
    blocked, result = _unblocked(path, lambda: vfa.read_regular(str(path)))
    assert not blocked, 'the open waited for a writer to open the FIFO'
    assert result == (None, 'not a regular file')


def test_markers_are_one_begin_then_one_end_and_an_end_alone_is_edited():
    assert vfa.without_block('raid1\n') == ('raid1\n', None)
    for text, counts in (('raid1\n# END gpuvirt.provision vfio\n', '(0 BEGIN, 1 END)'),
                         ('raid1\n# BEGIN gpuvirt.provision vfio\n', '(1 BEGIN, 0 END)')):
        new, reason = vfa.without_block(text)
        assert new is None and counts in reason and reason.endswith('edited by hand, left alone')


def test_the_block_goes_and_every_line_after_it_stays():
    block = '%s\nvfio\nvfio_pci\n%s\n' % (vfa.BLOCK_BEGIN, vfa.BLOCK_END)
    assert vfa.without_block('raid1\n' + block + 'dm_crypt\nnvme\n') == ('raid1\ndm_crypt\nnvme\n', None)
    assert vfa.without_block(block + 'nvme\n') == ('nvme\n', None)


def test_a_vmi_of_another_shape_is_skipped_and_the_vmis_after_it_still_count():
    on_node = {'metadata': {'name': 'a', 'namespace': 'vms'}, 'status': {'nodeName': 'node-1'}}
    assert vfa.vmis_on_node([on_node], 'node-1') == ['vms/a']
    assert vfa.vmis_on_node(['not a vmi', {'status': ['not', 'a', 'status']}, on_node], 'node-1') == ['vms/a']


# --- the kernel trees' one reader (sysfs) ---

@pytest.mark.parametrize('size, read', [(MIB + 1, MIB + 1), (MIB + 2, MIB + 1), (2 * MIB, MIB + 1)])
def test_a_kernel_tree_file_is_read_up_to_1_mib_and_one_byte_past_it_never_more(tmp_path, size, read):
    # 1 MiB is 16 reads of 64 KiB: the byte past the limit is a read of its own
    path = tmp_path / 'creatable_vgpu_types'
    path.write_bytes(b'x' * size)
    assert sysfs.read_bytes(str(path)) == b'x' * read
    assert len(sysfs.read_text(str(path), ValueError)) == read
