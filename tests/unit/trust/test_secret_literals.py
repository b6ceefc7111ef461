# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets are protected by literals. Extra variables beat every other variable in Ansible (set_fact, include_role
vars, block vars), so a protection that reads a variable can be switched off by whoever launches the job: the
registry pull Secret used to be printed, and rendered 0644, with ``-e k8s_objects_no_log=false``. So, in every task
file under roles/ and playbooks/:

- ``no_log`` is a YAML boolean wherever it is set (task, block or play), never a template;
- a task (or a block's own keywords, such as its vars) that references a credential has a literal ``no_log: true``,
  its own or its enclosing block's or play's;
- a task that writes a file holding a Secret gives a literal mode that only the owner may read.

The credentials are listed once, below: the options the argument specs declare ``no_log: true`` (a sub-option
names its key), the internal facts that carry them, and, in the k8s_objects task files for a list that holds a
Secret, that list. References that cannot reveal the value are allowed: its length, a test such as ``is defined``,
and the needle of a mask (``replace(password or 'sentinel', '********')``)."""
from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]

# Internal facts that carry a credential, with what they hold. test_every_fact_set_from_a_credential_is_classified
# keeps this list complete: a fact a task sets from a credential must be here or in NOT_CARRIERS.
CARRIERS = {
    '__gpu_operator_secret': 'the registry pull Secret gpu_operator builds from gpu_operator_pull_secret',
    '__vgpu_manager_image_pull_secret_built': 'the pull Secret vgpu_manager_image builds from its password',
    'vgpu_manager_image_pull_secret_manifest': 'the same Secret, kept for the caller',
    # k8s_objects_apply returns names only for such a list and echoes no Secret, but its task had one as argument
    '__k8s_objects_secret_applied': 'the apply of a list holding a Secret',
    '__k8s_objects_secret_rendered': "the render of a Secret (its diff)",
}
# Facts set by a task that references a credential but that do not carry it, and why.
NOT_CARRIERS = {
    '__vgpu_manager_image_login': "podman login's output: the password went in on standard input only",
    '__vgpu_manager_image_docker_login': "docker_login's result: the registry and the user",
    '__k8s_objects_result': 'the names of the objects applied or the paths of the files rendered',
}
# Task files whose object list may hold a Secret: k8s_objects sends a list there when k8s_holds_secret says so.
FILE_CREDENTIALS = {
    'roles/k8s_objects/tasks/render_secret.yml': {'k8s_objects_list'},
    'roles/k8s_objects/tasks/apply_secret.yml': {'k8s_objects_list'},
}
# Modules that write a file, and the mode a file holding a Secret may have: the owner's alone.
WRITERS = {'gpuvirt.provision.render_manifests', 'gpuvirt.provision.render_file', 'ansible.builtin.copy',
           'ansible.builtin.template'}
PRIVATE_MODE = re.compile(r'0?[0-7]00')

CONDITIONAL_KEYS = {'when', 'that', 'until', 'changed_when', 'failed_when'}
JINJA = re.compile(r'\{\{(.*?)\}\}|\{%-?(.*?)-?%\}', re.S)
STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
# the value as the needle of a mask: whatever it matched is replaced, so the result never holds it
MASK = re.compile(r"replace\(\s*(\w+)(?:\s+or\s+'[^']*')?\s*,\s*'\*+'\s*\)")
# what may follow a credential and reveal nothing of it: its length (after a default), or a test
HARMLESS_AFTER = re.compile(r"\s*(?:\|\s*default\([^()]*\)\s*)?\|\s*length\b"
                            r"|\s+is\s+(?:not\s+)?(?:defined|undefined|none|skipped|failed|succeeded|changed)\b")
ATTRIBUTE = re.compile(r"\s*\.(\w+)")
QUOTED_KEY = re.compile(r"\[\s*['\"](\w+)['\"]\s*\]")
BLOCK_KEYS = ('block', 'rescue', 'always')
PLAY_TASK_KEYS = ('pre_tasks', 'tasks', 'post_tasks', 'handlers')


def _load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def spec_credentials():
    """{variable: None (the whole value is secret) or {secret keys}} from every argument spec's no_log options."""
    options = []
    for path in sorted(ROOT.glob('roles/*/meta/argument_specs.yml')):
        for entry in (_load(path)['argument_specs'] or {}).values():
            options.extend((entry.get('options') or {}).items())
    options.extend(_load(ROOT / 'playbooks' / 'vars' / 'run_inputs.yml')['run_inputs_argument_spec'].items())
    found = {}
    for name, option in options:
        if option.get('no_log'):
            found[name] = None
        else:
            keys = {k for k, sub in (option.get('options') or {}).items() if sub.get('no_log')}
            if keys:
                found[name] = keys
    return found


SPEC_CREDENTIALS = spec_credentials()
CREDENTIALS = dict(SPEC_CREDENTIALS, **{name: None for name in CARRIERS})


def task_files():
    # playbooks/vars/ holds variables, not tasks
    return sorted(list(ROOT.glob('roles/*/tasks/**/*.yml')) + list(ROOT.glob('roles/*/handlers/*.yml'))
                  + list(ROOT.glob('playbooks/*.yml')))


def walk(nodes, inherited=None, in_play=False):
    """(node, kind, effective no_log) for every play, block and task in a task file or playbook."""
    for node in nodes or []:
        if not isinstance(node, dict):
            continue
        # a template for no_log protects nothing (the first rule reports it): the enclosing literal stays in force
        own = node['no_log'] if isinstance(node.get('no_log'), bool) else inherited
        if not in_play and 'hosts' in node:
            yield node, 'play', own
            for key in PLAY_TASK_KEYS:
                yield from walk(node.get(key), own, True)
        elif any(k in node for k in BLOCK_KEYS):
            yield node, 'block', own
            for key in BLOCK_KEYS:
                yield from walk(node.get(key), own, True)
        elif 'import_playbook' not in node:
            yield node, 'task', own


def expressions(node, key=None):
    """Every Jinja expression in a node: conditionals whole, other strings' {{ }} and {% %} (not a block's tasks)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k not in BLOCK_KEYS + PLAY_TASK_KEYS:
                yield from expressions(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from expressions(v, key)
    elif isinstance(node, str):
        if key in CONDITIONAL_KEYS:
            yield node
        for m in JINJA.finditer(node):
            yield m.group(1) if m.group(1) is not None else m.group(2)


def references(node, credentials):
    """(credential, expression) for each use of a credential in a node that could reveal its value."""
    name = re.compile(r'(?<![\w.])(%s)(?!\w)' % '|'.join(map(re.escape, sorted(credentials, key=len, reverse=True))))
    found = []
    for expr in expressions(node):
        code = MASK.sub('replace(masked)', expr)
        code = QUOTED_KEY.sub(r'.\1', code)
        code = STRING_LITERAL.sub("''", code)  # prose in a string is no reference
        for m in name.finditer(code):
            secret_keys, end = credentials[m.group(1)], m.end()
            access = ATTRIBUTE.match(code, end)
            if secret_keys is not None and access is not None:
                if access.group(1) not in secret_keys:
                    continue  # another key of the mapping
                end = access.end()
            if not HARMLESS_AFTER.match(code, end):
                found.append((m.group(1), ' '.join(expr.split())))
    return found


def facts_set(node):
    names = set()
    if isinstance(node.get('register'), str):
        names.add(node['register'])
    for module in ('ansible.builtin.set_fact', 'set_fact'):
        if isinstance(node.get(module), dict):
            names.update(k for k in node[module] if k != 'cacheable')
    return names


def module_of(node):
    """The task's module when it is a file writer (by its full or its short name)."""
    short = {w.rsplit('.', 1)[-1]: w for w in WRITERS}
    return next((k for k in node if k in WRITERS or k in short), None)


def problems(rel, documents, known=None):
    """Every breach of the three rules in one parsed file."""
    credentials = dict(known or CREDENTIALS, **{name: None for name in FILE_CREDENTIALS.get(rel, ())})
    bad = []
    for node, kind, no_log in walk(documents):
        label = '%s: %s %r' % (rel, kind, node.get('name', node.get('import_playbook', '?')))
        if 'no_log' in node and not isinstance(node['no_log'], bool):
            bad.append('%s: no_log is %r, not a literal true or false; a variable here can be set with -e'
                       % (label, node['no_log']))
        if kind == 'play':
            continue
        used = references(node, credentials)
        if used and no_log is not True:
            bad.append('%s references %s without a literal no_log: true' % (label, sorted({u[0] for u in used})))
        module = module_of(node) if kind == 'task' else None
        # a writer that handles a credential, or protects its output in any form, writes a Secret
        if module and (used or no_log is True or 'no_log' in node):
            mode = (node[module] or {}).get('mode') if isinstance(node[module], dict) else None
            if not (isinstance(mode, str) and PRIVATE_MODE.fullmatch(mode)):
                bad.append('%s writes a Secret with mode %r; give a literal mode only the owner may read, such as '
                           '"0600"' % (label, mode))
    return bad


FILES = task_files()


@pytest.mark.parametrize('path', FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_secrets_are_protected_by_literals(path):
    rel = str(path.relative_to(ROOT))
    bad = problems(rel, _load(path))
    assert not bad, '\n'.join(bad)


def test_the_credential_list_comes_from_the_argument_specs():
    # the rule is only as good as its list: the registry passwords of both roles must be in it, found in the specs
    assert SPEC_CREDENTIALS['vgpu_manager_image_registry_password'] is None
    assert SPEC_CREDENTIALS['gpu_operator_pull_secret'] == {'password'}


def test_every_fact_set_from_a_credential_is_classified():
    """A fact set or registered by a task that handles a credential carries it, unless shown otherwise."""
    unclassified = []
    for path in FILES:
        rel = str(path.relative_to(ROOT))
        credentials = dict(CREDENTIALS, **{name: None for name in FILE_CREDENTIALS.get(rel, ())})
        for node, kind, _no_log in walk(_load(path)):
            if kind == 'task' and references(node, credentials):
                unclassified += ['%s: %s' % (rel, n) for n in facts_set(node) - set(CARRIERS) - set(NOT_CARRIERS)]
    assert not unclassified, unclassified
    # and every name listed is still set somewhere: a stale entry would hide a renamed fact
    text = '\n'.join(p.read_text() for p in FILES)
    assert [n for n in list(CARRIERS) + list(NOT_CARRIERS) if not re.search(r'\b%s:|register: %s\b' % (n, n), text)] \
        == []


CREDS = {'vgpu_manager_image_registry_password': None, 'gpu_operator_pull_secret': {'password'},
         '__gpu_operator_secret': None}


@pytest.mark.parametrize('task, expected', [
    # the finding: a template for no_log
    ({'name': 't', 'x': {}, 'no_log': '{{ k8s_objects_no_log }}'}, ['no_log is']),
    # a credential handed to a module without no_log
    ({'name': 't', 'x': {'password': '{{ vgpu_manager_image_registry_password }}'}}, ['references']),
    ({'name': 't', 'x': {'password': '{{ vgpu_manager_image_registry_password }}'}, 'no_log': True}, []),
    # the secret key of a mapping; its other keys, its length and a mask reveal nothing
    ({'name': 't', 'x': {'p': "{{ gpu_operator_pull_secret.password | default('') }}"}}, ['references']),
    ({'name': 't', 'x': {'p': "{{ gpu_operator_pull_secret['password'] }}"}}, ['references']),
    ({'name': 't', 'x': {'p': '{{ gpu_operator_pull_secret }}'}}, ['references']),
    ({'name': 't', 'x': {'p': "{{ gpu_operator_pull_secret.registry | default('') }}"}}, []),
    ({'name': 't', 'x': {'p': "{{ gpu_operator_pull_secret.password | default('') | length > 0 }}"}}, []),
    ({'name': 't', 'x': {}, 'when': 'gpu_operator_pull_secret | length > 0'}, []),
    ({'name': 't', 'x': {'m': "{{ e | replace(vgpu_manager_image_registry_password or 's', '********') }}"}}, []),
    ({'name': 't', 'x': {'m': "{{ e | replace(vgpu_manager_image_registry_password or 's', 'xx') }}"}},
     ['references']),
    ({'name': 't', 'x': {'m': "{% set err = vgpu_manager_image_registry_password %}{{ err }}"}}, ['references']),
    # prose naming the variable is no reference
    ({'name': 't', 'x': {'msg': 'set vgpu_manager_image_registry_password'}}, []),
    # a block's vars carrying it, protected by the block's literal no_log, or not
    ({'block': [{'name': 't', 'x': {}}], 'vars': {'m': '{{ vgpu_manager_image_registry_password }}'}},
     ['references']),
    ({'block': [{'name': 't', 'x': {'a': '{{ __gpu_operator_secret.object }}'}}], 'no_log': True}, []),
    ({'block': [{'name': 't', 'x': {'a': '{{ __gpu_operator_secret.object }}'}, 'no_log': False}], 'no_log': True},
     ['references']),
    # a Secret written with a mode that is not a literal, or one others may read
    ({'name': 't', 'gpuvirt.provision.render_manifests': {'objects': ['{{ __gpu_operator_secret.object }}'],
                                                          'mode': "{{ '0600' if x else '0644' }}"}, 'no_log': True},
     ['writes a Secret']),
    ({'name': 't', 'gpuvirt.provision.render_manifests': {'objects': ['{{ __gpu_operator_secret.object }}'],
                                                          'mode': '0644'}, 'no_log': True}, ['writes a Secret']),
    ({'name': 't', 'gpuvirt.provision.render_manifests': {'objects': ['{{ __gpu_operator_secret.object }}'],
                                                          'mode': '0600'}, 'no_log': True}, []),
    ({'name': 't', 'copy': {'content': '{{ vgpu_manager_image_registry_password }}', 'dest': '/x'}, 'no_log': True},
     ['writes a Secret']),
    # the finding's render task: both its no_log and its mode followed a variable
    ({'name': 't', 'gpuvirt.provision.render_manifests': {'objects': '{{ k8s_objects_list }}',
                                                          'mode': "{{ '0600' if f.no_log else '0644' }}"},
      'no_log': '{{ f.no_log }}'}, ['no_log is', 'writes a Secret']),
])
def test_the_rule_itself(task, expected):
    found = problems('x.yml', [task], CREDS)
    assert [next(e for e in expected if e in f) for f in found] == expected, found


# A VirtualMachine's spec carries its guest's cloud-init userData (passwords, keys, tokens of the tenant), and a
# VirtualMachineInstance's spec a copy of it: a read of either kind (k8s_info), or a write that returns the object
# (k8s state patched), prints it into the job's output at -v. Every such task has a literal no_log: true, its own
# or its block's; the messages that name VMIs are computed in later tasks from the registered result (which no_log
# does not censor, nor ansible_failed_result.msg in a rescue).
TENANT_KINDS = {'VirtualMachine', 'VirtualMachineInstance'}
K8S_MODULES = {'kubernetes.core.k8s_info', 'kubernetes.core.k8s', 'kubernetes.core.k8s_json_patch',
               'k8s_info', 'k8s', 'k8s_json_patch'}


def tenant_object_tasks():
    for path in FILES:
        rel = str(path.relative_to(ROOT))
        for node, kind, no_log in walk(_load(path)):
            if kind != 'task':
                continue
            module = next((k for k in node if k in K8S_MODULES), None)
            if module and isinstance(node[module], dict) and node[module].get('kind') in TENANT_KINDS:
                yield rel, node.get('name'), no_log


def test_every_read_or_write_of_a_vm_or_vmi_is_no_log():
    found = list(tenant_object_tasks())
    # the reads the hostile review named are among them (the walk finds them; a rename must not empty the test)
    assert {'roles/upgrade/tasks/read.yml', 'roles/vgpu_vf/tasks/leave.yml', 'roles/vfio/tasks/absent.yml',
            'roles/node_labels/tasks/main.yml'} <= {rel for rel, dummy, dummy2 in found}, found
    assert [(rel, name) for rel, name, no_log in found if no_log is not True] == []
