# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse lspci text in every format people paste or collect: plain, -nn, -nnk, -Dnn, -k (TAB or spaces or no
indentation), -v (IOMMU group, NUMA node), -vmm / -vmmnnk(D) and -mm. Pure Python, no Ansible imports, so the
same code serves the pci_devices module and the parse_lspci filter (sosreports, must-gathers)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import pci_address

# Class names lspci prints (pci.ids "C" section) -> class code, for output without -n. Only the classes this
# collection reasons about; anything else keeps class_id null unless -nn gave it.
CLASS_IDS = {
    'VGA compatible controller': '0300', '3D controller': '0302', 'Display controller': '0380',
    'Audio device': '0403', 'Multimedia audio controller': '0401', 'Bridge': '0680', 'PCI bridge': '0604',
    'Host bridge': '0600', 'ISA bridge': '0601', 'USB controller': '0c03', 'Serial bus controller': '0c80',
    'Ethernet controller': '0200', 'Non-Volatile memory controller': '0108',
}
GPU_CLASSES = ('0300', '0302', '0380')

# "BB:DD.F" with an optional domain (pci_address.BDF)
BDF = pci_address.BDF
# Every pattern below is applied with fullmatch to a bounded piece of a line, or has no two adjacent quantifiers
# that can match the same characters: host output is parsed in time linear in its length, whatever it holds.
BDF_LEAD = re.compile(BDF + r'(?=\s)')
HEX4 = re.compile(r'[0-9a-fA-F]{4}')
IDS = re.compile(r'\[(?P<v>[0-9a-fA-F]{4}):(?P<d>[0-9a-fA-F]{4})\]')
TAIL = re.compile(r'rev (?P<rev>[0-9a-fA-F]{2})|prog-if (?P<pi>[0-9a-fA-F]{2})[^()]*')
UNKNOWN_DEVICE = re.compile(r'(?:Device|Unknown device) (?P<id>[0-9a-fA-F]{4})')
VMM_KEY = re.compile(r'(?P<k>[A-Za-z]+):(?P<v>.*)')
BRACKET_ID = re.compile(r'\[(?P<id>[0-9a-fA-F]{4,6})\]')
MM_OPTION = re.compile(r'-[rp][0-9a-fA-F]{2}')
MM_LEAD = re.compile(BDF + r'\s+"')
VMM_SLOT = re.compile(r'(?:Slot|Device):\s*' + BDF + r'\s*')
NUMBER = re.compile(r'[0-9]{1,9}')
FLAGS_NUMA = re.compile(r'NUMA node ([0-9]+)')
CONT_KEYS = ('Subsystem', 'Kernel driver in use', 'Kernel modules', 'IOMMU group', 'NUMA node', 'Physical Slot',
             'Flags', 'Capabilities')
SRIOV_CAPABILITY = 'Single Root I/O Virtualization'
# Vendor names end in a company suffix far more often than device names do; used to split "vendor device" when
# lspci printed no ids (plain format) and no pci.ids is at hand.
COMPANY = re.compile(r'(?P<vendor>.*?(?:Corporation|Corp\.|Inc\.|Ltd\.?|Co\., Ltd\.?|Limited|GmbH|AG|LLC|'
                     r'Technologies|Technology|Semiconductor|Company|Incorporated|s\.r\.o\.|SE|Ltd))\s+(?P<dev>.+)')


# Used when no pci.ids is given: plain lspci output carries names only, and these are the vendors this
# collection acts on (a pci.ids, when given, covers every vendor).
KNOWN_VENDORS = {'NVIDIA Corporation': '10de'}


class LspciError(ValueError):
    pass


def normalise_bdf(bdf):
    """Lower-case and prefix the 0000 domain lspci leaves out without -D."""
    bdf = bdf.strip().lower()
    return bdf if bdf.count(':') == 2 else '0000:' + bdf


def device_kind(class_id, vendor_id=None):
    """gpu | nvswitch | audio | usb | serial | bridge | other, as docs/contracts.md defines."""
    c = (class_id or '').lower()
    if c in GPU_CLASSES:
        return 'gpu'
    if c == '0680':
        return 'nvswitch' if (vendor_id or '').lower() == '10de' else 'bridge'
    if c.startswith('04'):
        return 'audio'
    if c == '0c03':
        return 'usb'
    if c == '0c80':
        return 'serial'
    if c.startswith('06'):
        return 'bridge'
    return 'other'


def _empty(bdf):
    return {'bdf': normalise_bdf(bdf), 'class_id': None, 'class_name': None, 'vendor_id': None,
            'vendor_name': None, 'device_id': None, 'device_name': None, 'subsystem_vendor_id': None,
            'subsystem_device_id': None, 'subsystem_name': None, 'revision': None, 'prog_if': None,
            'driver': None, 'kernel_modules': [], 'iommu_group': None, 'numa_node': None, 'physical_slot': None}


# A vendor name longer than this (real pci.ids names are at most 65 characters) is never looked for when splitting
# "vendor device": the split then costs a bounded number of lookups per line, whatever a pci.ids holds.
VENDOR_NAME_MAX = 256


class VendorIndex(object):
    """pci.ids vendor names (name -> id), indexed once per parse so that splitting a line costs dict lookups by
    the line's own tokens, not a walk over every vendor (23,831 vendors made that walk quadratic)."""

    def __init__(self, vendor_names):
        self.ids = {}
        self.by_id = {}
        for name, vid in vendor_names.items():
            if not isinstance(name, str) or not name or len(name) > VENDOR_NAME_MAX:
                continue
            self.ids[name] = vid
            if isinstance(vid, str):
                self.by_id.setdefault(vid.lower(), name)
        self.lengths = frozenset(len(name) for name in self.ids)

    def get(self, name, default=None):
        return self.ids.get(name, default)

    def __bool__(self):
        return bool(self.ids)

    __nonzero__ = __bool__

    def split(self, text, vendor_id=None):
        """(vendor, device) when ``text`` starts with a known vendor name and a space, else None.

        The name of ``vendor_id`` (the id lspci -nn printed) wins; otherwise the longest known name that ends at
        one of the first spaces of ``text``. Only spaces within VENDOR_NAME_MAX characters are tried, and a slice
        is looked up only when some vendor name has its length: at most VENDOR_NAME_MAX lookups of at most
        VENDOR_NAME_MAX characters per line."""
        name = self.by_id.get((vendor_id or '').lower())
        if name and text.startswith(name + ' '):
            return name, text[len(name) + 1:]
        end = text.rfind(' ', 0, min(len(text), VENDOR_NAME_MAX + 1))
        while end > 0:
            if end in self.lengths and text[:end] in self.ids:
                return text[:end], text[end + 1:]
            end = text.rfind(' ', 0, end)
        return None


def vendor_index(vendor_names):
    """A VendorIndex for ``vendor_names`` (a dict name -> id, or an index already), None for none."""
    if not vendor_names:
        return None
    return vendor_names if isinstance(vendor_names, VendorIndex) else VendorIndex(vendor_names)


def split_vendor_device(text, vendor_names=None, vendor_id=None):
    """Split "NVIDIA Corporation GA102GL [A10]" into vendor and device names.

    lspci prints the two names separated by one space, so the boundary is ambiguous. A known vendor name (from
    pci.ids: the name of ``vendor_id`` first, then the longest that fits) wins; otherwise the first company suffix
    marks the end of the vendor. Pass a VendorIndex (vendor_index) when splitting many lines."""
    index = vendor_index(vendor_names)
    found = index.split(text, vendor_id) if index else None
    if found:
        return found
    m = COMPANY.fullmatch(text)
    if m:
        return m.group('vendor'), m.group('dev')
    return None, text


def _strip_suffixes(text):
    """``(head, [match, ...])``: every trailing "(rev a1)" / "(prog-if 00 [VGA controller])" of ``text``, last
    first, and the text before them.

    One scan from the end: an index walks back over each suffix (rfind of its opener, a fullmatch of the piece
    inside, then the blanks before it) and the head is sliced once, so the cost is linear in the text however many
    suffixes trail (slicing the head off after each suffix was quadratic)."""
    end, found = len(text), []
    while end > 0 and text[end - 1] == ')':
        start = text.rfind('(', 0, end)
        if start < 1 or not text[start - 1].isspace():
            break
        m = TAIL.fullmatch(text, start + 1, end - 1)
        if not m:
            break
        found.append(m)
        end = start
        while end > 0 and text[end - 1].isspace():
            end -= 1
    return (text[:end] if found else text), found


def _ids_suffix(text):
    """"NVIDIA Corporation GA102GL [A10] [10de:2236]" -> ("NVIDIA Corporation GA102GL [A10]", match)."""
    text = text.rstrip()
    if not text.endswith(']'):
        return text, None
    start = len(text) - 11
    m = IDS.fullmatch(text, max(start, 0)) if start >= 1 and text[start - 1].isspace() else None
    return (text[:start].rstrip(), m) if m else (text, None)


def _terse(line, vendor_names):
    lead = BDF_LEAD.match(line)
    if not lead:
        return None
    body = line[lead.end():]
    colon = body.find(':')
    if colon < 0 or colon + 1 >= len(body) or not body[colon + 1].isspace():
        return None
    head, rest = body[:colon], body[colon + 1:].strip()
    cid = None
    if head.endswith(']') and len(head) >= 7 and head[-6] == '[' and head[-7].isspace() and HEX4.fullmatch(head, len(head) - 5, len(head) - 1):
        cid, head = head[-5:-1], head[:-6]
    if '[' in head or not head.strip():
        return None
    dev = _empty(lead.group(0))
    dev['class_name'] = head.strip()
    dev['class_id'] = (cid or CLASS_IDS.get(dev['class_name']) or '').lower() or None
    rest, tails = _strip_suffixes(rest)  # "(rev a1)" and "(prog-if 00 [VGA controller])" may both trail
    for t in tails:
        if t.group('rev'):
            dev['revision'] = t.group('rev').lower()
        else:
            dev['prog_if'] = t.group('pi').lower()
    rest, ids = _ids_suffix(rest)
    if ids:
        dev['vendor_id'], dev['device_id'] = ids.group('v').lower(), ids.group('d').lower()
    vendor, device = split_vendor_device(rest, vendor_names, dev['vendor_id'])
    dev['vendor_name'], dev['device_name'] = vendor, device
    unknown = UNKNOWN_DEVICE.fullmatch(device or '')
    if unknown and not dev['device_id']:  # plain lspci prints an unnamed device as "Device 2236"
        dev['device_id'] = unknown.group('id').lower()
    if not dev['vendor_id'] and vendor:
        dev['vendor_id'] = (vendor_names or KNOWN_VENDORS).get(vendor)
    return dev


def _continuation(dev, key, value, vendor_names):
    if key == 'Subsystem':
        head, ids = _ids_suffix(' ' + value)
        name = value
        if ids:
            dev['subsystem_vendor_id'], dev['subsystem_device_id'] = ids.group('v').lower(), ids.group('d').lower()
            name = head.strip()
        dev['subsystem_name'] = name
        sv, sd = split_vendor_device(name, vendor_names, dev['subsystem_vendor_id'])
        if sv and not dev['subsystem_vendor_id']:
            dev['subsystem_vendor_id'] = (vendor_names or KNOWN_VENDORS).get(sv)
        unknown = UNKNOWN_DEVICE.fullmatch(sd or '')
        if unknown and not dev['subsystem_device_id']:
            dev['subsystem_device_id'] = unknown.group('id').lower()
    elif key == 'Kernel driver in use':
        dev['driver'] = value.strip() or None
    elif key == 'Kernel modules':
        dev['kernel_modules'] = [x.strip() for x in value.split(',') if x.strip()]
    elif key == 'IOMMU group':
        dev['iommu_group'] = value.strip()
    elif key == 'NUMA node':
        dev['numa_node'] = _int_or_none(value)
    elif key == 'Physical Slot':
        dev['physical_slot'] = value.strip()
    elif key == 'Flags':
        m = FLAGS_NUMA.search(value)
        if m:
            dev['numa_node'] = _int_or_none(m.group(1))
    elif key == 'Capabilities' and SRIOV_CAPABILITY in value:
        dev['_sriov'] = True  # -v shows the SR-IOV capability on a physical function only


def _cont(line):
    """("Kernel driver in use", "vfio-pci") for an lspci -k/-v continuation line, else None."""
    stripped = line.lstrip()
    for key in CONT_KEYS:
        if stripped.startswith(key + ':'):
            return key, stripped[len(key) + 1:].strip()
    return None


def _int_or_none(value):
    """A NUMA node number, None when the text is not a small non-negative integer (a huge run of digits would
    make int() raise, or take time quadratic in its length on older Pythons)."""
    text = str(value).strip()
    return int(text) if NUMBER.fullmatch(text) else None


def _name_id(value, with_ids=True):
    """"NVIDIA Corporation [10de]" -> (name, id); "NVIDIA Corporation" -> (name, None).

    ``with_ids`` is false when lspci ran without -n: a name such as "GA100 [A100]" must not lose "[A100]"."""
    value = value.strip()
    if with_ids and value.endswith(']'):
        start = value.rfind('[')
        m = BRACKET_ID.fullmatch(value, start) if start >= 0 else None
        if m:
            return value[:start].rstrip() or None, m.group('id').lower()
    return value or None, None


def _vmm_record(fields):
    dev = _empty(fields['Slot'][0])

    def get(key):
        return fields.get(key, [None])[0]

    # with -nn every name carries its id; a vendor id is always 4 hex digits, so the Vendor field tells
    vendor = get('Vendor') or ''
    end = len(vendor)
    nn = end >= 6 and vendor[-6] == '[' and vendor[-1] == ']' and bool(HEX4.fullmatch(vendor, end - 5, end - 1))
    if get('Class'):
        dev['class_name'], cid = _name_id(get('Class'), nn)
        dev['class_id'] = (cid or CLASS_IDS.get(dev['class_name']) or '').lower() or None
    if get('Vendor'):
        dev['vendor_name'], dev['vendor_id'] = _name_id(get('Vendor'), nn)
    if get('Device'):
        dev['device_name'], dev['device_id'] = _name_id(get('Device'), nn)
    if get('SVendor'):
        name, dev['subsystem_vendor_id'] = _name_id(get('SVendor'), nn)
        sname, dev['subsystem_device_id'] = _name_id(get('SDevice') or '', nn)
        dev['subsystem_name'] = ' '.join(x for x in (name, sname) if x)
    dev['revision'] = (get('Rev') or '').lower() or None
    dev['prog_if'] = (get('ProgIf') or '').lower() or None
    dev['driver'] = get('Driver')
    dev['kernel_modules'] = fields.get('Module', [])
    dev['numa_node'] = _int_or_none(get('NUMANode')) if get('NUMANode') is not None else None
    dev['iommu_group'] = get('IOMMUGroup')
    dev['physical_slot'] = get('PhySlot')
    return dev


def _parse_vmm(lines):
    out, fields = [], {}
    for line in lines + ['']:
        if not line.strip():
            if 'Slot' in fields:
                # host output: a record whose address is not one (a path, say) never becomes a device
                if not re.fullmatch(BDF, fields['Slot'][0]):
                    raise LspciError('a Slot line of the lspci output is not a PCI address (BB:DD.F with an '
                                     'optional domain): not the output of lspci -vmm')
                out.append(_vmm_record(fields))
            elif fields.get('Device') and re.fullmatch(BDF, fields['Device'][0]):  # -vm: first key Device
                values = fields.pop('Device')
                fields.update(Slot=values[:1], Device=values[1:] or [None])
                out.append(_vmm_record(fields))
            fields = {}
            continue
        m = VMM_KEY.fullmatch(line)
        if m:
            fields.setdefault(m.group('k'), []).append(m.group('v').strip())
    return out


def _parse_mm(line, number):
    """`-mm`: BB:DD.F "class" "vendor" "device" -rXX -pXX "svendor" "sdevice" (shell-quoted)."""
    try:
        parts = shlex.split(line)
    except ValueError as e:
        raise LspciError('lspci -mm text, line %d: %s in %r; expected BB:DD.F followed by double-quoted '
                         'class, vendor and device names' % (number, e, line[:200]))
    dev = _empty(parts[0])
    opts, names = [], []
    for p in parts[1:]:  # one pass: a membership test of each name in the options was quadratic
        (opts if MM_OPTION.fullmatch(p) else names).append(p)
    for o in opts:
        dev['revision' if o[1] == 'r' else 'prog_if'] = o[2:].lower()
    keys = [('class_name', 'class_id'), ('vendor_name', 'vendor_id'), ('device_name', 'device_id'),
            ('subsystem_vendor', 'subsystem_vendor_id'), ('subsystem_device', 'subsystem_device_id')]
    for (nk, ik), value in zip(keys, names):
        name, ident = _name_id(value)
        dev[nk] = name
        dev[ik] = ident
    dev['subsystem_name'] = ' '.join(x for x in (dev.pop('subsystem_vendor', None),
                                                 dev.pop('subsystem_device', None)) if x) or None
    if not dev['class_id']:
        dev['class_id'] = CLASS_IDS.get(dev['class_name'])
    return dev


def infer_vfs(devices):
    """Mark SR-IOV VFs that lspci text cannot show directly.

    lspci prints a VF with its PF's name and ids, so identical names prove nothing: two boards of one model can
    share a bus. Only SR-IOV evidence in the parsed text makes VFs: when exactly one GPU function on a bus shows
    the SR-IOV capability (``lspci -v``), the other functions there with its vendor:device are taken as its VFs.
    Without that evidence every function stays a PF here (sysfs discovery reads the physfn links instead). The
    result says it was inferred."""
    by_bus = {}
    for d in devices:
        if device_kind(d['class_id']) == 'gpu' and d['device_id']:
            by_bus.setdefault((d['bdf'].rsplit(':', 1)[0], d['vendor_id'], d['device_id']), []).append(d)
    for d in devices:
        d.setdefault('is_vf', False)
        d.setdefault('physfn', None)
    for group in by_bus.values():
        pfs = [d for d in group if d.get('_sriov')]
        if len(group) < 2 or len(pfs) != 1:
            continue
        for vf in group:
            if vf is not pfs[0]:
                vf['is_vf'], vf['physfn'], vf['vf_inferred'] = True, pfs[0]['bdf'], True
    for d in devices:
        d.pop('_sriov', None)
    return devices


def parse(text, vendor_names=None):
    """Parse lspci output; return a list of device dicts sorted by BDF.

    ``vendor_names`` maps vendor name -> id (from pci.ids) to split names and fill ids in the plain format.
    Lines that are not lspci output (shell prompts, "[...]" elisions, -v resource lines) are skipped."""
    if not isinstance(text, str):
        raise LspciError('lspci text must be a string, got %s' % type(text).__name__)
    lines = text.replace('\r\n', '\n').split('\n')
    vendor_names = vendor_index(vendor_names)
    if any(VMM_SLOT.fullmatch(ln) for ln in lines):
        devices = _parse_vmm(lines)
    else:
        devices, current = [], None
        for number, line in enumerate(lines, 1):
            if MM_LEAD.match(line):  # -mm
                current = _parse_mm(line, number)
                devices.append(current)
                continue
            dev = _terse(line, vendor_names)
            if dev:
                current = dev
                devices.append(dev)
                continue
            cont = _cont(line)
            if cont and current is not None:
                _continuation(current, cont[0], cont[1], vendor_names)
    for d in devices:
        d['kind'] = device_kind(d['class_id'], d['vendor_id'])
    devices.sort(key=lambda d: d['bdf'])
    return infer_vfs(devices)
