# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host phase of the vendor-VFIO vGPU pool (playbooks/vgpu_vf.yml) for real: ansible-playbook on localhost, a
host of gpu_vm_vgpu whose sysfs is a stand-in tree laid out as the driver leaves it once the vGPU Manager has loaded
(tests/unit/vf_driver.py VfBoard: the L40S capture's types on its VFs). The phase gathers the host's vGPU facts again,
takes the pool row the fleet view picks from them, and runs the vgpu_vf role with the node's vGPU config; the
summary says what it did. Check mode writes nothing; a config without counts stops the phase before any change."""
from __future__ import annotations

import os

import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_types
from play_runner import run_play
from vf_driver import VfBoard

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PF, VF0, VF1 = '0000:41:00.0', '0000:41:00.4', '0000:41:00.5'
# the PF as pci_devices reports an L40S (pci.ids "AD102GL [L40S]", device 26b9)
PCI = {'gpus': [{'bdf': PF, 'vendor_id': '10de', 'device_id': '26b9', 'device_name': 'AD102GL [L40S]',
                 'driver': 'nvidia', 'is_vf': False}], 'iommu': {'enabled': True}}


def _run(tmp_path, config='l40s', check=False, loaded=True, platform=None, os_release='ID=ubuntu\n', extra=None,
         shown=False):
    board = VfBoard(tmp_path / 'sys')
    if loaded:
        os.makedirs(os.path.join(board.root, 'module', 'nvidia'), exist_ok=True)
        with open(os.path.join(board.root, 'module', 'nvidia', 'version'), 'w') as handle:
            handle.write('550.54.16\n')
    (tmp_path / 'proc').mkdir(exist_ok=True)
    root = tmp_path / 'root'
    (root / 'etc/systemd/system').mkdir(parents=True, exist_ok=True)
    # every host has an os-release (os-release(5)); without one the role refuses it (the host may be CoreOS)
    (root / 'etc/os-release').write_text(os_release)
    inv = tmp_path / 'inventory.yml'
    # facts as preflight left them before the vGPU Manager loaded (no vGPU interface shown yet)
    inv.write_text(yaml.safe_dump({'all': {'children': {'gpu_vm_vgpu': {'hosts': {'localhost': {
        'ansible_connection': 'local', 'gpuvirt_pci_devices': PCI,
        # shown: facts gathered once the driver had loaded (its VFs show vendor-specific VFIO)
        'gpuvirt_mdev_types': vgpu_types.discover(board.root) if shown else {'parents': []},
        'gpuvirt_gpu_holders': {'held': False, 'holders': []}, 'gpuvirt_vgpu_config': config}}}}}}))
    more = extra
    extra = {'gpuvirt_cluster_mode': 'apply', 'ansible_become': False,
             'gpu_operator_vgpu_configs': {'l40s': {'L40S-24Q': 2}}, 'vgpu_vf_driver_timeout': 1,
             'vgpu_vf_sysfs_root': board.root, 'vgpu_vf_proc_root': str(tmp_path / 'proc'), 'vgpu_vf_systemd': False,
             'vgpu_vf_sriov_manage': str(tmp_path / 'no-sriov-manage'), 'vgpu_vf_root_dir': str(root)}
    if platform is not None:
        extra['gpuvirt_platform'] = platform
    extra.update(more or {})
    # the phase's body, as site.yml imports it (the inventory gives the facts gather.yml would): playbooks/vgpu_vf.yml
    # first reads the cluster for its KubeVirt gate, which needs an API server
    # (tests/integration/cluster_operator/test_apply.py -k kubevirt_older)
    play = ''.join('- ansible.builtin.import_playbook: %s\n' % os.path.join(ROOT, 'playbooks', name)
                   for name in ('phase_vgpu_vf.yml', 'summary.yml'))
    rc, out = run_play(tmp_path, play, extra, args=['-i', str(inv)] + (['--check', '--diff'] if check else []))
    return board, rc, ' '.join(out.split())


def _current(board, vf):
    with open(os.path.join(board.root, 'bus/pci/devices', vf, 'nvidia/current_vgpu_type')) as handle:
        return handle.read().strip()


def test_the_phase_sets_the_profiles_of_a_vendor_vfio_host_and_says_so(tmp_path):
    board, rc, out = _run(tmp_path)
    assert rc == 0, out
    # the re-gathered facts show vendor VFIO: the host gets the vendor-VFIO row, and says why
    assert 'localhost: pool vm-vgpu-vf, vGPU interface vendor-vfio (the host shows vendor-vfio: 0000:41:00.4' in out
    assert 'setting the VF profiles' in out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['1155', '1155']
    assert '%s got NVIDIA L40S-24Q (1155)' % VF0 in out
    # the summary names the row, the interface and the VFs set
    assert 'localhost (node localhost, pool vm-vgpu-vf, vGPU interface vendor-vfio: the host shows vendor-vfio' in out
    assert 'VF profiles: %s: set' % VF0 in out, out


def test_check_mode_writes_nothing(tmp_path):
    board, rc, out = _run(tmp_path, check=True)
    assert rc == 0, out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['0', '0']
    assert 'setting the VF profiles' in out and '%s: set' % VF0 in out


def test_a_config_without_counts_stops_the_phase_before_any_change(tmp_path):
    board, rc, out = _run(tmp_path, config='L40S-24Q')
    assert rc != 0
    assert ('localhost (pool vm-vgpu-vf): its vGPU config "L40S-24Q" is not among gpu_operator_vgpu_configs (l40s). '
            'On vendor-specific VFIO the vgpu_vf role gives each VF a profile and needs how many of each type') in out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['0', '0']


def test_no_driver_after_the_timeout_stops_naming_the_vgpu_manager(tmp_path):
    board, rc, out = _run(tmp_path, loaded=False)
    assert rc != 0 and 'localhost: no NVIDIA driver after 1 s' in out, out
    assert 'nvidia-vgpu-manager pod on node localhost' in out, out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['0', '0']


def test_a_machineconfig_platform_reads_the_host_and_writes_nothing_on_it(tmp_path):
    # OpenShift's hosts belong to the Machine Config Operator (the platform table's kernel_args: machineconfig, as
    # host_prep.yml reads it): no VF profile, unit, script or config over SSH there. The host's boot-time config is
    # read (the module's plan, allowed on CoreOS) and goes to the controller's play, which builds the pool's
    # MachineConfig from the cluster's pools and nodes: with no cluster to read, it stops there, the host untouched
    # (the apply path against a real API server: tests/integration/cluster_operator/test_apply.py -k vgpu_vf)
    board, rc, out = _run(tmp_path, platform='openshift', os_release='ID="rhcos"\n',
                          extra={'gpuvirt_kubeconfig': str(tmp_path / 'no-kubeconfig')})
    assert rc != 0, out
    assert ('localhost: pool vm-vgpu-vf, vGPU interface vendor-vfio (the host shows vendor-vfio: 0000:41:00.4' in out
            and 'reading its boot-time VF config (written nothing: the Machine Config Operator owns the host' in out), out
    assert 'TASK [gpuvirt.provision.vgpu_vf : Read the cluster\'s MachineConfigPools]' in out, out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['0', '0']
    assert not os.path.exists(tmp_path / 'root/etc/gpuvirt')
    assert not os.path.exists(tmp_path / 'root/etc/systemd/system/gpuvirt-vgpu-vf.service')


def test_a_render_on_a_machineconfig_platform_says_why_it_holds_no_vf_machineconfig(tmp_path):
    # a render leaves the hosts out of the host phases (their facts are given): the controller's play says it
    board, rc, out = _run(tmp_path, platform='openshift', shown=True, extra={'gpuvirt_cluster_mode': 'render'})
    assert rc == 0, out
    assert ('localhost (pool vm-vgpu-vf, platform openshift): their VF profiles are not rendered. On a MachineConfig '
            'platform they are delivered as a MachineConfig whose boot-time config names each VF by its PCI address '
            'and type id, which only the host shows once the vGPU Manager has loaded the driver, and a render reads '
            'no host. Apply the rendered objects, then run playbooks/vgpu_vf.yml in apply mode') in out, out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['0', '0']


def test_a_coreos_host_is_refused_by_the_role_itself_when_the_platform_is_auto(tmp_path):
    # the role's own check (its module, before its first change): gpuvirt_platform auto, run alone, on an RHCOS host
    board, rc, out = _run(tmp_path, os_release='NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\n')
    assert rc != 0, out
    assert 'runs Red Hat CoreOS (/etc/os-release ID=rhcos, VARIANT_ID=(none))' in out and 'Nothing was changed' in out, out
    assert [_current(board, vf) for vf in (VF0, VF1)] == ['0', '0']
    assert not os.path.exists(tmp_path / 'root/etc/gpuvirt')
