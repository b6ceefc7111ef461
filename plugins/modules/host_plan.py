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
    variable it came from.
  - Read-only. The C(grub_default) backend sources C(/etc/default/grub) with C(/bin/sh), as C(grub2-mkconfig) (and
    the C(kernel_cmdline) module in check mode) does; the C(grubby) backend runs C(grubby --info=ALL).
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  kernel_args:
    description:
      - The kernel_args role's inputs, as its C(validate.yml) decided them. Keys C(enabled) (bool; false when the
        role does not run), C(state) (present, or absent to take back what the ownership record lists),
        C(args) (C(kernel_args_wanted)), C(remove) (C(kernel_args_remove)), C(backend) (auto, grub_dropin,
        grub_default, grubby, none), C(dropin_path), C(grub_default_path), C(record_path)
        (C(kernel_args_record_path)).
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
    description: The running kernel's command line.
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
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan


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

    inputs = dict(module.params, which=module.get_bin_path, tmpdir=module.tmpdir, grubby_info=grubby_info)
    try:
        result = host_plan.plan(inputs)
    except (host_plan.PlanError, OSError) as e:
        module.fail_json(msg='host_plan: %s; nothing was changed' % to_native(e))
    module.exit_json(changed=False, summary=host_plan.summary(result), **result)


if __name__ == '__main__':
    main()
