# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""live_facts: a live discovery result (gather.yml, vgpu_vf.yml's re-gather) goes through the saved-facts schema
before set_fact, so one host's bad output fails that host, named, with the JSON path."""
from __future__ import annotations

import copy
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpuvirt.provision.plugins.filter import saved_facts as saved_filter

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
GPU = {'bdf': '0000:3b:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
       'is_vf': False}
PCI = {'devices': [dict(GPU)], 'gpus': [dict(GPU)], 'nvswitches': [], 'gpus_by_driver': {'nvidia': ['0000:3b:00.0']},
       'iommu': {'enabled': True}, 'changed': False, 'invocation': {'module_args': {'vendor_ids': ['10de']}}}
MDEV = {'parents': [], 'interfaces': [], 'state': 'none', 'available_types': [], 'message': 'no vGPU types',
        'host_interface': {'interface': 'none', 'evidence': ['no NVIDIA driver loaded'],
                           'kernel_release': '6.8.0-60-generic', 'driver_version': None},
        'changed': False}
# a live holder keeps its command line in the result (later phases print it): it is not checked, nor saved
HOLDERS = {'held': True, 'unreadable': 0, 'changed': False, 'message': 'PID 7 (/usr/bin/app --token=x) holds',
           'holders': [{'pid': 7, 'command': '/usr/bin/app --token=x', 'executable': 'app',
                        'device': '/dev/nvidia0', 'minor': 0, 'bdf': '0000:3b:00.0', 'unit': None}]}
GOOD = {'gpuvirt_pci_devices': PCI, 'gpuvirt_mdev_types': MDEV, 'gpuvirt_gpu_holders': HOLDERS}


def test_the_filter_is_registered():
    assert saved_filter.FilterModule().filters()['live_facts'] is saved_filter.live_facts


@pytest.mark.parametrize('fact', sorted(GOOD))
def test_a_good_live_result_comes_back_unchanged(fact):
    value = copy.deepcopy(GOOD[fact])
    assert saved_filter.live_facts(value, 'gpu-1', fact) is value and value == GOOD[fact]


def _bad(fact, path, value):
    doc = copy.deepcopy(GOOD[fact])
    where = doc
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return doc


@pytest.mark.parametrize('fact, path, value, needle', [
    ('gpuvirt_mdev_types', ['host_interface', 'evidence'], [1], '$.host_interface.evidence[0]'),
    ('gpuvirt_mdev_types', ['host_interface', 'evidence'], 5, '$.host_interface.evidence'),
    ('gpuvirt_mdev_types', ['host_interface', 'evidence'], ['ok\n\x1b[2Jforged'], '$.host_interface.evidence[0]'),
    ('gpuvirt_mdev_types', ['parents'], [{'parent': '0000:3b:00.0', 'interface': ['x']}], '$.parents[0].interface'),
    ('gpuvirt_pci_devices', ['gpus', 0, 'device_name'], 7, '$.gpus[0].device_name'),
    ('gpuvirt_pci_devices', ['gpus', 0, 'physfn'], ['a'], '$.gpus[0].physfn'),
    ('gpuvirt_gpu_holders', ['holders', 0, 'pid'], 'x', '$.holders[0].pid'),
])
def test_a_bad_live_result_fails_its_host_naming_the_fact_and_json_path(fact, path, value, needle):
    with pytest.raises(AnsibleFilterError) as err:
        saved_filter.live_facts(_bad(fact, path, value), 'gpu-evil', fact)
    assert str(err.value).startswith('the %s gathered from gpu-evil: %s is ' % (fact, needle)), str(err.value)


def test_only_a_module_result_of_a_gathered_fact_is_taken():
    with pytest.raises(AnsibleFilterError, match='not one of the gathered facts'):
        saved_filter.live_facts({}, 'gpu-1', 'gpuvirt_pool')
    with pytest.raises(AnsibleFilterError, match=r'gathered from gpu-1: \$ is list'):
        saved_filter.live_facts([], 'gpu-1', 'gpuvirt_mdev_types')


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(['gpus', 'parents', 'host_interface', 'holders', 'evidence', 'bdf',
                                          'interface', 'pid', 'physfn', 'x']), inner, max_size=3), max_leaves=10)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(GOOD)), _JSON)
def test_any_live_shape_passes_or_fails_with_the_filter_error(fact, value):
    try:
        saved_filter.live_facts(value, 'gpu-1', fact)
    except AnsibleFilterError as exc:
        assert 'gpu-1' in str(exc)


DISCOVERY = {'gpuvirt.provision.pci_devices': 'gpuvirt_pci_devices', 'gpuvirt.provision.mdev_types':
             'gpuvirt_mdev_types', 'gpuvirt.provision.gpu_holders': 'gpuvirt_gpu_holders'}


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if 'name' in node or 'ansible.builtin.set_fact' in node:
            yield node
        for key in ('tasks', 'block', 'rescue', 'always', 'pre_tasks', 'post_tasks'):
            yield from _tasks(node.get(key) or [])


@pytest.mark.parametrize('playbook', ['gather.yml', 'phase_vgpu_vf.yml'])
def test_every_live_discovery_result_is_checked_before_set_fact(playbook):
    with open(os.path.join(ROOT, 'playbooks', playbook), encoding='utf-8') as handle:
        tasks = list(_tasks(yaml.safe_load(handle)))
    registered = dict((t['register'], DISCOVERY[m]) for t in tasks for m in DISCOVERY if m in t and 'register' in t)
    assert registered, playbook
    uses = 0
    for task in tasks:
        for fact, template in (task.get('ansible.builtin.set_fact') or {}).items():
            for name in registered:
                for use in re.finditer(r'\b%s\b' % re.escape(name), str(template)):
                    uses += 1
                    rest = str(template)[use.end():]
                    # the fact it becomes is named, and each use of the result goes through the filter
                    assert fact == registered[name] and re.match(
                        r"\s*\|\s*gpuvirt\.provision\.live_facts\(inventory_hostname, '%s'\)" % fact, rest) or \
                        re.match(r'\s*is\s+(not\s+)?skipped', rest), (playbook, fact, template)
    assert uses >= len(registered), playbook
