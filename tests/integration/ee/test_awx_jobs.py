# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jobs run the way AWX runs them: ``ansible-runner transmit | podman run EE ansible-runner worker |
ansible-runner process``, in the execution environment that tools/ee/build-ee.sh built (mk/ee.mk).

What AWX's controller prepares for a job is made here as AWX makes it (awx/main/tasks/jobs.py
BaseTask.build_private_data_files / build_env / build_extra_vars_file, RunJob.build_args; awx/main/models/credential
injectors): the project checkout under ``project/``, the collections of the project's requirements under
``requirements_collections/`` with ANSIBLE_COLLECTIONS_PATH naming it, the inventory under ``inventory/``, the job
template's extra vars and the survey answers (JSON types: an integer survey answer is a number) in
``env/extravars``, credential environment in ``env/envvars``, credential files under ``env/`` named by their
environment variable (the custom *gpuvirt vGPU image registry* type of awx/credential_types.yml: extra vars, env and
a file; a kubeconfig file for the cluster). The worker runs in the EE container (as a receptor execution node
starts it: podman, the private data dir streamed on stdin), with the host network so that it reaches the API server
of tests/integration/kube_cluster.py on 127.0.0.1. The assertions read the job events that ``process`` writes to
the artifacts, which is what AWX stores for the job.

Every secret injected (registry password, the kubeconfig's bearer token) must appear nowhere in the artifacts,
raw or base64 (AWX keeps every event in its database for anyone who may read the job).
"""
from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'playbooks'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'cluster_kubevirt'))
from kube_cluster import write_summary  # noqa: E402
from test_apply import HCO, QAT, hco_object, node  # noqa: E402
from test_playbooks import good_inventory  # noqa: E402

IMAGE = os.environ.get('GPUVIRT_EE_IMAGE', 'localhost/gpuvirt-provision-ee:test')
RUNNER = os.environ.get('GPUVIRT_EE_RUNNER', os.path.join(ROOT, '.build', 'ee', 'runner', 'bin', 'ansible-runner'))
EE_PYTHON = '/usr/local/ee/bin/python3'
REGISTRY_PASSWORD = 'Rg-s3cr3t-9f1c2e'
CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n'


@pytest.fixture(scope='module', autouse=True)
def ee_ready():
    if not os.path.exists(RUNNER):
        pytest.fail('%s missing: run make ee' % RUNNER)
    if subprocess.run(['podman', 'image', 'exists', IMAGE], check=False).returncode != 0:
        pytest.fail('image %s missing: run make ee' % IMAGE)


def project_files():
    out = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z'], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    return [p for p in out.split('\0') if p and os.path.isfile(os.path.join(ROOT, p))]


def copy_tree(files, dest):
    for rel in files:
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), target)


def private_data_dir(tmp_path, inventory, extra_vars, survey, kubeconfig=None):
    """The directory AWX's controller builds for a job of the template, with our three credentials injected."""
    pdd = tmp_path / 'pdd'
    files = project_files()
    copy_tree(files, str(pdd / 'project'))
    # the project's collections/requirements.yml names the collection itself: AWX's project update installs it into
    # requirements_collections (awx/main/tasks/jobs.py RunProjectUpdate); here the checkout is that collection
    copy_tree(files, str(pdd / 'requirements_collections' / 'ansible_collections' / 'gpuvirt' / 'provision'))
    (pdd / 'inventory').mkdir()
    (pdd / 'inventory' / 'hosts').write_text(json.dumps(inventory))
    (pdd / 'env').mkdir()
    collections_path = '/runner/requirements_collections:~/.ansible/collections:/usr/share/ansible/collections'
    envvars = {'ANSIBLE_COLLECTIONS_PATH': collections_path,
               'ANSIBLE_FORCE_COLOR': 'False', 'ANSIBLE_HOST_KEY_CHECKING': 'False'}
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
    (pdd / 'env' / 'envvars').write_text(json.dumps(envvars))
    (pdd / 'env' / 'extravars').write_text(json.dumps(extra))
    return pdd


def run_job(tmp_path, playbook, pdd):
    """transmit | worker (podman, the EE) | process; returns (rc, events, artifacts dir)."""
    transmit = [RUNNER, 'transmit', str(pdd), '-p', playbook, '-i', '/runner/inventory/hosts', '--ident', 'job']
    worker = ['podman', 'run', '--rm', '-i', '--network', 'host',
              IMAGE, 'ansible-runner', 'worker', '--private-data-dir=/runner']
    process = [RUNNER, 'process', str(pdd), '--ident', 'job']
    stages = [subprocess.Popen(transmit, stdout=subprocess.PIPE, cwd=str(tmp_path))]
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
    return rc, events, artifacts, out


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


def assert_no_secret(artifacts, secrets):
    """No secret, raw or base64 (with or without padding), in any file the artifacts hold."""
    needles = []
    for secret in secrets:
        needles += [secret, base64.b64encode(secret.encode()).decode(),
                    base64.b64encode(secret.encode()).decode().rstrip('=')]
    hits = []
    names = []
    for dirpath, dummy, files in os.walk(str(artifacts)):
        for name in files:
            path = os.path.join(dirpath, name)
            names.append(os.path.relpath(path, str(artifacts)))
            with open(path, 'rb') as handle:
                text = handle.read().decode(errors='replace')
            hits += ['%s in %s' % (n[:4] + '...', path) for n in needles if n in text]
    # what AWX stores: the events, stdout, the env it ran with
    assert 'stdout' in names and any(n.startswith('job_events/') for n in names), names
    assert hits == []


def test_preflight_job_in_the_ee(tmp_path):
    inventory = good_inventory(str(tmp_path / 'unused'))
    inventory['all']['vars']['ansible_python_interpreter'] = EE_PYTHON
    inventory['all']['vars']['gpuvirt_render_dir'] = '/runner/render'
    # survey answers as AWX sends them: a multiple choice as its string, the integer as a JSON number
    survey = {'gpuvirt_gpu_hosts_pattern': 'gpu_container:gpu_vm_passthrough:gpu_vm_vgpu:gpu_dra',
              'host_prep_serial': 2, 'gpuvirt_cluster_mode': 'render', 'gpuvirt_platform': 'kubernetes'}
    pdd = private_data_dir(tmp_path, inventory, {}, survey)
    rc, events, artifacts, out = run_job(tmp_path, 'playbooks/preflight.yml', pdd)
    assert rc == 0, out[-4000:]
    summary = stats(events)
    assert set(summary['ok']) == {'localhost', 'pt-1', 'vgpu-1', 'ctr-1'}, summary
    assert summary['failures'] == {} and summary['dark'] == {}, summary
    # preflight changes nothing, on any host
    assert summary['changed'] == {}, summary
    tasks = task_results(events)
    # the run's own inputs, with the survey's integer as a JSON number (playbooks/run_inputs.yml)
    assert tasks["Check each host pattern and rollout number by its grammar"] == {'localhost': False}, tasks
    assert tasks['Check that every GPU host is in exactly one pool and has a node name'] == {'localhost': False}
    # each GPU host judged for its pool, and the kernel-argument validation ran read-only on the VM pools' hosts
    # (the container pool's hosts get no kernel arguments)
    assert tasks['Judge the host'] == {'pt-1': False, 'vgpu-1': False, 'ctr-1': False}, tasks
    assert tasks['Validate the kernel arguments (no change)'] == {'pt-1': False, 'vgpu-1': False}, tasks
    assert_no_secret(artifacts, [REGISTRY_PASSWORD])


def test_kubevirt_phase_job_applies_through_the_api_server(tmp_path, kube):
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
    pdd = private_data_dir(tmp_path, inventory, extra, survey, kubeconfig=cluster.kubeconfig)
    rc, events, artifacts, out = run_job(tmp_path, 'playbooks/kubevirt.yml', pdd)
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
    assert_no_secret(artifacts, [REGISTRY_PASSWORD, token])


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
