# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_plan on temporary /etc, /boot, /proc/cmdline and sysfs trees: one test per checker (it plans the change the
role would make, and nothing once the host is converged), the conservative cases (a link, a mode, a file the
editor refuses), and the input checks (a bad path or name stops the plan before anything is read)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan as hp
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import modprobe
from sysfs_tree import SysfsTree
# imported when the file is collected, not inside a test (a test before it in the same process may have
# installed Ansible's collection loader, through which a first import of a collection submodule fails)
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp

ARGS = ['intel_iommu=on', 'iommu=pt']
IDS = ['10de:2236']
GPU = '0000:41:00.0'


class Host(object):
    """A host under ``root``: the files the roles write, its /boot, /proc/cmdline and sysfs."""

    def __init__(self, root, os_family='Debian'):
        self.root = str(root)
        self.tree = SysfsTree(os.path.join(self.root, 'sys'))
        self.os_family = os_family
        for d in ('etc/default/grub.d', 'etc/modprobe.d', 'etc/modules-load.d', 'etc/dracut.conf.d',
                  'etc/initramfs-tools', 'boot', 'proc', 'var/lib/gpuvirt-provision'):
            os.makedirs(self.p(d), exist_ok=True)
        self.cmdline('quiet')

    def p(self, rel):
        return os.path.join(self.root, rel)

    @property
    def record(self):
        return self.p('var/lib/gpuvirt-provision/host-state.json')

    def write_record(self, backend, args, files=()):
        """The ownership record as the kernel_cmdline module writes it (host_record's own writer)."""
        record = host_record.with_files(host_record.with_args(host_record.empty(), backend, args), 'kernel_args',
                                        list(files))
        host_record.write(self.record, record)

    def write(self, rel, text, mode=0o644, mtime=None):
        with open(self.p(rel), 'w') as f:
            f.write(text)
        os.chmod(self.p(rel), mode)
        if mtime is not None:
            os.utime(self.p(rel), (mtime, mtime))

    def cmdline(self, text):
        self.write('proc/cmdline', text + '\n')

    def gpu(self, driver=None, group=7):
        self.tree.device(GPU, '0302', '10de', '2236', driver=driver, group=group)

    def inputs(self, vfio_state='present', **over):
        inp = {
            'proc_cmdline': self.p('proc/cmdline'), 'sysfs_root': self.tree.root, 'boot_dir': self.p('boot'),
            'os_family': self.os_family,
            'kernel_args': {'enabled': True, 'args': list(ARGS), 'remove': ['nomodeset'], 'backend': 'grub_dropin',
                            'dropin_path': self.p('etc/default/grub.d/90-gpuvirt-kernel-args.cfg'),
                            'grub_default_path': self.p('etc/default/grub'), 'record_path': self.record},
            'nouveau': {'enabled': True, 'blacklist': True, 'initramfs_rebuild': True, 'reboot_if_loaded': True,
                        'modprobe_path': self.p('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'),
                        'initramfs_watch': [self.p('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'),
                                            self.p('etc/modprobe.d/gpuvirt-vfio.conf'),
                                            self.p('etc/initramfs-tools/modules'),
                                            self.p('etc/dracut.conf.d/gpuvirt-vfio.conf')]},
            'vfio': {'state': vfio_state, 'devices': [GPU] if os.path.isdir(self.tree.path('bus/pci/devices', GPU))
                     else [], 'persistent_ids': [], 'softdep_drivers': ['nouveau', 'nvidia'],
                     'modules': ['vfio', 'vfio_iommu_type1', 'vfio_pci'], 'persistent': True, 'runtime_bind': True,
                     'initramfs_rebuild': False,
                     'modprobe_path': self.p('etc/modprobe.d/gpuvirt-vfio.conf'),
                     'modules_load_path': self.p('etc/modules-load.d/gpuvirt-vfio.conf'),
                     'dracut_path': self.p('etc/dracut.conf.d/gpuvirt-vfio.conf'),
                     'initramfs_modules_path': self.p('etc/initramfs-tools/modules')},
            'vgpu_vf': {'state': 'leave', 'root_dir': self.root},
        }
        for key, value in over.items():
            if isinstance(value, dict):
                inp[key].update(value)
            else:
                inp[key] = value
        return inp

    def converge(self, image_time=2000000000):
        """Every file as the roles leave it, the kernel booted with the args, GPU on vfio-pci, images fresh."""
        self.write('etc/default/grub.d/90-gpuvirt-kernel-args.cfg', kc.render_grub_dropin(ARGS, ['nomodeset']))
        self.write_record('grub_dropin', ARGS, [self.p('etc/default/grub.d/90-gpuvirt-kernel-args.cfg')])
        self.write('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf',
                   modprobe.blacklist_text('nouveau', hp.NOUVEAU_HEADER), mtime=image_time - 10)
        files = modprobe.vfio_files(IDS, ['nouveau', 'nvidia'], ['vfio', 'vfio_iommu_type1', 'vfio_pci'])
        self.write('etc/modprobe.d/gpuvirt-vfio.conf', files['modprobe'], mtime=image_time - 10)
        self.write('etc/modules-load.d/gpuvirt-vfio.conf', files['modules_load'])
        block = 'raid1\n%s\n%s\n%s\n' % (hp.BLOCK_BEGIN, files['initramfs_tools'], hp.BLOCK_END)
        self.write('etc/initramfs-tools/modules', block, mtime=image_time - 10)
        self.write('etc/dracut.conf.d/gpuvirt-vfio.conf', files['dracut'], mtime=image_time - 10)
        self.cmdline('quiet intel_iommu=on iommu=pt')
        self.write('boot/initrd.img-6.1.0-18-amd64', 'image', mtime=image_time)


def _whats(result):
    return sorted((c['what'], c['action']) for c in result['changes'])


def test_a_fresh_host_plans_every_role_and_one_reboot(tmp_path):
    host = Host(tmp_path)
    host.gpu(driver='nouveau')
    host.write('boot/initrd.img-6.1.0-18-amd64', 'image', mtime=1000)
    result = hp.plan(host.inputs())
    assert _whats(result) == sorted([
        ('kernel_args', 'add'), ('kernel_args_record', 'add'), ('kernel_cmdline', 'reboot'), ('vfio_config', 'add'),
        ('vfio_config', 'add'), ('vfio_config', 'add'), ('vfio_bind', 'reboot'), ('nouveau_blacklist', 'add'),
        ('initramfs', 'rebuild')])
    assert result['reboot_needed'] is True
    cmdline = next(c for c in result['changes'] if c['what'] == 'kernel_cmdline')
    assert cmdline['args'] == ARGS and 'lacks intel_iommu=on iommu=pt' in cmdline['reason']


def test_a_converged_host_has_an_empty_plan(tmp_path):
    host = Host(tmp_path)
    host.gpu(driver='vfio-pci')
    host.converge()
    result = hp.plan(host.inputs())
    assert result == {'changes': [], 'reboot_needed': False, 'takebacks': []}
    assert hp.summary(result) == 'nothing to change'


# --- kernel_args: the boot loader (kernel_cmdline's decision) and the running kernel -----------------------------

def test_kernel_args_a_drop_in_that_differs_is_rewritten_without_a_reboot(tmp_path):
    host = Host(tmp_path)
    host.converge()
    host.write('etc/default/grub.d/90-gpuvirt-kernel-args.cfg', kc.render_grub_dropin(['intel_iommu=on'], []))
    assert _whats(hp.plan(host.inputs(vfio_state='none'))) == [('kernel_args', 'add')]
    assert hp.plan(host.inputs(vfio_state='none'))['reboot_needed'] is False


def test_kernel_args_a_running_kernel_with_an_arg_to_remove_needs_a_reboot(tmp_path):
    host = Host(tmp_path)
    host.converge()
    host.cmdline('quiet intel_iommu=on iommu=pt nomodeset')
    result = hp.plan(host.inputs(vfio_state='none'))
    assert [(c['what'], c['args'], c['reboot']) for c in result['changes']] == [
        ('kernel_cmdline', ['nomodeset'], True)]


def test_kernel_args_a_file_that_is_not_a_command_line_is_never_shown_in_a_reason(tmp_path):
    # a hostile review pointed proc_cmdline at /etc/shadow with remove *:*: its lines became reboot reasons
    host = Host(tmp_path)
    host.converge()
    host.write('proc/cmdline', 'root:$6$s4lt$Zm9vYmFy:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n'
               'quiet intel_iommu=on iommu=pt nomodeset\n')
    result = hp.plan(host.inputs(vfio_state='none', kernel_args={'remove': ['*:*', 'nomodeset']}))
    (change,) = [c for c in result['changes'] if c['what'] == 'kernel_cmdline']
    assert change['args'] == ['nomodeset'], change
    assert change['reason'] == 'running kernel lacks -, still has nomodeset; 2 unparseable tokens not shown', change
    assert '$6$' not in repr(result) and 'daemon' not in repr(result)


@pytest.mark.parametrize('target', ['/dev/zero', 'fifo', 'big'])
def test_kernel_args_a_device_a_fifo_or_a_huge_file_is_not_read_to_its_end(tmp_path, target):
    # each named cmdline (the path's rule, below): a link to a device, a FIFO, a file over the limit
    host = Host(tmp_path)
    host.converge()
    name = target.strip('/').replace('/', '-')
    os.mkdir(host.p(name))
    path = host.p(os.path.join(name, 'cmdline'))
    if target == 'fifo':
        os.mkfifo(path)
    elif target == 'big':
        host.write(os.path.join(name, 'cmdline'), 'quiet ' * (kc.PROC_CMDLINE_LIMIT // 6 + 1))
    else:
        os.symlink(target, path)
    target = path
    result = hp.plan(host.inputs(vfio_state='none', proc_cmdline=target))
    assert [(c['what'], c['reason']) for c in result['changes']] == [
        ('kernel_cmdline', 'cannot read %s as a kernel command line' % target)]


@pytest.mark.parametrize('path', ['/etc/shadow', '/proc/self/environ', '/srv/copy/cmdline.txt', '/proc/cmdline/'])
def test_proc_cmdline_must_be_a_file_named_cmdline(tmp_path, path):
    # kernel_args_proc_cmdline is an input of one host: any other file's tokens would become the plan's reasons
    host = Host(tmp_path)
    host.converge()
    with pytest.raises(hp.PlanError, match=r"proc_cmdline \(kernel_args_proc_cmdline\) is .*expected the kernel's "
                                           r"command line file, named cmdline|proc_cmdline is"):
        hp.plan(host.inputs(vfio_state='none', proc_cmdline=path))


def test_running_args_keep_the_grammar_and_count_the_rest():
    args, bad = kc.running_args('BOOT_IMAGE=(hd0,gpt2)/vmlinuz ro dyndbg="file x.c +p" a$b "x y" ;reboot `id`')
    assert args == ['BOOT_IMAGE=(hd0,gpt2)/vmlinuz', 'ro', 'dyndbg="file x.c +p"'] and bad == 4


def test_kernel_args_a_grub_file_the_editor_refuses_rolls_the_host(tmp_path):
    # the role would fail naming the line; the plan cannot say "nothing to do" there
    host = Host(tmp_path)
    host.converge()
    host.write('etc/default/grub', 'GRUB_CMDLINE_LINUX="$(cat /etc/x)"\n')
    result = hp.plan(host.inputs(vfio_state='none', kernel_args={'backend': 'grub_default'}))
    assert [c['what'] for c in result['changes']] == ['kernel_args'], result
    assert 'computed' in result['changes'][0]['reason']


def test_kernel_args_grubby_decides_from_grubby_info(tmp_path):
    host = Host(tmp_path)
    host.converge()
    info = 'index=0\nkernel="/boot/vmlinuz-5.14"\nargs="ro quiet intel_iommu=on"\n'
    inp = dict(host.inputs(vfio_state='none', kernel_args={'backend': 'grubby'}), grubby_info=info)
    change = hp.plan(inp)['changes'][0]
    assert (change['what'], change['action']) == ('kernel_args', 'add')
    info_ok = 'index=0\nkernel="/boot/vmlinuz-5.14"\nargs="ro quiet intel_iommu=on iommu=pt"\n'
    # converged on grubby: the record lists what grubby was given (no drop-in file)
    host.write_record('grubby', ARGS)
    assert hp.plan(dict(inp, grubby_info=info_ok))['changes'] == []


def test_kernel_args_record_is_planned_where_the_module_would_write_it(tmp_path):
    host = Host(tmp_path)
    host.converge()
    # a host prepared before the record existed: the module writes it (no argument is ours: they were there)
    os.unlink(host.record)
    result = hp.plan(host.inputs(vfio_state='none'))
    assert _whats(result) == [('kernel_args_record', 'add')] and not result['reboot_needed']
    assert result['changes'][0]['path'] == host.record
    # a record listing other arguments is rewritten (the drop-in holds only ours)
    host.write_record('grub_dropin', ['iommu=pt'], [host.p('etc/default/grub.d/90-gpuvirt-kernel-args.cfg')])
    change = hp.plan(host.inputs(vfio_state='none'))['changes'][0]
    assert (change['what'], change['action'], change['args']) == ('kernel_args_record', 'update', ARGS)
    # a malformed record is rewritten too (the module warns and rewrites its kernel_args part)
    with open(host.record, 'w') as f:
        f.write('{"version": 1, "kernel_args": {"grub_dropin": ["init=/bin/sh"]}}')
    change = hp.plan(host.inputs(vfio_state='none'))['changes'][0]
    assert (change['what'], change['action']) == ('kernel_args_record', 'update')


def test_kernel_args_absent_takes_back_our_drop_in_and_reboots(tmp_path):
    host = Host(tmp_path)
    host.converge()
    dropin = host.p('etc/default/grub.d/90-gpuvirt-kernel-args.cfg')
    result = hp.plan(host.inputs(vfio_state='none', kernel_args={'state': 'absent'}))
    ka = [c for c in result['changes'] if c['what'].startswith('kernel_')]
    assert [(c['what'], c['action'], c['path']) for c in ka] == [
        ('kernel_args', 'remove', dropin), ('kernel_args_record', 'update', host.record),
        ('kernel_cmdline', 'reboot', None)]
    assert ka[0]['args'] == ARGS and ka[2]['args'] == ARGS and result['reboot_needed']
    # taken back and rebooted: nothing left to do for the kernel arguments
    os.unlink(dropin)
    os.unlink(host.record)
    host.cmdline('quiet')
    result = hp.plan(host.inputs(vfio_state='none', kernel_args={'state': 'absent'}))
    assert [c for c in result['changes'] if c['what'].startswith('kernel_')] == []


def test_kernel_args_absent_keeps_a_drop_in_that_is_not_ours(tmp_path):
    host = Host(tmp_path)
    host.converge()
    host.write('etc/default/grub.d/90-gpuvirt-kernel-args.cfg', 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX iommu=pt"\n')
    result = hp.plan(host.inputs(vfio_state='none', kernel_args={'state': 'absent'}))
    assert ('kernel_args', 'remove') not in _whats(result)
    assert ('kernel_cmdline', 'reboot') not in _whats(result)


def test_kernel_args_absent_on_grub_default_takes_back_only_the_recorded_args(tmp_path):
    host = Host(tmp_path, os_family='RedHat')
    host.write('etc/default/grub', 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="rhgb quiet intel_iommu=on iommu=pt"\n')
    host.cmdline('rhgb quiet intel_iommu=on iommu=pt')
    # intel_iommu=on was the administrator's before the collection ran: only iommu=pt is recorded
    host.write_record('grub_default', ['iommu=pt'])
    inp = host.inputs(vfio_state='none', kernel_args={'state': 'absent', 'backend': 'grub_default'})
    changes = [c for c in hp.plan(inp)['changes'] if c['what'].startswith('kernel_')]
    assert [(c['what'], c['action'], c['args']) for c in changes] == [
        ('kernel_args', 'remove', ['iommu=pt']), ('kernel_args_record', 'update', []),
        ('kernel_cmdline', 'reboot', ['iommu=pt'])]
    # a record that is not usable takes nothing back (the module says why and keeps everything)
    with open(host.record, 'w') as f:
        f.write('not json')
    changes = [c for c in hp.plan(inp)['changes'] if c['what'].startswith('kernel_')]
    assert changes == []


def test_kernel_args_absent_on_grubby_keeps_a_bare_flag_whose_name_an_entry_has_with_a_value(tmp_path):
    # nosmt (bare) was ours; the administrator has since added nosmt=force. grubby --remove-args=nosmt would remove
    # the first argument named nosmt, whatever its value (rhboot/grubby grubby.c updateActualImage): it stays,
    # recorded, and only iommu=pt is taken back
    host = Host(tmp_path, os_family='RedHat')
    host.cmdline('ro nosmt=force nosmt iommu=pt')
    host.write_record('grubby', ['nosmt', 'iommu=pt'])
    info = 'index=0\nkernel="/boot/vmlinuz-5.14"\nargs="ro nosmt=force nosmt iommu=pt"\n'
    inp = dict(host.inputs(vfio_state='none', kernel_args={'state': 'absent', 'backend': 'grubby'}), grubby_info=info)
    changes = [c for c in hp.plan(inp)['changes'] if c['what'].startswith('kernel_')]
    assert [(c['what'], c['action'], c['args']) for c in changes] == [
        ('kernel_args', 'remove', ['iommu=pt']), ('kernel_args_record', 'update', ['nosmt']),
        ('kernel_cmdline', 'reboot', ['iommu=pt'])], changes


# --- nouveau --------------------------------------------------------------------------------------------------------

def test_nouveau_blacklist_with_another_mode_is_rewritten(tmp_path):
    host = Host(tmp_path)
    host.converge()
    os.chmod(host.p('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'), 0o600)
    result = hp.plan(host.inputs(vfio_state='none'))
    # the copy task only sets the mode: the file's time, and so the initramfs, stay as they are
    assert [(c['what'], c['action']) for c in result['changes']] == [('nouveau_blacklist', 'add')]
    assert '600' in result['changes'][0]['reason']


def test_nouveau_blacklist_a_link_at_the_path_is_rewritten(tmp_path):
    host = Host(tmp_path)
    host.converge()
    path = host.p('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf')
    os.rename(path, path + '.real')
    os.symlink(path + '.real', path)
    assert ('nouveau_blacklist', 'add') in _whats(hp.plan(host.inputs(vfio_state='none')))


def test_nouveau_blacklist_off_removes_the_file(tmp_path):
    host = Host(tmp_path)
    host.converge()
    result = hp.plan(host.inputs(vfio_state='none', nouveau={'blacklist': False}))
    assert ('nouveau_blacklist', 'remove') in _whats(result)


def test_nouveau_absent_takes_back_only_our_blacklist_and_rebuilds_without_a_reboot(tmp_path):
    host = Host(tmp_path)
    host.converge()
    os.makedirs(host.tree.path('module', 'nouveau'))
    path = host.p('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf')
    result = hp.plan(host.inputs(vfio_state='none', nouveau={'state': 'absent'}))
    assert [(c['what'], c['action'], c['path']) for c in result['changes']] == [
        ('nouveau_blacklist', 'remove', path), ('initramfs', 'rebuild', None)]
    # nothing on the running host changes: no reboot (nouveau loaded or not)
    assert not result['reboot_needed']
    # the administrator's file at our path stays
    host.write('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf', 'blacklist nouveau\n', mtime=1000)
    assert hp.plan(host.inputs(vfio_state='none', nouveau={'state': 'absent'}))['changes'] == []
    # taken back, the rebuild not run yet: the directory's time says the images are stale
    os.unlink(path)
    os.utime(host.p('boot/initrd.img-6.1.0-18-amd64'), (1000, 1000))
    result = hp.plan(host.inputs(vfio_state='none', nouveau={'state': 'absent'}))
    assert _whats(result) == [('initramfs', 'rebuild')]


def test_nouveau_leave_plans_nothing(tmp_path):
    host = Host(tmp_path)
    host.write('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf', 'blacklist nouveau\n', mode=0o600)
    os.makedirs(host.tree.path('module', 'nouveau'))
    # leave: the rolling play does not run the role (the plan play passes enabled false)
    result = hp.plan(host.inputs(vfio_state='none', kernel_args={'enabled': False},
                                 nouveau={'enabled': False, 'state': 'present'}))
    assert result['changes'] == []


def test_nouveau_loaded_needs_a_reboot(tmp_path):
    host = Host(tmp_path)
    host.converge()
    os.makedirs(host.tree.path('module', 'nouveau'))
    result = hp.plan(host.inputs(vfio_state='none'))
    assert _whats(result) == [('nouveau_loaded', 'reboot')] and result['reboot_needed']
    # the role asks no reboot when told not to
    assert hp.plan(host.inputs(vfio_state='none', nouveau={'reboot_if_loaded': False}))['changes'] == []


# --- the vendor-VFIO VF restore ------------------------------------------------------------------------------------

def test_vf_restore_absent_removes_only_our_files(tmp_path):
    host = Host(tmp_path)
    host.converge()
    paths = vvp.install_paths(host.root)
    for key in ('unit', 'script', 'config'):
        os.makedirs(os.path.dirname(paths[key]), exist_ok=True)
    host.write(paths['unit'][len(host.root) + 1:], vvp.MARKER + ' (vgpu_vf role).\n[Unit]\n')
    host.write(paths['config'][len(host.root) + 1:], '{"managed_by": "gpuvirt.provision"}\n')
    # an administrator's script at our path, and nothing else, stays
    host.write(paths['script'][len(host.root) + 1:], '#!/bin/sh\necho mine\n')
    inp = host.inputs(vfio_state='none', vgpu_vf={'state': 'absent', 'root_dir': host.root})
    result = hp.plan(inp)
    assert [(c['what'], c['action'], c['path']) for c in result['changes']] == [
        ('vf_restore', 'remove', paths['unit']), ('vf_restore', 'remove', paths['config'])]
    assert not result['reboot_needed']
    # a link at our path is not ours (the role's stat does not follow it)
    os.unlink(paths['unit'])
    os.symlink(paths['config'], paths['unit'])
    assert [c['path'] for c in hp.plan(inp)['changes']] == [paths['config']]
    # leave (within the vendor-VFIO pool the vgpu_vf phase owns it): nothing
    inp['vgpu_vf']['state'] = 'leave'
    assert hp.plan(inp)['changes'] == []


# --- vfio -----------------------------------------------------------------------------------------------------------

def test_vfio_a_gpu_on_the_wrong_driver_is_bound_now(tmp_path):
    host = Host(tmp_path)
    host.converge()
    host.gpu(driver='snd_hda_intel')
    result = hp.plan(host.inputs())
    # the softdeps grow by the device's driver: the modprobe file is rewritten, then the image is stale
    assert ('vfio_bind', 'bind') in _whats(result)
    assert not result['reboot_needed']


def test_vfio_a_gpu_on_nouveau_binds_at_boot(tmp_path):
    host = Host(tmp_path)
    host.converge()
    host.gpu(driver='nouveau')
    result = hp.plan(host.inputs())
    assert ('vfio_bind', 'reboot') in _whats(result) and result['reboot_needed']
    assert ('vfio_bind', 'bind') not in _whats(result)


def test_vfio_iommu_off_binds_at_boot(tmp_path):
    host = Host(tmp_path)
    host.converge()
    host.tree.device(GPU, '0302', '10de', '2236', driver='vfio-pci')
    assert _whats(hp.plan(host.inputs())) == [('vfio_bind', 'reboot')]


def test_vfio_a_dracut_host_compares_the_dracut_file(tmp_path):
    host = Host(tmp_path, os_family='RedHat')
    host.gpu(driver='vfio-pci')
    host.converge()
    assert hp.plan(host.inputs())['changes'] == []
    host.write('etc/dracut.conf.d/gpuvirt-vfio.conf', 'add_drivers+=" vfio "\n', mtime=1)
    assert [c['path'] for c in hp.plan(host.inputs())['changes']] == [host.p('etc/dracut.conf.d/gpuvirt-vfio.conf'),
                                                                      None]


def test_vfio_an_edited_initramfs_tools_block_is_rewritten(tmp_path):
    host = Host(tmp_path)
    host.gpu(driver='vfio-pci')
    host.converge()
    host.write('etc/initramfs-tools/modules', 'raid1\n%s\nvfio\n%s\n' % (hp.BLOCK_BEGIN, hp.BLOCK_END), mtime=1)
    assert ('vfio_config', 'add') in _whats(hp.plan(host.inputs()))


def test_vfio_absent_takes_back_our_files_rebuilds_and_reboots(tmp_path):
    # the pool changed from passthrough to container: the role's files go, the images are rebuilt, one reboot
    host = Host(tmp_path)
    host.gpu(driver='vfio-pci')
    host.converge()
    result = hp.plan(host.inputs(vfio_state='absent', vfio={'initramfs_rebuild': True},
                                 kernel_args={'enabled': False}, nouveau={'enabled': False}))
    assert _whats(result) == [('initramfs', 'rebuild'), ('vfio_absent', 'remove'), ('vfio_absent', 'remove'),
                              ('vfio_absent', 'remove'), ('vfio_absent', 'remove')]
    assert result['reboot_needed']
    # a file without our header is someone else's: kept, nothing planned for it
    for rel in ('etc/modprobe.d/gpuvirt-vfio.conf', 'etc/modules-load.d/gpuvirt-vfio.conf',
                'etc/dracut.conf.d/gpuvirt-vfio.conf'):
        os.unlink(host.p(rel))
    host.write('etc/modprobe.d/gpuvirt-vfio.conf', 'options vfio-pci ids=10de:2236\n')
    host.write('etc/initramfs-tools/modules', 'raid1\n')
    assert hp.plan(host.inputs(vfio_state='absent', kernel_args={'enabled': False},
                               nouveau={'enabled': False}))['changes'] == []


# --- initramfs ------------------------------------------------------------------------------------------------------

def test_initramfs_older_than_a_file_it_carries_is_rebuilt(tmp_path):
    host = Host(tmp_path)
    host.gpu(driver='vfio-pci')
    host.converge(image_time=1000)
    os.utime(host.p('etc/modprobe.d/gpuvirt-vfio.conf'), (5000, 5000))
    result = hp.plan(host.inputs())
    assert _whats(result) == [('initramfs', 'rebuild')] and not result['reboot_needed']


def test_initramfs_kdump_and_rescue_images_do_not_count(tmp_path):
    host = Host(tmp_path)
    host.gpu(driver='vfio-pci')
    host.converge()
    host.write('boot/initrd.img-6.1.0-18-amd64kdump', 'x', mtime=1)
    host.write('boot/initramfs-0-rescue-abc.img', 'x', mtime=1)
    assert hp.plan(host.inputs())['changes'] == []


def test_initramfs_no_image_nothing_to_rebuild(tmp_path):
    host = Host(tmp_path)
    host.gpu(driver='vfio-pci')
    host.converge()
    os.unlink(host.p('boot/initrd.img-6.1.0-18-amd64'))
    os.utime(host.p('etc/modprobe.d/gpuvirt-vfio.conf'), None)
    assert hp.plan(host.inputs())['changes'] == []


# --- inputs ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('key,value,named', [
    ('nouveau', {'modprobe_path': '/etc/profile.d/x.sh'}, 'nouveau_modprobe_path'),
    ('vfio', {'modprobe_path': '/etc/modprobe.d/../../root/.bashrc'}, 'modprobe_path'),
    ('vfio', {'devices': ['41:00.0']}, 'vfio_selected'),
    ('vfio', {'softdep_drivers': ['nouveau pre: x\ninstall nvidia /bin/sh']}, 'vfio_softdep_drivers[0]'),
    ('kernel_args', {'args': ['init=/bin/sh']}, 'kernel_args'),
    ('kernel_args', {'dropin_path': '/etc/profile.d/x.cfg'}, 'dropin_path'),
    ('nouveau', {'initramfs_watch': ['/etc/shadow']}, 'nouveau_initramfs_watch[0]'),
    ('nouveau', {'blacklist': 'false'}, 'nouveau_blacklist'),
    ('boot_dir', '/boot/../etc', 'boot_dir'),
    ('proc_cmdline', 'proc/cmdline', 'proc_cmdline'),
    ('kernel_args', {'record_path': '/etc/shadow'}, 'kernel_args_record_path'),
    ('kernel_args', {'state': 'leave'}, 'kernel_args_state'),
    ('nouveau', {'state': 'gone'}, 'nouveau_state'),
    ('vgpu_vf', {'state': 'absent', 'root_dir': '/srv/../etc'}, 'vgpu_vf_root_dir'),
    ('vgpu_vf', {'state': 'off'}, 'vf_unit'),
])
def test_a_bad_input_stops_the_plan_naming_the_variable(tmp_path, key, value, named):
    host = Host(tmp_path)
    host.gpu(driver='vfio-pci')
    with pytest.raises(hp.PlanError) as err:
        hp.plan(host.inputs(**{key: value}))
    assert named in str(err.value)


def test_every_checker_is_run_in_the_roles_order():
    # a new thing is one checker in this list; the initramfs one looks at the others' changes, so it is last
    assert hp.CHECKERS[-1] is hp.check_initramfs
    assert hp.CHECKERS[0] is hp.check_kernel_args


def test_the_defaults_are_the_roles_defaults():
    # what the playbook leaves out (default(omit)) must be what the role would use
    import yaml
    roles = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles')

    def defaults(role):
        with open(os.path.join(roles, role, 'defaults', 'main.yml')) as f:
            return yaml.safe_load(f)
    nouveau, vfio, ka = defaults('nouveau'), defaults('vfio'), defaults('kernel_args')
    assert hp.DEFAULTS['kernel_args']['dropin_path'] == ka['kernel_args_dropin_path']
    assert hp.DEFAULTS['kernel_args']['backend'] == ka['kernel_args_backend']
    assert hp.DEFAULTS['kernel_args']['record_path'] == ka['kernel_args_record_path']
    assert hp.DEFAULTS['kernel_args']['grub_default_path'] == ka['kernel_args_grub_default_path']
    assert hp.DEFAULTS['vgpu_vf']['root_dir'] == defaults('vgpu_vf')['vgpu_vf_root_dir']
    assert hp.DEFAULTS['nouveau']['modprobe_path'] == nouveau['nouveau_modprobe_path']
    assert hp.DEFAULTS['nouveau']['initramfs_watch'] == [
        p.replace('{{ nouveau_modprobe_path }}', nouveau['nouveau_modprobe_path'])
        for p in nouveau['nouveau_initramfs_watch']]
    for key in ('softdep_drivers', 'modules', 'modprobe_path', 'modules_load_path', 'dracut_path',
                'initramfs_modules_path'):
        assert hp.DEFAULTS['vfio'][key] == vfio['vfio_' + key], key


def test_left_out_inputs_take_the_defaults():
    inp = hp.check_inputs({'nouveau': {'enabled': True}, 'vfio': {'state': 'absent'}})
    assert inp['nouveau']['modprobe_path'] == '/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'
    assert inp['vfio']['paths']['initramfs_modules_path'] == '/etc/initramfs-tools/modules'


def test_takebacks_name_only_the_removals_that_take_gpus_from_vms_once_each_in_plan_order():
    # what the rolling play's VM gate refuses while VMs run on the node: the vfio binding, the VF restore and the
    # IOMMU kernel arguments taken back; never an addition, a rebuild, a reboot or the nouveau blacklist
    planned = [hp.change('kernel_args', 'remove', 'the drop-in is ours', path='/etc/default/grub.d/90-g.cfg'),
               hp.change('kernel_args_record', 'update', 'record'),
               hp.change('vfio_absent', 'remove', 'ours', path='/etc/modprobe.d/gpuvirt-vfio.conf'),
               hp.change('vfio_absent', 'remove', 'ours', path='/etc/modprobe.d/gpuvirt-vfio.conf'),
               hp.change('initramfs', 'rebuild', 'stale'),
               hp.change('nouveau_blacklist', 'remove', 'ours', path='/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'),
               hp.change('vfio_config', 'add', 'missing', path='/etc/modprobe.d/gpuvirt-vfio.conf'),
               hp.change('kernel_cmdline', 'reboot', 'running kernel still has intel_iommu=on', reboot=True),
               hp.change('vf_restore', 'remove', 'the unit is ours', path='/etc/systemd/system/gpuvirt-vgpu-vf.service')]
    assert hp.takebacks(planned) == [
        'kernel_args remove /etc/default/grub.d/90-g.cfg (the drop-in is ours)',
        'vfio_absent remove /etc/modprobe.d/gpuvirt-vfio.conf (ours)',
        'vf_restore remove /etc/systemd/system/gpuvirt-vgpu-vf.service (the unit is ours)']
    assert hp.takebacks([c for c in planned if c['what'] not in hp.VM_TAKEBACKS]) == []
