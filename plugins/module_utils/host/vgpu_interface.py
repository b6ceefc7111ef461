# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vGPU interface a host offers, decided from what the host shows (docs/pools/vgpu.md, "Which interface"):
the mdev bus, the VFs' ``nvidia/creatable_vgpu_types``, the kernel release and the NVIDIA driver version. Pure Python.

The facts (``host_facts``) are part of the mdev_types result as ``host_interface``::

    {interface: mdev | vendor-vfio | none, evidence: [sentences], kernel_release: str|None, driver_version: str|None}

``predict`` says which interface a host that shows none yet (the vGPU Manager not loaded, or its VFs not enabled)
will get, from the same facts; with no facts at all (a render without gathering) it falls back to the GPU's chip.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pci_address
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import hex_id, link_name, list_names, read_text

INTERFACES = ('mdev', 'vendor-vfio', 'none')
# /proc/sys/kernel/osrelease (uname -r): "6.8.0-60-generic", "5.14.0-427.13.1.el9_4.x86_64", "6.12.0-55.9.1.el10_0"
KERNEL_RELEASE_RE = re.compile(r'([0-9]{1,3})\.([0-9]{1,3})(?:[.+~_-][0-9A-Za-z.+~_-]{0,60})?')
# /sys/module/nvidia/version: "580.82.02", "550.54.16"; the vGPU Manager settings use the same grammar
DRIVER_VERSION_RE = re.compile(r'([0-9]{1,4})(?:\.[0-9]{1,4}){1,3}')
# one sentence of evidence: printable ASCII, bounded (the saved-facts schema checks the same)
EVIDENCE_RE = re.compile(r'[ -~]{1,512}')
MAX_NAMED = 4

# The rules, each with its upstream source:
# - Kernel 6.8 and later with driver branch R580: mdev is gone for every GPU, an Ampere A10 too. The OpenNebula vGPU
#   guide (OpenNebula/docs @ 7e66d99c, source/open_cluster_deployment/kvm_node/vgpu.rst, "Using the vGPU": "the new
#   vendor-specific interface introduced with Ubuntu 24.04", shown for an A10 VF with MDEV_MODE "nvidia"); KubeVirt's
#   VEP 210 (kubevirt/enhancements veps/sig-compute/210-centos-stream-10/vep.md, "vGPU / mdev Compatibility": "a change
#   introduced in kernel 6.8 where NVIDIA moved from the traditional mdev ... framework to a vendor-specific VFIO
#   framework"); Nova's guide (openstack/nova @ 00a03040, doc/source/admin/virtual-gpu.rst, Caveats: VFs with
#   nvidia/ and no mdev "most likely occurs on Ubuntu Noble or RHEL 10"). The driver side: R580 (vGPU 19).
# - Ada Lovelace, Hopper, Blackwell with vGPU 17 (R550) or later: vendor-specific VFIO on any kernel
#   (NVIDIA/vgpu-device-manager @ 4d31dc65, its vendor-VFIO backend not yet in a release, pkg/vgpu/framework.go
#   FrameworkVendorVFIO: "used by the NVIDIA vGPU Manager driver (vGPU 17.0+) on Ada, Hopper and newer GPUs").
# What the host shows decides first, read as upstream reads it: the same vgpu-device-manager code (framework.go
# detectFramework) takes a populated /sys/class/mdev_bus for mdev, and a VF's nvidia/ directory (pkg/vgpu/vfio/sysfs.go
# hasVGPUSysfs, creatableVGPUTypes) for vendor VFIO; KubeVirt v1.9.0 accepts a VF that stays on the nvidia driver as a
# host device only with nvidia/current_vgpu_type set (pkg/virt-handler/device-manager/nvidia.go shouldPermitNvidia,
# common.go HasVGPUProfile: "" and "0" are no profile), and finds mdevs only on the mdev bus.
VENDOR_VFIO_KERNEL = (6, 8)
VENDOR_VFIO_ALL_GPUS_BRANCH = 580
VENDOR_VFIO_CHIP_BRANCH = 550
# pci.ids chip codes of those architectures: "AD102GL [L40S]", "GH100 [H100 PCIe]", "GB202GL [...]"
VENDOR_VFIO_CHIP_RE = re.compile(r'(?:AD|GH|GB)[12][0-9]{2}[A-Z]*')


class VgpuInterfaceError(ValueError):
    pass


def kernel_version(release):
    """(major, minor) of a kernel release string; None for anything that is not one."""
    match = KERNEL_RELEASE_RE.fullmatch(release) if isinstance(release, str) and len(release) <= 64 else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def driver_branch(version):
    """The branch (580 of 580.82.02) of an NVIDIA driver version; None for anything that is not one."""
    text = version.strip() if isinstance(version, str) else ''
    match = DRIVER_VERSION_RE.fullmatch(text) if len(text) <= 32 else None
    return int(match.group(1)) if match else None


def _bdfs(items):
    """Parent names from sysfs entries or mdevctl JSON of the host: only a PCI address is shown as it is, anything
    else as '?' (a message must not carry a forged line or a megabyte from a copied tree)."""
    return [i if isinstance(i, str) and len(i) <= 16 and pci_address.BDF_RE.fullmatch(i) else '?' for i in items]


def _named(items):
    return ', '.join(items[:MAX_NAMED]) + (' and %d more' % (len(items) - MAX_NAMED) if len(items) > MAX_NAMED else '')


def _read_version(path, grammar):
    text = read_text(path, VgpuInterfaceError)
    if text is None:
        return None, False
    return (text, True) if len(text) <= 64 and grammar.fullmatch(text) else (None, True)


def _sriov_pfs(root):
    """'<bdf> on <driver>, <n> of <total> VFs enabled' for each NVIDIA GPU that is an SR-IOV PF."""
    out = []
    base = os.path.join(root, 'bus', 'pci', 'devices')
    for bdf in list_names(base):
        dev = os.path.join(base, bdf)
        # names from a copied tree are the copier's: only a PCI address, and a driver name of its grammar, are told
        if not pci_address.BDF_RE.fullmatch(bdf) or hex_id(
                read_text(os.path.join(dev, 'vendor'), VgpuInterfaceError), 4) != '10de':
            continue
        cls = hex_id(read_text(os.path.join(dev, 'class'), VgpuInterfaceError), 6) or ''
        total = read_text(os.path.join(dev, 'sriov_totalvfs'), VgpuInterfaceError)
        if not cls.startswith('03') or total is None or link_name(os.path.join(dev, 'physfn')):
            continue
        numvfs = read_text(os.path.join(dev, 'sriov_numvfs'), VgpuInterfaceError)
        numbers = [v if v is not None and re.fullmatch(r'[0-9]{1,5}', v) else '?' for v in (numvfs, total)]
        driver = link_name(os.path.join(dev, 'driver'))
        if driver is not None and not (len(driver) <= 64 and validators.EXECUTABLE_NAME_RE.fullmatch(driver)):
            driver = '?'
        out.append('%s on %s, %s of %s VFs enabled' % (bdf, driver or 'no driver', numbers[0], numbers[1]))
    return out


def host_facts(root, parents, proc_root=None, mdevctl_parents=()):
    """The ``host_interface`` facts from the parents vgpu_types found on sysfs ``root`` (and those only mdevctl
    listed), the kernel release (``<proc_root>/sys/kernel/osrelease``; not read when proc_root is None) and the
    loaded NVIDIA driver (``<root>/module/nvidia/version``)."""
    mdev = sorted(p['parent'] for p in parents if p.get('interface') == 'mdev')
    vendor = sorted(p['parent'] for p in parents if p.get('interface') == 'vendor_vfio')
    evidence = []
    if vendor:
        interface = 'vendor-vfio'
        both = [p for p in vendor if p in mdev]
        only = [p for p in vendor if p not in mdev]
        if only:
            evidence.append('%s %s nvidia/creatable_vgpu_types and no mdev_supported_types'
                            % (_named(_bdfs(only)), 'has' if len(only) == 1 else 'have'))
        if both:
            evidence.append('%s %s nvidia/creatable_vgpu_types and mdev_supported_types'
                            % (_named(_bdfs(both)), 'has' if len(both) == 1 else 'have'))
        others = [p for p in mdev if p not in vendor]
        if others:
            evidence.append('%s also on the mdev bus' % _named(_bdfs(others)))
    elif mdev or mdevctl_parents:
        interface = 'mdev'
        if mdev:
            evidence.append('/sys/class/mdev_bus lists %s with mdev_supported_types' % _named(_bdfs(mdev)))
        if mdevctl_parents:
            evidence.append('mdevctl types lists %s' % _named(_bdfs(sorted(mdevctl_parents))))
    else:
        interface = 'none'
        evidence.append('no /sys/class/mdev_bus entry and no nvidia/creatable_vgpu_types on any PCI device')
        pfs = _sriov_pfs(root)
        if pfs:
            evidence.append('SR-IOV PF %s' % _named(pfs))
    kernel = driver = None
    kernel_seen = driver_seen = False
    if proc_root is not None:
        kernel, kernel_seen = _read_version(os.path.join(proc_root, 'sys', 'kernel', 'osrelease'), KERNEL_RELEASE_RE)
    driver, driver_seen = _read_version(os.path.join(root, 'module', 'nvidia', 'version'), DRIVER_VERSION_RE)
    evidence.append('%s, %s' % (
        ('kernel %s' % kernel) if kernel else ('kernel release unreadable' if kernel_seen else 'kernel release not read'),
        ('driver %s' % driver) if driver else ('driver version unreadable' if driver_seen else
                                               'no NVIDIA driver loaded (no /sys/module/nvidia/version)')))
    return {'interface': interface, 'evidence': evidence, 'kernel_release': kernel, 'driver_version': driver}


def evidence_text(facts):
    """The evidence as one clause for a message: "0000:41:00.4 has ...; kernel 6.8.0, driver 580.65"."""
    return '; '.join((facts or {}).get('evidence') or [])


def chips(gpus):
    """``['<bdf> <device name>']`` of the GPUs whose pci.ids chip is Ada Lovelace, Hopper or Blackwell."""
    found = []
    for gpu in gpus:
        name = gpu.get('device_name') or ''
        if VENDOR_VFIO_CHIP_RE.fullmatch(name.split(' ', 1)[0]):
            found.append('%s %s' % (gpu.get('bdf'), name))
    return found


def predict(facts, gpus, configured_driver=None):
    """Which interface a host that shows none yet will get: ``(interface, reason)``, interface ``vendor-vfio``,
    ``mdev`` or ``None`` (cannot tell), reason a clause naming the evidence.

    ``facts``: the host_interface facts, or None when there are none (a render without gathering: the chip rule
    alone); ``configured_driver``: the vGPU Manager version the GPU Operator will install, used when the host has no
    NVIDIA driver loaded."""
    facts = facts or {}
    driver = facts.get('driver_version')
    source = 'loaded'
    if driver_branch(driver) is None:
        driver, source = configured_driver, 'the vGPU Manager to install'
    branch = driver_branch(driver)
    kernel = kernel_version(facts.get('kernel_release'))
    ada = chips(gpus)
    driver_clause = 'driver %s (%s)' % (driver, source) if branch is not None else 'no driver version known'
    if not facts:
        if branch is not None and branch >= VENDOR_VFIO_CHIP_BRANCH and ada:
            return 'vendor-vfio', ('vGPU Manager %s on %s, judged from the chip name alone: no host facts of the '
                                   'kernel and driver' % (driver, _named(ada)))
        return None, 'no host facts (kernel release, driver version): the chip name alone does not decide'
    seen = [e for e in facts.get('evidence') or [] if not e.startswith('kernel ')]
    host = '%s; kernel %s, %s' % ('; '.join(seen), facts.get('kernel_release') or 'unknown', driver_clause)
    if kernel is not None and branch is not None:
        if kernel >= VENDOR_VFIO_KERNEL and branch >= VENDOR_VFIO_ALL_GPUS_BRANCH:
            return 'vendor-vfio', host
        if branch >= VENDOR_VFIO_CHIP_BRANCH and ada:
            return 'vendor-vfio', '%s; GPU %s' % (host, _named(ada))
        if kernel >= VENDOR_VFIO_KERNEL and branch >= VENDOR_VFIO_CHIP_BRANCH:
            return None, host
        return 'mdev', host
    if branch is not None and branch >= VENDOR_VFIO_CHIP_BRANCH and ada:
        return 'vendor-vfio', '%s; GPU %s' % (host, _named(ada))
    return None, host
