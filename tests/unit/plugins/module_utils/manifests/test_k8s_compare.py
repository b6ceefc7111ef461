# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_compare's preview decisions on the edges of the preview loop's results: which refused dry run means "the
Namespace is still to be created", and how a preview is matched with its stored object when the lists do not line
up (the roles' whole cases: tests/unit/roles/test_k8s_objects_preview_changed.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_compare

OBJ = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'}, 'data': {'a': '1'}}
# the API server's NotFound for an object whose Namespace does not exist yet, as the k8s module's msg carries it
NOT_FOUND = ('Failed to apply: {"kind":"Status","status":"Failure","reason":"NotFound",'
             '"details":{"name":"gpu","kind":"namespaces"},"code":404}')


def test_only_a_refusal_naming_the_objects_namespace_is_a_pending_namespace():
    assert k8s_compare.namespace_pending({'item': OBJ, 'msg': NOT_FOUND}) is True
    # refused for another reason, or for another namespace: not pending
    assert k8s_compare.namespace_pending({'item': OBJ, 'msg': 'Failed to apply: Forbidden'}) is False
    assert k8s_compare.namespace_pending({'item': OBJ, 'msg': NOT_FOUND.replace('"gpu"', '"other"')}) is False
    # a dry run that answered (a result) was not refused, whatever its message says
    assert k8s_compare.namespace_pending({'item': OBJ, 'result': OBJ, 'msg': NOT_FOUND}) is False


def test_a_skipped_or_pending_preview_does_not_end_the_walk():
    changed = {'item': OBJ, 'result': dict(OBJ, data={'a': '2'})}
    skipped = {'item': OBJ, 'skipped': True}
    pending = {'item': OBJ, 'msg': NOT_FOUND}
    stored = [{'resources': [OBJ]}] * 3
    assert k8s_compare.preview_changes([skipped, changed], stored) == [changed]
    assert k8s_compare.preview_changes([pending, changed], stored) == [pending, changed]


def test_a_preview_without_its_stored_object_would_change_it():
    same = {'item': OBJ, 'result': OBJ}
    # stored in line: no change; missing (a shorter list, an entry that is no k8s_info result): a change
    assert k8s_compare.preview_changes([same], [{'resources': [OBJ]}]) == []
    assert k8s_compare.preview_changes([same, same], [{'resources': [OBJ]}]) == [same]
    assert k8s_compare.preview_changes([same, same], [{'resources': [OBJ]}, None]) == [same]
    assert k8s_compare.preview_changes([same], None) == [same]
