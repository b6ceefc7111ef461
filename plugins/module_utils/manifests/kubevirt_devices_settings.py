# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the kubevirt devices phase: one read-only record with named, typed fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/kubevirt_devices tasks/main.yml builds one dict
from the inventory variables and the run's mode (``gpuvirt_cluster``); the modules hco_permitted_devices and
kubevirt_permitted_devices take it whole as their option ``settings``, whose suboptions are ``argument_spec()``
(documented by the doc fragment gpuvirt.provision.settings.kubevirt_devices); ``build`` turns it into a
``KubevirtDevicesSettings`` record, and the modules read its fields by name. What the run read or computed about
the cluster and its hosts (the live object and why it was not read, the hosts without facts, the devices wanted
and their resource names, whether HCO's CRD has the mdev gate, whether HCO runs) is not a setting: those stay
options of each module's own (its ``READS``). kubevirt_devices_plan takes no setting: its options are the wanted
devices and the Nodes.

``FIELDS`` is the one list (model/settings_record.py makes the record, the argument spec and each field's check from
it). A record refuses a bad value when it is made, naming its variable. Adding a setting: a field here, its entry in
the doc fragment (plugins/doc_fragments/settings.py, its KUBEVIRT_DEVICES), its key in the role's dict
(``__kubevirt_devices_settings``), and the read where it decides; the modules are not touched.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import settings_record, validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators import ValidationError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, version_tuple
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt

HCO_VERSION = 'kubevirt_devices_hco_version'
KUBEVIRT_VERSION = 'kubevirt_devices_kubevirt_version'
HCO_NAME, HCO_NAMESPACE = 'kubevirt_devices_hco_name', 'kubevirt_devices_hco_namespace'
KUBEVIRT_NAME, KUBEVIRT_NAMESPACE = 'kubevirt_devices_kubevirt_name', 'kubevirt_devices_kubevirt_namespace'


def _hco_version(value):
    """A HCO (1.x) or OpenShift Virtualization (4.x) version the gate decision can read; '' is none given."""
    if value == '':
        return None
    try:
        version_tuple(value)
    except ManifestError:
        raise ValidationError('%s is %s, not a version: give the HCO (1.x) or OpenShift Virtualization (4.x) version, '
                              'MAJOR.MINOR[.PATCH]' % (HCO_VERSION, validators.shown(value)))
    return value


def _kubevirt_version(value):
    """The KubeVirt release given for a render: SemVer, refused in the builder's own sentence
    (kubevirt.kubevirt_version); '' is none given, and the live CR's version is read instead."""
    if value == '':
        return None
    try:
        return validators.semver(value, KUBEVIRT_VERSION)
    except ValidationError as exc:
        raise ValidationError('%s%s' % (exc, kubevirt.GIVEN_VERSION_HINT))


FIELDS = (
    # both CRs: KubeVirt leaves the mediated devices to the GPU Operator
    Field(name='disable_mdev_configuration', type='bool', default=True,
          variable='kubevirt_devices_disable_mdev_configuration'),
    # HyperConverged: a foreign entry under one of our selectors is replaced instead of refused
    Field(name='adopt_conflicting', type='bool', default=False, variable='kubevirt_devices_adopt_conflicting'),
    # HyperConverged: decides the mdev gate's place where HCO's CRD was not read (a render)
    Field(name='hco_version', type='str', variable=HCO_VERSION, check=_hco_version),
    # the names reach a request path and a file name: Kubernetes' grammar, checked here whatever the role did
    Field(name='hco_name', type='str', default=hco.HCO_NAME, variable=HCO_NAME, check=settings_record.grammar(validators.dns1123_subdomain, HCO_NAME)),
    Field(name='hco_namespace', type='str', default=hco.HCO_NAMESPACE, variable=HCO_NAMESPACE,
          check=settings_record.grammar(validators.dns1123_label, HCO_NAMESPACE)),
    # the KubeVirt CR: the release a render is for (the role gives it in render mode only: apply mode reads the
    # version the live CR reports)
    Field(name='kubevirt_version', type='str', variable=KUBEVIRT_VERSION, check=_kubevirt_version),
    # the KubeVirt CR: the gates that must be on; no inventory variable, the role names them
    Field(name='feature_gates', type='list', elements='str', default=[kubevirt.GPU_GATE],
          variable='the kubevirt_devices role\'s feature_gates'),
    Field(name='kubevirt_name', type='str', default=kubevirt.KUBEVIRT_NAME, variable=KUBEVIRT_NAME,
          check=settings_record.grammar(validators.dns1123_subdomain, KUBEVIRT_NAME)),
    Field(name='kubevirt_namespace', type='str', default=kubevirt.KUBEVIRT_NAMESPACE, variable=KUBEVIRT_NAMESPACE,
          check=settings_record.grammar(validators.dns1123_label, KUBEVIRT_NAMESPACE)),
)


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made. A refusal is a ManifestError
    (the builders' error), naming the variable."""
    PHASE = 'the kubevirt devices settings'
    ERROR = ManifestError
    __slots__ = ()

    def hco_gate_supported(self, read):
        """Whether HyperConverged takes ``featureGates.disableMDevConfiguration``: ``read`` (from the cluster's
        CRD) when known, else from ``hco_version``, else assumed."""
        if read is not None:
            return read
        return hco.hco_has_disable_mdev_gate(self.hco_version) if self.hco_version else True


# checked when made: a bad value raises ManifestError naming its inventory variable; a field given as None takes
# its default (a suboption the module was not given)
KubevirtDevicesSettings = settings_record.record_class('KubevirtDevicesSettings', _Settings, FIELDS,
                                                       "The kubevirt devices phase's settings (FIELDS).")


# the module's two entry points: the record from its settings option, and that option's suboptions
build, argument_spec = KubevirtDevicesSettings.of, KubevirtDevicesSettings.schema
