# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG (Multi-Instance GPU) on the nodes of a pool whose row says ``mig`` (model/fleet.py): the GPUs that support it,
the MIG config a node's label names, the MIG strategy of the device plugin and what a node then advertises.

The GPU Operator's MIG manager partitions a node's GPUs into the config its label ``nvidia.com/mig.config`` names
(NVIDIA/mig-parted v0.15.0 cmd/nvidia-mig-manager/main.go MigConfigLabel: it watches that label and reads it, and
writes only ``nvidia.com/mig.config.state``, pkg/mig/reconfigure/reconfigure.go migConfigStateLabel). The device
plugin then advertises the MIG devices per the ClusterPolicy's ``mig.strategy`` (NVIDIA/k8s-device-plugin v0.20.0,
the version gpu-operator v26.7.0's values.yaml ships, internal/rm/rm.go AddDefaultResourcesToConfig): ``single``
as ``nvidia.com/gpu``, and only when every MIG device of the node has one profile (internal/rm/device_map.go, the
uniform check of assertAllMigDevicesAreValid: "more than one MIG device type present on node"); ``mixed`` as
``nvidia.com/mig-<profile>`` with ``+`` written ``.`` (``strings.ReplaceAll("mig-"+p.String(), "+", ".")``).

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

MIG_CONFIG_LABEL = 'nvidia.com/mig.config'
# The MIG strategies of the ClusterPolicy / Helm values (mig.strategy; NVIDIA/gpu-operator v26.7.0
# deployments/gpu-operator/values.yaml "mig: strategy: single"; k8s-device-plugin api/config/v1/consts.go: none,
# single, mixed: 'none' ignores MIG devices, no strategy for a MIG pool).
STRATEGIES = ('mixed', 'single')
DEFAULT_STRATEGY = 'mixed'
# The config a MIG node gets without gpuvirt_mig_config: all-balanced, which the MIG manager builds for every GPU
# with 1g, 2g and 3g profiles (NVIDIA/mig-parted v0.15.0 pkg/mig/builder/builder.go buildMigConfigSpec ->
# balanced.go buildAllBalancedConfig; also in gpu-operator v26.7.0 assets/state-mig-manager/0400_configmap.yaml). It
# mixes profiles, so it needs the mixed strategy (the default).
DEFAULT_CONFIG = 'all-balanced'
# The configs the MIG manager generates from the node's hardware (mig-parted v0.15.0 pkg/mig/builder/builder.go):
# all-disabled, all-enabled (MIG on, no device), all-balanced, and all-<profile> for each GPU instance profile with
# its '+' written '.' (normalizeProfileName), e.g. all-1g.10gb, all-1g.10gb.me, all-4g.96gb.gfx; the operator's
# default ConfigMap has the same family (0400_configmap.yaml, also all-1g.24gb-me). A profile is
# [<C>c.]<G>g.<M>gb[+attributes] (mig-parted pkg/types/mig_profile.go: "1g.5gb", "1c.2g.10gb", "1c.1g.5gb+me").
NO_DEVICE_CONFIGS = ('all-disabled', 'all-enabled')
PROFILE_CONFIG_RE = re.compile(
    r'all-(?:(?P<c>[0-9]+)c\.)?(?P<g>[0-9]+)g\.(?P<mem>[0-9]+)gb(?P<attrs>[-.][a-z][-a-z.]*)?')

# The GPUs that support MIG, by PCI device id (vendor 10de): the device-filter entries of NVIDIA's default MIG
# config (NVIDIA/gpu-operator v26.7.0 assets/state-mig-manager/0400_configmap.yaml, all-balanced, with the products
# its comments name), which match NVIDIA's Multi-Instance GPU User Guide, "Supported GPUs" (A100, A30, H100, H20,
# H200, GH200, B200, GB200, RTX PRO 6000 Blackwell Server Edition; B300 / GB300 from the ConfigMap). The names are
# pci.ids' (tests/unit reference pci.ids 2025.07.11). A GPU outside it (A10, A40, L4, L40, L40S, T4: compute
# capability 8.6 / 8.9 / 7.5, MIG starts with 8.0 GA100 and is not on the GA10x / AD10x boards) is refused.
MIG_DEVICE_IDS = {
    '20b0': 'A100 SXM4 40GB', '20b1': 'A100 PCIe 40GB', '20b2': 'A100 SXM4 80GB', '20b5': 'A100 PCIe 80GB',
    '20b6': 'PG506-96GB', '20b7': 'A30', '20f1': 'A100 PCIe 40GB', '20f3': 'A800 SXM4 80GB',
    '20f5': 'A800 PCIe 80GB', '20f6': 'A800 PCIe 40GB',
    '2321': 'H100 NVL', '2322': 'H800 PCIe', '2324': 'H800', '2329': 'H20', '2330': 'H100 SXM5 80GB',
    '2331': 'H100 PCIe', '2335': 'H200 SXM 141GB', '233a': 'H800 NVL', '233b': 'H200 NVL', '233d': 'H100 96GB',
    '2342': 'GH200', '2348': 'GH200 144G HBM3e',
    '2901': 'B200', '2941': 'GB200', '2bb5': 'RTX PRO 6000 Blackwell Server Edition', '3182': 'B300',
    '31c2': 'GB300',
}


class MigError(ValueError):
    """A MIG config or strategy the MIG manager or the device plugin cannot use; the message names the fix."""


def check_strategy(strategy, variable='gpu_operator_mig_strategy'):
    """``strategy`` when it is one of STRATEGIES, else MigError naming ``variable``."""
    if strategy not in STRATEGIES:
        raise MigError('%s is %s; use one of %s (the device plugin\'s MIG strategy: mixed advertises '
                       'nvidia.com/mig-<profile>, single nvidia.com/gpu)'
                       % (variable, validators.shown(strategy), ', '.join(STRATEGIES)))
    return strategy


def check_config(config, where='gpuvirt_mig_config'):
    """``config`` when it is a MIG config the MIG manager generates that creates MIG devices (all-balanced or
    all-<profile>) and a label value, else MigError naming ``where``."""
    fix = ('set %s to all-balanced (the default) or all-<profile> of the node\'s GPUs, such as all-1g.10gb (NVIDIA\'s '
           'MIG User Guide, "Supported MIG Profiles")' % where.split(' ', 1)[0])
    if not isinstance(config, str) or not config:
        raise MigError('%s is %s, not a MIG config name; %s' % (where, validators.shown(config), fix))
    if len(config) > 63:
        raise MigError('%s is %s, longer than a label value (63 characters; it becomes the %s label value); %s'
                       % (where, validators.shown(config), MIG_CONFIG_LABEL, fix))
    try:
        validators.label_value(config, where)
    except validators.ValidationError as exc:
        raise MigError('%s (it becomes the %s label value); %s' % (exc, MIG_CONFIG_LABEL, fix))
    if config in NO_DEVICE_CONFIGS:
        raise MigError('%s is %s: that config creates no MIG device, and a node of a MIG pool advertises its MIG '
                       'devices; %s, or move the host to gpu_container for whole GPUs' % (where, config, fix))
    if config != DEFAULT_CONFIG and not PROFILE_CONFIG_RE.fullmatch(config):
        raise MigError('%s is %r, not a config the MIG manager generates (all-balanced, all-<profile>); %s'
                       % (where, config, fix))
    return config


def config_profile(config):
    """The one MIG profile an all-<profile> config creates (its resource spelling: 1g.10gb, 1g.10gb.me), None for
    all-balanced (its profiles depend on the GPU)."""
    match = PROFILE_CONFIG_RE.fullmatch(config or '')
    return config[len('all-'):] if match else None


def strategy_problem(config, strategy):
    """Why the device plugin cannot serve MIG config ``config`` under ``strategy``, or None: ``single`` needs one
    profile per node (all-<profile>); all-balanced mixes 1g, 2g and 3g devices."""
    if strategy == 'single' and config_profile(config) is None:
        return ('MIG config %s creates MIG devices of several profiles, but under gpu_operator_mig_strategy single '
                'the device plugin refuses a node with more than one MIG device type (k8s-device-plugin: "more than '
                'one MIG device type present on node"); use gpu_operator_mig_strategy mixed, or an all-<profile> '
                'config such as all-1g.10gb' % config)
    return None


def unsupported_gpus(gpus):
    """``[(bdf, device name, device id)]`` of the GPUs (pci_devices facts, PFs) whose device id is not in
    MIG_DEVICE_IDS; a GPU without a device id is listed with id None."""
    out = []
    for gpu in gpus:
        device_id = (gpu.get('device_id') or '').lower() or None
        if device_id not in MIG_DEVICE_IDS:
            out.append((gpu.get('bdf'), gpu.get('device_name'), device_id))
    return out


def expected(gpus, config, strategy, prefix='nvidia.com/'):
    """{resource name: minimum count} a node with ``gpus`` (PFs) advertises under MIG ``config`` and ``strategy``:
    every GPU gives at least one MIG device. ``single``: nvidia.com/gpu; ``mixed``: nvidia.com/mig-<profile> of an
    all-<profile> config; for all-balanced under mixed the profiles depend on each GPU's memory (1g.5gb on an A100
    40GB, 1g.10gb on an 80GB board), so nothing is named ({})."""
    if not gpus:
        return {}
    if strategy == 'single':
        return {prefix + 'gpu': len(gpus)}
    profile = config_profile(config)
    return {prefix + 'mig-' + profile: len(gpus)} if profile else {}
