# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jobs run the way AWX runs them: ``ansible-runner transmit | podman run EE ansible-runner worker |
ansible-runner process``, in the execution environment that tools/ee/build-ee.sh built (mk/ee.mk).

What AWX's controller prepares for a job is made here as AWX 24.6.1 makes it (awx/main/tasks/jobs.py BaseTask.run,
build_private_data_files, build_env, write_inventory_file; RunJob.build_args, build_passwords,
get_password_prompts; awx/main/tasks/receptor.py AWXReceptorJob.transmit): the project checkout under
``project/``, the collections of the project's requirements under ``requirements_collections/`` with
ANSIBLE_COLLECTIONS_PATH naming it, the inventory script ``inventory/hosts``, the job template's extra vars and the
survey answers (JSON types: an integer survey answer is a number) in ``env/extravars``, the command line in
``env/cmdline``; the environment, the become password (a prompt -> answer map) and the Machine credential's SSH key
as arguments of ``ansible_runner.interface.run(streamer='transmit')``, which sends them in the stream; credential
files under ``env/`` named by their environment variable (the custom *gpuvirt vGPU image registry* type of
awx/credential_types.yml: extra vars, env and a file; a kubeconfig file for the cluster). The worker runs in the EE
container (as a container group's pod starts it: ``ansible-runner worker --private-data-dir=/runner``, the private
data dir streamed on stdin), with the host network so that it reaches the API server of
tests/integration/kube_cluster.py and the SSH port of the GPU host stand-in (tools/ee/Containerfile.sshhost) on
127.0.0.1. The assertions read the job events that ``process`` writes to the artifacts, which is what AWX stores
for the job.

Every secret injected (the SSH private key, the become password, the registry password, the kubeconfig's bearer
token) must appear nowhere in what the job left, raw or base64 (AWX keeps every event in its database for anyone
who may read the job).
"""
from __future__ import annotations

import base64
import glob
import json
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'playbooks'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'cluster_kubevirt'))
import fake_helm  # noqa: E402
from kube_cluster import write_summary  # noqa: E402
from test_apply import HCO, QAT, hco_object, node  # noqa: E402
from test_playbooks import facts  # noqa: E402
import schema  # noqa: E402  (tests/unit: the reference data's directory)

IMAGE = os.environ.get('GPUVIRT_EE_IMAGE', 'localhost/gpuvirt-provision-ee:test')
RUNNER = os.environ.get('GPUVIRT_EE_RUNNER', os.path.join(ROOT, '.build', 'ee', 'runner', 'bin', 'ansible-runner'))
EE_PYTHON = '/usr/local/ee/bin/python3'
SSH_HOST_IMAGE = os.environ.get('GPUVIRT_EE_SSH_HOST_IMAGE', 'localhost/gpuvirt-ee-ssh-host')
REGISTRY_PASSWORD = 'Rg-s3cr3t-9f1c2e'
CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n'


@pytest.fixture(scope='module', autouse=True)
def ee_ready():
    if not os.path.exists(RUNNER):
        pytest.fail('%s missing: run make ee' % RUNNER)
    for image in (IMAGE, SSH_HOST_IMAGE):
        if subprocess.run(['podman', 'image', 'exists', image], check=False).returncode != 0:
            pytest.fail('image %s missing: run make ee' % image)


def project_files():
    out = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z'], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    return [p for p in out.split('\0') if p and os.path.isfile(os.path.join(ROOT, p))]


def copy_tree(files, dest):
    for rel in files:
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), target)


def job_template(phase):
    """The job template awx/configure.yml creates for a phase: its playbook and whether it enables become."""
    with open(os.path.join(ROOT, 'awx', 'configure.yml')) as handle:
        plays = yaml.safe_load(handle)
    (task,) = [t for play in plays for t in play.get('tasks', []) if 'awx.awx.job_template' in t]
    with open(os.path.join(ROOT, 'awx', 'vars.yml')) as handle:
        (row,) = [p for p in yaml.safe_load(handle)['awx_phases'] if p['name'] == phase]
    return {'playbook': row['playbook'], 'become_enabled': task['awx.awx.job_template'].get('become_enabled', False)}


def script_data(inventory):
    """A YAML-shaped inventory as AWX's inventory script prints it (awx/main/models/inventory.py
    Inventory.get_script_data: each group with its hosts, children and vars, host variables under _meta)."""
    out, hostvars = {}, {}

    def walk(name, group):
        entry = out.setdefault(name, {'hosts': [], 'children': [], 'vars': {}})
        entry['vars'].update(group.get('vars') or {})
        for host, variables in (group.get('hosts') or {}).items():
            entry['hosts'].append(host)
            hostvars.setdefault(host, {}).update(variables or {})
        for child, sub in (group.get('children') or {}).items():
            entry['children'].append(child)
            walk(child, sub or {})
    walk('all', inventory['all'])
    out['_meta'] = {'hostvars': hostvars}
    return out


def awx_job(tmp_path, phase, inventory, extra_vars, survey, machine, kubeconfig=None, job_type='run', task_env=None):
    """What AWX's controller prepares for a job of the phase's template, with our four credentials injected.

    Returns (private data dir, the keyword arguments AWX hands to ansible_runner.interface.run). AWX 24.6.1,
    awx/main/tasks/jobs.py BaseTask.run: the private data dir, then ``params`` = ident, private_data_dir, playbook,
    inventory, passwords (the expect dict), suppress_env_files, envvars; ``ssh_key`` = the Machine credential's key
    (build_private_data_files keeps an ssh-namespace key out of files: it goes to the runner, which feeds it to
    ssh-agent through a fifo); the command line written to env/cmdline (write_args_file), the extra vars to
    env/extravars (_write_extra_vars_file), the runner settings to env/settings."""
    template = job_template(phase)
    pdd = tmp_path / ('pdd-' + phase)
    files = project_files()
    copy_tree(files, str(pdd / 'project'))
    # the project's collections/requirements.yml names the collection itself: AWX's project update installs it into
    # requirements_collections (awx/main/tasks/jobs.py RunProjectUpdate); here the checkout is that collection
    copy_tree(files, str(pdd / 'requirements_collections' / 'ansible_collections' / 'gpuvirt' / 'provision'))
    (pdd / 'inventory').mkdir()
    # RunJob.build_inventory / write_inventory_file: the inventory as a script printing its JSON (mode 0700); the
    # runner's transmit sends its path relative to the private data dir (ansible_runner interface.py init_runner)
    (pdd / 'inventory' / 'hosts').write_text('#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n'
                                             % json.dumps(script_data(inventory)))
    (pdd / 'inventory' / 'hosts').chmod(0o700)
    (pdd / 'env').mkdir()
    # RunJob.build_env: one ControlPath directory per job
    (pdd / 'cp').mkdir(mode=0o700)
    collections_path = '/runner/requirements_collections:~/.ansible/collections:/usr/share/ansible/collections'
    envvars = {'ANSIBLE_COLLECTIONS_PATH': collections_path, 'ANSIBLE_SSH_CONTROL_PATH_DIR': '/runner/cp',
               'ANSIBLE_RETRY_FILES_ENABLED': 'False',
               'ANSIBLE_FORCE_COLOR': 'False', 'ANSIBLE_HOST_KEY_CHECKING': 'False'}
    # AWX's "Extra Environment Variables" (AWX_TASK_ENV; BaseTask.build_env)
    envvars.update(task_env or {})
    # the registry credential (awx/credential_types.yml): extra vars, and a file named by an env variable
    (pdd / 'env' / 'tmp_ca_cert').write_text(CA_PEM)
    envvars['GPUVIRT_REGISTRY_CA_FILE'] = '/runner/env/tmp_ca_cert'
    extra = dict(extra_vars)
    extra.update({'gpuvirt_registry': 'registry.example.com:5000', 'gpuvirt_registry_username': 'robot',
                  'gpuvirt_registry_password': REGISTRY_PASSWORD})
    if kubeconfig:
        # a kubeconfig credential: the file under env/, its path in K8S_AUTH_KUBECONFIG (what kubernetes.core
        # reads: kubernetes.core plugins/module_utils/args_common.py AUTH_ARG_SPEC kubeconfig, env fallback)
        shutil.copy(kubeconfig, str(pdd / 'env' / 'tmp_kubeconfig'))
        envvars['K8S_AUTH_KUBECONFIG'] = '/runner/env/tmp_kubeconfig'
    extra.update(survey)
    (pdd / 'env' / 'extravars').write_text(json.dumps(extra))
    # the Machine credential (every job template of awx/configure.yml carries it). RunJob.build_args: --check for
    # a check job, -u the credential's username, --become when the template enables it, --become-method and
    # --become-user from the credential, --ask-become-pass when it holds a become password; RunJob.build_passwords
    # and get_password_prompts: the become password answers ansible-playbook's "BECOME password:" prompt
    args = (['--check'] if job_type == 'check' else []) + ['-u', machine['user']]
    args += ['--become'] if template['become_enabled'] else []
    args += ['--become-method', 'sudo', '--become-user', 'root', '--ask-become-pass']
    (pdd / 'env' / 'cmdline').write_text(' '.join(shlex.quote(a) for a in args))
    (pdd / 'env' / 'settings').write_text(json.dumps({'suppress_ansible_output': True,
                                                      'suppress_output_file': False}))
    prompts = {r'BECOME password.*:\s*?$': machine['become_password'],
               r'sudo password.*:\s*?$': machine['become_password'],
               r'SUDO password.*:\s*?$': machine['become_password']}
    params = {'ident': 'job', 'private_data_dir': str(pdd), 'playbook': template['playbook'],
              'inventory': str(pdd / 'inventory' / 'hosts'), 'passwords': prompts, 'suppress_env_files': True,
              'envvars': envvars, 'ssh_key': machine['private_key']}
    return pdd, params


def run_job(tmp_path, pdd, params, mounts=()):
    """transmit (ansible_runner.interface.run(streamer='transmit'), as AWX's receptor.py AWXReceptorJob.transmit
    calls it) | worker (podman, the EE: the container a container group's pod runs, receptor.py pod_definition:
    ``ansible-runner worker --private-data-dir=/runner``) | process; returns (rc, events, output)."""
    transmit = [os.path.join(os.path.dirname(RUNNER), 'python'), '-c',
                'import json, sys, ansible_runner\n'
                'ansible_runner.interface.run(streamer="transmit", _output=sys.stdout.buffer, **json.load(sys.stdin))']
    worker = ['podman', 'run', '--rm', '-i', '--network', 'host']
    # AWX's "Paths to expose to isolated jobs" (AWX_ISOLATION_SHOW_PATHS: src:dest[:option] volume mounts of the EE
    # container; awx/main/tasks/jobs.py BaseTask.build_execution_environment_params)
    for mount in mounts:
        worker += ['-v', mount]
    worker += [IMAGE, 'ansible-runner', 'worker', '--private-data-dir=/runner']
    process = [RUNNER, 'process', str(pdd), '--ident', 'job']
    stages = [subprocess.Popen(transmit, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(tmp_path))]
    stages[0].stdin.write(json.dumps(params).encode())
    stages[0].stdin.close()
    stages.append(subprocess.Popen(worker, stdin=stages[0].stdout, stdout=subprocess.PIPE))
    stages[0].stdout.close()
    stages.append(subprocess.Popen(process, stdin=stages[1].stdout, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT))
    stages[1].stdout.close()
    out = stages[2].communicate(timeout=600)[0].decode(errors='replace')
    for stage in stages[:2]:
        stage.wait(timeout=60)
    artifacts = pdd / 'artifacts' / 'job'
    events = []
    for path in sorted(glob.glob(str(artifacts / 'job_events' / '*.json')),
                       key=lambda p: int(os.path.basename(p).split('-', 1)[0])):
        with open(path) as handle:
            events.append(json.load(handle))
    rc_file = artifacts / 'rc'
    rc = int(rc_file.read_text()) if rc_file.exists() else None
    return rc, events, out


def task_results(events):
    """{task name: {host: changed}} from the runner_on_ok events (the tasks that ran, not skipped)."""
    out = {}
    for event in events:
        if event.get('event') == 'runner_on_ok':
            data = event['event_data']
            out.setdefault(data['task'], {})[data['host']] = bool(data.get('res', {}).get('changed'))
    return out


def stats(events):
    (last,) = [e for e in events if e.get('event') == 'playbook_on_stats']
    return last['event_data']


def needles(secrets_):
    """Each secret raw and base64 (with and without padding); a private key also line by line (its body is already
    base64: a leak may be cut into lines or joined)."""
    out = []
    for secret in secrets_:
        out += [secret, base64.b64encode(secret.encode()).decode(),
                base64.b64encode(secret.encode()).decode().rstrip('=')]
        body = [line for line in secret.splitlines() if line and not line.startswith('-----')]
        if len(body) > 1:
            out += [''.join(body)] + [line for line in body if len(line) >= 16]
    return out


# What the controller itself wrote into the private data dir for the job (AWX removes the directory afterwards):
# the only files a credential may be in. Everything else there - the artifacts process unpacked (job_events/*.json,
# stdout, status, rc, command, fact cache, whatever the worker sent back) and anything the runner left under env/ -
# must hold none.
JOB_INPUTS = ('env/extravars', 'env/tmp_kubeconfig', 'env/tmp_ca_cert', 'env/cmdline', 'env/settings',
              'inventory/hosts')


def assert_no_secret(pdd, secrets_):
    """No secret, raw or base64, in any file of the job's private data dir but the controller's own inputs."""
    wanted = needles(secrets_)
    hits, names = [], []
    for dirpath, dummy, files in os.walk(str(pdd)):
        rel_dir = os.path.relpath(dirpath, str(pdd))
        if rel_dir.split(os.sep)[0] in ('project', 'requirements_collections'):
            continue
        for name in files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, str(pdd))
            if rel in JOB_INPUTS:
                continue
            names.append(rel)
            with open(path, 'rb') as handle:
                text = handle.read().decode(errors='replace')
            hits += ['%s in %s' % (n[:4] + '...', rel) for n in wanted if n in text]
    # what AWX stores: the events and the stdout; the SSH key went to ssh-agent through a fifo in the worker's
    # artifacts, removed once read (ansible_runner config/_base.py wrap_args_with_ssh_agent), not to a file
    assert 'artifacts/job/stdout' in names and any(n.startswith('artifacts/job/job_events/') for n in names), names
    assert not [n for n in names if n.startswith('env/')], names
    assert 'artifacts/job/ssh_key_data' not in names, names
    assert hits == []


def add_become_user(container, user, password, run=subprocess.run):
    """The sudo user on the GPU host stand-in. The password goes to chpasswd on stdin, never in an argv (an argv
    is visible to every user of the machine in ps and /proc/PID/cmdline while the command runs)."""
    setup = ('useradd -m -s /bin/bash {u} && install -d -m 700 -o {u} -g {u} /home/{u}/.ssh && '
             'echo "{u} ALL=(ALL:ALL) ALL" >/etc/sudoers.d/{u}').format(u=user)
    run(['podman', 'exec', '-i', container, 'sh', '-c', setup], check=True)
    run(['podman', 'exec', '-i', container, 'chpasswd'], input='%s:%s\n' % (user, password), text=True, check=True)


def test_the_become_password_reaches_the_host_on_stdin_only():
    # The commands are recorded, not run: the real run is the machine fixture's, which every become job below
    # depends on (sudo there takes this password); this test needs no container, so it also runs where Podman
    # cannot start one.
    password = 'Bc-' + secrets.token_hex(12)
    calls = []

    def recording(argv, **kwargs):
        calls.append((list(argv), kwargs.get('input')))
    add_become_user('gpuvirt-ee-ssh-x', 'gpuadmin', password, run=recording)
    assert calls and not [argv for argv, dummy in calls if any(password in part for part in argv)], calls
    assert [stdin for dummy, stdin in calls if stdin] == ['gpuadmin:%s\n' % password]


@pytest.fixture(scope='module')
def machine(tmp_path_factory):
    """A GPU host stand-in reached over SSH (tools/ee/Containerfile.sshhost), and the AWX Machine credential for it:
    a user with an SSH key made here, become method sudo with a password (sudo asks for it)."""
    keys = tmp_path_factory.mktemp('machine-credential')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'gpuvirt-ee-test', '-f', str(keys / 'id')],
                   check=True)
    name = 'gpuvirt-ee-ssh-%s' % secrets.token_hex(4)
    user, become_password = 'gpuadmin', 'Bc-' + secrets.token_hex(12)
    subprocess.run(['podman', 'run', '-d', '--rm', '--name', name, '-p', '127.0.0.1::22', SSH_HOST_IMAGE],
                   check=True, capture_output=True)
    try:
        add_become_user(name, user, become_password)
        with open(str(keys / 'id.pub'), 'rb') as handle:
            subprocess.run(['podman', 'exec', '-i', name, 'sh', '-c',
                            'cat >/home/{u}/.ssh/authorized_keys && chown {u} /home/{u}/.ssh/authorized_keys'
                            .format(u=user)], stdin=handle, check=True)
        port = int(subprocess.run(['podman', 'port', name, '22/tcp'], check=True, capture_output=True,
                                  text=True).stdout.strip().rsplit(':', 1)[1])
        deadline = time.time() + 60
        while True:
            try:
                with socket.create_connection(('127.0.0.1', port), timeout=5) as conn:
                    if conn.recv(64).startswith(b'SSH-'):
                        break
            except OSError:
                pass
            assert time.time() < deadline, 'sshd in %s did not answer on 127.0.0.1:%d' % (name, port)
            time.sleep(0.5)
        yield {'container': name, 'port': port, 'user': user, 'become_password': become_password,
               'private_key': (keys / 'id').read_text()}
    finally:
        subprocess.run(['podman', 'rm', '-f', '-t', '0', name], check=False, capture_output=True)


def ssh_vars(machine):
    """The host's address: the worker shares the test machine's network, where the container's port 22 is
    published on 127.0.0.1. The user, the key and the become settings come from the Machine credential only."""
    return {'ansible_host': '127.0.0.1', 'ansible_port': machine['port'],
            'ansible_python_interpreter': '/usr/bin/python3'}


def job_secrets(machine, *more):
    return [machine['private_key'], machine['become_password'], REGISTRY_PASSWORD] + list(more)


# The GPU host stand-in as a host of the vm-passthrough pool, its GPU facts given (no GPU in a container, as in the
# playbook tests); the host roles' container-safe settings of molecule/default (no boot loader, no initramfs, no
# runtime vfio binding in a container: update-grub, update-initramfs and the sysfs binding are not run).
CONTAINER_SAFE = {'kernel_args_iommu_vendor': 'intel', 'kernel_args_update_bootloader': False,
                  'nouveau_initramfs_rebuild': False, 'vfio_gpus': False, 'vfio_require_devices': False,
                  'vfio_runtime_bind': False, 'vfio_initramfs_rebuild': False,
                  'vfio_persistent_ids': ['10de:2236', '10de:1aef'],
                  # not a cluster node: no cordon and drain around the reboot
                  'reboot_drain': False}


def host_inventory(machine):
    host = dict(facts(), **ssh_vars(machine))
    host.update(CONTAINER_SAFE)
    return {'all': {
        'vars': {'gpuvirt_cluster_mode': 'render', 'gpuvirt_render_dir': '/runner/render',
                 'gpuvirt_platform': 'kubernetes'},
        'children': {'gpu_vm_passthrough': {'hosts': {'pt-1': host}}},
        'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': EE_PYTHON}}}}


SURVEY_PT = {'gpuvirt_gpu_hosts_pattern': 'gpu_vm_passthrough', 'host_prep_serial': 1,
             'gpuvirt_cluster_mode': 'render', 'gpuvirt_platform': 'kubernetes'}


def host_files(machine, *paths):
    proc = subprocess.run(['podman', 'exec', machine['container'], 'ls', '-1d'] + list(paths),
                          capture_output=True, text=True, check=False)
    return sorted(proc.stdout.split())


def test_preflight_job_over_ssh_with_the_machine_credential(tmp_path, machine):
    pdd, params = awx_job(tmp_path, 'preflight', host_inventory(machine), {}, SURVEY_PT, machine)
    rc, events, out = run_job(tmp_path, pdd, params)
    assert rc == 0, out[-4000:]
    summary = stats(events)
    assert set(summary['ok']) == {'localhost', 'pt-1'}, summary
    assert summary['failures'] == {} and summary['dark'] == {}, summary
    assert summary['changed'] == {}, summary
    tasks = task_results(events)
    assert tasks['Check each host pattern and rollout number by its grammar'] == {'localhost': False}, tasks
    # on the host, over SSH as the credential's user, through sudo with the credential's become password
    assert tasks['Judge the host'] == {'pt-1': False}, tasks
    assert tasks['Validate the kernel arguments (no change)'] == {'pt-1': False}, tasks
    facts_event = [e for e in events if e.get('event') == 'runner_on_ok' and e['event_data']['host'] == 'pt-1'
                   and e['event_data']['task'] == 'Gathering Facts']
    assert facts_event, sorted(tasks)
    ansible_facts = facts_event[0]['event_data']['res']['ansible_facts']
    # root through sudo (the user asks for its password: the credential's, answered at ansible-playbook's prompt)
    assert ansible_facts['ansible_user_id'] == 'root', ansible_facts.get('ansible_user_id')
    # logged in with the credential's key, held by ssh-agent in the worker (sshd's log on the host)
    logs = subprocess.run(['podman', 'logs', machine['container']], capture_output=True, text=True, check=False)
    assert 'Accepted publickey for %s ' % machine['user'] in logs.stdout + logs.stderr, logs.stderr
    assert_no_secret(pdd, job_secrets(machine))


def test_host_prep_check_job_over_ssh(tmp_path, machine):
    pdd, params = awx_job(tmp_path, 'host_prep', host_inventory(machine), {}, SURVEY_PT, machine, job_type='check')
    rc, events, out = run_job(tmp_path, pdd, params)
    assert rc == 0, out[-4000:]
    summary = stats(events)
    assert summary['failures'] == {} and summary['dark'] == {}, summary
    # a check job (AWX job type "Check": ansible-playbook --check) over SSH, become root through sudo: every role's
    # input check and comparison ran on the host; it reports the changes it would make - the kernel arguments (the
    # container runs the test machine's kernel, without intel_iommu=on), the vfio-pci files, the nouveau blacklist -
    # and the one reboot they need; nothing was written and nothing rebooted (check mode; ansible.builtin.reboot
    # reports a reboot in check mode without one).
    assert list(summary['changed']) == ['pt-1'], summary
    tasks = task_results(events)
    changed = sorted(task for task, hosts in tasks.items() if hosts.get('pt-1'))
    would_change = ['Blacklist nouveau', 'Claim the devices for vfio-pci at module load, before the GPU drivers',
                    'Ensure the kernel arguments in the boot loader', 'Load vfio-pci at boot',
                    'Put the vfio modules in the initramfs (initramfs-tools)',
                    'Reboot the host for kernel_args: running kernel lacks intel_iommu=on iommu=pt, still has -']
    assert changed == would_change, changed
    # the container-safe settings: no initramfs rebuild, no runtime binding, no cordon and drain
    assert 'Rebuild the initramfs when its inputs changed' not in tasks, sorted(tasks)
    assert 'Verify the vfio binding after the reboot' not in tasks, sorted(tasks)
    assert host_files(machine, '/etc/default/grub.d/90-gpuvirt-kernel-args.cfg',
                      '/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf', '/etc/modprobe.d/gpuvirt-vfio.conf',
                      '/etc/modules-load.d/gpuvirt-vfio.conf') == []
    assert_no_secret(pdd, job_secrets(machine))


def test_kubevirt_phase_job_applies_through_the_api_server(tmp_path, kube, machine):
    cluster = kube([hco_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('gpu-2', {'nvidia.com/AD102GL_L40S': '1'})])
    with open(os.path.join(ROOT, 'tests', 'integration', 'cluster_kubevirt', 'inventories',
                           'passthrough-hco-new.yml')) as handle:
        inventory = yaml.safe_load(handle)
    inventory['all']['vars']['ansible_python_interpreter'] = EE_PYTHON
    inventory['all']['vars']['render_root'] = '/runner/unused'
    extra = {'kubevirt_machineconfig_enabled': False, 'gpuvirt_kubevirt_config': 'auto',
             'kubevirt_devices_current': {}}
    survey = {'gpuvirt_gpu_hosts_pattern': 'gpu_vm_passthrough', 'host_prep_serial': 1,
              'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'auto'}
    with open(cluster.kubeconfig) as handle:
        token = yaml.safe_load(handle)['users'][0]['user']['token']
    pdd, params = awx_job(tmp_path, 'kubevirt', inventory, extra, survey, machine, kubeconfig=cluster.kubeconfig)
    rc, events, out = run_job(tmp_path, pdd, params)
    assert rc == 0, out[-4000:]
    summary = stats(events)
    assert summary['failures'] == {} and summary['dark'] == {}, summary
    # the phase runs on localhost (the cluster plays); what changes is the HyperConverged merge: previewed with a
    # server-side dry run, then applied
    assert list(summary['changed']) == ['localhost'], summary
    tasks = task_results(events)
    changed = sorted(task for task, hosts in tasks.items() if any(hosts.values()))
    assert changed == ['Apply each changed object with server-side apply',
                       'Preview each object with a server-side dry run'], changed
    assert 'Report the permitted resource names' in tasks, sorted(tasks)
    # what the API server saw, as the automation identity the kubeconfig credential holds
    assert write_summary(cluster.attempts()) == ['patch hyperconvergeds openshift-cnv/kubevirt-hyperconverged']
    hco = cluster.get(*HCO)
    pci = hco['spec']['permittedHostDevices']['pciHostDevices']
    assert pci[0] == QAT
    assert {e['resourceName'] for e in pci[1:]} == {'nvidia.com/GA102GL_A10', 'nvidia.com/AD102GL_L40S'}
    assert_no_secret(pdd, job_secrets(machine, token))


# the nodes of tests/integration/cluster_operator/test_apply.py labelled_nodes(), for its mixed-openshift inventory
LABELLED_NODES = [
    {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels}} for name, labels in (
        ('ctr-1', {'kubernetes.io/hostname': 'ctr-1'}), ('pt-1', {'nvidia.com/gpu.workload.config': 'vm-passthrough'}),
        ('vgpu-1', {'nvidia.com/gpu.workload.config': 'vm-vgpu', 'nvidia.com/vgpu.config': 'A10-12Q'}))]


def test_nodes_job_twice_changes_nothing_the_second_time_then_verify(tmp_path, kube, machine):
    """The nodes template run twice against the real API server (the second job's events: nothing changed, no write),
    then the verify template; both with the kubeconfig credential, as every job here with the Machine credential."""
    cluster = kube(LABELLED_NODES)
    cluster.set_status(cluster.get('v1', 'Node', 'pt-1'), {'allocatable': {'nvidia.com/GA102GL_A10': '1'}})
    with open(os.path.join(ROOT, 'tests', 'integration', 'cluster_operator', 'inventories',
                           'mixed-openshift.yml')) as handle:
        inventory = yaml.safe_load(handle)
    inventory['all']['vars'].update({'ansible_python_interpreter': EE_PYTHON, 'render_root': '/runner/unused',
                                     'reference_root': '/runner/unused'})
    survey = {'gpuvirt_gpu_hosts_pattern': 'gpu_container:gpu_vm_passthrough:gpu_vm_vgpu', 'host_prep_serial': 1,
              'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'auto'}
    with open(cluster.kubeconfig) as handle:
        token = yaml.safe_load(handle)['users'][0]['user']['token']
    runs = []
    for attempt in ('first', 'second'):
        since = cluster.now()
        pdd, params = awx_job(tmp_path / attempt, 'nodes', inventory, {}, survey, machine,
                              kubeconfig=cluster.kubeconfig)
        rc, events, out = run_job(tmp_path, pdd, params)
        assert rc == 0, out[-4000:]
        assert_no_secret(pdd, job_secrets(machine, token))
        runs.append((stats(events), task_results(events), write_summary(cluster.attempts(since=since))))
    (first, first_tasks, first_writes), (second, second_tasks, second_writes) = runs
    # the first job labels the two nodes whose labels differ and writes the owned-labels record on the third, whose
    # labels are right but which carries no record yet (tests/integration/cluster_operator/test_apply.py
    # test_node_labels_apply_patches_only_differences_then_nothing, the same inventory and nodes)
    assert sorted(first_writes) == ['patch nodes -/ctr-1', 'patch nodes -/pt-1', 'patch nodes -/vgpu-1'], first_writes
    assert list(first['changed']) == ['localhost'], first
    assert sorted(t for t, hosts in first_tasks.items() if any(hosts.values())) == \
        ['Patch the labels that differ'], first_tasks
    assert cluster.get('v1', 'Node', 'vgpu-1')['metadata']['labels']['nvidia.com/vgpu.config'] == 'A10-24Q'
    # the second: the same tasks ran but the patch (no label differs now: skipped), none changed, nothing written
    # (playbook_on_stats: changed is empty)
    assert second['changed'] == {} and second['failures'] == {}, second
    assert set(second_tasks) == set(first_tasks) - {'Patch the labels that differ'}, \
        sorted(set(first_tasks) ^ set(second_tasks))
    assert not [t for t, hosts in second_tasks.items() if any(hosts.values())], second_tasks
    assert second_writes == [], second_writes

    verify = {'verify_expected': {'pt-1': {'nvidia.com/GA102GL_A10': 1}}, 'verify_delay': 1, 'verify_timeout': 30}
    pdd, params = awx_job(tmp_path / 'verify', 'verify', inventory, verify, survey, machine,
                          kubeconfig=cluster.kubeconfig)
    rc, events, out = run_job(tmp_path, pdd, params)
    assert rc == 0, out[-4000:]
    summary = stats(events)
    assert summary['changed'] == {} and summary['failures'] == {}, summary
    tasks = task_results(events)
    assert tasks['Wait for the expected resources on every node (a preview reads once)'] == {'localhost': False}
    assert tasks['Report per node'] == {'localhost': False}, sorted(tasks)
    stdout = ''.join(e.get('stdout', '') for e in events)
    assert 'node pt-1: nvidia.com/GA102GL_A10=1 advertised' in stdout, stdout[-3000:]
    assert_no_secret(pdd, job_secrets(machine, token))


def test_operator_job_installs_the_chart_through_the_helm_in_the_ee(tmp_path, kube, machine):
    """The operator template on plain Kubernetes: kubernetes.core.helm runs the helm binary the image carries (here
    the recorded stand-in, tests/integration/fake_helm.py, installed by the definition's own helm step), with the
    Helm identity's kubeconfig as the job's kubeconfig credential (docs/rbac/gpuvirt-automation-helm.yml). The
    stand-in reads the chart's values.yaml from the reference data and logs its calls: both reach the EE as AWX
    exposes host paths to jobs, and its two variables as AWX's extra environment variables."""
    cluster = kube([], openshift=False)
    cluster.server.grant_helm()
    helm_config = cluster.server.kubeconfig_path('helm')
    calls_dir = tmp_path / 'helm-calls'
    calls_dir.mkdir()
    calls_dir.chmod(0o777)  # the EE's user (uid 1000) writes the call log
    with open(os.path.join(ROOT, 'tests', 'integration', 'cluster_operator', 'inventories',
                           'kubernetes-passthrough.yml')) as handle:
        inventory = yaml.safe_load(handle)
    inventory['all']['vars'].update({'ansible_python_interpreter': EE_PYTHON, 'render_root': '/runner/unused',
                                     'reference_root': '/reference'})
    extra = {'gpu_operator_chart_values_file': ''}
    survey = {'gpuvirt_gpu_hosts_pattern': 'gpu_vm_passthrough', 'host_prep_serial': 1,
              'gpuvirt_cluster_mode': 'apply', 'gpuvirt_platform': 'auto'}
    with open(helm_config) as handle:
        token = yaml.safe_load(handle)['users'][0]['user']['token']
    pdd, params = awx_job(tmp_path, 'operator', inventory, extra, survey, machine, kubeconfig=helm_config,
                          task_env={'FAKE_HELM_LOG': '/helm-calls/calls.jsonl', 'FAKE_HELM_REFERENCE': '/reference'})
    rc, events, out = run_job(tmp_path, pdd, params, mounts=[
        '%s:/reference:ro' % schema.reference_dir(), '%s:/helm-calls' % calls_dir])
    assert rc == 0, out[-4000:]
    summary = stats(events)
    assert list(summary['changed']) == ['localhost'] and summary['failures'] == {}, summary
    tasks = task_results(events)
    assert tasks['Install the gpu-operator chart'] == {'localhost': True}, sorted(tasks)
    # what kubernetes.core.helm ran in the EE (the same argv as tests/integration/cluster_operator/test_apply.py
    # test_kubernetes_installs_the_chart_through_helm_with_the_argv_kubernetes_core_sends)
    argvs = [c['argv'] for c in fake_helm.calls(calls_dir / 'calls.jsonl')]
    assert argvs[0] == ['version'], argvs
    repo, version = 'https://helm.ngc.nvidia.com/nvidia', 'v26.7.0'
    assert ['show', 'values', 'gpu-operator', '--repo', repo, '--version', version] in argvs, argvs
    (upgrade,) = [a for a in argvs if 'upgrade' in a]
    assert upgrade[-2:] == ['gpu-operator', 'gpu-operator'] and '--wait' in upgrade, upgrade
    release = cluster.get('v1', 'Secret', 'sh.helm.release.v1.gpu-operator.v1', 'gpu-operator')
    assert release['metadata']['labels']['status'] == 'deployed', release['metadata']
    policy = cluster.get('nvidia.com/v1', 'ClusterPolicy', 'cluster-policy')
    assert policy['spec']['sandboxWorkloads']['defaultWorkload'] == 'vm-passthrough', policy['spec']
    assert_no_secret(pdd, job_secrets(machine, token))


def test_the_image_holds_the_pinned_versions():
    """Inside the built image, not from our files: the collections and Python packages at the definition's pins."""
    with open(os.path.join(ROOT, 'execution-environment.yml')) as handle:
        definition = yaml.safe_load(handle)
    with open(os.path.join(ROOT, 'ee', 'requirements.yml')) as handle:
        collections = {c['name']: c['version'] for c in yaml.safe_load(handle)['collections']}
    with open(os.path.join(ROOT, 'ee', 'requirements.txt')) as handle:
        pins = dict(line.strip().split('==') for line in handle if '==' in line and not line.startswith('#'))
    for key in ('ansible_core', 'ansible_runner'):
        name, version = definition['dependencies'][key]['package_pip'].split('==')
        pins[name] = version

    def run(*cmd):
        proc = subprocess.run(['podman', 'run', '--rm', IMAGE] + list(cmd), capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    listed = json.loads(run('ansible-galaxy', 'collection', 'list', '--format', 'json'))
    installed = listed['/usr/share/ansible/collections/ansible_collections']
    assert {name: installed.get(name, {}).get('version') for name in collections} == collections, installed
    frozen = dict(line.split('==') for line in run('python3', '-m', 'pip', 'freeze').split() if '==' in line)
    frozen = {name.lower(): version for name, version in frozen.items()}
    assert {name: frozen.get(name.lower()) for name in pins} == pins, frozen
    # the helm the definition's step installed (here the stand-in, which answers `version` as helm 3 does)
    assert 'version.BuildInfo{Version:"v3.' in run('env', 'FAKE_HELM_LOG=/dev/null', 'helm', 'version')
