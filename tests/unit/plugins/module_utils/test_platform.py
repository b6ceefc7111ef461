# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform table and the one resolution of the collection-wide cluster settings."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import cluster as cluster_filter
from ansible_collections.gpuvirt.provision.plugins.module_utils import platform

OPENSHIFT_API = 'config.openshift.io/v1'


def test_table_rows():
    # NVIDIA's "NVIDIA GPU Operator with OpenShift Virtualization": the operator from OLM (certified-operators) into
    # nvidia-gpu-operator after the NFD operator; OpenShift Virtualization's HyperConverged owns the KubeVirt CR; the
    # Machine Config Operator owns the kernel command line. NVIDIA's GPU Operator Helm chart (gpu-operator namespace)
    # deploys NFD as its own subchart (nfd.enabled: true in its values.yaml).
    assert platform.traits('openshift') == {
        'name': 'openshift', 'gpu_operator_install': 'olm', 'gpu_operator_namespace': 'nvidia-gpu-operator',
        'nfd_install': 'olm', 'kernel_args': 'machineconfig', 'kubevirt_config': 'hco', 'detect_api': OPENSHIFT_API,
        'detect_kind': 'ClusterVersion'}
    assert platform.traits('kubernetes') == {
        'name': 'kubernetes', 'gpu_operator_install': 'helm', 'gpu_operator_namespace': 'gpu-operator',
        'nfd_install': 'chart', 'kernel_args': 'host', 'kubevirt_config': 'kubevirt', 'detect_api': None, 'detect_kind': None}
    assert platform.traits('rke2') == {}
    assert list(platform.traits()) == ['openshift', 'kubernetes']
    assert platform.PLATFORM_CHOICES == ('auto', 'openshift', 'kubernetes')


def test_every_row_has_a_known_kubevirt_config_and_one_row_is_the_fallback():
    assert all(row.kubevirt_config in platform.KUBEVIRT_CONFIGS for row in platform.PLATFORM_TABLE)
    assert [row.name for row in platform.PLATFORM_TABLE if row.detect_api is None] == ['kubernetes']


@pytest.mark.parametrize('served, want', [([OPENSHIFT_API], 'openshift'), ([], 'kubernetes'),
                                          (['example.com/v1'], 'kubernetes')])
def test_auto_in_apply_mode_is_detected(served, want):
    assert platform.resolve_platform('auto', 'apply', served) == want


@pytest.mark.parametrize('given', ['openshift', 'kubernetes'])
def test_a_named_platform_is_taken_in_both_modes(given):
    assert platform.resolve_platform(given, 'render') == given
    # a given name wins over what the cluster serves
    assert platform.resolve_platform(given, 'apply', [OPENSHIFT_API] if given == 'kubernetes' else []) == given


def test_auto_in_render_mode_is_refused_naming_the_variable_and_its_choices():
    with pytest.raises(platform.PlatformError, match=r'set gpuvirt_platform to one of openshift, kubernetes'):
        platform.resolve_platform('auto', 'render')
    with pytest.raises(platform.PlatformError, match=r'not asked'):
        platform.resolve_platform('auto', 'apply')


@pytest.mark.parametrize('bad', ['OpenShift', 'okd', 'true', 'hco'])
def test_unknown_platform_is_refused(bad):
    with pytest.raises(platform.PlatformError, match=r"gpuvirt_platform is '%s': use one of auto, openshift, kubernetes" % bad):
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
                   'traits': platform.traits('openshift')}
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
    assert set(cluster_filter.FilterModule().filters()) == {'cluster_platform'}
