# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MachineConfigPool health checks docs/gitops/ ships for Argo CD (Lua) and Flux (CEL), run on pools in the shapes
the Machine Config Operator writes. Argo CD runs health Lua in gopher-lua, a Lua 5.1 (argoproj/gitops-engine
pkg/health, argo-cd util/lua): here Lua 5.1 through lupa. Flux evaluates healthCheckExprs with cel-go
(kustomize-controller docs/spec/v1/kustomizations.md, "Health check expressions": inProgress, then failed, then
current, the first true one decides): here cel-python, a CEL implementation of the same language."""
from __future__ import annotations

import os

import celpy
from lupa import lua51
import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..', '..'))
DOCS = os.path.join(ROOT, 'docs', 'gitops')
KEY = 'resource.customizations.health.machineconfiguration.openshift.io_MachineConfigPool'


def pool(machines=2, updated=2, conditions=(('Updated', 'True'), ('Updating', 'False')), generation=2, observed=2,
         paused=False, status=True):
    """A MachineConfigPool as the MCO reports it (openshift/machine-config-operator pkg/controller/node/status.go
    calculateStatus: counts, observedGeneration and the Updated / Updating / Degraded conditions)."""
    obj = {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'MachineConfigPool',
           'metadata': {'name': 'gpu-worker', 'generation': generation}, 'spec': {'paused': paused}}
    if status:
        obj['status'] = {'machineCount': machines, 'updatedMachineCount': updated, 'readyMachineCount': updated,
                         'observedGeneration': observed,
                         'conditions': [{'type': t, 'status': s, 'message': 'm'} for t, s in conditions]}
    return obj


CASES = [
    # (pool, Argo CD health, Flux status)
    (pool(), 'Healthy', 'current'),
    (pool(status=False), 'Progressing', None),  # no status yet: Flux's expressions cannot read it (retried)
    (pool(observed=1), 'Progressing', 'inProgress'),
    # a node just labelled into the pool: counted, not updated yet, before the conditions follow
    (pool(machines=3, updated=2), 'Progressing', 'inProgress'),
    (pool(updated=1, conditions=(('Updated', 'False'), ('Updating', 'True'))), 'Progressing', 'inProgress'),
    # a paused pool: Updated False, Updating False, "Pool is paused; will not update to ..." (status.go)
    (pool(updated=0, conditions=(('Updated', 'False'), ('Updating', 'False')), paused=True), 'Progressing',
     'inProgress'),
    (pool(updated=1, conditions=(('Updated', 'False'), ('Updating', 'True'), ('Degraded', 'True'))), 'Degraded',
     'failed'),
    (pool(updated=1, conditions=(('Updated', 'False'), ('Updating', 'True'), ('NodeDegraded', 'True'))), 'Degraded',
     'failed'),
]


def lua_health(obj):
    with open(os.path.join(DOCS, 'argocd-machineconfigpool-health.yaml'), encoding='utf-8') as handle:
        script = yaml.safe_load(handle)['data'][KEY]
    runtime = lua51.LuaRuntime(unpack_returned_tuples=True)

    def table(value):
        if isinstance(value, dict):
            return runtime.table_from({k: table(v) for k, v in value.items()})
        if isinstance(value, list):
            return runtime.table_from([table(v) for v in value])
        return value
    result = runtime.execute('return function(obj)\n%s\nend' % script)(table(obj))
    return result['status'], result['message']


def flux_kustomizations():
    """The shipped Flux Kustomizations, one file each, in the order of their names."""
    directory = os.path.join(DOCS, 'flux')
    docs = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), encoding='utf-8') as handle:
            docs.append(yaml.safe_load(handle))
    return docs


def flux_status(obj):
    docs = flux_kustomizations()
    (check,) = [c for d in docs for c in d['spec'].get('healthCheckExprs') or [] if c['kind'] == 'MachineConfigPool']
    env = celpy.Environment()
    activation = dict((key, celpy.json_to_cel(value)) for key, value in obj.items())
    for name in ('inProgress', 'failed', 'current'):
        try:
            if env.program(env.compile(check[name])).evaluate(activation):
                return name
        except celpy.CELEvalError:
            return None
    return 'unknown'


@pytest.mark.parametrize('obj,argo,flux', CASES)
def test_the_machineconfigpool_is_healthy_only_once_every_machine_runs_the_rendered_config(obj, argo, flux):
    status, message = lua_health(obj)
    assert status == argo, message
    if obj['spec']['paused'] and status != 'Healthy':
        assert 'paused' in message
    if obj.get('status'):
        assert flux_status(obj) == flux


def test_the_flux_kustomizations_name_the_groups_the_render_writes_in_order():
    from ansible_collections.gpuvirt.provision.plugins.module_utils.render import gitops
    docs = flux_kustomizations()
    assert [d['spec']['path'] for d in docs] == ['./render/' + g.directory for g in gitops.FLUX_GROUPS]
    for before, after in zip(docs, docs[1:]):
        assert after['spec']['dependsOn'] == [{'name': before['metadata']['name']}]
    assert all(d['spec']['wait'] is True for d in docs)
