# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/vars/retire.yml, for real (one ansible-playbook run on localhost with the file as vars_files, a loop
item per answer): retire_hosts as a list or as the AWX survey's text answer becomes exact inventory host names; a
pattern, a group, a host outside the GPU pool groups or nothing at all is named in retire_problem (retire.yml's host
play selects no host then, and its check play stops the run, naming it)."""
from __future__ import annotations

import json
import os

from play_runner import run_play

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [%s/playbooks/vars/fleet.yml, %s/playbooks/vars/retire.yml]
  tasks:
    - ansible.builtin.debug:
        msg: "RESULT={{ {'names': retire_names, 'problem': retire_problem} | to_json }}"
      vars:
        retire_hosts: "{{ item }}"
      loop: "{{ answers }}"
""" % (ROOT, ROOT)

GOOD = [(['gpu-1'], ['gpu-1']),
        ('gpu-1, gpu-2', ['gpu-1', 'gpu-2']),  # the survey's text answer
        (' gpu-2\n', ['gpu-2'])]
BAD = [(None, 'give the inventory host names to retire'),
       ('', 'give the inventory host names to retire'),
       ([], 'give the inventory host names to retire'),
       ({'gpu-1': 1}, 'give the inventory host names to retire'),
       ('gpu-*', 'never a pattern or a group'),
       ('gpu-1:gpu-2', 'never a pattern or a group'),
       (['gpu-1', '!gpu-2'], 'never a pattern or a group'),
       ('gpu_vm_passthrough', 'not a host of a GPU pool'),
       ('web-1', 'not a host of a GPU pool')]


def test_names_from_a_list_or_a_text_answer_and_anything_else_named(tmp_path, monkeypatch):
    monkeypatch.setenv('ANSIBLE_CALLBACK_RESULT_FORMAT', 'json')
    inv = tmp_path / 'inv.yml'
    inv.write_text(json.dumps({'all': {'hosts': {'localhost': {}, 'web-1': {}},
                                       'children': {'gpu_vm_passthrough': {'hosts': {'gpu-1': {}, 'gpu-2': {}}}}}}))
    answers = [value for value, dummy in GOOD + BAD]
    rc, out = run_play(tmp_path, PLAY, {'answers': answers}, args=('-i', str(inv)))
    assert rc == 0, out
    # the JSON result format: the message is a JSON string holding RESULT=<json>
    got = [json.loads(json.loads(line.split('"msg": ', 1)[1].rstrip(',').strip())[len('RESULT='):])
           for line in out.splitlines() if '"msg": "RESULT=' in line]
    assert len(got) == len(answers), out
    for (value, names), result in zip(GOOD, got):
        assert result == {'names': names, 'problem': ''}, (value, result)
    for (value, said), result in zip(BAD, got[len(GOOD):]):
        assert said in result['problem'], (value, result)
