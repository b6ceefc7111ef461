# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu_vf_profiles against a stand-in that behaves like the driver (tests/unit/vf_driver.py): creatable lists
shrink, a refused id fails with an errno, 0 removes. Planning is deterministic, idempotent, refuses before the
first change and names what it refuses."""
from __future__ import annotations

import errno
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp

from vf_driver import VfBoard

PF = '0000:41:00.0'
VFS = ['0000:41:00.4', '0000:41:00.5', '0000:41:00.6', '0000:41:00.7']


def _plan(board, config, **kw):
    known = kw.pop('known', None)
    plans = vvp.plan(board.root, vvp.check_inputs(config, kw.get('gpus'), kw.get('state', 'present')),
                     proc=kw.pop('proc', None), sriov_manage=kw.pop('sriov_manage', '/nonexistent/sriov-manage'),
                     known=known, **kw)
    return vvp.finish_plan(board.root, plans, board.run, kw.get('state', 'present'), kw.get('remove_unlisted', False),
                           None, '/nonexistent/sriov-manage', board.writer, known)


def _apply(board, plans):
    return [line for p in plans for line in vvp.apply_gpu(board.root, p, board.writer)]


def _actions(plans):
    return [(s['vf'], s['action'], s['after']) for p in plans for s in p['steps']]


def test_the_stand_in_behaves_like_the_driver(tmp_path):
    board = VfBoard(tmp_path)
    listed = open(os.path.join(board.root, 'bus/pci/devices', VFS[0], 'nvidia/creatable_vgpu_types')).read()
    assert listed.startswith('ID    : vGPU Name\n') and '1156  : NVIDIA L40S-48Q' in listed
    board.writer(os.path.join(board.root, 'bus/pci/devices', VFS[0], 'nvidia/current_vgpu_type'), '1155')
    # capacity in use leaves the lists: 24 GB left, one size per GPU
    assert [t for t, dummy in board.creatable(VFS[1])] == [1155]
    with pytest.raises(OSError) as refused:
        board.writer(os.path.join(board.root, 'bus/pci/devices', VFS[1], 'nvidia/current_vgpu_type'), '1153')
    assert refused.value.errno == errno.EINVAL
    board.writer(os.path.join(board.root, 'bus/pci/devices', VFS[0], 'nvidia/current_vgpu_type'), '0')
    assert board.current[VFS[0]] == 0 and len(board.creatable(VFS[1])) == 10


def test_types_go_to_free_vfs_in_order_and_each_vf_is_named(tmp_path):
    board = VfBoard(tmp_path)
    plans = _plan(board, {'L40S-12Q': 2})
    assert _actions(plans) == [(VFS[0], 'set', '1153'), (VFS[1], 'set', '1153'), (VFS[2], 'none', '0'),
                               (VFS[3], 'none', '0')]
    said = _apply(board, plans)
    assert said == ['%s got NVIDIA L40S-12Q (1153)' % VFS[0], '%s got NVIDIA L40S-12Q (1153)' % VFS[1]]
    assert board.current == {VFS[0]: 1153, VFS[1]: 1153, VFS[2]: 0, VFS[3]: 0}


def test_a_second_run_changes_nothing(tmp_path):
    board = VfBoard(tmp_path)
    _apply(board, _plan(board, {'L40S-12Q': 2}))
    writes = list(board.writes)
    plans = _plan(board, {'L40S-12Q': 2})
    assert not vvp.changed(plans) and [a for dummy, a, dummy2 in _actions(plans)] == ['keep', 'keep', 'none', 'none']
    _apply(board, plans)
    assert board.writes == writes


def test_a_full_gpu_is_recognised_by_the_saved_type_names(tmp_path):
    board = VfBoard(tmp_path)
    plans = _plan(board, {'L40S-24Q': 2})
    _apply(board, plans)
    saved = vvp.persist_config(plans)
    assert saved['gpus'] == [{'pf': PF, 'vfs': {VFS[0]: 1155, VFS[1]: 1155}}]
    assert saved['types'] == {'1155': 'NVIDIA L40S-24Q'}
    # the GPU is full: no VF lists any type now, so only the saved names say what its VFs hold
    assert all(not board.creatable(vf) for vf in VFS)
    with pytest.raises(vvp.VfProfileError, match=r'does not list L40S-24Q .*hold type ids 1155'):
        _plan(board, {'L40S-24Q': 2})
    again = _plan(board, {'L40S-24Q': 2}, known=vvp.load_saved(saved))
    assert not vvp.changed(again)


def test_more_than_fits_is_refused_before_any_write(tmp_path):
    board = VfBoard(tmp_path)
    with pytest.raises(vvp.VfProfileError, match=r'48 GB .* asks for 72 GB \(3 x L40S-24Q\)'):
        _plan(board, {'L40S-24Q': 3})
    assert board.writes == [] and board.refused == []


def test_a_type_the_board_does_not_offer_is_refused_naming_what_it_offers(tmp_path):
    board = VfBoard(tmp_path)
    with pytest.raises(vvp.VfProfileError, match=r'GPU 0000:41:00.0 does not list A10-12Q .*L40S-24Q'):
        _plan(board, {'A10-12Q': 1})
    assert board.writes == []


def test_a_vgpu_beyond_the_config_is_left_alone_and_not_saved_unless_removal_is_asked(tmp_path):
    board = VfBoard(tmp_path)
    board.set(VFS[0], 1153)
    board.set(VFS[1], 1153)
    plans = _plan(board, {'L40S-12Q': 1})
    assert _actions(plans)[:2] == [(VFS[0], 'keep', '1153'), (VFS[1], 'leave', '1153')] and not vvp.changed(plans)
    assert vvp.persist_config(plans)['gpus'] == [{'pf': PF, 'vfs': {VFS[0]: 1153}}]
    plans = _plan(board, {'L40S-12Q': 1}, remove_unlisted=True)
    assert _actions(plans)[1] == (VFS[1], 'clear', '0')


def test_a_gpu_on_another_size_is_refused_until_it_is_cleared(tmp_path):
    board = VfBoard(tmp_path)
    board.set(VFS[0], 1151)  # 6Q, not in the config: the GPU now lists only 6Q
    for remove in (False, True):
        with pytest.raises(vvp.VfProfileError, match=r'does not list L40S-12Q .*its VFs hold NVIDIA L40S-6Q.*state '
                                                     r'absent for this GPU'):
            _plan(board, {'L40S-12Q': 2}, remove_unlisted=remove)
    assert board.writes == []
    _apply(board, _plan(board, None, state='absent'))
    _apply(board, _plan(board, {'L40S-12Q': 2}))
    assert board.current == {VFS[0]: 1153, VFS[1]: 1153, VFS[2]: 0, VFS[3]: 0}


def test_a_vf_on_another_type_changes_only_when_removal_is_asked(tmp_path):
    # the second GPU of the same model still lists 12Q, so the first GPU's change can be checked before any write
    board = VfBoard(tmp_path, pfs=(PF, '0000:c1:00.0'))
    board.set(VFS[0], 1151)
    config = [{'devices': [0], 'vgpu-devices': {'L40S-12Q': 2}}]
    with pytest.raises(vvp.VfProfileError, match=r'cannot take 2 more L40S-12Q.*VF 0000:41:00.4 holds other types'):
        _plan(board, config)
    plans = _plan(board, config, remove_unlisted=True)
    assert _actions(plans)[:2] == [(VFS[0], 'change', '1153'), (VFS[1], 'set', '1153')]
    _apply(board, plans)
    assert [board.current[vf] for vf in VFS] == [1153, 1153, 0, 0]


def _qemu(tmp_path, pid, device):
    proc = tmp_path / 'proc'
    (proc / str(pid) / 'fd').mkdir(parents=True)
    os.symlink(device, str(proc / str(pid) / 'fd' / '23'))
    (proc / str(pid) / 'cmdline').write_bytes(b'/usr/libexec/qemu-kvm\0-name\0guest=vm1\0')
    (proc / str(pid) / 'cgroup').write_text('0::/machine.slice/machine-qemu-1-vm1.scope\n')
    return str(proc)


@pytest.mark.parametrize('cdev', [False, True])
def test_a_held_vf_is_refused_naming_the_holder_before_any_write(tmp_path, cdev):
    board = VfBoard(tmp_path / 'sys', pfs=(PF, '0000:c1:00.0'))
    board.set(VFS[0], 1151)
    group = os.path.basename(os.readlink(os.path.join(board.root, 'bus/pci/devices', VFS[0], 'iommu_group')))
    device = '/dev/vfio/%s' % group
    if cdev:  # the VFIO cdev the VF has under vfio-dev/ (iommufd): what a cdev-opening VMM holds
        os.makedirs(os.path.join(board.root, 'bus/pci/devices', VFS[0], 'vfio-dev', 'vfio7'))
        device = '/dev/vfio/devices/vfio7'
    proc = _qemu(tmp_path, 4242, device)
    with pytest.raises(vvp.VfProfileError) as refused:
        _plan(board, [{'devices': [0], 'vgpu-devices': {'L40S-12Q': 2}}], remove_unlisted=True, proc=proc)
    # the holder is named by its executable: its command line (a VM's name, a secret on an option) is not shown
    assert ('VF 0000:41:00.4 of GPU 0000:41:00.0 is on NVIDIA L40S-6Q and in use: PID 4242 (qemu-kvm) '
            'holds %s in unit machine-qemu-1-vm1.scope' % device) in str(refused.value)
    assert 'guest=vm1' not in str(refused.value)
    assert board.writes == [] and board.current[VFS[0]] == 1151


def test_absent_clears_every_vf_only_when_asked(tmp_path):
    board = VfBoard(tmp_path)
    board.set(VFS[1], 1153)
    plans = _plan(board, None, state='absent')
    assert _actions(plans)[1] == (VFS[1], 'clear', '0')
    _apply(board, plans)
    assert set(board.current.values()) == {0}


def test_vfs_are_enabled_with_sriov_manage_when_it_is_there(tmp_path):
    board = VfBoard(tmp_path / 'sys', enabled=False)
    script = tmp_path / 'sriov-manage'
    script.write_text('#!/bin/sh\n')
    script.chmod(0o755)
    plans = vvp.plan(board.root, vvp.check_inputs({'L40S-24Q': 1}), proc=None, sriov_manage=str(script))
    assert plans[0]['enable'] == 'sriov-manage' and plans[0]['steps'] == []
    vvp.finish_plan(board.root, plans, board.run, sriov_manage=str(script), writer=board.writer)
    assert board.commands == [[str(script), '-e', PF]]
    _apply(board, plans)
    assert board.current[VFS[0]] == 1155


def test_vfs_are_enabled_through_sriov_numvfs_without_sriov_manage(tmp_path):
    board = VfBoard(tmp_path, enabled=False)
    plans = _plan(board, {'L40S-24Q': 1})
    assert board.commands == [] and ('devices/pci0000:00/%s/sriov_numvfs' % PF, '4') in board.writes
    assert _actions(plans)[0] == (VFS[0], 'set', '1155')


def test_each_write_is_checked_again_against_the_vfs_list_just_before_it(tmp_path):
    board = VfBoard(tmp_path)
    plans = _plan(board, {'L40S-12Q': 2})
    board.set(VFS[3], 1155)  # another tool puts a 24Q on the GPU after the plan: the others now list only 24Q
    with pytest.raises(vvp.VfProfileError, match=r'VF 0000:41:00.4 no longer lists NVIDIA L40S-12Q \(1153\) as '
                                                 r'creatable \(it lists 1155\)'):
        _apply(board, plans)
    assert board.refused == [] and board.current[VFS[0]] == 0  # stopped before the driver had to refuse anything


def test_a_write_the_driver_refuses_is_reported_with_its_errno_and_what_was_done(tmp_path):
    board = VfBoard(tmp_path)
    plans = _plan(board, {'L40S-12Q': 2})

    def racing(path, value):
        # another tool takes VF1 between our re-check and our write: the driver answers EBUSY
        if VFS[1] in path and value != '0':
            board.current[VFS[1]] = 1153
        board.writer(path, value)

    with pytest.raises(vvp.VfProfileError) as refused:
        vvp.apply_gpu(board.root, plans[0], racing)
    assert 'EBUSY (Device or resource busy)' in str(refused.value)
    assert 'done before it: 0000:41:00.4 got NVIDIA L40S-12Q (1153)' in str(refused.value)


@pytest.mark.parametrize('config,gpus,message', [
    ({'A100-1-5C': 1}, None, 'MIG-backed'),
    ({'L40S-24Q': 0}, None, 'count of L40S-24Q is 0'),
    ({'L40S-24Q': True}, None, 'count of L40S-24Q is True'),
    ({'L40S 24Q;rm': 1}, None, 'is not a vGPU type name'),
    ([{'devices': [1], 'vgpu-devices': {'L40S-24Q': 1}}], None, 'names GPU index 1, but the host has 1 NVIDIA GPU'),
    ({'L40S-24Q': 1}, ['0000:41:00.0\n'], 'is not a PCI address'),
    ({'L40S-24Q': 1}, ['0000:42:00.0'], '0000:42:00.0 is not an NVIDIA GPU PF'),
])
def test_bad_input_fails_before_any_change_naming_it(tmp_path, config, gpus, message):
    board = VfBoard(tmp_path, enabled=False)
    with pytest.raises(vvp.VfProfileError, match=message.replace('(', r'\(').replace('.', r'\.')):
        _plan(board, config, gpus=gpus)
    assert board.writes == [] and board.commands == []


def test_a_pf_on_vfio_pci_is_refused(tmp_path):
    board = VfBoard(tmp_path, driver='vfio-pci', enabled=False)
    with pytest.raises(vvp.VfProfileError, match='GPU 0000:41:00.0 is on vfio-pci, not the nvidia driver'):
        _plan(board, {'L40S-24Q': 1})
    assert board.writes == []


def test_gpu_indices_follow_numeric_pci_order(tmp_path):
    # vgpu-device-manager @ 4d31dc65 pkg/vgpu/vfio/sysfs.go sortPCIAddresses: numeric, not the order sysfs lists
    board = VfBoard(tmp_path, pfs=('0000:c1:00.0', '0000:41:00.0'), vfs=2)
    plans = _plan(board, [{'devices': [1], 'vgpu-devices': {'L40S-48Q': 1}}])
    assert [p['pf'] for p in plans] == ['0000:c1:00.0']


NAME = st.text(alphabet=st.characters(codec='utf-8'), min_size=0, max_size=40)


@settings(max_examples=200, deadline=None)
@given(NAME, st.integers(min_value=-3, max_value=100))
def test_any_config_is_accepted_only_within_the_grammar(name, count):
    try:
        out = vvp.normalise_config({name: count})
    except vvp.VfProfileError as e:
        assert repr(name)[:40] in str(e) or 'count of' in str(e) or 'MIG-backed' in str(e)
        return
    (short, got), = out[0]['types']
    assert vvp.TYPE_NAME.fullmatch(short) and 1 <= got <= vvp.MAX_COUNT and got == count


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(alphabet=st.characters(codec='utf-8'), max_size=12),
                       st.text(alphabet=st.characters(codec='utf-8'), max_size=20), max_size=4))
def test_a_saved_config_is_read_back_only_within_its_grammar(types):
    try:
        out = vvp.load_saved({'types': types})
    except vvp.VfProfileError:
        return
    assert all(vvp.NUMBER.fullmatch(t) and vvp.CREATABLE_NAME.fullmatch(n) for t, n in out.items())


@pytest.mark.parametrize('key, data, ours', [
    ('unit', b'# Managed by gpuvirt.provision (vgpu_vf role).\n[Unit]\n', True),
    # the header further down, or only the collection's name, is not the unit's header
    ('unit', b'[Unit]\n# Managed by gpuvirt.provision (vgpu_vf role).\n', False),
    ('unit', b'# Managed by gpuvirt.provision\n[Unit]\n', False),
    ('script', b'# -*- coding: utf-8 -*-\n# Managed by gpuvirt.provision (vgpu_vf role).\n', True),
    ('script', b'#!/bin/sh\necho "# Managed by gpuvirt.provision (vgpu_vf role)."\n', False),
    ('config', b'{\n  "managed_by": "gpuvirt.provision",\n  "version": 1\n}\n', True),
    # another manager's config, or one that only mentions the key or the header text
    ('config', b'{"managed_by": "puppet"}\n', False),
    ('config', b'{"note": "# Managed by gpuvirt.provision (vgpu_vf role)."}\n', False),
])
def test_each_installed_file_is_ours_only_by_its_own_marker(key, data, ours):
    assert vvp.has_marker(data, key) is ours
