# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_holds_secret: whether a list of Kubernetes objects may carry a credential (module_utils.model.credentials).
Documentation lives in the sidecar k8s_holds_secret.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

_credentials = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.credentials')


def k8s_holds_secret(objects):
    return _credentials.any_holds_credential(objects)


class FilterModule(object):
    def filters(self):
        return {'k8s_holds_secret': k8s_holds_secret}
