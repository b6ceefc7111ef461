# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA passthrough (dra-driver-nvidia-gpu 0.4.x + KubeVirt GPUsWithDRA): Helm values, the VFIO
ResourceClaimTemplate, the KubeVirt gate decision, the classic device-plugin exclusion check, and the
classification of what holds /dev/nvidia* on a host. Pure Python.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked, version_tuple
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.node_labels import DRA_PLUGIN_LABEL, check_dra_selector

CHART_NAME = 'dra-driver-nvidia-gpu'
CHART_REF = 'oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu'
DEVICE_CLASS = 'vfio.gpu.nvidia.com'
DRIVER = 'gpu.nvidia.com'
DRA_GATE = 'GPUsWithDRA'
# Where the driver's files are, by who installed the driver (NVIDIA, "KubeVirt VFIO GPU passthrough", "Install the
# DRA Driver": "/ for a host-installed driver", "/run/nvidia/driver for a GPU Operator-managed driver",
# "/home/kubernetes/bin/nvidia for a GKE-managed driver"; chart dra-driver-nvidia-gpu 0.4.0 values.yaml, comment on
# nvidiaDriverRoot: "/run/nvidia/driver" with the NVIDIA GPU Driver Container, "/" for a driver installed on the host).
DRIVER_ROOTS = {'host': '/', 'operator': '/run/nvidia/driver', 'gke': '/home/kubernetes/bin/nvidia'}
# the driver modes that are not the GPU Operator's driver container
_NOT_OPERATOR = ('host', 'gke')
# The chart's kubelet plugin has an empty nodeSelector and an affinity for every NVIDIA node: alone it would run
# beside the classic device plugin. It runs on the nodes labelled nvidia.com/dra-kubelet-plugin=true, which the
# node_labels role sets on the DRA nodes (and only there), beside nvidia.com/gpu.deploy.device-plugin=false. That
# label, not the device-plugin one, is what the GPU Operator's driver manager can pause to evict the plugin before
# it unloads the driver (node_labels.DRA_PLUGIN_LABEL; it leaves a "false" label as it is, maybeSetPaused).
DEFAULT_NODE_SELECTOR = {DRA_PLUGIN_LABEL: 'true'}


def _dns(value, what):
    return checked(validators.dns1123_label, value, what)


def host_driver_nodes(pci_facts):
    """The nodes whose preflight facts (``{node: gpuvirt_pci_devices}``) show every NVIDIA GPU bound to the
    ``nvidia`` kernel driver."""
    out = []
    for node, facts in sorted((pci_facts or {}).items()):
        gpus = [g for g in (facts or {}).get('gpus') or [] if not g.get('is_vf')]
        if gpus and all(g.get('driver') == 'nvidia' for g in gpus):
            out.append(node)
    return out


def resolve_driver_mode(explicit=None, operator_driver=None, dra_nodes=(), pci_facts=None):
    """Who installed the NVIDIA driver on the DRA nodes, hence ``nvidiaDriverRoot``; returns ``(mode, reason)``.

    ``operator_driver``: True when the GPU Operator runs its driver container on the DRA nodes (its ClusterPolicy /
    Helm ``driver.enabled`` is true: DRA nodes are ``container`` workload nodes, where the operator deploys its
    driver), False when ``driver.enabled`` is false, None when unknown (no GPU Operator manages these nodes): then a
    host-installed driver is what the hosts' facts show (every GPU of every DRA node bound to ``nvidia``).
    ``explicit`` (``dra_driver_nvidia_driver``) wins, but one that contradicts the operator's setting is refused:
    the kubelet plugin would look for the driver where it is not.
    """
    if explicit and explicit not in DRIVER_ROOTS:
        raise ManifestError("dra_driver_nvidia_driver %r is not one of %s" % (explicit, ', '.join(sorted(DRIVER_ROOTS))))
    if operator_driver is True:
        derived, why = 'operator', "the GPU Operator's driver container is enabled on the DRA nodes (driver.enabled true)"
    elif operator_driver is False:
        derived, why = 'host', "the GPU Operator's driver is disabled (driver.enabled false)"
    else:
        bound = host_driver_nodes(pci_facts)
        if dra_nodes and all(n in bound for n in dra_nodes):
            derived, why = 'host', ("no GPU Operator driver, and the facts of %s show the GPUs bound to the host's "
                                    "nvidia driver" % ', '.join(dra_nodes))
        else:
            derived, why = None, None
    if explicit:
        if derived == 'operator' and explicit in _NOT_OPERATOR:
            raise ManifestError(
                "dra_driver_nvidia_driver is %s (nvidiaDriverRoot %s) but %s, whose driver root is %s: the kubelet "
                "plugin would look for the driver where it is not; remove dra_driver_nvidia_driver (it follows the "
                "operator), or turn the operator's driver off (gpu_operator_helm_values_extra: {driver: {enabled: "
                "false}}, dra_driver_gpu_operator_driver: false) if the driver really is the host's"
                % (explicit, DRIVER_ROOTS[explicit], why, DRIVER_ROOTS['operator']))
        if derived == 'host' and explicit == 'operator':
            raise ManifestError(
                "dra_driver_nvidia_driver is operator (nvidiaDriverRoot %s) but %s, so the driver is the host's (%s): "
                "remove dra_driver_nvidia_driver (it follows the operator's setting), or enable the operator's driver "
                "(driver.enabled true, dra_driver_gpu_operator_driver: true)"
                % (DRIVER_ROOTS['operator'], why, DRIVER_ROOTS['host']))
        return explicit, 'set by dra_driver_nvidia_driver'
    if derived is None:
        raise ManifestError(
            "cannot tell where the NVIDIA driver of the DRA nodes (%s) is: no GPU Operator driver setting "
            "(dra_driver_gpu_operator_driver) and the hosts' facts do not show their GPUs bound to the nvidia driver; "
            "set dra_driver_nvidia_driver (operator: %s, host: %s, gke: %s)"
            % (', '.join(dra_nodes) or 'none given', DRIVER_ROOTS['operator'], DRIVER_ROOTS['host'], DRIVER_ROOTS['gke']))
    return derived, why


def helm_values(driver_mode, node_selector=None):
    """Chart values for VFIO passthrough: GPUs on, compute domains off, both alpha gates on, the kubelet plugin on
    ``node_selector`` (default: the nodes whose classic device plugin is off, the DRA nodes)."""
    if driver_mode not in DRIVER_ROOTS:
        raise ManifestError("driver mode %r is not one of %s" % (driver_mode, ', '.join(sorted(DRIVER_ROOTS))))
    values = {
        'nvidiaDriverRoot': DRIVER_ROOTS[driver_mode],
        # without the override the chart refuses to enable GPU resources (they were experimental)
        'gpuResourcesEnabledOverride': True,
        'resources': {'gpus': {'enabled': True}, 'computeDomains': {'enabled': False}},
        'featureGates': {'PassthroughSupport': True, 'DeviceMetadata': True},
    }
    values['kubeletPlugin'] = {'nodeSelector': node_selector_of(node_selector)}
    return values


def node_selector_of(node_selector=None):
    """The kubelet plugin's nodeSelector: DRA_PLUGIN_LABEL=true and the labels of ``node_selector``
    (``dra_driver_node_selector``, checked), which the node_labels role puts on the DRA nodes."""
    selector = dict(DEFAULT_NODE_SELECTOR)
    selector.update(check_dra_selector(node_selector))
    return selector


def selector_conflicts(nodes, dra_nodes, node_selector=None, labelled=True):
    """Errors for the nodes the kubelet plugin's nodeSelector gets wrong: a DRA node that lacks one of its
    labels (the plugin would not run there: its GPUs publish no device), and a node outside the DRA pool that
    carries them all (the plugin would run there too, beside the classic device plugin or under a VM pool).
    ``labelled`` False (a render: the nodes phase's label patches are not applied yet) skips the first check."""
    selector = node_selector_of(node_selector)
    wanted = set(dra_nodes or [])
    errors = []
    for node in nodes or []:
        name = (node.get('metadata') or {}).get('name')
        labels = (node.get('metadata') or {}).get('labels') or {}
        missing = sorted('%s=%s' % (k, v) for k, v in selector.items() if labels.get(k) != v)
        if name in wanted and missing and labelled:
            errors.append("DRA node %s lacks the kubelet plugin's node selector labels %s: the DRA driver would not "
                          "run there; run the nodes phase (playbooks/nodes.yml labels the DRA nodes with "
                          "dra_driver_node_selector) or fix dra_driver_node_selector" % (name, ', '.join(missing)))
        elif name not in wanted and not missing:
            errors.append("node %s is not a DRA node (dra_driver_nodes) but carries every label of the kubelet "
                          "plugin's node selector %s: the DRA driver would run there too; remove the labels from "
                          "it or pick a dra_driver_node_selector only the DRA nodes carry"
                          % (name, ', '.join(sorted('%s=%s' % kv for kv in selector.items()))))
    return errors


# KubeVirt gives a VM one device per claim request: pkg/dra/utils.go resolveDevice refuses a request with more than
# one allocated device ("KubeVirt only supports exactly one device per request (count > 1 is not supported)"), and
# its VEP 10 "Support DRA devices" maps each `gpus` entry to one claimName/requestName pair. So N GPUs are N
# requests of one device each. resource.k8s.io/v1 allows at most 32 requests in a claim (DeviceRequestsMaxSize,
# k8s.io/api/resource/v1 types.go).
MAX_REQUESTS = 32


def claim_request_names(request, count):
    """The request names of a claim of ``count`` GPUs: ``request`` itself for one GPU (what a VM names in
    ``requestName``), ``request-1`` .. ``request-N`` for more, one `gpus` entry each."""
    if count == 1:
        return [request]
    return ['%s-%d' % (request, i) for i in range(1, count + 1)]


def resource_claim_template(name, namespace, request='dra-gpu', count=1):
    """The namespaced claim template VMs reference: ``count`` GPUs of the VFIO class as ``count`` requests of
    exactly one device (KubeVirt attaches one device per request), legacy IOMMU backend (KubeVirt cannot use
    IOMMUFD yet) and /dev/vfio/vfio mounted (libvirt needs it)."""
    _dns(name, 'ResourceClaimTemplate name')
    _dns(namespace, 'namespace')
    _dns(request, 'request name')
    if not isinstance(count, int) or isinstance(count, bool) or count < 1 or count > MAX_REQUESTS:
        raise ManifestError("GPU count %r of claim template %s must be an integer from 1 to %d (one request per "
                            "GPU; resource.k8s.io/v1 allows %d requests in a claim)"
                            % (count, name, MAX_REQUESTS, MAX_REQUESTS))
    names = claim_request_names(request, count)
    for req_name in names:
        _dns(req_name, 'request name')
    return {
        'apiVersion': 'resource.k8s.io/v1',
        'kind': 'ResourceClaimTemplate',
        'metadata': {'name': name, 'namespace': namespace},
        'spec': {'spec': {'devices': {
            'requests': [{'name': req_name, 'exactly': {
                'deviceClassName': DEVICE_CLASS, 'allocationMode': 'ExactCount', 'count': 1}}
                for req_name in names],
            'config': [{'requests': names, 'opaque': {'driver': DRIVER, 'parameters': {
                'apiVersion': 'resource.nvidia.com/v1beta1',
                'kind': 'VfioDeviceConfig',
                'iommu': {'backendPolicy': 'LegacyOnly', 'enableAPIDevice': True},
            }}}],
        }}},
    }


def kubevirt_gates(kubevirt_version):
    """Feature gates KubeVirt needs for DRA GPUs: GPUsWithDRA on 1.8.x, none from 1.9 (on by default)."""
    ver = version_tuple(kubevirt_version)
    if ver[:2] < (1, 8):
        raise ManifestError("KubeVirt %s cannot attach DRA GPUs: upgrade to 1.8 or later" % kubevirt_version)
    return [DRA_GATE] if ver[:2] == (1, 8) else []


def classic_plugin_conflicts(nodes, dra_nodes, plugin_pods=None, cluster_policy=True):
    """Errors for DRA nodes where the classic nvidia-device-plugin runs or may run.

    ``nodes``: Node objects (labels, allocatable); ``plugin_pods``: pods of the nvidia-device-plugin
    DaemonSet (``spec.nodeName``). A DRA node fails when a plugin pod runs there, when it advertises
    ``nvidia.com/gpu``, or, when a ClusterPolicy deploys the plugin (``cluster_policy``), when its GPU Operator
    label does not switch the plugin off. Without one (the GPUCluster path, manifests/gpu_cluster.py) nothing
    deploys the classic plugin, and the operator deletes that label itself.
    """
    by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in nodes or [])
    on_node = {}
    for pod in plugin_pods or []:
        node = (pod.get('spec') or {}).get('nodeName')
        if node:
            on_node.setdefault(node, []).append((pod.get('metadata') or {}).get('name'))
    errors = []
    for name in dra_nodes:
        node = by_name.get(name)
        if node is None:
            errors.append("DRA node %s is not a node of this cluster" % name)
            continue
        labels = (node.get('metadata') or {}).get('labels') or {}
        alloc = (node.get('status') or {}).get('allocatable') or {}
        why = []
        if on_node.get(name):
            why.append('pod %s runs there' % ', '.join(sorted(on_node[name])))
        if str(alloc.get('nvidia.com/gpu', '0')) not in ('0', ''):
            why.append('it advertises nvidia.com/gpu=%s' % alloc['nvidia.com/gpu'])
        deploy = labels.get('nvidia.com/gpu.deploy.device-plugin')
        workload = labels.get('nvidia.com/gpu.workload.config', 'container')
        # the GPU Operator deploys the plugin on GPU nodes of the container pool unless told not to
        if cluster_policy and (deploy == 'true' or (deploy != 'false' and workload == 'container'
                                                    and 'nvidia.com/gpu.present' in labels)):
            why.append('its labels let the GPU Operator deploy the device plugin (set '
                       'nvidia.com/gpu.deploy.device-plugin=false)')
        if why:
            errors.append("DRA node %s also runs the classic nvidia-device-plugin: %s; exclude the plugin from "
                          "this node (node selector or taint) before installing the DRA driver"
                          % (name, '; '.join(why)))
    return errors


_ADVICE = {
    'display-manager': 'disable the display manager (systemctl disable --now display-manager)',
    'dcgm': 'stop DCGM on this host (DCGM 4.5+ can release GPUs on driver switches)',
    'dcgm-exporter': 'stop dcgm-exporter here, or run 4.5+ with DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH=true',
    'persistenced': 'stop nvidia-persistenced (DRA driver 0.4.0+ handles it itself)',
    'other': 'stop this process before GPUs are rebound to vfio-pci',
}


def classify_holders(holders, dra_driver_version='0.4.0'):
    """Sort ``gpu_holders`` entries into blockers and warnings for the DRA rebind.

    A display manager or an unknown process blocks; DCGM and dcgm-exporter block too (recommended off,
    and a DeadlineExceeded prepare error is what users get); nvidia-persistenced only blocks with a DRA
    driver older than 0.4.0, which does not disable persistence mode itself.
    """
    new_driver = version_tuple(dra_driver_version)[:2] >= (0, 4)
    blocking, warnings = [], []
    for holder in holders or []:
        category = gpu_holders.holder_category(holder)
        line = "PID %s (%s%s) holds %s: %s" % (
            holder.get('pid'), gpu_holders.executable(holder),
            (', unit %s' % holder['unit']) if holder.get('unit') else '', holder.get('device') or '/dev/nvidia*',
            _ADVICE[category])
        entry = {'category': category, 'pid': holder.get('pid'), 'unit': holder.get('unit'),
                 'device': holder.get('device'), 'message': line}
        if category == 'persistenced' and new_driver:
            entry['message'] = line.split(': ')[0] + ': fine with DRA driver %s, which pauses persistence mode' \
                % dra_driver_version
            warnings.append(entry)
        else:
            blocking.append(entry)
    return {'blocking': blocking, 'warnings': warnings,
            'message': '\n'.join(e['message'] for e in blocking) or 'nothing blocks the rebind'}


def kubevirt_gate_object(current, gates, name='kubevirt', namespace='kubevirt'):
    """Partial KubeVirt CR that turns ``gates`` on, keeping every gate already set (the list is atomic).

    Only adds: the devices role owns the rest of the CR's gates; apply this with its own field manager so
    server-side apply does not drop fields another of our objects set.
    """
    have = list((((current or {}).get('spec') or {}).get('configuration') or {}).get(
        'developerConfiguration', {}).get('featureGates') or [])
    merged = have + [g for g in gates if g not in have]
    meta = (current or {}).get('metadata') or {}
    name, namespace = meta.get('name', name), meta.get('namespace', namespace)
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': name, 'namespace': namespace},
            'spec': {'configuration': {'developerConfiguration': {'featureGates': merged}}}}


def hco_gate_object(current, gates, name='kubevirt-hyperconverged', namespace='openshift-cnv'):
    """Partial HyperConverged adding ``gates`` through the jsonpatch annotation (HCO has no DRA gate field)."""
    from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco
    raw = (((current or {}).get('metadata') or {}).get('annotations') or {}).get(hco.JSONPATCH_ANNOTATION)
    patch = hco.merge_jsonpatch(raw, list(gates), [])[0]
    have = (current or {}).get('metadata') or {}
    meta = {'name': have.get('name', name), 'namespace': have.get('namespace', namespace)}
    if patch:
        meta['annotations'] = {hco.JSONPATCH_ANNOTATION: patch}
    return {'apiVersion': hco.HCO_API_VERSION, 'kind': 'HyperConverged', 'metadata': meta, 'spec': {}}
