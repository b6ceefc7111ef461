# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA passthrough builders and checks: Helm values against the chart's own values.yaml, the claim
template against resource.k8s.io/v1 (kubernetes-validate, strict), gates, plugin exclusion, holders."""
from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402

CHART_VALUES = 'k8s-dra-driver-gpu-v0.4.0-dra-driver-nvidia-gpu-values.yaml'


def chart_defaults():
    with open(os.path.join(schema.reference_dir(), 'helm', CHART_VALUES), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def key_paths(values, prefix=()):
    for key, value in values.items():
        if isinstance(value, dict) and value and key not in ('featureGates', 'nodeSelector'):
            yield from key_paths(value, prefix + (key,))
        else:
            yield prefix + (key,)


# nvidiaDriverRoot by who installed the driver: NVIDIA, "KubeVirt VFIO GPU passthrough", "Install the DRA Driver"
# ("/ for a host-installed driver", "/run/nvidia/driver for a GPU Operator-managed driver",
# "/home/kubernetes/bin/nvidia for a GKE-managed driver").
@pytest.mark.parametrize('mode,root', [('host', '/'), ('operator', '/run/nvidia/driver'),
                                       ('gke', '/home/kubernetes/bin/nvidia')])
def test_values_use_only_keys_the_chart_has(mode, root):
    # Helm ignores a key the chart does not have: each key must exist in the chart's own values.yaml
    # (NVIDIA/k8s-dra-driver-gpu v0.4.0 deployments/helm/dra-driver-nvidia-gpu/values.yaml, the reference set).
    values = dra.helm_values(mode, node_selector={'gpuvirt/dra': 'true'})
    defaults = chart_defaults()
    for path in key_paths(values):
        node = defaults
        for key in path:
            assert isinstance(node, dict) and key in node, 'chart 0.4.0 has no value %s' % '.'.join(path)
            node = node[key]
    assert values['nvidiaDriverRoot'] == root
    # NVIDIA DRA guide, "Feature status" (PassthroughSupport and DeviceMetadata are Alpha, off by default) and
    # "Install the DRA Driver" (--set featureGates.PassthroughSupport=true --set featureGates.DeviceMetadata=true)
    assert values['featureGates'] == {'PassthroughSupport': True, 'DeviceMetadata': True}
    # same section: --set resources.gpus.enabled=true --set resources.computeDomains.enabled=false
    assert values['resources'] == {'gpus': {'enabled': True}, 'computeDomains': {'enabled': False}}
    # same section: --set gpuResourcesEnabledOverride=true (values.yaml default false)
    assert values['gpuResourcesEnabledOverride'] is True


def test_chart_comment_names_the_same_driver_roots():
    # the chart's own comment on nvidiaDriverRoot (values.yaml 0.4.0): "/run/nvidia/driver" with the NVIDIA GPU Driver
    # Container, "/" for a driver installed directly on the host; and "/" is its default
    with open(os.path.join(schema.reference_dir(), 'helm', CHART_VALUES), encoding='utf-8') as handle:
        text = handle.read()
    head = text.split('nvidiaDriverRoot:', 1)[0].rsplit('\n\n', 1)[-1]
    assert 'NVIDIA GPU Driver Container' in head and '/run/nvidia/driver' in head and '`/`' in head
    assert chart_defaults()['nvidiaDriverRoot'] == '/'
    assert dra.DRIVER_ROOTS['operator'] == '/run/nvidia/driver' and dra.DRIVER_ROOTS['host'] == '/'


def a_gpu(driver, bdf='0000:3b:00.0'):
    return {'bdf': bdf, 'driver': driver, 'is_vf': False}


# nvidiaDriverRoot follows where the driver actually is (NVIDIA DRA guide, "Install the DRA Driver": "Set
# nvidiaDriverRoot based on how the NVIDIA driver is installed on your nodes"). DRA nodes are container-workload
# nodes, where the GPU Operator deploys its driver container unless driver.enabled is false (NVIDIA GPU Operator
# chart values.yaml driver.enabled; ClusterPolicy spec.driver.enabled).
@pytest.mark.parametrize('operator_driver,facts,mode', [
    (True, {}, 'operator'),
    # the operator's driver also binds the GPU to nvidia: facts never outvote the operator's setting
    (True, {'dra-1': {'gpus': [a_gpu('nvidia')]}}, 'operator'),
    (False, {}, 'host'),
    (None, {'dra-1': {'gpus': [a_gpu('nvidia')]}, 'dra-2': {'gpus': [a_gpu('nvidia')]}}, 'host'),
])
def test_driver_root_follows_where_the_driver_is(operator_driver, facts, mode):
    got, why = dra.resolve_driver_mode(None, operator_driver, ['dra-1', 'dra-2'] if operator_driver is None else
                                       ['dra-1'], facts)
    assert got == mode and why
    assert dra.helm_values(got)['nvidiaDriverRoot'] == dra.DRIVER_ROOTS[mode]


@pytest.mark.parametrize('explicit,operator_driver', [('operator', True), ('host', False), ('gke', False),
                                                      ('gke', None), ('host', None)])
def test_an_explicit_driver_mode_that_agrees_is_kept(explicit, operator_driver):
    assert dra.resolve_driver_mode(explicit, operator_driver, ['dra-1'])[0] == explicit


@pytest.mark.parametrize('explicit,operator_driver,needles', [
    ('host', True, ['dra_driver_nvidia_driver is host', 'nvidiaDriverRoot /', 'driver.enabled true',
                    '/run/nvidia/driver', 'remove dra_driver_nvidia_driver']),
    ('gke', True, ['dra_driver_nvidia_driver is gke', '/home/kubernetes/bin/nvidia', 'driver.enabled true']),
    ('operator', False, ['dra_driver_nvidia_driver is operator', '/run/nvidia/driver', 'driver.enabled false',
                         'remove dra_driver_nvidia_driver']),
])
def test_a_contradicting_driver_mode_is_refused_naming_both(explicit, operator_driver, needles):
    with pytest.raises(dra.ManifestError) as err:
        dra.resolve_driver_mode(explicit, operator_driver, ['dra-1'])
    for needle in needles:
        assert needle in str(err.value), str(err.value)


def test_unknown_driver_location_asks_for_the_setting():
    # one DRA node's GPU on vfio-pci, the other's unknown: neither the operator nor the facts tell
    facts = {'dra-1': {'gpus': [a_gpu('vfio-pci')]}, 'dra-2': {'gpus': [a_gpu('nvidia')]}}
    with pytest.raises(dra.ManifestError, match='set dra_driver_nvidia_driver'):
        dra.resolve_driver_mode(None, None, ['dra-1', 'dra-2'], facts)
    with pytest.raises(dra.ManifestError, match='not one of'):
        dra.resolve_driver_mode('container', True, ['dra-1'])


def test_kubelet_plugin_runs_only_where_the_classic_device_plugin_is_off():
    # The chart (dra-driver-nvidia-gpu 0.4.x values.yaml) leaves kubeletPlugin.nodeSelector empty and gives it an
    # affinity for every NVIDIA node, so the chart's default alone puts the DRA plugin beside the classic device
    # plugin, which NVIDIA's DRA guide forbids ("Not supported on the same node as the DRA Driver").
    defaults = chart_defaults()['kubeletPlugin']
    assert defaults['nodeSelector'] == {}
    assert 'nvidia.com/gpu.present' in yaml.safe_dump(defaults['affinity'])
    # ours: the nodes node_labels labels nvidia.com/dra-kubelet-plugin=true (the DRA pool, where it also switches the
    # classic plugin off). NVIDIA, "DRA Driver for NVIDIA GPUs" (GPU Operator docs), "Known Issues" and its install
    # step: the plugin is selected by the label the driver manager is given (NODE_LABEL_FOR_GPU_POD_EVICTION), since
    # the driver manager evicts by pausing that label's "true" (k8s-driver-manager cmd/driver-manager/main.go@v0.12.0
    # maybeSetPaused); a "false" label (the device-plugin one) it leaves as it is, so it cannot evict by that.
    values = dra.helm_values('operator')
    assert values['kubeletPlugin'] == {'nodeSelector': {'nvidia.com/dra-kubelet-plugin': 'true'}}
    # a custom selector adds to the driver manager's label, never replaces it
    assert dra.helm_values('operator', {'pool': 'dra'})['kubeletPlugin'] == {
        'nodeSelector': {'nvidia.com/dra-kubelet-plugin': 'true', 'pool': 'dra'}}
    with pytest.raises(dra.ManifestError, match=r"dra_driver_node_selector\[pool\]: 'a\\nb' is not valid"):
        dra.helm_values('operator', {'pool': 'a\nb'})


def test_selector_conflicts_check_the_custom_selector_against_the_nodes():
    # the kubelet plugin runs exactly where every nodeSelector label matches (Kubernetes "Assign Pods to Nodes",
    # nodeSelector: "Kubernetes only schedules the Pod onto nodes that have each of the labels you specify")
    sel = {'gpuvirt.io/dra': 'true'}
    plugin = {'nvidia.com/dra-kubelet-plugin': 'true'}
    nodes = [{'metadata': {'name': 'dra-1', 'labels': dict(plugin)}},
             {'metadata': {'name': 'cpu-1', 'labels': dict(plugin, **sel)}},
             {'metadata': {'name': 'gpu-1', 'labels': {}}}]
    errors = dra.selector_conflicts(nodes, ['dra-1'], sel)
    assert len(errors) == 2
    assert errors[0].startswith('DRA node dra-1 lacks the kubelet plugin') and 'gpuvirt.io/dra=true' in errors[0]
    assert errors[1].startswith('node cpu-1 is not a DRA node') and 'dra_driver_node_selector' in errors[1]
    nodes[0]['metadata']['labels'].update(sel)
    del nodes[1]['metadata']['labels']['gpuvirt.io/dra']
    assert dra.selector_conflicts(nodes, ['dra-1'], sel) == []
    # the default selector: a DRA node the nodes phase did not label is named
    assert 'nvidia.com/dra-kubelet-plugin=true' in dra.selector_conflicts([nodes[2]], ['gpu-1'])[0]
    # a render: the label patches are rendered, not applied, so only a non-DRA node carrying the selector is named
    assert dra.selector_conflicts([nodes[2]], ['gpu-1'], labelled=False) == []


def test_claim_template_is_valid_v1_and_requests_the_vfio_class():
    obj = dra.resource_claim_template('vfio-gpu', 'vms')
    schema.validate(obj, k8s_version='1.34.0')
    devices = obj['spec']['spec']['devices']
    (req,) = devices['requests']
    # one GPU: the request keeps the name VMs give as requestName (docs/pools/dra.md)
    assert req['name'] == 'dra-gpu'
    assert req['exactly'] == {'deviceClassName': 'vfio.gpu.nvidia.com', 'allocationMode': 'ExactCount', 'count': 1}
    params = devices['config'][0]['opaque']['parameters']
    assert devices['config'][0]['requests'] == [req['name']]
    assert params['kind'] == 'VfioDeviceConfig'
    assert params['iommu'] == {'backendPolicy': 'LegacyOnly', 'enableAPIDevice': True}


@pytest.mark.parametrize('count', [2, 3, 32])
def test_a_claim_of_n_gpus_is_n_requests_of_one_device(count):
    # KubeVirt v1.9 pkg/dra/utils.go resolveDevice: "request %q has %d devices but KubeVirt only supports exactly
    # one device per request (count > 1 is not supported)"; its VEP 10 "Support DRA devices" maps each VMI `gpus`
    # entry to one (claimName, requestName) pair, and the VMI admitter wants those pairs unique. So a template
    # for N GPUs must offer N requests of one device each, every one covered by the VFIO config.
    obj = dra.resource_claim_template('vfio-gpu-x', 'vms', count=count)
    schema.validate(obj, k8s_version='1.34.0')
    devices = obj['spec']['spec']['devices']
    names = [r['name'] for r in devices['requests']]
    assert len(names) == count and len(set(names)) == count
    assert names == dra.claim_request_names('dra-gpu', count)
    assert all(r['exactly']['count'] == 1 and r['exactly']['allocationMode'] == 'ExactCount'
               for r in devices['requests'])
    assert devices['config'][0]['requests'] == names


def test_the_upstream_example_validates_too():
    # guards the harness itself: the reference template must pass where ours does
    path = os.path.join(schema.reference_dir(), 'examples',
                        'k8s-dra-driver-gpu-v0.4.0-demo-specs-quickstart-v1-gpu-test-vfio-config.yaml')
    docs = [d for d in yaml.safe_load_all(open(path, encoding='utf-8')) if d and d['kind'] == 'ResourceClaimTemplate']
    schema.validate(docs[0])


# resource.k8s.io/v1 DeviceRequestsMaxSize (k8s.io/api/resource/v1 types.go): at most 32 requests in a claim
@pytest.mark.parametrize('bad', [0, -1, True, '1', 33, 10 ** 6])
def test_claim_template_rejects_bad_counts(bad):
    with pytest.raises(dra.ManifestError):
        dra.resource_claim_template('vfio-gpu', 'vms', count=bad)


@pytest.mark.parametrize('version,gates', [('1.8.0', ['GPUsWithDRA']), ('v1.8.3', ['GPUsWithDRA']),
                                           ('1.9.0', []), ('1.10.1', [])])
def test_gpus_with_dra_only_on_1_8(version, gates):
    assert dra.kubevirt_gates(version) == gates


def test_old_kubevirt_refused():
    with pytest.raises(dra.ManifestError, match='1.7.2'):
        dra.kubevirt_gates('1.7.2')


def node(name, labels=None, alloc=None):
    return {'metadata': {'name': name, 'labels': labels or {}}, 'status': {'allocatable': alloc or {}}}


def test_plugin_exclusion():
    nodes = [node('ok', {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.deploy.device-plugin': 'false'}),
             node('pod', {'nvidia.com/gpu.deploy.device-plugin': 'false'}),
             node('gpu', {}, {'nvidia.com/gpu': '4'}),
             node('label', {'nvidia.com/gpu.present': 'true'})]
    pods = [{'metadata': {'name': 'nvidia-device-plugin-daemonset-x1'}, 'spec': {'nodeName': 'pod'}}]
    errors = dra.classic_plugin_conflicts(nodes, ['ok', 'pod', 'gpu', 'label', 'ghost'], pods)
    text = '\n'.join(errors)
    assert 'DRA node ok' not in text
    assert 'DRA node pod' in text and 'nvidia-device-plugin-daemonset-x1' in text
    assert 'DRA node gpu' in text and 'nvidia.com/gpu=4' in text
    assert 'DRA node label' in text and 'gpu.deploy.device-plugin=false' in text
    assert 'ghost is not a node' in text


def test_holders_classified():
    holders = [{'pid': 1, 'executable': 'Xorg', 'device': '/dev/nvidia0', 'unit': 'gdm.service'},
               {'pid': 2, 'executable': 'nv-hostengine', 'device': '/dev/nvidia1', 'unit': 'nvidia-dcgm.service'},
               {'pid': 3, 'executable': 'dcgm-exporter', 'device': '/dev/nvidia1', 'unit': None},
               {'pid': 4, 'executable': 'nvidia-persistenced', 'device': '/dev/nvidia0',
                'unit': 'nvidia-persistenced.service'},
               {'pid': 5, 'executable': 'python', 'device': '/dev/nvidia2', 'unit': None}]
    result = dra.classify_holders(holders, '0.4.1')
    assert [b['category'] for b in result['blocking']] == ['display-manager', 'dcgm', 'dcgm-exporter', 'other']
    assert [w['category'] for w in result['warnings']] == ['persistenced']
    assert 'PID 5 (python) holds /dev/nvidia2' in result['message'] and 'PID 4' not in result['message']
    old = dra.classify_holders(holders[3:4], '0.3.0')
    assert old['blocking'][0]['category'] == 'persistenced'
    assert dra.classify_holders([], '0.4.0')['message'] == 'nothing blocks the rebind'


def test_holders_classified_by_executable_not_substring():
    holders = [{'pid': 1, 'executable': 'dcgm-exporter-wrapper.py', 'device': '/dev/nvidia0', 'unit': None},
               {'pid': 2, 'executable': 'nvidia-persistenced', 'device': '/dev/nvidia0', 'unit': None}]
    result = dra.classify_holders(holders, '0.4.1')
    assert [(b['pid'], b['category']) for b in result['blocking']] == [(1, 'other')]
    assert [(w['pid'], w['category']) for w in result['warnings']] == [(2, 'persistenced')]


def test_a_holder_is_named_by_its_executable_never_its_command_line():
    # a holder's command line is its owner's to write (any user who may open /dev/nvidiactl): it is not shown, and
    # an executable name outside the grammar is "?"
    holders = [{'pid': 1, 'executable': 'app', 'command': '/usr/bin/app --password=s3cret', 'device': '/dev/nvidia0'},
               {'pid': 2, 'executable': '\x1b[2J{{ x }}\n', 'device': '/dev/nvidia0', 'unit': None}]
    result = dra.classify_holders(holders, '0.4.1')
    text = repr(result)
    assert 's3cret' not in text and '\\x1b' not in text and '{{' not in text
    assert [b['message'].split(':')[0] for b in result['blocking']] == [
        'PID 1 (app) holds /dev/nvidia0', 'PID 2 (?) holds /dev/nvidia0']


def test_gate_objects_are_valid_and_keep_existing_gates():
    current = {'metadata': {'name': 'kubevirt-kubevirt-hyperconverged', 'namespace': 'openshift-cnv'},
               'spec': {'configuration': {'developerConfiguration': {'featureGates': ['GPU']}}}}
    kv = dra.kubevirt_gate_object(current, ['GPUsWithDRA', 'GPU'])
    schema.validate(kv)
    assert kv['spec']['configuration']['developerConfiguration']['featureGates'] == ['GPU', 'GPUsWithDRA']
    assert kv['metadata']['namespace'] == 'openshift-cnv'
    hco_obj = dra.hco_gate_object(None, ['GPUsWithDRA'])
    schema.validate(hco_obj)
    assert 'GPUsWithDRA' in hco_obj['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch']
