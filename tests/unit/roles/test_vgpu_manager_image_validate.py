# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OS-tag check of roles/vgpu_manager_image/tasks/validate.yml, evaluated by Ansible's own templating on the
condition as the role file writes it."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
VALIDATE = os.path.join(ROOT, 'roles', 'vgpu_manager_image', 'tasks', 'validate.yml')


def _os_tag_check():
    with open(VALIDATE) as f:
        tasks = yaml.safe_load(f)
    (task,) = [t for t in tasks if t.get('name', '').startswith('Check every OS tag')]
    return task['ansible.builtin.assert']['that']


def _passes(item):
    templar = Templar(loader=DataLoader(), variables={'item': item})
    return templar.template(trust_as_template('{{ %s }}' % _os_tag_check()))


@pytest.mark.parametrize('tag', ['rhcos4.18', 'ubuntu22.04', 'rhel9.4', 'rocky8.10'])
def test_os_tags_accepted(tag):
    assert _passes(tag) is True


@pytest.mark.parametrize('tag', ['rhcos4.18\n', 'ubuntu22.04\n', 'rhcos4.18\nx', 'rhcos', 'RHCOS4.18', '4.18',
                                 ' rhcos4.18', 'rhcos4.18 ', 'rhcos4.18/x'])
def test_os_tags_refused_with_a_trailing_newline_too(tag):
    # a trailing newline would become part of an image tag and a file name
    assert _passes(tag) is False
