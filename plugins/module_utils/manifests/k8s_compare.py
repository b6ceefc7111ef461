# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a server-side apply would change an object: compare the server's dry-run result with the stored object.

What the API server keeps for its own bookkeeping is left out: ``metadata.managedFields`` (field ownership; some
servers re-stamp a ``before-first-apply`` entry on every apply of an object first created by a plain create) and
``metadata.resourceVersion`` (a dry run may report a new one). Everything else — spec, labels, annotations, data,
status — counts, so a real change is never missed.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

BOOKKEEPING = ('managedFields', 'resourceVersion')


def _strip(obj):
    obj = copy.deepcopy(obj or {})
    meta = obj.get('metadata')
    if isinstance(meta, dict):
        for key in BOOKKEEPING:
            meta.pop(key, None)
    return obj


def would_change(dry_run, current):
    """True when ``dry_run`` (the dry-run apply's result) differs from ``current`` (the stored object, or None when
    there is none) other than in the server's bookkeeping."""
    if not current:
        return True
    return _strip(dry_run) != _strip(current)


def namespace_pending(preview):
    """Whether the dry run of ``preview`` (one result of the k8s_objects preview loop, its object under ``item``)
    was refused only because the object's Namespace is still to be created: the API server's NotFound names the
    namespace in its details. The preview task lets such a result through only when that Namespace is created by
    the same list (or the run only previews), so such an object is one to apply."""
    obj = preview.get('item') if isinstance(preview.get('item'), dict) else {}
    namespace = (obj.get('metadata') or {}).get('namespace') or ''
    msg = preview.get('msg') if isinstance(preview.get('msg'), str) else ''
    return not preview.get('result') and '"details":{"name":"%s","kind":"namespaces"}' % namespace in msg


def preview_changes(previews, stored):
    """The results of ``previews`` (the preview loop's results, in the order of the objects) whose object a real
    apply would change: its Namespace is still to be created (``namespace_pending``), or its dry run differs from
    the stored object (``stored``: the k8s_info loop's results, same order) other than in the server's bookkeeping.
    The preview itself reports no change in a run that applies: the apply of these objects does."""
    out = []
    for index, preview in enumerate(previews or []):
        if not isinstance(preview, dict) or preview.get('skipped'):
            continue
        if namespace_pending(preview):
            out.append(preview)
            continue
        found = stored[index] if stored and index < len(stored) and isinstance(stored[index], dict) else {}
        resources = found.get('resources') or []
        if would_change(preview.get('result') or {}, resources[0] if resources else None):
            out.append(preview)
    return out
