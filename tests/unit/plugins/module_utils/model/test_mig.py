# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG pool (gpu_container_mig, the pool table's mig column): its node label, the GPUs preflight lets through
(real lspci captures), the ClusterPolicy / Helm values against the real alm-examples and chart, and what verify
expects its nodes to advertise."""
from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, mig, resource_names
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import lspci, preflight
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator_install as goi
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

POOL = 'container-mig'


def capture_gpus(fixtures_dir, name):
    with open(os.path.join(fixtures_dir, 'lspci', name), encoding='utf-8') as handle:
        # the NVIDIA GPUs, as the pci_devices facts list them (the HGX board's ASPEED VGA is not one)
        return [d for d in lspci.parse(handle.read()) if d['kind'] == 'gpu' and d['vendor_id'] == '10de']


def pci(gpus):
    return {'gpus': gpus, 'iommu': {'enabled': False}}


# --- the node label ------------------------------------------------------------------------------------------------

def test_a_mig_node_gets_its_config_and_the_container_workload():
    labels = nl.desired_labels(POOL, mig_config='all-1g.10gb')
    # NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go MigConfigLabel: the MIG manager reads this label
    assert labels['nvidia.com/mig.config'] == 'all-1g.10gb'
    assert labels[nl.WORKLOAD_LABEL] == 'container'
    # the default: all-balanced (mig-parted pkg/mig/builder/builder.go builds it for every MIG GPU)
    assert nl.desired_labels(POOL)['nvidia.com/mig.config'] == 'all-balanced'
    # the MIG manager's deploy label is the GPU Operator's (addGPUStateLabels) and the driver manager's: not ours;
    # nor is the state label the MIG manager writes (pkg/mig/reconfigure/reconfigure.go migConfigStateLabel)
    assert 'nvidia.com/gpu.deploy.mig-manager' not in labels and 'nvidia.com/mig.config.state' not in labels


def test_other_pools_leave_the_mig_config_alone_and_a_render_holds_it():
    for row in fleet.POOL_TABLE:
        if not row.mig:
            assert nl.MIG_CONFIG_LABEL not in nl.desired_labels(row.name, vgpu_config='A10-12Q')
    # a node of the container pool that carries an administrator's config keeps it
    patches, _report = nl.plan([{'node': 'c1', 'pool': 'container'}],
                               [{'metadata': {'name': 'c1', 'labels': {'nvidia.com/mig.config': 'all-1g.5gb'}}}], [])
    assert all('nvidia.com/mig.config' not in (p['metadata'].get('labels') or {}) for p in patches)
    # no other controller overwrites a value once set (gpu-operator v26.7.0 nodelabeling_controller.go sets
    # all-disabled only where the label is absent): the render holds it
    assert nl.MIG_CONFIG_LABEL not in nl.SHARED_LABELS
    patches, _report = nl.plan([{'node': 'm1', 'pool': POOL, 'mig_config': 'all-3g.40gb'}], None, [], render=True)
    objects, left_out = nl.render_patches(patches)
    assert objects[0]['metadata']['labels']['nvidia.com/mig.config'] == 'all-3g.40gb' and not left_out


def test_a_bad_mig_config_is_refused_naming_the_host():
    with pytest.raises(nl.ManifestError, match=r'gpuvirt_mig_config of host m1.example.com \(node m1\) is '
                                               r'all-disabled: that config creates no MIG device'):
        nl.plan([{'host': 'm1.example.com', 'node': 'm1', 'pool': POOL, 'mig_config': 'all-disabled'}], None, [])
    with pytest.raises(nl.ManifestError, match=r"not a config the MIG manager generates"):
        nl.plan([{'host': 'm1.example.com', 'node': 'm1', 'pool': POOL, 'mig_config': 'my-layout'}], None, [])
    with pytest.raises(nl.ManifestError, match=r'label value'):
        nl.plan([{'host': 'm1.example.com', 'node': 'm1', 'pool': POOL, 'mig_config': 'all-1g.10gb+me'}], None, [])


def test_the_config_grammar_takes_the_names_the_mig_manager_generates():
    # every config of the GPU Operator's default ConfigMap that creates devices (v26.7.0
    # assets/state-mig-manager/0400_configmap.yaml, the same family mig-parted's builder generates)
    names = ['all-balanced', 'all-1g.5gb', 'all-1g.5gb.me', 'all-1g.10gb', 'all-7g.80gb', 'all-1g.24gb.gfx',
             'all-1g.24gb.me.all', 'all-1g.24gb-me', 'all-4g.96gb.gfx', 'all-7g.269gb', 'all-1c.1g.5gb']
    assert [mig.check_config(n) for n in names] == names
    assert mig.config_profile('all-1g.10gb.me') == '1g.10gb.me' and mig.config_profile('all-balanced') is None


@pytest.mark.parametrize('value', ['all-1g.10gb' * 1000, ['all-balanced'] * 5000, 'all-\u0661g.10gb' + 'x' * 500])
def test_a_long_or_foreign_mig_config_is_refused_with_a_short_message(value):
    # an inventory or survey answer of any size: the refusal names the variable and shows a capped, printable value
    with pytest.raises(mig.MigError) as exc:
        mig.check_config(value)
    assert str(exc.value).startswith('gpuvirt_mig_config is ') and len(str(exc.value)) < 500, str(exc.value)[:600]
    with pytest.raises(mig.MigError) as exc:
        mig.check_strategy(value)
    assert len(str(exc.value)) < 400 and str(exc.value).isascii()
    # the longest label value is still taken when it is a config name
    longest = 'all-1g.10gb.' + 'a' * 51
    assert len(longest) == 63 and mig.check_config(longest) == longest


# --- preflight -------------------------------------------------------------------------------------------------------

def test_preflight_passes_an_hgx_h100_and_refuses_an_a10_and_an_l40s(fixtures_dir):
    # a real HGX H100 capture (8 x 10de:2330; the NVSwitches are bridges, not GPUs)
    h100 = capture_gpus(fixtures_dir, 'hgx-h100-8gpu-4nvswitch-Dnn-egrep-nvidia-vga_starlab3030-rhel-ai.txt')
    assert len(h100) == 8 and {g['device_id'] for g in h100} == {'2330'}
    errors, _warnings = preflight.check_host('gpu-m01', [POOL], pci(h100))
    assert errors == []
    # a real A10 capture (10de:2236): GA102, no MIG (MIG User Guide, "Supported GPUs")
    a10 = capture_gpus(fixtures_dir, 'a10-nnk-d10de-no-driver_nvidia-cloud-native-docs.txt')
    errors, _warnings = preflight.check_host('gpu-m02', [POOL], pci(a10))
    assert errors == ['gpu-m02 (pool container-mig): GPU 0000:65:00.0 (GA102GL [A10], 10de:2236) does not support MIG '
                      '(the GPUs that do: A100, A30, H100, H20, H200, GH200, B200, GB200, B300, RTX PRO 6000 Blackwell '
                      'Server Edition); move the host to gpu_container for whole GPUs']
    # the same GPUs are fine in the container pool: the refusal is the MIG row's
    assert preflight.check_host('gpu-m02', ['container'], pci(a10))[0] == []


def test_preflight_refuses_an_l40s_and_warns_of_a_gpu_without_id(fixtures_dir):
    # a real L40S capture named by id only ("Device 26b9")
    l40s = capture_gpus(fixtures_dir, 'l40s-10de26b9-lspci-s-v-elided_cloud-hypervisor.txt')
    assert [g['device_id'] for g in l40s] == ['26b9']
    errors, _warnings = preflight.check_host('gpu-m03', [POOL], pci(l40s))
    assert len(errors) == 1 and 'GPU 0000:01:00.0' in errors[0] and '10de:26b9) does not support MIG' in errors[0]
    # lspci -k without -nn gives no id: not judged, said
    no_id = capture_gpus(fixtures_dir, 'l40s-x2-k-s-one-vfio-pci-one-nvidia-with-tabs-openshift-node_schmaustech.txt')
    errors, warnings = preflight.check_host('gpu-m04', [POOL], pci(no_id))
    assert errors == [] and any('shows no PCI device id' in w for w in warnings)


def test_the_real_h200_capture_passes(fixtures_dir):
    h200 = capture_gpus(fixtures_dir, 'h200-vm-nnkD-nvidia-driver_gpuvirt-device-check.txt')
    assert h200 and all(g['device_id'] == '2335' for g in h200)
    assert preflight.check_host('gpu-m05', [POOL], pci(h200))[0] == []


def test_the_mig_table_is_the_operator_configmap_s_devices():
    # every device id the GPU Operator's default MIG config partitions (v26.7.0 0400_configmap.yaml device-filter
    # entries, "0x<device><vendor>"), and no other
    ids = {'0x20B010DE', '0x20B110DE', '0x20B210DE', '0x20B510DE', '0x20B610DE', '0x20B710DE', '0x20F110DE',
           '0x20F310DE', '0x20F510DE', '0x20F610DE', '0x232110DE', '0x232210DE', '0x232410DE', '0x232910DE',
           '0x233010DE', '0x233110DE', '0x233510DE', '0x233A10DE', '0x233B10DE', '0x233D10DE', '0x234210DE',
           '0x234810DE', '0x290110DE', '0x294110DE', '0x2BB510DE', '0x318210DE', '0x31C210DE'}
    assert set(mig.MIG_DEVICE_IDS) == {i[2:6].lower() for i in ids}
    # the boards the MIG User Guide leaves out (compute capability 8.6 / 8.9 / 7.5)
    for not_mig in ('2236', '2235', '27b8', '26b5', '26b9', '1eb8'):
        assert not_mig not in mig.MIG_DEVICE_IDS


# --- ClusterPolicy and Helm values -----------------------------------------------------------------------------------

def alm_text():
    return schema.reference_text('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json')


def chart_values():
    return yaml.safe_load(schema.reference_text('helm', 'gpu-operator-v26.7.0-values.yaml'))


MIG_HOST = {'host': 'gpu-m01.example.com', 'node': 'gpu-m01', 'pool': POOL, 'mig_config': 'all-balanced'}
CONTAINER_HOST = {'host': 'gpu-c01.example.com', 'node': 'gpu-c01', 'pool': 'container'}


def test_a_fleet_with_mig_hosts_turns_the_mig_manager_on_with_the_strategy():
    values = goi.build({'platform': 'kubernetes', 'hosts': [MIG_HOST, CONTAINER_HOST]},
                       chart_values=chart_values())['helm_values']
    # the chart's own keys (values.yaml: migManager.enabled, mig.strategy), checked against it by the build
    assert values['migManager'] == {'enabled': True} and values['mig'] == {'strategy': 'mixed'}
    # OpenShift: the CSV's ClusterPolicy with the same two fields overlaid
    policy = goi.build({'platform': 'openshift', 'hosts': [MIG_HOST], 'channel': 'v26.7'},
                       alm_examples=json.loads(alm_text()))['cluster_policy']
    assert policy['spec']['migManager'] == {'enabled': True} and policy['spec']['mig'] == {'strategy': 'mixed'}


def test_single_strategy_takes_one_profile_per_node_and_refuses_all_balanced():
    host = dict(MIG_HOST, mig_config='all-1g.10gb')
    policy = goi.build({'platform': 'openshift', 'hosts': [host], 'mig_strategy': 'single',
                        'channel': 'v26.7'},
                       alm_examples=json.loads(alm_text()))['cluster_policy']
    assert policy['spec']['migManager']['enabled'] is True and policy['spec']['mig'] == {'strategy': 'single'}
    # k8s-device-plugin v0.20.0 internal/rm/device_map.go: single needs one MIG device type per node
    with pytest.raises(gop.ManifestError, match=r'gpu-m01.example.com \(node gpu-m01\): MIG config all-balanced '
                                                r'creates MIG devices of several profiles'):
        goi.build({'platform': 'kubernetes', 'hosts': [MIG_HOST], 'mig_strategy': 'single'})
    with pytest.raises(gop.ManifestError, match=r'gpu_operator_mig_strategy'):
        goi.build({'platform': 'kubernetes', 'hosts': [MIG_HOST], 'mig_strategy': 'none'})


def test_a_fleet_without_mig_hosts_keeps_the_shipped_mig_fields():
    alm = json.loads(alm_text())
    shipped = [e for e in alm if e['kind'] == 'ClusterPolicy'][0]['spec']
    policy = goi.build({'platform': 'openshift', 'hosts': [CONTAINER_HOST], 'mig_strategy': 'single',
                        'channel': 'v26.7'},
                       alm_examples=alm)['cluster_policy']
    assert policy['spec']['mig'] == shipped['mig'] and policy['spec']['migManager'] == shipped['migManager']
    values = goi.build({'platform': 'kubernetes', 'hosts': [CONTAINER_HOST]})['helm_values']
    assert 'mig' not in values and 'migManager' not in values


# --- what verify expects -------------------------------------------------------------------------------------------

def test_expected_resources_follow_the_mig_strategy(fixtures_dir):
    facts = {'pci_devices': pci(capture_gpus(
        fixtures_dir, 'hgx-h100-8gpu-4nvswitch-Dnn-egrep-nvidia-vga_starlab3030-rhel-ai.txt'))}
    # single: the MIG devices are nvidia.com/gpu (k8s-device-plugin internal/rm/rm.go AddMIGResource("*", "gpu")),
    # at least one per GPU
    assert resource_names.expected_resources(facts, POOL, mig_config='all-1g.10gb', mig_strategy='single') == {
        'nvidia.com/gpu': 8}
    # mixed: nvidia.com/mig-<profile>, '+' written '.' (rm.go: strings.ReplaceAll("mig-"+p.String(), "+", "."))
    assert resource_names.expected_resources(facts, POOL, mig_config='all-1g.10gb.me', mig_strategy='mixed') == {
        'nvidia.com/mig-1g.10gb.me': 8}
    # all-balanced under mixed: the profiles depend on each GPU's memory, nothing is named
    assert resource_names.expected_resources(facts, POOL) == {}
    assert resource_names.expected_resources({'pci_devices': pci([])}, POOL, mig_strategy='single') == {}
