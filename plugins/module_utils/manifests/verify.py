# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verification: expected ``nvidia.com/*`` allocatable per node, and the smoke-test VM. Pure Python.

Expected resource names come in as inputs (the playbook computes them with the discovery filters), so this
module only compares and reports: one sentence per node with expected vs advertised.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import resource_names, validators
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
        elif not want:
            # nothing to wait for: say so, and what the node does advertise, rather than an empty list
            message = "node %s: nothing expected (its GPU facts promise no nvidia.com/* resource); it advertises %s" % (
                node, ', '.join('%s=%s' % kv for kv in sorted(advertised.items())) or 'no nvidia.com/* resources')
        else:
            message = "node %s: %s advertised" % (node, ', '.join('%s=%s' % (r, advertised[r]) for r in sorted(want)))
        ok = ok and not missing
        report[node] = {'expected': want, 'advertised': advertised, 'missing': missing, 'message': message}
    return ok, report


# A Kubernetes quantity as a memory request takes it (k8s.io/apimachinery resource.Quantity, the forms a user
# writes for memory: a decimal number with an optional binary or decimal suffix).
MEMORY_RE = re.compile(r'[0-9]{1,15}(?:\.[0-9]{1,6})?(?:Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?')


def checked_resource(resource_name):
    """``resource_name`` when it is a device plugin resource name the VM can ask for (an extended resource name with
    a domain), else ValidationError naming verify_smoke_vm_resource. The settings record checks a given one with it,
    the builder the one it is handed."""
    if not resource_name or not isinstance(resource_name, str) or '/' not in resource_name:
        raise validators.ValidationError(
            "smoke VM resource %s is not a device plugin resource name like nvidia.com/GA102GL_A10; "
            "set verify_smoke_vm_resource" % validators.shown(resource_name, 200))
    try:
        return resource_names.checked_resource_name(resource_name, 'verify_smoke_vm_resource')
    except resource_names.ResourceNameError as exc:
        raise validators.ValidationError(str(exc))


def checked_image(image, variable='verify_smoke_vm_image'):
    """The containerDisk image when one is given and it is an OCI reference, else ValidationError naming
    ``variable``."""
    if not image:
        raise validators.ValidationError("smoke VM needs a containerDisk image (%s)" % variable)
    return validators.oci_reference(image, variable)


def checked_memory(memory, variable="the verify_smoke_vm module's memory"):
    """``memory`` when it is a Kubernetes quantity a memory request takes, else ValidationError naming ``variable``
    (at most 40 characters of the value shown: it may be anything)."""
    if not isinstance(memory, str) or len(memory) > 24 or not MEMORY_RE.fullmatch(memory):
        raise validators.ValidationError("smoke VM memory %r is not a Kubernetes quantity such as 2Gi (%s)"
                                         % (memory if not isinstance(memory, str) else memory[:40], variable))
    return memory


def smoke_vm(name, namespace, resource_name, image, memory='2Gi', running=False):
    """A small VirtualMachine asking for one GPU of ``resource_name`` (``spec.domain.devices.gpus``). Every input
    comes from the inventory or -e and becomes part of an object (and, in render mode, a file Argo CD applies): each
    is checked against its grammar first, here too, since a caller may hand them without a settings record."""
    try:
        checked_resource(resource_name)
        if not image:
            checked_image(image)
        validators.dns1123_subdomain(name, 'verify_smoke_vm_name')
        validators.dns1123_label(namespace, 'verify_smoke_vm_namespace')
        checked_image(image)
        checked_memory(memory)
    except validators.ValidationError as exc:
        raise ManifestError(str(exc))
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
