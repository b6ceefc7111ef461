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
import re
import time

from ansible_collections.gpuvirt.provision.plugins.module_utils import render

LOCK = '.gpuvirt-render.lock'
MANIFEST = '.gpuvirt-render.json'
KUSTOMIZATION = 'kustomization.yaml'
FORMAT = 1
SYNC_WAVE = 'argocd.argoproj.io/sync-wave'
SYNC_OPTIONS = 'argocd.argoproj.io/sync-options'
SKIP_DRY_RUN = 'SkipDryRunOnMissingResource=true'
# the owner of a site-wide render run (playbooks/site.yml): its close prunes every phase's stale files
SITE = 'site'
# custom resources whose CRD an operator installs (GPU Operator, NFD operator, OpenShift Virtualization's HCO,
# virt-operator), not the cluster: in one Argo CD sync with that operator the CRD is not served yet at dry-run time,
# which fails the whole sync unless the resource skips it (Argo CD user guide, Sync Options, "Skip Dry Run for new
# custom resources types": https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/)
OPERATOR_CRS = frozenset([('nvidia.com', 'ClusterPolicy'), ('nfd.openshift.io', 'NodeFeatureDiscovery'),
                          ('hco.kubevirt.io', 'HyperConverged'), ('kubevirt.io', 'KubeVirt')])
FILE_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,250}\.yaml')
REDACTED = '(redacted)'
REDACTED_CHANGED = '(redacted, changed)'


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
        for entry in list((earlier.get('objects') or {}).values()) + list((earlier.get('files') or {}).values()):
            manifest.setdefault('files', {}).setdefault(entry['file'], {'phase': entry.get('phase'), 'sha256': '',
                                                                        'resource': 'object' in entry})
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
    return {'interrupted': _summary(earlier), 'reopened': False}


def _summary(lock):
    """What may be said about an earlier lock (pid, owner, start, how many objects): never its objects, which
    hold a Secret's data when one was rendered."""
    if lock is None:
        return None
    return {'pid': lock.get('pid'), 'owner': lock.get('owner'), 'started': lock.get('started'),
            'objects': len(lock.get('objects') or {}) + len(lock.get('files') or {})}


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


def record_file(dest, name, content, writer, phase, mode=0o644):
    """Note a file that is not a Kubernetes object (Helm values) in the open session: written atomically when the
    session closes, recorded as ours (pruned like the objects), never listed in kustomization.yaml, and never
    written over a file of that name the collection did not write. Returns ``name``."""
    if not FILE_RE.fullmatch(name or '') or name == KUSTOMIZATION:
        raise render.RenderError('file name %r is not valid; expected letters, digits, ".", "_" and "-" ending in '
                                 '.yaml, not %s' % (name, KUSTOMIZATION))
    lock = session(dest)
    files = lock.setdefault('files', {})
    seen = files.get(name)
    if seen is not None and seen['content'] != content:
        raise render.RenderError('%s is rendered twice, differently: by %s and by %s; the two roles must agree on '
                                 'it' % (name, seen['writer'], writer))
    if any(entry['file'] == name for entry in lock['objects'].values()):
        raise render.RenderError('%s is both an object file and a file of %s in this render' % (name, writer))
    files[name] = {'file': name, 'content': content, 'writer': writer, 'phase': phase, 'mode': mode}
    _dump(os.path.join(dest, LOCK), lock, 0o600)
    return name


def close_session(dest, dump):
    """Finish the render: write each recorded object once (``dump(obj)`` gives its text; a file already holding it
    is left alone), prune, write kustomization.yaml and the manifest (complete), release the lock. Opens and closes
    nest: a phase playbook imported by site.yml closes only its own level, site.yml's close finishes the run.

    Pruning: a site-wide run (opened by site.yml) deletes every file of ours an earlier render wrote and this one
    did not, also of a phase that now renders nothing; a phase run alone only those of its own phase. Files that
    are not Kubernetes objects (``record_file``) are pruned the same way and never listed in kustomization.yaml.
    The diff (``before``/``after``) shows a Secret's data keys, never their values.

    Returns ``{'closed': bool, 'written': [...], 'pruned': [...], 'files': [...], 'before': .., 'after': ..}``."""
    lock = session(dest)
    if lock is None:
        raise render.RenderError('no render session is open in %s' % dest)
    lock['depth'] = lock.get('depth', 1) - 1
    if lock['depth'] > 0:
        _dump(os.path.join(dest, LOCK), lock, 0o600)
        return {'closed': False, 'written': [], 'pruned': [], 'files': [], 'before': '', 'after': ''}
    site_wide = lock.get('owner') == SITE
    scope = set(lock.get('phases') or []) | set(entry.get('phase') for entry in lock['objects'].values())
    scope |= set(entry.get('phase') for entry in (lock.get('files') or {}).values()) | {lock.get('owner')}
    manifest = _load(os.path.join(dest, MANIFEST)) or {'format': FORMAT, 'files': {}}
    ours = dict(manifest.get('files') or {})
    # a file of that name the collection did not write is never replaced
    for entry in (lock.get('files') or {}).values():
        path = os.path.join(dest, entry['file'])
        if entry['file'] not in ours and os.path.lexists(path) and render.read(path) != entry['content']:
            raise render.RenderError('%s exists and was not written by this collection; move it away (the render '
                                     'writes %s there)' % (path, entry['writer']))
    pending = [(entry, dump(with_argocd(entry['object'], entry['file']))) for entry in lock['objects'].values()]
    pending += [(entry, entry['content']) for entry in (lock.get('files') or {}).values()]
    written_files, before, after = [], [], []
    for entry, content in sorted(pending, key=lambda pair: pair[0]['file']):
        path = os.path.join(dest, entry['file'])
        content_differs, mode_differs = render.needs_write(path, content, entry.get('mode', 0o644))
        if content_differs:
            old, content_shown = diff_texts(path, content, entry.get('object'))
            before.append(old)
            after.append(content_shown)
        if content_differs or mode_differs:
            render.write_atomic(path, content, entry.get('mode', 0o644))
            written_files.append(entry['file'])
    written = dict((entry['file'], (entry['phase'], 'object' in entry)) for entry, dummy in pending)
    pruned = []
    for name, entry in sorted(ours.items()):
        if name in written:
            continue
        path = os.path.join(dest, name)
        if not site_wide and entry.get('phase') not in scope:
            continue
        # a file we wrote and someone edited since is still ours to remove: it is not in this render
        if os.path.exists(path):
            os.unlink(path)
            pruned.append(name)
        del ours[name]
    for name, (phase, resource) in written.items():
        ours[name] = {'phase': phase, 'sha256': sha256(render.read(os.path.join(dest, name)) or ''),
                      'resource': resource}
    kustomization = kustomization_text(sorted(name for name, entry in ours.items() if entry.get('resource', True)))
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


def diff_texts(path, content, obj=None):
    """What a diff shows for writing ``content`` (the rendering of ``obj``, None for a file that is no object) to
    ``path``: the file's text now and ``content``; for a Secret, both with every value redacted, so its keys show
    what changed and the credential never reaches the output."""
    old = render.read(path) or ''
    if (obj or {}).get('kind') == 'Secret':
        return redact_secret_texts(old, content)
    return old, content


def redact_secret_texts(before, after):
    """The texts of a Secret's file before and after, for a diff: every value of ``data`` and ``stringData``
    replaced, so the diff shows which keys changed and not what they hold."""
    def values(text):
        try:
            doc = render.yaml.safe_load(text) if text else None
        except render.yaml.YAMLError:
            return None
        return doc if isinstance(doc, dict) else None

    old, new = values(before), values(after)
    shown = []
    for doc, other in ((old, new), (new, old)):
        if doc is None:
            shown.append('' if doc is old and not before else '%s\n' % REDACTED)
            continue
        doc = copy.deepcopy(doc)
        for field in ('data', 'stringData'):
            if isinstance(doc.get(field), dict):
                theirs = (other or {}).get(field) or {}
                doc[field] = dict((key, REDACTED if isinstance(theirs, dict) and theirs.get(key) == value
                                   else REDACTED_CHANGED) for key, value in doc[field].items())
        shown.append(render.dump(doc))
    return shown[0], shown[1]


def with_argocd(obj, file_name):
    """``obj`` as written into a render directory: its sync wave (``with_sync_wave``) and, for a custom resource
    whose CRD an operator installs, Argo CD's ``SkipDryRunOnMissingResource=true`` sync option (the operator, synced
    in an earlier wave of the same sync, has not created the CRD when Argo CD dry-runs the whole sync)."""
    out = with_sync_wave(obj, file_name)
    group = (out.get('apiVersion') or '').rpartition('/')[0]
    if (group, out.get('kind')) not in OPERATOR_CRS:
        return out
    out = copy.deepcopy(out)
    meta = out.setdefault('metadata', {})
    annotations = dict(meta.get('annotations') or {})
    options = [o.strip() for o in (annotations.get(SYNC_OPTIONS) or '').split(',') if o.strip()]
    if SKIP_DRY_RUN not in options:
        options.append(SKIP_DRY_RUN)
    annotations[SYNC_OPTIONS] = ','.join(options)
    meta['annotations'] = annotations
    return out


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
