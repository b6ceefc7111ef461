# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply mode decides "the fleet has vendor-VFIO vGPU hosts" as render mode does: roles/upgrade builds the
settings' vendor_vfio from the fleet view's vendor-VFIO nodes (upgrade_inventory_vf_nodes, the hosts whose row
gives VFs vGPU profiles, vf_profiles: playbooks/upgrade.yml), the same expression tasks/render_check.yml gives the
render's check, so the plan refuses a KubeVirt target below 1.9.0 before any change in both modes."""
from __future__ import annotations

import os

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_plan as up

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TASKS = os.path.join(ROOT, 'roles', 'upgrade', 'tasks')
# playbooks/upgrade.yml and upgrade_render.yml: the fleet view's nodes on NVIDIA's vendor-specific VFIO interface
# (the rows whose VFs get vGPU profiles)
VF_NODES = "selectattr('traits.vf_profiles')"


def _settings_task():
    with open(os.path.join(TASKS, 'main.yml'), encoding='utf-8') as handle:
        tasks = yaml.safe_load(handle)
    (task,) = [t for t in tasks if '__upgrade_settings' in (t.get('ansible.builtin.set_fact') or {})]
    return task['ansible.builtin.set_fact']['__upgrade_settings']


def _vendor_vfio(vf_nodes):
    templar = Templar(loader=DataLoader(), variables={'upgrade_inventory_vf_nodes': vf_nodes})
    return templar.template(trust_as_template(_settings_task()['vendor_vfio']))


def test_the_settings_say_vendor_vfio_when_the_fleet_has_vendor_vfio_nodes():
    assert _vendor_vfio(['gpu-1']) is True
    assert _vendor_vfio([]) is False


def test_apply_mode_refuses_kubevirt_below_1_9_for_a_vendor_vfio_fleet_as_render_mode_does():
    # render mode's check (tasks/render_check.yml) passes the same decision to upgrade_render_preflight
    with open(os.path.join(TASKS, 'render_check.yml'), encoding='utf-8') as handle:
        render_check = handle.read()
    assert 'vendor_vfio=upgrade_inventory_vf_nodes | length > 0,' in render_check
    assert _settings_task()['vendor_vfio'] == '{{ upgrade_inventory_vf_nodes | length > 0 }}'
    for name in ('upgrade.yml', 'upgrade_render.yml'):
        with open(os.path.join(ROOT, 'playbooks', name), encoding='utf-8') as handle:
            assert VF_NODES in handle.read(), name
    # the apply-mode plan, with the settings the role builds for a fleet with one vendor-VFIO node
    settings = {'kubevirt_version': 'v1.8.0', 'vendor_vfio': _vendor_vfio(['gpu-1']), 'vf_nodes': ['gpu-1']}
    result = up.plan(settings, [], [], [], [], [], [], [], current={'kubevirt': 'v1.7.3'})
    assert not result['ok']
    assert ('the fleet has NVIDIA vendor-specific VFIO vGPU hosts, which need KubeVirt 1.9.0 or later; KubeVirt would '
            'be v1.8.0') in result['refusals']
    settings['vendor_vfio'] = _vendor_vfio([])
    assert not [r for r in up.plan(settings, [], [], [], [], [], [], [], current={'kubevirt': 'v1.7.3'})['refusals']
                if 'vendor-specific VFIO' in r]
