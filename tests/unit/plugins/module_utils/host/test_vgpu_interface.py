# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vGPU interface a host offers is decided by what the host shows (mdev bus, the VFs' creatable_vgpu_types,
kernel release, NVIDIA driver version), not by the chip name; preflight names that evidence.

Sysfs trees follow the reference captures (tests/unit/fixtures/SOURCES.md): the A10 of the OpenNebula vGPU guide
(PF 0000:41:00.0, VFs from 0000:41:00.4 on, vendor-VFIO type ids 588-605), the L40S VF of harvester/pcidevices."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import preflight, saved_facts
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_interface as vi
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_types as vt

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
A10_PF, A10_VFS = '0000:41:00.0', ['0000:41:00.4', '0000:41:00.5']
UBUNTU_NOBLE = '6.8.0-60-generic'      # Ubuntu 24.04's kernel series
UBUNTU_JAMMY = '5.15.0-119-generic'    # Ubuntu 22.04's
RHEL_94 = '5.14.0-427.13.1.el9_4.x86_64'
R580, R570, R535 = '580.82.02', '570.133.10', '535.216.01'


def a10_profiles(fixtures_dir):
    """[(id, name)] the OpenNebula monitor read from the A10 VF 0000:41:00.4 in vendor-VFIO mode (its PROFILES)."""
    with open(os.path.join(fixtures_dir, 'mdev', 'a10-vf-onehost-pci-json-vendor-vfio-profiles-588-605_opennebula-docs'
                           '.txt')) as f:
        text = f.read()
    assert '"MDEV_MODE": "nvidia"' in text and '"ADDRESS": "0000:41:00:4"' in text
    pairs = re.findall(r'([0-9]+) \((NVIDIA A10-[0-9]+[ABQ])\)', re.search(r'"PROFILES": "([^"]*)"', text).group(1))
    assert len(pairs) == 18 and pairs[8] == ('596', 'NVIDIA A10-12Q')
    return pairs


def creatable_text(pairs):
    # the file's layout as the real L40S capture shows it: header, then "<id>  : <name>"
    return 'ID    : vGPU Name\n' + ''.join('%s  : %s\n' % pair for pair in pairs)


def a10_host(sysfs, driver=None):
    sysfs.device(A10_PF, '0302', '10de', '2236', driver=driver, group=44)
    for i, vf in enumerate(A10_VFS):
        sysfs.device(vf, '0302', '10de', '2236', driver=driver, group=45 + i)
    sysfs.sriov(A10_PF, A10_VFS, total=32)


def proc(tmp_path, release):
    root = tmp_path / 'proc'
    (root / 'sys' / 'kernel').mkdir(parents=True)
    (root / 'sys' / 'kernel' / 'osrelease').write_text(release + '\n')
    return str(root)


def loaded(sysfs, version):
    sysfs.write('module/nvidia/version', version + '\n')


def gpu(bdf=A10_PF, name='GA102GL [A10]', device_id='2236'):
    return {'bdf': bdf, 'vendor_id': '10de', 'device_id': device_id, 'device_name': name, 'driver': None,
            'kind': 'gpu', 'is_vf': False}


def judge(mdev, gpus, requested, version='', found=None):
    return preflight.check_host('gpu-a10', ['vm-vgpu'], {'gpus': gpus, 'iommu': {'enabled': True}}, mdev=mdev,
                                requested_vgpu_types=requested, iommu_firmware=True, vgpu_driver_version=version,
                                found=found)


def test_a10_on_mdev_host_facts_say_mdev_and_preflight_passes(fixtures_dir, sysfs, tmp_path):
    # Ampere on the mdev bus: the VFs are the mdev parents (reference mdev/SOURCES.md, the A40 and A100 captures),
    # with the same type ids and names as in vendor-VFIO mode (nvidia-596 = NVIDIA A10-12Q)
    a10_host(sysfs, driver='nvidia')
    for vf in A10_VFS:
        for tid, name in a10_profiles(fixtures_dir):
            sysfs.mdev_type(vf, 'nvidia-' + tid, name, 'num_heads=4, framebuffer=12288M, max_instance=2', 1)
    loaded(sysfs, R535)
    res = vt.discover(sysfs.root, proc_root=proc(tmp_path, UBUNTU_JAMMY))
    assert res['host_interface'] == {
        'interface': 'mdev', 'kernel_release': UBUNTU_JAMMY, 'driver_version': R535,
        'evidence': ['/sys/class/mdev_bus lists 0000:41:00.4, 0000:41:00.5 with mdev_supported_types',
                     'kernel %s, driver %s' % (UBUNTU_JAMMY, R535)]}
    errors, dummy = judge(res, [gpu()], ['A10-12Q'])
    assert errors == []


def test_a10_in_vendor_vfio_mode_on_kernel_6_8_with_r580_gets_the_vendor_vfio_row_naming_the_evidence(
        fixtures_dir, sysfs, tmp_path):
    # The OpenNebula guide (OpenNebula/docs @ 7e66d99c, source/open_cluster_deployment/kvm_node/vgpu.rst, "Using the
    # vGPU") shows this A10 VF in "the new vendor-specific interface introduced with Ubuntu 24.04" (MDEV_MODE
    # "nvidia", types 588-605). An Ampere chip, so the chip rule (AD/GH/GB) could never have predicted it.
    a10_host(sysfs, driver='nvidia')
    sysfs.vendor_vgpu(A10_VFS[0], creatable_text(a10_profiles(fixtures_dir)))
    loaded(sysfs, R580)
    res = vt.discover(sysfs.root, proc_root=proc(tmp_path, UBUNTU_NOBLE))
    facts = res['host_interface']
    assert (facts['interface'], facts['kernel_release'], facts['driver_version']) == ('vendor-vfio', UBUNTU_NOBLE, R580)
    found = {}
    errors, dummy = judge(res, [gpu()], ['A10-12Q'], found=found)
    assert errors == []
    assert found == {'pool': 'vm-vgpu-vf', 'interface': 'vendor-vfio', 'interface_reason': (
        'the host shows vendor-vfio: 0000:41:00.4 has nvidia/creatable_vgpu_types and no mdev_supported_types; '
        'kernel 6.8.0-60-generic, driver 580.82.02')}
    # a type no VF lists is refused, naming what they offer
    errors, dummy = judge(res, [gpu()], ['A10-48Q'])
    assert len(errors) == 1 and errors[0].startswith(
        "gpu-a10 (pool vm-vgpu-vf): vGPU type A10-48Q is not listed by any VF's nvidia/creatable_vgpu_types here "
        "(the VFs offer: A10-12A, ") and 'A10-12Q' in errors[0]


@pytest.mark.parametrize('kernel, version, vendor, unsure', [
    (UBUNTU_NOBLE, R580, True, False),     # 6.8 + R580: mdev is gone for every GPU
    (UBUNTU_JAMMY, R580, False, False),    # older kernel: the A10 stays on mdev
    (UBUNTU_NOBLE, R535, False, False),    # vGPU 16: mdev
    (UBUNTU_NOBLE, R570, False, True),     # 6.8 with R550-R570 on Ampere: not decided before it loads
])
def test_a10_before_its_vgpu_manager_loads_is_judged_by_kernel_and_driver(sysfs, tmp_path, kernel, version, vendor,
                                                                          unsure):
    # KubeVirt's VEP 210 (kubevirt/enhancements veps/sig-compute/210-centos-stream-10/vep.md, "vGPU / mdev
    # Compatibility"): from kernel 6.8 NVIDIA moved vGPU from mdev to a vendor-specific VFIO framework, the mdev sysfs
    # no longer populated; Nova (openstack/nova doc/source/admin/virtual-gpu.rst, Caveats): VFs with nvidia/ and no mdev
    # "most likely occurs on Ubuntu Noble or RHEL 10". Before the GPU Operator loads the vGPU Manager the host shows
    # neither interface: its kernel and the configured driver decide.
    a10_host(sysfs)
    res = vt.discover(sysfs.root, proc_root=proc(tmp_path, kernel))
    facts = res['host_interface']
    assert facts['interface'] == 'none' and facts['driver_version'] is None
    assert facts['evidence'] == [
        'no /sys/class/mdev_bus entry and no nvidia/creatable_vgpu_types on any PCI device',
        'SR-IOV PF 0000:41:00.0 on no driver, 2 of 32 VFs enabled',
        'kernel %s, no NVIDIA driver loaded (no /sys/module/nvidia/version)' % kernel]
    found = {}
    errors, warnings = judge(res, [gpu()], ['A10-12Q'], version, found)
    if vendor:
        assert errors == [] and any('no VF lists vGPU types yet' in w for w in warnings), errors
        assert found['pool'] == 'vm-vgpu-vf' and found['interface_reason'] == (
            "predicted vendor-vfio (no vGPU interface shown yet): no /sys/class/mdev_bus entry and "
            "no nvidia/creatable_vgpu_types on any PCI device; SR-IOV PF 0000:41:00.0 on no driver, 2 of 32 VFs "
            "enabled; kernel 6.8.0-60-generic, driver 580.82.02 (the vGPU Manager to install)")
    else:
        assert found['pool'] == 'vm-vgpu'

        assert errors == [] and any('no vGPU types visible' in w for w in warnings)
        assert any('is not known yet' in w for w in warnings) == unsure, warnings


def test_l40s_vf_is_vendor_vfio_from_sysfs_and_before_loading_from_chip_with_host_evidence(
        fixtures_dir, sysfs, tmp_path):
    # the real L40S VF files (harvester/pcidevices testdata): no mdev bus, nvidia/creatable_vgpu_types on the VF
    sysfs.device('0000:26:00.0', '0302', '10de', '26b9', driver='nvidia', group=30)
    sysfs.device('0000:26:00.4', '0302', '10de', '26b9', driver='nvidia', group=31)
    sysfs.sriov('0000:26:00.0', ['0000:26:00.4'])
    with open(os.path.join(fixtures_dir, 'sysfs', 'l40s-vf-0000_26_00.4-nvidia', 'creatable_vgpu_types')) as f:
        sysfs.vendor_vgpu('0000:26:00.4', f.read())
    loaded(sysfs, '550.54.16')
    res = vt.discover(sysfs.root, proc_root=proc(tmp_path, RHEL_94))
    assert res['host_interface']['evidence'] == [
        '0000:26:00.4 has nvidia/creatable_vgpu_types and no mdev_supported_types',
        'kernel %s, driver 550.54.16' % RHEL_94]
    l40s = [gpu('0000:26:00.0', 'AD102GL [L40S]', '26b9')]
    found = {}
    errors, dummy = judge(res, l40s, ['L40S-24Q'], found=found)
    assert errors == [] and found['pool'] == 'vm-vgpu-vf'
    assert found['interface_reason'].startswith('the host shows vendor-vfio: 0000:26:00.4 has nvidia/creatable_vgpu')
    # Before loading: on a 5.14 kernel the chip decides (NVIDIA/vgpu-device-manager @ 4d31dc65, pkg/vgpu/framework.go
    # FrameworkVendorVFIO: "vGPU 17.0+ on Ada, Hopper and newer GPUs"), and the message still names the host facts
    bare = {'parents': [], 'host_interface': {'interface': 'none', 'kernel_release': RHEL_94, 'driver_version': None,
                                              'evidence': ['no /sys/class/mdev_bus entry', 'kernel %s' % RHEL_94]}}
    found = {}
    errors, dummy = judge(bare, l40s, ['L40S-24Q'], '550.54.16', found)
    assert errors == [] and found['pool'] == 'vm-vgpu-vf' and found['interface_reason'].endswith(
        ': no /sys/class/mdev_bus entry; kernel %s, driver 550.54.16 (the vGPU Manager to install); GPU 0000:26:00.0 '
        'AD102GL [L40S]' % RHEL_94)
    # No host facts at all (a render without gathering): the chip rule alone, and the message says so
    found = {}
    errors, dummy = judge({'parents': []}, l40s, ['L40S-24Q'], '580.82.02', found)
    assert errors == [] and found['pool'] == 'vm-vgpu-vf' and found['interface_reason'].endswith(
        'vGPU Manager 580.82.02 on 0000:26:00.0 AD102GL [L40S], judged from the chip name alone: no host facts of '
        'the kernel and driver')


def test_saved_host_interface_round_trips_and_hostile_evidence_is_refused(fixtures_dir, sysfs, tmp_path):
    a10_host(sysfs, driver='nvidia')
    sysfs.vendor_vgpu(A10_VFS[0], creatable_text(a10_profiles(fixtures_dir)))
    loaded(sysfs, R580)
    mdev = vt.discover(sysfs.root, proc_root=proc(tmp_path, UBUNTU_NOBLE))
    pci = {'devices': [{'bdf': A10_PF}], 'gpus': [{'bdf': A10_PF}]}
    doc = saved_facts.to_saved('gpu-a10', {'gpuvirt_pci_devices': pci, 'gpuvirt_mdev_types': mdev})
    back = saved_facts.from_saved(doc, 'gpu-a10', 'gpu-a10.json')
    assert back['gpuvirt_mdev_types']['host_interface'] == mdev['host_interface']
    for key, value, named in (
            ('interface', 'mdev-ish', '$.gpuvirt_mdev_types.host_interface.interface'),
            ('evidence', ['{{ lookup("pipe", "id") }}\u200b'], '$.gpuvirt_mdev_types.host_interface.evidence[0]'),
            ('evidence', ['x' * 513], '$.gpuvirt_mdev_types.host_interface.evidence[0]'),
            ('kernel_release', '6.8.0; rm -rf /', '$.gpuvirt_mdev_types.host_interface.kernel_release'),
            ('driver_version', '580.82.02\n', '$.gpuvirt_mdev_types.host_interface.driver_version')):
        bad = dict(doc, gpuvirt_mdev_types=dict(doc['gpuvirt_mdev_types'],
                                                host_interface=dict(mdev['host_interface'], **{key: value})))
        with pytest.raises(saved_facts.SavedFactsError, match=re.escape('gpu-a10.json: %s is' % named)):
            saved_facts.from_saved(bad, 'gpu-a10', 'gpu-a10.json')


def test_unreadable_kernel_and_driver_are_named_not_guessed(sysfs, tmp_path):
    a10_host(sysfs)
    loaded(sysfs, '580.82.02 $(reboot)')
    facts = vt.discover(sysfs.root, proc_root=proc(tmp_path, 'not a kernel'))['host_interface']
    assert (facts['kernel_release'], facts['driver_version']) == (None, None)
    assert facts['evidence'][-1] == 'kernel release unreadable, driver version unreadable'
    errors, warnings = judge({'parents': [], 'host_interface': facts}, [gpu()], [], R580)
    assert errors == [] and any('is not known yet' in w for w in warnings)


def test_a_copied_trees_driver_name_is_told_only_when_grammatical(sysfs, tmp_path):
    # a sosreport's link names are whoever copied it: the evidence (printed by preflight, saved) keeps a driver name
    # only of the kernel's grammar
    sysfs.device(A10_PF, '0302', '10de', '2236', driver='nv{{ 7 * 6 }}', group=44)
    sysfs.write(os.path.join(os.path.relpath(os.path.realpath(sysfs.path('bus', 'pci', 'devices', A10_PF)),
                                             sysfs.root), 'sriov_totalvfs'), '32\n')
    facts = vt.discover(sysfs.root, proc_root=proc(tmp_path, UBUNTU_NOBLE))['host_interface']
    assert facts['evidence'][1] == 'SR-IOV PF 0000:41:00.0 on ?, ? of 32 VFs enabled'
    saved_facts.to_saved('gpu-a10', {'gpuvirt_pci_devices': {'gpus': []}, 'gpuvirt_mdev_types': {
        'host_interface': facts}})


# creatable_vgpu_types: linear, bounded, and anything but its format is refused

type_ids = st.integers(min_value=0, max_value=999999999).map(str)
type_names = st.from_regex(r'NVIDIA [A-Z][A-Z0-9]{0,6}-[0-9]{1,3}[ABCQ]', fullmatch=True)


junk_lines = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=('Cs',)), min_size=1, max_size=80).filter(
        lambda line: line.strip() and not vt.CREATABLE_LINE.fullmatch(line.strip())
        and not vt.CREATABLE_HEADER.fullmatch(line.strip()) and len(line.splitlines()) == 1),
    st.sampled_from(['1155 NVIDIA L40S-24Q', ': NVIDIA L40S-24Q', '1155 :', '-1 : NVIDIA A10-1B',
                     '1234567890 : NVIDIA A10-1B', '1155 : {{ lookup("pipe", "id") }}', '1155 : NVIDIA A10-1B; id',
                     'ID    : vGPU Name']))


@SETTINGS
@given(st.dictionaries(type_ids, type_names, max_size=40), st.sampled_from(['  : ', ' : ', ':', '\t:\t']),
       st.booleans(), junk_lines, st.integers(min_value=0, max_value=40))
def test_creatable_types_are_read_back_exactly_and_junk_is_refused_naming_the_line(pairs, sep, header, junk, at):
    lines = (['ID    : vGPU Name'] if header else []) + ['%s%s%s' % (k, sep, v) for k, v in pairs.items()]
    assert vt.parse_creatable('\n'.join(lines) + '\n') == list(pairs.items())
    at = min(at, len(lines))
    if at == 0 and junk.strip() == 'ID    : vGPU Name':
        at = 1 if lines else at    # the header is welcome as the first line only
    lines.insert(at, junk)
    if not at and junk.strip() == 'ID    : vGPU Name':
        return
    with pytest.raises(vt.VgpuError, match=r'^/sys/x/nvidia/creatable_vgpu_types, line %d: ' % (at + 1)):
        vt.parse_creatable('\n'.join(lines), '/sys/x/nvidia/creatable_vgpu_types')


def test_creatable_bounds_and_conflicting_ids():
    with pytest.raises(vt.VgpuError, match='more than the 65536'):
        vt.parse_creatable('1 : NVIDIA A10-1B\n' * 4000)
    with pytest.raises(vt.VgpuError, match='more than 1024 vGPU types'):
        vt.parse_creatable(''.join('%d:A\n' % i for i in range(1100)))
    with pytest.raises(vt.VgpuError, match=r'line 3: type 588 is listed as .NVIDIA A10-1B. and as .NVIDIA A10-2B.'):
        vt.parse_creatable('ID : vGPU Name\n588 : NVIDIA A10-1B\n588 : NVIDIA A10-2B\n')
    # one line at the size bound is refused by one bounded regex match, not by scanning it again and again
    with pytest.raises(vt.VgpuError, match='line 1: '):
        vt.parse_creatable('1 : ' + 'A' * 65000)


def test_a_junk_current_vgpu_type_is_refused_naming_the_file(sysfs):
    a10_host(sysfs, driver='nvidia')
    sysfs.vendor_vgpu(A10_VFS[0], 'ID    : vGPU Name\n596  : NVIDIA A10-12Q\n', current='596; reboot')
    with pytest.raises(vt.VgpuError, match=r'nvidia/current_vgpu_type reads .596; reboot.; expected the id'):
        vt.discover(sysfs.root)


def test_kernel_and_driver_grammars():
    assert vi.kernel_version(UBUNTU_NOBLE) == (6, 8) and vi.kernel_version(RHEL_94) == (5, 14)
    assert vi.kernel_version('6.12.0-55.9.1.el10_0.x86_64') == (6, 12)
    assert [vi.kernel_version(v) for v in ('6', '6.8 x', '6.8.0\n1', None, '6.' + '8' * 70)] == [None] * 5
    assert vi.driver_branch(R580) == 580 and vi.driver_branch('550.54') == 550
    assert [vi.driver_branch(v) for v in ('580', 'R580', '580.82.02.1.2', '', None)] == [None] * 5


def test_names_from_the_host_reach_the_evidence_only_as_pci_addresses():
    # an mdev_bus entry or an mdevctl parent key of a copied tree: a forged line or a huge name becomes '?'
    parents = [{'parent': "{{ lookup('pipe','id') }}\nINJECTED", 'interface': 'mdev'},
               {'parent': '0000:41:00.0', 'interface': 'mdev'}]
    facts = vi.host_facts('/nonexistent', parents, mdevctl_parents=['A' * 100000])
    text = ' '.join(facts['evidence'])
    assert '0000:41:00.0' in text and 'INJECTED' not in text and 'lookup' not in text and len(text) < 1000


@pytest.mark.parametrize('facts', [
    {'evidence': ['0000:41:00.4 has nvidia/creatable_vgpu_types\n\x1b[2KFORGED ok: done\x07', 'x' * 5000]},
    {'evidence': [1, None, 'kernel 6.8.0\r']}, {'evidence': 5}, None, ['not', 'an', 'object']])
def test_evidence_in_a_message_is_printable_capped_and_any_shape(facts):
    text = vi.evidence_text(facts)
    assert all(' ' <= c <= '~' for c in text) and len(text) <= vi.MAX_EVIDENCE_TEXT
    if isinstance(facts, dict) and isinstance(facts['evidence'], list) and isinstance(facts['evidence'][0], str):
        assert 'FORGED ok: done' in text or 'kernel 6.8.0' in text
