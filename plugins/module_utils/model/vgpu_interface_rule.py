# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vGPU interface a host will offer, judged from facts already read (docs/pools/vgpu.md, "Which interface"):
the interface names, the kernel release and driver version grammars, the chip rule and ``predict``. Pure Python,
no reading of the host: host/vgpu_interface.py reads sysfs and procfs into the ``host_interface`` facts and imports
this judgement; the fleet model (model/fleet.py) picks a vGPU host's pool row with it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The interfaces a host's facts name (host_interface.interface); 'none': the host shows neither yet.
INTERFACES = ('mdev', 'vendor-vfio', 'none')
# /proc/sys/kernel/osrelease (uname -r): "6.8.0-60-generic", "5.14.0-427.13.1.el9_4.x86_64", "6.12.0-55.9.1.el10_0"
KERNEL_RELEASE_RE = re.compile(r'([0-9]{1,3})\.([0-9]{1,3})(?:[.+~_-][0-9A-Za-z.+~_-]{0,60})?')
# /sys/module/nvidia/version: "580.82.02", "550.54.16"; the vGPU Manager settings use the same grammar
DRIVER_VERSION_RE = re.compile(r'([0-9]{1,4})(?:\.[0-9]{1,4}){1,3}')
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
# What the host shows decides first (host/vgpu_interface.py host_facts reads it as upstream reads it); these rules
# only predict what a host that shows neither yet will get.
VENDOR_VFIO_KERNEL = (6, 8)
VENDOR_VFIO_ALL_GPUS_BRANCH = 580
VENDOR_VFIO_CHIP_BRANCH = 550
# pci.ids chip codes of those architectures: "AD102GL [L40S]", "GH100 [H100 PCIe]", "GB202GL [...]"
VENDOR_VFIO_CHIP_RE = re.compile(r'(?:AD|GH|GB)[12][0-9]{2}[A-Z]*')


def kernel_version(release):
    """(major, minor) of a kernel release string; None for anything that is not one."""
    match = KERNEL_RELEASE_RE.fullmatch(release) if isinstance(release, str) and len(release) <= 64 else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def driver_branch(version):
    """The branch (580 of 580.82.02) of an NVIDIA driver version; None for anything that is not one."""
    text = version.strip() if isinstance(version, str) else ''
    match = DRIVER_VERSION_RE.fullmatch(text) if len(text) <= 32 else None
    return int(match.group(1)) if match else None


def named(items):
    """The first MAX_NAMED items joined, with how many more there are."""
    return ', '.join(items[:MAX_NAMED]) + (' and %d more' % (len(items) - MAX_NAMED) if len(items) > MAX_NAMED else '')


def chips(gpus):
    """``['<bdf> <device name>']`` of the GPUs whose pci.ids chip is Ada Lovelace, Hopper or Blackwell."""
    found = []
    # the facts may come from a host variable or a file: a GPU that is not an object or a name that is not a
    # string names no chip (the fleet view refuses such facts naming the host, fleet.check_host_facts)
    for gpu in gpus if isinstance(gpus, list) else []:
        name = gpu.get('device_name') if isinstance(gpu, dict) else None
        if isinstance(name, str) and VENDOR_VFIO_CHIP_RE.fullmatch(name.split(' ', 1)[0]):
            found.append('%s %s' % (gpu.get('bdf'), name))
    return found


def predict(facts, gpus, configured_driver=None):
    """Which interface a host that shows none yet will get: ``(interface, reason)``, interface ``vendor-vfio``,
    ``mdev`` or ``None`` (cannot tell), reason a clause naming the evidence.

    ``facts``: the host_interface facts, or None when there are none (a render without gathering: the chip rule
    alone); ``configured_driver``: the vGPU Manager version the GPU Operator will install, used when the host has no
    NVIDIA driver loaded."""
    facts = facts if isinstance(facts, dict) else {}
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
                                   'kernel and driver' % (driver, named(ada)))
        return None, 'no host facts (kernel release, driver version): the chip name alone does not decide'
    evidence = facts.get('evidence')
    seen = [e for e in (evidence if isinstance(evidence, list) else [])
            if isinstance(e, str) and not e.startswith('kernel ')]
    release = facts.get('kernel_release')
    host = '%s; kernel %s, %s' % ('; '.join(seen), release if isinstance(release, str) and release else 'unknown',
                                  driver_clause)
    if kernel is not None and branch is not None:
        if kernel >= VENDOR_VFIO_KERNEL and branch >= VENDOR_VFIO_ALL_GPUS_BRANCH:
            return 'vendor-vfio', host
        if branch >= VENDOR_VFIO_CHIP_BRANCH and ada:
            return 'vendor-vfio', '%s; GPU %s' % (host, named(ada))
        if kernel >= VENDOR_VFIO_KERNEL and branch >= VENDOR_VFIO_CHIP_BRANCH:
            return None, host
        return 'mdev', host
    if branch is not None and branch >= VENDOR_VFIO_CHIP_BRANCH and ada:
        return 'vendor-vfio', '%s; GPU %s' % (host, named(ada))
    return None, host
