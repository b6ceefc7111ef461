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


def place(dest, entries, mode, phase, check_mode):
    """The common end of render_file and render_manifests. With a render session open in ``dest``, note every
    entry in it (the session writes each file once when it closes; in check mode nothing is noted and the close
    reports). Without one, write each entry whose content or mode differs, atomically, and give the diff, a
    Secret's values redacted.

    ``entries`` are dicts: ``name`` (the file name), ``writer`` (who renders it, for the session's messages) and
    either ``object`` (a Kubernetes object, dumped as YAML) or ``content`` (the text of a file that is no object,
    such as Helm values). Returns ``{'changed', 'files', 'deferred', 'diff'}``: ``files`` the paths written or to
    be written, ``diff`` ``{'before', 'after'}`` or None when no file's content changes. A RenderError raised
    here carries ``files``, the entries noted before it."""
    # imported here: render_session builds on this module, so a top-level import would be circular
    from ansible_collections.gpuvirt.provision.plugins.module_utils import render_session

    if not os.path.isdir(dest) and not check_mode:  # check mode: the directory task only pretended
        raise RenderError('%s is not a directory: create it first' % dest)
    if os.path.isdir(dest) and render_session.session(dest) is not None:
        if check_mode:  # a play previewing inside a real render run: the session's close writes and reports
            return {'changed': False, 'files': [os.path.join(dest, e['name']) for e in entries], 'deferred': True,
                    'diff': None}
        files = []
        for entry in entries:
            try:
                if 'object' in entry:
                    name = render_session.record(dest, entry['object'], entry['name'], entry['writer'], phase, mode)
                else:
                    name = render_session.record_file(dest, entry['name'], entry['content'], entry['writer'], phase,
                                                      mode)
            except RenderError as e:
                e.files = files
                raise
            files.append(os.path.join(dest, name))
        return {'changed': False, 'files': files, 'deferred': True, 'diff': None}
    files, changed, before, after = [], False, [], []
    for entry in entries:
        path = os.path.join(dest, entry['name'])
        content = dump(entry['object']) if 'object' in entry else entry['content']
        content_differs, mode_differs = needs_write(path, content, mode)
        files.append(path)
        if content_differs:
            old, content_shown = render_session.diff_texts(path, content, entry.get('object'))
            before.append(old)
            after.append(content_shown)
        if content_differs or mode_differs:
            changed = True
            if not check_mode:
                write_atomic(path, content, mode)
    diff = {'before': ''.join(before), 'after': ''.join(after)} if before else None
    return {'changed': changed, 'files': files, 'deferred': False, 'diff': diff}
