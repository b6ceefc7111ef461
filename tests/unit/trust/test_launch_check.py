# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch-time boundary (docs/security.md, "Launch time"): the variables a run is given and its limit.

Extra variables beat every other variable in Ansible, set_fact and include_role vars included (Ansible's
"Understanding variable precedence": extra vars are last, 22 of 22). Whoever may launch a job (an AWX launcher:
survey, extra variables, limit) could otherwise replace a value after the collection checked it. The playbooks a
user runs import playbooks/launch_check.yml first; these tests run them through the real ansible-playbook, as AWX
does (ansible-runner passes the launch variables as ``-e @env/extravars``), and judge the plain rules directly.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import launch_names, launch_vars

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLAYBOOKS = os.path.join(ROOT, 'playbooks')
NAMES = launch_vars.collection_names()

# A host that refuses connections at once: a play that got past the launch check and tried it fails fast, and
# the tests see that it was tried (UNREACHABLE) - never a change on this machine.
INVENTORY = """
all:
  hosts:
    gpu01: {ansible_host: 127.0.0.1, ansible_port: 1, ansible_connection: ssh}
  children:
    gpu_vm_passthrough:
      hosts:
        gpu01:
"""


def _run(tmp_path, playbook, *args, inventory=INVENTORY, extra=None):
    inv = tmp_path / 'hosts.yml'
    inv.write_text(inventory)
    cmd = ['ansible-playbook', '-i', str(inv), os.path.join(PLAYBOOKS, playbook),
           '-e', 'ansible_python_interpreter=%s' % sys.executable]
    if extra is not None:
        # as ansible-runner hands AWX's launch variables over: a file given with -e @
        path = tmp_path / 'extravars'
        path.write_text(json.dumps(extra))
        cmd += ['-e', '@%s' % path]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, check=False, cwd=str(tmp_path))
    return proc.returncode, proc.stdout + proc.stderr


def test_the_generated_names_are_fresh():
    # a new set_fact, register or argument spec option reaches the check only through tools/launch_names.py
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'launch_names.py'), '--check'],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_every_playbook_a_user_runs_starts_with_the_launch_check():
    # the entry points: every playbook that is not a piece imported by others
    pieces = {'launch_check.yml', 'launch_check_hosts.yml', 'run_inputs.yml', 'render_open.yml', 'render_close.yml',
              'summary.yml'}
    missing = []
    for name in sorted(os.listdir(PLAYBOOKS)):
        if not name.endswith('.yml') or name in pieces or name.startswith('phase_'):
            continue
        with open(os.path.join(PLAYBOOKS, name)) as handle:
            first = yaml.safe_load(handle)[0]
        if first.get('ansible.builtin.import_playbook') not in ('launch_check.yml', 'launch_check_hosts.yml') \
                and first.get('ansible.builtin.import_playbook') != 'gather.yml':
            missing.append(name)
    assert missing == []
    # gather.yml, which the phase playbooks start with, starts with it itself
    with open(os.path.join(PLAYBOOKS, 'gather.yml')) as handle:
        assert yaml.safe_load(handle)[0]['ansible.builtin.import_playbook'] == 'launch_check.yml'


def _plays(name):
    with open(os.path.join(PLAYBOOKS, name)) as handle:
        return yaml.safe_load(handle) or []


def test_only_a_playbook_without_localhost_plays_takes_the_host_launch_check():
    # launch_check_hosts.yml lets a limit leave out localhost. That is safe only where nothing but the host plays
    # would be skipped: a playbook importing it may have no play of its own on localhost and import nothing else
    # but run_inputs.yml (whose play only checks the run inputs again, each host play checking its own). retire.yml
    # imported it while its localhost plays refused a render and uncordoned the nodes: `-l gpu3` skipped them and
    # the host play still rebooted.
    safe_imports = {'launch_check_hosts.yml', 'run_inputs.yml'}
    wrong = []
    for name in sorted(os.listdir(PLAYBOOKS)):
        if not name.endswith('.yml') or name == 'launch_check_hosts.yml':
            continue
        plays = _plays(name)
        imports = [p.get('ansible.builtin.import_playbook') for p in plays if 'ansible.builtin.import_playbook' in p]
        if 'launch_check_hosts.yml' not in imports:
            continue
        on_localhost = [p.get('name') for p in plays if 'localhost' in str(p.get('hosts', ''))]
        others = sorted(set(imports) - safe_imports)
        if on_localhost or others:
            wrong.append('%s: localhost plays %s, imports %s' % (name, on_localhost, others))
    assert wrong == []


@pytest.mark.parametrize('name', ['__vfio_files', '__vfio_checked', '__gpu_operator_helm_checked', '__reboot_flags',
                                  '__nouveau_flags', '__gpuvirt_anything', '___vfio_files'])
def test_internal_names_are_refused_even_when_declared_your_own(name):
    assert NAMES.verdict(name) == 'internal'
    out = launch_vars.problems(NAMES, {name: ['the extra variables']}, allowed_unknown=[name])
    assert len(out) == 1 and out[0].startswith(name + ' (given by the extra variables) is internal'), out


@pytest.mark.parametrize('name', ['vfio_selected', 'gpuvirt_cluster', 'host_prep_traits', 'kernel_args_wanted',
                                  'node_labels_plan', 'gpuvirt_render_owner'])
def test_names_the_collection_sets_during_a_run_are_refused(name):
    assert name in launch_names.RUNTIME
    out = launch_vars.problems(NAMES, {name: ['the inventory group all']}, allowed_unknown=[name])
    assert out and 'set by the collection during the run' in out[0], out


@pytest.mark.parametrize('name', ['k8s_objects_list', 'k8s_objects_mode', 'node_labels_hosts', 'kubevirt_devices_hosts',
                                  'vfio_state', 'vfio_check_vmis', 'machineconfig_nodes', 'verify_expected'])
def test_a_role_option_a_play_feeds_is_the_play_s_not_the_launcher_s(name):
    # an option of a role that a play or role sets for it (k8s_objects_list: the objects a cluster role built) is
    # in a role's argument spec, yet given at launch it would replace what the play computed: any object applied
    assert name in launch_names.KNOWN and name in launch_names.RUNTIME
    out = launch_vars.problems(NAMES, {name: ['the extra variables']})
    assert out and 'set by the collection during the run' in out[0], out


def test_the_inputs_declared_passed_along_are_inputs_of_a_spec():
    with open(os.path.join(PLAYBOOKS, 'vars', 'playbook_inputs.yml')) as handle:
        along = yaml.safe_load(handle)['playbook_inputs_passed_along']
    assert along and set(along) <= set(launch_names.KNOWN) and not set(along) & set(launch_names.RUNTIME)


def test_a_misspelt_input_names_the_closest_known_one_and_can_be_declared_your_own():
    out = launch_vars.problems(NAMES, {'gpuvirt_plattform': ['the extra variables']})
    assert out == ['gpuvirt_plattform (given by the extra variables) is not a variable of the collection (did you '
                   'mean gpuvirt_platform?); if it is your own, list it in gpuvirt_launch_allow_unknown']
    assert launch_vars.problems(NAMES, {'cluster_name': ['the inventory group all']}, ['cluster_name']) == []
    assert launch_vars.problems(NAMES, {'cluster_name': ['the inventory group all']})


def test_a_removed_variable_names_its_replacement():
    out = launch_vars.problems(NAMES, {'gpu_operator_kubeconfig': ['the inventory host gpu01']})
    assert out == ['gpu_operator_kubeconfig (given by the inventory host gpu01) is no longer read; set '
                   'gpuvirt_kubeconfig instead']


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(set(launch_names.KNOWN) - set(launch_names.RUNTIME))),
       st.sampled_from(['the extra variables', 'the inventory host x']))
def test_every_known_input_is_accepted(name, where):
    # the other half of the rule: a check that refused everything would pass the tests above
    assert launch_vars.problems(NAMES, {name: [where]}) == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='abcdefghijklmnopqrstuvwxyz_0123456789', min_size=1, max_size=40))
def test_names_without_our_prefixes_are_never_judged(name):
    ours = NAMES.verdict(name)
    if any(name.startswith(p + '_') for p in launch_names.PREFIXES) or name.startswith('__') \
            or name in launch_names.RUNTIME or name in launch_names.REMOVED:
        return
    assert ours is None, name


def test_allow_unknown_must_be_a_list_of_names():
    with pytest.raises(ValueError, match='gpuvirt_launch_allow_unknown must be a list'):
        launch_vars.allowed_unknown_names('cluster_name')
    with pytest.raises(ValueError, match="'a b'"):
        launch_vars.allowed_unknown_names(['a b'])
    assert launch_vars.allowed_unknown_names(['cluster_name']) == ['cluster_name']


# Loaded by ansible-core's own inventory code in a process of its own: the loader's plugin state (vars plugins,
# the collection finder another test file installs) must not leak between test files of one xdist worker.
_LOAD = """
import json, sys
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible_collections.gpuvirt.provision.plugins.action.launch_check import given_variables
out = {}
for path in sys.argv[2:]:
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[path])
    out[path] = given_variables(loader, inventory, sys.argv[1])
print(json.dumps(out))
"""


def _load_inventories(*paths):
    proc = subprocess.run([sys.executable, '-c', _LOAD, PLAYBOOKS] + list(paths), capture_output=True, text=True,
                          check=True)
    return {path: (given, allowed) for path, (given, allowed) in json.loads(proc.stdout).items()}


def _repository_inventories():
    out = ['inventories/example/hosts.yml', 'inventories/lab/hosts.yml']
    base = os.path.join(ROOT, 'tests', 'integration')
    for target in sorted(os.listdir(base)):
        folder = os.path.join(base, target, 'inventories')
        if os.path.isdir(folder):
            out += sorted(os.path.relpath(os.path.join(folder, n), ROOT) for n in os.listdir(folder)
                          if n.endswith('.yml'))
    return out


@pytest.fixture(scope='module')
def repository_inventories():
    return _load_inventories(*[os.path.join(ROOT, inventory) for inventory in _repository_inventories()])


@pytest.mark.parametrize('inventory', _repository_inventories())
def test_the_repositorys_own_inventories_pass(inventory, repository_inventories):
    given_names, allowed = repository_inventories[os.path.join(ROOT, inventory)]
    # group_vars/all beside the example inventory are read too (the vars plugins)
    if inventory.startswith('inventories/example'):
        assert 'vgpu_manager_image_registry' in given_names
    assert launch_vars.problems(NAMES, given_names, allowed) == []


def test_group_vars_beside_the_inventory_are_judged(tmp_path):
    (tmp_path / 'group_vars' / 'all').mkdir(parents=True)
    (tmp_path / 'group_vars' / 'all' / 'x.yml').write_text('__vfio_files: {modprobe: "install nvidia /bin/sh"}\n')
    (tmp_path / 'hosts.yml').write_text(INVENTORY)
    given_names, dummy = _load_inventories(str(tmp_path / 'hosts.yml'))[str(tmp_path / 'hosts.yml')]
    assert given_names['__vfio_files'] == ['the inventory group all']


_LOAD_LIMITED = _LOAD.replace("    inventory = InventoryManager(loader=loader, sources=[path])\n",
                              "    inventory = InventoryManager(loader=loader, sources=[path])\n"
                              "    inventory.subset('gpu01')\n")


def test_every_host_is_judged_and_named_also_outside_a_limit(tmp_path):
    # --limit restricts the inventory before the launch check runs: a host the run leaves out is still the
    # inventory's, and its variables reach every later run (get_hosts(ignore_restrictions=True))
    (tmp_path / 'hosts.yml').write_text(INVENTORY + "    gpu_container:\n      hosts:\n        gpu02: {gpuvirt_pol: x}\n")
    proc = subprocess.run([sys.executable, '-c', _LOAD_LIMITED, PLAYBOOKS, str(tmp_path / 'hosts.yml')],
                          capture_output=True, text=True, check=True)
    given_names, dummy = json.loads(proc.stdout)[str(tmp_path / 'hosts.yml')]
    assert given_names['gpuvirt_pol'] == ['the inventory host gpu02']
    assert launch_vars.problems(NAMES, given_names)[0].startswith('gpuvirt_pol (given by the inventory host gpu02)')


def test_group_vars_are_read_at_the_stage_the_variable_manager_reads_them(tmp_path):
    # a vars plugin configured for the task stage only (ANSIBLE_VARS_PLUGIN_STAGE=task, host_group_vars's option)
    # runs where the variable manager reads variables while tasks run: the check reads them at that stage too
    # (ansible-core vars/plugins.py _plugin_should_run: a plugin's stage must be 'all' or the one asked)
    (tmp_path / 'group_vars').mkdir()
    (tmp_path / 'group_vars' / 'all.yml').write_text('gpuvirt_plattform: kubernetes\n')
    (tmp_path / 'hosts.yml').write_text(INVENTORY)
    env = dict(os.environ, ANSIBLE_VARS_PLUGIN_STAGE='task')
    proc = subprocess.run([sys.executable, '-c', _LOAD, PLAYBOOKS, str(tmp_path / 'hosts.yml')],
                          capture_output=True, text=True, check=True, env=env)
    given_names, dummy = json.loads(proc.stdout)[str(tmp_path / 'hosts.yml')]
    assert given_names['gpuvirt_plattform'] == ['the inventory group all']


def test_group_vars_beside_the_playbook_are_judged(tmp_path):
    # the vars plugins also read group_vars/ and host_vars/ beside the playbook (VariableManager: the play's
    # basedir): a variable there reaches every host as one beside the inventory does
    playbooks = tmp_path / 'playbooks'
    (playbooks / 'host_vars').mkdir(parents=True)
    (playbooks / 'host_vars' / 'gpu01.yml').write_text('__vfio_files: {}\n')
    (tmp_path / 'hosts.yml').write_text(INVENTORY)
    proc = subprocess.run([sys.executable, '-c', _LOAD, str(playbooks), str(tmp_path / 'hosts.yml')],
                          capture_output=True, text=True, check=True)
    given_names, dummy = json.loads(proc.stdout)[str(tmp_path / 'hosts.yml')]
    assert given_names['__vfio_files'] == ['the inventory host gpu01']


def test_a_playbook_must_say_whether_its_plays_may_run_without_localhost(tmp_path):
    # no default: a playbook that runs the check without saying is refused, naming the argument
    play = tmp_path / 'p.yml'
    play.write_text('- hosts: localhost\n  gather_facts: false\n  tasks:\n'
                    '    - gpuvirt.provision.launch_check: {}\n')
    (tmp_path / 'hosts.yml').write_text(INVENTORY)
    proc = subprocess.run(['ansible-playbook', '-i', str(tmp_path / 'hosts.yml'), str(play)], capture_output=True,
                          text=True, check=False, cwd=str(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert 'launch_check: limit_may_leave_out_localhost must be given, a literal boolean' in out, out
    # its valid neighbour: said, the check runs and changes nothing
    play.write_text('- hosts: localhost\n  gather_facts: false\n  tasks:\n'
                    '    - gpuvirt.provision.launch_check: {limit_may_leave_out_localhost: false}\n')
    proc = subprocess.run(['ansible-playbook', '-i', str(tmp_path / 'hosts.yml'), str(play)], capture_output=True,
                          text=True, check=False, cwd=str(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.search(r'localhost +: ok=1 +changed=0 ', out), out


def test_the_implicit_localhost_s_host_vars_are_judged(tmp_path):
    # the inventory lists no localhost, yet Ansible gives its implicit localhost host_vars/localhost.yml beside the
    # inventory, and the cluster and render plays run there: an internal name there is judged like any host's
    (tmp_path / 'host_vars').mkdir()
    (tmp_path / 'host_vars' / 'localhost.yml').write_text('__gpuvirt_render_level: 1\n')
    (tmp_path / 'hosts.yml').write_text(INVENTORY)
    given_names, dummy = _load_inventories(str(tmp_path / 'hosts.yml'))[str(tmp_path / 'hosts.yml')]
    assert given_names['__gpuvirt_render_level'] == ['the inventory host localhost']
    assert launch_vars.problems(NAMES, given_names)[0].startswith(
        '__gpuvirt_render_level (given by the inventory host localhost) is internal to the collection')


def test_names_declared_your_own_in_the_inventory_are_collected(tmp_path):
    # gpuvirt_launch_allow_unknown in a group's or host's variables: its value is handed to the check
    (tmp_path / 'hosts.yml').write_text(INVENTORY.replace(
        "all:\n", "all:\n  vars: {gpuvirt_launch_allow_unknown: [gpuvirt_site_owner], gpuvirt_site_owner: me}\n"))
    given_names, allowed = _load_inventories(str(tmp_path / 'hosts.yml'))[str(tmp_path / 'hosts.yml')]
    assert allowed == [['gpuvirt_site_owner']]
    assert given_names['gpuvirt_site_owner'] == ['the inventory group all']
    assert launch_vars.problems(NAMES, given_names, allowed[0]) == []
    # its valid neighbour: without the declaration the same name is refused
    assert launch_vars.problems(NAMES, given_names)


# -- through the real ansible-playbook: refused before any host is contacted --------------------------------------

def test_an_extra_variable_replacing_the_vfio_files_stops_host_prep_before_any_host_is_contacted(tmp_path):
    rc, out = _run(tmp_path, 'host_prep.yml',
                   extra={'__vfio_files': {'modprobe': 'install nvidia /bin/sh -c "id > /tmp/pwned"'},
                          '__vfio_checked': {'modprobe_path': '/etc/passwd'}})
    assert rc != 0, out
    assert '__vfio_files (given by the extra variables) is internal' in out, out
    assert '__vfio_checked (given by the extra variables) is internal' in out, out
    assert 'Nothing was changed' in out
    # no play after the check ran: the host was never tried
    assert 'UNREACHABLE' not in out and 'Gathering Facts' not in out, out


def test_a_misspelt_variable_stops_site_with_the_closest_name(tmp_path):
    rc, out = _run(tmp_path, 'site.yml', '-e', 'gpuvirt_plattform=kubernetes')
    assert rc != 0, out
    assert 'gpuvirt_plattform (given by the extra variables) is not a variable of the collection (did you mean ' \
           'gpuvirt_platform?)' in out, out
    assert 'UNREACHABLE' not in out, out


@pytest.mark.parametrize('args', [(), ('--limit', 'gpu02,localhost')])
def test_a_misspelt_host_variable_stops_site_also_for_a_host_the_run_leaves_out(tmp_path, args):
    # the launch check's play runs on localhost (the executor restricts the inventory to its batch) and a --limit
    # leaves hosts out: each host's own variables are judged all the same, named by their host
    inventory = INVENTORY.replace('    gpu01: {ansible_host', '    gpu01: {gpuvirt_pol: x, ansible_host') + (
        '    gpu_container:\n      hosts:\n        gpu02: {ansible_host: 127.0.0.1, ansible_port: 1}\n')
    rc, out = _run(tmp_path, 'site.yml', *args, inventory=inventory)
    assert rc != 0, out
    assert 'gpuvirt_pol (given by the inventory host gpu01) is not a variable of the collection' in out, out
    assert 'UNREACHABLE' not in out, out


def test_a_run_time_name_in_the_inventory_is_refused_naming_the_group(tmp_path):
    inventory = INVENTORY + '      vars:\n        vfio_selected: ["0000:41:00.0"]\n'
    rc, out = _run(tmp_path, 'preflight.yml', inventory=inventory)
    assert rc != 0, out
    assert 'vfio_selected (given by the inventory group gpu_vm_passthrough) is set by the collection' in out, out


@pytest.mark.parametrize('playbook, args', [('preflight.yml', ()), ('nodes.yml', ()), ('site.yml', ()),
                                            # its host play would take the host state back and reboot
                                            ('retire.yml', ('-e', 'retire_hosts=gpu01'))])
def test_a_limit_without_localhost_is_refused_where_localhost_plays_would_be_skipped(tmp_path, playbook, args):
    rc, out = _run(tmp_path, playbook, '-l', 'gpu01', *args)
    assert rc != 0, out
    assert "the limit 'gpu01' leaves out localhost" in out and "-l 'gpu01,localhost'" in out, out
    assert 'UNREACHABLE' not in out, out


def test_host_prep_takes_a_limit_without_localhost(tmp_path):
    # its host play checks its own inputs again: the launch check passes and the host is tried
    rc, out = _run(tmp_path, 'host_prep.yml', '-l', 'gpu01')
    assert 'leaves out localhost' not in out, out
    assert 'UNREACHABLE' in out, out


def test_a_clean_launch_passes_the_check(tmp_path):
    # the positive case of the playbook tests above: the same inventory without a bad name gets past the check
    rc, out = _run(tmp_path, 'preflight.yml', '-e', 'gpuvirt_cluster_mode=render', '-e', 'gpuvirt_render_dir=%s'
                   % (tmp_path / 'r'), '-l', 'gpu01,localhost')
    assert 'launch check:' not in out, out
    assert 'Refuse internal, run-time and unknown variables' in out, out


# -- Ansible's own variables, and options that skip tasks -----------------------------------------------------------

@pytest.mark.parametrize('extra, name', [
    # the connection command: a ProxyCommand runs on the controller
    ({'ansible_ssh_common_args': "-o ProxyCommand='sh -c \"id > /tmp/pwned\"'"}, 'ansible_ssh_common_args'),
    # the facts the roles derive the IOMMU vendor, the boot loader backend and the initramfs tool from
    ({'ansible_facts': {'processor': ['GenuineIntel'], 'os_family': 'RedHat'}}, 'ansible_facts'),
    ({'ansible_become_exe': '/tmp/x'}, 'ansible_become_exe'),
    # a special variable: where saved facts are written and read
    ({'inventory_dir': '/tmp/evil'}, 'inventory_dir'),
    ({'group_names': ['gpu_vm_passthrough']}, 'group_names'),
])
def test_ansible_s_own_variables_as_extra_variables_are_refused(tmp_path, extra, name):
    rc, out = _run(tmp_path, 'host_prep.yml', extra=extra)
    assert rc != 0, out
    assert '%s (given by the extra variables) is a variable Ansible reads itself' % name in out, out
    assert 'UNREACHABLE' not in out, out


def test_the_controller_s_owner_allows_an_ansible_variable_by_name(tmp_path, monkeypatch):
    # the harness allows ansible_python_interpreter (tests/unit/conftest.py); without the allowance it is refused
    monkeypatch.setenv('GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS', '')
    rc, out = _run(tmp_path, 'host_prep.yml')
    assert 'ansible_python_interpreter (given by the extra variables) is a variable Ansible reads' in out, out
    monkeypatch.setenv('GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS', 'ansible_python_interpreter')
    rc, out = _run(tmp_path, 'host_prep.yml')
    assert 'launch check' not in out and 'UNREACHABLE' in out, out


@pytest.mark.parametrize('args', [('--skip-tags', 'always'), ('--start-at-task', "Check the host's pool"),
                                  ('--tags', 'nothing')])
def test_no_option_of_the_command_line_skips_the_check_of_the_extra_variables(tmp_path, args):
    # the check runs in the play's hosts: template, which ansible-playbook evaluates whatever the tags and start
    rc, out = _run(tmp_path, 'host_prep.yml', *args, extra={'__vfio_files': {'modprobe': 'install x /bin/sh'}})
    assert rc != 0, out
    assert '__vfio_files (given by the extra variables) is internal' in out, out
    assert 'UNREACHABLE' not in out, out


def test_objects_given_at_launch_never_reach_a_cluster_phase(tmp_path):
    # the first hostile review's finding: k8s_objects_list, the option every cluster role hands its built objects
    # through, given as an extra variable added a MachineConfig with a root unit to the render
    evil = [{'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'MachineConfig',
             'metadata': {'name': '99-evil'}, 'spec': {}}]
    rc, out = _run(tmp_path, 'phase_operator.yml', extra={'k8s_objects_list': evil})
    assert rc != 0, out
    assert 'k8s_objects_list (given by the extra variables) is set by the collection' in out, out


@pytest.mark.parametrize('body', ['phase_nodes.yml', 'phase_kubevirt.yml', 'phase_vgpu_vf.yml', 'summary.yml'])
def test_a_phase_body_run_on_its_own_checks_the_extra_variables_too(tmp_path, body):
    rc, out = _run(tmp_path, body, extra={'node_labels_plan': {'patches': []}})
    assert rc != 0, out
    assert 'node_labels_plan (given by the extra variables) is set by the collection' in out, out


def test_the_controller_s_owner_may_allow_a_run_time_name_never_an_internal_one():
    allowed = frozenset(('verify_expected', '__vfio_files'))
    out = launch_vars.extra_var_problems(NAMES, {'verify_expected': [], '__vfio_files': {}}, (), allowed)
    assert len(out) == 1 and out[0].startswith('__vfio_files (given by the extra variables) is internal'), out
    assert launch_vars.extra_var_problems(NAMES, {'verify_expected': []}, (), frozenset())


# -- the inputs of one host: the inventory's, never the extra variables' ---------------------------------------------

def test_every_node_name_and_host_path_option_is_an_input_of_one_host():
    # the class, read from the argument specs (not the generated list, which is built from them): the node a role
    # drains, unlabels or guards, and every path on the host a host role reads, writes or runs
    # and the names playbooks/vars/playbook_inputs.yml declares so one by one (the pool, the node, the unit form)
    with open(os.path.join(ROOT, 'playbooks', 'vars', 'playbook_inputs.yml')) as handle:
        expected = set(yaml.safe_load(handle)['playbook_inputs_inventory_only'])
    assert {'gpuvirt_node_name', 'gpuvirt_pool', 'vgpu_vf_unit_type'} <= expected
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        spec = os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')
        with open(spec) as handle:
            for entry in (yaml.safe_load(handle)['argument_specs'] or {}).values():
                for name, option in (entry.get('options') or {}).items():
                    if name.endswith('_node_name') or option.get('type') == 'path':
                        expected.add(name)
    assert {'reboot_node_name', 'vfio_node_name', 'vgpu_vf_node_name', 'kernel_args_proc_cmdline',
            'kernel_args_record_path', 'vfio_sysfs_root', 'vgpu_vf_sysfs_root', 'nouveau_initramfs_dir'} <= expected
    assert set(launch_names.INVENTORY_ONLY) == expected


@pytest.mark.parametrize('name', sorted(launch_names.INVENTORY_ONLY))
def test_an_input_of_one_host_is_refused_as_an_extra_variable_and_taken_from_the_inventory(name):
    out = launch_vars.extra_var_problems(NAMES, {name: 'x'}, (), frozenset(('ansible_python_interpreter',)))
    assert out == ['%s (given by the extra variables) is an input of one host (its node name, its pool or a path on '
                   'it): as an extra variable it would apply to every host of the run; set it in the inventory, in '
                   "the host's host_vars (host_vars/<host>.yml or the host's entry)" % name], out
    # the inventory may give it, and the controller's owner may allow it (the test harnesses' temporary trees)
    assert launch_vars.problems(NAMES, {name: ['the inventory host gpu01']}) == []
    assert launch_vars.extra_var_problems(NAMES, {name: 'x'}, (), frozenset((name,))) == []


@pytest.mark.parametrize('playbook, extra, name', [
    # the reviewer's case: retire's reboot would drain master-0, its cluster plays unlabel and uncordon it
    ('retire.yml', {'retire_hosts': 'gpu01', 'gpuvirt_node_name': 'master-0'}, 'gpuvirt_node_name'),
    ('host_prep.yml', {'reboot_node_name': 'master-0'}, 'reboot_node_name'),
    # /proc/cmdline read from any file, its lines printed as reboot reasons
    ('host_prep.yml', {'kernel_args_proc_cmdline': '/etc/shadow', 'reboot_allowed': False}, 'kernel_args_proc_cmdline'),
    ('host_prep.yml', {'gpuvirt_pool': 'vm-passthrough'}, 'gpuvirt_pool'),
])
def test_an_input_of_one_host_given_at_launch_stops_the_run_before_any_host_is_contacted(
        tmp_path, monkeypatch, playbook, extra, name):
    monkeypatch.setenv('GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS', 'ansible_python_interpreter')
    rc, out = _run(tmp_path, playbook, extra=extra)
    assert rc != 0, out
    assert '%s (given by the extra variables) is an input of one host' % name in out, out
    assert 'UNREACHABLE' not in out, out
    # the value given is not repeated
    assert '/etc/shadow' not in out and 'master-0' not in out, out


@pytest.mark.parametrize('name, value', [
    # what the VF MachineConfig's restore runs as root at every boot on every node of a pool, and the tree it reads
    ('vgpu_vf_machineconfig_sriov_manage', '/usr/bin/perl'),
    ('vgpu_vf_machineconfig_sysfs_root', '/var/lib/x'),
    ('vgpu_vf_sriov_manage', '/usr/bin/perl'),
])
def test_paths_that_reach_a_node_s_boot_are_inventory_only(name, value):
    # an extra variable applies to every host of the run (and in AWX, to whoever may launch): a path that ends in a
    # unit, a config a root script reads, or an argv is a host's input, set in the inventory only
    said = launch_vars.extra_var_problems(NAMES, {name: value})
    assert said and name in said[0] and 'is an input of one host' in said[0], said


@pytest.mark.parametrize('args, named', [
    (('--skip-tags', 'always'), '--skip-tags always (in AWX, the job\'s skipped tags) would skip the check of the '
                                'inventory\'s variables'),
    (('--skip-tags', 'x,always'), '--skip-tags always'),
    (('--start-at-task', "Check the host's pool"), "--start-at-task \"Check the host's pool\" would skip the check"),
])
def test_an_option_that_would_skip_the_inventory_s_check_is_refused(tmp_path, args, named):
    # the inventory's own variables and the limit are judged by a task tagged always; a run that would skip it
    # is refused in the plays' hosts:, before any host is contacted, even with nothing wrong in the inventory
    rc, out = _run(tmp_path, 'host_prep.yml', *args)
    assert rc != 0, out
    assert named in out, out
    assert 'UNREACHABLE' not in out, out


def test_skipping_another_tag_is_no_refusal():
    assert launch_vars.skipping_options({'skip_tags': ('retire_host',), 'start_at_task': None}) == []
    assert launch_vars.skipping_options({}) == []
