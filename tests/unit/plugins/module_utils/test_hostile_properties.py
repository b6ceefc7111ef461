# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property tests for the parsers and validators test_hostile_input.py leaves out: pci.ids, os-release, the
preflight facts, the sysfs SR-IOV counts, render file names, the MachineConfig, HCO, GPU Operator and vGPU
Manager image checks. Random and adversarial input (newlines, NUL, non-ASCII, very long values, wrong types)
gives a result or the module's named error, never another exception; a validated value always fullmatches its
grammar. Timing bounds live in benchmarks/, the examples here are kept small for 2 cores."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import string

from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pciids, preflight, sysfs_pci
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image as vi
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator, hco, machineconfig

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# what turns a valid value hostile: around it, inside it, or instead of it
NASTY = ['\n', '\r\n', '\x00', ' ', '\t', 'é', '\u2028', '\x85', '/', '../', '$(reboot)', '`id`', ';', '"', "'",
         '\\', '-', '.', ':', '@', 'A', '0' * 70]


def near(valid):
    """A valid example, or one with a hostile piece before, after or inside it, or a very long run of one."""
    return st.one_of(
        st.sampled_from(valid),
        st.tuples(st.sampled_from(valid), st.sampled_from(NASTY)).map(lambda p: p[0] + p[1]),
        st.tuples(st.sampled_from(NASTY), st.sampled_from(valid)).map(lambda p: p[0] + p[1]),
        st.tuples(st.sampled_from(valid), st.sampled_from(NASTY), st.integers(0, 40)).map(
            lambda p: p[0][:p[2]] + p[1] + p[0][p[2]:]),
        st.tuples(st.sampled_from(valid), st.integers(100, 3000)).map(lambda p: p[0] * p[1]),
        st.text(max_size=60))


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.binary(max_size=10),
                    st.lists(st.text(max_size=4), max_size=2),
                    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))

PCIIDS_ATOMS = ['10de  NVIDIA Corporation\n', '\t2236  GA102GL [A10]\n', '\t\t10de 1482  A10\n', 'C 03  Display\n',
                '\t02  3D controller\n', '# comment\n', '\n', '\t', '  ', '10de', 'ffff  Illegal\n', 'é', '\x00',
                '\r\n', 'C ', 'C 0', '\t\t', '\x85', '\u2028']
OS_RELEASE_ATOMS = ['ID=rhcos\n', 'ID="rhel"\n', "VERSION_ID='9.4'\n", 'VERSION_ID="4.18"\n', 'ID=ubuntu\n',
                    'VERSION_ID=22.04\n', 'ID=ol\n', '# c\n', '=', '"', "'", '\n', ' ', 'ID=', 'VERSION_ID=',
                    'é', '\x00', '../', '$(x)', 'ID=rocky\n', 'VERSION_ID=\n', '\r\n', '9' * 70]


def atoms(pieces, size):
    return st.one_of(st.text(max_size=size), st.lists(st.sampled_from(pieces), max_size=size // 4).map(''.join))


@SETTINGS
@given(atoms(PCIIDS_ATOMS, 240))
def test_pciids_parse_never_crashes(text):
    db = pciids.parse(text)
    assert all(re.fullmatch(r'[0-9a-f]{4}', v) for v in db.vendors)
    assert all(re.fullmatch(r'[0-9a-f]{4}', v) and re.fullmatch(r'[0-9a-f]{4}', d) for v, d in db.devices)
    assert all(re.fullmatch(r'[0-9a-f]{4}', c) for c in db.classes)
    assert all('\n' not in name for name in list(db.vendors.values()) + list(db.devices.values()))


hex4 = st.integers(0, 0xffff).map(lambda n: '%04x' % n)
hex2 = st.integers(0, 0xff).map(lambda n: '%02x' % n)
# a name as pci.ids writes one: printable, no line break, no blank at either end (the parser strips them)
id_name = st.text(alphabet=string.ascii_letters + string.digits + ' []-.,/()+&\'é', min_size=1, max_size=24).map(
    str.strip).filter(bool)


@st.composite
def pciids_databases(draw):
    """(pci.ids text, {vendor: name}, {(vendor, device): name}, {class+subclass: name}); ids in either case,
    with comments, blank lines and subsystem lines (read past) between them, the class section last."""
    vendors = draw(st.dictionaries(hex4, st.tuples(id_name, st.dictionaries(hex4, id_name, max_size=3)), max_size=4))
    classes = draw(st.dictionaries(hex2, st.tuples(id_name, st.dictionaries(hex2, id_name, max_size=3)), max_size=3))
    upper = draw(st.booleans())
    case = str.upper if upper else str.lower
    lines = ['# pci.ids excerpt', '']
    want_v, want_d, want_c = {}, {}, {}
    for vid, (vname, devices) in sorted(vendors.items()):
        lines.append('%s  %s' % (case(vid), vname))
        want_v[vid] = vname
        for did, dname in sorted(devices.items()):
            lines += ['\t%s  %s' % (case(did), dname), '\t\t%s %s  %s' % (vid, did, 'a subsystem')]
            want_d[(vid, did)] = dname
        lines.append('')
    for cid, (cname, subs) in sorted(classes.items()):
        lines.append('C %s  %s' % (case(cid), cname))
        for sid, sname in sorted(subs.items()):
            lines += ['\t%s  %s' % (case(sid), sname), '\t\t00  a programming interface']
            want_c[cid + sid] = sname
    return '\n'.join(lines) + '\n', want_v, want_d, want_c


@SETTINGS
@given(st.one_of(scalars, pciids_databases()))
def test_pciids_parse_refuses_what_is_no_text(value):
    # what is no text is refused with the named error; a valid database (generated) is read whole and right,
    # so refusing everything fails this test too
    if isinstance(value, tuple):
        text, vendors, devices, classes = value
        db = pciids.parse(text)
        assert (db.vendors, db.devices, db.classes) == (vendors, devices, classes)
        for (vid, did), name in devices.items():
            assert db.device_name(vid.upper(), did.upper()) == name
        return
    try:
        pciids.parse(value)
    except pciids.PciIdsError as e:
        assert 'not text' in str(e)
        return
    raise AssertionError('%r accepted as pci.ids text' % (value,))


@SETTINGS
@given(st.one_of(atoms(OS_RELEASE_ATOMS, 200), scalars))
def test_os_release_parse_and_os_tag(text):
    fields = vi.parse_os_release(text)
    assert all(isinstance(k, str) and isinstance(v, str) and '\n' not in k + v for k, v in fields.items())
    try:
        tag = vi.os_tag_from_os_release(text)
    except vi.VgpuImageError:
        return
    assert re.fullmatch(r'[a-z][a-z0-9]*[0-9][a-z0-9._-]*', tag) and len(tag) <= 64


@SETTINGS
@given(st.one_of(near(['580.82.02', '535.183.04', '470.63']), scalars))
def test_check_version(value):
    try:
        version = vi.check_version(value)
    except vi.VgpuImageError:
        return
    assert re.fullmatch(r'[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?', version)


@SETTINGS
@given(st.one_of(near(['rhcos4.18', 'ubuntu22.04', 'rhel9']), scalars))
def test_check_os_tag(value):
    try:
        tag = vi.check_os_tag(value)
    except vi.VgpuImageError:
        return
    assert re.fullmatch(r'[a-z][a-z0-9]*[0-9][a-z0-9._-]*', tag) and len(tag) <= 64


@SETTINGS
@given(near(['registry.example.com', '127.0.0.1:5443', 'quay.io']), st.one_of(near(['nvidia', 'a/b']), scalars),
       near(['vgpu-manager']), near(['580.82.02']), near(['rhcos4.18']))
def test_image_ref(registry, repository, name, version, os_tag):
    try:
        ref = vi.image_ref(registry, repository, name, version, os_tag)
    except vi.VgpuImageError:
        return
    component = r'[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*'
    assert re.fullmatch(r'{c}(?:/{c})*'.format(c=component), ref['repository'])
    assert re.fullmatch(r'[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?-[a-z][a-z0-9]*[0-9][a-z0-9._-]*', ref['tag'])
    assert ref['ref'] == '%s/%s:%s' % (ref['registry'], ref['repository'], ref['tag'])
    assert not set(ref['registry']) & set('\n\x00/ \t')


RUN_NAMES = ['NVIDIA-Linux-x86_64-580.82.02-vgpu-kvm.run', 'NVIDIA-Linux-aarch64-535.183.04-vgpu-kvm.run',
             'NVIDIA-Linux-x86_64-580.82.02-grid.run', 'NVIDIA-Linux-x86_64-580.82.02.run', '/tmp/x/NVIDIA-Linux-',
             'NVIDIA-Linux-x86_64-' + '1.' * 50 + '-vgpu-kvm.ru']


@SETTINGS
@given(st.one_of(near(RUN_NAMES), scalars))
def test_parse_run_name(name):
    try:
        arch, version = vi.parse_run_name(name)
    except vi.VgpuImageError:
        return
    assert arch in vi.ARCHES and re.fullmatch(r'[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?', version)


@SETTINGS
@given(st.one_of(near(['580.82.02']), scalars), st.one_of(st.none(), near(['12.8.0'])), near(['x86_64']),
       st.one_of(st.dictionaries(st.one_of(near(['BASE_IMAGE', '_X']), st.integers()), scalars, max_size=3),
                 scalars))
def test_build_args(version, cuda, arch, extra):
    try:
        args = vi.build_args(version, cuda, arch, extra)
    except vi.VgpuImageError:
        return
    assert all(re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', k) and isinstance(v, str) for k, v in args.items())


@SETTINGS
@given(st.one_of(near(['580.82.02', '580.82.02-rhcos4.18', 'sha256:' + 'a' * 64]), scalars))
def test_check_vgpu_manager_version(value):
    try:
        version = gpu_operator.check_vgpu_manager_version(value)
    except gpu_operator.ManifestError:
        return
    assert re.fullmatch(r'[0-9]{3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?|sha256:[0-9a-f]{64}', version)


def test_vgpu_manager_version_with_a_newline_inside_is_refused():
    for bad in ('580.82.02\nx', '580.82.02-rhcos4.18\nx', 'sha256:' + 'a' * 64 + '\nx'):
        try:
            gpu_operator.check_vgpu_manager_version(bad)
        except gpu_operator.ManifestError:
            continue
        raise AssertionError('%r accepted' % bad)


@SETTINGS
@given(st.one_of(st.lists(st.one_of(near(['10de', '0x10DE', '8086']), scalars), max_size=3), scalars),
       st.one_of(st.lists(st.one_of(near(['03', '0302', '0680']), scalars), max_size=3), scalars))
def test_check_filters(vendors, classes):
    try:
        out_v, out_c = sysfs_pci.check_filters(vendors, classes)
    except sysfs_pci.SysfsError:
        return
    assert all(re.fullmatch(r'[0-9a-f]{4}', v) for v in out_v)
    assert all(re.fullmatch(r'[0-9a-f]{2}(?:[0-9a-f]{2})?', c) for c in out_c)


k8s_object = st.fixed_dictionaries({}, optional={
    'kind': st.one_of(near(['ConfigMap', 'Secret', 'MachineConfig']), scalars),
    'metadata': st.one_of(st.fixed_dictionaries({}, optional={
        'name': st.one_of(near(['gpu-cluster-policy', 'a.b', '../../x']), scalars),
        'namespace': st.one_of(near(['nvidia-gpu-operator', 'kube-system']), scalars)}), scalars)})


@SETTINGS
@given(st.lists(st.one_of(k8s_object, scalars), max_size=4), st.one_of(st.just(''), near(['gpu-operator', 'x_1'])))
def test_render_file_names(objects, prefix):
    try:
        names = render.file_names(objects, prefix)
    except render.RenderError:
        return
    # names by object identity, no position: [<prefix>-]<kind>-<namespace|cluster>-<name>[-<hash>].yaml, cut to
    # MAX_FILE_NAME (render.file_names)
    for name in names:
        assert re.fullmatch(r'(?:[A-Za-z0-9][A-Za-z0-9._-]{0,62}-)?[a-z][a-z0-9]{0,62}-[a-z0-9-]{1,63}-'
                            r'[a-z0-9.-]{1,253}\.yaml', name), name
        assert len(name) <= render.MAX_FILE_NAME, name
        assert os.path.basename(name) == name and '..' not in name.rsplit('-', 1)[0].split('-', 1)[0]


def test_render_file_names_of_valid_objects_are_accepted_in_that_grammar():
    # the property above returns early on a refusal: a valid object must get its name, in the grammar it checks
    names = render.file_names([{'kind': 'ConfigMap', 'metadata': {'name': 'gpu-cluster-policy'}},
                               {'kind': 'Secret', 'metadata': {'name': 'a.b', 'namespace': 'kube-system'}}], 'x_1')
    assert names == ['x_1-configmap-cluster-gpu-cluster-policy.yaml', 'x_1-secret-kube-system-a.b.yaml']


@SETTINGS
@given(st.one_of(near(['gpu-worker', 'worker', 'a']), scalars))
def test_machineconfig_check_name(value):
    try:
        name = machineconfig.check_name(value, 'pool')
    except machineconfig.ManifestError:
        return
    assert re.fullmatch(r'[a-z0-9](?:[-a-z0-9]*[a-z0-9])?', name) and len(name) <= 63


@SETTINGS
@given(st.one_of(st.sampled_from(['intel', 'amd']), near(['intel']), scalars), st.booleans(),
       st.one_of(st.lists(st.one_of(near(['vfio-pci.ids=10de:2236', 'rd.driver.pre=vfio-pci']), scalars),
                          max_size=3), scalars))
def test_machineconfig_kernel_args(vendor, passthrough, extra):
    try:
        args = machineconfig.iommu_kernel_args(vendor, passthrough, extra)
    except machineconfig.ManifestError:
        return
    assert all(re.fullmatch(r'[A-Za-z0-9_][A-Za-z0-9_.,:=+/@%-]*', a) for a in args)
    assert len(set(args)) == len(args)


PCI_SELECTOR = re.compile(r'[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}')
RESOURCE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9.-]*/[A-Za-z0-9_.-]+')
# valid selectors in either case with blanks around them, valid resource names of every shape the grammar allows
valid_selectors = st.tuples(hex4, hex4, st.booleans(), st.sampled_from(['', ' ', '\t', '\n'])).map(
    lambda p: p[3] + ((p[0] + ':' + p[1]).upper() if p[2] else p[0] + ':' + p[1]) + p[3])
valid_resources = st.from_regex(r'[A-Za-z0-9][A-Za-z0-9.-]{0,20}/[A-Za-z0-9_.-]{1,30}', fullmatch=True)


@SETTINGS
@given(st.one_of(near(['10de:2236', '10DE:20B5']), valid_selectors, scalars),
       st.one_of(near(['nvidia.com/GA102GL_A10']), valid_resources, scalars))
def test_hco_selector_and_resource_name(selector, resource):
    # what fits the grammar (VENDOR:DEVICE in hex, blanks around it; vendor.com/NAME) is accepted and normalised,
    # everything else is refused with the named error
    if isinstance(selector, str) and PCI_SELECTOR.fullmatch(selector.strip()):
        assert hco.pci_selector(selector) == selector.strip().upper()
    else:
        try:
            hco.pci_selector(selector)
        except hco.ManifestError:
            pass
        else:
            raise AssertionError('selector %r accepted' % (selector,))
    if isinstance(resource, str) and RESOURCE_NAME.fullmatch(resource):
        assert hco.check_resource_name(resource, 'a GPU') == resource
    else:
        try:
            hco.check_resource_name(resource, 'a GPU')
        except hco.ManifestError as e:
            assert 'a GPU' in str(e)
        else:
            raise AssertionError('resource name %r accepted' % (resource,))


json_like = st.recursive(
    st.one_of(scalars, st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(['gpus', 'bdf', 'iommu', 'enabled', 'holders', 'parents', 'types', 'name',
                                         'x']), inner, max_size=4)),
    max_leaves=16)


@SETTINGS
@given(json_like, st.one_of(st.none(), json_like), st.one_of(st.none(), json_like))
def test_preflight_check_facts(pci, holders, mdev):
    try:
        preflight.check_facts(pci, holders, mdev)
    except preflight.PreflightError:
        pass


@SETTINGS
@given(st.one_of(st.binary(max_size=30), near(['32', '0', '16\n']).map(lambda t: t.encode('utf-8'))),
       st.one_of(st.binary(max_size=30), near(['4', '0']).map(lambda t: t.encode('utf-8'))))
def test_sysfs_sriov_counts(sysfs, totalvfs, numvfs):
    bdf = '0000:41:00.0'
    if not os.path.isdir(sysfs.path('bus', 'pci', 'devices', bdf)):
        sysfs.device(bdf, '0302', '10de', '2236', ('10de', '1482'), driver='nvidia', group=44)
    base = os.path.realpath(sysfs.path('bus', 'pci', 'devices', bdf))
    for name, value in (('sriov_totalvfs', totalvfs), ('sriov_numvfs', numvfs)):
        with open(os.path.join(base, name), 'wb') as f:
            f.write(value)
    try:
        dev = sysfs_pci.read_device(sysfs.root, bdf)
    except sysfs_pci.SysfsError as e:
        assert os.path.join('devices', bdf) in str(e)
        return
    assert isinstance(dev['sriov']['totalvfs'], int) and dev['sriov']['totalvfs'] >= 0
    assert isinstance(dev['sriov']['numvfs'], int) and dev['sriov']['numvfs'] >= 0
