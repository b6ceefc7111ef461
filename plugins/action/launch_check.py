# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for gpuvirt.provision.launch_check: runs on the controller only, contacts no host.

It reads what the run was given, not what the run has set since: the extra variables as the command line (or AWX)
passed them, and the inventory's own host and group variables (inline, group_vars/host_vars next to the inventory
and the playbook). Set facts and registered results live elsewhere, so the check gives the same answer in the first
play and in the last, and any number of imports of it agree.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.vars import load_extra_vars
from ansible.vars.plugins import get_vars_from_inventory_sources, get_vars_from_path

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import launch_vars


def given_variables(loader, inventory, playbook_dir):
    """({name: [where it was given]}, [values of gpuvirt_launch_allow_unknown]) for every inventory host's and
    group's own variables (inline, and the group_vars/host_vars beside the inventory and the playbook, as the vars
    plugins read them)."""
    given = {}
    allowed_values = []

    def add(variables, where):
        for name in variables or {}:
            given.setdefault(name, []).append(where)
        if launch_vars.ALLOW_VARIABLE in (variables or {}):
            allowed_values.append(variables[launch_vars.ALLOW_VARIABLE])

    if inventory is None:
        return given, allowed_values
    sources = getattr(inventory, '_sources', None) or []
    # the stage the variable manager reads the vars plugins at while tasks run (VariableManager.get_vars)
    stage = 'task'
    entities = [('group', group) for group in inventory.groups.values()]
    # every host of the inventory: also those a --limit leaves out (their variables still reach the fleet view
    # through groups and hostvars) and those outside this play's batch (the launch check's play runs on localhost)
    hosts = inventory.get_hosts(ignore_limits=True, ignore_restrictions=True)
    # and Ansible's implicit localhost, where the inventory does not list it: the cluster and render plays run
    # there, and the vars plugins give it host_vars/localhost.yml beside the inventory or the playbook all the same
    localhost = inventory.get_host('localhost')
    if localhost is not None and all(host is not localhost for host in hosts):
        hosts = list(hosts) + [localhost]
    entities += [('host', host) for host in hosts]
    for kind, entity in entities:
        own = dict(entity.get_vars())
        own.update(get_vars_from_inventory_sources(loader, sources, [entity], stage) or {})
        own.update(get_vars_from_path(loader, playbook_dir, [entity], stage) or {})
        add(own, 'the inventory %s %s' % (kind, entity.name))
    return given, allowed_values


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('limit_may_leave_out_localhost',))

    def _given(self):
        variable_manager = self._task.get_variable_manager()
        # the inventory object has no public getter on the variable manager; ansible-core is pinned
        # (requirements.txt) and tests/unit/trust/test_launch_check.py runs this through the real ansible-playbook
        inventory = getattr(variable_manager, '_inventory', None) if variable_manager else None
        return given_variables(self._loader, inventory, self._loader.get_basedir())

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        # no default: each playbook that runs the check says whether its plays may run without localhost
        may_leave_out = self._task.args.get('limit_may_leave_out_localhost')
        if not isinstance(may_leave_out, bool):
            raise AnsibleActionFail('launch_check: limit_may_leave_out_localhost must be given, a literal boolean '
                                    '(true only where no play of the playbook runs on localhost)')

        extra = load_extra_vars(self._loader)
        given, allowed_values = self._given()
        if launch_vars.ALLOW_VARIABLE in extra:
            allowed_values.append(extra[launch_vars.ALLOW_VARIABLE])
        allowed = []
        try:
            for value in allowed_values:
                allowed.extend(launch_vars.allowed_unknown_names(value))
        except ValueError as exc:
            raise AnsibleActionFail('launch_check: %s. Nothing was changed.' % exc)
        names = launch_vars.collection_names()
        problems = launch_vars.extra_var_problems(names, extra, allowed, launch_vars.allowed_extra_names(os.environ))
        problems += launch_vars.problems(names, given, allowed)

        limit = task_vars.get('ansible_limit')
        play_hosts = task_vars.get('ansible_play_hosts_all') or []
        if limit and not may_leave_out and 'localhost' not in play_hosts:
            problems.append(
                'the limit %r leaves out localhost, where this playbook checks its inputs, loads saved facts and talks '
                'to the cluster: those plays would be skipped and the hosts contacted live. Add localhost to the '
                "limit (-l '%s,localhost'; in AWX the job's Limit)" % (limit, limit))
        if problems:
            raise AnsibleActionFail(
                'launch check: this run was given variables it must not take, or a limit it cannot honour:\n  - %s\n'
                'Nothing was changed (docs/security.md, "Launch time").' % '\n  - '.join(problems))
        result.update(changed=False, checked=len(set(given) | set(extra)), msg='launch variables and limit checked')
        return result
