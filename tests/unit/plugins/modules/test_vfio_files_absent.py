# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vfio_files_absent: what it takes back (only what carries our header or markers), what it keeps and names, and
the refusal while VirtualMachineInstances run on the host's node."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpuvirt.provision.plugins.modules import vfio_files_absent as vfa

from .harness import run_module

OURS = '# Managed by gpuvirt.provision (vfio role).\noptions vfio-pci ids=10de:2236\n'
BLOCK = '# BEGIN gpuvirt.provision vfio\nvfio\nvfio_pci\n# END gpuvirt.provision vfio\n'


def _vmi(name, node, namespace='vms'):
    return {'metadata': {'name': name, 'namespace': namespace}, 'status': {'nodeName': node}}


def _tree(tmp_path, modprobe=OURS, modules='raid1\n' + BLOCK):
    paths = dict(modprobe_path=tmp_path / 'modprobe.d/gpuvirt-vfio.conf',
                 modules_load_path=tmp_path / 'modules-load.d/gpuvirt-vfio.conf',
                 dracut_path=tmp_path / 'dracut.conf.d/gpuvirt-vfio.conf',
                 initramfs_modules_path=tmp_path / 'initramfs-tools/modules')
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    if modprobe is not None:
        paths['modprobe_path'].write_text(modprobe)
    if modules is not None:
        paths['initramfs_modules_path'].write_text(modules)
    return dict((k, str(v)) for k, v in paths.items())


# The refusal decision, each way.
def test_running_vmis_on_the_node_refuse_a_removal_naming_them():
    msg = vfa.vmi_refusal(['/etc/modprobe.d/gpuvirt-vfio.conf'], ['vms/db', 'vms/web'], allow=False)
    assert 'vms/db, vms/web' in msg and 'Nothing was changed' in msg and 'host_prep_stop_vms' in msg


def test_allowed_running_vmis_do_not_refuse():
    assert vfa.vmi_refusal(['/etc/modprobe.d/gpuvirt-vfio.conf'], ['vms/db'], allow=True) is None


def test_nothing_to_remove_never_refuses_even_with_vmis():
    # a converged vGPU host runs its VMs: a run with nothing to take back must not stop there
    assert vfa.vmi_refusal([], ['vms/db'], allow=False) is None


def test_no_vmis_do_not_refuse():
    assert vfa.vmi_refusal(['/etc/modprobe.d/gpuvirt-vfio.conf'], [], allow=False) is None


def test_only_the_vmis_of_this_node_count():
    vmis = [_vmi('a', 'gpu1'), _vmi('b', 'gpu2'), {'metadata': {'name': 'pending'}}, 'junk',
            _vmi('c', 'gpu1', namespace='other')]
    assert vfa.vmis_on_node(vmis, 'gpu1') == ['other/c', 'vms/a']


def test_the_module_refuses_before_any_change_while_vmis_run(monkeypatch, tmp_path):
    paths = _tree(tmp_path)
    res = run_module(monkeypatch, vfa, dict(paths, vmis=[_vmi('db', 'gpu1')], node_name='gpu1'))
    assert res['failed'] and 'vms/db' in res['msg'], res
    assert open(paths['modprobe_path']).read() == OURS
    assert BLOCK in open(paths['initramfs_modules_path']).read()


def test_the_module_removes_with_vmis_on_other_nodes(monkeypatch, tmp_path):
    paths = _tree(tmp_path)
    res = run_module(monkeypatch, vfa, dict(paths, vmis=[_vmi('db', 'gpu2')], node_name='gpu1'))
    assert not res['failed'] and res['changed'] and res['initramfs_changed'], res
    assert not os.path.exists(paths['modprobe_path'])
    assert open(paths['initramfs_modules_path']).read() == 'raid1\n'


# What is ours and what is not.
def test_a_symbolic_link_at_our_path_is_kept_and_not_followed(monkeypatch, tmp_path):
    target = tmp_path / 'elsewhere.conf'
    target.write_text(OURS)
    paths = _tree(tmp_path, modprobe=None, modules=None)
    os.symlink(str(target), paths['modprobe_path'])
    res = run_module(monkeypatch, vfa, paths)
    kept = [dict(path=paths['modprobe_path'], reason='a symbolic link, not a file we wrote')]
    assert not res['changed'] and res['kept'] == kept, res
    assert os.path.islink(paths['modprobe_path']) and target.read_text() == OURS


def test_a_block_with_a_missing_end_marker_is_kept_and_named(monkeypatch, tmp_path):
    edited = 'raid1\n# BEGIN gpuvirt.provision vfio\nvfio\nmy_module\n'
    paths = _tree(tmp_path, modprobe=None, modules=edited)
    res = run_module(monkeypatch, vfa, paths)
    assert not res['changed'] and 'edited by hand' in res['kept'][0]['reason'], res
    assert open(paths['initramfs_modules_path']).read() == edited


def test_our_header_further_down_is_not_ours(monkeypatch, tmp_path):
    paths = _tree(tmp_path, modprobe='options vfio-pci ids=10de:2236\n' + OURS, modules=None)
    res = run_module(monkeypatch, vfa, paths)
    assert not res['changed'] and res['kept'][0]['reason'].startswith('no gpuvirt.provision header'), res


def test_check_mode_reports_the_same_plan_and_writes_nothing(monkeypatch, tmp_path):
    paths = _tree(tmp_path)
    planned = run_module(monkeypatch, vfa, paths, check=True)
    assert os.path.exists(paths['modprobe_path']) and BLOCK in open(paths['initramfs_modules_path']).read()
    real = run_module(monkeypatch, vfa, paths)
    assert planned['changed'] and planned['removed'] == real['removed'], (planned, real)


def test_a_path_outside_its_directory_is_refused_naming_the_option(monkeypatch, tmp_path):
    paths = _tree(tmp_path)
    res = run_module(monkeypatch, vfa, dict(paths, dracut_path=str(tmp_path / 'profile.d/x.conf')))
    assert res['failed'] and 'dracut_path' in res['msg'], res
    assert os.path.exists(paths['modprobe_path'])


def test_a_vmi_migrating_onto_the_node_counts_until_its_migration_ends():
    # status.migrationState (KubeVirt v1.9.0 VirtualMachineInstance CRD): targetNode is where the guest is going;
    # completed / failed end the migration (then nodeName says where the guest runs)
    def migrating(name, source, target, **state):
        vmi = _vmi(name, source)
        vmi['status']['migrationState'] = dict(sourceNode=source, targetNode=target, **state)
        return vmi
    vmis = [migrating('going', 'gpu2', 'gpu1'), migrating('done', 'gpu2', 'gpu1', completed=True),
            migrating('failed', 'gpu2', 'gpu1', failed=True), migrating('leaving', 'gpu1', 'gpu3'),
            {'metadata': {'name': 'odd', 'namespace': 'vms'}, 'status': {'migrationState': 'junk'}}]
    assert vfa.vmis_on_node(vmis, 'gpu1') == ['vms/going', 'vms/leaving']
    assert vfa.vmis_on_node(vmis, 'gpu2') == ['vms/done', 'vms/failed', 'vms/going']
    assert vfa.vmis_on_node(vmis, 'gpu3') == ['vms/leaving']
