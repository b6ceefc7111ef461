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
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import modprobe
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

# The first line of every file the vfio role writes (modprobe.VFIO_HEADER), and blockinfile's markers as the
# role's task spells them: what proves a file, or a block, is ours.
HEADER = '# %s' % modprobe.VFIO_HEADER
BLOCK_BEGIN = '# BEGIN gpuvirt.provision vfio'
BLOCK_END = '# END gpuvirt.provision vfio'
# Our files are a few hundred bytes; a larger file at our path is someone else's, and is not read whole.
MAX_BYTES = 1 << 20

# (option, directory its reader reads, fixed file name or None for any *.conf): the writers' grammars
WHOLE_FILES = (('modprobe_path', 'modprobe.d', None), ('modules_load_path', 'modules-load.d', None),
               ('dracut_path', 'dracut.conf.d', None))
BLOCK_FILE = ('initramfs_modules_path', 'initramfs-tools', 'modules')


class AbsentError(ValueError):
    """A refusal before any change; the message names the value or the VMIs."""


def checked_paths(params):
    """Every path option checked against its directory's grammar, {option: path}; AbsentError names the first bad."""
    out = {}
    for option, directory, filename in WHOLE_FILES + (BLOCK_FILE,):
        try:
            out[option] = validators.config_path(params[option], option, directory, filename)
        except validators.ValidationError as e:
            raise AbsentError(str(e))
    return out


def read_regular(path):
    """(text, None) for a regular file of at most MAX_BYTES in UTF-8, (None, None) when nothing is there, else
    (None, reason it is left alone). Never follows a symbolic link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, None
    if stat.S_ISLNK(st.st_mode):
        return None, 'a symbolic link, not a file we wrote'
    if not stat.S_ISREG(st.st_mode):
        return None, 'not a regular file'
    if st.st_size > MAX_BYTES:
        return None, 'larger than any file we write (%d bytes)' % st.st_size
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0))
    with os.fdopen(fd, 'rb') as f:
        data = f.read(MAX_BYTES + 1)
    try:
        return data.decode('utf-8'), None
    except UnicodeDecodeError:
        return None, 'not UTF-8 text: not a file we wrote'


def is_ours(text):
    """Whether a whole file is one the vfio role wrote: its first line is the role's header."""
    return text.split('\n', 1)[0] == HEADER


def without_block(text):
    """(text without our marked block, None), (text, None) when it has no block, or (None, reason) when the
    markers are not one BEGIN followed by one END (someone edited them: the file is left alone)."""
    lines = text.splitlines(True)
    begins = [i for i, line in enumerate(lines) if line.rstrip('\r\n') == BLOCK_BEGIN]
    ends = [i for i, line in enumerate(lines) if line.rstrip('\r\n') == BLOCK_END]
    if not begins and not ends:
        return text, None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        return None, ('its gpuvirt.provision vfio markers are not one BEGIN line followed by one END line '
                      '(%d BEGIN, %d END): edited by hand, left alone' % (len(begins), len(ends)))
    return ''.join(lines[:begins[0]] + lines[ends[0] + 1:]), None


def vmis_on_node(vmis, node):
    """'namespace/name' of each VirtualMachineInstance whose status.nodeName is ``node``, sorted."""
    out = []
    for vmi in vmis or []:
        if not isinstance(vmi, dict):
            continue
        status, meta = vmi.get('status') or {}, vmi.get('metadata') or {}
        if isinstance(status, dict) and status.get('nodeName') == node:
            out.append('%s/%s' % (meta.get('namespace', '?'), meta.get('name', '?')))
    return sorted(out)


def vmi_refusal(removals, running, allow):
    """The refusal message when something is to be removed from a host whose node runs VMIs and that is not
    allowed, else None. Nothing to remove never refuses: a host already converged keeps running its VMs."""
    if not removals or not running or allow:
        return None
    return ('the GPUs of this host are to leave vfio-pci (%s to remove), but its node runs the '
            'VirtualMachineInstances %s: their GPUs would be taken at the next boot. Stop or move them first, or '
            'allow it (host_prep_stop_vms / retire_stop_vms: true) to let the reboot\'s drain evict them. '
            'Nothing was changed.' % (', '.join(removals), ', '.join(running)))


def plan(paths):
    """What removing would do: ([(path, new_text or None for delete)], [{path, reason}])."""
    actions, kept = [], []
    for option, _directory, _filename in WHOLE_FILES:
        path = paths[option]
        text, reason = read_regular(path)
        if reason:
            kept.append(dict(path=path, reason=reason))
        elif text is not None:
            if is_ours(text):
                actions.append((path, None))
            else:
                kept.append(dict(path=path, reason='no gpuvirt.provision header: not written by us'))
    path = paths[BLOCK_FILE[0]]
    text, reason = read_regular(path)
    if text is not None:
        new, reason = without_block(text)
        if new is not None and new != text:
            actions.append((path, new))
    if reason:
        kept.append(dict(path=path, reason=reason))
    return actions, kept


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
