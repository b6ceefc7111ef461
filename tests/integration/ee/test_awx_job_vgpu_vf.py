# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_vf job template (awx/vars.yml awx_phases: playbooks/vgpu_vf.yml) run as AWX runs it: transmit | the
EE's ``ansible-runner worker`` | process (ee_jobs.run_job; test_awx_jobs.py's docstring says what AWX does and where
it was read), over SSH with the Machine credential, become root through sudo with the password answered at
ansible-playbook's prompt.

The GPU host stand-in (conftest.py ``machine``) is a host of gpu_vm_vgpu whose facts are as preflight left them
before the vGPU Manager loaded (given in the inventory, as the other jobs here: no GPU in a container). Its sysfs is
a stand-in tree inside the container, laid out on the test machine by tests/unit/vf_driver.py VfBoard as NVIDIA's
driver leaves it once the vGPU Manager has loaded (an L40S PF with four VFs on, each listing the L40S Q types,
none holding a vGPU, module/nvidia/version present) and copied in with ``podman cp``; the role's test-only roots
point into it (vgpu_vf_sysfs_root, vgpu_vf_proc_root: an empty procfs stand-in, no process holds a VF;
vgpu_vf_root_dir: the boot-time restore's prefix, root-owned and closed to others as the role requires).

The files of the tree are plain files: a write is kept, as the driver keeps an accepted id, but nothing reacts to
it during a job (the driver refusing ids and shrinking the creatable lists is VfBoard.writer's part in the unit
tests, which a plain directory cannot play). After the run job the test lays out what the driver shows once the
two vGPUs exist (VfBoard.set on the test machine's copy, the changed files written into the container): the VFs
holding a vGPU list nothing and the full GPU lists nothing on its free VFs either, so the second run job can only
know which type the VFs hold from the boot-time config the first one saved.

systemd does not run in the container (its command is sshd): the role's own switch ``vgpu_vf_systemd: false``
leaves out the unit's enable and daemon reload, as the role's unit tests do; the unit, the restore script and its
config are installed under vgpu_vf_root_dir and checked here, and the script is run once by hand after a simulated
reboot. molecule/vm runs the enable and a real reboot on a VM.
"""
from __future__ import annotations

import json
import os
import shutil
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ee_jobs import (EE_PYTHON, ROOT, assert_no_secret, awx_job, facts, job_secrets, run_job,  # noqa: E402
                     ssh_vars, stats, task_results)
from test_playbooks import A10  # noqa: E402  (tests/integration/playbooks, on the path through ee_jobs)
from vf_driver import VfBoard  # noqa: E402  (tests/unit, on the path through ee_jobs)

HOST = 'vf-1'
PF, VFS = '0000:41:00.0', ['0000:41:00.4', '0000:41:00.5', '0000:41:00.6', '0000:41:00.7']
# the L40S PF as pci_devices reports it (pci.ids "AD102GL [L40S]", device 26b9: VfBoard's device id) on the
# nvidia driver, the playbook tests' GPU facts otherwise
L40S = dict(A10, bdf=PF, device_id='26b9', device_name='AD102GL [L40S]', driver='nvidia')
# the node's vGPU config: two L40S-24Q (id 1155 in the L40S capture VfBoard lists) on the 48 GB GPU
CONFIGS = {'l40s-2x24': {'L40S-24Q': 2}}
TYPE_ID, TYPE_NAME = '1155', 'NVIDIA L40S-24Q'
# inside the SSH host container, root-owned (podman cp chowns what it copies to the container's user, root)
STANDIN = '/srv/gpuvirt-vf'
SYSFS, PROC, ROOT_DIR = STANDIN + '/sys', STANDIN + '/proc', STANDIN + '/root'
UNIT = ROOT_DIR + '/etc/systemd/system/gpuvirt-vgpu-vf.service'
SCRIPT = ROOT_DIR + '/usr/local/libexec/gpuvirt/vgpu-vf-restore'
CONFIG = ROOT_DIR + '/etc/gpuvirt/vgpu-vf-profiles.json'
SURVEY = {'gpuvirt_gpu_hosts_pattern': 'gpu_vm_vgpu', 'host_prep_serial': 1, 'gpuvirt_cluster_mode': 'apply',
          'gpuvirt_platform': 'kubernetes'}

# Every path, type, mode, owner, link target and file content under the stand-in, read inside the container.
SNAPSHOT = r'''
import json, os, sys
out = {}
for top, dirs, files in os.walk(sys.argv[1]):
    for name in dirs + files:
        path = os.path.join(top, name)
        st = os.lstat(path)
        if os.path.islink(path):
            out[path] = ['link', os.readlink(path)]
        elif os.path.isdir(path):
            out[path] = ['dir', oct(st.st_mode), st.st_uid, st.st_gid]
        else:
            with open(path, 'rb') as handle:
                out[path] = ['file', oct(st.st_mode), st.st_uid, st.st_gid, handle.read().decode('latin-1')]
print(json.dumps(out))
'''


def in_host(machine, *argv, **kwargs):
    proc = subprocess.run(['podman', 'exec', '-i', machine['container']] + list(argv), capture_output=True, text=True,
                          check=False, **kwargs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def snapshot(machine):
    return json.loads(in_host(machine, 'python3', '-c', SNAPSHOT, STANDIN))


def current_types(machine):
    """Each VF's nvidia/current_vgpu_type, read in the container."""
    return json.loads(in_host(machine, 'python3', '-c', 'import json, sys\n'
                              'print(json.dumps([open(p).read().strip() for p in sys.argv[1:]]))',
                              *['%s/bus/pci/devices/%s/nvidia/current_vgpu_type' % (SYSFS, vf) for vf in VFS]))


def push(machine, board, rels):
    """Write the board's files ``rels`` (relative to its root) into the container's copy, as root."""
    data = {}
    for rel in rels:
        with open(os.path.join(board.root, rel)) as handle:
            data[rel] = handle.read()
    in_host(machine, 'python3', '-c', 'import json, os, sys\n'
            'for rel, text in json.load(sys.stdin).items():\n'
            '    with open(os.path.join(sys.argv[1], rel), "w") as handle:\n'
            '        handle.write(text)\n', SYSFS, input=json.dumps(data))


@pytest.fixture(scope='module')
def vf_host(machine, tmp_path_factory):
    """One VfBoard for the module's jobs: laid out here, copied into the SSH host container once."""
    local = tmp_path_factory.mktemp('vf-standin')
    board = VfBoard(local / 'sys')
    os.makedirs(os.path.join(board.root, 'module', 'nvidia'))
    with open(os.path.join(board.root, 'module', 'nvidia', 'version'), 'w') as handle:
        # the driver the vGPU Manager loaded (the phase waits for this file)
        handle.write('550.54.16\n')
    (local / 'proc').mkdir()
    (local / 'root' / 'etc' / 'systemd' / 'system').mkdir(parents=True)
    # the role reads the root's os-release (a CoreOS host is refused; no os-release is refused too)
    shutil.copy('/etc/os-release', str(local / 'root' / 'etc' / 'os-release'))
    subprocess.run(['podman', 'cp', str(local), '%s:%s' % (machine['container'], STANDIN)], check=True)
    return board


def inventory(machine):
    host = dict(facts(gpu=L40S), **ssh_vars(machine))
    host.update({'gpuvirt_vgpu_config': 'l40s-2x24',
                 # test only: the role's roots pointed at the stand-in; no systemd in the container
                 'vgpu_vf_sysfs_root': SYSFS, 'vgpu_vf_proc_root': PROC, 'vgpu_vf_root_dir': ROOT_DIR,
                 'vgpu_vf_systemd': False, 'vgpu_vf_driver_timeout': 30})
    return {'all': {
        'vars': {'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'kubernetes',
                 'gpu_operator_vgpu_configs': CONFIGS},
        'children': {'gpu_vm_vgpu': {'hosts': {HOST: host}}},
        'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': EE_PYTHON}}}}


def kubevirt_cluster(kube):
    """The API server the job's KubeVirt gate reads (playbooks/vgpu_vf.yml applies site.yml's preflight gate: a
    vendor-VFIO host needs KubeVirt 1.9.0): a KubeVirt CR whose status.observedKubeVirtVersion virt-operator would
    write, written here in its place."""
    return kube([{'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt',
                  'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'}, 'spec': {},
                  'status': {'observedKubeVirtVersion': 'v1.9.0'}}], openshift=False)


def job(tmp_path, machine, name, cluster, job_type='run'):
    pdd, params = awx_job(tmp_path / name, 'vgpu_vf', inventory(machine), {}, SURVEY, machine,
                          kubeconfig=cluster.kubeconfig, job_type=job_type)
    rc, events, out = run_job(tmp_path, pdd, params)
    assert rc == 0, out[-4000:]
    assert_no_secret(pdd, job_secrets(machine))
    summary = stats(events)
    assert summary['failures'] == {} and summary['dark'] == {}, summary
    return events, summary


def module_result(events):
    """The result of the role's vgpu_vf_profiles task, as its runner_on_ok event carries it."""
    (res,) = [e['event_data']['res'] for e in events if e.get('event') == 'runner_on_ok'
              and e['event_data'].get('task_action') == 'gpuvirt.provision.vgpu_vf_profiles']
    return res


def stdout_of(events):
    """The events' stdout as AWX shows it, without colour codes, whitespace runs as one space."""
    return ' '.join(re.sub(r'\x1b\[[0-9;]*m', '', ''.join(e.get('stdout', '') for e in events)).split())


def changed_tasks(events):
    return sorted(task for task, hosts in task_results(events).items() if hosts.get(HOST))


PERSIST_TASKS = ['Create our directories', 'Install the restore script', 'Install the systemd unit',
                 'Write the boot-time config']


def test_vgpu_vf_check_job_says_what_it_would_set_and_writes_nothing(tmp_path, kube, machine, vf_host):
    cluster = kubevirt_cluster(kube)
    before = snapshot(machine)
    assert current_types(machine) == ['0'] * 4
    events, summary = job(tmp_path, machine, 'check', cluster, job_type='check')
    # nothing written: every file, link, mode and owner of the stand-in as it was (the boot-time files included)
    assert snapshot(machine) == before
    assert list(summary['changed']) == [HOST], summary
    # the VFs and the profiles a run would give them: the first two free VFs get the config's two L40S-24Q
    rows = module_result(events)['vfs']
    assert [(r['vf'], r['action'], r['after'], r['name_after']) for r in rows] == [
        (VFS[0], 'set', TYPE_ID, TYPE_NAME), (VFS[1], 'set', TYPE_ID, TYPE_NAME),
        (VFS[2], 'none', '0', None), (VFS[3], 'none', '0', None)], rows
    assert changed_tasks(events) == sorted(['Give the VFs their vGPU profiles'] + PERSIST_TASKS)
    out = stdout_of(events)
    assert '%s: pool vm-vgpu-vf, vGPU interface vendor-vfio (the host shows vendor-vfio: %s' % (HOST, VFS[0]) in out
    assert '"%s: set", "%s: set", "%s: none", "%s: none"' % tuple(VFS) in out, out[-3000:]


def test_vgpu_vf_run_job_sets_the_profiles_then_changes_nothing(tmp_path, kube, machine, vf_host):
    cluster = kubevirt_cluster(kube)
    assert current_types(machine) == ['0'] * 4
    events, summary = job(tmp_path, machine, 'first', cluster)
    assert list(summary['changed']) == [HOST], summary
    assert changed_tasks(events) == sorted(['Give the VFs their vGPU profiles'] + PERSIST_TASKS)
    # each VF the config asks for holds its type id (read in the container), the others none
    assert current_types(machine) == [TYPE_ID, TYPE_ID, '0', '0']
    out = stdout_of(events)
    assert '%s: pool vm-vgpu-vf, vGPU interface vendor-vfio' % HOST in out and 'setting the VF profiles' in out
    assert '"%s got %s (%s)", "%s got %s (%s)"' % (VFS[0], TYPE_NAME, TYPE_ID, VFS[1], TYPE_NAME, TYPE_ID) in out
    report = [e['event_data']['res']['ansible_facts']['__gpuvirt_vgpu_vf_report'] for e in events
              if e.get('event') == 'runner_on_ok' and e['event_data']['task'] == 'Keep what this phase did for the '
              'summary']
    assert report == [{'pool': 'vm-vgpu-vf', 'interface': 'vendor-vfio', 'ran': True, 'changed': True,
                       'vfs': ['%s: set' % VFS[0], '%s: set' % VFS[1], '%s: none' % VFS[2],
                               '%s: none' % VFS[3]]}], report
    # vgpu_vf_persist: the boot-time restore under vgpu_vf_root_dir, root-owned; no systemd here, so the role's
    # switch vgpu_vf_systemd false skipped the enable
    skipped = [e['event_data']['task'] for e in events if e.get('event') == 'runner_on_skipped']
    assert 'Enable the unit' in skipped, skipped
    tree = snapshot(machine)
    assert tree[UNIT][:4] == ['file', '0o100644', 0, 0], tree[UNIT][:4]
    assert 'ExecStart=/usr/bin/python3 /usr/local/libexec/gpuvirt/vgpu-vf-restore ' \
           '/etc/gpuvirt/vgpu-vf-profiles.json\n' in tree[UNIT][4], tree[UNIT][4]
    with open(os.path.join(ROOT, 'roles', 'vgpu_vf', 'files', 'gpuvirt_vgpu_vf_restore.py')) as handle:
        assert tree[SCRIPT] == ['file', '0o100755', 0, 0, handle.read()]
    assert tree[CONFIG][:4] == ['file', '0o100644', 0, 0], tree[CONFIG][:4]
    saved = json.loads(tree[CONFIG][4])
    assert saved['gpus'] == [{'pf': PF, 'vfs': {VFS[0]: int(TYPE_ID), VFS[1]: int(TYPE_ID)}}], saved
    assert saved['types'] == {TYPE_ID: TYPE_NAME} and saved['sysfs_root'] == SYSFS, saved

    # what the driver shows once the two vGPUs exist: the VFs that hold one list nothing, and the free VFs of the
    # full GPU (2 x 24 GB of 48) list nothing either (vf_driver.py's rules, with their sources)
    for vf in VFS[:2]:
        vf_host.set(vf, int(TYPE_ID))
    push(machine, vf_host, ['bus/pci/devices/%s/nvidia/%s' % (vf, name) for vf in VFS
                            for name in ('creatable_vgpu_types', 'current_vgpu_type')])
    assert 'L40S' not in in_host(machine, 'sh', '-c', 'cat %s/bus/pci/devices/*/nvidia/creatable_vgpu_types' % SYSFS)
    before = snapshot(machine)

    # the same job again: the saved config names the type the VFs hold; nothing changes and nothing is written
    events, summary = job(tmp_path, machine, 'second', cluster)
    assert summary['changed'] == {}, summary
    assert changed_tasks(events) == []
    rows = module_result(events)['vfs']
    assert [(r['vf'], r['action']) for r in rows] == [(VFS[0], 'keep'), (VFS[1], 'keep'), (VFS[2], 'none'),
                                                      (VFS[3], 'none')], rows
    assert snapshot(machine) == before

    # a reboot: the driver comes back with the VFs on and no vGPU; the restore script, as the unit's ExecStart runs
    # it (paths under vgpu_vf_root_dir here), gives the two VFs their type again
    fresh = VfBoard(tmp_path / 'rebooted' / 'sys')
    push(machine, fresh, ['bus/pci/devices/%s/nvidia/%s' % (vf, name) for vf in VFS
                          for name in ('creatable_vgpu_types', 'current_vgpu_type')])
    assert current_types(machine) == ['0'] * 4
    said = in_host(machine, '/usr/bin/python3', SCRIPT, CONFIG)
    assert current_types(machine) == [TYPE_ID, TYPE_ID, '0', '0'], said
    assert said.splitlines()[-3:] == ['<6>VF %s got %s (%s)' % (vf, TYPE_NAME, TYPE_ID) for vf in VFS[:2]] + [
        '<6>vGPU profiles restored on 1 GPU(s)'], said
