# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan play of playbooks/host_prep.yml reads each host with one remote module call (host_plan), however much
it reads: counted, not assumed. The real playbook runs on this machine over the counting_local connection (the local
connection, logging each module file it is given: tests/unit/module_calls/), and a callback marks each play's start
in the same log, so the calls fall under the play that made them.

On the Lab VM each remote module call costs seconds (an SSH round trip and a Python start): the plan play of a
converged fleet is what a no-op run costs (benchmarks/bench_host_prep_lab.py)."""

from __future__ import annotations

import json
import os
import sys

from play_runner import run_play
from test_host_plan_matches_roll import Host

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLUGINS = os.path.join(ROOT, 'tests', 'unit', 'module_calls')
PLAN_PLAY = 'Plan host preparation (every selected host at once, read-only)'
ROLL_PLAY = 'Prepare GPU hosts (kernel args, nouveau, vfio, one reboot)'
# the remote module calls of the plan play for one host: this is the number the play is held to
PLAN_CALLS = ['host_plan']


def _run(host, tmp_path, **host_vars):
    """host_prep.yml over one host, gpu-0 (the Host's files and sysfs copy), on the counting connection; returns
    rc, output and {play: [module, ...]} of gpu-0's calls."""
    inv = json.loads(open(host.inventory('gpu_vm_passthrough')).read())
    hosts = inv['all']['children']['gpu_vm_passthrough']['hosts']
    hosts['gpu-0'] = dict(hosts.pop('localhost'), ansible_connection='counting_local', **host_vars)
    path = tmp_path / 'counted.json'
    path.write_text(json.dumps(inv))
    log = tmp_path / 'calls.log'
    if log.exists():
        log.unlink()
    env = dict(os.environ, PATH=host.bindir + os.pathsep + os.environ['PATH'], GPUVIRT_MODULE_CALLS=str(log),
               ANSIBLE_CONNECTION_PLUGINS=os.path.join(PLUGINS, 'connection'),
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(PLUGINS, 'callback'), ANSIBLE_CALLBACKS_ENABLED='play_marks',
               # each module then arrives as a file, which the connection counts
               ANSIBLE_PIPELINING='False')
    rc, out = run_play(tmp_path, '- ansible.builtin.import_playbook: %s\n'
                       % os.path.join(ROOT, 'playbooks', 'host_prep.yml'),
                       extra_vars={'ansible_python_interpreter': sys.executable},
                       args=['-i', str(path), '-e', 'gpuvirt_platform=kubernetes'], env=env)
    calls, play = {}, None
    for line in log.read_text().splitlines():
        kind, name = line.split(' ', 1)
        if kind == 'play':
            play = name
            calls.setdefault(play, [])
        else:
            calls[play].append(name)
    return rc, out, calls


def test_a_converged_host_costs_the_plan_play_one_module_call(tmp_path, monkeypatch):
    host = Host(tmp_path)
    # first run: the host is prepared (the rolling play runs), then nothing is left to do
    rc, out, _plan, _report = host.run(monkeypatch)
    assert rc == 0, out
    rc, out, calls = _run(host, tmp_path)
    assert rc == 0, out
    assert 'host_prep plan for gpu-0: nothing to change' in out, out
    assert calls[PLAN_PLAY] == PLAN_CALLS, calls
    # the rolling play had no host: no call at all beyond the plan's
    assert not calls.get(ROLL_PLAY), calls


def test_every_read_of_the_roles_checks_is_in_the_one_call(tmp_path, monkeypatch):
    # the IOMMU vendor left to the host (ACPI tables, then /proc/cpuinfo) and the GPUs discovered (lspci, sysfs, the
    # processes holding /dev/nvidia*): what the roles' validate.yml read with their own module calls
    host = Host(tmp_path)
    rc, out, calls = _run(host, tmp_path, kernel_args_iommu=True, kernel_args_iommu_vendor='auto', vfio_gpus=True,
                          vfio_require_devices=False)
    assert 'host_prep plan for gpu-0: ' in out, out
    assert calls[PLAN_PLAY] == PLAN_CALLS, calls
    # the plan's changes are the rolling play's to make (it reads again right before it changes the host)
    assert calls.get(ROLL_PLAY), calls
