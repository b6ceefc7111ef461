# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which objects may carry a credential: decided by the objects, failing closed on what is not understood."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuvirt.provision.plugins.filter.k8s_holds_secret import FilterModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import credentials

SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'pull'}}
CONFIGMAP = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'a'}}


@pytest.mark.parametrize('obj', [
    SECRET, dict(SECRET, kind='secret'), dict(SECRET, kind='Secrets'),  # the k8s modules resolve these too
    dict(SECRET, kind='List', items=[SECRET]), dict(SECRET, kind='SecretList'),  # items may be Secrets
    dict(SECRET, kind=None), {'metadata': {}}, 'kind: Secret', None,  # not understood: a credential
])
def test_what_may_carry_a_credential(obj):
    assert credentials.holds_credential(obj)


@pytest.mark.parametrize('obj', [CONFIGMAP, dict(CONFIGMAP, kind='Namespace'), dict(CONFIGMAP, kind='SecretProviderClass')])
def test_what_does_not(obj):
    assert not credentials.holds_credential(obj)


def test_a_list_holds_one_when_any_object_does_and_the_filter_says_the_same():
    holds = FilterModule().filters()['k8s_holds_secret']
    assert holds([CONFIGMAP, SECRET]) and not holds([CONFIGMAP]) and not holds([])
    assert holds('not a list') and holds({'kind': 'ConfigMap'})
