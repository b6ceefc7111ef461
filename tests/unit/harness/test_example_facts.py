# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The example inventory's saved facts are what tools/example/facts.yml makes of the real captures, byte for byte.

The tool runs into a scratch directory and each file is compared with the shipped one: a change to discovery or to
the saved-facts format that the example's files do not follow fails here (regenerate them with the tool), and so
does a tool that writes something of the machine it ran on (a temporary path), which would rewrite all six files
on every run and show a one-host change as six."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
SHIPPED = os.path.join(ROOT, 'inventories', 'example', '.gpuvirt_facts')


def run_tool(out, reference):
    cmd = ['ansible-playbook', '-i', 'localhost,', os.path.join(ROOT, 'tools', 'example', 'facts.yml'),
           '-e', 'reference=%s' % reference, '-e', 'out=%s' % out, '-e', 'ansible_python_interpreter=%s' % sys.executable]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_the_example_facts_are_the_tools_output_and_name_no_machine_path(tmp_path, reference_dir):
    out = tmp_path / 'facts'
    run_tool(out, reference_dir)
    made = sorted(os.listdir(out))
    assert made == sorted(os.listdir(SHIPPED)), (made, sorted(os.listdir(SHIPPED)))
    for name in made:
        text = (out / name).read_text()
        assert str(tmp_path) not in text and '/tmp/' not in text, name
        with open(os.path.join(SHIPPED, name)) as f:
            assert text == f.read(), ('%s differs from the tool\'s output: run ansible-playbook tools/example/facts.yml '
                                      '-e reference=$GPUVIRT_REFERENCE' % name)
