# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the DRA driver phase: one read-only record with named, typed fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/dra_driver tasks/main.yml builds one dict from the
inventory variables and the platform row (``gpuvirt_cluster``); the module dra_manifests takes it as its option
``settings``, whose suboptions are ``argument_spec()`` (documented by the doc fragment gpuvirt.provision.settings.dra);
``build`` turns it into a ``DraSettings`` record, and the module reads its fields by name. What the run read or was
given about the cluster and its hosts (the DRA nodes and the others, their PCI facts, the Nodes, the classic plugin's
pods, the live KubeVirt object) is not a setting: those stay options of the module's own (its ``READS``).

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform, settings_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc

FIELDS = (
    # the platform row (gpuvirt_cluster): which DRA stack serves the DRA nodes follows its traits
    Field(name='cluster_platform', type='str', default=platform.FALLBACK, choices=lambda: platform.PLATFORM_NAMES,
          variable='gpuvirt_cluster.platform'),
    # where the KubeVirt gate goes: the KubeVirt CR, or HCO's jsonpatch annotation
    Field(name='platform', type='str', default='kubevirt', choices=('kubevirt', 'hco'),
          variable='gpuvirt_cluster.kubevirt_config'),
    # who installed the NVIDIA driver on the DRA nodes: the driver roots' names, in their table's order
    Field(name='driver_mode', type='str', choices=tuple(dra.DRIVER_ROOTS), variable='dra_driver_nvidia_driver'),
    Field(name='operator_driver', type='bool', variable='dra_driver_gpu_operator_driver'),
    Field(name='node_selector', type='dict', variable='dra_driver_node_selector'),
    Field(name='claim_templates', type='list', elements='dict', default=[], variable='dra_driver_claim_templates'),
    Field(name='kubevirt_version', type='str', variable='dra_driver_kubevirt_version'),
    Field(name='stack', type='str', default='auto', choices=('auto',) + gc.STACKS, variable='dra_driver_stack'),
)


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made. A refusal is a ManifestError
    (the builders' error), naming the variable."""
    PHASE = 'the DRA settings'
    ERROR = ManifestError
    __slots__ = ()


# checked when made: a bad value raises ManifestError naming its inventory variable; a field given as None takes
# its default (a suboption the module was not given)
DraSettings = settings_record.record_class('DraSettings', _Settings, FIELDS, "The DRA driver phase's settings (FIELDS).")


# the module's two entry points: the record from its settings option, and that option's suboptions
build, argument_spec = DraSettings.of, DraSettings.schema
