# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The standing hostile corpus: every source of docs/security.md's trust-boundary table fed the dangerous alphabet
(tests/unit/hostile_alphabet.py), and every sink receiving it refused or inert. One test per source -> sink row;
the parsers' own fine-grained tests live beside them, this file proves the boundary as a whole."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings

from hostile_alphabet import ALPHABET, has_code, hostile_text, spoiled

from ansible_collections.gpuvirt.provision.plugins.filter.saved_facts import from_saved_facts
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import (
    gpu_holders, kernel_cmdline, modprobe, saved_facts, vfio_bind, vgpu_interface, vgpu_types)
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import resource_names, validators

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# inventory, survey and -e -> every grammar checked before a name reaches an object, an argv or a file
GRAMMARS = [
    (validators.dns1123_label, ['gpu-operator', 'vms']),
    (validators.dns1123_subdomain, ['gpu-p01', 'gpu-p01.example.com']),
    (validators.label_value, ['A10-12Q', 'default']),
    (validators.helm_release_name, ['gpu-operator']),
    (validators.semver, ['v26.7.0', '0.4.0']),
    (validators.repo_url, ['https://helm.ngc.nvidia.com/nvidia', 'oci://registry.example.com/charts']),
    (validators.chart_ref, ['nvidia/gpu-operator']),
    (validators.oci_registry, ['registry.example.com:5000']),
    (validators.oci_repository, ['nvidia/vgpu-manager']),
    (validators.oci_tag, ['580.95.02-rhcos4.18']),
    (validators.kernel_module, ['vfio_pci', 'vfio-pci']),
    (validators.pci_id, ['10de:2236']),
    (validators.executable_name, ['nvidia-persistenced', 'Xorg']),
    (validators.systemd_unit, ['nvidia-persistenced.service']),
]


@pytest.mark.parametrize('check,valid', GRAMMARS, ids=[g[0].__name__ for g in GRAMMARS])
def test_survey_values_spoiled_by_the_alphabet_are_refused_naming_the_variable(check, valid):
    for good in valid:
        assert check(good, 'v') is not None
    refused = 0
    for value in spoiled(valid[0]):
        # what no grammar admits: code, a second line, a quote or expansion, or a very long value; a path piece
        # inside a URL or repository path ('nvidia/etc/passwd') is a name of that grammar, not a path on a host
        if not (has_code(value) or '"' in value or "'" in value or '$' in value or len(value) > 4096):
            continue
        with pytest.raises(validators.ValidationError, match='surveyed_var'):
            check(value, 'surveyed_var')
        refused += 1
    assert refused > len(ALPHABET)
    with pytest.raises(validators.ValidationError):
        check(valid[0] + 'a' * 10000, 'surveyed_var')


@pytest.mark.parametrize('check,valid', GRAMMARS, ids=[g[0].__name__ for g in GRAMMARS])
def test_survey_values_either_refused_or_free_of_code(check, valid):
    @SETTINGS
    @given(hostile_text(valid))
    def prop(value):
        try:
            accepted = check(value, 'v')
        except validators.ValidationError:
            return
        assert not has_code(accepted) and len(accepted) <= 4096
    prop()


# inventory, survey and sysfs driver names -> files a shell sources (dracut) and modprobe.d / modules-load.d
WRITERS = [
    ('dracut', lambda v: modprobe.dracut_text([v])),
    ('modules-load', lambda v: modprobe.modules_load_text([v])),
    ('initramfs-tools', lambda v: modprobe.initramfs_tools_block([v])),
    ('softdep', lambda v: modprobe.vfio_options_text(['10de:2236'], [v])),
    ('options ids', lambda v: modprobe.vfio_options_text([v], [])),
    ('blacklist', modprobe.blacklist_text),
]


@pytest.mark.parametrize('name,write', WRITERS, ids=[w[0] for w in WRITERS])
def test_module_files_refuse_the_alphabet(name, write):
    valid = '10de:2236' if name == 'options ids' else 'vfio_pci'
    for value in spoiled(valid) + ['vfio_pci" ; touch /PWNED ; x="', 'x\ninstall vfio_pci /bin/sh -c id']:
        with pytest.raises((modprobe.ModprobeError, validators.ValidationError)):
            write(value)


@pytest.mark.parametrize('name,write', WRITERS, ids=[w[0] for w in WRITERS])
def test_module_files_hold_only_grammar_characters(name, write):
    valid = ['10de:2236'] if name == 'options ids' else ['vfio_pci', 'nouveau']

    @SETTINGS
    @given(hostile_text(valid))
    def prop(value):
        try:
            text = write(value)
        except (modprobe.ModprobeError, validators.ValidationError):
            return
        body = [ln for ln in text.splitlines() if not ln.startswith('#')]
        assert all(not has_code(ln) and '"' not in ln.replace('add_drivers+=" ', '').rstrip('"') for ln in body)
    prop()


# inventory and survey -> the boot loader (kernel arguments)
def test_kernel_arguments_refuse_the_alphabet():
    for value in spoiled('intel_iommu=on'):
        if not has_code(value) and ' ' not in value and '"' not in value and "'" not in value \
                and '\\' not in value and len(value) < 4096:
            continue
        with pytest.raises(kernel_cmdline.CmdlineError):
            kernel_cmdline.validate_args([value])


# the host's /etc/default/grub -> the boot loader: a form the editor does not own is refused, never appended to
@pytest.mark.parametrize('line', [
    'GRUB_TIMEOUT=5; GRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root crashkernel=auto"',
    'true && GRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root"',
    'readonly GRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root"',
    'GRUB_TIMEOUT=5 \\\nGRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root"',
    'GRUB_TIMEOUT=5\x0cGRUB_CMDLINE_LINUX="rd.lvm.lv=rhel/root"',
])
def test_grub_files_in_forms_the_editor_does_not_own_are_refused(tmp_path, line):
    data = ('GRUB_DEFAULT=0\n' + line + '\n').encode('utf-8')
    with pytest.raises(kernel_cmdline.CmdlineError):
        kernel_cmdline.grub_default_update(data, 'GRUB_CMDLINE_LINUX', ['intel_iommu=on'], [],
                                           tmpdir=str(tmp_path))


# inventory and survey -> sysfs writes (vfio-pci binding addresses)
def test_vfio_addresses_refuse_the_alphabet():
    for value in spoiled('0000:41:00.0'):
        with pytest.raises(vfio_bind.BindError, match='is not a PCI address'):
            vfio_bind.validate_bdf(value)


# host output (sysfs mdev type names, pci.ids and lspci device names) -> Kubernetes resource names
def test_resource_names_from_host_output_are_refused_or_grammatical():
    @SETTINGS
    @given(hostile_text(['NVIDIA A10-12Q', 'GRID A100-4C', 'A10']))
    def prop(type_name):
        try:
            name = resource_names.mdev_resource_name(type_name, source='host h, mdev type')
        except resource_names.ResourceNameError as exc:
            assert 'host h, mdev type' in str(exc)
            return
        prefix, part = name.split('/', 1)
        assert prefix == 'nvidia.com' and 0 < len(part) <= 63 and not has_code(part) and '/' not in part
    prop()


# host output (a VF's nvidia/creatable_vgpu_types, the kernel release, the driver version) -> preflight's messages,
# saved facts and, through the type names, resource names
@pytest.mark.parametrize('name', spoiled('NVIDIA L40S-24Q'))
def test_creatable_vgpu_type_names_and_versions_refuse_the_alphabet(name):
    try:
        parsed = vgpu_types.parse_creatable('ID    : vGPU Name\n1155  : %s\n' % name, 'nvidia/creatable_vgpu_types')
    except vgpu_types.VgpuError as exc:
        assert str(exc).startswith('nvidia/creatable_vgpu_types')
    else:
        assert all(vgpu_types.CREATABLE_LINE.fullmatch('%s : %s' % pair) and not has_code(pair[1])
                   and '/' not in pair[1] for pair in parsed), parsed
    for valid, read in (('6.8.0-60-generic', vgpu_interface.kernel_version),
                        ('580.82.02', vgpu_interface.driver_branch)):
        for value in spoiled(valid):
            assert read(value) is None or value.strip() == valid, value


# host processes (any user names a process) -> the saved holder record
@pytest.mark.parametrize('argv0', ALPHABET + ["{{ lookup('ansible.builtin.pipe', 'touch /tmp/x') }}"])
def test_a_holders_name_from_any_user_is_saved_only_when_grammatical(tmp_path, argv0):
    proc = tmp_path / 'proc'
    (proc / '4242' / 'fd').mkdir(parents=True)
    (proc / '4242' / 'cmdline').write_bytes(argv0.encode('utf-8', 'surrogatepass') + b'\0--secret=hunter2\0')
    os.symlink('/dev/nvidiactl', str(proc / '4242' / 'fd' / '3'))
    result = gpu_holders.scan(str(proc))
    (holder,) = result['holders']
    facts = {'gpuvirt_pci_devices': {'devices': [], 'gpus': [], 'nvswitches': [], 'gpus_by_driver': {},
                                     'iommu': {'enabled': True, 'groups': 1, 'message': ''}},
             'gpuvirt_mdev_types': {'parents': [], 'interfaces': [], 'state': 'none', 'available_types': [],
                                    'message': ''},
             'gpuvirt_gpu_holders': dict(result, unreadable=0), 'gpuvirt_node_name': 'h1',
             'gpuvirt_os_tag': 'ubuntu22.04'}
    doc = saved_facts.to_saved('h1', facts, 'test')
    (saved,) = doc['gpuvirt_gpu_holders']['holders']
    assert saved['executable'] == '?' or (not has_code(saved['executable']) and '/' not in saved['executable'])
    assert 'hunter2' not in json.dumps(doc) and 'command' not in saved
    assert holder['pid'] == 4242


# host processes (any user who may open /dev/nvidiactl writes their command line) -> refusal messages and module
# results: the terminal of the operator and the controller's logs see the executable name only
HOSTILE_ARGV = ['/tmp/\x1b]2;owned\x07\x1b[2Japp\nPID 1 (sshd) holds nothing', '--password=s3cret',
                "{{ lookup('ansible.builtin.pipe', 'id') }}", '\x1b[31m\r\nforged line']


@pytest.mark.parametrize('argv', [HOSTILE_ARGV, ['app'] + HOSTILE_ARGV[1:]], ids=['hostile-argv0', 'hostile-args'])
def test_a_holders_command_line_reaches_no_message_nor_result(tmp_path, argv):
    from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan_reads, preflight
    from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra
    proc = tmp_path / 'proc'
    (proc / '4242' / 'fd').mkdir(parents=True)
    (proc / '4242' / 'cmdline').write_bytes('\0'.join(argv).encode() + b'\0')
    (proc / '4242' / 'comm').write_text('\x1b[2J{{ x }}\n')
    os.symlink('/dev/nvidiactl', str(proc / '4242' / 'fd' / '3'))
    result = gpu_holders.scan(str(proc))
    held = [{'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'driver': 'nvidia'}]
    outputs = [result,
               host_plan_reads._held_message('gpu-1', held, result),
               dra.classify_holders(result['holders'], '0.4.1'),
               [preflight.check_host('gpu-1', [pool], {'gpus': [{'bdf': '0000:41:00.0', 'driver': 'nvidia'}],
                                                       'iommu': {'enabled': True}},
                                     holders=result, iommu_firmware=True) for pool in ('vm-passthrough', 'dra')]]
    text = repr(outputs) + ''.join(str(o) for o in outputs)
    for bad in ('s3cret', 'password', '\x1b', '\\x1b', '{{', 'sshd', 'forged', 'owned', '\r'):
        assert bad not in text, (bad, text)
    expected = 'app' if argv[0] == 'app' else '?'
    assert result['message'] == 'PID 4242 (%s) holds /dev/nvidiactl' % expected
    assert 'command' not in result['holders'][0]


# saved facts (host output at gather time, or anyone who commits to the inventory) -> Jinja on the controller
def _strings(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


def test_saved_facts_are_data_to_jinja(tmp_path):
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.template import Templar, trust_as_template

    init_plugin_loader()  # lookups (the payload's pipe) resolve as in a playbook run

    marker = tmp_path / 'MARKER'
    payload = "{{ lookup('ansible.builtin.pipe', 'touch %s') }}" % marker
    device = {'bdf': '0000:41:00.0', 'kind': 'gpu', 'is_vf': False, 'device_name': payload, 'vendor_name': payload,
              'class_name': payload}
    doc = {'format_version': saved_facts.FORMAT_VERSION, 'host': 'h1', 'source': payload,
           'gpuvirt_pci_devices': {'devices': [device], 'gpus': [device], 'nvswitches': [], 'gpus_by_driver': {},
                                   'iommu': {'enabled': False, 'groups': 0, 'message': payload}},
           'gpuvirt_gpu_holders': {'held': False, 'holders': [], 'message': payload, 'unreadable': 0}}
    # as gather.yml reads it: the file's text (here even marked trusted, as inventory would be) through the filter
    facts = from_saved_facts(trust_as_template(json.dumps(doc)), 'h1', str(tmp_path / 'h1.json'))
    seen = [s for s in _strings(facts) if '{{' in s]
    assert seen, 'the payload did not travel at all'
    templar = Templar(loader=DataLoader(), variables={'facts': facts})
    rendered = templar.template(trust_as_template('{{ facts | to_json }}'))
    assert json.loads(rendered)['gpuvirt_pci_devices']['gpus'][0]['device_name'] == payload
    assert not marker.exists()
    # the harness can tell: the same text trusted as a template runs
    Templar(loader=DataLoader(), variables={'x': trust_as_template(payload)}).template(trust_as_template('{{ x }}'))
    assert marker.exists()


# the render directory's own files (anyone who commits to the GitOps checkout) -> file deletion and writes
@pytest.mark.parametrize('name', PATHS_AND_LINES := ['../outside.yaml', 'ABS', 'sub/../../outside.yaml', '..',
                                                     'x\n.yaml', 'a\x00b', 'a\u2028b', 'a' * 10000,
                                                     '{{ 7 * 6 }}.yaml', '$(id).yaml'])
def test_render_bookkeeping_never_deletes_outside(tmp_path, name):
    outside = tmp_path / 'outside.yaml'
    outside.write_text('kind: Secret\n')
    dest = tmp_path / 'render'
    dest.mkdir()
    name = str(outside) if name == 'ABS' else name
    (dest / render_session.MANIFEST).write_text(json.dumps(
        {'format': 2, 'complete': True, 'files': {name: {'phase': 'kubevirt', 'sha256': '0' * 64}}}))
    with pytest.raises(render.RenderError):
        render_session.open_session(str(dest), 'site', pid=os.getpid())
        render_session.close_session(str(dest), render.dump)
    assert outside.read_text() == 'kind: Secret\n'
    assert sorted(os.listdir(str(tmp_path))) == ['outside.yaml', 'render']
