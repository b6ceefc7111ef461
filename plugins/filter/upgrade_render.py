# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""upgrade_render_preflight and upgrade_render_recipe: playbooks/upgrade.yml in render mode
(module_utils.manifests.upgrade_render). Documentation lives in the sidecars upgrade_render_preflight.yml and
upgrade_render_recipe.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

ur = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.upgrade_render')
common = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common')


def upgrade_render_preflight(target, install, **kwargs):
    try:
        return ur.preflight(install, target, **kwargs)
    except common.ManifestError as exc:
        raise AnsibleFilterError(str(exc))


def upgrade_render_recipe(target, install, namespace, **kwargs):
    try:
        ur.check_recipe_inputs(install, kwargs.get('kubevirt_config', ''))
    except common.ManifestError as exc:
        raise AnsibleFilterError(str(exc))
    return ur.recipe(install, target, namespace, **kwargs)


class FilterModule(object):
    def filters(self):
        return {'upgrade_render_preflight': upgrade_render_preflight,
                'upgrade_render_recipe': upgrade_render_recipe}
