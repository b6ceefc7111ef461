# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""apply_rules: the table k8s_objects_apply judges every object by, and the rebuild of a MachineConfig's content.
The refusals use the outside review's repro inputs; the objects every role builds, from the builder modules
themselves, pass the table in tests/unit/plugins/modules/test_k8s_objects_apply.py."""
from __future__ import annotations

import base64
import copy
import hashlib
import json
import pathlib

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import apply_rules as ar
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_apply as ka
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

ROOT = pathlib.Path(__file__).resolve().parents[5]
SCRIPT = (ROOT / 'roles' / 'vgpu_vf' / 'files' / 'gpuvirt_vgpu_vf_restore.py').read_text(encoding='utf-8')
PERSIST = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': '/sys',
           'sriov_manage': '/usr/lib/nvidia/sriov-manage', 'timeout': 300,
           'gpus': [{'pf': '0000:41:00.0', 'vfs': {'0000:41:00.4': 1155}}], 'types': {'1155': 'NVIDIA L40S-24Q'}}
NOBODY = ar.checked_namespaces({})


def refused(obj, namespaces=None):
    with pytest.raises(ManifestError) as err:
        ka.checked_objects([obj], namespaces)
    return str(err.value)


def iommu(**over):
    return mc.build_machineconfig(over.pop('pool', 'gpu'), mc.iommu_kernel_args('intel', True, over.pop('extra', [])),
                                  over.pop('blacklist', True), **over)


_PERSIST = object()  # vf()'s default: PERSIST (a dict default is shared between calls)


def vf(config=_PERSIST, script=SCRIPT):
    return mc.build_vgpu_vf_machineconfig('gpu-vf', script, '/usr/bin/python3', 300,
                                          PERSIST if config is _PERSIST else config)


def files_of(obj):
    return obj['spec']['config']['storage']['files']


def test_the_shipped_restore_script_is_the_one_the_table_holds():
    """The module runs without the role's files: its digest stands for the script. Change both together."""
    assert hashlib.sha256(SCRIPT.encode('utf-8')).hexdigest() == ar.VGPU_VF_SCRIPT_SHA256


def test_the_review_repro_objects_are_refused_each_naming_the_rule():
    binding = {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding', 'metadata': {'name': 'pwn'},
               'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': 'cluster-admin'},
               'subjects': [{'kind': 'ServiceAccount', 'name': 'default', 'namespace': 'tenant'}]}
    msg = refused(binding)
    assert 'ClusterRoleBinding pwn' in msg and 'is not an object the collection applies' in msg, msg
    assert 'the collection applies only' in msg and 'v1 Secret' in msg and 'nothing was sent' in msg
    # a ConfigMap in kube-system: by its short name not in the table, by its kind in no declared namespace
    assert 'v1 cm is not an object the collection applies' in refused(
        {'apiVersion': 'v1', 'kind': 'cm', 'metadata': {'name': 'x', 'namespace': 'kube-system'}})
    cm = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'namespace': 'kube-system'},
          'data': {'config.yaml': ''}}
    assert 'goes in the operator namespace (none declared by this call)' in refused(cm)
    assert 'namespaces.operator: kube-system is a namespace of the platform itself' in refused(
        cm, {'operator': 'kube-system'})
    for name in ('kube-flannel', 'openshift-config', 'default/x'):
        assert 'namespaces.operator' in refused(cm, {'operator': [name]}), name
    # a MachineConfig with a unit of its own, under the collection's name pattern (r1's, renamed)
    unit = {'apiVersion': mc.MC_API_VERSION, 'kind': 'MachineConfig',
            'metadata': {'name': '100-worker-gpuvirt-iommu', 'labels': {mc.ROLE_LABEL: 'worker'}},
            'spec': {'config': {'ignition': {'version': '3.2.0'}, 'systemd': {'units': [{
                'name': 'x.service', 'enabled': True,
                'contents': '[Service]\nExecStart=/bin/sh -c "id > /root/pwn"\n[Install]\nWantedBy=multi-user.target\n'}]}}}}
    assert 'is not the restore script the collection ships' in refused(unit)
    unit['metadata']['name'] = '99-worker-ssh'
    assert 'a name holding "gpuvirt" (machineconfig_name)' in refused(unit)


@pytest.mark.parametrize('name', ['00-worker', '99-master-ssh', '99-worker-ssh', 'rendered-worker-0123'])
def test_an_iommu_machineconfig_under_a_name_of_the_mco_is_refused(name):
    # the review's r5: the builder's own output, named after one of the Machine Config Operator's configs
    msg = refused(iommu(pool='worker', name=name))
    assert 'MachineConfig %s) is refused' % name in msg, msg


def test_the_builders_machineconfigs_pass():
    objects = [iommu(), iommu(blacklist=False), iommu(extra=['vfio_iommu_type1.allow_unsafe_interrupts=1']),
               mc.build_machineconfig('gpu', [], True), mc.build_machineconfig('gpu', mc.iommu_kernel_args('amd', False), True),
               mc.build_pool('gpu'), mc.build_pool('gpu', {'gpuvirt.io/pool': 'gpu'}), vf(), vf(config=None)]
    assert ka.checked_objects(objects) is objects


def test_a_kernel_argument_outside_the_allow_list_is_refused():
    obj = iommu()
    obj['spec']['kernelArguments'].append('init=/bin/sh')
    assert "kernel arg 'init=/bin/sh' is not one the collection sets" in refused(obj), refused(obj)
    obj = iommu()
    obj['spec']['kernelArguments'] = ['systemd.unit=rescue.target']
    assert 'its first kernel argument is' in refused(obj)


def test_an_iommu_machineconfig_with_another_file_or_field_is_refused():
    obj = iommu()
    files_of(obj).append({'path': '/etc/sudoers.d/x', 'mode': 0o440, 'overwrite': True,
                          'contents': {'source': mc.data_url('core ALL=(ALL) NOPASSWD: ALL\n')}})
    assert 'it writes /etc/modprobe.d/blacklist-nouveau.conf, /etc/sudoers.d/x' in refused(obj)
    obj = iommu()
    files_of(obj)[0]['contents']['source'] = mc.data_url('install nouveau /bin/sh -c "id > /root/x"\n')
    assert 'rebuilt, it differs' in refused(obj)
    obj = iommu()
    obj['spec']['extensions'] = ['usbguard']
    assert 'rebuilt, it differs' in refused(obj)
    obj = iommu()
    obj['spec']['config']['passwd'] = {'users': [{'name': 'core', 'sshAuthorizedKeys': ['ssh-ed25519 AAAA']}]}
    assert 'rebuilt, it differs' in refused(obj)


def test_a_vf_machineconfig_is_its_builders_own_to_the_byte():
    # a script that only carries the marker (what the builder itself checks)
    assert 'is not the restore script the collection ships' in refused(vf(script='# Managed by gpuvirt.provision\n'))
    # the real script with one byte more
    assert 'is not the restore script the collection ships' in refused(vf(script=SCRIPT + '\n'))
    # a config outside the role's grammar (a VF name that is no PCI address)
    obj = vf()
    bad = dict(PERSIST, gpus=[{'pf': '0000:41:00.0', 'vfs': {'../../etc/x': 1}}])
    files_of(obj)[1]['contents']['source'] = mc.data_url(json.dumps(bad))
    assert 'its boot-time config:' in refused(obj)
    # an edited unit: another ExecStartPre line
    obj = vf()
    unit = obj['spec']['config']['systemd']['units'][0]
    unit['contents'] = unit['contents'].replace('[Service]\n', '[Service]\nExecStartPre=/bin/sh -c reboot\n')
    assert 'rebuilt, it differs' in refused(obj)
    # a second unit
    obj = vf()
    obj['spec']['config']['systemd']['units'].append({'name': 'x.service', 'enabled': True, 'contents': ''})
    assert 'carries no unit of the vgpu_vf role' in refused(obj)
    # a third file
    obj = vf()
    files_of(obj).append({'path': '/etc/x', 'mode': 0o644, 'overwrite': True, 'contents': {'source': mc.data_url('x')}})
    assert 'rebuilt, it differs' in refused(obj)
    # a contents source that is not a data URL
    obj = vf()
    files_of(obj)[0]['contents']['source'] = 'https://evil.example/x'
    assert 'not a base64 data URL' in refused(obj)
    # the same script, its data URL spelled otherwise: still decoded and compared, then the object rebuilt
    obj = vf()
    files_of(obj)[0]['contents']['source'] = 'data:;base64,' + base64.b64encode(SCRIPT.encode()).decode()
    assert 'rebuilt, it differs' in refused(obj)


def test_a_pool_other_than_the_builders_is_refused():
    pool = mc.build_pool('gpu')
    pool['spec']['machineConfigSelector']['matchExpressions'][0]['values'].append('master')
    assert 'rebuilt, it differs' in refused(pool)
    assert 'is built in' in refused(dict(mc.build_pool('gpu'), metadata={'name': 'worker'}))


def test_secrets_are_pull_secrets_in_the_operator_namespace_alone():
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/dockerconfigjson',
              'metadata': {'name': 'pull', 'namespace': 'nvidia-gpu-operator'},
              'data': {'.dockerconfigjson': 'czNjcjN0'}}
    ops = {'operator': 'nvidia-gpu-operator', 'workload': 'vms'}
    assert ka.checked_objects([secret], ops)
    moved = copy.deepcopy(secret)
    moved['metadata']['namespace'] = 'vms'
    msg = refused(moved, ops)
    assert 'goes in the operator namespace (nvidia-gpu-operator)' in msg and 'czNjcjN0' not in msg
    token = dict(secret, type='kubernetes.io/service-account-token')
    assert "a Secret of type 'kubernetes.io/service-account-token'" in refused(token, ops)
    other = dict(secret, data={'.dockerconfigjson': 'czNjcjN0', 'tls.key': 'czNjcjN0'})
    msg = refused(other, ops)
    assert 'keys other than .dockerconfigjson' in msg and 'czNjcjN0' not in msg
    # a Secret spelled another way is no row of the table
    assert 'not an object the collection applies' in refused(dict(secret, kind='secrets'), ops)


def test_subscriptions_install_their_own_package_alone():
    sub = {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'Subscription',
           'metadata': {'name': 'gpu-operator-certified', 'namespace': 'nvidia-gpu-operator'},
           'spec': {'name': 'some-operator', 'channel': 'stable', 'source': 'x', 'sourceNamespace': 'y'}}
    assert "it subscribes to package 'some-operator'" in refused(sub, {'operator': 'nvidia-gpu-operator'})


def test_a_namespace_object_is_one_the_call_declares():
    ns = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'tenant', 'labels': {
        'pod-security.kubernetes.io/enforce': 'privileged'}}}
    assert 'one of the namespaces this call declares for operator or nfd (nvidia-gpu-operator, openshift-nfd)' in \
        refused(ns, {'operator': 'nvidia-gpu-operator', 'workload': 'tenant'})
    assert ka.checked_objects([dict(ns, metadata=dict(ns['metadata'], name='openshift-nfd'))])


def test_the_declared_namespaces_option_is_checked():
    assert ar.checked_namespaces({'operator': 'a', 'workload': ['b', 'c']}) == {
        'operator': ('a',), 'workload': ('b', 'c'), 'nfd': ('openshift-nfd',)}
    assert ar.checked_namespaces({'kubevirt': ['openshift-cnv', 'kubevirt']})['kubevirt'] == ('openshift-cnv', 'kubevirt')
    for bad, said in (({'nfd': 'x'}, "'nfd' is not a namespace role"), ({'operator': 'A_B'}, 'not a namespace name'),
                      ({'operator': 'openshift-cnv'}, 'a namespace of the platform'), (['x'], 'expected a mapping'),
                      ({'workload': {'a': 1}}, 'expected a namespace or a list')):
        with pytest.raises(ar.RuleError) as err:
            ar.checked_namespaces(bad)
        assert said in str(err.value), str(err.value)


@pytest.mark.parametrize('manager, ok', [
    ('gpuvirt-provision', True), ('gpuvirt-provision-kubevirt-devices', True), ('gpuvirt-provision-dra-gate', True),
    ('kubectl', False), ('gpuvirt-provision-', False), ('gpuvirt-provisionx', False), ('Gpuvirt-provision', False),
    ('gpuvirt-provision-' + 'a' * 41, False), ('', False), (None, False)])
def test_the_field_manager_grammar(manager, ok):
    if ok:
        assert ar.check_field_manager(manager) == manager
    else:
        with pytest.raises(ar.RuleError):
            ar.check_field_manager(manager)


def test_every_row_is_reachable_and_unique():
    keys = [(r.api_version, r.kind, r.namespace) for r in ar.RULES]
    assert len(keys) == len(set(keys))
    assert NOBODY['nfd'] == ('openshift-nfd',)


def test_a_crd_outside_the_chart_s_groups_is_refused_by_the_sink():
    # the upgrade's Helm step sends the chart's CRDs through the sink: the sink holds them to the chart's groups
    # and names itself, as the plan does, whatever list it is given
    crd = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'widgets.example.com'},
           'spec': {'group': 'example.com', 'names': {'plural': 'widgets', 'kind': 'Widget'}, 'scope': 'Cluster'}}
    with pytest.raises(ManifestError, match="is of API group example.com, not one of the chart's"):
        ka.checked_objects([crd], {})
    crd['spec']['group'], crd['metadata']['name'] = 'nvidia.com', 'widgets.example.com'
    with pytest.raises(ManifestError, match='is not named <spec.names.plural>.<spec.group>'):
        ka.checked_objects([crd], {})
