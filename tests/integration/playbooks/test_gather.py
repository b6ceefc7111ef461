# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/gather.yml for real: this machine is the GPU host (local connection, no become), discovered with
its real lspci, /sys and /proc.

* ``gpuvirt_facts_save: true`` writes ``host_vars/<host>/gpuvirt_saved_facts.json`` beside the inventory, in the
  documented format (docs/saved-facts.md), readable by the next run.
* ``gpuvirt_facts_source``: ``saved`` reads the file and leaves the host out of the run (group gpuvirt_offline),
  ``live`` discovers even in render mode with a file present, anything else stops the run naming the value.
* ``gpuvirt_regather`` is a boolean checked strictly: a typo stops the run naming the variable.
* The node name follows one rule, saved facts or not: ``gpuvirt_node_name`` on the host, else the short name.
"""
from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
HOST = 'gpu-local.example.com'
# a play after gather.yml printing what it registered for the host
PROBE_MSG = ("PROBE {{ {'node': hostvars[h].gpuvirt_node_name, 'os_tag': hostvars[h].gpuvirt_os_tag, "
             "'offline': h in groups.get('gpuvirt_offline', [])} | to_json | b64encode }} PROBE")
PROBE = [{'name': 'Probe', 'hosts': 'localhost', 'gather_facts': False, 'vars': {'h': HOST},
          'tasks': [{'name': 'Print the facts', 'ansible.builtin.debug': {'msg': PROBE_MSG}}]}]


def inventory(tmp_path, **host):
    inv = tmp_path / 'inventory'
    inv.mkdir(exist_ok=True)
    (inv / 'hosts.yml').write_text(yaml.safe_dump({'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'ansible_become': False},
        'children': {'gpu_vm_passthrough': {'hosts': {HOST: host}}}}}))
    (tmp_path / 'probe.yml').write_text(yaml.safe_dump(PROBE))
    return inv


def gather(tmp_path, inv, *extra):
    cmd = ['ansible-playbook', '-i', str(inv / 'hosts.yml'), os.path.join(ROOT, 'playbooks', 'gather.yml'),
           str(tmp_path / 'probe.yml')] + list(extra)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    out = proc.stdout + proc.stderr
    probe = None
    if proc.returncode == 0:
        probe = json.loads(base64.b64decode(out.split('PROBE ', 1)[1].split(' PROBE', 1)[0]))
    return proc.returncode, out, probe


def test_gather_saves_the_discovered_facts_then_reads_them_per_facts_source(tmp_path):
    inv = inventory(tmp_path, gpuvirt_facts_save=True)
    saved = inv / 'host_vars' / HOST / 'gpuvirt_saved_facts.json'
    rc, log, probe = gather(tmp_path, inv)
    assert rc == 0, log
    assert probe['node'] == 'gpu-local' and not probe['offline'], probe
    with open('/etc/os-release') as f:
        assert 'ID=' in f.read()
    live_tag = probe['os_tag']
    # the documented file: one host variable, format 1, this host, the discovery results only
    assert stat.S_IMODE(os.stat(saved).st_mode) == 0o644
    doc = json.loads(saved.read_text())
    assert list(doc) == ['gpuvirt_saved_facts']
    facts = doc['gpuvirt_saved_facts']
    assert facts['format_version'] == 1 and facts['host'] == HOST and facts['source'] == 'playbooks/gather.yml'
    assert facts['gpuvirt_node_name'] == 'gpu-local' and facts['gpuvirt_os_tag'] == live_tag
    assert {'devices', 'gpus', 'iommu'} <= set(facts['gpuvirt_pci_devices'])
    assert 'ansible_python_interpreter' not in json.dumps(facts)

    # mark the file so that its facts can be told from the host's
    facts['gpuvirt_os_tag'] = 'savedos1.0'
    saved.write_text(json.dumps(doc))
    # saved: read from the file, the host left out of the run; the inventory's node name still wins over the file's
    inventory(tmp_path, gpuvirt_facts_source='saved', gpuvirt_node_name='renamed-node')
    rc, log, probe = gather(tmp_path, inv)
    assert rc == 0, log
    assert probe == {'node': 'renamed-node', 'os_tag': 'savedos1.0', 'offline': True}, probe
    assert 'Discover PCI devices' not in log.split('Gather GPU facts on the GPU hosts', 1)[1].split('PLAY', 1)[0] \
        or 'skipping: no hosts matched' in log
    # auto in render mode reads the file too
    inventory(tmp_path, gpuvirt_cluster_mode='render')
    rc, log, probe = gather(tmp_path, inv)
    assert rc == 0, log
    assert probe == {'node': 'gpu-local', 'os_tag': 'savedos1.0', 'offline': True}, probe
    # live: the host is discovered even in render mode with saved facts present
    inventory(tmp_path, gpuvirt_cluster_mode='render', gpuvirt_facts_source='live')
    rc, log, probe = gather(tmp_path, inv)
    assert rc == 0, log
    assert probe == {'node': 'gpu-local', 'os_tag': live_tag, 'offline': False}, probe


def test_a_bad_facts_source_stops_the_run_naming_it(tmp_path):
    inv = inventory(tmp_path, gpuvirt_facts_source='sometimes')
    rc, log, dummy = gather(tmp_path, inv)
    assert rc != 0
    assert 'gpuvirt_facts_source is "sometimes" for %s; use auto, live or saved' % HOST in log, log
    # saved without a file names the file and the fix
    inv = inventory(tmp_path, gpuvirt_facts_source='saved')
    rc, log, dummy = gather(tmp_path, inv)
    assert rc != 0
    assert 'gpuvirt_facts_source=saved but it has no saved facts' in log and 'gpuvirt_saved_facts.json' in log, log


def test_a_regather_typo_stops_the_run_naming_the_variable(tmp_path):
    # given facts are only discovered again when gpuvirt_regather is true; "flase" must not read as false
    inv = inventory(tmp_path, gpuvirt_pci_devices={'devices': [], 'gpus': [], 'nvswitches': []})
    rc, log, dummy = gather(tmp_path, inv, '-e', 'gpuvirt_regather=flase')
    assert rc != 0
    assert 'gpuvirt_regather' in log and 'flase' in log, log
