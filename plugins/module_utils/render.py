# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendered manifests on disk: file names from validated object names, and atomic writes with the final mode.

A file is written to a temporary file in the destination directory, created with mode 0600 (mkstemp), given
its final mode, then renamed over the destination: a reader sees the old file or the whole new one, and a
Secret is never readable by others, not even for a moment. Pure Python, no Ansible imports."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import tempfile

try:
    import yaml
    HAS_YAML = True
except ImportError:
    HAS_YAML = False

from ansible_collections.gpuvirt.provision.plugins.module_utils import validators

KIND_RE = re.compile(r'[A-Za-z][A-Za-z0-9]{0,62}')
PREFIX_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,62}')
# a file name chosen by the caller: no directory, not hidden
FILE_NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,250}')


class RenderError(ValueError):
    """An object or a file name that cannot be rendered; the message names it and the fix."""


def file_mode(text):
    """A file mode given as octal text ("0644", "0600") -> its number; RenderError for anything else."""
    try:
        mode = int(text, 8)
    except (TypeError, ValueError):
        mode = -1
    if not 0 <= mode <= 0o777:
        raise RenderError('mode %r is not an octal file mode such as 0644 or 0600' % (text,))
    return mode


def file_names(objects, prefix=''):
    """``<prefix>-<NNN>-<kind>-<namespace|cluster>-<name>.yaml`` for each object, after checking every part
    against its Kubernetes grammar, so no name can climb out of the render directory (``../../x``)."""
    if prefix and not PREFIX_RE.fullmatch(prefix):
        raise RenderError('render prefix %r is not valid; expected letters, digits, ".", "_" and "-"' % (prefix,))
    names = []
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise RenderError('object number %d is %r; expected a Kubernetes object (a dict)' % (i, obj))
        meta = obj.get('metadata') if isinstance(obj.get('metadata'), dict) else {}
        kind = obj.get('kind')
        try:
            if not isinstance(kind, str) or not KIND_RE.fullmatch(kind):
                raise validators.ValidationError('kind: %r is not valid; expected a Kubernetes kind such as '
                                                 'ConfigMap' % (kind,))
            name = validators.dns1123_subdomain(meta.get('name'), 'metadata.name')
            namespace = meta.get('namespace')
            if namespace is not None:
                validators.dns1123_label(namespace, 'metadata.namespace')
        except validators.ValidationError as e:
            raise RenderError('object number %d: %s' % (i, e))
        lead = prefix + '-' if prefix else ''
        names.append('%s%03d-%s-%s-%s.yaml' % (lead, i, kind.lower(), namespace or 'cluster', name))
    return names


def dump(obj):
    """The YAML text of one rendered object (a document start, keys in the object's order)."""
    return '---\n' + yaml.safe_dump(obj, indent=2, allow_unicode=True, default_flow_style=False, sort_keys=False)


def read(path):
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8')
    except (IOError, OSError):
        return None


def write_atomic(path, content, mode):
    """Write ``content`` to ``path`` through a 0600 temporary file in the same directory, set ``mode``, rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=directory)
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(content.encode('utf-8'))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def needs_write(path, content, mode):
    """(content differs, mode differs) for an existing or missing file."""
    current = read(path)
    if current != content:
        return True, True
    return False, (os.stat(path).st_mode & 0o7777) != mode
