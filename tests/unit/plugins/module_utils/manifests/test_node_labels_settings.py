# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node labels settings record (manifests/node_labels_settings.py): one list of fields is the record, the
module's schema and (held equal here) its documentation; a bad value is refused when a record is made, naming its
variable; the planner reads the fields by name."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.doc_fragments import settings as fragments
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels_settings as nls
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform
from ansible_collections.gpuvirt.provision.plugins.modules import node_labels_plan as module

from ...modules.harness import run_module

SUBOPTIONS = yaml.safe_load(fragments.ModuleDocFragment.NODE_LABELS)['options']['settings']['suboptions']


def test_a_record_is_read_only_and_a_none_takes_the_default():
    record = nls.build({'cluster_platform': 'openshift', 'pool_selectors': None, 'retire': None})
    assert record.pool_selectors == {} and record.retire is False and record.dra_stack == 'auto'
    with pytest.raises(AttributeError):
        record.retire = True
    assert nls.build(record) is record


def test_the_dra_stack_follows_the_platform_row_not_its_name(monkeypatch):
    # OpenShift's OLM install offers the operator's GPUCluster when every GPU node is a DRA node; a Helm platform
    # takes the DRA chart (gpu_cluster.dra_stack, the decision the operator and kubevirt phases make too)
    olm = nls.build({'cluster_platform': 'openshift'})
    assert olm.stack(['n1'], []) == gc.STACK_GPUCLUSTER and olm.stack(['n1'], ['n2']) == gc.STACK_HELM
    assert nls.build({'cluster_platform': 'kubernetes'}).stack(['n1'], []) == gc.STACK_HELM
    assert nls.build({'cluster_platform': 'openshift', 'dra_stack': 'helm'}).stack(['n1'], []) == gc.STACK_HELM
    # a platform row added at run time is a choice at once
    monkeypatch.setattr(platform, 'PLATFORM_NAMES', platform.PLATFORM_NAMES + ('rke2-hypothetical',))
    assert nls.argument_spec()['cluster_platform']['choices'][-1] == 'rke2-hypothetical'


@pytest.mark.parametrize('params, needle', [
    ({'dra_stack': 'operator'}, "node_labels_dra_stack is 'operator', not one of auto, gpucluster, helm"),
    ({'retire': 'yes'}, "node_labels_retire is 'yes', not true or false"),
    ({'pool_selector': ['a']}, "node_labels_pool_selector is ['a'], not a mapping"),
    ({'cluster_platform': 'nomad'}, "gpuvirt_cluster.platform is 'nomad', not one of openshift, kubernetes"),
    ({'vgpu_configs': {'A10-12Q': 'two'}}, 'vGPU config A10-12Q must be a map of type -> count'),
    ({'retired': True}, 'the node labels settings have no retired; they are cluster_platform, '),
])
def test_a_bad_value_is_refused_when_the_record_is_made_naming_its_variable(monkeypatch, params, needle):
    with pytest.raises(nls.ManifestError) as exc:
        nls.build(params)
    assert needle in str(exc.value)
    # the module refuses it before anything is planned: AnsibleModule's own check of the suboption's type or
    # choices where it has one (naming the key), else the record's sentence
    (key,) = params
    out = run_module(monkeypatch, module, {'settings': params, 'hosts': []})
    if key == 'retire':
        # AnsibleModule reads 'yes' as a bool option's true; the role gives the module only what the collection's
        # one boolean coercion accepted (strict_bool('node_labels_retire'), tests/unit/roles)
        assert not out['failed'], out
        return
    assert out['failed'] and (needle in out['msg'] or key in out['msg']), out
