# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host_rules filters: thin carriers of the module_utils rules into a play, failing as filters do."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuvirt.provision.plugins.filter import host_rules
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline, vfio_bind


def test_the_filters_are_registered():
    assert set(host_rules.FilterModule().filters()) >= {'iommu_kernel_args', 'modprobe_blacklist', 'invalid_bdfs',
                                                        'initramfs_command'}


@pytest.mark.parametrize('vendor,passthrough,expected', [
    ('intel', True, ['intel_iommu=on', 'iommu=pt']),
    ('amd', True, ['amd_iommu=on', 'iommu=pt']),
    ('intel', False, ['intel_iommu=on']),
    ('none', True, []),
    ('none', False, []),
])
def test_iommu_kernel_args(vendor, passthrough, expected):
    assert host_rules.iommu_kernel_args(vendor, passthrough) == expected
    assert expected == kernel_cmdline.host_iommu_args(vendor, passthrough)


def test_iommu_kernel_args_passthrough_defaults_to_true():
    assert host_rules.iommu_kernel_args('amd') == ['amd_iommu=on', 'iommu=pt']


@pytest.mark.parametrize('vendor,passthrough', [('arm', True), ('unknown', True), ('intel', 'false')])
def test_iommu_kernel_args_fails_as_a_filter(vendor, passthrough):
    with pytest.raises(AnsibleFilterError, match='iommu_kernel_args: '):
        host_rules.iommu_kernel_args(vendor, passthrough)


def test_modprobe_blacklist():
    assert host_rules.modprobe_blacklist('nouveau') == 'blacklist nouveau\noptions nouveau modeset=0\n'
    assert host_rules.modprobe_blacklist('nouveau', 'who') == '# who\nblacklist nouveau\noptions nouveau modeset=0\n'


@pytest.mark.parametrize('module,header', [('no uveau', None), ('nouveau', 'a\nb')])
def test_modprobe_blacklist_fails_as_a_filter(module, header):
    with pytest.raises(AnsibleFilterError, match='modprobe_blacklist: '):
        host_rules.modprobe_blacklist(module, header)


@pytest.mark.parametrize('values,bad', [
    (['0000:41:00.0', '10000:00:05.0', '1a2b3c4d:00:00.0'], []),
    (['41:00.0', '0000:41:00.0', '0000:C1:00.0', '123456789:00:00.0', 7, None],
     ['41:00.0', '0000:C1:00.0', '123456789:00:00.0', 7, None]),
    ([], []),
])
def test_invalid_bdfs(values, bad):
    assert host_rules.invalid_bdfs(values) == bad


@pytest.mark.parametrize('values', ['0000:41:00.0', None, {'a': 1}])
def test_invalid_bdfs_wants_a_list(values):
    with pytest.raises(AnsibleFilterError, match='invalid_bdfs: .* is not a list'):
        host_rules.invalid_bdfs(values)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.from_regex(r'(?:[0-9a-fA-F]{3,9}:)?[0-9a-fA-F]{1,3}:[0-9a-fA-F]{1,3}\.[0-9]', fullmatch=True),
                 st.text(max_size=20)))
def test_invalid_bdfs_refuses_exactly_what_the_binder_refuses(value):
    try:
        vfio_bind.validate_bdf(value)
        binder_accepts = True
    except vfio_bind.BindError:
        binder_accepts = False
    assert host_rules.invalid_bdfs([value]) == ([] if binder_accepts else [value])


def test_invalid_pci_ids_returns_what_the_writer_refuses():
    assert host_rules.invalid_pci_ids(['10de:2236', '10DE:1AEF', '10de:2236\n', '10de:22;36']) == \
        ['10de:2236\n', '10de:22;36']


def test_invalid_pci_ids_needs_a_list_naming_the_variable():
    with pytest.raises(AnsibleFilterError, match="vfio_device_ids is '10de:2236'"):
        host_rules.invalid_pci_ids('10de:2236', 'vfio_device_ids')


@pytest.mark.parametrize('value,grammar,expected', [
    (['vfio', 'vfio-pci'], 'kernel_modules', ['vfio', 'vfio-pci']),
    (['10DE:2236'], 'pci_ids', ['10de:2236']),
    ('/etc/modprobe.d/gpuvirt-vfio.conf', 'modprobe_d_path', '/etc/modprobe.d/gpuvirt-vfio.conf'),
    ('/etc/initramfs-tools/modules', 'initramfs_tools_modules_path', '/etc/initramfs-tools/modules'),
])
def test_host_checked_returns_the_checked_value(value, grammar, expected):
    assert host_rules.host_checked(value, grammar, 'v') == expected


@pytest.mark.parametrize('value,grammar,message', [
    (['vfio', 'vfio_pci" ; touch /PWNED ; x="'], 'kernel_modules', 'vfio_modules\\[1\\]: .vfio_pci'),
    ('vfio_pci', 'kernel_modules', "vfio_modules: 'vfio_pci' is not a list"),
    (['10de:2236\n'], 'pci_ids', "vfio_modules\\[0\\]: '10de:2236\\\\n'"),
    ('/etc/profile.d/x.sh', 'dracut_conf_d_path', "vfio_modules: '/etc/profile.d/x.sh' is not valid"),
    ('x', 'shell', 'unknown grammar'),
])
def test_host_checked_fails_as_a_filter_naming_the_variable(value, grammar, message):
    with pytest.raises(AnsibleFilterError, match=message):
        host_rules.host_checked(value, grammar, 'vfio_modules')


def test_vfio_files_renders_and_fails_as_a_filter():
    assert host_rules.vfio_files(['10de:2236'], [], ['vfio_pci'])['modules_load'].endswith('\nvfio_pci\n')
    with pytest.raises(AnsibleFilterError, match='vfio_files: .*vfio_pci;reboot'):
        host_rules.vfio_files(['10de:2236'], ['vfio_pci;reboot'], ['vfio_pci'])


@pytest.mark.parametrize('tool, family, expected', [
    ('auto', 'Debian', ['update-initramfs', '-u', '-k', 'all']),
    ('auto', 'RedHat', ['dracut', '-f', '--regenerate-all']),
    ('dracut', 'Debian', ['dracut', '-f', '--regenerate-all']),
    ('update-initramfs', 'RedHat', ['update-initramfs', '-u', '-k', 'all']),
])
def test_the_initramfs_command_is_one_of_two_vectors(tool, family, expected):
    assert host_rules.initramfs_command(tool, family) == expected


@pytest.mark.parametrize('tool', ['', 'dracut ', 'sh', '/bin/sh -c id', ['dracut'], None])
def test_any_other_initramfs_tool_is_refused_naming_the_variable(tool):
    with pytest.raises(AnsibleFilterError, match='nouveau_initramfs_tool'):
        host_rules.initramfs_command(tool, 'Debian')
