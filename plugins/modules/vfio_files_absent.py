#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vfio_files_absent
short_description: Take back the vfio role's boot-time binding files from a host
version_added: 0.1.0
description:
  - Removes the files the C(vfio) role wrote (modprobe.d, modules-load.d, dracut.conf.d), each only when its first
    line is the role's header C(# Managed by gpuvirt.provision (vfio role).), and takes the role's marked block
    (C(# BEGIN gpuvirt.provision vfio) to C(# END gpuvirt.provision vfio)) out of the initramfs-tools modules file,
    leaving the rest of that file as it was.
  - A file at one of these paths without the header, a symbolic link, or a block with a missing end marker is left
    alone and reported under RV(kept) with the reason (the collection takes back only what it wrote).
  - Refuses before any change, naming them, when something is to be removed and VirtualMachineInstances run on
    the host's node (O(vmis), O(node_name)), unless O(allow_running_vmis) is set.
  - Checks every path against the grammar of its directory, as the C(vfio) role's writers do.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  modprobe_path:
    description: The vfio role's modprobe.d file.
    type: path
    default: /etc/modprobe.d/gpuvirt-vfio.conf
  modules_load_path:
    description: The vfio role's modules-load.d file.
    type: path
    default: /etc/modules-load.d/gpuvirt-vfio.conf
  dracut_path:
    description: The vfio role's dracut.conf.d file.
    type: path
    default: /etc/dracut.conf.d/gpuvirt-vfio.conf
  initramfs_modules_path:
    description: The initramfs-tools modules file holding the vfio role's marked block.
    type: path
    default: /etc/initramfs-tools/modules
  vmis:
    description:
      - VirtualMachineInstance objects as C(kubernetes.core.k8s_info) returns them (any namespace); those whose
        C(status.nodeName) is O(node_name) block the removal.
    type: list
    elements: dict
    default: []
  node_name:
    description: The host's Kubernetes node name; needed when O(vmis) is not empty.
    type: str
  allow_running_vmis:
    description: Remove even while VirtualMachineInstances run on the node (the reboot's drain moves or stops them).
    type: bool
    default: false
attributes:
  check_mode:
    description: Reports what would be removed and kept, and refuses the same way; writes nothing.
    support: full
  diff_mode:
    description: Not supported.
    support: none
'''

EXAMPLES = r'''
- name: Take back the vfio binding files
  gpuvirt.provision.vfio_files_absent:
  register: vfio_absent_result
'''

RETURN = r'''
removed:
  description: The files removed (or, in check mode, to remove), and the initramfs-tools file when our block left it.
  returned: always
  type: list
  elements: str
  sample: [/etc/modprobe.d/gpuvirt-vfio.conf, /etc/modules-load.d/gpuvirt-vfio.conf]
kept:
  description: Files at our paths that are not ours (or not only ours), each with the reason it was left alone.
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/modprobe.d/gpuvirt-vfio.conf, reason: "no gpuvirt.provision header: not written by us"}]
initramfs_changed:
  description: Whether a removed file or block is one the initramfs carries (it needs a rebuild).
  returned: always
  type: bool
'''

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
# the decision (which files are ours, what goes) is shared with host_plan: one function, in module_utils
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.vfio_files_absent import (  # noqa: F401 pylint: disable=unused-import
    BLOCK_BEGIN, BLOCK_END, BLOCK_FILE, HEADER, MAX_BYTES, WHOLE_FILES, AbsentError, checked_paths, is_ours, plan,
    read_regular, vmi_refusal, vmis_on_node, without_block)
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators


def rewrite(module, path, text):
    """Replace ``path`` with ``text`` atomically (a temporary file in its directory; atomic_move keeps the
    owner, mode and SELinux context of the file it replaces)."""
    fd, tmp = tempfile.mkstemp(prefix='.gpuvirt-', dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(to_bytes(text))
        module.atomic_move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            modprobe_path=dict(type='path', default='/etc/modprobe.d/gpuvirt-vfio.conf'),
            modules_load_path=dict(type='path', default='/etc/modules-load.d/gpuvirt-vfio.conf'),
            dracut_path=dict(type='path', default='/etc/dracut.conf.d/gpuvirt-vfio.conf'),
            initramfs_modules_path=dict(type='path', default='/etc/initramfs-tools/modules'),
            vmis=dict(type='list', elements='dict', default=[]),
            node_name=dict(type='str'),
            allow_running_vmis=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        paths = checked_paths(p)
        if p['vmis'] and p['node_name'] is not None:
            validators.dns1123_subdomain(p['node_name'], 'node_name')
        elif p['vmis']:
            raise AbsentError('node_name: required when vmis are given (whose node runs them)')
        actions, kept = plan(paths)
        running = vmis_on_node(p['vmis'], p['node_name'])
        refusal = vmi_refusal([path for path, dummy in actions], running, p['allow_running_vmis'])
        if refusal:
            raise AbsentError(refusal)
    except (AbsentError, validators.ValidationError, OSError) as e:
        module.fail_json(msg='vfio_files_absent: %s' % to_native(e))

    result = dict(changed=bool(actions), removed=[path for path, dummy in actions], kept=kept,
                  # every one of these is read into the initramfs: modprobe.d by both builders, modules-load.d by
                  # dracut's systemd-modules-load, the dracut file and the initramfs-tools list by their builder
                  initramfs_changed=bool(actions), running_vmis=running)
    if module.check_mode or not actions:
        module.exit_json(**result)
    for path, new in actions:
        try:
            if new is None:
                os.unlink(path)
            else:
                rewrite(module, path, new)
        except OSError as e:
            module.fail_json(msg='vfio_files_absent: %s: %s' % (path, to_native(e)), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
