# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vGPU type naming and board matching: one rule, so preflight and the vGPU config builder judge a type alike."""

from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import preflight, vgpu_types
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import resource_names, vgpu_names
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_config as vc

A10 = "GA102GL [A10]"
A100_80 = "GA100 [A100 PCIe 80GB]"
A100_40 = "GA100 [A100 PCIe 40GB]"


def test_one_implementation_behind_every_name():
    for fn in (preflight.short_type_name, resource_names.short_type_name, vc.short_name, vgpu_types.short_type_name):
        assert fn is vgpu_names.short_type_name
    assert preflight.type_model is vgpu_names.type_model
    assert resource_names.full_type_name is vgpu_names.full_type_name


@pytest.mark.parametrize("name,short,model", [
    ("NVIDIA A10-12Q", "A10-12Q", "A10"), ("GRID T4-1Q", "T4-1Q", "T4"), ("A100D-4C", "A100D-4C", "A100D"),
    ("NVIDIA A100-1-5C", "A100-1-5C", "A100"), (" GRID  A2-4C ", "A2-4C", "A2"), ("passthrough", "passthrough", None),
    (None, "", None)])
def test_short_name_and_model(name, short, model):
    assert vgpu_names.short_type_name(name) == short
    assert vgpu_names.type_model(name) == model


def test_reported_short_name_prefers_the_facts_short_name():
    assert vgpu_names.reported_short_name({"name": "NVIDIA A10-12Q"}) == "A10-12Q"
    assert vgpu_names.reported_short_name({"name": "NVIDIA A10-12Q", "short_name": "x"}) == "x"
    assert vgpu_names.reported_short_name({}) == ""


def test_board_models_skip_vfs_and_empty_tokens():
    gpus = [{"device_name": "GA100 [ A100 PCIe/80GB]"}, {"device_name": "GA102GL [L40S]", "is_vf": True}]
    assert vgpu_names.board_models(gpus) == {"A100", "PCIE", "80GB"}


def _preflight_fits(vtype, board):
    gpu = {"bdf": "0000:41:00.0", "vendor_id": "10de", "device_id": "20b5", "device_name": board, "driver": None,
           "kind": "gpu", "is_vf": False}
    errors, dummy = preflight.check_host("h", ["vm-vgpu"], {"gpus": [gpu], "iommu": {"enabled": True, "groups": 4}},
                                         mdev={"parents": []}, requested_vgpu_types=[vtype], iommu_firmware=True)
    board_errors = [e for e in errors if "boards" in e]
    assert len(board_errors) == len(errors), errors  # nothing else about this host is wrong
    return not board_errors


def _builder_fits(vtype, board):
    host = {"node": "h", "facts": {"mdev_types": {"parents": []},
                                   "pci_devices": {"gpus": [{"bdf": "0000:41:00.0", "device_name": board}]}}}
    offered, how, dummy = vc.host_offers(host, vgpu_names.short_type_name(vtype))
    assert how == "board"
    return offered


@pytest.mark.parametrize("vtype,board,fits", [
    ("A100D-4C", A100_80, True), ("NVIDIA A100D-4C", A100_80, True), ("GRID A100D-4C", A100_40, True),
    ("A100-1-5C", A100_40, True), ("NVIDIA A10-12Q", A10, True), ("GRID A10-12Q", A10, True),
    ("A10-12Q", A100_80, False), ("NVIDIA A100D-4C", A10, False), ("GRID L40S-24Q", A10, False)])
def test_preflight_and_the_vgpu_config_builder_agree(vtype, board, fits):
    assert _preflight_fits(vtype, board) is fits
    assert _builder_fits(vtype, board) is fits
