# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host rules the host roles share with the Python that builds MachineConfigs and binds devices: the IOMMU
kernel arguments, the modprobe blacklist text and the PCI address as sysfs names it. The logic lives in
module_utils (kernel_cmdline, modprobe, pci_address); these filters only carry it into a play. Documentation lives
in the sidecars iommu_kernel_args.yml, modprobe_blacklist.yml and invalid_bdfs.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.module_utils import kernel_cmdline, modprobe, pci_address


def iommu_kernel_args(vendor, passthrough=True):
    try:
        return kernel_cmdline.host_iommu_args(vendor, passthrough)
    except kernel_cmdline.CmdlineError as e:
        raise AnsibleFilterError('iommu_kernel_args: %s' % e)


def modprobe_blacklist(module, header=None):
    try:
        return modprobe.blacklist_text(module, header)
    except modprobe.ModprobeError as e:
        raise AnsibleFilterError('modprobe_blacklist: %s' % e)


def invalid_bdfs(values):
    """The entries that are no PCI address as sysfs names a device: what the vfio binder would refuse."""
    if not isinstance(values, (list, tuple)):
        raise AnsibleFilterError('invalid_bdfs: %r is not a list of PCI addresses' % (values,))
    return [value for value in values if not pci_address.is_sysfs_bdf(value)]


class FilterModule(object):
    def filters(self):
        return {'iommu_kernel_args': iommu_kernel_args, 'modprobe_blacklist': modprobe_blacklist,
                'invalid_bdfs': invalid_bdfs}
