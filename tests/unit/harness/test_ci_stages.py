# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CI's stages use both cores where one would idle (docs/testing.md, "CI time"): `make unit` runs the unit tests on
every core (pytest-xdist, pinned with the rest of the toolchain), each test file whole on one worker, and sanity and
lint run at once as one stage of `make test`."""
from __future__ import annotations

import os
import re
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


# the settings of a make that runs these tests (`make unit UNIT_JOBS=0` passes UNIT_JOBS=0 down through MAKEFLAGS)
# or of the caller's environment are not the defaults under test
CLEAN_ENV = dict((k, v) for k, v in os.environ.items()
                 if k not in ('MAKEFLAGS', 'MFLAGS', 'MAKEOVERRIDES', 'MAKELEVEL', 'UNIT_JOBS', 'STATIC_JOBS',
                              'STAGE_JOBS'))


def dry_run(target, *variables):
    """The commands `make TARGET` runs (make -n prints them without running them)."""
    proc = subprocess.run(['make', '-n', '-C', ROOT, target] + list(variables), capture_output=True, text=True,
                          check=False, env=CLEAN_ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def pytest_line(*variables):
    """The pytest command `make unit` runs."""
    (line,) = [ln for ln in dry_run('unit', *variables) if '/pytest ' in ln and 'tests/unit' in ln]
    return line.split()


def stages_of_make_test():
    """The stages of `make test`, read as .ci/run reads them (the rule line of `test` in make's database)."""
    proc = subprocess.run(['make', '-pq', '-C', ROOT, 'test'], capture_output=True, text=True, check=False,
                          env=CLEAN_ENV)
    # a line with = is a target-specific variable of test (GPUVIRT_REQUIRE_TOOLS), not its rule: .ci/run skips it too
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith('test: ') and '=' not in ln]
    return line.split(':', 1)[1].split()


def test_the_unit_tests_run_on_every_core_one_file_per_worker():
    argv = pytest_line()
    # logical: one worker per CPU (xdist's auto counts physical cores where psutil is installed)
    assert argv[argv.index('-n') + 1] == 'logical', argv
    # loadfile: a module-scoped fixture (tests/unit/roles/test_role_paths_strict.py starts every playbook run of its
    # module at once) is made on one worker only, and a file's tests keep their order
    assert argv[argv.index('--dist') + 1] == 'loadfile', argv
    # UNIT_JOBS=0: one process, as before (xdist's -n 0)
    argv = pytest_line('UNIT_JOBS=0')
    assert argv[argv.index('-n') + 1] == '0', argv


def test_pytest_xdist_is_pinned_with_the_toolchain():
    with open(os.path.join(ROOT, 'requirements-dev.txt'), encoding='utf-8') as handle:
        pins = [line.strip() for line in handle if line.strip() and not line.startswith('#')]
    assert [p for p in pins if re.fullmatch(r'pytest-xdist==[0-9.]+', p)], pins


def test_sanity_and_lint_are_one_stage_run_two_at_once():
    stages = stages_of_make_test()
    assert 'sanity-lint' in stages and 'sanity' not in stages and 'lint' not in stages, stages
    assert stages.index('unit') < stages.index('sanity-lint') < stages.index('integration-molecule'), stages
    (line,) = [ln for ln in dry_run('sanity-lint') if '--output-sync=target' in ln]
    argv = line.split()
    assert '-j2' in argv and argv[-2:] == ['sanity', 'lint'], argv
    # STATIC_JOBS=1: one after the other
    (line,) = [ln for ln in dry_run('sanity-lint', 'STATIC_JOBS=1') if '--output-sync=target' in ln]
    assert '-j1' in line.split(), line


def last_stage_line(*variables):
    (line,) = [ln for ln in dry_run('integration-molecule', *variables) if 'tools/run-in-lanes.sh' in ln]
    return line.split()


def test_the_last_stage_runs_the_cold_demo_first_two_at_a_time_and_the_vm_scenario_and_ee_in_test_extended():
    stages = stages_of_make_test()
    # the last stage, and the only one that holds the lab or an integration target
    assert stages[-1] == 'integration-molecule', stages
    assert 'demo-cold-check' not in stages and 'molecule' not in stages and 'integration' not in stages, stages
    argv = last_stage_line()
    # two lanes: each keeps about one core busy, and a third slows the lab guest most (docs/testing.md, "CI time"),
    # in the order listed (tools/run-in-lanes.sh; make -j2 starts targets that wait for a slot newest first)
    script = [a for a in argv if a.endswith('tools/run-in-lanes.sh')][0]
    lanes, targets = argv[argv.index(script) + 1], argv[argv.index(script) + 2:]
    assert lanes == '2', argv
    # the cold demo first (with cluster_kubevirt, the longest lane), the default scenario last, no vm scenario
    assert targets[0] == 'demo-cold-check' and targets[-1] == 'molecule-default', targets
    assert 'integration-cluster-kubevirt' in targets, targets
    assert not {'molecule-vm', 'ee', 'integration-site'} & set(targets), targets
    assert '3' in last_stage_line('STAGE_JOBS=3'), 'STAGE_JOBS sets the lanes'
    # the vm scenario (on the disk the cold demo check builds), the lab's day-2 check, the EE jobs and site.yml end to
    # end run in make test-extended
    (line,) = [ln for ln in dry_run('test-extended') if 'HOST_BOOTSTRAPPED=1' in ln]
    assert line.split()[-5:] == ['demo-cold-check', 'molecule-vm', 'lab-day2-check', 'ee', 'integration-site'], line


def test_run_in_lanes_starts_targets_in_the_order_given_and_fails_when_one_fails(tmp_path):
    # a Makefile where each target appends its name when it starts; a shared prerequisite, as kube-apiserver is.
    # The lanes free at clearly different times (a after 1 s, c after 1.5 s, b after 5 s), so each start follows the
    # one before it by a second or more even on a loaded machine: with equal times c and d start together and
    # their two appends race (seen on a busy 2-core run)
    (tmp_path / 'Makefile').write_text(
        '.PHONY: k a b c d fail\n'
        'k: ; @true\n'
        'a: k ; @echo $@ >> started; sleep 1\n'
        'b: k ; @echo $@ >> started; sleep 5\n'
        'c: k ; @echo $@ >> started; sleep 0.5\n'
        'd: k ; @echo $@ >> started\n'
        'fail: ; @echo $@ >> started; exit 3\n')
    script = os.path.join(ROOT, 'tools', 'run-in-lanes.sh')
    env = dict(CLEAN_ENV, MAKE='make -C %s' % tmp_path)
    proc = subprocess.run([script, '2', 'a', 'b', 'c', 'd'], capture_output=True, text=True, check=False, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the first two together, then the rest in the order given, each in the first lane to free (make -j2 starts
    # the last waiting target first)
    started = (tmp_path / 'started').read_text().split()
    assert sorted(started[:2]) == ['a', 'b'] and started[2:] == ['c', 'd'], started
    assert proc.stdout.count('lanes: make ') == 4, proc.stdout
    (tmp_path / 'started').unlink()
    proc = subprocess.run([script, '2', 'fail', 'a'], capture_output=True, text=True, check=False, env=env)
    # a failed target fails the stage, after the others ran
    assert proc.returncode == 1 and 'lanes: make fail ended' in proc.stdout and 'exit 2' in proc.stdout, proc.stdout
    assert sorted((tmp_path / 'started').read_text().split()) == ['a', 'fail']
