"""Generate plugins/module_utils/model/launch_names.py: the variable names the launch check judges.

  tools/launch_names.py           write the module
  tools/launch_names.py --check   exit 1 when the module is stale (tests/unit/trust/test_launch_check.py runs it)

Read from the repository, never typed by hand:
- KNOWN: every option of every role's meta/argument_specs.yml (all entry points), of the plays' run inputs
  (playbooks/vars/run_inputs.yml) and of the variables the playbooks themselves read
  (playbooks/vars/playbook_inputs.yml);
- RUNTIME: every name the collection sets during a run: set_fact keys, registered results, loop variables, the
  vars of plays, tasks, blocks and role includes, and the keys of playbooks/vars and roles/*/vars files - a role
  option a play feeds included, but for the inputs playbook_inputs.yml declares passed along;
- INTERNAL_PREFIXES: the first word of every ``__`` name the roles and playbooks use;
- PREFIXES: the collection's variable prefixes (gpuvirt, each role's name, the playbooks' own host_prep and
  vgpu_image);
- REMOVED: the per-role cluster variables the collection-wide settings replaced (the cluster role's own map);
- INVENTORY_ONLY: the inputs of one host that only the inventory may give (an extra variable applies to every
  host): every role option named ``*_node_name`` or of type ``path``, and those
  playbooks/vars/playbook_inputs.yml declares (playbook_inputs_inventory_only).
"""
import argparse
import pathlib
import re
import sys

import jinja2
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / 'plugins/module_utils/model/launch_names.py'
PLAYBOOK_PREFIXES = ('gpuvirt', 'host_prep', 'retire', 'vgpu_image')
SET_FACT = ('ansible.builtin.set_fact', 'set_fact')
INCLUDES = ('ansible.builtin.include_role', 'ansible.builtin.import_role', 'include_role', 'import_role',
            'ansible.builtin.include_tasks', 'ansible.builtin.import_tasks')


def _load(path):
    return yaml.safe_load(path.read_text(encoding='utf-8'))


def _task_names(tasks, out):
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        for key in ('block', 'rescue', 'always'):
            _task_names(task.get(key), out)
        if isinstance(task.get('register'), str):
            out.add(task['register'])
        for module in SET_FACT:
            if isinstance(task.get(module), dict):
                out.update(k for k in task[module] if k != 'cacheable')
        if isinstance(task.get('vars'), dict):
            out.update(task['vars'])
        loop_control = task.get('loop_control')
        if isinstance(loop_control, dict):
            out.update(loop_control[k] for k in ('loop_var', 'index_var') if isinstance(loop_control.get(k), str))
        for module in INCLUDES:
            if isinstance(task.get(module), dict) and isinstance(task[module].get('vars'), dict):
                out.update(task[module]['vars'])


def runtime_names():
    out = set()
    for path in sorted(ROOT.glob('roles/*/tasks/**/*.yml')) + sorted(ROOT.glob('roles/*/handlers/**/*.yml')):
        _task_names(_load(path), out)
    for path in sorted(ROOT.glob('playbooks/*.yml')):
        for play in _load(path) or []:
            if not isinstance(play, dict):
                continue
            if isinstance(play.get('vars'), dict):
                out.update(play['vars'])
            for key in ('pre_tasks', 'tasks', 'post_tasks', 'handlers'):
                _task_names(play.get(key), out)
    for path in sorted(ROOT.glob('playbooks/vars/*.yml')) + sorted(ROOT.glob('roles/*/vars/*.yml')):
        out.update(_load(path) or {})
    return out


def known_names():
    out = set()
    for path in sorted(ROOT.glob('roles/*/meta/argument_specs.yml')):
        for entry in ((_load(path) or {}).get('argument_specs') or {}).values():
            out.update((entry or {}).get('options') or {})
    out.update(_load(ROOT / 'playbooks/vars/run_inputs.yml')['run_inputs_argument_spec'])
    out.update(_load(ROOT / 'playbooks/vars/playbook_inputs.yml')['playbook_inputs_argument_spec'])
    return out


def internal_prefixes():
    out = set()
    word = re.compile(r'(?<![A-Za-z0-9_])__([a-z][a-z0-9]*)_[a-z0-9_]')
    for path in sorted(ROOT.glob('roles/**/*.yml')) + sorted(ROOT.glob('playbooks/**/*.yml')):
        out.update(word.findall(path.read_text(encoding='utf-8')))
    return out


def removed_names():
    """The cluster role's map of removed variables, rendered from its own task (one source)."""
    for task in _load(ROOT / 'roles/cluster/tasks/main.yml'):
        task_vars = task.get('vars') or {}
        if '__cluster_removed_map' in task_vars:
            env = jinja2.Environment()
            text = env.from_string(task_vars['__cluster_removed_map']).render(
                __cluster_roles=task_vars['__cluster_roles'])
            return yaml.safe_load(text)
    raise SystemExit('launch_names: the cluster role no longer defines __cluster_removed_map')


def inventory_only_names():
    """The inputs of one host: its node name and pool, and the paths on the host the host roles read, write and run
    (the kernel's /proc/cmdline, sysfs and proc roots, boot and config files, the ownership record, programs)."""
    out = set(_load(ROOT / 'playbooks/vars/playbook_inputs.yml')['playbook_inputs_inventory_only'])
    for path in sorted(ROOT.glob('roles/*/meta/argument_specs.yml')):
        for entry in ((_load(path) or {}).get('argument_specs') or {}).values():
            for name, option in ((entry or {}).get('options') or {}).items():
                if name.endswith('_node_name') or (option or {}).get('type') == 'path':
                    out.add(name)
    return out


def passed_along():
    """The inputs a play also sets for a role it includes, declared one by one (playbooks/vars/playbook_inputs.yml)."""
    return set(_load(ROOT / 'playbooks/vars/playbook_inputs.yml')['playbook_inputs_passed_along'])


def render():
    known = known_names()
    # a name the collection sets during a run is run-time even when a role's spec also lists it (a role input a
    # play feeds), unless it is declared an input a user gives
    data = {
        'KNOWN': sorted(known),
        'RUNTIME': sorted(runtime_names() - passed_along()),
        'INTERNAL_PREFIXES': sorted(internal_prefixes()),
        'PREFIXES': sorted(set(PLAYBOOK_PREFIXES) | {p.name for p in ROOT.glob('roles/*') if p.is_dir()}),
        'REMOVED': dict(sorted(removed_names().items())),
        'INVENTORY_ONLY': sorted(inventory_only_names()),
    }
    lines = [
        '# -*- coding: utf-8 -*-',
        '# Copyright: gpuvirt.provision maintainers',
        '# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)',
        '# Generated by tools/launch_names.py from the roles and playbooks: do not edit (make docs writes it).',
        '"""The variable names the launch check judges (model/launch_vars.py)."""',
        'from __future__ import absolute_import, division, print_function',
        '',
        '__metaclass__ = type',
        '',
    ]
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append('%s = {' % key)
            lines += ['    %r: %r,' % (k, v) for k, v in value.items()]
            lines.append('}')
        else:
            lines.append('%s = (' % key)
            lines += ['    %r,' % item for item in value]
            lines.append(')')
        lines.append('')
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--check', action='store_true')
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.is_file() or OUT.read_text(encoding='utf-8') != text:
            sys.stderr.write('%s is stale: run tools/launch_names.py (make docs)\n' % OUT.relative_to(ROOT))
            return 1
        return 0
    OUT.write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
