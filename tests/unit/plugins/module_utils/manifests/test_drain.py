# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain's two decisions, each way: which pods still keep a node's drain from being finished (pods_left: a
node with static pods must finish draining), and whether a server-side apply would change an object
(would_change: the server's bookkeeping is no change, anything else is)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.drain import pods_left
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_compare import would_change


def pod(name, namespace='default', phase='Running', annotations=None, owners=None, deleting=False):
    meta = {'name': name, 'namespace': namespace}
    if annotations is not None:
        meta['annotations'] = annotations
    if owners is not None:
        meta['ownerReferences'] = owners
    if deleting:
        meta['deletionTimestamp'] = '2026-01-01T00:00:00Z'
    return {'metadata': meta, 'status': {'phase': phase}}


DS = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'name': 'nvidia-driver-daemonset', 'controller': True}


def test_a_node_with_only_static_daemonset_and_finished_pods_is_drained():
    # kubectl drain (kubernetes/kubectl pkg/drain/filters.go: mirrorPodFilter skips a pod carrying the
    # kubernetes.io/config.mirror annotation, whatever its value: the kubelet's static pods cannot be deleted
    # through the API server; daemonSetFilter skips DaemonSet-controlled pods with --ignore-daemonsets)
    pods = [
        pod('kube-apiserver-gpu-1', 'kube-system', annotations={'kubernetes.io/config.mirror': 'a1b2c3'}),
        pod('etcd-gpu-1', 'kube-system', annotations={'kubernetes.io/config.mirror': '',
                                                      'kubernetes.io/config.source': 'file'}),
        pod('nvidia-driver-daemonset-x', 'nvidia-gpu-operator', owners=[DS]),
        pod('job-done', phase='Succeeded'),
        pod('job-failed', phase='Failed'),
    ]
    assert pods_left(pods) == []
    assert pods_left([]) == [] and pods_left(None) == []


def test_every_other_pod_keeps_the_drain_unfinished():
    pods = [
        pod('web-1', 'shop'),
        pod('virt-launcher-vm-a', 'vms', phase='Pending'),
        # being deleted still runs on the node
        pod('terminating', 'shop', deleting=True),
        # a DaemonSet named but not as the controller, and another controller kind
        pod('adopted', 'shop', owners=[dict(DS, controller=False)]),
        pod('rs-pod', 'shop', owners=[{'kind': 'ReplicaSet', 'name': 'rs', 'controller': True}]),
        # annotations, but not the mirror one
        pod('annotated', 'shop', annotations={'kubernetes.io/config.source': 'api'}),
        pod('no-status', 'shop', phase=None),
    ]
    assert pods_left(pods) == ['shop/adopted', 'shop/annotated', 'shop/no-status', 'shop/rs-pod',
                               'shop/terminating', 'shop/web-1', 'vms/virt-launcher-vm-a']


def test_a_mixed_node_names_only_what_holds_it():
    # an exempt pod anywhere in the list: the pods after it are still judged
    pods = [pod('done', phase='Succeeded'), pod('static', 'kube-system', annotations={'kubernetes.io/config.mirror': 'x'}),
            pod('vm', 'vms'), pod('ds', 'gpu', owners=[DS]), pod('vm-2', 'vms')]
    assert pods_left(pods) == ['vms/vm', 'vms/vm-2']


SERVER = {'apiVersion': 'v1', 'kind': 'ConfigMap',
          'metadata': {'name': 'c', 'namespace': 'n', 'labels': {'a': '1'}, 'resourceVersion': '10',
                       'managedFields': [{'manager': 'gpuvirt', 'operation': 'Apply'}]},
          'data': {'k': 'v'}}


def test_the_servers_bookkeeping_is_no_change():
    dry_run = copy.deepcopy(SERVER)
    dry_run['metadata']['resourceVersion'] = '11'
    dry_run['metadata']['managedFields'] = [{'manager': 'before-first-apply', 'operation': 'Update'}]
    before = copy.deepcopy((dry_run, SERVER))
    assert would_change(dry_run, SERVER) is False
    assert would_change(SERVER, SERVER) is False
    # neither input is edited (the role prints them afterwards)
    assert (dry_run, SERVER) == before


def test_anything_else_is_a_change():
    for path, value in ((('data', 'k'), 'w'), (('metadata', 'labels', 'a'), '2'), (('metadata', 'annotations'), {'x': 'y'}),
                        (('status',), {'phase': 'Ready'}), (('metadata', 'name'), 'd')):
        dry_run = copy.deepcopy(SERVER)
        target = dry_run
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        assert would_change(dry_run, SERVER) is True, path
    # no stored object: applying creates it
    assert would_change(SERVER, None) is True and would_change(SERVER, {}) is True
