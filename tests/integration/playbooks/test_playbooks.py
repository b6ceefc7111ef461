# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The product playbooks as a user runs them.

* ``ansible-playbook --syntax-check`` of every playbook against both shipped inventories (example, lab).
* ``playbooks/preflight.yml`` for real (ansible-playbook) against a good inventory and against bad ones: each bad
  input stops the run with a message naming the value, and nothing changes. The GPU hosts here are this machine
  reached with the local connection; their GPU facts are given in the inventory (real lspci output of a GPU host
  cannot be produced here), so the preflight judges those facts, while the host-prep validations (kernel
  arguments, vfio addresses) run for real on this machine, read-only.
* ``playbooks/site.yml`` with a bad inventory stops in preflight: no later phase starts, nothing is rendered.
The lab VM run of preflight is in molecule/vm (prepare.yml).
"""
from __future__ import annotations

import copy
import glob
import json
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
PLAYBOOKS = sorted(glob.glob(os.path.join(ROOT, 'playbooks', '*.yml')))

A10 = {'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
       'class_id': '0302', 'kind': 'gpu', 'is_vf': False, 'driver': 'vfio-pci', 'iommu_group': '41', 'companions': []}
NO_HOLDER = {'held': False, 'holders': [], 'message': 'no process holds /dev/nvidia*'}
A10_TYPES = {'parents': [{'parent': '0000:41:00.4', 'interface': 'mdev', 'types': [
    {'type_id': 'nvidia-596', 'name': 'NVIDIA A10-12Q', 'short_name': 'A10-12Q', 'available_instances': 2},
    {'type_id': 'nvidia-595', 'name': 'NVIDIA A10-8Q', 'short_name': 'A10-8Q', 'available_instances': 3}]}]}


def facts(gpu=None, mdev=None, holders=None):
    return {'gpuvirt_pci_devices': {'gpus': [gpu or A10], 'nvswitches': [], 'devices': [gpu or A10],
                                    'iommu': {'enabled': True, 'message': 'IOMMU on: 1 group'}},
            'gpuvirt_mdev_types': mdev or {'parents': []},
            'gpuvirt_gpu_holders': holders or NO_HOLDER}


def good_inventory(render_dir):
    return {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                 'ansible_become': False, 'gpuvirt_cluster_mode': 'render', 'gpuvirt_render_dir': str(render_dir),
                 'gpuvirt_platform': 'kubernetes',
                 # the hosts answer (local connection) and preflight judges their given facts there: live, since a
                 # render otherwise takes given facts without contacting the host (docs/saved-facts.md)
                 'gpuvirt_facts_source': 'live',
                 'kernel_args_iommu_vendor': 'intel', 'gpu_operator_vgpu_configs': {'a10-mixed': {'A10-12Q': 1}}},
        'children': {
            'gpu_vm_passthrough': {'hosts': {'pt-1': dict(facts(), gpuvirt_host_vfio=False)}},
            'gpu_vm_vgpu': {'hosts': {'vgpu-1': dict(facts(mdev=A10_TYPES), gpuvirt_vgpu_config='a10-mixed')}},
            'gpu_container': {'hosts': {'ctr-1': facts(gpu=dict(A10, driver=None))}},
        }}}


def run(tmp_path, inventory, playbook='preflight.yml', *args):
    path = tmp_path / 'hosts.yml'
    path.write_text(yaml.safe_dump(inventory))
    cmd = ['ansible-playbook', '-i', str(path), os.path.join(ROOT, 'playbooks', playbook)] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr


def recap(output):
    """{host: {ok, changed, failed, ...}} from the PLAY RECAP lines."""
    out = {}
    for line in output.split('PLAY RECAP')[-1].splitlines():
        if ' : ok=' in line:
            host, fields = line.split(' : ', 1)
            out[host.strip()] = {k: int(v) for k, v in (f.split('=') for f in fields.split())}
    return out


@pytest.mark.parametrize('inventory', ['example', 'lab'])
def test_every_playbook_passes_syntax_check(inventory):
    assert len(PLAYBOOKS) >= 11, PLAYBOOKS
    cmd = ['ansible-playbook', '--syntax-check', '-i', os.path.join(ROOT, 'inventories', inventory, 'hosts.yml')]
    proc = subprocess.run(cmd + PLAYBOOKS, capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for playbook in PLAYBOOKS:
        assert 'playbook: ' + playbook in proc.stdout


def test_site_imports_every_phase_in_order():
    with open(os.path.join(ROOT, 'playbooks', 'site.yml'), encoding='utf-8') as handle:
        phases = [p['ansible.builtin.import_playbook'] for p in yaml.safe_load(handle)]
    # NVIDIA, "NVIDIA GPU Operator with OpenShift Virtualization": "Labeling worker nodes" comes before "Installing
    # the NVIDIA GPU Operator"; "If the node label nvidia.com/gpu.workload.config does not exist on the node, the
    # GPU Operator assumes the default GPU workload configuration" (sandboxWorkloads.defaultWorkload), so labels
    # must be in place before the operator deploys anything.
    # render mode: one render run (render_open/render_close) around every phase that writes manifests
    # the vendor-VFIO VF profiles after the operator (its vGPU Manager loads the driver that creates the VFs) and
    # before KubeVirt and verify (KubeVirt v1.9.0 nvidia.go shouldPermitNvidia counts only VFs with a profile)
    # site.yml imports the phases' bodies (phase_<name>.yml): preflight gathers the host facts once, and each
    # playbooks/<name>.yml is gather.yml then that body (tests/unit/harness/test_phase_facts.py)
    # the launch check first of all (docs/security.md, "Launch time"); the render's lock after preflight, so that a
    # refused run leaves the render directory as it was (docs/gitops.md)
    assert phases == ['launch_check.yml', 'preflight.yml', 'render_open.yml', 'host_prep.yml', 'phase_vgpu_image.yml', 'phase_nodes.yml',
                      'phase_operator.yml', 'phase_vgpu_vf.yml', 'phase_kubevirt.yml', 'phase_verify.yml',
                      'render_close.yml', 'summary.yml']


def test_example_inventory_keeps_secrets_out_of_plain_text():
    text = ''
    for path in glob.glob(os.path.join(ROOT, 'inventories', 'example', '**', '*.yml'), recursive=True):
        with open(path, encoding='utf-8') as handle:
            text += handle.read()
    for line in text.splitlines():
        if 'password:' in line and not line.lstrip().startswith('#'):
            assert '{{' in line, 'a password in plain text: ' + line


def test_good_inventory_passes_and_changes_nothing(tmp_path):
    rc, out = run(tmp_path, good_inventory(tmp_path / 'render'))
    assert rc == 0, out
    hosts = recap(out)
    assert set(hosts) >= {'localhost', 'pt-1', 'vgpu-1', 'ctr-1'}, out
    assert all(h['changed'] == 0 and h['failed'] == 0 for h in hosts.values()), hosts


def bad(name):
    """Inventory mutations, each with the text the failure must show."""
    def in_two_pools(inv):
        inv['all']['children']['gpu_vm_vgpu']['hosts']['pt-1'] = {}
        return 'pt-1 is in the pools vm-passthrough, vm-vgpu (groups gpu_vm_passthrough, gpu_vm_vgpu)'

    def unknown_pool(inv):
        inv['all']['children']['gpu_vm_passthrough']['hosts']['pt-1']['gpuvirt_pool'] = 'vm-passthru'
        return "pt-1: unknown pool 'vm-passthru' (gpuvirt_pool)"

    def cluster_mode(inv):
        inv['all']['vars']['gpuvirt_cluster_mode'] = 'aply'
        return 'gpuvirt_cluster_mode is "aply"'

    def shell_metachar(inv):
        inv['all']['children']['gpu_vm_passthrough']['hosts']['pt-1']['kernel_args_extra'] = ['quiet;reboot']
        return ('quiet;reboot', 'is not allowed: only letters, digits')

    def missing_bdf(inv):
        inv['all']['children']['gpu_vm_passthrough']['hosts']['pt-1'].update(
            gpuvirt_host_vfio=True, vfio_gpus=False, vfio_bdfs=['0000:99:1f.7'])
        return 'PCI device 0000:99:1f.7 does not exist on this host'

    def malformed_bdf(inv):
        inv['all']['children']['gpu_vm_passthrough']['hosts']['pt-1'].update(
            gpuvirt_host_vfio=True, vfio_gpus=False, vfio_bdfs=['41:00.0'])
        return 'address 41:00.0 not understood'

    def vgpu_type_not_offered(inv):
        inv['all']['vars']['gpu_operator_vgpu_configs']['a10-mixed'] = {'A10-24Q': 1}
        return 'vgpu-1: vGPU type A10-24Q is not offered by any GPU here (offered: A10-12Q, A10-8Q)'

    def host_driver(inv):
        inv['all']['children']['gpu_vm_passthrough']['hosts']['pt-1'].update(facts(gpu=dict(A10, driver='nvidia')))
        return 'pt-1: GPU 0000:41:00.0 (GA102GL [A10]) is bound to the host driver nvidia'

    def held(inv):
        holder = {'pid': 4242, 'executable': 'nvidia-persistenced', 'device': '/dev/nvidia0',
                  'unit': 'nvidia-persistenced.service'}
        inv['all']['children']['gpu_vm_vgpu']['hosts']['vgpu-1']['gpuvirt_gpu_holders'] = {
            'held': True, 'holders': [holder]}
        return 'nvidia-persistenced holds /dev/nvidia0 (pid 4242, unit nvidia-persistenced.service)'

    def operator_version_with_os_tag(inv):
        inv['all']['vars']['gpu_operator_vgpu_manager'] = {'repository': 'registry.example.com/nvidia',
                                                           'version': '580.82.02-rhcos4.18'}
        # NVIDIA, "NVIDIA GPU Operator with OpenShift Virtualization", section "Creating a ClusterPolicy for the GPU
        # Operator": "vgpuManager.version=<driver version>"; NVIDIA/gpu-operator controllers/object_controls.go
        # resolveDriverTag appends "-" + the node's OS tag to it, so the value must not end in one.
        return ('gpu_operator_vgpu_manager.version is "580.82.02-rhcos4.18"', 'Set it to "580.82.02"')

    def image_version_with_os_tag(inv):
        inv['all']['vars']['vgpu_manager_image_version'] = '580.82.02-ubuntu22.04'
        # same guide, section "Building the vGPU Manager image": VERSION is the vGPU Manager (driver) version and
        # the tag is ${VERSION}-${OS_TAG}: the OS tag is added once, by the build.
        return ('vgpu_manager_image_version is "580.82.02-ubuntu22.04"', 'Set it to "580.82.02"')

    def vendor_vfio_type_not_listed(inv):
        l40s = dict(A10, bdf='0000:26:00.0', device_id='26b9', device_name='AD102GL [L40S]')
        types = {'parents': [{'parent': '0000:26:00.4', 'interface': 'vendor_vfio', 'types': [
            {'type_id': '1155', 'name': 'NVIDIA L40S-24Q', 'short_name': 'L40S-24Q', 'available_instances': 2}]}]}
        inv['all']['vars']['gpu_operator_vgpu_configs']['l40s'] = {'L40S-48Q': 1}
        host = inv['all']['children']['gpu_vm_vgpu']['hosts']['vgpu-1']
        host.update(facts(gpu=l40s, mdev=types), gpuvirt_vgpu_config='l40s')
        # NVIDIA's vendor-specific VFIO interface: the host gets the group's vendor-VFIO row (no longer refused for
        # its interface), and a type none of its VFs lists in nvidia/creatable_vgpu_types is refused with what they
        # offer, before anything is written (the vgpu_vf role could write no such id).
        return ("vgpu-1 (pool vm-vgpu-vf): vGPU type L40S-48Q is not listed by any VF's nvidia/creatable_vgpu_types "
                "here (the VFs offer: L40S-24Q)")

    return locals()[name]


BAD = ['in_two_pools', 'unknown_pool', 'cluster_mode', 'shell_metachar', 'missing_bdf', 'malformed_bdf',
       'vgpu_type_not_offered', 'host_driver', 'held', 'operator_version_with_os_tag', 'image_version_with_os_tag',
       'vendor_vfio_type_not_listed']


@pytest.mark.parametrize('case', BAD)
def test_bad_inventory_fails_in_preflight_naming_the_value(tmp_path, case):
    inventory = copy.deepcopy(good_inventory(tmp_path / 'render'))
    expected = bad(case)(inventory)
    rc, out = run(tmp_path, inventory)
    assert rc != 0, out
    flat = ' '.join(out.replace('\\n', ' ').split())
    for fragment in (expected if isinstance(expected, tuple) else (expected,)):
        assert fragment in flat, out
    assert all(h['changed'] == 0 for h in recap(out).values()), out


def test_site_stops_in_preflight_before_any_other_phase(tmp_path):
    inventory = copy.deepcopy(good_inventory(tmp_path / 'render'))
    expected = bad('vgpu_type_not_offered')(inventory)
    # --check as a second guard: the hosts here are this machine.
    rc, out = run(tmp_path, inventory, 'site.yml', '--check', '-e', json.dumps({'gpuvirt_platform': 'kubernetes'}))
    assert rc != 0 and expected in out, out
    assert 'PLAY [Prepare GPU hosts' not in out and 'PLAY [Install and configure the NVIDIA GPU Operator' not in out, out
    assert not (tmp_path / 'render').exists() or not os.listdir(tmp_path / 'render')


def test_summary_names_each_node_and_its_resources(tmp_path):
    rc, out = run(tmp_path, good_inventory(tmp_path / 'render'), 'summary.yml')
    assert rc == 0, out
    flat = ' '.join(out.split())
    assert ('ctr-1 (node ctr-1, pool container): host prep not run; changed: nothing (not run); rebooted: no; '
            'expects nvidia.com/gpu x1') in flat
    assert 'pt-1 (node pt-1, pool vm-passthrough): host prep not run' in flat and 'expects nvidia.com/GA102GL_A10 x1' in flat
    # the vGPU node expects the one type of its config (a10-mixed: A10-12Q), not every type its GPU offers
    assert "expects nvidia.com/NVIDIA_A10-12Q x1'" in flat and 'NVIDIA_A10-8Q' not in flat, out
