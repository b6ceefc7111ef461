# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode of the DRA passthrough path (roles/dra_driver in playbooks/kubevirt.yml) against the real
kube-apiserver, as the automation identity with the shipped RBAC.

The 1.20 server has no ``resource.k8s.io``; the harness serves ``resource.k8s.io/v1`` DeviceClass,
ResourceClaimTemplate and ResourceSlice as stand-in CRDs written from the upstream 1.34 types
(tools/kube/dra_stand_ins.py) to the tests that ask for them (``kube(..., dra=True)``). So the server validates
what the role writes against those schemas, filters the role's label selectors, authorizes every request with the
shipped RBAC and records it in its audit log. What a test writes in the place of the DRA driver's chart (the
DeviceClass) and kubelet plugin (ResourceSlices) it writes as the admin, and says so. The chart install itself needs
Helm and the Helm account (docs/rbac/gpuvirt-automation-helm.yml): these runs leave it to that install
(``dra_driver_chart_install: false``).
"""
from __future__ import annotations

import copy
import json
import os
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402
import dra_stand_ins  # noqa: E402
from kube_cluster import recap, run_playbook, write_summary  # noqa: E402
import schema  # noqa: E402
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra  # noqa: E402

RESOURCE = 'resource.k8s.io/v1'
# the DRA nodes as the nodes phase leaves them: the classic plugin switched off, the kubelet plugin's selector on
# (node_labels.DRA_PLUGIN_LABEL and the inventory's dra_driver_node_selector)
DRA_LABELS = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.deploy.device-plugin': 'false',
              'nvidia.com/dra-kubelet-plugin': 'true', 'gpuvirt.io/dra': 'true'}
PLATFORMS = ('kubernetes', 'openshift')


def node(name, labels):
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels},
            'status': {'allocatable': {'cpu': '64'}}}


def pod(name, node_name, app, namespace='gpu-operator'):
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': namespace, 'labels': {'app': app}},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'main', 'image': 'registry.invalid/x:1'}]}}


def kubevirt(platform):
    # virt-operator's status: KubeVirt 1.8.x still needs the GPUsWithDRA gate (dra.kubevirt_gates)
    name, ns = ('kubevirt-kubevirt-hyperconverged', 'openshift-cnv') if platform == 'openshift' else ('kubevirt', 'kubevirt')
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': name, 'namespace': ns},
            'spec': {'configuration': {'developerConfiguration': {'featureGates': ['Snapshot']}}},
            'status': {'observedKubeVirtVersion': 'v1.8.2'}}


def hyperconverged():
    return {'apiVersion': 'hco.kubevirt.io/v1beta1', 'kind': 'HyperConverged',
            'metadata': {'name': 'kubevirt-hyperconverged', 'namespace': 'openshift-cnv'}, 'spec': {}}


def chart_device_class():
    """The chart's DeviceClass (dra-driver-nvidia-gpu v0.4.0 templates/deviceclass-vfio-gpu.yaml), its Helm
    conditional dropped and the API version its resourceApiVersion helper gives on a 1.34 cluster."""
    with open(schema.reference_file('helm', 'k8s-dra-driver-gpu-v0.4.0-templates-deviceclass-vfio-gpu.yaml'),
              encoding='utf-8') as handle:
        text = ''.join(line for line in handle if not line.lstrip().startswith('{{'))
    text = text.replace('{{ include "dra-driver-nvidia-gpu.resourceApiVersion" . }}', RESOURCE)
    (doc,) = [d for d in yaml.safe_load_all(text) if d]
    return doc


def resource_slice(node_name):
    """What the driver's kubelet plugin publishes for one VFIO GPU of a node (driver gpu.nvidia.com)."""
    return {'apiVersion': RESOURCE, 'kind': 'ResourceSlice', 'metadata': {'name': '%s-gpu.nvidia.com' % node_name},
            'spec': {'driver': dra.DRIVER, 'nodeName': node_name,
                     'pool': {'name': node_name, 'generation': 1, 'resourceSliceCount': 1},
                     'devices': [{'name': 'gpu-0', 'attributes': {'type': {'string': 'vfio'},
                                                                  'productName': {'string': 'NVIDIA A10'}}}]}}


def cluster_objects(platform, extra=()):
    objects = [kubevirt(platform), node('dra-1', DRA_LABELS), node('dra-2', DRA_LABELS),
               node('gpu-9', {'nvidia.com/gpu.present': 'true'}), chart_device_class(),
               resource_slice('dra-1'), resource_slice('dra-2')]
    if platform == 'openshift':
        objects.append(hyperconverged())
    return objects + list(extra)


def run(tmp_path, cluster, inventory='dra-apply', **extra):
    args = {'gpuvirt_kubeconfig': cluster.kubeconfig}
    args.update(extra)
    return run_playbook(tmp_path, 'kubevirt', os.path.join(HERE, 'inventories', inventory + '.yml'), **args)


def automation_events(cluster, since):
    return [e for e in cluster.server.audit(since) if e['user']['username'] == apiserver.AUTOMATION_USER]


def write_attempts(events):
    """Every write the automation sent that was not a dry run, refused ones (status >= 400) included."""
    return [e for e in events if e['verb'] in apiserver.WRITE_VERBS and 'dryRun=All' not in e.get('requestURI', '')]


def used_rights(events, group):
    """(verb, resource, namespace, name) the automation's requests to ``group`` needed: a server-side apply that
    creates its object is authorized as patch and then create with the object's name (k8s.io/apiserver
    pkg/endpoints/handlers/patch.go, createAuthorizerAttributes); its answer is 201."""
    used = set()
    for event in events:
        ref = event.get('objectRef') or {}  # none on discovery (/api, /apis)
        if ref.get('apiGroup') != group:
            continue
        key = (ref['resource'], ref.get('namespace', ''), ref.get('name', ''))
        used.add((event['verb'],) + key)
        if event['verb'] == 'patch' and event.get('responseStatus', {}).get('code') == 201:
            used.add(('create',) + key)
    return used


def granted_rights(platform, group):
    """(verb, resource, namespace, name) the shipped file grants the automation in ``group``."""
    granted = set()
    for obj in apiserver.rbac_objects(apiserver.RBAC_FILES[platform]):
        if obj['kind'] not in ('Role', 'ClusterRole'):
            continue
        for rule in obj['rules']:
            if group not in rule.get('apiGroups', []):
                continue
            for verb in rule['verbs']:
                for resource in rule['resources']:
                    for name in rule.get('resourceNames') or ['']:
                        granted.add((verb, resource, obj['metadata'].get('namespace', ''), name))
    return granted


# --- the apply, as the automation, twice ------------------------------------------------------------------------

@pytest.mark.parametrize('platform', PLATFORMS)
def test_dra_apply_writes_the_template_and_gate_with_the_shipped_rbac_and_nothing_the_second_time(
        tmp_path, kube, platform):
    # a pod of another GPU Operator operand on a DRA node: outside the role's selector (app in
    # (nvidia-device-plugin-daemonset, nvidia-device-plugin)), so the server does not list it and nothing refuses
    dcgm = pod('nvidia-dcgm-exporter-7xk2p', 'dra-1', 'nvidia-dcgm-exporter')
    cluster = kube(cluster_objects(platform, [dcgm]), openshift=platform == 'openshift', dra=True)
    start = cluster.now()
    rc, log = run(tmp_path, cluster)
    assert rc == 0, log
    assert 'dra_driver_chart_install is false' in log, log
    events = automation_events(cluster, start)
    gate = ('patch hyperconvergeds openshift-cnv/kubevirt-hyperconverged' if platform == 'openshift'
            else 'patch kubevirts kubevirt/kubevirt')
    assert write_summary(cluster.writes()) == ['patch resourceclaimtemplates default/vfio-gpu', gate], log
    # the shipped file allowed every request of the run: not one 403
    assert [e['requestURI'] for e in events if e.get('responseStatus', {}).get('code') == 403] == []
    # and it grants exactly what the DRA path used in resource.k8s.io: nothing unused, nothing missing
    assert used_rights(events, 'resource.k8s.io') == granted_rights(platform, 'resource.k8s.io')
    # the stored template is the builder's, validated by the stand-in's schema; its opaque parameters kept whole
    stored = cluster.get(RESOURCE, 'ResourceClaimTemplate', 'vfio-gpu', 'default')
    assert stored['spec'] == dra.resource_claim_template('vfio-gpu', 'default')['spec']
    if platform == 'openshift':
        hco = cluster.get('hco.kubevirt.io/v1beta1', 'HyperConverged', 'kubevirt-hyperconverged', 'openshift-cnv')
        assert 'GPUsWithDRA' in hco['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch']
    else:
        got = cluster.get('kubevirt.io/v1', 'KubeVirt', 'kubevirt', 'kubevirt')
        assert got['spec']['configuration']['developerConfiguration']['featureGates'] == ['Snapshot', 'GPUsWithDRA']

    second = cluster.now()
    rc, log = run(tmp_path, cluster)
    assert rc == 0 and recap(log)['changed'] == '0', log
    # no write at all the second time, counting refused attempts as attempts
    attempts = write_attempts(automation_events(cluster, second))
    assert attempts == [], write_summary(attempts)


# --- the checks before any write, on the real server's label selectors ----------------------------------------

def test_dra_apply_refuses_a_node_running_the_classic_plugin_before_writing(tmp_path, kube):
    # two classic plugin pods, one per label value of the role's selector (the GPU Operator's DaemonSet and the
    # standalone nvidia-device-plugin chart), and a DCGM exporter on dra-1 that the selector leaves out
    pods = [pod('nvidia-device-plugin-daemonset-q8z4d', 'dra-1', 'nvidia-device-plugin-daemonset'),
            pod('nvidia-device-plugin-5tq9w', 'dra-2', 'nvidia-device-plugin', namespace='kube-system'),
            pod('nvidia-dcgm-exporter-7xk2p', 'dra-1', 'nvidia-dcgm-exporter')]
    cluster = kube(cluster_objects('kubernetes', pods), openshift=False, dra=True)
    start = cluster.now()
    rc, log = run(tmp_path, cluster)
    said = ' '.join(log.split())
    assert rc != 0, log
    assert 'DRA node dra-1 also runs the classic nvidia-device-plugin: pod nvidia-device-plugin-daemonset-q8z4d ' \
           'runs there' in said, log
    assert 'DRA node dra-2 also runs the classic nvidia-device-plugin: pod nvidia-device-plugin-5tq9w runs there' \
           in said, log
    assert 'nvidia-dcgm-exporter' not in log, log
    assert write_attempts(automation_events(cluster, start)) == []
    assert cluster.dry_runs() == []


def test_claim_templates_outside_the_shipped_names_are_refused_naming_verb_and_resource(tmp_path, kube):
    # dra-kubevirt's templates live in namespace vms, which the shipped file does not grant (docs/rbac/README.md,
    # "Changing a namespace or a name"): the server refuses the first request there, and nothing is written
    cluster = kube(cluster_objects('kubernetes'), openshift=False, dra=True)
    start = cluster.now()
    rc, log = run(tmp_path, cluster, inventory='dra-kubevirt', gpuvirt_cluster_mode='apply',
                  gpuvirt_render_dir='', dra_driver_kubevirt_version='', dra_driver_chart_install=False)
    assert rc != 0, log
    assert ('cannot get resource \\"resourceclaimtemplates\\" in API group \\"resource.k8s.io\\" in the namespace '
            '\\"vms\\"') in log, log
    assert write_attempts(automation_events(cluster, start)) == []


def test_the_automation_holds_no_cluster_scoped_dra_right(kube):
    # the chart makes the DeviceClass and the kubelet plugin the ResourceSlices, with the Helm account's rights
    cluster = kube(cluster_objects('kubernetes'), openshift=False, dra=True)
    for resource in ('deviceclasses', 'resourceslices', 'resourceclaims'):
        for verb in ('get', 'list', 'watch', 'create', 'patch', 'update', 'delete'):
            assert not cluster.server.can('automation', {'verb': verb, 'group': 'resource.k8s.io',
                                                         'resource': resource, 'namespace': '', 'name': ''}), \
                (verb, resource)
    for namespace, name in (('default', 'other'), ('kube-system', 'vfio-gpu')):
        assert not cluster.server.can('automation', {'verb': 'patch', 'group': 'resource.k8s.io',
                                                     'resource': 'resourceclaimtemplates', 'namespace': namespace,
                                                     'name': name}), (namespace, name)
    assert cluster.server.can('automation', {'verb': 'patch', 'group': 'resource.k8s.io',
                                             'resource': 'resourceclaimtemplates', 'namespace': 'default',
                                             'name': 'vfio-gpu'})


def test_without_resource_k8s_io_the_same_apply_stops_first(tmp_path, kube):
    # the same cluster, but not serving resource.k8s.io/v1 (before 1.34): the role's first read says so
    objects = [o for o in cluster_objects('kubernetes') if not o['apiVersion'].startswith('resource.k8s.io/')]
    cluster = kube(objects, openshift=False, dra=False)
    rc, log = run(tmp_path, cluster)
    assert rc != 0 and 'does not serve resource.k8s.io/v1' in log, log
    assert cluster.writes() == [] and cluster.dry_runs() == []


# --- the stand-in schemas on the server ---------------------------------------------------------------------------

def template(**request):
    req = {'name': 'gpu', 'exactly': {'deviceClassName': dra.DEVICE_CLASS}}
    req.update(request)
    return {'apiVersion': RESOURCE, 'kind': 'ResourceClaimTemplate', 'metadata': {'name': 't', 'namespace': 'default'},
            'spec': {'spec': {'devices': {'requests': [req]}}}}


def post(cluster, obj):
    plural = cluster.server.plural(obj['apiVersion'], obj['kind'])
    path = cluster.server.path(obj['apiVersion'], plural, obj['metadata'].get('namespace'))
    return cluster.server.request('POST', path + '?dryRun=All', obj, raw=True)


def test_the_server_holds_dra_objects_to_the_upstream_rules(kube):
    cluster = kube(openshift=False, dra=True)
    # what upstream and the collection write is accepted: the chart's DeviceClass, the upstream examples, our
    # templates up to the 32 requests a claim may have
    accepted = [chart_device_class(), resource_slice('dra-1'),
                dra.resource_claim_template('vfio-gpu-x32', 'default', count=dra.MAX_REQUESTS)]
    for name in ('k8s-dra-driver-gpu-v0.4.0-demo-specs-quickstart-v1-gpu-test-vfiopci.yaml',
                 'k8s-dra-driver-gpu-v0.4.0-demo-specs-quickstart-v1-gpu-test-vfio-config.yaml',
                 'kubevirt-v1.9.0-pgpu-resource-claim-tmpl.yaml'):
        with open(schema.reference_file('examples', name), encoding='utf-8') as handle:
            accepted += [dict(d, metadata=dict(d['metadata'], namespace='default')) for d in yaml.safe_load_all(handle)
                         if d and d.get('kind') == 'ResourceClaimTemplate']
    assert len(accepted) >= 5
    for obj in accepted:
        status, body = post(cluster, obj)
        assert status == 201, (obj['metadata']['name'], body)
    # what the types and their validation refuse, the server refuses, naming the field
    too_many = dra.resource_claim_template('x', 'default', count=2)
    too_many['spec']['spec']['devices']['requests'] = [
        {'name': 'r%d' % i, 'exactly': {'deviceClassName': dra.DEVICE_CLASS}} for i in range(33)]
    no_parameters = dra.resource_claim_template('x', 'default')
    del no_parameters['spec']['spec']['devices']['config'][0]['opaque']['parameters']
    both = template(firstAvailable=[{'name': 'a', 'deviceClassName': dra.DEVICE_CLASS}])
    neither = template()
    del neither['spec']['spec']['devices']['requests'][0]['exactly']
    no_class = template()
    del no_class['spec']['spec']['devices']['requests'][0]['exactly']['deviceClassName']
    class_without_spec = {'apiVersion': RESOURCE, 'kind': 'DeviceClass', 'metadata': {'name': 'empty.example.com'}}
    slice_without_pool = resource_slice('dra-2')
    del slice_without_pool['spec']['pool']
    refused = {
        'spec.spec.devices.requests: Invalid value: 33: spec.spec.devices.requests in body should have at most 32 '
        'items': too_many,
        'spec.spec.devices.requests.exactly.allocationMode: Unsupported value: "Some"':
            template(exactly={'deviceClassName': dra.DEVICE_CLASS, 'allocationMode': 'Some'}),
        'spec.spec.devices.requests.exactly.count: Invalid value: 0': template(
            exactly={'deviceClassName': dra.DEVICE_CLASS, 'count': 0}),
        'spec.spec.devices.requests.name: Invalid value: "GPU_0"': template(name='GPU_0'),
        'spec.spec.devices.requests.exactly.deviceClassName: Invalid value: "Vfio_GPU"':
            template(exactly={'deviceClassName': 'Vfio_GPU'}),
        'spec.spec.devices.requests.exactly.deviceClassName: Required value': no_class,
        'spec.spec.devices.config.opaque.parameters: Required value': no_parameters,
        '"spec.spec.devices.requests" must validate one and only one schema (oneOf). Found 2 valid alternatives': both,
        '"spec.spec.devices.requests" must validate one and only one schema (oneOf). Found none valid': neither,
        'spec: Required value': class_without_spec,
        'spec.pool: Required value': slice_without_pool,
    }
    wrong = []
    for message, obj in refused.items():
        status, body = post(cluster, obj)
        said = json.loads(body).get('message', '')
        if status != 422 or message not in said:
            wrong.append((message, status, said))
    assert wrong == [], '\n'.join(map(repr, wrong))


def test_a_crd_in_a_k8s_io_group_needs_the_api_approval_annotation(kube):
    # the rule the stand-ins' annotation answers (k8s.io/apiextensions-apiserver validation.go validateAPIApproval)
    cluster = kube(openshift=False)
    probe = copy.deepcopy(dra_stand_ins.crd('DeviceClass'))
    probe['metadata']['name'] = 'gpuvirtprobes.resource.k8s.io'
    probe['spec']['names'] = {'kind': 'GpuvirtProbe', 'plural': 'gpuvirtprobes', 'singular': 'gpuvirtprobe',
                              'listKind': 'GpuvirtProbeList'}
    del probe['metadata']['annotations']
    path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All'
    status, body = cluster.server.request('POST', path, probe, raw=True)
    assert status == 422 and 'api-approved.kubernetes.io' in body, body
    probe['metadata']['annotations'] = copy.deepcopy(dra_stand_ins.crd('DeviceClass')['metadata']['annotations'])
    status, body = cluster.server.request('POST', path, probe, raw=True)
    assert status == 201, body
    assert json.loads(body)['metadata']['name'] == 'gpuvirtprobes.resource.k8s.io'
