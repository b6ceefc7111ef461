# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property tests: every parser of host output and every validator, fed random and adversarial input, returns a
result or raises its module's named error: never another exception, never a hang (timing bounds live in
benchmarks/, the examples here are kept small so the unit run stays fast on 2 cores)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, kernel_cmdline as kc, lspci, sysfs_pci, vfio_bind, vgpu_types
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# pieces real host output is made of, so random text often comes close to valid lines
LSPCI_ATOMS = ['0000:41:00.0', '41:00.1', '10000:00:05.0', ' ', '  ', '\t', '\n', ':', ': ', '[10de:2236]', '[0302]',
               '(rev a1)', '(prog-if 00 [VGA controller])', 'NVIDIA Corporation', 'GA102GL [A10]', '3D controller',
               'Slot:\t', 'Device:\t', 'Vendor:\t', 'Class:\t', 'Kernel driver in use: ', 'Kernel modules: ',
               'Capabilities: [bcc] Single Root I/O Virtualization (SR-IOV)', '"', "'", '\\', '-r', '-pa1', '[',
               ']', '(', ')', 'Subsystem: ', 'NUMA node: ', 'Flags: NUMA node 1', 'Corp.', 'Ltd', '\r\n']
GRUB_ATOMS = ['GRUB_CMDLINE_LINUX', 'GRUB_TIMEOUT', '=', '"', "'", '\\', ' ', '\t', '\n', '#', ';', 'export ', '$',
              '`', '$(', ')', 'quiet', 'intel_iommu=off', 'iommu=pt', 'rhgb', 'a b']
hostile_text = st.one_of(st.text(max_size=300),
                         st.lists(st.sampled_from(LSPCI_ATOMS), max_size=60).map(''.join))
grub_text = st.one_of(st.text(max_size=200), st.lists(st.sampled_from(GRUB_ATOMS), max_size=40).map(''.join))
anything = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=80),
                     st.lists(st.text(max_size=5), max_size=3),
                     st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))


@SETTINGS
@given(hostile_text)
def test_lspci_parse_never_crashes(text):
    try:
        devices = lspci.parse(text)
    except lspci.LspciError:
        return
    assert all(d['bdf'].count(':') == 2 for d in devices)


@SETTINGS
@given(grub_text, st.sampled_from([[], ['iommu=pt'], ['intel_iommu=on', 'iommu=pt']]),
       st.sampled_from([[], ['intel_iommu'], ['rhgb']]))
def test_grub_default_parse_and_edit_never_crash(text, ensure, remove):
    try:
        kc.grub_default_get(text, 'GRUB_CMDLINE_LINUX')
        new = kc.grub_default_edit(text, 'GRUB_CMDLINE_LINUX', ensure, remove)
    except kc.CmdlineError:
        return
    # an edit is stable: a second run gives the same text
    assert kc.grub_default_edit(new, 'GRUB_CMDLINE_LINUX', ensure, remove) == new


@SETTINGS
@given(grub_text)
def test_cmdline_and_grubby_parsers_never_crash(text):
    assert isinstance(kc.split_cmdline(text), list)
    assert isinstance(kc.parse_grubby_info(text), list)


@SETTINGS
@given(st.text(max_size=300))
def test_vgpu_text_parsers_never_crash(text):
    # creatable_vgpu_types refuses what is not its format, with the one named error (test_vgpu_types.py has the
    # grammar's own properties); the description parser reads what it can
    try:
        assert isinstance(vgpu_types.parse_creatable(text), list)
    except vgpu_types.VgpuError as e:
        assert str(e).startswith('creatable_vgpu_types')
    assert isinstance(vgpu_types.parse_description(text), dict)


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                           max_leaves=12)


@SETTINGS
@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps)))
def test_mdevctl_json_never_crashes(text):
    try:
        parents = vgpu_types.parse_mdevctl_json(text)
    except vgpu_types.VgpuError:
        return
    vgpu_types.summarise(parents)


@SETTINGS
@given(st.text(max_size=200))
def test_cgroup_parser_never_crashes(text):
    unit = gpu_holders.unit_from_cgroup(text)
    assert unit is None or isinstance(unit, str)


@SETTINGS
@given(st.binary(max_size=120), st.text(max_size=60), st.text(max_size=60), st.text(max_size=120))
def test_proc_readers_never_crash(tmp_path_factory, cmdline, comm, cgroup, information):
    proc = tmp_path_factory.mktemp('proc')
    pid = proc / '100'
    (pid / 'fd').mkdir(parents=True)
    (pid / 'cmdline').write_bytes(cmdline)
    (pid / 'comm').write_text(comm)
    (pid / 'cgroup').write_text(cgroup)
    os.symlink('/dev/nvidia0', str(pid / 'fd' / '3'))
    gpus = proc / 'driver' / 'nvidia' / 'gpus' / '0000:41:00.0'
    gpus.mkdir(parents=True)
    (gpus / 'information').write_text(information)
    result = gpu_holders.scan(str(proc))
    assert result['held'] is True
    assert gpu_holders.holder_category(result['holders'][0]) in (
        'dcgm-exporter', 'dcgm', 'persistenced', 'display-manager', 'other')


@SETTINGS
@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40), st.text(max_size=40))
def test_sysfs_readers_never_crash(tmp_path_factory, vendor, device, klass, numa):
    root = tmp_path_factory.mktemp('sys')
    dev = root / 'bus' / 'pci' / 'devices' / '0000:41:00.0'
    dev.mkdir(parents=True)
    for name, value in (('vendor', vendor), ('device', device), ('class', klass), ('numa_node', numa)):
        (dev / name).write_text(value)
    tdir = root / 'class' / 'mdev_bus' / '0000:41:00.0' / 'mdev_supported_types' / 'nvidia-1'
    tdir.mkdir(parents=True)
    (tdir / 'available_instances').write_text(numa)
    (tdir / 'name').write_text(device)
    (tdir / 'description').write_text(vendor)
    try:
        sysfs_pci.read_device(str(root), '0000:41:00.0')
        vfio_bind.state(str(root), '0000:41:00.0')
        vgpu_types.discover(str(root))
    except (sysfs_pci.SysfsError, vfio_bind.BindError, vgpu_types.VgpuError):
        pass


VALIDATORS = [validators.dns1123_label, validators.dns1123_subdomain, validators.label_value,
              validators.helm_release_name, validators.semver, validators.repo_url, validators.chart_ref,
              validators.oci_registry, validators.oci_repository, validators.oci_tag, validators.oci_reference,
              validators.to_bool]


@SETTINGS
@given(st.sampled_from(VALIDATORS), st.one_of(anything, st.text(alphabet='a-.:/0@[]\n v', max_size=300)))
def test_validators_return_the_value_or_name_it(check, value):
    try:
        result = check(value, 'some_var')
    except validators.ValidationError as e:
        assert str(e).startswith('some_var: ')
        return
    assert result in (True, False) if check is validators.to_bool else result == value
    assert '\n' not in str(result)


@SETTINGS
@given(st.one_of(anything, st.text(max_size=40)))
def test_other_validators_raise_their_named_errors(value):
    for call, error in ((lambda: vfio_bind.validate_bdf(value), vfio_bind.BindError),
                        (lambda: kc.validate_args([value]), kc.CmdlineError),
                        (lambda: kc.validate_patterns([value]), kc.CmdlineError)):
        try:
            call()
        except error:
            pass
