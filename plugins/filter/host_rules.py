# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host rules the host roles share with the Python that builds MachineConfigs and binds devices: the IOMMU
kernel arguments, the modprobe blacklist text, the PCI address as sysfs names it, the grammars of what goes into
the kernel module configuration and the vfio role's files. The logic lives in module_utils (kernel_cmdline,
modprobe, pci_address, validators); these filters only carry it into a play. Documentation lives in the sidecars
iommu_kernel_args.yml, kernel_args_backend.yml, modprobe_blacklist.yml, invalid_bdfs.yml, invalid_pci_ids.yml, host_checked.yml,
vfio_files.yml, initramfs_command.yml and node_vmis.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule, late

kernel_cmdline = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.kernel_cmdline')
modprobe = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.modprobe')
pci_address = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.pci_address')
validators = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators')
vfio_files_absent = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.vfio_files_absent')


def iommu_kernel_args(vendor, passthrough=True):
    try:
        return kernel_cmdline.host_iommu_args(vendor, passthrough)
    except kernel_cmdline.CmdlineError as e:
        raise AnsibleFilterError('iommu_kernel_args: %s' % e)


def kernel_args_backend(chosen, os_family, major_version):
    return kernel_cmdline.role_backend(chosen, os_family, major_version)


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


def invalid_pci_ids(values, name='ids'):
    """The entries that are no PCI vendor:device id (validators.pci_id), in their order."""
    if not isinstance(values, (list, tuple)):
        raise AnsibleFilterError('invalid_pci_ids: %s is %r, not a list of vendor:device ids such as 10de:2236'
                                 % (name, values))
    bad = []
    for value in values:
        try:
            validators.pci_id(value, name)
        except validators.ValidationError:
            bad.append(value)
    return bad


def _each(check):
    def run(values, name):
        if not isinstance(values, (list, tuple)):
            raise validators.ValidationError('%s: %r is not a list; give a YAML list such as [a, b]' % (name, values))
        return [check(value, '%s[%d]' % (name, i)) for i, value in enumerate(values)]
    return run


HOST_GRAMMARS = {
    'kernel_modules': _each(late(validators, 'kernel_module')),
    'pci_ids': _each(late(validators, 'pci_id')),
    'modprobe_d_path': lambda value, name: validators.config_path(value, name, 'modprobe.d'),
    'modules_load_d_path': lambda value, name: validators.config_path(value, name, 'modules-load.d'),
    'dracut_conf_d_path': lambda value, name: validators.config_path(value, name, 'dracut.conf.d'),
    'initramfs_tools_modules_path':
        lambda value, name: validators.config_path(value, name, 'initramfs-tools', 'modules'),
}


def host_checked(value, grammar, name):
    """``value`` checked against a host configuration grammar (normalised where it has one spelling), or an error
    naming ``name``, the value and what is expected."""
    if grammar not in HOST_GRAMMARS:
        raise AnsibleFilterError('host_checked: unknown grammar %r; use one of %s'
                                 % (grammar, ', '.join(sorted(HOST_GRAMMARS))))
    try:
        return HOST_GRAMMARS[grammar](value, name)
    except validators.ValidationError as e:
        raise AnsibleFilterError(str(e))


def vfio_files(ids, softdeps, modules):
    try:
        return modprobe.vfio_files(ids, softdeps, modules)
    except modprobe.ModprobeError as e:
        raise AnsibleFilterError('vfio_files: %s' % e)


# The two initramfs builders the roles run, whole argument vectors: the tool is chosen from these, never spelled.
INITRAMFS_COMMANDS = {
    'update-initramfs': ['update-initramfs', '-u', '-k', 'all'],
    'dracut': ['dracut', '-f', '--regenerate-all'],
}


def initramfs_command(tool, os_family, name='nouveau_initramfs_tool'):
    """The argv that rebuilds every initramfs image: ``tool`` is ``auto`` (update-initramfs on the Debian family,
    dracut elsewhere), ``update-initramfs`` or ``dracut``; anything else fails naming ``name``."""
    if not isinstance(tool, str) or tool not in ('auto',) + tuple(INITRAMFS_COMMANDS):
        raise AnsibleFilterError('%s: %r is not an initramfs tool; use auto, update-initramfs or dracut' % (name, tool))
    if tool == 'auto':
        tool = 'update-initramfs' if os_family == 'Debian' else 'dracut'
    return list(INITRAMFS_COMMANDS[tool])


def node_vmis(vmis, node):
    """'namespace/name' of each VirtualMachineInstance whose status.nodeName is ``node``, sorted: the take-back
    modules' own rule (vfio_files_absent.vmis_on_node), for the gate before a host's first change."""
    if not isinstance(vmis, (list, tuple)):
        raise AnsibleFilterError('node_vmis: %r is not a list of VirtualMachineInstances' % (type(vmis).__name__,))
    return vfio_files_absent.vmis_on_node(vmis, node)


class FilterModule(object):
    def filters(self):
        return {'iommu_kernel_args': iommu_kernel_args, 'kernel_args_backend': kernel_args_backend,
                'modprobe_blacklist': modprobe_blacklist,
                'invalid_bdfs': invalid_bdfs, 'invalid_pci_ids': invalid_pci_ids, 'host_checked': host_checked,
                'vfio_files': vfio_files, 'initramfs_command': initramfs_command, 'node_vmis': node_vmis}
