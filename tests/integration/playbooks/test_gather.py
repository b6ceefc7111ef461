# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/gather.yml for real: this machine is the GPU host (local connection, no become), discovered with
its real lspci, /sys and /proc.

* ``gpuvirt_facts_save: true`` writes ``.gpuvirt_facts/<host>.json`` beside the inventory, in the documented
  format (docs/saved-facts.md), readable by the next run, and never loaded by Ansible as inventory.
* A saved string is data: a template in any string field is never evaluated (refused or carried verbatim).
* A format 1 file left in ``host_vars`` stops the run, naming it and the command that moves it.
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
    saved = inv / '.gpuvirt_facts' / (HOST + '.json')
    rc, log, probe = gather(tmp_path, inv)
    assert rc == 0, log
    assert probe['node'] == 'gpu-local' and not probe['offline'], probe
    with open('/etc/os-release') as f:
        assert 'ID=' in f.read()
    live_tag = probe['os_tag']
    # the documented file: one document, format 2, this host, the discovery results only
    assert stat.S_IMODE(os.stat(saved).st_mode) == 0o644
    doc = json.loads(saved.read_text())
    facts = doc
    assert facts['format_version'] == 2 and facts['host'] == HOST and facts['source'] == 'playbooks/gather.yml'
    assert facts['gpuvirt_node_name'] == 'gpu-local' and facts['gpuvirt_os_tag'] == live_tag
    assert {'devices', 'gpus', 'iommu'} <= set(facts['gpuvirt_pci_devices'])
    assert 'ansible_python_interpreter' not in json.dumps(facts)

    # mark the file so that its facts can be told from the host's
    facts['gpuvirt_os_tag'] = 'savedos1.0'
    saved.write_text(json.dumps(doc))
    assert not (inv / 'host_vars').exists()
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
    assert 'gpuvirt_facts_source=saved but it has no saved facts' in log and '.gpuvirt_facts/%s.json' % HOST in log, log


def test_a_regather_typo_stops_the_run_naming_the_variable(tmp_path):
    # given facts are only discovered again when gpuvirt_regather is true; "flase" must not read as false
    inv = inventory(tmp_path, gpuvirt_pci_devices={'devices': [], 'gpus': [], 'nvswitches': []})
    rc, log, dummy = gather(tmp_path, inv, '-e', 'gpuvirt_regather=flase')
    assert rc != 0
    assert 'gpuvirt_regather' in log and 'flase' in log, log


MARKER_TEMPLATE = "{{ lookup('ansible.builtin.pipe', 'touch %s') }}"


def test_saved_strings_are_never_templates(tmp_path):
    """Every string field of a saved file holds a template that would create a marker file when evaluated: the
    run reads the file, and no marker appears; the values are refused by a grammar or carried verbatim."""
    marker = tmp_path / 'MARKER'
    hostile = MARKER_TEMPLATE % marker
    inv = inventory(tmp_path, gpuvirt_facts_source='saved')
    (inv / '.gpuvirt_facts').mkdir()
    saved = inv / '.gpuvirt_facts' / (HOST + '.json')
    device = {'bdf': '0000:41:00.0', 'kind': 'gpu', 'is_vf': False, 'device_name': hostile, 'vendor_name': hostile,
              'class_name': hostile, 'subsystem_name': hostile, 'physical_slot': hostile}
    doc = {'format_version': 2, 'host': HOST, 'source': hostile,
           'gpuvirt_pci_devices': {'devices': [device], 'gpus': [device], 'nvswitches': [], 'gpus_by_driver': {},
                                   'iommu': {'enabled': False, 'groups': 0, 'message': hostile}},
           'gpuvirt_mdev_types': {'parents': [{'parent': '0000:41:00.0', 'interface': 'mdev', 'physfn': None,
                                               'types': [{'type_id': hostile, 'name': hostile, 'description': hostile,
                                                          'short_name': hostile, 'max_resolution': hostile}],
                                               'devices': [{'uuid': hostile, 'type_id': hostile, 'name': hostile}],
                                               'current_type': hostile}],
                                  'interfaces': ['mdev'], 'state': 'none', 'available_types': [hostile],
                                  'message': hostile,
                                  'host_interface': {'interface': 'mdev', 'evidence': [hostile],
                                                     'kernel_release': None, 'driver_version': None}},
           'gpuvirt_gpu_holders': {'held': True, 'message': hostile, 'unreadable': 0,
                                   'holders': [{'pid': 1, 'executable': '?', 'device': '/dev/nvidia0'}]},
           'gpuvirt_os_tag': 'savedos1.0'}
    saved.write_text(json.dumps(doc))
    probe = [{'name': 'Probe', 'hosts': 'localhost', 'gather_facts': False, 'vars': {'h': HOST}, 'tasks': [
        {'name': 'Use every fact', 'ansible.builtin.debug': {'msg': (
            "PROBE {{ {'pci': hostvars[h].gpuvirt_pci_devices, 'mdev': hostvars[h].gpuvirt_mdev_types,"
            " 'holders': hostvars[h].gpuvirt_gpu_holders} | to_json | b64encode }} PROBE")}}]}]
    (tmp_path / 'probe.yml').write_text(yaml.safe_dump(probe))
    rc, log, seen = gather(tmp_path, inv)
    assert rc == 0, log
    assert not marker.exists(), log
    # carried verbatim, as data
    assert seen['pci']['gpus'][0]['device_name'] == hostile and seen['mdev']['parents'][0]['types'][0]['name'] == hostile
    assert seen['holders']['message'] == hostile and seen['mdev']['available_types'] == [hostile]
    assert seen['mdev']['host_interface']['evidence'] == [hostile]
    # where a grammar applies, the template is refused naming the file and the field
    for field, value in (('gpuvirt_os_tag', hostile), ('gpuvirt_node_name', hostile)):
        bad = dict(doc, **{field: value})
        saved.write_text(json.dumps(bad))
        rc, log, dummy = gather(tmp_path, inv)
        assert rc != 0 and '%s: $.%s is str' % (saved, field) in log, log
        assert not marker.exists(), log
    bad = json.loads(json.dumps(doc))
    bad['gpuvirt_mdev_types']['host_interface']['kernel_release'] = hostile
    saved.write_text(json.dumps(bad))
    rc, log, dummy = gather(tmp_path, inv)
    assert rc != 0 and '$.gpuvirt_mdev_types.host_interface.kernel_release is str' in log, log
    assert not marker.exists(), log
    bad = json.loads(json.dumps(doc))
    bad['gpuvirt_gpu_holders']['holders'][0]['executable'] = hostile
    saved.write_text(json.dumps(bad))
    rc, log, dummy = gather(tmp_path, inv)
    assert rc != 0 and '$.gpuvirt_gpu_holders.holders[0].executable is str' in log, log
    assert not marker.exists(), log


def test_a_format_1_file_in_host_vars_stops_the_run_naming_the_move(tmp_path):
    marker = tmp_path / 'MARKER'
    hostile = MARKER_TEMPLATE % marker
    inv = inventory(tmp_path, gpuvirt_cluster_mode='render')
    old = inv / 'host_vars' / HOST / 'gpuvirt_saved_facts.json'
    old.parent.mkdir(parents=True)
    pci = {'devices': [], 'gpus': [{'bdf': '0000:41:00.0'}], 'nvswitches': [], 'gpus_by_driver': {}}
    old.write_text(json.dumps({'gpuvirt_saved_facts': {
        'format_version': 1, 'host': HOST, 'gpuvirt_pci_devices': pci, 'gpuvirt_os_tag': 'savedos1.0',
        'gpuvirt_node_name': 'gpu-local',
        'gpuvirt_gpu_holders': {'held': True, 'message': 'PID 9 (%s) holds /dev/nvidia0' % hostile, 'holders': [
            {'pid': 9, 'command': hostile, 'executable': 'app', 'device': '/dev/nvidia0', 'minor': 0, 'bdf': None,
             'unit': None}]}}}))
    rc, log, dummy = gather(tmp_path, inv)
    assert rc != 0 and not marker.exists(), log
    assert '%s: saved GPU facts of format 1, in host_vars' % old in log, log
    # the command the message gives moves the file out of host_vars as format 2 (jq is what it names)
    command = ' '.join(log.split('Move them out as format 2, then run again:', 1)[1]
                       .split('(docs/saved-facts.md', 1)[0].split())
    subprocess.run(['bash', '-c', command], check=True, cwd=str(tmp_path))
    assert not old.exists()
    rc, log, probe = gather(tmp_path, inv)
    assert rc == 0 and not marker.exists(), log
    assert probe == {'node': 'gpu-local', 'os_tag': 'savedos1.0', 'offline': True}, probe
    moved = json.loads((inv / '.gpuvirt_facts' / (HOST + '.json')).read_text())
    assert moved['format_version'] == 2 and 'command' not in moved['gpuvirt_gpu_holders']['holders'][0]


def test_saved_facts_committed_as_a_symbolic_link_are_refused(tmp_path):
    # the inventory repository is shared: a link would make the file lookup read any controller file into the run
    inv = inventory(tmp_path, gpuvirt_facts_source='saved')
    (inv / '.gpuvirt_facts').mkdir()
    secret = tmp_path / 'controller-secret.json'
    secret.write_text('{"format_version": 2, "host": "%s", "token": "hunter2"}' % HOST)
    os.symlink(str(secret), str(inv / '.gpuvirt_facts' / (HOST + '.json')))
    (tmp_path / 'probe.yml').write_text(yaml.safe_dump([{'name': 'Probe', 'hosts': 'localhost',
                                                         'gather_facts': False, 'tasks': []}]))
    rc, log, probe = gather(tmp_path, inv)
    assert rc != 0 and probe is None and 'is a symbolic link; saved facts must be a regular file' in log, log
    assert 'hunter2' not in log


def test_a_render_with_facts_given_in_the_inventory_does_not_contact_the_host(tmp_path):
    # docs/saved-facts.md: a host whose discovery facts are given as variables is not asked again. The host is
    # unreachable (an SSH connection to a port nothing listens on): before, gather.yml pinged it for the facts it was
    # not given (its OS tag) and the render stopped as UNREACHABLE
    pci = {'gpus': [{'bdf': '0000:41:00.0', 'vendor_id': '10de', 'device_id': '2236', 'device_name': 'GA102GL [A10]',
                     'kind': 'gpu', 'is_vf': False}], 'iommu': {'enabled': True}}
    inv = inventory(tmp_path, gpuvirt_pci_devices=pci, ansible_connection='ssh', ansible_host='127.0.0.1',
                    ansible_port=9, ansible_ssh_common_args='-o ConnectTimeout=3')
    rc, log, probe = gather(tmp_path, inv, '-e', 'gpuvirt_cluster_mode=render')
    assert rc == 0, log
    assert 'UNREACHABLE' not in log, log
    # as a saved-facts host: out of the host phases, the node name by the one rule, no OS tag it was not given
    assert probe == {'node': 'gpu-local', 'os_tag': '', 'offline': True}, probe
    # apply mode still asks it for what it was not given, and stops naming the ways out, this one among them
    rc, log, probe = gather(tmp_path, inv, '-e', 'gpuvirt_cluster_mode=apply')
    assert rc != 0 and 'could not be reached to gather its GPU facts' in log, log
    assert 'a render also takes its facts from the inventory' in ' '.join(log.split()), log
