# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster_platform filter's three inputs, as the roles call it: a platform name alone, a platform name with the
inventory's gpuvirt_platform_traits, and the collection-wide cluster settings (a dict) to resolve."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import cluster
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform

SITE = {'containerd_config': '/etc/k3s/containerd/config.toml'}


def test_a_platform_name_alone_is_its_row():
    assert cluster.cluster_platform('kubernetes') == platform.traits('kubernetes')
    assert cluster.cluster_platform('kubernetes')['containerd_config'] == '/etc/containerd/config.toml'
    # an unknown name is no row, with or without overrides (the overrides are not even looked at)
    assert cluster.cluster_platform('no-such-platform') == {}
    assert cluster.cluster_platform('no-such-platform', {'not': 'looked at'}) == {}


def test_overrides_go_over_the_named_platform():
    traits = cluster.cluster_platform('kubernetes', SITE)
    assert traits == dict(platform.traits('kubernetes'), **SITE)
    assert traits['containerd_config'] == '/etc/k3s/containerd/config.toml', traits
    # and a bad override is refused, named, through the filter's error
    with pytest.raises(AnsibleFilterError, match=r'cluster_platform: gpuvirt_platform_traits\.container_runtime'):
        cluster.cluster_platform('kubernetes', {'container_runtime': 'cri-o'})


def test_the_cluster_settings_are_resolved():
    settings = {'mode': 'render', 'render_dir': '/srv/render', 'platform': 'kubernetes', 'platform_traits': SITE}
    resolved = cluster.cluster_platform(settings)
    assert resolved == platform.resolve(settings)
    assert resolved['platform'] == 'kubernetes' and resolved['traits']['containerd_config'] == SITE['containerd_config']
    # anything else (no name, no settings) is refused, naming what the filter takes
    for value in (42, ['kubernetes']):
        with pytest.raises(AnsibleFilterError, match='expected the cluster settings'):
            cluster.cluster_platform(value)
