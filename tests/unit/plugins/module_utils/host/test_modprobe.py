# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""modprobe: the one writer of the kernel module configuration, the modprobe.d blacklist (nouveau role and
MachineConfig) and the vfio role's modprobe.d, modules-load.d, initramfs-tools and dracut texts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import modprobe
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators


def test_nouveau_gets_its_modeset_option():
    assert modprobe.blacklist_text('nouveau') == 'blacklist nouveau\noptions nouveau modeset=0\n'


def test_a_module_without_options_is_only_blacklisted():
    assert modprobe.blacklist_text('nvidiafb') == 'blacklist nvidiafb\n'


def test_the_header_comes_first_as_a_comment():
    assert modprobe.blacklist_text('nouveau', 'Managed by me') == \
        '# Managed by me\nblacklist nouveau\noptions nouveau modeset=0\n'


@pytest.mark.parametrize('module', ['', 'nouveau\nblacklist x', 'a b', '../x', None, 3, 'x' * 65])
def test_a_bad_module_name_is_refused(module):
    with pytest.raises(modprobe.ModprobeError, match='is not a module name'):
        modprobe.blacklist_text(module)


@pytest.mark.parametrize('header', ['', '  ', 'two\nlines', 'cr\r', 'ff\x0c', 'ls\u2028', 5])
def test_a_header_that_is_not_one_line_is_refused(header):
    with pytest.raises(modprobe.ModprobeError, match='is not one line of text'):
        modprobe.blacklist_text('nouveau', header)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=70), st.one_of(st.none(), st.text(max_size=40)))
def test_any_text_is_either_refused_or_gives_one_blacklist_line(module, header):
    try:
        text = modprobe.blacklist_text(module, header)
    except modprobe.ModprobeError:
        return
    lines = text.splitlines()
    assert text.endswith('\n') and text.count('\n') == len(lines)
    assert [line for line in lines if not line.startswith('#')][0] == 'blacklist ' + module
    assert sum(1 for line in lines if line.startswith('#')) == (0 if header is None else 1)


# --- the vfio role's files: one writer, every value checked here too (the dracut file is sourced by bash as root,
# a modprobe.d line can be an "install" command)

HEADER = '# Managed by gpuvirt.provision (vfio role).\n'
MODULES = ['vfio', 'vfio_iommu_type1', 'vfio_pci']


def test_vfio_files_keep_the_bytes_hosts_carry():
    # the texts the role's templates wrote before this writer existed (hosts configured then see no change)
    files = modprobe.vfio_files(['10de:1aef', '10de:2236'], ['nouveau', 'nvidia', 'nvidiafb', 'snd_hda_intel'],
                                MODULES)
    assert files == {
        'modprobe': (HEADER + 'options vfio-pci ids=10de:1aef,10de:2236\nsoftdep nouveau pre: vfio-pci\n'
                     'softdep nvidia pre: vfio-pci\nsoftdep nvidiafb pre: vfio-pci\n'
                     'softdep snd_hda_intel pre: vfio-pci\n'),
        'modules_load': HEADER + 'vfio\nvfio_iommu_type1\nvfio_pci\n',
        'initramfs_tools': 'vfio\nvfio_iommu_type1\nvfio_pci',
        'dracut': HEADER + 'add_drivers+=" vfio vfio_iommu_type1 vfio_pci "\n',
    }


def test_no_softdeps_leave_only_the_options_line():
    assert modprobe.vfio_options_text(['10de:2236'], []) == HEADER + 'options vfio-pci ids=10de:2236\n'


def test_ids_are_written_in_lower_case():
    assert 'ids=10de:2236,10de:abcd\n' in modprobe.vfio_options_text(['10DE:2236', '10de:ABCD'], [])


def test_one_module_spelt_two_ways_is_written_once():
    # kmod treats '-' and '_' alike (modname_normalize): the first spelling stays
    assert modprobe.modules_load_text(['vfio-pci', 'vfio_pci', 'vfio']) == HEADER + 'vfio-pci\nvfio\n'


def test_no_id_is_refused():
    with pytest.raises(modprobe.ModprobeError, match='needs at least one'):
        modprobe.vfio_options_text([], ['nouveau'])


# the hostile alphabet: quotes, command separators and substitutions, line breaks of every kind, NUL, spaces,
# a modprobe.d command, an option-like name, a name past the kernel's limit, 10k characters
HOSTILE_MODULES = [
    'vfio_pci" ; touch /PWNED ; x="', 'vfio_pci;reboot', '$(reboot)', '`reboot`', 'vfio_pci\ninstall vfio_pci /bin/sh',
    'vfio_pci\n', 'vfio_pci\r', '\rvfio', 'vfio\x00pci', 'vfio pci', ' vfio', 'install vfio_pci /bin/sh -c id',
    'vfio\u2028pci', 'vfio\x85', 'vfio\tpci', "vfio'", 'vfio\\', 'vfio.ko', '../vfio', '-vfio', '--help', '',
    'x' * 56, 'x' * 10000, 'vfiö', None, 3, ['vfio'],
]
HOSTILE_IDS = [
    '10de:2236\n', '10de:2236\r', '10de:22;36', '10de:2236,10de:1aef', '10de:2236 ', ' 10de:2236', '10de2236',
    '10de:223', '10de:22366', '$(reboot)', '`id`', '10de:2236"', '10de:2236\x00', '10de:2236\u2028', 'install',
    '0x10de:0x2236', '10de:2236:10de:1482', '10de:ghij', '1' * 10000, '', None, 0x10de,
]


@pytest.mark.parametrize('module', HOSTILE_MODULES)
@pytest.mark.parametrize('render', [
    lambda m: modprobe.vfio_options_text(['10de:2236'], [m]),
    lambda m: modprobe.modules_load_text([m]),
    lambda m: modprobe.initramfs_tools_block(['vfio', m]),
    lambda m: modprobe.dracut_text([m]),
    lambda m: modprobe.vfio_files(['10de:2236'], [], [m]),
], ids=['softdep', 'modules_load', 'initramfs_tools', 'dracut', 'vfio_files'])
def test_every_writer_refuses_a_hostile_module_naming_it(render, module):
    with pytest.raises(modprobe.ModprobeError) as e:
        render(module)
    assert repr(module)[:40] in str(e.value)


@pytest.mark.parametrize('value', HOSTILE_IDS)
def test_the_options_line_refuses_a_hostile_id_naming_it(value):
    with pytest.raises(modprobe.ModprobeError, match='vendor:device') as e:
        modprobe.vfio_options_text(['10de:1aef', value], ['nouveau'])
    assert 'vfio ids[1]' in str(e.value) and repr(value)[:40] in str(e.value)


@pytest.mark.parametrize('value', ['vfio_pci', ('vfio',), {'vfio': 1}, None])
def test_a_list_is_required(value):
    if isinstance(value, tuple):  # a tuple is a list for a play's purposes
        assert modprobe.modules_load_text(value) == HEADER + 'vfio\n'
        return
    with pytest.raises(modprobe.ModprobeError, match='is not a list'):
        modprobe.modules_load_text(value)


@pytest.mark.parametrize('module', HOSTILE_MODULES)
def test_the_blacklist_refuses_a_hostile_module(module):
    with pytest.raises(modprobe.ModprobeError, match='is not a module name'):
        modprobe.blacklist_text(module)


def test_the_longest_module_name_the_kernel_builds_is_accepted():
    # MODULE_NAME_LEN - 1 on 64-bit (include/linux/module.h: MODULE_NAME_LEN = 64 - sizeof(unsigned long))
    assert modprobe.modules_load_text(['a' * 55]) == HEADER + 'a' * 55 + '\n'
    assert modprobe.blacklist_text('8021q') == 'blacklist 8021q\n'


_MODULE_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-'
_IDS = st.lists(st.one_of(st.text(max_size=12), st.from_regex(r'[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}', fullmatch=True)),
                max_size=4)
_MODULE_LISTS = st.lists(st.one_of(st.text(max_size=60), st.text(alphabet=_MODULE_CHARS, max_size=60),
                                   st.from_regex(r'[A-Za-z0-9][A-Za-z0-9_-]{0,54}', fullmatch=True)), max_size=4)


@settings(max_examples=300, deadline=None)
@given(_IDS, _MODULE_LISTS, _MODULE_LISTS)
def test_accepted_values_render_only_grammar_characters(ids, softdeps, modules):
    try:
        files = modprobe.vfio_files(ids, softdeps, modules)
    except modprobe.ModprobeError:
        assert not all(isinstance(i, str) and len(i) == 9 and validators.PCI_ID_RE.fullmatch(i) for i in ids) \
            or not ids \
            or not all(len(m) <= 55 and validators.KERNEL_MODULE_RE.fullmatch(m) for m in softdeps + modules)
        return
    # each line is the header, or fixed words around values of the grammars' characters only
    words = {
        'modprobe': r'options vfio-pci ids=[0-9a-f]{4}:[0-9a-f]{4}(?:,[0-9a-f]{4}:[0-9a-f]{4})*'
                    r'|softdep [A-Za-z0-9][A-Za-z0-9_-]{0,54} pre: vfio-pci',
        'modules_load': r'[A-Za-z0-9][A-Za-z0-9_-]{0,54}',
        'initramfs_tools': r'[A-Za-z0-9][A-Za-z0-9_-]{0,54}',
        'dracut': r'add_drivers\+=" (?: |(?:[A-Za-z0-9][A-Za-z0-9_-]{0,54} )+)"',
    }
    for kind, text in files.items():
        lines = text.split('\n')
        if kind != 'initramfs_tools':
            assert lines.pop() == '' and lines.pop(0) == HEADER.rstrip('\n')
        for line in lines:
            if kind == 'initramfs_tools' and not modules:
                assert line == ''
                continue
            assert re.fullmatch(words[kind], line), (kind, line)


# --- the grammars (module_utils/model/validators.py), as the role's validate step applies them

def _named(value):
    """How a refusal names ``value``: its repr, the first 200 characters of a longer one (an input of any size is
    named without being repeated whole)."""
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + '...'


@pytest.mark.parametrize('value', ['vfio', 'vfio_pci', 'vfio-pci', 'snd_hda_intel', '8021q', 'A' * 55])
def test_kernel_module_accepts_module_names(value):
    assert validators.kernel_module(value, 'vfio_modules') == value


@pytest.mark.parametrize('value', HOSTILE_MODULES)
def test_kernel_module_refuses_naming_the_variable_and_the_value(value):
    with pytest.raises(validators.ValidationError) as e:
        validators.kernel_module(value, 'vfio_modules[0]')
    assert str(e.value).startswith('vfio_modules[0]: %s' % _named(value))
    assert 'kernel module name such as vfio_pci' in str(e.value)


@pytest.mark.parametrize('value,expected', [('10de:2236', '10de:2236'), ('10DE:22Aa', '10de:22aa')])
def test_pci_id_accepts_either_case_and_returns_lower_case(value, expected):
    assert validators.pci_id(value, 'vfio_device_ids') == expected


@pytest.mark.parametrize('value', HOSTILE_IDS)
def test_pci_id_refuses_naming_the_variable_and_the_value(value):
    with pytest.raises(validators.ValidationError) as e:
        validators.pci_id(value, 'vfio_persistent_ids[0]')
    assert str(e.value).startswith('vfio_persistent_ids[0]: %s' % _named(value)) and '10de:2236' in str(e.value)


@pytest.mark.parametrize('value,directory,filename', [
    ('/etc/modprobe.d/gpuvirt-vfio.conf', 'modprobe.d', None),
    ('/run/modprobe.d/a.b.conf', 'modprobe.d', None),
    ('/tmp/pytest-of-root/x_1/etc/modules-load.d/gpuvirt-vfio.conf', 'modules-load.d', None),
    ('/etc/dracut.conf.d/90-gpuvirt.conf', 'dracut.conf.d', None),
    ('/etc/initramfs-tools/modules', 'initramfs-tools', 'modules'),
])
def test_config_path_accepts_files_the_consumer_reads(value, directory, filename):
    assert validators.config_path(value, 'vfio_modprobe_path', directory, filename) == value


@pytest.mark.parametrize('value,directory,filename', [
    ('/etc/profile.d/gpuvirt-vfio.sh', 'modprobe.d', None),
    ('/etc/modprobe.d/gpuvirt-vfio.sh', 'modprobe.d', None),
    ('/etc/modprobe.d/../../root/.bashrc', 'modprobe.d', None),
    ('/etc/modprobe.d/../modprobe.d/x.conf', 'modprobe.d', None),
    ('/etc/modprobe.d/.hidden.conf', 'modprobe.d', None),
    ('/etc/modprobe.d/sub/x.conf', 'modprobe.d', None),
    ('etc/modprobe.d/x.conf', 'modprobe.d', None),
    ('/etc/modprobe.d/x.conf\n', 'modprobe.d', None),
    ('/etc/modprobe.d/a b.conf', 'modprobe.d', None),
    ('/etc/modprobe.d/$(reboot).conf', 'modprobe.d', None),
    ('/etc/modprobe.d/x.conf', 'modules-load.d', None),
    ('/etc/xmodprobe.d/x.conf', 'modprobe.d', None),
    ('/etc/initramfs-tools/modules.bak', 'initramfs-tools', 'modules'),
    ('/etc/initramfs-tools/conf.d/x.conf', 'initramfs-tools', 'modules'),
    ('/' + 'a/' * 3000 + 'modprobe.d/x.conf', 'modprobe.d', None),
    (None, 'modprobe.d', None),
])
def test_config_path_refuses_other_files_naming_them(value, directory, filename):
    with pytest.raises(validators.ValidationError) as e:
        validators.config_path(value, 'vfio_modprobe_path', directory, filename)
    assert str(e.value).startswith('vfio_modprobe_path: %s' % _named(value)) and directory in str(e.value)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=70))
def test_an_accepted_module_name_is_only_grammar_characters(value):
    try:
        validators.kernel_module(value, 'm')
    except validators.ValidationError:
        return
    assert 1 <= len(value) <= 55 and set(value) <= set(_MODULE_CHARS) and value[0] != '-'
