# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendered manifests on disk: file names from validated object names, and atomic writes with the final mode.

A file is written to a temporary file in the destination directory, created with mode 0600 (mkstemp), given
its final mode, then renamed over the destination: a reader sees the old file or the whole new one, and a
Secret is never readable by others, not even for a moment. Pure Python, no Ansible imports."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import os
import re
import stat
import tempfile

try:
    import yaml
    HAS_YAML = True
except ImportError:
    HAS_YAML = False

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import gitops
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

KIND_RE = re.compile(r'[A-Za-z][A-Za-z0-9]{0,62}')
PREFIX_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,62}')
# a file name chosen by the caller: no directory, not hidden
FILE_NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,250}')
# the parts of a name file_names writes (object_file_name)
_COUNTER_RE = re.compile(r'[0-9]{3,}')
_KIND_PART_RE = re.compile(r'[a-z][a-z0-9]{0,62}')
_DNS_LABEL_RE = re.compile(r'[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?')
_DNS_SUBDOMAIN_RE = re.compile(r'[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?')


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


# the longest file name file_names writes: a longer one keeps the start of the object's name and ends in the hash of
# its identity (room for a Git checkout's path, and under FILE_NAME_RE's 251)
MAX_FILE_NAME = 200
# the hash that keeps a name unique (too long, or two objects of one name): hex digits of the identity's sha256
HASH_CHARS = 10


def identity(obj):
    """What names an object's file: ``(API group, kind, namespace, name)``. The version is left out, so that an
    object moved to a newer apiVersion keeps its file."""
    meta = obj.get('metadata') if isinstance(obj.get('metadata'), dict) else {}
    api_version = obj.get('apiVersion') if isinstance(obj.get('apiVersion'), str) else ''
    return (api_version.rpartition('/')[0], obj.get('kind'), meta.get('namespace') or '', meta.get('name'))


def _identity_hash(ident):
    return hashlib.sha256(('%s/%s/%s/%s' % ident).encode('utf-8')).hexdigest()[:HASH_CHARS]


def hashed_name(name, ident):
    """``name`` (one file_names wrote for the object ``ident``) with the hash of ``ident`` before ``.yaml``: the
    name of that object when another object of the render has the same name (two API groups with one kind, or a
    namespace and a name whose hyphens join the same way)."""
    stem = name[:-len('.yaml')]
    if stem.endswith('-' + _identity_hash(ident)):
        return name
    return _capped(stem, ident, force=True)


def _capped(stem, ident, force=False):
    """``stem + '.yaml'``, or when it is longer than MAX_FILE_NAME (or ``force``) the stem cut to fit, followed by
    ``-<hash of the identity>``: the same object always gets the same name, and the cut never ends in "-" or "."
    (the name part stays a DNS-1123 subdomain)."""
    if not force and len(stem) + len('.yaml') <= MAX_FILE_NAME:
        return stem + '.yaml'
    suffix = '-' + _identity_hash(ident)
    keep = MAX_FILE_NAME - len('.yaml') - len(suffix)
    return stem[:keep].rstrip('-.') + suffix + '.yaml'


def file_names(objects, prefix=''):
    """``<prefix>-<kind>-<namespace|cluster>-<name>.yaml`` for each object, after checking every part against its
    Kubernetes grammar, so no name can climb out of the render directory (``../../x``). A name depends only on the
    object's identity and the prefix (the wave), never on its place in ``objects``: one object more (a host added)
    adds its file and renames none. A name longer than MAX_FILE_NAME is cut and ends in the hash of the identity;
    two objects of ``objects`` that would get one name both end in the hash of their own identity."""
    if prefix and not PREFIX_RE.fullmatch(prefix):
        raise RenderError('render prefix %r is not valid; expected letters, digits, ".", "_" and "-"' % (prefix,))
    names, idents = [], []
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
        ident = identity(obj)
        idents.append(ident)
        names.append(_capped('%s%s-%s-%s' % (lead, kind.lower(), namespace or 'cluster', name), ident))
    return unique_names(names, idents)


def unique_names(names, idents):
    """``names`` where two different identities share a name replaced by ``hashed_name`` (each its own hash); a
    name that is still shared (a name crafted to look like another's hashed one) is refused, naming both."""
    owners = {}
    for name, ident in zip(names, idents):
        owners.setdefault(name, set()).add(ident)
    out = [hashed_name(name, ident) if len(owners[name]) > 1 else name for name, ident in zip(names, idents)]
    seen = {}
    for name, ident in zip(out, idents):
        if seen.setdefault(name, ident) != ident:
            raise RenderError('two objects get the file name %s: %s and %s; rename one of them'
                              % (name, '/'.join(seen[name]), '/'.join(ident)))
    return out


def _prefix_ok(parts):
    """Whether ``parts`` (split at "-") join to no prefix or to a valid one."""
    prefix = '-'.join(parts)
    return not parts or (len(prefix) <= 63 and PREFIX_RE.fullmatch(prefix) is not None)


def object_file_name(name):
    """Whether ``name`` is one file_names could have written, ``[<prefix>-]<kind>-<namespace|cluster>-<name>.yaml``,
    or an earlier version of it, ``[<prefix>-]<NNN>-<kind>-<namespace|cluster>-<name>.yaml`` (a counter of the
    object's place, so that a render after an upgrade prunes the files of the render before it), with each part in
    its grammar (the prefix's, a lower-case kind, a DNS-1123 label, a DNS-1123 subdomain). A render prunes only such
    a name (or a Helm values file's, render_session.HELM_VALUES_RE): the bookkeeping that lists what it wrote is
    committed like everything else and may name any file of the checkout. Split at "-" rather than one regular
    expression, whose backtracking over the ambiguous parts a hostile name could make slow."""
    if not (isinstance(name, str) and len(name) <= 251 and name.endswith('.yaml')):
        return False
    parts = name[:-len('.yaml')].split('-')
    for index in range(len(parts) - 2):
        if not _KIND_PART_RE.fullmatch(parts[index]):
            continue
        if not (_prefix_ok(parts[:index])
                or (index and _COUNTER_RE.fullmatch(parts[index - 1]) and _prefix_ok(parts[:index - 1]))):
            continue
        rest = parts[index + 1:]
        for split in range(1, len(rest)):
            namespace = '-'.join(rest[:split])
            if len(namespace) > 63:
                break
            if _DNS_LABEL_RE.fullmatch(namespace) and _DNS_SUBDOMAIN_RE.fullmatch('-'.join(rest[split:])):
                return True
    return False


def dump(obj):
    """The YAML text of one rendered object (a document start, keys in the object's order)."""
    return '---\n' + yaml.safe_dump(obj, indent=2, allow_unicode=True, default_flow_style=False, sort_keys=False)


def read(path):
    """The text of the regular file ``path``, None when it is missing, a symbolic link or not UTF-8 text: a link
    planted in the render directory is never followed (O_NOFOLLOW)."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return None


def _open_regular(path):
    """A file descriptor of the regular file ``path``, opened without following a symbolic link and without
    blocking on a FIFO; None when it is missing or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except (IOError, OSError):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def read_bytes(path, limit=None):
    """The bytes of the regular file ``path`` (None as for ``read``); with ``limit``, at most that many bytes
    plus one, so a caller sees that the file is too big without reading all of it (nor holding more of it)."""
    fd = _open_regular(path)
    if fd is None:
        return None
    chunks, size = [], 0
    with os.fdopen(fd, 'rb') as f:
        while limit is None or size <= limit:
            chunk = f.read(1 << 16 if limit is None else min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b''.join(chunks)


def sha256_text(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def file_sha256(path):
    """The sha256 of the regular file ``path``, read without following a link; None when it is no regular file."""
    fd = _open_regular(path)
    if fd is None:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 16), b''):
            digest.update(chunk)
    return digest.hexdigest()


def lstat(path):
    """os.lstat, or None when nothing is there."""
    try:
        return os.lstat(path)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def check_directory(dest):
    """The render directory must be a directory itself, not a symbolic link to one: the directory is a Git
    checkout others commit to, and a committed link would send every write and delete somewhere else."""
    path = os.path.abspath(dest)  # no trailing "/": lstat of "link/" would follow the link
    st = lstat(path)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise RenderError('%s is a symbolic link; set the render directory to the real directory it points to (%s)'
                          % (path, os.path.realpath(path)))
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise RenderError('%s is not a directory: create it first' % dest)


def check_replaceable(path, content, recorded=None, writer=None):
    """The one rule for writing ``content`` over a name in the render directory: nothing there, or a regular file
    (never a symbolic link, directory or device: lstat) that already holds ``content`` or whose sha256 is
    ``recorded``, the hash this collection recorded when it wrote the file. Anything else was put there by someone
    else, or changed since: RenderError naming it, before anything is written."""
    st = lstat(path)
    if st is None:
        return
    what = writer or os.path.basename(path)
    if not stat.S_ISREG(st.st_mode):
        kind = 'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a regular file'
        raise RenderError('%s is %s; the render writes %s there and never follows or replaces one: remove it'
                          % (path, kind, what))
    current = file_sha256(path)
    if current is None or (current != sha256_text(content) and current != recorded):
        raise RenderError('%s exists and was not written by this collection (or was changed since: its sha256 is not '
                          'the one recorded in the render bookkeeping); move it away (the render writes %s there)'
                          % (path, what))


def write_atomic(path, content, mode):
    """Write ``content`` to ``path`` through a 0600 temporary file in the same directory, set ``mode``, rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=directory)
    try:
        with os.fdopen(fd, 'wb') as f:
            # on the open descriptor, never by name after the close (a link swapped in at the temporary name)
            os.fchmod(f.fileno(), mode)
            f.write(content.encode('utf-8'))
            f.flush()
            os.fsync(f.fileno())
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
    return False, (os.lstat(path).st_mode & 0o7777) != mode


def place(dest, entries, mode, phase, check_mode, session=None):
    """The common end of render_file and render_manifests. With a render session open in ``dest``, note every
    entry in it (the session writes each file once when it closes; in check mode nothing is noted and the close
    reports): only when ``session`` is the token of its lock, the one this run's open step created; a lock that
    is not this run's stops the step, naming it. Without one, write each entry whose content or mode differs,
    atomically, and give the diff, a Secret's values redacted.

    ``entries`` are dicts: ``name`` (the file name), ``writer`` (who renders it, for the session's messages) and
    either ``object`` (a Kubernetes object, dumped as YAML) or ``content`` (the text of a file that is no object,
    such as Helm values). Returns ``{'changed', 'files', 'deferred', 'diff'}``: ``files`` the paths written or to
    be written, ``diff`` ``{'before', 'after'}`` or None when no file's content changes. A RenderError raised
    here carries ``files``, the entries noted before it."""
    # imported here: render_session builds on this module, so a top-level import would be circular
    from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render_session

    check_directory(dest)
    if not os.path.isdir(dest) and not check_mode:  # check mode: the directory task only pretended
        raise RenderError('%s is not a directory: create it first' % dest)
    # a --check run's session (render_session.open_session with check_mode) lives outside dest: entries are noted
    # there the same way, so that its close previews exactly what the real run's close writes
    checking = render_session.is_check_session(session)
    if checking or (os.path.isdir(dest) and render_session.session(dest) is not None):
        if check_mode and not checking:  # a play previewing inside a real render run: the close writes, reports
            return {'changed': False, 'files': [os.path.join(dest, e['name']) for e in entries], 'deferred': True,
                    'diff': None}
        files = []
        for entry in entries:
            try:
                if 'object' in entry:
                    name = render_session.record(dest, entry['object'], entry['name'], entry['writer'], phase, mode,
                                                 session=session)
                else:
                    name = render_session.record_file(dest, entry['name'], entry['content'], entry['writer'], phase,
                                                      mode, session=session)
            except RenderError as e:
                e.files = files
                raise
            files.append(os.path.join(dest, name))
        return {'changed': False, 'files': files, 'deferred': True, 'diff': None}
    # no session, so no bookkeeping of what is ours: a regular file of that name is the caller's to replace, but a
    # symbolic link (or a directory) planted there is refused before anything is read or written
    for entry in entries:
        st = lstat(os.path.join(dest, entry['name']))
        if st is not None and not stat.S_ISREG(st.st_mode):
            check_replaceable(os.path.join(dest, entry['name']), '', None, entry['writer'])
    files, changed, before, after = [], False, [], []
    for entry in entries:
        path = os.path.join(dest, entry['name'])
        # what keeps a GitOps tool from deleting an object we only patch (gitops.KINDS) goes on every rendered object,
        # session or not; the sync wave and the dry-run skip order a render run's sync, they stay the session's
        if 'object' in entry:
            content = dump(gitops.for_gitops(entry['object'], skip_dry_run=False))
        else:
            content = entry['content']
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
