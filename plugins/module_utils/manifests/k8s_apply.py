# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Server-side apply of a whole object list in one module execution (the module k8s_objects_apply, for the role
k8s_objects): read each object as stored, send each as a server-side-apply dry run, decide which would change,
then apply only those. Pure Python: the requests are functions the module passes in (``Client``).

Server-side apply always sends a PATCH, even when nothing would change; a no-op run must not write (the API
server's audit log would show a patch per object, and each one bumps managedFields timestamps on some servers).
So every object is first applied as a dry run (dryRun=All: validated, defaulted and merged by the server, never
stored), and only the objects whose dry run shows a change are applied for real. The decision is
k8s_compare's, the one the filters k8s_would_change and k8s_preview_changes make: the dry run differs from the
stored object other than in the server's bookkeeping, or the dry run was refused only because the object's
Namespace is still to be created.

A dry run of an object in a Namespace that is still to be created is refused by the server ("namespaces X not
found"): the Namespace is in this same list (sent before it, as a dry run only), or, in a preview, an earlier
call's list. That object would be created: it counts as a change. Outside a preview, a Namespace from an earlier
call exists by now, so the refusal stands.

Every object is checked before any request (the sink checks its own input, whatever the task passed): by its
Kubernetes grammar here, then by apply_rules' table of the objects the collection applies (its kind, scope,
namespace, name, and for a MachineConfig its whole content, rebuilt by the collection's builder). A list
that may hold a credential (model.credentials) returns no object content and no diff, only each object's kind,
namespace, name and what was done.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import apply_rules, k8s_compare
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import credentials, validators

# kind: the grammar render_manifests holds a kind to (render/render.py KIND_RE; manifests may not import render)
KIND_RE = re.compile(r'[A-Za-z][A-Za-z0-9]{0,62}')
# apiVersion: "v1" or "<group>/<version>", the group a DNS-1123 subdomain, the version v<N>[alpha<N>|beta<N>]
API_VERSION_RE = re.compile(r'(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?'
                            r'v[0-9]+(?:(?:alpha|beta)[0-9]+)?')


class Refused(Exception):
    """The API server refused a request (or could not be reached: ``status`` None). ``text`` is the server's own
    answer (its Status body as sent), ``reason`` the HTTP reason phrase or the connection problem."""

    def __init__(self, status, reason, text=''):
        super(Refused, self).__init__('%s %s' % (status, reason))
        self.status = status
        self.reason = reason
        self.text = text or ''


class ApplyError(ManifestError):
    """Stops the call: ``records`` says, per object, what was done before the stop."""

    def __init__(self, msg, records=None):
        super(ApplyError, self).__init__(msg)
        self.records = records or []


class Client(object):
    """The requests, as the module makes them: ``read(obj)`` the stored object or None when there is none;
    ``dry_run(obj)`` and ``apply(obj)`` the server-side apply's answer (dryRun=All, or for real); ``wait(obj)``
    ``(ready, seconds)`` after an apply. Each raises Refused when the server refuses."""

    def __init__(self, read, dry_run, apply, wait=None):
        self.read = read
        self.dry_run = dry_run
        self.apply = apply
        self.wait = wait


def label(obj):
    """``Kind/namespace/name`` (namespace empty for a cluster-scoped object), the role's loop label."""
    if not isinstance(obj, dict):
        return '(not an object)'
    meta = obj.get('metadata') if isinstance(obj.get('metadata'), dict) else {}
    return '%s/%s/%s' % (obj.get('kind'), meta.get('namespace') or '', meta.get('name'))


def echoed_arguments(params, key='definitions'):
    """The module's arguments as it may return them (Ansible echoes them as ``invocation.module_args``, and a
    registered result keeps them): for a list that may hold a credential, each object by its label alone."""
    objects = params.get(key)
    if not credentials.any_holds_credential(objects):
        return params
    return dict(params, **{key: [label(obj) for obj in objects] if isinstance(objects, list) else '(hidden)'})


def _check_one(index, obj):
    if not isinstance(obj, dict):
        return 'object number %d is a %s; expected a Kubernetes object (a mapping)' % (index, type(obj).__name__)
    meta = obj.get('metadata')
    if not isinstance(meta, dict):
        # the keys only: an object may be a Secret, its values are never shown
        return 'object number %d has no metadata mapping (it has keys %s)' % (index, sorted(str(k) for k in obj))
    try:
        api_version = obj.get('apiVersion')
        if not isinstance(api_version, str) or not API_VERSION_RE.fullmatch(api_version):
            raise validators.ValidationError("apiVersion: %r is not valid; expected v1 or <group>/<version>"
                                             % (api_version,))
        kind = obj.get('kind')
        if not isinstance(kind, str) or not KIND_RE.fullmatch(kind):
            raise validators.ValidationError('kind: %r is not valid; expected a Kubernetes kind such as ConfigMap'
                                             % (kind,))
        if kind.endswith('List'):
            raise validators.ValidationError('kind: %r is a list; pass its items, each a complete object' % (kind,))
        # the names the collection builds (and render_manifests accepts): no '/', no '..' in a request path
        validators.dns1123_subdomain(meta.get('name'), 'metadata.name')
        if meta.get('namespace') is not None:
            validators.dns1123_label(meta.get('namespace'), 'metadata.namespace')
    except validators.ValidationError as exc:
        return 'object number %d: %s' % (index, exc)
    return None


def checked_objects(objects, namespaces=None):
    """``objects`` when every one is a complete object whose apiVersion, kind, name and namespace fit their
    Kubernetes grammars and apply_rules' table admits it in ``namespaces`` (the caller's declared namespaces,
    ``{operator|kubevirt|workload: [namespace, ...]}``; None: none declared); else ManifestError naming each bad
    one by its number and the rule it breaks."""
    if not isinstance(objects, list):
        raise ManifestError('definitions: expected a list of Kubernetes objects, got a %s' % type(objects).__name__)
    try:
        declared = apply_rules.checked_namespaces(namespaces)
    except apply_rules.RuleError as exc:
        raise ManifestError('%s; nothing was sent.' % exc)
    problems = []
    for index, obj in enumerate(objects):
        found = _check_one(index, obj)
        problems.append(found or apply_rules.problem(index, obj, declared))
    problems = [p for p in problems if p]
    if any(apply_rules.NOT_IN_TABLE in p for p in problems):
        problems.append('the collection applies only %s' % apply_rules.table_text())
    if problems:
        raise ManifestError('%s; nothing was sent. Fix the caller\'s object list.' % '; '.join(problems))
    return objects


def shown_warnings(objects, warnings):
    """The server's warnings as the module may return them: for a list that may hold a credential, one line
    counting them (a warning may quote a field of the object, and ansible-core prints a result's warnings even
    under no_log)."""
    if warnings and credentials.any_holds_credential(objects):
        return ['%d server warning%s hidden (the list holds a credential)'
                % (len(warnings), '' if len(warnings) == 1 else 's')]
    return list(warnings)


def record(obj, changed, applied):
    meta = obj.get('metadata') or {}
    return {'kind': obj.get('kind'), 'api_version': obj.get('apiVersion'), 'namespace': meta.get('namespace') or '',
            'name': meta.get('name'), 'changed': changed, 'applied': applied}


def diff_of(obj, stored, answer):
    """The object's diff as kubernetes.core.k8s returns it in --diff mode (``before``/``after``: what differs
    between the stored object and the server's answer, ansible's recursive_diff), with a header naming it."""
    from ansible.module_utils.common.dict_transformations import recursive_diff
    found = recursive_diff(stored or {}, answer or {})
    before, after = found if found else ({}, {})
    return {'before': before, 'after': after, 'before_header': label(obj), 'after_header': label(obj)}


def _refusal(what, obj, exc, secret=False):
    # the server's answer about a list that may hold a credential is left out: it could quote the object
    text = (': %s' % exc.text) if exc.text and not secret else ''
    status = 'HTTP %s %s' % (exc.status, exc.reason) if exc.status is not None else str(exc.reason)
    return '%s of %s refused (%s)%s' % (what, label(obj), status, text)


def apply_objects(objects, client, namespaces, preview_only=False, wait=False, diff=False):
    """Apply ``objects`` through ``client`` (Client), each checked first (``checked_objects`` in ``namespaces``:
    nothing is sent when one is refused). ``preview_only``: dry runs only
    (check mode, k8s_objects_dry_run). Returns ``(records, diffs)``: per object, in order, its kind, namespace,
    name, ``changed`` (the dry run shows a change; after an apply, the server's answer differs from the stored
    object) and ``applied`` (applied for real and changed), plus its ``diff`` when ``diff`` and the list holds no
    credential; ``diffs`` the diffs of the changed objects, for Ansible's --diff output.

    Raises ApplyError: a read or dry run refused (nothing applied; every refused object named), or an apply
    refused or a wait timed out (the objects applied before it and those not sent named)."""
    checked_objects(objects, namespaces)
    secret = credentials.any_holds_credential(objects)
    show_diff = diff and not secret
    creates = set(obj['metadata']['name'] for obj in objects if obj.get('kind') == 'Namespace')
    stored, problems = [], []
    for obj in objects:
        try:
            stored.append(client.read(obj))
        except Refused as exc:
            stored.append(None)
            problems.append(_refusal('the read', obj, exc, secret))
    if problems:
        raise ApplyError('; '.join(problems) + '; nothing was applied.')
    previews = []
    for obj in objects:
        try:
            previews.append({'item': obj, 'result': client.dry_run(obj)})
        except Refused as exc:
            preview = {'item': obj, 'msg': exc.text, 'result': {}}
            namespace = obj['metadata'].get('namespace') or ''
            # a Namespace still to be created: this list creates it, or this run only previews
            if k8s_compare.namespace_pending(preview) and (namespace in creates or preview_only):
                preview['namespace_pending'] = True
                previews.append(preview)
            else:
                previews.append(None)
                problems.append(_refusal('the server-side dry run', obj, exc, secret))
    if problems:
        raise ApplyError('; '.join(problems) + '; nothing was applied.')
    changes = k8s_compare.preview_changes(previews, [{'resources': [s] if s else []} for s in stored])
    changing = set(id(p) for p in changes)
    records = []
    for obj, found, preview in zip(objects, stored, previews):
        rec = record(obj, id(preview) in changing, False)
        if show_diff and rec['changed']:
            answer = preview.get('result') or (obj if preview.get('namespace_pending') else {})
            rec['diff'] = diff_of(obj, found, answer)
        records.append(rec)
    if not preview_only:
        _apply_changed(objects, stored, records, client, wait, show_diff, secret)
    diffs = [rec['diff'] for rec in records if rec.get('diff')]
    return records, diffs


def _apply_changed(objects, stored, records, client, wait, show_diff, secret):
    todo = [i for i, rec in enumerate(records) if rec['changed']]
    for done, index in enumerate(todo):
        obj, rec = objects[index], records[index]
        try:
            answer = client.apply(obj)
        except Refused as exc:
            raise ApplyError('%s; applied before it: %s; not sent: %s.' % (
                _refusal('the apply', obj, exc, secret), names([objects[i] for i in todo[:done]]),
                names([objects[i] for i in todo[done + 1:]])), records)
        # what kubernetes.core.k8s reports after its apply: the answer differs from the object as read
        rec['changed'] = rec['applied'] = k8s_compare.would_change(answer, stored[index])
        if show_diff:
            rec['diff'] = diff_of(obj, stored[index], answer)
        if wait and client.wait is not None:
            ready, seconds = client.wait(obj)
            rec['waited'] = seconds
            if not ready:
                # kubernetes.core.k8s's own words (module_utils/k8s/runner.py perform_action, ResourceTimeout)
                raise ApplyError('"%s" "%s": Timed out waiting on resource (%s, applied, not ready after %s s); '
                                 'applied before it: %s; not sent: %s.'
                                 % (obj['kind'], obj['metadata']['name'], label(obj), seconds,
                                    names([objects[i] for i in todo[:done]]),
                                    names([objects[i] for i in todo[done + 1:]])), records)


def names(objects, most=20):
    """``Kind/namespace/name, ...`` (at most ``most``), or ``none``."""
    if not objects:
        return 'none'
    shown = ', '.join(label(obj) for obj in objects[:most])
    return shown + (' and %d more' % (len(objects) - most) if len(objects) > most else '')
