# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's filters are loaded once, in the controller's process, by the launch check every playbook's
first play calls in its ``hosts:``: each task's worker (a fork of that process) then starts with them loaded instead
of compiling every filter file and its module_utils again (Ansible's Jinja2Loader loads the whole filter directory to
find one name; the collection loader compiles from source on every import).

What a worker starts with is observed in a real ansible-playbook run: the worker class is wrapped so that each task's
worker writes down, before it runs the task, which of the collection's filter modules it already holds."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
PREFIX = 'ansible_collections.gpuvirt.provision.plugins.filter.'
UTILS = 'ansible_collections.gpuvirt.provision.plugins.module_utils.'
FILTER_FILES = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, 'plugins', 'filter'))
                      if name.endswith('.py') and name != '__init__.py')

# ansible-playbook, with each task's worker noting the filter modules it was forked holding
RUNNER = r'''
import json, os, sys
from ansible.executor.process import worker
_run = worker.WorkerProcess._run
def noting(self):
    with open(os.environ['NOTES'], 'a') as handle:
        handle.write(json.dumps({'task': self._task.get_name(),
                                 'held': sorted(m for m in sys.modules if m.startswith(%r)),
                                 'utils': sorted(m for m in sys.modules if m.startswith(%r))}) + '\n')
    return _run(self)
worker.WorkerProcess._run = noting
from ansible.cli.playbook import main
sys.argv[0] = 'ansible-playbook'
main()
''' % (PREFIX, UTILS)

PLAY = '''
- name: A play whose host selection is the launch check, as every playbook's first play
  hosts: "{{ lookup('gpuvirt.provision.launch_check', 'localhost') }}"
  gather_facts: false
  tasks:
    - name: A task that uses a filter of the collection
      ansible.builtin.debug:
        msg: "{{ 'yes' | gpuvirt.provision.strict_bool('some_flag') }}"
'''


def _notes(tmp_path, play):
    (tmp_path / 'play.yml').write_text(play)
    runner = tmp_path / 'runner.py'
    runner.write_text(RUNNER)
    notes = tmp_path / 'notes.jsonl'
    env = dict(os.environ, HOME=str(tmp_path), NOTES=str(notes))
    proc = subprocess.run([sys.executable, str(runner), '-i', 'localhost,', '-c', 'local',
                           '-e', 'ansible_python_interpreter=%s' % sys.executable, str(tmp_path / 'play.yml')],
                          capture_output=True, text=True, check=False, env=dict(
                              env, GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS='ansible_python_interpreter'), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"msg": true' in proc.stdout or 'msg: true' in proc.stdout, proc.stdout
    return [json.loads(line) for line in notes.read_text().splitlines()]


def test_a_task_s_worker_starts_with_every_filter_of_the_collection_loaded(tmp_path):
    (note,) = _notes(tmp_path, PLAY)
    assert note['task'] == 'A task that uses a filter of the collection'
    assert FILTER_FILES, 'no filter files found'
    assert note['held'] == [PREFIX + name for name in FILTER_FILES]
    # and the module_utils the filters use (imported lazily, at a filter's first use, where nothing loaded them)
    for name in ('model.validators', 'model.fleet', 'manifests.k8s_compare', 'host.saved_facts'):
        assert UTILS + name in note['utils'], name


def test_without_the_launch_check_a_worker_starts_with_none(tmp_path):
    # the control: the same task in a play that does not call the lookup; its worker loads the filters itself
    (note,) = _notes(tmp_path, PLAY.replace("\"{{ lookup('gpuvirt.provision.launch_check', 'localhost') }}\"",
                                            'localhost'))
    assert note['held'] == []
    assert note['utils'] == []


# Ansible's own scan, in a fresh process: every filter file loaded, as a task's worker loads them to find one name
SCAN = r'''
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader()
filter_loader.get('gpuvirt.provision.%s')
before = sorted(m for m in sys.modules if m.startswith(%r))
files = sorted(m for m in sys.modules if m.startswith(%r))
filter_loader.get('gpuvirt.provision.strict_bool').j2_function('yes', 'flag')
after = sorted(m for m in sys.modules if m.startswith(%r))
print(json.dumps([files, before, after]))
'''


def test_loading_the_filter_directory_imports_no_module_utils_and_a_filter_imports_only_its_own(tmp_path):
    proc = subprocess.run([sys.executable, '-c', SCAN % ('pool_traits', UTILS, PREFIX, UTILS)],
                          capture_output=True, text=True, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    files, before, after = json.loads(proc.stdout.splitlines()[-1])
    assert files == [PREFIX + name for name in FILTER_FILES]
    assert before == [], before
    # strict_bool's module and what it imports, not every filter's
    assert UTILS + 'model.validators' in after
    assert UTILS + 'manifests.vgpu_image' not in after and UTILS + 'host.lspci' not in after, after
