# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example inventory's NodeFeatureDiscovery: apply mode gives none, so the role takes the installed NFD CSV's
own example (roles/gpu_operator/tasks/nfd.yml), whose operand image is the one that NFD release ships; a render,
which cannot read the CSV, names the one OpenShift 4.18's documentation creates. Read through Ansible itself
(ansible-playbook with the example inventory), as a run reads it."""
from __future__ import annotations

import json
import os

import pytest

from play_runner import run_play

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
EXAMPLE = os.path.join(ROOT, 'inventories', 'example')
PLAY = '''- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.copy:
        content: "{{ gpu_operator_nfd_instance | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
'''


@pytest.mark.parametrize('mode', ['apply', 'render'])
def test_the_example_pins_the_nfd_operand_image_only_where_no_csv_can_be_read(tmp_path, mode):
    out = tmp_path / 'nfd.json'
    rc, log = run_play(tmp_path, PLAY, {'out': str(out), 'gpuvirt_cluster_mode': mode}, args=['-i', EXAMPLE])
    assert rc == 0, log
    instance = json.loads(out.read_text())
    if mode == 'apply':
        # the NFD operator runs exactly the image the instance names (openshift/cluster-nfd-operator api/v1
        # OperandSpec.ImagePath returns spec.operand.image): a pinned v4.18 would outlive every NFD upgrade
        assert instance == {}
    else:
        assert instance['spec']['operand']['image'].endswith(':v4.18')
        assert instance['spec']['workerConfig']['configData'].splitlines() == [
            'sources:', '  pci:', '    deviceClassWhitelist: ["0200", "03", "12"]', '    deviceLabelFields: ["vendor"]']
