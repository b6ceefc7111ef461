# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade as a Git change (playbooks/upgrade.yml in render mode): what can be refused without a cluster, and
the recipe the render writes beside the objects (``UPGRADE.md``). Pure Python.

The objects themselves come from the phases' own builders: the render runs the operator phase (the Subscription
with its ``installPlanApproval``, or the Helm values of ``gpu_operator_chart_version``; the ClusterPolicy with
``vgpuManager.version``, ``driver.upgradePolicy`` and ``daemonsets.updateStrategy``) and, with
``upgrade_kubevirt_version``, the kubevirt phase for that version (the mdev switch: kubevirt.py
has_mdev_enabled_field). Nothing here builds an object.

Upstream behaviour the recipe and the refusals rest on:

* OLM: with ``installPlanApproval: Manual`` the catalog operator creates the next CSV's InstallPlan with
  ``spec.approved`` false and leaves it in phase ``RequiresApproval`` (operator-framework/operator-lifecycle-manager
  pkg/controller/operators/catalog/operator.go, createInstallPlan / transitionInstallPlanState; upgrade_operator.py):
  syncing the Subscription installs nothing by itself; ``Automatic`` would install every new CSV of the channel at
  once. OLM plans upgrades along the Subscription's channel only, and the GPU Operator publishes channel
  ``v<major>.<minor>`` with the CSVs ``gpu-operator-certified.v<major>.<minor>.<patch>`` (NVIDIA, "Installing the
  NVIDIA GPU Operator" on OpenShift; gpu_operator.py check_alm_examples_release).
* Helm: ``helm upgrade`` never updates the CRDs of a chart's ``crds/`` directory (Helm docs, "Custom Resource
  Definitions": "There is no support at this time for upgrading or deleting CRDs using Helm"); NVIDIA's upgrade page
  applies the new release's CRDs first (upgrade_operator.py). Flux's HelmRelease skips them on upgrade unless
  ``spec.upgrade.crds`` is ``CreateReplace`` (fluxcd/helm-controller docs/spec/v2/helmreleases.md, "Upgrade
  configuration": ``crds`` "Skip" is the default for upgrades); Argo CD renders a Helm source with ``helm template
  --include-crds`` and applies the CRDs like any manifest unless ``skipCrds`` is set (Argo CD user guide, "Helm").
* Argo CD applies the objects of one sync in the order of their ``argocd.argoproj.io/sync-wave`` annotation, lowest
  first, each wave once the previous one is healthy (Argo CD user guide, "Sync Phases and Waves"); Flux orders
  separate Kustomizations with ``spec.dependsOn`` (fluxcd/kustomize-controller docs/spec/v1/kustomizations.md,
  "Dependencies"). The render's waves are the file prefixes of the roles (render/gitops.py writes them): 40 the
  operator's namespace and OLM objects, 43 the ClusterPolicy (or the Helm values), 60 the KubeVirt configuration.
* KubeVirt: before 1.8.0 the ``DisableMDEVConfiguration`` gate turns its mdev handling off, from 1.8.0
  ``mediatedDevicesConfiguration.enabled: false`` (kubevirt.py has_mdev_enabled_field); a KubeVirt that does not
  have the field yet drops it on write (the API server prunes an unknown field of a structural schema), and the
  gate would be gone: the configuration for a new KubeVirt is synced only once KubeVirt reports that version
  (``status.observedKubeVirtVersion``), as apply mode waits for it (roles/upgrade/tasks/kubevirt.yml).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, as_str as _s
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gpu_op
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_operator as up_op
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up_plan
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_policy as up_policy

RECIPE_FILE = 'UPGRADE.md'
# the render prefixes (and so the Argo CD sync waves) of the objects an upgrade changes: roles/gpu_operator
# (tasks/main.yml 40-gpu-operator, tasks/openshift.yml 43-gpu-operator-policy, tasks/helm.yml the values file
# 43-gpu-operator-helm-values-<release>.yaml) and roles/kubevirt_devices (tasks/main.yml 60-kubevirt-devices)
WAVE_OPERATOR = 40
WAVE_POLICY = 43
WAVE_KUBEVIRT = 60
_RELEASE_RE = re.compile(r'v?([0-9]+)\.([0-9]+)\.[0-9]+([-+].*)?')


def channel_of(release):
    """``v26.7`` for ``v26.7.1`` (the GPU Operator's channel naming); '' for anything else."""
    match = _RELEASE_RE.fullmatch(_s(release).strip())
    return 'v%s.%s' % match.groups()[:2] if match else ''


def preflight(install, target, kubevirt_current='', kubevirt_source='', chart_version='', install_plan_approval='',
              channel='', alm_examples_release='', package_manifest=None, update_strategy='OnDelete',
              upgrade_policy=None, guest_branch=None, vendor_vfio=False, supports=None, os_tags=None,
              image_tags=None):
    """What an upgrade render refuses before it writes anything, decided from the inventory (and, for KubeVirt, the
    version the cluster reports when the render reads it: ``kubevirt_source`` says where ``kubevirt_current`` comes
    from). ``install``: ``olm`` or ``helm``; ``target``: ``{gpu_operator, vgpu_manager, kubevirt}``.

    Returns ``{ok, refusals, notes, warnings, lines}``; raises ManifestError for a malformed inventory value."""
    target = target if isinstance(target, dict) else {}
    operator_target = _s(target.get('gpu_operator')).strip()
    kv_target = _s(target.get('kubevirt')).strip()
    rows, refusals, notes, warnings = up_plan.versions({'kubevirt': _s(kubevirt_current)}, target, guest_branch,
                                                       vendor_vfio, supports)
    lines = []
    for row in rows:
        if row['component'] == 'kubevirt' and row['from']:
            lines.append('kubevirt: %s (%s) -> %s' % (row['from'], kubevirt_source or 'given', row['to']))
        elif row['to']:
            lines.append('%s: -> %s' % (row['component'], row['to']))
    if kv_target and not kubevirt_current:
        warnings.append("upgrade_kubevirt_version %s is not checked against the running KubeVirt (a minor skip, a "
                        "downgrade): the render read no cluster and kubevirt_devices_kubevirt_version is not set; "
                        "playbooks/upgrade.yml against the cluster checks it before the roll" % kv_target)
    policy = up_policy.normalise(upgrade_policy)
    if update_strategy != 'OnDelete' or policy['auto_upgrade']:
        refusals.append("gpu_operator_daemonsets_update_strategy is %s and gpu_operator_upgrade_policy.auto_upgrade "
                        "%s: the rendered ClusterPolicy would let the GPU Operator roll the new version over every "
                        "node by itself once synced, VMs or not; set gpu_operator_daemonsets_update_strategy OnDelete "
                        "and gpu_operator_upgrade_policy.auto_upgrade false (the defaults)"
                        % (update_strategy, str(policy['auto_upgrade']).lower()))
    if operator_target and install == 'helm':
        problem = up_op.chart_version_refusal(operator_target, chart_version)
        if problem:
            refusals.append(problem)
    elif operator_target and install == 'olm':
        csv = up_op.target_csv(operator_target)
        if _s(install_plan_approval) != 'Manual':
            refusals.append("gpu_operator_install_plan_approval is %s: once the Subscription is synced OLM installs "
                            "each new CSV of its channel as soon as the catalog offers it, outside the roll; set it "
                            "to Manual (playbooks/upgrade.yml approves the InstallPlan of %s after the sync)"
                            % (install_plan_approval or 'Automatic', csv))
        want = channel_of(operator_target)
        if channel and channel != want:
            refusals.append("upgrade_gpu_operator_version %s is a CSV of channel %s, but the Subscription follows "
                            "gpu_operator_channel %s: OLM plans upgrades along the channel only; set "
                            "gpu_operator_channel to %s" % (operator_target, want, channel, want))
        head, _examples = gpu_op.channel_alm_examples(package_manifest, channel) if channel else (None, None)
        if head and head != csv:
            refusals.append("the PackageManifest's head of channel %s is %s, not %s (upgrade_gpu_operator_version): "
                            "the rendered ClusterPolicy would carry that release's defaults" % (channel, head, csv))
        elif not head and alm_examples_release and \
                _s(alm_examples_release).lstrip('v') != operator_target.lstrip('v'):
            refusals.append("gpu_operator_alm_examples_release is %s but upgrade_gpu_operator_version is %s: the "
                            "ClusterPolicy is rendered from the alm-examples of the release that runs after the "
                            "upgrade; set gpu_operator_alm_examples_file to the alm-examples of %s and "
                            "gpu_operator_alm_examples_release to %s"
                            % (alm_examples_release, operator_target, csv, operator_target))
    vgm = _s(target.get('vgpu_manager'))
    if vgm and image_tags is not None:
        for tag in up_plan.missing_image_tags(vgm, os_tags, image_tags):
            refusals.append("the vGPU Manager image tag %s is not in the registry: build and push it first "
                            "(playbooks/vgpu_image.yml with vgpu_manager_image_version %s)" % (tag, vgm))
    return {'ok': not refusals, 'refusals': refusals, 'notes': notes, 'warnings': warnings, 'lines': lines}


def recipe(install, target, namespace, kubevirt_config='', kubevirt_rendered=False, release_name='',
           chart_ref='', chart_repo_url='', chart_version=''):
    """The text of ``UPGRADE.md``: the sync order of what this render changed, and what runs against the cluster
    after the sync. Byte-stable: it depends on its arguments only (no time, no path)."""
    target = target if isinstance(target, dict) else {}
    op_t, vgm_t, kv_t = (_s(target.get(k)).strip() for k in ('gpu_operator', 'vgpu_manager', 'kubevirt'))
    targets = [what for what in (('GPU Operator ' + op_t) if op_t else '',
                                 ('vGPU Manager ' + vgm_t) if vgm_t else '',
                                 ('KubeVirt ' + kv_t) if kv_t else '') if what]
    out = ['# GPU upgrade as a Git change', '',
           'Rendered by `playbooks/upgrade.yml` in render mode (gpuvirt.provision) for: %s.'
           % (', '.join(targets) or 'no new version (the operator phase rendered again)'), '',
           'Commit the changed files, sync them in this order, then roll the nodes from the controller.', '',
           '## Sync order', '',
           '| step | Argo CD sync wave | files | what |', '|---|---|---|---|']
    step = 1
    if install == 'helm':
        out.append('| %d | before %d | the chart\'s CRDs | the target chart\'s CRDs (below): Helm never upgrades the '
                   'CRDs of a chart\'s `crds/` |' % (step, WAVE_OPERATOR))
        step += 1
        out.append('| %d | %d | `%02d-gpu-operator-*` | the operator\'s namespace |'
                   % (step, WAVE_OPERATOR, WAVE_OPERATOR))
        step += 1
        out.append('| %d | %d | `%02d-gpu-operator-helm-values-%s.yaml` | the release `%s/%s` at chart %s with these '
                   'values (the HelmRelease / Application `spec.chart.version`, or the `helm upgrade` in the '
                   'file\'s header): the ClusterPolicy it renders keeps `daemonsets.updateStrategy: OnDelete` and '
                   '`driver.upgradePolicy.autoUpgrade: false`, so the new DaemonSet templates replace no pod |'
                   % (step, WAVE_POLICY, WAVE_POLICY, release_name, namespace, release_name, chart_version))
        step += 1
    else:
        out.append('| %d | %d | `%02d-gpu-operator-*` | the operator\'s namespace, OperatorGroup and Subscription '
                   '(`installPlanApproval: Manual`): OLM plans %s and waits for its approval (phase '
                   '`RequiresApproval`); nothing is installed by the sync |'
                   % (step, WAVE_OPERATOR, WAVE_OPERATOR,
                      ('`%s`' % up_op.target_csv(op_t)) if op_t else 'the channel\'s next CSV'))
        step += 1
        out.append('| %d | %d | `%02d-gpu-operator-policy-*` | the ClusterPolicy: `vgpuManager.version`, '
                   '`daemonsets.updateStrategy: OnDelete`, `driver.upgradePolicy.autoUpgrade: false`: new DaemonSet '
                   'templates, no pod replaced |' % (step, WAVE_POLICY, WAVE_POLICY))
        step += 1
    if kubevirt_rendered:
        obj = 'HyperConverged' if kubevirt_config == 'hco' else 'KubeVirt CR'
        switch = ('its mdev switch follows `kubevirt_devices_hco_version`, the OpenShift Virtualization version'
                  if kubevirt_config == 'hco' else 'the DisableMDEVConfiguration gate before 1.8.0, '
                  '`mediatedDevicesConfiguration.enabled: false` from 1.8.0')
        out.append('| %d | %d | `%02d-kubevirt-devices-*` | the %s for KubeVirt %s (%s): sync it only once KubeVirt '
                   'reports %s (`kubectl get kubevirt -A -o jsonpath=\'{..observedKubeVirtVersion}\'`); an older '
                   'KubeVirt drops a field it does not have yet |'
                   % (step, WAVE_KUBEVIRT, WAVE_KUBEVIRT, obj, kv_t, switch, kv_t))
    out += ['', 'Flux: one Kustomization per step, each with `spec.dependsOn` on the one before (and `wait: true`), '
            'or this directory as one Kustomization when only one step changed.', '']
    if install == 'olm':
        # Argo CD's Subscription health check (argo-cd resource_customizations/operators.coreos.com/Subscription/
        # health.lua) reads OLM's InstallPlanPending condition, reason RequiresApproval for a Manual plan, as
        # Progressing: the sync waits at the Subscription's wave until someone approves. Flux's kstatus reads no
        # condition of a Subscription (fluxcd/cli-utils kstatus/status/generic.go): it is current at once.
        out += ['Argo CD holds a Subscription whose InstallPlan waits for its Manual approval as Progressing, so the '
                'sync stops after the Subscription\'s step: run the roll below then. It approves exactly that plan, '
                'waits for the new operator to take over and rolls the nodes against the ClusterPolicy that runs; '
                'Argo CD then syncs the later steps. Once they are Synced and Healthy, run `playbooks/upgrade.yml` '
                'again: it rolls the nodes whose operands the new ClusterPolicy changed and leaves the others alone.',
                '',
                'Flux counts the Subscription ready at once (kstatus reads none of its conditions), so the next step '
                'reaches the ClusterPolicy while the old CRD still serves it, which drops the fields it does not have '
                'yet: after the roll below has installed the new CSV, reconcile the ClusterPolicy\'s Kustomization '
                'again (`flux reconcile kustomization <its name>`), then run `playbooks/upgrade.yml` again.', '']
    if install == 'helm':
        out += ['The chart\'s CRDs: a Flux HelmRelease with `spec.upgrade.crds: CreateReplace` applies them itself; '
                'Argo CD applies them from the chart unless `skipCrds` is set; else, before the sync:', '',
                '    helm show crds %s --repo %s --version %s \\' % (chart_ref, chart_repo_url, chart_version),
                '      | kubectl apply --server-side --force-conflicts -f -', '']
    if kubevirt_rendered:
        out += ['KubeVirt itself (virt-operator, or the OpenShift Virtualization Subscription) is not in this '
                'render: upgrade it one minor release at a time, before the KubeVirt step above. Once it runs %s, set '
                '`%s` in the inventory, so that the next render of the kubevirt phase keeps this configuration.'
                % (kv_t, 'kubevirt_devices_hco_version: <the OpenShift Virtualization version>'
                   if kubevirt_config == 'hco' else 'kubevirt_devices_kubevirt_version: %s' % kv_t), '']
    args = []
    if op_t:
        args.append('-e upgrade_gpu_operator_version=%s' % op_t)
    if kv_t:
        args.append('-e upgrade_kubevirt_version=%s' % kv_t)
    out += ['## After the sync: the roll', '',
            'The per-node roll is not a Git change. Against the cluster (apply mode), with the same inventory:', '',
            '    ansible-playbook -i <inventory> playbooks/upgrade.yml --check%s' % ''.join(' ' + a for a in args),
            '    ansible-playbook -i <inventory> playbooks/upgrade.yml%s' % ''.join(' ' + a for a in args), '',
            'It plans first and refuses before any change (GPU VMs, versions), %sthen rolls the nodes one batch at '
            'a time: cordon, the GPU VMs by `upgrade_vm_policy`, the operand pods deleted, wait for the new ones '
            'and the node\'s GPUs, uncordon (docs/upgrades.md).'
            % ('approves the InstallPlan of exactly %s and waits for its CSV, ' % up_op.target_csv(op_t)
               if install == 'olm' and op_t else ''), '']
    return '\n'.join(out)


def check_recipe_inputs(install, kubevirt_config):
    if install not in ('olm', 'helm'):
        raise ManifestError('the GPU Operator install is %r, not olm or helm' % (install,))
    if kubevirt_config not in ('', 'hco', 'kubevirt'):
        raise ManifestError('the KubeVirt configuration is %r, not hco or kubevirt' % (kubevirt_config,))
