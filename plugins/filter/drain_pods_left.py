# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""drain_pods_left: the pods that keep a node's drain from being finished (module_utils.drain).
Documentation lives in the sidecar drain_pods_left.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

_drain = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.drain')


def drain_pods_left(pods):
    return _drain.pods_left(pods)


class FilterModule(object):
    def filters(self):
        return {'drain_pods_left': drain_pods_left}
