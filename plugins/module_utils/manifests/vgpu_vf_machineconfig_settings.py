# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the vgpu_vf role's cluster step (the VF MachineConfig): one read-only record with named, typed
fields, built once.

The path (docs/architecture.md, "The settings of a phase"): roles/vgpu_vf tasks/machineconfig.yml builds one dict
from the inventory variables (``__vgpu_vf_machineconfig_settings``) and gives it whole to the module
vgpu_vf_machineconfig as its option ``settings``, whose suboptions are ``argument_spec()`` (documented by the doc
fragment gpuvirt.provision.settings.vgpu_vf_machineconfig); ``build`` turns it into a ``VgpuVfMachineconfigSettings``
record, and the module reads its fields by name.

What is not a setting stays an option of the module's own (its ``READS``): the hosts (the fleet view: each host's
node and the boot-time config its plan computed on the host), the MachineConfigPools and Nodes the run read from the
cluster, and the text of the role's restore script (the role's own file, not an inventory value).

Each field is checked when a record is made, naming its variable, by the grammar the builder
(manifests/machineconfig.py build_vgpu_vf_machineconfig, vgpu_vf_pool_config) applies to the same value: the pool a
DNS-1123 label, the three paths the vgpu_vf role's one path grammar, the timeout 10 to 3600 seconds. The builder
keeps its own checks (the k8s_objects_apply sink calls it with what it read back), so a value is refused before the
module builds anything, and the builder sees the same values as before.

``FIELDS`` is the one list (model/settings_record.py makes the record, the argument spec and each field's check from
it). Adding a setting: a field here, its entry in the doc fragment
(plugins/doc_fragments/settings.py, its VGPU_VF_MACHINECONFIG), its key in the role's dict, and the read in the module.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import settings_record, validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.settings_record import Field
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators import ValidationError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

POOL = 'vgpu_vf_machineconfig_pool'
PYTHON = 'vgpu_vf_python'
TIMEOUT = 'vgpu_vf_wait_timeout'
SYSFS_ROOT = 'vgpu_vf_machineconfig_sysfs_root'
SRIOV_MANAGE = 'vgpu_vf_machineconfig_sriov_manage'
# the seconds the restore may wait at boot: the bounds the role's unit and config grammar take (vgpu_vf_profiles)
TIMEOUT_MIN, TIMEOUT_MAX = 10, 3600


# the MachineConfig's name, 100-<pool>-gpuvirt-vgpu-vf, is a DNS-1123 label of at most 63 characters
POOL_MAX = 63 - len('100--gpuvirt-vgpu-vf')


def _pool(value):
    """The pool: it becomes the MachineConfig's role label and name (``100-<pool>-gpuvirt-vgpu-vf``), so a DNS-1123
    label short enough for that name, as the builder's check_name takes it."""
    validators.dns1123_label(value, POOL)
    if len(value) > POOL_MAX:
        raise ValidationError('%s is %d characters; at most %d: the MachineConfig is named 100-<pool>-gpuvirt-vgpu-vf, '
                              'a DNS-1123 label of at most 63' % (POOL, len(value), POOL_MAX))
    return value


def _python(value):
    """The unit's interpreter: the path grammar, and a Python 3 of a system directory (the builder's own rule for a
    unit built off the host, vgpu_vf_profiles.system_interpreter), since the hosts' trusted-path check reads each
    host's own variable, not the controller's this record holds."""
    _path(PYTHON)(value)
    try:
        return vvp.system_interpreter(value, PYTHON)
    except vvp.VfProfileError as exc:
        raise ValidationError(str(exc))


def _path(variable):
    """The check of a path that goes into the unit, the restore's config or its argv: the vgpu_vf role's one path
    grammar (normalised, absolute, letters, digits and ._/-), the one the builder applies to the same value. It is
    reached through check_saved_paths, its public check of a path the restore reads at boot."""
    def check(value):
        try:
            vvp.check_saved_paths(value, vvp.SRIOV_MANAGE)
        except vvp.VfProfileError:
            raise ValidationError('%s is %s; expected a normalised absolute path of letters, digits and ._/- (no . '
                                  'or .. component, no //): it goes into a systemd unit, an argv or a root-owned '
                                  'file, where a space, %% or $ would change the command'
                                  % (variable, validators.shown(value, 200)))
        return value
    return check


def _timeout(value):
    """The restore's wait at boot (the field's type made it a whole number): the unit's TimeoutStartSec follows it."""
    if not TIMEOUT_MIN <= value <= TIMEOUT_MAX:
        raise ValidationError('%s is %r; expected %d to %d seconds' % (TIMEOUT, value, TIMEOUT_MIN, TIMEOUT_MAX))
    return value


FIELDS = (
    # the MachineConfigPool that manages exactly the hosts' nodes: the MachineConfig's role label and default name
    Field(name='pool', type='str', default='worker', variable=POOL, check=_pool),
    # the unit's ExecStart: the interpreter the restore script runs with
    Field(name='python', type='str', default='/usr/bin/python3', variable=PYTHON, check=_python),
    # the unit's TimeoutStartSec and the config's timeout
    Field(name='timeout', type='int', default=300, variable=TIMEOUT, check=_timeout),
    # the config's paths: every host's computed config takes them (never the plan's own)
    Field(name='sysfs_root', type='str', default='/sys', variable=SYSFS_ROOT, check=_path(SYSFS_ROOT)),
    Field(name='sriov_manage', type='str', default=vvp.SRIOV_MANAGE, variable=SRIOV_MANAGE,
          check=_path(SRIOV_MANAGE)),
)


class _Settings(settings_record.SettingsRecord):
    """Base of the settings record: its ``FIELDS`` are checked when a record is made. A refusal is a ManifestError
    (the builders' error), naming the variable."""
    PHASE = 'the vgpu_vf MachineConfig settings'
    ERROR = ManifestError
    __slots__ = ()


# checked when made: a bad value raises ManifestError naming its inventory variable; a field given as None takes
# its default (a suboption the module was not given)
VgpuVfMachineconfigSettings = settings_record.record_class(
    'VgpuVfMachineconfigSettings', _Settings, FIELDS, "The vgpu_vf role's cluster step's settings (FIELDS).")


# the module's two entry points: the record from its settings option, and that option's suboptions
build, argument_spec = VgpuVfMachineconfigSettings.of, VgpuVfMachineconfigSettings.schema
