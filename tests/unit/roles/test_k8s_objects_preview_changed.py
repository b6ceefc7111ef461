# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode's server-side dry run is no change of its own (roles/k8s_objects tasks apply.yml and
apply_secret.yml, one gpuvirt.provision.k8s_objects_apply call): in a run that applies, the call counts the
objects it applied, so a run that changes one object reports one change; a run that stops at the dry run (--check,
k8s_objects_dry_run) reports what would change. The decision is the one of the filters k8s_would_change and
k8s_preview_changes (module_utils k8s_compare), which k8s_apply calls: the cases below give both the same input.
What the module sends to a real API server: tests/integration/cluster_operator/test_k8s_objects_apply.py."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.filter import k8s_would_change as filters
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_apply, k8s_compare

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TASK_FILES = ('apply.yml', 'apply_secret.yml')

STORED = {'apiVersion': 'v1', 'kind': 'ConfigMap',
          'metadata': {'name': 'cfg', 'namespace': 'gpu', 'resourceVersion': '7', 'managedFields': [{'manager': 'x'}]},
          'data': {'config.yaml': '1'}}
WANTED = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'},
          'data': {'config.yaml': '2'}}
NAMESPACE = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpu'}}
# what the API server answers a dry run of WANTED: the stored object with the new data (and its own bookkeeping)
DRY_RUN = dict(STORED, data={'config.yaml': '2'}, metadata=dict(STORED['metadata'], resourceVersion='8'))
SAME = dict(STORED, metadata=dict(STORED['metadata'], resourceVersion='8', managedFields=[{'manager': 'y'}]))
# the server's NotFound for an object whose Namespace does not exist yet (its Status body as sent)
PENDING_BODY = ('{"kind":"Status","status":"Failure","reason":"NotFound",'
                '"details":{"name":"gpu","kind":"namespaces"},"code":404}')


def _run(answer, stored, preview_only, objects=(WANTED,)):
    """k8s_apply on ``objects`` against a server that stores ``stored`` for WANTED and answers its dry run with
    ``answer`` (a Refused: raised); returns (records, the objects applied for real)."""
    applied = []

    def read(obj):
        return copy.deepcopy(stored) if obj is WANTED else None

    def dry_run(obj):
        if obj is WANTED and isinstance(answer, k8s_apply.Refused):
            raise answer
        return copy.deepcopy(answer if obj is WANTED else obj)

    def apply(obj):
        applied.append(obj['kind'])
        return copy.deepcopy(answer if obj is WANTED and not isinstance(answer, Exception) else obj)
    records, _diffs = k8s_apply.apply_objects(list(objects), k8s_apply.Client(read, dry_run, apply),
                                              {'operator': 'gpu'}, preview_only=preview_only)
    return records, applied


@pytest.mark.parametrize('answer, stored', [(DRY_RUN, STORED), (SAME, STORED), (SAME, None)])
@pytest.mark.parametrize('preview_only', [False, True])
def test_the_module_decides_as_the_filters_do(answer, stored, preview_only):
    records, applied = _run(answer, stored, preview_only)
    would = filters.k8s_would_change(answer, stored)
    assert records[0]['changed'] is would
    # the loop form the role used to apply from
    preview = {'changed': True, 'result': answer, 'item': WANTED}
    picked = filters.k8s_preview_changes([preview], [{'resources': [stored] if stored else []}])
    assert bool(picked) is would
    # a preview applies nothing; a run that applies sends exactly what would change
    assert applied == ([] if preview_only or not would else ['ConfigMap'])
    assert records[0]['applied'] is (would and not preview_only)


def test_the_bookkeeping_of_the_server_is_no_change():
    records, applied = _run(SAME, STORED, preview_only=False)
    assert records[0]['changed'] is False and applied == []


def test_an_object_whose_namespace_the_list_creates_is_applied_after_it():
    refused = k8s_apply.Refused(404, 'Not Found', PENDING_BODY)
    records, applied = _run(refused, None, preview_only=False, objects=(NAMESPACE, WANTED))
    assert applied == ['Namespace', 'ConfigMap'] and [r['changed'] for r in records] == [True, True]
    # as the filter k8s_preview_changes keeps such a preview
    tolerated = {'msg': PENDING_BODY, 'item': WANTED}
    assert k8s_compare.preview_changes([tolerated], [{'resources': []}]) == [tolerated]
    # a preview counts it as a change even when an earlier list creates the Namespace
    records, applied = _run(refused, None, preview_only=True)
    assert records[0]['changed'] is True and applied == []
    # a run that applies, with no Namespace in the list: the refusal stands, nothing is applied
    with pytest.raises(k8s_apply.ApplyError):
        _run(refused, None, preview_only=False)


@pytest.mark.parametrize('file_name', TASK_FILES)
def test_the_one_module_call_is_the_only_task_that_can_report_a_change(file_name):
    with open(os.path.join(ROOT, 'roles', 'k8s_objects', 'tasks', file_name)) as handle:
        tasks = yaml.safe_load(handle)
    modules = [next(k for k in task if '.' in k) for task in tasks]
    assert modules == ['gpuvirt.provision.k8s_objects_apply', 'ansible.builtin.set_fact']
    # no changed_when and no check_mode of its own: the module reports, and check mode reaches it
    assert not any('changed_when' in task or 'check_mode' in task for task in tasks)


def test_preview_changes_keeps_the_order_and_skips_what_would_not_change():
    other = dict(WANTED, metadata={'name': 'other', 'namespace': 'gpu'})
    previews = [{'result': SAME, 'item': WANTED}, {'result': dict(other), 'item': other},
                {'result': DRY_RUN, 'item': WANTED}, {'skipped': True, 'item': WANTED}]
    stored = [{'resources': [STORED]}, {'resources': []}, {'resources': [STORED]}, {'resources': []}]
    assert k8s_compare.preview_changes(previews, stored) == [previews[1], previews[2]]
