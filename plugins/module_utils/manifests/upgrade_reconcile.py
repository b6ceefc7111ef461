# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a new GPU Operator release has taken over, after the operator step of an upgrade (OLM's CSV Succeeded,
or `helm upgrade`) and before the roll is planned again. Pure Python; every object read is untrusted input.

A Succeeded CSV or a finished `helm upgrade` only says the operator's Deployment is up. The DaemonSets carry the
new release's templates only once the new operator holds the leader lease and has reconciled the ClusterPolicy
(NVIDIA/gpu-operator controllers/clusterpolicy_controller.go Reconcile, object_controls.go DaemonSet(): a template
that differs from the DaemonSet's ``nvidia.com/last-applied-hash`` is written with an Update). Planned earlier, the
roll would find nothing stale and leave every node on the old operands. The signals, in the order upgrade.yml waits
for them (roles/upgrade/tasks/reconciled.yml):

1. ``deployment``: the operator's Deployment ``gpu-operator`` (the chart's templates/operator.yaml and the CSV's
   install strategy both name it so) has rolled out its current template: status.observedGeneration at
   metadata.generation, every replica updated and available (kubernetes pkg/controller/deployment: what
   ``kubectl rollout status`` checks).
2. ``leader``: the Lease ``53822513.nvidia.com`` in the operator's namespace (cmd/gpu-operator/main.go
   LeaderElectionID; both the chart and the CSV run the operator with --leader-elect) is held by one of those
   pods: controller-runtime names the holder ``<hostname>_<uuid>`` (pkg/leaderelection/leader_election.go
   NewResourceLock), the hostname being the pod's name.
3. ``reconciled``: the ClusterPolicy's status changed after that leader took the lease: a ``Ready`` or ``Error``
   condition whose lastTransitionTime is not before the Lease's acquireTime. With OnDelete operands, a new template
   makes the reconcile report the ClusterPolicy not ready (object_controls.go isDaemonSetReady: a pod whose
   controller-revision-hash is not the DaemonSet's is NotReady), so a release that changes any template flips the
   conditions (internal/conditions/clusterpolicy.go, meta.SetStatusCondition moves lastTransitionTime only on a
   change of status). A release that changes none flips nothing: upgrade.yml then goes on after
   upgrade_operator_reconcile_grace seconds of the new leader.
4. ``daemonsets``: every DaemonSet of the namespace has status.observedGeneration at metadata.generation, so the
   DaemonSet controller has written the ControllerRevision of its newest template (the plan compares pods with it).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import (
    as_dict as _d, as_list as _l, as_str as _s, meta_of as _meta)

DEPLOYMENT = 'gpu-operator'
LEASE = '53822513.nvidia.com'
STEPS = ('deployment', 'leader', 'reconciled', 'daemonsets')


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _named(objects, name):
    found = [o for o in _l(objects) if _meta(o).get('name') == name]
    return found[0] if found else None


def _time(value):
    """An RFC 3339 time as the API server writes it (``2026-11-29T14:00:01Z``, a Lease's MicroTime with
    ``.123456``), to the second; None for anything else."""
    text = _s(value)
    try:
        return datetime.datetime.strptime(text[:19], '%Y-%m-%dT%H:%M:%S') if len(text) >= 20 else None
    except ValueError:
        return None


def _template_images(deployment):
    containers = _l(_d(_d(_d(_d(deployment).get('spec')).get('template')).get('spec')).get('containers'))
    return [_s(_d(c).get('image')) for c in containers]


def deployment_pending(deployments):
    """Why the operator's Deployment has not rolled out its current template (empty: it has)."""
    dep = _named(deployments, DEPLOYMENT)
    if dep is None:
        return ['the operator Deployment %s is not there' % DEPLOYMENT]
    status, spec = _d(dep.get('status')), _d(dep.get('spec'))
    generation, observed = _int(_meta(dep).get('generation')), _int(status.get('observedGeneration'))
    replicas = _int(spec.get('replicas'))
    replicas = 1 if replicas is None else replicas
    if generation is None or observed is None or observed < generation:
        return ['the operator Deployment %s has not observed its generation %s yet' % (DEPLOYMENT, generation)]
    updated, available = _int(status.get('updatedReplicas')) or 0, _int(status.get('availableReplicas')) or 0
    total = _int(status.get('replicas')) or 0
    if updated < replicas or available < replicas or total > updated:
        return ['the operator Deployment %s has %d of %d replicas on its current template and %d available'
                % (DEPLOYMENT, updated, replicas, available)]
    return []


def _ready(pod):
    return any(_d(c).get('type') == 'Ready' and _d(c).get('status') == 'True'
               for c in _l(_d(_d(pod).get('status')).get('conditions')))


def leader_pending(leases, pods, deployments):
    """Why the leader lease is not held by a Ready pod of the operator Deployment's current template (empty: it is).
    A pod matches the Deployment when its labels hold the Deployment's selector and its containers' images are the
    template's."""
    lease = _named(leases, LEASE)
    holder = _s(_d(_d(lease).get('spec')).get('holderIdentity'))
    if not holder:
        return ['the operator leader lease %s has no holder' % LEASE]
    dep = _named(deployments, DEPLOYMENT)
    selector = _d(_d(_d(dep).get('spec')).get('selector')).get('matchLabels')
    images = _template_images(dep)
    for pod in _l(pods):
        meta = _meta(pod)
        name = _s(meta.get('name'))
        labels = _d(meta.get('labels'))
        if not name or not holder.startswith(name + '_') or meta.get('deletionTimestamp'):
            continue
        ours = isinstance(selector, dict) and selector and all(labels.get(k) == v for k, v in selector.items())
        if ours and images and [_s(_d(c).get('image')) for c in _l(_d(_d(pod).get('spec')).get('containers'))] == images:
            return [] if _ready(pod) else ['the operator pod %s holds the leader lease but is not Ready' % name]
    return ['the operator leader lease %s is held by %s, not by a pod of the new operator release'
            % (LEASE, holder.split('_', 1)[0])]


def reconciled_pending(cluster_policies, leases):
    """Why no ClusterPolicy condition shows a reconcile by the lease's current holder (empty: one does)."""
    acquired = _time(_d(_d(_named(leases, LEASE)).get('spec')).get('acquireTime'))
    if acquired is None:
        return ['the operator leader lease %s has no acquireTime' % LEASE]
    for policy in _l(cluster_policies):
        for cond in _l(_d(_d(policy).get('status')).get('conditions')):
            moved = _time(_d(cond).get('lastTransitionTime'))
            if _d(cond).get('type') in ('Ready', 'Error') and moved is not None and moved >= acquired:
                return []
    return ['no ClusterPolicy condition has changed since the new operator took the lease (%s)'
            % acquired.strftime('%Y-%m-%dT%H:%M:%SZ')]


def daemonsets_pending(daemonsets):
    """The DaemonSets whose newest template the DaemonSet controller has not observed yet."""
    out = []
    for ds in _l(daemonsets):
        generation = _int(_meta(ds).get('generation'))
        observed = _int(_d(_d(ds).get('status')).get('observedGeneration'))
        if generation is not None and (observed is None or observed < generation):
            out.append('DaemonSet %s has not observed its generation %d yet' % (_s(_meta(ds).get('name')), generation))
    return sorted(out)


def pending(step, objects, pods=None, deployments=None, leases=None):
    """One step's sentences (STEPS); ``objects``: what that step's wait read."""
    if step == 'deployment':
        return deployment_pending(objects)
    if step == 'leader':
        return leader_pending(objects, pods, deployments)
    if step == 'reconciled':
        return reconciled_pending(objects, leases)
    if step == 'daemonsets':
        return daemonsets_pending(objects)
    raise ValueError('upgrade_operator_pending: step %r is not one of %s' % (step, ', '.join(STEPS)))
