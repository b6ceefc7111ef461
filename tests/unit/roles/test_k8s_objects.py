# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the k8s_objects role for real (ansible-playbook, render mode) and check what it writes."""

from __future__ import annotations

import json
import os
import stat
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import schema  # noqa: E402
from play_runner import run_play  # noqa: E402

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Render
      ansible.builtin.include_role:
        name: gpuvirt.provision.k8s_objects
      vars:
        k8s_objects_mode: render
        k8s_objects_render_dir: "{{ out }}"
        k8s_objects_render_prefix: "{{ prefix }}"
        k8s_objects_no_log: "{{ secret }}"
        k8s_objects_list: "{{ objects }}"
"""

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia-gpu-operator"}}
SECRET = {
    "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
    "metadata": {"name": "registry-pull", "namespace": "nvidia-gpu-operator"},
    "stringData": {".dockerconfigjson": json.dumps({"auths": {"r.example": {"auth": "czNjcjN0LXZhbHVl"}}})},
}


def _run(tmp_path, objects, prefix="", secret=False, extra=()):
    extra_vars = {"out": str(tmp_path / "out"), "objects": objects, "prefix": prefix, "secret": secret}
    return run_play(tmp_path, PLAY, extra_vars, args=extra)


def _recap(output):
    line = [ln for ln in output.splitlines() if ln.startswith("localhost")][-1]
    return dict(field.split("=") for field in line.split(":", 1)[1].split())


def test_render_writes_valid_files_and_is_idempotent(tmp_path):
    rc, out = _run(tmp_path, [NAMESPACE], prefix="10-operator")
    assert rc == 0, out
    path = tmp_path / "out" / "10-operator-000-namespace-cluster-nvidia-gpu-operator.yaml"
    docs = schema.validate_file(str(path))
    assert docs == [NAMESPACE]
    assert _recap(out)["changed"] == "2"  # the directory and the one file
    rc, out = _run(tmp_path, [NAMESPACE], prefix="10-operator")
    assert rc == 0, out
    assert _recap(out)["changed"] == "0"


def test_check_mode_writes_nothing(tmp_path):
    rc, out = _run(tmp_path, [NAMESPACE], extra=["--check", "--diff"])
    assert rc == 0, out
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert "nvidia-gpu-operator" in out  # the diff shows what would be written


def test_secret_is_private_and_not_logged(tmp_path):
    rc, out = _run(tmp_path, [SECRET], secret=True, extra=["-v"])
    assert rc == 0, out
    path = tmp_path / "out" / "000-secret-nvidia-gpu-operator-registry-pull.yaml"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "czNjcjN0LXZhbHVl" not in out
    assert yaml.safe_load(path.read_text())["stringData"] == SECRET["stringData"]


def test_incomplete_object_fails_before_any_write(tmp_path):
    rc, out = _run(tmp_path, [NAMESPACE, {"kind": "ConfigMap", "metadata": {"name": "x"}}])
    assert rc != 0
    assert "object number 1 lacks apiVersion" in out
    assert not (tmp_path / "out").exists()


def test_name_climbing_out_of_the_render_dir_fails_before_any_write(tmp_path):
    (tmp_path / "out").mkdir()
    rc, out = _run(tmp_path, [NAMESPACE, {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "../../x", "namespace": "gpu"}}])
    assert rc != 0
    assert "metadata.name: '../../x' is not valid" in out
    assert not any((tmp_path / "out").iterdir()) and not (tmp_path / "x").exists()
