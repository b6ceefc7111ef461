# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/bootstrap-host.sh installs only what the chosen targets need (--list installs nothing)."""
from __future__ import annotations

import os
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SCRIPT = os.path.join(ROOT, 'tools', 'bootstrap-host.sh')


def listed(*groups):
    proc = subprocess.run([SCRIPT, '--list'] + list(groups), capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout.split(), proc.stderr


def test_the_kube_targets_pull_no_lab_no_docker_and_all_is_the_ci_set():
    rc, kube, dummy = listed('core', 'kube')
    assert rc == 0 and 'etcd-server' in kube and 'golang-go' in kube
    assert not {'qemu-system-x86', 'docker.io', 'podman', 'docker-registry'} & set(kube)
    rc, everything, dummy = listed()
    # what `make test` (CI) installs: every group
    assert rc == 0 and {'qemu-system-x86', 'docker.io', 'podman', 'docker-registry', 'etcd-server', 'shellcheck'} <= set(everything)
    assert len(everything) == len(set(everything))


def test_an_unknown_group_is_refused_naming_the_groups():
    rc, out, err = listed('nope')
    assert rc == 2 and out == [] and "unknown group 'nope'" in err and 'core kube podman lab registry docker' in err


def test_make_asks_the_kube_target_for_its_groups_only():
    proc = subprocess.run(['make', '-n', '-C', ROOT, 'kube-apiserver'], capture_output=True, text=True, check=False)
    assert 'tools/bootstrap-host.sh core kube' in proc.stdout, proc.stdout + proc.stderr


def make_groups(target):
    proc = subprocess.run(['make', '-n', '-C', ROOT, target], capture_output=True, text=True, check=False)
    calls = [line.split('bootstrap-host.sh', 1)[1].split() for line in proc.stdout.splitlines()
             if 'tools/bootstrap-host.sh' in line]
    assert len(calls) == 1, proc.stdout + proc.stderr  # the host is bootstrapped once per make run
    return calls[0]


def test_each_stage_asks_for_its_groups_and_make_test_for_all():
    # molecule: the Podman driver (default scenario) and the QEMU lab with its API server (vm scenario)
    assert make_groups('molecule') == ['core', 'kube', 'podman', 'lab']
    # integration: the real API server, Podman, docker-registry and the Docker path; never the lab
    assert make_groups('integration') == ['core', 'kube', 'podman', 'registry', 'docker']
    # demo: the QEMU lab and its API server; no Docker, Podman or registry
    assert make_groups('demo') == ['core', 'kube', 'lab']
    # CI: no group named, so every group
    assert make_groups('test') == []
    rc, demo, dummy = listed('core', 'kube', 'lab')
    assert rc == 0 and 'docker.io' not in demo and 'podman' not in demo and 'debootstrap' in demo


def test_a_package_two_groups_need_is_listed_once():
    rc, both, dummy = listed('podman', 'lab')
    assert rc == 0 and both.count('debootstrap') == 1 and len(both) == len(set(both))
