# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/reference/ is generated from the modules' DOCUMENTATION blocks and the roles' argument specs, and the lists of
pools, groups, workloads and platforms in the specs, the survey, the filter docs and the doc fragments from the
tables: each must match what the generator writes now, so a changed option or table row without `make docs`
fails here, naming the stale file."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, platform

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
GENERATOR = os.path.join(ROOT, 'tools', 'docs', 'generate_reference.py')


def test_reference_is_up_to_date():
    proc = subprocess.run([sys.executable, GENERATOR, '--check'], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_module_and_role_has_a_page():
    pages = set(os.listdir(os.path.join(ROOT, 'docs', 'reference')))
    modules = [f[:-3] for f in os.listdir(os.path.join(ROOT, 'plugins', 'modules')) if f.endswith('.py') and f != '__init__.py']
    roles = os.listdir(os.path.join(ROOT, 'roles'))
    missing = [m for m in modules if 'module_%s.md' % m not in pages] + [r for r in roles if 'role_%s.md' % r not in pages]
    assert modules and roles and not missing, missing


def test_a_module_page_shows_the_notes_of_its_fragments_and_its_own():
    # ansible-doc merges a fragment's notes into the module's (ansible.utils.plugin_docs merge_fragment: a list is
    # joined and sorted); the page lists them as it does
    sys.path.insert(0, os.path.dirname(GENERATOR))
    try:
        import generate_reference
    finally:
        sys.path.remove(os.path.dirname(GENERATOR))
    with open(os.path.join(ROOT, 'plugins', 'doc_fragments', 'k8s_auth.py'), encoding='utf-8') as handle:
        tree = ast.parse(handle.read())
    fragment = yaml.safe_load(ast.literal_eval(next(
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) == 'DOCUMENTATION')))
    (note,) = fragment['notes']
    _name, page = generate_reference.plugin_page(os.path.join(ROOT, 'plugins', 'modules', 'cluster_facts.py'), 'module')
    assert '## Notes\n\n- %s\n' % note in page
    doc = generate_reference._with_fragments(
        {'extends_documentation_fragment': ['gpuvirt.provision.k8s_auth'], 'notes': ['A module note.']}, ROOT)
    assert doc['notes'] == sorted(['A module note.', note]) and 'kubeconfig' in doc['options']


def test_check_mode_detects_a_stale_page(tmp_path):
    # the generator itself must notice drift (a check that cannot fail would prove nothing)
    out = tmp_path / 'ref'
    subprocess.run([sys.executable, GENERATOR, '--out', str(out)], check=True, capture_output=True)
    page = out / 'module_pci_devices.md'
    page.write_text(page.read_text() + '\nhand edit\n')
    proc = subprocess.run([sys.executable, GENERATOR, '--check', '--out', str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and 'module_pci_devices.md' in proc.stdout + proc.stderr


# Generated lists (tools/docs/generated_lists.py): the choices and lists of pools, groups, workloads and platforms
# in the argument specs, the survey, the filter docs and the doc fragments are written from the tables.
sys.path.insert(0, os.path.join(ROOT, 'tools', 'docs'))
import generated_lists  # noqa: E402

TABLE_NAMES = set(fleet.POOLS) | set(fleet.GPU_GROUPS) | set(fleet.WORKLOADS) | set(platform.PLATFORM_NAMES)


def _copy(tmp_path):
    root = tmp_path / 'repo'
    for part in ('awx', 'plugins', 'roles', 'playbooks'):
        shutil.copytree(os.path.join(ROOT, part), root / part)
    return root


def test_a_stale_generated_region_is_named(tmp_path):
    root = _copy(tmp_path)
    survey = root / 'awx' / 'survey.yml'
    text = survey.read_text()
    last = '      - %s\n      # END GENERATED gpu_hosts_pattern_choices' % fleet.GPU_GROUPS[-1]
    assert last in text, text
    survey.write_text(text.replace(last, '      # END GENERATED gpu_hosts_pattern_choices'))
    proc = subprocess.run([sys.executable, GENERATOR, '--check', '--root', str(root)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and 'awx/survey.yml (generated region)' in proc.stderr, proc.stderr
    # make docs writes it back
    subprocess.run([sys.executable, GENERATOR, '--root', str(root), '--out', str(tmp_path / 'ref')],
                   check=True, capture_output=True)
    assert survey.read_text() == text


def test_a_new_table_row_reaches_every_region():
    # a platform row added at run time: every region that lists the platforms lists it
    known = dict(generated_lists.lists())
    known['platforms'] = known['platforms'] + ['- platform-hypothetical']
    path = os.path.join(ROOT, 'plugins', 'doc_fragments', 'tables.py')
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    new = generated_lists.rewrite(text, path, known)
    assert new.count('      - platform-hypothetical\n') == text.count('# BEGIN GENERATED platforms') == 1, new


@pytest.mark.parametrize('text, named', [
    ('a:\n  # BEGIN GENERATED nosuch\n  # END GENERATED nosuch\n', "no generated list 'nosuch'"),
    ('a:\n  # BEGIN GENERATED pools\n', 'BEGIN GENERATED pools has no END'),
    ('a:\n  # END GENERATED pools\n', 'END GENERATED pools without its BEGIN'),
    ('a:\n  # BEGIN GENERATED pools\n  # END GENERATED workloads\n', 'END GENERATED workloads closes'),
])
def test_a_broken_marker_is_refused_naming_the_line(text, named):
    with pytest.raises(generated_lists.RegionError, match=named):
        generated_lists.rewrite(text, 'f.yml')


def _documents(path):
    """The YAML documents a file holds, generated regions emptied: a module's DOCUMENTATION, a fragment's
    strings, a YAML file itself."""
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    if path.endswith('.md'):
        # a Markdown page holds no YAML choices; its lists of rows are the generated regions themselves
        return []
    if not path.endswith('.py'):
        return [yaml.safe_load(generated_lists.strip(text))]
    docs = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and any(getattr(t, 'id', '').isupper() for t in node.targets) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) \
                and ('options:' in node.value.value or 'choices' in node.value.value):
            try:
                docs.append(yaml.safe_load(generated_lists.strip(node.value.value)))
            except yaml.YAMLError:
                continue
    return docs


def _hand_lists(value, where):
    """Each choices list naming a table's names, and each host pattern of several pool groups, in ``value``."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == 'choices' and isinstance(item, list) and TABLE_NAMES & set(str(v) for v in item):
                found.append('%s: %s %r' % (where, key, item))
            if isinstance(item, str) and len(item.split(':')) > 1 and set(item.split(':')) <= TABLE_NAMES:
                # a host pattern of several pool groups (a survey default, the plays' default pattern)
                found.append('%s: %s %r' % (where, key, item))
            found += _hand_lists(item, where)
    elif isinstance(value, list):
        for item in value:
            found += _hand_lists(item, where)
    return found


def test_no_list_of_a_table_is_typed_by_hand():
    # every choices naming pools, groups, workloads or platforms, and every host pattern of several pool groups,
    # sits in a generated region; outside one it would go stale when a row is added
    found = []
    for path in generated_lists.files():
        for doc in _documents(path):
            found += _hand_lists(doc, os.path.relpath(path, ROOT))
    assert not found, found


def test_each_table_column_is_documented_once_beside_it_and_listed_on_the_reference_page():
    # a column's meaning is written where the column is (fleet.POOL_COLUMN_DOCS, platform.PLATFORM_COLUMN_DOCS),
    # in the columns' order, and the reference page lists every column with its default and that meaning
    page = generated_lists.tables_page('')
    for columns, docs in ((fleet.Pool.COLUMNS, fleet.POOL_COLUMN_DOCS),
                          (platform.Platform.COLUMNS, platform.PLATFORM_COLUMN_DOCS)):
        assert [name for name, dummy in docs] == [name for name, dummy in columns]
        for name, meaning in docs:
            assert meaning.strip() and '| `%s` |' % name in page and meaning in page, name
    assert '| `function` | `pf` |' in page and '| `name` | - |' in page and '| `fallback` | `false` |' in page


def test_a_column_without_its_meaning_stops_the_reference_page(monkeypatch):
    # a column added to the row class and not to its meanings: make docs names both lists instead of a page
    # with a hole
    monkeypatch.setattr(fleet, 'POOL_COLUMN_DOCS', fleet.POOL_COLUMN_DOCS[:-1])
    with pytest.raises(generated_lists.RegionError, match=r'fleet\.POOL_COLUMN_DOCS names .*; the columns are .*mig'):
        generated_lists.tables_page('')


# --- Markdown regions: the pool guides (docs/README.md) and the operand labels (docs/operator-contract.md) ---------
def test_a_markdown_region_is_rewritten_between_its_html_comments():
    text = 'a\n<!-- BEGIN GENERATED pools -->\nstale\n<!-- END GENERATED pools -->\nb\n'
    new = generated_lists.rewrite(text, 'x.md', {'pools': ['- one', '- two']})
    assert new == 'a\n<!-- BEGIN GENERATED pools -->\n- one\n- two\n<!-- END GENERATED pools -->\nb\n'
    with pytest.raises(generated_lists.RegionError, match=r'x.md:2: BEGIN GENERATED pools has no END'):
        generated_lists.rewrite('a\n<!-- BEGIN GENERATED pools -->\n', 'x.md', {'pools': []})


def _pages(tmp_path, pages):
    (tmp_path / 'docs' / 'pools').mkdir(parents=True)
    for name, text in pages.items():
        (tmp_path / 'docs' / 'pools' / name).write_text(text)
    return str(tmp_path)


def test_a_new_pool_page_is_listed_in_the_order_of_the_row_its_title_names(tmp_path):
    # the title's backticked row name or group places it; a page naming none goes last, by file name
    last = fleet.POOL_TABLE[-1]
    root = _pages(tmp_path, {'a-new.md': '# Pool `%s`: the last row\n' % last.name,
                             'first.md': '# Group `%s`\n\ntext\n' % fleet.POOL_TABLE[0].group,
                             'zz-other.md': '# Something else\n', 'aa-other.md': '# Another\n'})
    assert generated_lists.pool_guides(root) == [
        '- [Group `%s`](pools/first.md)' % fleet.POOL_TABLE[0].group,
        '- [Pool `%s`: the last row](pools/a-new.md)' % last.name,
        '- [Another](pools/aa-other.md)', '- [Something else](pools/zz-other.md)']


def test_a_pool_page_without_its_title_first_stops_make_docs(tmp_path):
    root = _pages(tmp_path, {'bad.md': 'no title\n'})
    with pytest.raises(generated_lists.RegionError, match=r'docs/pools/bad.md: its first line is not its title'):
        generated_lists.pool_guides(root)


def test_every_pool_row_has_its_guide_in_docs_pools():
    # a new row's checklist: a page of docs/pools/ names it (its name or group in backticks, in its title or text),
    # and make docs lists that page in docs/README.md
    texts = []
    for name in sorted(os.listdir(os.path.join(ROOT, 'docs', 'pools'))):
        with open(os.path.join(ROOT, 'docs', 'pools', name), encoding='utf-8') as handle:
            texts.append(handle.read())
    missing = [row.name for row in fleet.POOL_TABLE
               if not any('`%s`' % row.name in t or '`%s`' % row.group in t for t in texts)]
    assert not missing, 'pools without a guide in docs/pools/ (write one; make docs lists it): %s' % missing


def test_the_operand_rows_name_each_pool_that_switches_the_operand_off(monkeypatch):
    from ansible_collections.gpuvirt.provision.plugins.module_utils.model import operands
    dra = [r for r in fleet.POOL_TABLE if 'dcgm' in r.operands_off]
    rows = generated_lists.lists()['operand_label_rows']
    (dcgm,) = [r for r in rows if '[nvidia.com/gpu.deploy.dcgm]' in r]
    assert '`false` on the nodes of pool `%s` (row column `operands_off`)' % dra[0].name in dcgm
    assert dcgm.endswith('| %s |' % operands.OFF_SOURCES['dcgm'])
    # a second row switching it off is named beside the first; an operand without its source stops make docs
    extra = dra[0].replace(name='x-pool', group='gpu_x', operands_off=('dcgm', 'node-status-exporter'),
                           dra_driver=False, advertiser='nvidia-device-plugin', device_plugin=True)
    monkeypatch.setattr(fleet, 'POOL_TABLE', fleet.POOL_TABLE + (extra,))
    with pytest.raises(generated_lists.RegionError, match=r"switches the operand 'node-status-exporter' off "
                                                          r"\(operands_off\) without its source in "
                                                          r"model/operands.py OFF_SOURCES"):
        generated_lists.lists()
    monkeypatch.setitem(operands.OFF_SOURCES, 'node-status-exporter', 'a source')
    rows = generated_lists.lists()['operand_label_rows']
    (dcgm,) = [r for r in rows if '[nvidia.com/gpu.deploy.dcgm]' in r]
    assert '`false` on the nodes of pools `%s`, `x-pool`' % dra[0].name in dcgm
    assert any('[nvidia.com/gpu.deploy.node-status-exporter]' in r and r.endswith('| a source |') for r in rows)


def test_the_workload_row_names_each_workload_s_pools():
    (row,) = generated_lists.lists()['workload_label_row']
    for workload in fleet.WORKLOADS:
        pools = [r.name for r in fleet.POOL_TABLE if r.workload == workload]
        assert ('`%s` (%s %s)' % (workload, 'pool' if len(pools) == 1 else 'pools',
                                  ', '.join('`%s`' % p for p in pools))) in row


@pytest.mark.parametrize('title', ['The `vgpu` pool <!--', 'x](https://example.com) [y', 'a | b', 'back\\slash'])
def test_a_pool_page_title_that_would_change_the_list_s_markdown_stops_make_docs(tmp_path, title):
    root = _pages(tmp_path, {'bad.md': '# %s\n' % title})
    with pytest.raises(generated_lists.RegionError, match=r'docs/pools/bad.md: its title .* holds one of'):
        generated_lists.pool_guides(root)
    # its valid neighbour: parentheses and backticks are plain link text
    root = _pages(tmp_path / 'ok', {'ok.md': '# DRA passthrough (group `gpu_dra`)\n'})
    assert generated_lists.pool_guides(root) == ['- [DRA passthrough (group `gpu_dra`)](pools/ok.md)']


def test_markers_are_read_in_a_file_with_crlf_endings_and_closed_in_their_own_style():
    text = 'a\r\n<!-- BEGIN GENERATED pools -->\r\nstale\r\n<!-- END GENERATED pools -->\r\n'
    new = generated_lists.rewrite(text, 'x.md', {'pools': ['- one']})
    assert 'stale' not in new and '- one\n' in new
    with pytest.raises(generated_lists.RegionError, match=r'x.md:3: END GENERATED pools closes BEGIN GENERATED '
                                                          r'pools of line 2'):
        generated_lists.rewrite('a\n<!-- BEGIN GENERATED pools -->\n# END GENERATED pools\n', 'x.md', {'pools': []})
