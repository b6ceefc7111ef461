# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A render into a directory as one unit: lock, each object once, prune, kustomization, completeness mark.

A render run opens a session in the directory (``.gpuvirt-render.lock``, created exclusively, naming the process
that holds it), records every object written through it (one file per apiVersion/kind/namespace/name: a second
writer of the same object is merged into the first file, or refused when the two disagree), and closes it: files
an earlier complete render of the same scope wrote and this one did not are deleted (never a file we did not
write), ``kustomization.yaml`` lists the objects in file-name order, and ``.gpuvirt-render.json`` records what is
ours with ``complete: true``. A killed render leaves the lock and ``complete: false``: the next render says so and
replaces it. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import errno
import hashlib
import json
import os
import time

from ansible_collections.gpuvirt.provision.plugins.module_utils import render

LOCK = '.gpuvirt-render.lock'
MANIFEST = '.gpuvirt-render.json'
KUSTOMIZATION = 'kustomization.yaml'
FORMAT = 1
SYNC_WAVE = 'argocd.argoproj.io/sync-wave'


def object_key(obj):
    meta = obj.get('metadata') or {}
    return '%s/%s/%s/%s' % (obj.get('apiVersion'), obj.get('kind'), meta.get('namespace') or '', meta.get('name'))


def sha256(text):
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _load(path):
    text = render.read(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        raise render.RenderError('%s is not valid JSON; it is the render bookkeeping of this directory: remove it '
                                 'and render again' % path)
    if not isinstance(data, dict):
        raise render.RenderError('%s must hold a JSON object; remove it and render again' % path)
    return data


def _dump(path, data, mode=0o644):
    render.write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + '\n', mode)


def _alive(pid):
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError) as e:
        return getattr(e, 'errno', None) == errno.EPERM
    return True


def open_session(dest, owner, pid, now=None):
    """Take the directory for one render run. Returns ``{'interrupted': <the earlier lock or None>}``.

    Refuses while another live process holds the lock; a lock whose process is gone is an interrupted render,
    taken over (its files are replaced by this render's)."""
    path = os.path.join(dest, LOCK)
    lock = {'format': FORMAT, 'owner': owner, 'pid': pid, 'started': now or time.time(), 'objects': {}, 'depth': 1,
            'phases': []}
    earlier = _load(path)
    if earlier is not None:
        if earlier.get('pid') != pid and _alive(earlier.get('pid')):
            raise render.RenderError(
                'another render (pid %s, %s) is writing into %s; wait for it to finish. If no such render runs, '
                'remove %s' % (earlier.get('pid'), earlier.get('owner'), dest, path))
        if earlier.get('pid') == pid:
            # a phase playbook imported by site.yml: the same run, one level deeper
            earlier['depth'] = earlier.get('depth', 1) + 1
            _dump(path, earlier, 0o600)
            return {'interrupted': None, 'reopened': True}
        os.unlink(path)
    manifest = _load(os.path.join(dest, MANIFEST)) or {'format': FORMAT, 'files': {}}
    if earlier is not None:
        # what the interrupted render wrote is ours too: pruned at close unless this render writes it again
        for entry in (earlier.get('objects') or {}).values():
            manifest.setdefault('files', {}).setdefault(entry['file'], {'phase': entry.get('phase'), 'sha256': ''})
            if entry.get('phase') not in lock['phases']:
                lock['phases'].append(entry.get('phase'))
    try:
        # 0600: the lock holds the objects of this render until it closes, a Secret among them
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        if e.errno == errno.EEXIST:
            raise render.RenderError('another render took %s at the same moment; render again' % dest)
        raise
    with os.fdopen(fd, 'w') as f:
        f.write(json.dumps(lock, indent=2, sort_keys=True) + '\n')
    manifest['complete'] = False
    _dump(os.path.join(dest, MANIFEST), manifest)
    return {'interrupted': earlier, 'reopened': False}


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


def session(dest):
    """The open session's lock data, or None when no render session is open in ``dest``."""
    return _load(os.path.join(dest, LOCK))


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


def record(dest, obj, name, writer, phase, mode=0o644):
    """Note ``obj`` (to be written as ``name`` with ``mode`` by ``writer``) in the open session; the files are
    written when the session closes, each once. Returns the file name the object will have: ``name``, or the
    first writer's file when another role of this render already rendered the object (merged into it)."""
    lock = session(dest)
    key = object_key(obj)
    seen = lock['objects'].get(key)
    if seen is None:
        lock['objects'][key] = {'file': name, 'writer': writer, 'phase': phase, 'object': obj, 'mode': mode}
        _dump(os.path.join(dest, LOCK), lock, 0o600)
        return name
    try:
        merged = merge(seen['object'], obj)
    except render.RenderError as e:
        raise render.RenderError('%s is rendered twice, differently: by %s (%s) and by %s: %s; the two roles '
                                 'must agree on it' % (key, seen['writer'], seen['file'], writer, e))
    seen['object'] = merged
    seen['mode'] = min(seen.get('mode', mode), mode)
    seen['writers'] = sorted(set(seen.get('writers', [seen['writer']]) + [writer]))
    _dump(os.path.join(dest, LOCK), lock, 0o600)
    return seen['file']


def close_session(dest, dump):
    """Finish the render: write each recorded object once (``dump(obj)`` gives its text; a file already holding it
    is left alone), prune, write kustomization.yaml and the manifest (complete), release the lock. Opens and closes
    nest: a phase playbook imported by site.yml closes only its own level, site.yml's close finishes the run.

    Pruning covers the phases that rendered in this run (every phase for site.yml, one for a phase run alone):
    their files from an earlier render that this one did not produce are deleted.

    Returns ``{'closed': bool, 'written': [...], 'pruned': [...], 'files': [...], 'before': .., 'after': ..}``."""
    lock = session(dest)
    if lock is None:
        raise render.RenderError('no render session is open in %s' % dest)
    lock['depth'] = lock.get('depth', 1) - 1
    if lock['depth'] > 0:
        _dump(os.path.join(dest, LOCK), lock, 0o600)
        return {'closed': False, 'written': [], 'pruned': [], 'files': [], 'before': '', 'after': ''}
    scope = set(lock.get('phases') or []) | set(entry.get('phase') for entry in lock['objects'].values())
    written_files, before, after = [], [], []
    for entry in sorted(lock['objects'].values(), key=lambda e: e['file']):
        path = os.path.join(dest, entry['file'])
        content = dump(with_sync_wave(entry['object'], entry['file']))
        content_differs, mode_differs = render.needs_write(path, content, entry.get('mode', 0o644))
        if content_differs:
            before.append(render.read(path) or '')
            after.append(content)
        if content_differs or mode_differs:
            render.write_atomic(path, content, entry.get('mode', 0o644))
            written_files.append(entry['file'])
    manifest = _load(os.path.join(dest, MANIFEST)) or {'format': FORMAT, 'files': {}}
    ours = dict(manifest.get('files') or {})
    written = {entry['file']: entry['phase'] for entry in lock['objects'].values()}
    pruned = []
    for name, entry in sorted(ours.items()):
        if name in written:
            continue
        in_scope = entry.get('phase') in scope
        path = os.path.join(dest, name)
        if not in_scope:
            continue
        # a file we wrote and someone edited since is still ours to remove: it is not in this render
        if os.path.exists(path):
            os.unlink(path)
            pruned.append(name)
        del ours[name]
    for name, phase in written.items():
        ours[name] = {'phase': phase, 'sha256': sha256(render.read(os.path.join(dest, name)) or '')}
    kustomization = kustomization_text(sorted(ours))
    kpath = os.path.join(dest, KUSTOMIZATION)
    existing = render.read(kpath)
    if existing is not None and existing != kustomization and manifest.get('kustomization') != sha256(existing):
        raise render.RenderError('%s exists and was not written by this collection; move it away (the render '
                                 'writes its own list of the objects there)' % kpath)
    if existing != kustomization:
        render.write_atomic(kpath, kustomization, 0o644)
        written_files.append(KUSTOMIZATION)
    _dump(os.path.join(dest, MANIFEST), {'format': FORMAT, 'complete': True, 'files': ours,
                                         'kustomization': sha256(kustomization), 'finished': time.time()})
    os.unlink(os.path.join(dest, LOCK))
    return {'closed': True, 'written': written_files, 'pruned': pruned, 'files': sorted(ours),
            'before': ''.join(before), 'after': ''.join(after)}


def with_sync_wave(obj, file_name):
    """``obj`` with the Argo CD sync wave of its file's numeric prefix (``40-gpu-operator-...`` is wave 40):
    namespaces and operator subscriptions sync before the custom resources that need the operators' CRDs."""
    lead = file_name.split('-', 1)[0]
    if not lead.isdigit():
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
