# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vGPU types on both kernel interfaces (docs/pools/vgpu.md): mdev (mdev_supported_types, on PFs or SR-IOV VFs) and
NVIDIA's vendor-specific VFIO (per VF nvidia/creatable_vgpu_types + current_vgpu_type); plus mdevctl JSON."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_interface
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.vgpu_names import short_type_name
from ansible_collections.gpuvirt.provision.plugins.module_utils.host.sysfs import link_name, list_names, read_text

UUID = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}')
DIGITS = re.compile(r'[0-9]+')
# a count as the kernel prints it; bounded, so int() never sees a string too long to convert
NUMBER = re.compile(r'[0-9]{1,9}')


class VgpuError(ValueError):
    pass


def _read(path):
    return read_text(path, VgpuError)


def parse_description(text):
    """"num_heads=4, frl_config=60, framebuffer=2048M, max_resolution=..., max_instance=8" -> typed dict."""
    fields = dict(kv.split('=', 1) for kv in re.split(r',\s*', text or '') if '=' in kv)
    out = {'framebuffer_mib': None, 'max_instance': None, 'num_heads': None, 'frl_config': None,
           'max_resolution': fields.get('max_resolution')}
    fb = re.fullmatch(r'([0-9]{1,9})([MG])?', fields.get('framebuffer', ''))
    if fb:
        out['framebuffer_mib'] = int(fb.group(1)) * (1024 if fb.group(2) == 'G' else 1)
    for key in ('max_instance', 'num_heads', 'frl_config'):
        if NUMBER.fullmatch(fields.get(key, '')):
            out[key] = int(fields[key])
    return out


def _type(type_id, name, description=None, available=None, device_api=None):
    t = {'type_id': type_id, 'name': name, 'short_name': short_type_name(name), 'available_instances': available,
         'device_api': device_api, 'description': description}
    t.update(parse_description(description))
    return t


def _physfn(root, bdf):
    return link_name(os.path.join(root, 'bus', 'pci', 'devices', bdf, 'physfn'))


def mdev_parents(root, problems=None):
    """Parents under <root>/class/mdev_bus (the kernel's list of mdev-capable devices)."""
    problems = [] if problems is None else problems
    out = []
    for parent in list_names(os.path.join(root, 'class', 'mdev_bus')):
        base = os.path.join(root, 'class', 'mdev_bus', parent)
        types, devices = [], []
        for tid in list_names(os.path.join(base, 'mdev_supported_types')):
            tdir = os.path.join(base, 'mdev_supported_types', tid)
            path = os.path.join(tdir, 'available_instances')
            avail = available_count(_read(path), path, problems)
            types.append(_type(tid, _read(os.path.join(tdir, 'name')) or tid, _read(os.path.join(tdir, 'description')),
                               avail,
                               _read(os.path.join(tdir, 'device_api'))))
        names = dict((t['type_id'], t['name']) for t in types)
        # instances are <parent>/<uuid>/ with mdev_type -> ../mdev_supported_types/<type>
        for entry in list_names(base):
            if UUID.fullmatch(entry):
                tid = link_name(os.path.join(base, entry, 'mdev_type'))
                devices.append({'uuid': entry, 'type_id': tid, 'name': names.get(tid)})
        out.append({'parent': parent, 'interface': 'mdev', 'physfn': _physfn(root, parent), 'types': types,
                    'devices': devices, 'current_type': None})
    return out


# creatable_vgpu_types (NVIDIA vendor-specific VFIO, per VF): the header "ID    : vGPU Name", then one
# "<id>  : <name>" line per type creatable now (the L40S capture in tests/unit/fixtures/sysfs). Bounded: a sysfs
# attribute is at most a page, and no board has a thousand types.
CREATABLE_MAX_CHARS = 65536
CREATABLE_MAX_TYPES = 1024
CREATABLE_HEADER = re.compile(r'ID[ \t]*:[ \t]*vGPU Name')
CREATABLE_LINE = re.compile(r'([0-9]{1,9})[ \t]*:[ \t]*([A-Za-z0-9][A-Za-z0-9 ._-]{0,127})')


def parse_creatable(text, where='creatable_vgpu_types'):
    """creatable_vgpu_types -> [(id, name)]. Linear in the text; anything but blank lines, the header (first) and
    "<id> : <name>" lines is refused with a VgpuError naming ``where``, the line and what was expected."""
    text = text or ''
    if len(text) > CREATABLE_MAX_CHARS:
        raise VgpuError('%s holds %d characters, more than the %d a creatable_vgpu_types file has; expected the '
                        '"ID : vGPU Name" header and one "<id> : <name>" line per type'
                        % (where, len(text), CREATABLE_MAX_CHARS))
    out, names, first = [], {}, True
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if first and CREATABLE_HEADER.fullmatch(line):
            first = False
            continue
        first = False
        match = CREATABLE_LINE.fullmatch(line)
        if not match:
            raise VgpuError('%s, line %d: %s is not a vGPU type line; expected "<id> : <name>" (such as '
                            '"1155  : NVIDIA L40S-24Q") after the "ID : vGPU Name" header' % (where, number, _brief(line)))
        tid, name = match.group(1), match.group(2).rstrip()
        if names.get(tid, name) != name:
            raise VgpuError('%s, line %d: type %s is listed as %s and as %s; one id names one type'
                            % (where, number, tid, _brief(names[tid]), _brief(name)))
        if len(out) >= CREATABLE_MAX_TYPES:
            raise VgpuError('%s lists more than %d vGPU types; no board has that many' % (where, CREATABLE_MAX_TYPES))
        names[tid] = name
        out.append((tid, name))
    return out


def available_count(value, where, problems):
    """available_instances as an int; a value that is not a non-negative integer is unreadable: noted in
    ``problems`` (file or JSON path, the value, what was expected) and returned as None, never read as 0."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
        return int(value.strip())
    problems.append('%s reads %s; expected a non-negative integer' % (where, _brief(value)))
    return None


def vendor_parents(root):
    """VFs with an nvidia/ directory (vGPU 17+ vendor-specific VFIO)."""
    found = []
    for bdf in list_names(os.path.join(root, 'bus', 'pci', 'devices')):
        ndir = os.path.join(root, 'bus', 'pci', 'devices', bdf, 'nvidia')
        creatable = _read(os.path.join(ndir, 'creatable_vgpu_types'))
        if creatable is None:
            continue
        current_path = os.path.join(ndir, 'current_vgpu_type')
        current = _read(current_path) or '0'
        if not NUMBER.fullmatch(current):
            raise VgpuError('%s reads %s; expected the id of the vGPU type set on the VF, 0 for none'
                            % (current_path, _brief(current)))
        found.append((bdf, parse_creatable(creatable, os.path.join(ndir, 'creatable_vgpu_types')), current))
    # the list shrinks as capacity is used, so a VF's own current type may be missing from it: name it from
    # any VF's list (same board, same ids)
    names = {}
    for dummy, creatable, dummy2 in found:
        names.update(creatable)
    out = []
    for bdf, creatable, current in found:
        busy = current not in ('', '0')
        types = [_type(tid, name, available=0 if busy else 1) for tid, name in creatable]
        devices = [{'uuid': None, 'type_id': current, 'name': names.get(current)}] if busy else []
        out.append({'parent': bdf, 'interface': 'vendor_vfio', 'physfn': _physfn(root, bdf), 'types': types,
                    'devices': devices, 'current_type': current if busy else None})
    return out


def _brief(value):
    """A short description of a JSON value for a message: repr of a deeply nested one would recurse, and a large
    one would flood the message."""
    if isinstance(value, (list, dict)):
        return 'a JSON %s of %d items' % ('array' if isinstance(value, list) else 'object', len(value))
    text = repr(value)
    return text if len(text) <= 100 else text[:100] + '...'


# How deeply mdevctl JSON may nest (its own is five levels deep): checked before json.loads, whose refusal of a deeper
# text depends on the interpreter's recursion limit (a RecursionError at about sys.getrecursionlimit() levels), so
# that the same text is refused, with the same message, whatever that limit is.
MDEVCTL_JSON_MAX_DEPTH = 1000


def json_depth(text):
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets inside strings not counted), read in one
    pass; stops counting once past MDEVCTL_JSON_MAX_DEPTH."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in '[{':
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MDEVCTL_JSON_MAX_DEPTH:
                    break
        elif char in ']}':
            depth -= 1
    return deepest


def parse_mdevctl_json(text, problems=None):
    """`mdevctl types --dumpjson`: [{parent: [{type_id: {available_instances, device_api, name, description}}]}]."""
    problems = [] if problems is None else problems
    shape = 'expected [{parent: [{type_id: {name, description, available_instances, device_api}}]}]'
    if isinstance(text, str) and json_depth(text) > MDEVCTL_JSON_MAX_DEPTH:
        raise VgpuError('mdevctl_json nests arrays or objects too deeply to read (more than %d levels); %s, as mdevctl '
                        'types --dumpjson prints' % (MDEVCTL_JSON_MAX_DEPTH, shape))
    try:
        data = json.loads(text) if isinstance(text, str) else text
    except ValueError as e:
        raise VgpuError('mdevctl_json is not JSON (%s); give the output of mdevctl types --dumpjson' % e)
    except RecursionError:
        raise VgpuError('mdevctl_json nests arrays or objects too deeply to read; %s, as mdevctl types '
                        '--dumpjson prints' % shape)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise VgpuError('mdevctl_json must be a list of {parent: [types]} as mdevctl types --dumpjson prints')
    out = []
    for i, block in enumerate(data):
        if not isinstance(block, dict):
            raise VgpuError('mdevctl JSON item %d is %s; %s' % (i, _brief(block), shape))
        for parent, entries in sorted(block.items()):
            if not isinstance(entries, list):
                raise VgpuError('mdevctl JSON parent %r holds %s; %s' % (parent, _brief(entries), shape))
            types = []
            for entry in entries:
                if not isinstance(entry, dict):
                    raise VgpuError('mdevctl JSON parent %r has the entry %s; %s' % (parent, _brief(entry), shape))
                for tid, t in entry.items():
                    if not isinstance(t, dict):
                        raise VgpuError('mdevctl JSON type %r of parent %r is %s; %s' % (tid, parent, _brief(t), shape))
                    fields = dict((k, t.get(k) if isinstance(t.get(k), (str, type(None))) else str(t.get(k)))
                                  for k in ('name', 'description', 'device_api'))
                    avail = available_count(t.get('available_instances'),
                                            'mdevctl JSON %s/%s available_instances' % (parent, tid), problems)
                    types.append(_type(tid, fields['name'] or tid, fields['description'], avail,
                                       fields['device_api']))
            out.append({'parent': parent, 'interface': 'mdev', 'physfn': None, 'types': types, 'devices': [],
                        'current_type': None})
    return out


def summarise(parents, problems=None):
    """state: none | unreadable | exhausted | available. ``unreadable``: no type is known to have an instance
    free, and some available_instances could not be read, so the host cannot be said to be exhausted."""
    problems = problems or []
    interfaces = sorted(set(p['interface'] for p in parents))
    types = set(t['name'] for p in parents for t in p['types'])
    available = sorted(set(t['name'] for p in parents for t in p['types'] if t['available_instances']))
    if not parents:
        state, msg = 'none', ('no vGPU interface: neither /sys/class/mdev_bus nor nvidia/creatable_vgpu_types on '
                              'any PCI device; the NVIDIA vGPU Manager (vgpu-kvm host driver) is not loaded, or '
                              'SR-IOV VFs are not enabled on Ampere and later GPUs')
    elif not available and problems:
        state, msg = 'unreadable', ('%d vGPU types on %d parents (%s), but available_instances is unreadable: %s'
                                    % (len(types), len(parents), ', '.join(interfaces), '; '.join(problems[:5])))
    elif not available:
        state, msg = 'exhausted', ('%d vGPU types on %d parents (%s) but none has an instance available: every '
                                   'parent is in use or holds another type'
                                   % (len(types), len(parents), ', '.join(interfaces)))
    else:
        state, msg = 'available', '%d vGPU types on %d parents (%s), %d available' % (
            len(types), len(parents), ', '.join(interfaces), len(available))
    return {'interfaces': interfaces, 'state': state, 'available_types': available, 'message': msg}


def discover(root='/sys', mdevctl_json=None, proc_root=None):
    """The vGPU types of both interfaces and ``host_interface``, the facts that say which interface the host offers
    (module_utils/host/vgpu_interface.py; the kernel release is read under ``proc_root`` when it is given)."""
    if not os.path.isdir(root):
        raise VgpuError('sysfs_root %s does not exist; give the directory sysfs is mounted on (/sys)' % root)
    problems = []
    parents = mdev_parents(root, problems) + vendor_parents(root)
    listed = []
    if mdevctl_json:
        seen = set(p['parent'] for p in parents)
        listed = [p for p in parse_mdevctl_json(mdevctl_json, problems) if p['parent'] not in seen]
    try:
        facts = vgpu_interface.host_facts(root, parents, proc_root, [p['parent'] for p in listed])
    except vgpu_interface.VgpuInterfaceError as e:
        raise VgpuError(str(e))
    parents = sorted(parents + listed, key=lambda p: p['parent'])
    return dict(parents=parents, host_interface=facts, **summarise(parents, problems))
