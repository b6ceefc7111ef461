# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab VM after host preparation, read with pytest-testinfra over SSH (the lab's own ssh config, which
tools/lab/start.sh writes to LAB_DIR/run/ssh_config).

The vm Molecule scenario runs this from verify.yml, after prepare (the former pool's reboot), converge (host
preparation's one reboot) and idempotence (none), with LAB_EXPECTED_BOOTS=3; it holds as well after `make demo`
(`make lab-test`: a fresh boot and host preparation's, 2). What it reads is the guest itself: the running kernel command line,
the device's driver link in sysfs, the files host preparation manages with their modes and owners, the boot
counter the lab disk counts boots with (tools/lab/build-image.sh) and the loaded modules.
"""
from __future__ import annotations

import os

import pytest
import testinfra

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
LAB_DIR = os.environ.get('LAB_DIR') or os.path.join(ROOT, '.lab')
# the stand-in GPU (QEMU's edu device, 1234:11e8), pinned at this address by tools/lab/start.sh; inventories/lab
EDU = '0000:00:10.0'
# a fresh overlay boots once; host preparation reboots it once, a second run not at all (the vm scenario: 3, above)
BOOTS = int(os.environ.get('LAB_EXPECTED_BOOTS', '2'))


@pytest.fixture(scope='module')
def lab():
    config = os.path.join(LAB_DIR, 'run', 'ssh_config')
    if not os.path.isfile(config):
        pytest.fail('%s missing: no lab VM was started from LAB_DIR=%s (tools/lab/start.sh)' % (config, LAB_DIR))
    return testinfra.get_host('ssh://lab-gpu-0', ssh_config=config, sudo=True)


def test_one_reboot_and_the_new_command_line_is_running(lab):
    assert lab.file('/var/lib/lab/boots').content_string.strip() == str(BOOTS)
    cmdline = lab.file('/proc/cmdline').content_string.split()
    # the kernel_args role's arguments for Intel vm-passthrough hosts; the disk boots with intel_iommu=off
    assert 'intel_iommu=on' in cmdline and 'iommu=pt' in cmdline, cmdline
    assert 'intel_iommu=off' not in cmdline, cmdline


def test_the_device_is_bound_to_vfio_pci_with_its_group_device(lab):
    driver = lab.file('/sys/bus/pci/devices/%s/driver' % EDU)
    assert driver.is_symlink
    assert os.path.basename(driver.linked_to) == 'vfio-pci', driver.linked_to
    group = os.path.basename(lab.file('/sys/bus/pci/devices/%s/iommu_group' % EDU).linked_to)
    # testinfra's File has no character-device test: test(1) -c
    assert lab.run('test -c %s', '/dev/vfio/' + group).rc == 0, '/dev/vfio/%s is no character device' % group


# (path, a line it must hold); each is written root:root 0644 (roles/nouveau/tasks/main.yml,
# roles/vfio/tasks/persistent.yml, plugins/modules/kernel_cmdline.py)
MANAGED = [
    ('/etc/default/grub.d/90-gpuvirt-kernel-args.cfg', None),
    ('/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf', 'blacklist nouveau'),
    ('/etc/modprobe.d/gpuvirt-vfio.conf', 'options vfio-pci ids=1234:11e8'),
    ('/etc/modules-load.d/gpuvirt-vfio.conf', 'vfio_pci'),
]


@pytest.mark.parametrize('path,line', MANAGED, ids=[m[0] for m in MANAGED])
def test_managed_file_with_its_mode_and_owner(lab, path, line):
    managed = lab.file(path)
    assert managed.is_file, path
    assert (managed.user, managed.group, managed.mode) == ('root', 'root', 0o644), (managed.user, managed.group,
                                                                                    oct(managed.mode))
    if line is not None:
        assert line in managed.content_string.splitlines(), managed.content_string


def test_nouveau_is_blacklisted_and_not_loaded(lab):
    # the effective modprobe configuration (every file under /etc/modprobe.d and /lib/modprobe.d), not just our file
    assert 'blacklist nouveau' in lab.check_output('modprobe --showconfig').splitlines()
    assert not lab.file('/sys/module/nouveau').exists
    assert 'nouveau' not in [ln.split()[0] for ln in lab.file('/proc/modules').content_string.splitlines()]
