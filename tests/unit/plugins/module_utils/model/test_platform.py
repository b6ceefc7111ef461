# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform table and the one resolution of the collection-wide cluster settings."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import cluster as cluster_filter
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform

OPENSHIFT_API = 'config.openshift.io/v1'


def test_table_rows():
    # NVIDIA's "NVIDIA GPU Operator with OpenShift Virtualization": the operator from OLM (certified-operators) into
    # nvidia-gpu-operator after the NFD operator; OpenShift Virtualization's HyperConverged owns the KubeVirt CR; the
    # Machine Config Operator owns the kernel command line. NVIDIA's GPU Operator Helm chart (gpu-operator namespace)
    # deploys NFD as its own subchart (nfd.enabled: true in its values.yaml).
    # OpenShift nodes run CRI-O (no containerd paths); the operator's namespace carries the cluster-monitoring label.
    # Kubernetes: containerd where the GPU Operator looks by default (NVIDIA/gpu-operator v26.7.0
    # controllers/object_controls.go DefaultContainerdConfigFile, DefaultContainerdSocketFile).
    openshift = {
        'name': 'openshift', 'gpu_operator_install': 'olm', 'gpu_operator_namespace': 'nvidia-gpu-operator',
        'namespace_labels': {'openshift.io/cluster-monitoring': 'true'}, 'nfd_install': 'olm',
        'kernel_args': 'machineconfig', 'kubevirt_config': 'hco', 'container_runtime': 'cri-o',
        'containerd_config': None, 'containerd_socket': None, 'detect_api': OPENSHIFT_API,
        'detect_kind': 'ClusterVersion', 'fallback': False,
        # the shipped RBAC files: docs/rbac/README.md, one per platform's namespaces and APIs
        'title': 'OpenShift', 'rbac': 'gpuvirt-automation.yml'}
    kubernetes = {
        'name': 'kubernetes', 'gpu_operator_install': 'helm', 'gpu_operator_namespace': 'gpu-operator',
        'namespace_labels': {}, 'nfd_install': 'chart', 'kernel_args': 'host', 'kubevirt_config': 'kubevirt',
        'container_runtime': 'containerd', 'containerd_config': '/etc/containerd/config.toml',
        'containerd_socket': '/run/containerd/containerd.sock', 'detect_api': None, 'detect_kind': None,
        'fallback': True, 'title': 'Kubernetes', 'rbac': 'gpuvirt-automation-kubernetes.yml'}
    # RKE2: NVIDIA's "Installing the NVIDIA GPU Operator" ("Rancher Kubernetes Engine 2") defers to RKE2's "Deploy
    # NVIDIA Operator" (rancher/rke2-docs docs/add-ons/gpu_operators.md): NVIDIA's chart into gpu-operator, the
    # toolkit's CONTAINERD_SOCKET /run/k3s/containerd/containerd.sock and no CONTAINERD_CONFIG (RKE2 adds the nvidia
    # runtimes to the config it regenerates: k3s pkg/agent/containerd/runtimes.go findNvidiaContainerRuntimes);
    # detected by the annotation every RKE2 node carries (k3s pkg/nodeconfig/nodeconfig.go NodeArgsAnnotation =
    # version.Program + ".io/node-args", version.Program=rke2 in rancher/rke2 scripts/version.sh)
    rke2 = dict(kubernetes, name='rke2', containerd_socket='/run/k3s/containerd/containerd.sock',
                detect_node_annotation='rke2.io/node-args', fallback=False, title='RKE2')
    # the cited traits of each row (a new column with its default changes none of them)
    for name, want in (('openshift', openshift), ('kubernetes', kubernetes), ('rke2', rke2)):
        got = platform.traits(name)
        assert dict((k, got[k]) for k in want) == want
    assert platform.traits('no-such-platform') == {}
    assert list(platform.traits()) == list(platform.PLATFORM_NAMES)
    assert platform.PLATFORM_CHOICES == ('auto',) + platform.PLATFORM_NAMES


def test_every_row_has_a_known_kubevirt_config_and_one_row_is_the_fallback():
    assert all(row.kubevirt_config in platform.KUBEVIRT_CONFIGS for row in platform.PLATFORM_TABLE)
    assert [row.name for row in platform.PLATFORM_TABLE if row.fallback] == [platform.FALLBACK]
    assert platform.PLATFORMS[platform.FALLBACK].detect_api is None
    for name, value in platform.derived(platform.PLATFORM_TABLE).items():
        assert getattr(platform, name) == value, name


def test_the_fallback_is_the_marked_row_wherever_it_stands(monkeypatch):
    # a row without detect_api placed before kubernetes does not become the fallback: the flag says which row is
    extra = platform.PLATFORMS['kubernetes'].replace(name='kubernetes-hypothetical', fallback=False)
    names = platform.derived((extra,) + platform.PLATFORM_TABLE)
    for key, value in names.items():
        monkeypatch.setattr(platform, key, value)
    assert platform.detected_platform([]) == 'kubernetes'
    assert platform.detected_platform([OPENSHIFT_API]) == 'openshift'


@pytest.mark.parametrize('rows, match', [
    (lambda k, o: (k.replace(fallback=False), o), r'exactly one fallback row .* has none'),
    (lambda k, o: (k, o.replace(fallback=True)), r'platform openshift: detect_api and detect_kind go together, on a row '
                                                 r'that is not the fallback'),
    (lambda k, o: (k, k.replace(name='k3s')), r'exactly one fallback row .* has kubernetes, k3s'),
    (lambda k, o: (k, o, o), r"platform 'openshift': a name is given once"),
    (lambda k, o: (k, o.replace(containerd_socket='/run/containerd/containerd.sock')),
     r'platform openshift: containerd_socket is .* with container_runtime cri-o'),
    (lambda k, o: (k, o.replace(kernel_args='grub')), r"platform openshift: kernel_args 'grub' is not one of"),
    (lambda k, o: (k.replace(detect_node_annotation='example.com/agent'), o),
     r'platform kubernetes: detect_node_annotation goes on a row that is not the fallback'),
    (lambda k, o: (k, o.replace(detect_node_annotation='example.com/')),
     r"platform openshift: detect_node_annotation: 'example.com/' is not valid; expected a label key"),
    (lambda k, o: (k, o, o.replace(name='okd')),
     r"platforms openshift and okd: the same detect_api 'config.openshift.io/v1' cannot tell them apart"),
    (lambda k, o: (k, k.replace(name='a', fallback=False, detect_node_annotation='example.com/agent'),
                   k.replace(name='b', fallback=False, detect_node_annotation='example.com/agent')),
     r"platforms a and b: the same detect_node_annotation 'example.com/agent' cannot tell them apart"),
])
def test_a_broken_platform_table_is_refused_naming_the_row(rows, match):
    with pytest.raises(platform.PlatformError, match=match):
        platform.derived(rows(platform.PLATFORMS['kubernetes'], platform.PLATFORMS['openshift']))


K3S = {'containerd_config': '/var/lib/rancher/k3s/agent/etc/containerd/config.toml',
       'containerd_socket': '/run/k3s/containerd/containerd.sock'}


def test_an_inventory_overrides_the_containerd_paths():
    # k3s keeps containerd under /var/lib/rancher/k3s and its socket under /run/k3s (NVIDIA/gpu-operator v26.7.0
    # controllers/transforms_test.go gives a k3s node's toolkit these paths)
    got = platform.with_overrides('kubernetes', K3S)
    assert got == dict(platform.traits('kubernetes'), **K3S)
    model = platform.resolve({'mode': 'render', 'render_dir': '/o', 'platform': 'kubernetes', 'platform_traits': K3S})
    assert model['traits'] == got
    assert platform.with_overrides('kubernetes', {}) == platform.with_overrides('kubernetes', None) == \
        platform.traits('kubernetes')
    assert cluster_filter.cluster_platform('kubernetes', K3S) == got


@pytest.mark.parametrize('name, overrides, match', [
    ('kubernetes', {'containerd_sock': '/run/x.sock'}, r'gpuvirt_platform_traits\.containerd_sock: no platform has '
                                                       r'this trait; the traits that may be overridden are '
                                                       r'containerd_config, containerd_socket'),
    ('kubernetes', {'gpu_operator_install': 'olm'}, r'gpu_operator_install: this trait is what the platform '
                                                    r'kubernetes is.*gpuvirt_platform'),
    ('kubernetes', {'containerd_socket': 'run/x.sock'}, r"containerd_socket is 'run/x.sock': give an absolute path"),
    ('kubernetes', {'containerd_socket': '/run/../etc/shadow'}, r"containerd_socket is '/run/../etc/shadow'"),
    ('kubernetes', {'containerd_config': '/etc/containerd/config.toml; rm -rf /'}, r'containerd_config is'),
    ('kubernetes', {'containerd_config': ['/etc/x']}, r"containerd_config is \['/etc/x'\]"),
    ('kubernetes', ['containerd_config'], r'gpuvirt_platform_traits is list, not a mapping'),
    ('openshift', K3S, r'containerd_config: the nodes of openshift run cri-o, not containerd; leave it out'),
])
def test_a_bad_override_is_refused_naming_the_key_and_the_fix(name, overrides, match):
    with pytest.raises(platform.PlatformError, match=match):
        platform.with_overrides(name, overrides)
    with pytest.raises(AnsibleFilterError, match=r'^cluster_platform: (gpuvirt_platform_traits\.)?' + match):
        cluster_filter.cluster_platform({'mode': 'render', 'render_dir': '/o', 'platform': name,
                                         'platform_traits': overrides})


@pytest.mark.parametrize('served, want', [([OPENSHIFT_API], 'openshift'), ([], 'kubernetes'),
                                          (['example.com/v1'], 'kubernetes')])
def test_auto_in_apply_mode_is_detected(served, want):
    assert platform.resolve_platform('auto', 'apply', served) == want


@pytest.mark.parametrize('annotations, want', [
    (['rke2.io/node-args'], 'rke2'),
    # an annotation no row detects by (another program's agent, version.Program=example): the fallback
    (['example.io/node-args'], 'kubernetes'),
    ([], 'kubernetes'),
])
def test_auto_tells_rke2_apart_by_its_node_annotation(annotations, want):
    assert platform.resolve_platform('auto', 'apply', [], annotations) == want
    got = platform.resolve({'mode': 'apply', 'platform': 'auto', 'served_apis': [], 'node_annotations': annotations,
                            'hco_served': False})
    assert got['platform'] == want and got['traits'] == platform.traits(want)


def test_a_k3s_cluster_is_not_taken_for_rke2():
    # k3s annotates its nodes k3s.io/node-args (the same agent, version.Program=k3s), never rke2.io/node-args: it is
    # whatever row detects k3s's own annotation, or the fallback where none does, never RKE2
    got = platform.resolve_platform('auto', 'apply', [], ['k3s.io/node-args'])
    assert got != 'rke2'
    assert got == next((row.name for row in platform.PLATFORM_TABLE
                        if row.detect_node_annotation == 'k3s.io/node-args'), platform.FALLBACK)


def test_an_openshift_cluster_whose_nodes_carry_rke2_s_annotation_is_refused_naming_both():
    with pytest.raises(platform.PlatformError, match=r'matches the platforms openshift \(the cluster serves '
                                                     r'config.openshift.io/v1 ClusterVersion\) and rke2 \(a node '
                                                     r'carries the annotation rke2.io/node-args\)'):
        platform.resolve_platform('auto', 'apply', [OPENSHIFT_API], ['rke2.io/node-args'])


# A platform told apart by its nodes (detect_node_annotation), as a hypothetical row: the table's real rows are
# tested by every-row properties and by their own tests.
NODE_ROW = dict(name='agent-hypothetical', fallback=False, detect_node_annotation='agent.example.com/node-args')


def use_table(monkeypatch, table):
    for key, value in platform.derived(table).items():
        monkeypatch.setattr(platform, key, value)


def test_a_node_annotation_detects_its_row_and_two_matching_rows_are_refused_naming_both(monkeypatch):
    use_table(monkeypatch, platform.PLATFORM_TABLE + (platform.PLATFORMS['kubernetes'].replace(**NODE_ROW),))
    annotation = NODE_ROW['detect_node_annotation']
    assert platform.detected_platform([], [annotation]) == 'agent-hypothetical'
    assert platform.detected_platform([], ['other.example.com/node-args']) == 'kubernetes'
    assert platform.detected_platform([], None) == 'kubernetes'
    assert platform.detected_platform([OPENSHIFT_API], []) == 'openshift'
    # through the settings the role passes (apply mode, auto)
    got = platform.resolve({'mode': 'apply', 'platform': 'auto', 'served_apis': [], 'node_annotations': [annotation],
                            'hco_served': False})
    assert got['platform'] == 'agent-hypothetical' and got['traits']['detect_node_annotation'] == annotation
    # a named platform wins over what the nodes show
    assert platform.resolve_platform('kubernetes', 'apply', [], [annotation]) == 'kubernetes'
    # a cluster that matches two rows: neither is guessed
    with pytest.raises(platform.PlatformError) as exc:
        platform.detected_platform([OPENSHIFT_API], [annotation])
    assert str(exc.value) == (
        'gpuvirt_platform is auto, but the cluster matches the platforms openshift (the cluster serves '
        'config.openshift.io/v1 ClusterVersion) and agent-hypothetical (a node carries the annotation '
        'agent.example.com/node-args): detection cannot tell which it is. Set gpuvirt_platform to the one it is.')
    with pytest.raises(AnsibleFilterError, match=r'^cluster_platform: gpuvirt_platform is auto, but the cluster '
                                                 r'matches the platforms openshift .* and agent-hypothetical'):
        cluster_filter.cluster_platform({'mode': 'apply', 'platform': 'auto', 'served_apis': [OPENSHIFT_API],
                                         'node_annotations': [annotation]})


@pytest.mark.parametrize('given', ['openshift', 'kubernetes'])
def test_a_named_platform_is_taken_in_both_modes(given):
    assert platform.resolve_platform(given, 'render') == given
    # a given name wins over what the cluster serves
    assert platform.resolve_platform(given, 'apply', [OPENSHIFT_API] if given == 'kubernetes' else []) == given


def test_auto_in_render_mode_is_refused_naming_the_variable_and_its_choices():
    with pytest.raises(platform.PlatformError, match='set gpuvirt_platform to one of %s' % re.escape(', '.join(platform.PLATFORM_NAMES))):
        platform.resolve_platform('auto', 'render')
    with pytest.raises(platform.PlatformError, match=r'not asked'):
        platform.resolve_platform('auto', 'apply')


@pytest.mark.parametrize('bad', ['OpenShift', 'okd', 'true', 'hco'])
def test_unknown_platform_is_refused(bad):
    with pytest.raises(platform.PlatformError, match="gpuvirt_platform is '%s': use one of %s" % (bad, re.escape(', '.join(platform.PLATFORM_CHOICES)))):
        platform.resolve_platform(bad, 'render')


def test_kubevirt_config():
    # apply mode: HCO's CRD served -> HyperConverged owns KubeVirt's configuration (HCO reconciles the KubeVirt CR
    # it creates, so a change made there is reverted: kubevirt/hyperconverged-cluster-operator docs/cluster-configuration.md)
    assert platform.resolve_kubevirt_config('auto', 'kubernetes', 'apply', hco_served=True) == 'hco'
    assert platform.resolve_kubevirt_config('auto', 'openshift', 'apply', hco_served=False) == 'kubevirt'
    # render mode: the platform's default
    assert platform.resolve_kubevirt_config('auto', 'openshift', 'render') == 'hco'
    assert platform.resolve_kubevirt_config('', 'kubernetes', 'render') == 'kubevirt'
    # given: taken as is
    assert platform.resolve_kubevirt_config('kubevirt', 'openshift', 'apply', hco_served=True) == 'kubevirt'
    with pytest.raises(platform.PlatformError, match=r"gpuvirt_kubevirt_config is 'cr': use one of auto, hco, kubevirt"):
        platform.resolve_kubevirt_config('cr', 'openshift', 'render')


def test_resolve_builds_the_one_fact():
    got = platform.resolve({'mode': 'render', 'render_dir': '/out', 'platform': 'openshift', 'kubevirt_config': 'auto'})
    assert got == {'mode': 'render', 'render_dir': '/out', 'platform': 'openshift', 'kubevirt_config': 'hco',
                   'traits': platform.traits('openshift'), 'says': 'OpenShift (OLM, HyperConverged, MachineConfig)'}
    got = platform.resolve({'mode': 'apply', 'platform': 'auto', 'kubevirt_config': 'auto',
                            'served_apis': [], 'hco_served': False})
    assert (got['platform'], got['kubevirt_config'], got['traits']['gpu_operator_install']) == ('kubernetes', 'kubevirt', 'helm')


def test_resolve_refuses_bad_modes_and_a_render_without_a_directory():
    with pytest.raises(platform.PlatformError, match=r"gpuvirt_cluster_mode is 'aply'"):
        platform.resolve({'mode': 'aply', 'platform': 'openshift'})
    with pytest.raises(platform.PlatformError, match=r'gpuvirt_render_dir is empty'):
        platform.resolve({'mode': 'render', 'render_dir': ' ', 'platform': 'openshift'})


def test_filter():
    assert cluster_filter.cluster_platform(None) == platform.traits()
    assert cluster_filter.cluster_platform('kubernetes')['gpu_operator_install'] == 'helm'
    assert cluster_filter.cluster_platform({'mode': 'render', 'render_dir': '/o', 'platform': 'kubernetes'})['kubevirt_config'] == 'kubevirt'
    with pytest.raises(AnsibleFilterError, match=r'cluster_platform: render mode reads no cluster.*gpuvirt_platform'):
        cluster_filter.cluster_platform({'mode': 'render', 'render_dir': '/o', 'platform': 'auto'})
    with pytest.raises(AnsibleFilterError, match=r'expected the cluster settings'):
        cluster_filter.cluster_platform(['openshift'])
    assert set(cluster_filter.FilterModule().filters()) == {'cluster_platform', 'kubevirt_gate'}


def test_describe_says_the_title_and_what_the_run_does_there():
    assert platform.describe(platform.traits('openshift')) == 'OpenShift (OLM, HyperConverged, MachineConfig)'
    assert platform.describe(platform.traits('kubernetes')) == 'Kubernetes (Helm, KubeVirt CR, host kernel arguments)'
    assert platform.describe(platform.traits('rke2')) == 'RKE2 (Helm, KubeVirt CR, host kernel arguments)'
    # the resolved fact says the same, with the row's own KubeVirt CR whatever the run's kubevirt_config
    got = platform.resolve({'mode': 'render', 'render_dir': '/o', 'platform': 'rke2', 'kubevirt_config': 'hco'})
    assert got['says'] == 'RKE2 (Helm, KubeVirt CR, host kernel arguments)'


@pytest.mark.parametrize('rbac', ['gpuvirt-automation.yml', 'gpuvirt-automation-k3s.yml',
                                  'gpuvirt-automation-a-b-c-d.yml'])
def test_a_row_names_its_rbac_file_under_docs_rbac(rbac):
    row = platform.PLATFORMS['rke2'].replace(rbac=rbac)
    table = [r for r in platform.PLATFORM_TABLE if r.name != 'rke2'] + [row]
    assert platform.check_table(table)[-1].rbac == rbac


@pytest.mark.parametrize('rbac', ['', None, '../gpuvirt-automation.yml', 'gpuvirt-automation.yaml', 'other.yml',
                                  'gpuvirt-automation-a-b-c-d-e.yml', 'gpuvirt-automation-K3S.yml',
                                  'gpuvirt-automation.yml\n', 'docs/rbac/gpuvirt-automation.yml'])
def test_a_row_whose_rbac_is_no_file_under_docs_rbac_is_refused_naming_it(rbac):
    row = platform.PLATFORMS['rke2'].replace(rbac=rbac)
    table = [r for r in platform.PLATFORM_TABLE if r.name != 'rke2'] + [row]
    with pytest.raises(platform.PlatformError, match=r'platform rke2: rbac .*docs/rbac/'):
        platform.check_table(table)


@pytest.mark.parametrize('title', ['', None, ' RKE2', 'R' * 33, 'RKE2\n', 'RKE<2>', 3])
def test_a_row_without_a_plain_title_is_refused_naming_it(title):
    row = platform.PLATFORMS['rke2'].replace(title=title)
    table = [r for r in platform.PLATFORM_TABLE if r.name != 'rke2'] + [row]
    with pytest.raises(platform.PlatformError, match=r'platform rke2: title '):
        platform.check_table(table)
    assert platform.check_table([r for r in platform.PLATFORM_TABLE if r.name != 'rke2']
                                + [row.replace(title='R' * 32)])


def test_every_row_names_an_rbac_file_that_is_shipped():
    rbac = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', '..', 'docs', 'rbac')
    for row in platform.PLATFORM_TABLE:
        assert os.path.isfile(os.path.join(rbac, row.rbac)), (row.name, row.rbac)
