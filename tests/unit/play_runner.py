# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a play with ansible-playbook for the role tests: the real role code on localhost, with the controller's
own interpreter (interpreter discovery on this machine can find a broken pyenv shim)."""
from __future__ import annotations

import json
import subprocess
import sys


def run_play(tmp_path, play, extra_vars=None, args=(), name='play.yml', env=None):
    """Write ``play`` to ``tmp_path/name`` and run it; ``extra_vars`` go in as one JSON ``-e`` (typed values),
    ``args`` after it (``-e name=value`` strings, as a user types them); ``env``, when given, is the whole
    environment of ansible-playbook (and so of the modules it runs on localhost). Returns (rc, stdout + stderr)."""
    path = tmp_path / name
    path.write_text(play)
    extra = dict(extra_vars or {}, ansible_python_interpreter=sys.executable)
    cmd = ['ansible-playbook', '-i', 'localhost,', str(path), '-e', json.dumps(extra)] + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def shown(out, key):
    """The JSON value a play printed as ``KEY=<json>`` in a debug message."""
    line = next(ln for ln in out.splitlines() if key + '=' in ln)
    return json.loads(line.split(key + '=', 1)[1].rstrip('"'))
