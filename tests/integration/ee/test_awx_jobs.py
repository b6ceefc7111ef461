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

import json
import os
import secrets
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ee_jobs import (EE_PYTHON, IMAGE, ROOT, SURVEY_PT, add_become_user, assert_no_secret, awx_job,  # noqa: E402
                     gathered_on, host_files, host_inventory, job_secrets, reachable, run_job, stats, task_results)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'cluster_kubevirt'))
import fake_helm  # noqa: E402
from kube_cluster import write_summary  # noqa: E402
from test_apply import HCO, QAT, hco_object, node  # noqa: E402
import schema  # noqa: E402  (tests/unit: the reference data's directory)


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


def test_a_launch_variable_replacing_checked_host_files_stops_the_job_before_the_host(tmp_path, machine):
    # An AWX launcher's extra variables (env/extravars) beat set_fact: __vfio_files once replaced the checked
    # modprobe.d and dracut text (an install line run as root). The launch check, the job's first play, refuses it
    # by name, and the job never reaches the host (docs/security.md, "Launch time").
    hostile = {'__vfio_files': {'modprobe': 'install nvidia /bin/sh -c "id > /tmp/pwned"',
                                'dracut': 'add_drivers+="$(id > /tmp/x)"'}}
    pdd, params = awx_job(tmp_path, 'host_prep', host_inventory(machine), hostile, SURVEY_PT, machine)
    rc, events, out = run_job(tmp_path, pdd, params)
    assert rc != 0, out[-4000:]
    failed = [e['event_data'] for e in events if e.get('event') == 'runner_on_failed']
    assert [d['task'] for d in failed] == ['Refuse internal, run-time and unknown variables'], failed
    assert '__vfio_files (given by the extra variables) is internal to the collection' in \
        failed[0]['res']['msg'], failed
    tasks = task_results(events)
    assert 'Gathering Facts' not in tasks, sorted(tasks)
    assert host_files(machine, '/etc/modprobe.d/gpuvirt-vfio.conf', '/tmp/pwned', '/tmp/x') == []
    assert_no_secret(pdd, job_secrets(machine))


def test_kubevirt_phase_job_applies_through_the_api_server(tmp_path, kube, machine):
    cluster = kube([hco_object(), node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}),
                    node('gpu-2', {'nvidia.com/AD102GL_L40S': '1'})])
    with open(os.path.join(ROOT, 'tests', 'integration', 'cluster_kubevirt', 'inventories',
                           'passthrough-hco-new.yml')) as handle:
        inventory = yaml.safe_load(handle)
    inventory['all']['vars']['ansible_python_interpreter'] = EE_PYTHON
    inventory['all']['vars']['render_root'] = '/runner/unused'
    gpu_hosts = reachable(inventory, machine)
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
    # a job has no facts from an earlier job: the phase gathered what its inventory does not give, on each GPU host
    # over SSH as root (kubevirt.yml runs gather.yml before its body)
    assert gathered_on(events) == gpu_hosts == ['gpu-1', 'gpu-2'], gathered_on(events)
    tasks = task_results(events)
    # this inventory gives no GPU facts (its devices are listed in kubevirt_devices_pci_devices): the job discovered
    # them on the hosts with the real lspci and sysfs (no NVIDIA device in a container; the listed devices are used)
    assert tasks['Discover PCI devices (lspci + sysfs)'] == {'gpu-1': False, 'gpu-2': False}, sorted(tasks)
    changed = sorted(task for task, hosts in tasks.items() if any(hosts.values()))
    assert changed == ['Apply the objects that change with server-side apply'], changed
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
    gpu_hosts = reachable(inventory, machine)
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
        # each job gathers again what the inventory does not give (nodes.yml runs gather.yml before its body)
        assert gathered_on(events) == gpu_hosts == ['ctr-1', 'pt-1', 'vgpu-1'], gathered_on(events)
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
    gpu_hosts = reachable(inventory, machine)
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
    # the OS tag the one-OS check reads, gathered by the job itself on each GPU host (operator.yml runs gather.yml)
    assert gathered_on(events) == gpu_hosts == ['gpu-1', 'gpu-2'], gathered_on(events)
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
