# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight judgement: each problem docs/troubleshooting.md (Preflight checks) lists is found and named with its fix."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import preflight


def gpu(bdf="0000:41:00.0", driver=None, name="GA102GL [A10]", device_id="2236", is_vf=False):
    return {"bdf": bdf, "vendor_id": "10de", "device_id": device_id, "device_name": name, "driver": driver,
            "kind": "gpu", "is_vf": is_vf}


def pci(*gpus, iommu=True):
    return {"gpus": list(gpus), "iommu": {"enabled": iommu, "groups": 40 if iommu else 0}}


def test_clean_passthrough_host_passes():
    errors, warnings = preflight.check_host("gpu-1", ["vm-passthrough"], pci(gpu(driver="vfio-pci")),
                                            holders={"held": False, "holders": []}, iommu_firmware=True)
    assert errors == [] and warnings == []


def test_two_pools_and_no_pool_are_errors():
    errors, _warnings = preflight.check_host("gpu-1", ["vm-passthrough", "vm-vgpu"], pci(gpu()))
    assert "gpu-1 is in the pools vm-passthrough, vm-vgpu" in errors[0]
    assert errors[0] == fleet.several_pools_problem("gpu-1", ["gpu_vm_passthrough", "gpu_vm_vgpu"])
    errors, _warnings = preflight.check_host("gpu-1", [], pci(gpu()))
    assert "in no GPU pool group" in errors[0] and "gpu_dra" in errors[0]


def test_unknown_pool_is_named():
    errors, _warnings = preflight.check_host("gpu-1", ["vm-gpu"], pci(gpu()))
    assert "unknown pool 'vm-gpu'" in errors[0]


def test_host_nvidia_driver_blocks_passthrough_but_only_warns_for_container():
    errors, _warnings = preflight.check_host("gpu-1", ["vm-passthrough"], pci(gpu(driver="nvidia")), iommu_firmware=True)
    assert len(errors) == 1 and "0000:41:00.0" in errors[0] and "host driver nvidia" in errors[0]
    errors, warnings = preflight.check_host("gpu-1", ["container"], pci(gpu(driver="nvidia")))
    assert errors == [] and "driver.enabled=false" in warnings[0]


def test_nouveau_bound_gpu_is_fine_for_passthrough():
    errors, _warnings = preflight.check_host("gpu-1", ["vm-passthrough"], pci(gpu(driver="nouveau")), iommu_firmware=True)
    assert errors == []


def test_firmware_without_iommu_is_an_error_iommu_off_is_a_warning():
    errors, _warnings = preflight.check_host("gpu-1", ["vm-vgpu"], pci(gpu(), iommu=False), iommu_firmware=False)
    assert any("BIOS" in e for e in errors)
    errors, warnings = preflight.check_host("gpu-1", ["vm-passthrough"], pci(gpu(), iommu=False),
                                            iommu_firmware=True)
    assert errors == [] and "IOMMU is off now" in warnings[0]


def test_holders_are_named_with_unit_and_fix():
    holders = {"held": True, "holders": [{"pid": 812, "executable": "nvidia-persistenced", "device": "/dev/nvidia0",
                                          "minor": 0, "unit": "nvidia-persistenced.service"}]}
    errors, _warnings = preflight.check_host("gpu-1", ["vm-passthrough"], pci(gpu()), holders=holders, iommu_firmware=True)
    assert "pid 812" in errors[0] and "systemctl disable --now nvidia-persistenced.service" in errors[0]


def test_no_gpu_is_an_error_unless_allowed():
    errors, _warnings = preflight.check_host("gpu-1", ["container"], pci())
    assert "no NVIDIA GPU" in errors[0]
    assert preflight.check_host("gpu-1", ["container"], pci(), allow_no_gpu=True)[0] == []


def test_guest_host_warns():
    _errors, warnings = preflight.check_host("vm-1", ["vm-passthrough"], pci(gpu()), iommu_firmware=True,
                                             virtualization_role="guest")
    assert any("itself a virtual machine" in w for w in warnings)


MDEV = {"parents": [{"parent": "0000:41:00.4", "interface": "mdev",
                     "types": [{"type_id": "nvidia-596", "name": "NVIDIA A10-12Q", "short_name": "A10-12Q"},
                               {"type_id": "nvidia-595", "name": "NVIDIA A10-8Q", "short_name": "A10-8Q"}]}]}


def test_requested_vgpu_type_must_be_offered():
    errors, _warnings = preflight.check_host("gpu-1", ["vm-vgpu"], pci(gpu()), mdev=MDEV,
                                             requested_vgpu_types=["A10-12Q", "NVIDIA A10-24Q"], iommu_firmware=True)
    assert len(errors) == 1 and "A10-24Q" in errors[0] and "A10-8Q" in errors[0]


def test_without_vgpu_manager_types_are_checked_against_the_board():
    errors, warnings = preflight.check_host("gpu-1", ["vm-vgpu"], pci(gpu()), mdev={"parents": []},
                                            requested_vgpu_types=["A10-12Q", "L40S-24Q"], iommu_firmware=True)
    assert any("vGPU Manager is not loaded" in w for w in warnings)
    assert len(errors) == 1 and "L40S-24Q is for L40S boards" in errors[0] and "A10" in errors[0]


def test_type_name_helpers():
    assert preflight.short_type_name("GRID T4-1Q") == "T4-1Q"
    assert preflight.type_model("A100D-4C") == "A100D"
    assert preflight.type_model("A100-1-5C") == "A100"
    assert preflight.type_model("A2-4C") == "A2"


def test_dra_host_keeps_its_nvidia_driver_and_tolerates_persistenced():
    held = {"held": True, "holders": [{"pid": 7, "executable": "nvidia-persistenced", "device": "/dev/nvidia0"},
                                      {"pid": 9, "executable": "dcgm-exporter", "device": "/dev/nvidia0"}]}
    errors, warnings = preflight.check_host("dra-1", ["dra"], pci(gpu(driver="nvidia")), holders=held, iommu_firmware=True)
    # the host driver is expected on the DRA path; dcgm-exporter blocks the rebind, persistenced only warns
    assert len(errors) == 1 and "dcgm-exporter holds /dev/nvidia0 (pid 9)" in errors[0]
    assert any("nvidia-persistenced" in w and "0.4+" in w for w in warnings)


L40S_VENDOR_VFIO = {"parents": [{"parent": "0000:26:00.4", "interface": "vendor_vfio", "types": [
    {"type_id": "1155", "name": "NVIDIA L40S-24Q", "short_name": "L40S-24Q", "available_instances": 2}]}]}


def test_vendor_vfio_vgpu_host_gets_the_vf_row_and_its_types_are_checked_against_the_vfs():
    # NVIDIA's vendor-specific VFIO interface (creatable_vgpu_types on the VF, as in the real L40S capture in
    # tests/unit/fixtures/sysfs) has no mdev bus; the host gets the gpu_vm_vgpu group's vendor-VFIO row, and
    # preflight says which interface it found and why (facts saved before host_interface: the parents tell)
    l40s = pci(gpu(name="AD102GL [L40S]", device_id="26b9"))
    found = {}
    errors, dummy = preflight.check_host("gpu-l40s", ["vm-vgpu"], l40s, mdev=L40S_VENDOR_VFIO,
                                         requested_vgpu_types=["L40S-24Q"], iommu_firmware=True, found=found)
    assert errors == [] and found == {'pool': 'vm-vgpu-vf', 'interface': 'vendor-vfio', 'interface_reason':
                                      'the host shows vendor-vfio: its vGPU types are on vendor-vfio parents'}
    # a type no VF lists: refused with the types they offer
    errors, dummy = preflight.check_host("gpu-l40s", ["vm-vgpu"], l40s, mdev=L40S_VENDOR_VFIO, iommu_firmware=True,
                                         requested_vgpu_types=["NVIDIA L40S-48Q"])
    assert errors == ["gpu-l40s (pool vm-vgpu-vf): vGPU type L40S-48Q is not listed by any VF's "
                      "nvidia/creatable_vgpu_types here (the VFs offer: L40S-24Q); pick one of those in the host's "
                      "vGPU config (gpuvirt_vgpu_config)"]
    # a MIG-backed profile: refused until MIG is handled, naming the type and the fix
    h100 = pci(gpu(name="GH100 [H100 PCIe]", device_id="2331"))
    errors, dummy = preflight.check_host("gpu-h100", ["vm-vgpu"], h100, iommu_firmware=True, mdev={"parents": [
        {"parent": "0000:41:00.4", "interface": "vendor_vfio", "types": [{"name": "NVIDIA H100-3-40C"}]}]},
        requested_vgpu_types=["H100-3-40C"])
    assert errors == ["gpu-h100 (pool vm-vgpu-vf): vGPU type H100-3-40C in its vGPU config is MIG-backed; MIG-backed "
                      "profiles need MIG mode and GPU instances on the GPU first, which this collection does not "
                      "manage yet: pick a time-sliced type (such as H100-40C) in the host's vGPU config "
                      "(gpuvirt_vgpu_config)"]
    # gpuvirt_pool naming the mdev row on a host that shows vendor VFIO: refused, naming both
    errors, dummy = preflight.check_host("gpu-l40s", ["vm-vgpu"], l40s, mdev=L40S_VENDOR_VFIO, iommu_firmware=True,
                                         explicit_pool="vm-vgpu")
    assert len(errors) == 1 and errors[0].startswith(
        "gpu-l40s: gpuvirt_pool vm-vgpu is the pool of the mdev vGPU interface, but the host shows vendor-vfio")


def test_mdev_vgpu_host_is_not_affected_by_the_vendor_vfio_check():
    mdev = {"parents": [{"parent": "0000:41:00.4", "interface": "mdev", "types": [
        {"type_id": "nvidia-596", "name": "NVIDIA A10-12Q", "short_name": "A10-12Q", "available_instances": 2}]}]}
    errors, dummy = preflight.check_host("gpu-a10", ["vm-vgpu"], pci(gpu()), mdev=mdev,
                                         requested_vgpu_types=["A10-12Q"])
    assert errors == []


def test_dra_tolerates_persistenced_by_executable_name_only():
    held = {"held": True, "holders": [
        {"pid": 7, "executable": "nvidia-persistenced", "device": "/dev/nvidia0"},
        {"pid": 8, "executable": "vim", "device": "/dev/nvidia0"},
        # the command line is not read: a holder known only by one is unknown, so it blocks
        {"pid": 10, "command": "/usr/bin/nvidia-persistenced --password=s3cret", "device": "/dev/nvidia0"}]}
    errors, warnings = preflight.check_host("dra-1", ["dra"], pci(gpu(driver="nvidia")), holders=held, iommu_firmware=True)
    assert len(errors) == 2 and "vim holds /dev/nvidia0 (pid 8)" in errors[0]
    assert "? holds /dev/nvidia0 (pid 10)" in errors[1] and "s3cret" not in repr((errors, warnings))
    assert any("(pid 7)" in w and "0.4+" in w for w in warnings)


@pytest.mark.parametrize("pci_facts, holders, named", [
    ({"gpus": ["0000:41:00.0"]}, None, "pci_devices.gpus[0] is '0000:41:00.0'; expected a device dict"),
    ({"gpus": [{"bdf": None}]}, None, "pci_devices.gpus[0].bdf is None; expected a PCI address"),
    ({"gpus": "x"}, None, "pci_devices.gpus is 'x'; expected a list"),
    ({"gpus": []}, {"held": True, "holders": [5]}, "gpu_holders.holders[0] is 5; expected a dict"),
])
def test_malformed_facts_are_named(pci_facts, holders, named):
    with pytest.raises(preflight.PreflightError, match=re.escape(named)):
        preflight.check_host("h1", ["vm-passthrough"], pci_facts, holders=holders, iommu_firmware=True)


def test_ada_vgpu_host_gets_the_vf_row_before_its_vgpu_manager_loads():
    # The vGPU interface follows from the GPU architecture and the vGPU release: from vGPU 17 (driver branch R550,
    # NVIDIA's "Virtual GPU Software Lifecycle": "NVIDIA vGPU 17 R550") Ada Lovelace, Hopper and Blackwell GPUs on
    # Linux with KVM use NVIDIA's vendor-specific VFIO framework (NVIDIA Virtual GPU Software User Guide, "Creating
    # an NVIDIA vGPU on a Linux with KVM Hypervisor that Uses a Vendor-Specific VFIO Framework") instead of mdev.
    # Before the vGPU Manager loads the host shows neither interface, so preflight judges it from the pci.ids chip
    # (AD102GL is the L40S of the real capture in tests/unit/fixtures) and the configured driver version.
    l40s = pci(gpu(name="AD102GL [L40S]", device_id="26b9"))
    found = {}
    errors, warnings = preflight.check_host("gpu-v02", ["vm-vgpu"], l40s, requested_vgpu_types=["L40S-24Q"],
                                            vgpu_driver_version="580.82.02", iommu_firmware=True, found=found)
    assert errors == [] and found["pool"] == "vm-vgpu-vf", errors
    assert found["interface_reason"].startswith("predicted vendor-vfio (no vGPU interface shown yet): vGPU Manager "
                                                "580.82.02 on 0000:41:00.0 AD102GL [L40S]")
    assert any("no VF lists vGPU types yet" in w for w in warnings)
    # the board is still checked before any VF exists
    errors, dummy = preflight.check_host("gpu-v02", ["vm-vgpu"], l40s, requested_vgpu_types=["A10-12Q"],
                                         vgpu_driver_version="580.82.02", iommu_firmware=True)
    assert len(errors) == 1 and "vGPU type A10-12Q is for A10 boards" in errors[0]
    # vGPU 16 (R535) still uses mdev on Ada; an Ampere A10 uses mdev on every branch; no version: not judged here
    for facts, version in ((l40s, "535.216.01"), (pci(gpu()), "580.82.02"), (l40s, "")):
        errors, warnings = preflight.check_host("h", ["vm-vgpu"], facts, requested_vgpu_types=[],
                                                vgpu_driver_version=version)
        assert errors == [] and any("no vGPU types visible" in w for w in warnings), (version, errors)
    assert [c[1] for c in preflight.vendor_vfio_chips(
        [{"bdf": "a", "device_name": "GH100 [H100 PCIe]"}, {"bdf": "b", "device_name": "GB202GL [RTX PRO 6000]"},
         {"bdf": "c", "device_name": "GA100 [A100 PCIe 40GB]"}, {"bdf": "d"}], "550.54.10")] == [
        "GH100 [H100 PCIe]", "GB202GL [RTX PRO 6000]"]


def test_ampere_host_on_kernel_6_8_with_r580_gets_the_vf_row_by_its_host_facts_not_its_chip():
    # The chip rule alone lets this A10 through (it is no Ada/Hopper/Blackwell), but the host decides: the OpenNebula
    # vGPU guide (OpenNebula/docs @ 7e66d99c, source/open_cluster_deployment/kvm_node/vgpu.rst, "Using the vGPU")
    # shows an A10 VF on "the new vendor-specific interface introduced with Ubuntu 24.04", and KubeVirt's VEP 210
    # (kubevirt/enhancements veps/sig-compute/210-centos-stream-10/vep.md, "vGPU / mdev Compatibility") that from
    # kernel 6.8 the mdev sysfs is no longer populated. Host facts as the mdev_types module gathers them before the
    # vGPU Manager is loaded (tests/unit/plugins/module_utils/host/test_vgpu_interface.py builds them from sysfs).
    facts = {"interface": "none", "kernel_release": "6.8.0-60-generic", "driver_version": None,
             "evidence": ["no /sys/class/mdev_bus entry and no nvidia/creatable_vgpu_types on any PCI device",
                          "kernel 6.8.0-60-generic, no NVIDIA driver loaded (no /sys/module/nvidia/version)"]}
    found = {}
    errors, dummy = preflight.check_host("gpu-a10", ["vm-vgpu"], pci(gpu()), iommu_firmware=True,
                                         mdev={"parents": [], "host_interface": facts}, found=found,
                                         requested_vgpu_types=["A10-12Q"], vgpu_driver_version="580.82.02")
    assert errors == [] and found == {"pool": "vm-vgpu-vf", "interface": "vendor-vfio", "interface_reason": (
        "predicted vendor-vfio (no vGPU interface shown yet): no /sys/class/mdev_bus entry and no "
        "nvidia/creatable_vgpu_types on any PCI device; kernel 6.8.0-60-generic, driver 580.82.02 (the vGPU Manager "
        "to install)")}
    # the same host on Ubuntu 22.04's kernel keeps mdev: checked against the board, no error
    facts = dict(facts, kernel_release="5.15.0-119-generic", evidence=["kernel 5.15.0-119-generic"])
    errors, warnings = preflight.check_host("gpu-a10", ["vm-vgpu"], pci(gpu()), iommu_firmware=True,
                                            mdev={"parents": [], "host_interface": facts},
                                            requested_vgpu_types=["A10-12Q"], vgpu_driver_version="580.82.02")
    assert errors == [] and any("no vGPU types visible" in w for w in warnings)
    # what the host shows beats any prediction: an mdev bus (if with no type yet) on 6.8 with R580 is mdev
    facts = {"interface": "mdev", "kernel_release": "6.8.0-60-generic", "driver_version": "580.82.02",
             "evidence": ["/sys/class/mdev_bus lists 0000:41:00.4 with mdev_supported_types",
                          "kernel 6.8.0-60-generic, driver 580.82.02"]}
    found = {}
    errors, warnings = preflight.check_host(
        "gpu-a10", ["vm-vgpu"], pci(gpu()), iommu_firmware=True, requested_vgpu_types=["A10-12Q"], found=found,
        mdev={"parents": [{"parent": "0000:41:00.4", "interface": "mdev", "types": []}], "host_interface": facts})
    assert errors == [] and not any("not known yet" in w for w in warnings)
    assert (found["pool"], found["interface"]) == ("vm-vgpu", "mdev")


def test_malformed_host_interface_facts_are_named():
    for facts, named in (("vendor-vfio", "mdev_types.host_interface is 'vendor-vfio'; expected a dict"),
                         ({"interface": "none", "evidence": [3]}, "mdev_types.host_interface.evidence[0] is 3")):
        with pytest.raises(preflight.PreflightError, match=re.escape(named)):
            preflight.check_host("h1", ["vm-vgpu"], pci(gpu()), mdev={"parents": [], "host_interface": facts})
