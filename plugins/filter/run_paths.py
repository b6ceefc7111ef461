# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inventory_path: a user's relative path resolved against the inventory directory (module_utils/model/run_paths.py).
Documentation lives in the sidecar inventory_path.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

run_paths = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.run_paths')


def inventory_path(path, sources, name='path'):
    try:
        return run_paths.user_path(path, sources, name)
    except run_paths.PathError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {'inventory_path': inventory_path}
