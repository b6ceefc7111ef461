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
