# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA GPU Operator: the pieces of the OLM objects (OpenShift), the ClusterPolicy and the Helm values
(Kubernetes), and the checks of the settings. Pure Python; gpu_operator_install.py puts them together from the
settings record (gpu_operator_settings.py).

One overlay (``settings()``) feeds both install paths, so the ClusterPolicy on OpenShift and the Helm
values on Kubernetes always say the same thing. The ClusterPolicy is never written from scratch: it is the
CSV's own ``alm-examples`` ClusterPolicy (the defaults NVIDIA ships for that operator version) with only our
fields overlaid, so upgrading the operator picks up its new defaults.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, mig, platform, validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl

# The operator's namespace of each platform is a column of the platform table (gpu_operator_namespace).
PACKAGE = 'gpu-operator-certified'
CATALOG = 'certified-operators'
CATALOG_NAMESPACE = 'openshift-marketplace'
CLUSTER_POLICY_NAME = 'gpu-cluster-policy'
# The Node Feature Discovery operator, a prerequisite of the GPU Operator on OpenShift (NVIDIA's "Installing the
# Node Feature Discovery (NFD) Operator", https://docs.nvidia.com/datacenter/cloud-native/openshift/latest/
# install-nfd.html), from Red Hat's catalog (OpenShift "Node Feature Discovery Operator", installing with the CLI).
NFD_NAMESPACE = 'openshift-nfd'
NFD_PACKAGE = 'nfd'
NFD_CATALOG = 'redhat-operators'
NFD_CHANNEL = 'stable'
NFD_CRD = 'nodefeaturediscoveries.nfd.openshift.io'
APPROVALS = ('Automatic', 'Manual')
# the workload label values of the pool table (module_utils/model/fleet.py)
WORKLOADS = fleet.WORKLOADS
MODES = ('kubevirt', 'kata')
# Keys of a settings overlay whose value is a free-form map in the chart (never checked key by key).
_OPAQUE = ('nodeSelector', 'labels', 'annotations')
# vgpuManager.version is the NVIDIA driver version alone (580.82.02, 535.183.04, 470.63) or an image digest: the
# operator appends "-<os tag>" itself (NVIDIA/gpu-operator controllers/object_controls.go resolveDriverTag, OS tag
# from the GPU node's NFD labels in controllers/state_manager.go getGPUNodeOSInfo).
_DRIVER_VERSION_RE = re.compile(r'[0-9]{3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?')
_VERSION_WITH_OS_TAG_RE = re.compile(r'(?P<version>[0-9]{3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?)-(?P<os_tag>[a-z][a-z0-9._-]*)')


def registry_of(repository):
    """``registry.example.com:5000/nvidia`` -> ``registry.example.com:5000``; Docker Hub paths -> docker.io."""
    first = (repository or '').split('/', 1)[0]
    if '.' in first or ':' in first or first == 'localhost':
        return first
    return 'docker.io'


def check_vgpu_manager_version(version, variable='gpu_operator_vgpu_manager.version'):
    """Return the vGPU Manager version when it is a driver version alone (or a sha256 digest), else raise.

    The GPU Operator builds the image tag as ``<version>-<os tag>`` per node OS (``rhcos4.18``, ``ubuntu22.04``),
    so a configured ``580.82.02-rhcos4.18`` makes it pull ``580.82.02-rhcos4.18-rhcos4.18``, which never exists.
    """
    text = '' if version is None else str(version).strip()
    match = _VERSION_WITH_OS_TAG_RE.fullmatch(text)
    if match:
        raise ManifestError(
            "%s is %r: that is the image tag, not the driver version; the GPU Operator appends -<os tag> itself "
            "(it would pull %s-%s-<os tag>): set it to %s, the same value as vgpu_manager_image_version"
            % (variable, text, match.group('version'), match.group('os_tag'), match.group('version')))
    if not (_DRIVER_VERSION_RE.fullmatch(text) or validators.OCI_DIGEST_RE.fullmatch(text)):
        raise ManifestError(
            "%s is %r, not an NVIDIA driver version like 580.82.02: set it to the version of the "
            "NVIDIA-Linux-x86_64-<version>-vgpu-kvm.run file (vgpu_manager_image_version)" % (variable, text))
    return text


def resolve_vgpu_manager(vgpu_manager, image_version=None):
    """``gpu_operator_vgpu_manager`` with its version taken from ``vgpu_manager_image_version`` (the version the
    vgpu_manager_image role builds and pushes as ``<version>-<os tag>``) when it gives none: one source of truth.
    Both set and different is refused: the operator would pull a tag the image role never pushed."""
    if not vgpu_manager:
        return vgpu_manager
    out = dict(vgpu_manager)
    own = '' if out.get('version') is None else str(out['version']).strip()
    image = '' if image_version is None else str(image_version).strip()
    if own and image and own != image:
        raise ManifestError(
            "gpu_operator_vgpu_manager.version is %r but vgpu_manager_image_version is %r: the GPU Operator would pull "
            "%s/%s:%s-<os tag>, which the vgpu_manager_image role does not build (it pushes %s-<os tag>); remove "
            "gpu_operator_vgpu_manager.version (it follows vgpu_manager_image_version) or make the two the same"
            % (own, image, out.get('repository'), out.get('image') or 'vgpu-manager', own, image))
    if not own and image:
        out['version'] = check_vgpu_manager_version(image, 'vgpu_manager_image_version')
    return out


def check_workload(default_workload='container', mode='kubevirt'):
    """Refuse a default workload or sandbox mode the operator does not know."""
    if default_workload not in WORKLOADS:
        raise ManifestError("default workload %r is not one of %s (gpu_operator_default_workload)"
                            % (default_workload, ', '.join(WORKLOADS)))
    if mode not in MODES:
        raise ManifestError("sandbox mode %r is not one of %s (gpu_operator_sandbox_mode)" % (mode, ', '.join(MODES)))


def check_sandbox(default_workload, sandbox_enabled):
    """A VM default workload needs the sandbox workloads on."""
    if default_workload != 'container' and not sandbox_enabled:
        raise ManifestError("default workload %s needs sandbox workloads on (gpu_operator_sandbox_enabled: true)"
                            % default_workload)


def vgpu_manager_fields(vgpu_manager):
    """``vgpuManager`` of the overlay for ``{repository, image, version}`` (the version already resolved,
    resolve_vgpu_manager), each checked against its grammar; ``{'enabled': False}`` for None/{}."""
    if not vgpu_manager:
        return {'enabled': False}
    missing = [k for k in ('repository', 'version') if not vgpu_manager.get(k)]
    if missing:
        raise ManifestError("the vGPU Manager image needs %s (gpu_operator_vgpu_manager.%s): the licensed "
                            "image built by the vgpu_manager_image role, e.g. repository "
                            "registry.example.com/nvidia, version 580.82.02"
                            % (' and '.join(missing), missing[0]))
    # repository is registry/path, image one path component: together the image the operator pulls
    repository = _valid(validators.oci_reference, vgpu_manager['repository'], 'gpu_operator_vgpu_manager.repository')
    _valid(validators.oci_repository, vgpu_manager.get('image') or 'vgpu-manager', 'gpu_operator_vgpu_manager.image')
    return {'enabled': True, 'repository': repository, 'image': vgpu_manager.get('image') or 'vgpu-manager',
            'version': check_vgpu_manager_version(vgpu_manager['version'])}


def settings(sandbox_enabled=True, default_workload='container', mode='kubevirt', vgpu_manager=None,
             vgpu_device_manager_config=None, vfio_manager=True, sandbox_device_plugin=True, pull_secret_name=None,
             mig_strategy=None):
    """Return the overlay (ClusterPolicy spec / Helm values, same field names) for these values: the operands'
    part of what both install paths write (gpu_operator_install.py ``overlay`` gives it the settings record's
    fields by name).

    ``vgpu_manager``: None/{} (disabled) or ``{repository, image, version}`` for the licensed vGPU Manager
    image; ``vgpu_device_manager_config``: None or ``{name, default}`` (the ConfigMap and its default config);
    ``mig_strategy``: None (the fleet has no MIG pool: migManager and mig stay as the CSV or chart ship them) or the
    device plugin's MIG strategy (mig.STRATEGIES), with the MIG manager on (mig_fields).
    """
    check_workload(default_workload, mode)
    overlay = {
        'sandboxWorkloads': {'enabled': bool(sandbox_enabled), 'defaultWorkload': default_workload, 'mode': mode},
        'vfioManager': {'enabled': bool(vfio_manager)},
        'sandboxDevicePlugin': {'enabled': bool(sandbox_device_plugin)},
    }
    vgm = vgpu_manager_fields(vgpu_manager)
    if vgpu_manager and pull_secret_name:
        vgm['imagePullSecrets'] = [pull_secret_name]
    overlay['vgpuManager'] = vgm
    vdm = {'enabled': bool(vgpu_manager)}
    if vgpu_device_manager_config:
        vdm['config'] = {'name': vgpu_device_manager_config['name'],
                         'default': vgpu_device_manager_config.get('default') or 'default'}
    overlay['vgpuDeviceManager'] = vdm
    if mig_strategy is not None:
        overlay.update(mig_fields(mig_strategy))
    check_sandbox(default_workload, sandbox_enabled)
    return overlay


def mig_fields(strategy):
    """The overlay of a fleet with MIG nodes: the MIG manager on (``migManager.enabled``) and the device plugin's
    ``mig.strategy``. The field names are the ClusterPolicy's and the chart's alike (NVIDIA/gpu-operator v26.7.0
    deployments/gpu-operator/values.yaml ``migManager.enabled: true``, ``mig.strategy: single``; the CSV's
    alm-examples ClusterPolicy has the same two; api/nvidia/v1/clusterpolicy_types.go MIGManager, MIG): the
    ClusterPolicy controller runs the state-mig-manager only with migManager enabled (controllers/state_manager.go
    isStateEnabled)."""
    try:
        strategy = mig.check_strategy(strategy)
    except mig.MigError as exc:
        raise ManifestError(str(exc))
    return {'migManager': {'enabled': True}, 'mig': {'strategy': strategy}}


def check_mig_fleet(hosts, strategy):
    """Refuse MIG hosts whose config the device plugin cannot serve under ``strategy`` (mig.strategy_problem),
    naming each host; ``hosts``: the fleet view's entries (``pool``, ``mig_config``)."""
    problems = []
    for host in hosts or []:
        row = fleet.BY_NAME.get(host.get('pool'))
        if row is None or not row.mig:
            continue
        problem = mig.strategy_problem(host.get('mig_config') or mig.DEFAULT_CONFIG, strategy)
        if problem:
            problems.append('%s (node %s): %s' % (host.get('host') or host.get('node'), host.get('node'), problem))
    if problems:
        raise ManifestError('\n'.join(problems))


def runtime_env(traits):
    """The toolkit env that points the GPU Operator at the platform's containerd (``traits``: the platform's row,
    overrides included): CONTAINERD_CONFIG / CONTAINERD_SOCKET for each path that differs from the operator's own
    default (platform.OPERATOR_CONTAINERD_*; NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go
    getRuntimeConfigFiles, getRuntimeSocketFile: the toolkit container's env wins over the defaults), [] where the
    defaults hold or the nodes run another runtime. The GPU Operator's "Installing the NVIDIA GPU Operator",
    "Custom configuration for runtime containerd", sets these as toolkit.env."""
    traits = traits or {}
    if traits.get('container_runtime', 'containerd') != 'containerd':
        return []
    env = []
    for var, key, default in (('CONTAINERD_CONFIG', 'containerd_config', platform.OPERATOR_CONTAINERD_CONFIG),
                              ('CONTAINERD_SOCKET', 'containerd_socket', platform.OPERATOR_CONTAINERD_SOCKET)):
        value = traits.get(key)
        if value and value != default:
            env.append({'name': var, 'value': value})
    return env


def with_runtime_env(overlay, traits):
    """``overlay`` (ClusterPolicy spec / Helm values) with runtime_env(traits) in ``toolkit.env`` (a copy; the
    overlay unchanged where the operator's defaults hold)."""
    env = runtime_env(traits)
    if not env:
        return overlay
    out = copy.deepcopy(overlay)
    toolkit = out.setdefault('toolkit', {})
    names = [e['name'] for e in env]
    toolkit['env'] = [e for e in toolkit.get('env') or [] if e.get('name') not in names] + env
    return out


def check_pull_secret(vgpu_manager, pull_secret_name, public_registry=False):
    """The vGPU Manager image is licensed and must sit in a private registry: refuse to go on without a secret."""
    if vgpu_manager and not pull_secret_name and not public_registry:
        raise ManifestError(
            "the vGPU Manager image %s/%s is in a private registry (%s) but no pull secret is given; set "
            "gpu_operator_pull_secret (registry, username, password) or gpu_operator_pull_secret_name (an existing "
            "Secret), or gpu_operator_registry_public: true if the registry really needs no login"
            % (vgpu_manager.get('repository'), vgpu_manager.get('image') or 'vgpu-manager',
               registry_of(vgpu_manager.get('repository'))))


def deep_merge(base, overlay):
    """Return ``base`` with ``overlay`` merged in (maps recursively, everything else replaced)."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def alm_cluster_policy(alm_examples):
    """The ClusterPolicy example of a CSV's ``alm-examples`` annotation (a JSON string or the parsed list)."""
    if isinstance(alm_examples, str):
        try:
            alm_examples = json.loads(alm_examples)
        except ValueError as exc:
            raise ManifestError("the CSV's alm-examples annotation is not JSON (%s); pass the annotation's value "
                                "(gpu_operator_alm_examples_file)" % exc)
    found = [e for e in alm_examples or [] if isinstance(e, dict) and e.get('kind') == 'ClusterPolicy']
    if not found:
        raise ManifestError("the CSV's alm-examples hold no ClusterPolicy (kinds: %s); is this the GPU Operator CSV?"
                            % ', '.join(sorted(str(e.get('kind')) for e in alm_examples or [] if isinstance(e, dict))))
    return found[0]


def build_cluster_policy(alm_examples, overlay, name=CLUSTER_POLICY_NAME):
    """The alm-examples ClusterPolicy with our overlay; nothing else changes."""
    base = alm_cluster_policy(alm_examples)
    obj = copy.deepcopy(base)
    obj['metadata'] = {'name': name}
    obj['spec'] = deep_merge(base.get('spec') or {}, overlay)
    return obj


def check_values_keys(values, defaults, path=()):
    """Every key we set must exist in the chart's values.yaml; a typo would be silently ignored by Helm."""
    for key, value in values.items():
        here = path + (key,)
        if not isinstance(defaults, dict) or key not in defaults:
            raise ManifestError("Helm value %s does not exist in the gpu-operator chart's values.yaml; check the "
                                "spelling or the chart version (gpu_operator_chart_version)" % '.'.join(here))
        if isinstance(value, dict) and key not in _OPAQUE:
            check_values_keys(value, defaults[key], here)


def helm_values(overlay, extra=None):
    """Helm values: the same overlay as the ClusterPolicy, on top of whatever extra values the user gives."""
    return deep_merge(extra or {}, overlay)


def _valid(check, value, name):
    return checked(check, value, name)


def build_namespace(name, extra_labels=None):
    """The operator's Namespace; ``extra_labels``: the platform's namespace_labels (OpenShift's cluster monitoring
    scrapes the GPU Operator's metrics only with openshift.io/cluster-monitoring=true)."""
    # the namespace also reaches helm's --namespace (kubernetes.core.helm release_namespace): a DNS label, nothing else
    _valid(validators.dns1123_label, name, 'gpu_operator_namespace')
    labels = {'pod-security.kubernetes.io/enforce': 'privileged'}
    labels.update(extra_labels or {})
    return {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name, 'labels': labels}}


def build_operator_group(namespace):
    return {'apiVersion': 'operators.coreos.com/v1', 'kind': 'OperatorGroup',
            'metadata': {'name': 'nvidia-gpu-operator-group', 'namespace': namespace},
            'spec': {'targetNamespaces': [namespace]}}


def default_channel(package_manifest, pinned=None):
    """The Subscription channel: the pinned one (checked against the package's channels when known) or the
    PackageManifest's ``status.defaultChannel``."""
    status = (package_manifest or {}).get('status') or {}
    channels = [c.get('name') for c in status.get('channels') or [] if c.get('name')]
    if pinned:
        if channels and pinned not in channels:
            raise ManifestError("channel %r is not offered by %s (channels: %s); fix gpu_operator_channel"
                                % (pinned, PACKAGE, ', '.join(channels)))
        return pinned
    if not status.get('defaultChannel'):
        raise ManifestError("no channel: pin one with gpu_operator_channel, or give the %s PackageManifest "
                            "(gpu_operator_package_manifest in render mode) so its defaultChannel is used" % PACKAGE)
    return status['defaultChannel']


def build_subscription(namespace, channel, approval='Automatic', source=CATALOG, source_namespace=CATALOG_NAMESPACE,
                       starting_csv=None):
    if approval not in APPROVALS:
        raise ManifestError("installPlanApproval %r is not one of %s (gpu_operator_install_plan_approval)"
                            % (approval, ', '.join(APPROVALS)))
    spec = {'channel': channel, 'installPlanApproval': approval, 'name': PACKAGE, 'source': source,
            'sourceNamespace': source_namespace}
    if starting_csv:
        spec['startingCSV'] = starting_csv
    return {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'Subscription',
            'metadata': {'name': PACKAGE, 'namespace': namespace}, 'spec': spec}


def csv_phase(subscription, csv):
    """``(done, message)`` for the wait on the operator's install: Succeeded is done, Failed raises."""
    installed = ((subscription or {}).get('status') or {}).get('installedCSV')
    if not installed:
        state = ((subscription or {}).get('status') or {}).get('state') or 'no status yet'
        return False, "Subscription %s has no installed CSV yet (%s)" % (PACKAGE, state)
    phase = ((csv or {}).get('status') or {}).get('phase')
    if phase == 'Failed':
        raise ManifestError("CSV %s failed: %s" % (installed, ((csv or {}).get('status') or {}).get('message')))
    return phase == 'Succeeded', "CSV %s is %s" % (installed, phase or 'not created yet')


def build_nfd_install(channel=NFD_CHANNEL, approval='Automatic', source=NFD_CATALOG,
                      source_namespace=CATALOG_NAMESPACE):
    """Namespace, OperatorGroup and Subscription of the NFD operator (the same OLM pattern as the GPU Operator's)."""
    if approval not in APPROVALS:
        raise ManifestError("installPlanApproval %r is not one of %s (gpu_operator_install_plan_approval)"
                            % (approval, ', '.join(APPROVALS)))
    if not channel:
        raise ManifestError("no NFD channel: set gpu_operator_nfd_channel (Red Hat's nfd package publishes stable)")
    namespace = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': NFD_NAMESPACE}}
    group = {'apiVersion': 'operators.coreos.com/v1', 'kind': 'OperatorGroup',
             'metadata': {'name': 'openshift-nfd-group', 'namespace': NFD_NAMESPACE},
             'spec': {'targetNamespaces': [NFD_NAMESPACE]}}
    sub = {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'Subscription',
           'metadata': {'name': NFD_PACKAGE, 'namespace': NFD_NAMESPACE},
           'spec': {'channel': channel, 'installPlanApproval': approval, 'name': NFD_PACKAGE, 'source': source,
                    'sourceNamespace': source_namespace}}
    return [namespace, group, sub]


def build_nfd_instance(instance, required=False):
    """The NodeFeatureDiscovery to create once the NFD operator runs, as given (the NFD CSV's alm-examples entry,
    ``oc get csv -n openshift-nfd -o jsonpath='{.items[0].metadata.annotations.alm-examples}'``): checked to be a
    ``nfd.openshift.io/v1`` NodeFeatureDiscovery with a name, placed in openshift-nfd. ``None`` when not given.

    ``required`` (render mode): a tree that installs the NFD operator but holds no NodeFeatureDiscovery labels no
    node, so the GPU Operator deploys nothing; refused rather than rendered. No instance is made up here: its
    operand image is the cluster release's (ose-node-feature-discovery-rhel9:v4.NN) and only the user knows it."""
    if not instance:
        if required:
            raise ManifestError("gpu_operator_nfd_instance is empty, but this render installs the Node Feature "
                                "Discovery operator (gpu_operator_nfd_install): without a NodeFeatureDiscovery no node "
                                "gets the feature.node.kubernetes.io/pci-10de.present label and the GPU Operator "
                                "deploys nothing. Set gpu_operator_nfd_instance to your NFD CSV's alm-examples entry "
                                "(oc get csv -n openshift-nfd -o jsonpath='{.items[0].metadata.annotations.alm-examples}'),"
                                " whose operand image matches your OpenShift release, or set gpu_operator_nfd_install: "
                                "false when NFD is managed elsewhere")
        return None
    if not isinstance(instance, dict) or instance.get('kind') != 'NodeFeatureDiscovery' or \
            instance.get('apiVersion') != 'nfd.openshift.io/v1':
        raise ManifestError("gpu_operator_nfd_instance must be a NodeFeatureDiscovery of apiVersion "
                            "nfd.openshift.io/v1 (the NFD operator CSV's alm-examples entry), got kind %r apiVersion %r"
                            % (instance.get('kind') if isinstance(instance, dict) else type(instance).__name__,
                               instance.get('apiVersion') if isinstance(instance, dict) else None))
    meta = instance.get('metadata') or {}
    name = meta.get('name')
    checked(validators.dns1123_subdomain, name, 'gpu_operator_nfd_instance metadata.name',
            message="gpu_operator_nfd_instance metadata.name %r is not a DNS subdomain name (e.g. nfd-instance)"
            % (name,))
    if meta.get('namespace') not in (None, NFD_NAMESPACE):
        raise ManifestError("gpu_operator_nfd_instance is in namespace %r; the NFD operator installed here watches %s"
                            % (meta.get('namespace'), NFD_NAMESPACE))
    out = dict(instance)
    out['metadata'] = dict(meta, namespace=NFD_NAMESPACE)
    return out


def channel_alm_examples(package_manifest, channel):
    """``(csv name, alm-examples text)`` of a channel's head CSV in a PackageManifest (``status.channels[]
    .currentCSV`` and ``.currentCSVDesc.annotations['alm-examples']``), or ``(None, None)`` when not given."""
    for entry in ((package_manifest or {}).get('status') or {}).get('channels') or []:
        if entry.get('name') == channel:
            desc = entry.get('currentCSVDesc') or {}
            return entry.get('currentCSV'), (desc.get('annotations') or {}).get('alm-examples')
    return None, None


def check_alm_examples_release(channel, release, source_name):
    """Without a PackageManifest that names the channel's CSV, the alm-examples file must say which release it comes
    from (``release``, e.g. v26.7.0), and the channel must be that release's: the GPU Operator publishes channel
    ``v<major>.<minor>`` with the CSVs ``gpu-operator-certified.v<major>.<minor>.<patch>`` (NVIDIA, "Installing the
    NVIDIA GPU Operator" on OpenShift: the channel is the operator version)."""
    if not release:
        raise ManifestError(
            "name the GPU Operator release the alm-examples in %s come from (gpu_operator_alm_examples_release, e.g. "
            "v26.7.0): without the PackageManifest nothing shows they are those of channel %s's CSV" % (source_name, channel))
    match = re.fullmatch(r'v?([0-9]+)\.([0-9]+)\.[0-9]+', str(release))
    if not match:
        raise ManifestError("gpu_operator_alm_examples_release %r is not a release such as v26.7.0" % (release,))
    expected = 'v%s.%s' % match.groups()
    if channel != expected:
        raise ManifestError(
            "the alm-examples in %s are from release %s, whose channel is %s, but the Subscription follows channel %s: "
            "the ClusterPolicy would carry another operator version's defaults; pin gpu_operator_channel %s, or use "
            "the alm-examples of channel %s's CSV (and its release in gpu_operator_alm_examples_release)"
            % (source_name, release, expected, channel, expected, channel))


def check_alm_examples_source(package_manifest, channel, alm_examples, source_name, release=None,
                              namespace='<the operator namespace>'):
    """The ClusterPolicy must come from the CSV of the channel actually subscribed: when the PackageManifest tells
    that channel's CSV and its alm-examples, a supplied alm-examples file whose ClusterPolicy differs is refused."""
    csv, channel_examples = channel_alm_examples(package_manifest, channel)
    if alm_examples is None:
        return
    if not channel_examples:
        check_alm_examples_release(channel, release, source_name)
        return
    if alm_cluster_policy(channel_examples) != alm_cluster_policy(alm_examples):
        raise ManifestError(
            "the alm-examples in %s are not those of %s, the CSV of channel %s that the Subscription follows: the "
            "ClusterPolicy would carry another operator version's defaults; use that CSV's alm-examples "
            "(oc get csv %s -n %s -o jsonpath='{.metadata.annotations.alm-examples}') or pin the channel of the file "
            "(gpu_operator_channel)" % (source_name, csv, channel, csv, namespace))


def with_dra_eviction(spec, dra_nodes, source):
    """``spec`` (the ClusterPolicy spec or the Helm values: the same ``driver.manager.env``) with the driver
    manager told the DRA kubelet plugin's label, when the operator's driver container runs on DRA nodes.

    NVIDIA's "DRA Driver for NVIDIA GPUs" (GPU Operator docs, "Known Issues"): the driver manager does not evict
    the DRA kubelet plugin before it unloads the driver unless NODE_LABEL_FOR_GPU_POD_EVICTION names the label the
    DRA nodes carry (k8s-driver-manager cmd/driver-manager/main.go: evictAllGPUOperatorComponents pauses that label;
    see node_labels.DRA_PLUGIN_LABEL). ``driver.enabled`` false (a host driver) or no DRA node: unchanged.
    ``source`` names where the env came from in a refusal (gpu_operator_helm_values_extra, or the CSV's
    alm-examples). An env that names another label is refused: the plugin would stay on a node whose driver goes.
    """
    driver = (spec or {}).get('driver') or {}
    if not dra_nodes or driver.get('enabled', True) in (False, 'false'):
        return spec
    env = list((driver.get('manager') or {}).get('env') or [])
    for entry in env:
        if isinstance(entry, dict) and entry.get('name') == nl.DRA_EVICTION_ENV:
            if entry.get('value') == nl.DRA_PLUGIN_LABEL:
                return spec
            raise ManifestError(
                "driver.manager.env (%s) sets %s=%r, but the DRA nodes (%s) run the DRA kubelet plugin selected by "
                "%s=true: the driver manager would leave the plugin on the node while it unloads the driver; remove "
                "that entry (the collection sets it to %s)"
                % (source, nl.DRA_EVICTION_ENV, entry.get('value'), ', '.join(dra_nodes), nl.DRA_PLUGIN_LABEL,
                   nl.DRA_PLUGIN_LABEL))
    env.append({'name': nl.DRA_EVICTION_ENV, 'value': nl.DRA_PLUGIN_LABEL})
    out = copy.deepcopy(spec)
    out.setdefault('driver', {}).setdefault('manager', {})['env'] = env
    return out


def with_dra_validator(spec, dra_nodes, hosts, source, given=None):
    """``spec`` (the ClusterPolicy spec or the Helm values) with ``devicePlugin.enabled: false`` when DRA nodes are
    served, so that the operator validator stops checking for the classic device plugin's resource on them.

    DRA nodes keep the GPU Operator's ``container`` workload (its driver and toolkit), so they run its
    ``nvidia-operator-validator`` (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0 ``gpuStateLabels``:
    ``nvidia.com/gpu.deploy.operator-validator`` is a container-workload label). Its last init container,
    ``plugin-validation``, waits for ``nvidia.com/gpu`` or ``nvidia.com/mig-*`` capacity on the node and exits with
    an error when none appears (cmd/nvidia-validator/main.go@v26.7.0 ``Plugin.validate`` -> ``validateGPUResource``,
    30 tries 5 s apart): a DRA node advertises none, so the pod crash-loops. Nothing per node skips that check
    (``Plugin.validate`` reads no node label and no env that would); the operator removes the init container only
    when ``devicePlugin`` is disabled cluster-wide (controllers/object_controls.go@v26.7.0
    ``TransformValidatorComponent``, case ``"plugin"``). Turning the validator off on DRA nodes is no way out: it
    writes ``toolkit-ready``, which gpu-feature-discovery and the mig-manager wait for (assets/*/ init containers),
    and the driver upgrade controller waits for a Ready validator pod on every node whose driver it restarts
    (cmd/gpu-operator/main.go ``WithValidationEnabled("app=nvidia-operator-validator")``; k8s-operator-libs
    pkg/upgrade/validation_manager.go ``Validate`` returns "not done" while the node has no such pod).

    So the device plugin is turned off in the ClusterPolicy when DRA nodes are served and no node of the fleet needs
    it; a fleet that has both (hosts of a pool in fleet.DEVICE_PLUGIN_POOLS, the rows whose nodes NVIDIA's classic
    device plugin serves) is refused, naming the hosts. ``given``: the user's own values (Helm
    ``gpu_operator_helm_values_extra``); ``devicePlugin.enabled`` true there is refused. ``source`` names where the
    spec came from in a refusal.
    """
    if not dra_nodes:
        return spec
    check_dra_fleet(dra_nodes, hosts)
    wanted = ((given or {}).get('devicePlugin') or {}).get('enabled')
    if wanted not in (None, False, 'false'):
        raise ManifestError(
            "devicePlugin.enabled is %r in %s, but the DRA nodes (%s) need it false: with the device plugin on, the "
            "GPU Operator's validator waits on them for nvidia.com/gpu, which only the device plugin advertises, and "
            "crash-loops (docs/pools/dra.md, \"The operator validator\"); remove devicePlugin.enabled from %s"
            % (wanted, source, ', '.join(dra_nodes), source))
    if ((spec or {}).get('devicePlugin') or {}).get('enabled') is False:
        return spec
    out = copy.deepcopy(spec or {})
    out.setdefault('devicePlugin', {})['enabled'] = False
    return out


def check_dra_fleet(dra_nodes, hosts):
    """Refuse DRA nodes beside nodes of the classic device plugin's pools (see with_dra_validator): called first, so
    that apply mode on OpenShift, which builds the ClusterPolicy only once the operator is installed, stops before its
    first write."""
    if not dra_nodes:
        return
    plugin_hosts = sorted('%s (pool %s)' % (h.get('host') or h.get('node'), h.get('pool'))
                          for h in hosts or [] if h.get('pool') in fleet.DEVICE_PLUGIN_POOLS)
    if plugin_hosts:
        raise ManifestError(
            "the GPU Operator cannot serve the DRA nodes (%s) and the classic device plugin's nodes (%s) under one "
            "ClusterPolicy: on a DRA node the operator validator's plugin-validation waits for nvidia.com/gpu, which "
            "no device plugin advertises there, and crash-loops; gpu-operator v26.7.0 removes that check only with "
            "devicePlugin.enabled false, which takes the device plugin from those nodes too, and offers no per-node "
            "switch (docs/pools/dra.md, \"The operator validator\"). Move those hosts into gpu_dra (the DRA driver "
            "allocates GPUs to pods as well), or the DRA hosts out of this cluster's inventory"
            % (', '.join(dra_nodes), ', '.join(plugin_hosts)))


def check_one_os_tag(os_tags, vgpu_manager):
    """Refuse a vGPU Manager under the ClusterPolicy when the GPU hosts run more than one OS tag.

    ``os_tags``: ``{host: os tag}`` of every GPU host of the fleet (``gpuvirt_os_tag`` from gather.yml; hosts
    without the fact are left out). The GPU Operator reads one OS tag per reconcile, from one GPU node: it lists the
    nodes labelled ``nvidia.com/gpu.present=true`` with ``Limit(1)`` and takes that node's NFD
    ``system-os_release.ID`` and ``VERSION_ID`` (NVIDIA/gpu-operator controllers/state_manager.go@v26.7.0
    ``getGPUNodeOSInfo``, called from ``init``), then appends it to ``vgpuManager.version`` for every vGPU Manager
    DaemonSet (controllers/object_controls.go ``resolveDriverTag``: ``<version>-<n.gpuNodeOSTag>``). Every GPU node
    counts, not only the vGPU ones, and which one comes first is not ours to choose: with two OS tags some vGPU
    nodes would pull an image built for another OS. One image per tag cannot help, since only one tag is pulled.
    """
    if not vgpu_manager:
        return
    by_tag = {}
    for host, tag in sorted((os_tags or {}).items()):
        if tag:
            by_tag.setdefault(str(tag), []).append(str(host))
    if len(by_tag) > 1:
        raise ManifestError(
            "the GPU hosts run %d OS tags (%s), but the GPU Operator builds the vGPU Manager image tag from one GPU "
            "node's OS for every node (gpu-operator v26.7.0 getGPUNodeOSInfo lists one node, resolveDriverTag appends "
            "its tag to vgpuManager.version): some vGPU nodes would load a vGPU Manager built for another OS. Bring "
            "every GPU worker of this cluster to one OS (finish the upgrade), or give the other OS its own cluster "
            "(docs/pools/vgpu.md, \"One OS per cluster\")"
            % (len(by_tag), '; '.join('%s: %s' % (tag, ', '.join(hosts)) for tag, hosts in sorted(by_tag.items()))))
