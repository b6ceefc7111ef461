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

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco as hco_mod
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import (  # noqa: F401 re-exported
    ManifestError, checked, differs, merge_owned_items, merge_permitted_devices, version_tuple)

KUBEVIRT_API_VERSION = 'kubevirt.io/v1'
KUBEVIRT_NAME = 'kubevirt'
KUBEVIRT_NAMESPACE = 'kubevirt'
GPU_GATE = 'GPU'
DISABLE_MDEV_GATE = 'DisableMDEVConfiguration'
OWNER_ANNOTATION = hco_mod.OWNER_ANNOTATION
# The KubeVirt release the collection targets: the example a message gives (a render names its own, or reads it).
TARGET_KUBEVIRT_VERSION = 'v1.9.0'
# what a refusal of a given version adds (here and when the settings record is made)
GIVEN_VERSION_HINT = '; give the KubeVirt release the cluster runs, for example %s' % TARGET_KUBEVIRT_VERSION
# The GPU gate is GA from KubeVirt v1.5.0 (kubevirt/kubevirt pkg/virt-config/featuregate: GPUGate registered with
# State GA in inactive.go; v1.9.0 still accepts it and warns): asked for only where the release still needs it.
GPU_GATE_GA = (1, 5, 0)
# owner-annotation key recording that we wrote mediatedDevicesConfiguration.enabled: false
_MDEV_FIELD_OWNED = 'mdevConfigurationDisabled'

# KubeVirt spells the PCI selector key differently from HCO
_LISTS = (('pciHostDevices', 'pciVendorSelector'), ('mediatedDevices', 'mdevNameSelector'))
# What a render of the KubeVirt CR shares with the live object (common.unmerged_warning): all three lists are
# x-kubernetes-list-type: atomic (kubevirt/kubevirt v1.9.0 pkg/virt-operator/resource/generate/components/
# validations_generated.go, "kubevirt": spec.configuration.permittedHostDevices.pciHostDevices / mediatedDevices,
# developerConfiguration.featureGates).
SHARED_LISTS = ((('spec', 'configuration', 'permittedHostDevices', 'pciHostDevices'), 'atomic'),
                (('spec', 'configuration', 'permittedHostDevices', 'mediatedDevices'), 'atomic'),
                (('spec', 'configuration', 'developerConfiguration', 'featureGates'), 'atomic'))


def merge_gates(current, wanted, owned):
    """Keep every gate of ``current``; add ``wanted``; drop gates we added earlier and no longer want."""
    return merge_owned_items(current, wanted, owned)


def kubevirt_version(given, current, name='kubevirt_devices_kubevirt_version'):
    """The KubeVirt version deciding how mdev handling is turned off: ``given`` (render mode) when set, else the
    version the cluster's KubeVirt CR reports (``status.observedKubeVirtVersion``, which virt-operator sets once it
    has deployed that version). Refused, naming its source, when malformed or when neither is there."""
    if given not in (None, ''):
        return checked(validators.semver, given, name, hint=GIVEN_VERSION_HINT)
    observed = ((current or {}).get('status') or {}).get('observedKubeVirtVersion')
    if observed in (None, ''):
        # KubeVirt v1.7 and older lack mediatedDevicesConfiguration (it came with v1.8.0): a version assumed for
        # them would write only that field, which the API server prunes, and KubeVirt would go on managing (and
        # deleting) the mediated devices it does not permit; so nothing is assumed
        raise ManifestError("the KubeVirt version is not known: %s is not set and %s. Set %s to the KubeVirt release "
                            "the cluster runs (for example %s; v1.7 and older get the DisableMDEVConfiguration gate, "
                            "v1.8.0 and later mediatedDevicesConfiguration.enabled: false), or let the run read it: "
                            "give the cluster (gpuvirt_kubeconfig or gpuvirt_kube_context) or the live KubeVirt CR "
                            "(kubevirt_devices_current) once KubeVirt is deployed"
                            % (name, 'there is no KubeVirt CR to read' if not current else
                               'the KubeVirt CR reports no status.observedKubeVirtVersion (KubeVirt not deployed '
                               'yet?)', name, TARGET_KUBEVIRT_VERSION))
    return checked(validators.semver, observed, 'KubeVirt CR status.observedKubeVirtVersion',
                   hint='; set %s to the KubeVirt release the cluster runs' % name)


def has_mdev_enabled_field(version):
    """Whether KubeVirt ``version`` has ``configuration.mediatedDevicesConfiguration.enabled``.

    It came with v1.8.0 (absent in v1.8.0-alpha.0, present from v1.8.0-beta.0), the release that deprecated the
    ``DisableMDEVConfiguration`` gate; a v1.8.0 pre-release is given the gate, which every version still honours
    (virt-config ``MediatedDevicesHandlingDisabled`` reads the field first, then the gate)."""
    ver = version_tuple(version)
    if ver == (1, 8, 0) and '-' in str(version).split('+', maxsplit=1)[0]:
        return False
    return ver >= (1, 8, 0)


def build_kubevirt(current, pci_devices, mediated_devices, gates=(GPU_GATE,), hco_present=False,
                   name=KUBEVIRT_NAME, namespace=KUBEVIRT_NAMESPACE, disable_mdev_configuration=True, version=None,
                   unknown_hosts=()):
    """Return ``(object, changed, report)``: the partial KubeVirt CR to apply.

    ``disable_mdev_configuration`` (or ``DisableMDEVConfiguration`` among ``gates``) leaves mdev creation to the
    GPU Operator's vGPU Device Manager: written as ``mediatedDevicesConfiguration.enabled: false`` where the
    KubeVirt ``version`` (see ``kubevirt_version``) has that field, as the deprecated gate where it does not. A gate
    an earlier run added is removed once the field replaces it. ``unknown_hosts``: as in hco.build_hco.
    """
    if hco_present:
        raise ManifestError("this cluster runs the HyperConverged operator, which owns the KubeVirt CR and "
                            "overwrites changes to it; configure devices through HyperConverged instead "
                            "(gpuvirt_kubevirt_config: hco)")
    desired = hco_mod.desired_entries(pci_devices, mediated_devices,
                                      selector_keys=('pciVendorSelector', 'mdevNameSelector'))
    owned = hco_mod.read_owner_annotation(current)
    config = ((current or {}).get('spec') or {}).get('configuration') or {}
    cur_phd = config.get('permittedHostDevices') or {}
    phd, new_owned, report = merge_permitted_devices(cur_phd, desired, _LISTS, owned, bool(unknown_hosts))
    disable = bool(disable_mdev_configuration) or DISABLE_MDEV_GATE in gates
    # the version decides the mdev switch and whether the GPU gate is still a gate: given, or read, never assumed
    resolved = kubevirt_version(version, current)
    # a v1.5.0 pre-release keeps the gate (harmless where GA, needed where not yet)
    ga = version_tuple(resolved) > GPU_GATE_GA or (version_tuple(resolved) == GPU_GATE_GA
                                                   and '-' not in str(resolved).split('+', maxsplit=1)[0])
    wanted_gates = [g for g in gates if g != DISABLE_MDEV_GATE and not (g == GPU_GATE and ga)]
    use_field = disable and has_mdev_enabled_field(resolved)
    if disable and not use_field:
        wanted_gates.append(DISABLE_MDEV_GATE)
    cur_gates = (config.get('developerConfiguration') or {}).get('featureGates')
    gate_list, owned_gates = merge_gates(cur_gates, wanted_gates, owned.get('featureGates'))
    if owned_gates:
        new_owned['featureGates'] = owned_gates
    report['featureGates'] = gate_list
    spec_config = {'permittedHostDevices': phd}
    if gate_list:
        # an empty list is left out, not written: the list is atomic, so a rendered [] would clear the gates others
        # set on a sync; applied, leaving out a list this manager owned (a gate an earlier run added) removes it
        spec_config['developerConfiguration'] = {'featureGates': gate_list}
    if use_field:
        # only this field: server-side apply merges it into the struct, keeping the mdev types others set
        spec_config['mediatedDevicesConfiguration'] = {'enabled': False}
        new_owned[_MDEV_FIELD_OWNED] = True
    report['mediatedDevicesConfiguration'] = spec_config.get('mediatedDevicesConfiguration')
    obj = {
        'apiVersion': KUBEVIRT_API_VERSION,
        'kind': 'KubeVirt',
        'metadata': {'name': name, 'namespace': namespace,
                     'annotations': {OWNER_ANNOTATION: hco_mod.owner_annotation(new_owned)}},
        'spec': {'configuration': spec_config},
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
    what the nodes advertise wins. An entry KubeVirt's own plugin serves (``external`` false) keeps its name: that
    plugin advertises what the entry says, once it is permitted. A computed name that no node advertises is replaced by the one name its
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
        if item.get('external', True) is False:
            # KubeVirt's own device plugin advertises a permitted entry under the very resourceName it is given, and
            # only once the entry is permitted (kubevirt/kubevirt v1.9.0 pkg/virt-handler/device-manager/
            # device_controller.go updatePermittedHostDevicePlugins -> pci_device.go NewPCIDevicePlugin): no node
            # can advertise it before this run writes it, so the name is not checked against them
            entries.append(dict(item))
            continue
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
