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
        k8s_objects_list: "{{ objects }}"
"""

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia-gpu-operator"}}
SECRET = {
    "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
    "metadata": {"name": "registry-pull", "namespace": "nvidia-gpu-operator"},
    "stringData": {".dockerconfigjson": json.dumps({"auths": {"r.example": {"auth": "czNjcjN0LXZhbHVl"}}})},
}


ROLE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "k8s_objects"))
# what a launcher could pass to switch the protection off, if any protection read a variable: the role's former
# option, and the internal fact that carried it (extra variables beat set_fact and include_role vars)
SWITCH_OFF = ["-e", "k8s_objects_no_log=false",
              "-e", json.dumps({"__k8s_objects_flags": {"no_log": False, "force_conflicts": False, "wait": False,
                                                        "dry_run": False}})]


def _run(tmp_path, objects, prefix="", extra=()):
    extra_vars = {"out": str(tmp_path / "out"), "objects": objects, "prefix": prefix}
    return run_play(tmp_path, PLAY, extra_vars, args=extra)


def _recap(output):
    line = [ln for ln in output.splitlines() if ln.startswith("localhost")][-1]
    return dict(field.split("=") for field in line.split(":", 1)[1].split())


def test_render_writes_valid_files_and_is_idempotent(tmp_path):
    rc, out = _run(tmp_path, [NAMESPACE], prefix="10-operator")
    assert rc == 0, out
    path = tmp_path / "out" / "10-operator-namespace-cluster-nvidia-gpu-operator.yaml"
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
    rc, out = _run(tmp_path, [SECRET], extra=["-v"])
    assert rc == 0, out
    path = tmp_path / "out" / "secret-nvidia-gpu-operator-registry-pull.yaml"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "czNjcjN0LXZhbHVl" not in out
    assert yaml.safe_load(path.read_text())["stringData"] == SECRET["stringData"]


def test_no_extra_variable_switches_the_protection_of_a_secret_off(tmp_path):
    """The finding this guards: -e k8s_objects_no_log=false used to print the Secret and write it 0644."""
    rc, out = _run(tmp_path, [SECRET], extra=SWITCH_OFF + ["-vvv", "--diff"])
    assert rc == 0, out
    path = tmp_path / "out" / "secret-nvidia-gpu-operator-registry-pull.yaml"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "czNjcjN0LXZhbHVl" not in out and "registry-pull" not in out.replace(str(path), "")
    assert yaml.safe_load(path.read_text())["stringData"] == SECRET["stringData"]


def test_a_list_mixing_a_secret_with_other_objects_is_protected_whole(tmp_path):
    rc, out = _run(tmp_path, [NAMESPACE, SECRET], extra=SWITCH_OFF + ["-vvv"])
    assert rc == 0, out
    for name in ("namespace-cluster-nvidia-gpu-operator.yaml", "secret-nvidia-gpu-operator-registry-pull.yaml"):
        assert stat.S_IMODE(os.stat(tmp_path / "out" / name).st_mode) == 0o600, name
    assert "czNjcjN0LXZhbHVl" not in out


def test_a_secret_spelled_another_way_is_still_a_secret(tmp_path):
    # kubernetes.core resolves a kind by its plural name and in any case too
    spelled = dict(SECRET, kind="secrets")
    rc, out = _run(tmp_path, [spelled], extra=SWITCH_OFF + ["-vvv"])
    assert rc == 0, out
    assert stat.S_IMODE(os.stat(tmp_path / "out" / "secrets-nvidia-gpu-operator-registry-pull.yaml").st_mode) == 0o600
    assert "czNjcjN0LXZhbHVl" not in out


def test_objects_without_a_credential_stay_visible_and_0644(tmp_path):
    rc, out = _run(tmp_path, [NAMESPACE], extra=["-v"])
    assert rc == 0, out
    path = tmp_path / "out" / "namespace-cluster-nvidia-gpu-operator.yaml"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert str(path) in out  # the result is shown, not hidden by no_log


def _steps(name):
    with open(os.path.join(ROLE, "tasks", name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_apply_secret_is_apply_with_literal_no_log_on_every_task():
    """apply_secret.yml repeats apply.yml's steps for a list holding a Secret: the two must not drift apart."""
    plain, secret = _steps("apply.yml"), _steps("apply_secret.yml")
    assert all(task.get("no_log") is True for task in secret), [t["name"] for t in secret]
    assert all("no_log" not in task for task in plain)
    renamed = yaml.safe_load(yaml.safe_dump(secret).replace("__k8s_objects_secret_", "__k8s_objects_"))
    assert [{k: v for k, v in task.items() if k != "no_log"} for task in renamed] == plain


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
