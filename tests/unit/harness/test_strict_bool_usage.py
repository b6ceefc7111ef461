"""Every boolean flag a user sets (inventory, survey, -e) goes through strict_bool.

Ansible's own ``bool`` filter turns a typo such as ``"flase"`` or ``"off "`` into
False without a word, so a flag read with ``| default(...) | bool`` can silently
disable a step.  Read raw, a flag is worse: ``-e kernel_args_iommu_passthrough=false``
arrives as the string "false" (ansible-core 2.19 keeps extra vars as strings, and a
role's argument spec validates but does not convert them), and a non-empty string
is true in ``when:`` or ``x if flag else y``.  So every flag declared ``type: bool``
in a role's meta/argument_specs.yml, and every boolean gpuvirt_* flag of the
playbooks, is read only through ``gpuvirt.provision.strict_bool``, which coerces
"false"/"no"/"0" and refuses what is not a boolean, naming the variable.
"""
import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
# user input read with a default, then Ansible's lenient bool
LENIENT = re.compile(r'default\([^)]*\)\s*\|\s*bool\b')
FILES = sorted(p for p in list(ROOT.glob('roles/*/tasks/*.yml')) + [ROOT / 'playbooks' / n for n in ('phase_kubevirt.yml', 'gather.yml')])


@pytest.mark.parametrize('path', FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_flags_use_strict_bool(path):
    bad = [(n, line.strip()) for n, line in enumerate(path.read_text().splitlines(), 1) if LENIENT.search(line)]
    assert not bad, '%s reads user flags with the lenient bool filter: %s' % (path.relative_to(ROOT), bad)


# --- raw (truthy) reads of boolean flags -------------------------------------------------------------------------

# keys whose whole string value is a Jinja expression (a conditional), not a template
CONDITIONAL_KEYS = {'when', 'that', 'until', 'changed_when', 'failed_when'}
JINJA = re.compile(r'\{\{(.*?)\}\}|\{%-?(.*?)-?%\}', re.S)
STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
# what may follow a flag's name: its coercion (with a default first when the flag may be undefined), or to_json,
# which only shows the raw value in a message
ALLOWED_AFTER = re.compile(r'\s*(?:\|\s*default\([^()]*\)\s*)?\|\s*(?:gpuvirt\.provision\.strict_bool\(|to_json\b)')
# (file, flag) pairs read raw on purpose; none now (the Helm install's wait is coerced in its own task)
RAW_EXEMPT = set()
# gather.yml: see the note on FILES above
PLAYBOOKS = sorted(p for p in ROOT.glob('playbooks/*.yml') if p.name != 'gather.yml')


def _role_bool_flags():
    flags = set()
    for spec_file in ROOT.glob('roles/*/meta/argument_specs.yml'):
        for entry in (yaml.safe_load(spec_file.read_text())['argument_specs'] or {}).values():
            flags.update(name for name, opt in (entry.get('options') or {}).items() if opt.get('type') == 'bool')
    return flags


def _gpuvirt_bool_flags():
    """gpuvirt_* flags the playbooks read with a boolean default, or that the example inventory sets to a boolean."""
    flags = set()
    for path in PLAYBOOKS + [ROOT / 'playbooks' / 'gather.yml']:
        flags.update(re.findall(r'\b(gpuvirt_\w+)\s*\|\s*default\((?:true|false)\)', path.read_text()))
    for path in ROOT.glob('inventories/example/group_vars/**/*.yml'):
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            if name.startswith('gpuvirt_') and isinstance(value, bool):
                flags.add(name)
    return flags


ROLE_FLAGS = _role_bool_flags()
GPUVIRT_FLAGS = _gpuvirt_bool_flags()
SCANNED = sorted(list(ROOT.glob('roles/*/tasks/*.yml')) + list(ROOT.glob('roles/*/defaults/*.yml'))
                 + list(ROOT.glob('roles/*/vars/*.yml')) + list(ROOT.glob('roles/*/handlers/*.yml'))
                 + list(ROOT.glob('roles/*/templates/**/*.j2')) + PLAYBOOKS)


def _expressions(node, key=None):
    """Every Jinja expression in a parsed YAML document: conditionals whole, other strings' {{ }} and {% %}."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _expressions(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _expressions(v, key)
    elif isinstance(node, str):
        if key in CONDITIONAL_KEYS:
            yield node
        for m in JINJA.finditer(node):
            yield m.group(1) if m.group(1) is not None else m.group(2)
    elif isinstance(node, bool) and key in CONDITIONAL_KEYS:
        return


def raw_reads(text, flags, is_yaml=True):
    """(flag, expression) for each read of a flag that is not its strict_bool coercion."""
    exprs = list(_expressions(yaml.safe_load(text))) if is_yaml else \
        [m.group(1) if m.group(1) is not None else m.group(2) for m in JINJA.finditer(text)]
    bad = []
    for expr in exprs:
        code = STRING_LITERAL.sub("''", expr)
        for flag in flags:
            for m in re.finditer(r'(?<!\w)%s(?!\w)' % re.escape(flag), code):
                if not ALLOWED_AFTER.match(code, m.end()):
                    bad.append((flag, ' '.join(expr.split())))
    return bad


def test_the_rule_knows_the_flags():
    # the rule is only as good as its flag list: the ones the audit found read raw must be in it
    assert {'kernel_args_iommu_passthrough', 'vgpu_manager_image_force', 'machineconfig_wait', 'nouveau_blacklist',
            'gpu_operator_nfd_install', 'gpu_operator_chart_values_check', 'vfio_persistent'} <= ROLE_FLAGS
    assert {'gpuvirt_validate_certs', 'gpuvirt_host_vfio', 'gpuvirt_allow_no_gpu'} <= GPUVIRT_FLAGS


@pytest.mark.parametrize('text, expected', [
    ("- name: x\n  when: kernel_args_iommu and y\n", [('kernel_args_iommu', 'kernel_args_iommu and y')]),
    ("- x:\n    a: \"{{ ['iommu=pt'] if kernel_args_iommu else [] }}\"\n",
     [('kernel_args_iommu', "['iommu=pt'] if kernel_args_iommu else []")]),
    ("- x:\n    a: \"{{ kernel_args_iommu | gpuvirt.provision.strict_bool('kernel_args_iommu') }}\"\n", []),
    ("- x:\n    a: \"{{ kernel_args_iommu | default(true) | gpuvirt.provision.strict_bool('kernel_args_iommu') }}\"\n",
     []),
    ("- x:\n    msg: \"set kernel_args_iommu: false, was {{ kernel_args_iommu | to_json }}\"\n", []),
    ("- x:\n    msg: \"{{ 'kernel_args_iommu is off' if y else '' }}\"\n", []),
    ("- x:\n    kernel_args_iommu: true\n", []),
    ("- x:\n    a: \"{{ kernel_args_iommu_vendor }}\"\n", []),
])
def test_the_rule_itself(text, expected):
    assert raw_reads(text, {'kernel_args_iommu'}) == expected


@pytest.mark.parametrize('path', SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_bool_flags_are_read_through_strict_bool(path):
    rel = str(path.relative_to(ROOT))
    flags = {f for f in ROLE_FLAGS | GPUVIRT_FLAGS if (rel, f) not in RAW_EXEMPT}
    bad = raw_reads(path.read_text(), flags, is_yaml=path.suffix == '.yml')
    assert not bad, ('%s reads boolean flags raw (the string "false" from -e or a survey is true there); read them '
                     'through gpuvirt.provision.strict_bool: %s' % (rel, bad))
