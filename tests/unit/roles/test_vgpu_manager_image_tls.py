# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TLS verification of the vgpu_manager_image role is derived from vgpu_manager_image_validate_certs only: the
role's validate.yml run for real (ansible-playbook), with the derived fact set from outside as -e does it."""

from __future__ import annotations

import glob
import os
import re

import pytest

from play_runner import run_play
from vgpu_image_inputs import INPUTS, VALIDATE_PLAY as PLAY

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def _run(tmp_path, *args, **extra):
    rc, out = run_play(tmp_path, PLAY, dict(INPUTS, **extra), args)
    return rc, ' '.join(out.split())


@pytest.mark.parametrize('value', ['false', 'yes-please', 'true'])
def test_the_retired_fact_name_is_refused_naming_the_input_to_use(tmp_path, value):
    # -e name=value, as a user types it: extra vars beat set_fact, so this used to turn TLS off (or reach argv)
    rc, out = _run(tmp_path, '-e', 'vgpu_manager_image_tls_verify=' + value)
    assert rc != 0, out
    assert 'vgpu_manager_image_tls_verify is set ("%s")' % value in out, out
    assert 'set vgpu_manager_image_validate_certs (true or false) instead' in out, out
    # refused first: no flag was derived
    assert 'Check the vgpu_manager_image flags' not in out, out


def test_the_internal_fact_set_from_outside_is_refused(tmp_path):
    rc, out = _run(tmp_path, '-e', '__vgpu_manager_image_tls_verify=false')
    assert rc != 0, out
    assert 'internal to the vgpu_manager_image role and was set from outside' in out, out


def test_validate_certs_false_turns_tls_off_with_the_warning(tmp_path):
    rc, out = _run(tmp_path, '-e', 'vgpu_manager_image_validate_certs=false')
    assert 'WARNING: vgpu_manager_image_validate_certs is "false"' in out, out


def test_validate_certs_typo_is_refused(tmp_path):
    rc, out = _run(tmp_path, '-e', 'vgpu_manager_image_validate_certs=yes-please')
    assert rc != 0 and 'vgpu_manager_image_validate_certs' in out and 'yes-please' in out, out


def test_every_tls_verify_argument_is_a_literal_true_or_false_of_validate_certs_in_its_own_task():
    texts = {}
    for path in glob.glob(os.path.join(ROOT, 'roles', 'vgpu_manager_image', 'tasks', '*.yml')):
        with open(path, encoding='utf-8') as f:
            texts[os.path.basename(path)] = f.read()
    uses = [(name, line.strip()) for name, text in texts.items() for line in text.splitlines()
            if 'tls-verify=' in line and not line.lstrip().startswith('#')]
    assert len(uses) == 4, uses  # podman login, skopeo inspect (registry, verify), podman push
    for name, line in uses:
        # read in the task itself: extra variables beat set_fact, so a derived fact could be replaced after its check
        assert re.search(r"\('true' if vgpu_manager_image_validate_certs \| gpuvirt\.provision\.strict_bool\("
                         r"'vgpu_manager_image_validate_certs'\) else 'false'\)", line), (name, line)
