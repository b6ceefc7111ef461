# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the upgrade phase: one read-only record with named, typed fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/upgrade tasks/main.yml builds one dict from the
inventory variables, the fleet view and the platform row (``gpuvirt_cluster``); the module upgrade_plan takes it as
its one option ``settings``, whose suboptions are ``argument_spec()`` (documented by the doc fragment
gpuvirt.provision.settings.upgrade); ``build`` turns it into an ``UpgradeSettings`` record; the builders
(manifests/upgrade_plan.py ``plan``, upgrade_operator.py ``olm_step`` and ``helm_step``) read its fields by name.
What the cluster holds (pods, the CSV, the chart's text) is not a setting: those stay arguments of their own.

``FIELDS`` is the one list of the settings: name, type, default, the choices or the list's element type, and the
inventory variable it comes from (named in every refusal); model/settings_record.py makes the record, the argument
spec and the checks of each field from it, as for every phase. A record refuses a bad value when it is made, naming
that variable: every record a builder receives has been checked. Adding a setting: a field here, its entry in the
doc fragment (plugins/doc_fragments/settings.py, its UPGRADE), its key in the role's dict, and the read in the builder;
the module is not touched, and tests/unit/plugins/module_utils/model/test_upgrade_settings.py fails while the
fields, the argument spec and the documentation disagree.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform, settings_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators import ValidationError

# what happens to a GPU VM on a node to roll (upgrade_vm_policy, upgrade_vm_policies)
POLICIES = ('wait', 'stop', 'refuse')
# a key of upgrade_vm_policies: <namespace>/<vmi name>
VM_KEY_RE = re.compile(r'[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?')

_KUBERNETES = platform.PLATFORMS[platform.FALLBACK]

FIELDS = (
    Field(name='vm_policy', type='str', default='wait', choices=POLICIES, variable='upgrade_vm_policy'),
    Field(name='vm_policies', type='dict', default={}, variable='upgrade_vm_policies'),
    Field(name='serial', type='int', default=1, variable='upgrade_serial'),
    # the target versions; empty leaves the component as it runs
    Field(name='gpu_operator_version', type='str', default='', variable='upgrade_gpu_operator_version'),
    Field(name='vgpu_manager_version', type='str', default='', variable='vgpu_manager_image_version'),
    Field(name='kubevirt_version', type='str', default='', variable='upgrade_kubevirt_version'),
    Field(name='guest_driver_branch', type='str', default='', variable='upgrade_guest_driver_branch'),
    Field(name='supports', type='dict', default={}, variable='upgrade_gpu_operator_supports'),
    Field(name='os_tags', type='list', elements='str', default=[], variable='gpu_operator_os_tags'),
    # None: the registry's tags are not checked
    Field(name='image_tags', type='list', elements='str', default=None, variable='upgrade_image_tags'),
    Field(name='revalidate_daemonsets', type='list', elements='str', default=[],
          variable='upgrade_revalidate_daemonsets'),
    # the fleet view's vendor-specific VFIO vGPU nodes and how the roll gives them their VF profiles back
    Field(name='vendor_vfio', type='bool', default=False, variable='vendor_vfio (the fleet has vendor-VFIO hosts)'),
    Field(name='vf_nodes', type='list', elements='str', default=[], variable='upgrade_inventory_vf_nodes'),
    Field(name='vf_reapply', type='bool', default=False, variable='upgrade_vgpu_vf_reapply'),
    Field(name='vf_hosts', type='dict', default={}, variable='upgrade_inventory_fleet'),
    Field(name='vf_configs', type='list', elements='str', default=[], variable='gpu_operator_vgpu_configs'),
    # the platform row's traits (gpuvirt_cluster), Kubernetes' unless given
    Field(name='gpu_operator_install', type='str', default=_KUBERNETES.gpu_operator_install,
          choices=platform.COLUMN_CHOICES['gpu_operator_install'],
          variable='gpuvirt_cluster.traits.gpu_operator_install'),
    Field(name='gpu_operator_namespace', type='str', default=_KUBERNETES.gpu_operator_namespace,
          variable='gpu_operator_namespace'),
    Field(name='kernel_args', type='str', default=_KUBERNETES.kernel_args,
          choices=platform.COLUMN_CHOICES['kernel_args'], variable='gpuvirt_cluster.traits.kernel_args'),
    Field(name='kubevirt_config', type='str', default=_KUBERNETES.kubevirt_config, choices=platform.KUBEVIRT_CONFIGS,
          variable='gpuvirt_cluster.kubevirt_config'),
    # the operator's Helm release as playbooks/operator.yml installs it (Helm platforms)
    Field(name='helm_release_name', type='str', default='', variable='gpu_operator_release_name'),
    Field(name='helm_chart_ref', type='str', default='', variable='gpu_operator_chart_ref'),
    Field(name='helm_chart_version', type='str', default='', variable='gpu_operator_chart_version'),
)


def _check_vm_policies(overrides):
    for key, value in overrides.items():
        if not (isinstance(key, str) and VM_KEY_RE.fullmatch(key)) or value not in POLICIES:
            raise ValidationError("upgrade_vm_policies: %r: %r must map <namespace>/<vm name> to one of %s"
                                  % (key, value, ', '.join(POLICIES)))


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made (model/settings_record.py),
    then the per-VM policies."""
    PHASE = 'the upgrade settings'
    __slots__ = ()

    def _check(self):
        _check_vm_policies(self.vm_policies)

    def targets(self):
        """The target versions as the version table takes them: ``{gpu_operator, vgpu_manager, kubevirt}``."""
        return {'gpu_operator': self.gpu_operator_version, 'vgpu_manager': self.vgpu_manager_version,
                'kubevirt': self.kubevirt_version}


def record_class(fields):
    """The record class of ``fields`` (FIELDS; a test adds one at run time the same way)."""
    return settings_record.record_class(
        'UpgradeSettings', _Settings, fields,
        'The upgrade phase\'s settings (FIELDS), checked when made: a bad value raises ValidationError naming its '
        'inventory variable. A field given as None takes its default (a suboption the module was not given).')


UpgradeSettings = record_class(FIELDS)


def build(value, name='settings'):
    """The one way to the record: ``value`` is a record (returned as it is: it was checked when made) or the plain
    dict the module's ``settings`` option holds (None: every default). ValidationError names the bad value."""
    return settings_record.build(UpgradeSettings, value, name)


def argument_spec():
    """The suboptions of the module option ``settings`` (AnsibleModule's argument spec form), from the record's
    fields."""
    return settings_record.argument_spec(UpgradeSettings.FIELDS)
