# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A missing machine tool skips an integration test on a developer's machine and fails it in CI and `make test`
(tests/integration/tool_gate.py): there the install step ran, so a missing tool is a broken install step."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SPEC = importlib.util.spec_from_file_location('tool_gate', os.path.join(ROOT, 'tests', 'integration', 'tool_gate.py'))
tool_gate = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(tool_gate)


def test_a_missing_tool_skips_on_a_developer_machine(tmp_path):
    for environ in ({}, {'GPUVIRT_REQUIRE_TOOLS': ''}, {'GPUVIRT_REQUIRE_TOOLS': '0'}):
        with pytest.raises(pytest.skip.Exception, match=r'needs lspci \(Debian package pciutils\)'):
            tool_gate.need('lspci', 'pciutils', environ, path=str(tmp_path))


def test_a_missing_tool_fails_where_the_tools_are_required(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=r'needs dockerd \(Debian package docker.io\).*install step'):
        tool_gate.need('dockerd', 'docker.io', {'GPUVIRT_REQUIRE_TOOLS': '1'}, path=str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match='needs root'):
        tool_gate.lacking('needs root', {'GPUVIRT_REQUIRE_TOOLS': '1'})
    # a value that is neither on nor off is refused, not read as off
    with pytest.raises(pytest.fail.Exception, match="GPUVIRT_REQUIRE_TOOLS is 'yes'"):
        tool_gate.need('dockerd', 'docker.io', {'GPUVIRT_REQUIRE_TOOLS': 'yes'}, path=str(tmp_path))


def test_a_present_tool_is_found_either_way(tmp_path):
    tool = tmp_path / 'lspci'
    tool.write_text('#!/bin/sh\n')
    tool.chmod(0o755)
    for environ in ({}, {'GPUVIRT_REQUIRE_TOOLS': '1'}):
        assert tool_gate.need('lspci', 'pciutils', environ, path=str(tmp_path)) == str(tool)


def test_ci_and_make_test_require_the_tools():
    with open(os.path.join(ROOT, '.ci', 'run'), encoding='utf-8') as f:
        assert re.search(r'^export GPUVIRT_REQUIRE_TOOLS=1$', f.read(), re.M)
    # what a stage of `make test` sees: a probe target made a prerequisite of test, the stages themselves not
    # remade (-o); and a target run alone sees nothing set
    probe = ['make', '--no-print-directory', '-C', ROOT, '--eval',
             'probe-env: ; @echo REQUIRE=$${GPUVIRT_REQUIRE_TOOLS-unset}', '--eval', 'test: probe-env']
    env = dict((k, v) for k, v in os.environ.items()
               if k not in ('GPUVIRT_REQUIRE_TOOLS', 'MAKEFLAGS', 'MFLAGS', 'MAKEOVERRIDES', 'MAKELEVEL'))
    # the stages as .ci/run reads them: the rule line "test: STAGE..." of make's database
    database = subprocess.run(['make', '-pq', '-C', ROOT, 'test'], capture_output=True, text=True, check=False,
                              env=env).stdout
    (line,) = [ln for ln in database.splitlines() if ln.startswith('test: ') and '=' not in ln]
    names = line.split(':', 1)[1].split()
    assert 'unit' in names and len(names) >= 4, names
    stages = [arg for name in names for arg in ('-o', name)]
    proc = subprocess.run(probe + stages + ['test'], capture_output=True, text=True, check=False, env=env)
    assert 'REQUIRE=1' in proc.stdout.splitlines(), proc.stdout + proc.stderr
    proc = subprocess.run(probe + ['probe-env'], capture_output=True, text=True, check=False, env=env)
    assert 'REQUIRE=unset' in proc.stdout.splitlines(), proc.stdout + proc.stderr


@pytest.mark.parametrize('path', ['tests/integration/discovery/test_real_host.py',
                                  'tests/integration/registry/test_docker_builder.py'])
def test_the_machine_dependent_tests_use_the_rule(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        text = f.read()
    assert 'from tool_gate import' in text and not re.search(r'pytest\.skip\(|skipif', text), path
