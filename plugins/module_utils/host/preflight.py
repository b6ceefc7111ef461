# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight judgement of one GPU host: pure functions over the discovery facts.

Every problem a later phase would hit on this host is found here, before anything changes, and named
with the value at fault and the fix (docs/troubleshooting.md lists what users hit). Input shapes are the
discovery modules' results (docs/contracts.md). Nothing here reads the host: the module gathers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, mig
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, vgpu_interface, vgpu_vf_profiles
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.vgpu_names import (
    board_models, model_on_boards, reported_short_name, short_type_name, type_model)

# The pool table lives in module_utils/model/fleet.py; every judgement below reads the host's row (its traits), never
# its pool's name. A DRA pool (dra_driver, the DRA passthrough path): the GPU keeps its NVIDIA driver until a
# claim binds it to vfio-pci, so a loaded host driver is expected there; what holds /dev/nvidia* still blocks the
# rebind.
# DRA driver 0.4+ turns persistence mode off around the rebind itself: holder categories it tolerates
# (gpu_holders.holder_category, the one rule matching a holder's executable name).
DRA_TOLERATED_HOLDERS = ("persistenced",)
# The drivers a GPU may be taken from by the vfio role (anything else holds it: nvidia, pci-stub...).
REBINDABLE = ("vfio-pci", "nouveau", None)

# The vGPU interface is decided from the host's facts (module_utils/host/vgpu_interface.py, with the upstream sources);
# the chip rule (Ada/Hopper/Blackwell with vGPU 17+) is the fallback where the chip name is the only data.
VENDOR_VFIO_FIRST_BRANCH = vgpu_interface.VENDOR_VFIO_CHIP_BRANCH


class PreflightError(ValueError):
    """Facts of the wrong shape (not what the discovery modules return); the message names the fact and what
    was expected."""


def _need(value, kind, where, expected):
    if not isinstance(value, kind):
        raise PreflightError("%s is %r; expected %s" % (where, value, expected))
    return value


def check_facts(pci, holders=None, mdev=None):
    """Refuse facts that are not what pci_devices, gpu_holders and mdev_types return, naming the bad part,
    instead of failing later with a traceback (facts may come from a file or a sosreport)."""
    _need(pci, dict, "pci_devices", "the pci_devices module's result (a dict with gpus)")
    for i, gpu in enumerate(_need(pci.get("gpus") or [], list, "pci_devices.gpus", "a list of devices")):
        _need(gpu, dict, "pci_devices.gpus[%d]" % i, "a device dict with bdf")
        _need(gpu.get("bdf"), str, "pci_devices.gpus[%d].bdf" % i, "a PCI address string")
    _need(pci.get("iommu") or {}, dict, "pci_devices.iommu", "a dict with enabled")
    _need(holders or {}, dict, "gpu_holders", "the gpu_holders module's result (a dict with holders)")
    for i, holder in enumerate(_need((holders or {}).get("holders") or [], list, "gpu_holders.holders",
                                     "a list of holders")):
        _need(holder, dict, "gpu_holders.holders[%d]" % i, "a dict with pid, executable and device")
    _need(mdev or {}, dict, "mdev_types", "the mdev_types module's result (a dict with parents)")
    for i, parent in enumerate(_need((mdev or {}).get("parents") or [], list, "mdev_types.parents",
                                     "a list of parents")):
        _need(parent, dict, "mdev_types.parents[%d]" % i, "a dict with types")
        for j, vtype in enumerate(_need(parent.get("types") or [], list, "mdev_types.parents[%d].types" % i,
                                        "a list of types")):
            _need(vtype, dict, "mdev_types.parents[%d].types[%d]" % (i, j), "a dict with name")
    facts = (mdev or {}).get("host_interface")
    if facts is not None:
        _need(facts, dict, "mdev_types.host_interface", "a dict with interface and evidence")
        for i, sentence in enumerate(_need(facts.get("evidence") or [], list, "mdev_types.host_interface.evidence",
                                           "a list of sentences")):
            _need(sentence, str, "mdev_types.host_interface.evidence[%d]" % i, "a sentence")


def offered_vgpu_types(mdev_result):
    """Short names of every vGPU type any parent on the host offers (mdev or vendor VFIO)."""
    offered = set()
    for parent in (mdev_result or {}).get("parents", []) or []:
        for vtype in parent.get("types", []) or []:
            name = reported_short_name(vtype)
            if name:
                offered.add(name)
    return offered


def vendor_vfio_chips(gpus, driver_version):
    """``[(bdf, device name)]`` of the GPUs whose vGPUs the vGPU Manager ``driver_version`` (e.g. 580.82.02) will
    offer on the vendor-specific VFIO interface by their chip alone: an Ada/Hopper/Blackwell chip with a driver
    branch of 550 (vGPU 17) or later. Empty when the version is not a driver version."""
    branch = vgpu_interface.driver_branch(driver_version)
    if branch is None or branch < VENDOR_VFIO_FIRST_BRANCH:
        return []
    return [(gpu.get("bdf"), gpu.get("device_name")) for gpu in gpus
            if vgpu_interface.VENDOR_VFIO_CHIP_RE.fullmatch((gpu.get("device_name") or "").split(" ", 1)[0])]


def check_host(host, pools, pci, holders=None, mdev=None, requested_vgpu_types=None,
               iommu_firmware=None, virtualization_role=None, allow_no_gpu=False, vgpu_driver_version=None,
               explicit_pool=None, found=None):
    """Return (errors, warnings): lists of sentences, each naming the value at fault and the fix.

    host: inventory name; pools: the pools the host's groups put it in; pci: pci_devices result;
    holders: gpu_holders result; mdev: mdev_types result; requested_vgpu_types: type names the host's
    vGPU config asks for; iommu_firmware: True/False whether the firmware announces an IOMMU (ACPI
    DMAR/IVRS table), None when unknown; virtualization_role: Ansible's ansible_virtualization_role;
    vgpu_driver_version: the vGPU Manager's driver version (vm-vgpu), to judge the vGPU interface before it loads;
    explicit_pool: gpuvirt_pool, when set (a row of the host's group; it must agree with the interface the host
    shows); found: a dict this fills with ``pool`` (the row the host gets: where its group has several rows, the one
    its vGPU interface picks, fleet.host_row), ``interface`` and ``interface_reason`` (what the fleet view says).
    """
    check_facts(pci, holders, mdev)
    errors, warnings = [], []
    unknown = [p for p in pools if p not in fleet.BY_NAME]
    if unknown:
        errors.append("%s: unknown pool %r; use one of %s" % (host, unknown[0], ", ".join(fleet.POOLS)))
        return errors, warnings
    if len(pools) != 1:
        # the one message of the group -> pool rule (fleet.several_pools_problem, fleet.no_pool_problem)
        errors.append(fleet.several_pools_problem(host, [fleet.BY_NAME[p].group for p in pools])
                      or fleet.no_pool_problem(host))
        return errors, warnings
    pool = pools[0]
    if explicit_pool and explicit_pool not in fleet.BY_NAME:
        errors.append("%s: unknown pool %r (gpuvirt_pool); use one of %s" % (host, explicit_pool, ", ".join(fleet.POOLS)))
        return errors, warnings
    if explicit_pool and fleet.BY_NAME[explicit_pool].group == fleet.BY_NAME[pool].group:
        pool = explicit_pool
    # the row among the group's rows: the fleet view's rule (model/fleet.py host_row), on the facts gathered here
    try:
        row, interface, reason = fleet.host_row(host, pool, mdev, pci, vgpu_driver_version or None,
                                                explicit=bool(explicit_pool))
    except fleet.FleetError as exc:
        errors.append(str(exc))
        return errors, warnings
    pool = row.name
    if found is not None:
        found.update(pool=pool, interface=interface, interface_reason=reason)

    gpus = [d for d in pci.get("gpus", []) if not d.get("is_vf")]
    if not gpus and not allow_no_gpu:
        errors.append("%s (pool %s): no NVIDIA GPU found by lspci; check the inventory group or set "
                      "gpuvirt_allow_no_gpu for a host added ahead of its GPUs" % (host, pool))

    iommu = pci.get("iommu") or {}
    if row.iommu:
        if iommu_firmware is False and not iommu.get("enabled"):
            errors.append(
                "%s (pool %s): the firmware announces no IOMMU (no ACPI DMAR/IVRS table); enable VT-d / "
                "AMD-Vi (IOMMU) in the BIOS, kernel arguments alone cannot turn it on" % (host, pool))
        elif not iommu.get("enabled"):
            warnings.append("%s: IOMMU is off now; host preparation sets the kernel arguments and reboots "
                            "once" % host)
        if virtualization_role == "guest":
            warnings.append("%s is itself a virtual machine: GPU passthrough needs a virtual IOMMU and the "
                            "GPU passed to this VM" % host)

    if row.host_vfio:
        # host preparation binds this pool's GPUs to vfio-pci
        for gpu in gpus:
            if gpu.get("driver") not in REBINDABLE:
                errors.append(
                    "%s: GPU %s (%s) is bound to the host driver %s; a %s GPU must go to "
                    "vfio-pci: remove the host NVIDIA driver packages (or blacklist %s) and let the GPU "
                    "Operator manage the node"
                    % (host, gpu["bdf"], gpu.get("device_name"), gpu["driver"], pool, gpu["driver"]))
    elif row.device_plugin:
        # NVIDIA's device plugin advertises the GPUs the operator's driver container serves
        loaded = sorted({g["bdf"] for g in gpus if g.get("driver") == "nvidia"})
        if loaded:
            warnings.append("%s: the host NVIDIA driver is loaded (%s); the GPU Operator's driver container "
                            "will not start: set the operator's driver.enabled=false or remove the host "
                            "driver" % (host, ", ".join(loaded)))

    if row.iommu and holders and holders.get("held"):
        for holder in holders.get("holders", []):
            if row.dra_driver and gpu_holders.holder_category(holder) in DRA_TOLERATED_HOLDERS:
                warnings.append("%s: %s holds %s (pid %s); DRA driver 0.4+ turns persistence mode off around the "
                                "rebind, older drivers need it stopped"
                                % (host, gpu_holders.executable(holder), holder.get("device"), holder.get("pid")))
                continue
            errors.append(
                "%s: %s holds %s (pid %s%s); stop it before the GPU is rebound: %s" % (
                    host, gpu_holders.executable(holder), holder.get("device"), holder.get("pid"),
                    ", unit " + holder["unit"] if holder.get("unit") else "",
                    ("systemctl disable --now " + holder["unit"]) if holder.get("unit") else
                    "kill pid %s" % holder.get("pid")))

    if row.mig:
        errors.extend(_check_mig(host, pool, gpus, warnings))
    if row.vf_profiles:
        errors.extend(_check_vendor_vfio(host, pool, gpus, mdev, requested_vgpu_types or [], warnings))
    elif row.vgpu:
        errors.extend(_check_vgpu(host, gpus, mdev, requested_vgpu_types or [], warnings, vgpu_driver_version))
    return errors, warnings


def _check_mig(host, pool, gpus, warnings):
    """A host of a MIG pool (its row's mig): every GPU must support MIG, by its PCI device id (mig.MIG_DEVICE_IDS,
    with the source); the MIG manager cannot partition any other and the node would advertise nothing. A GPU whose
    facts give no device id cannot be judged: a warning."""
    errors = []
    for bdf, name, device_id in mig.unsupported_gpus(gpus):
        if device_id is None:
            warnings.append("%s: GPU %s (%s) shows no PCI device id, so whether it supports MIG is not known; gather "
                            "the host's facts again (lspci -nn gives the id)" % (host, bdf, name or 'unnamed'))
            continue
        errors.append("%s (pool %s): GPU %s (%s, 10de:%s) does not support MIG (the GPUs that do: A100, A30, H100, "
                      "H20, H200, GH200, B200, GB200, B300, RTX PRO 6000 Blackwell Server Edition); move the host to "
                      "gpu_container for whole GPUs" % (host, pool, bdf, name or 'unnamed', device_id))
    return errors


def _check_vendor_vfio(host, pool, gpus, mdev, requested, warnings):
    """A host on NVIDIA's vendor-specific VFIO interface (its row's vf_profiles): the vgpu_vf role gives each VF a
    profile after the operator phase, so a type must be one its VFs list (when they exist yet) and time-sliced."""
    errors = []
    for vtype in requested:
        name = short_type_name(vtype)
        if name and vgpu_vf_profiles.MIG_BACKED.fullmatch(name):
            # MIG-backed profiles need MIG mode and GPU instances on the PF first (NVIDIA vGPU docs, "Virtual GPU
            # Types for Supported GPUs": MIG-backed types are named <board>-<slices>-<framebuffer>C)
            errors.append("%s (pool %s): vGPU type %s in its vGPU config is MIG-backed; MIG-backed profiles need MIG "
                          "mode and GPU instances on the GPU first, which this collection does not manage yet: pick a "
                          "time-sliced type (such as %s) in the host's vGPU config (gpuvirt_vgpu_config)"
                          % (host, pool, name, name.split("-", 1)[0] + "-" + name.rsplit("-", 1)[1]))
    offered = sorted(set(reported_short_name(t) for p in (mdev or {}).get("parents", []) or []
                         if p.get("interface") == "vendor_vfio" for t in p.get("types", []) or []) - {None, ""})
    if offered:
        for vtype in requested:
            name = short_type_name(vtype)
            if name and not vgpu_vf_profiles.MIG_BACKED.fullmatch(name) and name not in offered:
                errors.append("%s (pool %s): vGPU type %s is not listed by any VF's nvidia/creatable_vgpu_types here "
                              "(the VFs offer: %s); pick one of those in the host's vGPU config (gpuvirt_vgpu_config)"
                              % (host, pool, name, ", ".join(offered)))
        return errors
    # no VF lists a type yet: the vGPU Manager (the operator phase) has not loaded the driver or enabled the VFs;
    # the vgpu_vf phase checks each VF's list before it writes. The board a type is for is checked here.
    warnings.append("%s: no VF lists vGPU types yet (the vGPU Manager is not loaded or its VFs are not enabled): the "
                    "types are checked against the GPU models now and against each VF's nvidia/creatable_vgpu_types "
                    "by the vgpu_vf phase, after the operator phase" % host)
    return errors + _types_off_board(host, gpus, requested)


def _types_off_board(host, gpus, requested):
    """The requested vGPU types that are for another board than the host's GPUs (one message per type): the check
    preflight can make before the vGPU Manager shows any type."""
    models = board_models(gpus)
    errors = []
    for vtype in requested:
        model = type_model(vtype)
        if model and models and not model_on_boards(model, models):
            errors.append("%s: vGPU type %s is for %s boards, but this host has %s; pick a type of the host's "
                          "GPU" % (host, vtype, model, ", ".join(sorted(models))))
    return errors


def vendor_vfio_parents(mdev_result):
    """The VFs whose vGPU types come from NVIDIA's vendor-specific VFIO interface (``nvidia/creatable_vgpu_types``,
    Ada/Hopper/Blackwell with vGPU 17+): no mdev bus there."""
    return sorted(p.get("parent") for p in (mdev_result or {}).get("parents", []) or []
                  if p.get("interface") == "vendor_vfio" and p.get("parent"))


def _vendor_vfio_error(host, where):
    # reached only on a vGPU row whose vGPUs are no VF profiles (gpuvirt_pool naming it against what the facts
    # predict)
    vf_pools = fleet.VF_PROFILE_POOLS
    return ("%s: its vGPU types are on NVIDIA's vendor-specific VFIO interface (%s, no mdev bus), but gpuvirt_pool "
            "names the pool of the mdev interface: no vGPU would be created by the vGPU Device Manager and a "
            "mediatedDevices entry would never match. Remove gpuvirt_pool from %s (the collection picks the pool of "
            "its group by the interface: %s)" % (host, where, host, " or ".join(vf_pools) or "none"))


def _host_interface(mdev):
    """The host_interface facts of an mdev_types result, or None: facts given as variables or saved before the
    collection gathered them have none."""
    facts = (mdev or {}).get("host_interface")
    if not isinstance(facts, dict) or facts.get("interface") not in vgpu_interface.INTERFACES:
        return None
    return facts


def _check_vgpu(host, gpus, mdev, requested, warnings, driver_version=None):
    errors = []
    # KubeVirt finds vGPUs only on the mdev bus (kubevirt/kubevirt pkg/virt-handler/device-manager/mediated_device.go
    # discoverPermittedHostMediatedDevices reads /sys/bus/mdev/devices) and the vGPU Device Manager creates them
    # through mdev_supported_types: on this interface no vGPU is created and an HCO mediatedDevices entry never matches.
    facts = _host_interface(mdev)
    vendor = vendor_vfio_parents(mdev)
    # an interface whose row gives VFs vGPU profiles (fleet.VF_PROFILE_INTERFACES: vendor-specific VFIO)
    if facts and facts["interface"] in fleet.VF_PROFILE_INTERFACES:
        errors.append(_vendor_vfio_error(host, vgpu_interface.evidence_text(facts)))
        return errors
    if vendor:
        errors.append(_vendor_vfio_error(host, "nvidia/creatable_vgpu_types on %s" % (
            ", ".join(vendor[:4]) + (" ..." if len(vendor) > 4 else ""))))
        return errors
    offered = offered_vgpu_types(mdev)
    if offered:
        for vtype in requested:
            if short_type_name(vtype) not in offered:
                errors.append("%s: vGPU type %s is not offered by any GPU here (offered: %s); pick one of "
                              "those in the host's vGPU config" % (host, vtype, ", ".join(sorted(offered))))
        return errors
    # No vGPU interface yet: the vGPU Manager (installed by the GPU Operator) is not loaded, or its VFs are not
    # enabled. Which interface it will bring follows from the host's kernel and the driver branch (and, for Ada and
    # later, the chip); without host facts from the chip alone. The board a type belongs to can still be checked
    # against the GPUs' pci.ids names.
    # (a host that shows an interface - the mdev bus, if with no type yet, the other one refused above - is on it:
    # nothing to predict)
    interface, reason = (facts["interface"], "") if facts and facts["interface"] in fleet.ROW_INTERFACES else \
        vgpu_interface.predict(facts, gpus, driver_version)
    if interface in fleet.VF_PROFILE_INTERFACES:
        errors.append(_vendor_vfio_error(host, reason))
        return errors
    if interface is None and facts:
        warnings.append("%s: which vGPU interface the vGPU Manager will bring is not known yet (%s): from kernel 6.8 "
                        "it may be NVIDIA's vendor-specific VFIO interface; the host keeps the group's default pool until "
                        "it shows, and the vgpu_vf phase gathers its facts again after the operator phase"
                        % (host, reason))
    warnings.append("%s: no vGPU types visible (neither mdev_supported_types nor nvidia/creatable_vgpu_types): "
                    "the vGPU Manager is not loaded yet; types are checked against GPU models only" % host)
    return errors + _types_off_board(host, gpus, requested)
