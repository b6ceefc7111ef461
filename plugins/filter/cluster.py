# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_platform: the platform table and the one resolution of the collection-wide cluster settings
(module_utils/model/platform.py). Documentation lives in the sidecar cluster_platform.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.collections import is_string
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

kv_gate = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.kubevirt_gate')
platform = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.platform')


def cluster_platform(value=None, overrides=None):
    if value is None:
        return platform.traits()
    if is_string(value):
        if overrides is None or not platform.traits(value):
            return platform.traits(value)
        try:
            return platform.with_overrides(value, overrides)
        except platform.PlatformError as exc:
            raise AnsibleFilterError('cluster_platform: %s' % exc)
    if not isinstance(value, dict):
        raise AnsibleFilterError('cluster_platform: expected the cluster settings (a dict), a platform name or none, '
                                 'got %s' % type(value).__name__)
    try:
        return platform.resolve(value)
    except platform.PlatformError as exc:
        raise AnsibleFilterError('cluster_platform: %s' % exc)


def kubevirt_gate(hosts, observed=None, kubevirt_config=None, declared=None):
    """The KubeVirt version gate (plugins/module_utils/model/kubevirt_gate.py)."""
    try:
        return kv_gate.check(hosts, observed, kubevirt_config, declared)
    except kv_gate.KubeVirtGateError as exc:
        raise AnsibleFilterError('kubevirt_gate: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'cluster_platform': cluster_platform, 'kubevirt_gate': kubevirt_gate}
