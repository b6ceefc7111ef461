# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lists of pools, groups, workloads and platforms that files outside Python need, generated from the tables.

A YAML file (a role's meta/argument_specs.yml, awx/survey.yml, a filter's documentation) or a doc fragment's
DOCUMENTATION string marks where a list goes::

    choices:
      # BEGIN GENERATED platform_choices
      - auto
      - openshift
      - kubernetes
      # END GENERATED platform_choices

``make docs`` rewrites every line between the two markers from ``LISTS`` below, at the indentation of the
BEGIN marker; ``make docs-check`` (and tests/unit/harness/test_reference_docs.py) names each file whose region
differs. Python code reads the tables directly (fleet.POOLS, platform.PLATFORM_NAMES...), never a generated file.
Only these names are read from the tables: fleet.POOLS, fleet.GPU_GROUPS, fleet.POOL_TABLE (each row's group, name
and interface), fleet.WORKLOADS, platform.PLATFORM_NAMES, platform.PLATFORM_CHOICES and platform.PLATFORM_TABLE
(each row's traits, detection, title and RBAC file, for the platform prose, the reference page's table and
docs/rbac/README.md), and the columns of both
tables with their meanings (fleet.Pool.COLUMNS, fleet.POOL_COLUMN_DOCS, platform.Platform.COLUMNS,
platform.PLATFORM_COLUMN_DOCS) for the reference page's columns tables.
"""

from __future__ import annotations

import glob
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tables():
    """fleet and platform of this checkout (the staged collection under .build/collections when the caller's
    PYTHONPATH has none)."""
    try:
        from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, platform
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))
        from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, platform
    return fleet, platform


def _items(values):
    return ['- %s' % v for v in values]


def _prose(text):
    """One item of a description list, a double-quoted YAML string folded at 100 characters (the continuation
    lines indented under it; YAML folds each line break to a space)."""
    lines = textwrap.wrap('"%s"' % text, 100, break_long_words=False, break_on_hyphens=False)
    return ['- ' + lines[0]] + ['  ' + line for line in lines[1:]]


def lists(root=ROOT):
    """{region name: the lines of its body, without indentation}."""
    fleet, platform = _tables()
    pattern = ':'.join(fleet.GPU_GROUPS)
    # per row: a group whose rows the vGPU interface picks among appears once per row, with that interface
    pairs = ', '.join('C(%s) - C(%s)%s' % (p.group, p.name, ' (%s)' % p.interface if p.interface else '')
                      for p in fleet.POOL_TABLE)
    return {
        'pools': _items(fleet.POOLS),
        'gpu_groups': _items(fleet.GPU_GROUPS),
        'workloads': _items(fleet.WORKLOADS),
        'platforms': _items(platform.PLATFORM_NAMES),
        'platform_choices': _items(platform.PLATFORM_CHOICES),
        # the survey's pool question: every GPU host, or the hosts of one pool group
        'gpu_hosts_pattern_choices': _items([pattern] + list(fleet.GPU_GROUPS)),
        'gpu_hosts_pattern_default': ['default: %s' % pattern],
        # playbooks/vars/fleet.yml: the plays' default host pattern
        'gpu_hosts_pattern_var': ['__gpuvirt_gpu_hosts_pattern: %s' % pattern],
        # prose of a description list: the pools, the groups, the group -> pool map, the platforms
        'pools_prose': _prose('Pools (the pool table): %s.' % ', '.join('C(%s)' % p for p in fleet.POOLS)),
        'groups_prose': _prose('Inventory groups of the GPU hosts (the pool table): %s.'
                               % ', '.join('C(%s)' % g for g in fleet.GPU_GROUPS)),
        'group_pool_prose': _prose('Group - pool (the pool table): %s.' % pairs),
        'platforms_prose': _prose('Platforms (the platform table): %s.'
                                  % ', '.join('C(%s)' % p for p in platform.PLATFORM_NAMES)),
        # each platform with what it does and how auto tells it apart (the role's gpuvirt_platform)
        'platform_rows_prose': _prose('Platforms (the platform table): %s.'
                                      % '; '.join('C(%s) - %s' % (p.name, _platform_words(p))
                                                  for p in platform.PLATFORM_TABLE)),
        # a pool's traits as the filter pool_traits returns them: every column, and the resource kinds
        'pool_columns_prose': _prose('The row of the pool table, one key per column: C({%s}); C(resource) one of %s.'
                                     % (', '.join(n for n, d in fleet.Pool.COLUMNS),
                                        ', '.join('C(%s)' % k for k in fleet.RESOURCE_KINDS))),
        # docs/README.md: a line per pool guide (docs/pools/*.md)
        'pool_guides': pool_guides(root),
        # docs/operator-contract.md: the workload label's row and the rows of the operand labels rows switch off
        'workload_label_row': [_workload_label_row(fleet)],
        'operand_label_rows': _operand_label_rows(fleet),
        # docs/rbac/README.md: the file each platform's clusters take (the row's rbac column)
        'platform_rbac_rows': ['| %s (`%s`) | `%s` |' % (p.title, p.name, p.rbac) for p in platform.PLATFORM_TABLE],
    }


_HEADING = re.compile(r'# (?P<title>\S.*)')
_TICKED = re.compile(r'`([^`]+)`')
# what a title may not hold: it becomes a link's text in docs/README.md ([title](pools/page.md))
_UNSAFE_TITLE = re.compile(r'[\[\]<>|\\]')


def pool_guides(root=ROOT):
    """docs/README.md's list of the pool guides: each page of docs/pools/ by its title, in the order of the first
    pool table row its title names (by the row's name or group in backticks), pages naming none last."""
    fleet, dummy = _tables()
    order = {}
    for index, row in enumerate(fleet.POOL_TABLE):
        order.setdefault(row.name, index)
        order.setdefault(row.group, index)
    pages = []
    for path in sorted(glob.glob(os.path.join(root, 'docs', 'pools', '*.md'))):
        with open(path, encoding='utf-8') as handle:
            first = handle.readline().strip()
        heading = _HEADING.fullmatch(first)
        if not heading:
            raise RegionError('%s: its first line is not its title (# ...)' % os.path.relpath(path, root))
        title = heading.group('title')
        if _UNSAFE_TITLE.search(title):
            where = os.path.relpath(path, root)
            raise RegionError('%s: its title %r holds one of %s, which would change the Markdown of the list it '
                              'is linked from; write it without them' % (where, title, ' '.join('[]<>|\\')))
        rank = min([order[t] for t in _TICKED.findall(title) if t in order] or [len(fleet.POOL_TABLE)])
        pages.append((rank, os.path.basename(path), title))
    return ['- [%s](pools/%s)' % (title, name) for dummy, name, title in sorted(pages)]


def _pools_words(names):
    return '%s %s' % ('pool' if len(names) == 1 else 'pools', ', '.join('`%s`' % n for n in names))


def _workload_label_row(fleet):
    words = []
    for workload in fleet.WORKLOADS:
        pools = [r.name for r in fleet.POOL_TABLE if r.workload == workload]
        words.append('`%s` (%s)' % (workload, _pools_words(pools)))
    return ('| Node | `metadata.labels[%s]` | %s | OCP-Virt guide, "Labeling worker nodes" ("You can assign the '
            'following values to the label: container, vm-passthrough, and vm-vgpu") |'
            % (fleet.WORKLOAD_LABEL, ', '.join(words)))


def _operand_label_rows(fleet):
    operands = fleet.operands  # the table's own (fleet checks operands_off against it)
    rows, seen = [], []
    for row in fleet.POOL_TABLE:
        seen += [o for o in row.operands_off if o not in seen]
    for operand in seen:
        if operand not in operands.OFF_SOURCES:
            raise RegionError('the pool table switches the operand %r off (operands_off) without its source in '
                              'model/operands.py OFF_SOURCES: say there why it may and must be off' % operand)
        pools = [r.name for r in fleet.POOL_TABLE if operand in r.operands_off]
        rows.append('| Node | `metadata.labels[nvidia.com/gpu.deploy.%s]` | `false` on the nodes of %s (row column '
                    '`operands_off`); our leftover `false` removed elsewhere | %s |'
                    % (operand, _pools_words(pools), operands.OFF_SOURCES[operand]))
    return rows


def _platform_words(row):
    """What a platform row does, in a few words, and how apply mode tells it apart."""
    words = ['GPU Operator by %s' % {'olm': 'OLM', 'helm': 'Helm'}[row.gpu_operator_install],
             'KubeVirt configured in %s' % {'hco': 'the HyperConverged', 'kubevirt': 'the KubeVirt CR'}[
                 row.kubevirt_config],
             'kernel arguments by %s' % {'machineconfig': 'MachineConfig', 'host': 'host preparation'}[
                 row.kernel_args]]
    return ', '.join(words) + ', ' + _detection_words(row)


def _detection_words(row):
    if row.detect_api:
        return 'detected by its API %s' % row.detect_api
    if row.detect_node_annotation:
        return "detected by its nodes' annotation %s" % row.detect_node_annotation
    return 'the fallback (a cluster that matches no other platform)' if row.fallback else 'never detected (name it)'


# a comment line in YAML or Python (`# BEGIN GENERATED name`), an HTML comment in Markdown
# (`<!-- BEGIN GENERATED name -->`)
# (a line ending \r\n matches as one ending \n: a file with CRLF endings is not left unread)
BEGIN = re.compile(r'^(?P<indent>[ \t]*)(?:# BEGIN GENERATED (?P<name>[a-z_]+)|<!-- BEGIN GENERATED (?P<md>[a-z_]+) -->)'
                   r'[ \t\r]*$')
END = re.compile(r'^[ \t]*(?:# END GENERATED (?P<name>[a-z_]+)|<!-- END GENERATED (?P<md>[a-z_]+) -->)[ \t\r]*$')


def _name(match):
    return match.group('name') or match.group('md')


def _style(match):
    return 'markdown' if match.group('md') else 'comment'


class RegionError(ValueError):
    """A marker without its pair, or a region name that LISTS does not know."""


def rewrite(text, path='<text>', known=None):
    """``text`` with every generated region's body rewritten; RegionError naming ``path`` and the line on a
    broken marker."""
    known = lists() if known is None else known
    out, region = [], None
    for number, line in enumerate(text.splitlines(True), 1):
        begin, end = BEGIN.match(line), END.match(line)
        if region is None:
            if end:
                raise RegionError('%s:%d: END GENERATED %s without its BEGIN' % (path, number, _name(end)))
            out.append(line)
            if begin:
                name = _name(begin)
                if name not in known:
                    raise RegionError('%s:%d: no generated list %r; known: %s'
                                      % (path, number, name, ', '.join(sorted(known))))
                region = (name, number, _style(begin))
                out.extend('%s%s\n' % (begin.group('indent'), body) for body in known[name])
        elif end:
            if _name(end) != region[0] or _style(end) != region[2]:
                raise RegionError('%s:%d: END GENERATED %s closes BEGIN GENERATED %s of line %d'
                                  % (path, number, _name(end), region[0], region[1]))
            out.append(line)
            region = None
        elif begin:
            raise RegionError('%s:%d: BEGIN GENERATED %s inside the region of line %d'
                              % (path, number, _name(begin), region[1]))
    if region is not None:
        raise RegionError('%s:%d: BEGIN GENERATED %s has no END' % (path, region[1], region[0]))
    return ''.join(out)


def strip(text):
    """``text`` with every generated region's body removed (the markers stay): what was typed by hand."""
    out, inside = [], False
    for line in text.splitlines(True):
        if END.match(line):
            inside = False
        if not inside:
            out.append(line)
        if BEGIN.match(line):
            inside = True
    return ''.join(out)


# The files that may hold generated regions (relative to the repository root).
GLOBS = ('roles/*/meta/argument_specs.yml', 'awx/*.yml', 'plugins/filter/*.yml', 'plugins/doc_fragments/*.py',
         'plugins/modules/*.py', 'playbooks/vars/*.yml', 'docs/README.md', 'docs/operator-contract.md',
         'docs/rbac/README.md')


def files(root=ROOT):
    return sorted(p for g in GLOBS for p in glob.glob(os.path.join(root, g)))


def regenerate(root=ROOT, check=False):
    """Rewrite (or, with check, only compare) every file's regions; the relative paths that were stale."""
    known = lists(root)
    stale = []
    for path in files(root):
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
        new = rewrite(text, os.path.relpath(path, root), known)
        if new != text:
            stale.append(os.path.relpath(path, root))
            if not check:
                with open(path, 'w', encoding='utf-8') as handle:
                    handle.write(new)
    return stale


def tables_page(header):
    """docs/reference/pools-and-platforms.md: the one generated list of pools, groups, workloads and platforms
    that prose docs link to."""
    fleet, platform = _tables()
    lines = [header, '# Pools and platforms', '',
             'Generated from the pool table (`plugins/module_utils/model/fleet.py`) and the platform table',
             '(`plugins/module_utils/model/platform.py`). What each pool and platform does: docs/architecture.md and',
             'docs/pools/.', '', '## Pools', '',
             'Rows of one group are told apart by the vGPU interface a host offers (the first is the group\'s',
             'default, for a host whose interface nothing tells yet).', '',
             '| pool | inventory group | vGPU interface |', '|---|---|---|']
    lines += ['| `%s` | `%s` | %s |' % (p.name, p.group, '`%s`' % p.interface if p.interface else '-')
              for p in fleet.POOL_TABLE]
    lines += ['', 'Every GPU host: `%s` (the default of `gpuvirt_gpu_hosts_pattern`).' % ':'.join(fleet.GPU_GROUPS),
              '', '### Each pool\'s row', '',
              'Every column of each row (what a column means: "The columns" below); prose that speaks of "the pools '
              'whose `iommu` is true", say, means the rows this table shows so.', '']
    lines += _rows_table(fleet.Pool.COLUMNS, fleet.POOL_TABLE)
    lines += ['', '## Workloads', '',
              'The values of the GPU Operator\'s `nvidia.com/gpu.workload.config` label and its',
              '`sandboxWorkloads.defaultWorkload`: %s.' % ', '.join('`%s`' % w for w in fleet.WORKLOADS),
              '', '## Platforms', '', 'Values of `gpuvirt_platform`: %s.'
              % ', '.join('`%s`' % p for p in platform.PLATFORM_CHOICES),
              '`auto` detects the platform in apply mode; render mode needs a platform named.', '',
              '| platform | GPU Operator | NFD | KubeVirt config | kernel arguments | container runtime '
              '| containerd config | containerd socket | detected by |', '|---|---|---|---|---|---|---|---|---|']
    lines += ['| `%s` | %s into `%s` | %s | %s | %s | %s | %s | %s | %s |'
              % (p.name, p.gpu_operator_install, p.gpu_operator_namespace, p.nfd_install, p.kubevirt_config,
                 p.kernel_args, p.container_runtime, '`%s`' % p.containerd_config if p.containerd_config else '-',
                 '`%s`' % p.containerd_socket if p.containerd_socket else '-',
                 _detection_words(p).replace('detected by ', '').replace('the fallback (', '(the fallback: '))
              for p in platform.PLATFORM_TABLE]
    lines += ['', '## The columns', '',
              'What a row says, column by column (a column\'s default is what a row that does not name it gets; `-`: '
              'every row names it).', '', '### Pool table (`fleet.POOL_TABLE`)', '']
    lines += _columns_table(fleet.Pool.COLUMNS, fleet.POOL_COLUMN_DOCS, 'fleet.POOL_COLUMN_DOCS')
    lines += ['', '### Platform table (`platform.PLATFORM_TABLE`)', '']
    lines += _columns_table(platform.Platform.COLUMNS, platform.PLATFORM_COLUMN_DOCS, 'platform.PLATFORM_COLUMN_DOCS')
    lines += ['']
    return '\n'.join(lines)


def _cell(value):
    """A row's value as the per-row table shows it (YAML's spelling, `-` for none)."""
    if value is None or value == () or value == {}:
        return '-'
    if isinstance(value, bool):
        return '`%s`' % str(value).lower()
    if isinstance(value, (tuple, list)):
        return ', '.join('`%s`' % v for v in value)
    return '`%s`' % (value,)


def _rows_table(columns, rows):
    """The Markdown table of every row of a table, one column per column, in their orders."""
    names = [name for name, dummy in columns]
    return (['| %s |' % ' | '.join('`%s`' % n for n in names), '|%s' % ('---|' * len(names))]
            + ['| %s |' % ' | '.join(_cell(getattr(row, n)) for n in names) for row in rows])


def _default_words(default):
    """A column's default as the columns table shows it: `-` for a required column, else its value in YAML's
    spelling."""
    fleet, dummy = _tables()
    if default is fleet.REQUIRED:
        return '-'
    if default is None:
        return 'none'
    if isinstance(default, bool):
        return '`%s`' % str(default).lower()
    if isinstance(default, (tuple, list)):
        return '`[]`' if not default else '`%s`' % list(default)
    return '`%s`' % (default,)


def _columns_table(columns, docs, where):
    """The Markdown table of a table's columns: name, default and meaning, in column order; RegionError when the
    meanings (``where``) do not name exactly the columns, in their order."""
    names = [name for name, dummy in columns]
    if [name for name, dummy in docs] != names:
        raise RegionError('%s names %s; the columns are %s' % (where, ', '.join(n for n, d in docs), ', '.join(names)))
    meaning = dict(docs)
    return ['| column | default | meaning |', '|---|---|---|'] + [
        '| `%s` | %s | %s |' % (name, _default_words(default), meaning[name]) for name, default in columns]
