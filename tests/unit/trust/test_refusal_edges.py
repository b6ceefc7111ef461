# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The edges of the refusals docs/security.md lists: each bound a grammar or a reader applies is taken at its
value and refused one past it, and each check refuses exactly what it names while its valid neighbour passes.
These are the cases the mutation scopes trust-* (tools/mutation/scopes.json) found no test pinning: a bound
moved by one, a comparison loosened, a check dropped."""
from __future__ import annotations

import json

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record, modprobe
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
