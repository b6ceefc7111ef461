# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A mixed vGPU fleet for the render and apply tests: the example's A10 vGPU hosts (mdev) beside an L40S host on
NVIDIA's vendor-specific VFIO interface, whose saved facts are gathered here by the collection's own readers from a
sysfs tree laid out as the reference captures show it:

* the PF: ``e1:00.0 3D controller: NVIDIA Corporation AD102GL [L40S]`` on the ``nvidia`` driver, subsystem 10de:1851
  (tests/unit/fixtures/lspci/l40s-x2-k-s-one-vfio-pci-one-nvidia-with-tabs-openshift-node_schmaustech.txt, the
  node's second L40S);
* two of its SR-IOV VFs, each with ``nvidia/creatable_vgpu_types`` as an L40S VF lists them and
  ``current_vgpu_type`` 0 (tests/unit/fixtures/sysfs/l40s-vf-0000_26_00.4-nvidia, from harvester/pcidevices'
  gpuhelper testdata), the VFs on the ``nvidia`` driver and with their PF's vendor:device, as the A2 host's
  recording shows them (harvester/pcidevices tests/snapshots/vgpu-node.umockdev: PCI_ID 10DE:25B6 on PF and VFs).

``lspci -k -s`` lists the PF only, so the PCI facts hold the PF; the vGPU facts hold the VFs.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
from sysfs_tree import SysfsTree  # noqa: E402

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import saved_facts, sysfs_pci, vgpu_types  # noqa: E402

FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures')
LSPCI = os.path.join(FIXTURES, 'lspci', 'l40s-x2-k-s-one-vfio-pci-one-nvidia-with-tabs-openshift-node_schmaustech.txt')
CREATABLE = os.path.join(FIXTURES, 'sysfs', 'l40s-vf-0000_26_00.4-nvidia', 'creatable_vgpu_types')
PF = '0000:e1:00.0'
VFS = ('0000:e1:00.4', '0000:e1:00.5')
L40S_HOST = 'gpu-s01.example.com'


def l40s_host_facts(tmp_path, host=L40S_HOST):
    """The saved-facts document of an L40S host whose VFs are on vendor-specific VFIO (checked as a render reads
    it)."""
    tree = SysfsTree(tempfile.mkdtemp(prefix='sysfs-%s-' % host, dir=str(tmp_path)))
    tree.device(PF, '0302', '10de', '26b9', subsystem=('10de', '1851'), driver='nvidia', group=40)
    for i, vf in enumerate(VFS):
        tree.device(vf, '0302', '10de', '26b9', subsystem=('10de', '1851'), driver='nvidia', group=41 + i)
    tree.sriov(PF, list(VFS), total=32)
    with open(CREATABLE, encoding='utf-8') as handle:
        creatable = handle.read()
    for vf in VFS:
        tree.vendor_vgpu(vf, creatable)
    with open(LSPCI, encoding='utf-8') as handle:
        lines = handle.read().splitlines()
    start = [i for i, line in enumerate(lines) if line.startswith('sh-5.1# lspci -k -s e1:00.0')][0]
    lspci = '\n'.join(lines[start + 1:]) + '\n'
    hostvars = {'gpuvirt_pci_devices': sysfs_pci.discover(lspci, tree.root),
                'gpuvirt_mdev_types': vgpu_types.discover(tree.root),
                'gpuvirt_gpu_holders': {'held': False, 'holders': []},
                'gpuvirt_node_name': host.split('.')[0]}
    return saved_facts.to_saved(host, hostvars, source='tests/unit/vf_fleet.py')


def add_l40s_host(inventory_dir, tmp_path, config='L40S-24Q', host=L40S_HOST, drop=('gpu-p01.example.com',),
                  pool='gpu-vf-l40s'):
    """The example inventory copy at ``inventory_dir`` with the L40S vendor-VFIO host in gpu_vm_vgpu (vGPU config
    ``config``) and its saved facts; the hosts in ``drop`` (the example's L40S passed whole: one model cannot be
    both in one cluster) left out. On OpenShift the host sits in MachineConfigPool ``pool`` of its own
    (gpuvirt_machineconfig_pool, as the example's hosts.yml says): its VF MachineConfig reaches every node of its pool
    alike, and the example's gpu-worker pool holds every other GPU node."""
    import yaml
    path = os.path.join(str(inventory_dir), 'hosts.yml')
    with open(path, encoding='utf-8') as handle:
        hosts = yaml.safe_load(handle)
    children = hosts['all']['children']
    for group in children.values():
        for name in drop:
            (group.get('hosts') or {}).pop(name, None)
    children['gpu_vm_vgpu']['hosts'][host] = {'gpuvirt_vgpu_config': config, 'ansible_host': '192.0.2.1',
                                              'ansible_ssh_common_args': '-o ConnectTimeout=2'}
    if pool:
        children['gpu_vm_vgpu']['hosts'][host]['gpuvirt_machineconfig_pool'] = pool
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(hosts, handle)
    # its vGPU config among the custom ones (two L40S-24Q per 48 GB GPU), for the GPU Operator and verify
    vgpu_vars = os.path.join(str(inventory_dir), 'group_vars', 'all', 'vgpu.yml')
    with open(vgpu_vars, encoding='utf-8') as handle:
        values = yaml.safe_load(handle)
    values['gpu_operator_vgpu_configs'][config] = {config: 2}
    with open(vgpu_vars, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(values, handle)
    with open(os.path.join(str(inventory_dir), '.gpuvirt_facts', host + '.json'), 'w', encoding='utf-8') as handle:
        json.dump(l40s_host_facts(tmp_path, host), handle, indent=1, sort_keys=True)
