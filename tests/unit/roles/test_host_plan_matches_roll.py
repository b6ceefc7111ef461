# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan, then roll: for each host state, the plan host_prep.yml's plan play makes (module host_plan) is what its
rolling play then does. The real playbook runs on this machine (localhost, every file of the roles, the initramfs
images and sysfs under a temporary root; update-initramfs a stand-in on PATH that only touches the images), and a
last play prints the plan and the rolling play's report (the fact playbooks/summary.yml reads).

This machine's /proc/cmdline is the running kernel's: the kernel_args role is given an argument it already has
(quiet, IOMMU off), so no state needs a reboot for it. A state that needs a reboot (the pool changed from
passthrough to container) runs with reboot_allowed false: the reboot role then stops the host naming its reasons,
before any reboot."""

from __future__ import annotations

import base64
import json
import os
import sys

from play_runner import run_play
from sysfs_tree import SysfsTree

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
GPU = '0000:41:00.0'
IMAGE = 'initrd.img-6.1.0-18-amd64'
# the plan's things, by the entry of the rolling play's report they show as (tasks: Record what host preparation
# did); the reboot-only things (kernel_cmdline, nouveau_loaded, vfio_bind reboot) show as "rebooted"
REPORTED = {'kernel_args': 'kernel arguments', 'kernel_args_record': 'ownership record',
            'vf_restore': 'vGPU VF boot-time restore taken back', 'nouveau_blacklist': 'nouveau blacklist',
            'vfio_config': 'vfio-pci config', 'vfio_absent': 'vfio-pci config taken back',
            'initramfs': 'initramfs rebuilt', 'vfio_bind': 'bound to vfio-pci'}

SHOW = """
- name: Show the plan and the report
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Show them
      ansible.builtin.debug:
        msg: "PLAN={{ __host_prep_plan | default({}) | to_json | b64encode }}
          REPORT={{ __gpuvirt_host_prep_report | default({}) | to_json | b64encode }}"
"""


class Host(object):
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.root = tmp_path / 'root'
        for rel in ('etc/default/grub.d', 'etc/modprobe.d', 'etc/modules-load.d', 'etc/initramfs-tools',
                    'etc/dracut.conf.d', 'boot'):
            (self.root / rel).mkdir(parents=True, exist_ok=True)
        self.tree = SysfsTree(tmp_path / 'sys')
        self.tree.device(GPU, '0302', '10de', '2236', driver='vfio-pci', group=7)
        self.image_time(1000)
        # the rebuild stand-in: what update-initramfs does to the images' times, and a log of its calls
        bindir = tmp_path / 'bin'
        bindir.mkdir()
        tool = bindir / 'update-initramfs'
        tool.write_text('#!/bin/sh\necho "$@" >> %s\ntouch %s\n' % (tmp_path / 'rebuilds.log', self.root / 'boot' / IMAGE))
        tool.chmod(0o755)
        self.bindir = str(bindir)

    def p(self, rel):
        return str(self.root / rel)

    def image_time(self, when):
        image = self.root / 'boot' / IMAGE
        image.write_text('image')
        os.utime(image, (when, when))

    def files(self):
        return {str(p.relative_to(self.root)): p.read_text() for p in sorted(self.root.rglob('*'))
                if p.is_file() and 'boot' not in p.parts}

    def inventory(self, pool_group):
        host = {
            'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'ansible_become': False,
            'kernel_args_iommu': False, 'kernel_args_extra': ['quiet'], 'kernel_args_backend': 'grub_dropin',
            'kernel_args_update_bootloader': False,
            'kernel_args_dropin_path': self.p('etc/default/grub.d/90-gpuvirt-kernel-args.cfg'),
            # the ownership record, and the VF restore's files, under the temporary root
            'kernel_args_record_path': self.p('var/lib/gpuvirt-provision/host-state.json'),
            'kernel_args_grub_default_path': self.p('etc/default/grub'),
            'vgpu_vf_root_dir': str(self.root), 'vgpu_vf_systemd': False,
            'nouveau_modprobe_path': self.p('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'),
            'nouveau_initramfs_dir': self.p('boot'), 'nouveau_initramfs_tool': 'update-initramfs',
            'nouveau_initramfs_watch': [self.p('etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'),
                                        self.p('etc/modprobe.d/gpuvirt-vfio.conf'),
                                        self.p('etc/initramfs-tools/modules'),
                                        self.p('etc/dracut.conf.d/gpuvirt-vfio.conf')],
            'vfio_modprobe_path': self.p('etc/modprobe.d/gpuvirt-vfio.conf'),
            'vfio_modules_load_path': self.p('etc/modules-load.d/gpuvirt-vfio.conf'),
            'vfio_dracut_path': self.p('etc/dracut.conf.d/gpuvirt-vfio.conf'),
            'vfio_initramfs_modules_path': self.p('etc/initramfs-tools/modules'),
            'vfio_sysfs_root': self.tree.root, 'vfio_runtime_bind': False, 'vfio_gpus': False, 'vfio_bdfs': [GPU],
            # no cluster here: no drain, no VMIs to read; never a reboot of this machine
            'reboot_drain': False, 'reboot_allowed': False,
        }
        inv = {'all': {'children': {pool_group: {'hosts': {'localhost': host}}}}}
        path = self.tmp / 'inventory.json'
        path.write_text(json.dumps(inv))
        return str(path)

    def run(self, monkeypatch, pool_group='gpu_vm_passthrough', args=()):
        monkeypatch.setenv('PATH', self.bindir + os.pathsep + os.environ['PATH'])
        # one line per result, so the plan line of a run that stops before the last play is not folded
        monkeypatch.setenv('ANSIBLE_CALLBACK_RESULT_FORMAT', 'json')
        play = ('- ansible.builtin.import_playbook: %s\n' % os.path.join(ROOT, 'playbooks', 'host_prep.yml')) + SHOW
        rc, out = run_play(self.tmp, play, args=['-i', self.inventory(pool_group), '-e', 'gpuvirt_platform=kubernetes']
                           + list(args))
        if rc != 0 and 'PLAN=' not in out:
            # the run stopped at a failed host (reboot_allowed false): the plan as the plan play printed it
            return rc, out, _shown_plan(out), {}
        return rc, out, _decoded(out, 'PLAN'), _decoded(out, 'REPORT')


def _shown_plan(out):
    """The plan from the plan play's line 'host_prep plan for HOST: what action [path]; ... (reboot needed)'."""
    line = json.loads('"%s"' % out.split('"msg": "host_prep plan for localhost: ', 1)[1].split('"\n', 1)[0])
    reboot = line.endswith(' (reboot needed)')
    items = [] if line.startswith('nothing to change') else line.replace(' (reboot needed)', '').split('; ')
    changes = [dict(zip(('what', 'action', 'path'), (item.split(' ') + [None])[:3])) for item in items]
    return {'changes': changes, 'reboot_needed': reboot}


def _decoded(out, key):
    assert key + '=' in out, out
    token = out.split(key + '=', 1)[1].split()[0].strip('"\'')
    return json.loads(base64.b64decode(token))


def _planned(plan):
    """The report entries the plan's changes show as, and whether it needs a reboot."""
    return sorted(set(REPORTED[c['what']] for c in plan['changes'] if c['action'] != 'reboot')), plan['reboot_needed']


def _reported(report):
    return sorted(set(entry.split(':')[0] if entry.startswith('vfio-pci config taken back') or
                      entry.startswith('bound to') else
                      'kernel arguments' if entry.startswith('kernel arguments') else entry
                      for entry in report['changed'])), report['rebooted']


def _recap_changed(out):
    line = next(ln for ln in out.splitlines() if ln.startswith('localhost') and 'changed=' in ln)
    return int(line.split('changed=')[1].split()[0])


def test_each_plan_is_what_the_rolling_play_does(tmp_path, monkeypatch):
    host = Host(tmp_path)

    # fresh: every file to write, the initramfs then stale
    rc, out, plan, report = host.run(monkeypatch)
    assert rc == 0, out
    assert _planned(plan) == (['initramfs rebuilt', 'kernel arguments', 'nouveau blacklist', 'ownership record',
                               'vfio-pci config'], False), plan
    assert _reported(report) == _planned(plan), out
    assert (tmp_path / 'rebuilds.log').read_text() == '-u -k all\n'
    converged = host.files()

    # converged: an empty plan, the host left alone (the rolling play does not run), the summary says why
    rc, out, plan, report = host.run(monkeypatch)
    assert rc == 0, out
    assert plan['changes'] == [] and not plan['reboot_needed'], plan
    assert report['left_alone'].startswith('plan empty: '), report
    assert 'PLAY [Prepare GPU hosts (kernel args, nouveau, vfio, one reboot)]' in out
    assert 'gpuvirt.provision.kernel_args : Ensure the kernel arguments' not in out, out
    assert host.files() == converged
    # ... and rolled anyway (host_prep_plan false), in check mode the roles change nothing
    rc, out, _plan, report = host.run(monkeypatch, args=['--check', '-e', 'host_prep_plan=false'])
    assert rc == 0, out
    assert 'gpuvirt.provision.kernel_args : Ensure the kernel arguments' in out, out
    assert _recap_changed(out) == 0, out
    assert report['changed'] == [] and not report['rebooted'], report

    # stale initramfs: a file it carries is newer than the image
    os.utime(host.p('etc/modprobe.d/gpuvirt-vfio.conf'), None)
    rc, out, plan, report = host.run(monkeypatch)
    assert rc == 0, out
    assert _planned(plan) == (['initramfs rebuilt'], False), plan
    assert _reported(report) == _planned(plan), out

    # wrong driver: the GPU on nouveau binds to vfio-pci at the next boot only, the plan's one reboot (refused
    # here: reboot_allowed false stops the host naming the reason)
    gpu_dir = os.path.join(host.tree.root, 'devices', 'pci0000:00', GPU)
    os.unlink(os.path.join(gpu_dir, 'driver'))
    os.makedirs(host.tree.path('bus', 'pci', 'drivers', 'nouveau'))
    os.symlink('../../../bus/pci/drivers/nouveau', os.path.join(gpu_dir, 'driver'))
    rc, out, plan, report = host.run(monkeypatch)
    assert rc != 0, out
    assert [(c['what'], c['action']) for c in plan['changes']] == [('vfio_bind', 'reboot')] and plan['reboot_needed']
    assert 'needs a reboot but reboot_allowed is false: vfio: %s on nouveau' % GPU in ' '.join(out.split()), out
    os.unlink(os.path.join(gpu_dir, 'driver'))
    os.symlink('../../../bus/pci/drivers/vfio-pci', os.path.join(gpu_dir, 'driver'))

    # pool changed, passthrough -> container: the kernel arguments the record lists go with our drop-in (the
    # running kernel still has quiet: a reboot), the record is rewritten, the vfio files and a VF restore unit of
    # ours go, the images are rebuilt, one reboot (refused here: reboot_allowed false stops the host naming the
    # reasons, the plan's reboot)
    record = json.loads((host.root / 'var/lib/gpuvirt-provision/host-state.json').read_text())
    assert record['kernel_args'] == {'grub_dropin': ['quiet']}, record
    unit = host.root / 'etc/systemd/system/gpuvirt-vgpu-vf.service'
    unit.parent.mkdir(parents=True)
    unit.write_text('# Managed by gpuvirt.provision (vgpu_vf role).\n[Unit]\n')
    rc, out, plan, report = host.run(monkeypatch, pool_group='gpu_container')
    assert rc != 0, out
    assert _planned(plan) == (['initramfs rebuilt', 'kernel arguments', 'ownership record',
                               'vGPU VF boot-time restore taken back', 'vfio-pci config taken back'], True), plan
    removed = sorted(c['path'] for c in plan['changes'] if c['what'] == 'vfio_absent')
    assert removed == sorted([host.p('etc/modprobe.d/gpuvirt-vfio.conf'), host.p('etc/modules-load.d/gpuvirt-vfio.conf'),
                              host.p('etc/initramfs-tools/modules')]), plan
    flat = ' '.join(out.split())
    assert 'needs a reboot but reboot_allowed is false: ' in flat and 'vfio: removed' in flat, out
    assert 'kernel_args: took back quiet' in flat, out
    left = host.files()
    assert 'etc/modprobe.d/gpuvirt-vfio.conf' not in left and 'etc/modules-load.d/gpuvirt-vfio.conf' not in left
    assert 'etc/default/grub.d/90-gpuvirt-kernel-args.cfg' not in left and not unit.exists(), left
    assert not json.loads(left['var/lib/gpuvirt-provision/host-state.json']).get('kernel_args'), left
    assert (tmp_path / 'rebuilds.log').read_text().count('\n') == 3
