#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: launch_check
short_description: Refuse a run given internal, run-time or unknown variables, or a limit that skips its checks
version_added: 0.1.0
description:
  - Judges the variables a run was given, before it changes anything - the extra variables (the command line's
    C(-e), an AWX survey or credential) and the inventory's own host and group variables - never the facts the run
    has set since, so every import of it gives the same answer.
  - Refuses, naming each variable and where it was given, a name of the collection's internal namespace
    (C(__) and one of the words its internal names start with, such as C(__vfio_files)), a name the collection sets
    itself during a run (a checked or computed value, such as C(vfio_selected) or C(gpuvirt_cluster)), a variable
    the collection no longer reads (with its replacement), and a variable with one of the collection's prefixes
    that no argument spec knows (with the closest known name). Extra variables beat set_fact and role variables, so
    any of these would replace a value after the collection checked it.
  - Refuses a limit that leaves out localhost, unless O(limit_may_leave_out_localhost) says the playbook has no
    localhost play that matters.
  - Runs on the controller only (an action plugin); contacts no host.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  limit_may_leave_out_localhost:
    description:
      - The playbook's host plays check their own inputs again, so a limit without localhost loses nothing
        (host_prep.yml). A literal in the playbook, never a variable; each playbook gives it (false where a play
        runs on localhost).
    type: bool
    required: true
notes:
  - Your own variables that start with one of the collection's prefixes can be listed in the inventory or extra
    variable C(gpuvirt_launch_allow_unknown); that never allows an internal or run-time name.
extends_documentation_fragment:
  - gpuvirt.provision.attributes.read_only
'''

EXAMPLES = r'''
- name: Refuse internal and unknown variables before any change
  gpuvirt.provision.launch_check:
  run_once: true
'''

RETURN = r'''
checked:
  description: How many distinct variable names the run was given (extra variables and inventory).
  returned: success
  type: int
  sample: 42
'''

from ansible.module_utils.basic import AnsibleModule


def main():
    # the work is the action plugin's (plugins/action/launch_check.py): it needs the controller's inventory
    module = AnsibleModule(argument_spec=dict(limit_may_leave_out_localhost=dict(type='bool', required=True)),
                           supports_check_mode=True)
    module.fail_json(msg='gpuvirt.provision.launch_check runs on the controller only (an action plugin)')


if __name__ == '__main__':
    main()
