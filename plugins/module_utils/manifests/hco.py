# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HyperConverged (OpenShift Virtualization) permitted host devices: read, merge, write. Pure Python.

A merge patch (and server-side apply on HCO's map-keyed lists edited by other managers) replaces
``permittedHostDevices`` lists, so we always start from what the cluster holds: entries we do not own
are kept exactly as they are, entries we own are updated or removed, new ones are appended. What we own
is recorded on the object itself (annotation ``OWNER_ANNOTATION``, a JSON list of selectors per list),
so a later run with a shorter wish list removes only what an earlier run added. Order is stable (the
cluster's order, then new entries sorted by selector), so a second run produces the same object.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import (  # noqa: F401 re-exported
    UNKEYED, ManifestError, differs, merge_owned_items, merge_owned_list, merge_permitted_devices, version_tuple)

# the names callers and tests know these by
merge_list = merge_owned_list
_differs = differs

HCO_API_VERSION = 'hco.kubevirt.io/v1beta1'  # never v1: it appears in 4.22 and is not compatible
HCO_KIND = 'HyperConverged'
HCO_NAME = 'kubevirt-hyperconverged'  # the CRD only admits this name
HCO_NAMESPACE = 'openshift-cnv'
OWNER_ANNOTATION = 'gpuvirt.provision/owned-permitted-host-devices'
JSONPATCH_ANNOTATION = 'kubevirt.kubevirt.io/jsonpatch'
FEATURE_GATES_PATH = '/spec/configuration/developerConfiguration/featureGates/-'
DISABLE_MDEV_GATE = 'DisableMDEVConfiguration'

_PCI_SELECTOR_RE = re.compile(r'[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}')
_RESOURCE_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9.-]*/[A-Za-z0-9_.-]+')

# list name in HCO -> selector key
LISTS = (('pciHostDevices', 'pciDeviceSelector'), ('mediatedDevices', 'mdevNameSelector'))
# What a render of the HyperConverged shares with the live object (common.unmerged_warning): the permitted-device
# lists are map-keyed on their selector (x-kubernetes-list-type: map, x-kubernetes-list-map-keys pciDeviceSelector /
# mdevNameSelector in kubevirt/hyperconverged-cluster-operator v1.18.1 config/crd/bases/
# hco.kubevirt.io_hyperconvergeds.yaml, v1beta1), the jsonpatch annotation is one string.
SHARED_LISTS = ((('spec', 'permittedHostDevices', 'pciHostDevices'), 'map'),
                (('spec', 'permittedHostDevices', 'mediatedDevices'), 'map'),
                (('metadata', 'annotations', JSONPATCH_ANNOTATION), 'text'))


def pci_selector(value):
    """``10de:2236`` -> ``10DE:2236`` (the form HCO and KubeVirt match on)."""
    if not isinstance(value, str) or not _PCI_SELECTOR_RE.fullmatch(value.strip()):
        raise ManifestError("PCI selector %r is not VENDOR:DEVICE in hex (for example 10DE:2236)" % (value,))
    return value.strip().upper()


def check_resource_name(name, what):
    if not isinstance(name, str) or not _RESOURCE_RE.fullmatch(name):
        raise ManifestError("resource name %r for %s is not of the form vendor.com/NAME "
                            "(for example nvidia.com/GA102GL_A10)" % (name, what))
    return name


def desired_entries(pci_devices, mediated_devices, selector_keys=('pciDeviceSelector', 'mdevNameSelector')):
    """Normalise the wish lists into ``{list name: {selector: entry}}``; conflicting duplicates raise.

    Items of both lists: ``{selector, resource_name, external}`` (a PCI ``VENDOR:DEVICE`` or a vGPU type name), the
    one key name the plan and the facts use too; the object's own key names (``selector_keys``) appear only here.
    ``external`` (default true): externalResourceProvider, from the pool row's advertiser (fleet.ADVERTISERS).
    """
    pci_key, mdev_key = selector_keys
    out = {'pciHostDevices': {}, 'mediatedDevices': {}}
    for item in pci_devices or []:
        sel = pci_selector(item.get('selector'))
        name = check_resource_name(item.get('resource_name'), 'PCI device %s' % sel)
        _put(out['pciHostDevices'], sel, {pci_key: sel, 'resourceName': name,
                                          'externalResourceProvider': bool(item.get('external', True))})
    for item in mediated_devices or []:
        sel = item.get('selector')
        if not isinstance(sel, str) or not sel.strip():
            raise ManifestError("mediated device entry %r lacks the vGPU type name (e.g. 'NVIDIA A10-12Q')" % (item,))
        sel = sel.strip()
        if item.get('interface') == 'vendor_vfio':
            # KubeVirt looks for mediated devices on the mdev bus only (kubevirt/kubevirt
            # pkg/virt-handler/device-manager/mediated_device.go discoverPermittedHostMediatedDevices): a type of
            # NVIDIA's vendor-specific VFIO interface has none, so the entry would never match.
            raise ManifestError(
                "vGPU type %r is on NVIDIA's vendor-specific VFIO interface (nvidia/creatable_vgpu_types%s), which "
                "has no mdev bus: a mediatedDevices entry for it can never match; leave it out and move its hosts to "
                "gpu_vm_passthrough until vGPU creation on this interface is supported"
                % (sel, ' on ' + ', '.join(item['nodes']) if item.get('nodes') else ''))
        name = check_resource_name(item.get('resource_name'), 'vGPU type %r' % sel)
        _put(out['mediatedDevices'], sel, {mdev_key: sel, 'resourceName': name,
                                           'externalResourceProvider': bool(item.get('external', True))})
    _one_selector_per_name(out, selector_keys)
    return out


def _one_selector_per_name(out, selector_keys):
    """One resource name, one selector and one provider, across both lists: KubeVirt's own device plugin serves
    each resource name of an entry with externalResourceProvider false from every function of its selector on
    every node (kubevirt/kubevirt v1.9.0 pkg/virt-handler/device-manager/pci_device.go
    discoverPermittedHostPCIDevices, keyed by resource name), and an external plugin's name is given to a VM by
    name alone, so a name under two selectors (or two providers) hands a VM that asks for one device whichever of
    the others the scheduler finds. Refused here, where both the HyperConverged and the KubeVirt CR lists are
    built, before anything is written."""
    seen = {}
    for list_name, key in zip(('pciHostDevices', 'mediatedDevices'), selector_keys):
        for sel in sorted(out[list_name]):
            entry = out[list_name][sel]
            first = seen.setdefault(entry['resourceName'], (list_name, sel, entry['externalResourceProvider']))
            if first[:2] != (list_name, sel):
                raise ManifestError(
                    "resource name %s is wanted for %s %s (%s) and for %s %s (%s): a VM that asks for it could get "
                    "either device; each selector needs its own resource name (check the hosts' facts: the "
                    "vendor:device ids and device names they report)"
                    % (entry['resourceName'], first[0], first[1],
                       'externalResourceProvider %s' % str(first[2]).lower(), list_name, sel,
                       'externalResourceProvider %s' % str(entry['externalResourceProvider']).lower()))


def _put(table, sel, entry):
    old = table.get(sel)
    if old is not None and old['resourceName'] != entry['resourceName']:
        raise ManifestError("selector %r is wanted under two resource names, %s and %s; keep one"
                            % (sel, old['resourceName'], entry['resourceName']))
    # one provider per selector: KubeVirt keys its own plugin's devices by the selector alone (kubevirt/kubevirt
    # v1.9.0 pkg/virt-handler/device-manager/device_controller.go updatePermittedHostDevicePlugins), so an entry
    # cannot be both an external plugin's and KubeVirt's
    if old is not None and old['externalResourceProvider'] != entry['externalResourceProvider']:
        raise ManifestError("selector %r is wanted both from an external device plugin and from KubeVirt's own "
                            "(externalResourceProvider true and false): KubeVirt cannot tell the devices apart; keep "
                            "one provider for it" % (sel,))
    table[sel] = entry


def read_owner_annotation(obj):
    """The selectors (and jsonpatch gates) an earlier run recorded as ours; tolerant of a damaged value."""
    raw = ((obj or {}).get('metadata') or {}).get('annotations', {}) or {}
    raw = raw.get(OWNER_ANNOTATION)
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def owner_annotation(owned):
    return json.dumps(owned, sort_keys=True, separators=(',', ':'))


def merge_jsonpatch(raw, gates, owned_gates):
    """Merge our ``featureGates/-`` add operations into a ``kubevirt.kubevirt.io/jsonpatch`` value.

    Foreign operations are kept verbatim; our operations for gates no longer wanted are removed.
    Returns ``(value or None, now_owned_gates)``.
    """
    try:
        ops = json.loads(raw) if raw else []
    except ValueError:
        raise ManifestError("annotation %s holds invalid JSON (%r); fix or remove it first" % (JSONPATCH_ANNOTATION, raw))
    if not isinstance(ops, list):
        raise ManifestError("annotation %s must be a JSON list of patch operations, not %r" % (JSONPATCH_ANNOTATION, raw))

    def gate_of(op):
        is_gate = isinstance(op, dict) and op.get('op') == 'add' and op.get('path') == FEATURE_GATES_PATH
        return op.get('value') if is_gate else UNKEYED

    result, now_owned = merge_owned_items(ops, gates, owned_gates, key=gate_of,
                                          make=lambda gate: {'op': 'add', 'path': FEATURE_GATES_PATH, 'value': gate})
    if not result:
        return None, now_owned
    return json.dumps(result, separators=(', ', ': ')), now_owned


# The first releases whose HyperConverged API has featureGates.disableMDevConfiguration, by the tags: HCO v1.10.0
# (kubevirt/hyperconverged-cluster-operator api/v1beta1/hyperconverged_types.go; no v1.8.x or v1.9.x tag has it: the
# field came in "Expose DisableMDEVConfiguration feature gate on HCO API" #2320, backported to the release-1.8 and
# release-1.9 branches after their last tags, so only some OpenShift Virtualization 4.12/4.13 z-streams carry it).
# OpenShift Virtualization 4.y ships HCO 1.(y-4): 4.14 is the first whose every z-stream has it. Older versions get
# the jsonpatch annotation, which every version honours; apply mode reads the CRD instead (crd_has_disable_mdev_gate).
FIRST_HCO_WITH_GATE = (1, 10)
FIRST_OCP_VIRT_WITH_GATE = (4, 14)


def hco_has_disable_mdev_gate(version):
    """Whether HCO ``version`` (1.y, or OpenShift Virtualization's 4.y) has ``featureGates.disableMDevConfiguration``
    in every release of that minor (FIRST_HCO_WITH_GATE, FIRST_OCP_VIRT_WITH_GATE)."""
    ver = version_tuple(version)
    if ver[0] >= 4:
        return ver[:2] >= FIRST_OCP_VIRT_WITH_GATE
    return ver[:2] >= FIRST_HCO_WITH_GATE


def crd_has_disable_mdev_gate(crd):
    """Read the answer from the cluster's HyperConverged CRD (the v1beta1 schema), the reliable source."""
    for version in ((crd or {}).get('spec') or {}).get('versions') or []:
        if version.get('name') != 'v1beta1':
            continue
        spec = ((version.get('schema') or {}).get('openAPIV3Schema') or {}).get('properties', {}).get('spec', {})
        gates = spec.get('properties', {}).get('featureGates', {}).get('properties', {})
        return 'disableMDevConfiguration' in gates
    return False


def build_hco(current, pci_devices, mediated_devices, disable_mdev_configuration=True, gate_supported=True,
              name=HCO_NAME, namespace=HCO_NAMESPACE, unknown_hosts=()):
    """Return ``(object, changed, report)``: the partial HyperConverged to apply and what changed.

    ``current`` is the HyperConverged read from the cluster (None in render mode without a cluster copy).
    The object carries only the fields we manage, so server-side apply leaves everything else alone.
    ``unknown_hosts``: VM hosts of the fleet without facts in this run; the entries we own that the devices given
    lack are then kept (common.merge_owned_list keep_owned).
    """
    if current and current.get('apiVersion') not in (None, HCO_API_VERSION):
        raise ManifestError("HyperConverged was read as %s; read it as %s explicitly"
                            % (current.get('apiVersion'), HCO_API_VERSION))
    desired = desired_entries(pci_devices, mediated_devices)
    owned = read_owner_annotation(current)
    cur_phd = ((current or {}).get('spec') or {}).get('permittedHostDevices') or {}
    phd, new_owned, report = merge_permitted_devices(cur_phd, desired, LISTS, owned, bool(unknown_hosts))
    annotations = {}
    cur_ann = ((current or {}).get('metadata') or {}).get('annotations') or {}
    spec = {'permittedHostDevices': phd}
    want_gates = [DISABLE_MDEV_GATE] if disable_mdev_configuration and not gate_supported else []
    patch, owned_gates = merge_jsonpatch(cur_ann.get(JSONPATCH_ANNOTATION), want_gates, owned.get('jsonpatchGates') or [])
    if patch is not None:
        annotations[JSONPATCH_ANNOTATION] = patch
    if owned_gates:
        new_owned['jsonpatchGates'] = owned_gates
    if disable_mdev_configuration and gate_supported:
        spec['featureGates'] = {'disableMDevConfiguration': True}
    annotations[OWNER_ANNOTATION] = owner_annotation(new_owned)
    obj = {
        'apiVersion': HCO_API_VERSION,
        'kind': HCO_KIND,
        'metadata': {'name': name, 'namespace': namespace, 'annotations': annotations},
        'spec': spec,
    }
    report['jsonpatch_gates'] = owned_gates
    # an annotation we drop entirely is not among obj's fields: compare it separately
    dropped = patch is None and JSONPATCH_ANNOTATION in cur_ann and (owned.get('jsonpatchGates') or [])
    return obj, bool(dropped) or differs(current, obj), report
