# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode's server-side dry-run preview is no change of its own (roles/k8s_objects tasks apply.yml and
apply_secret.yml): in a run that applies, only the apply of an object counts, so a run that changes one object
reports one change, not two; a run that stops at the preview (--check, k8s_objects_dry_run) reports what would
change. The preview task's changed_when is evaluated by Ansible's own templating, as the role file writes it, and
the objects the apply task then sends come from gpuvirt.provision.k8s_preview_changes."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpuvirt.provision.plugins.filter import k8s_would_change as filters
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_compare

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TASKS = {'apply.yml': ('__k8s_objects_preview', '__k8s_objects_stored'),
         'apply_secret.yml': ('__k8s_objects_secret_preview', '__k8s_objects_secret_stored')}

STORED = {'apiVersion': 'v1', 'kind': 'ConfigMap',
          'metadata': {'name': 'cfg', 'namespace': 'gpu', 'resourceVersion': '7', 'managedFields': [{'manager': 'x'}]},
          'data': {'a': '1'}}
WANTED = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'}, 'data': {'a': '2'}}
# what the API server answers a dry run of WANTED: the stored object with the new data (and its own bookkeeping)
DRY_RUN = dict(STORED, data={'a': '2'}, metadata=dict(STORED['metadata'], resourceVersion='8'))
SAME = dict(STORED, metadata=dict(STORED['metadata'], resourceVersion='8', managedFields=[{'manager': 'y'}]))
# the server's NotFound for an object whose Namespace this list creates first (sent as a dry run only)
PENDING_MSG = ('Failed to create object: b\'{"kind":"Status","status":"Failure","reason":"NotFound",'
               '"details":{"name":"gpu","kind":"namespaces"},"code":404}\'')


def _preview_task(file_name):
    with open(os.path.join(ROOT, 'roles', 'k8s_objects', 'tasks', file_name)) as handle:
        (task,) = [t for t in yaml.safe_load(handle) if t['name'] == 'Preview each object with a server-side dry run']
    return task


def _changed(file_name, preview, stored, check_mode=False, dry_run=False, objects=(WANTED,)):
    """The preview task's changed_when for one item, as Ansible evaluates it (the task's vars templated first)."""
    task = _preview_task(file_name)
    register, stored_name = TASKS[file_name]
    variables = {register: preview, stored_name: {'results': [{'resources': [stored] if stored else []}]},
                 'item': WANTED, 'k8s_objects_i': 0, 'k8s_objects_list': list(objects),
                 'ansible_check_mode': check_mode,
                 '__k8s_objects_flags': {'dry_run': dry_run, 'force_conflicts': False, 'wait': False}}
    # the task's vars are templates, resolved lazily when the condition reads them, as in a play
    variables.update((name, trust_as_template(expression)) for name, expression in task['vars'].items())
    templar = Templar(loader=DataLoader(), variables=variables)
    # the collection's filters, by their names in the task: the collection loader is not installed in a unit test
    # (installing it would change how later tests in the worker import), so they are given to the environment
    for name, function in filters.FilterModule().filters().items():
        templar._engine.environment.filters['gpuvirt.provision.' + name] = function
    return templar.template(trust_as_template('{{ %s }}' % task['changed_when'].strip()))


@pytest.mark.parametrize('file_name', sorted(TASKS))
def test_a_preview_that_shows_a_change_is_no_change_in_a_run_that_applies(file_name):
    preview = {'changed': True, 'result': DRY_RUN, 'item': WANTED}
    assert _changed(file_name, preview, STORED) is False
    # the apply task sends it: the one change the run counts is the apply's
    assert k8s_compare.preview_changes([preview], [{'resources': [STORED]}]) == [preview]


@pytest.mark.parametrize('file_name', sorted(TASKS))
def test_a_run_that_stops_at_the_preview_reports_what_would_change(file_name):
    preview = {'changed': True, 'result': DRY_RUN, 'item': WANTED}
    assert _changed(file_name, preview, STORED, check_mode=True) is True
    assert _changed(file_name, preview, STORED, dry_run=True) is True
    # the bookkeeping of the server (managedFields, resourceVersion) is no change, in a preview either
    assert _changed(file_name, dict(preview, result=SAME), STORED, check_mode=True) is False
    assert k8s_compare.preview_changes([dict(preview, result=SAME)], [{'resources': [STORED]}]) == []


@pytest.mark.parametrize('file_name', sorted(TASKS))
def test_an_object_whose_namespace_the_list_creates_is_applied_and_counted_by_the_apply(file_name):
    namespace = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu'}}
    preview = {'failed': True, 'msg': PENDING_MSG, 'item': WANTED}
    assert _changed(file_name, preview, None, objects=(namespace, WANTED)) is False
    assert _changed(file_name, preview, None, check_mode=True, objects=(namespace, WANTED)) is True
    tolerated = dict(preview, failed=False)  # as registered, after the task's failed_when
    assert k8s_compare.preview_changes([tolerated], [{'resources': []}]) == [tolerated]


def test_preview_changes_keeps_the_order_and_skips_what_would_not_change():
    other = dict(WANTED, metadata={'name': 'other', 'namespace': 'gpu'})
    previews = [{'result': SAME, 'item': WANTED}, {'result': dict(other), 'item': other},
                {'result': DRY_RUN, 'item': WANTED}, {'skipped': True, 'item': WANTED}]
    stored = [{'resources': [STORED]}, {'resources': []}, {'resources': [STORED]}, {'resources': []}]
    assert k8s_compare.preview_changes(previews, stored) == [previews[1], previews[2]]
