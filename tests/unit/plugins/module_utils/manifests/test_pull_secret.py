# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dockerconfigjson pull Secret: valid, decodable, and no credential in error messages."""
from __future__ import annotations

import base64
import json
import os
import sys

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import pull_secret

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402


def test_secret_decodes_to_a_docker_login():
    sec = pull_secret.build_pull_secret('vgpu-pull', 'nvidia-gpu-operator', 'registry.example.com:5000', 'bob', 's3cr3t')
    schema.validate(sec)
    assert sec['type'] == 'kubernetes.io/dockerconfigjson'
    conf = json.loads(base64.b64decode(sec['data']['.dockerconfigjson']))
    login = conf['auths']['registry.example.com:5000']
    assert base64.b64decode(login['auth']).decode() == 'bob:s3cr3t'


def test_errors_name_the_field_not_the_password():
    with pytest.raises(pull_secret.ManifestError) as err:
        pull_secret.build_pull_secret('vgpu-pull', 'ns', 'registry.example.com', 'bob', '')
    assert 'password' in str(err.value)
    with pytest.raises(pull_secret.ManifestError) as err:
        pull_secret.build_pull_secret('vgpu-pull', 'ns', 'registry.example.com/nvidia', 'bob', 'hunter2')
    assert 'host[:port]' in str(err.value) and 'hunter2' not in str(err.value)
    with pytest.raises(pull_secret.ManifestError, match='quay.io'):
        pull_secret.check_registry_matches('registry.example.com', 'quay.io', 'vgpu-pull')


@pytest.mark.parametrize('registry', ['registry.example.com:5000\n', 'reg istry', 'registry.example.com:5000;x',
                                      'https://bad host'])
def test_a_registry_outside_the_host_port_grammar_is_refused(registry):
    with pytest.raises(pull_secret.ManifestError, match='gpu_operator_pull_secret.registry'):
        pull_secret.check_login('pull', registry, 'u', True)
