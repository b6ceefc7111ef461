# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What taking back the vfio role's files would do on a host: which files (and which marked block) are the role's
and go, which are someone else's and stay. The one decision of the module vfio_files_absent (which acts on it) and
of host_plan (which only reports it), pure Python."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import modprobe, owned_files
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
    reason = owned_files.file_reason(st, MAX_BYTES)
    if reason:
        return None, reason
    # non-blocking and judged again on the descriptor: a FIFO or a device swapped in after the lstat would block
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    with os.fdopen(fd, 'rb') as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None, 'not a regular file'
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        # it grew past the bound after the lstat: not read whole, so neither deleted nor rewritten from a part
        return None, 'larger than any file we write'
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
    """'namespace/name' of each VirtualMachineInstance on ``node``, sorted: its status.nodeName, or the target of a
    live migration still under way (status.migrationState.targetNode, neither completed nor failed: the fields of
    KubeVirt v1.9.0's VirtualMachineInstance CRD, status.migrationState), whose guest is about to run there."""
    out = []
    for vmi in vmis or []:
        if not isinstance(vmi, dict):
            continue
        status, meta = vmi.get('status') or {}, vmi.get('metadata') or {}
        if not isinstance(status, dict):
            continue
        migration = status.get('migrationState')
        arriving = (isinstance(migration, dict) and migration.get('targetNode') == node
                    and migration.get('completed') is not True and migration.get('failed') is not True)
        if status.get('nodeName') == node or arriving:
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
