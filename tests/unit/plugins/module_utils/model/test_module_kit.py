# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_kit: the argument-spec pieces the modules share and the build-then-exit run of the modules that only
build or judge data, against a recording stand-in for AnsibleModule (its exit_json and fail_json end the run by an
exception, as the real ones end the process)."""
from __future__ import annotations

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit


class Exited(Exception):
    pass


class Failed(Exception):
    pass


class Module(object):
    """What exit_built touches of an AnsibleModule: params, exit_json, fail_json, warn."""

    def __init__(self, params):
        self.params = params
        self.warned = []

    def exit_json(self, **result):
        raise Exited(result)

    def fail_json(self, **result):
        raise Failed(result)

    def warn(self, warning):
        self.warned.append(warning)


def test_the_kubeconfig_is_never_logged():
    # a kubeconfig given as its content holds the cluster's token
    assert module_kit.K8S_AUTH['kubeconfig'] == {'type': 'raw', 'no_log': True}
    assert module_kit.K8S_AUTH['validate_certs'] == {'type': 'bool', 'aliases': ['verify_ssl']}


def test_argument_spec_joins_pieces_then_own_options_in_order():
    spec = module_kit.argument_spec(module_kit.K8S_AUTH, crds=dict(type='list', elements='str', default=[]))
    assert list(spec) == ['kubeconfig', 'context', 'validate_certs', 'crds']
    assert spec['crds'] == {'type': 'list', 'elements': 'str', 'default': []}


def test_argument_spec_copies_so_no_module_changes_a_shared_piece():
    spec = module_kit.argument_spec(module_kit.PERMITTED_DEVICES)
    spec['unknown_hosts']['default'].append('gpu-9')
    spec['validate'] = {}
    assert module_kit.PERMITTED_DEVICES['unknown_hosts']['default'] == []
    assert module_kit.argument_spec(module_kit.PERMITTED_DEVICES)['unknown_hosts']['default'] == []


def test_an_option_given_twice_is_refused():
    with pytest.raises(ValueError, match='option context is given twice'):
        module_kit.argument_spec(module_kit.K8S_AUTH, context=dict(type='str', required=True))


def test_k8s_auth_is_the_clients_keywords():
    params = {'kubeconfig': '/k', 'context': 'c', 'validate_certs': False, 'crds': []}
    assert module_kit.k8s_auth(params) == {'kubeconfig': '/k', 'context': 'c', 'validate_certs': False}


def test_exit_built_exits_unchanged_with_the_build():
    with pytest.raises(Exited) as exited:
        module_kit.exit_built(Module({'n': 2}), lambda p: {'double': p['n'] * 2}, ValueError)
    assert exited.value.args[0] == {'changed': False, 'double': 4}


def test_exit_built_fails_with_the_refusals_message_and_fields():
    class Refusal(ValueError):
        reason = 'not_pem'

    def build(params):
        raise Refusal('%s is not a PEM bundle' % params['path'])
    with pytest.raises(Failed) as failed:
        module_kit.exit_built(Module({'path': '/ca'}), build, (KeyError, Refusal),
                              failure=lambda exc: {'reason': exc.reason})
    assert failed.value.args[0] == {'msg': '/ca is not a PEM bundle', 'reason': 'not_pem'}
    with pytest.raises(Failed) as failed:
        module_kit.exit_built(Module({'path': '/ca'}), build, Refusal)
    assert failed.value.args[0] == {'msg': '/ca is not a PEM bundle'}


def test_exit_built_lets_any_other_error_through():
    # a bug is a traceback, not a refusal worded as the module's
    def build(params):
        raise KeyError('path')
    with pytest.raises(KeyError):
        module_kit.exit_built(Module({}), build, ValueError)


def test_exit_built_warns_the_named_list_in_order_and_returns_it():
    module = Module({})
    with pytest.raises(Exited) as exited:
        module_kit.exit_built(module, lambda p: {'warnings_list': ['first', 'second']}, ValueError,
                              warnings='warnings_list')
    assert module.warned == ['first', 'second']
    assert exited.value.args[0] == {'changed': False, 'warnings_list': ['first', 'second']}
    module = Module({})
    with pytest.raises(Exited):
        module_kit.exit_built(module, lambda p: {'warnings_list': ['not warned']}, ValueError)
    assert module.warned == []
