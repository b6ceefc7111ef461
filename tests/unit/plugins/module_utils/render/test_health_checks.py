# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MachineConfigPool health checks docs/gitops/ ships for Argo CD (Lua) and Flux (CEL), run on pools in the shapes
the Machine Config Operator writes. Argo CD runs health Lua in gopher-lua, a Lua 5.1 (argoproj/gitops-engine
pkg/health, argo-cd util/lua): here Lua 5.1 through lupa. Flux evaluates healthCheckExprs with cel-go
(kustomize-controller docs/spec/v1/kustomizations.md, "Health check expressions": inProgress, then failed, then
current, the first true one decides): here cel-python, a CEL implementation of the same language."""
from __future__ import annotations

import os
import re

import celpy
from lupa import lua51
import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..', '..', '..'))
DOCS = os.path.join(ROOT, 'docs', 'gitops')
KEY = 'resource.customizations.health.machineconfiguration.openshift.io_MachineConfigPool'


EXPECTED = 'gpuvirt.provision/expected-machineconfig'
OURS = '100-gpu-worker-gpuvirt-iommu-0123456789'
EDITED = '100-gpu-worker-gpuvirt-iommu-abcdef0123'


def pool(machines=2, updated=2, conditions=(('Updated', 'True'), ('Updating', 'False')), generation=2, observed=2,
         paused=False, status=True, expected=None, sources=('00-worker', OURS), configuration=True):
    """A MachineConfigPool as the MCO reports it (openshift/machine-config-operator pkg/controller/node/status.go
    calculateStatus: counts, observedGeneration, the Updated / Updating / Degraded conditions, and
    status.configuration: the rendered config and its source, the MachineConfigs it was made from, a list of
    ObjectReferences: openshift/api machineconfiguration/v1 types.go MachineConfigPoolStatusConfiguration).
    ``expected``: the MachineConfig the render names in the pool's annotation. ``status`` False: no status yet (a
    pool just created); ``status`` a dict: that status as it is."""
    obj = {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'MachineConfigPool',
           'metadata': {'name': 'gpu-worker', 'generation': generation}, 'spec': {'paused': paused}}
    if expected:
        obj['metadata']['annotations'] = {EXPECTED: expected, 'argocd.argoproj.io/sync-wave': '31'}
    if isinstance(status, dict):
        obj['status'] = status
    elif status:
        obj['status'] = {'machineCount': machines, 'updatedMachineCount': updated, 'readyMachineCount': updated,
                         'observedGeneration': observed,
                         'conditions': [{'type': t, 'status': s, 'message': 'm'} for t, s in conditions]}
        if configuration:
            obj['status']['configuration'] = {
                'name': 'rendered-gpu-worker-1', 'source': [
                    {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'MachineConfig', 'name': name}
                    for name in sources]}
    return obj


# A pool with no status at all (created, not yet seen by the MCO): Flux's expressions cannot read it. Flux evaluates
# them on the object as it is, and a field that is absent is an evaluation error, not false; has(status.x) errors
# too while status itself is absent (fluxcd/kustomize-controller v1.9.0 docs/spec/v1/kustomizations.md, "Health
# check expressions"). The evaluator returns that error (fluxcd/pkg runtime/cel status_evaluator.go Evaluate), the
# status reader makes it Unknown with the error (fluxcd/cli-utils v1.2.1 pkg/kstatus/polling/statusreaders
# common.go errResourceToResourceStatus), and the wait goes on until every object is Current or one is Failed
# (fluxcd/pkg ssa/manager_wait.go WaitForSetWithContext): not healthy, not failed, polled again. Every field under
# status is read behind has(), so a status the MCO has only begun to write is inProgress, never an error.
NO_STATUS = 'error: Unknown, polled again'

CASES = [
    # (pool, Argo CD health, Flux status)
    (pool(), 'Healthy', 'current'),
    (pool(status=False), 'Progressing', NO_STATUS),
    (pool(status=False, expected=OURS), 'Progressing', NO_STATUS),
    # a status the MCO has only begun to write: no conditions, no configuration, no counts
    (pool(status={}), 'Progressing', 'inProgress'),
    (pool(status={'observedGeneration': 2}, expected=OURS), 'Progressing', 'inProgress'),
    (pool(expected=OURS, configuration=False), 'Progressing', 'inProgress'),
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
    (pool(conditions=(('RenderDegraded', 'True'),), expected=OURS, configuration=False), 'Degraded', 'failed'),
    # the rendered pool names its MachineConfig: healthy once the pool runs it
    (pool(expected=OURS), 'Healthy', 'current'),
    # An edited MachineConfig (a new name, its content hash): until the render controller has rendered it (at least
    # renderDelay, 5 s: openshift/machine-config-operator pkg/controller/render/render_controller.go) the pool still
    # reads Updated on every machine, its source the old MachineConfig; then Updating; status.configuration is copied
    # from the spec only once every machine runs the new rendered config (pkg/controller/node/status.go
    # calculateStatus). Healthy only then.
    (pool(expected=EDITED), 'Progressing', 'inProgress'),
    (pool(expected=EDITED, updated=1, conditions=(('Updated', 'False'), ('Updating', 'True'))), 'Progressing',
     'inProgress'),
    (pool(expected=EDITED, sources=('00-worker', EDITED)), 'Healthy', 'current'),
    # A pool with no machine: the MCO counts 0 of 0 as every machine updated and copies the source at once
    # (pkg/controller/node/status.go calculateStatus: allUpdated when updatedMachineCount == machineCount), so it
    # reads Updated with our MachineConfig although no node runs the IOMMU arguments (no node carries the pool's
    # selector labels yet, or its Node file was left out). Apply mode refuses it too (machineconfig.py, count_ok).
    (pool(machines=0, updated=0), 'Progressing', 'inProgress'),
    (pool(machines=0, updated=0, expected=OURS), 'Progressing', 'inProgress'),
    (pool(machines=1, updated=1, expected=OURS), 'Healthy', 'current'),
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
        # Flux's cel-go resolves a top-level name from the object's own keys and errors when it is absent, inside
        # has() too ("no such attribute": google/cel-go v0.28 interpreter/attributes.go maybeAttribute.Resolve,
        # interpretable.go evalTestOnly.Eval returns the error). cel-python answers has() on an absent variable with
        # false instead: that one difference is applied here, the rest is cel-python's evaluation.
        if any(top not in obj and re.search(r'\b%s\.' % top, check[name]) for top in ('metadata', 'spec', 'status')):
            return NO_STATUS
        result = env.program(env.compile(check[name])).evaluate(activation)
        if isinstance(result, celpy.CELEvalError):
            return NO_STATUS  # the first error ends the evaluation (status_evaluator.go Evaluate)
        if result:
            return name
    return 'inProgress'  # none true: InProgress (status_evaluator.go Evaluate)


@pytest.mark.parametrize('obj,argo,flux', CASES)
def test_the_machineconfigpool_is_healthy_only_once_every_machine_runs_the_rendered_config(obj, argo, flux):
    status, message = lua_health(obj)
    assert status == argo, message
    if obj['spec']['paused'] and status != 'Healthy':
        assert 'paused' in message
    # a pool the MCO reports, waiting for the MachineConfig the render names: the message says which
    expected = (obj['metadata'].get('annotations') or {}).get(EXPECTED)
    if status == 'Progressing' and (obj.get('status') or {}).get('conditions') and expected:
        sources = [s['name'] for s in (obj['status'].get('configuration') or {}).get('source') or []]
        if expected not in sources:
            assert 'does not run MachineConfig %s yet' % expected in message
    if status == 'Progressing' and (obj.get('status') or {}).get('machineCount') == 0:
        assert 'no node is in the pool yet' in message
    assert flux_status(obj) == flux


def test_the_flux_kustomizations_name_the_groups_the_render_writes_in_order():
    from ansible_collections.gpuvirt.provision.plugins.module_utils.render import gitops
    docs = flux_kustomizations()
    assert [d['spec']['path'] for d in docs] == ['./render/' + g.directory for g in gitops.FLUX_GROUPS]
    for before, after in zip(docs, docs[1:]):
        assert after['spec']['dependsOn'] == [{'name': before['metadata']['name']}]
    assert all(d['spec']['wait'] is True for d in docs)
