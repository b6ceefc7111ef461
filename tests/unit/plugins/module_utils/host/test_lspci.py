# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""lspci parser on the real captures in tests/unit/fixtures/lspci (see fixtures/SOURCES.md)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import lspci
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pciids


def capture(fixtures_dir, name):
    with open(os.path.join(fixtures_dir, 'lspci', name)) as f:
        return f.read()


def test_nnk_spaces_vfio_pci(fixtures_dir):
    (d,) = lspci.parse(capture(fixtures_dir, 'a10-nnk-d10de-vfio-pci_nvidia-cloud-native-docs.txt'))
    assert (d['bdf'], d['class_id'], d['vendor_id'], d['device_id']) == ('0000:65:00.0', '0302', '10de', '2236')
    assert (d['vendor_name'], d['device_name']) == ('NVIDIA Corporation', 'GA102GL [A10]')
    assert (d['subsystem_vendor_id'], d['subsystem_device_id'], d['revision']) == ('10de', '1482', 'a1')
    assert d['driver'] == 'vfio-pci' and d['kernel_modules'] == ['nvidiafb', 'nouveau'] and d['kind'] == 'gpu'


def test_nnk_no_driver_line_means_no_driver(fixtures_dir):
    (d,) = lspci.parse(capture(fixtures_dir, 'a10-nnk-d10de-no-driver_nvidia-cloud-native-docs.txt'))
    assert d['driver'] is None and d['kernel_modules'] == ['nvidiafb', 'nouveau']


def test_nnk_with_real_tabs_gpu_and_hda(fixtures_dir):
    gpu, hda = lspci.parse(capture(fixtures_dir, 'gtx1060-nnk-with-tabs-nvidia-plus-hda_single-gpu-passthrough-issue-8.txt'))
    assert (gpu['bdf'], gpu['kind'], gpu['driver']) == ('0000:01:00.0', 'gpu', 'nvidia')
    assert gpu['kernel_modules'] == ['nouveau', 'nvidia_drm', 'nvidia']
    assert (gpu['subsystem_vendor_id'], gpu['subsystem_device_id']) == ('1458', '3771')
    assert (hda['bdf'], hda['class_id'], hda['kind'], hda['driver']) == ('0000:01:00.1', '0403', 'audio', 'snd_hda_intel')
    assert not hda['is_vf'] and not gpu['is_vf']


def test_k_without_ids_two_l40s_prompts_skipped(fixtures_dir):
    a, b = lspci.parse(capture(fixtures_dir, 'l40s-x2-k-s-one-vfio-pci-one-nvidia-with-tabs-openshift-node_schmaustech.txt'))
    assert [a['driver'], b['driver']] == ['vfio-pci', 'nvidia']
    assert a['device_name'] == 'AD102GL [L40S]' and a['device_id'] is None
    # class id from the class name; vendor id from the name of the one vendor this collection knows
    assert (a['class_id'], a['vendor_id'], a['subsystem_device_id']) == ('0302', '10de', '1851')


def test_plain_unnamed_device_keeps_its_id(fixtures_dir):
    (d,) = lspci.parse(capture(fixtures_dir, 'a10-plain-grep-NVIDIA-device-2236_opennebula-docs.txt'))
    assert (d['bdf'], d['device_id'], d['device_name']) == ('0000:41:00.0', '2236', 'Device 2236')


def test_plain_gpu_and_audio_with_pciids(fixtures_dir, reference_dir):
    db = pciids.load(os.path.join(reference_dir, 'pciids', 'pci.ids-2025.07.11_from-NVIDIA-go-nvlib.ids'))
    gpu, hda = lspci.parse(capture(fixtures_dir, 'gt710-with-hda-audio-lspci-plain_cloud-hypervisor.txt'),
                           db.vendor_ids_by_name())
    assert (gpu['vendor_id'], gpu['device_name'], gpu['kind']) == ('10de', 'GK208B [GeForce GT 710]', 'gpu')
    assert (hda['class_id'], hda['kind']) == ('0403', 'audio')


def test_dnn_hgx_h100_nvswitches_and_bmc_vga(fixtures_dir):
    devs = lspci.parse(capture(fixtures_dir, 'hgx-h100-8gpu-4nvswitch-Dnn-egrep-nvidia-vga_starlab3030-rhel-ai.txt'))
    kinds = [d['kind'] for d in devs]
    assert kinds.count('nvswitch') == 4 and kinds.count('gpu') == 9  # 8 H100 + the ASPEED BMC VGA
    aspeed = devs[0]
    assert (aspeed['vendor_id'], aspeed['vendor_name'], aspeed['revision']) == ('1a03', 'ASPEED Technology, Inc.', '52')
    h100 = [d for d in devs if d['device_id'] == '2330']
    assert len(h100) == 8 and not any(d['is_vf'] for d in h100)  # one per bus: no VF inference


def test_v_output_skips_resource_lines(fixtures_dir):
    (d,) = lspci.parse(capture(fixtures_dir, 'l40s-10de26b9-lspci-s-v-elided_cloud-hypervisor.txt'))
    assert (d['bdf'], d['device_id'], d['revision']) == ('0000:01:00.0', '26b9', 'a1')


def test_vmm_nnk_format():
    # format per reference/lspci/FORMAT-NOTES.md (pciutils lspci.c:1015-1052); the values are this repo's
    # A10 capture rewritten into that layout, not a capture
    text = ('Slot:\t0000:41:00.0\nClass:\t3D controller [0302]\nVendor:\tNVIDIA Corporation [10de]\n'
            'Device:\tGA102GL [A10] [2236]\nSVendor:\tNVIDIA Corporation [10de]\nSDevice:\tDevice [1482]\n'
            'Rev:\ta1\nDriver:\tvfio-pci\nModule:\tnvidiafb\nModule:\tnouveau\nNUMANode:\t0\nIOMMUGroup:\t44\n\n'
            'Slot:\t0000:41:00.1\nClass:\tAudio device [0403]\nVendor:\tNVIDIA Corporation [10de]\n'
            'Device:\tGA102 High Definition Audio Controller [1aef]\nRev:\ta1\n')
    a, b = lspci.parse(text)
    assert (a['device_name'], a['device_id'], a['driver'], a['kernel_modules']) == (
        'GA102GL [A10]', '2236', 'vfio-pci', ['nvidiafb', 'nouveau'])
    assert (a['iommu_group'], a['numa_node'], a['subsystem_device_id']) == ('44', 0, '1482')
    assert (b['kind'], b['driver']) == ('audio', None)


def test_vmm_without_nn_keeps_brackets_in_names():
    (d,) = lspci.parse('Slot:\t65:00.0\nClass:\t3D controller\nVendor:\tNVIDIA Corporation\n'
                       'Device:\tGA100 [A100]\n')
    assert d['device_name'] == 'GA100 [A100]' and d['device_id'] is None and d['class_id'] == '0302'


def test_vfs_inferred_on_one_bus_with_sriov_evidence(fixtures_dir):
    # the A10 capture line, repeated at the VF addresses the real A10 virtfn listing shows (41:00.4 ...); the PF
    # carries the SR-IOV capability line lspci -v prints for it
    line = capture(fixtures_dir, 'a10-plain-grep-NVIDIA-device-2236_opennebula-docs.txt').splitlines()[1]
    sriov = '\tCapabilities: [bcc] Single Root I/O Virtualization (SR-IOV)'
    text = '\n'.join([line, sriov] + [line.replace('41:00.0', bdf) for bdf in ('41:00.4', '41:00.5', '41:04.3')])
    pf, vf1, vf2, vf3 = lspci.parse(text)
    assert not pf['is_vf'] and all(v['is_vf'] and v['physfn'] == '0000:41:00.0' and v['vf_inferred']
                                   for v in (vf1, vf2, vf3))
    assert '_sriov' not in pf


def test_identical_gpus_on_one_bus_are_not_vfs(fixtures_dir):
    # two boards of one model on one bus, no SR-IOV capability shown: both are physical functions
    line = capture(fixtures_dir, 'a10-plain-grep-NVIDIA-device-2236_opennebula-docs.txt').splitlines()[1]
    a, b = lspci.parse('\n'.join([line, line.replace('41:00.0', '41:01.0')]))
    assert (a['is_vf'], b['is_vf'], a['physfn'], b['physfn']) == (False, False, None, None)
    assert 'vf_inferred' not in b


def test_two_sriov_pfs_on_one_bus_infer_nothing(fixtures_dir):
    line = capture(fixtures_dir, 'a10-plain-grep-NVIDIA-device-2236_opennebula-docs.txt').splitlines()[1]
    sriov = '\tCapabilities: [bcc] Single Root I/O Virtualization (SR-IOV)'
    devs = lspci.parse('\n'.join([line, sriov, line.replace('41:00.0', '41:01.0'), sriov,
                                  line.replace('41:00.0', '41:01.4')]))
    assert [d['is_vf'] for d in devs] == [False, False, False]


def test_long_whitespace_runs_parse_like_short_ones():
    # the shapes that made the old line regex backtrack: long runs of blanks between the fields
    pad = ' ' * 5000
    (d,) = lspci.parse('0000:41:00.0' + pad + '3D controller [0302]:' + pad + 'NVIDIA Corporation GA102GL [A10]'
                       + pad + '[10de:2236]' + pad + '(rev a1)')
    assert (d['class_id'], d['vendor_id'], d['device_id'], d['revision']) == ('0302', '10de', '2236', 'a1')
    assert d['device_name'] == 'GA102GL [A10]'
    assert lspci.parse('0000:00:00.0' + pad) == []


def test_malformed_mm_line_names_the_line():
    text = '00:1f.0 "ISA bridge" "Intel Corporation" "C620"\n41:00.0 "3D controller" "NVIDIA Corporation [10de]\n'
    with pytest.raises(lspci.LspciError, match=r'line 2: No closing quotation.*expected BB:DD.F'):
        lspci.parse(text)


def test_nothing_recognised_and_bad_type():
    assert lspci.parse('$ lspci | grep NVIDIA\n') == []
    with pytest.raises(lspci.LspciError, match='string'):
        lspci.parse(None)


def test_many_trailing_suffixes_keep_the_leftmost_and_the_names(fixtures_dir):
    # the suffix loop now walks back over every "(rev xx)" / "(prog-if xx)" in one pass: the head and the ids
    # before them are what a single suffix leaves, and the leftmost of repeated suffixes still wins
    line = capture(fixtures_dir, 'a10-nnk-d10de-vfio-pci_nvidia-cloud-native-docs.txt').splitlines()[0]
    assert line.endswith('(rev a1)')
    (d,) = lspci.parse(line + ' (prog-if 00 [VGA controller])' + ' (rev ff)' * 2000 + '\t(prog-if 01)')
    assert (d['vendor_id'], d['device_id'], d['revision'], d['prog_if']) == ('10de', '2236', 'a1', '00')
    assert d['device_name'] == 'GA102GL [A10]'


def test_mm_options_and_names_split_in_order():
    (d,) = lspci.parse('41:00.0 "3D controller [0302]" -ra1 "NVIDIA Corporation [10de]" "GA102GL [A10] [2236]" '
                       '-p00 "NVIDIA Corporation [10de]" "Device [1482]"')
    assert (d['class_id'], d['vendor_id'], d['device_id'], d['revision'], d['prog_if']) == (
        '0302', '10de', '2236', 'a1', '00')
    assert (d['subsystem_vendor_id'], d['subsystem_device_id']) == ('10de', '1482')


@pytest.mark.parametrize('line', ['\tFlags: bus master, fast devsel, latency 0, IRQ 16, NUMA node ' + '1' * 5000,
                                  '\tNUMA node: ' + '1' * 5000])
def test_huge_numa_node_number_is_no_number(fixtures_dir, line):
    # int() refuses strings of more than 4300 digits with a ValueError: a NUMA node too long to be one is null
    first = capture(fixtures_dir, 'a10-nnk-d10de-vfio-pci_nvidia-cloud-native-docs.txt').splitlines()[0]
    (d,) = lspci.parse(first + '\n' + line)
    assert d['numa_node'] is None


# A hostile or merely big pci.ids: 23,831 vendors (ten times the real file) took 31.6 s on plain lspci output, one
# walk over every vendor name per line. SYNTHETIC vendor names, for the shape only.
HOSTILE_VENDORS = 23831


def _hostile_pciids():
    return pciids.parse(''.join('%04x  Vendor %d Inc.\n' % (i % 0x10000, i) for i in range(HOSTILE_VENDORS)))


class _CountingNames(dict):
    """A name -> id mapping that counts how often all of it is walked."""
    walks = 0

    def __iter__(self):
        _CountingNames.walks += 1
        return dict.__iter__(self)

    def items(self):
        _CountingNames.walks += 1
        return dict.items(self)


def test_vendor_table_is_walked_once_per_parse_not_once_per_line():
    names = _CountingNames(_hostile_pciids().vendor_ids_by_name())
    names['NVIDIA Corporation'] = '10de'
    _CountingNames.walks = 0
    text = ''.join('%02x:00.0 3D controller: NVIDIA Corporation GA102GL [A10] (rev a1)\n' % i for i in range(200))
    devices = lspci.parse(text, names)
    assert len(devices) == 200 and all(d['vendor_id'] == '10de' for d in devices)
    assert _CountingNames.walks <= 1


def test_plain_lines_with_a_hostile_pciids_parse_in_linear_time():
    import time
    names = _hostile_pciids().vendor_ids_by_name()
    text = ''.join('%02x:00.0 3D controller: Unknown Maker X%d\n' % (i % 256, i) for i in range(2000))
    start = time.time()
    lspci.parse(text, names)
    # the walk over every vendor took about 3 s here; dict lookups take a few hundredths of a second
    assert time.time() - start < 1.0


@pytest.mark.parametrize('text, vendor_id, expected', [
    # the id lspci -nn printed names the vendor, even where a shorter name also fits
    ('Intel Corporation Device', '8086', ('Intel Corporation', 'Device')),
    ('Intel Corporation Device', None, ('Intel Corporation', 'Device')),  # else the longest name
    ('Intel Device', None, ('Intel', 'Device')),
    ('Vendor 5 Inc. Thing', None, ('Vendor 5 Inc.', 'Thing')),
    ('Nobody Known Thing', None, (None, 'Nobody Known Thing')),
])
def test_split_by_id_token_then_longest_name(text, vendor_id, expected):
    names = {'Intel': '0001', 'Intel Corporation': '8086', 'Vendor 5 Inc.': '0005'}
    assert lspci.split_vendor_device(text, names, vendor_id) == expected


def test_vendor_name_over_the_bound_is_not_looked_for():
    long_name = 'V' * (lspci.VENDOR_NAME_MAX + 1)
    vendor, device = lspci.split_vendor_device(long_name + ' Device', {long_name: '0001'})
    assert (vendor, device) == (None, long_name + ' Device')


@pytest.mark.parametrize('target', ['/dev/zero', 'fifo', 'big'])
def test_a_pciids_path_that_is_a_device_a_fifo_or_huge_is_refused_not_read_to_its_end(tmp_path, monkeypatch, target):
    if target == 'fifo':
        os.mkfifo(str(tmp_path / 'fifo'))
        target = str(tmp_path / 'fifo')
    elif target == 'big':
        monkeypatch.setattr(pciids, 'MAX_BYTES', 64)
        (tmp_path / 'big').write_text('10de  NVIDIA Corporation\n' * 4)
        target = str(tmp_path / 'big')
    with pytest.raises(pciids.PciIdsError, match='not a readable regular file of at most'):
        pciids.load(target)


@pytest.mark.parametrize('slot', ['0000:00:06.0/../../x', '../../../etc', '0000:00:06.0 extra', '0000:00:06.8'])
def test_a_vmm_slot_that_is_not_a_pci_address_stops_the_parse(fixtures_dir, slot):
    # lspci output is host data: the real H200 capture with one Slot spoiled never yields that "address"
    with open(os.path.join(fixtures_dir, 'lspci', 'h200-vm-vmmnnkD-nvidia-driver_gpuvirt-device-check.txt')) as f:
        text = f.read()
    assert '0000:00:06.0' in [d['bdf'] for d in lspci.parse(text)]
    spoiled = text.replace('Slot:\t0000:00:06.0', 'Slot:\t' + slot)
    assert spoiled != text
    with pytest.raises(lspci.LspciError, match='a Slot line of the lspci output is not a PCI address'):
        lspci.parse(spoiled)


def test_pciids_keeps_only_four_hex_digit_devices_under_a_vendor_and_two_hex_digit_subclasses():
    db = pciids.parse(
        '# a comment\n'
        '\t0001  A device line before any vendor\n'
        '10DE  NVIDIA Corporation\n'
        '\t26B9  AD102GL [L40S]\n'
        '\t26b  Three digits\n'
        '\t26b90  Five digits\n'
        '\tzzzz  Four letters, no hex\n'
        '\tz6b9  First not hex\n'
        '\t26bz  Last not hex\n'
        '\t\t10de 1851  A subsystem line\n'
        '\t2237\n'
        'C 03  Display controller\n'
        '\t02  3D controller\n'
        '\t0  One digit\n'
        '\t021  Three digits\n'
        '\tzz  No hex\n'
        '\tz2  First not hex\n'
        '\t0z  Last not hex\n'
        '\t2330  Four digits under a class\n')
    assert db.vendors == {'10de': 'NVIDIA Corporation'}
    assert db.devices == {('10de', '26b9'): 'AD102GL [L40S]'}
    assert db.classes == {'0302': '3D controller'}


def test_pciids_option_host_and_true_mean_the_hosts_file(tmp_path, monkeypatch):
    own = tmp_path / 'pci.ids'
    own.write_text('10de  NVIDIA Corporation\n\t26b9  AD102GL [L40S]\n')
    other = tmp_path / 'other.ids'
    other.write_text('1af4  Red Hat, Inc.\n')
    monkeypatch.setattr(pciids, 'DEFAULT_PATHS', (str(tmp_path / 'absent.ids'), str(own)))
    for value in ('host', True):
        assert pciids.from_option(value).vendors == {'10de': 'NVIDIA Corporation'}, value
    # a path is that file; empty means no database at all
    assert pciids.from_option(str(other)).vendors == {'1af4': 'Red Hat, Inc.'}
    assert pciids.from_option('') is None and pciids.from_option(None) is None and pciids.from_option(False) is None


def test_mm_names_fill_their_own_fields():
    d = lspci.parse('41:00.0 "3D controller" "NVIDIA Corporation" "AD102GL [L40S]" -ra1 "NVIDIA Corporation" '
                    '"Device 1851"\n')[0]
    assert (d['class_name'], d['class_id'], d['vendor_name'], d['device_name'], d['subsystem_name'], d['revision']) == (
        '3D controller', '0302', 'NVIDIA Corporation', 'AD102GL [L40S]', 'NVIDIA Corporation Device 1851', 'a1')


def test_vm_record_takes_its_address_from_the_first_device_line_and_its_name_from_the_second():
    # lspci -vm: the record's first key is Device (the address), a second Device line is the device's name
    d = lspci.parse('Device:\t41:00.0\nClass:\t3D controller\nVendor:\tNVIDIA Corporation\nDevice:\tAD102GL [L40S]\n'
                    'Rev:\ta1\n')[0]
    assert (d['bdf'], d['class_id'], d['vendor_name'], d['device_name']) == (
        '0000:41:00.0', '0302', 'NVIDIA Corporation', 'AD102GL [L40S]')


def test_vendor_index_skips_names_it_cannot_use_and_keeps_the_rest():
    index = lspci.vendor_index({'': '0000', 'x' * (lspci.VENDOR_NAME_MAX + 1): '1111', 'NVIDIA Corporation': '10de',
                                'Red Hat, Inc.': '1af4'})
    assert index.ids == {'NVIDIA Corporation': '10de', 'Red Hat, Inc.': '1af4'}
    assert index.by_id == {'10de': 'NVIDIA Corporation', '1af4': 'Red Hat, Inc.'}


def test_a_pciids_file_of_32_mib_is_read_and_one_byte_more_is_refused(tmp_path):
    # sparse files: no 32 MiB written; the bound is the module's own (32 MiB, pci.ids is about 1.5 MB today)
    at, over = tmp_path / 'at.ids', tmp_path / 'over.ids'
    with open(at, 'wb') as f:
        f.truncate(32 * 1024 * 1024)
    with open(over, 'wb') as f:
        f.truncate(32 * 1024 * 1024 + 1)
    assert pciids.load(str(at)).vendors == {}
    with pytest.raises(pciids.PciIdsError, match='not a readable regular file of at most 33554432 bytes'):
        pciids.load(str(over))
