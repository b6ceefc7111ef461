# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every documented make target installs what its recipe uses when it runs alone on a fresh machine.

For each target, `make -n TARGET` gives the groups its one tools/bootstrap-host.sh call installs (make's own
resolution of the target-specific HOST_GROUPS, prerequisites included) and every recipe line the run would execute;
the tools those lines use, the scripts they start and the test files pytest would collect (with the test helpers
those import) name the package groups needed. `make ee` once resolved to `core podman` (ee-image's own groups
replaced ee's) and its registry jobs failed with `registry.sh` not found: exit 127."""
from __future__ import annotations

import glob
import os
import re
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
ALL = {'core', 'kube', 'podman', 'lab', 'registry', 'docker'}
# a target as run alone from a shell: not under the make that runs the unit tests (its flags and overrides)
CLEAN_ENV = dict((k, v) for k, v in os.environ.items()
                 if k not in ('MAKEFLAGS', 'MFLAGS', 'MAKEOVERRIDES', 'MAKELEVEL', 'HOST_BOOTSTRAPPED', 'HOST_GROUPS'))

# what uses a group (tools/bootstrap-host.sh GROUPS_PACKAGES): a test's command list or helper, a script's command
# line, a recipe line. Each need is a set of groups of which one suffices (debootstrap is in podman and lab).
PY_NEEDS = [
    (re.compile(r'''\[['"](?:podman|skopeo|buildah)['"]'''), {'podman'}),
    (re.compile(r'''\[['"]dockerd?['"]|which\(['"]dockerd['"]\)'''), {'docker'}),
    (re.compile(r'''\[['"]lspci['"]|which\(['"]lspci['"]\)'''), {'core'}),
    (re.compile(r'registry\.sh'), {'registry'}),
    (re.compile(r'^\s*(?:from|import)\s+kube_cluster\b', re.M), {'kube'}),
]
SH_NEEDS = [
    (re.compile(r'(?:^|[\s;&|(`])(?:podman|skopeo|buildah)\s'), {'podman'}),
    (re.compile(r'(?:^|[\s;&|(`])debootstrap\s'), {'podman', 'lab'}),
    (re.compile(r'qemu-system|qemu-img'), {'lab'}),
    (re.compile(r'(?:^|[\s;&|(`])(?:registry\.sh|htpasswd|docker-registry)\s'), {'registry'}),
    (re.compile(r'(?:^|[\s;&|(`])dockerd\s'), {'docker'}),
    (re.compile(r'tools/kube/build\.sh|(?:^|[\s;&|(`])etcd\s'), {'kube'}),
    (re.compile(r'tools/lab/'), {'lab'}),
]
IMPORT = re.compile(r'^\s*(?:from\s+([A-Za-z_][A-Za-z0-9_]*)\s+import|import\s+([A-Za-z_][A-Za-z0-9_]*))', re.M)


def documented_targets():
    """The targets README.md, docs/testing.md and `make help` name, and each registered integration target."""
    proc = subprocess.run(['make', '-pq', '-C', ROOT, 'integration'], capture_output=True, text=True, check=False,
                          env=CLEAN_ENV)
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith('INTEGRATION_TARGETS :=')]
    return sorted(set(line.split(':=', 1)[1].split()) | {
        'molecule', 'molecule-default', 'molecule-vm', 'integration', 'integration-molecule', 'demo', 'demo-cold-check',
        'test-extended', 'ee-image', 'kube-apiserver', 'bench'})


def resolved(target):
    """(groups the target's bootstrap call installs, the recipe lines `make TARGET` would run)."""
    proc = subprocess.run(['make', '-n', '-C', ROOT, target], capture_output=True, text=True, check=False,
                          env=CLEAN_ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    calls = [ln.split('bootstrap-host.sh', 1)[1].split() for ln in lines if 'tools/bootstrap-host.sh' in ln]
    assert len(calls) == 1, '%s: the host must be bootstrapped once per run alone:\n%s' % (target, proc.stdout)
    # no group named: every group
    return set(calls[0]) or set(ALL), lines


def helpers():
    """module name -> test helper files an `import NAME` in a test could load (sys.path holds these folders)."""
    found = {}
    for path in glob.glob(os.path.join(ROOT, 'tests', 'integration', '**', '*.py'), recursive=True) + \
            glob.glob(os.path.join(ROOT, 'tests', 'unit', '*.py')):
        found.setdefault(os.path.splitext(os.path.basename(path))[0], []).append(path)
    return found


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def needs(lines):
    """[(need, where)] for the recipe lines, the scripts they start and the tests pytest collects from them."""
    out, seen, todo = [], set(), []
    for line in lines:
        for pattern, need in SH_NEEDS:
            if pattern.search(' ' + line + ' '):
                out.append((need, 'recipe: ' + line.strip()[:80]))
        todo += [os.path.join(ROOT, s) for s in re.findall(r'(?<![\w/.])(tools/[\w/.-]+\.sh)', line)]
        if 'pytest' in line:
            for arg in line.split():
                path = os.path.join(ROOT, arg)
                if arg.startswith('tests/') and os.path.exists(path):
                    todo += glob.glob(os.path.join(path, '**', '*.py'), recursive=True) if os.path.isdir(path) else [path]
                    parent = os.path.dirname(path.rstrip('/'))
                    while parent.startswith(os.path.join(ROOT, 'tests')):
                        todo.append(os.path.join(parent, 'conftest.py'))
                        parent = os.path.dirname(parent)
    modules = helpers()
    while todo:
        path = os.path.normpath(todo.pop())
        # the installer itself names every package; what it installs is what is checked
        if path in seen or not os.path.isfile(path) or path.endswith('bootstrap-host.sh'):
            continue
        seen.add(path)
        text = read(path)
        where = os.path.relpath(path, ROOT)
        if path.endswith('.py'):
            # tests/integration/conftest.py offers the API server fixtures to every target; a target needs the
            # server where one of its own files imports kube_cluster
            out += [(need, where) for pattern, need in PY_NEEDS if pattern.search(text)
                    and not (need == {'kube'} and os.path.basename(path) == 'conftest.py')]
            for a, b in IMPORT.findall(text):
                todo += modules.get(a or b, [])
        else:
            code = '\n'.join(ln for ln in text.splitlines() if not ln.lstrip().startswith('#'))
            out += [(need, where) for pattern, need in SH_NEEDS if pattern.search(code)]
            todo += [os.path.join(ROOT, s) for s in re.findall(r'(tools/[\w/.-]+\.sh)', code)]
            todo += [os.path.join(os.path.dirname(path), s) for s in re.findall(r'(?<![\w/.])([\w-]+\.sh)\b', code)]
    return out


@pytest.mark.parametrize('target', documented_targets())
def test_a_target_run_alone_installs_the_groups_its_recipe_uses(target):
    groups, lines = resolved(target)
    missing = sorted('%s (for %s)' % ('/'.join(sorted(need)), where) for need, where in needs(lines)
                     if not need & groups)
    assert not missing, '`make %s` on a fresh machine installs only %s; it also needs %s' % (
        target, ' '.join(sorted(groups)), '; '.join(missing))


def test_the_rule_sees_what_the_ee_target_uses():
    # the check itself: ee's recipe reaches the registry (registry.sh, through the vgpu_image jobs' helper), Podman
    # and the API server, and the EE image's build scripts Podman and debootstrap
    found = needs(resolved('ee')[1])
    assert {'registry'} in [n for n, dummy in found] and {'kube'} in [n for n, dummy in found], found
    assert any(n == {'podman'} and w.startswith('tools/ee/build-ee.sh') for n, w in found), found
    assert any(n == {'podman', 'lab'} and w.startswith('tools/images/build-base-image.sh') for n, w in found), found


def test_a_target_that_others_name_adds_its_groups_to_theirs():
    # ee names ee-image and kube-apiserver, each with groups of its own; the run installs the union, each once
    assert resolved('ee')[0] == {'core', 'kube', 'podman', 'registry'}
    proc = subprocess.run(['make', '-n', '-C', ROOT, 'ee'], capture_output=True, text=True, check=False,
                          env=CLEAN_ENV)
    (call,) = [ln for ln in proc.stdout.splitlines() if 'tools/bootstrap-host.sh' in ln]
    assert call.split('bootstrap-host.sh', 1)[1].split() == ['core', 'kube', 'podman', 'registry'], call
    # run alone, each keeps its own
    assert resolved('ee-image')[0] == {'core', 'podman'} and resolved('kube-apiserver')[0] == {'core', 'kube'}
