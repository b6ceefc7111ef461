# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ClusterPolicy / Helm upgrade settings: written from the role's variables, valid against the real CRD."""
from __future__ import annotations

import json
import os
import sys

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_policy as upol
from ansible_collections.gpuvirt.provision.plugins.modules import gpu_operator_manifests as mod

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402


def _alm():
    with open(schema.reference_file('olm', 'gpu-operator-v26.7.0-csv-alm-examples.json'), encoding='utf-8') as fh:
        return fh.read()


def _chart():
    with open(schema.reference_file('helm', 'gpu-operator-v26.7.0-values.yaml'), encoding='utf-8') as fh:
        return yaml.safe_load(fh)


def test_default_policy_turns_the_operator_s_auto_upgrade_off_and_makes_operands_on_delete():
    over = upol.overlay()
    # the CSV's alm-examples ship autoUpgrade true and RollingUpdate (gpu-operator v26.7.0 bundle CSV): both are
    # replaced, so a new version rolls no node by itself
    base = [e for e in json.loads(_alm()) if e['kind'] == 'ClusterPolicy'][0]
    assert base['spec']['driver']['upgradePolicy']['autoUpgrade'] is True
    assert base['spec']['daemonsets']['updateStrategy'] == 'RollingUpdate'
    cp = gop.build_cluster_policy(_alm(), gop.deep_merge(gop.settings(default_workload='vm-vgpu'), over))
    schema.validate(cp, crd_sources=['v26.7.0'])
    up = cp['spec']['driver']['upgradePolicy']
    assert up['autoUpgrade'] is False and up['maxParallelUpgrades'] == 1 and up['maxUnavailable'] == '25%'
    # the rest of NVIDIA's upgradePolicy (drain, podDeletion, waitForCompletion) is kept as shipped
    assert up['drain'] == base['spec']['driver']['upgradePolicy']['drain']
    assert cp['spec']['daemonsets']['updateStrategy'] == 'OnDelete'
    assert cp['spec']['daemonsets']['rollingUpdate'] == base['spec']['daemonsets']['rollingUpdate']


def test_helm_values_carry_the_same_keys_and_the_chart_has_them():
    values = gop.helm_values(gop.deep_merge(gop.settings(), upol.overlay({'auto_upgrade': True,
                                                                          'max_parallel_upgrades': 2,
                                                                          'max_unavailable': 1})))
    gop.check_values_keys(values, _chart())
    assert values['driver']['upgradePolicy'] == {'autoUpgrade': True, 'maxParallelUpgrades': 2, 'maxUnavailable': 1}


@pytest.mark.parametrize('policy, needle', [
    ({'auto_upgrade': True, 'max_parallel_upgrades': 0}, 'every node at once'),
    ({'max_parallel_upgrades': -1}, 'max_parallel_upgrades'),
    # digits of other scripts: str.isdigit takes them, int() would raise
    ({'max_parallel_upgrades': '\u00b9'}, 'max_parallel_upgrades'),
    ({'max_parallel_upgrades': '\u0663'}, 'max_parallel_upgrades'),
    ({'max_parallel_upgrades': '1' * 10}, 'max_parallel_upgrades'),
    ({'max_unavailable': '150%'}, 'max_unavailable'),
    ({'max_unavailable': 'half'}, 'max_unavailable'),
    ({'auto_upgrade': 'maybe'}, 'auto_upgrade'),
    ({'autoUpgrade': False}, 'unknown keys autoUpgrade'),
    ('off', 'must be a mapping'),
])
def test_bad_policies_are_refused_naming_the_variable(policy, needle):
    with pytest.raises(upol.ManifestError, match=needle) as err:
        upol.overlay(policy)
    assert 'gpu_operator_upgrade_policy' in str(err.value)


def test_strings_from_a_survey_are_read_as_their_values():
    over = upol.overlay({'auto_upgrade': 'false', 'max_parallel_upgrades': '3', 'max_unavailable': '2'})
    assert over['driver']['upgradePolicy'] == {'autoUpgrade': False, 'maxParallelUpgrades': 3, 'maxUnavailable': 2}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(upol.DEFAULT_POLICY)),
                       st.one_of(st.booleans(), st.integers(-3, 300), st.text(max_size=6))))
def test_anything_accepted_validates_against_the_crd(policy):
    try:
        over = upol.overlay(policy)
    except upol.ManifestError:
        return
    cp = gop.build_cluster_policy(_alm(), gop.deep_merge(gop.settings(), over))
    schema.validate(cp, crd_sources=['v26.7.0'])


def _module_params(**extra):
    params = dict(platform='kubernetes', platform_traits=None, namespace=None, sandbox_enabled=True,
                  default_workload='vm-passthrough', sandbox_mode='kubevirt', vgpu_manager=None,
                  vgpu_manager_image_version=None, vfio_manager=True, sandbox_device_plugin=True,
                  pull_secret_name=None, registry_login=None, registry_public=False, vgpu_configs=None,
                  vgpu_config_default='default', vgpu_configmap_name='x', hosts=[], dra_nodes=[], os_tags={},
                  dra_stack='auto', alm_examples=None, alm_examples_source=None,
                  nfd_install=False, nfd_channel='stable', nfd_instance=None, nfd_instance_required=False,
                  alm_examples_release=None, nfd_catalog_source='redhat-operators', package_manifest=None,
                  channel=None, install_plan_approval='Automatic', catalog_source='certified-operators',
                  catalog_namespace='openshift-marketplace', helm_values_extra={}, chart_values=None)
    params.update(extra)
    # the module takes the settings as one option, beside what was read
    return dict(((k, params[k]) for k in mod.READS if k in params),
                settings=dict((k, v) for k, v in params.items() if k not in mod.READS))


def test_module_writes_the_policy_only_when_the_role_gives_it():
    plain = mod.build(_module_params())
    assert 'upgradePolicy' not in (plain['helm_values'].get('driver') or {})
    given_ = mod.build(_module_params(upgrade_policy={}, daemonsets_update_strategy='OnDelete', chart_values=_chart()))
    assert given_['helm_values']['driver']['upgradePolicy']['autoUpgrade'] is False
    assert given_['helm_values']['daemonsets'] == {'updateStrategy': 'OnDelete'}


def test_live_cluster_policy_is_read_with_the_crd_defaults():
    assert upol.from_cluster_policy({}) == {'auto_upgrade': False, 'max_parallel_upgrades': 1,
                                            'update_strategy': 'RollingUpdate'}
    spec = upol.overlay()
    assert upol.from_cluster_policy(spec)['update_strategy'] == 'OnDelete'
