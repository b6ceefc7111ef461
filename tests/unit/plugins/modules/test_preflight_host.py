# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""preflight_host: main() says which vGPU interface a gpu_vm_vgpu host offers and which pool row it gets, and takes
gpuvirt_pool as explicit_pool (refused, naming both, when it disagrees with what the host shows)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.modules import preflight_host

from .harness import run_module

# an L40S with one VF listing L40S-24Q on NVIDIA's vendor-specific VFIO interface (the shape mdev_types returns,
# after the real L40S VF capture in tests/unit/fixtures/sysfs)
L40S = {'gpus': [{'bdf': '0000:26:00.0', 'vendor_id': '10de', 'device_id': '26b9', 'device_name': 'AD102GL [L40S]',
                  'driver': 'nvidia', 'is_vf': False}], 'iommu': {'enabled': True}}
VFIO = {'parents': [{'parent': '0000:26:00.4', 'interface': 'vendor_vfio',
                     'types': [{'type_id': '1155', 'name': 'NVIDIA L40S-24Q', 'available_instances': 1}]}],
        'host_interface': {'interface': 'vendor-vfio', 'kernel_release': '5.14.0-427.13.1.el9_4.x86_64',
                           'driver_version': '550.54.16',
                           'evidence': ['0000:26:00.4 has nvidia/creatable_vgpu_types and no mdev_supported_types',
                                        'kernel 5.14.0-427.13.1.el9_4.x86_64, driver 550.54.16']}}


def test_the_module_returns_the_row_and_the_interface_with_its_reason(monkeypatch, tmp_path):
    args = {'host': 'gpu-l40s', 'pools': ['vm-vgpu'], 'pci_devices': L40S, 'mdev_types': VFIO,
            'requested_vgpu_types': ['L40S-24Q'], 'sysfs_root': str(tmp_path)}
    res = run_module(monkeypatch, preflight_host, args)
    assert not res.get('failed'), res
    assert (res['pool'], res['interface']) == ('vm-vgpu-vf', 'vendor-vfio') and res['errors'] == []
    assert res['interface_reason'].startswith('the host shows vendor-vfio: 0000:26:00.4 has nvidia/creatable_vgpu_types')
    res = run_module(monkeypatch, preflight_host, dict(args, explicit_pool='vm-vgpu'))
    assert res['failed'] and 'gpuvirt_pool vm-vgpu is the pool of the mdev vGPU interface, but the host shows ' \
                             'vendor-vfio' in res['msg']
    res = run_module(monkeypatch, preflight_host, dict(args, requested_vgpu_types=['L40S-1-12C']))
    assert res['failed'] and 'vGPU type L40S-1-12C in its vGPU config is MIG-backed' in res['msg']
