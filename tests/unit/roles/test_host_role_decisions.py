# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host roles' decisions, through their real tasks (ansible-playbook on localhost, every file under a temporary
root; several decisions per run, so the whole file takes a few playbook runs): whether the nouveau role asks for a
reboot (nouveau_reboot_if_loaded), the reboot reasons the kernel_args role leaves for the running kernel, the reboot
role's choices (nothing pending, not allowed, already rebooted in this run: never twice), and host_prep's default
max_fail_percentage with serial > 1 (one failed host in a batch stops the rolling run).

Only the roles' public variables are set; what the host shows comes from a tree in a temporary directory: the
kernel command line through the role's kernel_args_proc_cmdline, /sys/module through a
private mount namespace (unshare, util-linux). Nothing reboots: the reboot role's reboot task refuses a local
connection, and these runs are in check mode besides."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan, modprobe


ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def shown(out, key):
    """The value a play printed as ``KEY=<base64 of its JSON>`` in a debug message (base64: the YAML callback
    quotes and folds a message with a colon or a long line)."""
    line = next(ln for ln in out.splitlines() if key + '=' in ln)
    return json.loads(base64.b64decode(line.split(key + '=', 1)[1].split()[0].strip('"\'')))


def play_run(tmp_path, play, extra_vars=None, args=(), wrap=(), inventory=None):
    path = tmp_path / 'play.yml'
    path.write_text(play)
    extra = dict(extra_vars or {}, ansible_python_interpreter=sys.executable)
    cmd = list(wrap) + ['ansible-playbook', '-i', inventory or 'localhost,', str(path), '-e', json.dumps(extra)]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, check=False, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


# --- reboot role -------------------------------------------------------------------------------------------------

# The host the reboot role reboots, stood in for: no machine may reboot here, and ansible.builtin.reboot refuses the
# local connection before anything else (so with it nothing after the reboot task ever ran). This connection is the
# local one under another name, so the reboot action goes on to its check-mode answer (rebooted, nothing run: the
# runs below hold the reboot task in check mode) and the tasks after it run. It runs nothing but Ansible's own
# module runs in its temporary directory, and logs which modules those are; anything else (the boot id the reboot
# action reads first when it really reboots, a shutdown) is refused.
NO_REBOOT_CONNECTION = """
from __future__ import annotations

import os
import re

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection import local

DOCUMENTATION = local.DOCUMENTATION.replace('name: local', 'name: gpuvirt_no_reboot')

# the shell commands of a module run (ansible/plugins/action/__init__.py, the shell plugin's mkdtemp, chmod, rm)
ALLOWED = re.compile(r"/bin/sh -c '(echo ~[a-z_]* |[(] umask 77 && mkdir |chmod u[+]rwx |rm -f -r |[^ ']*python[0-9.]* )")
REFUSED = re.compile(r'boot_id|shutdown|reboot|systemctl|poweroff|halt|init [06]')
MODULE = re.compile(r"/bin/sh -c '[^ ']*python[0-9.]* [^ ']*/AnsiballZ_([a-z0-9_]+)[.]py && sleep 0'")


class Connection(local.Connection):
    transport = 'gpuvirt_no_reboot'

    def exec_command(self, cmd, in_data=None, sudoable=True):
        if not ALLOWED.match(cmd) or REFUSED.search(cmd):
            raise AnsibleConnectionFailure('gpuvirt_no_reboot runs no such command: %r' % cmd)
        module = MODULE.fullmatch(cmd)
        if module:
            with open(os.environ['GPUVIRT_MODULE_LOG'], 'a', encoding='utf-8') as log:
                log.write(module.group(1) + '\\n')
        return super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
"""

REBOOT_PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    reboot_drain: false
  tasks:
    - name: Nothing pending
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: []
    - name: Nothing pending, and not allowed to reboot
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: []
        reboot_allowed: "false"
    - name: Pending, but every reason handled by this run's reboot already
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: ['kernel_args: a']
        reboot_handled: ['kernel_args: a']
        reboot_done: true
    - name: Show the first three decisions
      ansible.builtin.debug:
        msg: "QUIET={{ {'done': reboot_done | default(false), 'handled': reboot_handled | default([])} | to_json | b64encode }}"
    - name: Pending and not allowed
      block:
        - name: Run the role
          ansible.builtin.include_role:
            name: gpuvirt.provision.reboot
          vars:
            reboot_pending_reasons: ['kernel_args: a', 'nouveau: b']
            reboot_allowed: "false"
      rescue:
        - name: Show why it stopped
          ansible.builtin.debug:
            msg: "NOT_ALLOWED={{ ansible_failed_result.msg | to_json | b64encode }}"
    - name: Pending after this run's reboot (never twice)
      block:
        - name: Run the role
          ansible.builtin.include_role:
            name: gpuvirt.provision.reboot
          vars:
            reboot_pending_reasons: ['kernel_args: a', 'nouveau: b']
            reboot_handled: ['kernel_args: a']
            reboot_done: true
      rescue:
        - name: Show why it stopped
          ansible.builtin.debug:
            msg: "TWICE={{ {'task': ansible_failed_task.name, 'msg': ansible_failed_result.msg} | to_json | b64encode }}"
    - name: Pending and allowed, first time (check mode; the running kernel lacks what the reboot is for)
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: ['kernel_args: a']
        reboot_verify_args: [gpuvirt_never_on_a_command_line=1]
    - name: Show what the role recorded
      ansible.builtin.debug:
        msg: "REBOOT={{ {'done': reboot_done, 'handled': reboot_handled} | to_json | b64encode }}"

# TLS verification off for the drain: warned once per run (run_once), and not at all when the cluster role resolved
# the cluster settings in this run (it warned then)
- name: Two hosts, verification off
  hosts: gpu-a,gpu-b
  gather_facts: false
  vars:
    reboot_drain: false
    gpuvirt_validate_certs: false
  tasks:
    - name: Nothing pending
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: []

- name: The cluster settings resolved in this run
  hosts: localhost
  gather_facts: false
  tasks:
    - name: As the cluster role leaves them
      ansible.builtin.set_fact:
        gpuvirt_cluster: {}

- name: Verification off, the cluster role already warned
  hosts: gpu-a
  gather_facts: false
  vars:
    reboot_drain: false
    gpuvirt_validate_certs: false
  tasks:
    - name: Nothing pending
      ansible.builtin.include_role:
        name: gpuvirt.provision.reboot
      vars:
        reboot_pending_reasons: []
"""

# A run that is no check run, the reboot itself held in check mode (a block's check_mode reaches every task of the
# role; ansible_check_mode stays false): what the role does after a reboot, checking the new running kernel
REBOOTED_PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    reboot_drain: false
  tasks:
    - name: The reboot held in check mode
      check_mode: true
      block:
        - name: The boot loader change was not picked up
          block:
            - name: Run the role
              ansible.builtin.include_role:
                name: gpuvirt.provision.reboot
              vars:
                reboot_pending_reasons: ['kernel_args: a']
                reboot_verify_args: [intel_iommu=on, iommu=pt]
                reboot_verify_remove: [nomodeset]
          rescue:
            - name: Show why it stopped
              ansible.builtin.debug:
                msg: "NOT_PICKED_UP={{ {'task': ansible_failed_task.name, 'msg': ansible_failed_result.msg} | to_json | b64encode }}"
        - name: Show that a failed verification records no reboot
          ansible.builtin.debug:
            msg: "AFTER_FAILED={{ reboot_done | default('unset') | to_json | b64encode }}"
        - name: Rebooted into the arguments
          ansible.builtin.include_role:
            name: gpuvirt.provision.reboot
          vars:
            reboot_pending_reasons: ['kernel_args: a']
            reboot_verify_args: [iommu=pt]
            reboot_verify_remove: [nouveau.modeset=0]
        - name: Show what the role recorded
          ansible.builtin.debug:
            msg: "REBOOTED={{ {'done': reboot_done, 'handled': reboot_handled} | to_json | b64encode }}"
        - name: The same reasons again, as the next role's include sees them
          ansible.builtin.include_role:
            name: gpuvirt.provision.reboot
          vars:
            reboot_pending_reasons: ['kernel_args: a']
        - name: A new reason after the reboot
          block:
            - name: Run the role
              ansible.builtin.include_role:
                name: gpuvirt.provision.reboot
              vars:
                reboot_pending_reasons: ['kernel_args: a', 'nouveau: b']
          rescue:
            - name: Show why it stopped
              ansible.builtin.debug:
                msg: "SECOND={{ {'task': ansible_failed_task.name, 'msg': ansible_failed_result.msg} | to_json | b64encode }}"
"""


def reboot_run(tmp_path, play, args=(), cmdline=None):
    """``play`` through the stand-in host connection above (hosts localhost, gpu-a, gpu-b); with ``cmdline``, in a
    mount namespace of its own whose /proc/cmdline reads that text. Returns rc, the output and the modules run."""
    plugins = tmp_path / 'connection_plugins'
    plugins.mkdir(exist_ok=True)
    (plugins / 'gpuvirt_no_reboot.py').write_text(NO_REBOOT_CONNECTION)
    log = tmp_path / 'modules.log'
    log.write_text('')
    wrap = []
    if cmdline is not None:
        unshare = shutil.which('unshare')
        if not unshare:
            pytest.fail('needs unshare (util-linux, in every Debian install)')
        (tmp_path / 'cmdline').write_text(cmdline + '\n')
        wrap = [unshare, '--mount'] + ([] if os.geteuid() == 0 else ['--map-root-user']) + [
            'sh', '-c', 'mount --bind "$0" /proc/cmdline && exec "$@"', str(tmp_path / 'cmdline')]
        probe = subprocess.run(wrap + ['cat', '/proc/cmdline'], capture_output=True, text=True, check=False)
        if probe.returncode != 0 or probe.stdout != cmdline + '\n':
            reason = 'no private mount namespace here (unshare --mount: %s)' % probe.stderr.strip()
            if os.environ.get('GPUVIRT_REQUIRE_TOOLS') == '1':
                pytest.fail(reason + '; GPUVIRT_REQUIRE_TOOLS=1: run the unit tests as root or where user '
                            'namespaces are allowed')
            pytest.skip(reason)
    os.environ['GPUVIRT_MODULE_LOG'] = str(log)
    try:
        rc, out = play_run(tmp_path, play, {'ansible_connection': 'gpuvirt_no_reboot'}, args=args, wrap=wrap,
                           inventory='localhost,gpu-a,gpu-b,')
    finally:
        del os.environ['GPUVIRT_MODULE_LOG']
    return rc, out, log.read_text().split()


def test_reboot_decisions(tmp_path):
    rc, out, modules = reboot_run(tmp_path, REBOOT_PLAY, args=['--check'])
    assert rc == 0, out
    text = ' '.join(out.split())
    # nothing pending (allowed to reboot or not), or only what this run's reboot handled: no reboot, nothing recorded
    assert text.count('localhost: nothing pending, no reboot.') == 3, out
    assert shown(out, 'QUIET') == {'done': False, 'handled': []}, out
    # pending but reboot_allowed false (as a survey passes it): stopped, naming the reasons and the variable
    assert shown(out, 'NOT_ALLOWED') == (
        'localhost needs a reboot but reboot_allowed is false: kernel_args: a; nouveau: b. Reboot it yourself (drain '
        'it first when it is a Kubernetes node) or run again with reboot_allowed=true.'), out
    # a reason left after this run's reboot stops the host instead of rebooting it a second time
    twice = shown(out, 'TWICE')
    assert twice == {'task': 'Fail instead of rebooting a second time in this run', 'msg': (
        'localhost was already rebooted in this run and still has pending changes: nouveau: b. Check the boot loader '
        'configuration and the serial console.')}, twice
    # pending, allowed, not yet rebooted: the reboot (a preview in check mode), recorded as done for its reasons;
    # the running kernel is not checked in a preview (it is still the old one): no module ran on the host
    assert 'TASK [gpuvirt.provision.reboot : Reboot the host for kernel_args: a]' in out, out
    assert shown(out, 'REBOOT') == {'done': True, 'handled': ['kernel_args: a']}, out
    assert modules == [], (modules, out)
    # verification off: the warning once in the two-host play, none where it is on or where the cluster role ran
    warning = ("WARNING: gpuvirt_validate_certs is false: the API server's certificate is not verified while the node "
               "is cordoned, drained and uncordoned.")
    # (the YAML callback prints the message single-quoted: its apostrophe doubled)
    plays = text.replace("''", "'").split('PLAY [')
    assert [play.split(']')[0] for play in plays if warning in play] == ['Two hosts, verification off'], out
    assert text.replace("''", "'").count(warning) == 1, out
    assert 'gpu-a: nothing pending, no reboot.' in plays[2] and 'gpu-b: nothing pending, no reboot.' in plays[2], out
    # every check of the role is quiet when it passes
    assert 'All assertions passed' not in out, out


def test_reboot_checks_the_running_kernel_after_it(tmp_path):
    rc, out, modules = reboot_run(tmp_path, REBOOTED_PLAY, cmdline='BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 '
                                  'root=UUID=0b1c ro quiet iommu=pt nomodeset')
    assert rc == 0, out
    # the new kernel lacks an argument and keeps one to remove: the host stops, naming both, and no reboot is recorded
    assert shown(out, 'NOT_PICKED_UP') == {'task': 'Fail when the new kernel lacks the arguments', 'msg': (
        'localhost rebooted but its /proc/cmdline lacks intel_iommu=on and still has nomodeset: the boot loader did '
        'not pick up the change (check the GRUB default entry and /boot/grub/grub.cfg).')}, out
    assert shown(out, 'AFTER_FAILED') == 'unset', out
    # the new kernel has what it was rebooted for: the reboot is recorded with its reasons, which the next include
    # does not reboot for again; a new reason stops the host instead of a second reboot
    assert shown(out, 'REBOOTED') == {'done': True, 'handled': ['kernel_args: a']}, out
    assert ' '.join(out.split()).count('localhost: nothing pending, no reboot.') == 1, out
    assert shown(out, 'SECOND') == {'task': 'Fail instead of rebooting a second time in this run', 'msg': (
        'localhost was already rebooted in this run and still has pending changes: nouveau: b. Check the boot loader '
        'configuration and the serial console.')}, out
    # one look at the running kernel per reboot, and nothing else run on the host (no drain: reboot_drain false)
    assert modules == ['kernel_cmdline', 'kernel_cmdline'], (modules, out)
    assert 'All assertions passed' not in out, out


# --- nouveau role ------------------------------------------------------------------------------------------------

NOUVEAU_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    nouveau_initramfs_rebuild: false
    ansible_facts: {os_family: Debian}
  tasks:
    - name: Defaults
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
    - name: Look at the blacklist
      ansible.builtin.stat:
        path: "{{ nouveau_modprobe_path }}"
      register: blacklist_file
    - name: Read the blacklist
      ansible.builtin.slurp:
        src: "{{ nouveau_modprobe_path }}"
      register: blacklist_text
    - name: Show the reasons and whether the blacklist is there
      ansible.builtin.debug:
        msg: >-
          DEFAULT={{ nouveau_reboot_reasons | to_json | b64encode }}
          FILE={{ blacklist_file.stat.exists | to_json | b64encode }}
          TEXT={{ blacklist_text.content | b64decode | to_json | b64encode }}
    - name: The initramfs rebuild allowed, a host without images
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
      vars:
        nouveau_initramfs_rebuild: true
        nouveau_initramfs_dir: "{{ no_images }}"
    - name: The user said not to reboot for a loaded nouveau
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
      vars:
        nouveau_reboot_if_loaded: false
    - name: Show the reasons
      ansible.builtin.debug:
        msg: "NO_REBOOT={{ nouveau_reboot_reasons | to_json | b64encode }}"
    - name: The same from a survey (a string)
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
      vars:
        nouveau_reboot_if_loaded: "false"
    - name: Show the reasons
      ansible.builtin.debug:
        msg: "NO_REBOOT_TEXT={{ nouveau_reboot_reasons | to_json | b64encode }}"
    - name: No blacklist at all
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
      vars:
        nouveau_blacklist: false
    - name: Show the reasons
      ansible.builtin.debug:
        msg: "NO_BLACKLIST={{ nouveau_reboot_reasons | to_json | b64encode }} TOOK_BACK={{ nouveau_absent_result.removed | to_json | b64encode }}"
    - name: Take back again, the blacklist already gone
      ansible.builtin.include_role:
        name: gpuvirt.provision.nouveau
      vars:
        nouveau_state: absent
    - name: Show what the second take-back wrote and removed
      ansible.builtin.debug:
        msg: >-
          AGAIN={{ {'written': nouveau_blacklist_result is not skipped, 'removed': nouveau_absent_result.removed,
          'reasons': nouveau_reboot_reasons} | to_json | b64encode }}
"""


def nouveau_run(tmp_path, loaded):
    """The nouveau role's play with /sys/module replaced, in a mount namespace of its own, by a directory that
    holds nouveau or not (the role reads /sys/module/nouveau)."""
    unshare = shutil.which('unshare')
    if not unshare:
        pytest.fail('needs unshare (util-linux, in every Debian install)')
    modules = tmp_path / 'module'
    (modules / ('nouveau' if loaded else 'vfio')).mkdir(parents=True)
    root = tmp_path / 'root'
    (root / 'etc' / 'modprobe.d').mkdir(parents=True)
    # root: a mount namespace; anyone else: a user namespace too (unprivileged, where the kernel allows it). An
    # empty /boot as well: no initramfs image, so no run of this test (nor a mutant of the role's conditions, under
    # make mutation) can rebuild the machine's own initramfs
    boot = tmp_path / 'boot'
    boot.mkdir()
    wrap = [unshare, '--mount'] + ([] if os.geteuid() == 0 else ['--map-root-user']) + [
        'sh', '-c', 'mount --bind "$0" /sys/module && { [ ! -d /boot ] || mount --bind "$1" /boot; } && shift && '
        'exec "$@"', str(modules), str(boot)]
    probe = subprocess.run(wrap + ['test', '-d', '/sys/module/' + ('nouveau' if loaded else 'vfio')],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        reason = 'no private mount namespace here (unshare --mount: %s)' % probe.stderr.strip()
        # where the run installed its tools (CI, make test: tests/integration/tool_gate.py) this is no reason to skip
        if os.environ.get('GPUVIRT_REQUIRE_TOOLS') == '1':
            pytest.fail(reason + '; GPUVIRT_REQUIRE_TOOLS=1: run the unit tests as root or where user namespaces '
                        'are allowed')
        pytest.skip(reason)
    path = root / 'etc' / 'modprobe.d' / 'gpuvirt-blacklist-nouveau.conf'
    no_images = tmp_path / 'no-images'
    no_images.mkdir()
    rc, out = play_run(tmp_path, NOUVEAU_PLAY, {'nouveau_modprobe_path': str(path), 'no_images': str(no_images)},
                       wrap=wrap)
    return rc, out, path


def test_nouveau_reboot_reason(tmp_path):
    rc, out, path = nouveau_run(tmp_path, loaded=True)
    assert rc == 0, out
    # the default run leaves the blacklist in place (the last runs below take it out), with the bytes host_plan
    # predicts for it (a header the plan does not expect would show the host as changed on every plan)
    assert shown(out, 'FILE') is True, out
    assert shown(out, 'TEXT') == modprobe.blacklist_text('nouveau', host_plan.NOUVEAU_HEADER), out
    # the initramfs rebuild is looked at only where nouveau_initramfs_rebuild allows it (this test's runs set it
    # false but one, whose image directory is empty): the other runs never look for an image
    text = ' '.join(out.split())
    assert text.count('No initramfs image under ') == 1, out
    assert 'No initramfs image under %s on localhost: nothing to rebuild.' % (tmp_path / 'no-images') in text, out
    # loaded and blacklisted: a reboot is pending, unless the user said not to (as a boolean or a survey string)
    assert shown(out, 'DEFAULT') == ['nouveau: module loaded, blacklisted from the next boot'], out
    assert shown(out, 'NO_REBOOT') == [] and shown(out, 'NO_REBOOT_TEXT') == [], out
    assert 'nouveau_reboot_if_loaded is false: no reboot requested' in ' '.join(out.split()), out
    # no blacklist: nothing keeps nouveau from the next boot, so no reboot is pending for it; the file is gone
    assert shown(out, 'NO_BLACKLIST') == [] and not path.exists(), out
    assert shown(out, 'TOOK_BACK') == [str(path)], out
    # taking back where there is nothing to take back writes nothing first and removes nothing
    assert shown(out, 'AGAIN') == {'written': False, 'removed': [], 'reasons': []}, out


def test_nouveau_not_loaded_asks_for_no_reboot(tmp_path):
    rc, out, path = nouveau_run(tmp_path, loaded=False)
    assert rc == 0, out
    assert shown(out, 'DEFAULT') == [] and 'is loaded on' not in out, out


# --- kernel_args role --------------------------------------------------------------------------------------------

KERNEL_ARGS_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    kernel_args_iommu_vendor: intel
    # backend auto: a Debian host's is the GRUB drop-in
    ansible_facts: {os_family: Debian}
    kernel_args_update_bootloader: false
  tasks:
    - name: Running kernel without the arguments
      vars:
        kernel_args_proc_cmdline: "{{ cmdlines }}/bare"
      block:
        - name: Run the role
          ansible.builtin.include_role:
            name: gpuvirt.provision.kernel_args
        - name: Show the reasons
          ansible.builtin.debug:
            msg: "BARE={{ kernel_args_reboot_reasons | to_json | b64encode }}"
    - name: Running kernel with them already
      vars:
        kernel_args_proc_cmdline: "{{ cmdlines }}/done"
      block:
        - name: Run the role
          ansible.builtin.include_role:
            name: gpuvirt.provision.kernel_args
        - name: Show the reasons
          ansible.builtin.debug:
            msg: "DONE={{ kernel_args_reboot_reasons | to_json | b64encode }}"
    - name: Running kernel with them and with one to remove
      vars:
        kernel_args_proc_cmdline: "{{ cmdlines }}/unwanted"
      block:
        - name: Run the role
          ansible.builtin.include_role:
            name: gpuvirt.provision.kernel_args
          vars:
            kernel_args_remove: [nomodeset]
        - name: Show the reasons
          ansible.builtin.debug:
            msg: "UNWANTED={{ kernel_args_reboot_reasons | to_json | b64encode }}"
    - name: A file that is not a command line (lines of a shadow file), a pattern matching them
      vars:
        kernel_args_proc_cmdline: "{{ cmdlines }}/shadow"
      block:
        - name: Run the role
          ansible.builtin.include_role:
            name: gpuvirt.provision.kernel_args
          vars:
            kernel_args_remove: ['*:*', nomodeset]
        - name: Show the reasons
          ansible.builtin.debug:
            msg: "SHADOW={{ kernel_args_reboot_reasons | to_json | b64encode }}"
"""


def test_kernel_args_reboot_reasons(tmp_path):
    cmdlines = tmp_path / 'cmdline'
    cmdlines.mkdir()
    base = 'BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=0b1c ro quiet'
    (cmdlines / 'bare').write_text(base + '\n')
    (cmdlines / 'done').write_text(base + ' intel_iommu=on iommu=pt\n')
    (cmdlines / 'unwanted').write_text(base + ' intel_iommu=on nomodeset iommu=pt\n')
    (cmdlines / 'shadow').write_text('root:$6$s4lt$Zm9vYmFy:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n'
                                     + base + ' intel_iommu=on nomodeset iommu=pt\n')
    dropin = tmp_path / 'etc' / 'default' / 'grub.d' / '90-gpuvirt-kernel-args.cfg'
    dropin.parent.mkdir(parents=True)
    # the ownership record in the temporary tree too (its path must be a gpuvirt-provision directory's *.json)
    record = tmp_path / 'var' / 'lib' / 'gpuvirt-provision' / 'host-state.json'
    rc, out = play_run(tmp_path, KERNEL_ARGS_PLAY, {'cmdlines': str(cmdlines), 'kernel_args_dropin_path': str(dropin),
                                                    'kernel_args_record_path': str(record)})
    assert rc == 0, out
    # the boot loader is configured but the running kernel lacks the arguments: a reboot is pending, naming them
    assert shown(out, 'BARE') == ['kernel_args: running kernel lacks intel_iommu=on iommu=pt, still has -'], out
    assert shown(out, 'DONE') == [], out
    assert shown(out, 'UNWANTED') == ['kernel_args: running kernel lacks -, still has nomodeset'], out
    # only tokens of the kernel argument grammar reach a reason (and so the reboot role's message); the rest counted
    assert shown(out, 'SHADOW') == ['kernel_args: running kernel lacks -, still has nomodeset; 2 unparseable tokens '
                                    'not shown'], out
    assert '$6$' not in out and 'Zm9vYmFy' not in out, out
    assert 'intel_iommu=on iommu=pt' in dropin.read_text(), out


# --- host_prep: the rolling run's failure budget -----------------------------------------------------------------

def host_prep_run(tmp_path, *args):
    """playbooks/host_prep.yml over four stand-in hosts (local connection), two at a time: gpu-1 has a pool no pool
    table names and stops at the pool check; the others are on a MachineConfig platform, where host preparation
    changes nothing and says so ("nothing to do on ...")."""
    hosts = dict((name, {'gpuvirt_platform': 'openshift'}) for name in ('gpu-1', 'gpu-2', 'gpu-3', 'gpu-4'))
    hosts['gpu-1']['gpuvirt_pool'] = 'no-such-pool'
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
        'children': {'gpu_vm_passthrough': {'hosts': hosts}}}}))
    env = dict(os.environ, ANSIBLE_GATHER_SUBSET='!all,!min,distribution')
    cmd = ['ansible-playbook', '-i', str(inventory), os.path.join(ROOT, 'playbooks', 'host_prep.yml'),
           '-e', 'host_prep_serial=2'] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=600)
    return proc.returncode, ' '.join((proc.stdout + proc.stderr).split())


def test_host_prep_stops_after_a_batch_with_a_failed_host_by_default(tmp_path):
    rc, out = host_prep_run(tmp_path)
    assert rc != 0 and 'has pool "no-such-pool"' in out, out
    # max_fail_percentage 0 (the default): one failed host of the first batch (gpu-1, gpu-2) ends the run at once;
    # no other host gets as far as its own decision, and the second batch (gpu-3, gpu-4) never starts
    assert 'nothing to do on gpu-' not in out, out


def test_host_prep_goes_on_within_the_failure_budget(tmp_path):
    # 1 failed host of a batch of 2 is 50 %: within a budget of 50 the run goes on (Ansible stops above it)
    rc, out = host_prep_run(tmp_path, '-e', 'host_prep_max_fail_percentage=50')
    assert rc != 0 and 'has pool "no-such-pool"' in out, out
    assert all('nothing to do on gpu-%d' % n in out for n in (2, 3, 4)), out
