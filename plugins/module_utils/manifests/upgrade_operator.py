# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator step of an upgrade on OpenShift (OLM): which InstallPlan to approve, or why none. Pure Python.

Everything read from the cluster (the Subscription, its InstallPlans) is untrusted input: a malformed object is
named or skipped, never a crash. The step refuses (``refusals``) before any change; playbooks/upgrade.yml approves
only the plan this returns, sending its uid and resourceVersion with the patch.

What OLM does (operator-framework/operator-lifecycle-manager; field texts from operator-framework/api v0.45.0,
crds/operators.coreos.com_subscriptions.yaml and _installplans.yaml):

* The Subscription's ``status.installPlanRef`` is "a reference to the latest InstallPlan that contains the
  Subscription's current CSV"; ``status.currentCSV`` is "the CSV the Subscription is progressing to" and
  ``status.installedCSV`` "the CSV currently installed by the Subscription". An InstallPlan lists the CSVs it
  installs in ``spec.clusterServiceVersionNames`` (required) and reports ``status.phase`` ("the current status of a
  InstallPlan as a whole"; operator-framework/api pkg/operators/v1alpha1/installplan_types.go: Planning,
  RequiresApproval, Installing, Complete, Failed).
* ``spec.installPlanApproval`` (default ``Automatic``): OLM's catalog operator creates each InstallPlan with
  ``spec.approved`` true for Automatic, false for Manual (pkg/controller/operators/catalog/operator.go,
  createInstallPlan), and moves a Manual plan that is not approved to phase ``RequiresApproval``; once someone sets
  ``spec.approved: true`` the plan goes to ``Installing`` (transitionInstallPlanState; the Subscription meanwhile
  reports state ``UpgradePending``, test/e2e/subscription_e2e_test.go). With Automatic a new CSV of the channel is
  installed as soon as the catalog offers it: the operator upgrades by itself, outside any plan.
* OLM resolves a whole namespace at once: the catalog operator's syncResolvingNamespace resolves every Subscription
  of the namespace together and writes their steps into one InstallPlan (ensureInstallPlan), so a plan may list
  other operators' CSVs beside ours. Approving it upgrades those too: such a plan is refused (``foreign_csvs``).
* OLM resolves upgrades along the Subscription's channel only, and to the newest CSV it can reach: a CSV whose
  ``olm.skipRange`` covers the installed version replaces it directly (the v26.7.0 bundle's CSV carries
  ``olm.skipRange: '>=1.9.0 <26.7.0'`` beside ``replaces``), so the plan goes to the channel head, not one
  ``replaces`` step at a time. ``spec.startingCSV`` chooses the first install only. A CSV outside the channel never
  gets a plan: the channel has to change. OLM does not downgrade an installed CSV.
* Without ``installPlanRef`` (or naming a plan since deleted) the newest plan (``metadata.creationTimestamp``) of the
  namespace that installs the package is taken; plans in phase Failed or Complete are done and never approved.
* Once installed, the CSV reports ``status.phase`` ``Succeeded`` (or ``Failed``). A ``Failed`` CSV is not final:
  OLM's operator moves a failed CSV whose install check passes again back to ``Pending`` (reason NeedsReinstall:
  pkg/controller/operators/olm/operator.go transitionCSVState, case CSVPhaseFailed; operator_test.go
  "SingleCSVFailedToPending"), and OLM's own alert fires only after two minutes in Failed (CsvAbnormalFailedOver2Min).
  So roles/upgrade/tasks/operator.yml stops on a Failed CSV only once it stays Failed for
  ``upgrade_operator_failed_polls`` polls in a row.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, version_tuple

PACKAGE = 'gpu-operator-certified'
APPROVAL_VARIABLE = 'gpu_operator_install_plan_approval'
TARGET_VARIABLE = 'upgrade_gpu_operator_version'
TIMEOUT_VARIABLE = 'upgrade_operator_timeout'
# InstallPlan status.phase values that are done: such a plan is never approved nor waited for
# (operator-framework/api v0.45.0 pkg/operators/v1alpha1/installplan_types.go InstallPlanPhaseComplete / Failed)
DONE_PHASES = ('Complete', 'Failed')


def _d(value):
    return value if isinstance(value, dict) else {}


def _l(value):
    return value if isinstance(value, list) else []


def _s(value):
    return value if isinstance(value, str) else ''


def target_csv(version, package=PACKAGE):
    """``gpu-operator-certified.v26.7.1`` for ``v26.7.1`` or ``26.7.1``; '' for an empty version."""
    text = _s(version).strip() if version is not None else ''
    if not text:
        return ''
    try:
        version_tuple(text)
    except ManifestError:
        raise ManifestError("%s is %r, not a GPU Operator release like v26.7.1" % (TARGET_VARIABLE, version))
    return '%s.v%s' % (package, text.lstrip('v'))


def _csv_version(csv, package):
    """The version tuple of ``<package>.v1.2.3``; None for anything else."""
    prefix = package + '.'
    if not csv.startswith(prefix):
        return None
    try:
        return version_tuple(csv[len(prefix):])
    except ManifestError:
        return None


def plan_csv(install_plan, package=PACKAGE):
    """The package's CSV an InstallPlan installs (its ``spec.clusterServiceVersionNames`` entry), or ''."""
    names = [_s(n) for n in _l(_d(_d(install_plan).get('spec')).get('clusterServiceVersionNames'))]
    mine = [n for n in names if n.startswith(package + '.')]
    return mine[0] if mine else ''


def foreign_csvs(install_plan, target):
    """The CSVs an InstallPlan installs besides ``target`` (its ``spec.clusterServiceVersionNames``): OLM resolves
    the whole namespace into one plan, so approving it would install these too."""
    names = [_s(n) for n in _l(_d(_d(install_plan).get('spec')).get('clusterServiceVersionNames'))]
    return sorted(set(n for n in names if n != target))


def _phase(install_plan):
    return _s(_d(_d(install_plan).get('status')).get('phase'))


def _created(install_plan):
    # RFC 3339 in UTC ("2026-11-24T00:00:00Z", as the API server writes metadata.creationTimestamp): sorts as text
    return _s(_d(_d(install_plan).get('metadata')).get('creationTimestamp'))


def failure_message(install_plan):
    """The message of an InstallPlan's last status condition (OLM writes the failed step's error there), or
    'no message'."""
    conditions = [c for c in _l(_d(_d(install_plan).get('status')).get('conditions')) if isinstance(c, dict)]
    return (_s(conditions[-1].get('message')) if conditions else '') or 'no message'


def newest_plan(install_plans, package=PACKAGE):
    """The newest (creationTimestamp) InstallPlan that installs a CSV of ``package`` and is not done (phase Failed or
    Complete), or None."""
    live = [p for p in _l(install_plans) if isinstance(p, dict) and plan_csv(p, package)
            and _phase(p) not in DONE_PHASES]
    return max(live, key=_created) if live else None


def olm_step(subscription, install_plans, target_version, namespace, package=PACKAGE):
    """What the upgrade does with the operator on OLM, as a dict:

    ``action``: ``none`` (no target, or the target is installed), ``approve`` (a Manual plan for exactly the target
    waits), ``wait`` (that plan is approved already - by an earlier run or by hand - and the CSV is not installed yet);
    ``installed`` / ``target`` CSV names; ``plan``: ``{name, uid, resource_version, csv}`` of the plan to approve or
    wait for; ``refusals``; ``lines`` to print."""
    target = target_csv(target_version, package)
    out = {'action': 'none', 'installed': '', 'target': target, 'plan': None, 'refusals': [], 'lines': []}
    if not target:
        return out
    where = '%s/%s' % (namespace, package)
    sub = _d(subscription)
    if not sub:
        out['refusals'].append("%s is %s but the cluster has no Subscription %s: install the operator with "
                               "playbooks/operator.yml first" % (TARGET_VARIABLE, target_version, where))
        return out
    status, spec = _d(sub.get('status')), _d(sub.get('spec'))
    installed = _s(status.get('installedCSV'))
    out['installed'] = installed
    if installed == target:
        out['lines'].append('operator: %s is installed (the target), nothing to approve' % installed)
        return out
    have, want = _csv_version(installed, package), _csv_version(target, package)
    if have is not None and want < have:
        out['refusals'].append("%s %s is older than the installed %s: OLM does not downgrade an installed CSV; set "
                               "%s to %s or later (going back: docs/upgrades.md, \"Going back\")"
                               % (TARGET_VARIABLE, target_version, installed, TARGET_VARIABLE, installed))
        return out
    approval = _s(spec.get('installPlanApproval')) or 'Automatic'
    channel = _s(spec.get('channel')) or '(none)'
    if approval != 'Manual':
        out['refusals'].append(
            "Subscription %s has installPlanApproval %s: OLM installs each new CSV of channel %s as soon as its "
            "catalog offers it, so the GPU Operator would upgrade by itself, outside this plan; set %s to Manual, "
            "run playbooks/operator.yml, then run playbooks/upgrade.yml again"
            % (where, approval, channel, APPROVAL_VARIABLE))
        return out
    plans = [p for p in _l(install_plans) if isinstance(p, dict)]
    ref = _s(_d(status.get('installPlanRef')).get('name'))
    chosen = None
    if ref:
        chosen = next((p for p in plans if _s(_d(p.get('metadata')).get('name')) == ref), None)
    if chosen is None:
        # no reference (or it names a plan since deleted): the newest plan of this namespace for the package that
        # is not done; an older or finished one is not what OLM will install next
        chosen = newest_plan(plans, package)
    csv = plan_csv(chosen, package) if chosen else ''
    if chosen is not None and _phase(chosen) == 'Failed':
        name = _s(_d(chosen.get('metadata')).get('name'))
        out['refusals'].append(
            "the InstallPlan %s/%s of Subscription %s is in phase Failed (%s): OLM will not install it. Read its "
            "status.conditions (oc get installplan %s -n %s -o yaml), fix the cause, and let OLM plan again (delete "
            "the failed InstallPlan), then run playbooks/upgrade.yml again"
            % (namespace, name, where, failure_message(chosen), name, namespace))
        return out
    if chosen is None or not csv or csv == installed:
        out['refusals'].append(
            "no InstallPlan of Subscription %s installs %s (%s %s): installed is %s, the Subscription progresses to "
            "%s on channel %s. OLM plans only the CSVs of the Subscription's channel (up to the newest it reaches): "
            "set gpu_operator_channel to "
            "the channel that holds %s and run playbooks/operator.yml (startingCSV chooses the first install only), "
            "or set %s to the release the channel offers"
            % (where, target, TARGET_VARIABLE, target_version, installed or '(none)',
               _s(status.get('currentCSV')) or '(nothing)', channel, target, TARGET_VARIABLE))
        return out
    meta = _d(chosen.get('metadata'))
    out['plan'] = {'name': _s(meta.get('name')), 'uid': _s(meta.get('uid')),
                   'resource_version': _s(meta.get('resourceVersion')), 'csv': csv}
    if csv != target:
        out['refusals'].append(
            "the InstallPlan %s/%s of Subscription %s installs %s, not %s (%s %s): approving it would install "
            "another release. Set %s to %s to install that one, or wait until OLM plans %s"
            % (namespace, out['plan']['name'], where, csv, target, TARGET_VARIABLE, target_version, TARGET_VARIABLE,
               csv[len(package) + 1:], target))
        return out
    others = foreign_csvs(chosen, target)
    if others:
        out['refusals'].append(
            "the InstallPlan %s/%s of Subscription %s installs %s besides %s: OLM resolves every Subscription of "
            "namespace %s into one plan, so approving it would upgrade those operators too. Approve it by hand if that "
            "is wanted (oc patch installplan %s -n %s --type merge -p '{\"spec\":{\"approved\":true}}'), or move the "
            "other operators to their own namespace; then run playbooks/upgrade.yml again"
            % (namespace, out['plan']['name'], where, ', '.join(others), target, namespace, out['plan']['name'],
               namespace))
        return out
    if _d(chosen.get('spec')).get('approved') is True:
        out['action'] = 'wait'
        out['lines'].append('operator: InstallPlan %s (%s -> %s) is approved already; wait for the CSV to succeed '
                            '(%s)' % (out['plan']['name'], installed or '(none)', target, TIMEOUT_VARIABLE))
    else:
        out['action'] = 'approve'
        out['lines'].append('operator: approve InstallPlan %s (%s -> %s), wait for the CSV to succeed (%s), then '
                            'plan the roll again with the new DaemonSets'
                            % (out['plan']['name'], installed or '(none)', target, TIMEOUT_VARIABLE))
    return out
