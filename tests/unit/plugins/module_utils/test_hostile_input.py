# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property tests: every parser of host output and every validator, fed random and adversarial input, returns a
result or raises its module's named error: never another exception, never a hang (timing bounds live in
benchmarks/, the examples here are kept small so the unit run stays fast on 2 cores)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

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


type_names = st.from_regex(r'(GRID|NVIDIA) [A-Z][A-Z0-9]{1,5}-[1-9][0-9]?[ABCQ]', fullmatch=True)
bdfs = st.tuples(st.integers(0, 0xffff), st.integers(0, 0xff), st.integers(0, 0x1f), st.integers(0, 7)).map(
    lambda p: '%04x:%02x:%02x.%d' % p)


@st.composite
def mdevctl_documents(draw):
    """(JSON text as mdevctl types --dumpjson prints it, {parent: [(type_id, name, available)]})."""
    parents = draw(st.dictionaries(bdfs, st.lists(st.tuples(st.from_regex(r'nvidia-[0-9]{1,4}', fullmatch=True),
                                                            type_names, st.integers(0, 32)),
                                                  max_size=4, unique_by=lambda t: t[0]), min_size=1, max_size=3))
    doc = [{parent: [{tid: {'available_instances': avail, 'device_api': 'vfio-pci', 'name': name,
                            'description': 'num_heads=4, framebuffer=2048M, max_instance=%d' % max(avail, 1)}}
                     for tid, name, avail in types]} for parent, types in sorted(parents.items())]
    return json.dumps(doc, indent=draw(st.sampled_from([None, 2]))), parents


@SETTINGS
@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps), mdevctl_documents()))
def test_mdevctl_json_never_crashes(text):
    # hostile text gives a result or the named error; a valid document (generated) is read whole and right
    if isinstance(text, tuple):
        text, want = text
        problems = []
        parents = vgpu_types.parse_mdevctl_json(text, problems)
        got = dict((p['parent'], [(t['type_id'], t['name'], t['available_instances']) for t in p['types']])
                   for p in parents)
        assert got == want and problems == [] and all(p['interface'] == 'mdev' for p in parents)
        summary = vgpu_types.summarise(parents)
        free = sorted(set(name for types in want.values() for dummy, name, avail in types if avail))
        assert summary['available_types'] == free
        assert summary['state'] == ('available' if free else 'exhausted' if any(want.values()) else summary['state'])
        return
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


@st.composite
def valid_sysfs(draw):
    """Files as the kernel writes them (ids as 0x-prefixed hex with a newline, the class with its programming
    interface byte, numa_node -1 or a node) and what the readers must make of them."""
    vendor, device, klass = draw(st.integers(0, 0xffff)), draw(st.integers(0, 0xffff)), draw(st.integers(0, 0xffffff))
    numa, avail = draw(st.integers(-1, 7)), draw(st.integers(0, 64))
    name = draw(st.from_regex(r'GRID [A-Z][0-9]{1,3}-[1-9][ABQ]', fullmatch=True))
    files = {'vendor': '0x%04x\n' % vendor, 'device': '0x%04x\n' % device, 'class': '0x%06x\n' % klass,
             'numa_node': '%d\n' % numa, 'available_instances': '%d\n' % avail, 'name': name + '\n',
             'description': 'num_heads=4, framebuffer=2048M\n'}
    # the class and subclass (0302: a 3D controller), without the programming interface byte
    want = {'vendor_id': '%04x' % vendor, 'device_id': '%04x' % device, 'class_id': '%04x' % (klass >> 8),
            'numa_node': numa if numa >= 0 else None, 'available_instances': avail, 'name': name}
    return files, want


hostile_sysfs = st.tuples(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40), st.text(max_size=40)).map(
    lambda t: ({'vendor': t[0], 'device': t[1], 'class': t[2], 'numa_node': t[3], 'available_instances': t[3],
                'name': t[1], 'description': t[0]}, None))


@SETTINGS
@given(st.one_of(hostile_sysfs, valid_sysfs()))
def test_sysfs_readers_never_crash(tmp_path_factory, case):
    files, want = case
    root = tmp_path_factory.mktemp('sys')
    dev = root / 'bus' / 'pci' / 'devices' / '0000:41:00.0'
    dev.mkdir(parents=True)
    for name in ('vendor', 'device', 'class', 'numa_node'):
        (dev / name).write_text(files[name])
    tdir = root / 'class' / 'mdev_bus' / '0000:41:00.0' / 'mdev_supported_types' / 'nvidia-1'
    tdir.mkdir(parents=True)
    for name in ('available_instances', 'name', 'description'):
        (tdir / name).write_text(files[name])
    if want is None:
        # hostile files: a result or the named error, never another exception
        try:
            sysfs_pci.read_device(str(root), '0000:41:00.0')
            vfio_bind.state(str(root), '0000:41:00.0')
            vgpu_types.discover(str(root))
        except (sysfs_pci.SysfsError, vfio_bind.BindError, vgpu_types.VgpuError):
            pass
        return
    # valid files: read as the kernel means them
    got = sysfs_pci.read_device(str(root), '0000:41:00.0')
    assert (got['vendor_id'], got['device_id'], got['class_id'], got['numa_node']) == (
        want['vendor_id'], want['device_id'], want['class_id'], want['numa_node'])
    st_ = vfio_bind.state(str(root), '0000:41:00.0')
    assert (st_['exists'], st_['vendor_id'], st_['device_id'], st_['class_id']) == (
        True, want['vendor_id'], want['device_id'], want['class_id'])
    res = vgpu_types.discover(str(root))
    (parent,) = res['parents']
    (vtype,) = parent['types']
    assert (vtype['type_id'], vtype['name'], vtype['available_instances'], vtype['framebuffer_mib']) == (
        'nvidia-1', want['name'], want['available_instances'], 2048)
    assert res['state'] == ('available' if want['available_instances'] else 'exhausted')


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


# kernel arguments and remove patterns the collection sets and takes out (kernel_cmdline.ALLOWED_KEY), each key once
hex4 = st.integers(0, 0xffff).map(lambda n: '%04x' % n)
valid_args = st.lists(st.one_of(
    st.sampled_from(['intel_iommu=on', 'amd_iommu=on', 'iommu=pt', 'quiet', 'nomodeset', 'rd.driver.blacklist=nouveau',
                     'modprobe.blacklist=nouveau', 'nouveau.modeset=0', 'nvidia-drm.modeset=1']),
    st.tuples(hex4, hex4).map(lambda p: 'vfio-pci.ids=%s:%s' % p),
    st.integers(1, 4096).map('hugepages={}'.format),
    st.tuples(st.integers(0, 63), st.integers(64, 255)).map(lambda p: 'isolcpus=%d-%d' % p)),
    max_size=5, unique_by=lambda a: a.split('=', 1)[0])
valid_patterns = st.lists(st.sampled_from(['intel_iommu*', 'iommu=*', 'nouveau.modeset=?', 'video=*', 'vfio-pci.ids=*',
                                           'amd_iommu', 'hugepages=*']), max_size=4)


@SETTINGS
@given(st.one_of(anything, st.text(max_size=40), bdfs), valid_args, valid_patterns)
def test_other_validators_raise_their_named_errors(value, args, patterns):
    for call, error in ((lambda: vfio_bind.validate_bdf(value), vfio_bind.BindError),
                        (lambda: kc.validate_args([value]), kc.CmdlineError),
                        (lambda: kc.validate_patterns([value]), kc.CmdlineError)):
        try:
            call()
        except error:
            pass
    # the valid inputs generated alongside are accepted: a validator that refuses everything fails here
    if isinstance(value, str) and re.fullmatch(r'[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]', value):
        vfio_bind.validate_bdf(value)
        if value.upper() != value:
            # sysfs spells a BDF in lower case: the upper-case spelling names no device directory
            try:
                vfio_bind.validate_bdf(value.upper())
            except vfio_bind.BindError:
                pass
            else:
                raise AssertionError('%r accepted' % value.upper())
    kc.validate_args(args)
    kc.validate_patterns(patterns)
