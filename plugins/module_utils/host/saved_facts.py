# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Saved GPU facts: what playbooks/gather.yml discovered on a host, as a versioned file a render can read when the
host cannot be reached (a GitOps pipeline with no SSH to the GPU hosts). Format in docs/saved-facts.md.

Only discovery results are kept (the module results' own bookkeeping, such as ``invocation``, is dropped), so a
saved file holds no variable of the run and no secret. A GPU holder is kept as its pid and executable name, never
its command line. Pure Python, no Ansible imports.

The file's strings come from the GPU host (any of its users names a process, so a holder, as they like): the file is
data, read by ``loads`` and checked whole against the schema of its format version by ``from_saved``, which only
ever raises SavedFactsError. Nothing here evaluates or formats a value as a template.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders, pci_address, vgpu_interface
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

FORMAT_VERSION = 2
# the discovery facts gather.yml registers, and the module result keys kept for each
FACTS = {
    'gpuvirt_pci_devices': ('devices', 'gpus', 'nvswitches', 'gpus_by_driver', 'iommu'),
    'gpuvirt_mdev_types': ('parents', 'interfaces', 'state', 'available_types', 'message', 'host_interface'),
    'gpuvirt_gpu_holders': ('held', 'holders', 'message', 'unreadable'),
}
SCALARS = ('gpuvirt_node_name', 'gpuvirt_os_tag')
# What a saved holder keeps: enough for the rebind checks (category by executable, pid, device, unit), no argv.
HOLDER_KEYS = ('pid', 'executable', 'device', 'minor', 'bdf', 'unit')
UNKNOWN_EXECUTABLE = '?'

# Bounds checked before anything is converted: a JSON integer literal longer than this is refused by its length,
# never handed to int() (which raises its own error past 4300 digits); pid_max is at most 2^22 (proc(5)).
MAX_TEXT = 16 * 1024 * 1024
MAX_STRING = 65536
MAX_INT_DIGITS = 12
MAX_PID = 4194304
# every list of the facts (devices, gpus, mdev parents and types, evidence ...): more PCI functions than the
# largest GPU host has (16 GPUs with their audio functions and up to 32 SR-IOV VFs each are under 600)
MAX_ITEMS = 1024
INT_LITERAL_RE = re.compile(r'-?[0-9]{1,%d}' % MAX_INT_DIGITS)
HEX4_RE = re.compile(r'[0-9a-fA-F]{4}')
HEX2_RE = re.compile(r'[0-9a-fA-F]{2}')
IOMMU_GROUP_RE = re.compile(r'[0-9]{1,10}')
# the device files gpu_holders reports (its DEVICE grammar, with a bounded minor and caps name)
HOLDER_DEVICE_RE = re.compile(r'/dev/nvidia(?:[0-9]{1,7}|ctl|-uvm|-uvm-tools|-modeset|-nvswitchctl'
                              r'|-caps/[a-z0-9-]{1,64})')
DEVICE_KINDS = ('gpu', 'nvswitch', 'audio', 'usb', 'serial', 'bridge', 'other')
MDEV_INTERFACES = ('mdev', 'vendor_vfio')
MDEV_STATES = ('none', 'exhausted', 'unreadable', 'available')
EXECUTABLE_EXPECTED = 'an executable name (letters, digits, _.+@-) or "%s"' % UNKNOWN_EXECUTABLE


class SavedFactsError(ValueError):
    """A saved facts file that cannot be used; the message names the file, the key and the fix."""


def _brief(value):
    text = repr(value)
    return '%s %s' % (type(value).__name__, text if len(text) <= 60 else text[:57] + '...')


class _Checker(object):
    """Walks one document; every error names the file, the JSON path and what was expected."""

    def __init__(self, path):
        self.path = path

    def fail(self, where, expected, value):
        raise SavedFactsError('%s: %s is %s; expected %s' % (self.path, where, _brief(value), expected))

    def string(self, value, where, pattern=None, max_len=MAX_STRING, nullable=False, expected=None):
        expected = expected or 'a string'
        if value is None and nullable:
            return None
        if not isinstance(value, str) or len(value) > max_len:
            self.fail(where, expected + (' or null' if nullable else '') + ' of at most %d characters' % max_len,
                      value)
        if pattern is not None and not pattern.fullmatch(value):
            self.fail(where, expected + (' or null' if nullable else ''), value)
        return value

    def choice(self, value, where, choices):
        if not isinstance(value, str) or value not in choices:
            self.fail(where, 'one of %s' % ', '.join(choices), value)
        return value

    def integer(self, value, where, low, high, nullable=False):
        if value is None and nullable:
            return None
        # bool is an int in Python: true is not a number here
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(where, 'an integer from %d to %d%s' % (low, high, ' or null' if nullable else ''), value)
        return value

    def boolean(self, value, where):
        if not isinstance(value, bool):
            self.fail(where, 'true or false', value)
        return value

    def listof(self, value, where, item, max_items=MAX_ITEMS):
        if not isinstance(value, list):
            self.fail(where, 'a list', value)
        if len(value) > max_items:
            # checked before any item: the planners downstream (wanted_devices, the fleet view) must see bounded
            # lists, whatever a host reports
            raise SavedFactsError('%s: %s has %d items; expected at most %d (no host has more: gather the facts '
                                  'again on that host)' % (self.path, where, len(value), max_items))
        return [item(v, '%s[%d]' % (where, i)) for i, v in enumerate(value)]

    def obj(self, value, where, fields, required=()):
        """``fields``: key -> check(value, where); keys outside it are refused, ``required`` ones must be there."""
        if not isinstance(value, dict):
            self.fail(where, 'an object with the keys %s' % ', '.join(sorted(fields)), value)
        for key in value:
            if key not in fields:
                self.fail('%s.%s' % (where, key) if isinstance(key, str) else where,
                          'no such key: an object with the keys %s' % ', '.join(sorted(fields)), key)
        for key in required:
            if key not in value:
                raise SavedFactsError('%s: %s.%s is missing; expected it with the keys %s'
                                      % (self.path, where, key, ', '.join(sorted(fields))))
        return dict((key, fields[key](value[key], '%s.%s' % (where, key))) for key in value)

    # the facts

    def bdf(self, value, where, nullable=False):
        return self.string(value, where, pci_address.BDF_RE, 16, nullable, 'a PCI address such as 0000:41:00.0')

    def device(self, value, where):
        s = self.string

        def text(v, w):
            return s(v, w, max_len=1024, nullable=True)
        fields = {
            'bdf': self.bdf,
            'class_id': lambda v, w: s(v, w, HEX4_RE, 4, True, 'a 4-digit hex class'),
            'class_name': text, 'vendor_name': text, 'device_name': text, 'subsystem_name': text,
            'vendor_id': lambda v, w: s(v, w, HEX4_RE, 4, True, 'a 4-digit hex id'),
            'device_id': lambda v, w: s(v, w, HEX4_RE, 4, True, 'a 4-digit hex id'),
            'subsystem_vendor_id': lambda v, w: s(v, w, HEX4_RE, 4, True, 'a 4-digit hex id'),
            'subsystem_device_id': lambda v, w: s(v, w, HEX4_RE, 4, True, 'a 4-digit hex id'),
            'revision': lambda v, w: s(v, w, HEX2_RE, 2, True, 'a 2-digit hex revision'),
            'prog_if': lambda v, w: s(v, w, HEX2_RE, 2, True, 'a 2-digit hex programming interface'),
            'driver': lambda v, w: s(v, w, validators.EXECUTABLE_NAME_RE, 255, True, 'a kernel driver name'),
            'kernel_modules': lambda v, w: self.listof(v, w, lambda x, y: s(
                x, y, validators.EXECUTABLE_NAME_RE, 255, expected='a kernel module name')),
            'iommu_group': lambda v, w: s(v, w, IOMMU_GROUP_RE, 10, True, 'an IOMMU group number'),
            'iommu_group_devices': lambda v, w: self.listof(v, w, self.bdf),
            'companions': lambda v, w: self.listof(v, w, self.bdf),
            'numa_node': lambda v, w: self.integer(v, w, -1, 65535, True),
            'physical_slot': text,
            'physfn': lambda v, w: self.bdf(v, w, True),
            'kind': lambda v, w: self.choice(v, w, DEVICE_KINDS),
            'is_vf': self.boolean, 'sysfs': self.boolean, 'vf_inferred': self.boolean,
            'sriov': lambda v, w: None if v is None else self.obj(v, w, {
                'totalvfs': lambda x, y: self.integer(x, y, 0, 65535, True),
                'numvfs': lambda x, y: self.integer(x, y, 0, 65535, True),
                'vfs': lambda x, y: self.listof(x, y, self.bdf)}),
        }
        return self.obj(value, where, fields, ('bdf',))

    def pci_devices(self, value, where):
        def devices(v, w):
            return self.listof(v, w, self.device)
        return self.obj(value, where, {
            'devices': devices, 'gpus': devices, 'nvswitches': devices,
            'gpus_by_driver': self.gpus_by_driver,
            'iommu': lambda v, w: self.obj(v, w, {
                'enabled': self.boolean, 'groups': lambda x, y: self.integer(x, y, 0, 2 ** 31),
                'message': self.string}),
        })

    def gpus_by_driver(self, value, where):
        if not isinstance(value, dict):
            self.fail(where, 'an object of driver name -> PCI addresses', value)
        out = {}
        for key, bdfs in value.items():
            self.string(key, '%s key' % where, validators.EXECUTABLE_NAME_RE, 255, expected='a kernel driver name')
            out[key] = self.listof(bdfs, '%s.%s' % (where, key), self.bdf)
        return out

    def mdev_types(self, value, where):
        s = self.string

        def text(v, w):
            return s(v, w, max_len=4096, nullable=True)

        def count(v, w):
            return self.integer(v, w, 0, 2 ** 31, True)

        def vtype(v, w):
            return self.obj(v, w, {
                'type_id': lambda x, y: s(x, y, max_len=255), 'name': lambda x, y: s(x, y, max_len=255),
                'short_name': lambda x, y: s(x, y, max_len=255, nullable=True),
                'available_instances': count, 'device_api': text, 'description': text,
                'framebuffer_mib': count, 'max_instance': count, 'num_heads': count, 'frl_config': count,
                'max_resolution': text}, ('type_id', 'name'))

        def mdev(v, w):
            return self.obj(v, w, {'uuid': text, 'type_id': text, 'name': text})

        def parent(v, w):
            return self.obj(v, w, {
                'parent': self.bdf, 'interface': lambda x, y: self.choice(x, y, MDEV_INTERFACES),
                'physfn': lambda x, y: self.bdf(x, y, True),
                'types': lambda x, y: self.listof(x, y, vtype), 'devices': lambda x, y: self.listof(x, y, mdev),
                'current_type': text}, ('parent',))

        def host_interface(v, w):
            # which vGPU interface the host offers (module_utils/host/vgpu_interface.py): its evidence is printed in
            # preflight's messages, so each sentence is printable ASCII of bounded length
            return self.obj(v, w, {
                'interface': lambda x, y: self.choice(x, y, vgpu_interface.INTERFACES),
                'evidence': lambda x, y: self.listof(x, y, lambda a, b: s(
                    a, b, vgpu_interface.EVIDENCE_RE, 512, expected='a sentence of printable ASCII')),
                'kernel_release': lambda x, y: s(x, y, vgpu_interface.KERNEL_RELEASE_RE, 64, True,
                                                 'a kernel release such as 6.8.0-60-generic'),
                'driver_version': lambda x, y: s(x, y, vgpu_interface.DRIVER_VERSION_RE, 32, True,
                                                 'an NVIDIA driver version such as 580.82.02'),
            }, ('interface', 'evidence'))

        return self.obj(value, where, {
            'parents': lambda v, w: self.listof(v, w, parent),
            'host_interface': host_interface,
            'interfaces': lambda v, w: self.listof(v, w, lambda x, y: self.choice(x, y, MDEV_INTERFACES)),
            'state': lambda v, w: self.choice(v, w, MDEV_STATES),
            'available_types': lambda v, w: self.listof(v, w, lambda x, y: s(x, y, max_len=255)),
            'message': self.string})

    def holder(self, value, where):
        return self.obj(value, where, {
            'pid': lambda v, w: self.integer(v, w, 1, MAX_PID),
            'executable': lambda v, w: v if v == UNKNOWN_EXECUTABLE else self.string(
                v, w, validators.EXECUTABLE_NAME_RE, 255, expected=EXECUTABLE_EXPECTED),
            'device': lambda v, w: self.string(v, w, HOLDER_DEVICE_RE, 64, expected='an NVIDIA device file'),
            'minor': lambda v, w: self.integer(v, w, 0, 1048575, True),
            'bdf': lambda v, w: self.bdf(v, w, True),
            'unit': lambda v, w: self.string(v, w, validators.SYSTEMD_UNIT_RE, 255, True, 'a systemd unit name'),
        }, ('pid', 'executable', 'device'))

    def gpu_holders(self, value, where):
        return self.obj(value, where, {
            'held': self.boolean, 'holders': lambda v, w: self.listof(v, w, self.holder),
            'message': self.string, 'unreadable': lambda v, w: self.integer(v, w, 0, MAX_PID)})

    def document(self, doc, host):
        if not isinstance(doc, dict):
            self.fail('the document', 'a JSON object of saved GPU facts', doc)
        version = doc.get('format_version')
        if isinstance(version, bool) or version != FORMAT_VERSION:
            raise SavedFactsError('%s: format_version %r is not %d, the one this collection reads; %s'
                                  % (self.path, version, FORMAT_VERSION,
                                     'gather the facts again (playbooks/gather.yml with the host reachable and '
                                     'gpuvirt_facts_save true)' if version != 1 else
                                     'format 1 kept the holders\' command lines: gather the facts again '
                                     '(playbooks/gather.yml with the host reachable and gpuvirt_facts_save true), '
                                     'or convert the file as docs/saved-facts.md ("Moving from format 1") says'))
        if doc.get('host') != host:
            raise SavedFactsError('%s: saved for host %s, not %r; each host has its own file named after it'
                                  % (self.path, _brief(doc.get('host')), host))
        checked = self.obj(doc, '$', {
            'format_version': lambda v, w: v, 'host': lambda v, w: v,
            'source': lambda v, w: self.string(v, w, max_len=4096),
            'gpuvirt_pci_devices': self.pci_devices, 'gpuvirt_mdev_types': self.mdev_types,
            'gpuvirt_gpu_holders': self.gpu_holders,
            'gpuvirt_node_name': lambda v, w: self.string(v, w, validators.DNS1123_SUBDOMAIN_RE, 253,
                                                          expected='a node name (DNS-1123 subdomain)'),
            'gpuvirt_os_tag': lambda v, w: self.string(v, w, validators.OCI_TAG_RE, 128,
                                                       expected='an OS tag such as rhcos4.18 (an image tag)'),
        }, ('gpuvirt_pci_devices',))
        return checked


def _int_literal(path):
    def parse(text):
        if not INT_LITERAL_RE.fullmatch(text):
            raise SavedFactsError('%s: the number %s is longer than %d digits; no saved fact is that large'
                                  % (path, text[:20] + ('...' if len(text) > 20 else ''), MAX_INT_DIGITS))
        return int(text)
    return parse


def _constant(path):
    def parse(text):
        raise SavedFactsError('%s: %s is not JSON (no NaN or Infinity in saved facts)' % (path, text))
    return parse


def _pairs(path):
    def build(pairs):
        out = {}
        for key, value in pairs:
            if key in out:
                raise SavedFactsError('%s: the key %r appears twice in one object; keep one' % (path, key[:80]))
            out[key] = value
        return out
    return build


def loads(text, path):
    """The JSON document of a saved-facts file; SavedFactsError naming ``path`` for anything that is not one."""
    if not isinstance(text, str):
        raise SavedFactsError('%s: expected the text of a saved-facts file, got %s' % (path, _brief(text)))
    if len(text) > MAX_TEXT:
        raise SavedFactsError('%s: %d characters, more than the %d a saved-facts file has; gather again'
                              % (path, len(text), MAX_TEXT))
    try:
        return json.loads(text, parse_int=_int_literal(path), parse_constant=_constant(path),
                          object_pairs_hook=_pairs(path))
    except SavedFactsError:
        raise
    except RecursionError:
        raise SavedFactsError('%s: nested too deeply to be saved GPU facts; gather again' % path)
    except ValueError as e:
        raise SavedFactsError('%s: not JSON (%s); gather again, or fix the file' % (path, e))


def _holder(holder):
    """A holder as saved: pid, executable name (its grammar, else "?"), device, minor, bdf, unit; never argv."""
    saved = dict((k, holder.get(k)) for k in HOLDER_KEYS)
    name = saved['executable']
    if not (isinstance(name, str) and len(name) <= 255 and validators.EXECUTABLE_NAME_RE.fullmatch(name)):
        saved['executable'] = UNKNOWN_EXECUTABLE
    return saved


def holders_message(holders, unreadable=0):
    """The gpu_holders message rebuilt from saved holders (gpu_holders.message: the same text a live scan gives)."""
    return gpu_holders.message(holders, unreadable)


def to_saved(host, hostvars, source=None):
    """The saved-facts document of ``host`` from its variables (the facts gather.yml registered), checked against
    the schema it will be read with, so a file is never written that a render would refuse."""
    doc = {'format_version': FORMAT_VERSION, 'host': host}
    if source:
        doc['source'] = source
    for fact, keys in FACTS.items():
        value = hostvars.get(fact)
        if isinstance(value, dict):
            doc[fact] = dict((k, value[k]) for k in keys if k in value)
    holders = doc.get('gpuvirt_gpu_holders')
    if holders is not None and isinstance(holders.get('holders'), list):
        holders['holders'] = [_holder(h) if isinstance(h, dict) else h for h in holders['holders']]
        holders['message'] = holders_message(
            [h for h in holders['holders'] if isinstance(h, dict)],
            holders.get('unreadable') if isinstance(holders.get('unreadable'), int) else 0)
    for fact in SCALARS:
        if isinstance(hostvars.get(fact), str):
            doc[fact] = hostvars[fact]
    # through JSON, as the file will be: plain types only, and the same checks as the reader's
    return from_text(json.dumps(doc), host, 'the facts gathered from %s' % host, keep_document=True)


def from_saved(doc, host, path):
    """The facts in a saved document for ``host`` (the parsed JSON, or the file's text); raise SavedFactsError
    naming ``path``, the JSON path and what was expected."""
    if isinstance(doc, str):
        return from_text(doc, host, path)
    checked = _Checker(path).document(doc, host)
    facts = dict((k, v) for k, v in checked.items() if k in FACTS or k in SCALARS)
    return facts


def from_text(text, host, path, keep_document=False):
    doc = loads(text, path)
    if keep_document:
        _Checker(path).document(doc, host)
        return doc
    return from_saved(doc, host, path)


def check_live(value, host, fact):
    """``value``, a module result gather.yml or vgpu_vf.yml registers as ``fact`` (a key of FACTS) on ``host``,
    unchanged once the keys a saved file keeps pass the schema a saved file is read with; SavedFactsError naming
    the host, the fact and the JSON path otherwise. The live result is host output as much as a saved file is: one
    host's bad shape fails that host here, before ``set_fact`` hands it to the fleet view of every host. (Added by
    the live-facts check; the document checker itself is unchanged.)"""
    if fact not in FACTS:
        raise SavedFactsError('check_live: %r is not one of the gathered facts %s' % (fact, ', '.join(sorted(FACTS))))
    where = 'the %s gathered from %s' % (fact, host)
    checker = _Checker(where)
    if not isinstance(value, dict):
        checker.fail('$', 'the module result (an object)', value)
    kept = dict((k, value[k]) for k in FACTS[fact] if k in value)
    if fact == 'gpuvirt_gpu_holders' and isinstance(kept.get('holders'), list):
        # what a saved holder keeps (never argv): the rest of a live holder is the module's own
        kept['holders'] = [_holder(h) if isinstance(h, dict) else h for h in kept['holders']]
    # through JSON, as a saved file is read: plain types only
    try:
        plain = json.loads(json.dumps(kept))
    except (TypeError, ValueError) as exc:
        raise SavedFactsError('%s: not plain JSON data (%s)' % (where, exc))
    {'gpuvirt_pci_devices': checker.pci_devices, 'gpuvirt_mdev_types': checker.mdev_types,
     'gpuvirt_gpu_holders': checker.gpu_holders}[fact](plain, '$')
    return value
