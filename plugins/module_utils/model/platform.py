# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model of the cluster: the platform table and the one resolution of the cluster settings.

A platform is a kind of cluster the collection provisions. Each has one row in ``PLATFORMS``: its traits, which
are everything a role branches on:

  gpu_operator_install  how the NVIDIA GPU Operator is installed: ``olm`` (a Subscription from the certified
                        catalog) or ``helm`` (NVIDIA's chart);
  gpu_operator_namespace  the namespace the operator is installed to by default;
  namespace_labels      labels that namespace carries beyond Pod Security's (OpenShift's cluster monitoring);
  nfd_install           how Node Feature Discovery comes: ``olm`` (the NFD operator, installed before the GPU
                        Operator) or ``chart`` (the GPU Operator's chart deploys it);
  kernel_args           where the IOMMU kernel arguments and the nouveau blacklist go: ``machineconfig`` (the
                        Machine Config Operator on a MachineConfigPool) or ``host`` (host_prep.yml over SSH);
  kubevirt_config       which custom resource holds KubeVirt's configuration by default: ``hco`` (the
                        HyperConverged of OpenShift Virtualization, which owns the KubeVirt CR) or ``kubevirt``
                        (the KubeVirt CR itself);
  container_runtime     what runs the nodes' containers: ``containerd`` or ``cri-o``;
  containerd_config, containerd_socket  where containerd's config and socket are on the nodes (containerd
                        platforms only): the GPU Operator's toolkit writes its runtime there;
  detect_api, detect_kind  the API group/version and a kind of it whose presence tells this platform apart in
                        apply mode;
  detect_node_annotation  an annotation key every node of this platform carries, for a platform that serves no
                        API of its own: apply mode reads it on a node of the cluster;
  fallback              the platform a cluster is when it matches no row's detection (exactly one row);
  title                 the platform's name in messages and the documentation;
  rbac                  the automation's RBAC file for it under docs/rbac/ (the tests' API server grants the same).

The collection-wide settings (role gpuvirt.provision.cluster) name a platform with ``gpuvirt_platform``: a row's
name, or ``auto`` (apply mode only: detected once from the API server); and the CR that holds KubeVirt's
configuration with ``gpuvirt_kubevirt_config``: ``hco``, ``kubevirt`` or ``auto`` (apply mode: whether the cluster
serves HCO's CRD hyperconvergeds.hco.kubevirt.io; render mode: the platform's default). ``resolve`` turns these
settings and what apply mode detected into the one fact every cluster role reads (``gpuvirt_cluster``).

Adding a platform is a new row here with its traits (the comment above the rows cites their sources), its cited
expectation in test_platform.py's test_table_rows and a changelog fragment (and an RBAC file under docs/rbac/ where
no shipped one fits its namespaces and APIs); the lists of platforms elsewhere are generated
(tools/docs/generate_reference.py): no role declares its own platform vocabulary. The integration tests make a
cluster of every row (its detection served, its RBAC file granted) and run preflight and the RBAC checks on it.

Each row is a ``Platform`` with named columns and defaults (a new column edits no row); detection is the
``detect_api``/``detect_kind`` or the ``detect_node_annotation`` of a row, and the row marked ``fallback`` (exactly
one) is what a cluster that matches none of them is. A cluster that matches two rows is refused, naming both. The
inventory may override the OVERRIDABLE traits (``gpuvirt_platform_traits``, validated by ``with_overrides``).
docs/architecture.md, "The tables: pools and platforms", says how to add a row and override a trait.

Plain Python (no Ansible import): the filter gpuvirt.provision.cluster_platform exposes it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.table_row import REQUIRED, row_class

Platform = row_class('Platform', (
    ('name', REQUIRED), ('gpu_operator_install', REQUIRED), ('gpu_operator_namespace', REQUIRED),
    ('namespace_labels', {}), ('nfd_install', REQUIRED), ('kernel_args', REQUIRED), ('kubevirt_config', REQUIRED),
    ('container_runtime', 'containerd'), ('containerd_config', None), ('containerd_socket', None),
    ('detect_api', None), ('detect_kind', None), ('detect_node_annotation', None), ('fallback', False),
    ('title', REQUIRED), ('rbac', REQUIRED),
), 'A row of the platform table (platform.PLATFORM_TABLE).')

# What each column of the platform table means (Markdown), in the order of Platform's columns:
# docs/reference/pools-and-platforms.md lists the columns from here (make docs), so a column is documented where it
# is added; a test holds the names equal to the columns.
PLATFORM_COLUMN_DOCS = (
    ('name', 'the platform (`gpuvirt_platform`)'),
    ('gpu_operator_install',
     "`olm` (a Subscription, then the ClusterPolicy from the CSV's alm-examples) or `helm` (NVIDIA's chart and "
     'its values)'),
    ('gpu_operator_namespace',
     "the operator's namespace (OpenShift `nvidia-gpu-operator`, Kubernetes `gpu-operator`)"),
    ('namespace_labels', 'labels that namespace carries (OpenShift: `openshift.io/cluster-monitoring: "true"`)'),
    ('nfd_install', "`olm` (the NFD operator first) or `chart` (the GPU Operator's chart deploys it)"),
    ('kernel_args', '`machineconfig` (the Machine Config Operator) or `host` (`host_prep.yml` over SSH)'),
    ('kubevirt_config', "the CR holding KubeVirt's configuration by default: `hco` or `kubevirt`"),
    ('container_runtime', '`containerd` or `cri-o` (OpenShift)'),
    ('containerd_config',
     'where containerd keeps its configuration on the nodes (containerd platforms only); a path other than the '
     "GPU Operator's default (`/etc/containerd/config.toml`) goes to its toolkit's `CONTAINERD_CONFIG` env"),
    ('containerd_socket',
     'where containerd keeps its socket on the nodes (containerd platforms only); a path other than the GPU '
     "Operator's default (`/run/containerd/containerd.sock`) goes to its toolkit's `CONTAINERD_SOCKET` env"),
    ('detect_api',
     'the API whose presence tells the platform apart in apply mode (`config.openshift.io/v1`), with '
     '`detect_kind`'),
    ('detect_kind', 'the kind of `detect_api` whose presence is read (`ClusterVersion`)'),
    ('detect_node_annotation',
     'for a platform that serves no API of its own: an annotation key its agent puts on every node; apply mode '
     "reads the nodes (the cluster role's first read, a list of Node with `limit=100`): every node read must "
     'carry it, or none; a cluster where some do is refused, naming the counts'),
    ('fallback',
     "the platform a cluster is when it matches no row's detection: exactly one row (`kubernetes`), wherever "
     'it stands'),
    ('title', 'the name a person knows the platform by, in messages and the documentation (`OpenShift`)'),
    ('rbac',
     "the automation's least-privilege RBAC file for this platform under `docs/rbac/`, which a cluster admin applies "
     "once (its namespaces are the platform's defaults); the tests' API server grants the same file to the "
     "automation identity when it stands in for this platform"),
)

# The GPU Operator's own containerd paths, used when its toolkit is given none (NVIDIA/gpu-operator v26.7.0
# controllers/object_controls.go DefaultContainerdConfigFile, DefaultContainerdSocketFile; getRuntimeConfigFiles
# and getRuntimeSocketFile read the toolkit's CONTAINERD_CONFIG / CONTAINERD_SOCKET env over them). A platform
# whose paths differ gets them in the toolkit's env (gpu_operator.runtime_env).
OPERATOR_CONTAINERD_CONFIG = '/etc/containerd/config.toml'
OPERATOR_CONTAINERD_SOCKET = '/run/containerd/containerd.sock'

# One row per platform, in the order the documentation lists them.
#   OpenShift: NVIDIA's "NVIDIA GPU Operator with OpenShift Virtualization" installs the operator from OLM
#   (certified-operators, namespace nvidia-gpu-operator, labelled openshift.io/cluster-monitoring=true so the
#   cluster monitoring stack scrapes its metrics: NVIDIA's OpenShift install guide, "Create the nvidia-gpu-operator
#   namespace") after the NFD operator; OpenShift Virtualization's HyperConverged owns the KubeVirt CR; kernel
#   arguments go through MachineConfig (the Machine Config Operator owns the hosts' kernel command line). Its nodes
#   run CRI-O, which the operator's toolkit configures through its drop-in (object_controls.go
#   DefaultCRIODropInConfigFile): no containerd paths. The config.openshift.io group is served only by OpenShift.
#   Kubernetes: NVIDIA's Helm chart (namespace gpu-operator, the GPU Operator's "Installing the NVIDIA GPU
#   Operator": helm install -n gpu-operator --create-namespace), which deploys NFD itself; upstream KubeVirt's CR;
#   the hosts' kernel command line set over SSH (host_prep.yml); containerd at the operator's default paths. It is
#   the fallback: the platform a cluster is when it matches no other row's detection.
#   RKE2: Kubernetes as the kubernetes row installs it (NVIDIA's "Installing the NVIDIA GPU Operator", section
#   "Rancher Kubernetes Engine 2", defers to RKE2's "Deploy NVIDIA Operator", docs/add-ons/gpu_operators.md, which
#   installs NVIDIA's chart into gpu-operator for every operator release it lists, v25.3 to v26.3); the KubeVirt CR
#   and the kernel command line over SSH as there (RKE2 runs no Machine Config Operator and no HCO). Its containerd
#   is RKE2's own: the socket /run/k3s/containerd/containerd.sock, the one toolkit env that page sets
#   (CONTAINERD_SOCKET), which the toolkit uses to make containerd reload. Its config is left at the operator's
#   default, as that page leaves it: RKE2 regenerates /var/lib/rancher/rke2/agent/etc/containerd/config.toml at
#   every start (RKE2 docs, "Advanced Options", "Configuring containerd") and adds the nvidia runtimes itself where
#   the toolkit installed them (k3s pkg/agent/containerd/runtimes.go findNvidiaContainerRuntimes, the agent RKE2
#   embeds: /usr/local/nvidia/toolkit, the chart's toolkit.installDir), so the toolkit need not edit that file,
#   which RKE2 rewrites; no CONTAINERD_RUNTIME_CLASS / CONTAINERD_SET_AS_DEFAULT either (neither page sets
#   them). It serves no API group of its own; every node's agent annotates its node <program>.io/node-args (k3s
#   pkg/nodeconfig/nodeconfig.go NodeArgsAnnotation, set by the agent's configureNode on every node, servers
#   included), and RKE2 builds with version.Program=rke2 (rancher/rke2 scripts/version.sh PROG, scripts/build-binary).
PLATFORM_TABLE = (
    Platform(name='openshift', gpu_operator_install='olm', gpu_operator_namespace='nvidia-gpu-operator',
             namespace_labels={'openshift.io/cluster-monitoring': 'true'}, nfd_install='olm',
             kernel_args='machineconfig', kubevirt_config='hco', container_runtime='cri-o',
             detect_api='config.openshift.io/v1', detect_kind='ClusterVersion',
             title='OpenShift', rbac='gpuvirt-automation.yml'),
    Platform(name='kubernetes', gpu_operator_install='helm', gpu_operator_namespace='gpu-operator',
             nfd_install='chart', kernel_args='host', kubevirt_config='kubevirt',
             containerd_config=OPERATOR_CONTAINERD_CONFIG, containerd_socket=OPERATOR_CONTAINERD_SOCKET,
             fallback=True, title='Kubernetes', rbac='gpuvirt-automation-kubernetes.yml'),
    Platform(name='rke2', gpu_operator_install='helm', gpu_operator_namespace='gpu-operator',
             nfd_install='chart', kernel_args='host', kubevirt_config='kubevirt',
             containerd_config=OPERATOR_CONTAINERD_CONFIG, containerd_socket='/run/k3s/containerd/containerd.sock',
             detect_node_annotation='rke2.io/node-args', title='RKE2', rbac='gpuvirt-automation-kubernetes.yml'),
)

# The vocabulary of each column a role branches on.
COLUMN_CHOICES = {
    'gpu_operator_install': ('olm', 'helm'),
    'nfd_install': ('olm', 'chart'),
    'kernel_args': ('machineconfig', 'host'),
    'kubevirt_config': ('hco', 'kubevirt'),
    'container_runtime': ('containerd', 'cri-o'),
}
# The traits an inventory may override for its cluster (gpuvirt_platform_traits): where a site's containerd keeps
# what the row names, on a distribution without a row of its own (on the kubernetes row, a containerd whose socket
# is elsewhere). Every other trait is what the platform is: another value is another row.
OVERRIDABLE = ('containerd_config', 'containerd_socket')
# How a message names a value of the columns that say what a run does on the platform (``describe``).
COLUMN_WORDS = (
    ('gpu_operator_install', {'olm': 'OLM', 'helm': 'Helm'}),
    ('kubevirt_config', {'hco': 'HyperConverged', 'kubevirt': 'KubeVirt CR'}),
    ('kernel_args', {'machineconfig': 'MachineConfig', 'host': 'host kernel arguments'}),
)
# a file directly under docs/rbac/, named as the shipped ones are
_RBAC_FILE_RE = re.compile(r'gpuvirt-automation(?:-[a-z0-9]{1,32}){0,4}\.yml')
_TITLE_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9 .+-]{0,31}')
_HOST_PATH_RE = re.compile(r'(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_.+-]{1,255}){1,64}')


class PlatformError(ValueError):
    """The cluster settings do not name a platform or a KubeVirt config owner that can be used."""


def check_table(table):
    """``table`` when every row can be used, else PlatformError naming the row, the column and the fix: names
    unique, each column a role branches on in its vocabulary, containerd paths exactly where containerd runs, a
    detect_api with its detect_kind, a detect_node_annotation that is an annotation key, no two rows with the same
    detection, and exactly one fallback row, which detects nothing."""
    names = [row.name for row in table]
    for row in table:
        if names.count(row.name) > 1 or row.name == 'auto':
            raise PlatformError('platform %r: a name is given once, and auto is the setting that detects one'
                                % row.name)
        for column, allowed in COLUMN_CHOICES.items():
            if getattr(row, column) not in allowed:
                raise PlatformError('platform %s: %s %r is not one of %s'
                                    % (row.name, column, getattr(row, column), ', '.join(allowed)))
        containerd = row.container_runtime == 'containerd'
        for column in ('containerd_config', 'containerd_socket'):
            if containerd != bool(getattr(row, column)):
                raise PlatformError('platform %s: %s is %r with container_runtime %s: containerd paths go on a '
                                    'containerd platform, and only there' % (row.name, column,
                                                                             getattr(row, column),
                                                                             row.container_runtime))
        if bool(row.detect_api) != bool(row.detect_kind) or (row.fallback and row.detect_api):
            raise PlatformError('platform %s: detect_api and detect_kind go together, on a row that is not the '
                                'fallback' % row.name)
        if not isinstance(row.title, str) or not _TITLE_RE.fullmatch(row.title):
            raise PlatformError("platform %s: title %r: give the platform's name as people write it, 1 to 32 letters, "
                                "digits, blanks, '.', '+' or '-'" % (row.name, row.title))
        if not isinstance(row.rbac, str) or not _RBAC_FILE_RE.fullmatch(row.rbac):
            raise PlatformError('platform %s: rbac %r: name its RBAC file under docs/rbac/, '
                                'gpuvirt-automation[-<word>].yml' % (row.name, row.rbac))
        if row.detect_node_annotation is not None:
            try:
                validators.label_key(row.detect_node_annotation, 'platform %s: detect_node_annotation' % row.name)
            except validators.ValidationError as exc:
                raise PlatformError(str(exc))
            if row.fallback:
                raise PlatformError('platform %s: detect_node_annotation goes on a row that is not the fallback '
                                    '(the fallback is what a cluster that matches no detection is)' % row.name)
    for column in ('detect_api', 'detect_node_annotation'):
        values = [getattr(row, column) for row in table if getattr(row, column)]
        for value in values:
            if values.count(value) > 1:
                raise PlatformError('platforms %s: the same %s %r cannot tell them apart; give each its own'
                                    % (' and '.join(row.name for row in table if getattr(row, column) == value),
                                       column, value))
    fallbacks = [row.name for row in table if row.fallback]
    if len(fallbacks) != 1:
        raise PlatformError('the platform table needs exactly one fallback row (the platform of a cluster that '
                            'serves no detect_api); it has %s' % (', '.join(fallbacks) or 'none'))
    return tuple(table)


def derived(table):
    """Every list the collection keeps of the platforms, derived from ``table``."""
    table = check_table(table)
    return {
        'PLATFORM_TABLE': table,
        'PLATFORMS': dict((p.name, p) for p in table),
        'PLATFORM_NAMES': tuple(p.name for p in table),
        'PLATFORM_CHOICES': ('auto',) + tuple(p.name for p in table),
        'FALLBACK': [p.name for p in table if p.fallback][0],
    }


_DERIVED = derived(PLATFORM_TABLE)
PLATFORM_TABLE = _DERIVED['PLATFORM_TABLE']
PLATFORMS = _DERIVED['PLATFORMS']
PLATFORM_NAMES = _DERIVED['PLATFORM_NAMES']
PLATFORM_CHOICES = _DERIVED['PLATFORM_CHOICES']
FALLBACK = _DERIVED['FALLBACK']

# The CRs that may hold KubeVirt's configuration (KubeVirt's permitted host devices, feature gates).
KUBEVIRT_CONFIGS = ('hco', 'kubevirt')
KUBEVIRT_CONFIG_CHOICES = ('auto',) + KUBEVIRT_CONFIGS
# HCO's CRD: served where OpenShift Virtualization (or upstream HCO) runs, which then owns the KubeVirt CR.
HCO_CRD = 'hyperconvergeds.hco.kubevirt.io'

MODES = ('apply', 'render')


def traits(name=None):
    """The traits of platform ``name`` as a dict (its row of the table), {} for an unknown name; with no name,
    every platform's traits, {name: traits}, in table order."""
    if name is None:
        return dict((p.name, p._asdict()) for p in PLATFORM_TABLE)
    row = PLATFORMS.get(name)
    return dict(row._asdict()) if row else {}


def with_overrides(name, overrides):
    """The traits of platform ``name`` with the inventory's ``overrides`` (gpuvirt_platform_traits) over them.

    Only the OVERRIDABLE traits may be given, each an absolute path of letters, digits, '_', '.', '+' and '-' (it
    reaches the GPU Operator toolkit's env and a hostPath volume), on a platform whose nodes run containerd; an
    unknown key, another trait or a bad value raises PlatformError naming the key, the value and the fix."""
    row = traits(name)
    if not row:
        raise PlatformError('gpuvirt_platform_traits: the platform %r is unknown; use one of %s.'
                            % (name, ', '.join(PLATFORM_NAMES)))
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise PlatformError('gpuvirt_platform_traits is %s, not a mapping: give {trait: value} with the traits %s.'
                            % (type(overrides).__name__, ', '.join(OVERRIDABLE)))
    for key in sorted(overrides, key=str):
        value = overrides[key]
        if key not in row:
            raise PlatformError('gpuvirt_platform_traits.%s: no platform has this trait; the traits that may be '
                                'overridden are %s.' % (str(key)[:64], ', '.join(OVERRIDABLE)))
        if key not in OVERRIDABLE:
            raise PlatformError('gpuvirt_platform_traits.%s: this trait is what the platform %s is, not a site '
                                'setting; pick the platform whose %s is %r with gpuvirt_platform (or add a row to '
                                'the platform table). The traits that may be overridden are %s.'
                                % (key, name, key, value, ', '.join(OVERRIDABLE)))
        if row['container_runtime'] != 'containerd':
            raise PlatformError('gpuvirt_platform_traits.%s: the nodes of %s run %s, not containerd; leave it out.'
                                % (key, name, row['container_runtime']))
        if not isinstance(value, str) or len(value) > 4095 or not _HOST_PATH_RE.fullmatch(value):
            raise PlatformError("gpuvirt_platform_traits.%s is %r: give an absolute path on the nodes such as %s, of "
                                "letters, digits, '_', '.', '+', '-' and '/' (no blanks, quotes or '..')."
                                % (key, value if not isinstance(value, str) else value[:128], row[key]))
        row[key] = value
    return row


def describe(row):
    """The platform in words for a message, from its traits (a row's dict, as ``traits`` returns it): its title and
    what the run does there, e.g. ``OpenShift (OLM, HyperConverged, MachineConfig)``."""
    words = [choices.get(row.get(column), str(row.get(column))) for column, choices in COLUMN_WORDS]
    return '%s (%s)' % (row.get('title') or row.get('name'), ', '.join(words))


def _choice(value, choices, var):
    value = '' if value is None else str(value).strip()
    if value not in choices:
        raise PlatformError('%s is %r: use one of %s.' % (var, value, ', '.join(choices)))
    return value


def _detection(row):
    """What tells ``row`` apart, in words."""
    if row.detect_api:
        return 'the cluster serves %s %s' % (row.detect_api, row.detect_kind)
    return 'a node carries the annotation %s' % row.detect_node_annotation


def detected_platform(served_apis, node_annotations=None):
    """The platform whose detection the cluster matches: its ``detect_api`` among ``served_apis`` (the API
    group/versions the API server serves) or its ``detect_node_annotation`` among ``node_annotations`` (the
    annotation keys a node carries), else the fallback row (plain Kubernetes): the one marked ``fallback``, wherever
    it stands in the table. A cluster that matches two rows is refused (PlatformError), naming both and why."""
    served = set(served_apis or ())
    carried = set(node_annotations or ())
    matches = [row for row in PLATFORM_TABLE
               if (row.detect_api and row.detect_api in served)
               or (row.detect_node_annotation and row.detect_node_annotation in carried)]
    if len(matches) > 1:
        raise PlatformError('gpuvirt_platform is auto, but the cluster matches the platforms %s: detection cannot tell '
                            'which it is. Set gpuvirt_platform to the one it is.'
                            % ' and '.join('%s (%s)' % (row.name, _detection(row)) for row in matches))
    return matches[0].name if matches else FALLBACK


def resolve_platform(value, mode, served_apis=None, node_annotations=None):
    """The platform name: ``value`` when it names one; ``auto`` in apply mode: what ``served_apis`` (the detect
    APIs the cluster serves) and ``node_annotations`` (the detect annotations its node carries) tell; ``auto`` in
    render mode is refused, naming gpuvirt_platform and its choices."""
    value = _choice(value or 'auto', PLATFORM_CHOICES, 'gpuvirt_platform')
    mode = _choice(mode, MODES, 'gpuvirt_cluster_mode')
    if value != 'auto':
        return value
    if mode == 'render':
        raise PlatformError('render mode reads no cluster, so the platform cannot be detected: set gpuvirt_platform '
                            'to one of %s (auto works in apply mode only).' % ', '.join(PLATFORM_NAMES))
    if served_apis is None:
        raise PlatformError('gpuvirt_platform is auto but the cluster was not asked which APIs it serves.')
    return detected_platform(served_apis, node_annotations)


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

    ``settings``: {mode, render_dir, platform, kubevirt_config, served_apis (apply + auto: list), node_annotations
    (apply + auto: the detect annotations a node carries, list), hco_served (apply + auto: bool), platform_traits
    (gpuvirt_platform_traits: overrides, with_overrides)}. Returns {mode,
    render_dir, platform, kubevirt_config, traits, says} (traits: the platform's row, the overrides over it; says:
    the platform in words, ``describe``).
    """
    settings = settings or {}
    mode = _choice(settings.get('mode') or 'apply', MODES, 'gpuvirt_cluster_mode')
    render_dir = settings.get('render_dir') or ''
    if mode == 'render' and not str(render_dir).strip():
        raise PlatformError('gpuvirt_cluster_mode is render but gpuvirt_render_dir is empty: name the directory '
                            'the manifests are written to.')
    platform = resolve_platform(settings.get('platform'), mode, settings.get('served_apis'),
                                settings.get('node_annotations'))
    config = resolve_kubevirt_config(settings.get('kubevirt_config'), platform, mode, settings.get('hco_served'))
    row = with_overrides(platform, settings.get('platform_traits'))
    return {
        'mode': mode,
        'render_dir': str(render_dir),
        'platform': platform,
        'kubevirt_config': config,
        'traits': row,
        'says': describe(row),
    }
