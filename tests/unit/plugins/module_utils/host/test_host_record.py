# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ownership record (host_record) and the decisions read from it (cmdline_owned): the record is host data, so
the parser is driven with arbitrary bytes and JSON (it never raises, and a malformed kind takes back nothing), the
writer never follows a link, and each remove/keep decision is checked both ways."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import cmdline_owned as owned
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record as hr
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc

GOOD = {'version': 1, 'kernel_args': {'grub_default': ['intel_iommu=on', 'iommu=pt']},
        'files': {'kernel_args': ['/etc/default/grub.d/90-gpuvirt-kernel-args.cfg']}}


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / 'var' / 'lib' / 'gpuvirt-provision' / 'host-state.json')


def _bytes(value):
    return json.dumps(value).encode()


def test_a_sound_record_parses_to_itself():
    record, problems = hr.parse(_bytes(GOOD))
    assert problems == {} and record == GOOD


def test_no_record_is_an_empty_one():
    assert hr.parse(None) == (hr.empty(), {})


@pytest.mark.parametrize('value, kind', [
    # an argument the collection never adds is no reason to remove it: the kind is malformed
    (dict(GOOD, kernel_args={'grub_default': ['root=/dev/sda1']}), 'kernel_args'),
    (dict(GOOD, kernel_args={'grub_default': ['systemd.unit=rescue.target']}), 'kernel_args'),
    (dict(GOOD, kernel_args={'grub_default': ['intel_iommu=on', 'intel_iommu=on']}), 'kernel_args'),
    (dict(GOOD, kernel_args={'lilo': ['iommu=pt']}), 'kernel_args'),
    (dict(GOOD, kernel_args={'grub_default': 'iommu=pt'}), 'kernel_args'),
    (dict(GOOD, files={'kernel_args': ['../etc/shadow']}), 'files'),
    (dict(GOOD, files={'kernel_args': ['/etc/../shadow']}), 'files'),
    (dict(GOOD, files={'nouveau': ['/etc/modprobe.d/x.conf']}), 'files'),
])
def test_a_malformed_kind_is_none_and_says_why_the_others_stay(value, kind):
    record, problems = hr.parse(_bytes(value))
    assert record[kind] is None and set(problems) == {kind}, (record, problems)
    other = 'files' if kind == 'kernel_args' else 'kernel_args'
    assert record[other] == GOOD[other]


@pytest.mark.parametrize('data', [b'', b'not json', b'[]', b'{"version": 2}', b'{"version": true}',
                                  b'{"version": 1, "extra": 1}', b'\xff\xfe', b'{' * 100000])
def test_a_record_that_is_not_ours_leaves_every_kind_none(data):
    record, problems = hr.parse(data)
    assert record['kernel_args'] is None and record['files'] is None
    assert set(problems) == {'kernel_args', 'files'}


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=512))
def test_any_bytes_parse_without_raising(data):
    record, problems = hr.parse(data)
    assert set(record) == {'version', 'kernel_args', 'files'}
    for kind in ('kernel_args', 'files'):
        assert (record[kind] is None) == (kind in problems)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda inner: (st.lists(inner, max_size=4)
                                    | st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({'version': st.just(1)}, optional={
    'kernel_args': st.dictionaries(st.sampled_from(hr.BACKENDS + ('other',)), _JSON, max_size=3),
    'files': _JSON}))
def test_any_json_record_parses_without_raising_and_only_allowed_args_survive(value):
    record, problems = hr.parse(_bytes(value))
    for args in (record['kernel_args'] or {}).values():
        kc.validate_args(args)  # every argument a survivor lists is one the collection could have added


_ARG = st.sampled_from(['intel_iommu=on', 'amd_iommu=on', 'iommu=pt', 'vfio-pci.ids=10de:2236', 'quiet',
                        'pcie_acs_override=downstream', 'hugepages=16'])


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(hr.BACKENDS), st.lists(_ARG, unique=True, min_size=1, max_size=5)),
       st.lists(st.sampled_from(['/etc/default/grub.d/90-gpuvirt-kernel-args.cfg', '/etc/x.conf']), unique=True))
def test_render_then_parse_is_the_identity(args, files):
    record = hr.with_files(dict(hr.empty(), kernel_args=args), 'kernel_args', files)
    back, problems = hr.parse(hr.render(record))
    assert problems == {} and back == record


def test_write_is_atomic_0644_and_read_back(path):
    hr.write(path, GOOD)
    st_ = os.lstat(path)
    assert stat.S_IMODE(st_.st_mode) == 0o644 and stat.S_ISREG(st_.st_mode)
    assert hr.read(path) == (GOOD, {})
    assert os.listdir(os.path.dirname(path)) == ['host-state.json']  # no temporary file left


def test_write_never_follows_a_link(path, tmp_path):
    os.makedirs(os.path.dirname(path))
    victim = tmp_path / 'victim'
    victim.write_text('keep')
    os.symlink(str(victim), path)
    with pytest.raises(hr.RecordError, match='symbolic link'):
        hr.write(path, GOOD)
    assert victim.read_text() == 'keep'
    # a planted temporary name is refused too
    os.unlink(path)
    os.symlink(str(victim), os.path.join(os.path.dirname(path), '.host-state.json.gpuvirt-tmp'))
    with pytest.raises(hr.RecordError, match='in the way'):
        hr.write(path, GOOD)
    assert victim.read_text() == 'keep'


def test_a_linked_record_is_read_as_no_record_of_any_kind(path, tmp_path):
    os.makedirs(os.path.dirname(path))
    elsewhere = tmp_path / 'elsewhere.json'
    elsewhere.write_bytes(_bytes(GOOD))
    os.symlink(str(elsewhere), path)
    record, problems = hr.read(path)
    assert record['kernel_args'] is None and 'symbolic link' in problems['kernel_args']


@pytest.mark.parametrize('bad', ['relative/gpuvirt-provision/x.json', '/var/lib/other/host-state.json',
                                 '/var/lib/gpuvirt-provision/../x.json', '/var/lib/gpuvirt-provision/x.txt',
                                 '/var/lib/gpuvirt-provision//x.json', None])
def test_a_record_path_elsewhere_is_refused_naming_it(bad):
    with pytest.raises(hr.RecordError, match='record_path'):
        hr.check_path(bad)


# --- the decisions ------------------------------------------------------------------------------------------------

def test_an_argument_there_before_is_not_ours():
    assert owned.added(['ro', 'intel_iommu=on'], ['intel_iommu=on', 'iommu=pt']) == ['iommu=pt']


def test_the_record_keeps_what_it_had_and_drops_what_the_boot_loader_lost():
    # iommu=pt was recorded earlier and is still there: still ours (a later run sees it "there before")
    assert owned.owned_after(['iommu=pt', 'gone=1'], ['intel_iommu=on'], ['intel_iommu=on', 'iommu=pt']) == [
        'iommu=pt', 'intel_iommu=on']


@pytest.mark.parametrize('linux, default, remove, kept', [
    (['rhgb', 'intel_iommu=on', 'iommu=pt'], [], ['intel_iommu=on', 'iommu=pt'], []),
    # the administrator carries iommu=pt in the appended variable too: kept
    (['rhgb', 'intel_iommu=on', 'iommu=pt'], ['quiet', 'iommu=pt'], ['intel_iommu=on'], ['iommu=pt']),
    # an appended variable the editor cannot read: nothing can be said, everything kept
    (['intel_iommu=on', 'iommu=pt'], None, [], ['intel_iommu=on', 'iommu=pt']),
])
def test_grub_default_removal_takes_only_recorded_arguments_from_the_variable_we_edit(linux, default, remove, kept):
    got_remove, got_kept, gone = owned.grub_default_removal(['intel_iommu=on', 'iommu=pt'], linux, default)
    assert got_remove == remove and [k['arg'] for k in got_kept] == kept and gone == []


def test_an_unrecorded_argument_is_never_removed():
    remove, kept, gone = owned.grub_default_removal(['iommu=pt'], ['intel_iommu=on', 'iommu=pt'], [])
    assert remove == ['iommu=pt']
    assert owned.grub_default_removal([], ['intel_iommu=on'], []) == ([], [], [])


def test_grub_default_args_reads_both_variables():
    text = 'GRUB_CMDLINE_LINUX="rhgb intel_iommu=on"\nGRUB_CMDLINE_LINUX_DEFAULT="quiet iommu=pt"\n'
    assert owned.grub_default_args(text) == (['rhgb', 'intel_iommu=on'], ['quiet', 'iommu=pt'])
    computed = 'GRUB_CMDLINE_LINUX="rhgb"\nGRUB_CMDLINE_LINUX_DEFAULT="$(cat /x)"\n'
    assert owned.grub_default_args(computed) == (['rhgb'], None)


def test_grubby_removal_and_after():
    entries = [{'kernel': 'a', 'args': ['ro', 'intel_iommu=on']}, {'kernel': 'b', 'args': ['ro']}]
    assert owned.grubby_removal(['intel_iommu=on', 'iommu=pt'], entries) == (['intel_iommu=on'], [], ['iommu=pt'])
    assert owned.grubby_after(entries, ['iommu=pt'], ['ro']) == ['intel_iommu=on', 'iommu=pt']
    # an argument some entry had before is not ours
    assert owned.added(owned.grubby_args(entries), ['intel_iommu=on', 'iommu=pt']) == ['iommu=pt']


def test_the_drop_in_is_ours_only_with_the_header():
    ours = kc.render_grub_dropin(['intel_iommu=on', 'iommu=pt'], []).encode()
    assert owned.dropin_is_ours(ours) and owned.dropin_args(ours) == ['intel_iommu=on', 'iommu=pt']
    assert not owned.dropin_is_ours(b'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX intel_iommu=on"\n')
    assert not owned.dropin_is_ours(b'# ' + ours)


def test_a_reboot_is_pending_only_for_removed_arguments_the_kernel_still_runs_and_nobody_keeps():
    running = ['ro', 'intel_iommu=on', 'iommu=pt']
    assert owned.still_running(['intel_iommu=on', 'iommu=pt'], running) == ['intel_iommu=on', 'iommu=pt']
    assert owned.still_running(['intel_iommu=on', 'iommu=pt'], running, ['intel_iommu=on']) == ['iommu=pt']
    assert owned.still_running(['iommu=pt'], ['ro']) == []


# A bare flag the collection added (kernel_args_ensure: [nosmt]) beside the administrator's own value of that name.
# Both removers match a bare name with any value: grubby's --remove-args (rhboot/grubby grubby.c updateActualImage,
# argNameMatch / argHasValue) and the grub defaults editor's patterns (kernel_cmdline.matches). Taking the bare flag
# back would take the administrator's argument too: it is kept, named, and stays recorded.
@pytest.mark.parametrize('linux, default', [
    (['nosmt', 'nosmt=force'], []),
    (['nosmt'], ['quiet', 'nosmt=force']),
])
def test_a_bare_flag_whose_name_the_file_carries_with_a_value_is_kept(linux, default):
    remove, kept, gone = owned.grub_default_removal(['nosmt', 'iommu=pt'], linux + ['iommu=pt'], default)
    assert remove == ['iommu=pt'] and gone == []
    assert [k['arg'] for k in kept] == ['nosmt'] and 'nosmt=...' in kept[0]['reason'], kept


def test_a_bare_flag_alone_goes_and_a_valued_argument_never_blocks_on_its_own_name():
    assert owned.grub_default_removal(['nosmt'], ['nosmt', 'quiet'], [])[0] == ['nosmt']
    # iommu=pt is removed exactly (a pattern with a value matches only that value): another iommu= is no reason
    assert owned.grub_default_removal(['iommu=pt'], ['iommu=pt', 'iommu=on'], [])[0] == ['iommu=pt']


def test_grubby_keeps_a_bare_flag_some_entry_carries_with_a_value():
    entries = [{'kernel': 'a', 'args': ['ro', 'nosmt', 'iommu=pt']}, {'kernel': 'b', 'args': ['ro', 'nosmt=force']}]
    remove, kept, gone = owned.grubby_removal(['nosmt', 'iommu=pt', 'gone=1'], entries)
    assert remove == ['iommu=pt'] and [k['arg'] for k in kept] == ['nosmt'] and gone == ['gone=1']
    assert 'a boot entry' in kept[0]['reason']
