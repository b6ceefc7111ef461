# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: launch_check
version_added: 0.1.0
short_description: A play's host pattern, returned only when the run's extra variables pass the launch check
description:
  - Judges the extra variables the run was given (the command line's C(-e), an AWX job's C(env/extravars)) as the
    action gpuvirt.provision.launch_check does, and fails naming each one refused; otherwise returns its terms.
  - Meant for a play's C(hosts:), which ansible-playbook templates whatever the tags (C(--skip-tags),
    C(--tags)), C(--start-at-task) and the limit, so no option of the command line skips it.
  - The inventory's own variables and the limit are judged by the action, the task of playbooks/launch_check.yml
    (tagged C(always)); so a run that would skip that task (C(--skip-tags always), C(--start-at-task)) is refused
    here, naming the option.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  _terms:
    description: The host pattern(s) to return.
    required: true
'''

EXAMPLES = r'''
- name: A play whose host selection first judges the extra variables
  hosts: "{{ lookup('gpuvirt.provision.launch_check', 'localhost') }}"
  tasks: []
'''

RETURN = r'''
_raw:
  description: The terms, unchanged.
  type: list
  elements: str
'''

import os

from ansible import constants as C
from ansible import context
from ansible.errors import AnsibleError, AnsibleLookupError
from ansible.plugins.loader import filter_loader
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display
from ansible.utils.vars import load_extra_vars

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import launch_vars
from ansible_collections.gpuvirt.provision.plugins.plugin_utils import lazy_import


# Any filter of this collection, looked up by its name, loads every file of plugins/filter (Ansible's Jinja2Loader
# scans the whole directory: a file may hold several filters), and the module_utils the filters use, which Ansible's
# collection loader compiles from source on every import. A task runs in a worker forked from the controller's
# process, so every task that called one of our filters paid that again: about a third of a cluster phase's run
# (docs/testing.md, "Where a run's time goes"). A play's host selection is templated in the controller's process
# before any of its tasks, so what is loaded here once (the filter files, then the modules their LazyModules stand
# for) every task's worker inherits, loaded.
_FILTERS_LOADED = []

# With fact injection on (Ansible's default), every fact a host's module returns is also a host variable that
# outranks the inventory: a host could name the node the reboot role drains (docs/security.md, "Facts a host
# returns"). The project's ansible.cfg turns it off; a run from elsewhere is warned, once per run.
INJECT_WARNING = ('gpuvirt.provision: INJECT_FACTS_AS_VARS is on, so a fact a GPU host returns can replace an '
                  'inventory variable of that host (docs/security.md, "Facts a host returns"). Set '
                  'inject_facts_as_vars = False in the [defaults] of your ansible.cfg, or '
                  'ANSIBLE_INJECT_FACT_VARS=False; the collection reads facts only as ansible_facts.<name>.')
_WARNED = []


def load_filters_once():
    """Load this collection's filter plugins into the controller's process (once); True if this call loaded them."""
    if _FILTERS_LOADED:
        return False
    _FILTERS_LOADED.append(True)
    try:
        filter_loader.get('gpuvirt.provision.strict_bool')
        lazy_import.load_all()
    except (AnsibleError, KeyError, ImportError):
        # not this lookup's error: a filter that cannot load fails where a task uses it, with Ansible's own message
        return False
    return True


def warn_fact_injection(display=None):
    """Warn once per run when facts become host variables; True if this call warned."""
    if _WARNED or not C.config.get_config_value('INJECT_FACTS_AS_VARS'):
        return False
    _WARNED.append(True)
    (display or Display()).warning(INJECT_WARNING)
    return True


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        extra = load_extra_vars(self._loader)
        names = launch_vars.collection_names()
        try:
            allowed = launch_vars.allowed_unknown_names(extra.get(launch_vars.ALLOW_VARIABLE))
        except ValueError as exc:
            raise AnsibleLookupError('launch check: %s. Nothing was changed.' % exc)
        problems = launch_vars.extra_var_problems(names, extra, allowed, launch_vars.allowed_extra_names(os.environ))
        problems += launch_vars.skipping_options(context.CLIARGS)
        if problems:
            raise AnsibleLookupError(
                'launch check: this run was given extra variables or command-line options it must not take:\n  - %s\n'
                'Nothing was changed (docs/security.md, "Launch time").' % '\n  - '.join(problems))
        warn_fact_injection()
        load_filters_once()
        return [str(term) for term in terms]
