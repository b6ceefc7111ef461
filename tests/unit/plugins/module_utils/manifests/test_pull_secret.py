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


def test_labels_go_into_the_metadata_and_none_leaves_it_as_it_was():
    plain = pull_secret.build_pull_secret('vgpu-pull', 'gpu', 'registry.example.com', 'bob', 'pw')
    assert plain['metadata'] == {'name': 'vgpu-pull', 'namespace': 'gpu'}
    labelled = pull_secret.build_pull_secret('vgpu-pull', 'gpu', 'registry.example.com', 'bob', 'pw',
                                             labels={'app.kubernetes.io/managed-by': 'gpuvirt.provision'})
    schema.validate(labelled)
    assert labelled['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'gpuvirt.provision'}
    assert dict(labelled, metadata=plain['metadata']) == plain


@pytest.mark.parametrize('labels,named', [
    ('a=b', 'expected a map'),
    ({'bad key!': 'x'}, 'label key'),
    ({'Example.com/x': 'y'}, 'label key'),
    ({'example.com/': 'y'}, 'has no name after its prefix'),
    ({'ok': 'not ok!'}, 'label ok'),
    ({'ok': 3}, 'label ok'),
])
def test_bad_labels_are_refused_naming_them_not_the_password(labels, named):
    with pytest.raises(pull_secret.ManifestError, match=named) as err:
        pull_secret.build_pull_secret('vgpu-pull', 'gpu', 'registry.example.com', 'bob', 'hunter2', labels=labels)
    assert 'hunter2' not in str(err.value)
