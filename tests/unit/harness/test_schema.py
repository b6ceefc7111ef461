# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The schema harness must reject what a cluster would reject, or the render tests prove nothing."""

from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import schema  # noqa: E402  (tests/unit/schema.py)


def _ref(*parts):
    return os.path.join(schema.reference_dir(), *parts)


def test_known_kinds_cover_the_crds_we_render():
    kinds = {key[1] for key in schema.known_kinds()}
    for kind in ("ClusterPolicy", "HyperConverged", "KubeVirt", "VirtualMachine", "MachineConfig",
                 "MachineConfigPool", "Subscription", "OperatorGroup"):
        assert kind in kinds


def test_upstream_examples_are_valid():
    # Real upstream examples must pass, or the harness is stricter than the API server.
    schema.validate_file(_ref("examples", "hyperconverged-cluster-operator-v1.18.1-deploy-hco.cr.yaml"))
    schema.validate_file(_ref("examples", "gpu-operator-v26.7.0-config-samples-v1_clusterpolicy.yaml"),
                         crd_sources=["v26.7.0"])
    schema.validate_file(_ref("examples", "kubevirt-v1.9.0-vmi-gpu.yaml"))
    schema.validate_file(_ref("examples", "k8s-dra-driver-gpu-v0.4.0-demo-specs-quickstart-v1-gpu-test-vfiopci.yaml"))


def test_alm_example_clusterpolicy_is_valid():
    with open(_ref("olm", "gpu-operator-v26.7.0-csv-alm-examples.json"), encoding="utf-8") as handle:
        examples = json.load(handle)
    policy = next(e for e in examples if e["kind"] == "ClusterPolicy")
    schema.validate(policy, crd_sources=["v26.7.0"])


def test_unknown_crd_field_is_rejected():
    with open(_ref("examples", "hyperconverged-cluster-operator-v1.18.1-deploy-hco.cr.yaml"), encoding="utf-8") as handle:
        hco = yaml.safe_load(handle)
    hco["spec"]["permittedHostDevices"] = {"pciHostDevice": [{"pciDeviceSelector": "10DE:2236"}]}  # typo
    with pytest.raises(schema.SchemaError) as info:
        schema.validate(hco)
    assert "pciHostDevice" in str(info.value)


def test_wrong_type_in_crd_is_rejected():
    doc = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "gpu-cluster-policy"},
           "spec": {"sandboxWorkloads": {"enabled": "yes"}}}
    with pytest.raises(schema.SchemaError) as info:
        schema.validate(doc, crd_sources=["v26.7.0"])
    assert "sandboxWorkloads.enabled" in str(info.value)


def test_core_object_strict():
    good = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvidia-gpu-operator"}}
    schema.validate(good)
    bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": {"finalizer": []}}
    with pytest.raises(schema.SchemaError):
        schema.validate(bad)


def test_unknown_kind_never_passes():
    with pytest.raises(schema.SchemaError) as info:
        schema.validate({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert "Widget" in str(info.value)
