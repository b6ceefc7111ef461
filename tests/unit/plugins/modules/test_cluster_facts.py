# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_facts before and at its first request: it checks its own arguments whatever the task passed, says a
cluster it cannot reach did not answer (``answered`` false, the role's cue for its kubeconfig message), and keeps
the kubeconfig out of its result. What it asks a real kube-apiserver is tested by the cluster role's integration
tests (tests/integration/cluster_operator: test_apply.py, preflight; test_rbac.py, the refusals)."""
from __future__ import annotations

import pytest
from ansible.module_utils import basic

from ansible_collections.gpuvirt.provision.plugins.modules import cluster_facts

from .harness import run_module

# no server answers here (a closed port)
NOWHERE = {'validate_certs': False}


@pytest.fixture(autouse=True)
def nowhere(monkeypatch, tmp_path):
    # the K8S_AUTH_* environment kubernetes.core's client reads when no option is given (docs/architecture.md)
    monkeypatch.setenv('K8S_AUTH_HOST', 'https://127.0.0.1:9')
    monkeypatch.setenv('K8S_AUTH_API_KEY', 'unused')
    # a discovery cache of its own (kubernetes.core keeps it under the temporary directory)
    monkeypatch.setenv('TMPDIR', str(tmp_path))


def test_bad_arguments_are_refused_before_any_request(monkeypatch):
    res = run_module(monkeypatch, cluster_facts, dict(NOWHERE, apis=[{'api_version': '../v1', 'kind': 'X'}]))
    assert res['failed'] and res['answered'] is False, res
    assert "apis[0].api_version: '../v1' is not an apiVersion" in res['msg'], res['msg']
    assert '127.0.0.1' not in res['msg']
    res = run_module(monkeypatch, cluster_facts, dict(NOWHERE, crds=['no-group']))
    assert res['failed'] and "crds[0]: 'no-group' is not a CustomResourceDefinition name" in res['msg'], res


def test_a_closed_port_is_a_cluster_that_did_not_answer(monkeypatch):
    # check mode reads as a real run does: the same refusal
    for check in (False, True):
        res = run_module(monkeypatch, cluster_facts, dict(NOWHERE, crds=['hyperconvergeds.hco.kubevirt.io']),
                         check=check)
        assert res['failed'] and res['answered'] is False, res
        assert '127.0.0.1' in res['msg'] and 'refused' in res['msg'], res['msg']


def test_a_kubeconfig_that_holds_no_cluster_is_the_clients_words(monkeypatch, tmp_path):
    monkeypatch.delenv('K8S_AUTH_HOST')
    monkeypatch.delenv('K8S_AUTH_API_KEY')
    empty = tmp_path / 'kubeconfig'
    empty.write_text('apiVersion: v1\nkind: Config\n')
    res = run_module(monkeypatch, cluster_facts, {'kubeconfig': str(empty)})
    assert res['failed'] and res['answered'] is False, res
    assert 'Invalid kube-config file' in res['msg'], res['msg']


def test_the_kubeconfig_is_no_log(monkeypatch):
    # the kubeconfig may be given as its content (a dict holding a token): Ansible must never log the argument
    specs = []
    real_init = basic.AnsibleModule.__init__

    def init(self, argument_spec, **kwargs):
        specs.append(argument_spec)
        real_init(self, argument_spec, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, '__init__', init)
    run_module(monkeypatch, cluster_facts, dict(NOWHERE, apis='bad'))
    assert specs and specs[0]['kubeconfig'].get('no_log') is True, specs
