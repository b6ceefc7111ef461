# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The helm commands the gpu_operator role runs take their binary and arguments from the checked inputs in the
task itself, never from __gpu_operator_helm_checked: an extra variable beats that fact. The real role, on
Kubernetes in apply mode, up to its first helm commands, with a stand-in helm on disk that records its argv and
stops the role at ``show values`` (the install itself needs an API server: the integration tests run it; the
static rule of tests/unit/trust/test_sink_inputs.py covers its arguments)."""
from __future__ import annotations

import json
import pathlib

from play_runner import run_play

ROOT = pathlib.Path(__file__).resolve().parents[3]
# The role's own task file and defaults, without its dependency on the cluster role (which, in apply mode, needs an
# API server to answer): gpuvirt_cluster is given as the cluster role would derive it for a Kubernetes cluster.
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - {root}/roles/gpu_operator/defaults/main.yml
  vars:
    gpuvirt_cluster:
      mode: apply
      render_dir: ""
      platform: kubernetes
      traits: {{gpu_operator_install: helm}}
  tasks:
    - name: Run the gpu_operator role's tasks
      ansible.builtin.include_tasks: {root}/roles/gpu_operator/tasks/main.yml
""".format(root=ROOT)

HELM = """#!/bin/sh
printf '%s\\n' "$*" >> {log}
case "$1" in
  version) echo 'version.BuildInfo{{Version:"v3.14.4", GitCommit:"", GitTreeState:"clean", GoVersion:"go1.22"}}' ;;
  *) echo 'stand-in helm: stop here' >&2; exit 1 ;;
esac
"""


def _helm(tmp_path, name):
    log = tmp_path / (name + '.log')
    path = tmp_path / name
    path.write_text(HELM.format(log=log))
    path.chmod(0o755)
    return path, log


def test_helm_arguments_given_as_the_internal_fact_are_never_run(tmp_path):
    helm, log = _helm(tmp_path, 'helm')
    evil, evil_log = _helm(tmp_path, 'evil')
    extra = {
        'gpu_operator_helm_binary': str(helm),
        '__gpu_operator_helm_checked': {
            'binary': str(evil), 'release': 'x --post-renderer /tmp/evil', 'chart': '--kubeconfig=/tmp/k',
            'repo': 'https://example.invalid/$(id)', 'version': '1.0.0 --insecure-skip-tls-verify'},
    }
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc != 0 and 'stand-in helm: stop here' in out, out
    assert not evil_log.exists(), evil_log.read_text()
    calls = log.read_text().splitlines()
    assert calls[0] == 'version', calls
    assert calls[1].startswith('show values gpu-operator --repo https://helm.ngc.nvidia.com/nvidia --version '), calls
    assert 'evil' not in json.dumps(calls) and 'post-renderer' not in json.dumps(calls), calls


def test_a_hostile_helm_binary_input_is_refused_before_helm_runs(tmp_path):
    helm, log = _helm(tmp_path, 'helm')
    extra = {'gpu_operator_helm_binary': str(helm) + ' --post-renderer /tmp/evil'}
    rc, out = run_play(tmp_path, PLAY, extra)
    assert rc != 0 and 'gpu_operator_helm_binary' in out, out
    assert not log.exists(), log.read_text()
