# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HCO permittedHostDevices merge: foreign entries kept, duplicates removed, ours updated/removed, stable."""
from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco, kubevirt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

A10 = {'selector': '10de:2236', 'resource_name': 'nvidia.com/GA102GL_A10'}
L40S = {'selector': '10DE:26B9', 'resource_name': 'nvidia.com/AD102GL_L40S'}
A10_12Q = {'selector': 'NVIDIA A10-12Q', 'resource_name': 'nvidia.com/NVIDIA_A10-12Q'}
FOREIGN_PCI = {'pciDeviceSelector': '8086:0D5C', 'resourceName': 'intel.com/QAT', 'externalResourceProvider': True}


def cluster_hco(pci=None, mdev=None, annotations=None, gates=None):
    """An HCO as read from a cluster: the upstream default CR plus the given lists."""
    obj = {'apiVersion': hco.HCO_API_VERSION, 'kind': 'HyperConverged',
           'metadata': {'name': hco.HCO_NAME, 'namespace': hco.HCO_NAMESPACE, 'annotations': dict(annotations or {})},
           'spec': {'featureGates': dict(gates or {'disableMDevConfiguration': False}), 'permittedHostDevices': {}}}
    if pci is not None:
        obj['spec']['permittedHostDevices']['pciHostDevices'] = pci
    if mdev is not None:
        obj['spec']['permittedHostDevices']['mediatedDevices'] = mdev
    return obj


def applied(current, obj):
    """What the cluster holds after applying ``obj`` (our fields replace theirs; the rest stays)."""
    out = json.loads(json.dumps(current or {}))
    out.setdefault('metadata', {}).setdefault('annotations', {}).update(obj['metadata']['annotations'])
    spec = out.setdefault('spec', {})
    spec['permittedHostDevices'] = dict(spec.get('permittedHostDevices') or {}, **obj['spec']['permittedHostDevices'])
    if 'featureGates' in obj['spec']:
        spec['featureGates'] = dict(spec.get('featureGates') or {}, **obj['spec']['featureGates'])
    out['apiVersion'], out['kind'] = obj['apiVersion'], obj['kind']
    return out


def test_first_run_adds_ours_and_keeps_foreign_entries():
    cur = cluster_hco(pci=[FOREIGN_PCI])
    obj, changed, report = hco.build_hco(cur, [A10, L40S], [A10_12Q])
    schema.validate(obj)
    pci = obj['spec']['permittedHostDevices']['pciHostDevices']
    assert pci[0] == FOREIGN_PCI  # untouched, first
    assert [e['pciDeviceSelector'] for e in pci[1:]] == ['10DE:2236', '10DE:26B9']
    assert all(e['externalResourceProvider'] is True for e in pci[1:])
    mdev = obj['spec']['permittedHostDevices']['mediatedDevices']
    assert mdev == [{'mdevNameSelector': 'NVIDIA A10-12Q', 'resourceName': 'nvidia.com/NVIDIA_A10-12Q',
                     'externalResourceProvider': True}]
    assert obj['spec']['featureGates'] == {'disableMDevConfiguration': True}
    owned = json.loads(obj['metadata']['annotations'][hco.OWNER_ANNOTATION])
    assert owned == {'pciHostDevices': ['10DE:2236', '10DE:26B9'], 'mediatedDevices': ['NVIDIA A10-12Q']}
    assert changed and report['pciHostDevices']['kept_foreign'] == ['8086:0D5C']


def test_second_run_is_a_no_op():
    cur = cluster_hco(pci=[FOREIGN_PCI])
    obj, unused1, unused2 = hco.build_hco(cur, [A10, L40S], [A10_12Q])
    after = applied(cur, obj)
    obj2, changed, report = hco.build_hco(after, [L40S, A10], [A10_12Q])  # wish order does not matter
    assert not changed
    assert obj2 == obj
    assert report['pciHostDevices']['added'] == [] and report['pciHostDevices']['updated'] == []


def test_removes_only_what_we_added_and_updates_ours():
    cur = cluster_hco(pci=[FOREIGN_PCI])
    obj, unused1, unused2 = hco.build_hco(cur, [A10, L40S], [A10_12Q])
    after = applied(cur, obj)
    renamed = dict(A10, resource_name='nvidia.com/NVIDIA_A10')
    obj2, changed, report = hco.build_hco(after, [renamed], [])
    pci = obj2['spec']['permittedHostDevices']['pciHostDevices']
    assert changed
    assert pci == [FOREIGN_PCI, {'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/NVIDIA_A10',
                                 'externalResourceProvider': True}]
    assert obj2['spec']['permittedHostDevices']['mediatedDevices'] == []  # emptied, not left stale
    assert report['pciHostDevices']['removed'] == ['10DE:26B9']
    assert report['pciHostDevices']['updated'] == ['10DE:2236']
    assert report['mediatedDevices']['removed'] == ['NVIDIA A10-12Q']
    schema.validate(obj2)


def test_duplicates_dropped_and_identical_foreign_entry_stays_foreign():
    theirs = {'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/GA102GL_A10'}
    cur = cluster_hco(pci=[theirs, dict(theirs), FOREIGN_PCI, dict(FOREIGN_PCI)])
    obj, unused1, report = hco.build_hco(cur, [A10], [])
    pci = obj['spec']['permittedHostDevices']['pciHostDevices']
    assert pci == [theirs, FOREIGN_PCI]
    assert sorted(report['pciHostDevices']['duplicates_dropped']) == ['10DE:2236', '8086:0D5C']
    assert 'pciHostDevices' not in json.loads(obj['metadata']['annotations'][hco.OWNER_ANNOTATION])
    # not ours, so dropping it from our wish list must not remove it
    obj2, unused1, unused2 = hco.build_hco(applied(cur, obj), [], [])
    assert obj2['spec']['permittedHostDevices']['pciHostDevices'] == [theirs, FOREIGN_PCI]


def test_conflicting_foreign_entry_is_reported():
    # same provider (an external device plugin) as ours: taken over and reported
    theirs = {'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/A10', 'externalResourceProvider': True}
    unused1, unused2, report = hco.build_hco(cluster_hco(pci=[theirs]), [A10], [])
    assert report['pciHostDevices']['conflicts'] == [
        {'selector': '10DE:2236', 'theirs': 'nvidia.com/A10', 'ours': 'nvidia.com/GA102GL_A10'}]


def test_old_hco_uses_jsonpatch_annotation_and_keeps_foreign_ops():
    foreign = [{'op': 'add', 'path': '/spec/configuration/cpuRequest', 'value': '100m'}]
    cur = cluster_hco(annotations={hco.JSONPATCH_ANNOTATION: json.dumps(foreign)}, gates={})
    obj, changed, unused1 = hco.build_hco(cur, [A10], [], gate_supported=False)
    assert 'featureGates' not in obj['spec']
    ops = json.loads(obj['metadata']['annotations'][hco.JSONPATCH_ANNOTATION])
    assert ops[0] == foreign[0]
    assert ops[1] == {'op': 'add', 'path': hco.FEATURE_GATES_PATH, 'value': 'DisableMDEVConfiguration'}
    obj2, changed2, unused1 = hco.build_hco(applied(cur, obj), [A10], [], gate_supported=False)
    assert not changed2 and json.loads(obj2['metadata']['annotations'][hco.JSONPATCH_ANNOTATION]) == ops
    # after an HCO upgrade the gate moves to featureGates and our op goes, the foreign one stays
    obj3, unused1, unused2 = hco.build_hco(applied(cur, obj), [A10], [], gate_supported=True)
    assert json.loads(obj3['metadata']['annotations'][hco.JSONPATCH_ANNOTATION]) == foreign
    assert obj3['spec']['featureGates'] == {'disableMDevConfiguration': True}
    schema.validate(obj)
    schema.validate(obj3)


def test_existing_gate_op_not_duplicated():
    ours = [{'op': 'add', 'path': hco.FEATURE_GATES_PATH, 'value': 'DisableMDEVConfiguration'}]
    cur = cluster_hco(annotations={hco.JSONPATCH_ANNOTATION: json.dumps(ours)})
    obj, unused1, report = hco.build_hco(cur, [], [], gate_supported=False)
    assert json.loads(obj['metadata']['annotations'][hco.JSONPATCH_ANNOTATION]) == ours
    assert report['jsonpatch_gates'] == []  # it was there before us: not ours to remove


# kubevirt/hyperconverged-cluster-operator: api/v1beta1/hyperconverged_types.go has disableMDevConfiguration from the
# tag v1.10.0 on; no v1.8.x or v1.9.x tag has it (the field was backported to the release branches after their last
# tags, so OpenShift Virtualization 4.13 z-streams differ: 4.14, HCO 1.10, is the first minor where all have it)
@pytest.mark.parametrize('version,expected', [('1.8.2', False), ('v1.9.0', False), ('1.9.1', False),
                                              ('v1.10.0', True), ('1.18.1', True), ('4.12.3', False),
                                              ('4.13.0', False), ('4.13.9', False), ('4.14.0', True), ('4.18', True)])
def test_gate_support_by_version(version, expected):
    assert hco.hco_has_disable_mdev_gate(version) is expected


def test_gate_support_from_the_real_crd():
    import yaml
    path = os.path.join(schema.reference_dir(), 'crds', 'hyperconverged-cluster-operator-v1.18.1-hco.kubevirt.io_hyperconvergeds.yaml')
    with open(path, encoding='utf-8') as handle:
        assert hco.crd_has_disable_mdev_gate(yaml.safe_load(handle)) is True
    assert hco.crd_has_disable_mdev_gate({'spec': {'versions': [{'name': 'v1beta1', 'schema': {}}]}}) is False


@pytest.mark.parametrize('pci,mdev,needle', [
    ([{'selector': '10de-2236', 'resource_name': 'nvidia.com/X'}], [], '10de-2236'),
    ([{'selector': '10DE:2236', 'resource_name': 'GA102GL A10'}], [], 'GA102GL A10'),
    ([A10, dict(A10, resource_name='nvidia.com/Other')], [], 'nvidia.com/Other'),
    ([], [{'selector': '', 'resource_name': 'nvidia.com/X'}], 'vGPU type name'),
])
def test_bad_input_names_the_value(pci, mdev, needle):
    with pytest.raises(hco.ManifestError, match=None) as err:
        hco.build_hco(None, pci, mdev)
    assert needle in str(err.value)


def test_wrong_api_version_refused():
    cur = cluster_hco()
    cur['apiVersion'] = 'hco.kubevirt.io/v1'
    with pytest.raises(hco.ManifestError, match='v1beta1'):
        hco.build_hco(cur, [A10], [])


def test_schema_still_checks_the_hco_name():
    obj, unused1, unused2 = hco.build_hco(None, [A10], [], name='my-hco')
    with pytest.raises(schema.SchemaError, match='kubevirt-hyperconverged'):
        schema.validate(obj)


def test_vendor_vfio_mediated_entry_is_refused():
    entry = {'selector': 'NVIDIA L40S-24Q', 'resource_name': 'nvidia.com/NVIDIA_L40S-24Q', 'interface': 'vendor_vfio',
             'nodes': ['gpu-l40s']}
    # kubevirt/kubevirt pkg/virt-handler/device-manager/mediated_device.go discoverPermittedHostMediatedDevices:
    # mediatedDevices match mdevs under /sys/bus/mdev/devices; a vendor-specific VFIO vGPU has none.
    with pytest.raises(hco.ManifestError, match=r"'NVIDIA L40S-24Q' is on NVIDIA's vendor-specific VFIO interface"
                                                r" \(nvidia/creatable_vgpu_types on gpu-l40s\)"):
        hco.build_hco(None, [], [entry])


@pytest.mark.parametrize('mdevs', [[], [{'selector': 'NVIDIA A10-4Q', 'resource_name': 'nvidia.com/GA102GL_A10'}]])
def test_one_resource_name_under_two_selectors_is_refused_before_anything_is_built(mdevs):
    # what a host of vm-vgpu-vf reporting an Intel X710 VF id under an A10's device name made of the lists: the
    # passthrough pool's A10 and the X710 under one name, one of them from KubeVirt's own plugin
    pci = [{'selector': '10DE:2236', 'resource_name': 'nvidia.com/GA102GL_A10'},
           {'selector': '8086:154C', 'resource_name': 'nvidia.com/GA102GL_A10', 'external': False}]
    with pytest.raises(hco.ManifestError, match='resource name nvidia.com/GA102GL_A10 is wanted for pciHostDevices'):
        hco.desired_entries(pci[:1] + (pci[1:] if not mdevs else []), mdevs)
    with pytest.raises(hco.ManifestError, match='resource name nvidia.com/GA102GL_A10 is wanted for'):
        hco.build_hco(None, pci, [])
    with pytest.raises(hco.ManifestError, match='resource name nvidia.com/GA102GL_A10 is wanted for'):
        kubevirt.build_kubevirt(None, pci, [], version='1.9.0')


@pytest.mark.parametrize('theirs_external, ours_external', [(None, True), (False, True), (True, False)])
def test_a_foreign_entry_of_another_provider_is_never_taken_over(theirs_external, ours_external):
    # absent externalResourceProvider is false (kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/
    # types.go PciHostDevice, a bool with omitempty)
    theirs = dict({'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/A10'},
                  **({} if theirs_external is None else {'externalResourceProvider': theirs_external}))
    ours = dict(A10, external=ours_external)
    with pytest.raises(hco.ManifestError) as exc:
        hco.build_hco(cluster_hco(pci=[theirs]), [ours], [])
    said = str(exc.value)
    assert 'pciDeviceSelector 10DE:2236 as nvidia.com/A10' in said and 'remove or change that entry' in said
    with pytest.raises(hco.ManifestError, match='pciVendorSelector 10DE:2236 as nvidia.com/A10'):
        kubevirt.build_kubevirt({'spec': {'configuration': {'permittedHostDevices': {'pciHostDevices': [
            dict(theirs, pciVendorSelector=theirs.pop('pciDeviceSelector'))]}}}}, [ours], [], version='1.9.0')
