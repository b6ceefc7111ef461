# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every manifest builder shares, in one place. Pure Python, no Ansible imports.

``ManifestError`` is the one error the builders raise (each builder module re-exports it under its own name, so
``hco.ManifestError`` and ``node_labels.ManifestError`` are this class); ``checked`` turns a
``validators`` check into it; ``version_tuple`` parses the versions the builders compare; ``merge_owned_list`` and
``merge_permitted_devices`` merge the map-keyed permitted-device lists HyperConverged and KubeVirt share, keeping
what others wrote; ``differs`` tells whether applying a partial object would change the cluster's copy;
``as_dict``, ``as_list``, ``as_str`` and ``meta_of`` read an object from the cluster (untrusted input) without
trusting its shape.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators


class ManifestError(ValueError):
    """Bad input; the message names the offending value and the fix."""


# Reading what the cluster returned: every object is untrusted input, so a field of the wrong type reads as empty
# (never a crash) and the builder names what is missing.
def as_dict(value):
    """``value`` when it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value):
    """``value`` when it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def as_str(value):
    """``value`` when it is a string, else ''."""
    return value if isinstance(value, str) else ''


def meta_of(obj):
    """The ``metadata`` of an object (a dict, empty when it has none or is no object)."""
    return as_dict(as_dict(obj).get('metadata'))


def checked(check, value, name, hint='', message=None):
    """``check(value, name)`` (a ``validators`` function); its ValidationError becomes a ManifestError with the
    validator's sentence plus ``hint``, or ``message`` instead when given."""
    try:
        return check(value, name)
    except validators.ValidationError as exc:
        raise ManifestError(message if message is not None else '%s%s' % (exc, hint))


def version_tuple(version):
    """``(major, minor, patch)`` of ``1.8``, ``v1.8.2`` or ``4.19.0-rc.1`` (pre-release and build ignored)."""
    # [0-9], not \d: \d also takes other scripts' digits ('٢٦.7.1'), which would reach a CSV name as they are; at most
    # 9 digits a part (int() of thousands of digits raises ValueError, not this refusal), 128 characters in all
    text = str(version or '').strip()
    match = re.fullmatch(r'v?([0-9]{1,9})\.([0-9]{1,9})(?:\.([0-9]{1,9}))?(?:[-+][0-9A-Za-z.+-]*)?', text[:129])
    if not match or len(text) > 128:
        raise ManifestError("version %s is not MAJOR.MINOR[.PATCH]" % validators.shown(version))
    return tuple(int(x or 0) for x in match.groups())


def _same_provider(entry, want, key):
    """A foreign entry we would take over must keep its provider: replacing an external device plugin's entry by
    one KubeVirt's own plugin serves (or the reverse) changes which devices VMs get on every node, and a later run
    would remove it as ours. externalResourceProvider is false when absent (kubevirt/kubevirt v1.9.0
    staging/src/kubevirt.io/api/core/v1/types.go PciHostDevice/MediatedHostDevice, a plain bool, omitempty)."""
    theirs = bool(entry.get('externalResourceProvider', False))
    if theirs != bool(want.get('externalResourceProvider', False)):
        raise ManifestError(
            "the cluster already permits %s %s as %s (externalResourceProvider %s), set by someone else; this run "
            "wants it as %s with externalResourceProvider %s. Taking it over would change which device plugin "
            "serves it on every node, so it is never adopted (adopt_conflicting takes over entries of our provider "
            "only): remove or change that entry yourself if it should go, or keep the hosts that want %s out of "
            "this cluster" % (
                key, entry.get(key), entry.get('resourceName'), str(theirs).lower(), want.get('resourceName'),
                str(not theirs).lower(), entry.get(key)))


def merge_owned_list(current, desired, key, owned, keep_owned=False):
    """Merge one permitted-device list.

    ``current``: the cluster's list (may be None); ``desired``: ``{selector: entry}``; ``owned``: selectors an
    earlier run added. Returns ``(merged, now_owned, report)``; ``report`` has ``added``, ``updated``,
    ``removed``, ``kept_owned``, ``kept_foreign``, ``duplicates_dropped`` and ``conflicts`` (foreign entries with
    one of our selectors but another resource name: ours replaces them and they become ours, unless their
    externalResourceProvider differs from ours, which is refused, ManifestError). ``keep_owned``: ``desired`` is
    not the whole fleet's (hosts without facts in this run): an entry we own that it lacks stays, and stays ours
    (``kept_owned``), instead of being removed.
    """
    owned = set(owned or [])
    report = {'added': [], 'updated': [], 'removed': [], 'kept_owned': [], 'kept_foreign': [],
              'duplicates_dropped': [], 'conflicts': []}
    merged, seen, now_owned = [], set(), set()
    for entry in current or []:
        sel = entry.get(key) if isinstance(entry, dict) else None
        if sel is None:
            merged.append(entry)  # not ours to judge; the schema requires the key anyway
            continue
        if sel in seen:
            # the list is map-keyed on the selector: a second copy would be rejected by the API server
            report['duplicates_dropped'].append(sel)
            continue
        seen.add(sel)
        if sel in desired:
            want = desired[sel]
            if sel in owned:
                new = dict(entry, **want)
                now_owned.add(sel)
                if new != entry:
                    report['updated'].append(sel)
            elif entry.get('resourceName') == want['resourceName']:
                # someone else permitted exactly this device: leave it theirs, so we never remove it
                new = entry
                report['kept_foreign'].append(sel)
            else:
                _same_provider(entry, want, key)
                new = dict(entry, **want)
                now_owned.add(sel)
                report['conflicts'].append({'selector': sel, 'theirs': entry.get('resourceName'),
                                            'ours': want['resourceName']})
            merged.append(new)
        elif sel in owned and keep_owned:
            merged.append(entry)
            now_owned.add(sel)
            report['kept_owned'].append(sel)
        elif sel in owned:
            report['removed'].append(sel)
        else:
            merged.append(entry)
            report['kept_foreign'].append(sel)
    for sel in sorted(desired):
        if sel not in seen:
            merged.append(dict(desired[sel]))
            now_owned.add(sel)
            report['added'].append(sel)
    return merged, sorted(now_owned), report


# what ``merge_owned_items``' key returns for an item that is not one of the merged kind (kept as it is)
UNKEYED = object()


def merge_owned_items(current, wanted, owned, key=None, make=None):
    """Merge ``wanted`` keys into the list ``current`` (feature gates, or jsonpatch operations that add them).

    Items of ``current`` are kept in their order, except a repeated key and a key an earlier run added (in
    ``owned``) that is no longer wanted; wanted keys not present are appended as ``make(key)``. ``key(item)``
    gives an item's key, or ``UNKEYED`` for an item of another kind (always kept). Returns ``(merged, now_owned)``:
    the owned keys still wanted and present, and those appended."""
    key = key or (lambda item: item)
    make = make or (lambda k: k)
    owned = owned or []
    result, seen = [], set()
    for item in current or []:
        k = key(item)
        if k is not UNKEYED:
            if k in seen or (k in owned and k not in wanted):
                continue
            seen.add(k)
        result.append(item)
    now_owned = [k for k in owned if k in wanted and k in seen]
    for k in wanted:
        if k not in seen:
            result.append(make(k))
            seen.add(k)
            now_owned.append(k)
    return result, sorted(set(now_owned))


def unknown_hosts_check(live_unread, unknown_hosts, kind):
    """Refuse a render of a permitted-device list made without the live object (``live_unread``: why it was not
    read, '' when it was or when this is apply mode) while GPU hosts of the fleet have no facts in this run
    (``unknown_hosts``): their entries can be neither kept nor told apart, and a sync of the render replaces the live
    list without them (docs/gitops.md, "Lists the render shares with the cluster")."""
    if unknown_hosts and live_unread:
        raise ManifestError(
            "%s: no GPU facts in this run for %s (left out by a limit or the pool answer), and the "
            "render has no live object to keep their permitted devices from (%s): it would hold only the other "
            "hosts' devices, and a sync of it would remove theirs. Render with every VM host of the fleet (the pool "
            "answer all and no limit; their saved facts serve a render)" % (kind, ', '.join(unknown_hosts), live_unread))


def merge_permitted_devices(current_phd, desired, lists, owned, keep_owned=False):
    """Merge every list of a ``permittedHostDevices`` map (``lists``: ``(list name, selector key)`` pairs).

    Returns ``(permittedHostDevices, now_owned, report)``: a list is written when it has entries or the cluster
    has it (an emptied list stays, as ``[]``); ``now_owned`` and ``report`` are keyed by list name.
    ``keep_owned``: see merge_owned_list."""
    phd, new_owned, report = {}, {}, {}
    for list_name, key in lists:
        merged, mine, rep = merge_owned_list(current_phd.get(list_name), desired[list_name], key,
                                             owned.get(list_name), keep_owned)
        if merged or current_phd.get(list_name) is not None:
            phd[list_name] = merged
        if mine:
            new_owned[list_name] = mine
        report[list_name] = rep
    return phd, new_owned, report


def differs(current, obj):
    """True when applying ``obj`` would change ``current`` (fields of obj only)."""
    if not current:
        return True

    def sub(want, have):
        if isinstance(want, dict):
            return isinstance(have, dict) and all(sub(v, have.get(k)) for k, v in want.items())
        return want == have

    probe = copy.deepcopy(obj)
    return not (sub(probe['metadata'].get('annotations', {}), (current.get('metadata') or {}).get('annotations') or {})
                and sub(probe['spec'], current.get('spec') or {}))


def unmerged_warning(obj, lists, hint):
    """The warning for ``obj`` rendered without the live object it patches (render mode, nothing read or given),
    or None when it sets none of ``lists``. ``lists``: ``(path, how)`` pairs, ``path`` a tuple of keys, ``how``
    what the object's schema makes of the field: ``atomic`` (any apply replaces the whole list), ``map`` (a list
    keyed per entry: server-side apply keeps other managers' entries, a client-side apply replaces it) or ``text``
    (one string value: replaced by any apply). ``hint``: what to set so the render reads or is given it."""
    present = []
    for path, how in lists:
        node = obj
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            present.append('%s (%s)' % ('.'.join(path), how))
    if not present:
        return None
    meta = obj.get('metadata') or {}
    where = '/'.join(part for part in (meta.get('namespace'), meta.get('name')) if part)
    return ("%s %s is rendered without the live object (%s): %s hold only this render's entries, and a sync of the "
            "render replaces the live ones, removing the entries others added (an atomic list or a text by any "
            "apply, a map-keyed list by a client-side apply; docs/gitops.md, \"Lists the render shares with the "
            "cluster\")" % (obj.get('kind'), where, hint, ', '.join(present)))


def permitted_devices_warnings(kind, obj, report, lists, unknown_hosts, live_unread):
    """The warnings of a permitted-device build (HyperConverged or the KubeVirt CR), in order: the entries kept for
    the VM hosts with no facts in this run (``kept_warning``), then, where ``live_unread`` says why the live object
    was not read, the lists ``obj`` replaces (``unmerged_warning``)."""
    warnings = [kept_warning(kind, report, unknown_hosts)]
    if live_unread:
        warnings.append(unmerged_warning(obj, lists, live_unread))
    return [warning for warning in warnings if warning]


def kept_warning(kind, report, unknown_hosts):
    """The warning for the entries an earlier run added that were kept because some VM hosts have no facts in this
    run (``report`` of the permitted-device merge); '' when none was kept."""
    kept = report['pciHostDevices']['kept_owned'] + report['mediatedDevices']['kept_owned']
    if not kept:
        return ''
    return ('%s: kept %s, permitted by an earlier run and not wanted by the hosts with facts in this run: no GPU facts '
            'for %s in this run (left out by a limit or the pool answer), whose devices they may be; a run with every '
            'VM host removes those no host wants' % (kind, ', '.join(kept), ', '.join(unknown_hosts)))
