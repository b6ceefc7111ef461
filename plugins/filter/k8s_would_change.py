# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_would_change: whether a dry-run apply result differs from the stored object; k8s_preview_changes: the
previews whose object an apply would change (module_utils.k8s_compare). Documentation lives in the sidecars
k8s_would_change.yml and k8s_preview_changes.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

_k8s_compare = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_compare')


def k8s_would_change(dry_run, current=None):
    return _k8s_compare.would_change(dry_run, current)


def k8s_preview_changes(previews, stored):
    return _k8s_compare.preview_changes(previews, stored)


class FilterModule(object):
    def filters(self):
        return {'k8s_would_change': k8s_would_change, 'k8s_preview_changes': k8s_preview_changes}
