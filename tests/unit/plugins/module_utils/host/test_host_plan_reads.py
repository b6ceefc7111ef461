# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_plan's reads (module_utils/host/host_plan_reads.py): what the roles' validate.yml read with several module
calls, read in one. Against real files where there are some: this machine's /etc/os-release and /proc/cpuinfo, the
lspci capture of a real H200 host (fixtures/SOURCES.md) over a sysfs tree of its layout, the kernel's procfs layout
for the processes holding /dev/nvidia*."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import platform

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import os_release
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan_reads as reads
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import sysfs_pci
from sysfs_tree import SysfsTree

H200 = '0000:00:06.0'
HOST = 'gpu-7.example'


# --- os-release ---------------------------------------------------------------------------------------------------

def test_the_id_of_this_machines_os_release_is_the_one_python_reads():
    # os-release(5) as Python's own reader parses it (platform.freedesktop_os_release, /etc/os-release first)
    assert reads.os_release_fields(('/etc/os-release',))['ID'] == platform.freedesktop_os_release()['ID']


@pytest.mark.parametrize('line, expected', [
    # RHCOS writes its ID quoted (ID="rhcos"), other systems bare; os-release(5) allows both
    ('ID="rhcos"', 'rhcos'), ("ID='fedora-coreos'", 'fedora-coreos'), ('ID=ubuntu', 'ubuntu'),
    # not of the os-release ID grammar (lower-case letters, digits, '.', '_', '-'): never returned, never CoreOS
    ('ID="rhcos; reboot"', ''), ('ID=RHCOS', ''), ('ID=rhcos\x00', ''), ('ID=', ''), ('ID="rhcos', ''),
])
def test_the_id_line_is_read_by_the_os_release_grammar(tmp_path, line, expected):
    path = tmp_path / 'os-release'
    path.write_text('NAME="Some Linux"\n%s\nID_LIKE="rhel fedora"\nVARIANT_ID=coreos\n' % line)
    assert reads.os_release_fields((str(path),))['ID'] == expected


def test_os_release_absent_or_too_large_is_refused(tmp_path):
    # without an os-release the host may be CoreOS (whose MCO owns it): refused, not taken for another system
    with pytest.raises(reads.Refusal, match='^%s: %s is not a readable regular file.*Nothing was changed'
                       % (HOST, tmp_path / 'missing')):
        reads.os_release_fields((str(tmp_path / 'missing'),), host=HOST)
    big = tmp_path / 'big'
    big.write_text('ID=rhcos\n' + 'X=' + 'y' * os_release.LIMIT + '\n')
    with pytest.raises(reads.Refusal, match='larger than 65536 bytes'):
        reads.os_release_fields((str(big),))


def test_the_plan_call_refuses_a_host_without_os_release_and_falls_back_to_usr_lib(tmp_path, monkeypatch):
    inputs = _inputs(tmp_path, 'ubuntu')
    (tmp_path / 'os-release').unlink()
    with pytest.raises(reads.Refusal, match='^%s: %s is not a readable regular file' % (HOST, tmp_path / 'os-release')):
        reads.read_and_plan(inputs, {'os_facts': _facts, 'lspci': _facts})
    # at its default the path has os-release(5)'s fallback, /usr/lib/os-release (stand-ins for the two under
    # tmp_path: this machine's own /etc/os-release is not removed)
    etc, usr = str(tmp_path / 'etc-os-release'), str(tmp_path / 'usr-os-release')
    monkeypatch.setattr(os_release, 'PATHS', (etc, usr))
    inputs['os_release_path'] = etc
    with pytest.raises(reads.Refusal, match='^%s: neither %s nor %s is a readable regular file' % (HOST, etc, usr)):
        reads.read_and_plan(inputs, {'os_facts': _facts, 'lspci': _facts})
    (tmp_path / 'usr-os-release').write_text('ID="rhcos"\nVARIANT_ID=coreos\n')
    out = reads.read_and_plan(inputs, {'os_facts': _facts, 'lspci': _facts})
    assert out['stopped'] and out['coreos'] and out['os_id'] == 'rhcos', out
    # a path given other than the default is the only one read
    inputs['os_release_path'] = str(tmp_path / 'other')
    with pytest.raises(reads.Refusal, match='^%s: %s is not a readable' % (HOST, tmp_path / 'other')):
        reads.read_and_plan(inputs, {'os_facts': _facts, 'lspci': _facts})


# --- CPU vendor and ACPI tables ------------------------------------------------------------------------------------

def test_the_cpu_vendor_of_this_machine():
    with open('/proc/cpuinfo') as f:
        text = f.read()
    expected = 'intel' if 'GenuineIntel' in text else 'amd' if 'AuthenticAMD' in text else None
    assert reads.cpu_vendor('/proc/cpuinfo') == expected


def test_cpuinfo_is_read_bounded_and_by_grammar(tmp_path):
    # a host of many CPUs: only the first blocks are read, the vendor is on each
    block = 'processor\t: %d\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel name\t: AMD EPYC 9654\n\n'
    path = tmp_path / 'cpuinfo'
    path.write_text(''.join(block % n for n in range(2000)))
    assert os.path.getsize(str(path)) > reads.CPUINFO_LIMIT
    assert reads.cpu_vendor(str(path)) == 'amd'
    path.write_text('processor\t: 0\nvendor_id\t: GenuineIntel; reboot\n')
    assert reads.cpu_vendor(str(path)) is None
    path.write_text('processor\t: 0\nCPU implementer\t: 0x41\n')  # arm64: no vendor_id line
    assert reads.cpu_vendor(str(path)) is None


def test_acpi_table_decides_before_the_cpu(tmp_path):
    tables = tmp_path / 'tables'
    tables.mkdir()
    cpu = tmp_path / 'cpuinfo'
    cpu.write_text('vendor_id\t: AuthenticAMD\n')
    assert reads.iommu_vendor(True, 'auto', 'present', str(tables), str(cpu)) == 'amd'
    (tables / 'DMAR').write_text('')
    # under emulation the CPU vendor can differ: the table counts
    assert reads.iommu_vendor(True, 'auto', 'present', str(tables), str(cpu)) == 'intel'
    (tables / 'DMAR').unlink()
    (tables / 'IVRS').write_text('')
    cpu.write_text('vendor_id\t: GenuineIntel\n')
    assert reads.iommu_vendor(True, 'auto', 'present', str(tables), str(cpu)) == 'amd'
    # off, absent, or set: nothing read
    assert reads.iommu_vendor(False, 'auto', 'present', '/nonexistent', '/nonexistent') == 'none'
    assert reads.iommu_vendor(True, 'auto', 'absent', '/nonexistent', '/nonexistent') == 'none'
    assert reads.iommu_vendor(True, 'amd', 'present', '/nonexistent', '/nonexistent') == 'amd'


def test_the_roles_vendor_refusals_name_the_host(tmp_path):
    ka = {'state': 'present', 'iommu': True, 'iommu_vendor': 'auto', 'iommu_passthrough': True, 'extra': ['quiet']}
    with pytest.raises(reads.Refusal) as e:
        reads.kernel_args_wanted(HOST, ka, str(tmp_path), str(tmp_path / 'no-cpuinfo'))
    assert str(e.value).startswith('kernel_args: %s shows neither a DMAR nor an IVRS ACPI table' % HOST)
    with pytest.raises(reads.Refusal, match="kernel_args: %s: kernel_args_iommu_vendor is 'via'" % HOST):
        reads.kernel_args_wanted(HOST, dict(ka, iommu_vendor='via'), str(tmp_path), '/nonexistent')
    assert reads.kernel_args_wanted(HOST, dict(ka, iommu_vendor='intel'), '/x', '/x') == (
        'intel', ['intel_iommu=on', 'iommu=pt', 'quiet'])
    assert reads.kernel_args_wanted(HOST, dict(ka, iommu_vendor='amd', iommu_passthrough=False), '/x', '/x')[1] == [
        'amd_iommu=on', 'quiet']
    with pytest.raises(host_plan.PlanError, match='kernel_args_iommu is .false.: expected a boolean'):
        reads.kernel_args_wanted(HOST, dict(ka, iommu='false'), '/x', '/x')


@pytest.mark.parametrize('vendor', ['none', 'unknown', 'Intel', '', None])
def test_an_iommu_vendor_outside_the_roles_choices_is_refused(vendor):
    # roles/kernel_args/meta/argument_specs.yml: auto, intel or amd; none (from -e) planned no IOMMU argument
    ka = {'state': 'present', 'iommu': True, 'iommu_vendor': vendor, 'iommu_passthrough': True, 'extra': []}
    with pytest.raises(reads.Refusal, match=r"^kernel_args: %s: kernel_args_iommu_vendor is .*: choose auto, intel "
                                            r"or amd .*Nothing was changed\.$" % HOST):
        reads.kernel_args_wanted(HOST, ka, '/nonexistent', '/nonexistent')


# --- vfio: discovery, selection, inspection, holders ---------------------------------------------------------------

def _h200_host(tmp_path, fixtures_dir, driver='nvidia', group=None, holder=False):
    """The lent H200 host's layout (test_real_h200_capture.py): the GPU at 0000:00:06.0 on nvidia, no IOMMU group
    in that VM; a procfs tree, with a process holding /dev/nvidia0 when ``holder``."""
    tree = SysfsTree(tmp_path / 'sys')
    tree.device(H200, '0302', '10de', '2335', subsystem=('10de', '18bf'), driver=driver, group=group)
    proc = tmp_path / 'proc'
    proc.mkdir()
    if holder:
        fd = proc / '4242' / 'fd'
        fd.mkdir(parents=True)
        os.symlink('/dev/nvidia0', str(fd / '3'))
        (proc / '4242' / 'comm').write_text('nvidia-persiste\n')
        (proc / '4242' / 'cgroup').write_text('0::/system.slice/nvidia-persistenced.service\n')
    with open(os.path.join(fixtures_dir, 'lspci', 'h200-vm-vmmnnkD-nvidia-driver_gpuvirt-device-check.txt')) as f:
        lspci = f.read()
    return tree.root, str(proc), (lambda: lspci)


VF = {'gpus': True, 'include_nvswitch': False, 'require_devices': True, 'device_ids': [], 'bdfs': [],
      'persistent_ids': [], 'rebind_drivers': ['nouveau', 'snd_hda_intel']}


def test_the_real_h200_is_selected_and_refused_while_nvidia_holds_it(tmp_path, fixtures_dir):
    root, proc, lspci = _h200_host(tmp_path, fixtures_dir, holder=True)
    with pytest.raises(reads.Refusal) as e:
        reads.vfio_validate(HOST, VF, root, lspci, proc)
    msg = str(e.value)
    assert msg.startswith('vfio: 0000:00:06.0 (10de:2335) is held by driver nvidia; holders: PID 4242 '), msg
    assert 'holds /dev/nvidia0' in msg and 'unit nvidia-persistenced.service' in msg, msg
    assert 'or move %s to the container pool' % HOST in msg, msg
    # a driver the device may be taken from at runtime
    assert reads.vfio_validate(HOST, dict(VF, rebind_drivers=['nvidia']), root, lspci, proc) == [H200]


def test_the_real_h200_on_vfio_pci_passes(tmp_path, fixtures_dir):
    root, proc, lspci = _h200_host(tmp_path, fixtures_dir, driver='vfio-pci', group=9)
    assert reads.vfio_validate(HOST, VF, root, lspci, proc) == [H200]


def test_a_group_member_whose_sysfs_is_not_utf8_is_refused_naming_the_file(tmp_path, fixtures_dir):
    # the other members of the GPU's IOMMU group are read too: a vendor file of other bytes is named, not a traceback
    root, proc, lspci = _h200_host(tmp_path, fixtures_dir, driver='vfio-pci', group=9)
    tree = SysfsTree(root)
    rel = tree.device('0000:00:07.0', '0403', '10de', '22e8', driver='vfio-pci', group=9)
    with open(tree.path(rel, 'vendor'), 'wb') as f:
        f.write(b'0x10\xffde\n')
    with pytest.raises(reads.Refusal) as e:
        reads.vfio_validate(HOST, VF, root, lspci, proc)
    vendor = os.path.join(root, 'bus', 'pci', 'devices', '0000:00:07.0', 'vendor')
    assert str(e.value).startswith('vfio: %s: %s, line 1: byte 0xff' % (HOST, vendor)), e.value
    assert str(e.value).endswith('Nothing was changed.')


@pytest.mark.parametrize('member', ['{{ x }}', '0000:00:07.0\n', '..', 'x' * 200])
def test_a_group_member_that_is_no_pci_address_is_refused_naming_the_group(tmp_path, fixtures_dir, member):
    # a member's name becomes a sysfs path, a bind and a message: only a PCI address is one
    root, proc, lspci = _h200_host(tmp_path, fixtures_dir, driver='vfio-pci', group=9)
    if member != '..':
        os.mkdir(os.path.join(root, 'kernel', 'iommu_groups', '9', 'devices', member))
    else:  # no directory entry can be named "..": a group that is not a number
        os.unlink(os.path.join(root, 'bus', 'pci', 'devices', H200, 'iommu_group'))
        os.symlink('../../../kernel/iommu_groups/..', os.path.join(root, 'bus', 'pci', 'devices', H200, 'iommu_group'))
    with pytest.raises(reads.Refusal) as e:
        reads.vfio_validate(HOST, VF, root, lspci, proc)
    text = str(e.value)
    assert text.startswith('vfio: %s: IOMMU group ' % HOST) and text.endswith('Nothing was changed.'), text
    assert ('names no group number' in text) if member == '..' else (
        'IOMMU group 9 lists an entry that is not a PCI address' in text), text
    assert '{{' not in text and '\n' not in text and 'xx' not in text and '..' not in text


def test_a_driver_name_outside_the_module_grammar_is_shown_as_unknown(tmp_path, fixtures_dir):
    # the driver link's name is host data: a refusal shows it only where it is a kernel module name
    root, proc, lspci = _h200_host(tmp_path, fixtures_dir, driver='nv\x1b[2J{{ x }}')
    with pytest.raises(reads.Refusal) as e:
        reads.vfio_validate(HOST, VF, root, lspci, proc)
    assert str(e.value).startswith('vfio: 0000:00:06.0 (10de:2335) is held by driver ?;'), e.value
    assert '\x1b' not in str(e.value) and '{{' not in str(e.value)


def test_nothing_selected_names_the_iommu_state_and_the_host(tmp_path, fixtures_dir):
    root, proc, lspci = _h200_host(tmp_path, fixtures_dir)
    # gpus false and no ids: nothing discovered, nothing selected
    with pytest.raises(reads.Refusal) as e:
        reads.vfio_validate(HOST, dict(VF, gpus=False), root, lspci, proc)
    assert str(e.value) == ("vfio: nothing to bind on %s: no NVIDIA GPU found and vfio_device_ids/vfio_bdfs select "
                            "nothing. Check the host's pool, or set vfio_require_devices=false." % HOST)
    # the GPU's id selected but no such device in sysfs: the discovery ran, so its IOMMU line is named
    os.unlink(os.path.join(root, 'bus', 'pci', 'devices', H200))
    with pytest.raises(reads.Refusal) as e:
        reads.vfio_validate(HOST, VF, root, lspci, proc)
    assert 'vfio: 0000:00:06.0 (10de:2335)' not in str(e.value)
    assert str(e.value).startswith('vfio: %s: PCI device 0000:00:06.0 does not exist on this host' % HOST), e.value
    assert reads.vfio_validate(HOST, dict(VF, gpus=False, require_devices=False), root, lspci, proc) == []


def test_a_discovered_address_outside_the_pci_grammar_is_refused(tmp_path, fixtures_dir):
    # lspci's output is host data: a Slot that is a path never becomes a device (nor a sysfs path read or bound)
    root, proc, lspci = _h200_host(tmp_path, fixtures_dir)
    vf = dict(VF, rebind_drivers=['nvidia'])
    assert reads.vfio_validate(HOST, vf, root, lspci, proc) == [H200]
    hostile = lspci().replace('Slot:\t0000:00:06.0', 'Slot:\t0000:00:06.0/../../x')
    assert hostile != lspci()
    with pytest.raises(ValueError, match='a Slot line of the lspci output is not a PCI address'):
        reads.vfio_validate(HOST, vf, root, lambda: hostile, proc)


def test_selection_of_a_real_hgx_host(tmp_path, fixtures_dir):
    # lspci of a bare-metal HGX H100 host (8 GPUs 10de:2330, 4 NVSwitches 10de:22a3; fixtures/SOURCES.md): the
    # role's selection (discover.yml): GPUs, NVSwitches only with vfio_include_nvswitch, devices by id, the addresses
    name = 'hgx-h100-8gpu-4nvswitch-Dnn-egrep-nvidia-vga_starlab3030-rhel-ai.txt'
    with open(os.path.join(fixtures_dir, 'lspci', name)) as f:
        pci = sysfs_pci.discover(f.read(), str(tmp_path), ['10de'], ())
    gpus = sorted(g['bdf'] for g in pci['gpus'])
    switches = sorted(n['bdf'] for n in pci['nvswitches'])
    assert len(gpus) == 8 and len(switches) == 4
    assert reads.vfio_selection(pci, True, False, [], []) == gpus
    assert reads.vfio_selection(pci, True, True, [], []) == sorted(gpus + switches)
    by_id = reads.vfio_selection(pci, False, False, ['10de:22a3'], ['0000:c1:00.0'])
    assert by_id == sorted(switches + ['0000:c1:00.0'])
    assert reads.vfio_selection(None, True, True, ['10de:22a3'], []) == []


# --- the one call -------------------------------------------------------------------------------------------------

def _ka(tmp_path, **over):
    return dict({'enabled': True, 'state': 'present', 'iommu': True, 'iommu_vendor': 'auto', 'iommu_passthrough': True,
                 'extra': [], 'remove': [], 'backend': 'auto',
                 'record_path': str(tmp_path / 'gpuvirt-provision' / 'host-state.json'),
                 'dropin_path': str(tmp_path / 'grub.d' / '90-gpuvirt-kernel-args.cfg')}, **over)


def _inputs(tmp_path, os_id, **over):
    (tmp_path / 'os-release').write_text('NAME=x\nID=%s\n' % os_id)
    base = {'host': HOST, 'stop_coreos': True, 'gather_os_facts': True,
            'os_release_path': str(tmp_path / 'os-release'), 'acpi_tables_dir': str(tmp_path / 'no-tables'),
            'proc_cpuinfo': str(tmp_path / 'no-cpuinfo'), 'proc_root': '/proc', 'sysfs_root': str(tmp_path),
            'proc_cmdline': '/proc/cmdline', 'kernel_args': _ka(tmp_path)}
    base.update(over)
    return base


def _facts():
    raise AssertionError('the OS facts are not gathered on a host the call stops on')


def test_coreos_ends_the_call_before_a_refusal_of_the_kernel_args_decision(tmp_path):
    # no ACPI table, no CPU vendor: the decision would refuse (and a vendor of none of the choices too); on a
    # CoreOS host the play decides from the ID first, so the call returns it and nothing else
    for vendor in ('auto', 'via'):
        inputs = _inputs(tmp_path, '"rhcos"', kernel_args=_ka(tmp_path, iommu_vendor=vendor))
        out = reads.read_and_plan(inputs, {'os_facts': _facts, 'lspci': _facts})
        assert out['stopped'] and out['coreos'] and out['os_id'] == 'rhcos' and out['changes'] == [], out
    # Fedora CoreOS: ID=fedora, VARIANT_ID=coreos (fedora-release.spec appends the variant to Fedora's os-release)
    out = reads.read_and_plan(_inputs(tmp_path, 'fedora\nVARIANT_ID=coreos'), {'os_facts': _facts, 'lspci': _facts})
    assert out['stopped'] and out['coreos'] and out['os_id'] == 'fedora', out
    # not CoreOS: the same inputs are refused with the role's words
    with pytest.raises(reads.Refusal, match='kernel_args: %s shows neither a DMAR nor an IVRS' % HOST):
        reads.read_and_plan(_inputs(tmp_path, 'ubuntu'), {'os_facts': lambda: {'os_family': 'Debian'}})


def test_the_facts_pick_the_backend_as_the_role_does(tmp_path):
    inputs = _inputs(tmp_path, 'rhel', kernel_args=_ka(tmp_path, iommu_vendor='intel'))
    seen = {}

    def which(name):
        seen[name] = True

    facts = {'os_family': 'RedHat', 'distribution_major_version': '8', 'distribution': 'RedHat'}
    inputs.update(which=which, tmpdir=str(tmp_path))
    (tmp_path / 'grub').write_text('GRUB_CMDLINE_LINUX="quiet"\n')
    inputs['kernel_args']['grub_default_path'] = str(tmp_path / 'grub')
    out = reads.read_and_plan(inputs, {'os_facts': lambda: facts})
    assert out['facts'] == facts and not out['stopped'] and out['os_id'] == 'rhel'
    assert out['kernel_args_wanted'] == ['intel_iommu=on', 'iommu=pt']
    # EL8: grub_default (the role's choice), not the host's pick (which would have asked for update-grub)
    assert [c['path'] for c in out['changes'] if c['what'] == 'kernel_args'] == [str(tmp_path / 'grub')], out
    assert 'update-grub' not in seen


def test_a_running_command_line_that_cannot_be_read_is_refused_as_the_roles_precheck_does(tmp_path):
    inputs = _inputs(tmp_path, 'ubuntu', proc_cmdline=str(tmp_path / 'no' / 'cmdline'),
                     kernel_args=_ka(tmp_path, iommu_vendor='amd'))
    with pytest.raises(reads.Refusal, match='kernel_args: %s: cannot read %s as a kernel command line'
                       % (HOST, tmp_path / 'no' / 'cmdline')):
        reads.read_and_plan(inputs, {'os_facts': lambda: {'os_family': 'Debian'}})


def _never(*_args):
    raise AssertionError('nothing is read on the host before the inputs are checked')


@pytest.mark.parametrize('over, named', [
    ({'kernel_args': {'enabled': True, 'state': 'present', 'record_path': '/etc/shadow'}}, 'kernel_args_record_path'),
    ({'proc_cmdline': '/etc/shadow'}, 'kernel_args_proc_cmdline'),
    ({'vfio': {'state': 'present', 'modules': ['vfio\ninstall x /bin/sh']}}, 'vfio_modules[0]'),
])
def test_the_inputs_are_checked_before_the_first_read(tmp_path, over, named):
    # the module's documentation: every input is checked by shape before anything is read (the OS facts, os-release,
    # lspci, sysfs, procfs); a missing os-release would otherwise be the refusal
    inputs = dict(_inputs(tmp_path, 'ubuntu'), os_release_path=str(tmp_path / 'missing' / 'os-release'), **over)
    with pytest.raises(host_plan.PlanError, match=named.replace('[', r'\[').replace(']', r'\]')):
        reads.read_and_plan(inputs, {'os_facts': _never, 'lspci': _never})
    inputs['stop_coreos'] = False
    with pytest.raises(host_plan.PlanError, match=named.replace('[', r'\[').replace(']', r'\]')):
        reads.read_and_plan(inputs, {'os_facts': _never, 'lspci': _never})


@pytest.mark.parametrize('key', ['os_release_path', 'proc_cpuinfo', 'acpi_tables_dir', 'proc_root'])
def test_each_read_path_is_checked_before_anything_is_read(tmp_path, key):
    with pytest.raises(host_plan.PlanError, match='%s is .*expected an absolute path' % key):
        reads.read_and_plan(_inputs(tmp_path, 'ubuntu', **{key: '/proc/../etc/shadow'}), {})
