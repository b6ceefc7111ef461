#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: host_plan
short_description: Plan a GPU host's preparation in one read-only call
version_added: 0.1.0
description:
  - Reads, in one call, everything the host preparation roles (kernel_args, nouveau, vfio, the vgpu_vf role's leave
    path, reboot) compare against, both ways (each thing in the state the pool table gives it), and returns the
    changes they would make and whether the host needs a reboot. C(playbooks/host_prep.yml) plans
    every selected host at once with it, then drains, changes and reboots only the hosts whose plan is not empty.
  - Each check decides with the function the module that acts decides with (C(kernel_cmdline)'s decision, both
    states and the ownership record it writes, and its command line comparison, C(vfio_files_absent)'s plan, C(vfio_bind)'s steps, the modprobe file
    writers), so the plan and the run agree.
  - Conservative. Where a check cannot tell (a file it cannot read, a link where a role writes a file, an owner or
    mode a role would reset, a boot loader file the editor refuses), it plans a change, so the host is rolled and the
    roles decide.
  - Every input is checked by shape before anything is read (the roles' own validators), and an error names the role
    variable it came from. C(kernel_args.iommu_vendor) must be one of the role's choices (auto, intel, amd).
  - With the raw role inputs instead of decided values (no C(kernel_args.args), no C(vfio.devices)) it also reads and
    decides, in the same call, what the roles' C(validate.yml) read with several module calls, refusing what they
    refuse with their words (naming O(host) and the variable) - C(playbooks/host_prep.yml)'s plan play so makes one
    remote module call per host. The IOMMU vendor (the ACPI table under O(acpi_tables_dir), else the CPU vendor of
    O(proc_cpuinfo)) and the kernel argument list (the function of the filter C(iommu_kernel_args)); the running
    kernel's command line must be readable; the vfio selection (C(lspci -vmmnnkD) and sysfs, as C(pci_devices)), the
    empty-selection refusal, the inspection of the selected devices and their IOMMU groups (as C(vfio_bind)), the
    processes holding C(/dev/nvidia*) (as C(gpu_holders), under O(proc_root)) and the refusal of held devices.
  - O(gather_os_facts) collects the distribution facts with ansible-core's own collector (the facts
    C(ansible.builtin.setup) returns for C(gather_subset=distribution)) and returns them as facts; the OS family then
    picks the vfio initramfs file and, for C(kernel_args.backend=auto), the backend (the function of the filter
    C(kernel_args_backend)).
  - O(stop_coreos) ends the call right after O(os_release_path) is read when it names a CoreOS host (C(VARIANT_ID=coreos),
    as Fedora CoreOS and RHCOS write it, or the C(ID) C(rhcos), C(scos) or C(fedora-coreos)), whose Machine Config
    Operator owns the kernel command line; nothing else is read or decided, RV(stopped) is true and the play decides
    whether to leave the host alone.
  - Host data is read bounded (each file at most a fixed size, a regular file only) and only values of a grammar
    are returned or shown.
  - Read-only. The C(grub_default) backend sources C(/etc/default/grub) with C(/bin/sh), as C(grub2-mkconfig) (and
    the C(kernel_cmdline) module in check mode) does; the C(grubby) backend runs C(grubby --info=ALL).
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  kernel_args:
    description:
      - The kernel_args role's inputs. Keys C(enabled) (bool; false when the role does not run), C(state) (present,
        or absent to take back what the ownership record lists), C(args) (C(kernel_args_wanted)), C(remove)
        (C(kernel_args_remove)), C(backend) (auto, grub_dropin, grub_default, grubby, none), C(dropin_path),
        C(grub_default_path), C(grub_config), C(record_path) (C(kernel_args_record_path)).
      - Without C(args) (and C(enabled) true) the argument list is decided on the host as the role's
        C(validate.yml) decides it, from C(iommu), C(iommu_passthrough) (bools), C(iommu_vendor) (auto, intel, amd)
        and C(extra) (C(kernel_args_extra)).
    type: dict
    default: {}
  nouveau:
    description:
      - The nouveau role's inputs. Keys C(enabled) (bool; false when the role does not run, as where the pool
        leaves the blacklist as it is), C(state) (present, or absent to take back a blacklist carrying the role's
        header), C(blacklist),
        C(initramfs_rebuild), C(reboot_if_loaded) (bools), C(modprobe_path), C(initramfs_watch) (the files the
        initramfs carries; a rebuild runs when one is newer than an image, or is about to change).
    type: dict
    default: {}
  vfio:
    description:
      - The vfio role's inputs. Keys C(state) (present, absent, or none when the role does not run), C(devices)
        (C(vfio_selected), PCI addresses), C(persistent_ids), C(softdep_drivers), C(modules), C(persistent),
        C(runtime_bind), C(initramfs_rebuild) (bools), C(modprobe_path), C(modules_load_path), C(dracut_path),
        C(initramfs_modules_path).
      - Without C(devices) (and C(state) present) the devices are selected on the host as the role's C(validate.yml)
        selects them, from C(gpus), C(include_nvswitch), C(require_devices) (bools), C(device_ids), C(bdfs) and
        C(rebind_drivers) (the drivers a selected device may be taken from).
    type: dict
    default: {}
  vgpu_vf:
    description:
      - The vendor-VFIO boot-time VF restore. Keys C(state) (absent where the host left that pool and the vgpu_vf
        role's leave path runs; present or leave plan nothing) and C(root_dir) (C(vgpu_vf_root_dir)).
    type: dict
    default: {}
  os_family:
    description: The host's OS family (C(Debian) hosts get the initramfs-tools block, others the dracut file).
    type: str
    default: ''
  proc_cmdline:
    description: The running kernel's command line; a file named C(cmdline) (C(/proc/cmdline), or a copy of one).
    type: str
    default: /proc/cmdline
  sysfs_root:
    description: Where sysfs is mounted (or a copy).
    type: str
    default: /sys
  boot_dir:
    description: Where the initramfs images are.
    type: str
    default: /boot
  host:
    description: The host's inventory name, for the refusals' messages.
    type: str
    default: ''
  gather_os_facts:
    description: Collect the distribution facts (returned as facts) and plan with the OS family they give.
    type: bool
    default: false
  stop_coreos:
    description: End the call after reading O(os_release_path) when it names a CoreOS host (RV(stopped)).
    type: bool
    default: false
  os_release_path:
    description:
      - The os-release file (read at most 64 KiB, a regular file only). At the default, C(/usr/lib/os-release) is read
        where C(/etc/os-release) is not a readable regular file (os-release(5)).
      - With O(stop_coreos), a host where no os-release file can be read is refused (it might be CoreOS), naming
        the host and the paths; nothing is changed.
    type: str
    default: /etc/os-release
  proc_cpuinfo:
    description: The CPU information, read (its first 64 KiB) only for an auto IOMMU vendor without an ACPI table.
    type: str
    default: /proc/cpuinfo
  acpi_tables_dir:
    description: Where the ACPI tables are listed (C(DMAR) is Intel VT-d, C(IVRS) is AMD-Vi).
    type: str
    default: /sys/firmware/acpi/tables
  proc_root:
    description: Where procfs is mounted (the processes holding C(/dev/nvidia*)).
    type: str
    default: /proc
extends_documentation_fragment:
  - gpuvirt.provision.attributes.read_only
'''

EXAMPLES = r'''
- name: Plan the host's preparation (no change)
  gpuvirt.provision.host_plan:
    kernel_args: {enabled: true, args: [intel_iommu=on, iommu=pt], remove: [], backend: grub_dropin,
                  dropin_path: /etc/default/grub.d/90-gpuvirt-kernel-args.cfg}
    nouveau: {enabled: true, blacklist: true, modprobe_path: /etc/modprobe.d/gpuvirt-blacklist-nouveau.conf,
              initramfs_rebuild: true, reboot_if_loaded: true,
              initramfs_watch: [/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf]}
    os_family: Debian
  register: host_plan

- name: Read, check and plan in one call, from the roles' raw inputs (no change)
  gpuvirt.provision.host_plan:
    host: "{{ inventory_hostname }}"
    gather_os_facts: true
    stop_coreos: true
    kernel_args: {enabled: true, state: present, iommu: true, iommu_vendor: auto, iommu_passthrough: true,
                  extra: [], remove: [], backend: auto}
    vfio: {state: present, gpus: true, include_nvswitch: true, require_devices: true, device_ids: [], bdfs: [],
           rebind_drivers: [], persistent_ids: []}
  register: host_plan
'''

RETURN = r'''
changes:
  description:
    - What the roles would change, in the order they run. C(what) is the thing (kernel_args, kernel_args_record,
      kernel_cmdline, vfio_config, vfio_bind, vfio_absent, nouveau_blacklist, nouveau_loaded, vf_restore,
      initramfs), C(action) one of add, update, remove, rebuild, bind, reboot; C(path) the file (or null), C(args) the arguments, ids or devices concerned,
      C(reboot) whether it needs a reboot to take effect, C(reason) why.
  returned: always
  type: list
  elements: dict
  sample: [{what: kernel_cmdline, action: reboot, path: null, args: [intel_iommu=on], reboot: true,
            reason: "running kernel lacks intel_iommu=on, still has -"}]
reboot_needed:
  description: A change needs a reboot.
  returned: always
  type: bool
takebacks:
  description:
    - One sentence per planned take-back that takes GPUs from VMs on the node at the next boot (C(vfio_absent),
      C(vf_restore), C(kernel_args) removed), in plan order; what the rolling play refuses while VMs run on the node.
  returned: always
  type: list
  elements: str
summary:
  description: One line, the changes or C(nothing to change).
  returned: always
  type: str
os_id:
  description:
    - The C(ID) of O(os_release_path), read only where O(stop_coreos) is set (the last C(ID) line; empty when absent
      or not of the os-release grammar).
  returned: always
  type: str
  sample: ubuntu
coreos:
  description: O(os_release_path) names a CoreOS host (read only where O(stop_coreos) is set).
  returned: always
  type: bool
stopped:
  description: The host is CoreOS and O(stop_coreos) is set; nothing else was read and the plan is empty.
  returned: always
  type: bool
kernel_args_wanted:
  description: The argument list decided on the host (null where C(kernel_args.args) was given or nothing ran).
  returned: always
  type: list
  elements: str
vfio_selected:
  description: The devices selected on the host (null where C(vfio.devices) was given or nothing ran).
  returned: always
  type: list
  elements: str
ansible_facts:
  description: With O(gather_os_facts), the distribution facts, as C(ansible.builtin.setup) returns them.
  returned: when O(gather_os_facts) and not RV(stopped)
  type: dict
  sample: {ansible_os_family: Debian, ansible_distribution: Ubuntu, ansible_distribution_major_version: '24'}
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.facts.system.distribution import DistributionFactCollector
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan_reads

# pci_devices' lspci form (machine-readable, numeric ids, driver, domain)
LSPCI_ARGS = ['-vmm', '-nn', '-k', '-D']


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kernel_args=dict(type='dict', default={}),
            nouveau=dict(type='dict', default={}),
            vfio=dict(type='dict', default={}),
            vgpu_vf=dict(type='dict', default={}),
            os_family=dict(type='str', default=''),
            proc_cmdline=dict(type='str', default='/proc/cmdline'),
            sysfs_root=dict(type='str', default='/sys'),
            boot_dir=dict(type='str', default='/boot'),
            host=dict(type='str', default=''),
            gather_os_facts=dict(type='bool', default=False),
            stop_coreos=dict(type='bool', default=False),
            os_release_path=dict(type='str', default='/etc/os-release'),
            proc_cpuinfo=dict(type='str', default='/proc/cpuinfo'),
            acpi_tables_dir=dict(type='str', default='/sys/firmware/acpi/tables'),
            proc_root=dict(type='str', default='/proc'),
        ),
        supports_check_mode=True,
    )

    def grubby_info():
        # read only when the kernel_cmdline decision needs it, as the module reads it
        grubby = module.get_bin_path('grubby', required=True)
        rc, out, err = module.run_command([grubby, '--info=ALL'])
        if rc != 0:
            module.fail_json(msg='host_plan: grubby --info=ALL failed: %s' % err.strip())
        return out

    def lspci():
        # as pci_devices runs it (and fails where it is missing)
        path = module.get_bin_path('lspci')
        if not path:
            module.fail_json(msg='lspci was not found on the PATH; install the pciutils package (apt-get/dnf install '
                                 'pciutils) on %s' % (module.params['host'] or 'the host'))
        rc, out, err = module.run_command([path] + LSPCI_ARGS)
        if rc != 0:
            module.fail_json(msg='%s %s failed (rc=%d): %s' % (path, ' '.join(LSPCI_ARGS), rc, err.strip()))
        return out

    def os_facts():
        # ansible-core's own distribution collector: the facts setup's gather_subset=distribution returns
        return DistributionFactCollector().collect(module=module)

    inputs = dict(module.params, which=module.get_bin_path, tmpdir=module.tmpdir, grubby_info=grubby_info)
    try:
        result = host_plan_reads.read_and_plan(inputs, dict(lspci=lspci, os_facts=os_facts))
    except host_plan_reads.Refusal as e:
        module.fail_json(msg=to_native(e))
    except (host_plan.PlanError, ValueError, OSError) as e:
        module.fail_json(msg='host_plan: %s; nothing was changed' % to_native(e))
    facts = result.pop('facts')
    if facts:
        result['ansible_facts'] = dict(('ansible_' + key, value) for key, value in facts.items())
    module.exit_json(changed=False, summary=host_plan.summary(result), **result)


if __name__ == '__main__':
    main()
