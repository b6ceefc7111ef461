# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the reboot role for real (ansible-playbook) on its flag handling; nothing is pending, so nothing reboots."""

from __future__ import annotations

import json
import subprocess
import sys

from play_runner import run_play

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Reboot role with nothing pending
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: []
"""


def _run(tmp_path, **flags):
    return run_play(tmp_path, PLAY, flags)


def test_validate_certs_off_as_survey_string_warns(tmp_path):
    # an AWX survey or -e passes the string "false"
    rc, out = _run(tmp_path, gpuvirt_validate_certs="false")
    assert rc == 0, out
    assert "WARNING: gpuvirt_validate_certs is" in out, out


def test_validate_certs_on_does_not_warn(tmp_path):
    rc, out = _run(tmp_path, gpuvirt_validate_certs="true")
    assert rc == 0, out
    assert "WARNING: gpuvirt_validate_certs" not in out, out


def test_flag_typo_is_refused_naming_the_variable(tmp_path):
    rc, out = _run(tmp_path, reboot_drain="flase")
    assert rc != 0, out
    assert "reboot_drain" in out and "flase" in out, out


NAME_PLAY = """
- hosts: all
  connection: local
  gather_facts: false
  vars_files:
    - {defaults}
  tasks:
    - name: Show the node name the drain uses
      ansible.builtin.debug:
        msg: "NODE=<{{{{ reboot_node_name }}}}>"
"""


def _node_name(tmp_path, host, **hostvars):
    import pathlib
    defaults = pathlib.Path(__file__).resolve().parents[3] / "roles" / "reboot" / "defaults" / "main.yml"
    play = tmp_path / "name.yml"
    play.write_text(NAME_PLAY.format(defaults=defaults))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {host: dict(hostvars, ansible_python_interpreter=sys.executable)}}}))
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), str(play)], capture_output=True, text=True,
                          check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return out.split("NODE=<", 1)[1].split(">", 1)[0]


def test_drain_node_name_follows_the_node_name_filter(tmp_path):
    # one rule for every phase (docs/contracts.md, "Node names"; filter gpuvirt.provision.node_name)
    assert _node_name(tmp_path, "gpu-1.example.com") == "gpu-1"
    assert _node_name(tmp_path, "gpu-2.example.com", gpuvirt_node_name="worker-gpu-2") == "worker-gpu-2"


DRAIN_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Drain only (nothing else of the role)
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
        tasks_from: drain.yml
"""


def _drain_without_credentials(tmp_path, *args):
    """The drain task file on localhost with no kubeconfig, no K8S_AUTH_* and no in-cluster config: the real
    kubernetes.core.k8s_drain finds no credentials (HOME is an empty directory, so no ~/.kube/config)."""
    import os
    play = tmp_path / "drain.yml"
    play.write_text(DRAIN_PLAY)
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith("K8S_AUTH_") and k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"))
    env["HOME"] = str(tmp_path)
    cmd = ["ansible-playbook", "-i", "localhost,", str(play), "-e",
           json.dumps({"ansible_python_interpreter": sys.executable})] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=300)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_no_credentials_message_says_it_stopped_after_one_attempt(tmp_path):
    # typed as a user types it (-e name=value: a string)
    rc, out = _drain_without_credentials(tmp_path, "-e", "reboot_drain_timeout=30")
    assert rc != 0, out
    assert "localhost was NOT rebooted" in out and "no cluster credentials were found" in out, out
    assert "stopped after its first attempt" in out, out
    # it did not wait, so it must not say it tried for the timeout
    assert "within 30 s" not in out, out
    assert "gpuvirt_kubeconfig" in out and "reboot_drain: false" in out, out


def test_drain_timings_that_are_not_whole_seconds_are_refused_naming_them(tmp_path):
    rc, out = _drain_without_credentials(tmp_path, "-e", "reboot_drain_timeout=30s")
    assert rc != 0, out
    assert 'reboot_drain_timeout ("30s")' in out and "whole seconds" in out, out
    assert "could not be drained" not in out, out


PENDING_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Reboot role with a reboot pending and not allowed
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: ['kernel_args: running kernel lacks intel_iommu=on']
        reboot_allowed: false
"""


def test_pending_reboot_not_allowed_fails_naming_the_reason(tmp_path):
    rc, out = run_play(tmp_path, PENDING_PLAY)
    assert rc != 0, out
    assert "needs a reboot but reboot_allowed is false" in out and "lacks intel_iommu=on" in out, out


def test_the_derived_reasons_cannot_be_emptied_from_outside(tmp_path):
    # extra vars beat set_fact: -e reboot_reasons=[] used to skip the pending reboot and the reboot_allowed check
    rc, out = run_play(tmp_path, PENDING_PLAY, {"reboot_reasons": []})
    assert rc != 0, out
    assert "reboot_reasons is set ([])" in " ".join(out.split()), out
    assert "nothing pending, no reboot" not in out, out


GATE_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The VM gate
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
        tasks_from: vm_gate
      vars:
        reboot_vm_gate_changes: {changes}
        reboot_vm_gate_check: {check}
        reboot_vm_gate_allow: false
        reboot_vm_gate_allow_option: host_prep_stop_vms
        reboot_node_name: gpu-1
"""


def test_the_vm_gate_off_says_so_when_gpus_would_be_taken(tmp_path):
    # reboot_drain: false (a host taken for no cluster node) turns the gate off; a run that takes GPUs from the node
    # says that the VMs were not checked instead of passing silently. No cluster is asked (none is configured here).
    rc, out = run_play(tmp_path, GATE_PLAY.format(changes='["vfio-pci binding taken back"]', check='false'))
    assert rc == 0, out
    said = ' '.join(out.split())
    assert ('WARNING: localhost: vfio-pci binding taken back; the VirtualMachineInstances on its node are not checked '
            '(reboot_drain: false') in said, out


def test_the_vm_gate_is_silent_with_nothing_to_take(tmp_path):
    rc, out = run_play(tmp_path, GATE_PLAY.format(changes='[]', check='false'))
    assert rc == 0, out
    assert 'are not checked' not in ' '.join(out.split()), out
