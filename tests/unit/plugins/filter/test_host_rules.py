# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host_rules filters: thin carriers of the module_utils rules into a play, failing as filters do."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuvirt.provision.plugins.filter import host_rules
from ansible_collections.gpuvirt.provision.plugins.module_utils import kernel_cmdline


def test_the_filters_are_registered():
    assert set(host_rules.FilterModule().filters()) >= {'iommu_kernel_args', 'modprobe_blacklist'}


@pytest.mark.parametrize('vendor,passthrough,expected', [
    ('intel', True, ['intel_iommu=on', 'iommu=pt']),
    ('amd', True, ['amd_iommu=on', 'iommu=pt']),
    ('intel', False, ['intel_iommu=on']),
    ('none', True, []),
    ('none', False, []),
])
def test_iommu_kernel_args(vendor, passthrough, expected):
    assert host_rules.iommu_kernel_args(vendor, passthrough) == expected
    assert expected == kernel_cmdline.host_iommu_args(vendor, passthrough)


def test_iommu_kernel_args_passthrough_defaults_to_true():
    assert host_rules.iommu_kernel_args('amd') == ['amd_iommu=on', 'iommu=pt']


@pytest.mark.parametrize('vendor,passthrough', [('arm', True), ('unknown', True), ('intel', 'false')])
def test_iommu_kernel_args_fails_as_a_filter(vendor, passthrough):
    with pytest.raises(AnsibleFilterError, match='iommu_kernel_args: '):
        host_rules.iommu_kernel_args(vendor, passthrough)


def test_modprobe_blacklist():
    assert host_rules.modprobe_blacklist('nouveau') == 'blacklist nouveau\noptions nouveau modeset=0\n'
    assert host_rules.modprobe_blacklist('nouveau', 'who') == '# who\nblacklist nouveau\noptions nouveau modeset=0\n'


@pytest.mark.parametrize('module,header', [('no uveau', None), ('nouveau', 'a\nb')])
def test_modprobe_blacklist_fails_as_a_filter(module, header):
    with pytest.raises(AnsibleFilterError, match='modprobe_blacklist: '):
        host_rules.modprobe_blacklist(module, header)
