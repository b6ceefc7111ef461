# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Survey answers reach the roles as data. AWX / Automation Controller writes a job's extra variables for
ansible-runner with every value it did not take from the job template itself tagged ``!unsafe`` (setting
ALLOW_JINJA_IN_EXTRA_VARS, default "template": "Jinja in extra vars only on job template definitions; prompted and
survey variables are not templated", Red Hat AAP 2.5 "Configuring automation execution", 20.8). That only holds
while no role re-templates such a value; this runs the first role every phase runs (cluster) with an answer
written the way AWX writes it, and shows the payload is refused by its grammar, never executed."""

from __future__ import annotations

from play_runner import run_play

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The cluster settings
      ansible.builtin.include_role:
        name: gpuvirt.provision.cluster
"""


def _run(tmp_path, tag):
    marker = tmp_path / 'MARKER'
    payload = "{{ lookup('ansible.builtin.pipe', 'touch %s') }}" % marker
    extra = tmp_path / 'extra_vars.yml'
    extra.write_text("gpuvirt_cluster_mode: render\ngpuvirt_render_dir: %s\ngpuvirt_platform: %s '%s'\n"
                     % (tmp_path / 'out', tag, payload.replace("'", "''")))
    rc, out = run_play(tmp_path, PLAY, args=['-e', '@%s' % extra])
    return rc, out, marker


def test_a_survey_answer_as_awx_writes_it_is_refused_not_run(tmp_path):
    rc, out, marker = _run(tmp_path, '!unsafe')
    assert rc != 0, out
    assert 'gpuvirt_platform' in out and 'lookup(' in out, out
    assert not marker.exists(), out


def test_the_same_answer_without_the_tag_would_run(tmp_path):
    # the harness can tell: a template in a trusted extra variable runs (what the CLI operator may do on purpose)
    rc, out, marker = _run(tmp_path, '')
    assert marker.exists(), out
