# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the AWX job tests of this directory share: a job's private data dir made as AWX's controller makes it
(awx_job), the transmit | worker | process pipe (run_job), the readers of the job events, the secret grep and
the GPU host stand-in's inventory. The fixtures (the built images, the SSH host) are in conftest.py; what AWX
does and where it was read is told in test_awx_jobs.py's docstring and docs/awx.md."""
from __future__ import annotations

import base64
import glob
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'playbooks'))
from test_playbooks import facts  # noqa: E402

IMAGE = os.environ.get('GPUVIRT_EE_IMAGE', 'localhost/gpuvirt-provision-ee:test')
RUNNER = os.environ.get('GPUVIRT_EE_RUNNER', os.path.join(ROOT, '.build', 'ee', 'runner', 'bin', 'ansible-runner'))
EE_PYTHON = '/usr/local/ee/bin/python3'
SSH_HOST_IMAGE = os.environ.get('GPUVIRT_EE_SSH_HOST_IMAGE', 'localhost/gpuvirt-ee-ssh-host')
REGISTRY_PASSWORD = 'Rg-s3cr3t-9f1c2e'
CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n'


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


def wait_for_sshd(name, port, timeout=60):
    """Until the sshd of container NAME greets on 127.0.0.1:PORT (its banner, not just an open port)."""
    deadline = time.time() + timeout
    while True:
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=5) as conn:
                if conn.recv(64).startswith(b'SSH-'):
                    return
        except OSError:
            pass
        assert time.time() < deadline, 'sshd in %s did not answer on 127.0.0.1:%d' % (name, port)
        time.sleep(0.5)


def ssh_vars(machine):
    """The host's address: the worker shares the test machine's network, where the container's port 22 is
    published on 127.0.0.1. The user, the key and the become settings come from the Machine credential only."""
    return {'ansible_host': '127.0.0.1', 'ansible_port': machine['port'],
            'ansible_python_interpreter': '/usr/bin/python3'}


def reachable(inventory, machine):
    """Every GPU host of a cluster phase's inventory reached over SSH on the GPU host stand-in (one container for all
    of them). Their GPU facts stay given in the inventory (no GPU in a container); what the phase's job still reads on
    the hosts - each phase playbook runs gather.yml first, as a job of its own has no facts from an earlier job: the
    OS release for the vGPU Manager image's tag - it reads over SSH with the Machine credential, as root through
    sudo. Returns the GPU hosts' names."""
    names = []

    def walk(group):
        hosts = group.get('hosts') or {}
        for name in list(hosts):
            if name != 'localhost':
                hosts[name] = dict(hosts[name] or {}, **ssh_vars(machine))
                names.append(name)
        for child in (group.get('children') or {}).values():
            walk(child or {})
    walk(inventory['all'])
    return sorted(set(names))


def gathered_on(events):
    """The hosts on which the job read the OS release (gather.yml's task), as root (its events ran there)."""
    return sorted(host for host, dummy in task_results(events).get(
        "Read the OS release (for the vGPU Manager image's OS tag)", {}).items())


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
