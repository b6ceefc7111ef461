#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: kernel_cmdline
short_description: Ensure kernel arguments in the boot loader and report whether a reboot is pending
version_added: 0.1.0
description:
  - Ensures kernel arguments are present and removes arguments matching patterns, in the boot loader
    configuration of the host, then compares the wanted arguments with the running kernel's C(/proc/cmdline).
  - C(grub_dropin) (Debian, Ubuntu) writes a drop-in under C(/etc/default/grub.d/) that filters and extends
    C(GRUB_CMDLINE_LINUX) when C(update-grub) runs; the user's C(/etc/default/grub) is never rewritten.
  - C(grub_default) (EL8) edits only the managed arguments inside C(GRUB_CMDLINE_LINUX) of
    C(/etc/default/grub) and runs C(grub2-mkconfig). It owns one form of the variable, a plain single-line
    C(GRUB_CMDLINE_LINUX="...") (or C('...') or one word, C(export) and a trailing comment allowed) at the
    start of a line, and refuses a file that sets the variable in any other way (after C(;), C(&&) or a
    backslash continuation, with C(readonly), C(unset), C(${GRUB_CMDLINE_LINUX:=...})), naming the line.
    Every byte outside the edited lines is kept (CRLF too); a file that is not UTF-8 is refused.
  - GRUB boots C(GRUB_CMDLINE_LINUX) followed by C(GRUB_CMDLINE_LINUX_DEFAULT) and the kernel takes the last value
    of a repeated parameter, so C(grub_default) also takes out of C(GRUB_CMDLINE_LINUX_DEFAULT) the arguments that
    conflict with the wanted ones (another value of an ensured parameter, such as C(intel_iommu=off), or an
    argument a O(remove) pattern matches), only those, the rest of the value as written. Wanted arguments go to
    C(GRUB_CMDLINE_LINUX) alone. C(grub_dropin) filters both variables the same way, so both backends boot the
    same effective command line.
  - Before writing, C(grub_default) sources the old and the new file with C(/bin/sh) in an empty environment, as
    C(grub2-mkconfig) does, and refuses the edit unless C(GRUB_CMDLINE_LINUX) is the old value plus the added and
    minus the removed arguments, C(GRUB_CMDLINE_LINUX_DEFAULT) the old value less the conflicting ones, and the
    effective command line (both, the last value of each parameter winning) holds every wanted argument and none
    to remove; a conflicting argument the editor cannot take out (a computed value) is named with its variable.
    Sourcing runs the commands the file holds (such as C(GRUB_DISTRIBUTOR="$(sed ...)")), as every
    C(grub2-mkconfig) run does; this happens in check mode too.
  - C(grubby) (EL9 and later) runs C(grubby --update-kernel=ALL) with the arguments to add and remove.
  - Ensuring C(key=value) removes every other value of C(key) (for example C(intel_iommu=off)).
  - When the boot loader update command fails the configuration file is restored, so a later run retries.
  - Both ways (O(state)). V(present) records on the host (O(record_path)) the arguments it added that the boot loader
    did not have before, per backend, and the drop-in it wrote. V(absent) takes back only what that record lists;
    on C(grub_default) the recorded arguments C(GRUB_CMDLINE_LINUX) still has (one C(GRUB_CMDLINE_LINUX_DEFAULT)
    carries too is kept, named), on C(grubby) the recorded arguments of every entry, on C(grub_dropin) the drop-in
    when its first line is the role's header (it holds only ours). The module reads and writes the record itself,
    in the same call as the boot loader change.
  - The record is host data. A record that is a symbolic link, too large, or fails the schema (an argument outside
    the allow-list, an unknown key) takes back nothing of its kind; the result says why (RV(record_problems)) and a
    present run replaces it.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  args:
    description:
      - Kernel arguments that must be present, such as C(intel_iommu=on).
      - "Only letters, digits and C(_ . , : = + / @ % -) are accepted; anything else fails before any change."
    type: list
    elements: str
    default: []
  remove:
    description:
      - Shell-style glob patterns; an argument is removed when the pattern matches the whole argument or its key.
    type: list
    elements: str
    default: []
  backend:
    description:
      - How the boot loader is configured. C(auto) picks C(grub_dropin) when C(/etc/default/grub.d) and
        C(update-grub) exist, else C(grubby), else C(grub_default).
      - C(none) changes nothing and only compares with O(proc_cmdline).
    type: str
    choices: [auto, grub_dropin, grub_default, grubby, none]
    default: auto
  dropin_path:
    description: Drop-in file written by the C(grub_dropin) backend.
    type: path
    default: /etc/default/grub.d/90-gpuvirt-kernel-args.cfg
  grub_default_path:
    description: Defaults file edited by the C(grub_default) backend.
    type: path
    default: /etc/default/grub
  grub_config:
    description: Output of C(grub2-mkconfig) for the C(grub_default) backend.
    type: path
    default: /boot/grub2/grub.cfg
  update_bootloader:
    description:
      - Run C(update-grub) or C(grub2-mkconfig) after the file changed. Set to V(false) only where no boot
        loader is installed (containers); the result then says the boot loader is stale.
    type: bool
    default: true
  proc_cmdline:
    description:
      - The running kernel's command line, an absolute path; read as a regular file of at most 64 KiB.
      - An input of the host only, never an extra variable (the launch check refuses it there).
    type: path
    default: /proc/cmdline
  state:
    description:
      - V(present) ensures O(args) and removes O(remove), recording what it added.
      - V(absent) takes back what the record says the collection added (O(args) and O(remove) must be empty).
    type: str
    choices: [present, absent]
    default: present
  record_path:
    description:
      - The ownership record, a C(*.json) file directly in a C(gpuvirt-provision) directory; written atomically,
        never through a symbolic link, mode 0644. Not read nor written with backend V(none).
    type: path
    default: /var/lib/gpuvirt-provision/host-state.json
attributes:
  check_mode:
    description: Reports what would change and the commands that would run, and writes nothing.
    support: full
  diff_mode:
    description: Shows the boot loader file before and after (or the grubby arguments added and removed).
    support: full
notes:
  - Does not reboot. Use RV(reboot_required) to decide.
'''

EXAMPLES = r'''
- name: Turn the Intel IOMMU on in pass-through mode
  gpuvirt.provision.kernel_cmdline:
    args: [intel_iommu=on, iommu=pt]
    remove: [nomodeset]
  register: cmdline

- name: Take back the arguments the collection added (the record says which)
  gpuvirt.provision.kernel_cmdline:
    state: absent
  register: cmdline

- name: Only report whether the running kernel has the args
  gpuvirt.provision.kernel_cmdline:
    args: [intel_iommu=on]
    backend: none
'''

RETURN = r'''
backend:
  description: Backend used.
  returned: always
  type: str
  sample: grub_dropin
reboot_required:
  description: The running kernel lacks an ensured argument or still has one to remove.
  returned: always
  type: bool
missing:
  description: Ensured arguments absent from the running kernel's command line.
  returned: always
  type: list
  elements: str
  sample: [intel_iommu=on]
unwanted:
  description: Arguments of the running kernel that the configuration removes.
  returned: always
  type: list
  elements: str
  sample: [intel_iommu=off]
cmdline:
  description:
    - Arguments of the running kernel, those that fit the kernel argument grammar (RV(cmdline_unparseable) counts
      the others, which are never shown).
  returned: always
  type: list
  elements: str
cmdline_unparseable:
  description: How many tokens of O(proc_cmdline) do not fit the kernel argument grammar (left out of every list).
  returned: always
  type: int
  sample: 0
bootloader_updated:
  description: The boot loader update command ran (or would run, in check mode).
  returned: always
  type: bool
commands:
  description: Commands run (or that would run in check mode), each as an argument list.
  returned: always
  type: list
  elements: list
owned:
  description: The arguments the record lists as the collection's for the backend after this run.
  returned: always
  type: list
  elements: str
  sample: [intel_iommu=on, iommu=pt]
removed:
  description: With O(state=absent), the recorded arguments taken back (or, in check mode, to take back).
  returned: always
  type: list
  elements: str
kept:
  description: With O(state=absent), what was left alone, each with the reason (not ours, or also the administrator's).
  returned: always
  type: list
  elements: dict
  sample: [{arg: iommu=pt, reason: "GRUB_CMDLINE_LINUX_DEFAULT carries it too: the administrator's there"}]
files_removed:
  description: With O(state=absent), the files taken back (the drop-in).
  returned: always
  type: list
  elements: str
config_changed:
  description: The boot loader configuration was (or, in check mode, would be) changed; RV(record_changed) aside.
  returned: always
  type: bool
record_changed:
  description: The record was (or, in check mode, would be) rewritten.
  returned: always
  type: bool
record_problems:
  description: Why a part of the record was not used (malformed, a link), by kind; empty when the record is sound.
  returned: always
  type: dict
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import cmdline_owned as owned
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import cmdline_decision as decision
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc
# the file as bytes (None when absent): an edit must keep every byte it does not own, CR included
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import read_bytes


def pick_backend(module):
    return kc.pick_backend(os.path.isdir, module.get_bin_path)


class Runner(object):
    def __init__(self, module, result):
        self.module = module
        self.result = result

    def run(self, cmd):
        self.result['commands'].append(cmd)
        if self.module.check_mode:
            return ''
        rc, out, err = self.module.run_command(cmd)
        if rc != 0:
            raise RuntimeError('%s failed (rc=%d): %s' % (' '.join(cmd), rc, (err or out).strip()))
        return out


def write_file(module, path, old, new):
    """Write bytes atomically, keeping mode/owner of an existing file (0644 for a new one). Neither the file nor
    the temporary file beside it is followed through a symbolic link (a planted link would turn the root write
    into one of another file)."""
    if os.path.islink(path):
        raise RuntimeError('%s is a symbolic link: refusing to write through it' % path)
    tmp = path + '.gpuvirt-tmp'
    if os.path.lexists(tmp):
        if os.path.islink(tmp) or not os.path.isfile(tmp):
            raise RuntimeError('%s is in the way and is not a regular file: remove it' % tmp)
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    with os.fdopen(fd, 'wb') as f:
        if old is None:
            # on the open descriptor, never by name after the close (a link swapped in at the temporary name)
            os.fchmod(f.fileno(), 0o644)
        f.write(new)
    module.atomic_move(tmp, path)


def file_backend(module, result, runner, path, new_data, update_cmd, old=None):
    """Write ``new_data`` (bytes) to ``path`` when it differs and run ``update_cmd``; ``old`` is the file as the
    caller read it (read here when None)."""
    old = read_bytes(path) if old is None else old
    if old == new_data:
        return
    result['changed'] = True
    if module._diff:
        result['diff'] = {'before_header': path, 'after_header': path,
                          'before': to_text(old or b'', errors='surrogate_or_replace'),
                          'after': to_text(new_data, errors='surrogate_or_replace')}
    if module.check_mode:
        if module.params['update_bootloader']:
            result['commands'].append(update_cmd)
            result['bootloader_updated'] = True
        return
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o755)
    write_file(module, path, old, new_data)
    if not module.params['update_bootloader']:
        return
    try:
        runner.run(update_cmd)
    except RuntimeError:
        # Put the old file back: otherwise the next run sees "no change" and never updates the boot loader.
        if old is None:
            os.unlink(path)
        else:
            write_file(module, path, old, old)
        raise
    result['bootloader_updated'] = True


def remove_dropin(module, result, runner, path, old, update_cmd):
    """Delete our drop-in and run ``update_cmd``; on a failed update put the drop-in back (a later run retries)."""
    result['changed'] = True
    result['files_removed'].append(path)
    if module._diff:
        result['diff'] = {'before_header': path, 'after_header': path,
                          'before': to_text(old, errors='surrogate_or_replace'), 'after': ''}
    if module.check_mode:
        if module.params['update_bootloader']:
            result['commands'].append(update_cmd)
            result['bootloader_updated'] = True
        return
    os.unlink(path)
    if not module.params['update_bootloader']:
        return
    try:
        runner.run(update_cmd)
    except RuntimeError:
        write_file(module, path, None, old)
        raise
    result['bootloader_updated'] = True


def grubby_info(module, result):
    """The output of ``grubby --info=ALL`` (read only when the decision needs it)."""
    grubby = module.get_bin_path('grubby', required=True)
    rc, out, err = module.run_command([grubby, '--info=ALL'])
    if rc != 0:
        module.fail_json(msg='grubby --info=ALL failed: %s' % err.strip(), **result)
    return out


def apply_config(module, result, runner, backend, config, state):
    """Carry out the boot loader change ``decide`` chose (check mode and --diff as each writer does them)."""
    p = module.params
    kind = config['kind']
    if kind is None:
        return
    cmd = None  # grubby writes through its own binary, no boot loader update command
    if backend == 'grub_dropin':
        cmd = [module.get_bin_path('update-grub') or 'update-grub']
    elif backend == 'grub_default':
        cmd = [module.get_bin_path('grub2-mkconfig') or 'grub2-mkconfig', '-o', p['grub_config']]
    if kind == 'write':
        file_backend(module, result, runner, config['path'], config['new'], cmd, old=config['old'])
    elif kind == 'delete':
        remove_dropin(module, result, runner, config['path'], config['old'], cmd)
    elif kind == 'grubby':
        add, drop = config['add'], config['drop']
        cmd = [module.get_bin_path('grubby', required=True), '--update-kernel=ALL']
        if add:
            cmd.append('--args=' + ' '.join(add))
        if drop:
            cmd.append('--remove-args=' + ' '.join(drop))
        result['changed'] = result['bootloader_updated'] = True
        if module._diff:
            result['diff'] = {'before': 'grubby ALL kernels\n',
                              'after': ('add: %s\nremove: %s\n' % (' '.join(add), ' '.join(drop)))
                              if state == 'present' else 'remove: %s\n' % ' '.join(drop)}
        runner.run(cmd)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            args=dict(type='list', elements='str', default=[]),
            remove=dict(type='list', elements='str', default=[]),
            backend=dict(type='str', default='auto',
                         choices=['auto', 'grub_dropin', 'grub_default', 'grubby', 'none']),
            dropin_path=dict(type='path', default='/etc/default/grub.d/90-gpuvirt-kernel-args.cfg'),
            grub_default_path=dict(type='path', default='/etc/default/grub'),
            grub_config=dict(type='path', default='/boot/grub2/grub.cfg'),
            update_bootloader=dict(type='bool', default=True),
            proc_cmdline=dict(type='path', default='/proc/cmdline'),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            record_path=dict(type='path', default=host_record.DEFAULT_PATH),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ensure, remove = p['args'], p['remove']
    try:
        kc.validate_args(ensure)
        kc.validate_patterns(remove)
        kc.check_consistent(ensure, remove)
        kc.check_paths(p['dropin_path'], p['grub_default_path'], p['grub_config'])
        host_record.check_path(p['record_path'])
        kc.check_proc_cmdline(p['proc_cmdline'])
        if p['state'] == 'absent' and (ensure or remove):
            raise kc.CmdlineError('state absent takes back what the record lists: args and remove must be empty '
                                  '(got %s)' % ' '.join(ensure + remove))
    except (kc.CmdlineError, host_record.RecordError) as e:
        module.fail_json(msg=to_native(e))

    backend = pick_backend(module) if p['backend'] == 'auto' else p['backend']
    result = dict(changed=False, backend=backend, commands=[], bootloader_updated=False, owned=[], removed=[],
                  kept=[], files_removed=[], config_changed=False, record_changed=False, record_problems={})
    runner = Runner(module, result)
    admin_keeps = []
    try:
        record, problems = (host_record.read(p['record_path']) if backend != 'none'
                            else (host_record.empty(), {}))
        result['record_problems'] = problems
        if problems:
            module.warn('kernel_cmdline: %s: %s' % (p['record_path'], '; '.join(
                '%s: %s' % item for item in sorted(problems.items()))))
        # the decision host_plan makes too (one function, module_utils/host/cmdline_decision.py); for grub_default
        # it is cross-checked with /bin/sh reading the old and the new bytes (check mode too), before any write
        d = decision.decide(p['state'], backend, ensure, remove, record, problems, p['dropin_path'],
                            p['grub_default_path'], read_bytes, module.tmpdir,
                            lambda: grubby_info(module, result))
        result['kept'].extend(d['kept'])
        admin_keeps = d['admin_keeps']
        apply_config(module, result, runner, backend, d['config'], p['state'])
        result['removed'].extend(d['removed'])
        result['config_changed'] = result['changed']
        if d['record_changed']:
            result['record_changed'] = result['changed'] = True
            if not module.check_mode:
                host_record.write(p['record_path'], d['record'])
        result['owned'] = d['now'] or []
    except (RuntimeError, kc.CmdlineError, host_record.RecordError, IOError, OSError) as e:
        module.fail_json(msg=to_native(e), **result)

    # bounded, a regular file only, and only the tokens of the argument grammar are kept (and so ever shown): the
    # rest is counted (cmdline_unparseable)
    running = kc.read_running(p['proc_cmdline'], read_bytes)
    if running is None:
        module.fail_json(msg='cannot read %s as a kernel command line (a regular file of at most %d bytes)'
                         % (p['proc_cmdline'], kc.PROC_CMDLINE_LIMIT), **result)
    current, unparseable = running
    if p['state'] == 'present':
        missing, unwanted = kc.compare(current, ensure, remove)
    else:
        missing, unwanted = [], owned.still_running(result['removed'], current, admin_keeps)
    result.update(cmdline=current, cmdline_unparseable=unparseable, missing=missing, unwanted=unwanted,
                  reboot_required=bool(missing or unwanted))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
