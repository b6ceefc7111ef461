# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_labels_apply before any request: it checks its own patches whatever the task passed, and an empty plan
needs no cluster at all. What it sends is tested against the real API server
(tests/integration/cluster_operator/test_node_labels_fleet.py)."""
from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.modules import node_labels_apply

from .harness import run_module

W = 'nvidia.com/gpu.workload.config'
# no server answers here: a module that tried to send would fail on the connection, not with our message
NOWHERE = {'validate_certs': False}


@pytest.fixture(autouse=True)
def nowhere(monkeypatch):
    # the K8S_AUTH_* environment kubernetes.core's client reads when no option is given (docs/architecture.md)
    monkeypatch.setenv('K8S_AUTH_HOST', 'https://127.0.0.1:9')
    monkeypatch.setenv('K8S_AUTH_API_KEY', 'unused')


def test_bad_patches_are_refused_naming_each_before_any_client(monkeypatch):
    res = run_module(monkeypatch, node_labels_apply, dict(NOWHERE, patches=[
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1', 'labels': {W: 'container'}}},
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-2', 'labels': {W: '$(reboot)'}}},
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'Gpu_3', 'labels': {W: 'container'}}}]))
    assert res['failed']
    assert res['msg'].splitlines()[0].startswith("patches[1] (node gpu-2) label %s: '$(reboot)' is not valid" % W)
    assert res['msg'].splitlines()[1].startswith("patches[2] node name: 'Gpu_3' is not valid"), res['msg']


def test_nothing_to_patch_sends_nothing_and_changes_nothing(monkeypatch):
    for check in (False, True):
        res = run_module(monkeypatch, node_labels_apply, dict(NOWHERE, patches=[]), check=check, diff=True)
        assert not res['failed'] and res['changed'] is False and res['patched'] == [], res


def test_no_connection_fails_saying_no_node_was_patched(monkeypatch):
    res = run_module(monkeypatch, node_labels_apply, dict(NOWHERE, patches=[
        {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'gpu-1', 'labels': {W: 'container'}}}]))
    assert res['failed'] and res['msg'].startswith('no connection to the API server, no node patched (1 to patch: '
                                                   'gpu-1): '), res['msg']
    assert '127.0.0.1' in res['msg'], res['msg']
