# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No branch on a value of a pool row: what such a branch means is a column of the row, read as such.

A comparison (``==``, ``!=``, ``in``, ``is``, Jinja ``equalto`` and the other tests of selectattr / rejectattr) with
a quoted pool name, inventory group or value of the columns workload, resource, advertiser and interface, in
plugins/, roles/ or playbooks/ (Python, YAML, Jinja templates; comments skipped), is a branch a new row would not
reach: ``row.resource == 'dra'`` means "the DRA driver allocates the GPUs", which the column dra_driver says for
every row. The scan fails naming file and line.

The vocabularies come from the table (fleet.POOL_TABLE), so a new row's values are scanned too. Some of their words
are also words of another vocabulary that the code compares as such (SHARED, each with the vocabulary): those are
flagged only where the other side of the comparison reads a pool row (a column as a row's attribute, a key of its
traits, the pool's name), never where it reads host facts, a node label or a setting.

Not scanned: the columns function ('pf' / 'vf': the PCI function kind, read as itself) and permitted (the KubeVirt
list's own name, the key the code looks that list up by). test_no_name_branches.py scans the platform names.
"""
from __future__ import annotations

import ast
import pathlib
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet

ROOT = pathlib.Path(__file__).resolve().parents[4]
SCANNED = ('plugins', 'roles', 'playbooks')
YAML_SUFFIXES = ('.yml', '.yaml', '.j2')
# the columns whose values are scanned, besides the row's name and group
VALUE_COLUMNS = ('workload', 'resource', 'advertiser', 'interface')
COLUMNS = tuple(name for name, default in fleet.Pool.COLUMNS)

# Words of the table's vocabularies that another vocabulary has too, and which the code compares as that one:
SHARED = {
    # the GPU Operator's workload vocabulary as the operator reads it: a node's nvidia.com/gpu.workload.config label
    # (manifests/dra.py) and the ClusterPolicy's sandboxWorkloads.defaultWorkload (manifests/gpu_operator.py)
    'container',
    # a PCI device's kind in the host facts (host/lspci.py, host/sysfs_pci.py); the NVIDIADriver's driverType
    'gpu',
    # the KubeVirt list a wanted device entry came from (manifests/kubevirt.py, modules/kubevirt_devices_plan.py)
    'pci',
    # the bus of a vGPU parent in the host facts (host/vgpu_interface.py), and the vGPU interface a host shows or is
    # predicted (the fleet view's interface, host data: playbooks/phase_vgpu_vf.yml, retire.yml)
    'mdev',
    # the KubeVirt configuration of a cluster (kubevirt_config: hco or kubevirt) and the upgrade plan's component
    'kubevirt',
}

# (file, function, value): comparisons that are the row selection itself, where a host's facts are matched.
ALLOWED = {
    # host_vgpu_interface reads which vGPU interface a host shows from facts saved before the host_interface fact
    # existed (its parents' interfaces): vendor-specific VFIO wins where both show, as host/vgpu_interface.py's rule
    # says. That interface then picks the row (host_row), the one place a host's interface meets the table.
    ('plugins/module_utils/model/fleet.py', 'host_vgpu_interface', 'vendor-vfio'),
}

# a Python string that holds Jinja (a module's or a test's template)
JINJA_RE = re.compile(r'\{\{|\{%|attr\(')


def vocabulary(table):
    """``{value: [columns]}``: every pool name, group and value of VALUE_COLUMNS of ``table`` (a string)."""
    out = {}
    for row in table:
        for column in ('name', 'group') + VALUE_COLUMNS:
            value = getattr(row, column)
            if isinstance(value, str) and value and column not in out.setdefault(value, []):
                out[value].append(column)
    return out


# --- Python: the comparisons of the syntax tree --------------------------------------------------------------------

def _key(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _reads_row(node, tainted):
    """Whether the expression ``node`` reads a pool row: a column as an attribute (rows are objects, the host facts
    and labels dicts), a column key of something named for traits or a row, the pool's name, or a name assigned
    from such a read (``tainted``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in COLUMNS + ('pool',):
            return True
        if isinstance(sub, ast.Name) and (sub.id == 'pool' or sub.id in tainted):
            return True
        key, container = None, None
        if isinstance(sub, ast.Subscript):
            key, container = _key(sub.slice), sub.value
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == 'get' and sub.args:
            key, container = _key(sub.args[0]), sub.func.value
        if key == 'pool':
            return True
        if key in COLUMNS and re.search(r'trait|row', ast.unparse(container), re.I):
            return True
    return False


def _literals(node, values):
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str) and i.value in values]


def _tainted(nodes):
    """The names assigned from a row read among ``nodes``."""
    tainted = set()
    for sub in nodes:
        if isinstance(sub, ast.Assign) and _reads_row(sub.value, tainted):
            tainted.update(t.id for t in sub.targets if isinstance(t, ast.Name))
    return tainted


def python_branches(text, values):
    """``[(line, function, value, source)]`` of the comparisons in Python ``text`` with a value of ``values``;
    ``function``: the innermost function around it (None at module level)."""
    tree = ast.parse(text)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    parent = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[child] = node

    def enclosing(node):
        while node in parent:
            node = parent[node]
            if isinstance(node, functions):
                return node
        return None

    taint = {None: _tainted(n for n in ast.walk(tree) if enclosing(n) is None)}
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        function = enclosing(node)
        if function not in taint:
            taint[function] = _tainted(ast.walk(function))
        operands = [node.left] + list(node.comparators)
        for i, operand in enumerate(operands):
            others = operands[:i] + operands[i + 1:]
            for value in _literals(operand, values):
                if value in SHARED and not any(_reads_row(o, taint[function]) for o in others):
                    continue
                found[(node.lineno, value)] = (node.lineno, function.name if function else None, value,
                                               ast.get_source_segment(text, node))
    # Jinja held in the module's strings (its EXAMPLES, a template it writes)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and JINJA_RE.search(node.value):
            for line, value, source in jinja_branches(node.value, values):
                found.setdefault((node.lineno + line - 1, value), (node.lineno + line - 1, None, value, source))
    return sorted(found.values(), key=lambda hit: (hit[0], hit[2]))


# --- YAML and Jinja: the comparison forms, on the text with its comments blanked ----------------------------------

_TESTS = r'(?:==|!=|eq|ne|equalto|sameas|in)'
_ROW_READ_JINJA = re.compile(r"\btraits\.(?:%s)\b|(?:^|[\s.'(])pool\s*(?:\|[^|]*)?$" % '|'.join(COLUMNS))
_CUT = re.compile(r'.*(?:\band\b|\bor\b|\bif\b|\belse\b|\bnot\b|\{\{|\{%|,|\bwhen:|\bthat:)', re.S)


def _forms(values):
    lit = r'''(?P<q>['"])(?P<value>%s)(?P=q)''' % '|'.join(re.escape(v) for v in sorted(values, key=len, reverse=True))
    return (
        # x == 'value', x != 'value'
        ('before', re.compile(r'(?:==|!=)\s*' + lit)),
        # 'value' == x, 'value' in x
        ('after', re.compile(lit + r'\s*(?:==|!=|\bin\b|\bnot\s+in\b)')),
        # x is equalto 'value', x is sameas('value')
        ('before', re.compile(r'\bis\s+(?:not\s+)?(?:equalto|sameas|eq|ne)\s*\(?\s*' + lit)),
        # x in ('a', 'value'), x in ['value']
        ('before', re.compile(r'\bin\s*[\(\[][^\)\]]*?' + lit)),
        # selectattr('attr', '==', 'value'), rejectattr('attr', 'in', ['value']), select('equalto', 'value')
        ('attr', re.compile(r'''(?:select|reject)(?:attr)?\(\s*(?:(?P<a>['"])(?P<attr>[^'"]*)(?P=a)\s*,\s*)?'''
                            r'''['"]%s['"]\s*,\s*[\(\[]?[^\)\]]*?''' % _TESTS + lit)),
    )


def _blank_comments(text):
    """``text`` with its YAML comment lines and Jinja comments blanked, line numbers kept."""
    text = re.sub(r'\{#.*?#\}', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    return '\n'.join('' if line.lstrip().startswith('#') else line for line in text.split('\n'))


def jinja_branches(text, values):
    """``[(line, value, source)]`` of the comparisons in YAML or Jinja ``text`` with a value of ``values``."""
    text = _blank_comments(text)
    lines = text.split('\n')
    found = {}
    for side, form in _forms(values):
        for match in form.finditer(text):
            value = match.group('value')
            if value in SHARED:
                if side == 'attr':
                    other = match.group('attr') or ''
                elif side == 'before':
                    other = _CUT.sub('', text[max(0, match.start() - 80):match.start()]).strip()
                    other = re.sub(r'\s+(?:is\s+(?:not\s+)?\w*|in)\s*\(?\s*$', '', other)
                else:
                    other = text[match.end():match.end() + 80]
                    other = re.split(r'\band\b|\bor\b|\bif\b|\belse\b|\}\}|%\}|,|\n', other, maxsplit=1)[0].strip()
                if not _ROW_READ_JINJA.search(other.strip()) and not other.strip().startswith('traits.'):
                    continue
            line = text.count('\n', 0, match.start('value')) + 1
            found.setdefault((line, value), (line, value, lines[line - 1].strip()))
    return sorted(found.values())


def value_branches(root, table=fleet.POOL_TABLE, allowed=frozenset(ALLOWED)):
    """``(found, used)``: ``['path:line: value: source']`` of every branch on a value of ``table`` under ``root``,
    and the entries of ``allowed`` that matched."""
    values = vocabulary(table)
    found, used = [], set()
    for top in SCANNED:
        for path in sorted((root / top).rglob('*')):
            rel = path.relative_to(root).as_posix()
            if not path.is_file():
                continue
            if rel.endswith('.py'):
                hits = python_branches(path.read_text(encoding='utf-8'), values)
            elif rel.endswith(YAML_SUFFIXES):
                hits = [(line, None, value, source)
                        for line, value, source in jinja_branches(path.read_text(encoding='utf-8'), values)]
            else:
                continue
            for line, function, value, source in hits:
                if (rel, function, value) in allowed:
                    used.add((rel, function, value))
                    continue
                found.append('%s:%d: %r (%s): %s' % (rel, line, value, ', '.join(values[value]), source))
    return found, used


def test_no_branch_on_a_value_of_a_pool_row():
    found, used = value_branches(ROOT)
    assert not found, ('branches on a pool row\'s name, group or column value; what the branch means is a column of '
                       'the row (model/fleet.py, the column list): read that column instead:\n' + '\n'.join(found))
    # an allowance that nothing needs any more goes
    assert used == ALLOWED, 'allowed comparisons no longer found: %s' % sorted(ALLOWED - used)


def test_the_vocabulary_is_the_table_s():
    values = vocabulary(fleet.POOL_TABLE)
    assert set(fleet.POOLS) <= set(values) and set(fleet.GPU_GROUPS) <= set(values)
    assert set(fleet.WORKLOADS) | set(fleet.RESOURCE_KINDS) | set(fleet.ADVERTISERS) <= set(values)
    assert set(fleet.ROW_INTERFACES) <= set(values)
    # every shared word is a word of the table (an entry that is not would hide nothing and mislead)
    assert SHARED <= set(values)
    # a new row's values are scanned too
    extra = fleet.BY_NAME['dra'].replace(name='vm-ib', group='gpu_vm_ib', workload='vm-ib')
    assert {'vm-ib', 'gpu_vm_ib'} <= set(vocabulary(fleet.POOL_TABLE + (extra,)))


def test_the_scan_finds_each_form_and_leaves_other_vocabularies(tmp_path):
    # each form the scan must see, in a scratch tree: it would be blind if a pattern never matched
    for top in SCANNED:
        (tmp_path / top).mkdir()
    (tmp_path / 'plugins' / 'a.py').write_text(
        "def f(row, traits, pool, facts, item, hosts, labels):\n"
        "    if row.resource == 'dra':\n"                          # 2
        "        pass\n"
        "    if traits.get('interface') != 'vendor-vfio':\n"       # 4
        "        pass\n"
        "    if pool in ('vm-vgpu', 'x'):\n"                       # 6
        "        pass\n"
        "    if 'gpu_dra' in groups:\n"                            # 8
        "        pass\n"
        "    kind = traits['resource']\n"
        "    if kind == 'pci':\n"                                  # 11: a shared word, read from a row
        "        pass\n"
        "    if row.advertiser == 'kubevirt':\n"                   # 13: a shared word, read from a row
        "        pass\n"
        "    # if row.resource == 'dra': a comment\n"
        "    if facts['interface'] == 'mdev':\n"                   # host facts: not a row
        "        pass\n"
        "    if item['kind'] == 'pci':\n"                          # another vocabulary
        "        pass\n"
        "    if labels.get('nvidia.com/gpu.workload.config') == 'container':\n"   # a node label
        "        pass\n"
        "    return [h for h in hosts if h['pool'] == 'container']\n"            # 22: the pool's name
        "EXAMPLES = '''\n"
        "x: \"{{ hosts | selectattr('traits.resource', '==', 'dra') | list }}\"\n"   # 24
        "'''\n", encoding='utf-8')
    (tmp_path / 'roles' / 'b.yml').write_text(
        "x: \"{{ hosts | selectattr('traits.interface', 'equalto', 'vendor-vfio') | list }}\"\n"   # 1
        "when: entry.traits.resource != 'dra'\n"                                                     # 2
        "y: \"{{ hosts | rejectattr('interface', 'equalto', 'mdev') | list }}\"\n"                 # host data
        "z: \"{{ hosts | selectattr('traits.resource',\n"
        "                           'in', ['pci', 'gpu']) | list }}\"\n"                             # 5: two lines
        "# when: entry.traits.resource != 'dra'\n"
        "w: \"{# traits.resource == 'dra' #}{{ entry.interface | default(none) != 'mdev' }}\"\n"   # comment, host
        "v: \"{{ 'pci' if entry.traits.resource == 'gpu' else 'mdev' }}\"\n"                        # 8
        "u: \"{{ cluster.kubevirt_config == 'kubevirt' }}\"\n", encoding='utf-8')                   # a setting
    (tmp_path / 'playbooks' / 'c.yml').write_text(
        "z: \"{{ 'vm-passthrough' | upper }}\"\n"
        "t: \"{{ h.pool == 'container' }}\"\n", encoding='utf-8')                                   # 2
    found, used = value_branches(tmp_path)
    assert [f.split(': ', 1)[0] for f in found] == [
        'plugins/a.py:2', 'plugins/a.py:4', 'plugins/a.py:6', 'plugins/a.py:8', 'plugins/a.py:11', 'plugins/a.py:13',
        'plugins/a.py:22', 'plugins/a.py:24', 'roles/b.yml:1', 'roles/b.yml:2', 'roles/b.yml:5', 'roles/b.yml:8',
        'playbooks/c.yml:2']
    assert used == set()


def test_an_allowed_comparison_is_allowed_only_where_it_is(tmp_path):
    for top in SCANNED:
        (tmp_path / top).mkdir()
    (tmp_path / 'plugins' / 'module_utils' / 'model').mkdir(parents=True)
    source = "def host_vgpu_interface(shown):\n    return 'vendor-vfio' in shown\n\n\n" \
             "def other(shown):\n    return 'vendor-vfio' in shown\n"
    (tmp_path / 'plugins' / 'module_utils' / 'model' / 'fleet.py').write_text(source, encoding='utf-8')
    found, used = value_branches(tmp_path)
    assert [f.split(': ', 1)[0] for f in found] == ['plugins/module_utils/model/fleet.py:6']
    assert used == ALLOWED
