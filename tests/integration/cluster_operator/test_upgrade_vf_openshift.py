# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/upgrade.yml's vendor-specific VFIO step on OpenShift: the roll restarts gpuvirt-vgpu-vf.service, the
boot-time unit the pool's VF MachineConfig installed, on the node's inventory host (roles/upgrade tasks/vf.yml,
method 'restart'), against a real kube-apiserver (the stand-ins of test_upgrade.py) and a real systemd.

The host is a Podman container of the collection's Debian 12 systemd image (tools/images/build-base-image.sh
gpuvirt-debian12-systemd --systemd, the image Molecule's default scenario runs), reached by Ansible's podman
connection. Its files are the VF MachineConfig's as the Machine Config Operator writes them: the Ignition
storage.files and systemd.units of plugins/module_utils/manifests/machineconfig.py build_vgpu_vf_machineconfig,
written byte for byte with their modes, the unit enabled. The GPU is the driver stand-in's sysfs tree
(tests/unit/vf_driver.py VfBoard), bind-mounted at the same path: the kubelet stand-in resets the VFs' profiles when
it removes the vGPU Manager pod (the driver reload), the real unit's restore script sets them again when systemd
restarts it, and the device plugin stand-in (KubeVirt's, advertising a VF only once its profile is set) brings the
node's allocatable back. What is not real: the GPU, the driver, RHCOS (Debian's systemd 252 runs the unit; RHCOS 9
ships 252 too) and the MCO itself (its file writes are done here).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
from test_upgrade import (L40S_24Q, NODES, cluster_version, flat, hashes, profiles, setup, vf_boards,  # noqa: E402
                          vf_inventory)
from kube_cluster import write_summary  # noqa: E402
import tool_gate  # noqa: E402

IMAGE = 'localhost/gpuvirt-debian12-systemd'
UNIT = 'gpuvirt-vgpu-vf.service'
PF = '0000:41:00.0'


def podman(*args, check=True):
    proc = subprocess.run(['podman'] + list(args), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError('podman %s: %s%s' % (' '.join(args), proc.stdout, proc.stderr))
    return proc


def _image_ready():
    """'' once podman and the image are there: the image is built when missing (the script reuses an image of the
    same recipe and waits for a build another target runs at the same time); no podman skips here and fails where the
    tools are required (tool_gate: CI, make test)."""
    if not shutil.which('podman'):
        tool_gate.lacking('needs podman (Debian package podman), which is not installed')
    if podman('image', 'exists', IMAGE, check=False).returncode != 0:
        build = subprocess.run([os.path.join(ROOT, 'tools', 'images', 'build-base-image.sh'),
                                'gpuvirt-debian12-systemd', '--systemd'], capture_output=True, text=True, check=False)
        if build.returncode != 0 or podman('image', 'exists', IMAGE, check=False).returncode != 0:
            raise AssertionError('the image %s could not be built (tools/images/build-base-image.sh '
                                 'gpuvirt-debian12-systemd --systemd):\n%s' % (IMAGE, (build.stdout + build.stderr)[-3000:]))
    return ''


def machineconfig(board, timeout):
    """The pool's VF MachineConfig, built as the vgpu_vf phase builds it: the role's restore script and the boot-time
    config of the two VFs on L40S-24Q (the profiles playbooks/vgpu_vf.yml set before the upgrade)."""
    from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
    with open(os.path.join(ROOT, 'roles', 'vgpu_vf', 'files', 'gpuvirt_vgpu_vf_restore.py'), encoding='utf-8') as f:
        script = f.read()
    vfs = board.vfs[PF][:2]
    config = {'version': 1, 'managed_by': 'gpuvirt.provision', 'sysfs_root': board.root,
              'sriov_manage': '/usr/lib/nvidia/sriov-manage', 'timeout': timeout,
              'gpus': [{'pf': PF, 'vfs': dict((vf, int(L40S_24Q)) for vf in vfs)}],
              'types': {L40S_24Q: 'NVIDIA L40S-24Q'}}
    return mc.build_vgpu_vf_machineconfig('worker', script, '/usr/bin/python3', timeout, config=config)


class Host(object):
    """A systemd container standing for the node's RHCOS host, its files the MachineConfig's."""

    def __init__(self, board):
        self.name = 'gpuvirt-upgrade-vf-%s' % uuid.uuid4().hex[:10]
        self.board = board
        podman('run', '-d', '--name', self.name, '--systemd=always', '--network=none',
               '-v', '%s:%s' % (board.root, board.root), IMAGE)

    def sh(self, command, check=True):
        return podman('exec', self.name, 'bash', '-c', command, check=check)

    def wait_booted(self):
        # systemd's own answer: running (or degraded: a unit of the minimal image that needs what a container lacks)
        state = self.sh('for i in $(seq 1 60); do s=$(systemctl is-system-running 2>/dev/null); '
                        'case "$s" in running|degraded) echo "$s"; exit 0;; esac; sleep 1; done; echo "$s"',
                        check=False).stdout.strip()
        assert state in ('running', 'degraded'), 'systemd in %s did not boot: %s' % (self.name, state)

    def install(self, mc_obj):
        """Write the MachineConfig's Ignition files and units as the MCO does (mode, contents), enable the units."""
        from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.machineconfig import decode_data_url
        config = mc_obj['spec']['config']
        for entry in config['storage']['files']:
            self.put(entry['path'], decode_data_url(entry['contents']['source']), entry['mode'])
        for unit in config['systemd']['units']:
            self.put('/etc/systemd/system/' + unit['name'], unit['contents'], 0o644)
            assert unit['enabled'] is True
        self.sh('systemctl daemon-reload && systemctl enable %s' % UNIT)

    def put(self, path, text, mode):
        proc = subprocess.run(['podman', 'exec', '-i', self.name, 'bash', '-c',
                               'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod %o "$1"' % mode, '_', path],
                              input=text, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr

    def invocation(self):
        return self.sh('systemctl show -p InvocationID --value %s' % UNIT).stdout.strip()

    def active(self):
        return self.sh('systemctl is-active %s' % UNIT, check=False).stdout.strip()

    def close(self):
        podman('rm', '-f', '-t', '0', self.name, check=False)


@pytest.fixture
def vf_host(tmp_path):
    why = _image_ready()
    if why:
        pytest.skip(why)
    made = []

    def start(board):
        host = Host(board)
        made.append(host)
        host.wait_booted()
        return host
    yield start
    for host in made:
        host.close()


def openshift_inventory(tmp_path, boards, host):
    """vf_inventory's gpu-1 alone (its vGPU facts put it in vm-vgpu-vf), reached in the container over Podman with
    the container's Python; localhost is the controller (implicit: ansible-playbook's own Python)."""
    path = vf_inventory(tmp_path, boards)
    with open(path, encoding='utf-8') as handle:
        inv = json.load(handle)
    hosts = inv['all']['children']['gpu_vm_vgpu']['hosts']
    # gpu-2 is the cluster's mdev vGPU node here (no board in setup): not an inventory host of a VF row
    del hosts['gpu-2']
    entry = hosts['gpu-1']
    for key in ('vgpu_vf_root_dir', 'vgpu_vf_proc_root', 'vgpu_vf_sriov_manage'):
        entry.pop(key)
    entry.update(ansible_connection='containers.podman.podman', ansible_host=host.name,
                 ansible_python_interpreter='/usr/bin/python3')
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(inv, handle)
    return path


def upgrade(tmp_path, cluster, inventory, *args, **extra):
    """test_upgrade.upgrade without the interpreter as an extra variable (it would be the controller's for the
    container too)."""
    cache = tmp_path / 'tmp'
    cache.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG'}
    env.update(HOME=str(tmp_path), TMPDIR=str(cache))
    extra_vars = dict({'gpuvirt_kubeconfig': cluster.kubeconfig, 'upgrade_nodes': list(NODES),
                       'upgrade_poll_delay': 1, 'upgrade_node_timeout': 30, 'upgrade_vm_wait_timeout': 20,
                       'upgrade_vm_policy': 'stop', 'gpu_operator_vgpu_configs': {'l40s': {'L40S-24Q': 2}},
                       'kubevirt_devices_enabled': False}, **extra)
    cmd = ['ansible-playbook', '-i', inventory, os.path.join(ROOT, 'playbooks', 'upgrade.yml'),
           '-e', json.dumps(extra_vars)] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def test_openshift_vendor_vfio_node_gets_its_profiles_back_by_a_real_restart_of_the_machineconfig_unit(
        tmp_path, kube, vf_host):
    boards = vf_boards(tmp_path)
    board = boards['gpu-1']
    host = vf_host(board)
    host.install(machineconfig(board, timeout=30))
    host.sh('systemctl start %s' % UNIT)
    assert host.active() == 'active'
    booted = host.invocation()
    # OpenShift (a ClusterVersion) with a new vGPU Manager revision; gpu-1 is the vendor-VFIO node, gpu-2 an mdev one
    cluster = setup(kube, openshift=True, new_revision=True, objects=[cluster_version()],
                    boards={'gpu-1': board})
    inv = openshift_inventory(tmp_path, boards, host)

    rc, log = upgrade(tmp_path, cluster, inv, '--check')
    assert rc == 0, log
    # a MachineConfig platform: the unit's restart, not the vgpu_vf role (the MCO owns the host's files)
    assert 'then give its VFs their vGPU profiles again: restart gpuvirt-vgpu-vf.service on host gpu-1' in flat(log), log
    assert host.invocation() == booted

    rc, log = upgrade(tmp_path, cluster, inv)
    assert rc == 0, log
    assert hashes(cluster, 'gpu-1') == ['new'] and hashes(cluster, 'gpu-2') == ['new'], log
    # the driver reload reset the profiles; the restarted unit's script set the two again
    assert sorted(profiles(board).values()) == ['0', '0', L40S_24Q, L40S_24Q], log
    # systemd ran the unit again (a new invocation), and it succeeded (oneshot, RemainAfterExit)
    assert host.invocation() != booted and host.active() == 'active'
    assert 'Restart gpuvirt-vgpu-vf.service (MachineConfig platform) on gpu-1' in flat(log), log
    node = cluster.get('v1', 'Node', 'gpu-1')
    assert node['status']['allocatable']['nvidia.com/AD102GL_L40S'] == '2'
    assert not node['spec'].get('unschedulable')


def test_openshift_a_failing_unit_restart_stops_the_roll_naming_the_node_with_the_second_untouched(
        tmp_path, kube, vf_host):
    boards = vf_boards(tmp_path)
    board = boards['gpu-1']
    host = vf_host(board)
    host.install(machineconfig(board, timeout=10))
    host.sh('systemctl start %s' % UNIT)
    # the reloaded driver lists no L40S-24Q on the VFs any more (the board's type lists emptied after the pod's
    # removal): the restore script finds the type not creatable and exits 1, so systemd fails the restart job
    cluster = setup(kube, openshift=True, new_revision=True, objects=[cluster_version()],
                    boards={'gpu-1': board})
    board_vfs = board.vfs[PF]

    def no_types(_cluster):
        for vf in board_vfs:
            path = os.path.join(board.root, 'bus', 'pci', 'devices', vf, 'nvidia', 'creatable_vgpu_types')
            if os.path.exists(path) and profiles(board).get(vf) in ('0', ''):
                with open(path, 'w', encoding='utf-8') as handle:
                    handle.write('ID    : vGPU Name\n')
        return False
    cluster.controller('driver-lists-no-types', no_types, interval=0.2)
    inv = openshift_inventory(tmp_path, boards, host)

    rc, log = upgrade(tmp_path, cluster, inv)
    text = flat(log)
    assert rc != 0, log
    assert 'The upgrade stopped at gpu-1' in text, log
    assert ('node gpu-1 (host gpu-1): its VF profiles could not be set again after its vGPU Manager pod was replaced '
            '("Restart gpuvirt-vgpu-vf.service (MachineConfig platform) on gpu-1"') in text, log
    assert host.active() in ('failed', 'activating'), host.active()
    # gpu-2: not a write, its pods as they were; gpu-1 stays cordoned for a second run to resume
    assert not [w for w in write_summary(cluster.attempts()) if 'gpu-2' in w], write_summary(cluster.attempts())
    assert hashes(cluster, 'gpu-2') == ['old']
    stuck = cluster.get('v1', 'Node', 'gpu-1')
    assert stuck['spec']['unschedulable'] is True
    assert stuck['metadata']['annotations']['gpuvirt.provision/upgrade-cordoned'] == 'true'
