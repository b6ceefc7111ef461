# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the GPU Operator phase: one read-only record with named, typed fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/gpu_operator tasks/main.yml builds one dict from
the inventory variables, the fleet view (the GPU hosts, the DRA nodes, the OS tags) and the platform row
(``gpuvirt_cluster``); the module gpu_operator_manifests takes it as its option ``settings``, whose suboptions are
``argument_spec()`` (documented by the doc fragment gpuvirt.provision.settings.gpu_operator), in both of the role's
calls (tasks/main.yml, and tasks/openshift.yml once the CSV is installed); ``build`` turns it into a
``GpuOperatorSettings`` record; the builders (gpu_operator_install.py ``build``, ``olm``, ``helm``) read its
fields by name. What the cluster or a file holds (the PackageManifest, the CSV's alm-examples and where they come
from, its relatedImages and release, the chart's values.yaml) is not a setting: those stay arguments of their own.

``FIELDS`` is the one list (model/settings_record.py makes the record, the argument spec and each field's check
from it). A record refuses a bad value when it is made, naming its variable - each field alone, then the checks
across fields (``_check``: the platform's traits, the vGPU Manager image and its pull secret, the registry login,
the OS tags and the DRA fleet, the workload, the upgrade policy, the namespace), with the builders' own sentences
(gpu_operator.py, pull_secret.py, upgrade_policy.py): every record a builder receives has been checked. Adding a
setting: a field here, its entry in the doc fragment (plugins/doc_fragments/settings.py, its GPU_OPERATOR), its key in
the role's dict (``__gpu_operator_settings``), and the read in the builder; the module is not touched.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, mig, platform, settings_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import pull_secret as ps
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_policy as upol


def _workload(value):
    gop.check_workload(default_workload=value)
    return value


def _sandbox_mode(value):
    gop.check_workload(mode=value)
    return value


FIELDS = (
    # the platform row (gpuvirt_cluster): what is built follows its traits, never the platform's name
    # the platform table's names when asked (a row added at run time counts)
    Field(name='platform', type='str', default=platform.FALLBACK, choices=lambda: platform.PLATFORM_NAMES,
          variable='gpuvirt_cluster.platform'),
    Field(name='platform_traits', type='dict', variable='gpuvirt_cluster.traits'),
    Field(name='namespace', type='str', variable='gpu_operator_namespace'),
    # the operands (ClusterPolicy spec / Helm values)
    Field(name='sandbox_enabled', type='bool', default=True, variable='gpu_operator_sandbox_enabled'),
    Field(name='default_workload', type='str', default='container', choices=gop.WORKLOADS,
          variable='gpu_operator_default_workload', check=_workload),
    Field(name='sandbox_mode', type='str', default='kubevirt', choices=gop.MODES, variable='gpu_operator_sandbox_mode',
          check=_sandbox_mode),
    Field(name='vgpu_manager', type='dict', variable='gpu_operator_vgpu_manager'),
    Field(name='vgpu_manager_image_version', type='str', variable='vgpu_manager_image_version'),
    Field(name='vfio_manager', type='bool', default=True, variable='gpu_operator_vfio_manager'),
    Field(name='sandbox_device_plugin', type='bool', default=True, variable='gpu_operator_sandbox_device_plugin'),
    Field(name='pull_secret_name', type='str', variable='gpu_operator_pull_secret_name'),
    Field(name='registry_login', type='dict', variable='gpu_operator_pull_secret'),
    Field(name='registry_public', type='bool', default=False, variable='gpu_operator_registry_public'),
    Field(name='vgpu_configs', type='dict', variable='gpu_operator_vgpu_configs'),
    Field(name='vgpu_config_default', type='str', default='default', variable='gpu_operator_vgpu_config_default'),
    Field(name='vgpu_configmap_name', type='str', default='gpuvirt-vgpu-devices-config',
          variable='gpu_operator_vgpu_configmap_name'),
    Field(name='upgrade_policy', type='dict', variable='gpu_operator_upgrade_policy'),
    Field(name='daemonsets_update_strategy', type='str', choices=upol.UPDATE_STRATEGIES,
          variable='gpu_operator_daemonsets_update_strategy'),
    # the device plugin's MIG strategy, written (with the MIG manager on) only when the fleet has a MIG pool's host
    Field(name='mig_strategy', type='str', default=mig.DEFAULT_STRATEGY, choices=mig.STRATEGIES,
          variable='gpu_operator_mig_strategy'),
    # the fleet view
    Field(name='hosts', type='list', elements='dict', default=[], variable='gpu_operator_hosts'),
    Field(name='dra_nodes', type='list', elements='str', default=[], variable='gpu_operator_dra_nodes'),
    Field(name='os_tags', type='dict', default={}, variable='gpu_operator_os_tags'),
    Field(name='dra_stack', type='str', default='auto', choices=('auto',) + gc.STACKS, variable='gpu_operator_dra_stack'),
    Field(name='dra_driver_version', type='str', variable='gpu_operator_dra_driver_version'),
    # OLM (gpu_operator_install olm)
    Field(name='channel', type='str', variable='gpu_operator_channel'),
    Field(name='install_plan_approval', type='str', default='Automatic', choices=gop.APPROVALS,
          variable='gpu_operator_install_plan_approval'),
    Field(name='catalog_source', type='str', default=gop.CATALOG, variable='gpu_operator_catalog_source'),
    Field(name='catalog_namespace', type='str', default=gop.CATALOG_NAMESPACE, variable='gpu_operator_catalog_namespace'),
    Field(name='nfd_install', type='bool', default=False, variable='gpu_operator_nfd_install'),
    Field(name='nfd_channel', type='str', default=gop.NFD_CHANNEL, variable='gpu_operator_nfd_channel'),
    Field(name='nfd_catalog_source', type='str', default=gop.NFD_CATALOG, variable='gpu_operator_nfd_catalog_source'),
    Field(name='nfd_instance', type='dict', variable='gpu_operator_nfd_instance'),
    Field(name='nfd_instance_required', type='bool', default=False, variable='gpuvirt_cluster.mode (render)'),
    # Helm (gpu_operator_install helm)
    Field(name='helm_values_extra', type='dict', default={}, variable='gpu_operator_helm_values_extra'),
)


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made, then ``_check``. A refusal
    is a ManifestError (the builders' error), naming the variable."""
    PHASE = 'the GPU Operator settings'
    ERROR = ManifestError
    __slots__ = ()

    def _check(self):
        # in the order the module made them before the settings were one record
        self.traits()
        vgpu_manager = self.vgpu_manager_image()
        gop.check_pull_secret(vgpu_manager, self.pull_secret_name, self.registry_public)
        login = self.registry_login
        if login:
            image_registry = gop.registry_of(vgpu_manager['repository']) if vgpu_manager else None
            ps.check_login(self.pull_secret_name or 'pull secret', login.get('registry') or '',
                           login.get('username') or '', bool(login.get('password_given')), image_registry,
                           credentials=login.get('credentials', True))
        gop.check_one_os_tag(self.os_tags, vgpu_manager)
        gop.check_dra_fleet(self.dra_nodes, self.hosts)
        if self.mig_overlay_strategy():
            gop.check_mig_fleet(self.hosts, self.mig_strategy)
        gop.vgpu_manager_fields(vgpu_manager)
        gop.check_sandbox(self.default_workload, self.sandbox_enabled)
        self.upgrade_overlay()
        checked(validators.dns1123_label, self.operator_namespace(), 'gpu_operator_namespace')

    def traits(self):
        """The platform's traits (``platform_traits``, else the row of ``platform``); those of another platform are
        refused, naming both."""
        traits = self.platform_traits or platform.traits(self.platform)
        if traits.get('name') != self.platform:
            raise ManifestError('platform_traits are those of %r, not of the platform %r: give gpuvirt_cluster.traits '
                                'with gpuvirt_cluster.platform' % (traits.get('name'), self.platform))
        return traits

    def olm(self):
        """The operator is installed by OLM (the trait gpu_operator_install), else by Helm."""
        return self.traits().get('gpu_operator_install') == 'olm'

    def operator_namespace(self):
        """The operator's namespace: ``namespace``, else the platform's."""
        return self.namespace or self.traits()['gpu_operator_namespace']

    def vgpu_manager_image(self):
        """``vgpu_manager`` with its version taken from ``vgpu_manager_image_version`` when it gives none
        (gpu_operator.py resolve_vgpu_manager)."""
        return gop.resolve_vgpu_manager(self.vgpu_manager, self.vgpu_manager_image_version)

    def mig_overlay_strategy(self):
        """``mig_strategy`` when a host of the fleet is in a MIG pool (the pool table's mig), else None: a fleet
        without one keeps the CSV's or chart's migManager and mig as they ship them."""
        if any(h.get('pool') in fleet.MIG_POOLS for h in self.hosts or []):
            return self.mig_strategy
        return None

    def upgrade_overlay(self):
        """``driver.upgradePolicy`` and ``daemonsets.updateStrategy`` (upgrade_policy.py overlay), or None where
        neither ``upgrade_policy`` nor ``daemonsets_update_strategy`` is given (the CSV's or chart's defaults stay)."""
        if self.upgrade_policy is None and not self.daemonsets_update_strategy:
            return None
        return upol.overlay(self.upgrade_policy, self.daemonsets_update_strategy or 'OnDelete')


def record_class(fields):
    """The record class of ``fields`` (FIELDS; a test adds one at run time the same way)."""
    return settings_record.record_class(
        'GpuOperatorSettings', _Settings, fields,
        'The GPU Operator phase\'s settings (FIELDS), checked when made: a bad value raises ManifestError naming its '
        'inventory variable. A field given as None takes its default (a suboption the module was not given).')


GpuOperatorSettings = record_class(FIELDS)


def build(value, name='settings'):
    """The one way to the record: ``value`` is a record (returned as it is: it was checked when made) or the plain
    dict the module's ``settings`` option holds (None: every default). ManifestError names the bad value."""
    return settings_record.build(GpuOperatorSettings, value, name)


def argument_spec():
    """The suboptions of the module option ``settings`` (AnsibleModule's argument spec form), from the record's
    fields."""
    return settings_record.argument_spec(GpuOperatorSettings.FIELDS)
