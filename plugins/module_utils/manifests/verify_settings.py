# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the verify phase: one read-only record with named, typed fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/verify tasks/main.yml builds one dict from the
inventory variables of the smoke VM (``verify_smoke_vm_*``); the module verify_smoke_vm takes it whole as its option
``settings``, whose suboptions are ``argument_spec()`` (documented by the doc fragment
gpuvirt.provision.settings.verify); ``build`` turns it into a ``VerifySettings`` record, and the module reads its
fields by name for manifests/verify.py ``smoke_vm``.

What is not a setting stays an option of the module's own (its ``READS``): ``expected``, the resources the run
expects per node (``verify_expected``, computed by playbooks/verify.yml from the host facts). The resource the VM asks
for is the inventory's ``verify_smoke_vm_resource`` when given (the field ``resource``, a setting, checked here
naming it), else the first resource the run expects, which only exists once the facts are read: the record answers
that (``resource_name``), so the rule lives here, tested, and not in the role's template. verify_node_resources takes
no setting: its options are the expected resources and the Nodes read, both the run's.

``FIELDS`` is the one list (model/settings_record.py makes the record, the argument spec and each field's check from
it). A record refuses a bad value when it is made, naming its variable. Adding a setting: a field here, its entry in
the doc fragment (plugins/doc_fragments/settings.py, its VERIFY), its key in the role's dict (``__verify_settings``), and
the read where it decides; the module is not touched.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import settings_record, validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify

IMAGE = 'verify_smoke_vm_image'
# no inventory variable sets it (the role leaves the default): a refusal names the module's suboption
MEMORY = "the verify_smoke_vm module's settings.memory"


def _resource(value):
    """The device plugin resource given; '' is none (the run's first expected resource is asked for instead)."""
    if value == '':
        return None
    return verify.checked_resource(value)


def _image(value):
    """The containerDisk image: an OCI reference with its registry; '' is refused as none given."""
    return verify.checked_image(value, IMAGE)


def _memory(value):
    """The memory request: a Kubernetes quantity."""
    return verify.checked_memory(value, MEMORY)


FIELDS = (
    # the VirtualMachine's metadata: its name a DNS-1123 subdomain (no '/', no '..'), its namespace a DNS-1123 label
    Field(name='name', type='str', default='gpuvirt-smoke', variable='verify_smoke_vm_name',
          check=settings_record.grammar(validators.dns1123_subdomain, 'verify_smoke_vm_name')),
    Field(name='namespace', type='str', default='default', variable='verify_smoke_vm_namespace',
          check=settings_record.grammar(validators.dns1123_label, 'verify_smoke_vm_namespace')),
    # its one GPU: the resource given, else the run's first expected one (resource_name)
    Field(name='resource', type='str', variable='verify_smoke_vm_resource', check=_resource),
    # its containerDisk
    Field(name='image', type='str', variable=IMAGE, check=_image),
    Field(name='memory', type='str', default='2Gi', variable=MEMORY, check=_memory),
    # runStrategy Always instead of Halted
    Field(name='running', type='bool', default=False, variable='verify_smoke_vm_running'),
)


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made. A refusal is a ManifestError
    (the builders' error), naming the variable."""
    PHASE = 'the verify settings'
    ERROR = ManifestError
    __slots__ = ()

    def _check(self):
        # the VM boots from this disk: none is assumed
        if self.image is None:
            verify.checked_image(None, IMAGE)

    def resource_name(self, expected):
        """The resource the smoke VM asks for: ``resource`` when given, else the first resource of the first node
        of ``expected`` (``{node: {resource: count}}``, the run's) that expects one, else '' (refused by the
        builder, naming verify_smoke_vm_resource)."""
        if self.resource:
            return self.resource
        # the run's expectations (the fleet view's, or -e verify_expected): {node: {resource: count}}, judged here
        # before one is read, so a list, a string or a number in their place is refused by its name
        expected = {} if expected is None else expected
        if not isinstance(expected, dict) or not all(isinstance(want, dict) for want in expected.values()):
            raise ManifestError('verify_expected is %s, not a mapping of node to {resource: count}'
                                % validators.shown(expected, 200))
        return next((res for want in expected.values() for res in want), '')


# checked when made: a bad value raises ManifestError naming its inventory variable; a field given as None takes
# its default (a suboption the module was not given)
VerifySettings = settings_record.record_class('VerifySettings', _Settings, FIELDS,
                                              "The verify phase's settings (FIELDS).")


# the module's two entry points: the record from its settings option, and that option's suboptions
build, argument_spec = VerifySettings.of, VerifySettings.schema
