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
* ``installedCSV`` names the CSV OLM installed, not one that has finished installing: the catalog operator sets it
  once the InstallPlan has created the CSV, while the CSV itself goes through its phases (operator-framework/api
  v0.45.0 pkg/operators/v1alpha1/clusterserviceversion_types.go: Pending, InstallReady, Installing, then Succeeded or
  Failed; also Replacing, Deleting, Unknown). A run stopped after the approval finds the target installed with its
  CSV still Installing (or Failed): only a target CSV read in phase ``Succeeded`` is done (``none``); any other
  phase, or no such CSV, is waited for like an approved plan (``wait``, without an InstallPlan to follow).

The operator step on Kubernetes (Helm), ``helm_step``: the release the gpu_operator role installed, upgraded to the
target chart version with the values it was installed with, after the target chart's CRDs are applied:

* Helm installs the CRDs of a chart's ``crds/`` directory on install only, never on upgrade (Helm docs, "Custom
  Resource Definitions" best practices: "There is no support at this time for upgrading or deleting CRDs using
  Helm"). NVIDIA's GPU Operator upgrade page (docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/
  upgrade.html, "Using Helm", "Option 1: Manually Upgrading CRDs") applies the new release's CRDs first, then runs
  ``helm upgrade``. ``helm show crds`` prints the chart's ``crds/`` and those of its dependencies (helm/helm
  pkg/chart Chart.CRDObjects): for gpu-operator v26.7.0 the ``nvidia.com`` CRDs (clusterpolicies, nvidiadrivers,
  gpuclusters), the ``resource.nvidia.com`` ones (computedomains, computedomaincliques) and, from its
  node-feature-discovery dependency (charts/node-feature-discovery/crds/nfd-api-crds.yaml), ``nfd.k8s-sigs.io``
  (nodefeatures, nodefeaturegroups, nodefeaturerules). Any other document refuses the step (``CHART_CRD_GROUPS``).
* The chart's own pre-upgrade hook (templates/upgrade_crd.yaml, ``operator.upgradeCRD``, cmd/manage-crds through
  k8s-operator-libs pkg/crdutil applyCRDs) replaces each CRD whole with the chart's (an Update carrying the live
  resourceVersion): the chart's CRD wins over whoever wrote it before. The apply here does the same with a
  server-side apply that takes over conflicting fields (``force_conflicts``): Helm created the CRDs at install, so
  every field of them is Helm's, and a plain server-side apply of a changed field would conflict on every upgrade.
* The values sent are the release's own (``helm get values``: what the gpu_operator role built and checked when it
  installed it), checked again here against the target chart's values.yaml (a key the new chart no longer has would
  be ignored by Helm) and for the two settings that keep the operator from rolling nodes by itself
  (``daemonsets.updateStrategy`` OnDelete, ``driver.upgradePolicy.autoUpgrade`` false): the new chart renders its
  ClusterPolicy from these values.
* The chart applies NFD's CRDs only with NFD on: its pre-upgrade hook passes ``nfd-api-crds.yaml`` to manage-crds
  inside ``{{- if .Values.nfd.enabled }}`` (NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/templates/
  upgrade_crd.yaml), and Chart.yaml's node-feature-discovery dependency has ``condition: nfd.enabled``. So with
  ``nfd.enabled`` false (the release's value, else the target chart's default, true in v26.7.0 values.yaml) the
  ``nfd.k8s-sigs.io`` documents of ``helm show crds`` are left out: they belong to the NFD installed apart from the
  chart, which the step must not overwrite (``nfd_enabled``, ``chart_crd_set``).
* With NFD on, ``helm upgrade`` also upgrades the bundled node-feature-discovery subchart when the target chart
  depends on another version of it (Chart.yaml ``dependencies``: 0.18.3 in v26.3.x, 0.19.0 in v26.7.0): its master
  and worker pods restart and relabel the nodes while the VMs run. The GPU Operator derives
  ``nvidia.com/gpu.present`` from NFD's PCI labels, and its node labeling controller removes every
  ``nvidia.com/gpu.deploy.*`` label of a node without it (controllers/nodelabeling_controller.go
  updateGPUStateLabels, removeAllGPUStateLabels), which takes the operand pods - the vGPU Manager's too - off that
  node. The step warns when the version changes (``nfd_version_change``); the running version is read from the
  release's manifest (the subchart's objects carry ``helm.sh/chart: node-feature-discovery-<version>``, its
  _helpers.tpl), the target's from ``helm show chart``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    import yaml
    HAS_YAML = True
except ImportError:  # PyYAML comes with ansible-core; without it the Helm step refuses (helm_step)
    HAS_YAML = False

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import (
    ManifestError, checked, version_tuple, as_dict as _d, as_list as _l, as_str as _s)
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.gpu_operator import check_values_keys
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import upgrade_settings
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.fleet import printable
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators import ValidationError

PACKAGE = 'gpu-operator-certified'
APPROVAL_VARIABLE = 'gpu_operator_install_plan_approval'
TARGET_VARIABLE = 'upgrade_gpu_operator_version'
TIMEOUT_VARIABLE = 'upgrade_operator_timeout'
# InstallPlan status.phase values that are done: such a plan is never approved nor waited for
# (operator-framework/api v0.45.0 pkg/operators/v1alpha1/installplan_types.go InstallPlanPhaseComplete / Failed)
DONE_PHASES = ('Complete', 'Failed')


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
    # cluster text, written by whoever can write the plan's status: printable ASCII, capped, in any message
    return printable((_s(conditions[-1].get('message')) if conditions else '') or 'no message', 300)


def newest_plan(install_plans, package=PACKAGE):
    """The newest (creationTimestamp) InstallPlan that installs a CSV of ``package`` and is not done (phase Failed or
    Complete), or None."""
    live = [p for p in _l(install_plans) if isinstance(p, dict) and plan_csv(p, package)
            and _phase(p) not in DONE_PHASES]
    return max(live, key=_created) if live else None


def csv_phase(csv):
    """The ``status.phase`` of a ClusterServiceVersion as read (printable ASCII, capped), or ''."""
    return printable(_s(_d(_d(csv).get('status')).get('phase')), 100)


def olm_step(settings, subscription, install_plans, csv=None, package=PACKAGE):
    """What the upgrade does with the operator on OLM, as a dict. ``settings``: the upgrade settings
    (model/upgrade_settings.py), of which ``gpu_operator_version`` (the target) and ``gpu_operator_namespace``:

    ``action``: ``none`` (no target, or the target is installed and its CSV has succeeded), ``approve`` (a Manual
    plan for exactly the target waits), ``wait`` (that plan is approved already - by an earlier run or by hand - and
    the CSV is not installed yet; or the Subscription reports the target installed while its CSV, ``csv``, is not
    in phase Succeeded or was not found); ``installed`` / ``target`` CSV names; ``plan``: ``{name, uid,
    resource_version, csv}`` of the plan to approve or wait for (None for a wait on the CSV alone); ``refusals``;
    ``lines`` to print.

    ``csv``: the ClusterServiceVersion named ``target`` read from the namespace (None: there is none)."""
    settings = checked(upgrade_settings.build, settings, 'settings')
    target_version, namespace = settings.gpu_operator_version, settings.gpu_operator_namespace
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
    # the Subscription of our name must subscribe to our package: another package under this name would have its
    # plans chosen below by their CSV names alone
    if _s(spec.get('name')) != package:
        out['refusals'].append("Subscription %s subscribes to package %s, not %s: it is not the one "
                               "playbooks/operator.yml made; check it (oc get subscription -n %s -o yaml)"
                               % (where, printable(_s(spec.get('name')) or '(none)', 100), package, namespace))
        return out
    installed = _s(status.get('installedCSV'))
    out['installed'] = installed
    if installed == target:
        # installedCSV is set once OLM created the CSV, before it has installed (module text): a rerun after a run
        # stopped mid-install waits for the CSV again instead of planning the roll from a half-installed operator
        phase = csv_phase(csv) if _s(_d(_d(csv).get('metadata')).get('name')) == target else ''
        if phase == 'Succeeded':
            out['lines'].append('operator: %s is installed (the target) and its CSV has succeeded, nothing to '
                                'approve' % installed)
            return out
        out['action'] = 'wait'
        out['lines'].append('operator: %s is installed (the target) but its CSV is %s; wait for it to succeed (%s), '
                            'then plan the roll again with the new DaemonSets'
                            % (installed, 'in phase %s' % phase if phase else 'not found in namespace %s' % namespace,
                               TIMEOUT_VARIABLE))
        return out
    have, want = _csv_version(installed, package), _csv_version(target, package)
    if have is not None and want < have:
        out['refusals'].append("%s %s is older than the installed %s: OLM does not downgrade an installed CSV; set "
                               "%s to %s or later (going back: docs/upgrades.md, \"Going back\")"
                               % (TARGET_VARIABLE, target_version, installed, TARGET_VARIABLE, installed))
        return out
    # cluster text in messages: printable ASCII, capped (a newline or an escape sequence in a spec field would
    # otherwise reach the job's output as it is)
    approval = printable(_s(spec.get('installPlanApproval')) or 'Automatic', 100)
    channel = printable(_s(spec.get('channel')) or '(none)', 100)
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
            % (where, target, TARGET_VARIABLE, target_version, printable(installed or '(none)', 200),
               printable(_s(status.get('currentCSV')) or '(nothing)', 200), channel, target, TARGET_VARIABLE))
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
                            '(%s)' % (out['plan']['name'], printable(installed or '(none)', 200), target, TIMEOUT_VARIABLE))
    else:
        out['action'] = 'approve'
        out['lines'].append('operator: approve InstallPlan %s (%s -> %s), wait for the CSV to succeed (%s), then '
                            'plan the roll again with the new DaemonSets'
                            % (out['plan']['name'], printable(installed or '(none)', 200), target, TIMEOUT_VARIABLE))
    return out


# --- Helm ---------------------------------------------------------------------------------------------------------

CHART_VERSION_VARIABLE = 'gpu_operator_chart_version'
CRD_API_VERSION = 'apiextensions.k8s.io/v1'
# the API groups of the CRDs `helm show crds` prints for the gpu-operator chart (see the module text): NVIDIA/
# gpu-operator v26.7.0 deployments/gpu-operator/crds/ and charts/node-feature-discovery/crds/nfd-api-crds.yaml
CHART_CRD_GROUPS = ('nvidia.com', 'resource.nvidia.com', 'nfd.k8s-sigs.io')


def crd_problem(doc):
    """Why ``doc`` is not a CustomResourceDefinition of the chart's groups (a sentence), or ''."""
    if not isinstance(doc, dict):
        return 'is not a mapping'
    api, kind = _s(doc.get('apiVersion')), _s(doc.get('kind'))
    name = _s(_d(doc.get('metadata')).get('name'))
    spec = _d(doc.get('spec'))
    group, plural = _s(spec.get('group')), _s(_d(spec.get('names')).get('plural'))
    what = 'kind %s, name %s' % (kind or '(none)', name or '(none)')
    if kind != 'CustomResourceDefinition' or api != CRD_API_VERSION:
        return '(%s, apiVersion %s) is not a %s CustomResourceDefinition' % (what, api or '(none)', CRD_API_VERSION)
    if group not in CHART_CRD_GROUPS:
        return '(%s) is of API group %s, not one of the chart\'s (%s)' % (
            what, group or '(none)', ', '.join(CHART_CRD_GROUPS))
    # the API server accepts a CRD only under the name <plural>.<group>
    if not plural or name != '%s.%s' % (plural, group):
        return '(%s) is not named <spec.names.plural>.<spec.group> (%s.%s)' % (what, plural or '?', group)
    return ''


def chart_crds(text, where):
    """The CustomResourceDefinitions of ``helm show crds`` output ``text`` (YAML documents; empty ones skipped), each
    without ``status``, and the problems (sentences naming the document) that refuse them all."""
    if not HAS_YAML:
        return [], ['PyYAML is missing on the controller: the CRDs of %s cannot be read' % where]
    try:
        docs = list(yaml.safe_load_all(_s(text)))
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        return [], ['`helm show crds` of %s is not YAML: %s' % (where, str(exc).splitlines()[0])]
    crds, problems = [], []
    for index, doc in enumerate(docs, 1):
        if doc is None:
            continue
        problem = crd_problem(doc)
        if problem:
            problems.append('document %d of `helm show crds` of %s %s' % (index, where, problem))
            continue
        crds.append(dict((k, v) for k, v in doc.items() if k != 'status'))
    if not crds and not problems:
        problems.append('`helm show crds` of %s printed no CustomResourceDefinition: not the gpu-operator chart '
                        '(gpu_operator_chart_ref, gpu_operator_chart_repo_url)?' % where)
    return crds, problems


def checked_crds(value, name):
    """For the filter ``checked('gpu_operator_crds', name)``: a non-empty list of the chart's CustomResourceDefinitions,
    checked again in the task that applies them."""
    if not isinstance(value, list) or not value:
        raise ValidationError('%s: %r is not a non-empty list of CustomResourceDefinitions' % (name, value))
    for index, doc in enumerate(value, 1):
        problem = crd_problem(doc)
        if problem:
            raise ValidationError('%s: item %d %s' % (name, index, problem))
    return value


NFD_GROUP = 'nfd.k8s-sigs.io'
NFD_CHART = 'node-feature-discovery'


def _truthy(value):
    """Go template truth (text/template ``if``): false, 0, nil and empty strings, lists and maps are false."""
    return not (value is None or value is False or value == 0 or value in ('', [], {}))


def nfd_enabled(release_values, chart_defaults):
    """Whether the chart deploys NFD (and its hook applies NFD's CRDs) with these values: the release's
    ``nfd.enabled`` when it sets one, else the target chart's values.yaml default, else true."""
    mine = _d(_d(release_values).get('nfd'))
    if 'enabled' in mine and mine['enabled'] is not None:
        return _truthy(mine['enabled'])
    default = _d(_d(chart_defaults).get('nfd'))
    return _truthy(default['enabled']) if 'enabled' in default and default['enabled'] is not None else True


def chart_crd_set(crds, nfd_on):
    """The chart's CRDs to apply: without NFD, the ``nfd.k8s-sigs.io`` ones are left out (and named)."""
    if nfd_on:
        return list(crds), []
    return ([c for c in crds if _s(_d(c.get('spec')).get('group')) != NFD_GROUP],
            sorted(_s(_d(c.get('metadata')).get('name')) for c in crds if _s(_d(c.get('spec')).get('group')) == NFD_GROUP))


def running_nfd_version(manifest):
    """The node-feature-discovery subchart version the release runs, from its manifest (kubernetes.core.helm_info's
    ``manifest``: the rendered objects) - the ``helm.sh/chart: node-feature-discovery-<version>`` label - or ''."""
    prefix = NFD_CHART + '-'
    for obj in _l(manifest):
        label = _s(_d(_d(_d(obj).get('metadata')).get('labels')).get('helm.sh/chart'))
        if label.startswith(prefix) and len(label) > len(prefix):
            return printable(label[len(prefix):], 64)
    return ''


def target_nfd_version(chart_text):
    """The node-feature-discovery dependency version of ``helm show chart`` output (Chart.yaml), or ''."""
    if not HAS_YAML:
        return ''
    try:
        meta = yaml.safe_load(_s(chart_text))
    except (yaml.YAMLError, ValueError, RecursionError):
        return ''
    for dep in _l(_d(meta).get('dependencies')):
        if _d(dep).get('name') == NFD_CHART and isinstance(_d(dep).get('version'), (str, int, float)):
            return printable(str(dep['version']), 64)
    return ''


def nfd_version_change(release, chart_text, target, nfd_on):
    """The warning when ``helm upgrade`` to ``target`` would move the bundled NFD to another version, or ''."""
    have, want = running_nfd_version(_d(release).get('manifest')), target_nfd_version(chart_text)
    if not nfd_on or not have or not want or have.lstrip('v') == want.lstrip('v'):
        return ''
    return ("the chart's Node Feature Discovery moves from %s to %s with chart %s (nfd.enabled): helm upgrade restarts "
            "NFD's master and workers while VMs run, and a node whose NFD PCI labels drop meanwhile loses "
            "nvidia.com/gpu.present and its nvidia.com/gpu.deploy.* labels, which takes its operand pods (the vGPU "
            "Manager's too) off it. Upgrade at a quiet time, and check the nodes' labels after the operator step "
            "(playbooks/verify.yml)" % (have, want, target))


def release_version(release, chart):
    """The chart version of a ``helm list`` entry (``chart``: ``gpu-operator-v26.7.0``) for chart ``chart`` (a name,
    ``repo/name`` or an oci:// reference: its last part), or ''."""
    base = _s(chart).rstrip('/').split('/')[-1]
    text = _s(_d(release).get('chart'))
    prefix = base + '-'
    return text[len(prefix):] if base and text.startswith(prefix) else ''


def _policy_problems(values):
    """The settings of ``values`` that would let the operator roll nodes by itself (empty: none)."""
    values = _d(values)
    problems = []
    strategy = _d(values.get('daemonsets')).get('updateStrategy')
    if strategy != 'OnDelete':
        problems.append('daemonsets.updateStrategy is %s, not OnDelete' % (strategy or 'unset (the chart default)'))
    auto = _d(_d(values.get('driver')).get('upgradePolicy')).get('autoUpgrade')
    if auto is not False:
        problems.append('driver.upgradePolicy.autoUpgrade is %s, not false'
                        % ('unset (the chart default)' if auto is None else str(auto).lower()))
    return problems


def chart_version_refusal(target, chart_version):
    """Why the Helm target ``target`` (upgrade_gpu_operator_version) is refused against ``chart_version``
    (gpu_operator_chart_version), or '': one version for upgrade.yml and operator.yml (apply and render mode)."""
    target = _s(target).strip()
    if target.lstrip('v') == _s(chart_version).strip().lstrip('v'):
        return ''
    return ("%s is %s but %s is %s: on Kubernetes the chart version is the inventory's %s (playbooks/operator.yml "
            "installs it too, so a later operator.yml run would take the release back to it); set %s to %s in the "
            "inventory and %s to the same version" % (TARGET_VARIABLE, target, CHART_VERSION_VARIABLE,
                                                      _s(chart_version) or '(empty)', CHART_VERSION_VARIABLE,
                                                      CHART_VERSION_VARIABLE, target, TARGET_VARIABLE))


def helm_step(settings, release, crds_text, chart_values_text, chart_text=None):
    """What the upgrade does with the operator on Kubernetes (Helm), as a dict like ``olm_step``'s:

    ``settings``: the upgrade settings (model/upgrade_settings.py), of which ``gpu_operator_version``
    (upgrade_gpu_operator_version, the target), which must be ``helm_chart_version`` (gpu_operator_chart_version,
    what playbooks/operator.yml installs: one version for both playbooks), ``helm_release_name``,
    ``gpu_operator_namespace`` and ``helm_chart_ref``; ``release``: the ``helm list`` entry of the release
    (kubernetes.core.helm_info's ``status``: ``chart``, ``status``, ``values``) or None; ``crds_text`` /
    ``chart_values_text`` / ``chart_text``: ``helm show crds`` / ``helm show values`` / ``helm show chart`` of the
    target.

    ``action``: ``none`` (no target, or the release runs it) or ``upgrade``; ``installed`` / ``target`` chart versions;
    ``crds``: the CRDs to apply first; ``release_values``: the release's values, sent again with the new chart."""
    out = {'action': 'none', 'installed': '', 'target': '', 'plan': None, 'refusals': [], 'lines': [], 'crds': [],
           'release_values': {}, 'warnings': []}
    settings = checked(upgrade_settings.build, settings, 'settings')
    target = settings.gpu_operator_version.strip()
    chart_version, release_name = settings.helm_chart_version, settings.helm_release_name
    namespace, chart = settings.gpu_operator_namespace, settings.helm_chart_ref
    if not target:
        return out
    try:
        want = version_tuple(target)
    except ManifestError:
        raise ManifestError("%s is %r, not a GPU Operator chart version like v26.7.0" % (TARGET_VARIABLE, target))
    out['target'] = target
    where = '%s/%s' % (namespace, release_name)
    problem = chart_version_refusal(target, chart_version)
    if problem:
        out['refusals'].append(problem)
        return out
    release = _d(release)
    if not release:
        out['refusals'].append("%s is %s but namespace %s has no Helm release %s: install the operator with "
                               "playbooks/operator.yml first (gpu_operator_release_name names the release)"
                               % (TARGET_VARIABLE, target, namespace, release_name))
        return out
    status = _s(release.get('status'))
    if status != 'deployed':
        out['refusals'].append(
            "the Helm release %s is in status %s, not deployed (an install or upgrade failed or is still running): "
            "read `helm history %s -n %s`, finish or roll it back (`helm rollback %s -n %s`), then run "
            "playbooks/upgrade.yml again"
            % (where, status or '(none)', release_name, namespace, release_name, namespace))
        return out
    installed = release_version(release, chart)
    out['installed'] = installed
    if not installed:
        out['refusals'].append("the Helm release %s is of chart %s, not of %s (gpu_operator_chart_ref): it is not "
                               "the gpu-operator release this collection installed"
                               % (where, _s(release.get('chart')) or '(none)', chart))
        return out
    if installed.lstrip('v') == target.lstrip('v'):
        out['lines'].append('operator: Helm release %s runs chart %s %s (the target), nothing to upgrade'
                            % (where, chart, installed))
        return out
    try:
        have = version_tuple(installed)
    except ManifestError:
        have = None
    if have is not None and want < have:
        out['refusals'].append(
            "%s %s is older than the chart %s the Helm release %s runs: the older chart's CRDs would be applied over "
            "newer ones; go back with `helm rollback` (docs/upgrades.md, \"Going back\"), or set %s and %s to %s or "
            "later" % (TARGET_VARIABLE, target, installed, where, TARGET_VARIABLE, CHART_VERSION_VARIABLE, installed))
        return out
    source = 'chart %s %s' % (chart, target)
    values = _d(release.get('values'))
    problems = _policy_problems(values)
    if problems:
        out['refusals'].append(
            "the Helm release %s was installed with %s: the %s ClusterPolicy would let the GPU Operator roll every "
            "node by itself, VMs or not; run playbooks/operator.yml first with gpu_operator_daemonsets_update_strategy "
            "OnDelete and gpu_operator_upgrade_policy.auto_upgrade false (the defaults)"
            % (where, ' and '.join(problems), source))
    defaults = None
    if HAS_YAML:
        try:
            defaults = yaml.safe_load(_s(chart_values_text))
        except (yaml.YAMLError, ValueError, RecursionError):
            defaults = None
        if not isinstance(defaults, dict):
            out['refusals'].append('`helm show values` of %s printed no values.yaml: its keys cannot be checked'
                                   % source)
        else:
            try:
                check_values_keys(values, defaults)
            except ManifestError as exc:
                out['refusals'].append('the Helm release %s\'s values do not fit %s: %s; upgrade that release by hand '
                                       '(docs/upgrades.md) or fix the value' % (where, source, exc))
    crds, crd_problems = chart_crds(crds_text, source)
    for problem in crd_problems:
        out['refusals'].append('%s: the CRDs are not applied and the chart is not upgraded; check '
                               'gpu_operator_chart_ref and gpu_operator_chart_repo_url' % problem)
    if out['refusals']:
        return out
    nfd_on = nfd_enabled(values, defaults)
    crds, left_out = chart_crd_set(crds, nfd_on)
    out['action'], out['crds'], out['release_values'] = 'upgrade', crds, values
    out['lines'].append(
        'operator: Helm release %s, chart %s %s -> %s: apply its %d CRDs first (only those that differ: %s), then '
        'helm upgrade with the release\'s values, then plan the roll again with the new DaemonSets'
        % (where, chart, installed, target, len(crds), ', '.join(c['metadata']['name'] for c in crds)))
    if left_out:
        out['lines'].append('operator: NFD\'s CRDs are left alone (nfd.enabled is false, so the chart neither '
                            'deploys NFD nor applies them): %s' % ', '.join(left_out))
    change = nfd_version_change(release, chart_text, target, nfd_on)
    if change:
        out['warnings'].append(change)
    return out
