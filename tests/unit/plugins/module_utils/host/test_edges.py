# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The edges of the host rules, each tested on both sides: the PCI classes that make a GPU (0380 with 0300 and
0302), the kernel command line bounds at exactly 1024 and 1025 characters, and a vendor-VFIO VF that holds a vGPU
(it offers no instance of what it still lists)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import lspci, sysfs_pci
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_types as vt


# PCI class codes (PCI Code and ID Assignment, base class 03 "display controller"): 0300 VGA compatible, 0302 3D
# controller (the data-centre boards: A10, L40S), 0380 "other display controller" (the class H100/H200 boards
# report; pci.ids "C 03 / 80 Display controller"). 0301 is XGA, 0381 no display class at all.
@pytest.mark.parametrize('class_id,kind', [('0300', 'gpu'), ('0302', 'gpu'), ('0380', 'gpu'), ('0301', 'other'),
                                           ('0381', 'other'), ('0680', 'nvswitch')])
def test_the_display_classes_that_make_a_gpu(class_id, kind):
    assert lspci.device_kind(class_id, '10de') == kind
    assert lspci.device_kind(class_id.upper(), '10de') == kind


def test_a_0380_gpu_is_discovered_as_a_gpu_with_its_companions(sysfs):
    # an H200 (class 0380 in sysfs, "Display controller" to lspci) and its slot's audio function
    sysfs.device('0000:41:00.0', '0380', '10de', '2335', driver='nvidia', group=40)
    sysfs.device('0000:41:00.1', '0403', '10de', '22ba', group=40)
    text = ('0000:41:00.0 Display controller [0380]: NVIDIA Corporation GH100 [H200 SXM 141GB] [10de:2335] (rev a1)\n'
            '0000:41:00.1 Audio device [0403]: NVIDIA Corporation Device [10de:22ba] (rev a1)\n')
    res = sysfs_pci.discover(text, sysfs.root)
    assert [g['bdf'] for g in res['gpus']] == ['0000:41:00.0']
    (gpu,) = res['gpus']
    assert (gpu['kind'], gpu['class_id'], gpu['companions']) == ('gpu', '0380', ['0000:41:00.1'])
    assert res['gpus_by_driver'] == {'nvidia': ['0000:41:00.0']}
    # lspci alone (no sysfs entry) decides the same way
    (parsed,) = [d for d in lspci.parse(text) if d['bdf'] == '0000:41:00.0']
    assert parsed['kind'] == 'gpu'


def _arg(length, key='isolcpus'):
    """One allowed argument of exactly ``length`` characters."""
    return key + '=' + '1' * (length - len(key) - 1)


def test_one_argument_of_1024_characters_is_within_the_argument_bound():
    # 1024 + 1 (its separating blank) is over the total bound, but not over the per-argument one
    with pytest.raises(kc.CmdlineError) as err:
        kc.validate_args([_arg(1024)])
    assert 'characters together: at most 1024' in str(err.value) and 'is 1024 characters' not in str(err.value)


def test_one_argument_of_1025_characters_is_refused_by_its_own_length():
    with pytest.raises(kc.CmdlineError, match=r'is 1025 characters: at most 1024 are allowed'):
        kc.validate_args([_arg(1025)])


def test_the_arguments_together_at_1024_pass_and_at_1025_are_refused():
    # each argument counts with one blank: 340 + 1, 8 + 1 and 673 + 1 characters are 1024 together
    fits = [_arg(340), 'iommu=pt', _arg(673, 'nohz_full')]
    assert sum(len(a) + 1 for a in fits) == 1024
    kc.validate_args(fits)
    over = fits[:2] + [fits[2] + '1']
    assert sum(len(a) + 1 for a in over) == 1025
    with pytest.raises(kc.CmdlineError, match=r'are 1025 characters together: at most 1024 are allowed'):
        kc.validate_args(over)


def test_of_dracuts_rd_parameters_only_the_driver_lists_are_set():
    # rd.driver.blacklist / pre / post (dracut.cmdline(7)) order or keep out modules; every other rd.* chooses the
    # root disk or drops to a shell
    kc.validate_args(['rd.driver.blacklist=nouveau', 'rd.driver.pre=vfio-pci', 'rd.driver.post=nvidia'])
    for arg in ('rd.break=pre-mount', 'rd.shell=1', 'rd.driver.postx=nvidia', 'rd.lvm.lv=vg/root'):
        with pytest.raises(kc.CmdlineError, match='is not one the collection sets'):
            kc.validate_args([arg])


def _l40s_board(sysfs):
    sysfs.device('0000:26:00.0', '0302', '10de', '26b9', driver='nvidia', group=30)
    for n, vf in enumerate(('0000:26:00.4', '0000:26:00.5')):
        sysfs.device(vf, '0302', '10de', '26b9', driver='nvidia', group=31 + n)
    sysfs.sriov('0000:26:00.0', ['0000:26:00.4', '0000:26:00.5'])


LISTED = 'ID    : vGPU Name\n1155  : NVIDIA L40S-24Q\n1156  : NVIDIA L40S-48Q\n'


def test_a_busy_vendor_vfio_vf_offers_no_instance_of_what_it_lists(sysfs):
    # the driver may keep listing types on a VF that holds a vGPU: the VF has room for none of them until its own
    # vGPU goes (one vGPU per VF, current_vgpu_type; NVIDIA/vgpu-device-manager pkg/vgpu/vfio/sysfs.go)
    _l40s_board(sysfs)
    sysfs.vendor_vgpu('0000:26:00.4', LISTED, '1155')
    sysfs.vendor_vgpu('0000:26:00.5', LISTED, '0')
    res = vt.discover(sysfs.root)
    busy, free = res['parents']
    assert busy['parent'] == '0000:26:00.4' and busy['current_type'] == '1155'
    assert [(t['type_id'], t['available_instances']) for t in busy['types']] == [('1155', 0), ('1156', 0)]
    assert busy['devices'] == [{'uuid': None, 'type_id': '1155', 'name': 'NVIDIA L40S-24Q'}]
    assert free['current_type'] is None and free['devices'] == []
    assert [(t['type_id'], t['available_instances']) for t in free['types']] == [('1155', 1), ('1156', 1)]
    assert res['state'] == 'available'


def test_a_board_whose_vfs_are_all_busy_is_exhausted(sysfs):
    _l40s_board(sysfs)
    sysfs.vendor_vgpu('0000:26:00.4', LISTED, '1155')
    sysfs.vendor_vgpu('0000:26:00.5', LISTED, '1156')
    res = vt.discover(sysfs.root)
    assert all(t['available_instances'] == 0 for p in res['parents'] for t in p['types'])
    assert res['state'] == 'exhausted' and res['available_types'] == [], res
    assert [p['current_type'] for p in res['parents']] == ['1155', '1156']


def test_each_boot_loader_file_has_the_name_its_reader_reads():
    good = ('/etc/default/grub.d/90-gpuvirt.cfg', '/etc/default/grub', '/boot/grub/grub.cfg')
    kc.check_paths(*good)
    # each path named otherwise is refused, naming the variable
    for i, bad in enumerate(('/etc/default/grub.d/90-gpuvirt.conf', '/etc/default/grub2', '/boot/grub/grub.conf')):
        paths = list(good)
        paths[i] = bad
        with pytest.raises(kc.CmdlineError, match=('dropin_path', 'grub_default_path', 'grub_config')[i]):
            kc.check_paths(*paths)


def test_every_device_has_every_key_of_the_contract_and_plain_class_names_their_ids():
    # docs/contracts.md, pci_devices: a key the output did not fill is there, null
    (dev,) = lspci.parse('0000:41:00.0 0302: 10de:2236 (rev a1)\n')
    assert {'subsystem_vendor_id', 'subsystem_device_id', 'subsystem_name', 'prog_if', 'physical_slot',
            'numa_node', 'iommu_group', 'driver'} <= set(dev) and '' not in dev
    assert (dev['subsystem_name'], dev['prog_if'], dev['driver']) == (None, None, None)
    # plain lspci (no -n) gives class names only: each name the collection reasons about maps to its class code
    text = ('00:1f.3 Multimedia audio controller: Intel Corporation Device 7a50 (rev 11)\n'
            '41:00.1 Audio device: NVIDIA Corporation Device 22ba (rev a1)\n'
            '42:00.0 Display controller: NVIDIA Corporation Device 2335 (rev a1)\n')
    assert [(d['class_id'], d['kind']) for d in lspci.parse(text)] == [('0401', 'audio'), ('0403', 'audio'),
                                                                       ('0380', 'gpu')]
