# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What kernel arguments and boot-loader paths the collection takes, whoever gives them (docs/security.md,
"Boot loader"). kernel_args_extra, kernel_args_remove and kernel_args_dropin_path are inputs an inventory or a
survey may set; the kernel_cmdline module is the sink and checks them itself: an argument that picks PID 1, the
root disk or turns a protection off (the kernel's kernel-parameters.txt, dracut.cmdline(7)) is never added or
removed, and the files it writes are boot-loader files of the shape their reader reads, never through a link."""
from __future__ import annotations

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.modules import kernel_cmdline as module


@pytest.mark.parametrize('arg', ['init=/bin/sh', 'rdinit=/x', 'root=/dev/sdb1', 'rd.break', 'rd.shell',
                                 'rd.lvm.lv=vg/root', 'selinux=0', 'enforcing=0', 'apparmor=0', 'lockdown=none',
                                 'module.sig_enforce=0', 'module.sig-enforce=0', 'single', 'systemd.unit=rescue.target',
                                 'lsm=', 'security=none', 'ima_appraise=off',
                                 # the second review: a denylist missed these; the allow-list refuses them
                                 'systemd.wants=debug-shell.service', 'systemd.run=/usr/bin/id', 'LD_PRELOAD=/x.so',
                                 'SYSTEMD_UNIT_PATH=/tmp', 'initrd=/x', 'mount.usr=/dev/x', 'roothash=x',
                                 'kgdbwait', 'mitigations=off', 'fstab=0', 'Init=/bin/sh'])
def test_arguments_that_choose_pid_1_the_root_or_a_protection_are_refused(arg):
    with pytest.raises(kc.CmdlineError, match='is not one the collection sets'):
        kc.validate_args([arg])
    # the OpenShift path (MachineConfig kernelArguments) takes the same parameters
    with pytest.raises(mc.ManifestError, match='is not one the collection sets'):
        mc.iommu_kernel_args('intel', True, [arg])


@pytest.mark.parametrize('arg', ['intel_iommu=on', 'amd_iommu=on', 'iommu=pt', 'rd.driver.blacklist=nouveau',
                                 'modprobe.blacklist=nouveau', 'nouveau.modeset=0', 'vfio-pci.ids=10de:2236',
                                 'pcie_acs_override=downstream', 'rootdelay=5', 'hugepagesz=1G', 'iommu.strict=1',
                                 'nvidia.NVreg_EnableGpuFirmware=0', 'kvm_intel.nested=1'])
def test_the_arguments_the_collection_and_its_users_set_are_taken(arg):
    kc.validate_args([arg])


@pytest.mark.parametrize('pattern', ['*', 'r*', 'root', 'rd.*', 'sel*', 'init', '?', 'lockdown*',
                                     # with a value part (the second review: these took the root LV off)
                                     'root=*', 'rd.lvm.lv=*', 'r*=*', '?oot=*', 'init=*', 'selinux=*', 'rd.md*',
                                     'mount.usr*'])
def test_a_remove_pattern_that_would_take_a_protected_argument_is_refused(pattern):
    with pytest.raises(kc.CmdlineError, match='would remove'):
        kc.validate_patterns([pattern])


@pytest.mark.parametrize('pattern', ['intel_iommu', 'iommu', 'nouveau.*', 'vfio-pci.ids', 'pcie_acs_override*'])
def test_narrow_remove_patterns_are_taken(pattern):
    kc.validate_patterns([pattern])


@pytest.mark.parametrize('name, paths', [
    ('dropin_path', ('/tmp/victim/etc/passwd', '/etc/default/grub', '/boot/grub2/grub.cfg')),
    ('dropin_path', ('/etc/default/grub.d/../../passwd.cfg', '/etc/default/grub', '/boot/grub2/grub.cfg')),
    ('dropin_path', ('/etc/default/grub.d//x.cfg', '/etc/default/grub', '/boot/grub2/grub.cfg')),
    ('dropin_path', ('etc/default/grub.d/x.cfg', '/etc/default/grub', '/boot/grub2/grub.cfg')),
    ('grub_default_path', ('/etc/default/grub.d/90-gpuvirt-kernel-args.cfg', '/etc/shadow', '/boot/grub2/grub.cfg')),
    ('grub_config', ('/etc/default/grub.d/90-gpuvirt-kernel-args.cfg', '/etc/default/grub', '/etc/profile')),
])
def test_boot_loader_paths_of_another_shape_are_refused(name, paths):
    with pytest.raises(kc.CmdlineError, match='^%s ' % name):
        kc.check_paths(*paths)


def test_the_default_paths_pass():
    kc.check_paths('/etc/default/grub.d/90-gpuvirt-kernel-args.cfg', '/etc/default/grub', '/boot/grub2/grub.cfg')
    kc.check_paths('/etc/default/grub.d/90-gpuvirt-kernel-args.cfg', '/etc/default/grub',
                   '/boot/efi/EFI/redhat/grub.cfg')


class _Module(object):
    def atomic_move(self, src, dest):
        os.rename(src, dest)


def test_the_drop_in_is_never_written_through_a_link(tmp_path):
    victim = tmp_path / 'passwd'
    victim.write_text('root:x:0:0\n')
    (tmp_path / 'grub.d').mkdir()
    link = tmp_path / 'grub.d' / '90-gpuvirt.cfg'
    os.symlink(str(victim), str(link))
    with pytest.raises(RuntimeError, match='symbolic link'):
        module.write_file(_Module(), str(link), None, b'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX x"\n')
    assert victim.read_text() == 'root:x:0:0\n'


def test_a_planted_link_at_the_temporary_name_is_not_followed(tmp_path):
    victim = tmp_path / 'passwd'
    victim.write_text('root:x:0:0\n')
    (tmp_path / 'grub.d').mkdir()
    dest = tmp_path / 'grub.d' / '90-gpuvirt.cfg'
    os.symlink(str(victim), str(dest) + '.gpuvirt-tmp')
    with pytest.raises(RuntimeError, match='not a regular file'):
        module.write_file(_Module(), str(dest), None, b'x\n')
    assert victim.read_text() == 'root:x:0:0\n' and not dest.exists()
    os.unlink(str(dest) + '.gpuvirt-tmp')
    module.write_file(_Module(), str(dest), None, b'x\n')
    assert dest.read_bytes() == b'x\n' and oct(dest.stat().st_mode & 0o777) == '0o644'
