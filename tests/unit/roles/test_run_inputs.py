# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/run_inputs.yml, which every host-selecting phase imports first: a host pattern that would reach
hosts outside the GPU pools, or a rollout number of the wrong type, stops the run before any play picks hosts."""
from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet
from play_runner import run_play

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
PLAY = """
- ansible.builtin.import_playbook: %s/playbooks/run_inputs.yml

- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: REACHED-THE-NEXT-PLAY
""" % ROOT


def test_defaults_pass(tmp_path):
    rc, out = run_play(tmp_path, PLAY)
    assert rc == 0 and 'REACHED-THE-NEXT-PLAY' in out, out


@pytest.mark.parametrize('args, named', [
    (['-e', 'gpuvirt_gpu_hosts_pattern=all'], "'all' is not a GPU pool group"),
    (['-e', 'host_prep_hosts=gpu_dra:kube_control_plane'], "'kube_control_plane' is not a GPU pool group"),
    (['-e', 'host_prep_serial=two'], 'host_prep_serial'),
    # the wording of the checked filter's grammars (validators.positive_int / percentage): the same rule, and
    # message, as the rolling play's own serial and max_fail_percentage
    (['-e', 'host_prep_serial=0'], 'host_prep_serial: 0 is outside 1 to 100000'),
    (['-e', 'host_prep_serial=100001'], 'host_prep_serial: 100001 is outside 1 to 100000'),
    (['-e', 'host_prep_max_fail_percentage=101'], 'host_prep_max_fail_percentage: 101 is outside 0 to 100'),
])
def test_a_bad_answer_stops_the_run_before_the_next_play(tmp_path, args, named):
    rc, out = run_play(tmp_path, PLAY, args=args)
    assert rc != 0 and named in out, out
    assert 'REACHED-THE-NEXT-PLAY' not in out, out


def test_typed_answers_as_awx_sends_them_and_strings_as_typed_on_the_command_line(tmp_path):
    # AWX passes a survey's integer answer as a JSON number; -e name=value passes the same as a string
    rc, out = run_play(tmp_path, PLAY, extra_vars={'host_prep_serial': 2, 'gpuvirt_gpu_hosts_pattern': 'gpu_dra'},
                       args=['-e', 'host_prep_max_fail_percentage=25'])
    assert rc == 0 and 'REACHED-THE-NEXT-PLAY' in out, out


@given(st.lists(st.sampled_from(fleet.GPU_GROUPS + ('all', 'gpu', '~gpu_.*', '!gpu_dra', '&gpu_dra', '', ' gpu_dra')),
                min_size=1, max_size=6))
def test_only_distinct_pool_groups_pass(parts):
    pattern = ':'.join(parts)
    ok = all(p in fleet.GPU_GROUPS for p in parts) and len(set(parts)) == len(parts)
    assert (fleet.hosts_pattern_problem(pattern) is None) == ok, pattern


@given(st.text(max_size=300))
def test_any_text_gets_an_answer(text):
    problem = fleet.hosts_pattern_problem(text)
    assert problem is None or isinstance(problem, str)
    assert problem is not None or all(p in fleet.GPU_GROUPS for p in text.split(':'))


def test_the_default_pattern_passes():
    assert fleet.hosts_pattern_problem(fleet.GPU_HOSTS_PATTERN) is None
    assert 'int' in fleet.hosts_pattern_problem(3)


INVENTORY = """
all:
  hosts:
    cp1: {ansible_connection: local}
  children:
    gpu_container:
      hosts:
        gpu01: {ansible_connection: local}
"""


@pytest.mark.parametrize('playbook, variable', [
    ('host_prep.yml', 'host_prep_hosts'),
    ('host_prep.yml', 'gpuvirt_gpu_hosts_pattern'),
    ('preflight.yml', 'gpuvirt_gpu_hosts_pattern'),
    ('gather.yml', 'gpuvirt_gpu_hosts_pattern'),
])
def test_a_limit_that_skips_the_inputs_play_still_never_selects_a_non_gpu_host(tmp_path, playbook, variable):
    # -l cp1 (AWX's Limit) leaves the localhost play of run_inputs.yml no host, so it does not run; the play that
    # selects hosts checks its own hosts: expression (a templating error stops ansible-playbook before any task)
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(INVENTORY)
    proc = subprocess.run(['ansible-playbook', '-i', str(inventory), os.path.join(ROOT, 'playbooks', playbook),
                           '--list-hosts', '-l', 'cp1', '-e', '%s=all' % variable],
                          capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "'all' is not a GPU pool group" in out, out
    assert 'cp1' not in out.split('playbook:', 1)[-1].replace('-l cp1', ''), out


def test_serial_outside_its_range_stops_the_rolling_play(tmp_path):
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(INVENTORY)
    proc = subprocess.run(['ansible-playbook', '-i', str(inventory), os.path.join(ROOT, 'playbooks', 'host_prep.yml'),
                           '--check', '-l', 'gpu01', '-e', 'host_prep_serial=100%'],
                          capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "host_prep_serial: '100%' is not an integer" in out, out
