# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the machineconfig phase: one read-only record with named, typed fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/machineconfig tasks/main.yml builds one dict from
the inventory variables and the run's mode (``gpuvirt_cluster``), before its loop over the pools of the GPU nodes;
tasks/pool.yml gives it whole, for each pool, to the module machineconfig_manifests as its option ``settings``, whose
suboptions are ``argument_spec()`` (documented by the doc fragment gpuvirt.provision.settings.machineconfig);
``build`` turns it into a ``MachineconfigSettings`` record, and the module reads its fields by name.

What is not a setting stays an option of the module's own (its ``READS``): the pool of the loop item and its nodes,
what the run read from the cluster (the pool names - in render mode the inventory's stand-in for that read, as a
render's live object is -, the Nodes, the pools and the loop pool's node selector), and the pool whose MachineConfig
the loop pool inherits (computed from the pools of the whole fleet).

The settings are the run's, one for every pool: ``name`` and ``node_selector`` are the main pool's
(``machineconfig_pool``), ``create_pool`` creates the main pool and any other custom pool of the fleet. The record
answers that for a pool of the loop (``machineconfig_name``, ``node_selector_of``, ``creates_pool``), so the rule
lives here, tested, and not in the role's templates.

``FIELDS`` is the one list (model/settings_record.py makes the record, the argument spec and each field's check from
it). A record refuses a bad value when it is made, naming its variable. Adding a setting: a field here, its entry in
the doc fragment (plugins/doc_fragments/settings.py, its MACHINECONFIG), its key in the role's dict
(``__machineconfig_settings``), and the read where it decides; the module is not touched.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import settings_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators import ValidationError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc

CPU_VENDOR = 'machineconfig_cpu_vendor'


def _name(value):
    """The MachineConfig name given; '' is none (the builder's default, 100-<pool>-gpuvirt-iommu)."""
    return value or None


FIELDS = (
    # the kernel arguments: intel_iommu=on or amd_iommu=on (one vendor for the run: RHCOS nodes are not read)
    Field(name='cpu_vendor', type='str', choices=('intel', 'amd'), variable=CPU_VENDOR),
    Field(name='iommu_passthrough', type='bool', default=True, variable='machineconfig_iommu_passthrough'),
    Field(name='extra_kernel_args', type='list', elements='str', default=[],
          variable='machineconfig_extra_kernel_args'),
    # the MachineConfig's Ignition file
    Field(name='blacklist_nouveau', type='bool', default=True, variable='machineconfig_blacklist_nouveau'),
    # the run's main pool: name and node_selector are its own
    Field(name='pool', type='str', default='worker', variable='machineconfig_pool'),
    Field(name='name', type='str', variable='machineconfig_name', check=_name),
    Field(name='create_pool', type='bool', default=False, variable='machineconfig_create_pool'),
    Field(name='node_selector', type='dict', default={}, variable='machineconfig_node_selector'),
    # render mode: the pool always among the objects, the MachineConfig named by its content
    Field(name='render', type='bool', default=False, variable="the machineconfig role's render (gpuvirt_cluster.mode)"),
)


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made. A refusal is a ManifestError
    (the builders' error), naming the variable."""
    PHASE = 'the machineconfig settings'
    ERROR = ManifestError
    __slots__ = ()

    def _check(self):
        # the kernel argument differs by vendor: none is assumed
        if self.cpu_vendor is None:
            raise ValidationError('%s is not set: give intel or amd' % CPU_VENDOR)

    def creates_pool(self, pool):
        """Whether ``pool`` (a pool of the loop) is a dedicated pool the run creates: with ``create_pool``, the main
        pool (a built-in one is refused by the builder) and any other pool that is not built in."""
        return self.create_pool and (pool == self.pool or pool not in mc.BUILTIN_POOLS)

    def machineconfig_name(self, pool):
        """The MachineConfig name given for ``pool``: ``name`` for the main pool, else None (the default)."""
        return self.name if pool == self.pool else None

    def node_selector_of(self, pool):
        """The node labels given for the dedicated pool ``pool``: ``node_selector`` for the main pool, else None
        (``node-role.kubernetes.io/<pool>``)."""
        return (self.node_selector or None) if pool == self.pool else None


# checked when made: a bad value raises ManifestError naming its inventory variable; a field given as None takes
# its default (a suboption the module was not given)
MachineconfigSettings = settings_record.record_class('MachineconfigSettings', _Settings, FIELDS,
                                                     "The machineconfig phase's settings (FIELDS).")


# the module's two entry points: the record from its settings option, and that option's suboptions
build, argument_spec = MachineconfigSettings.of, MachineconfigSettings.schema
