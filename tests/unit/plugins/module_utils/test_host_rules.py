# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host rules written once: the PCI address grammar (lspci parser, vfio binder and the vfio role), the IOMMU
kernel arguments (kernel_cmdline, used by the MachineConfig builder and the kernel_args role) and the nouveau
blacklist (modprobe: the nouveau role and the MachineConfig write the same lines)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline, lspci, modprobe, pci_address, vfio_bind
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))


# the kernel prints a PCI domain with %04x of a 32-bit number (drivers/pci/probe.c pci_setup_device, dev_set_name):
# 4 to 8 hex digits, e.g. VMD's 10000 and Hyper-V's 8-digit segments
@pytest.mark.parametrize('text', ['41:00.0', '0000:41:00.0', '10000:00:05.0', '0000:C1:00.7', '1a2b3c4d:00:00.0'])
def test_bdf_grammar_accepts(text):
    assert pci_address.BDF_RE.fullmatch(text)


@pytest.mark.parametrize('text', ['41:00.8', '000:41:00.0', '123456789:00:05.0', '0000:41:00.0\n', '0000:41:0.0', ''])
def test_bdf_grammar_refuses(text):
    assert not pci_address.BDF_RE.fullmatch(text)


@pytest.mark.parametrize('text,sysfs', [('0000:41:00.0', True), ('10000:00:05.0', True), ('41:00.0', False),
                                        ('0000:C1:00.0', False), (None, False), ('../../x', False)])
def test_sysfs_name_is_the_binders_rule(text, sysfs):
    assert pci_address.is_sysfs_bdf(text) is sysfs
    if sysfs:
        vfio_bind.validate_bdf(text)
    else:
        with pytest.raises(vfio_bind.BindError):
            vfio_bind.validate_bdf(text)


def test_lspci_parses_with_the_one_grammar():
    assert lspci.BDF is pci_address.BDF


@pytest.mark.parametrize('vendor', ['intel', 'amd'])
@pytest.mark.parametrize('passthrough', [True, False])
def test_machineconfig_iommu_args_are_the_host_rule(vendor, passthrough):
    rule = kernel_cmdline.iommu_args(vendor, passthrough)
    assert rule == [vendor + '_iommu=on'] + (['iommu=pt'] if passthrough else [])
    assert machineconfig.iommu_kernel_args(vendor, passthrough_mode=passthrough) == rule


def test_iommu_args_refuse_an_unknown_vendor():
    with pytest.raises(kernel_cmdline.CmdlineError, match="'arm' is not intel or amd"):
        kernel_cmdline.iommu_args('arm')


def test_the_kernel_args_role_builds_the_same_iommu_args():
    # the role takes its IOMMU arguments from the rule the MachineConfig uses (filter iommu_kernel_args), and
    # spells no copy of it in Jinja
    with open(os.path.join(ROOT, 'roles', 'kernel_args', 'tasks', 'validate.yml'), encoding='utf-8') as handle:
        text = handle.read()
    assert 'kernel_args_vendor | gpuvirt.provision.iommu_kernel_args(' in text
    assert "_iommu=on" not in text and "iommu=pt" not in text
    assert sorted(kernel_cmdline.IOMMU_ARGS) == ['amd', 'intel']
    assert all(arg == vendor + '_iommu=on' for vendor, arg in kernel_cmdline.IOMMU_ARGS.items())


@pytest.mark.parametrize('vendor', ['intel', 'amd'])
@pytest.mark.parametrize('passthrough', [True, False])
def test_the_host_rule_is_the_machineconfig_rule(vendor, passthrough):
    assert kernel_cmdline.host_iommu_args(vendor, passthrough) == \
        machineconfig.iommu_kernel_args(vendor, passthrough_mode=passthrough)


@pytest.mark.parametrize('passthrough', [True, False])
def test_the_iommu_switched_off_asks_for_no_argument(passthrough):
    assert kernel_cmdline.host_iommu_args(kernel_cmdline.IOMMU_OFF, passthrough) == []


@pytest.mark.parametrize('vendor', ['arm', 'unknown', '', None, 'Intel'])
def test_the_host_rule_refuses_an_unknown_vendor(vendor):
    with pytest.raises(kernel_cmdline.CmdlineError, match='is not intel or amd'):
        kernel_cmdline.host_iommu_args(vendor)


@pytest.mark.parametrize('passthrough', ['false', 'true', 0, None])
def test_the_host_rule_wants_a_real_boolean(passthrough):
    with pytest.raises(kernel_cmdline.CmdlineError, match='expected a boolean'):
        kernel_cmdline.host_iommu_args('intel', passthrough)


# the role's file as it was when the role spelled it literally: hosts must not see it change
NOUVEAU_ROLE_FILE = ('# Managed by gpuvirt.provision (nouveau role): the GPU goes to vfio-pci or the NVIDIA driver, '
                     'never nouveau.\nblacklist nouveau\noptions nouveau modeset=0\n')


def _nouveau_task():
    with open(os.path.join(ROOT, 'roles', 'nouveau', 'tasks', 'main.yml'), encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    return [t for t in tasks if t.get('name') == 'Blacklist nouveau'][0]['ansible.builtin.copy']


def test_the_nouveau_role_writes_the_machineconfig_blacklist():
    # the role's content goes through the one builder (modprobe.blacklist_text) that gives the MachineConfig its text
    assert "'nouveau' | gpuvirt.provision.modprobe_blacklist(" in _nouveau_task()['content']
    lines = [line for line in NOUVEAU_ROLE_FILE.splitlines() if line and not line.startswith('#')]
    assert lines == machineconfig.NOUVEAU_TEXT.splitlines()
    assert machineconfig.NOUVEAU_TEXT == modprobe.blacklist_text('nouveau')


def test_the_nouveau_role_file_is_byte_for_byte_what_it_was(tmp_path):
    # the task's content expression, templated by ansible-playbook and written by copy as the role does
    dest = tmp_path / 'blacklist.conf'
    play = [{'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': [{
        'name': 'Write the role content', 'ansible.builtin.copy': {'dest': str(dest), 'content': _nouveau_task()['content'],
                                                                   'mode': '0644'}}]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    proc = subprocess.run(['ansible-playbook', '-i', 'localhost,', str(tmp_path / 'play.yml'),
                           '-e', 'ansible_python_interpreter=' + sys.executable],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert dest.read_bytes() == NOUVEAU_ROLE_FILE.encode('ascii')


def test_the_machineconfig_nouveau_file_is_what_it_was():
    assert machineconfig.NOUVEAU_TEXT == 'blacklist nouveau\noptions nouveau modeset=0\n'
