# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kernel_cmdline module: drives main() on files in a temporary directory."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuvirt.provision.plugins.modules import kernel_cmdline

from .harness import run_module

OFF = 'BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=c2e9 ro console=ttyS0,115200n8 intel_iommu=off quiet\n'
ON = 'BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=c2e9 ro console=ttyS0,115200n8 quiet intel_iommu=on iommu=pt\n'


def run(monkeypatch, args, commands=None, rc=0, **modes):
    """Run the module with ``args``; return its JSON result. ``commands`` collects run_command argv.

    run_command is always stubbed (answering ``rc``): update-grub and grub2-mkconfig would rewrite the boot
    configuration of the machine running the tests. ``modes``: check, diff.
    """
    return run_module(monkeypatch, kernel_cmdline, args, commands=[] if commands is None else commands, rc=rc,
                      bin_path=lambda name: '/usr/sbin/' + name, **modes)


@pytest.fixture
def host(tmp_path):
    (tmp_path / 'cmdline').write_text(OFF)
    return tmp_path


def dropin_args(host, **kw):
    base = dict(args=['intel_iommu=on', 'iommu=pt'], backend='grub_dropin',
                dropin_path=str(host / 'grub.d' / '90-gpuvirt.cfg'), proc_cmdline=str(host / 'cmdline'))
    base.update(kw)
    return base


def test_check_mode_changes_nothing(monkeypatch, host):
    cmds = []
    res = run(monkeypatch, dropin_args(host), cmds, check=True, diff=True)
    assert res['changed'] and res['reboot_required'] and not res['failed']
    assert res['commands'] == [['/usr/sbin/update-grub']] and cmds == []
    assert 'intel_iommu=on iommu=pt' in res['diff']['after']
    assert not (host / 'grub.d').exists()


def test_writes_then_idempotent(monkeypatch, host):
    cmds = []
    res = run(monkeypatch, dropin_args(host), cmds)
    assert res['changed'] and res['bootloader_updated'] and cmds == [['/usr/sbin/update-grub']]
    assert res['missing'] == ['intel_iommu=on', 'iommu=pt'] and res['unwanted'] == ['intel_iommu=off']
    cmds = []
    res = run(monkeypatch, dropin_args(host), cmds)
    assert not res['changed'] and cmds == []
    assert res['reboot_required']  # still pending until the host boots the new command line


def test_after_reboot_nothing_pending(monkeypatch, host):
    run(monkeypatch, dropin_args(host))
    (host / 'cmdline').write_text(ON)
    res = run(monkeypatch, dropin_args(host))
    assert not res['changed'] and not res['reboot_required'] and res['missing'] == []


def test_failed_update_grub_restores_file(monkeypatch, host):
    path = host / 'grub.d' / '90-gpuvirt.cfg'
    path.parent.mkdir()
    path.write_text('old\n')
    res = run(monkeypatch, dropin_args(host), rc=1)
    assert res['failed'] and 'update-grub failed' in res['msg']
    assert path.read_text() == 'old\n'
    res = run(monkeypatch, dropin_args(host), rc=1)  # retried, not "no change"
    assert res['failed']


def test_bad_arg_fails_before_change(monkeypatch, host):
    res = run(monkeypatch, dropin_args(host, args=['intel_iommu=on', 'x=$(reboot)']))
    assert res['failed'] and "'x=$(reboot)'" in res['msg']
    assert not (host / 'grub.d').exists()


def test_grub_default_backend(monkeypatch, host):
    grub = host / 'grub'
    grub.write_text('GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb quiet"\n')
    cmds = []
    res = run(monkeypatch, dict(args=['intel_iommu=on'], backend='grub_default', grub_default_path=str(grub),
                                grub_config='/boot/grub2/grub.cfg', proc_cmdline=str(host / 'cmdline')), cmds)
    assert res['changed'] and cmds == [['/usr/sbin/grub2-mkconfig', '-o', '/boot/grub2/grub.cfg']]
    assert grub.read_text() == 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb quiet intel_iommu=on"\n'


def test_backend_none_only_compares(monkeypatch, host):
    (host / 'cmdline').write_text(ON)
    res = run(monkeypatch, dict(args=['intel_iommu=on', 'iommu=pt'], backend='none', proc_cmdline=str(host / 'cmdline')))
    assert not res['changed'] and not res['reboot_required'] and res['commands'] == []
