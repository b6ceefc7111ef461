# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubevirt_devices_facts before and at its first request: it checks its own argument whatever the task passed,
names a cluster it cannot reach, reads the same in check mode, and keeps the kubeconfig out of its result. What it
asks a real kube-apiserver is tested by the kubevirt_devices role's integration tests
(tests/integration/cluster_kubevirt/test_apply.py)."""
from __future__ import annotations

import pytest
from ansible.module_utils import basic

from ansible_collections.gpuvirt.provision.plugins.modules import kubevirt_devices_facts

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


@pytest.mark.parametrize('config', ['auto', 'HCO', ''])
def test_a_configuration_that_is_not_resolved_is_refused_before_any_request(monkeypatch, config):
    res = run_module(monkeypatch, kubevirt_devices_facts, dict(NOWHERE, kubevirt_config=config))
    assert res['failed'], res
    assert 'kubevirt_config' in res['msg'] and 'hco' in res['msg'] and 'kubevirt' in res['msg'], res['msg']
    # refused before the client: no connection was tried
    assert '127.0.0.1' not in res['msg'], res['msg']


def test_the_configuration_is_required(monkeypatch):
    res = run_module(monkeypatch, kubevirt_devices_facts, dict(NOWHERE))
    assert res['failed'] and 'kubevirt_config' in res['msg'], res


def test_a_closed_port_is_named_and_check_mode_reads_the_same(monkeypatch):
    # the client's own words (its first request, the server's version, is refused)
    said = []
    for check in (False, True):
        res = run_module(monkeypatch, kubevirt_devices_facts, dict(NOWHERE, kubevirt_config='hco'), check=check)
        assert res['failed'], res
        assert '127.0.0.1' in res['msg'] and 'Connection refused' in res['msg'], res['msg']
        said.append(res['msg'])
    assert said[0] == said[1]


def test_a_kubeconfig_that_holds_no_cluster_is_the_clients_words(monkeypatch, tmp_path):
    monkeypatch.delenv('K8S_AUTH_HOST')
    monkeypatch.delenv('K8S_AUTH_API_KEY')
    empty = tmp_path / 'kubeconfig'
    empty.write_text('apiVersion: v1\nkind: Config\n')
    res = run_module(monkeypatch, kubevirt_devices_facts, {'kubeconfig': str(empty), 'kubevirt_config': 'kubevirt'})
    assert res['failed'] and 'Invalid kube-config file' in res['msg'], res['msg']


def test_the_kubeconfig_is_no_log(monkeypatch):
    # the kubeconfig may be given as its content (a dict holding a token): Ansible must never log the argument
    specs = []
    real_init = basic.AnsibleModule.__init__

    def init(self, argument_spec, **kwargs):
        specs.append(argument_spec)
        real_init(self, argument_spec, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, '__init__', init)
    run_module(monkeypatch, kubevirt_devices_facts, dict(NOWHERE, kubevirt_config='bad'))
    assert specs and specs[0]['kubeconfig'].get('no_log') is True, specs
