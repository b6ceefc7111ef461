# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vGPU interface a host offers, decided from what the host shows (docs/pools/vgpu.md, "Which interface"):
the mdev bus, the VFs' ``nvidia/creatable_vgpu_types``, the kernel release and the NVIDIA driver version. Pure Python.

The facts (``host_facts``) are part of the mdev_types result as ``host_interface``::

    {interface: mdev | vendor-vfio | none, evidence: [sentences], kernel_release: str|None, driver_version: str|None}

``predict`` (model/vgpu_interface_rule.py, kept here by name) says which interface a host that shows none yet (the
vGPU Manager not loaded, or its VFs not enabled) will get, from the same facts; with no facts at all (a render
without gathering) it falls back to the GPU's chip.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pci_address
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import vgpu_interface_rule as rule
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import hex_id, link_name, list_names, read_text

# The judgement (interface names, grammars, the chip and kernel/driver rules, predict) is the model's
# (model/vgpu_interface_rule.py, with the upstream sources); this module reads the host and keeps those names.
INTERFACES = rule.INTERFACES
KERNEL_RELEASE_RE = rule.KERNEL_RELEASE_RE
DRIVER_VERSION_RE = rule.DRIVER_VERSION_RE
# one sentence of evidence: printable ASCII, bounded (the saved-facts schema checks the same)
EVIDENCE_RE = re.compile(r'[ -~]{1,512}')
MAX_NAMED = rule.MAX_NAMED
VENDOR_VFIO_KERNEL = rule.VENDOR_VFIO_KERNEL
VENDOR_VFIO_ALL_GPUS_BRANCH = rule.VENDOR_VFIO_ALL_GPUS_BRANCH
VENDOR_VFIO_CHIP_BRANCH = rule.VENDOR_VFIO_CHIP_BRANCH
VENDOR_VFIO_CHIP_RE = rule.VENDOR_VFIO_CHIP_RE
kernel_version = rule.kernel_version
driver_branch = rule.driver_branch
chips = rule.chips
predict = rule.predict
# How the host is read: the same vgpu-device-manager code (NVIDIA/vgpu-device-manager @ 4d31dc65
# pkg/vgpu/framework.go detectFramework) takes a populated /sys/class/mdev_bus for mdev, and a VF's nvidia/ directory
# (pkg/vgpu/vfio/sysfs.go hasVGPUSysfs, creatableVGPUTypes) for vendor VFIO; KubeVirt v1.9.0 accepts a VF that stays
# on the nvidia driver as a host device only with nvidia/current_vgpu_type set
# (pkg/virt-handler/device-manager/nvidia.go shouldPermitNvidia, common.go HasVGPUProfile: "" and "0" are no
# profile), and finds mdevs only on the mdev bus.


class VgpuInterfaceError(ValueError):
    pass


def _bdfs(items):
    """Parent names from sysfs entries or mdevctl JSON of the host: only a PCI address is shown as it is, anything
    else as '?' (a message must not carry a forged line or a megabyte from a copied tree)."""
    return [i if isinstance(i, str) and len(i) <= 16 and pci_address.BDF_RE.fullmatch(i) else '?' for i in items]


_named = rule.named


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


# the most of the evidence a message carries
MAX_EVIDENCE_TEXT = 1024


def evidence_text(facts):
    """The evidence as one clause for a message: "0000:41:00.4 has ...; kernel 6.8.0, driver 580.65". The facts may
    come from a host variable: only string sentences are taken, as printable ASCII (a newline or control character
    becomes '?'), at most MAX_EVIDENCE_TEXT characters in all."""
    evidence = facts.get('evidence') if isinstance(facts, dict) else None
    text = '; '.join(e for e in (evidence if isinstance(evidence, list) else []) if isinstance(e, str))
    return ''.join(c if ' ' <= c <= '~' else '?' for c in text[:MAX_EVIDENCE_TEXT])
