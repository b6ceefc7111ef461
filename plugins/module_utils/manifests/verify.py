# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verification: expected ``nvidia.com/*`` allocatable per node, and the smoke-test VM. Pure Python.

Expected resource names come in as inputs (the playbook computes them with the discovery filters), so this
module only compares and reports: one sentence per node with expected vs advertised.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError


def _count(value):
    try:
        return int(str(value))
    except ValueError:
        return 0


def compare(expected, nodes):
    """``expected``: ``{node: {resource: minimum count}}``; ``nodes``: Node objects.

    Returns ``(ok, report)``: report per node ``{expected, advertised, missing, message}``.
    """
    by_name = {(n.get('metadata') or {}).get('name'): n for n in nodes or []}
    report, ok = {}, True
    for node in sorted(expected):
        want = expected[node]
        obj = by_name.get(node)
        alloc = ((obj or {}).get('status') or {}).get('allocatable') or {}
        advertised = {k: _count(v) for k, v in alloc.items() if k.startswith('nvidia.com/')}
        missing = sorted(r for r, n in want.items() if advertised.get(r, 0) < max(int(n), 1))
        if obj is None:
            message = "node %s: not found in the cluster (expected %s)" % (node, ', '.join(sorted(want)))
            missing = sorted(want)
        elif missing:
            message = "node %s: expected %s; advertised %s" % (
                node, ', '.join('%s>=%s' % (r, max(int(want[r]), 1)) for r in sorted(want)),
                ', '.join('%s=%s' % kv for kv in sorted(advertised.items())) or 'no nvidia.com/* resources')
        else:
            message = "node %s: %s advertised" % (node, ', '.join('%s=%s' % (r, advertised[r]) for r in sorted(want)))
        ok = ok and not missing
        report[node] = {'expected': want, 'advertised': advertised, 'missing': missing, 'message': message}
    return ok, report


def smoke_vm(name, namespace, resource_name, image, memory='2Gi', running=False):
    """A small VirtualMachine asking for one GPU of ``resource_name`` (``spec.domain.devices.gpus``)."""
    if not resource_name or '/' not in resource_name:
        raise ManifestError("smoke VM resource %r is not a device plugin resource name like nvidia.com/GA102GL_A10; "
                            "set verify_smoke_vm_resource" % (resource_name,))
    if not image:
        raise ManifestError("smoke VM needs a containerDisk image (verify_smoke_vm_image)")
    return {
        'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
        'metadata': {'name': name, 'namespace': namespace, 'labels': {'app.kubernetes.io/part-of': 'gpuvirt-verify'}},
        'spec': {
            'runStrategy': 'Always' if running else 'Halted',
            'template': {'spec': {
                'domain': {
                    'devices': {
                        'gpus': [{'name': 'gpu1', 'deviceName': resource_name}],
                        'disks': [{'name': 'containerdisk', 'disk': {'bus': 'virtio'}}],
                    },
                    'resources': {'requests': {'memory': memory}},
                },
                'volumes': [{'name': 'containerdisk', 'containerDisk': {'image': image}}],
            }},
        },
    }
