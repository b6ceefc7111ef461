#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vgpu_vf_profiles
short_description: Give SR-IOV VFs their vGPU profiles on NVIDIA's vendor-specific VFIO interface
version_added: 0.1.0
description:
  - Enables each NVIDIA GPU's SR-IOV VFs (C(/usr/lib/nvidia/sriov-manage -e <PF>) when present, else
    C(sriov_totalvfs) written to C(sriov_numvfs)), then writes a vGPU type id to each chosen VF's
    C(nvidia/current_vgpu_type), as the node's vGPU config asks.
  - VFs are taken in C(virtfn) order; a VF already on a wanted type keeps it; each wanted type must be listed in the
    chosen VF's C(nvidia/creatable_vgpu_types) before anything is written, and is checked again just before its write.
  - A VF on another type is left alone unless O(remove_unlisted) is set or O(state=absent), and is refused, naming
    the process, when a VM or process holds its VFIO device.
  - Returns the boot-time config (O(saved_config) format) the C(vgpu_vf) role installs for its systemd unit.
  - >-
    With O(plan), only reads the host and returns that boot-time config; nothing is enabled, set or installed, in
    check mode or not. This is the one call allowed on a CoreOS host (C(/etc/os-release) C(VARIANT_ID=coreos), or
    C(ID) C(rhcos), C(scos) or C(fedora-coreos)), whose files and units the Machine Config Operator owns; every other call is refused there
    before its first change.
  - See docs/pools/vendor-vfio.md.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  config:
    description:
      - >-
        The node's vGPU config in vgpu-device-manager form, C({type: count}) for every GPU, or a list of
        C({devices: all | [GPU index, ...], vgpu-devices: {type: count}}). GPU index 0 is the NVIDIA GPU with the
        lowest PCI address. Type names as C(L40S-24Q); MIG-backed types are refused.
      - Required with O(state=present).
    type: raw
  gpus:
    description: Only these GPU PFs (addresses with domain, C(0000:41:00.0)); default every GPU the config names.
    type: list
    elements: str
    default: []
  state:
    description: C(present) sets the profiles; C(absent) removes every profile of the GPUs (VFs stay enabled).
    type: str
    choices: [present, absent]
    default: present
  remove_unlisted:
    description: Also clear VFs on types the config does not ask for (never a VF a process holds).
    type: bool
    default: false
  saved_config:
    description:
      - The boot config an earlier run saved; its type names say which type a VF holds when the GPU is full and no
        creatable list names it any more. Absent file, or empty value, is fine.
    type: path
  sriov_manage:
    description: NVIDIA's script that enables the VFs; when it is not there, C(sriov_numvfs) is written.
    type: path
    default: /usr/lib/nvidia/sriov-manage
  sysfs_root:
    description:
      - Root of sysfs. Test only (tests and the VM lab point it at a stand-in tree); leave C(/sys) on a host.
      - It goes into the returned boot-time config, so it must be an absolute path of letters, digits and C(._/-)
        (as O(sriov_manage) must); both are checked before the first change.
    type: path
    default: /sys
  proc_root:
    description: Root of procfs, where the holders of each VF's VFIO device are looked up.
    type: path
    default: /proc
  wait_timeout:
    description: Seconds the boot-time restore waits for the driver's sysfs files; goes into the returned config.
    type: int
    default: 300
  plan:
    description:
      - >-
        Read the host and return the boot-time config (RV(persist)) it would get, writing nothing; the way a
        MachineConfig platform learns each host's config (docs/pools/vendor-vfio.md, "OpenShift").
      - Takes the host as it is (O(state=present), no O(gpus), no O(remove_unlisted), no O(unit)). A GPU whose VFs
        are not enabled yet is refused, naming it (its config names each VF, which exists only once enabled).
    type: bool
    default: false
  python:
    description:
      - With O(plan), the Python 3 interpreter the boot-time unit will run the restore script with, checked on the
        host (read only) by the trusted-path rule, as O(unit.python) is.
    type: path
  unit:
    description:
      - When given, the boot-time restore's files are checked before any change and their paths come back as
        RV(files), the systemd unit text as RV(unit). The files sit at fixed paths under O(unit.root_dir)
        (C(/etc/systemd/system/gpuvirt-vgpu-vf.service), C(/usr/local/libexec/gpuvirt/vgpu-vf-restore),
        C(/etc/gpuvirt/vgpu-vf-profiles.json)); an existing one that is not a regular file carrying
        C(# Managed by gpuvirt.provision) (the JSON, its C(managed_by) key) is refused, and so is a parent
        directory that is not root-owned and closed to others.
    type: dict
    suboptions:
      root_dir:
        description: Prefix of the installed files (C(/) on a host; tests point it at a root-owned temporary tree).
        type: path
        default: /
      python:
        description: The Python 3 interpreter that runs the script; a trusted path (root-owned up to C(/)).
        type: path
        default: /usr/bin/python3
      type:
        description:
          - >-
            The unit's form. C(oneshot) is C(Type=oneshot) with C(Restart=on-failure), which systemd accepts from
            version 245 on; C(forking) is C(Type=forking) with C(RemainAfterExit=yes) and C(Restart=on-failure),
            which any systemd accepts (EL8 ships 239, which refuses the oneshot form). Both wait for one run of the
            script per start and start a failed run again every 30 seconds.
          - >-
            C(auto) reads the host's systemd version from the first line of C(systemctl --version) (read only, in
            check mode too) and picks C(oneshot) from 245 on, C(forking) before; a line that does not read as
            C(systemd <version> (<package version>)) is refused, naming the host and the line.
        type: str
        choices: [auto, oneshot, forking]
        default: auto
attributes:
  check_mode:
    description: Reports what would be enabled and set and writes nothing. A GPU whose VFs are off is reported as
      C(enable) only, since its VFs do not exist yet.
    support: full
  diff_mode:
    description: >-
      One line per VF, C(<PF> <VF>: <type or none>), before and after.
    support: full
'''

EXAMPLES = r'''
- name: Two L40S-24Q vGPUs on every GPU
  gpuvirt.provision.vgpu_vf_profiles:
    config: {L40S-24Q: 2}

- name: The boot-time config this host would get, read only (allowed on RHCOS)
  gpuvirt.provision.vgpu_vf_profiles:
    config: {L40S-24Q: 2}
    plan: true
    saved_config: /etc/gpuvirt/vgpu-vf-profiles.json
    python: /usr/bin/python3
  register: planned

- name: Remove every profile of one GPU (its VMs stopped)
  gpuvirt.provision.vgpu_vf_profiles:
    state: absent
    gpus: ["0000:41:00.0"]
'''

RETURN = r'''
vfs:
  description: Per VF (and per GPU whose VFs were enabled), what was done or would be.
  returned: always
  type: list
  elements: dict
  sample: [{pf: "0000:41:00.0", vf: "0000:41:00.4", action: set, before: "0", after: "1155",
            name_before: null, name_after: NVIDIA L40S-24Q}]
said:
  description: One line per change made, such as C(0000:41:00.4 got NVIDIA L40S-24Q (1155)).
  returned: always
  type: list
  elements: str
persist:
  description: >-
    The boot-time config, only checked values (PCI addresses, decimal ids, type names); with O(plan), the config
    the host would get, nothing written.
  returned: always
  type: dict
  sample: {version: 1, sysfs_root: /sys, sriov_manage: /usr/lib/nvidia/sriov-manage, timeout: 300,
           gpus: [{pf: "0000:41:00.0", vfs: {"0000:41:00.4": 1155}}], types: {"1155": NVIDIA L40S-24Q}}
unit:
  description: The systemd unit text, when O(unit) was given.
  returned: when O(unit) is given
  type: str
unit_type:
  description: The unit's form, C(oneshot) or C(forking), when O(unit) was given.
  returned: when O(unit) is given
  type: str
systemd_version:
  description: The host's systemd version, when O(unit.type=auto) read it; null when the form was given.
  returned: when O(unit) is given
  type: int
files:
  description: >-
    The restore's files when O(unit) was given: C(unit), C(script), C(config), each C({path, final, exists}), and
    C(dirs), our own directories to create when absent.
  returned: when O(unit) is given
  type: dict
'''

import json
import os
import platform

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp


def _saved(path):
    """The saved boot config, as read (None when there is none)."""
    if not path or not os.path.lexists(path):
        return None
    try:
        data = json.loads(vvp.read_saved(path).decode('utf-8'))
    except (IOError, OSError, ValueError, RecursionError) as e:
        raise vvp.VfProfileError('saved_config %s cannot be read as JSON (%s); remove it to start afresh'
                                 % (path, to_native(str(e)[:200] or type(e).__name__)))
    vvp.load_saved(data)
    return data


def _unit_type(module, wanted):
    """(form, systemd version or None): the form given, or with ``auto`` the one the host's systemd takes, read from
    ``systemctl --version`` (read only). Its output is the host's: parsed by its grammar, refused when it does not
    fit."""
    vvp.check_unit_type(wanted, 'unit.type', vvp.UNIT_TYPE_CHOICES)
    if wanted != 'auto':
        return wanted, None
    host = 'host %s' % (platform.node() or '?')
    systemctl = module.get_bin_path('systemctl')
    if systemctl is None:
        raise vvp.VfProfileError('%s has no systemctl, so the boot-time unit\'s form cannot be read from its systemd '
                                 'version; set vgpu_vf_unit_type to oneshot (systemd 245 or later) or forking. '
                                 'Nothing was changed.' % host)
    rc, out, err = module.run_command([systemctl, '--version'])
    if rc != 0:
        raise vvp.VfProfileError('%s: systemctl --version exited %d (%s); set vgpu_vf_unit_type to oneshot (systemd '
                                 '245 or later) or forking. Nothing was changed.'
                                 % (host, rc, to_native((err or out or '').strip()[:200])))
    version = vvp.systemd_version(out, host)
    return vvp.unit_type_for(version), version


def _plan(module):
    """The read-only path: check the inputs, read the host, return the boot-time config. Writes nothing, so it is
    allowed on a CoreOS host; exits the module."""
    p = module.params
    try:
        if p['state'] != 'present' or p['gpus'] or p['remove_unlisted']:
            raise vvp.VfProfileError('plan computes the whole host\'s boot-time config as the host is: give it with '
                                     'state present, no gpus and no remove_unlisted')
        if not 10 <= p['wait_timeout'] <= 3600:
            raise vvp.VfProfileError('wait_timeout is %d; expected 10 to 3600 seconds' % p['wait_timeout'])
        config = vvp.check_inputs(p['config'], [], 'present', p['sriov_manage'], p['sysfs_root'], p['proc_root'])
        if p['python'] is not None:
            # the unit runs it as root at every boot: the trusted-path rule, read only
            vvp.trusted_executable(p['python'], 'python')
        saved = _saved(p['saved_config'])
        known = vvp.load_saved(saved)
        plans = vvp.plan(p['sysfs_root'], config, [], 'present', False, p['proc_root'], p['sriov_manage'], known)
        for warning in vvp.renumbered(known or {}, vvp.live_types(plans)):
            module.warn(warning)
        persist = vvp.planned_boot_config(plans, p['sysfs_root'], p['sriov_manage'], p['wait_timeout'])
    except (vvp.VfProfileError, ValueError) as e:
        module.fail_json(msg=to_native(e))
    rows = vvp.report(plans)[0]
    module.exit_json(changed=False, vfs=rows, said=[], persist=persist)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config=dict(type='raw'),
            gpus=dict(type='list', elements='str', default=[]),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            remove_unlisted=dict(type='bool', default=False),
            saved_config=dict(type='path'),
            sriov_manage=dict(type='path', default=vvp.SRIOV_MANAGE),
            sysfs_root=dict(type='path', default='/sys'),
            proc_root=dict(type='path', default='/proc'),
            wait_timeout=dict(type='int', default=300),
            plan=dict(type='bool', default=False),
            python=dict(type='path'),
            unit=dict(type='dict', options=dict(
                root_dir=dict(type='path', default='/'),
                python=dict(type='path', default='/usr/bin/python3'),
                type=dict(type='str', choices=list(vvp.UNIT_TYPE_CHOICES), default='auto'),
            )),
        ),
        required_if=[('state', 'present', ['config'])],
        mutually_exclusive=[('plan', 'unit')],
        supports_check_mode=True,
    )
    p = module.params
    root, state = p['sysfs_root'], p['state']
    if p['plan']:
        _plan(module)

    def run(argv):
        return module.run_command(argv)

    said = []
    try:
        if not 10 <= p['wait_timeout'] <= 3600:
            raise vvp.VfProfileError('wait_timeout is %d; expected 10 to 3600 seconds' % p['wait_timeout'])
        config = vvp.check_inputs(p['config'], p['gpus'], state, p['sriov_manage'], root, p['proc_root'])
        if p['python'] is not None:
            raise vvp.VfProfileError('python is given without plan; the interpreter of an installed unit is '
                                     'unit.python')
        # every path but plan writes (check mode predicts that write): refused on a CoreOS host before anything,
        # with or without the boot-time restore (installed_files refuses it again for its prefix)
        vvp.refuse_coreos(p['unit']['root_dir'] if p['unit'] else '/')
        unit = files = unit_type = systemd = None
        saved_config = p['saved_config']
        if p['unit']:
            files = vvp.installed_files(p['unit']['root_dir'])
            unit_type, systemd = _unit_type(module, p['unit']['type'])
            unit = vvp.unit_text(files['unit']['final'], files['script']['final'], files['config']['final'],
                                 p['unit']['python'], p['wait_timeout'], unit_type=unit_type)
            saved_config = saved_config or files['config']['path']
        saved = _saved(saved_config)
        known = vvp.load_saved(saved)
        plans = vvp.plan(root, config, p['gpus'], state, p['remove_unlisted'], p['proc_root'], p['sriov_manage'],
                         known)
        for warning in vvp.renumbered(known or {}, vvp.live_types(plans)):
            module.warn(warning)
        if not module.check_mode:
            vvp.finish_plan(root, plans, run, state, p['remove_unlisted'], p['proc_root'], p['sriov_manage'],
                            known=known, done=said)
        rows, before, after = vvp.report(plans)
        changed = vvp.changed(plans)
        # every check before the first profile write: the boot config too
        persist = vvp.persist_config(plans, root, p['sriov_manage'], p['wait_timeout'])
        if p['gpus']:
            # narrowed: the other GPUs' saved boot restore stays
            persist = vvp.merge_saved(saved, persist, set(x['pf'] for x in plans))
        if not module.check_mode:
            for x in plans:
                vvp.apply_gpu(root, x, done=said)
    except (vvp.VfProfileError, ValueError) as e:
        msg = to_native(e)
        if said:
            # a refusal after a change: the changes are reported, not hidden
            if 'done before it' not in msg:
                msg = '%s; already done: %s' % (msg, '; '.join(said))
            module.fail_json(msg=msg, changed=True, said=said)
        module.fail_json(msg=msg)
    result = dict(changed=changed, vfs=rows, said=said, persist=persist)
    if unit is not None:
        result['unit'] = unit
        result['unit_type'] = unit_type
        result['systemd_version'] = systemd
        result['files'] = files
    if module._diff:
        result['diff'] = {'before': before, 'after': after, 'before_header': 'vGPU profiles',
                          'after_header': 'vGPU profiles'}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
