# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host preparation plan of one host, read-only, pure Python (no Ansible imports).

playbooks/host_prep.yml plans every selected host at once (one module call each), then rolls (drain, change,
reboot) only the hosts whose plan is not empty. The plan is the list of changes the host roles (kernel_args,
nouveau, vfio, reboot) would make, each as ``{what, action, path, args, reboot, reason}``.

Each "thing" is one checker: a function ``checker(inputs, planned) -> [change]`` in ``CHECKERS``, run in order
(``planned`` holds the changes of the checkers before it: the initramfs checker looks at which of its inputs are
about to be written). Each checker decides with the function the module that acts decides with (kernel_cmdline's
``bootloader_decision`` and ``compare``, vfio_files_absent's ``plan``, vfio_bind's ``plan``, modprobe's writers),
so the plan and the run cannot drift apart. Adding a thing is adding one checker.

The plan is conservative: where a checker cannot tell (a file it cannot read, a symbolic link where the role
writes a file, an owner or mode the role would reset), it plans a change, so the host is rolled and the roles
decide. It must never say "nothing to do" where a role would change something.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import stat

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import cmdline_decision
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import cmdline_owned as owned
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_record
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import modprobe
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vfio_bind as vb
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vfio_files_absent as absent
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import READ_LIMIT, read_bytes
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

# The header the nouveau role writes above its blacklist (roles/nouveau/tasks/main.yml, a folded YAML string).
NOUVEAU_HEADER = ('Managed by gpuvirt.provision (nouveau role): the GPU goes to vfio-pci or the NVIDIA driver, '
                  'never nouveau.')
# blockinfile's markers as the vfio role spells them (vfio_files_absent takes the block back by them)
BLOCK_BEGIN, BLOCK_END = absent.BLOCK_BEGIN, absent.BLOCK_END
# The images the nouveau role rebuilds (roles/nouveau/tasks/initramfs.yml, its find task)
INITRAMFS_PATTERNS = ('initrd.img-*', 'initramfs-*.img')
INITRAMFS_EXCLUDES = ('*kdump*', '*rescue*')
# What the roles' copy tasks set on each file they write (owner root, group root, mode 0644)
FILE_MODE = 0o644
# kernel_cmdline's own default (kernel_args.grub_config overrides it): the plan never runs grub2-mkconfig, but the
# module checks the three paths together
GRUB_CONFIG = '/boot/grub2/grub.cfg'
# A file whose bytes are right but whose owner or mode is not: the role's copy task only sets them, so the file's
# time (what the initramfs rebuild compares) does not move
MODE_ONLY = 'owner or mode differs'


# The roles' defaults (roles/*/defaults/main.yml; a unit test holds them equal) for what the playbook leaves out: the
# vfio role's paths are read even where the role's own defaults are not loaded (a host whose pool binds nothing).
DEFAULTS = {
    'kernel_args': {'dropin_path': '/etc/default/grub.d/90-gpuvirt-kernel-args.cfg', 'backend': 'auto',
                    'grub_default_path': kc.GRUB_DEFAULT_PATH, 'record_path': host_record.DEFAULT_PATH,
                    'state': 'present'},
    'nouveau': {'modprobe_path': '/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf',
                'initramfs_watch': ['/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf', '/etc/modprobe.d/gpuvirt-vfio.conf',
                                    '/etc/initramfs-tools/modules', '/etc/dracut.conf.d/gpuvirt-vfio.conf']},
    'vfio': {'softdep_drivers': ['nouveau', 'nvidia', 'nvidiafb', 'snd_hda_intel'],
             'modules': ['vfio', 'vfio_iommu_type1', 'vfio_pci'],
             'modprobe_path': '/etc/modprobe.d/gpuvirt-vfio.conf',
             'modules_load_path': '/etc/modules-load.d/gpuvirt-vfio.conf',
             'dracut_path': '/etc/dracut.conf.d/gpuvirt-vfio.conf',
             'initramfs_modules_path': '/etc/initramfs-tools/modules'},
    'vgpu_vf': {'root_dir': '/', 'state': 'leave'},
}
# The first line of a blacklist the nouveau role takes back (roles/nouveau/tasks/absent.yml: a regular file of at most
# 4 KiB whose first line matches this, read as latin-1)
NOUVEAU_ABSENT_MAX = 4096
NOUVEAU_OURS = '# Managed by gpuvirt.provision (nouveau role)'


class PlanError(ValueError):
    """Bad input; the message names the variable and the fix. Raised before anything is read."""


def change(what, action, reason, path=None, args=None, reboot=False):
    return {'what': what, 'action': action, 'path': path, 'args': list(args or []), 'reboot': bool(reboot),
            'reason': reason}


def abs_path(value, name):
    """An absolute, normalised path (the module only reads and stats it)."""
    if not isinstance(value, str) or not value.startswith('/') or os.path.normpath(value) != value \
            or '\n' in value or '\0' in value or len(value) > 4096:
        raise PlanError('%s is %r: expected an absolute path without .., // or a newline, such as /boot' % (name, value))
    return value


def _bool(value, name):
    if not isinstance(value, bool):
        raise PlanError('%s is %r: expected a boolean (true or false)' % (name, value))
    return value


def _list(value, name):
    if not isinstance(value, (list, tuple)):
        raise PlanError('%s is %r: expected a list' % (name, value))
    return list(value)


def _checked(check, *args):
    try:
        return check(*args)
    except validators.ValidationError as e:
        raise PlanError(str(e))


# the shape of each file the initramfs carries, as the writers' validators check it
_WATCH_SHAPES = (('modprobe.d', None), ('dracut.conf.d', None), ('initramfs-tools', 'modules'),
                 ('modules-load.d', None))


def _watch_path(value, name):
    for directory, filename in _WATCH_SHAPES:
        try:
            return validators.config_path(value, name, directory, filename)
        except validators.ValidationError:
            continue
    raise PlanError('%s is %r: expected a file the initramfs carries (a *.conf file in a modprobe.d, dracut.conf.d '
                    'or modules-load.d directory, or initramfs-tools/modules), as an absolute path' % (name, value))


def check_inputs(inp):
    """Every input checked by shape (the roles' validators) before anything is read; returns the checked copy.
    The names in the messages are the role variables the playbook passes in."""
    out = dict(inp)
    out['proc_cmdline'] = abs_path(inp.get('proc_cmdline', '/proc/cmdline'), 'proc_cmdline')
    # the running kernel's command line is /proc/cmdline (or a copy named so): any other file's tokens would appear
    # in the plan's reasons
    if os.path.basename(out['proc_cmdline']) != 'cmdline':
        raise PlanError('proc_cmdline (kernel_args_proc_cmdline) is %r: expected the kernel\'s command line file, '
                        'named cmdline (/proc/cmdline, or a copy of it such as /srv/sosreport/proc/cmdline)'
                        % (out['proc_cmdline'][:200],))
    out['sysfs_root'] = abs_path(inp.get('sysfs_root', '/sys'), 'vfio_sysfs_root')
    out['boot_dir'] = abs_path(inp.get('boot_dir', '/boot'), 'boot_dir')
    ka = dict(DEFAULTS['kernel_args'], **(inp.get('kernel_args') or {}))
    ka.setdefault('enabled', False)
    if _bool(ka['enabled'], 'kernel_args.enabled'):
        if ka['state'] not in ('present', 'absent'):
            raise PlanError('kernel_args_state is %r: use present or absent' % (ka['state'],))
        ka['args'] = _list(ka.get('args', []), 'kernel_args_wanted')
        ka['remove'] = _list(ka.get('remove', []), 'kernel_args_remove')
        if ka['state'] == 'absent':
            # as the role calls the module: absent takes back what the record lists, nothing given
            ka['args'], ka['remove'] = [], []
        try:
            kc.validate_args(ka['args'])
            kc.validate_patterns(ka['remove'])
            kc.check_consistent(ka['args'], ka['remove'])
            kc.check_paths(ka['dropin_path'], ka['grub_default_path'], ka.get('grub_config') or GRUB_CONFIG)
            host_record.check_path(ka['record_path'], 'kernel_args_record_path')
        except (kc.CmdlineError, host_record.RecordError) as e:
            raise PlanError('kernel_args: %s' % e)
        if ka['backend'] not in ('auto', 'grub_dropin', 'grub_default', 'grubby', 'none'):
            raise PlanError('kernel_args_backend is %r: use auto, grub_dropin, grub_default, grubby or none'
                            % (ka['backend'],))
    out['kernel_args'] = ka
    nv = dict(DEFAULTS['nouveau'], **(inp.get('nouveau') or {}))
    nv.setdefault('enabled', False)
    nv.setdefault('state', 'present')
    if _bool(nv['enabled'], 'nouveau.enabled'):
        if nv['state'] not in ('present', 'absent'):
            raise PlanError('nouveau_state is %r: use present or absent' % (nv['state'],))
        for flag in ('blacklist', 'initramfs_rebuild', 'reboot_if_loaded'):
            nv[flag] = _bool(nv.get(flag, True), 'nouveau_' + flag)
        # the role's own flag (roles/nouveau/tasks/validate.yml): blacklist only in state present
        nv['blacklist'] = nv['blacklist'] and nv['state'] == 'present'
        nv['modprobe_path'] = _checked(validators.config_path, nv.get('modprobe_path'), 'nouveau_modprobe_path',
                                       'modprobe.d')
    nv['initramfs_watch'] = [_watch_path(p, 'nouveau_initramfs_watch[%d]' % i)
                             for i, p in enumerate(_list(nv.get('initramfs_watch', []), 'nouveau_initramfs_watch'))]
    out['nouveau'] = nv
    vf = dict(DEFAULTS['vfio'], **(inp.get('vfio') or {}))
    vf.setdefault('state', 'none')
    if vf['state'] not in ('present', 'absent', 'none'):
        raise PlanError('vfio_state is %r: use present or absent' % (vf['state'],))
    if vf['state'] != 'none':
        for flag in ('persistent', 'runtime_bind', 'initramfs_rebuild'):
            vf[flag] = _bool(vf.get(flag, True), 'vfio_' + flag)
        try:
            vf['paths'] = absent.checked_paths(dict((o, vf.get(o)) for o, _d, _f in absent.WHOLE_FILES
                                                    + (absent.BLOCK_FILE,)))
        except absent.AbsentError as e:
            raise PlanError('vfio: %s' % e)
    if vf['state'] == 'present':
        vf['devices'] = _list(vf.get('devices', []), 'vfio_selected')
        for bdf in vf['devices']:
            try:
                vb.validate_bdf(bdf)
            except vb.BindError as e:
                raise PlanError('vfio_selected: %s' % e)
        vf['persistent_ids'] = [_checked(validators.pci_id, v, 'vfio_persistent_ids[%d]' % i)
                                for i, v in enumerate(_list(vf.get('persistent_ids', []), 'vfio_persistent_ids'))]
        vf['softdep_drivers'] = [_checked(validators.kernel_module, v, 'vfio_softdep_drivers[%d]' % i) for i, v
                                 in enumerate(_list(vf.get('softdep_drivers', []), 'vfio_softdep_drivers'))]
        vf['modules'] = [_checked(validators.kernel_module, v, 'vfio_modules[%d]' % i)
                         for i, v in enumerate(_list(vf.get('modules', []), 'vfio_modules'))]
    out['vfio'] = vf
    vv = dict(DEFAULTS['vgpu_vf'], **(inp.get('vgpu_vf') or {}))
    if vv['state'] not in ('present', 'absent', 'leave'):
        raise PlanError('host_prep_state.vf_unit is %r: use present, absent or leave' % (vv['state'],))
    if vv['state'] == 'absent':
        try:
            vv['paths'] = vvp.install_paths(vv['root_dir'])
        except vvp.VfProfileError as e:
            raise PlanError('vgpu_vf_root_dir: %s' % e)
    out['vgpu_vf'] = vv
    out['os_family'] = inp.get('os_family') or ''
    return out


def _file_differs(path, text):
    """None when ``path`` is a regular file with exactly ``text``, owned by root:root with mode 0644 (what the
    roles' copy tasks leave); else why the role would write it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return 'missing'
    except OSError as e:
        return 'cannot be read (%s)' % e.strerror
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        return 'not a regular file'
    if stat.S_IMODE(st.st_mode) != FILE_MODE or st.st_uid != 0 or st.st_gid != 0:
        return '%s (%s:%s %o, the role sets root:root 0644)' % (
            MODE_ONLY, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))
    data = read_bytes(path)
    if data is None:
        return 'cannot be read'
    if data != text.encode('utf-8'):
        return 'content differs'
    return None


def _block_differs(path, block):
    """None when ``path`` holds exactly one marked block of the vfio role with ``block`` inside (what blockinfile
    leaves), root:root 0644; else why the role would edit it."""
    why = _file_differs(path, '')
    if why in ('missing', 'not a regular file') or (why or '').startswith((MODE_ONLY, 'cannot')):
        return why
    text, reason = absent.read_regular(path)
    if text is None:
        return reason or 'cannot be read'
    lines = text.splitlines()
    if lines.count(BLOCK_BEGIN) != 1 or lines.count(BLOCK_END) != 1:
        return 'no single marked block'
    begin, end = lines.index(BLOCK_BEGIN), lines.index(BLOCK_END)
    if lines[begin + 1:end] != block.split('\n') or not text.endswith('\n'):
        return 'block differs'
    return None


def _grubby_info(inp):
    """``grubby --info=ALL``'s output, read only when the decision needs it (a callable or the text itself)."""
    info = inp.get('grubby_info')
    return info if callable(info) else (lambda: info or '')


def check_kernel_args(inp, planned):
    """The boot loader configuration and the ownership record, both ways (kernel_cmdline's decision, one function:
    cmdline_decision.decide), and the running kernel's command line."""
    ka = inp['kernel_args']
    if not ka['enabled']:
        return []
    out = []
    state = ka['state']
    backend = ka['backend']
    if backend == 'auto':
        backend = kc.pick_backend(os.path.isdir, inp.get('which') or (lambda name: None))
    record, problems = (host_record.read(ka['record_path']) if backend != 'none'
                        else (host_record.empty(), {}))
    try:
        d = cmdline_decision.decide(state, backend, ka['args'], ka['remove'], record, problems, ka['dropin_path'],
                                    ka['grub_default_path'], read_bytes, inp.get('tmpdir'), _grubby_info(inp))
    except (kc.CmdlineError, OSError) as e:
        # the role fails here with the same message; the host is rolled so it does, naming the file
        d = None
        out.append(change('kernel_args', 'add' if state == 'present' else 'remove', str(e),
                          path=ka['grub_default_path'], args=ka['args']))
    if d is not None:
        config = d['config']
        if config['kind'] and state == 'present':
            out.append(change('kernel_args', 'add', 'the %s boot loader configuration lacks the wanted arguments or '
                              'still has one to remove' % backend, path=config['path'], args=ka['args']))
        elif config['kind'] == 'delete':
            out.append(change('kernel_args', 'remove', 'the pool needs no kernel arguments: the drop-in is ours',
                              path=config['path'], args=d['removed']))
        elif config['kind']:
            out.append(change('kernel_args', 'remove', 'the pool needs no kernel arguments: the record lists these',
                              path=config['path'], args=d['removed']))
        if d['record_changed']:
            exists = os.path.lexists(ka['record_path'])
            out.append(change('kernel_args_record', 'update' if exists else 'add',
                              'the ownership record %s' % ('; '.join(sorted(problems.values())) if problems
                                                           else 'changes with the arguments the collection owns'),
                              path=ka['record_path'], args=d['now'] or []))
    # the module's read (kernel_cmdline.read_running): bounded, a regular file only, and only the tokens of the
    # argument grammar kept, so a reason never shows anything else of the file (the rest is counted)
    running = kc.read_running(inp['proc_cmdline'], read_bytes)
    if running is None:
        out.append(change('kernel_cmdline', 'reboot', 'cannot read %s as a kernel command line' % inp['proc_cmdline'],
                          reboot=True))
        return out
    current, unparseable = running
    if state == 'present':
        missing, unwanted = kc.compare(current, ka['args'], ka['remove'])
        if missing or unwanted:
            out.append(change('kernel_cmdline', 'reboot', 'running kernel lacks %s, still has %s%s'
                              % (' '.join(missing) or '-', ' '.join(unwanted) or '-', kc.unparseable_note(unparseable)),
                              args=missing + unwanted, reboot=True))
    elif d is not None:
        # the module's rule: a removed argument the running kernel has, unless the administrator's lines keep it
        unwanted = owned.still_running(d['removed'], current, d['admin_keeps'])
        if unwanted:
            out.append(change('kernel_cmdline', 'reboot', 'running kernel still has %s, taken back%s'
                              % (' '.join(unwanted), kc.unparseable_note(unparseable)), args=unwanted, reboot=True))
    return out


def check_nouveau_blacklist(inp, planned):
    nv = inp['nouveau']
    if not nv['enabled']:
        return []
    path = nv['modprobe_path']
    if nv['blacklist']:
        why = _file_differs(path, modprobe.blacklist_text('nouveau', NOUVEAU_HEADER))
        return [change('nouveau_blacklist', 'add', 'blacklist file %s' % why, path=path)] if why else []
    why = _nouveau_ours(path)
    return [change('nouveau_blacklist', 'remove', why, path=path)] if why else []


def _nouveau_ours(path):
    """Why the nouveau role's absent path (roles/nouveau/tasks/absent.yml) would remove ``path``, or None where it
    keeps it: only a regular file of at most 4 KiB whose first line is the role's header. A file it cannot read is
    planned as a removal (unsure)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return 'cannot be looked at (%s)' % e.strerror
    if not stat.S_ISREG(st.st_mode) or st.st_size > NOUVEAU_ABSENT_MAX:
        return None
    data = read_bytes(path)
    if data is None:
        return 'cannot be read'
    if data.decode('latin-1').split('\n', maxsplit=1)[0].startswith(NOUVEAU_OURS):
        return 'nouveau_state is absent and the blacklist file carries the role\'s header'
    return None


def check_nouveau_loaded(inp, planned):
    nv = inp['nouveau']
    if nv['enabled'] and nv['blacklist'] and nv['reboot_if_loaded'] \
            and os.path.isdir(os.path.join(inp['sysfs_root'], 'module', 'nouveau')):
        return [change('nouveau_loaded', 'reboot', 'nouveau is loaded: the blacklist takes effect at the next boot',
                       reboot=True)]
    return []


def _vfio_devices(inp):
    """The selected devices' states, their IOMMU groups' other members added (as vfio_bind inspects them)."""
    root = inp['sysfs_root']
    bdfs = inp['vfio']['devices']
    if not bdfs:
        return []
    return [vb.state(root, bdf) for bdf in vb.expand_groups(root, bdfs)]


def vfio_wanted(devices, persistent_ids, softdep_drivers):
    """The ids and softdeps the vfio role writes (roles/vfio/tasks/present.yml): every inspected device but bridges
    (class 06xx), plus the persistent ids, unique and sorted; the softdep drivers plus each device's driver other
    than vfio-pci, first spelling first."""
    ids = sorted(set(['%s:%s' % (d['vendor_id'], d['device_id']) for d in devices
                      if not (d['class_id'] or '').startswith('06')] + list(persistent_ids)))
    softdeps = []
    for drv in list(softdep_drivers) + [d['driver'] for d in devices if d['driver'] not in (None, 'vfio-pci')]:
        if drv not in softdeps:
            softdeps.append(drv)
    return ids, softdeps


def check_vfio_present(inp, planned):
    """The vfio role's files (its writer, modprobe.vfio_files), the runtime binding (vfio_bind's plan) and the
    reboot it asks for."""
    vf = inp['vfio']
    if vf['state'] != 'present':
        return []
    out = []
    devices = _vfio_devices(inp)
    missing = [d['bdf'] for d in devices if not d['exists']]
    if missing:
        return [change('vfio_bind', 'bind', 'selected devices %s are not on this host' % ' '.join(missing),
                       args=missing)]
    ids, softdeps = vfio_wanted(devices, vf['persistent_ids'], vf['softdep_drivers'])
    if vf['persistent'] and ids:
        try:
            files = modprobe.vfio_files(ids, softdeps, vf['modules'])
        except modprobe.ModprobeError as e:
            return [change('vfio_config', 'add', 'the vfio role refuses its files: %s' % e)]
        paths = vf['paths']
        wanted = [(paths['modprobe_path'], _file_differs, files['modprobe']),
                  (paths['modules_load_path'], _file_differs, files['modules_load'])]
        if inp['os_family'] == 'Debian':
            wanted.append((paths['initramfs_modules_path'], _block_differs, files['initramfs_tools']))
        else:
            wanted.append((paths['dracut_path'], _file_differs, files['dracut']))
        for path, differs, text in wanted:
            why = differs(path, text)
            if why:
                out.append(change('vfio_config', 'add', '%s %s' % (path, why), path=path, args=ids))
    iommu_on = all(d['iommu_group'] is not None for d in devices)
    on_nouveau = [d['bdf'] for d in devices if d['driver'] == 'nouveau']
    to_bind = [d['bdf'] for d in devices if vb.plan(d)]
    if vf['runtime_bind'] and devices and iommu_on and not on_nouveau and to_bind:
        out.append(change('vfio_bind', 'bind', 'not on vfio-pci now', args=to_bind))
    if vf['persistent'] and vf['devices'] and not iommu_on:
        out.append(change('vfio_bind', 'reboot', 'IOMMU off: the devices bind to vfio-pci at boot',
                          args=vf['devices'], reboot=True))
    if vf['persistent'] and devices and iommu_on and on_nouveau:
        out.append(change('vfio_bind', 'reboot', 'on nouveau: bind to vfio-pci at boot', args=on_nouveau,
                          reboot=True))
    return out


def check_vfio_absent(inp, planned):
    """The vfio role's files taken back where the pool binds nothing (vfio_files_absent's plan)."""
    vf = inp['vfio']
    if vf['state'] != 'absent':
        return []
    actions, _kept = absent.plan(vf['paths'])
    out = [change('vfio_absent', 'remove', 'the pool binds no GPU to vfio-pci; the file (or block) is the vfio '
                  "role's", path=path, reboot=True) for path, _new in actions]
    if out and vf['initramfs_rebuild']:
        out.append(change('initramfs', 'rebuild', 'the images still carry the removed vfio files', reboot=False))
    return out


def initramfs_images(boot_dir):
    """The images the nouveau role finds (regular files directly in ``boot_dir``), as (name, mtime)."""
    out = []
    try:
        names = os.listdir(boot_dir)
    except OSError:
        return out
    for name in sorted(names):
        if not any(fnmatch.fnmatch(name, p) for p in INITRAMFS_PATTERNS) \
                or any(fnmatch.fnmatch(name, p) for p in INITRAMFS_EXCLUDES):
            continue
        try:
            st = os.lstat(os.path.join(boot_dir, name))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((name, st.st_mtime))
    return out


def initramfs_stale(images, watch):
    """The nouveau role's rule (roles/nouveau/tasks/initramfs.yml): stale when the oldest image is older than the
    newest of the files it carries (a missing file counts as time 0)."""
    if not images:
        return False
    times = [0]
    for path in watch:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            continue
    return min(t for _n, t in images) < max(times)


def check_initramfs(inp, planned):
    """The nouveau role's rebuild: the images are stale now, or a file they carry is about to be written."""
    nv, vf = inp['nouveau'], inp['vfio']
    runs = (nv['enabled'] and nv.get('initramfs_rebuild')) \
        or (vf['state'] == 'present' and vf.get('initramfs_rebuild') and vf.get('persistent'))
    if not runs or any(c['what'] == 'initramfs' for c in planned):
        return []
    images = initramfs_images(inp['boot_dir'])
    if not images:
        return []
    watch = nv['initramfs_watch']
    if nv['enabled'] and not nv['blacklist']:
        # the role watches the files' directories too when it takes back (a removed file has no time)
        watch = watch + [d for i, d in enumerate(map(os.path.dirname, watch))
                         if d not in [os.path.dirname(w) for w in watch[:i]]]
    written = [c['path'] for c in planned if c['path'] in watch and c['action'] in ('add', 'remove')
               and MODE_ONLY not in c['reason']]
    if written:
        return [change('initramfs', 'rebuild', 'it carries %s, about to change' % ' '.join(written))]
    if initramfs_stale(images, watch):
        return [change('initramfs', 'rebuild', 'an image under %s is older than a file it carries'
                       % inp['boot_dir'])]
    return []


def check_vf_restore_absent(inp, planned):
    """The vendor-VFIO boot-time VF restore taken back where the host left that pool (host_prep_state.vf_unit absent;
    roles/vgpu_vf/tasks/leave.yml): each of its three files that is a regular file of at most 1 MiB carrying our
    marker (vgpu_vf_profiles.has_marker: OWNED_MARKERS, the role's rule) goes; a link or a foreign file stays. A file that cannot
    be read is planned as a removal (unsure). No reboot is asked for it."""
    vv = inp['vgpu_vf']
    if vv['state'] != 'absent':
        return []
    out = []
    for key in ('unit', 'script', 'config'):
        path = vv['paths'][key]
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            out.append(change('vf_restore', 'remove', 'cannot be looked at (%s)' % e.strerror, path=path))
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size > READ_LIMIT:
            continue
        data = read_bytes(path)
        if data is None:
            out.append(change('vf_restore', 'remove', 'cannot be read', path=path))
        elif vvp.has_marker(data, key):
            out.append(change('vf_restore', 'remove', 'the host left the vendor-VFIO pool; the %s is ours' % key,
                              path=path))
    return out


# In the order the rolling play runs the roles; the initramfs checker last, as it looks at what the others plan.
CHECKERS = [check_kernel_args, check_vfio_present, check_vfio_absent, check_nouveau_blacklist, check_nouveau_loaded,
            check_vf_restore_absent, check_initramfs]


def plan(inputs, checkers=None):
    """The host's plan: ``{'changes': [...], 'reboot_needed': bool}``; PlanError for bad input, before any read."""
    inp = check_inputs(inputs)
    for key in ('which', 'tmpdir', 'grubby_info'):
        inp[key] = inputs.get(key)
    planned = []
    for checker in (CHECKERS if checkers is None else checkers):
        planned.extend(checker(inp, list(planned)))
    return {'changes': planned, 'reboot_needed': any(c['reboot'] for c in planned), 'takebacks': takebacks(planned)}


# The take-backs that take GPUs from VMs on the node at the next boot: the vfio binding (its GPUs leave vfio-pci),
# the VF restore (its VFs lose their profiles) and the IOMMU kernel arguments (no device assignment without them).
VM_TAKEBACKS = ('vfio_absent', 'vf_restore', 'kernel_args')


def takebacks(planned):
    """One sentence per planned take-back of VM_TAKEBACKS, in plan order, without repeats: what the rolling play's
    VM gate names when it refuses while VMs run on the node."""
    out = []
    for c in planned:
        if c['action'] == 'remove' and c['what'] in VM_TAKEBACKS:
            line = '%s %s%s (%s)' % (c['what'], c['action'], (' ' + c['path']) if c['path'] else '', c['reason'])
            if line not in out:
                out.append(line)
    return out


def summary(result):
    """One line for the run's output and the summary: what the plan changes, or why it is empty."""
    if not result['changes']:
        return 'nothing to change'
    return '; '.join('%s %s%s' % (c['what'], c['action'], (' ' + c['path']) if c['path'] else '')
                     for c in result['changes'])
