# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the host roles' validate paths read on the host, read and decided in host_plan's one call. Pure Python.

playbooks/host_prep.yml's plan play checks every input it can on the controller (the roles' validate_local
tasks), then makes one read-only module call per host (host_plan). That call reads what the roles' validate.yml
read with several module calls (the OS facts, /etc/os-release, the ACPI tables and the CPU vendor, the running
kernel's command line, the PCI devices, their IOMMU groups and drivers, the processes holding /dev/nvidia*),
decides what validate.yml decides (the IOMMU vendor and the kernel argument list, the vfio selection), refuses
what it refuses (with its words, naming the host and the variable), then plans (host_plan.plan).

With ``stop_coreos``, a CoreOS host (os_release.coreos: the Machine Config Operator owns it) is read no further:
the play decides whether to leave the host alone or refuse it, before any kernel_args decision that would fail
there.

Everything read here is host data: each file is read bounded (sysfs.read_bytes), each value shown or returned
fits a grammar (fullmatch) or is not shown.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import host_plan
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline as kc
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import os_release
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import sysfs_pci
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vfio_bind as vb
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import read_bytes

# /proc/cpuinfo repeats one block per CPU (about 1.5 KiB on x86); the vendor is on each, so the first blocks are
# enough: only this much is read, however many CPUs the host has
CPUINFO_LIMIT = 64 * 1024
VENDOR_LINE_RE = re.compile(r'vendor_id\s*:\s*(GenuineIntel|AuthenticAMD)\s*')
CPU_VENDORS = {'GenuineIntel': 'intel', 'AuthenticAMD': 'amd'}
# kernel_args_iommu_vendor's choices (roles/kernel_args/meta/argument_specs.yml)
IOMMU_VENDOR_CHOICES = ('auto', 'intel', 'amd')
# the platform IOMMU's ACPI table: DMAR is Intel VT-d, IVRS is AMD-Vi (roles/kernel_args/tasks/validate.yml)
ACPI_TABLES_DIR = '/sys/firmware/acpi/tables'
ACPI_VENDORS = (('DMAR', 'intel'), ('IVRS', 'amd'))
# the ids the vfio role's discovery keeps besides the device ids (roles/vfio/tasks/discover.yml)
NVIDIA = '10de'
# the files and trees read besides host_plan's own (each an absolute, normalised path; the play leaves them at the
# defaults, tests give copies)
READ_PATHS = (('os_release_path', os_release.PATHS[0]), ('proc_cpuinfo', '/proc/cpuinfo'),
              ('acpi_tables_dir', ACPI_TABLES_DIR), ('proc_root', '/proc'), ('sysfs_root', '/sys'),
              ('proc_cmdline', '/proc/cmdline'))


class Refusal(ValueError):
    """A refusal of a role's validate path: the message is the role's own, naming the host and the variable."""


def os_release_fields(paths, read=read_bytes, host='the host'):
    """os_release.read_any() of ``paths`` (the first readable one), its error a Refusal."""
    try:
        return os_release.read_any(paths, host, read)
    except os_release.OsReleaseError as e:
        raise Refusal(str(e))


def cpu_vendor(path, read=read_bytes):
    """intel or amd from the first ``vendor_id`` line of /proc/cpuinfo that names one (None for none: another
    architecture, a file that cannot be read)."""
    data = read(path, CPUINFO_LIMIT)
    if data is None:
        return None
    for line in data[:CPUINFO_LIMIT].decode('latin-1').splitlines():
        m = VENDOR_LINE_RE.fullmatch(line)
        if m:
            return CPU_VENDORS[m.group(1)]
    return None


def acpi_vendor(tables_dir):
    """intel when a DMAR table is there, else amd when an IVRS table is, else None (the role's stat: the entry
    itself, a link counts)."""
    for table, vendor in ACPI_VENDORS:
        if os.path.lexists(os.path.join(tables_dir, table)):
            return vendor
    return None


def iommu_vendor(iommu, setting, state, tables_dir, proc_cpuinfo):
    """The kernel_args role's vendor (roles/kernel_args/tasks/validate.yml, Decide the IOMMU vendor): none when
    the IOMMU is off or the state absent, the setting unless auto, else the ACPI table, else the CPU vendor, else
    unknown. Reads only what the decision needs."""
    if not iommu or state == 'absent':
        return kc.IOMMU_OFF
    if setting != 'auto':
        return setting
    return acpi_vendor(tables_dir) or cpu_vendor(proc_cpuinfo) or 'unknown'


def kernel_args_wanted(host, ka, tables_dir, proc_cpuinfo):
    """kernel_args_wanted as the role decides it: the IOMMU arguments of the vendor (kernel_cmdline.host_iommu_args,
    the function of the filter iommu_kernel_args) and kernel_args_extra; the role's refusals with its words."""
    for flag in ('iommu', 'iommu_passthrough'):
        if not isinstance(ka.get(flag, True), bool):
            raise host_plan.PlanError('kernel_args_%s is %r: expected a boolean (true or false)' % (flag, ka[flag]))
    state = ka.get('state', 'present')
    extra = ka.get('extra', [])
    if not isinstance(extra, list):
        raise host_plan.PlanError('kernel_args_extra is %r: expected a list' % (extra,))
    setting = ka.get('iommu_vendor', 'auto')
    if setting not in IOMMU_VENDOR_CHOICES:
        # "none" (the derived vendor of an IOMMU turned off) would plan no IOMMU argument at all, silently
        raise Refusal('kernel_args: %s: kernel_args_iommu_vendor is %r: choose auto, intel or amd '
                      '(kernel_args_iommu false turns the IOMMU arguments off). Nothing was changed.'
                      % (host, setting[:80] if isinstance(setting, str) else setting))
    vendor = iommu_vendor(ka.get('iommu', True), setting, state, tables_dir, proc_cpuinfo)
    if vendor == 'unknown':
        raise Refusal('kernel_args: %s shows neither a DMAR nor an IVRS ACPI table and no known CPU vendor (is '
                      'VT-d/AMD-Vi enabled in the firmware, or is this host itself a VM?). Enable the IOMMU in the '
                      'firmware, or set kernel_args_iommu_vendor to intel or amd.' % host)
    if state == 'absent':
        return vendor, []
    try:
        args = kc.host_iommu_args(vendor, ka.get('iommu_passthrough', True))
    except kc.CmdlineError as e:
        raise Refusal('kernel_args: %s: kernel_args_iommu_vendor is %r: %s (use auto, intel or amd). Nothing was '
                      'changed.' % (host, vendor, e))
    return vendor, args + list(extra)


def vfio_selection(pci, gpus, include_nvswitch, device_ids, bdfs):
    """vfio_selected as the role selects it (roles/vfio/tasks/discover.yml and validate.yml): the GPUs and their
    slot companions, the NVSwitches, the devices of ``device_ids``, and ``bdfs``; unique, sorted."""
    found = []
    if pci is not None:
        if gpus:
            found += [g['bdf'] for g in pci['gpus']] + [c for g in pci['gpus'] for c in g['companions']]
        if include_nvswitch:
            found += [n['bdf'] for n in pci['nvswitches']]
        found += [d['bdf'] for d in pci['devices'] if '%s:%s' % (d['vendor_id'], d['device_id']) in device_ids]
    return sorted(set(found + list(bdfs)))


def _held_message(host, held, holders):
    """The vfio role's refusal of held devices (roles/vfio/tasks/validate.yml), word for word; a driver's name only
    where it is a kernel module name, else "?" (vfio_bind.shown_driver)."""
    parts = ['vfio:'] + ['%s (%s:%s) is held by driver %s;' % (d['bdf'], d['vendor_id'], d['device_id'],
                                                               vb.shown_driver(d['driver'])) for d in held]
    if holders and holders.get('held'):
        parts.append('holders: %s;' % holders['message'])
    parts.append('nothing was changed. Stop what uses the device (nvidia-persistenced, dcgm, a display manager), '
                 'unload the driver, or move %s to the container pool; add the driver to vfio_rebind_drivers only '
                 'when taking the device from it at runtime is safe.' % host)
    return ' '.join(parts)


def vfio_validate(host, vf, sysfs_root, lspci, proc_root):
    """The vfio role's validate path after its local checks: discovery (``lspci()`` gives the text of
    ``lspci -vmmnnkD``), selection, the refusal of an empty selection, the inspection of the selected devices and
    their IOMMU groups, the refusal of held devices. Returns (vfio_selected, iommu message or None)."""
    for flag in ('gpus', 'include_nvswitch', 'require_devices'):
        if not isinstance(vf.get(flag), bool):
            raise host_plan.PlanError('vfio_%s is %r: expected a boolean (true or false)' % (flag, vf.get(flag)))
    device_ids = list(vf.get('device_ids') or [])
    bdfs = list(vf.get('bdfs') or [])
    pci = holders = None
    if vf['gpus'] or vf['include_nvswitch'] or device_ids:
        vendors = []
        for v in [NVIDIA] + [i.split(':')[0] for i in device_ids]:
            if v not in vendors:
                vendors.append(v)
        try:
            pci = sysfs_pci.discover(lspci(), sysfs_root, vendors, ())
        except sysfs_pci.SysfsError as e:
            raise host_plan.PlanError(str(e))
        holders = gpu_holders.scan(proc_root, [])
    selected = vfio_selection(pci, vf['gpus'], vf['include_nvswitch'], device_ids, bdfs)
    if not selected and not vf.get('persistent_ids') and vf['require_devices']:
        raise Refusal('vfio: nothing to bind on %s: no NVIDIA GPU found%s and vfio_device_ids/vfio_bdfs select '
                      'nothing. Check the host\'s pool, or set vfio_require_devices=false.'
                      % (host, (' (%s)' % pci['iommu']['message']) if pci is not None else ''))
    if not selected:
        return selected
    # vfio_bind's inspection (inspect_only): every address of the binder's grammar (lspci's too: host data),
    # each on this host, then its IOMMU group's other members
    # (each member of a group a PCI address; a sysfs file that is not UTF-8 named: vfio_bind's BindError, refused)
    try:
        for bdf in selected:
            vb.validate_bdf(bdf)
            vb.check_bindable(vb.state(sysfs_root, bdf), require_iommu=False)
        states = [vb.state(sysfs_root, bdf) for bdf in vb.expand_groups(sysfs_root, selected)]
    except vb.BindError as e:
        raise Refusal('vfio: %s: %s. Nothing was changed.' % (host, e))
    rebind = list(vf.get('rebind_drivers') or []) + ['vfio-pci']
    held = [d for d in states if d['driver'] is not None and d['driver'] not in rebind]
    if held:
        raise Refusal(_held_message(host, held, holders))
    return selected


def read_and_plan(inputs, reads):
    """The plan play's one call. ``inputs`` are host_plan's (module options); ``reads`` the module's hooks:
    ``os_facts()`` (the distribution facts as setup returns them, unprefixed), ``lspci()`` and the others
    host_plan.plan takes (which, tmpdir, grubby_info).

    Returns host_plan.plan's result plus ``os_id`` (the os-release ID, read where ``stop_coreos`` is set),
    ``coreos`` and ``stopped`` (the host is CoreOS and ``stop_coreos`` is set: nothing else was read), ``facts`` (the
    OS facts, {} when not gathered), ``kernel_args_wanted`` and ``vfio_selected`` (what the host decided, None where
    the caller gave them)."""
    host = inputs.get('host') or 'the host'
    paths = dict((key, host_plan.abs_path(inputs.get(key) or default, key)) for key, default in READ_PATHS)
    # every input checked by shape before the first read (host_plan.plan checks them again with the decided values)
    host_plan.check_inputs(inputs)
    # read only where the caller stops on it (host_plan called with decided values reads what it always read);
    # os-release(5)'s fallback, /usr/lib/os-release, where the path is left at its default; neither: refused
    release = (paths['os_release_path'],)
    if release[0] == os_release.PATHS[0]:
        release = os_release.PATHS
    fields = os_release_fields(release, host=host) if inputs.get('stop_coreos') else {}
    is_coreos = os_release.coreos(fields)
    out = {'os_id': fields.get('ID', ''), 'coreos': is_coreos, 'stopped': False, 'facts': {},
           'kernel_args_wanted': None, 'vfio_selected': None}
    if is_coreos:
        out.update(stopped=True, changes=[], reboot_needed=False, takebacks=[])
        return out
    facts = reads['os_facts']() if inputs.get('gather_os_facts') else {}
    out['facts'] = facts
    plan_inputs = dict(inputs)
    if facts:
        plan_inputs['os_family'] = facts.get('os_family') or ''
    ka = dict(inputs.get('kernel_args') or {})
    if facts and ka.get('backend', 'auto') == 'auto':
        # the kernel_args role's choice (the filter kernel_args_backend: the same function, the same facts)
        ka['backend'] = kc.role_backend('auto', facts.get('os_family') or '',
                                        facts.get('distribution_major_version') or '')
    if ka.get('enabled') and 'args' not in ka:
        # decided here, as roles/kernel_args/tasks/validate.yml decides it; its precheck (the kernel_cmdline module,
        # backend none) then fails on an argument, pattern or path it refuses, and on a running command line it
        # cannot read
        _vendor, wanted = kernel_args_wanted(host, ka, paths['acpi_tables_dir'], paths['proc_cpuinfo'])
        ka['args'] = wanted if ka.get('state', 'present') == 'present' else []
        out['kernel_args_wanted'] = wanted
        proc_cmdline = paths['proc_cmdline']
        if kc.read_running(proc_cmdline, read_bytes) is None:
            raise Refusal('kernel_args: %s: cannot read %s as a kernel command line (a regular file of at most %d '
                          'bytes). Nothing was changed.' % (host, proc_cmdline, kc.PROC_CMDLINE_LIMIT))
    plan_inputs['kernel_args'] = ka
    vf = dict(inputs.get('vfio') or {})
    if vf.get('state') == 'present' and 'devices' not in vf:
        vf['devices'] = vfio_validate(host, vf, paths['sysfs_root'], reads['lspci'], paths['proc_root'])
        out['vfio_selected'] = vf['devices']
    plan_inputs['vfio'] = vf
    out.update(host_plan.plan(plan_inputs))
    return out
