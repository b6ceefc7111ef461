# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sysfs: the one reader of attributes, links and directories under a sysfs (or procfs) root."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, sysfs, sysfs_pci, vfio_bind, vgpu_types


class Bad(ValueError):
    pass


def test_read_text_strips_and_absent_is_none(tmp_path):
    (tmp_path / 'vendor').write_text('0x10de\n')
    assert sysfs.read_text(str(tmp_path / 'vendor'), Bad) == '0x10de'
    assert sysfs.read_text(str(tmp_path / 'missing'), Bad) is None
    assert sysfs.read_text(str(tmp_path), Bad) is None  # a directory cannot be read as a file


def test_read_text_names_a_byte_that_is_not_utf8(tmp_path):
    (tmp_path / 'name').write_bytes(b'ok\nGRID \xff\n')
    with pytest.raises(Bad, match=r'name, line 2: byte 0xff at offset 8 is not UTF-8'):
        sysfs.read_text(str(tmp_path / 'name'), Bad)


def test_read_bytes(tmp_path):
    (tmp_path / 'cmdline').write_bytes(b'/usr/bin/nvidia-persistenced\0--verbose\0')
    assert sysfs.read_bytes(str(tmp_path / 'cmdline')) == b'/usr/bin/nvidia-persistenced\0--verbose\0'
    assert sysfs.read_bytes(str(tmp_path / 'missing')) is None


def test_link_target_and_name(tmp_path):
    os.symlink('../../../bus/pci/drivers/nvidia', str(tmp_path / 'driver'))  # dangling, as in a partial copy
    os.symlink('/dev/nvidia0', str(tmp_path / '3'))
    (tmp_path / 'plain').write_text('x')
    assert sysfs.link_target(str(tmp_path / 'driver')) == '../../../bus/pci/drivers/nvidia'
    assert sysfs.link_name(str(tmp_path / 'driver')) == 'nvidia'
    assert sysfs.link_target(str(tmp_path / '3')) == '/dev/nvidia0'
    for name in ('plain', 'missing'):
        assert sysfs.link_target(str(tmp_path / name)) is None
        assert sysfs.link_name(str(tmp_path / name)) is None


def test_link_name_reads_the_link_and_does_not_resolve_it(tmp_path):
    # a copied tree where the driver directory is itself a link: the name is the one the device's link gives
    (tmp_path / 'real-dir').mkdir()
    os.symlink('real-dir', str(tmp_path / 'vfio-pci'))
    os.symlink('vfio-pci', str(tmp_path / 'driver'))
    assert sysfs.link_name(str(tmp_path / 'driver')) == 'vfio-pci'
    os.symlink('../iommu_groups/7/', str(tmp_path / 'iommu_group'))  # a trailing slash still names the group
    assert sysfs.link_name(str(tmp_path / 'iommu_group')) == '7'


def test_list_names_is_sorted_and_empty_when_absent(tmp_path):
    for name in ('0000:c1:00.0', '0000:41:00.0', '0000:41:00.1'):
        (tmp_path / name).mkdir()
    assert sysfs.list_names(str(tmp_path)) == ['0000:41:00.0', '0000:41:00.1', '0000:c1:00.0']
    assert sysfs.list_names(str(tmp_path / 'missing')) == []
    (tmp_path / 'file').write_text('x')
    assert sysfs.list_names(str(tmp_path / 'file')) == []


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_read_text_either_decodes_or_names_the_file(tmp_path_factory, data):
    path = str(tmp_path_factory.mktemp('attr') / 'attr')
    with open(path, 'wb') as f:
        f.write(data)
    try:
        text = sysfs.read_text(path, Bad)
    except Bad as e:
        assert str(e).startswith(path + ', line ')
        return
    assert text == data.decode('utf-8').strip()


def test_every_reader_of_the_kernel_trees_uses_this_one():
    # no module_utils reads links or directories of sysfs/procfs by itself any more (gpu_holders keeps listdir
    # where it must tell "cannot list" from "empty")
    for mod in (sysfs_pci, vfio_bind, vgpu_types):
        with open(mod.__file__.replace('.pyc', '.py'), encoding='utf-8') as handle:
            text = handle.read()
        assert 'os.readlink' not in text and 'os.path.realpath' not in text and 'os.listdir' not in text, mod.__name__
    with open(gpu_holders.__file__.replace('.pyc', '.py'), encoding='utf-8') as handle:
        text = handle.read()
    assert 'os.readlink' not in text and 'open(' not in text


@pytest.mark.parametrize('value,digits,expected', [
    ('0x10de', 4, '10de'), ('0x10DE', 4, '10de'), ('0x030200', 4, '0302'), ('0xa1', 2, 'a1'), ('0x1', 4, '0001'),
    ('10de', 4, None), ('0x', 4, None), ('0xzz', 4, None), ('', 4, None), (None, 4, None), ('0x10de\n', 4, None),
])
def test_hex_id(value, digits, expected):
    assert sysfs.hex_id(value, digits) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12), st.integers(min_value=1, max_value=8))
def test_hex_id_is_hex_of_the_width_or_none(value, digits):
    out = sysfs.hex_id(value, digits)
    assert out is None or (len(out) == digits and all(c in '0123456789abcdef' for c in out))


def test_the_binder_and_the_fact_reader_read_one_device_alike(sysfs):
    sysfs.device('0000:41:00.0', '0302', '10de', '2236', group=7, driver='nvidia')
    fact = sysfs_pci.read_device(sysfs.root, '0000:41:00.0')
    st_ = vfio_bind.state(sysfs.root, '0000:41:00.0')
    for key in ('vendor_id', 'device_id', 'class_id', 'driver', 'iommu_group'):
        assert fact[key] == st_[key], key


def test_a_fifo_or_a_device_in_a_copied_tree_is_not_read(tmp_path):
    # a FIFO would block open() and read(); /dev/zero never ends: neither is a regular file, as sysfs files are
    fifo = tmp_path / 'creatable_vgpu_types'
    os.mkfifo(str(fifo))
    assert sysfs.read_bytes(str(fifo)) is None
    zero = tmp_path / 'current_vgpu_type'
    zero.symlink_to('/dev/zero')
    assert sysfs.read_bytes(str(zero)) is None


def test_a_large_file_is_read_only_one_byte_past_the_limit(tmp_path):
    big = tmp_path / 'big'
    big.write_bytes(b'x' * 100000)
    assert len(sysfs.read_bytes(str(big), limit=1000)) == 1001
    assert sysfs.read_bytes(str(big)) == b'x' * 100000
