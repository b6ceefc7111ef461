# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's facts never become host variables (docs/security.md, "Facts a host returns").

Every module result's ``ansible_facts`` is stored as the host's facts, and with INJECT_FACTS_AS_VARS on (Ansible's
default) each fact is also a host variable, which outranks the inventory's host variables and role defaults
(ansible-core 2.19 vars/manager.py get_vars: facts come after inventory host_vars and before play vars; clean_facts
in vars/clean.py strips only magic, connection and interpreter names). A host whose modules answer with a fact
named like one of the collection's variables (reboot_node_name, host_prep_stop_vms...) would then choose which
node the reboot role drains with the controller's cluster credentials. The project's ansible.cfg, the Molecule
scenarios and the execution environment turn injection off, and the collection reads facts only as
``ansible_facts.<name>``: both are checked here, the first by a real run.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import configparser
import os
import re
import subprocess
import sys
import textwrap

import yaml

from ansible.module_utils.facts import default_collectors

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
SCANNED = ('playbooks', 'roles', 'molecule', 'awx', 'inventories', 'tests/integration')
# fact names the collection's plays could read: every default collector's, the ones setup adds beyond its
# _fact_ids (os_family and distribution come with the distribution collector; the virtualization pair with
# virtual), and what the collection's own modules return as facts (host_plan: the distribution facts)
EXTRA_FACTS = ('os_family', 'distribution', 'distribution_major_version', 'distribution_version',
               'virtualization_role', 'virtualization_type', 'hostname', 'fqdn', 'nodename', 'processor',
               'processor_count', 'memtotal_mb', 'kernel', 'kernel_version', 'cmdline', 'proc_cmdline',
               'product_name', 'system_vendor', 'pkg_mgr', 'service_mgr', 'default_ipv4', 'machine', 'lsb')


def fact_names():
    names = set(EXTRA_FACTS)
    for collector in default_collectors.collectors:
        names |= set(collector._fact_ids)
    return names


def test_the_projects_configurations_turn_fact_injection_off():
    # the names Ansible reads the setting by (ansible-core config/base.yml INJECT_FACTS_AS_VARS)
    from ansible import constants as C
    definition = C.config.get_configuration_definition('INJECT_FACTS_AS_VARS')
    assert {'name': 'ANSIBLE_INJECT_FACT_VARS'} in definition['env']
    assert {'key': 'inject_facts_as_vars', 'section': 'defaults'} in definition['ini']
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'ansible.cfg'))
    assert cfg.getboolean('defaults', 'inject_facts_as_vars') is False
    with open(os.path.join(ROOT, 'molecule', 'default', 'molecule.yml'), encoding='utf-8') as handle:
        default = yaml.safe_load(handle)
    assert default['provisioner']['config_options']['defaults']['inject_facts_as_vars'] is False
    with open(os.path.join(ROOT, 'molecule', 'vm', 'molecule.yml'), encoding='utf-8') as handle:
        vm = yaml.safe_load(handle)
    assert vm['provisioner']['env']['ANSIBLE_INJECT_FACT_VARS'] == 'False'
    with open(os.path.join(ROOT, 'execution-environment.yml'), encoding='utf-8') as handle:
        ee = yaml.safe_load(handle)
    assert 'ENV ANSIBLE_INJECT_FACT_VARS=False' in ee['additional_build_steps']['append_final']


def test_no_play_reads_a_fact_as_a_top_level_variable():
    names = fact_names()
    # a variable read, not a key of a result dict in a test (['ansible_user_id'])
    pattern = re.compile(r'(?<![\w.\'"])ansible_(%s)\b'
                         % '|'.join(sorted(map(re.escape, names), key=len, reverse=True)))
    found = []
    for top in SCANNED:
        for base, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith(('.yml', '.yaml', '.j2', '.py')):
                    continue
                path = os.path.join(base, name)
                with open(path, encoding='utf-8', errors='replace') as handle:
                    for number, line in enumerate(handle, 1):
                        if line.lstrip().startswith('#'):
                            continue
                        for match in pattern.finditer(line):
                            found.append('%s:%d: %s' % (os.path.relpath(path, ROOT), number, match.group(0)))
    # read them as ansible_facts.<name>: with injection off the top-level name is undefined
    assert not found, found


MODULE = textwrap.dedent('''\
    #!/usr/bin/python
    from ansible.module_utils.basic import AnsibleModule
    module = AnsibleModule(argument_spec={})
    module.exit_json(changed=False, ansible_facts={'reboot_node_name': 'victim-node', 'host_prep_stop_vms': True})
    ''')

PLAY = textwrap.dedent('''\
    - hosts: gpu01
      gather_facts: false
      tasks:
        - name: A module that answers with facts named like the collection's variables
          planted: {}
        - name: Show what the play reads
          ansible.builtin.debug:
            msg: "node={{ reboot_node_name }} stop={{ host_prep_stop_vms }} fact={{ ansible_facts.reboot_node_name }}"
    ''')


def test_a_fact_named_like_an_inventory_variable_does_not_replace_it(tmp_path):
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'planted.py').write_text(MODULE)
    (tmp_path / 'play.yml').write_text(PLAY)
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'gpu01': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'reboot_node_name': 'gpu01-node', 'host_prep_stop_vms': False}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'),
               ANSIBLE_LIBRARY=str(tmp_path / 'library'), ANSIBLE_STDOUT_CALLBACK='default')
    bin_dir = os.path.dirname(sys.executable)
    proc = subprocess.run([os.path.join(bin_dir, 'ansible-playbook'), '-i', str(tmp_path / 'hosts.yml'),
                           str(tmp_path / 'play.yml')], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # the inventory's values hold; the planted ones stay facts (with injection on: node=victim-node stop=True)
    assert 'node=gpu01-node stop=False fact=victim-node' in out, out


def test_a_run_with_fact_injection_on_is_warned_once(tmp_path):
    # a run from outside the checkout (an installed copy, another project's ansible.cfg) keeps Ansible's default:
    # the launch check, the first thing every playbook templates, says how to turn it off
    (tmp_path / 'play.yml').write_text(textwrap.dedent('''\
        - hosts: "{{ lookup('gpuvirt.provision.launch_check', 'localhost') }}"
          gather_facts: false
          tasks: []
        - hosts: "{{ lookup('gpuvirt.provision.launch_check', 'localhost') }}"
          gather_facts: false
          tasks: []
        '''))
    bin_dir = os.path.dirname(sys.executable)
    for inject, warned in (('True', 1), ('False', 0)):
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_INJECT_FACT_VARS=inject)
        proc = subprocess.run([os.path.join(bin_dir, 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                               str(tmp_path / 'play.yml')], capture_output=True, text=True, env=env,
                              cwd=str(tmp_path), check=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out
        assert ' '.join(out.split()).count('INJECT_FACTS_AS_VARS is on') == warned, out
