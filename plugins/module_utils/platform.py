# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model of the cluster: the platform table and the one resolution of the cluster settings.

A platform is a kind of cluster the collection provisions. Each has one row in ``PLATFORMS``: its traits, which
are everything a role branches on:

  gpu_operator_install  how the NVIDIA GPU Operator is installed: ``olm`` (a Subscription from the certified
                        catalog) or ``helm`` (NVIDIA's chart);
  gpu_operator_namespace  the namespace the operator is installed to by default;
  nfd_install           how Node Feature Discovery comes: ``olm`` (the NFD operator, installed before the GPU
                        Operator) or ``chart`` (the GPU Operator's chart deploys it);
  kernel_args           where the IOMMU kernel arguments and the nouveau blacklist go: ``machineconfig`` (the
                        Machine Config Operator on a MachineConfigPool) or ``host`` (host_prep.yml over SSH);
  kubevirt_config       which custom resource holds KubeVirt's configuration by default: ``hco`` (the
                        HyperConverged of OpenShift Virtualization, which owns the KubeVirt CR) or ``kubevirt``
                        (the KubeVirt CR itself);
  detect_api, detect_kind  the API group/version and a kind of it whose presence tells this platform apart in
                        apply mode (None: the platform is what remains when no other row's API is served).

The collection-wide settings (role gpuvirt.provision.cluster) name a platform with ``gpuvirt_platform``: a row's
name, or ``auto`` (apply mode only: detected once from the API server); and the CR that holds KubeVirt's
configuration with ``gpuvirt_kubevirt_config``: ``hco``, ``kubevirt`` or ``auto`` (apply mode: whether the cluster
serves HCO's CRD hyperconvergeds.hco.kubevirt.io; render mode: the platform's default). ``resolve`` turns these
settings and what apply mode detected into the one fact every cluster role reads (``gpuvirt_cluster``).

Adding a platform (RKE2, say) is a new row here with its traits, its documentation (the filter's docs, README and
docs/openshift-vs-kubernetes.md) and its tests: no role declares its own platform vocabulary.

Plain Python (no Ansible import): the filter gpuvirt.provision.cluster_platform exposes it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

Platform = namedtuple('Platform', ['name', 'gpu_operator_install', 'gpu_operator_namespace', 'nfd_install',
                                   'kernel_args', 'kubevirt_config', 'detect_api', 'detect_kind'])

# One row per platform, in the order the documentation lists them.
#   OpenShift: NVIDIA's "NVIDIA GPU Operator with OpenShift Virtualization" installs the operator from OLM
#   (certified-operators, namespace nvidia-gpu-operator) after the NFD operator; OpenShift Virtualization's
#   HyperConverged owns the KubeVirt CR; kernel arguments go through MachineConfig (the Machine Config Operator
#   owns the hosts' kernel command line). The config.openshift.io group is served only by OpenShift.
#   Kubernetes: NVIDIA's Helm chart (namespace gpu-operator), which deploys NFD itself; upstream KubeVirt's CR;
#   the hosts' kernel command line set over SSH (host_prep.yml).
PLATFORM_TABLE = (
    Platform('openshift', 'olm', 'nvidia-gpu-operator', 'olm', 'machineconfig', 'hco', 'config.openshift.io/v1',
             'ClusterVersion'),
    Platform('kubernetes', 'helm', 'gpu-operator', 'chart', 'host', 'kubevirt', None, None),
)
PLATFORMS = dict((p.name, p) for p in PLATFORM_TABLE)
PLATFORM_NAMES = tuple(p.name for p in PLATFORM_TABLE)
PLATFORM_CHOICES = ('auto',) + PLATFORM_NAMES

# The CRs that may hold KubeVirt's configuration (KubeVirt's permitted host devices, feature gates).
KUBEVIRT_CONFIGS = ('hco', 'kubevirt')
KUBEVIRT_CONFIG_CHOICES = ('auto',) + KUBEVIRT_CONFIGS
# HCO's CRD: served where OpenShift Virtualization (or upstream HCO) runs, which then owns the KubeVirt CR.
HCO_CRD = 'hyperconvergeds.hco.kubevirt.io'

MODES = ('apply', 'render')


class PlatformError(ValueError):
    """The cluster settings do not name a platform or a KubeVirt config owner that can be used."""


def traits(name=None):
    """The traits of platform ``name`` as a dict (its row of the table), {} for an unknown name; with no name,
    every platform's traits, {name: traits}, in table order."""
    if name is None:
        return dict((p.name, p._asdict()) for p in PLATFORM_TABLE)
    row = PLATFORMS.get(name)
    return dict(row._asdict()) if row else {}


def _choice(value, choices, var):
    value = '' if value is None else str(value).strip()
    if value not in choices:
        raise PlatformError('%s is %r: use one of %s.' % (var, value, ', '.join(choices)))
    return value


def detected_platform(served_apis):
    """The platform whose ``detect_api`` the API server serves (``served_apis``: the API group/versions found),
    else the row without one (plain Kubernetes)."""
    served = set(served_apis or ())
    for row in PLATFORM_TABLE:
        if row.detect_api and row.detect_api in served:
            return row.name
    return [row.name for row in PLATFORM_TABLE if not row.detect_api][0]


def resolve_platform(value, mode, served_apis=None):
    """The platform name: ``value`` when it names one; ``auto`` in apply mode: what ``served_apis`` (the detect
    APIs the cluster serves) tells; ``auto`` in render mode is refused, naming gpuvirt_platform and its choices."""
    value = _choice(value or 'auto', PLATFORM_CHOICES, 'gpuvirt_platform')
    mode = _choice(mode, MODES, 'gpuvirt_cluster_mode')
    if value != 'auto':
        return value
    if mode == 'render':
        raise PlatformError('render mode reads no cluster, so the platform cannot be detected: set gpuvirt_platform '
                            'to one of %s (auto works in apply mode only).' % ', '.join(PLATFORM_NAMES))
    if served_apis is None:
        raise PlatformError('gpuvirt_platform is auto but the cluster was not asked which APIs it serves.')
    return detected_platform(served_apis)


def resolve_kubevirt_config(value, platform, mode, hco_served=None):
    """The CR that holds KubeVirt's configuration: ``value`` when it names one; ``auto``: in apply mode whether
    the cluster serves HCO's CRD (``hco_served``), in render mode the platform's default."""
    value = _choice(value or 'auto', KUBEVIRT_CONFIG_CHOICES, 'gpuvirt_kubevirt_config')
    mode = _choice(mode, MODES, 'gpuvirt_cluster_mode')
    if value != 'auto':
        return value
    if mode == 'apply' and hco_served is not None:
        return 'hco' if hco_served else 'kubevirt'
    if platform not in PLATFORMS:
        raise PlatformError('gpuvirt_kubevirt_config is auto and the platform %r is unknown.' % (platform,))
    return PLATFORMS[platform].kubevirt_config


def resolve(settings):
    """The resolved cluster model from the collection-wide settings and what apply mode detected.

    ``settings``: {mode, render_dir, platform, kubevirt_config, served_apis (apply + auto: list), hco_served (apply
    + auto: bool)}. Returns {mode, render_dir, platform, kubevirt_config, traits} (traits: the platform's row).
    """
    settings = settings or {}
    mode = _choice(settings.get('mode') or 'apply', MODES, 'gpuvirt_cluster_mode')
    render_dir = settings.get('render_dir') or ''
    if mode == 'render' and not str(render_dir).strip():
        raise PlatformError('gpuvirt_cluster_mode is render but gpuvirt_render_dir is empty: name the directory '
                            'the manifests are written to.')
    platform = resolve_platform(settings.get('platform'), mode, settings.get('served_apis'))
    config = resolve_kubevirt_config(settings.get('kubevirt_config'), platform, mode, settings.get('hco_served'))
    return {
        'mode': mode,
        'render_dir': str(render_dir),
        'platform': platform,
        'kubevirt_config': config,
        'traits': traits(platform),
    }
