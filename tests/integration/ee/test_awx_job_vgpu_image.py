# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_image job template run as AWX runs it (ee_jobs.py: transmit | the EE's worker | process), building
on a build host reached over SSH: an AWX execution environment has no container engine, so the image is built
on a host with podman reached with the Machine credential: the one host of the inventory group gpuvirt_image_build
(the first job) or the host the extra variable ``vgpu_image_build_host`` names (the second).

The build host is tools/ee/Containerfile.buildhost (the SSH host stand-in plus podman and skopeo), with podman
nested in it: vfs storage and chroot isolation for the RUN steps (measured: with the default OCI isolation the
nested runc fails, "did not get container create message from subprocess: EOF"), the outer container given
CAP_SYS_ADMIN only, not --privileged (measured: the least that lets the login user's rootless podman make its user
namespace and mounts; without it newuidmap fails, "write to uid_map failed: Operation not permitted", even with
seccomp, AppArmor and SELinux labelling off; Podman's default seccomp profile allows the rest).
It shares the test machine's network (as the worker does), so the worker reaches its sshd on 127.0.0.1 and it
reaches the real registry of tests/integration/registry (docker-registry, htpasswd, TLS from a throw-away CA whose
certificate names 127.0.0.1) with TLS verified against the CA that the registry credential carries.

The registry credential is injected as the custom credential type of awx/credential_types.yml injects it: the
extra vars gpuvirt_registry, gpuvirt_registry_username, gpuvirt_registry_password, and the CA certificate as a
file under env/ named by GPUVIRT_REGISTRY_CA_FILE; the inventory maps them to the role with
inventories/example/group_vars/all/registry.yml, as docs/awx.md tells users to. That CA file is on the controller
(the EE), not on the build host: the role copies it to the build host (vgpu_manager_image_registry_ca_file_on:
controller, set by that group_vars file).

The build's base image: the nested podman has no image, and the role's ``podman build`` passes no credentials to
the FROM pull (NVIDIA's base, nvcr.io/nvidia/cuda, is public). The test pushes the base from the test machine to
the test registry, and the build host pulls it from there (logged in with the password on stdin, TLS verified,
the login removed again), as an air-gapped site's admin prepares a build host from its mirror; the build then finds
it locally (podman build's default pull policy, "missing").
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shlex
import socket
import subprocess
import sys
import time

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ee_jobs import (EE_PYTHON, ROOT, add_become_user, assert_no_secret, awx_job, job_secrets,  # noqa: E402
                     run_job, stats, task_results, wait_for_sshd)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration', 'registry'))
# the registry fixture (session-scoped: the real registry, removed at the end), its reader and the argv watcher
from registry_harness import HERE as REGISTRY_HERE, Watcher, registry  # noqa: E402,F401 pylint: disable=W0611,C0413

BUILD_HOST_IMAGE = os.environ.get('GPUVIRT_EE_BUILD_HOST_IMAGE', 'localhost/gpuvirt-ee-build-host')
# what the outer container needs for rootless podman inside it (measured: see the module docstring)
NESTED_PODMAN = ['--cap-add', 'SYS_ADMIN']
# the build's base (tools/ee/Containerfile.buildbase: a static busybox standing in for nvcr.io/nvidia/cuda)
LOCAL_BASE = os.environ.get('GPUVIRT_EE_BUILD_BASE_IMAGE', 'localhost/gpuvirt-ee-build-base')
VERSION = '550.90.05'
RUN_NAME = 'NVIDIA-Linux-x86_64-%s-vgpu-kvm.run' % VERSION
OS_TAG = 'ubuntu22.04'
REPO = 'nvidia/vgpu-manager'
TAG = VERSION + '-' + OS_TAG
BUILD = 'Build the image with Podman'
PUSH = 'Push the image with Podman (auth file, TLS verified against the CA)'
USER = 'builder'
HOME = '/home/' + USER


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def as_user(container, script, **kwargs):
    """A login shell of the build host's user (pam_env reads /etc/environment: BUILDAH_ISOLATION)."""
    return subprocess.run(['podman', 'exec', '-i', container, 'su', '-', USER, '-c', script], check=True,
                          capture_output=True, text=True, **kwargs)


def stand_in_run(path):
    """The .run stand-in of tests/integration/registry: prints its version, as the real installer's --version."""
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\n# vgpu_image job stand-in\n[ "$1" = --version ] && echo %s\n' % VERSION)
    os.chmod(path, 0o755)
    return path


@pytest.fixture(scope='module')
def build_host(tmp_path_factory, registry):
    """The build host over SSH and its Machine credential (a key made here, sudo with a password), the build context
    and the .run stand-in in the user's home, the base image pulled from the test registry."""
    for image in (BUILD_HOST_IMAGE, LOCAL_BASE):
        if subprocess.run(['podman', 'image', 'exists', image], check=False).returncode != 0:
            pytest.fail('image %s missing: run make ee-image' % image)
    work = tmp_path_factory.mktemp('build-host')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'gpuvirt-ee-build', '-f', str(work / 'id')],
                   check=True)
    name = 'gpuvirt-ee-build-%s' % secrets.token_hex(4)
    port = free_port()
    become_password = 'Bb-' + secrets.token_hex(12)
    subprocess.run(['podman', 'run', '-d', '--rm', '--name', name, '--network', 'host'] + NESTED_PODMAN +
                   [BUILD_HOST_IMAGE, '/usr/sbin/sshd', '-D', '-e', '-p', str(port), '-o', 'ListenAddress=127.0.0.1'],
                   check=True, capture_output=True)
    try:
        add_become_user(name, USER, become_password)
        with open(str(work / 'id.pub'), 'rb') as handle:
            subprocess.run(['podman', 'exec', '-i', name, 'sh', '-c',
                            'cat >{h}/.ssh/authorized_keys && chown {u} {h}/.ssh/authorized_keys'
                            .format(u=USER, h=HOME)], stdin=handle, check=True)
        # what the job builds from: NVIDIA's vgpu-manager/<os> checkout and the licensed .run, on the build host
        run = stand_in_run(str(work / RUN_NAME))
        for src in (os.path.join(REGISTRY_HERE, 'context'), run):
            subprocess.run(['podman', 'cp', src, '%s:%s/' % (name, HOME)], check=True)
        subprocess.run(['podman', 'exec', name, 'chown', '-R', USER, HOME + '/context', HOME + '/' + RUN_NAME],
                       check=True)
        # the base: pushed from the test machine to the registry (auth file 0600 and the CA in a temporary
        # directory, no password in an argv), then pulled by the build host's podman from the registry
        base = '%s/gpuvirt/base:busybox' % registry.host
        creds = work / 'creds'
        creds.mkdir(mode=0o700)
        token = '%s:%s' % (registry.user, registry.password)
        fd = os.open(str(creds / 'auth.json'), os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, 'w') as handle:
            json.dump({'auths': {registry.host: {'auth': base64.b64encode(token.encode()).decode()}}},
                      handle)
        with open(registry.ca) as handle:
            ca_pem = handle.read()
        (creds / 'ca.crt').write_text(ca_pem)
        started = time.time()
        subprocess.run(['podman', 'push', '-q', '--authfile', str(creds / 'auth.json'), '--cert-dir', str(creds),
                        LOCAL_BASE, base], check=True)
        pushed = time.time()
        pull = ('set -e; d=$(mktemp -d); trap \'rm -rf "$d"\' EXIT; cat >"$d/ca.crt"; '
                'printf %s "$REGISTRY_SECRET" | podman login --authfile "$d/auth.json" --cert-dir "$d" '
                '--username {user} --password-stdin {host}; '
                'podman pull -q --authfile "$d/auth.json" --cert-dir "$d" {base} >/dev/null'
                .format(user=shlex.quote(registry.user), host=registry.host, base=base))
        # the password reaches the login's stdin through the shell's environment (printf is a builtin), never an argv
        # (the first line of stdin, read by the shell's builtin read; the rest is the CA certificate)
        as_user(name, 'IFS= read -r REGISTRY_SECRET; export REGISTRY_SECRET; sh -c %s' % shlex.quote(pull),
                input=registry.password + '\n' + ca_pem)
        print('base pushed in %.1f s, pulled by the build host in %.1f s' % (pushed - started, time.time() - pushed))
        install_argv_shims(name)
        wait_for_sshd(name, port)
        with open(run, 'rb') as handle:
            run_sha256 = hashlib.sha256(handle.read()).hexdigest()
        yield {'container': name, 'port': port, 'user': USER, 'become_password': become_password,
               'private_key': (work / 'id').read_text(), 'base': base, 'run_sha256': run_sha256}
    finally:
        subprocess.run(['podman', 'rm', '-f', '-t', '0', name], check=False, capture_output=True)


# Every podman and skopeo the jobs run on the build host, logged by a shim first on the PATH (/usr/local/bin comes
# before /usr/bin in the PATH Debian's sshd gives a session, and in sudo's secure_path): one line per call, the
# command name then each argument base64-encoded (an argument may hold blanks or newlines), then the real binary
# is exec'd. Installed after the fixture's own login and pull, so the log holds the jobs' calls only. Unlike the
# /proc sampler below, no call is missed however short it lives (a podman login takes milliseconds).
ARGV_LOG = '/var/tmp/gpuvirt-argv.log'
ARGV_SHIM = """#!/bin/sh
# test fixture: log this call's argv, then run the real {cmd}
{{ printf %s {cmd}; for a in "$@"; do printf ' %s' "$(printf %s "$a" | base64 -w0)"; done; echo; }} >>{log}
exec {real} "$@"
"""


def install_argv_shims(container):
    for cmd in ('podman', 'skopeo'):
        real = subprocess.run(['podman', 'exec', container, 'sh', '-c', 'command -v ' + cmd], check=True,
                              capture_output=True, text=True).stdout.strip()
        assert real.startswith('/usr/bin/'), real
        subprocess.run(['podman', 'exec', '-i', container, 'sh', '-c',
                        'cat >/usr/local/bin/{c} && chmod 0755 /usr/local/bin/{c}'.format(c=cmd)],
                       input=ARGV_SHIM.format(cmd=cmd, real=real, log=ARGV_LOG), text=True, check=True)
    subprocess.run(['podman', 'exec', container, 'sh', '-c', ': >{l} && chmod 0666 {l}'.format(l=ARGV_LOG)],
                   check=True)


def logged_argvs(host):
    """The argv of each podman and skopeo call since the last read (the log is emptied), decoded."""
    text = subprocess.run(['podman', 'exec', host['container'], 'sh', '-c', 'cat {l} && : >{l}'.format(l=ARGV_LOG)],
                          check=True, capture_output=True, text=True).stdout
    return [[words[0]] + [base64.b64decode(w).decode() for w in words[1:]]
            for words in (line.split(' ') for line in text.splitlines() if line)]


def assert_no_password_in(argvs, user, password):
    """No argument holds the password, raw, base64 (with or without padding) or as the base64 of user:password
    (an auth file's form), anywhere in it."""
    wanted = [password, base64.b64encode(password.encode()).decode(),
              base64.b64encode(password.encode()).decode().rstrip('=')]
    wanted.append(base64.b64encode(('%s:%s' % (user, password)).encode()).decode().rstrip('='))
    # only the command and subcommand of a leaking call are kept: pytest would print a leaking argv whole
    leaked = sorted({' '.join(argv[:2]) for argv in argvs if any(w in arg for w in wanted for arg in argv)})
    assert leaked == [], 'the registry password is in the argv of %s' % ', '.join(leaked)


def assert_no_process_leak(watcher):
    """No process the /proc sampler saw held the password in its argv; named by the command only (pytest would
    print the argv, password and all)."""
    leaked = sorted({os.path.basename(line.split(' ', 1)[0]) for line in watcher.leaks})
    assert leaked == [], 'the registry password was in the argv of a process: %s' % ', '.join(leaked)


def inventory(host):
    """The build host and the EE's localhost; the registry credential mapped to the role by the example
    inventory's group_vars (what docs/awx.md tells users to copy)."""
    with open(os.path.join(ROOT, 'inventories', 'example', 'group_vars', 'all', 'registry.yml')) as handle:
        group_vars = yaml.safe_load(handle)
    group_vars.update({
        'gpuvirt_cluster_mode': 'apply', 'vgpu_image_os_tags': [OS_TAG],
        'vgpu_manager_image_run_file': HOME + '/' + RUN_NAME, 'vgpu_manager_image_version': VERSION,
        'vgpu_manager_image_context_dir': HOME + '/context', 'vgpu_manager_image_cuda_version': '12.4.1',
        'vgpu_manager_image_build_args': {'BASE_IMAGE': host['base']}})
    return {'all': {
        'vars': group_vars,
        # the build host is the one host of the inventory group gpuvirt_image_build (playbooks/phase_vgpu_image.yml)
        'children': {'gpuvirt_image_build': {'hosts': {'build-1': {
            'ansible_host': '127.0.0.1', 'ansible_port': host['port'],
            'ansible_python_interpreter': '/usr/bin/python3'}}}},
        'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': EE_PYTHON}}}}


def vgpu_image_job(tmp_path, host, reg, extra=None, expect_ok=True):
    """awx_job with the registry credential of the test registry: its extra vars and its CA file under env/."""
    # the play's hosts pattern is templated before any host's variables exist: the build host is the inventory
    # group gpuvirt_image_build's one host, or the job template's extra var vgpu_image_build_host (an inventory
    # variable would leave the play on localhost, the EE)
    pdd, params = awx_job(tmp_path, 'vgpu_image', inventory(host), extra or {}, {}, host)
    extravars = json.loads((pdd / 'env' / 'extravars').read_text())
    extravars.update({'gpuvirt_registry': reg.host, 'gpuvirt_registry_username': reg.user,
                      'gpuvirt_registry_password': reg.password})
    (pdd / 'env' / 'extravars').write_text(json.dumps(extravars))
    with open(reg.ca) as handle:
        (pdd / 'env' / 'tmp_ca_cert').write_text(handle.read())
    watcher = Watcher(reg.password, str(tmp_path))
    watcher.start()
    started = time.time()
    try:
        rc, events, out = run_job(tmp_path, pdd, params)
    finally:
        watcher.done.set()
        watcher.join()
    print('vgpu_image job: %.1f s' % (time.time() - started))
    for event in events:
        if event.get('event') == 'runner_on_ok' and (event['event_data'].get('duration') or 0) > 1:
            print('  %5.1f s %s' % (event['event_data']['duration'], event['event_data']['task']))
    assert (rc == 0) == expect_ok, out[-4000:]
    return (pdd, events, watcher) if expect_ok else (pdd, out, watcher)


def build_tmp_dirs(host):
    """The role's temporary directories left on the build host (its default parent, /tmp)."""
    proc = subprocess.run(['podman', 'exec', host['container'], 'sh', '-c',
                           'ls -1d /tmp/vgpu-manager-image.* 2>/dev/null'], capture_output=True, text=True, check=False)
    return proc.stdout.split()


def test_vgpu_image_job_builds_on_the_build_host_then_changes_nothing(tmp_path, build_host, registry):
    secrets_ = job_secrets(build_host, registry.password)
    pdd, events, watcher = vgpu_image_job(tmp_path / 'first', build_host, registry)
    tasks = task_results(events)
    # built and pushed on the build host over SSH (the runner_on_ok events name the host)
    assert tasks[BUILD] == {'build-1': True} and list(tasks[PUSH]) == ['build-1'], tasks
    assert TAG in registry.tags(REPO), registry.catalog()
    labels = registry.labels(REPO, TAG)
    assert labels['io.gpuvirt.vgpu-manager.run-sha256'] == build_host['run_sha256'], labels
    assert labels['version'] == VERSION, labels
    digest = registry.manifest_digest(REPO, TAG)
    assert_no_secret(pdd, secrets_)
    # what the role ran on the build host (the argv shims): the login with the password on stdin, the inspect,
    # the build and the push, and no argument holding the password
    argvs = logged_argvs(build_host)
    calls = [argv[:2] for argv in argvs]
    assert ['podman', 'login'] in calls and ['skopeo', 'inspect'] in calls, calls
    assert ['podman', 'build'] in calls and ['podman', 'push'] in calls, calls
    assert_no_password_in(argvs, registry.user, registry.password)
    login = next(argv for argv in argvs if argv[:2] == ['podman', 'login'])
    assert '--password-stdin' in login and '--username=' + registry.user in login, login
    # and no process of any kind held it (the build host's processes are this machine's too: /proc, sampled, so a
    # short one can be missed, but it sees what the shims cannot, such as a shell around the login)
    assert_no_process_leak(watcher)
    assert build_tmp_dirs(build_host) == []

    # the second job names the build host the other way, with the extra variable (the group is still there)
    pdd, events, watcher = vgpu_image_job(tmp_path / 'second', build_host, registry, {'vgpu_image_build_host': 'build-1'})
    tasks = task_results(events)
    assert stats(events)['changed'] == {}, stats(events)
    assert BUILD not in tasks and PUSH not in tasks, sorted(tasks)
    assert registry.manifest_digest(REPO, TAG) == digest
    assert_no_secret(pdd, secrets_)
    argvs = logged_argvs(build_host)
    calls = [argv[:2] for argv in argvs]
    assert ['podman', 'login'] in calls and ['skopeo', 'inspect'] in calls, calls
    assert ['podman', 'build'] not in calls and ['podman', 'push'] not in calls, calls
    assert_no_password_in(argvs, registry.user, registry.password)
    assert_no_process_leak(watcher)
    assert build_tmp_dirs(build_host) == []


def test_a_launch_pointing_the_ca_file_at_the_jobs_extravars_sends_nothing(tmp_path, build_host, registry):
    """Every job template prompts for variables on launch: one naming the job's own extravars file (the registry
    credential's password is injected there) as the CA file is refused on the controller before any change, the
    refusal shows none of it, and nothing reaches the build host (no podman or skopeo ran, no temporary directory)."""
    secrets_ = job_secrets(build_host, registry.password)
    logged_argvs(build_host)
    pdd, out, watcher = vgpu_image_job(tmp_path, build_host, registry,
                                       {'vgpu_manager_image_registry_ca_file': '/runner/env/extravars'},
                                       expect_ok=False)
    flat = ' '.join(out.split())
    assert ('vgpu_manager_image_registry_ca_file /runner/env/extravars is not a PEM certificate bundle (it holds no '
            'certificate block)') in flat, out[-4000:]
    assert 'on the controller. Nothing was sent to the build host' in flat, out[-4000:]
    assert_no_secret(pdd, secrets_)
    assert registry.password not in out and 'gpuvirt_registry_password' not in out
    assert logged_argvs(build_host) == []
    assert_no_process_leak(watcher)
    assert build_tmp_dirs(build_host) == []
