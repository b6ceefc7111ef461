# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resource.k8s.io/v1 stand-in CRDs the test API server serves (tools/kube/dra_stand_ins.py) are written by hand
from the 1.34 Go types; here they are held to the 1.34 OpenAPI of the same types, as kubernetes-validate ships it
(generated upstream from the same types): every field the stand-ins name exists there with the same type, nothing
upstream requires is optional here, and everything the collection writes is kept by the schema, not pruned."""
from __future__ import annotations

import json
import os
import sys

import kubernetes_validate
import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import dra_stand_ins  # noqa: E402
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra  # noqa: E402

UPSTREAM = os.path.join(os.path.dirname(kubernetes_validate.__file__), 'kubernetes-json-schema',
                        'v1.34.0-local-strict', '_definitions.json')
JSON_TYPES = {'object': 'object', 'array': 'array', 'string': 'string', 'integer': 'integer', 'boolean': 'boolean'}


@pytest.fixture(scope='module')
def definitions():
    with open(UPSTREAM, encoding='utf-8') as handle:
        return json.load(handle)['$defs']


def resolve(node, defs):
    while '$ref' in node:
        node = defs[node['$ref'].rsplit('/', 1)[1]]
    if 'allOf' in node and len(node['allOf']) == 1:
        return resolve(node['allOf'][0], defs)
    return node


def types(node):
    found = node.get('type')
    return set(found if isinstance(found, list) else [found]) - {'null', None}


def compare(ours, theirs, defs, path, problems):
    theirs = resolve(theirs, defs)
    if ours.get('x-kubernetes-int-or-string') or ours.get('x-kubernetes-preserve-unknown-fields'):
        return  # a Quantity or a RawExtension: upstream leaves both open too
    if types(theirs) and JSON_TYPES[ours['type']] not in types(theirs):
        problems.append('%s: type %s here, %s upstream' % (path, ours['type'], sorted(types(theirs))))
        return
    missing = set(theirs.get('required') or []) - set(ours.get('required') or [])
    if missing:
        problems.append('%s: upstream requires %s' % (path, sorted(missing)))
    for name, prop in (ours.get('properties') or {}).items():
        if name not in (theirs.get('properties') or {}):
            problems.append('%s.%s: no such field upstream' % (path, name))
            continue
        compare(prop, theirs['properties'][name], defs, '%s.%s' % (path, name), problems)
    if 'items' in ours:
        compare(ours['items'], theirs['items'], defs, path + '[]', problems)
    if isinstance(ours.get('additionalProperties'), dict):
        compare(ours['additionalProperties'], theirs['additionalProperties'], defs, path + '{}', problems)


@pytest.mark.parametrize('kind', sorted(dra_stand_ins.KINDS))
def test_the_stand_in_names_upstream_fields_with_upstream_types_and_requirements(kind, definitions):
    crd = dra_stand_ins.crd(kind)
    (version,) = crd['spec']['versions']
    problems = []
    compare(version['schema']['openAPIV3Schema'], definitions['io.k8s.api.resource.v1.%s' % kind], definitions,
            kind, problems)
    assert problems == []


def test_the_stand_ins_carry_the_api_approval_their_group_needs():
    for crd in dra_stand_ins.crds():
        assert crd['spec']['group'].endswith('.k8s.io')
        assert crd['metadata']['annotations']['api-approved.kubernetes.io'].startswith('unapproved')
        assert crd['metadata']['name'] == '%s.%s' % (crd['spec']['names']['plural'], crd['spec']['group'])
    assert sorted(dra_stand_ins.NAMES) == sorted(c['metadata']['name'] for c in dra_stand_ins.crds())


def kept(obj, schema, path, lost):
    """Every field of ``obj`` is a field of ``schema`` (or under an open part of it): a structural schema prunes the
    rest silently, and the server would store less than was sent."""
    if schema.get('x-kubernetes-preserve-unknown-fields'):
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in (schema.get('properties') or {}):
                kept(value, schema['properties'][key], '%s.%s' % (path, key), lost)
            elif isinstance(schema.get('additionalProperties'), dict):
                kept(value, schema['additionalProperties'], '%s.%s' % (path, key), lost)
            else:
                lost.append('%s.%s' % (path, key))
    elif isinstance(obj, list):
        for value in obj:
            kept(value, schema['items'], path + '[]', lost)


@pytest.mark.parametrize('count', [1, 2, dra.MAX_REQUESTS])
def test_every_field_the_collection_writes_is_in_the_schema(count):
    template = dra.resource_claim_template('vfio-gpu', 'default', count=count)
    (version,) = dra_stand_ins.crd('ResourceClaimTemplate')['spec']['versions']
    lost = []
    kept(template['spec'], version['schema']['openAPIV3Schema']['properties']['spec'], 'spec', lost)
    assert lost == []
