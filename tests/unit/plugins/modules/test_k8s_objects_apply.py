# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_objects_apply before any request: it checks its own objects whatever the task passed, and an empty list
needs no cluster at all. What it sends is tested against the real API server
(tests/integration/cluster_operator/test_k8s_objects_apply.py)."""
from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.modules import k8s_objects_apply

from .harness import run_module

# no server answers here: a module that tried to send would fail on the connection, not with our message
NOWHERE = {'validate_certs': False}
CM = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'gpu'}, 'data': {'a': '1'}}


@pytest.fixture(autouse=True)
def nowhere(monkeypatch):
    # the K8S_AUTH_* environment kubernetes.core's client reads when no option is given (docs/architecture.md)
    monkeypatch.setenv('K8S_AUTH_HOST', 'https://127.0.0.1:9')
    monkeypatch.setenv('K8S_AUTH_API_KEY', 'unused')


def test_bad_objects_are_refused_naming_each_before_any_client(monkeypatch):
    res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[
        CM, {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': '../../x', 'namespace': 'gpu'}},
        {'apiVersion': 'v1', 'kind': 'Secret', 'stringData': {'p': 'hunter2'}}]))
    assert res['failed']
    assert "object number 1: metadata.name: '../../x' is not valid" in res['msg'], res['msg']
    assert "object number 2 has no metadata mapping (it has keys ['apiVersion', 'kind', 'stringData'])" in res['msg']
    assert 'hunter2' not in res['msg'] and 'no connection' not in res['msg']
    # nor in the arguments the result echoes (a registered result keeps them): the list holds a Secret
    assert 'hunter2' not in repr(res), res['invocation']
    assert res['invocation']['module_args']['definitions'] == ['ConfigMap/gpu/cfg', 'ConfigMap/gpu/../../x',
                                                               'Secret//None']


def test_nothing_to_apply_sends_nothing_and_changes_nothing(monkeypatch):
    for check in (False, True):
        res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[]), check=check, diff=True)
        assert not res['failed'] and res['changed'] is False and res['objects'] == [], res


def test_no_connection_fails_saying_nothing_was_sent(monkeypatch):
    res = run_module(monkeypatch, k8s_objects_apply, dict(NOWHERE, definitions=[CM]))
    assert res['failed'], res
    assert 'ConfigMap/gpu/cfg' in res['msg'] and '127.0.0.1' in res['msg'], res['msg']
    assert 'nothing was applied' in res['msg'] or 'nothing sent' in res['msg'], res['msg']
    # a list without a credential is echoed as given
    assert res['invocation']['module_args']['definitions'] == [CM]
