# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A render into a directory as one unit: lock, each object once, prune, kustomization, completeness mark.

A render run opens a session in the directory (``.gpuvirt-render.lock``, created exclusively, holding a random
session token that the open step returns and every later step of the run gives back), records every object
written through it (one file per apiVersion/kind/namespace/name: a second writer of the same object is merged into
the first file, or refused when the two disagree), and closes it: files
an earlier complete render of the same scope wrote and this one did not are deleted (never a file we did not
write), ``kustomization.yaml`` lists the objects in file-name order, and ``.gpuvirt-render.json`` records what is
ours with ``complete: true``. A killed render leaves the lock and ``complete: false``: the next render stops,
naming the lock, and takes it over only when asked to (``gpuvirt_render_takeover_lock``).

The directory is a Git checkout others commit to, so the lock and the manifest are untrusted input: checked for
shape and names before use, never followed through a symbolic link. A lock is this run's only when it holds this
run's token (never by its pid, which is predictable in a container), and a file is pruned only when its name is one
the builders write and it is a regular file still holding the sha256 recorded when it was written. Pure Python, no
Ansible imports.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import errno
import hmac
import json
import os
import re
import secrets
import socket
import stat
import tempfile
import time

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import gitops, render

LOCK = '.gpuvirt-render.lock'
MANIFEST = '.gpuvirt-render.json'
KUSTOMIZATION = 'kustomization.yaml'
# 2: every file recorded with the sha256 of what was written (1 could record an empty one); the lock records
# what its close is writing, so the next render can prove what a killed close wrote. 3: the Flux kustomizations of
# the wave groups (gitops.FLUX_GROUPS, ``<group>/kustomization.yaml``) recorded with their sha256 (``flux``; the
# lock's ``writing_flux``)
FORMAT = 3
# the first format that records a sha256 for every file
HASHED_FORMAT = 2
# more than any render writes (the lock holds every pending object): a bigger bookkeeping file is refused unread
MAX_BOOKKEEPING = 32 * 1024 * 1024
# the largest pid_max Linux allows (PID_MAX_LIMIT in the kernel's include/linux/threads.h, 4 * 1024 * 1024 on
# 64-bit)
PID_MAX = 4 * 1024 * 1024
PHASE_RE = re.compile(r'[A-Za-z0-9._-]{0,63}')
SHA256_RE = re.compile(r'[0-9a-f]{64}')
# the lock's session token (secrets.token_hex(32)): what makes a lock this run's
TOKEN_RE = re.compile(r'[0-9a-f]{64}')
# the token of a check-mode run (--check): its session is kept outside the render directory (check_dir), which it
# never writes to, so that the close can say what the real run would write, prune and show in --diff
CHECK_TOKEN_RE = re.compile(r'check-([0-9a-f]{64})')
CHECK_DIR_PREFIX = 'gpuvirt-render-check-'
# the host recorded in the lock, shown when another run finds it (a host name, or '' when it is not one)
HOST_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,252}')
# the run input that takes over a lock this run did not create (playbooks/render_open.yml)
TAKEOVER = 'gpuvirt_render_takeover_lock'
# more files, objects or phases than any render has: a bookkeeping file with more is refused
MAX_ENTRIES = 10000
# the longest object key or writer a render records
MAX_TEXT = 1024
# the times recorded (seconds since the epoch): up to the year 5138, so that showing one cannot overflow
MAX_TIME = 1e11
# the Helm values files of the gpu_operator and dra_driver roles (render_file):
# <NN>-<role's words>-helm-values-<Helm release name>.yaml; with render.object_file_name the only names a render prunes
HELM_VALUES_RE = re.compile(r'[0-9]{2}-[a-z0-9]+(?:-[a-z0-9]+)*-helm-values-[a-z0-9](?:[-a-z0-9]{0,51}[a-z0-9])?\.yaml')
# the keys this collection writes; another key is a file of another shape
MANIFEST_KEYS = frozenset(('format', 'complete', 'files', 'kustomization', 'finished', 'flux'))
RECORDED_KEYS = frozenset(('phase', 'sha256', 'resource'))
LOCK_KEYS = frozenset(('format', 'owner', 'pid', 'started', 'updated', 'host', 'token', 'depth', 'phases', 'objects',
                       'files', 'writing', 'writing_flux'))
LOCK_ENTRY_KEYS = {'objects': frozenset(('file', 'writer', 'writers', 'phase', 'object', 'mode')),
                   'files': frozenset(('file', 'writer', 'writers', 'phase', 'content', 'mode'))}
_FIX = ('restore it from the Git history of the directory, or remove it (with no bookkeeping nothing is pruned '
        'and a file of a rendered name that does not hold the rendered text stops the render)')
SYNC_WAVE = gitops.SYNC_WAVE
SYNC_OPTIONS = gitops.SYNC_OPTIONS
SKIP_DRY_RUN = gitops.SKIP_DRY_RUN
# the owner of a site-wide render run (playbooks/site.yml): its close prunes every phase's stale files
SITE = 'site'
# custom resources whose CRD an operator installs: gitops.KINDS, the one table of what a kind means to a GitOps tool
OPERATOR_CRS = gitops.OPERATOR_CRS
FILE_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,250}\.yaml')
# the documents a render writes beside its objects (not YAML): playbooks/upgrade.yml's recipe
# (module_utils/manifests/upgrade_render.py RECIPE_FILE); written, recorded and pruned like the Helm values
DOCUMENTS = ('UPGRADE.md',)
REDACTED = '(redacted)'
REDACTED_CHANGED = '(redacted, changed)'


def object_key(obj):
    meta = obj.get('metadata') or {}
    return '%s/%s/%s/%s' % (obj.get('apiVersion'), obj.get('kind'), meta.get('namespace') or '', meta.get('name'))


def sha256(text):
    return render.sha256_text(text)


def is_check_session(token):
    """Whether ``token`` is the token of a check-mode session (open_session with ``check_mode``)."""
    return isinstance(token, str) and CHECK_TOKEN_RE.fullmatch(token) is not None


def check_dir(token):
    """The private directory of the check-mode session ``token``: in the system's temporary directory, named by
    the token (256 random bits, so no other user can have made it in advance), mode 0700."""
    return os.path.join(tempfile.gettempdir(), CHECK_DIR_PREFIX + CHECK_TOKEN_RE.fullmatch(token).group(1))


def _check_dir_ours(path):
    """The check-mode session's directory must be the one this user created: a directory (not a link), this
    user's, 0700; anything else is refused, naming it."""
    st = render.lstat(path)
    if st is None:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise render.RenderError('%s is not the private directory this check-mode run created (a directory of this '
                                 'user, mode 0700): remove it and run again' % path)
    return True


def lock_path(dest, token=None):
    """Where the lock of the session ``token`` is: ``dest``/.gpuvirt-render.lock, or for a check-mode session the
    lock in its own directory (check_dir): a --check run writes nothing into the render directory."""
    if is_check_session(token):
        directory = check_dir(token)
        return os.path.join(directory, LOCK) if _check_dir_ours(directory) else None
    return os.path.join(dest, LOCK)


def _load(path, check):
    """The bookkeeping file ``path`` (the lock or the manifest), checked by ``check(data, path)``; None when it is
    missing. The render directory is a Git checkout others commit to, so its bookkeeping is input like any other:
    a symbolic link, a file over MAX_BOOKKEEPING bytes, text that is not JSON or JSON of another shape is refused,
    naming the file and the fix."""
    st = render.lstat(path)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise render.RenderError('%s is not a regular file (a symbolic link or a directory); it is the render '
                                 'bookkeeping of this directory and is never followed: %s' % (path, _FIX))
    data = render.read_bytes(path, MAX_BOOKKEEPING)
    if data is None:
        raise render.RenderError('%s cannot be read as a regular file: %s' % (path, _FIX))
    return parse(data, path, check)


def parse(data, path, check):
    """The bytes ``data`` of the bookkeeping file ``path`` as the JSON object ``check(data, path)`` accepts;
    RenderError naming the file and what is wrong with it for anything else (not JSON, another shape, a name that
    is no file name of ours, more than a render writes)."""
    if len(data) > MAX_BOOKKEEPING:
        raise render.RenderError('%s is larger than %d bytes, more than a render writes: %s'
                                 % (path, MAX_BOOKKEEPING, _FIX))
    try:
        data = json.loads(data.decode('utf-8'))
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than the interpreter's stack
        # ValueError covers UnicodeDecodeError
        raise render.RenderError('%s is not valid JSON; it is the render bookkeeping of this directory: %s'
                                 % (path, _FIX))
    if not isinstance(data, dict):
        raise render.RenderError('%s must hold a JSON object: %s' % (path, _FIX))
    check(data, path)
    return data


def _bad(path, what, value):
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + '...'
    return render.RenderError('%s: %s is %s; %s: %s' % (path, what, shown, 'not what this collection writes', _FIX))


def _is_int(value, low, high):
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _is_time(value):
    """A time as recorded: seconds since the epoch, up to MAX_TIME. JSON as Python reads it has NaN and Infinity:
    the range refuses both (NaN fails every comparison)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_TIME


def _is_text(value, limit=MAX_TEXT):
    return isinstance(value, str) and len(value) <= limit


def _check_keys(path, where, data, keys):
    unknown = sorted(key for key in data if key not in keys)
    if unknown:
        raise _bad(path, 'a key of %s' % where, unknown[0])


def _check_count(path, where, entries):
    if len(entries) > MAX_ENTRIES:
        raise render.RenderError('%s: %s has %d entries, more than a render writes (%d): %s'
                                 % (path, where, len(entries), MAX_ENTRIES, _FIX))


def valid_name(name):
    """A file name the render writes: letters, digits, ".", "_" and "-", not hidden, no directory (so no "/",
    "..", NUL or newline), not kustomization.yaml (written apart)."""
    return (isinstance(name, str) and len(name) <= 251 and render.FILE_NAME_RE.fullmatch(name) is not None
            and name != KUSTOMIZATION)


def valid_phase(phase):
    return isinstance(phase, str) and len(phase) <= 63 and PHASE_RE.fullmatch(phase) is not None


def check_phase(phase):
    """RenderError naming ``phase`` and the fix unless it is a valid phase (``valid_phase``)."""
    if not valid_phase(phase):
        raise render.RenderError('phase %r is not valid; expected at most 63 letters, digits, ".", "_" and "-", such '
                                 'as kubevirt' % (phase,))


def prunable_name(name):
    """A name the collection's builders write for the files of a render: an object's (render.file_names) or a
    Helm values file's (HELM_VALUES_RE). Only such a file is ever pruned: the bookkeeping that lists what was
    written is committed like everything else in the directory, and may name any file."""
    return valid_name(name) and (render.object_file_name(name)
                                 or HELM_VALUES_RE.fullmatch(name) is not None or name in DOCUMENTS)


def _check_recorded(path, where, files, hash_optional):
    """``files``: {name: {'phase', 'sha256', 'resource'}}, the shape of the manifest's files and of the lock's
    ``writing``."""
    if not isinstance(files, dict):
        raise _bad(path, where, files)
    _check_count(path, where, files)
    for name, entry in files.items():
        if not valid_name(name):
            raise _bad(path, 'a file name in %s' % where, name)
        if not isinstance(entry, dict):
            raise _bad(path, '%s[%s]' % (where, name), entry)
        _check_keys(path, '%s[%s]' % (where, name), entry, RECORDED_KEYS)
        digest = entry.get('sha256')
        if not (isinstance(digest, str) and (SHA256_RE.fullmatch(digest) or (hash_optional and digest == ''))):
            raise _bad(path, '%s[%s].sha256' % (where, name), digest)
        if not valid_phase(entry.get('phase') if entry.get('phase') is not None else ''):
            raise _bad(path, '%s[%s].phase' % (where, name), entry.get('phase'))
        if not isinstance(entry.get('resource', True), bool):
            raise _bad(path, '%s[%s].resource' % (where, name), entry.get('resource'))


def _check_manifest(data, path):
    _check_keys(path, 'the manifest', data, MANIFEST_KEYS)
    version = data.get('format')
    if _is_int(version, FORMAT + 1, 1 << 30):
        raise render.RenderError('%s has format %d, written by a newer version of this collection; upgrade the '
                                 'collection' % (path, version))
    if not _is_int(version, 1, FORMAT):
        raise _bad(path, 'format', version)
    # format 1 recorded an empty sha256 for what an interrupted render may have written: such a file cannot be
    # proven ours and is never pruned
    _check_recorded(path, 'files', data.get('files', {}), version < HASHED_FORMAT)
    _check_flux(path, 'flux', data.get('flux', {}))
    if not isinstance(data.get('complete', False), bool):
        raise _bad(path, 'complete', data.get('complete'))
    kustomization = data.get('kustomization', '')
    if not (isinstance(kustomization, str) and (kustomization == '' or SHA256_RE.fullmatch(kustomization))):
        raise _bad(path, 'kustomization', kustomization)
    if not _is_time(data.get('finished', 0)):
        raise _bad(path, 'finished', data.get('finished'))


def _check_lock(data, path):
    _check_keys(path, 'the lock', data, LOCK_KEYS)
    if not _is_int(data.get('format'), 1, FORMAT):
        raise _bad(path, 'format', data.get('format'))
    # a pid of 0 or below would make the liveness check signal a whole process group
    if not _is_int(data.get('pid'), 1, PID_MAX):
        raise _bad(path, 'pid', data.get('pid'))
    owner = data.get('owner')
    if not (isinstance(owner, str) and render.PREFIX_RE.fullmatch(owner)):
        raise _bad(path, 'owner', owner)
    for when in ('started', 'updated'):
        if not _is_time(data.get(when, 0)):
            raise _bad(path, when, data.get(when))
    # absent in a lock of an older version: such a lock is never this run's
    token = data.get('token', '')
    if not (isinstance(token, str) and (token == '' or TOKEN_RE.fullmatch(token))):
        raise _bad(path, 'token', token)
    host = data.get('host', '')
    if not (isinstance(host, str) and (host == '' or HOST_RE.fullmatch(host))):
        raise _bad(path, 'host', host)
    if not _is_int(data.get('depth', 1), 0, 1000):
        raise _bad(path, 'depth', data.get('depth'))
    phases = data.get('phases', [])
    if not (isinstance(phases, list) and len(phases) <= MAX_ENTRIES and all(valid_phase(phase) for phase in phases)):
        raise _bad(path, 'phases', phases)
    for where in ('objects', 'files'):
        entries = data.get(where, {})
        if not isinstance(entries, dict):
            raise _bad(path, where, entries)
        _check_count(path, where, entries)
        for key, entry in entries.items():
            if not (_is_text(key) and isinstance(entry, dict)):
                raise _bad(path, 'an entry of %s' % where, key)
            _check_keys(path, '%s[%s]' % (where, key), entry, LOCK_ENTRY_KEYS[where])
            if not valid_name(entry.get('file')) or (where == 'files' and entry.get('file') != key):
                raise _bad(path, '%s[%s].file' % (where, key), entry.get('file'))
            if not valid_phase(entry.get('phase') if entry.get('phase') is not None else ''):
                raise _bad(path, '%s[%s].phase' % (where, key), entry.get('phase'))
            if not _is_int(entry.get('mode', 0o644), 0, 0o777):
                raise _bad(path, '%s[%s].mode' % (where, key), entry.get('mode'))
            if not _is_text(entry.get('writer')):
                raise _bad(path, '%s[%s].writer' % (where, key), entry.get('writer'))
            writers = entry.get('writers', [])
            if not (isinstance(writers, list) and len(writers) <= MAX_ENTRIES
                    and all(_is_text(writer) for writer in writers)):
                raise _bad(path, '%s[%s].writers' % (where, key), writers)
            body = 'object' if where == 'objects' else 'content'
            if not isinstance(entry.get(body), dict if body == 'object' else str):
                raise _bad(path, '%s[%s].%s' % (where, key, body), type(entry.get(body)).__name__)
    _check_recorded(path, 'writing', data.get('writing', {}), False)
    _check_flux(path, 'writing_flux', data.get('writing_flux', {}))


def _check_flux(path, where, flux):
    """``flux``: {group directory: sha256 of its kustomization.yaml}, only the directories of gitops.FLUX_GROUPS
    (a committed manifest naming another directory is refused: nothing else is ever entered)."""
    if not isinstance(flux, dict):
        raise _bad(path, where, flux)
    for group, digest in flux.items():
        if group not in gitops.FLUX_GROUP_NAMES:
            raise _bad(path, 'a directory in %s' % where, group)
        if not (isinstance(digest, str) and SHA256_RE.fullmatch(digest)):
            raise _bad(path, '%s[%s]' % (where, group), digest)


def _load_manifest(dest):
    return _load(os.path.join(dest, MANIFEST), _check_manifest)


def _manifest_text(data):
    return json.dumps(data, indent=2, sort_keys=True) + '\n'


def _dump(path, data, mode=0o644):
    render.write_atomic(path, _manifest_text(data), mode)


def _dump_lock(path, lock):
    # 0600: the lock holds the objects of this render until it closes, a Secret among them. ``updated``: when this
    # run last wrote it, shown to a run that finds it
    lock['updated'] = time.time()
    _dump(path, lock, 0o600)


def _hostname():
    """This host's name as the lock records it: '' when it is not a plain host name."""
    name = socket.gethostname()
    return name if HOST_RE.fullmatch(name or '') else ''


def is_this_runs(lock, token):
    """Whether ``lock`` is the one this run created: it holds ``token``, the random session token this run's open
    step wrote into it and returned. Nothing else makes a lock this run's: its pid is predictable (the render's own
    pid in a CI or EE container), its owner and host are words anyone can commit."""
    recorded = lock.get('token')
    if is_check_session(token):
        token = CHECK_TOKEN_RE.fullmatch(token).group(1)
    return (isinstance(token, str) and TOKEN_RE.fullmatch(token) is not None and isinstance(recorded, str)
            and TOKEN_RE.fullmatch(recorded) is not None and hmac.compare_digest(recorded, token))


def _when(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC')


def _age(seconds, now):
    if seconds > now:
        return 'in the future'
    return '%s ago' % datetime.timedelta(seconds=int(now - seconds))


def describe(lock, now=None):
    """What a lock says of the run that holds it, as recorded (checked by _check_lock, so safe to show): pid,
    host, owner, start, age and last write; never its objects, which hold a Secret's data when one was rendered."""
    now = time.time() if now is None else now
    started = lock.get('started', 0)
    text = 'pid %d on host %s, owner %s, started %s, %s as recorded' % (
        lock['pid'], repr(lock['host']) if lock.get('host') else 'not recorded', lock['owner'], _when(started),
        _age(started, now))
    if 'updated' in lock:
        text += ', last written %s' % _age(lock['updated'], now)
    return text


def _foreign(path, dest, lock, now=None):
    return render.RenderError(
        '%s is a render lock this run did not create (%s): another render may be writing into %s, or one was '
        'interrupted, or the file was committed. Wait for a render that runs to finish; if none does, render again '
        'with %s=true to take the lock over (what it holds is dropped; the files its close had begun writing are '
        'pruned when they still hold what it recorded)' % (path, describe(lock, now), dest, TAKEOVER))


def open_session(dest, owner, pid, session=None, takeover=False, now=None, check_mode=False):
    """Take the directory for one render run. Returns ``{'session': <this run's token>, 'interrupted': <what the
    lock taken over said, or None>, 'reopened', 'warnings'}``.

    ``session``: the token an earlier open step of this run returned; with the lock that holds it, the open nests
    (a phase playbook imported by site.yml). Any other lock is not this run's and stops the render, named
    (``describe``), unless ``takeover``: then it is an interrupted render, removed: the files its close had begun
    writing (recorded in the lock with their sha256 before the first write) count as ours when they still hold that
    text, and are pruned at close unless this render writes them. ``pid`` is recorded to be shown, never trusted.

    Opening writes only the lock: ``.gpuvirt-render.json`` is rewritten by the close, and only when it changes.

    ``check_mode`` (--check): the same checks, and a session whose lock lives in a private directory outside
    ``dest`` (check_dir), so that the steps of the run note their objects and the close reports what the real run
    would write, prune and show in --diff, while nothing in ``dest`` is created, changed or removed. A lock taken
    over is only reported then."""
    render.check_directory(dest)
    now = time.time() if now is None else now
    path = os.path.join(dest, LOCK)
    earlier = _load(path, _check_lock)
    manifest = _load_manifest(dest) or {'format': FORMAT, 'files': {}}
    if is_check_session(session) and check_mode:
        own = lock_path(dest, session)
        mine = _load(own, _check_lock) if own else None
        if mine is not None and is_this_runs(mine, session):
            mine['depth'] = mine.get('depth', 1) + 1
            _dump_lock(own, mine)
            return {'session': session, 'interrupted': None, 'reopened': True, 'warnings': []}
    if earlier is not None and is_this_runs(earlier, session):
        # a phase playbook imported by site.yml: the same run, one level deeper
        earlier['depth'] = earlier.get('depth', 1) + 1
        _dump_lock(path, earlier)
        return {'session': session, 'interrupted': None, 'reopened': True, 'warnings': []}
    if earlier is not None and not takeover:
        raise _foreign(path, dest, earlier, now)
    token = secrets.token_hex(32)
    lock = {'format': FORMAT, 'owner': owner, 'pid': pid, 'host': _hostname(), 'token': token, 'started': now,
            'updated': now, 'objects': {}, 'depth': 1, 'phases': []}
    warnings = []
    if check_mode:
        session_token = 'check-' + token
        directory = check_dir(session_token)
        os.mkdir(directory, 0o700)  # fails when it exists: a name nobody can have made in advance
        _check_dir_ours(directory)
        _write_new(os.path.join(directory, LOCK), lock, dest)
        return {'session': session_token, 'interrupted': _summary(earlier), 'reopened': False, 'warnings': warnings}
    if earlier is not None:
        os.unlink(path)  # a regular file (checked): unlink removes the name, never what a link would point to
        files = manifest.setdefault('files', {})
        recovered = False
        for name, entry in sorted((earlier.get('writing') or {}).items()):
            if files.get(name, {}).get('sha256') != entry['sha256'] and \
                    render.file_sha256(os.path.join(dest, name)) == entry['sha256']:
                files[name] = {'phase': entry.get('phase') or '', 'sha256': entry['sha256'],
                               'resource': entry.get('resource', True)}
                recovered = True
            if entry.get('phase') not in lock['phases']:
                lock['phases'].append(entry.get('phase') or '')
        for group, digest in sorted((earlier.get('writing_flux') or {}).items()):
            # a Flux kustomization the killed close wrote: ours while it still holds the text it recorded, in a
            # real directory of that name (lstat: a link there is never entered)
            st = render.lstat(os.path.join(dest, group))
            flux = manifest.setdefault('flux', {})
            if flux.get(group) != digest and st is not None and stat.S_ISDIR(st.st_mode) and \
                    render.file_sha256(os.path.join(dest, group, KUSTOMIZATION)) == digest:
                flux[group] = digest
                recovered = True
        if earlier.get('format', 1) < HASHED_FORMAT and (earlier.get('objects') or earlier.get('files')):
            warnings.append('the interrupted render\'s lock %s is of an older format that does not record the files '
                            'its close wrote: none of them is pruned; remove stale ones by hand' % path)
        if recovered:
            # the files the killed close wrote are ours now: recorded before this run's lock is taken
            manifest['complete'] = False
            manifest.pop('finished', None)
            _dump(os.path.join(dest, MANIFEST), manifest)
    _write_new(path, lock, dest)
    return {'session': token, 'interrupted': _summary(earlier), 'reopened': False, 'warnings': warnings}


def _write_new(path, lock, dest):
    """Create the lock ``path`` exclusively and write ``lock`` into it."""
    try:
        # O_EXCL: a name that exists, a link planted there included, is never opened; O_NOFOLLOW as well, for a
        # system where O_EXCL alone would follow one. 0600 set on the descriptor, whatever the umask: the lock
        # holds the objects of this render until it closes, a Secret among them
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    except OSError as e:
        if e.errno == errno.EEXIST:
            raise render.RenderError('another render took %s at the same moment; render again' % dest)
        raise
    with os.fdopen(fd, 'w') as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(json.dumps(lock, indent=2, sort_keys=True) + '\n')


def _summary(lock):
    """What may be said about a lock taken over (pid, owner, host, start, how many objects): never its objects,
    which hold a Secret's data when one was rendered."""
    if lock is None:
        return None
    return {'pid': lock.get('pid'), 'owner': lock.get('owner'), 'host': lock.get('host', ''),
            'started': lock.get('started'), 'objects': len(lock.get('objects') or {}) + len(lock.get('files') or {})}


def controller_pid(pid=None):
    """The pid of the ansible-playbook run this module belongs to, read from /proc: the outermost ancestor running
    ansible-playbook (its task workers are forks with the same command line), else the parent's pid."""
    pid = pid or os.getpid()
    found = None
    for dummy in range(64):
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
            with open('/proc/%d/stat' % pid, 'rb') as f:
                ppid = int(f.read().rsplit(b')', 1)[1].split()[1])
        except (IOError, OSError, ValueError, IndexError):
            break
        if any(os.path.basename(arg) == b'ansible-playbook' for arg in argv[:2]):
            found = pid
        elif found is not None:
            break
        if ppid <= 1:
            break
        pid = ppid
    return found or os.getppid()


def session(dest, token=None):
    """The lock in ``dest``, or of the check-mode session ``token`` (checked for shape, not whose it is:
    ``owned``), or None when there is none."""
    path = lock_path(dest, token)
    return _load(path, _check_lock) if path else None


def owned(dest, token):
    """The lock of this run's session in ``dest``: RenderError when there is none, or when it does not hold
    ``token`` (``is_this_runs``), naming it."""
    lock = session(dest, token)
    if lock is None:
        raise render.RenderError('no render session is open in %s' % dest)
    if not is_this_runs(lock, token):
        raise _foreign(os.path.join(dest, LOCK), dest, lock)
    return lock


def merge(first, second, where=''):
    """Merge two renderings of one object; raise RenderError on a value the two set differently.

    Maps merge key by key; equal lists stay; lists of scalars or of maps are joined (first's order, then
    second's additions: feature gates, permitted devices); a ``.../jsonpatch`` annotation (a JSON list of patch
    operations) is joined the same way."""
    if isinstance(first, dict) and isinstance(second, dict):
        out = dict(first)
        for key, value in second.items():
            sub = '%s.%s' % (where, key) if where else key
            if key not in first:
                out[key] = copy.deepcopy(value)
            elif key.endswith('/jsonpatch') and isinstance(value, str) and isinstance(first[key], str):
                try:
                    out[key] = json.dumps(merge(json.loads(first[key]), json.loads(value), sub))
                except ValueError:
                    raise render.RenderError('%s is not a JSON list in both renderings' % sub)
            else:
                out[key] = merge(first[key], value, sub)
        return out
    if isinstance(first, list) and isinstance(second, list):
        return list(first) + [item for item in second if item not in first]
    if first != second:
        raise render.RenderError('%s: one writer sets %r, the other %r' % (where or '(the object)', first, second))
    return first


def record(dest, obj, name, writer, phase, mode=0o644, session=None):
    """Note ``obj`` (to be written as ``name`` with ``mode`` by ``writer``) in the open session whose token is
    ``session``; the files are written when the session closes, each once. Returns the file name the object will
    have: ``name``, or the first writer's file when another role of this render already rendered the object
    (merged into it)."""
    lock = owned(dest, session)
    key = object_key(obj)
    seen = lock['objects'].get(key)
    if seen is None:
        name = _unique_file(lock, key, obj, name)
        lock['objects'][key] = {'file': name, 'writer': writer, 'phase': phase, 'object': obj, 'mode': mode}
        _dump_lock(lock_path(dest, session), lock)
        return name
    try:
        merged = merge(seen['object'], obj)
    except render.RenderError as e:
        raise render.RenderError('%s is rendered twice, differently: by %s (%s) and by %s: %s; the two roles '
                                 'must agree on it' % (key, seen['writer'], seen['file'], writer, e))
    seen['object'] = merged
    seen['mode'] = min(seen.get('mode', mode), mode)
    seen['writers'] = sorted(set(seen.get('writers', [seen['writer']]) + [writer]))
    _dump_lock(lock_path(dest, session), lock)
    return seen['file']


def _unique_file(lock, key, obj, name):
    """The file of the object ``obj`` (``key``), given the name ``name`` its writer chose: when another object of
    this render already has that name (two API groups with one kind, or hyphens that join the same way), both take
    ``render.hashed_name``, the hash of their own identity, whichever came first; a name still shared is refused.
    Objects are written only at the close, so renaming one noted earlier changes no file."""
    def ident(entry_obj):
        return render.identity(entry_obj)

    others = [(other_key, entry) for other_key, entry in lock['objects'].items()
              if other_key != key and entry['file'] == name]
    if not others:
        return name
    for other_key, entry in others:
        if ident(entry['object']) == ident(obj):
            raise render.RenderError('%s and %s are one object in two API versions (by %s and by a later writer); '
                                     'the roles must render one version' % (other_key, key, entry['writer']))
    for dummy, entry in others:
        entry['file'] = render.hashed_name(entry['file'], ident(entry['object']))
    name = render.hashed_name(name, ident(obj))
    taken = [entry['file'] for other_key, entry in lock['objects'].items() if other_key != key]
    taken += list((lock.get('files') or {}))
    if name in taken:
        raise render.RenderError('two objects get the file name %s (%s and another); rename one of them'
                                 % (name, key))
    return name


def record_file(dest, name, content, writer, phase, mode=0o644, session=None):
    """Note a file that is not a Kubernetes object (Helm values) in the open session: written atomically when the
    session closes, recorded as ours (pruned like the objects), never listed in kustomization.yaml, and never
    written over a file of that name the collection did not write. Returns ``name``."""
    if not (FILE_RE.fullmatch(name or '') or name in DOCUMENTS) or name == KUSTOMIZATION:
        raise render.RenderError('file name %r is not valid; expected letters, digits, ".", "_" and "-" ending in '
                                 '.yaml (or one of %s), not %s' % (name, ', '.join(DOCUMENTS), KUSTOMIZATION))
    lock = owned(dest, session)
    files = lock.setdefault('files', {})
    seen = files.get(name)
    if seen is not None and seen['content'] != content:
        raise render.RenderError('%s is rendered twice, differently: by %s and by %s; the two roles must agree on '
                                 'it' % (name, seen['writer'], writer))
    if any(entry['file'] == name for entry in lock['objects'].values()):
        raise render.RenderError('%s is both an object file and a file of %s in this render' % (name, writer))
    files[name] = {'file': name, 'content': content, 'writer': writer, 'phase': phase, 'mode': mode}
    _dump_lock(lock_path(dest, session), lock)
    return name


def close_session(dest, dump, session=None):
    """Finish the render: write each recorded object once (``dump(obj)`` gives its text; a file already holding it
    is left alone), prune, write kustomization.yaml and the manifest (complete), release the lock. Opens and closes
    nest: a phase playbook imported by site.yml closes only its own level, site.yml's close finishes the run.

    Pruning: a site-wide run (opened by site.yml) deletes every file of ours an earlier render wrote and this one
    did not, also of a phase that now renders nothing; a phase run alone only those of its own phase. Files that
    are not Kubernetes objects (``record_file``) are pruned the same way and never listed in kustomization.yaml.
    The diff (``before``/``after``) shows a Secret's data keys, never their values.

    Everything in the directory is input: a name is pruned only when the bookkeeping lists it, it is a name the
    builders write (``prunable_name``), it is a regular file (lstat) and it still holds what this collection wrote
    (its recorded sha256); otherwise it stays, with a warning naming it. A name this close writes that holds a
    symbolic link, a directory, or a file this collection did not write or that was changed since stops the render
    before anything is written. Every file is written with the mode the collection chose (the module's ``mode``,
    0644 for kustomization.yaml and the manifest), never one found in the directory. Only the session whose token
    is ``session`` is closed.

    Byte-stable: a file, kustomization.yaml and ``.gpuvirt-render.json`` are rewritten only when their bytes (or
    mode) change, and the bookkeeping records no time, so an identical render writes nothing. While the close writes
    or deletes files, ``.gpuvirt-render.json`` says ``complete: false`` (a close killed then leaves it so).

    A check-mode session (open_session with ``check_mode``) is closed the same way up to the first write: the
    result says what the real close would write, prune and show in --diff, and nothing in ``dest`` changes; its
    private directory is removed.

    Returns ``{'closed': bool, 'dest': <absolute path>, 'written': [...], 'pruned': [...], 'files': [...],
    'before': .., 'after': .., 'warnings': [...]}``."""
    check_mode = is_check_session(session)
    lock = owned(dest, session)
    own_lock = lock_path(dest, session)
    lock['depth'] = lock.get('depth', 1) - 1
    if lock['depth'] > 0:
        _dump_lock(own_lock, lock)
        return {'closed': False, 'dest': os.path.abspath(dest), 'written': [], 'pruned': [], 'files': [],
                'before': '', 'after': '', 'warnings': []}
    if not check_mode:
        return _close(dest, dump, lock, own_lock, check_mode)
    # a check-mode session's private directory goes on every way out of its last close (a foreign file at a
    # rendered name raises from check_replaceable), never left in the temporary directory
    try:
        return _close(dest, dump, lock, own_lock, check_mode)
    finally:
        _remove_check_dir(own_lock)


def _remove_check_dir(own_lock):
    """Remove a check-mode session's lock and its private directory (check_dir); a directory holding anything else
    is left (it is not what open_session made)."""
    try:
        os.unlink(own_lock)
    except FileNotFoundError:
        pass
    try:
        os.rmdir(os.path.dirname(own_lock))
    except OSError:
        pass


def _close(dest, dump, lock, own_lock, check_mode):
    """close_session's last level: the writes, the prune and the bookkeeping (or, in check mode, what they would
    be)."""
    site_wide = lock.get('owner') == SITE
    scope = set(lock.get('phases') or []) | set(entry.get('phase') for entry in lock['objects'].values())
    scope |= set(entry.get('phase') for entry in (lock.get('files') or {}).values()) | {lock.get('owner')}
    manifest = _load_manifest(dest) or {'format': FORMAT, 'files': {}}
    ours = dict(manifest.get('files') or {})
    pending = [(entry, dump(with_argocd(entry['object'], entry['file']))) for entry in lock['objects'].values()]
    pending += [(entry, entry['content']) for entry in (lock.get('files') or {}).values()]
    pending.sort(key=lambda pair: pair[0]['file'])
    # every name this close writes, checked before anything changes: never through a link, never over a file
    # someone else put there or changed since this collection wrote it
    for entry, content in pending:
        render.check_replaceable(os.path.join(dest, entry['file']), content,
                                 (ours.get(entry['file']) or {}).get('sha256'), entry['writer'])
    written = dict((entry['file'], {'phase': entry['phase'] or '', 'sha256': sha256(content),
                                    'resource': 'object' in entry}) for entry, content in pending)
    prune, warnings = [], []
    for name, entry in sorted(ours.items()):
        unproven = not entry.get('sha256')  # format 1: whatever phase, it stays unproven, so it is dropped now
        if name in written or (not site_wide and entry.get('phase') not in scope and not unproven):
            continue
        del ours[name]
        path = os.path.join(dest, name)
        st = render.lstat(path)
        if st is None:
            continue
        if not prunable_name(name):
            warnings.append('%s is not a name this collection writes for an object or a Helm values file: not '
                            'pruned, and no longer recorded as written by this render' % path)
        elif not stat.S_ISREG(st.st_mode):
            warnings.append('%s is not a regular file (a symbolic link or a directory): not pruned, and no longer '
                            'recorded as written by this render' % path)
        elif unproven:
            warnings.append('%s has no sha256 in the render bookkeeping (an older format): it cannot be proven '
                            'to be this collection\'s and is not pruned; remove it by hand if it is stale' % path)
        elif render.file_sha256(path) != entry['sha256']:
            warnings.append('%s was changed since this collection wrote it: not pruned, and no longer recorded as '
                            'written by this render; remove it by hand if it is stale' % path)
        else:
            prune.append(name)
    ours.update(written)
    resources = sorted(name for name, entry in ours.items() if entry.get('resource', True))
    kustomization = kustomization_text(resources)
    kpath = os.path.join(dest, KUSTOMIZATION)
    render.check_replaceable(kpath, kustomization, manifest.get('kustomization'), 'its own list of the objects')
    flux_texts = gitops.flux_kustomizations(resources)
    flux_changes, flux_prune = _flux_plan(dest, flux_texts, manifest.get('flux') or {}, warnings)
    changes, before, after = [], [], []
    for entry, content in pending:
        path = os.path.join(dest, entry['file'])
        content_differs, mode_differs = render.needs_write(path, content, entry.get('mode', 0o644))
        if content_differs:
            old, content_shown = diff_texts(path, content, entry.get('object'))
            before.append(old)
            after.append(content_shown)
        if content_differs or mode_differs:
            changes.append((entry, content))
    kustomization_changes = any(render.needs_write(kpath, kustomization, 0o644))  # its mode too: a committed 0666
    manifest_path = os.path.join(dest, MANIFEST)
    flux_recorded = dict((group, sha256(text)) for group, text in flux_texts.items())
    manifest_text = _manifest_text({'format': FORMAT, 'complete': True, 'files': ours,
                                    'kustomization': sha256(kustomization), 'flux': flux_recorded})
    result = {'closed': True, 'dest': os.path.abspath(dest), 'written': [entry['file'] for entry, dummy in changes],
              'pruned': list(prune) + ['%s/%s' % (group, KUSTOMIZATION) for group in flux_prune],
              'files': sorted(ours), 'before': ''.join(before), 'after': ''.join(after), 'warnings': warnings}
    if kustomization_changes:
        result['written'].append(KUSTOMIZATION)
    result['written'] += ['%s/%s' % (group, KUSTOMIZATION) for group in flux_changes]
    result['flux'] = sorted('%s/%s' % (group, KUSTOMIZATION) for group in flux_texts)
    if check_mode:
        # what the real close would do, said; nothing in dest is touched (close_session removes the private
        # directory)
        return result
    if changes or prune or kustomization_changes or flux_changes or flux_prune:
        # a close killed from here on leaves files the lock does not name: record what it writes, with the hashes,
        # so the next render can prove them its own, and mark the directory incomplete until the close is done
        lock['writing'] = written
        lock['writing_flux'] = dict((group, flux_recorded[group]) for group in flux_changes)
        _dump_lock(own_lock, lock)
        if render.read(manifest_path) is not None or ours:
            incomplete = dict(manifest, complete=False)
            incomplete.pop('finished', None)
            _dump(manifest_path, incomplete)
    for entry, content in changes:
        render.write_atomic(os.path.join(dest, entry['file']), content, entry.get('mode', 0o644))
    pruned = []
    for name in prune:
        path = os.path.join(dest, name)
        # checked again right before: unlink removes a name, and the name must still be our regular file
        st = render.lstat(path)
        if st is not None and stat.S_ISREG(st.st_mode):
            os.unlink(path)
            pruned.append(name)
    for group in flux_changes:
        _write_flux(dest, group, flux_texts[group])
    for group in flux_prune:
        if _prune_flux(dest, group):
            pruned.append('%s/%s' % (group, KUSTOMIZATION))
    result['pruned'] = pruned
    if kustomization_changes:
        render.write_atomic(kpath, kustomization, 0o644)
    if render.read(manifest_path) != manifest_text or render.needs_write(manifest_path, manifest_text, 0o644)[1]:
        render.write_atomic(manifest_path, manifest_text, 0o644)
    os.unlink(own_lock)
    return result


def _flux_dir(dest, group):
    """``dest``/``group`` when it is a real directory, None when nothing is there; RenderError for anything else
    (a symbolic link, a file): the render enters no directory but its own groups', and never through a link."""
    if group not in gitops.FLUX_GROUP_NAMES:  # the manifest's names are checked; this is the one place they are used
        raise render.RenderError('%s is not a Flux group directory of the render' % group)
    path = os.path.join(dest, group)
    st = render.lstat(path)
    if st is None:
        return None
    if not stat.S_ISDIR(st.st_mode):
        kind = 'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a directory'
        raise render.RenderError('%s is %s; the render writes its Flux kustomization for the sync waves of %s there '
                                 'and never follows or replaces one: remove it' % (path, kind, group))
    return path


def _flux_plan(dest, texts, recorded, warnings):
    """What the close does with the Flux group directories (gitops.FLUX_GROUPS): ``(changes, prune)``, the groups
    whose kustomization.yaml it writes (absent or different) and those whose recorded one it deletes (no file of
    the group any more). Checked before anything is written, by the rule of every other name: a directory of a group
    must be a real directory, its kustomization.yaml absent, holding the text or the recorded sha256; a recorded one
    is deleted only when it still holds the recorded sha256 (else it stays, with a warning)."""
    changes, prune = [], []
    for group, text in sorted(texts.items()):
        directory = _flux_dir(dest, group)
        path = os.path.join(dest, group, KUSTOMIZATION)
        if directory is not None:
            render.check_replaceable(path, text, recorded.get(group), 'the Flux kustomization of %s' % group)
        if directory is None or any(render.needs_write(path, text, 0o644)):
            changes.append(group)
    for group, digest in sorted(recorded.items()):
        if group in texts:
            continue
        try:
            directory = _flux_dir(dest, group)
        except render.RenderError as e:
            warnings.append('%s: not pruned, and no longer recorded as written by this render' % e)
            continue
        path = os.path.join(dest, group, KUSTOMIZATION)
        st = render.lstat(path) if directory is not None else None
        if st is None:
            continue
        if not stat.S_ISREG(st.st_mode):
            warnings.append('%s is not a regular file (a symbolic link or a directory): not pruned, and no longer '
                            'recorded as written by this render' % path)
        elif render.file_sha256(path) != digest:
            warnings.append('%s was changed since this collection wrote it: not pruned, and no longer recorded as '
                            'written by this render; remove it by hand if it is stale' % path)
        else:
            prune.append(group)
    return changes, prune


def _write_flux(dest, group, text):
    """Write ``group``/kustomization.yaml, creating the group's directory (0755) when it is missing; the directory
    is checked again right before (a real directory, never a link)."""
    if _flux_dir(dest, group) is None:
        os.mkdir(os.path.join(dest, group), 0o755)  # fails on any name there, a link planted since included
        _flux_dir(dest, group)
    render.write_atomic(os.path.join(dest, group, KUSTOMIZATION), text, 0o644)


def _prune_flux(dest, group):
    """Delete ``group``/kustomization.yaml (checked again right before: a real directory, a regular file) and the
    directory when that leaves it empty (rmdir removes nothing else). Whether the file was deleted."""
    if _flux_dir(dest, group) is None:
        return False
    path = os.path.join(dest, group, KUSTOMIZATION)
    st = render.lstat(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        return False
    os.unlink(path)
    try:
        os.rmdir(os.path.join(dest, group))
    except OSError:
        pass  # something else is in it: it stays
    return True


def summary(result, check_mode=False):
    """The line a close ends with: the absolute directory, how many files it wrote of how many it owns, and every
    file it deleted, by name (a render for another platform deletes many: each is named, never only counted)."""
    verb = ('would write', 'would delete') if check_mode else ('wrote', 'deleted')
    text = 'Render directory %s: %s %d of its %d files' % (
        result['dest'], verb[0], len(result['written']), len(result['files']) + 1 + len(result.get('flux') or ()))
    if result['pruned']:
        text += '; %s %d file(s) an earlier render wrote and this one does not: %s' % (
            verb[1], len(result['pruned']), ', '.join(result['pruned']))
    else:
        text += '; %s none' % verb[1]
    return text + '.'


def diff_texts(path, content, obj=None):
    """What a diff shows for writing ``content`` (the rendering of ``obj``, None for a file that is no object) to
    ``path``: the file's text now and ``content``; for a Secret, both with every value redacted, so its keys show
    what changed and the credential never reaches the output."""
    old = render.read(path) or ''
    if (obj or {}).get('kind') == 'Secret':
        return redact_secret_texts(old, content)
    return old, content


# A Secret's file is parsed only to redact it for a diff: larger than this, or nested past what the YAML parser
# can walk (a committed file of 100,000 '['), it is shown fully redacted instead of failing the run.
REDACT_PARSE_MAX = 1024 * 1024


def redact_secret_texts(before, after):
    """The texts of a Secret's file before and after, for a diff: every value of ``data`` and ``stringData``
    replaced, so the diff shows which keys changed and not what they hold. A text that cannot be read as one
    mapping (not YAML, too large, too deeply nested) is shown as one redacted line."""
    def values(text):
        if not text or len(text) > REDACT_PARSE_MAX:
            return None
        try:
            doc = render.yaml.safe_load(text)
        except (render.yaml.YAMLError, RecursionError, ValueError, TypeError):
            return None
        return doc if isinstance(doc, dict) else None

    def redacted(doc, other):
        doc = copy.deepcopy(doc)
        for field in ('data', 'stringData'):
            if isinstance(doc.get(field), dict):
                theirs = (other or {}).get(field) or {}
                doc[field] = dict((key, REDACTED if isinstance(theirs, dict) and theirs.get(key) == value
                                   else REDACTED_CHANGED) for key, value in doc[field].items())
        return render.dump(doc)

    old, new = values(before), values(after)
    shown = []
    for doc, other in ((old, new), (new, old)):
        if doc is None:
            shown.append('' if doc is old and not before else '%s\n' % REDACTED)
            continue
        try:
            shown.append(redacted(doc, other))
        except (RecursionError, ValueError, TypeError):
            shown.append('%s\n' % REDACTED)
    return shown[0], shown[1]


def with_argocd(obj, file_name):
    """``obj`` as written into a render directory: its sync wave (``with_sync_wave``) and what its kind's row of
    ``gitops.KINDS`` asks of Argo CD and Flux: ``SkipDryRunOnMissingResource=true`` for a custom resource whose CRD
    an operator installs (the operator, synced in an earlier wave of the same sync, has not created the CRD when
    Argo CD dry-runs the whole sync), and ``Prune=false,Delete=false`` / Flux's ``prune: disabled`` for an object
    this collection patches but does not own (a Node, the HyperConverged, the KubeVirt CR), which a GitOps tool must
    never delete."""
    return gitops.for_gitops(with_sync_wave(obj, file_name))


def with_sync_wave(obj, file_name):
    """``obj`` with the Argo CD sync wave of its file's numeric prefix (``40-gpu-operator-...`` is wave 40):
    namespaces and operator subscriptions sync before the custom resources that need the operators' CRDs."""
    lead = file_name.split('-', 1)[0]
    # [0-9], not isdigit(): that takes '¹' and other scripts' digits, which int() refuses
    if not re.fullmatch(r'[0-9]{1,9}', lead):
        return obj
    out = copy.deepcopy(obj)
    meta = out.setdefault('metadata', {})
    meta['annotations'] = dict(meta.get('annotations') or {}, **{SYNC_WAVE: str(int(lead))})
    return out


def kustomization_text(files):
    """A kustomization listing ``files`` in order (their numeric prefixes order the phases: namespaces and
    subscriptions before the custom resources that need the operators' CRDs)."""
    lines = ['# Written by gpuvirt.provision: the objects of this render, in apply order.',
             'apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:']
    lines += ['  - %s' % name for name in files]
    return '\n'.join(lines) + '\n'
