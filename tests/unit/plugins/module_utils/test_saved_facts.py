# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Saved GPU facts: only discovery results are saved (no variable of the run, no secret); a file of another host,
another format or the wrong shape is refused naming the file."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils import saved_facts as sf

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
PCI = {'devices': [{'bdf': '0000:41:00.0'}], 'gpus': [{'bdf': '0000:41:00.0'}], 'nvswitches': [], 'gpus_by_driver': {},
       'iommu': {'enabled': True}, 'changed': False, 'invocation': {'module_args': {'lspci_path': '/usr/bin/lspci'}}}


def test_only_discovery_results_are_saved_never_another_variable():
    hostvars = {'gpuvirt_pci_devices': PCI, 'gpuvirt_node_name': 'gpu-1', 'gpuvirt_os_tag': 'rhcos4.18',
                'gpu_operator_pull_secret': {'password': 's3cret'}, 'ansible_password': 'hunter2',
                'gpuvirt_gpu_holders': {'held': False, 'holders': [], 'failed': False}}
    doc = sf.to_saved('gpu-1.example.com', hostvars, 'playbooks/gather.yml')
    text = json.dumps(doc)
    assert 's3cret' not in text and 'hunter2' not in text and 'invocation' not in text and 'lspci_path' not in text
    assert doc['format_version'] == 1 and doc['host'] == 'gpu-1.example.com'
    assert sorted(doc['gpuvirt_pci_devices']) == ['devices', 'gpus', 'gpus_by_driver', 'iommu', 'nvswitches']
    assert sf.from_saved(doc, 'gpu-1.example.com', 'f.json')['gpuvirt_node_name'] == 'gpu-1'


@pytest.mark.parametrize('doc,needle', [
    ([], 'expected a JSON object'),
    ({'format_version': 2, 'host': 'h'}, 'format_version 2 is not 1'),
    ({'format_version': 1, 'host': 'other'}, "saved for host 'other', not 'h'"),
    ({'format_version': 1, 'host': 'h'}, 'gpuvirt_pci_devices is missing'),
    ({'format_version': 1, 'host': 'h', 'gpuvirt_pci_devices': {'devices': [], 'password': 'x'}}, 'must be an object with the keys'),
    ({'format_version': 1, 'host': 'h', 'gpuvirt_pci_devices': {'devices': []}, 'gpuvirt_node_name': 3}, 'must be a string'),
])
def test_unusable_saved_facts_are_refused_naming_the_file(doc, needle):
    with pytest.raises(sf.SavedFactsError) as err:
        sf.from_saved(doc, 'h', 'inv/host_vars/h/gpuvirt_saved_facts.json')
    assert needle in str(err.value) and 'inv/host_vars/h/gpuvirt_saved_facts.json' in str(err.value)


def test_the_example_fleet_files_are_valid_and_name_their_capture():
    base = os.path.join(ROOT, 'inventories', 'example', 'host_vars')
    hosts = sorted(os.listdir(base))
    assert hosts == ['gpu-c01.example.com', 'gpu-c02.example.com', 'gpu-p01.example.com', 'gpu-p02.example.com',
                     'gpu-v01.example.com', 'gpu-v02.example.com']
    for host in hosts:
        path = os.path.join(base, host, 'gpuvirt_saved_facts.json')
        with open(path, encoding='utf-8') as handle:
            doc = json.load(handle)['gpuvirt_saved_facts']
        facts = sf.from_saved(doc, host, path)
        assert facts['gpuvirt_pci_devices']['gpus'], host
        capture = os.path.join(ROOT, doc['source'])
        assert os.path.isfile(capture), capture  # a real capture in tests/unit/fixtures/lspci
        with open(capture, encoding='utf-8') as handle:
            text = handle.read().lower()
        for gpu in facts['gpuvirt_pci_devices']['gpus']:
            # every GPU of the saved facts is in the capture it names (by BDF, the domain only when printed)
            assert gpu['bdf'].split(':', 1)[1] in text, (host, gpu['bdf'])
