# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' real task paths under ansible-core's strict templating, fast: a role expression that names an
undefined variable, or that ansible-core (2.19 and later) otherwise refuses, fails make unit here instead of in a
hand-run playbook.

Each case is one real ansible-playbook run on the controller (connection local; no host and no API server is
contacted), the cases side by side:

- the cluster phases in render mode, as site.yml runs them (render_open.yml, then the phases' bodies
  phase_vgpu_image.yml, phase_nodes.yml, phase_operator.yml, phase_kubevirt.yml, phase_verify.yml, render_close.yml:
  the facts are given, so gather.yml, which playbooks/<phase>.yml runs first, would only skip), for fleets that together hold every pool of the pool
  table on every platform of the platform table, and take the branches that look at the whole fleet (every GPU
  host a DRA host: the GPU Operator's own GPUCluster; no vGPU host); every cluster role runs (cluster, node_labels,
  gpu_operator, k8s_objects, machineconfig, kubevirt_devices, dra_driver, verify);
- the host roles' read-only validate entry points (kernel_args, vfio, nouveau) on a host of every pool, under the
  pool's traits from the table (IOMMU, host-side vfio binding), as host_prep.yml and preflight.yml put them;
- the host phase of every row with a vGPU interface of its own (playbooks/phase_vgpu_vf.yml, then summary.yml) in apply
  mode, on a host whose sysfs is the driver stand-in of tests/unit/vf_driver.py once the vGPU Manager has loaded
  (the role vgpu_vf runs for real, its files under a temporary root).

The GPU facts are the example inventory's saved facts (real lspci captures, inventories/example/.gpuvirt_facts),
given as host variables as gather.yml leaves them; the group variables are the example's. What the render holds is
checked elsewhere (tests/integration: golden renders, schemas); here every run must complete.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, platform
from sysfs_tree import SysfsTree
from vf_driver import VfBoard

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
EXAMPLE = os.path.join(ROOT, 'inventories', 'example')


# The example host whose saved facts a pool's host takes, chosen by the pool's row (so a new row is run without a
# test edit): a vGPU pool's host the A10 vGPU host's facts and a vGPU config name; a pool NVIDIA's device plugin
# advertises the container host's (an HGX H100: whole GPUs or MIG slices); a DRA pool the DRA host's; any other the
# passthrough host's (a whole GPU, unbound).
def facts_host(pool):
    traits = fleet.pool_traits(pool)
    if traits['vgpu']:
        return 'gpu-v01.example.com'
    if traits['device_plugin']:
        return 'gpu-c01.example.com'
    return 'gpu-p02.example.com' if traits['dra_driver'] else 'gpu-p01.example.com'


def host_vars(pool):
    return {'gpuvirt_vgpu_config': 'A10-12Q'} if fleet.pool_traits(pool)['vgpu'] else {}


def _facts(pool):
    path = os.path.join(EXAMPLE, '.gpuvirt_facts', facts_host(pool) + '.json')
    with open(path, encoding='utf-8') as handle:
        saved = json.load(handle)
    return {k: saved[k] for k in ('gpuvirt_pci_devices', 'gpuvirt_mdev_types', 'gpuvirt_gpu_holders', 'gpuvirt_os_tag')}


def inventory(tmp_path, pools):
    """The example inventory's group_vars, and one host of each of ``pools`` in its group, with its facts."""
    inv = tmp_path / 'inventory'
    shutil.copytree(os.path.join(EXAMPLE, 'group_vars'), inv / 'group_vars')
    children = dict((group, {'hosts': {}}) for group in fleet.GPU_GROUPS)
    # per row: rows may share a group (the vGPU interface picks among them)
    for row in fleet.POOL_TABLE:
        if row.name in pools:
            name = '%s-1' % row.name
            children[row.group]['hosts'][name] = dict(_facts(row.name), gpuvirt_node_name=name,
                                                      ansible_connection='local', **host_vars(row.name))
    (inv / 'hosts.yml').write_text(yaml.safe_dump({'all': {'children': children}}))
    return inv


CLUSTER_PHASES = """
- ansible.builtin.import_playbook: {root}/playbooks/render_open.yml
  vars: {{gpuvirt_render_owner: site}}
- ansible.builtin.import_playbook: {root}/playbooks/phase_vgpu_image.yml
- ansible.builtin.import_playbook: {root}/playbooks/phase_nodes.yml
- ansible.builtin.import_playbook: {root}/playbooks/phase_operator.yml
- ansible.builtin.import_playbook: {root}/playbooks/phase_kubevirt.yml
- ansible.builtin.import_playbook: {root}/playbooks/phase_verify.yml
- ansible.builtin.import_playbook: {root}/playbooks/render_close.yml
  vars: {{gpuvirt_render_owner: site}}
""".format(root=ROOT)


# What a render needs beside the example's group_vars: the KubeVirt release the DRA driver's values pin (the
# example leaves it empty for apply mode to read).
EXTRA_VARS = {'gpuvirt_cluster_mode': 'render', 'dra_driver_kubevirt_version': 'v1.9.0'}
# A fleet without vGPU hosts keeps the operator's own vGPU configs: the example's custom A10 configs are checked
# against the vGPU hosts' GPUs, and refused with none (rightly).
NO_VGPU_VARS = {'gpu_operator_vgpu_configs': {}, 'gpu_operator_vgpu_config_default': 'default'}


def _pools(without):
    """The pools whose row does not set the column ``without`` (dra_driver, device_plugin)."""
    return [p for p in fleet.POOLS if not fleet.pool_traits(p)[without]]


# One fleet per run, chosen so that together they take every pool on every platform and each whole-fleet branch.
# The GPU Operator serves no DRA node beside a node of the classic device plugin (nvidia.com/gpu, MIG slices) under
# one ClusterPolicy (the gpu_operator role refuses it: docs/pools/dra.md, "The operator validator"), so the pools are
# split in two fleets by the columns that say it; a fleet of only DRA hosts takes the GPU Operator's own GPUCluster
# on OpenShift.
FIRST, LAST = platform.PLATFORM_NAMES[0], platform.PLATFORM_NAMES[-1]
CASES = {
    '%s-without-dra' % FIRST: (_pools('dra_driver'), FIRST),
    '%s-without-device-plugin' % LAST: (_pools('device_plugin'), LAST),
    '%s-only-dra' % FIRST: ([p for p in fleet.POOLS if p not in _pools('dra_driver')], FIRST),
}
# a platform row between the first and the last takes both fleets (every pool on it, never DRA beside the device
# plugin)
for middle in platform.PLATFORM_NAMES[1:-1]:
    CASES.update({'%s-without-dra' % middle: (_pools('dra_driver'), middle),
                  '%s-without-device-plugin' % middle: (_pools('device_plugin'), middle)})


# The host roles' read-only entry points, on a host of every pool, under the conditions host_prep.yml and
# preflight.yml put them (the pool's traits from the table): nothing on this machine is read but a sysfs copy
# holding one NVIDIA GPU (vfio_sysfs_root, the device named by address) and the facts Ansible gathers.
HOST_VALIDATE = """
- hosts: {groups}
  connection: local
  gather_facts: true
  gather_subset: [min]
  vars:
    strict_pool: "{{{{ gpuvirt_pool | default(group_names | gpuvirt.provision.gpu_pool) }}}}"
    strict_traits: "{{{{ strict_pool | gpuvirt.provision.pool_traits }}}}"
  tasks:
    - name: Validate the kernel arguments (no change)
      ansible.builtin.include_role:
        name: gpuvirt.provision.kernel_args
        tasks_from: validate
      when: strict_traits.iommu
    - name: Validate the vfio selection (no change)
      ansible.builtin.include_role:
        name: gpuvirt.provision.vfio
        tasks_from: validate
      when: strict_traits.host_vfio
    - name: Validate the nouveau settings (no change)
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
        tasks_from: validate
      when: strict_traits.iommu
""".format(groups=':'.join(fleet.GPU_GROUPS))
CASES['host-roles-validate'] = (fleet.POOLS, None)

# The host phase after the operator: the hosts of the rows whose interface is vendor-specific VFIO. Their facts are
# the example's mdev vGPU host's until the phase gathers them again from the stand-in (the L40S capture's types).
VGPU_VF_PHASE = 'vgpu-vf-phase'
VGPU_VF_PHASES = """
- ansible.builtin.import_playbook: {root}/playbooks/phase_vgpu_vf.yml
- ansible.builtin.import_playbook: {root}/playbooks/summary.yml
""".format(root=ROOT)
CASES[VGPU_VF_PHASE] = ([r.name for r in fleet.POOL_TABLE if r.interface == 'vendor-vfio'], VGPU_VF_PHASE)


def start(tmp_path, pools, platform_name):
    """Start one run (the runs go side by side: each is mostly waiting on its own module processes)."""
    inv = inventory(tmp_path, pools)
    path = tmp_path / 'play.yml'
    extra = dict(EXTRA_VARS, **({} if any(fleet.pool_traits(p)['vgpu'] for p in pools) else NO_VGPU_VARS))
    if platform_name == VGPU_VF_PHASE:
        board = VfBoard(tmp_path / 'sys')
        os.makedirs(os.path.join(board.root, 'module', 'nvidia'))
        with open(os.path.join(board.root, 'module', 'nvidia', 'version'), 'w', encoding='utf-8') as handle:
            handle.write('550.54.16\n')
        (tmp_path / 'proc').mkdir()
        (tmp_path / 'root' / 'etc' / 'systemd' / 'system').mkdir(parents=True)
        # the role refuses a root without os-release (it might be CoreOS): this machine's own
        shutil.copy('/etc/os-release', str(tmp_path / 'root' / 'etc' / 'os-release'))
        path.write_text(VGPU_VF_PHASES)
        # a platform whose hosts are managed over SSH: on a MachineConfig platform the phase refuses (the MCO owns them)
        extra.update(gpuvirt_cluster_mode='apply', gpuvirt_platform='kubernetes', ansible_become=False, gpuvirt_vgpu_config='l40s',
                     gpu_operator_vgpu_configs={'l40s': {'L40S-24Q': 2}}, vgpu_vf_sysfs_root=board.root,
                     vgpu_vf_proc_root=str(tmp_path / 'proc'), vgpu_vf_systemd=False,
                     vgpu_vf_sriov_manage=str(tmp_path / 'no-sriov-manage'), vgpu_vf_root_dir=str(tmp_path / 'root'))
    elif platform_name is None:
        tree = SysfsTree(tmp_path / 'sys')
        tree.device('0000:41:00.0', '0302', '10de', '2236', group=7, parent='pci0000:40')
        path.write_text(HOST_VALIDATE)
        # the device by address, as tests/unit/roles/test_vfio_validate.py selects it from a sysfs copy
        extra.update(kernel_args_iommu_vendor='intel', vfio_sysfs_root=tree.root, vfio_gpus=False,
                     vfio_bdfs=['0000:41:00.0'])
    else:
        path.write_text(CLUSTER_PHASES)
        extra.update(gpuvirt_platform=platform_name)
    extra.update(gpuvirt_render_dir=str(tmp_path / 'rendered'), ansible_python_interpreter=sys.executable)
    # no cluster of this machine is read: $KUBECONFIG names no file (a render that names a cluster reads from it)
    env = dict(os.environ, KUBECONFIG=str(tmp_path / 'no-kubeconfig'))
    log = open(tmp_path / 'log', 'w+', encoding='utf-8')  # pylint: disable=consider-using-with
    proc = subprocess.Popen(['ansible-playbook', '-i', str(inv), str(path), '-e', json.dumps(extra)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    return proc, log


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    started = dict((name, start(tmp_path_factory.mktemp(name), *case)) for name, case in CASES.items())
    yield started
    for proc, log in started.values():
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log.close()


@pytest.mark.parametrize('case', sorted(CASES))
def test_role_paths_run(runs, case):
    proc, log = runs[case]
    rc = proc.wait(timeout=900)
    log.seek(0)
    out = log.read()
    assert rc == 0, out
    recap = [ln for ln in out.splitlines() if ' : ok=' in ln]
    assert recap and not [ln for ln in recap if re.search(r'(failed|unreachable)=[1-9]', ln)], out


def test_the_vgpu_vf_phase_set_the_profiles(runs):
    # the run above completed (test_role_paths_run); here: it did the work, and the summary says so
    proc, log = runs[VGPU_VF_PHASE]
    proc.wait(timeout=900)
    log.seek(0)
    out = ' '.join(log.read().split())
    for row in CASES[VGPU_VF_PHASE][0]:
        assert '%s-1: pool %s, vGPU interface vendor-vfio (the host shows vendor-vfio' % (row, row) in out, out
        assert '0000:41:00.4 got NVIDIA L40S-24Q (1155)' in out and 'VF profiles: 0000:41:00.4: set' in out, out
