# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch-time boundary: which variables a run may be given, judged before its first play does anything.

Extra variables beat every other variable in Ansible, set_fact and include_role vars included. So a value the
collection computes or checks during a run (an internal fact, a registered result, a play's own variable) could be
replaced by whoever launches the job, after its check and before its use. The rule: a run is refused, naming the
variable and where it was given, when the inventory or the extra variables define

- a name of the collection's internal namespace: ``__`` followed by one of the words its internal names start
  with (``__vfio_files``, ``__gpuvirt_...``; ``INTERNAL_PREFIXES``);
- a name the collection sets itself during a run (``RUNTIME_NAMES``, generated from the roles and playbooks by
  tools/launch_names.py: set_fact keys, registered results, loop variables, play and task vars) that is not also
  an input a user may give;
- a name with one of the collection's variable prefixes that no argument spec knows (a misspelt input is silently
  ignored otherwise): refused with the closest known name.

Extra variables are judged harder than the inventory, since they beat facts and Ansible's own variables too: a
name Ansible reads itself (``ansible_*``: the connection, the become program, the interpreter, the facts) or one of
its special variables (``inventory_dir``, ``group_names``, ``hostvars``, ...) given as an extra variable would choose
the command run to reach a host, the code run on it, or the facts the roles derive from. They are refused unless
the controller's owner allows them by name in the environment variable GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS (which a job
launcher does not set; the test harnesses allow ansible_python_interpreter). The same variable may name a run-time
name too (a harness that gives a phase what an earlier phase would have computed), never an internal __ name.

The inputs of one host (``INVENTORY_ONLY``: its node name and pool, every role's ``*_node_name``, and the paths on
the host the host roles read, write and run - /proc/cmdline, the sysfs and proc roots, the boot and config files,
the ownership record) are inputs, but given as extra variables they would apply to every host of the run: one
node name drained, unlabelled and guarded for all of them, /proc/cmdline read from any file. They are refused as
extra variables, naming the variable and the host_vars to set it in; the same environment variable allows them (the
test harnesses point the host roles at temporary trees).

Plain Python (no Ansible import; the names come from the generated launch_names module); the action plugin
and lookup gpuvirt.provision.launch_check collect the names.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import launch_names

# a variable name as Ansible accepts one; anything else is not ours to judge
_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')

ALLOW_EXTRA_ENV = 'GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS'
ALLOW_VARIABLE = 'gpuvirt_launch_allow_unknown'
# Ansible's special variables (its "Special Variables" reference) an extra variable would replace for every host
SPECIAL = frozenset((
    'group_names', 'groups', 'hostvars', 'inventory_dir', 'inventory_file', 'inventory_hostname',
    'inventory_hostname_short', 'omit', 'play_hosts', 'playbook_dir', 'role_name', 'role_names', 'role_path',
    'environment', 'vars', 'item'))


def ansible_owned(name):
    """True for a name Ansible itself reads or sets: ansible_* (connection, become, interpreter, facts) and its
    special variables."""
    return isinstance(name, str) and (name.lower().startswith('ansible_') or name in SPECIAL)


def allowed_extra_names(environ):
    """The ansible_* / special names the controller's owner allows as extra variables (comma-separated)."""
    return frozenset(n.strip() for n in (environ.get(ALLOW_EXTRA_ENV) or '').split(',') if n.strip())


class LaunchNames(object):
    """What the collection knows about variable names (built from the generated launch_names module)."""

    def __init__(self, known, runtime, prefixes, internal_prefixes, removed=None, inventory_only=()):
        self.known = frozenset(known)
        # inputs of one host: the inventory's, never an extra variable's (extra_var_problems)
        self.inventory_only = frozenset(inventory_only)
        # judged before the known inputs: a role option a play feeds is the play's, not the launcher's
        self.runtime = frozenset(runtime)
        # longest first, so the regex prefers vgpu_manager_image_ over vgpu_
        self.prefixes = tuple(sorted(set(prefixes), key=lambda p: (-len(p), p)))
        self.removed = dict(removed or {})
        alternatives = '|'.join(re.escape(p) for p in self.prefixes)
        self._ours = re.compile(r'(?:%s)_[A-Za-z0-9_]+' % alternatives)
        internal = '|'.join(re.escape(p) for p in sorted(set(internal_prefixes), key=lambda p: (-len(p), p)))
        self._internal = re.compile(r'__+(?:%s)(?:_[A-Za-z0-9_]*)?' % internal)

    def verdict(self, name):
        """'internal', 'runtime', 'removed', 'unknown' or None (fine) for one variable name."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            return None
        if self._internal.fullmatch(name):
            return 'internal'
        if name in self.runtime:
            return 'runtime'
        if name in self.known:
            return None
        if name in self.removed:
            return 'removed'
        if self._ours.fullmatch(name):
            return 'unknown'
        return None

    def closest(self, name):
        """The known input most like name, or ''."""
        match = difflib.get_close_matches(name, sorted(self.known), n=1, cutoff=0.75)
        return match[0] if match else ''


def extra_var_problems(names, extra_vars, allowed_unknown=(), allowed_ansible=()):
    """problems() for the extra variables alone, plus Ansible's own names (see the module's docstring)."""
    # the controller's owner may allow a run-time name too (a test harness giving verify its expectations); an
    # internal __ name never
    out = problems(names, dict((name, ['the extra variables']) for name in extra_vars
                               if not (name in allowed_ansible and names.verdict(name) == 'runtime')), allowed_unknown)
    for name in sorted(extra_vars, key=str):  # a YAML key may be an int: sorted by its text
        if ansible_owned(name) and name not in allowed_ansible:
            out.append('%s (given by the extra variables) is a variable Ansible reads itself (the connection, become, '
                       'interpreter, facts or a special variable): as an extra variable it would override it for '
                       'every host; set it in the inventory instead, or allow it on the controller in %s'
                       % (name, ALLOW_EXTRA_ENV))
        elif name in names.inventory_only and name not in allowed_ansible and names.verdict(name) is None:
            out.append('%s (given by the extra variables) is an input of one host (its node name, its pool or a path '
                       'on it): as an extra variable it would apply to every host of the run; set it in the '
                       "inventory, in the host's host_vars (host_vars/<host>.yml or the host's entry)"
                       % name)
    return out


def skipping_options(cliargs):
    """The command line's options that would skip the launch check's task (the inventory's variables and the
    limit), each as a refusal; [] when none."""
    out = []
    if 'always' in (cliargs.get('skip_tags') or ()):
        out.append('--skip-tags always (in AWX, the job\'s skipped tags) would skip the check of the inventory\'s '
                   'variables and of the limit, a task tagged always; leave always out of the skipped tags')
    if cliargs.get('start_at_task'):
        out.append('--start-at-task %r would skip the check of the inventory\'s variables and of the limit (the '
                   'first task of the run); run the playbook from its start' % (cliargs.get('start_at_task'),))
    return out


def collection_names():
    """The LaunchNames of this collection (the generated launch_names module)."""
    return LaunchNames(launch_names.KNOWN, launch_names.RUNTIME, launch_names.PREFIXES, launch_names.INTERNAL_PREFIXES,
                       launch_names.REMOVED, launch_names.INVENTORY_ONLY)


def problems(names, given, allowed_unknown=()):
    """Judge every variable the run was given.

    names: a LaunchNames; given: {variable name: [where it was given, ...]} (extra variables, an inventory host
    or group); allowed_unknown: names the user declared their own (gpuvirt_launch_allow_unknown). An allowance
    never lifts the refusal of an internal or run-time name. Returns sorted message lines, empty when all is well.
    """
    allowed = frozenset(allowed_unknown)
    out = []
    for name in sorted(given, key=str):
        verdict = names.verdict(name)
        if verdict is None or (verdict == 'unknown' and name in allowed):
            continue
        where = ', '.join(sorted(set(given[name]))[:3])
        more = len(set(given[name])) - 3
        if more > 0:
            where += ' and %d more' % more
        if verdict == 'internal':
            out.append('%s (given by %s) is internal to the collection: a run sets it itself, after checking what '
                       'it holds; remove it' % (name, where))
        elif verdict == 'runtime':
            out.append('%s (given by %s) is set by the collection during the run (a computed or checked value, '
                       'not an input); remove it' % (name, where))
        elif verdict == 'removed':
            out.append('%s (given by %s) is no longer read; set %s instead' % (name, where, names.removed[name]))
        else:
            hint = names.closest(name)
            out.append('%s (given by %s) is not a variable of the collection%s; if it is your own, list it in '
                       'gpuvirt_launch_allow_unknown'
                       % (name, where, ' (did you mean %s?)' % hint if hint else ''))
    return out


def allowed_unknown_names(value):
    """gpuvirt_launch_allow_unknown as a list of names; raises ValueError naming the variable otherwise."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError('gpuvirt_launch_allow_unknown must be a list of variable names, got %r' % (value,))
    bad = [v for v in value if not isinstance(v, str) or not _NAME.fullmatch(v)]
    if bad:
        raise ValueError('gpuvirt_launch_allow_unknown: %s are not variable names' % ', '.join(repr(b) for b in bad))
    return list(value)
