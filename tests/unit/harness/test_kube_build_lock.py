"""tools/kube/build.sh: one build of a directory at a time. make test's last stage starts its lanes at once, and
`make demo` builds in the background beside the lab disk, so a second caller must wait for the first build and
then find its binaries, never start a second build into the same directory."""
import os
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / 'tools' / 'kube' / 'build.sh'


def _tools_but_go(tmp_path):
    """A PATH with only what build.sh runs before its tool check: a build that gets that far stops there (exit 2)
    instead of fetching and compiling."""
    path = tmp_path / 'path'
    path.mkdir()
    for tool in ('dirname', 'mkdir', 'flock', 'sh'):
        (path / tool).symlink_to(shutil.which(tool))
    return str(path)


def test_a_second_build_waits_for_the_first_and_finds_its_binaries(tmp_path):
    kube = tmp_path / 'kube'
    (kube / 'bin').mkdir(parents=True)
    # the first build: holds the lock, then leaves the two binaries (what build.sh installs at its end)
    first = subprocess.Popen(['flock', str(kube / '.build.lock'), 'sh', '-c',
                              'sleep 2; for b in kube-apiserver kubectl; do printf "#!/bin/sh\\n" >"$0/$b"; '
                              'chmod +x "$0/$b"; done', str(kube / 'bin')])
    time.sleep(0.5)
    started = time.monotonic()
    # no go on PATH: a build that did not wait would stop at its tool check (exit 2), not exit 0
    env = dict(os.environ, GPUVIRT_KUBE_DIR=str(kube), PATH=_tools_but_go(tmp_path))
    done = subprocess.run([shutil.which('bash'), str(BUILD)], env=env, capture_output=True, text=True, timeout=60, check=False)
    first.wait(timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'another build of %s is under way; waiting for it' % (kube / 'bin') in done.stdout
    assert time.monotonic() - started >= 1.0
    assert not (kube / 'src').exists()


def test_without_the_binaries_after_the_wait_it_builds_itself(tmp_path):
    # the first build failed (no binaries): the waiter goes on to its own build; here it stops at the tool check
    kube = tmp_path / 'kube'
    kube.mkdir()
    env = dict(os.environ, GPUVIRT_KUBE_DIR=str(kube), PATH=_tools_but_go(tmp_path))
    done = subprocess.run([shutil.which('bash'), str(BUILD)], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2 and "'go' not found" in done.stderr, done.stdout + done.stderr
