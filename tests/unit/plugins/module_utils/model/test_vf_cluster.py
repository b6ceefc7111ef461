# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster side of a vGPU pool of SR-IOV VFs served by KubeVirt's own device plugin (vendor-specific VFIO):
the devices permitted, the refusals made before any write (one provider and one profile per vendor:device), the
KubeVirt version gate and the counts verify expects. Built on the pool row's columns: the row is taken from the
table (VF_ROW below), so the properties hold for any row of these traits."""
from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, kubevirt_gate as gate
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import resource_names as rn
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import wanted_devices as wd
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco, kubevirt as kv
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
# imported when the file is collected, not inside a test (a test before it in the same process may have
# installed Ansible's collection loader, through which a first import of a collection submodule fails)
from ansible_collections.gpuvirt.provision.plugins.filter import cluster as cluster_filter

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', '..'))

# the vGPU pool of SR-IOV VFs: vGPU, PCI list, KubeVirt's own plugin, function vf (vm-vgpu-vf today)
(VF_ROW,) = [r for r in fleet.POOL_TABLE if r.vgpu and r.function == 'vf' and r.permitted == 'pciHostDevices']


def l40s_facts(vfs_per_gpu=0, vf_driver='nvidia'):
    """gpu-p01's L40S (AD102GL [L40S], 10de:26b9: the example's saved facts, from a real lspci capture) with
    ``vfs_per_gpu`` SR-IOV VFs. NVIDIA's VFs carry their PF's vendor:device: the A2 host's sysfs recording
    (harvester/pcidevices tests/snapshots/vgpu-node.umockdev) shows PF 0000:08:00.0 and its VFs 0000:08:00.4...
    all with PCI_ID 10DE:25B6."""
    with open(os.path.join(ROOT, 'inventories', 'example', '.gpuvirt_facts', 'gpu-p01.example.com.json'),
              encoding='utf-8') as handle:
        saved = json.load(handle)
    pci = copy.deepcopy(saved['gpuvirt_pci_devices'])
    pf = pci['gpus'][0]
    for i in range(vfs_per_gpu):
        pci['gpus'].append(dict(pf, bdf='0000:01:00.%d' % (4 + i), is_vf=True, physfn=pf['bdf'], driver=vf_driver))
    parent = {'parent': '0000:01:00.4', 'interface': 'vendor_vfio', 'types': [{'name': 'NVIDIA L40S-24Q'}]}
    return {'pci_devices': pci, 'mdev_types': {'parents': [parent]}}


def vf_host(name, profiles=('L40S-24Q',), facts=None):
    return {'host': name + '.example.com', 'node': name, 'pool': VF_ROW.name, 'vgpu_types': list(profiles),
            'facts': facts or l40s_facts(2)}


def pt_host(name):
    facts = l40s_facts(0)
    facts['mdev_types'] = {'parents': []}
    return {'host': name + '.example.com', 'node': name, 'pool': 'vm-passthrough', 'vgpu_types': [], 'facts': facts}


def test_vfs_are_permitted_under_their_pf_id_for_kubevirt_s_own_plugin_even_before_they_exist():
    for facts in (l40s_facts(2), l40s_facts(0)):
        got = wd.wanted_devices([vf_host('gpu-s01', facts=facts)])
        # KubeVirt's own plugin (externalResourceProvider false), the vendor-VFIO types are not mediated devices
        assert got == {'pci_devices': [{'selector': '10DE:26B9', 'resource_name': 'nvidia.com/AD102GL_L40S',
                                        'nodes': ['gpu-s01'], 'source': 'facts', 'external': False}],
                       'mediated_devices': []}
    obj = hco.build_hco(None, got['pci_devices'], [])[0]
    assert obj['spec']['permittedHostDevices']['pciHostDevices'] == [
        {'pciDeviceSelector': '10DE:26B9', 'resourceName': 'nvidia.com/AD102GL_L40S', 'externalResourceProvider': False}]
    obj = kv.build_kubevirt(None, got['pci_devices'], [], version='v1.9.0')[0]
    assert obj['spec']['configuration']['permittedHostDevices']['pciHostDevices'] == [
        {'pciVendorSelector': '10DE:26B9', 'resourceName': 'nvidia.com/AD102GL_L40S', 'externalResourceProvider': False}]


def test_a_model_passed_whole_on_one_host_and_as_vfs_on_another_is_refused_naming_both():
    with pytest.raises(wd.WantedDevicesError) as err:
        wd.wanted_devices([pt_host('gpu-p01'), vf_host('gpu-s01')])
    msg = str(err.value)
    assert '10DE:26B9' in msg and 'gpu-p01.example.com' in msg and 'gpu-s01.example.com' in msg
    assert 'vm-passthrough' in msg and VF_ROW.name in msg and 'cannot tell these devices apart' in msg
    # the objects refuse one selector from two providers too
    with pytest.raises(ManifestError, match='externalResourceProvider true and false'):
        hco.desired_entries([{'selector': '10DE:26B9', 'resource_name': 'nvidia.com/AD102GL_L40S'},
                             {'selector': '10DE:26B9', 'resource_name': 'nvidia.com/AD102GL_L40S', 'external': False}],
                            [])


def test_two_profiles_of_one_model_are_refused_unless_allowed():
    hosts = [vf_host('gpu-s01', ['L40S-24Q']), vf_host('gpu-s02', ['L40S-12Q']), vf_host('gpu-s03', ['L40S-24Q'])]
    with pytest.raises(wd.WantedDevicesError) as err:
        wd.wanted_devices(hosts)
    msg = str(err.value)
    assert ('L40S-12Q on gpu-s02.example.com; L40S-24Q on gpu-s01.example.com, gpu-s03.example.com' in msg
            and 'nvidia.com/AD102GL_L40S' in msg and 'cannot choose its profile' in msg
            and 'kubevirt_devices_allow_mixed_profiles: true' in msg)
    got = wd.wanted_devices(hosts, allow_mixed_profiles=True)
    assert [(e['selector'], e['nodes']) for e in got['pci_devices']] == [('10DE:26B9', ['gpu-s01', 'gpu-s02', 'gpu-s03'])]
    # one profile everywhere is one resource
    assert len(wd.wanted_devices(hosts[:1] + hosts[2:])['pci_devices']) == 1


def test_a_profile_of_another_board_on_the_host_is_not_the_l40s_s():
    got = wd.wanted_devices([vf_host('gpu-s01', ['L40S-24Q', 'A10-12Q']), vf_host('gpu-s02', ['L40S-24Q'])])
    assert [e['nodes'] for e in got['pci_devices']] == [['gpu-s01', 'gpu-s02']]


@pytest.mark.parametrize('observed, ok', [
    (['v1.9.0'], True), (['1.10.2'], True), (['v1.8.2'], False), (['v1.9.0-rc.1'], False), ([], False),
    ([''], False), (['v1.9.0', 'v1.7.0'], False)])
def test_the_kubevirt_gate(observed, ok):
    hosts = [{'host': 'gpu-s01.example.com', 'traits': VF_ROW.as_dict()},
             {'host': 'gpu-v01.example.com', 'traits': fleet.BY_NAME['vm-vgpu'].as_dict()}]
    got = gate.check(hosts, observed, 'kubevirt')
    assert got['ok'] is ok and not got['note']
    if not ok:
        msg = got['message']
        assert 'gpu-s01.example.com' in msg and 'gpu-v01' not in msg and '1.9.0 or later' in msg
        assert (', '.join(observed) in msg) if any(observed) else 'no deployed KubeVirt' in msg
        assert 'OpenShift' not in msg
        assert 'not known' in gate.check(hosts, observed, 'hco')['message']


def test_the_gate_notes_a_render_without_a_cluster_and_passes_a_fleet_that_needs_nothing():
    need = [{'host': 'gpu-s01.example.com', 'traits': VF_ROW.as_dict()}]
    got = gate.check(need, None)
    assert got['ok'] and 'not checked' in got['note'] and 'gpu-s01.example.com' in got['note']
    plain = [{'host': 'gpu-v01.example.com', 'traits': fleet.BY_NAME['vm-vgpu'].as_dict()}]
    assert gate.check(plain, ['v1.2.0']) == {'ok': True, 'message': '', 'note': ''}
    with pytest.raises(gate.KubeVirtGateError, match="status.observedKubeVirtVersion 'latest'"):
        gate.check(need, ['latest'])


@pytest.mark.parametrize('declared, ok', [('v1.8.2', False), ('1.9.0', True), ('v1.10.0', True)])
def test_a_render_without_a_cluster_judges_the_kubevirt_version_it_names(declared, ok):
    # kubevirt/kubevirt v1.9.0 pkg/virt-handler/device-manager/nvidia.go shouldPermitNvidia: no earlier release's own
    # plugin serves a VF on the nvidia driver, so a render for 1.8.2 would permit devices nothing advertises
    need = [{'host': 'gpu-s01.example.com', 'traits': VF_ROW.as_dict()}]
    got = gate.check(need, None, 'kubevirt', declared)
    assert got['ok'] is ok and not got['note']
    if not ok:
        assert 'The render targets KubeVirt v1.8.2 (kubevirt_devices_kubevirt_version)' in got['message']
        assert 'gpu-s01.example.com' in got['message'] and '1.9.0 or later' in got['message']
    # the cluster's own version, where read, decides; no declared version leaves the note
    assert not gate.check(need, ['v1.8.2'], 'kubevirt', '1.9.0')['ok']
    assert gate.check(need, None, 'kubevirt', '')['note']
    with pytest.raises(gate.KubeVirtGateError, match='kubevirt_devices_kubevirt_version'):
        gate.check(need, None, 'kubevirt', 'latest')


def test_verify_expects_one_vf_per_vgpu():
    facts = l40s_facts(0)
    # a custom config: its count per GPU; the example L40S host has one GPU
    assert rn.expected_resources(facts, VF_ROW.name, 'l40s-2x24', {'l40s-2x24': {'L40S-24Q': 2}}) == \
        {'nvidia.com/AD102GL_L40S': 2}
    two = copy.deepcopy(facts)
    two['pci_devices']['gpus'].append(dict(two['pci_devices']['gpus'][0], bdf='0000:02:00.0'))
    assert rn.expected_resources(two, VF_ROW.name, 'l40s-mix', {'l40s-mix': {'L40S-24Q': 1, 'L40S-12Q': 2}}) == \
        {'nvidia.com/AD102GL_L40S': 6}
    # a default config (named by its type) says no count: at least one per GPU
    assert rn.expected_resources(two, VF_ROW.name, 'L40S-24Q') == {'nvidia.com/AD102GL_L40S': 2}


def test_a_name_kubevirt_s_own_plugin_serves_is_not_checked_against_nodes_that_cannot_advertise_it_yet():
    wanted = [{'kind': 'pci', 'selector': '10DE:26B9', 'resource_name': 'nvidia.com/AD102GL_L40S',
               'nodes': ['gpu-s01'], 'source': 'facts', 'external': False}]
    entries, warnings, errors = kv.reconcile_resource_names(wanted, {'gpu-s01': [], 'gpu-v01': ['nvidia.com/NVIDIA_A10-12Q']})
    assert entries == wanted and not warnings and not errors


def test_the_gate_filter_wraps_its_errors():
    from ansible.errors import AnsibleFilterError
    assert cluster_filter.FilterModule().filters()['kubevirt_gate'] is cluster_filter.kubevirt_gate
    with pytest.raises(AnsibleFilterError, match='kubevirt_gate: fleet entry'):
        cluster_filter.kubevirt_gate([{'host': 'x'}], ['v1.9.0'])


@pytest.mark.parametrize('observed, ok', [
    # git describe of a build 41 commits after v1.9.0 (kubevirt/kubevirt hack/version.sh): at or after the release
    (['v1.9.0-41-gabc1234'], True), (['v1.9.0-41-gabc1234def5678-dirty'], True),
    # after a release candidate it is still a pre-release; after v1.8.2 it is still 1.8.2
    (['v1.9.0-rc.1-3-gabc1234'], False), (['v1.8.2-41-gabc1234'], False)])
def test_the_gate_reads_a_git_describe_version_as_at_or_after_its_release(observed, ok):
    hosts = [{'host': 'gpu-s01.example.com', 'traits': VF_ROW.as_dict()}]
    assert gate.check(hosts, observed, 'kubevirt')['ok'] is ok


def test_the_gate_prints_the_normalised_version_and_refuses_unicode_digits_and_long_values():
    hosts = [{'host': 'gpu-s01.example.com', 'traits': VF_ROW.as_dict()}]
    msg = gate.check(hosts, [' v1.8.2\n\n'], 'kubevirt')['message']
    assert 'KubeVirt v1.8.2,' in msg and '\n' not in msg
    # Arabic-Indic and fullwidth digits: \d would take them and int() read them as 1.9.0
    for odd in (u'v\u0661.\u0669.\u0660', u'v1.\uff19.0'):
        with pytest.raises(gate.KubeVirtGateError) as err:
            gate.check(hosts, [odd], 'kubevirt')
        assert all(' ' <= c <= '~' for c in str(err.value))
    with pytest.raises(gate.KubeVirtGateError) as err:
        gate.check(hosts, ['v1.9.0\x1b[2J' + '0' * 5000], 'kubevirt')
    assert '\x1b' not in str(err.value) and len(str(err.value)) < 300
