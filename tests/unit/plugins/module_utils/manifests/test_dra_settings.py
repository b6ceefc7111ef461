# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA settings record (manifests/dra_settings.py): one list of fields is the record, the module's schema and
(held equal here) its documentation; a bad value is refused when a record is made, naming its variable."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import dra_settings as drs
from ansible_collections.gpuvirt.provision.plugins.modules import dra_manifests as module

from ...modules.harness import run_module

SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.DRA)['options']['settings']['suboptions']


def test_an_unknown_operator_driver_stays_unknown_and_defaults_are_kept():
    # operator_driver None: no GPU Operator manages the DRA nodes' driver, so the module derives it from the PCI facts
    record = drs.build({'operator_driver': None, 'claim_templates': None, 'stack': None})
    assert record.operator_driver is None and record.claim_templates == [] and record.stack == 'auto'
    assert record.platform == 'kubevirt'


@pytest.mark.parametrize('params, needle', [
    ({'driver_mode': 'container'}, "dra_driver_nvidia_driver is 'container', not one of host, operator, gke"),
    ({'operator_driver': 'yes'}, "dra_driver_gpu_operator_driver is 'yes', not true or false"),
    ({'claim_templates': ['vfio-gpu']}, "dra_driver_claim_templates holds 'vfio-gpu', not a mapping"),
    ({'platform': 'openshift'}, "gpuvirt_cluster.kubevirt_config is 'openshift', not one of kubevirt, hco"),
    ({'stack': 'operator'}, "dra_driver_stack is 'operator', not one of auto, gpucluster, helm"),
    ({'node_selectors': {}}, 'the DRA settings have no node_selectors; they are cluster_platform, '),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(params, needle):
    with pytest.raises(drs.ManifestError) as exc:
        drs.build(params)
    assert needle in str(exc.value)


def test_the_module_refuses_a_bad_setting_before_anything_is_built(monkeypatch):
    out = run_module(monkeypatch, module, {'settings': {'driver_mode': 'container'}, 'dra_nodes': ['n1']})
    assert out['failed'] and 'driver_mode' in out['msg'], out
    out = run_module(monkeypatch, module, {'settings': {'operator_driver': True}, 'dra_nodes': ['n1']})
    assert not out['failed'] and out['driver_mode'] == 'operator', out
