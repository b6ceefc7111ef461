# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's own upgrade machinery, set to the collection's policy. Pure Python.

What the operator does by itself (NVIDIA/gpu-operator v26.7.0):

* ``driver.upgradePolicy`` drives the *driver* DaemonSet only: the upgrade controller
  (controllers/upgrade_controller.go) watches DaemonSets labelled ``app=nvidia-driver-daemonset`` (or the DTK /
  component labels) and, with ``autoUpgrade`` on, walks each node through the k8s-operator-libs state machine
  (node label ``nvidia.com/gpu-driver-upgrade-state``: upgrade-required, cordon-required, ..., upgrade-done), at most
  ``maxParallelUpgrades`` nodes at a time. With ``autoUpgrade`` off "all other options are ignored" (the CRD's
  description) and the driver DaemonSet, whose update strategy is always ``OnDelete``
  (assets/state-driver/0500_daemonset.yaml; controllers/object_controls.go applyUpdateStrategyConfig refuses
  RollingUpdate for it), replaces a node's driver pod only when someone deletes it. With the ClusterPolicy's
  ``sandboxWorkloads.enabled`` true (every fleet with VM nodes) the controller does not run the ClusterPolicy's
  driver upgrades at all (upgrade_controller.go Reconcile: "Advanced driver upgrade policy is not supported when
  'sandboxWorkloads.enabled=true'", it removes the upgrade-state labels and returns; so since v23.3.0): there
  ``autoUpgrade`` changes nothing and ``OnDelete`` alone keeps the operands in place. The NVIDIADriver path
  (reconcileNVIDIADriverUpgrades, taken before that check) has no such bypass, and its CRD defaults ``autoUpgrade``
  to true.
* The vGPU Manager DaemonSet (assets/state-vgpu-manager/0500_daemonset.yaml, ``app=nvidia-vgpu-manager-daemonset``)
  is NOT watched by the upgrade controller and has no upgradePolicy of its own (the ClusterPolicy CRD has
  ``upgradePolicy`` under ``driver`` only). It follows ``daemonsets.updateStrategy``, default ``RollingUpdate`` with
  ``maxUnavailable: "1"`` (the CSV's alm-examples): a new ``vgpuManager.version`` replaces the vGPU Manager on every
  node in turn, running VMs or not, and its k8s-driver-manager init container runs with
  ``ENABLE_GPU_POD_EVICTION=false`` - nothing cordons the node or stops its VMs first.

So the collection's default for VM fleets is: ``autoUpgrade: false`` (what matters where the controller runs:
container-only fleets and the NVIDIADriver path) and ``daemonsets.updateStrategy: OnDelete`` (what protects the
sandbox operands).
Every operand pod is then replaced only when playbooks/upgrade.yml deletes it, one node (``upgrade_serial``) at a
time, after the node is cordoned and its GPU VMs are handled. ``autoUpgrade: true`` stays possible (a fleet of
container nodes only), but not with ``maxParallelUpgrades: 0`` (0 means "all nodes in parallel").
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

UPDATE_STRATEGIES = ('OnDelete', 'RollingUpdate')
DEFAULT_POLICY = {'auto_upgrade': False, 'max_parallel_upgrades': 1, 'max_unavailable': '25%'}
# the CRD's maxUnavailable: an int or a percentage (x-kubernetes-int-or-string; "Absolute number is calculated from
# percentage by rounding up")
_PERCENT_RE = re.compile(r'(100|[1-9]?[0-9])%')
_KEYS = {'auto_upgrade': 'autoUpgrade', 'max_parallel_upgrades': 'maxParallelUpgrades',
         'max_unavailable': 'maxUnavailable'}
VARIABLE = 'gpu_operator_upgrade_policy'


def _bool(value, name):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('true', 'yes', 'on', '1'):
        return True
    if text in ('false', 'no', 'off', '0'):
        return False
    raise ManifestError("%s is %r, not a boolean: set it to true or false" % (name, value))


def _count(value, name):
    if isinstance(value, bool) or not isinstance(value, int):
        text = str(value).strip()
        # [0-9], not isdigit(): that takes '¹' and other scripts' digits, which int() then refuses with a ValueError
        if not re.fullmatch(r'[0-9]{1,9}', text):
            raise ManifestError("%s is %s, not a whole number >= 0" % (name, validators.shown(value, 200)))
        value = int(text)
    if value < 0:
        raise ManifestError("%s is %r, not a whole number >= 0" % (name, value))
    return value


def normalise(policy, variable=VARIABLE):
    """The checked policy (our snake_case keys), defaults filled in; unknown keys and bad values are refused."""
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise ManifestError("%s must be a mapping (auto_upgrade, max_parallel_upgrades, max_unavailable), not %r"
                            % (variable, policy))
    unknown = sorted(str(k) for k in policy if k not in DEFAULT_POLICY)
    if unknown:
        raise ManifestError("%s has unknown keys %s (known: %s)" % (
            variable, ', '.join(unknown), ', '.join(sorted(DEFAULT_POLICY))))
    out = dict(DEFAULT_POLICY, **policy)
    out['auto_upgrade'] = _bool(out['auto_upgrade'], variable + '.auto_upgrade')
    out['max_parallel_upgrades'] = _count(out['max_parallel_upgrades'], variable + '.max_parallel_upgrades')
    unavailable = out['max_unavailable']
    if isinstance(unavailable, str) and _PERCENT_RE.fullmatch(unavailable.strip()):
        out['max_unavailable'] = unavailable.strip()
    else:
        try:
            out['max_unavailable'] = _count(unavailable, variable + '.max_unavailable')
        except ManifestError:
            raise ManifestError("%s.max_unavailable is %r: give a node count (1) or a percentage of the GPU nodes "
                                "(25%%)" % (variable, unavailable))
    if out['auto_upgrade'] and out['max_parallel_upgrades'] == 0:
        # upgradePolicy.maxParallelUpgrades: "0 means no limit, all nodes will be upgraded in parallel"
        raise ManifestError("%s: auto_upgrade true with max_parallel_upgrades 0 lets the GPU Operator upgrade the "
                            "driver on every node at once; set max_parallel_upgrades to 1 (or upgrade_serial), or "
                            "leave auto_upgrade false and roll with playbooks/upgrade.yml" % variable)
    return out


def overlay(policy=None, update_strategy='OnDelete', variable=VARIABLE):
    """The ClusterPolicy spec / Helm values fragment: ``driver.upgradePolicy`` and ``daemonsets.updateStrategy``.

    The three upgradePolicy keys have the same names in the CRD and in the chart's values.yaml (the chart's
    ``gpuPodDeletion`` is the CRD's ``podDeletion``; neither is written: with autoUpgrade off they are ignored).
    """
    if update_strategy not in UPDATE_STRATEGIES:
        raise ManifestError("gpu_operator_daemonsets_update_strategy is %r, not one of %s"
                            % (update_strategy, ', '.join(UPDATE_STRATEGIES)))
    return {'driver': {'upgradePolicy': upgrade_policy(policy, variable)},
            'daemonsets': {'updateStrategy': update_strategy}}


def upgrade_policy(policy=None, variable=VARIABLE):
    """The three ``upgradePolicy`` keys (CRD names) of the checked policy: the ClusterPolicy's
    ``driver.upgradePolicy`` and the NVIDIADriver's ``spec.upgradePolicy`` (the GPUCluster path) have the same
    DriverUpgradePolicySpec (v26.7.0 CRDs nvidia.com_clusterpolicies / nvidia.com_nvidiadrivers)."""
    checked = normalise(policy, variable)
    return dict((_KEYS[k], checked[k]) for k in sorted(_KEYS))


def from_cluster_policy(spec):
    """What a live ClusterPolicy spec says about upgrades (for the planner): ``{auto_upgrade, max_parallel_upgrades,
    update_strategy}``; CRD defaults where a field is absent (autoUpgrade false, maxParallelUpgrades 1,
    updateStrategy RollingUpdate)."""
    spec = spec or {}
    up = ((spec.get('driver') or {}).get('upgradePolicy')) or {}
    return {'auto_upgrade': bool(up.get('autoUpgrade', False)),
            'max_parallel_upgrades': up.get('maxParallelUpgrades', 1),
            'update_strategy': (spec.get('daemonsets') or {}).get('updateStrategy') or 'RollingUpdate'}


def from_nvidia_driver(spec):
    """What a live NVIDIADriver spec says about upgrades: ``{auto_upgrade, max_parallel_upgrades}``. The v26.7.0
    NVIDIADriver CRD defaults ``upgradePolicy.autoUpgrade`` to TRUE (unlike the ClusterPolicy's false), and the
    CSV's alm-examples ship it true; so an absent field, or a spec without upgradePolicy, counts as true: the
    operator would roll the driver pods by itself. The driver DaemonSet is always OnDelete (no updateStrategy on
    this kind), so autoUpgrade alone decides."""
    spec = spec if isinstance(spec, dict) else {}
    up = spec.get('upgradePolicy')
    up = up if isinstance(up, dict) else {}
    auto = up.get('autoUpgrade', True)
    return {'auto_upgrade': auto is not False, 'max_parallel_upgrades': up.get('maxParallelUpgrades', 1)}
