# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the node labels phase: one read-only record with named, typed fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/node_labels tasks/main.yml builds one dict from the
inventory variables and the platform row (``gpuvirt_cluster``); the module node_labels_plan takes it as its option
``settings``, whose suboptions are ``argument_spec()`` (documented by the doc fragment
gpuvirt.provision.settings.node_labels); ``build`` turns it into a ``NodeLabelsSettings`` record, and the planner
reads its fields by name. What the run read or was given about the cluster (the fleet view's hosts, the Nodes, the
VMIs, the nodes a render found) is not a setting: those stay options of the module's own (its ``READS``).

``FIELDS`` is the one list (model/settings_record.py makes the record, the argument spec and each field's check from
it). A record refuses a bad value when it is made, naming its variable (the vGPU configs in the builders' own
sentence). Adding a setting: a field here, its entry in the doc fragment (plugins/doc_fragments/
node_labels_settings.py), its key in the role's dict (``__node_labels_settings``), and the read where it decides; the
module is not touched.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform, settings_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_config as vc

FIELDS = (
    # the platform row (gpuvirt_cluster): which DRA stack serves the DRA nodes follows its traits
    Field(name='cluster_platform', type='str', default=platform.FALLBACK, choices=lambda: platform.PLATFORM_NAMES,
          variable='gpuvirt_cluster.platform'),
    Field(name='vgpu_config_default', type='str', variable='node_labels_vgpu_config_default'),
    Field(name='vgpu_configs', type='dict', variable='node_labels_vgpu_configs'),
    Field(name='pool_selector', type='dict', variable='node_labels_pool_selector'),
    Field(name='pool_selectors', type='dict', default={}, variable='node_labels_pool_selectors'),
    Field(name='dra_selector', type='dict', variable='node_labels_dra_selector'),
    Field(name='dra_stack', type='str', default='auto', choices=('auto',) + gc.STACKS, variable='node_labels_dra_stack'),
    Field(name='retire', type='bool', default=False, variable='node_labels_retire'),
    Field(name='render', type='bool', default=False, variable='gpuvirt_cluster.mode (render)'),
)


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made, then ``_check``. A refusal
    is a ManifestError (the planner's error), naming the variable."""
    PHASE = 'the node labels settings'
    ERROR = ManifestError
    __slots__ = ()

    def _check(self):
        self.custom_vgpu_configs()

    def custom_vgpu_configs(self):
        """``vgpu_configs`` in the full format (vgpu_config.normalise_configs), or None where none is given."""
        return vc.normalise_configs(self.vgpu_configs) if self.vgpu_configs else None

    def stack(self, dra_nodes, other_nodes):
        """The DRA stack the operator and kubevirt phases decide too (gpu_cluster.dra_stack): the GPUCluster or the
        DRA chart, from the platform's traits and the fleet's nodes."""
        return gc.dra_stack(platform.traits(self.cluster_platform), dra_nodes, other_nodes, self.dra_stack)[0]


# checked when made: a bad value raises ManifestError naming its inventory variable; a field given as None takes
# its default (a suboption the module was not given)
NodeLabelsSettings = settings_record.record_class('NodeLabelsSettings', _Settings, FIELDS,
                                                  "The node labels phase's settings (FIELDS).")


# the module's two entry points: the record from its settings option, and that option's suboptions
build, argument_spec = NodeLabelsSettings.of, NodeLabelsSettings.schema
