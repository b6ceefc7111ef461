# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Saved GPU facts: only discovery results are saved (no variable of the run, no secret, no holder's command
line); a file of another host, another format or the wrong shape is refused naming the file, the JSON path and
what was expected, and nothing else than SavedFactsError ever comes out of the loader."""
from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import saved_facts as sf

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
EXAMPLE = os.path.join(ROOT, 'inventories', 'example', '.gpuvirt_facts')
PCI = {'devices': [{'bdf': '0000:41:00.0'}], 'gpus': [{'bdf': '0000:41:00.0'}], 'nvswitches': [], 'gpus_by_driver': {},
       'iommu': {'enabled': True}, 'changed': False, 'invocation': {'module_args': {'lspci_path': '/usr/bin/lspci'}}}
HOLDERS = {'held': True, 'unreadable': 0, 'changed': False,
           'message': 'PID 7 (/usr/bin/app --token=s3cret) holds /dev/nvidia0',
           'holders': [{'pid': 7, 'command': '/usr/bin/app --token=s3cret', 'executable': 'app', 'device': '/dev/nvidia0',
                        'minor': 0, 'bdf': '0000:41:00.0', 'unit': 'app.service'},
                       {'pid': 8, 'command': "{{ lookup('ansible.builtin.pipe', 'id') }}",
                        'executable': "{{ lookup('ansible.builtin.pipe', 'id') }}", 'device': '/dev/nvidiactl',
                        'minor': None, 'bdf': None, 'unit': None}]}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_only_discovery_results_are_saved_never_another_variable_nor_argv():
    hostvars = {'gpuvirt_pci_devices': PCI, 'gpuvirt_node_name': 'gpu-1', 'gpuvirt_os_tag': 'rhcos4.18',
                'gpu_operator_pull_secret': {'password': 'hunter1'}, 'ansible_password': 'hunter2',
                'gpuvirt_gpu_holders': HOLDERS}
    doc = sf.to_saved('gpu-1.example.com', hostvars, 'playbooks/gather.yml')
    text = json.dumps(doc)
    for secret in ('hunter1', 'hunter2', 'invocation', 'lspci_path', 's3cret', '--token', 'lookup', 'command'):
        assert secret not in text, secret
    assert doc['format_version'] == 2 and doc['host'] == 'gpu-1.example.com'
    assert sorted(doc['gpuvirt_pci_devices']) == ['devices', 'gpus', 'gpus_by_driver', 'iommu', 'nvswitches']
    # a holder keeps its pid and executable name; a name outside the grammar becomes "?"
    assert [(h['pid'], h['executable']) for h in doc['gpuvirt_gpu_holders']['holders']] == [(7, 'app'), (8, '?')]
    assert doc['gpuvirt_gpu_holders']['message'].splitlines()[0] == \
        'PID 7 (app) holds /dev/nvidia0 (GPU 0000:41:00.0), unit app.service'
    facts = sf.from_saved(json.dumps(doc), 'gpu-1.example.com', 'f.json')
    assert facts['gpuvirt_node_name'] == 'gpu-1'
    # the later phases name a holder by its executable name, as a live scan does: no command is made up
    assert [h['executable'] for h in facts['gpuvirt_gpu_holders']['holders']] == ['app', '?']
    assert all('command' not in h for h in facts['gpuvirt_gpu_holders']['holders'])


@pytest.mark.parametrize('doc,needle', [
    ([], 'the document is list []; expected a JSON object'),
    ({'format_version': 3, 'host': 'h'}, 'format_version 3 is not 2'),
    ({'format_version': True, 'host': 'h'}, 'format_version True is not 2'),
    ({'format_version': 2, 'host': 'other'}, "saved for host str 'other', not 'h'"),
    ({'format_version': 2, 'host': 'h'}, '$.gpuvirt_pci_devices is missing'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {'devices': [], 'password': 'x'}},
     '$.gpuvirt_pci_devices.password is str'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {'devices': []}, 'gpuvirt_node_name': 3},
     '$.gpuvirt_node_name is int 3; expected a node name'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {'gpus': 'abc'}},
     "$.gpuvirt_pci_devices.gpus is str 'abc'; expected a list"),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {'gpus': [{'bdf': 'x'}]}},
     "$.gpuvirt_pci_devices.gpus[0].bdf is str 'x'; expected a PCI address"),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {'gpus': [{'bdf': '0000:41:00.0\n'}]}},
     '$.gpuvirt_pci_devices.gpus[0].bdf'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}, 'gpuvirt_mdev_types': {'parents': {}}},
     '$.gpuvirt_mdev_types.parents is dict {}; expected a list'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}, 'gpuvirt_mdev_types': {'parents': [{}]}},
     '$.gpuvirt_mdev_types.parents[0].parent is missing'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}, 'gpuvirt_gpu_holders': {'holders': [
        {'pid': True, 'executable': 'x', 'device': '/dev/nvidia0'}]}},
     '$.gpuvirt_gpu_holders.holders[0].pid is bool True; expected an integer from 1 to 4194304'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}, 'gpuvirt_gpu_holders': {'holders': [
        {'pid': 1, 'executable': '{{ x }}', 'device': '/dev/nvidia0'}]}},
     '$.gpuvirt_gpu_holders.holders[0].executable'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}, 'gpuvirt_gpu_holders': {'holders': [
        {'pid': 1, 'executable': 'x', 'device': '/dev/nvidia0', 'command': 'x --pw y'}]}},
     '$.gpuvirt_gpu_holders.holders[0].command is str'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {}, 'gpuvirt_os_tag': '{{ x }}'},
     '$.gpuvirt_os_tag is str'),
    ({'format_version': 2, 'host': 'h', 'gpuvirt_pci_devices': {'gpus_by_driver': []}},
     '$.gpuvirt_pci_devices.gpus_by_driver is list []; expected an object'),
])
def test_unusable_saved_facts_are_refused_naming_the_file_and_json_path(doc, needle):
    with pytest.raises(sf.SavedFactsError) as err:
        sf.from_saved(doc, 'h', 'inv/.gpuvirt_facts/h.json')
    assert needle in str(err.value) and str(err.value).startswith('inv/.gpuvirt_facts/h.json: '), str(err.value)


def test_format_1_is_refused_with_the_fix():
    with pytest.raises(sf.SavedFactsError) as err:
        sf.from_saved({'format_version': 1, 'host': 'h'}, 'h', 'f.json')
    assert 'format_version 1 is not 2' in str(err.value) and 'gather the facts again' in str(err.value) \
        and 'Moving from format 1' in str(err.value)


@pytest.mark.parametrize('text,needle', [
    ('{"format_version": 2, "host": "h", "gpuvirt_gpu_holders": {"holders": [{"pid": %s}]}}' % ('9' * 5000),
     'the number 99999999999999999999... is longer than 12 digits'),
    ('{"format_version": 2, "format_version": 2}', "the key 'format_version' appears twice"),
    ('{"format_version": NaN}', 'NaN is not JSON'),
    ('{"format_version": 2,', 'not JSON'),
    ('[' * 100000 + ']' * 100000, 'nested too deeply'),
    (b'{}', 'expected the text of a saved-facts file'),
])
def test_what_is_not_a_json_document_is_refused_before_any_conversion(text, needle):
    # int() of more than 4300 digits raises Python's own ValueError naming nothing: the length is checked first
    with pytest.raises(sf.SavedFactsError) as err:
        sf.from_saved(text, 'h', 'f.json') if isinstance(text, str) else sf.loads(text, 'f.json')
    assert needle in str(err.value) and str(err.value).startswith('f.json: '), str(err.value)


def test_the_example_fleet_files_are_valid_and_name_their_capture():
    # one file per GPU host of the example inventory, read by Ansible's own inventory loader (not a list typed here)
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    inventory = InventoryManager(loader=DataLoader(), sources=[os.path.join(EXAMPLE, '..')])
    hosts = sorted(os.listdir(EXAMPLE))
    assert hosts and hosts == sorted(h.name + '.json' for h in inventory.get_hosts()), hosts
    for name in hosts:
        path = os.path.join(EXAMPLE, name)
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
        facts = sf.from_saved(text, name[:-len('.json')], path)
        assert facts['gpuvirt_pci_devices']['gpus'], name
        capture = os.path.join(ROOT, json.loads(text)['source'])
        assert os.path.isfile(capture), capture  # a real capture in tests/unit/fixtures/lspci
        with open(capture, encoding='utf-8') as handle:
            captured = handle.read().lower()
        for gpu in facts['gpuvirt_pci_devices']['gpus']:
            # every GPU of the saved facts is in the capture it names (by BDF, the domain only when printed)
            assert gpu['bdf'].split(':', 1)[1] in captured, (name, gpu['bdf'])


def test_a_full_document_round_trips():
    with open(os.path.join(EXAMPLE, 'gpu-v01.example.com.json'), encoding='utf-8') as handle:
        doc = json.load(handle)
    doc['gpuvirt_gpu_holders'] = {'held': True, 'unreadable': 2, 'message': 'm', 'holders': [
        {'pid': 4194304, 'executable': 'nvidia-persistenced', 'device': '/dev/nvidia-caps/nvidia-cap1', 'minor': None,
         'bdf': None, 'unit': 'nvidia-persistenced.service'}]}
    doc['gpuvirt_mdev_types'] = {'state': 'available', 'interfaces': ['vendor_vfio'], 'available_types': ['A10-4Q'],
                                 'message': 'm', 'parents': [{
                                     'parent': '0000:65:00.4', 'interface': 'vendor_vfio', 'physfn': '0000:65:00.0',
                                     'current_type': None, 'devices': [{'uuid': None, 'type_id': '1', 'name': 'x'}],
                                     'types': [{'type_id': 'nvidia-592', 'name': 'NVIDIA A10-4Q', 'short_name': 'A10-4Q',
                                                'available_instances': 1, 'device_api': 'vfio-pci',
                                                'description': 'num_heads=4', 'framebuffer_mib': 4096,
                                                'max_instance': 6, 'num_heads': 4, 'frl_config': 60,
                                                'max_resolution': '5120x2880'}]}]}
    facts = sf.from_saved(json.dumps(doc), 'gpu-v01.example.com', 'f.json')
    assert facts['gpuvirt_mdev_types'] == doc['gpuvirt_mdev_types']
    assert facts['gpuvirt_gpu_holders']['holders'][0]['executable'] == 'nvidia-persistenced'
    assert 'command' not in facts['gpuvirt_gpu_holders']['holders'][0]


# Hostile JSON: the pieces a template, a shell or a path would act on, and values of the wrong type anywhere.
HOSTILE = ['{{', '}}', '{%', '%}', '{#', '$(', '`', ';', '&&', '\n', '\r', '\x00', '../', '/etc/passwd',
           '\u2028', "{{ lookup('ansible.builtin.pipe', 'id') }}", 'x' * 10000, '0000:41:00.0', 'gpu', 'h']
hostile_text = st.one_of(st.sampled_from(HOSTILE), st.lists(st.sampled_from(HOSTILE), max_size=4).map(''.join),
                         st.text(max_size=20))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=False,
              allow_infinity=False), hostile_text),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)),
    max_leaves=20)


def _mutate(doc, data):
    """Replace one value somewhere in a valid document by a random, often hostile, JSON value."""
    node = doc
    while True:
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node) + ['bdf', 'holders', 'pid', 'executable', 'command']))
            child = node.get(key)
        elif isinstance(node, list) and node:
            key = data.draw(st.integers(0, len(node) - 1))
            child = node[key]
        else:
            return
        if data.draw(st.booleans()) or not isinstance(child, (dict, list)):
            node[key] = data.draw(json_values)
            return
        node = child


def _well_typed(facts):
    pci = facts['gpuvirt_pci_devices']
    assert isinstance(pci, dict)
    for key in ('devices', 'gpus', 'nvswitches'):
        for dev in pci.get(key, []):
            assert isinstance(dev['bdf'], str) and len(dev['bdf']) <= 16 and '\n' not in dev['bdf']
    for holder in facts.get('gpuvirt_gpu_holders', {}).get('holders', []):
        assert isinstance(holder['pid'], int) and not isinstance(holder['pid'], bool)
        assert '{' not in holder['executable'] and 'command' not in holder and '{' not in holder['device']
    for key in ('gpuvirt_node_name', 'gpuvirt_os_tag'):
        assert key not in facts or ('{' not in facts[key] and '\n' not in facts[key])


@SETTINGS
@given(st.data())
def test_hostile_documents_load_well_typed_or_fail_with_saved_facts_error(data):
    with open(os.path.join(EXAMPLE, 'gpu-c01.example.com.json'), encoding='utf-8') as handle:
        base = json.load(handle)
    base['gpuvirt_gpu_holders'] = {'held': True, 'holders': [{'pid': 5, 'executable': 'x', 'device': '/dev/nvidia0'}]}
    doc = copy.deepcopy(base)
    for dummy in range(data.draw(st.integers(1, 3))):
        _mutate(doc, data)
    as_text = data.draw(st.booleans())
    try:
        facts = sf.from_saved(json.dumps(doc) if as_text else doc, 'gpu-c01.example.com', 'f.json')
    except sf.SavedFactsError as e:
        assert str(e).startswith('f.json: ')
        return
    _well_typed(facts)


@SETTINGS
@given(json_values)
def test_any_json_value_loads_or_fails_with_saved_facts_error(value):
    try:
        facts = sf.from_saved(json.dumps(value), 'h', 'f.json')
    except sf.SavedFactsError:
        return
    _well_typed(facts)


@pytest.mark.parametrize('doc, where', [
    ({'gpuvirt_pci_devices': {'gpus': [{'bdf': '0000:41:00.0'}] * 1025}}, '$.gpuvirt_pci_devices.gpus'),
    ({'gpuvirt_pci_devices': {'devices': [{'bdf': '0000:41:00.0'}] * 1025}}, '$.gpuvirt_pci_devices.devices'),
    ({'gpuvirt_pci_devices': {}, 'gpuvirt_mdev_types': {'parents': [{'parent': '0000:41:00.0'}] * 1025}},
     '$.gpuvirt_mdev_types.parents'),
])
def test_lists_longer_than_any_host_has_are_refused_before_their_items(doc, where):
    # the planners (wanted_devices, the fleet view) get bounded lists whatever a host reports
    doc = dict(doc, format_version=2, host='h')
    with pytest.raises(sf.SavedFactsError) as err:
        sf.from_saved(doc, 'h', 'inv/.gpuvirt_facts/h.json')
    assert str(err.value) == ('inv/.gpuvirt_facts/h.json: %s has 1025 items; expected at most 1024 (no host has '
                              'more: gather the facts again on that host)' % where)
    # 1024 is accepted
    ok = copy.deepcopy(doc)
    for key in ('gpuvirt_pci_devices', 'gpuvirt_mdev_types'):
        for name, items in (ok.get(key) or {}).items():
            ok[key][name] = items[:1024]
    sf.from_saved(ok, 'h', 'inv/.gpuvirt_facts/h.json')
