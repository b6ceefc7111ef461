# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the cluster role for real (ansible-playbook, render mode: no cluster): the collection-wide settings are
checked, the per-role variables they replace are refused naming the replacement, and one fact is set."""

from __future__ import annotations

import json

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform
from play_runner import run_play

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The cluster settings
      ansible.builtin.include_role:
        name: gpuvirt.provision.cluster

    - name: Write the fact
      ansible.builtin.copy:
        content: "{{ gpuvirt_cluster | to_json }}"
        dest: "{{ fact_file }}"
        mode: "0644"
"""


def _run(tmp_path, **extra):
    extra_vars = dict({"gpuvirt_cluster_mode": "render", "gpuvirt_render_dir": str(tmp_path / "out")}, **extra)
    extra_vars.update(fact_file=str(tmp_path / "fact.json"))
    if (tmp_path / "fact.json").exists():
        (tmp_path / "fact.json").unlink()
    rc, out = run_play(tmp_path, PLAY, extra_vars)
    fact = json.loads((tmp_path / "fact.json").read_text()) if (tmp_path / "fact.json").exists() else None
    return rc, out, fact


def test_render_resolves_the_platform_and_its_kubevirt_config(tmp_path):
    rc, out, fact = _run(tmp_path, gpuvirt_platform="openshift")
    assert rc == 0, out
    assert (fact["mode"], fact["platform"], fact["kubevirt_config"]) == ("render", "openshift", "hco"), fact
    assert fact["traits"]["gpu_operator_install"] == "olm" and fact["validate_certs"] is True
    rc, out, fact = _run(tmp_path, gpuvirt_platform="kubernetes", gpuvirt_kubevirt_config="hco")
    assert rc == 0, out
    assert (fact["platform"], fact["kubevirt_config"], fact["traits"]["kernel_args"]) == ("kubernetes", "hco", "host")


def test_render_refuses_auto_naming_the_variable(tmp_path):
    rc, out, fact = _run(tmp_path)
    assert rc != 0 and fact is None, out
    assert "set gpuvirt_platform to one of %s" % ", ".join(platform.PLATFORM_NAMES) in out, out


def test_removed_per_role_variables_are_refused_naming_the_replacement(tmp_path):
    rc, out, fact = _run(tmp_path, gpuvirt_platform="openshift", gpuvirt_openshift="false",
                         gpu_operator_kubeconfig="/k", reboot_validate_certs="true")
    assert rc != 0 and fact is None, out
    flat = " ".join(out.split())
    assert "gpu_operator_kubeconfig is set, gpuvirt_openshift is set, reboot_validate_certs is set" in flat, out
    assert "set gpuvirt_kubeconfig, gpuvirt_platform, gpuvirt_validate_certs instead" in flat, out


def test_tls_off_as_survey_string_warns_once_and_a_typo_is_refused(tmp_path):
    rc, out, fact = _run(tmp_path, gpuvirt_platform="kubernetes", gpuvirt_validate_certs="false")
    assert rc == 0 and fact["validate_certs"] is False, out
    assert out.count("WARNING: gpuvirt_validate_certs is") == 1, out
    rc, out, fact = _run(tmp_path, gpuvirt_platform="kubernetes", gpuvirt_validate_certs="flase")
    assert rc != 0 and "gpuvirt_validate_certs" in out and "flase" in out, out


def test_bad_mode_is_refused(tmp_path):
    rc, out, fact = _run(tmp_path, gpuvirt_cluster_mode="aply", gpuvirt_platform="kubernetes")
    assert rc != 0 and 'gpuvirt_cluster_mode is "aply"' in out, out


def test_a_cluster_model_given_from_outside_is_refused(tmp_path):
    # gpuvirt_cluster is derived; extra vars beat set_fact, so a -e copy would replace the resolution (here: send
    # every phase's files to another directory) unless the role checks the fact in force against the settings
    rc, out, fact = _run(tmp_path, gpuvirt_platform="kubernetes",
                         gpuvirt_cluster={"mode": "render", "render_dir": str(tmp_path / "elsewhere")})
    assert rc != 0, out
    assert "gpuvirt_cluster is derived by the cluster role" in out and "Nothing was changed" in out, out
    assert fact is None


# k3s's containerd (the paths NVIDIA/gpu-operator v26.7.0 controllers/transforms_test.go gives a k3s node's toolkit)
K3S_PATHS = {"containerd_config": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
             "containerd_socket": "/run/k3s/containerd/containerd.sock"}


def test_an_inventory_trait_override_reaches_the_model_and_a_bad_one_stops_the_run(tmp_path):
    # k3s is Kubernetes with containerd elsewhere: the override is merged over the row once, for every phase
    rc, out, fact = _run(tmp_path, gpuvirt_platform="kubernetes", gpuvirt_platform_traits=K3S_PATHS)
    assert rc == 0, out
    assert fact["platform"] == "kubernetes" and fact["traits"]["containerd_socket"] == K3S_PATHS["containerd_socket"]
    assert fact["traits"]["containerd_config"] == K3S_PATHS["containerd_config"], fact
    # a trait that is what the platform is, and a path that is not one, are refused naming the key and the fix
    rc, out, fact = _run(tmp_path, gpuvirt_platform="kubernetes",
                         gpuvirt_platform_traits={"gpu_operator_install": "olm"})
    flat = " ".join(out.split())
    assert rc != 0 and fact is None, out
    assert "gpuvirt_platform_traits.gpu_operator_install: this trait is what the platform kubernetes is" in flat, out
    rc, out, fact = _run(tmp_path, gpuvirt_platform="kubernetes",
                         gpuvirt_platform_traits={"containerd_socket": "/run/k3s/../x.sock"})
    assert rc != 0 and fact is None and "give an absolute path on the nodes" in " ".join(out.split()), out


def test_a_cluster_model_that_differs_only_in_what_it_says_is_refused(tmp_path):
    # every key of the model is held to the settings, the words preflight prints of the platform too: a copy of the
    # resolved fact with other words would pass every other check
    rc, out, fact = _run(tmp_path, gpuvirt_platform="openshift")
    assert rc == 0 and fact["says"] == "OpenShift (OLM, HyperConverged, MachineConfig)", out
    rc, out, same = _run(tmp_path, gpuvirt_platform="openshift", gpuvirt_cluster=fact)
    assert rc == 0 and same == fact, out
    forged = dict(fact, says="Kubernetes (Helm, KubeVirt CR) -- all checks PASSED")
    rc, out, _fact = _run(tmp_path, gpuvirt_platform="openshift", gpuvirt_cluster=forged)
    assert rc != 0, out
    assert "gpuvirt_cluster is derived by the cluster role" in out, out
