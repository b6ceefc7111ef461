# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vfio_bind module on a sysfs-shaped tree: no-op, check mode, all-or-nothing validation."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.modules import vfio_bind

from ..module_utils.host.test_vfio_bind import BDF, make_tree
from .harness import run_module


def test_bound_device_unchanged(monkeypatch, tmp_path):
    make_tree(tmp_path, driver='vfio-pci', override='vfio-pci')
    res = run_module(monkeypatch, vfio_bind, dict(devices=[BDF], sysfs_root=str(tmp_path)))
    assert not res['failed'] and not res['changed'] and res['devices'][0]['steps'] == []


def test_check_mode_writes_nothing(monkeypatch, tmp_path):
    make_tree(tmp_path, driver='nouveau')
    res = run_module(monkeypatch, vfio_bind, dict(devices=[BDF], sysfs_root=str(tmp_path)), check=True)
    assert res['changed'] and res['devices'][0]['steps'] == ['override', 'unbind', 'probe']
    assert (tmp_path / 'bus/pci/drivers_probe').read_text() == ''


def test_one_missing_device_fails_before_any_write(monkeypatch, tmp_path):
    make_tree(tmp_path, driver='nouveau')
    res = run_module(monkeypatch, vfio_bind, dict(devices=[BDF, '0000:42:00.0'], sysfs_root=str(tmp_path)))
    assert res['failed'] and '0000:42:00.0 does not exist' in res['msg']
    assert (tmp_path / 'bus/pci/drivers/nouveau/unbind').read_text() == ''


def test_probe_without_binding_is_reported(monkeypatch, tmp_path):
    # A plain file tree cannot bind: the module must notice the driver did not change and name the device.
    make_tree(tmp_path, driver=None)
    res = run_module(monkeypatch, vfio_bind, dict(devices=[BDF], sysfs_root=str(tmp_path), load_module=False))
    assert res['failed'] and BDF + ' is bound to no driver after probing' in res['msg']


def test_inspect_only_reports_without_iommu(monkeypatch, tmp_path):
    make_tree(tmp_path, driver='nouveau', group=None)
    res = run_module(monkeypatch, vfio_bind, dict(devices=[BDF], sysfs_root=str(tmp_path), inspect_only=True))
    assert not res['failed'] and not res['changed'] and res['devices'][0]['driver'] == 'nouveau'


def test_a_driver_name_outside_the_module_grammar_is_reported_as_unknown(monkeypatch, tmp_path):
    # the driver link's name is host data the vfio role prints in its refusal: only a kernel module name is shown,
    # and the device still counts as held by a driver (not vfio-pci)
    make_tree(tmp_path, driver='nv\x1b[2J{{ x }}', group=None)
    res = run_module(monkeypatch, vfio_bind, dict(devices=[BDF], sysfs_root=str(tmp_path), inspect_only=True))
    assert not res['failed'] and res['devices'][0]['driver'] == '?' and res['devices'][0]['driver_before'] == '?'
    assert res['devices'][0]['steps'] == ['override', 'unbind', 'probe']
