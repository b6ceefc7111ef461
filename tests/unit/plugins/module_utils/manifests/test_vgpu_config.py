# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vgpu-device-manager ConfigMap: format, and types checked against the hosts' mdev / vendor-VFIO facts."""
from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_config as vc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402


def gpu(bdf, name):
    return {'bdf': bdf, 'device_name': name, 'is_vf': False, 'kind': 'gpu'}


def host(node, types=None, boards=(), parent='0000:41:00.4', interface='mdev', vgpu_config=None):
    parents = [] if types is None else [{'parent': parent, 'interface': interface,
                                         'types': [{'name': 'NVIDIA ' + t, 'short_name': t} for t in types]}]
    return {'node': node, 'pool': 'vm-vgpu', 'vgpu_config': vgpu_config,
            'facts': {'mdev_types': {'parents': parents}, 'pci_devices': {'gpus': [gpu(*b) for b in boards]}}}


def test_config_map_reads_back_in_the_device_manager_format():
    configs = vc.normalise_configs({'A10-12Q': {'NVIDIA A10-12Q': 2},
                                    'mixed': [{'devices': [0], 'vgpu-devices': {'L40S-24Q': 2}}]})
    cm = vc.build_configmap('gpuvirt-vgpu-devices', 'nvidia-gpu-operator', configs)
    schema.validate(cm)
    parsed = yaml.safe_load(cm['data']['config.yaml'])
    assert parsed == {'version': 'v1', 'vgpu-configs': {
        'A10-12Q': [{'devices': 'all', 'vgpu-devices': {'A10-12Q': 2}}],
        'mixed': [{'devices': [0], 'vgpu-devices': {'L40S-24Q': 2}}]}}


def test_reference_default_config_normalises_unchanged():
    path = os.path.join(schema.reference_dir(), 'vgpu-device-manager', 'vgpu-device-manager-v0.5.0-examples-config-t4.yaml')
    with open(path, encoding='utf-8') as handle:
        ref = yaml.safe_load(handle)['vgpu-configs']
    assert yaml.safe_load(vc.render_config(vc.normalise_configs(ref)))['vgpu-configs'] == ref


def test_type_no_host_offers_names_type_hosts_and_gpus():
    configs = vc.normalise_configs({'A10-12Q': {'A10-12Q': 2}, 'big': {'A10-48Q': 1}})
    hosts = [host('vgpu-a10', ['A10-12Q', 'A10-24Q']),
             host('vgpu-l40s', ['L40S-24Q'], parent='0000:c1:00.4', interface='vendor_vfio')]
    with pytest.raises(vc.ManifestError) as err:
        vc.validate(configs, hosts, 'A10-12Q')
    msg = str(err.value)
    assert 'A10-48Q' in msg and 'vgpu-a10' in msg and 'vgpu-l40s' in msg and '0000:c1:00.4 offers L40S-24Q' in msg
    # vgpu-l40s selects the default config A10-12Q, which its GPU does not offer
    assert 'A10-12Q (config A10-12Q) is not offered by any GPU of node vgpu-l40s' in msg


def test_selected_configs_checked_per_node_and_unknown_config_named():
    configs = vc.normalise_configs({'A10-12Q': {'A10-12Q': 2}, 'L40S-24Q': {'L40S-24Q': 2}})
    hosts = [host('vgpu-a10', ['A10-12Q']), host('vgpu-l40s', ['L40S-24Q'], vgpu_config='L40S-24Q')]
    assert vc.validate(configs, hosts, 'A10-12Q') == []
    hosts.append(host('vgpu-x', ['A10-12Q'], vgpu_config='A10-6Q'))
    with pytest.raises(vc.ManifestError, match="node vgpu-x selects vGPU config 'A10-6Q'"):
        vc.validate(configs, hosts, 'A10-12Q')
    with pytest.raises(vc.ManifestError, match="default vGPU config 'nope'"):
        vc.validate(configs, hosts[:2], 'nope')


def test_without_vgpu_manager_boards_are_checked_with_a_warning():
    configs = vc.normalise_configs({'A10-12Q': {'A10-12Q': 2}})
    fresh = host('vgpu-new', None, boards=[('0000:41:00.0', 'GA102GL [A10]')])
    warnings = vc.validate(configs, [fresh], 'A10-12Q')
    assert warnings and 'boards only' in warnings[0]
    l40s = host('vgpu-new', None, boards=[('0000:41:00.0', 'AD102GL [L40S]')])
    with pytest.raises(vc.ManifestError, match=r'A10-12Q.*0000:41:00.0 AD102GL \[L40S\]'):
        vc.validate(configs, [l40s], 'A10-12Q')


def test_bad_config_shapes():
    with pytest.raises(vc.ManifestError, match='positive integer'):
        vc.normalise_configs({'x': {'A10-12Q': 0}})
    with pytest.raises(vc.ManifestError, match='devices'):
        vc.normalise_configs({'x': [{'devices': 'some', 'vgpu-devices': {'A10-12Q': 1}}]})


@pytest.mark.parametrize('name', ['A10 12Q', 'A10-12Q\n', '-A10', 'x' * 64])
def test_a_config_name_that_cannot_be_a_label_value_is_refused(name):
    # nodes select a config with the label nvidia.com/vgpu.config=<name> (NVIDIA's OpenShift Virtualization guide,
    # "Apply a New vGPU Device Configuration"), so the name must fit the Kubernetes label value grammar
    with pytest.raises(vc.ManifestError, match='gpu_operator_vgpu_configs name.*label value'):
        vc.normalise_configs({name: {'A10-12Q': 2}})
