# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The edges of the refusals docs/security.md lists: each bound a grammar or a reader applies is taken at its
value and refused one past it, and each check refuses exactly what it names while its valid neighbour passes.
These are the cases the mutation scopes trust-* (tools/mutation/scopes.json) found no test pinning: a bound
moved by one, a comparison loosened, a check dropped."""
from __future__ import annotations

import json
import pathlib
import re

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record, modprobe, saved_facts
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import apply_rules, k8s_apply
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators as v
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session


def test_an_image_repository_path_is_taken_up_to_255_characters_and_refused_past():
    v.oci_repository('a' * 255, 'repo')
    v.oci_repository('/'.join(['a' * 127, 'b' * 127]), 'repo')  # 255 with its separator
    with pytest.raises(v.ValidationError, match='at most 255 characters'):
        v.oci_repository('a' * 256, 'repo')
    with pytest.raises(v.ValidationError, match='at most 255 characters'):
        v.oci_repository('/'.join(['a' * 128, 'b' * 127]), 'repo')


def test_the_helm_binary_path_is_taken_up_to_4096_characters_and_refused_past():
    # 16 parts of '/' and 255 characters: 4096; one more character in the last part is past the bound
    path = ('/' + 'h' * 255) * 16
    assert len(path) == 4096
    assert v.helm_binary(path, 'gpu_operator_helm_binary') == path
    with pytest.raises(v.ValidationError, match='gpu_operator_helm_binary'):
        v.helm_binary(path[:-1] + '/h', 'gpu_operator_helm_binary')
    assert len(path[:-1] + '/h') == 4097
    assert v.helm_binary(path[:-1], 'gpu_operator_helm_binary')


def test_a_blacklisted_module_name_is_taken_up_to_55_characters_and_refused_past():
    assert modprobe.blacklist_text('n' * 55) == 'blacklist %s\n' % ('n' * 55)
    with pytest.raises(modprobe.ModprobeError, match='is not a module name'):
        modprobe.blacklist_text('n' * 56)


def test_an_objects_uid_is_a_uuid_in_its_text_form_nothing_shorter_or_longer():
    uid = '6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b'
    assert v.k8s_uid(uid, 'metadata.uid') == uid
    for bad in ('', uid[:-1], uid + '0', uid.upper(), uid.replace('-', ''), uid + '\n'):
        with pytest.raises(v.ValidationError, match='metadata.uid'):
            v.k8s_uid(bad, 'metadata.uid')


# (grammar, its bound, a value of exactly that length, one of that length plus one): both fit the pattern, so only
# the length check tells them apart
BOUNDS = [
    (v.semver, 128, '1.0.0-' + 'a' * 122, '1.0.0-' + 'a' * 123),
    (v.repo_url, 2048, 'https://h/' + 'a' * 2038, 'https://h/' + 'a' * 2039),
    (v.chart_ref, 253, 'c' * 253, 'c' * 254),
    (v.oci_registry, 255, '.'.join(['r' * 63] * 4), '.'.join(['r' * 63] * 3 + ['r' * 61]) + ':12'),
    (v.kernel_module, 55, 'k' * 55, 'k' * 56),
    (v.systemd_unit, 255, 'u' * 247 + '.service', 'u' * 248 + '.service'),
    (v.reboot_message, 200, 'r' * 200, 'r' * 201),
    (lambda value, name: v.config_path(value, name, 'modprobe.d'), 4095,
     '/' + 'd' * (4095 - len('//modprobe.d/x.conf')) + '/modprobe.d/x.conf',
     '/' + 'd' * (4096 - len('//modprobe.d/x.conf')) + '/modprobe.d/x.conf'),
]


@pytest.mark.parametrize('check, bound, at_bound, past_bound', BOUNDS, ids=[b[0].__name__ if b[0].__name__ != '<lambda>' else 'config_path' for b in BOUNDS])
def test_each_length_bound_takes_its_value_and_refuses_one_more(check, bound, at_bound, past_bound):
    assert (len(at_bound), len(past_bound)) == (bound, bound + 1)
    assert check(at_bound, 'the_variable') == at_bound
    with pytest.raises(v.ValidationError, match='the_variable'):
        check(past_bound, 'the_variable')


def test_each_module_file_writer_names_the_entry_it_refuses():
    assert modprobe.modules_load_text(['vfio_pci', 'vfio-pci', 'vfio']) == (
        '# %s\nvfio_pci\nvfio\n' % modprobe.VFIO_HEADER)  # one spelling of a module, the first
    with pytest.raises(modprobe.ModprobeError, match=r'modules\[1\]'):
        modprobe.modules_load_text(['vfio_pci', 'vfio;reboot'])
    with pytest.raises(modprobe.ModprobeError, match=r'modules\[0\]'):
        modprobe.initramfs_tools_block(['-vfio'])
    with pytest.raises(modprobe.ModprobeError, match=r'modules\[0\]'):
        modprobe.dracut_text(['vfio" ; id ; "'])
    with pytest.raises(modprobe.ModprobeError, match=r'softdep drivers\[0\]'):
        modprobe.vfio_options_text(['10de:2236'], ['nvidia\nreboot'])
    with pytest.raises(modprobe.ModprobeError, match=r'vfio ids\[0\]'):
        modprobe.vfio_options_text(['10de:2236\n'], [])


def test_an_image_tag_is_taken_up_to_128_characters():
    assert v.oci_tag('t' * 128, 'vgpu_manager_image_tag') == 't' * 128
    with pytest.raises(v.ValidationError, match='vgpu_manager_image_tag'):
        v.oci_tag('t' * 129, 'vgpu_manager_image_tag')


def test_an_image_reference_with_a_second_digest_is_refused_naming_it_never_a_traceback():
    digest = 'sha256:' + 'a' * 64
    assert v.oci_reference('registry.example.com/nvidia/vgpu@' + digest, 'image') is not None
    with pytest.raises(v.ValidationError, match='has digest'):
        v.oci_reference('registry.example.com/nvidia/vgpu@' + digest + '@' + digest, 'image')


def test_a_record_is_read_up_to_64_kib_and_refused_one_byte_past(tmp_path):
    body = b'{"version": 1, "kernel_args": {"grubby": ["intel_iommu=on"]}}'
    at_bound = body + b' ' * (64 * 1024 - len(body))  # JSON allows the trailing blanks
    record, problems = host_record.parse(at_bound)
    assert (problems, record['kernel_args']) == ({}, {'grubby': ['intel_iommu=on']})
    record, problems = host_record.parse(at_bound + b' ')
    assert record['kernel_args'] is None and 'larger than 65536 bytes' in problems['kernel_args']
    # read() refuses by the file's size before it reads, with the same bound
    path = tmp_path / 'gpuvirt-provision' / 'host-state.json'
    path.parent.mkdir()
    path.write_bytes(at_bound)
    assert host_record.read(str(path))[0]['kernel_args'] == {'grubby': ['intel_iommu=on']}
    path.write_bytes(at_bound + b' ')
    record, problems = host_record.read(str(path))
    assert record['kernel_args'] is None and 'larger than 65536 bytes' in problems['kernel_args']


def test_a_record_lists_at_most_64_items_of_a_kind():
    files = ['/etc/gpuvirt/f%d.conf' % i for i in range(64)]
    record, problems = host_record.parse(json.dumps({'version': 1, 'files': {'kernel_args': files}}).encode())
    assert (problems, record['files']) == ({}, {'kernel_args': files})
    record, problems = host_record.parse(json.dumps(
        {'version': 1, 'files': {'kernel_args': files + ['/etc/gpuvirt/f64.conf']}}).encode())
    assert record['files'] is None and 'at most 64 paths' in problems['files']
    args = ['nvidia.a%d=0' % i for i in range(65)]  # 64 of them are 834 characters: within the 1,024 together
    record, problems = host_record.parse(json.dumps({'version': 1, 'kernel_args': {'grubby': args[:64]}}).encode())
    assert (problems, record['kernel_args']) == ({}, {'grubby': args[:64]})
    record, problems = host_record.parse(json.dumps({'version': 1, 'kernel_args': {'grubby': args}}).encode())
    assert record['kernel_args'] is None and 'at most 64 kernel arguments' in problems['kernel_args']


@pytest.mark.parametrize('kind, value', [('files', {'kernel_args': {}}), ('files', {'kernel_args': ''}),
                                         ('kernel_args', {'grubby': {}}), ('kernel_args', {'grubby': ''})])
def test_a_record_kind_that_is_no_list_takes_back_nothing_even_when_empty(kind, value):
    record, problems = host_record.parse(json.dumps({'version': 1, kind: value}).encode())
    assert record[kind] is None and 'is not a list' in problems[kind]


def test_an_executable_name_is_taken_up_to_255_characters():
    assert v.executable_name('e' * 255, 'executable') == 'e' * 255
    with pytest.raises(v.ValidationError, match='executable'):
        v.executable_name('e' * 256, 'executable')


def test_a_config_path_is_a_conf_file_directly_in_its_readers_directory():
    for good in ('/etc/modprobe.d/gpuvirt-vfio.conf', '/modprobe.d/x.conf', '/usr/lib/modprobe.d/a_b-c.d.conf'):
        assert v.config_path(good, 'vfio_modprobe_path', 'modprobe.d') == good
    assert v.config_path('/etc/initramfs-tools/modules', 'p', 'initramfs-tools', 'modules')
    for bad in ('etc/modprobe.d/x.conf', '/etc/modprobe.d/x.conf/', '/etc/modprobe.d/sub/x.conf',
                '/etc/modprobe.d/../x.conf', '/etc/modprobe.d/.x.conf', '/etc/modprobe.d/x.confx',
                '/etc/modprobe.d/x.conf\n', '/etc/xmodprobe.d/x.conf', '/etc/modprobeXd/x.conf',
                '/etc/../modprobe.d/x.conf', '//modprobe.d/x.conf', '/etc/modprobe.d/x conf.conf'):
        with pytest.raises(v.ValidationError, match='vfio_modprobe_path'):
            v.config_path(bad, 'vfio_modprobe_path', 'modprobe.d')
    for bad in ('/etc/initramfs-tools/modules.conf', '/etc/initramfs-tools/xmodules', '/etc/initramfs-tools/modulex'):
        with pytest.raises(v.ValidationError, match='p'):
            v.config_path(bad, 'p', 'initramfs-tools', 'modules')
    # the refusal shows a path that would do, of the file's own name when it has one
    with pytest.raises(v.ValidationError, match='such as /etc/modprobe.d/gpuvirt-vfio.conf .*ends in .conf'):
        v.config_path('/tmp/x.conf', 'p', 'modprobe.d')
    with pytest.raises(v.ValidationError, match=r'such as /etc/initramfs-tools/modules \(an absolute path'):
        v.config_path('/tmp/modules', 'p', 'initramfs-tools', 'modules')


def test_a_label_key_is_taken_at_its_longest_prefix_and_name_and_refused_one_past_either():
    prefix = '.'.join(['p' * 63] * 3 + ['p' * 61])
    assert (len(prefix), len(prefix + '/' + 'n' * 63)) == (253, 317)
    for good in (prefix + '/' + 'n' * 63, prefix + '/n', 'n' * 63, 'nvidia.com/gpu.deploy.driver', 'a', 'a/b'):
        assert v.label_key(good, 'label') == good
    for bad in (prefix + 'p/' + 'n' * 63, prefix + 'p/n', prefix + '/' + 'n' * 64, 'n' * 64, '/n', 'a/b/c', 'a/', 'A_/x', '-a',
                'nvidia.com/gpu\n'):
        with pytest.raises(v.ValidationError, match='label'):
            v.label_key(bad, 'label')


@pytest.mark.parametrize('check, low, high', [(v.positive_int, 1, 100000), (v.percentage, 0, 100)])
def test_an_integer_input_is_taken_from_its_low_to_its_high_end_as_a_number_or_digits(check, low, high):
    for good in (low, high, str(low), str(high), '%06d' % high):
        assert check(good, 'serial') == int(good)
    for bad in (low - 1, high + 1, str(high + 1), '0%06d' % high, True, False, 1.0, '', ' 1', '1\n', '-1', '1e2',
                None, [1]):
        with pytest.raises(v.ValidationError, match='serial'):
            check(bad, 'serial')


def test_a_file_name_the_prune_takes_is_at_most_251_characters():
    at_bound = 'configmap-ns-' + 'a' * 233 + '.yaml'
    assert len(at_bound) == 251 and render.object_file_name(at_bound)
    past = 'configmap-ns-' + 'a' * 234 + '.yaml'
    assert len(past) == 252 and not render.object_file_name(past)


def test_bookkeeping_is_read_up_to_32_mib_and_refused_one_byte_past():
    bound = render_session.MAX_BOOKKEEPING
    assert bound == 32 * 1024 * 1024
    at_bound = b'{}' + b' ' * (bound - 2)  # JSON allows the trailing blanks
    seen = []
    assert render_session.parse(at_bound, '/r/.gpuvirt-render.json', lambda data, path: seen.append(data)) == {}
    assert seen == [{}]
    with pytest.raises(render.RenderError, match=r'/r/.gpuvirt-render.json is larger than 33554432 bytes'):
        render_session.parse(at_bound + b' ', '/r/.gpuvirt-render.json', lambda data, path: seen.append(data))
    assert seen == [{}]


def test_a_recorded_phase_is_at_most_63_characters():
    assert render_session.valid_phase('p' * 63) and render_session.valid_phase('')
    assert not render_session.valid_phase('p' * 64)


@pytest.mark.parametrize('field, bad', [('kustomization', 'x'), ('kustomization', 'A' * 64), ('complete', 'yes'),
                                        ('finished', -1), ('format', render_session.FORMAT + 0.5)])
def test_a_manifest_field_of_another_shape_is_refused_naming_the_field(field, bad):
    good = {'format': render_session.FORMAT, 'kustomization': 'a' * 64, 'complete': True, 'finished': 1.5}
    text = json.dumps(good).encode()
    assert render_session.parse(text, '/r/m.json', render_session._check_manifest) == good
    with pytest.raises(render.RenderError, match=r'^/r/m.json: %s is ' % field):
        render_session.parse(json.dumps(dict(good, **{field: bad})).encode(), '/r/m.json',
                             render_session._check_manifest)


@pytest.mark.parametrize('version', [True, 1.0, '1', 2, 0, None])
def test_a_record_of_any_version_but_the_integer_1_takes_back_nothing(version):
    body = {'kernel_args': {'grubby': ['intel_iommu=on']}, 'files': {'kernel_args': ['/etc/gpuvirt/x.conf']}}
    assert host_record.parse(json.dumps(dict(body, version=1)).encode()) == (dict(body, version=1), {})
    record, problems = host_record.parse(json.dumps(dict(body, version=version)).encode())
    assert record['kernel_args'] is None and record['files'] is None
    assert 'version is' in problems['kernel_args']


def test_an_image_reference_names_the_part_that_is_no_path_component():
    assert v.oci_reference('registry.example.com/ns/img:v1', 'image') == 'registry.example.com/ns/img:v1'
    # a colon before the last component is no tag: that part is named, never a traceback
    with pytest.raises(v.ValidationError, match="its part 'ns:x' is not a path component"):
        v.oci_reference('registry.example.com/ns:x/img', 'image')
    with pytest.raises(v.ValidationError, match="its part 'ns:x' is not a path component"):
        v.oci_reference('registry.example.com/ns:x/img:v1', 'image')


# The saved-facts schema (saved_facts._Checker): each field of a saved document takes its valid values, at each bound
# and null where it may be null, and comes back as it was saved; one past a bound, the wrong type or null where null
# is no value is refused naming the file and the field's JSON path. A container: (the JSON path of the item, the
# least valid item, the document around an item, the item read back from the facts).
SF_CONTAINERS = {
    'device': ('$.gpuvirt_pci_devices.gpus[0]', {'bdf': '0000:41:00.0'},
               lambda item: {'gpuvirt_pci_devices': {'gpus': [item]}},
               lambda facts: facts['gpuvirt_pci_devices']['gpus'][0]),
    'pci': ('$.gpuvirt_pci_devices', {}, lambda item: {'gpuvirt_pci_devices': item},
            lambda facts: facts['gpuvirt_pci_devices']),
    'iommu': ('$.gpuvirt_pci_devices.iommu', {}, lambda item: {'gpuvirt_pci_devices': {'iommu': item}},
              lambda facts: facts['gpuvirt_pci_devices']['iommu']),
    'mdev': ('$.gpuvirt_mdev_types', {}, lambda item: {'gpuvirt_mdev_types': item},
             lambda facts: facts['gpuvirt_mdev_types']),
    'parent': ('$.gpuvirt_mdev_types.parents[0]', {'parent': '0000:41:00.4'},
               lambda item: {'gpuvirt_mdev_types': {'parents': [item]}},
               lambda facts: facts['gpuvirt_mdev_types']['parents'][0]),
    'type': ('$.gpuvirt_mdev_types.parents[0].types[0]', {'type_id': 'nvidia-592', 'name': 'NVIDIA A10-4Q'},
             lambda item: {'gpuvirt_mdev_types': {'parents': [{'parent': '0000:41:00.4', 'types': [item]}]}},
             lambda facts: facts['gpuvirt_mdev_types']['parents'][0]['types'][0]),
    'mdev_device': ('$.gpuvirt_mdev_types.parents[0].devices[0]', {},
                    lambda item: {'gpuvirt_mdev_types': {'parents': [{'parent': '0000:41:00.4', 'devices': [item]}]}},
                    lambda facts: facts['gpuvirt_mdev_types']['parents'][0]['devices'][0]),
    'host_interface': ('$.gpuvirt_mdev_types.host_interface', {'interface': 'none', 'evidence': []},
                       lambda item: {'gpuvirt_mdev_types': {'host_interface': item}},
                       lambda facts: facts['gpuvirt_mdev_types']['host_interface']),
    'holders': ('$.gpuvirt_gpu_holders', {}, lambda item: {'gpuvirt_gpu_holders': item},
                lambda facts: facts['gpuvirt_gpu_holders']),
    'holder': ('$.gpuvirt_gpu_holders.holders[0]', {'pid': 7, 'executable': 'app', 'device': '/dev/nvidia0'},
               lambda item: {'gpuvirt_gpu_holders': {'holders': [item]}},
               lambda facts: facts['gpuvirt_gpu_holders']['holders'][0]),
    'document': ('$', {}, lambda item: item, lambda facts: facts),
}
HEX4 = (['10de', 'FFFF', None], ['10de0', '10d', '10dg', 10])
HEX2 = (['a1', None], ['a10', 'a', 1])
TEXT_1024 = (['t' * 1024, '', None], ['t' * 1025, 1])
TEXT_4096 = (['t' * 4096, None], ['t' * 4097, 1])
BDFS = ([['0000:41:00.1'], []], [['x'], ['0000:41:00.1\n'], '0000:41:00.1', None])
DEVICE_LIST = ([[], [{'bdf': '0000:41:00.0'}]], [{}, None, [{}]])
COUNT = ([0, 2 ** 31, None], [-1, 2 ** 31 + 1, True, '1'])
SF_FIELDS = [
    # a BDF is at most 16 characters: an 8-digit domain (pci_address.BDF); a saved device always has one
    ('device', 'bdf', ['ffffffff:ff:1f.7', '41:00.0'], [None, '0000:41:00.8', 'fffffffff:ff:1f.7']),
    ('device', 'class_id') + HEX4, ('device', 'vendor_id') + HEX4, ('device', 'device_id') + HEX4,
    ('device', 'subsystem_vendor_id') + HEX4, ('device', 'subsystem_device_id') + HEX4,
    ('device', 'revision') + HEX2, ('device', 'prog_if') + HEX2,
    ('device', 'class_name') + TEXT_1024, ('device', 'vendor_name') + TEXT_1024,
    ('device', 'device_name') + TEXT_1024, ('device', 'subsystem_name') + TEXT_1024,
    ('device', 'physical_slot') + TEXT_1024,
    ('device', 'driver', ['d' * 255, 'vfio-pci', None], ['d' * 256, 'vfio pci', 3]),
    ('device', 'kernel_modules', [['m' * 255, 'nouveau'], []], [['m' * 256], [None], 'nouveau', None]),
    ('device', 'iommu_group', ['4294967295', '0', None], ['42949672950', '-1', 5]),
    ('device', 'iommu_group_devices') + BDFS, ('device', 'companions') + BDFS,
    ('device', 'numa_node', [-1, 0, 65535, None], [-2, 65536, True, '0']),
    ('device', 'physfn', ['0000:41:00.0', None], ['x', 5]),
    ('device', 'kind', ['gpu', 'nvswitch', 'audio', 'usb', 'serial', 'bridge', 'other'], ['GPU', 'vga', 1, None]),
    ('device', 'is_vf', [True, False], [None, 1, 'true']), ('device', 'sysfs', [True, False], [None, 0]),
    ('device', 'vf_inferred', [True, False], [None, 'false']),
    ('device', 'sriov', [None, {}, {'totalvfs': 0, 'numvfs': 0, 'vfs': []}, {'totalvfs': None, 'numvfs': None},
                         {'totalvfs': 65535, 'numvfs': 65535, 'vfs': ['0000:41:00.4']}],
     [{'totalvfs': -1}, {'totalvfs': 65536}, {'numvfs': -1}, {'numvfs': 65536}, {'numvfs': True}, {'vfs': ['x']},
      {'vfs': None}, {'enabled': 1}, [], 'x']),
    ('pci', 'devices') + DEVICE_LIST, ('pci', 'gpus') + DEVICE_LIST, ('pci', 'nvswitches') + DEVICE_LIST,
    ('pci', 'gpus_by_driver', [{}, {'d' * 255: ['0000:41:00.0']}, {'nvidia': [], 'vfio-pci': ['0000:41:00.1']}],
     [{'d' * 256: []}, {'vfio pci': []}, {'nvidia': ['x']}, {'nvidia': None}, []]),
    ('pci', 'iommu', [{}, {'enabled': True, 'groups': 0, 'message': ''}, {'enabled': False, 'groups': 2 ** 31}],
     [{'other': 1}, []]),
    ('iommu', 'enabled', [True, False], [None, 1]),
    ('iommu', 'groups', [0, 2 ** 31], [-1, 2 ** 31 + 1, None, True]),
    ('iommu', 'message', ['m' * 65536, ''], ['m' * 65537, None, 1]),
    ('mdev', 'parents', [[], [{'parent': '0000:41:00.4'}]], [{}, [{}], None]),
    ('mdev', 'interfaces', [['mdev', 'vendor_vfio'], []], [['vendor-vfio'], 'mdev', [None]]),
    ('mdev', 'state', ['none', 'exhausted', 'unreadable', 'available'], ['None', None]),
    ('mdev', 'available_types', [['t' * 255], []], [['t' * 256], [None], None]),
    ('mdev', 'message', ['m' * 65536], ['m' * 65537, None]),
    ('mdev', 'host_interface', [{'interface': 'mdev', 'evidence': []}],
     [{'interface': 'mdev'}, {'evidence': []}, None]),
    ('host_interface', 'interface', ['mdev', 'vendor-vfio', 'none'], ['vendor_vfio', None]),
    # a sentence of evidence is at most 512 characters: its pattern (vgpu_interface.EVIDENCE_RE) says so too
    ('host_interface', 'evidence', [['e' * 512, ' ~'], []], [['e' * 513], [''], ['\x1b[2J'], None]),
    # 64 characters fit the kernel release's pattern past the bound (a 2-digit major, 60 after the separator)
    ('host_interface', 'kernel_release', ['6.8-' + 'k' * 60, '6.8.0-60-generic', None], ['66.8-' + 'k' * 60, '6']),
    ('host_interface', 'driver_version', ['9999.9999.9999.9999', '580.82.02', None], ['580', '580.82.02.1.1']),
    ('parent', 'parent', ['0000:41:00.4'], [None, 'x']),
    ('parent', 'interface', ['mdev', 'vendor_vfio'], ['vendor-vfio', None]),
    ('parent', 'physfn', ['0000:41:00.0', None], ['x']),
    ('parent', 'types', [[]], [{}, None]), ('parent', 'devices', [[]], [{}, None]),
    ('parent', 'current_type') + TEXT_4096,
    ('type', 'type_id', ['t' * 255], ['t' * 256, None]), ('type', 'name', ['n' * 255], ['n' * 256, None]),
    ('type', 'short_name', ['s' * 255, None], ['s' * 256, 1]),
    ('type', 'available_instances') + COUNT, ('type', 'framebuffer_mib') + COUNT,
    ('type', 'max_instance') + COUNT, ('type', 'num_heads') + COUNT, ('type', 'frl_config') + COUNT,
    ('type', 'device_api') + TEXT_4096, ('type', 'description') + TEXT_4096, ('type', 'max_resolution') + TEXT_4096,
    ('mdev_device', 'uuid') + TEXT_4096, ('mdev_device', 'type_id') + TEXT_4096,
    ('mdev_device', 'name') + TEXT_4096,
    ('holders', 'held', [True, False], [None, 'yes']), ('holders', 'holders', [[]], [{}, None]),
    ('holders', 'message', ['m'], [None, 1]), ('holders', 'unreadable', [0, 4194304], [-1, 4194305, None, True]),
    ('holder', 'pid', [1, 4194304], [0, 4194305, None, True]),
    ('holder', 'executable', ['?', 'e' * 255, 'nvidia-smi'], ['e' * 256, '??', '', None]),
    # '/dev/nvidia-caps/' and a caps name: the 64 characters bound them, the pattern takes up to 81
    ('holder', 'device', ['/dev/nvidia-caps/' + 'c' * 47, '/dev/nvidia0', '/dev/nvidiactl'],
     ['/dev/nvidia-caps/' + 'c' * 48, '/dev/nvidia', None]),
    ('holder', 'minor', [0, 1048575, None], [-1, 1048576, True]),
    ('holder', 'bdf', ['0000:41:00.0', None], ['x']),
    ('holder', 'unit', ['u' * 247 + '.service', 'a.scope', None], ['u' * 248 + '.service', 'app', 1]),
    ('document', 'source', ['s' * 4096, ''], ['s' * 4097, None]),
    ('document', 'gpuvirt_node_name', ['.'.join(['n' * 63] * 3 + ['n' * 61]), 'gpu-1'],
     ['.'.join(['n' * 63] * 3 + ['n' * 62]), 'GPU-1', None]),
    ('document', 'gpuvirt_os_tag', ['t' * 128, 'rhcos4.18'], ['t' * 129, '-rhcos', None]),
    ('document', 'gpuvirt_mdev_types', [{}], [[], None]), ('document', 'gpuvirt_gpu_holders', [{}], [[], None]),
]


def _sf_document(container, field, value):
    where, least, wrap, read = SF_CONTAINERS[container]
    doc = dict({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}},
               **wrap(dict(least, **{field: value})))
    return doc, '%s.%s' % (where, field) if where != '$' else '$.' + field, read


@pytest.mark.parametrize('container, field, value', [(c, f, g) for c, f, goods, dummy in SF_FIELDS for g in goods],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 else repr(x)[:20])
def test_a_saved_fact_takes_each_valid_value_at_its_bounds_and_keeps_it(container, field, value):
    doc, dummy, read = _sf_document(container, field, value)
    facts = saved_facts.from_saved(doc, 'h', 'f.json')
    if field != 'source':  # the file's own note: checked, never handed on
        assert read(facts)[field] == value


@pytest.mark.parametrize('container, field, value', [(c, f, b) for c, f, dummy, bads in SF_FIELDS for b in bads],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 else repr(x)[:20])
def test_a_saved_fact_one_past_its_bounds_or_of_another_type_is_refused_naming_its_path(container, field, value):
    doc, where, dummy = _sf_document(container, field, value)
    with pytest.raises(saved_facts.SavedFactsError) as err:
        saved_facts.from_saved(doc, 'h', 'f.json')
    assert str(err.value).startswith('f.json: %s' % where), str(err.value)


@pytest.mark.parametrize('container, required', [('device', 'bdf'), ('parent', 'parent'), ('type', 'type_id'),
                                                 ('type', 'name'), ('host_interface', 'interface'),
                                                 ('host_interface', 'evidence'), ('holder', 'pid'),
                                                 ('holder', 'executable'), ('holder', 'device')])
def test_a_saved_item_without_a_key_it_needs_is_refused_naming_the_key(container, required):
    where, least, wrap, dummy = SF_CONTAINERS[container]
    item = dict(least)
    del item[required]
    with pytest.raises(saved_facts.SavedFactsError, match=r'^f.json: %s.%s is missing' % (
            re.escape(where), required)):
        saved_facts.from_saved(dict({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}}, **wrap(item)),
                               'h', 'f.json')


def test_a_saved_string_refused_says_what_was_expected_and_its_bound():
    for item, expected in (({'message': 3}, 'a string of at most 65536 characters'),
                           ({'message': None}, 'a string of at most 65536 characters'),
                           ({'groups': '1'}, 'an integer from 0 to 2147483648')):
        with pytest.raises(saved_facts.SavedFactsError) as err:
            saved_facts.from_saved({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {'iommu': item}}, 'h',
                                   'f.json')
        assert str(err.value).endswith('; expected %s' % expected), str(err.value)


def test_a_saved_facts_text_is_read_up_to_16_mib_and_refused_one_character_past():
    at_bound = '{}' + ' ' * (16 * 1024 * 1024 - 2)
    assert saved_facts.loads(at_bound, 'f.json') == {}
    with pytest.raises(saved_facts.SavedFactsError, match=r'^f.json: 16777217 characters, more than the 16777216'):
        saved_facts.loads(at_bound + ' ', 'f.json')


def test_a_saved_number_is_taken_up_to_12_digits_and_named_when_longer():
    assert saved_facts.loads('[999999999999, -999999999999, 0]', 'f.json') == [999999999999, -999999999999, 0]
    # the refusal shows the literal up to 20 characters, then "..."
    for literal, shown in (('1' * 13, '1' * 13), ('1' * 20, '1' * 20), ('1' * 21, '1' * 20 + '...'),
                           ('-' + '1' * 12 + '0', '-' + '1' * 12 + '0')):
        with pytest.raises(saved_facts.SavedFactsError) as err:
            saved_facts.loads('[%s]' % literal, 'f.json')
        assert str(err.value) == ('f.json: the number %s is longer than 12 digits; no saved fact is that large'
                                  % shown)


def test_a_key_given_twice_is_refused_naming_its_first_80_characters():
    key = 'k' * 80 + 'X'
    with pytest.raises(saved_facts.SavedFactsError) as err:
        saved_facts.loads('{"%s": 1, "%s": 2}' % (key, key), 'f.json')
    assert str(err.value) == "f.json: the key '%s' appears twice in one object; keep one" % ('k' * 80)
    assert saved_facts.loads('{"%s": 1, "%s": 2}' % (key, key[:-1]), 'f.json') == {key: 1, key[:-1]: 2}


def test_a_saved_document_hands_on_only_the_facts_never_its_bookkeeping():
    doc = {'format_version': 2, 'host': 'h', 'source': 's', 'gpuvirt_pci_devices': {}, 'gpuvirt_node_name': 'n',
           'gpuvirt_os_tag': 't'}
    want = {'gpuvirt_pci_devices': {}, 'gpuvirt_node_name': 'n', 'gpuvirt_os_tag': 't'}
    assert saved_facts.from_saved(doc, 'h', 'f.json') == want
    assert saved_facts.from_saved(json.dumps(doc), 'h', 'f.json') == want


@pytest.mark.parametrize('holders, where', [('abc', '$.holders is str'), (None, '$.holders is NoneType'),
                                            ([{'pid': 0, 'executable': 'a', 'device': '/dev/nvidia0'}],
                                             '$.holders[0].pid is int 0')])
def test_a_live_holders_result_of_another_shape_is_refused_naming_its_path(holders, where):
    live = {'held': True, 'holders': [{'pid': 7, 'command': 'app --token=x', 'executable': 'app',
                                       'device': '/dev/nvidia0'}]}
    assert saved_facts.check_live(live, 'gpu-1', 'gpuvirt_gpu_holders') is live
    with pytest.raises(saved_facts.SavedFactsError) as err:
        saved_facts.check_live(dict(live, holders=holders), 'gpu-1', 'gpuvirt_gpu_holders')
    assert str(err.value).startswith('the gpuvirt_gpu_holders gathered from gpu-1: %s' % where), str(err.value)


# A field both bounded and held to a pattern: a value past the bound is refused naming the bound, one at the bound
# that fits no pattern naming only what was expected (the pattern's own length never decides which).
SF_BOUNDED = [
    ('device', 'bdf', 16, 'a PCI address such as 0000:41:00.0', False, 'x'),
    ('device', 'class_id', 4, 'a 4-digit hex class', True, 'x'),
    ('device', 'vendor_id', 4, 'a 4-digit hex id', True, 'x'),
    ('device', 'device_id', 4, 'a 4-digit hex id', True, 'x'),
    ('device', 'subsystem_vendor_id', 4, 'a 4-digit hex id', True, 'x'),
    ('device', 'subsystem_device_id', 4, 'a 4-digit hex id', True, 'x'),
    ('device', 'revision', 2, 'a 2-digit hex revision', True, 'x'),
    ('device', 'prog_if', 2, 'a 2-digit hex programming interface', True, 'x'),
    ('device', 'driver', 255, 'a kernel driver name', True, '!'),
    ('device', 'kernel_modules', 255, 'a kernel module name', False, '!'),
    ('device', 'iommu_group', 10, 'an IOMMU group number', True, 'x'),
    ('pci', 'gpus_by_driver', 255, 'a kernel driver name', False, '!'),
    ('host_interface', 'evidence', 512, 'a sentence of printable ASCII', False, '\x01'),
    ('host_interface', 'kernel_release', 64, 'a kernel release such as 6.8.0-60-generic', True, '!'),
    ('host_interface', 'driver_version', 32, 'an NVIDIA driver version such as 580.82.02', True, 'x'),
    ('holder', 'executable', 255, saved_facts.EXECUTABLE_EXPECTED, False, '!'),
    ('holder', 'device', 64, 'an NVIDIA device file', False, 'x'),
    ('holder', 'unit', 255, 'a systemd unit name', True, 'x'),
    ('document', 'gpuvirt_node_name', 253, 'a node name (DNS-1123 subdomain)', False, '!'),
    ('document', 'gpuvirt_os_tag', 128, 'an OS tag such as rhcos4.18 (an image tag)', False, '!'),
]


@pytest.mark.parametrize('container, field, bound, expected, nullable, char', SF_BOUNDED,
                         ids=['%s.%s' % (b[0], b[1]) for b in SF_BOUNDED])
def test_a_saved_string_past_its_bound_is_refused_naming_the_bound_at_it_naming_its_grammar(
        container, field, bound, expected, nullable, char):
    expected += ' or null' if nullable else ''
    for length, said in ((bound + 1, '%s of at most %d characters' % (expected, bound)), (bound, expected)):
        text = char * length
        value = {'kernel_modules': [text], 'evidence': [text]}.get(field, {text: []} if field == 'gpus_by_driver'
                                                                   else text)
        doc, dummy, dummy = _sf_document(container, field, value)
        with pytest.raises(saved_facts.SavedFactsError) as err:
            saved_facts.from_saved(doc, 'h', 'f.json')
        assert str(err.value).endswith('; expected %s' % said), (length, str(err.value))


# The object table of k8s_objects_apply (apply_rules): each content check refuses exactly what it names, and its
# valid neighbour passes; a refusal names every row of the object's kind it was judged by.
APPLY_NS = {'operator': 'nvidia-gpu-operator', 'workload': 'vms'}
PULL_SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/dockerconfigjson',
               'metadata': {'name': 'pull', 'namespace': 'nvidia-gpu-operator'},
               'data': {'.dockerconfigjson': 'e30='}}


def _apply_refusal(obj, namespaces=None):
    with pytest.raises(ManifestError) as err:
        k8s_apply.checked_objects([obj], APPLY_NS if namespaces is None else namespaces)
    return str(err.value)


@pytest.mark.parametrize('good', [
    PULL_SECRET, dict(PULL_SECRET, metadata=dict(PULL_SECRET['metadata'], labels={'app': 'x'})),
    dict(dict((k, v) for k, v in PULL_SECRET.items() if k != 'data'), stringData={'.dockerconfigjson': '{}'}),
    dict(PULL_SECRET, stringData={'.dockerconfigjson': '{}'})])
def test_a_pull_secret_is_taken_with_data_or_string_data_and_labels(good):
    assert k8s_apply.checked_objects([good], APPLY_NS) == [good]


@pytest.mark.parametrize('bad, said', [
    (dict(PULL_SECRET, immutable=True), 'the Secret holds immutable; the collection writes only apiVersion, data, '
                                        'kind, metadata, stringData, type there'),
    (dict(PULL_SECRET, metadata=dict(PULL_SECRET['metadata'], annotations={'a': 'b'})),
     'its metadata holds annotations; the collection writes only labels, name, namespace there'),
    (dict((k, v) for k, v in PULL_SECRET.items() if k != 'data'), 'it holds no .dockerconfigjson'),
    (dict(PULL_SECRET, data={}), 'its data holds keys other than .dockerconfigjson'),
    (dict(PULL_SECRET, stringData={'.dockerconfigjson': '{}', 'x': 'y'}),
     'its stringData holds keys other than .dockerconfigjson'),
    (dict(PULL_SECRET, stringData=['.dockerconfigjson']), 'its stringData holds keys other than .dockerconfigjson'),
])
def test_a_pull_secret_with_anything_more_or_less_is_refused_naming_it(bad, said):
    assert 'the registry pull Secret: %s' % said in _apply_refusal(bad)


@pytest.mark.parametrize('bad, said', [
    ({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nvidia-gpu-operator'}, 'spec': {}},
     'the Namespace holds spec; the collection writes only apiVersion, kind, metadata there'),
    ({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nvidia-gpu-operator', 'annotations': {}}},
     'its metadata holds annotations; the collection writes only labels, name there'),
])
def test_a_namespace_object_with_a_key_the_collection_never_writes_is_refused_naming_it(bad, said):
    good = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nvidia-gpu-operator', 'labels': {'a': 'b'}}}
    assert k8s_apply.checked_objects([good], APPLY_NS) == [good]
    assert "the GPU Operator's or NFD's Namespace: %s" % said in _apply_refusal(bad)


VGPU_CM = {'apiVersion': 'v1', 'kind': 'ConfigMap',
           'metadata': {'name': 'vgpu-devices', 'namespace': 'nvidia-gpu-operator'},
           'data': {'config.yaml': 'version: v1\n'}}


@pytest.mark.parametrize('bad, said', [
    (dict(VGPU_CM, binaryData={}), 'the ConfigMap holds binaryData; the collection writes only apiVersion, data, kind, '
                                   'metadata there'),
    (dict(VGPU_CM, metadata=dict(VGPU_CM['metadata'], labels={})),
     'its metadata holds labels; the collection writes only name, namespace there'),
    (dict(VGPU_CM, data={'config.yaml': '', 'x': ''}), "its data holds ['config.yaml', 'x']; the vGPU device "
                                                       "ConfigMap holds config.yaml alone"),
    (dict(VGPU_CM, data={}), 'its data holds []; the vGPU device ConfigMap holds config.yaml alone'),
    (dict(VGPU_CM, data=['config.yaml']), 'its data holds no mapping; the vGPU device ConfigMap holds config.yaml '
                                          'alone'),
    (dict((k, v) for k, v in VGPU_CM.items() if k != 'data'), 'its data holds no mapping'),
])
def test_the_vgpu_configmap_holds_its_one_key_alone(bad, said):
    assert k8s_apply.checked_objects([VGPU_CM], APPLY_NS) == [VGPU_CM]
    assert 'the vGPU device ConfigMap: %s' % said in _apply_refusal(bad)


def test_a_row_describes_the_names_it_takes_by_its_kind_of_name():
    # the sink holds every name to the DNS-1123 grammar first (k8s_apply._check_one), so a row's own pattern is
    # named in a refusal only past it: the sentence is that row's, by the kind of its name
    declared = apply_rules.checked_namespaces({'operator': 'gpu'})
    said = dict(((r.api_version, r.kind, r.namespace), r.describe_name(declared)) for r in apply_rules.RULES)
    assert said[('nfd.openshift.io/v1', 'NodeFeatureDiscovery', 'nfd')] == \
        'a name matching %s' % apply_rules._DNS_SUBDOMAIN.pattern
    assert said[('operators.coreos.com/v1', 'OperatorGroup', 'operator')] == 'the name nvidia-gpu-operator-group'
    assert said[('v1', 'Namespace', None)] == \
        'one of the namespaces this call declares for operator or nfd (gpu, openshift-nfd)'
    assert said[(apply_rules.mc.MC_API_VERSION, 'MachineConfig', None)].startswith('a name holding "gpuvirt"')


OPERATOR_GROUP = {'apiVersion': 'operators.coreos.com/v1', 'kind': 'OperatorGroup',
                  'metadata': {'name': 'nvidia-gpu-operator-group', 'namespace': 'nvidia-gpu-operator'},
                  'spec': {'targetNamespaces': ['nvidia-gpu-operator']}}


def test_an_operator_group_targets_its_own_namespace_alone_and_a_refusal_names_every_row_of_its_kind():
    assert k8s_apply.checked_objects([OPERATOR_GROUP], APPLY_NS) == [OPERATOR_GROUP]
    wide = dict(OPERATOR_GROUP, spec={'targetNamespaces': ['nvidia-gpu-operator', 'vms']})
    assert _apply_refusal(wide).startswith(
        "object number 0 (OperatorGroup nvidia-gpu-operator/nvidia-gpu-operator-group) is refused: the GPU "
        "Operator's OperatorGroup: its targetNamespaces are ['nvidia-gpu-operator', 'vms']; the collection's "
        "OperatorGroup targets its own namespace alone; NFD's OperatorGroup goes in the nfd namespace "
        "(openshift-nfd); nothing was sent")
    # the name of NFD's group in the operator's namespace: each row says why it is not that row
    renamed = dict(OPERATOR_GROUP, metadata=dict(OPERATOR_GROUP['metadata'], name='openshift-nfd-group'))
    assert "is refused: the GPU Operator's OperatorGroup has the name nvidia-gpu-operator-group; NFD's " \
           "OperatorGroup goes in the nfd namespace (openshift-nfd); nothing" in _apply_refusal(renamed)


VGPU_VF_SCRIPT = (pathlib.Path(__file__).resolve().parents[3] / 'roles' / 'vgpu_vf' / 'files' /
                  'gpuvirt_vgpu_vf_restore.py').read_text(encoding='utf-8')


def _vf_machineconfig(units):
    obj = apply_rules.mc.build_vgpu_vf_machineconfig('gpu-vf', VGPU_VF_SCRIPT, '/usr/bin/python3', 300, None)
    obj['spec']['config']['systemd']['units'] = units(obj['spec']['config']['systemd']['units'][0])
    return obj


@pytest.mark.parametrize('units', [
    lambda unit: ['x'], lambda unit: [unit['contents']], lambda unit: [],
    lambda unit: [dict(unit, contents=unit['contents'].replace('TimeoutStartSec=', 'TimeoutSec='))],
    lambda unit: [dict(unit, contents=unit['contents'].replace('ExecStart=', 'ExecStartPost='))]],
    ids=['a string', 'its text alone', 'none', 'no TimeoutStartSec', 'no ExecStart'])
def test_a_vf_machineconfig_without_the_roles_one_unit_is_refused_naming_it(units):
    good = _vf_machineconfig(lambda unit: [unit])
    assert k8s_apply.checked_objects([good]) == [good]
    assert 'carries no unit of the vgpu_vf role (one unit, its ExecStart and TimeoutStartSec)' in \
        _apply_refusal(_vf_machineconfig(units))


@pytest.mark.parametrize('passthrough', [True, False])
def test_an_iommu_machineconfig_keeps_each_extra_argument_with_or_without_iommu_pt(passthrough):
    extra = 'vfio_iommu_type1.allow_unsafe_interrupts=1'
    good = apply_rules.mc.build_machineconfig('gpu', apply_rules.mc.iommu_kernel_args('intel', passthrough, [extra]),
                                              True)
    assert good['spec']['kernelArguments'] == ['intel_iommu=on'] + ['iommu=pt'] * passthrough + [extra]
    assert k8s_apply.checked_objects([good]) == [good]
    # the same arguments twice: never what the builder makes
    good['spec']['kernelArguments'].append(extra)
    assert 'it is not the IOMMU MachineConfig the collection builds' in _apply_refusal(good)


def test_namespaces_of_another_shape_are_refused_naming_the_roles_a_caller_declares():
    assert apply_rules.checked_namespaces(None) == {'nfd': ('openshift-nfd',)}
    with pytest.raises(apply_rules.RuleError) as err:
        apply_rules.checked_namespaces(['gpu'])
    assert str(err.value) == 'namespaces: expected a mapping of operator/kubevirt/workload to namespaces, got a list'


# --- trust-launch: launch_vars (the extra variables and the inventory's own) -------------------------------------
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import launch_vars  # noqa: E402

LAUNCH_NAMES = launch_vars.collection_names()


# Ansible's own variables, written out here rather than read from launch_vars.SPECIAL: the magic variables of
# Ansible's "Special Variables" reference (reference_appendices/special_variables: "These variables cannot be set
# directly by the user; Ansible will always override them"), the play keywords environment and vars, and item, the
# default loop variable (loop_control.loop_var)
@pytest.mark.parametrize('name', [
    'group_names', 'groups', 'hostvars', 'inventory_dir', 'inventory_file', 'inventory_hostname',
    'inventory_hostname_short', 'omit', 'play_hosts', 'playbook_dir', 'role_name', 'role_names', 'role_path',
    'environment', 'vars', 'item', 'ansible_host', 'ANSIBLE_become_password'])
def test_each_of_ansible_s_own_variables_is_refused_as_an_extra_variable(name):
    assert launch_vars.ansible_owned(name)
    (problem,) = launch_vars.extra_var_problems(LAUNCH_NAMES, {name: 1})
    assert problem.startswith('%s (given by the extra variables) is a variable Ansible reads itself' % name)
    # allowed by name on the controller: no refusal
    assert launch_vars.extra_var_problems(LAUNCH_NAMES, {name: 1}, allowed_ansible=[name]) == []


@pytest.mark.parametrize('name', ['groupsx', 'my_groups', 'omit_', 'items', 'variables', 'inventory_files'])
def test_a_name_beside_ansible_s_own_is_not_refused(name):
    assert not launch_vars.ansible_owned(name)
    assert launch_vars.extra_var_problems(LAUNCH_NAMES, {name: 1}) == []


@pytest.mark.parametrize('name', [123, None, 1.5, ('gpuvirt_x',), b'gpuvirt_x'])
def test_a_variable_name_that_is_no_string_is_not_judged_and_does_not_crash(name):
    # YAML gives an int key for `1: x` in host_vars; it is not a name of ours
    assert LAUNCH_NAMES.verdict(name) is None
    assert launch_vars.problems(LAUNCH_NAMES, {name: ['the inventory host h']}) == []
    # beside names that are strings (a real inventory or extra-variables file): the others are still judged
    given = {name: ['the inventory host h'], '__vfio_files': ['the inventory host h'], 'foo': ['the inventory host h']}
    (problem,) = launch_vars.problems(LAUNCH_NAMES, given)
    assert problem.startswith('__vfio_files (given by the inventory host h) is internal')
    (problem,) = launch_vars.extra_var_problems(LAUNCH_NAMES, {name: 1, 'groups': 2, 'foo': 3})
    assert problem.startswith('groups (given by the extra variables) is a variable Ansible reads itself')


@pytest.mark.parametrize('places, tail', [(1, ''), (3, ''), (4, ' and 1 more'), (5, ' and 2 more')])
def test_a_refusal_names_three_places_and_counts_the_others(places, tail):
    given = {'__vfio_files': ['the inventory host h%d' % i for i in range(places)]}
    (problem,) = launch_vars.problems(LAUNCH_NAMES, given)
    shown = ', '.join(sorted(given['__vfio_files'])[:3])
    assert problem.startswith('__vfio_files (given by %s%s) is internal' % (shown, tail)), problem
    assert ' more)' not in problem or tail


# --- trust-launch: fleet.hosts_pattern_problem (the plays' host pattern, a survey answer or -e) ------------------
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet as fleet_model  # noqa: E402


@pytest.mark.parametrize('length, longer', [(1024, False), (1025, True)])
def test_a_host_pattern_is_measured_before_its_parts_are_named(length, longer):
    # 1024 characters at most (every pool group joined is far shorter): past it the length is the refusal, not the
    # parts, so no part of a long text is shown
    problem = fleet_model.hosts_pattern_problem('x' * length)
    if longer:
        assert problem == ('a host pattern of %d characters is longer than every pool group joined (1024 at most)'
                           % length)
    else:
        assert problem.startswith("'%s' is not a GPU pool group" % ('x' * 64)), problem


def test_a_host_pattern_shows_five_unknown_parts_of_64_characters_each():
    parts = ['%s%s' % (chr(ord('a') + i), 'y' * 70) for i in range(6)]
    problem = fleet_model.hosts_pattern_problem(':'.join(parts))
    shown = ', '.join(repr(p[:64]) for p in parts[:5])
    assert problem.startswith('%s are not a GPU pool group' % shown), problem
    assert repr(parts[5][:64]) not in problem and repr(parts[0][:65]) not in problem
    # one unknown part: "is"
    assert fleet_model.hosts_pattern_problem('all').startswith("'all' is not a GPU pool group")
    # its valid neighbour: the pool groups themselves
    assert fleet_model.hosts_pattern_problem(':'.join(fleet_model.GPU_GROUPS[:2])) is None
