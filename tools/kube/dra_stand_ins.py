# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in CRDs for ``resource.k8s.io/v1`` (Dynamic Resource Allocation): DeviceClass, ResourceClaimTemplate and
ResourceSlice, served by the 1.20 test API server (apiserver.py) when a test asks for DRA.

Why stand-ins: ``resource.k8s.io/v1`` is built into kube-apiserver from Kubernetes 1.34 (GA) and is not a CRD
upstream; the 1.20 server these tests run has no such group, and the upstream OpenAPI of the group is not in the
reference set. So the structural schemas below are WRITTEN BY HAND from the upstream Go types, kubernetes
``staging/src/k8s.io/api/resource/v1/types.go`` at v1.34.0 (the kubernetes/api module, tag v0.34.0), and the
validation the API server applies to them (kubernetes ``pkg/apis/resource/validation/validation.go``:
``validateDeviceClaim``, ``validateDeviceRequest``, ``validateExactDeviceRequest``, ``validateDeviceAllocationMode``,
``validateDeviceClaimConfiguration``, ``validateOpaqueConfiguration``, ``validateResourceSliceSpec``; read on the
main branch after 1.34, where the rules below are those the v1.34.0 types state). They cover every
field the collection writes (a ResourceClaimTemplate's requests and opaque config) and what a test writes in the
place of the DRA driver's chart and kubelet plugin (DeviceClass, ResourceSlice), with the rules the types state:

* required fields (``+required``, and a oneOf as ``required`` alternatives: a request is exactly one of ``exactly``
  or ``firstAvailable``; a config entry is ``opaque``, the one DeviceConfiguration member);
* enums: ``allocationMode`` ExactCount | All (DeviceAllocationMode), toleration operator Exists | Equal, taint and
  toleration effect NoSchedule | NoExecute (DeviceTaintEffect);
* list bounds: requests, constraints and config 32 each (DeviceRequestsMaxSize = AllocationResultsMaxSize,
  DeviceConstraintsMaxSize, DeviceConfigMaxSize), selectors 32 (DeviceSelectorsMaxSize), firstAvailable 8
  (FirstAvailableDeviceRequestMaxSize), tolerations 16 (DeviceTolerationsMaxLength), devices 128
  (ResourceSliceMaxDevices), taints 4 (DeviceTaintsMaxLength), binding conditions 4, attributes and capacities 32
  per device (ResourceSliceMaxAttributesAndCapacitiesPerDevice, checked here per map);
* name grammars: request and device names DNS labels (validateRequestName, validateDeviceName), ``deviceClassName``
  a DNS subdomain (validateDeviceClassName), driver names at most 63 characters of DNS-subdomain grammar, any case
  (DriverNameMaxLength; validateDriverName is the CSI driver rule), pool names at most 253 (PoolNameMaxLength), CEL
  expressions at most 10 Ki (CELSelectorExpressionMaxLength), string and version attributes at most 64
  (DeviceAttributeMaxValueLength); ``count`` greater than zero for ExactCount.

What a CRD cannot do, and the real server does: compile the CEL selectors, check that a config's ``requests`` name
requests of the claim, bound ``parameters`` to 10 Ki, refuse (rather than prune) unknown fields and a template's
metadata beyond labels and annotations, default ``allocationMode``/``count``, keep the spec immutable, select
ResourceSlices by ``spec.nodeName``/``spec.driver`` fields, and check that exactly one node selection of a
ResourceSlice is set. None of these is something the collection relies on.

A CRD of a ``*.k8s.io`` group must carry the ``api-approved.kubernetes.io`` annotation, a URL or a reason starting
with "unapproved", or the server refuses it (k8s.io/apiextensions-apiserver
``pkg/apis/apiextensions/validation/validation.go`` validateAPIApproval, ``pkg/apihelpers/helpers.go``
IsProtectedCommunityGroup and GetAPIApprovalState; apiextensions.k8s.io/v1 since 1.16): these say what they are.
"""
from __future__ import annotations

import copy

GROUP, VERSION = 'resource.k8s.io', 'v1'
API_APPROVAL = ('unapproved, test stand-in for the built-in resource.k8s.io/v1 (Kubernetes 1.34), which a 1.20 '
                'kube-apiserver does not serve')

# k8s.io/apimachinery pkg/util/validation: IsDNS1123Label (63), IsDNS1123Subdomain (253)
DNS_LABEL = {'type': 'string', 'maxLength': 63, 'pattern': r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'}
DNS_SUBDOMAIN = {'type': 'string', 'maxLength': 253,
                 'pattern': r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'}
# ValidateCSIDriverName: at most 63, a DNS subdomain once lower-cased
DRIVER_NAME = {'type': 'string', 'maxLength': 63,
               'pattern': r'^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*$'}
QUANTITY = {'x-kubernetes-int-or-string': True, 'anyOf': [{'type': 'integer'}, {'type': 'string'}]}
STRING_MAP = {'type': 'object', 'additionalProperties': {'type': 'string'}}
OPEN_OBJECT = {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}
# DeviceTaintEffect, DeviceTolerationOperator
EFFECTS = ['NoSchedule', 'NoExecute']


def _obj(properties, required=None, **extra):
    schema = {'type': 'object', 'properties': properties}
    if required:
        schema['required'] = list(required)
    schema.update(extra)
    return schema


def _list(items, max_items):
    return {'type': 'array', 'maxItems': max_items, 'items': items}


def _strings(max_items):
    return _list({'type': 'string'}, max_items)


SELECTOR = _obj({'cel': _obj({'expression': {'type': 'string', 'maxLength': 10 * 1024}}, ['expression'])}, ['cel'])
TOLERATION = _obj({'key': {'type': 'string'},
                   'operator': {'type': 'string', 'enum': ['Exists', 'Equal']},
                   'value': {'type': 'string', 'maxLength': 63},
                   'effect': {'type': 'string', 'enum': EFFECTS},
                   'tolerationSeconds': {'type': 'integer', 'format': 'int64'}})
CAPACITY_REQUIREMENTS = _obj({'requests': {'type': 'object', 'additionalProperties': QUANTITY}})
# ExactDeviceRequest and DeviceSubRequest share these; count: "Must be greater than zero" (ExactCount)
_REQUEST_FIELDS = {
    'deviceClassName': DNS_SUBDOMAIN,
    'selectors': _list(SELECTOR, 32),
    'allocationMode': {'type': 'string', 'enum': ['ExactCount', 'All']},
    'count': {'type': 'integer', 'format': 'int64', 'minimum': 1},
    'tolerations': _list(TOLERATION, 16),
    'capacity': CAPACITY_REQUIREMENTS,
}
EXACT_REQUEST = _obj(dict(_REQUEST_FIELDS, adminAccess={'type': 'boolean'}), ['deviceClassName'])
SUB_REQUEST = _obj(dict(_REQUEST_FIELDS, name=DNS_LABEL), ['name', 'deviceClassName'])
# "One of Exactly or FirstAvailable must be set"
DEVICE_REQUEST = _obj({'name': DNS_LABEL, 'exactly': EXACT_REQUEST, 'firstAvailable': _list(SUB_REQUEST, 8)},
                      ['name'], oneOf=[{'required': ['exactly']}, {'required': ['firstAvailable']}])
OPAQUE = _obj({'driver': DRIVER_NAME, 'parameters': OPEN_OBJECT}, ['driver', 'parameters'])
# DeviceConfiguration "must have exactly one field set": opaque is its only field
CLAIM_CONFIG = _obj({'requests': _strings(32), 'opaque': OPAQUE}, ['opaque'])
CONSTRAINT = _obj({'requests': _strings(32), 'matchAttribute': {'type': 'string'},
                   'distinctAttribute': {'type': 'string'}})
DEVICE_CLAIM = _obj({'requests': _list(DEVICE_REQUEST, 32), 'constraints': _list(CONSTRAINT, 32),
                     'config': _list(CLAIM_CONFIG, 32)})
CLAIM_SPEC = _obj({'devices': DEVICE_CLAIM})

CLAIM_TEMPLATE_SPEC = _obj({
    # "ObjectMeta may contain labels and annotations that will be copied into the ResourceClaim"
    'metadata': _obj({'labels': STRING_MAP, 'annotations': STRING_MAP}),
    'spec': CLAIM_SPEC}, ['spec'])

DEVICE_CLASS_SPEC = _obj({'selectors': _list(SELECTOR, 32),
                          'config': _list(_obj({'opaque': OPAQUE}, ['opaque']), 32),
                          'extendedResourceName': {'type': 'string'}})

COUNTERS = {'type': 'object', 'additionalProperties': _obj({'value': QUANTITY}, ['value'])}
NODE_SELECTOR = _obj({'nodeSelectorTerms': _list(OPEN_OBJECT, 1)}, ['nodeSelectorTerms'])
ATTRIBUTE = _obj({'int': {'type': 'integer', 'format': 'int64'}, 'bool': {'type': 'boolean'},
                  'string': {'type': 'string', 'maxLength': 64}, 'version': {'type': 'string', 'maxLength': 64}})
TAINT = _obj({'key': {'type': 'string'}, 'value': {'type': 'string', 'maxLength': 63},
              'effect': {'type': 'string', 'enum': EFFECTS}, 'timeAdded': {'type': 'string', 'format': 'date-time'}},
             ['key', 'effect'])
DEVICE = _obj({
    'name': DNS_LABEL,
    'attributes': {'type': 'object', 'maxProperties': 32, 'additionalProperties': ATTRIBUTE},
    'capacity': {'type': 'object', 'maxProperties': 32,
                 'additionalProperties': _obj({'value': QUANTITY, 'requestPolicy': OPEN_OBJECT}, ['value'])},
    'consumesCounters': _list(_obj({'counterSet': {'type': 'string'}, 'counters': COUNTERS},
                                   ['counterSet', 'counters']), 32),
    'nodeName': {'type': 'string'},
    'nodeSelector': NODE_SELECTOR,
    'allNodes': {'type': 'boolean'},
    'taints': _list(TAINT, 4),
    'bindsToNode': {'type': 'boolean'},
    'bindingConditions': _strings(4),
    'bindingFailureConditions': _strings(4),
    'allowMultipleAllocations': {'type': 'boolean'},
}, ['name'])
RESOURCE_SLICE_SPEC = _obj({
    'driver': DRIVER_NAME,
    'pool': _obj({'name': {'type': 'string', 'maxLength': 253}, 'generation': {'type': 'integer', 'format': 'int64'},
                  'resourceSliceCount': {'type': 'integer', 'format': 'int64', 'minimum': 1}},
                 ['name', 'generation', 'resourceSliceCount']),
    'nodeName': {'type': 'string'},
    'nodeSelector': NODE_SELECTOR,
    'allNodes': {'type': 'boolean'},
    'devices': _list(DEVICE, 128),
    'perDeviceNodeSelection': {'type': 'boolean'},
    'sharedCounters': _list(_obj({'name': DNS_LABEL, 'counters': COUNTERS}, ['name', 'counters']), 32),
}, ['driver', 'pool'])

# kind -> (plural, scope, spec schema); every kind's spec is required ("Spec ... `json:\"spec\"`", no omitempty)
KINDS = {
    'DeviceClass': ('deviceclasses', 'Cluster', DEVICE_CLASS_SPEC),
    'ResourceClaimTemplate': ('resourceclaimtemplates', 'Namespaced', CLAIM_TEMPLATE_SPEC),
    'ResourceSlice': ('resourceslices', 'Cluster', RESOURCE_SLICE_SPEC),
}
NAMES = tuple('%s.%s' % (plural, GROUP) for plural, _scope, _spec in KINDS.values())


def crd(kind):
    """The stand-in CRD of one kind (a copy of its own): no status subresource (none of the three has a status)."""
    plural, scope, spec = KINDS[kind]
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': '%s.%s' % (plural, GROUP), 'labels': {'gpuvirt.test/stand-in': 'true'},
                         'annotations': {'api-approved.kubernetes.io': API_APPROVAL}},
            'spec': {'group': GROUP, 'scope': scope,
                     'names': {'kind': kind, 'plural': plural, 'singular': kind.lower(), 'listKind': kind + 'List'},
                     'versions': [{'name': VERSION, 'served': True, 'storage': True,
                                   'schema': {'openAPIV3Schema': copy.deepcopy(_obj({'spec': spec}, ['spec']))}}]}}


def crds():
    return [crd(kind) for kind in KINDS]
