# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every task that writes into the render directory hands over this run's render session: the render lock is this
run's only by the token its open step wrote (docs/gitops.md), so a writer called without it refuses the run's own
lock as another's, and the render stops halfway (a Secret-carrying copy of a render task once lacked it)."""
from __future__ import annotations

import glob
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
WRITERS = ('gpuvirt.provision.render_manifests', 'gpuvirt.provision.render_file')


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ('block', 'rescue', 'always', 'tasks', 'pre_tasks', 'post_tasks', 'handlers'):
            yield from _tasks(node.get(key))


def test_every_render_writer_task_passes_the_session():
    missing, found = [], 0
    for path in sorted(glob.glob(os.path.join(ROOT, 'roles', '*', 'tasks', '**', '*.yml'), recursive=True)
                       + glob.glob(os.path.join(ROOT, 'playbooks', '*.yml'))):
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle)
        for task in _tasks(data):
            for writer in WRITERS:
                if isinstance(task.get(writer), dict):
                    found += 1
                    if 'session' not in task[writer]:
                        missing.append('%s: %s' % (os.path.relpath(path, ROOT), task.get('name')))
    assert found >= 5
    assert missing == []
