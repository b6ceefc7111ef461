# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Upstream KubeVirt (no HCO): the KubeVirt CR's permitted host devices and feature gates; and the
resource-name reconciliation shared by both platforms. Pure Python.

The KubeVirt CR's lists are ``atomic``: whoever applies one replaces all of it, so, as for HCO, we read,
keep foreign entries and gates, and record what we own in an annotation. Under HCO this CR is HCO's
output and is overwritten by it: building it there is refused.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco as hco_mod
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import (  # noqa: F401 re-exported
    ManifestError, differs, merge_owned_items, merge_permitted_devices)

KUBEVIRT_API_VERSION = 'kubevirt.io/v1'
KUBEVIRT_NAME = 'kubevirt'
KUBEVIRT_NAMESPACE = 'kubevirt'
GPU_GATE = 'GPU'
DISABLE_MDEV_GATE = 'DisableMDEVConfiguration'
OWNER_ANNOTATION = hco_mod.OWNER_ANNOTATION

# KubeVirt spells the PCI selector key differently from HCO
_LISTS = (('pciHostDevices', 'pciVendorSelector'), ('mediatedDevices', 'mdevNameSelector'))


def merge_gates(current, wanted, owned):
    """Keep every gate of ``current``; add ``wanted``; drop gates we added earlier and no longer want."""
    return merge_owned_items(current, wanted, owned)


def build_kubevirt(current, pci_devices, mediated_devices, gates=(GPU_GATE, DISABLE_MDEV_GATE), hco_present=False,
                   name=KUBEVIRT_NAME, namespace=KUBEVIRT_NAMESPACE):
    """Return ``(object, changed, report)``: the partial KubeVirt CR to apply."""
    if hco_present:
        raise ManifestError("this cluster runs the HyperConverged operator, which owns the KubeVirt CR and "
                            "overwrites changes to it; configure devices through HyperConverged instead "
                            "(gpuvirt_kubevirt_config: hco)")
    desired = hco_mod.desired_entries(pci_devices, mediated_devices,
                                      selector_keys=('pciVendorSelector', 'mdevNameSelector'))
    owned = hco_mod.read_owner_annotation(current)
    config = ((current or {}).get('spec') or {}).get('configuration') or {}
    cur_phd = config.get('permittedHostDevices') or {}
    phd, new_owned, report = merge_permitted_devices(cur_phd, desired, _LISTS, owned)
    cur_gates = (config.get('developerConfiguration') or {}).get('featureGates')
    gate_list, owned_gates = merge_gates(cur_gates, list(gates), owned.get('featureGates'))
    if owned_gates:
        new_owned['featureGates'] = owned_gates
    report['featureGates'] = gate_list
    obj = {
        'apiVersion': KUBEVIRT_API_VERSION,
        'kind': 'KubeVirt',
        'metadata': {'name': name, 'namespace': namespace,
                     'annotations': {OWNER_ANNOTATION: hco_mod.owner_annotation(new_owned)}},
        'spec': {'configuration': {'permittedHostDevices': phd,
                                   'developerConfiguration': {'featureGates': gate_list}}},
    }
    return obj, differs(current, obj), report


def advertised_from_nodes(nodes, prefix='nvidia.com/'):
    """``{node name: sorted resource names}`` for ``prefix`` resources a node's allocatable shows above 0."""
    out = {}
    for node in nodes or []:
        name = (node.get('metadata') or {}).get('name')
        alloc = (node.get('status') or {}).get('allocatable') or {}
        out[name] = sorted(k for k, v in alloc.items() if k.startswith(prefix) and str(v) not in ('0', ''))
    return out


def reconcile_resource_names(wanted, advertised):
    """Choose the resource name of every wanted device; returns ``(entries, warnings, errors)``.

    ``wanted`` items: ``{kind: pci|mdev, selector, resource_name, nodes: [...], source: facts|input}``.
    ``advertised``: ``{node: [names]}`` from the cluster, or None when no cluster was read (render mode
    without node data): then the computed names are used as they are.

    The device plugin names resources from the pci.ids inside its image, which can differ from the host's:
    what the nodes advertise wins. A computed name that no node advertises is replaced by the one name its
    nodes advertise that no other wanted device explains (with a warning); a name given as input, or one that
    cannot be matched, is an error naming it.
    """
    entries, warnings, errors = [], [], []
    if advertised is None:
        return [dict(w) for w in wanted], warnings, errors
    everywhere = set(n for names in advertised.values() for n in names)
    explained = set(w['resource_name'] for w in wanted)
    for item in wanted:
        name = item['resource_name']
        what = '%s %s' % ('PCI device' if item['kind'] == 'pci' else 'vGPU type', item['selector'])
        if name in everywhere:
            entries.append(dict(item))
            continue
        nodes = [n for n in item.get('nodes') or [] if n in advertised]
        candidates = sorted(set(n for node in nodes for n in advertised[node]) - explained)
        if item.get('source') == 'facts' and len(candidates) == 1:
            warnings.append("%s: host facts give resource name %s but nodes %s advertise %s; using %s"
                            % (what, name, ', '.join(nodes), candidates[0], candidates[0]))
            entries.append(dict(item, resource_name=candidates[0]))
            explained.add(candidates[0])
            continue
        errors.append("resource name %s (%s) is not advertised by any node (nodes advertise: %s); fix the name, "
                      "or check that the GPU Operator's sandbox device plugin runs on %s"
                      % (name, what, ', '.join(sorted(everywhere)) or 'no nvidia.com/* resources',
                         ', '.join(item.get('nodes') or []) or 'the GPU nodes'))
    return entries, warnings, errors
