# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""strict_bool and checked: the validators of module_utils/model/validators.py for values already in a play (role
inputs from the inventory, a survey or -e). Documentation lives in the sidecars strict_bool.yml and checked.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule, late

fleet = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.fleet')
validators = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators')
upgrade_operator = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.upgrade_operator')

GRAMMARS = {
    'dns1123_label': late(validators, 'dns1123_label'),
    'dns1123_subdomain': late(validators, 'dns1123_subdomain'),
    'label_value': late(validators, 'label_value'),
    'helm_release_name': late(validators, 'helm_release_name'),
    'semver': late(validators, 'semver'),
    'k8s_uid': late(validators, 'k8s_uid'),
    'helm_binary': late(validators, 'helm_binary'),
    'repo_url': late(validators, 'repo_url'),
    'chart_ref': late(validators, 'chart_ref'),
    'oci_registry': late(validators, 'oci_registry'),
    'oci_repository': late(validators, 'oci_repository'),
    'oci_reference': late(validators, 'oci_reference'),
    'gpu_hosts_pattern': late(fleet, 'gpu_hosts_pattern'),
    'positive_int': late(validators, 'positive_int'),
    'percentage': late(validators, 'percentage'),
    'reboot_message': late(validators, 'reboot_message'),
    'pem_certificates': late(validators, 'pem_certificates'),
    'gpu_operator_crds': late(upgrade_operator, 'checked_crds'),
}


def strict_bool(value, name):
    try:
        return validators.to_bool(value, name)
    except validators.ValidationError as e:
        raise AnsibleFilterError(str(e))


def checked(value, grammar, name):
    if grammar not in GRAMMARS:
        raise AnsibleFilterError('checked: unknown grammar %r; use one of %s' % (grammar, ', '.join(sorted(GRAMMARS))))
    try:
        return GRAMMARS[grammar](value, name)
    except validators.ValidationError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {'strict_bool': strict_bool, 'checked': checked}
