# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_vf MachineConfig settings record (manifests/vgpu_vf_machineconfig_settings.py): one list of fields is
the record, the schema of vgpu_vf_machineconfig and (held equal here) its documentation; a bad value is refused when
a record is made, naming its variable; the module reads the fields by name and builds what it built before."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_vf_machineconfig_settings as vms
from ansible_collections.gpuvirt.provision.plugins.modules import vgpu_vf_machineconfig

from ...modules.harness import run_module

SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.VGPU_VF_MACHINECONFIG)['options']['settings']['suboptions']
ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..')
PERSIST = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/sys',
           'sriov_manage': '/usr/lib/nvidia/sriov-manage', 'timeout': 300,
           'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}


def _script():
    with open(os.path.join(ROOT, 'roles', 'vgpu_vf', 'files', 'gpuvirt_vgpu_vf_restore.py'), encoding='utf-8') as f:
        return f.read()


def test_the_fields_come_from_the_role_s_variables_with_the_role_s_defaults():
    with open(os.path.join(ROOT, 'roles', 'vgpu_vf', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    assert {f.variable: f.default for f in vms.FIELDS} == {f.variable: defaults[f.variable] for f in vms.FIELDS}
    with open(os.path.join(ROOT, 'roles', 'vgpu_vf', 'tasks', 'machineconfig.yml'), encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    built = [t['ansible.builtin.set_fact']['__vgpu_vf_machineconfig_settings'] for t in tasks
             if '__vgpu_vf_machineconfig_settings' in (t.get('ansible.builtin.set_fact') or {})]
    assert built == [{f.name: '{{ %s }}' % f.variable for f in vms.FIELDS}]


def test_a_record_is_read_only_and_a_none_takes_the_default():
    record = vms.build({'pool': None, 'timeout': None})
    assert (record.pool, record.python, record.timeout, record.sysfs_root, record.sriov_manage) == (
        'worker', '/usr/bin/python3', 300, '/sys', '/usr/lib/nvidia/sriov-manage')
    with pytest.raises(AttributeError):
        record.pool = 'gpu'
    assert vms.build(record) is record
    assert vms.build({'timeout': 10}).timeout == 10 and vms.build({'timeout': 3600}).timeout == 3600


@pytest.mark.parametrize('params, needle', [
    ({'pool': 'GPU_vf'}, "vgpu_vf_machineconfig_pool: 'GPU_vf' is not valid; expected a DNS-1123 label"),
    ({'pool': 'a' * 64}, 'vgpu_vf_machineconfig_pool: '),
    ({'pool': ['gpu']}, "vgpu_vf_machineconfig_pool is ['gpu'], not a string"),
    ({'python': 'python3'}, "vgpu_vf_python is 'python3'; expected a normalised absolute path"),
    ({'python': '/usr/bin/python3 -S'}, "vgpu_vf_python is '/usr/bin/python3 -S'; expected a normalised"),
    ({'timeout': '300'}, "vgpu_vf_wait_timeout is '300', not a whole number"),
    ({'timeout': 30.5}, 'vgpu_vf_wait_timeout is 30.5, not a whole number'),
    ({'timeout': True}, 'vgpu_vf_wait_timeout is True, not a whole number'),
    ({'timeout': 9}, 'vgpu_vf_wait_timeout is 9; expected 10 to 3600 seconds'),
    ({'timeout': 3601}, 'vgpu_vf_wait_timeout is 3601; expected 10 to 3600 seconds'),
    ({'sysfs_root': '/sys/../etc'}, "vgpu_vf_machineconfig_sysfs_root is '/sys/../etc'; expected a normalised"),
    ({'sysfs_root': '/sys/'}, "vgpu_vf_machineconfig_sysfs_root is '/sys/'; expected a normalised"),
    ({'sriov_manage': '/usr/lib/nvidia/sriov-manage;id'}, 'vgpu_vf_machineconfig_sriov_manage is '),
    ({'sriov_manage': '$HOME/x'}, "vgpu_vf_machineconfig_sriov_manage is '$HOME/x'; expected a normalised"),
    ({'name': '100-x'}, 'the vgpu_vf MachineConfig settings have no name; they are pool, python, timeout'),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(params, needle):
    with pytest.raises(mc.ManifestError) as exc:
        vms.build(params)
    assert needle in str(exc.value)


@pytest.mark.parametrize('settings, needle', [
    ({'timeout': 5}, 'vgpu_vf_wait_timeout is 5; expected 10 to 3600 seconds'),
    ({'python': '/usr/bin/python 3'}, 'vgpu_vf_python is '),
    # AnsibleModule's own check of the suboptions, naming the key
    ({'timeout': 'soon'}, 'timeout'),
    ({'name': '100-x'}, 'name'),
])
def test_the_module_refuses_a_bad_setting_before_anything_is_built(monkeypatch, settings, needle):
    out = run_module(monkeypatch, vgpu_vf_machineconfig, {
        'settings': settings, 'script': _script(), 'hosts': [{'host': 'a', 'node': 'a', 'persist': PERSIST}]})
    assert out['failed'] and needle in out['msg'] and 'objects' not in out, out


def test_the_module_builds_from_the_record_what_the_builder_builds_from_the_same_values(monkeypatch):
    settings = {'pool': 'gpu-vf', 'python': '/usr/libexec/platform-python', 'timeout': '600',
                'sysfs_root': '/host/sys', 'sriov_manage': '/opt/nvidia/sriov-manage'}
    hosts = [{'host': 'a', 'node': 'a', 'persist': PERSIST}]
    out = run_module(monkeypatch, vgpu_vf_machineconfig, {'settings': settings, 'hosts': hosts, 'script': _script()})
    assert not out['failed'], out
    config = mc.vgpu_vf_pool_config('gpu-vf', hosts, None, [], '/host/sys', '/opt/nvidia/sriov-manage', 600)
    assert out['config'] == config and (config['sysfs_root'], config['timeout']) == ('/host/sys', 600)
    built = mc.build_vgpu_vf_machineconfig('gpu-vf', _script(), '/usr/libexec/platform-python', 600, config)
    assert out['objects'] == [built]
    assert out['machineconfig_name'] == '100-gpu-vf-gpuvirt-vgpu-vf'
    # the pool still checked against the cluster's pools and nodes (reads, beside the settings)
    pools = [{'metadata': {'name': 'worker'}, 'spec': {'nodeSelector': {'matchLabels': {'w': ''}}}}]
    out = run_module(monkeypatch, vgpu_vf_machineconfig, {'settings': settings, 'hosts': hosts, 'script': _script(),
                                                          'pools': pools, 'nodes': []})
    assert out['failed'] and "MachineConfigPool 'gpu-vf' does not exist" in out['msg'], out


@pytest.mark.parametrize('python', ['/tmp/evil', '/bin/sh', '/usr/bin/python2', '/home/user/python3',
                                    '/usr/bin/python3.123', '/opt/python3', '/usr/bin/python3x'])
def test_an_interpreter_that_is_no_system_python_3_is_refused_naming_its_variable(python):
    # the unit runs it as root at every boot on each node of the pool, and the hosts' trusted-path check reads each
    # host's own vgpu_vf_python, not the controller's this record holds
    with pytest.raises(vms.ManifestError) as exc:
        vms.build({'python': python})
    assert str(exc.value).startswith("vgpu_vf_python is %r: a unit built off the host runs as root" % python)
    # the builder a MachineConfig's sink rebuilds the unit with holds the same rule
    with pytest.raises(vvp.VfProfileError, match='a unit built off the host runs as root'):
        vvp.unit_text('/etc/systemd/system/gpuvirt-vgpu-vf.service', '/etc/gpuvirt/vgpu-vf-restore',
                      '/etc/gpuvirt/vgpu-vf-profiles.json', python, 300, on_host=False)


@pytest.mark.parametrize('python', ['/usr/bin/python3', '/usr/bin/python3.12', '/usr/libexec/platform-python',
                                    '/usr/local/bin/python3', '/bin/python3'])
def test_a_system_python_3_is_the_interpreter_as_given(python):
    assert vms.build({'python': python}).python == python


def test_the_pool_is_short_enough_for_the_machineconfig_s_name():
    assert vms.build({'pool': 'p' * vms.POOL_MAX}).pool == 'p' * 43
    with pytest.raises(vms.ManifestError, match=r'^vgpu_vf_machineconfig_pool is 44 characters; at most 43'):
        vms.build({'pool': 'p' * 44})
