# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/operator-contract.md is complete by construction: every leaf field the manifest builders write, for
representative inputs, has a row in its "Field index" (object, field, values, upstream source), every row names a
source, and no row lists a field nothing writes. A new field in a builder fails here until the contract says which
upstream document or code it follows."""
from __future__ import annotations

import json
import os
import pathlib
import re
import sys

import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt as kv
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

CONTRACT = pathlib.Path(__file__).resolve().parents[5] / 'docs' / 'operator-contract.md'
SECTION = '## Field index'
POOL = 'gpu-worker'
# maps whose keys are names (labels, annotations, selectors): one leaf per key, the key in brackets
NAMED_KEYS = ('labels', 'annotations', 'matchLabels', 'nodeSelector')
# identity, not content: the object column names the kind, the row the fields
IDENTITY = ('apiVersion', 'kind', 'metadata.name', 'metadata.namespace')
# fields whose every value the row must spell out (the values are the contract, not inputs)
VALUE_FIELDS = {
    ('MachineConfig', 'spec.kernelArguments[]'),
    ('MachineConfig', 'spec.config.storage.files[].path'),
    ('KubeVirt', 'spec.configuration.developerConfiguration.featureGates[]'),
    ('HyperConverged', 'metadata.annotations[kubevirt.kubevirt.io/jsonpatch]'),
    ('Helm dra-driver-nvidia-gpu', 'nvidiaDriverRoot'),
    ('Helm dra-driver-nvidia-gpu', 'kubeletPlugin.nodeSelector[nvidia.com/dra-kubelet-plugin]'),
    ('ResourceClaimTemplate', 'spec.spec.devices.requests[].exactly.deviceClassName'),
    ('ResourceClaimTemplate', 'spec.spec.devices.config[].opaque.parameters.iommu.backendPolicy'),
    ('ResourceClaimTemplate', 'spec.spec.devices.config[].opaque.parameters.kind'),
    ('Node', 'metadata.labels[nvidia.com/gpu.workload.config]'),
    ('ClusterPolicy', 'spec.devicePlugin.enabled'),
    ('Helm gpu-operator', 'devicePlugin.enabled'),
}


def leaves(obj, path=''):
    """``(path, value)`` for every scalar we set: ``a.b`` for maps, ``a[]`` for list items, ``a[key]`` for named
    keys (labels, annotations, selectors); the pool name becomes ``<pool>``."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            key = key.replace(POOL, '<pool>')
            if path.rsplit('.', 1)[-1] in NAMED_KEYS and not {'matchLabels', 'matchExpressions'} & set(obj):
                here = '%s[%s]' % (path, key)
            else:
                here = '%s.%s' % (path, key) if path else key
            if here in IDENTITY:
                continue
            yield from leaves(value, here)
    elif isinstance(obj, list):
        for item in obj:
            yield from leaves(item, path + '[]')
    else:
        yield path, obj


VGM = {'repository': 'registry.example.com:5000/nvidia', 'version': '580.82.02'}
PCI = [{'selector': '10de:2236', 'resource_name': 'nvidia.com/GA102GL_A10'}]
MDEV = [{'selector': 'NVIDIA A10-12Q', 'resource_name': 'nvidia.com/NVIDIA_A10-12Q'}]
# what a user passes through gpu_operator_helm_values_extra in our own test inventories and guides
HELM_EXTRA = {'operator': {'nodeSelector': {'node-role.kubernetes.io/worker': ''}}, 'driver': {'enabled': False}}


def produced():
    """``{(object, field): set of values}`` the builders write for representative inputs of every path."""
    out = {}

    def add(kind, obj):
        for path, value in leaves(obj):
            out.setdefault((kind, path), set()).add(value)

    overlay = gop.settings(default_workload='vm-vgpu', vgpu_manager=VGM, pull_secret_name='vgpu-pull',
                           vgpu_device_manager_config={'name': 'gpuvirt-vgpu-devices-config', 'default': 'A10-12Q'})
    add('ClusterPolicy', gop.build_cluster_policy([{'kind': 'ClusterPolicy', 'spec': {}}], overlay))
    add('ClusterPolicy', gop.build_cluster_policy([{'kind': 'ClusterPolicy', 'spec': {}}], gop.settings()))
    # a fleet with a MIG pool's host: the MIG manager on, with the strategy
    add('ClusterPolicy', gop.build_cluster_policy([{'kind': 'ClusterPolicy', 'spec': {}}],
                                                  gop.settings(mig_strategy='mixed')))
    add('Helm gpu-operator', gop.helm_values(gop.settings(mig_strategy='single')))
    add('Helm gpu-operator', gop.helm_values(overlay, HELM_EXTRA))
    # DRA nodes under the operator's driver: the driver manager is told the DRA kubelet plugin's label
    policy = gop.build_cluster_policy([{'kind': 'ClusterPolicy', 'spec': {}}], gop.settings())
    add('ClusterPolicy', dict(policy, spec=gop.with_dra_eviction(policy['spec'], ['dra-1'], 'alm-examples')))
    add('Helm gpu-operator', gop.with_dra_eviction(gop.helm_values(gop.settings()), ['dra-1'], 'extra'))
    # DRA nodes: the device plugin off, so the operator validator drops its plugin check
    add('ClusterPolicy', dict(policy, spec=gop.with_dra_validator(policy['spec'], ['dra-1'], [], 'alm-examples')))
    add('Helm gpu-operator', gop.with_dra_validator(gop.helm_values(gop.settings()), ['dra-1'], [], 'extra'))
    for supported in (True, False):
        add('HyperConverged', hco.build_hco(None, PCI, MDEV, gate_supported=supported)[0])
    add('HyperConverged', dra.hco_gate_object(None, dra.kubevirt_gates('1.8.2')))
    for version in ('v1.7.4', kv.TARGET_KUBEVIRT_VERSION):  # the deprecated gate, then the field replacing it
        add('KubeVirt', kv.build_kubevirt(None, PCI, MDEV, version=version)[0])
    add('KubeVirt', dra.kubevirt_gate_object(None, dra.kubevirt_gates('1.8.2')))
    for vendor in ('intel', 'amd'):
        add('MachineConfig', mc.build_machineconfig(POOL, mc.iommu_kernel_args(vendor)))
    add('MachineConfigPool', mc.build_pool(POOL))
    for mode in sorted(dra.DRIVER_ROOTS):
        add('Helm dra-driver-nvidia-gpu', dra.helm_values(mode))
    add('ResourceClaimTemplate', dra.resource_claim_template('vfio-gpu', 'vms', count=2))
    for row in fleet.POOL_TABLE:
        labels = nl.desired_labels(row.name, 'A10-12Q' if row.vgpu else None, mc.pool_selector(POOL))
        add('Node', {'metadata': {'labels': {k: v for k, v in labels.items()
                                             if v is not None and not isinstance(v, nl.RemoveIf)}}})
        # the plan writes the owned-labels record with the labels
        (patch,), dummy = nl.plan([{'node': 'n1', 'pool': row.name, 'vgpu_config': 'A10-12Q' if row.vgpu else None}],
                                  None, [], pool_selector=mc.pool_selector(POOL))
        add('Node', {'metadata': {'annotations': patch['metadata']['annotations']}})
    return out


def contract_rows():
    text = CONTRACT.read_text(encoding='utf-8')
    assert SECTION in text, 'docs/operator-contract.md has no "%s" section' % SECTION
    body = text.split(SECTION, 1)[1].split('\n## ', 1)[0]
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')] if line.startswith('|') else []
        if len(cells) != 4 or cells[0] in ('object', '') or set(cells[0]) <= set('-'):
            continue
        fields = re.findall(r'`([^`]+)`', cells[1])
        assert len(fields) == 1, 'a row names one field in backquotes: %r' % line
        key = (cells[0], fields[0])
        assert key not in rows, 'field listed twice: %s %s' % key
        rows[key] = {'values': cells[2], 'source': cells[3]}
    return rows


def shown(value):
    """How a value reads in the values column."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def test_every_field_the_builders_write_has_a_row_with_its_upstream_source():
    rows = contract_rows()
    missing = sorted('%s `%s`' % key for key in produced() if key not in rows)
    assert not missing, 'fields we write with no row in the contract\'s field index:\n' + '\n'.join(missing)
    for key, row in rows.items():
        assert len(row['source']) > 20, 'no upstream source for %s %s' % key


def test_no_row_names_a_field_nothing_writes():
    stale = sorted('%s `%s`' % key for key in contract_rows() if key not in produced())
    assert not stale, 'rows for fields no builder writes:\n' + '\n'.join(stale)


def test_rows_of_fixed_values_spell_every_value_out():
    rows, out = contract_rows(), produced()
    for key in sorted(VALUE_FIELDS):
        assert key in out, 'no builder writes %s %s any more' % key
        values = set()
        for value in out[key]:
            if key[1].endswith('[kubevirt.kubevirt.io/jsonpatch]'):
                values.update(op['value'] for op in json.loads(value))
            else:
                values.add(shown(value))
        unnamed = sorted(v for v in values if '`%s`' % v not in rows.get(key, {}).get('values', ''))
        assert not unnamed, '%s %s: values %s are not in the row' % (key[0], key[1], unnamed)


def test_the_nouveau_file_row_spells_out_its_content_and_mode():
    (mcfg,) = [mc.build_machineconfig(POOL, mc.iommu_kernel_args('intel'))]
    (entry,) = mcfg['spec']['config']['storage']['files']
    row = contract_rows()[('MachineConfig', 'spec.config.storage.files[].contents.source')]
    for line in mc.decode_data_url(entry['contents']['source']).splitlines():
        assert '`%s`' % line in row['values'], line
    mode = contract_rows()[('MachineConfig', 'spec.config.storage.files[].mode')]
    assert '`%d`' % entry['mode'] in mode['values'] and '`0%o`' % entry['mode'] in mode['values']


def _list_types(crd_file, version, path):
    with open(pathlib.Path(schema.reference_dir()) / 'crds' / crd_file, encoding='utf-8') as handle:
        crd = yaml.safe_load(handle)
    (schema_,) = [v['schema']['openAPIV3Schema'] for v in crd['spec']['versions'] if v['name'] == version]
    node = schema_
    for key in path:
        node = node['properties'][key]
    return dict((k, (node['properties'][k].get('x-kubernetes-list-type'),
                     node['properties'][k].get('x-kubernetes-list-map-keys'))) for k in ('pciHostDevices',
                                                                                         'mediatedDevices'))


def test_the_hyperconverged_rows_give_its_lists_the_merge_type_of_its_crd():
    # kubevirt/hyperconverged-cluster-operator v1.18.1 CRD (reference copy), v1beta1: both permitted-device lists are
    # x-kubernetes-list-type: map, keyed by their selector (docs/gitops.md says the same); the contract said atomic
    types = _list_types('hyperconverged-cluster-operator-v1.18.1-hco.kubevirt.io_hyperconvergeds.yaml', 'v1beta1',
                        ('spec', 'permittedHostDevices'))
    assert types == {'pciHostDevices': ('map', ['pciDeviceSelector']), 'mediatedDevices': ('map', ['mdevNameSelector'])}
    row = contract_rows()[('HyperConverged', 'metadata.annotations[gpuvirt.provision/owned-permitted-host-devices]')]
    assert 'atomic' not in row['source'], row
    assert 'x-kubernetes-list-type: map' in row['source'] and '`pciDeviceSelector`' in row['source'] \
        and '`mdevNameSelector`' in row['source'], row
