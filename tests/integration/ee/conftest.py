# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the AWX job tests: the images `make ee` builds must be there, and the GPU host stand-in reached
over SSH with the Machine credential made for it."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ee_jobs import IMAGE, RUNNER, SSH_HOST_IMAGE, add_become_user, wait_for_sshd  # noqa: E402


@pytest.fixture(scope='module', autouse=True)
def ee_ready():
    if not os.path.exists(RUNNER):
        pytest.fail('%s missing: run make ee' % RUNNER)
    for image in (IMAGE, SSH_HOST_IMAGE):
        if subprocess.run(['podman', 'image', 'exists', image], check=False).returncode != 0:
            pytest.fail('image %s missing: run make ee' % image)


@pytest.fixture(scope='module')
def machine(tmp_path_factory):
    """A GPU host stand-in reached over SSH (tools/ee/Containerfile.sshhost), and the AWX Machine credential for it:
    a user with an SSH key made here, become method sudo with a password (sudo asks for it)."""
    keys = tmp_path_factory.mktemp('machine-credential')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'gpuvirt-ee-test', '-f', str(keys / 'id')],
                   check=True)
    name = 'gpuvirt-ee-ssh-%s' % secrets.token_hex(4)
    user, become_password = 'gpuadmin', 'Bc-' + secrets.token_hex(12)
    subprocess.run(['podman', 'run', '-d', '--rm', '--name', name, '-p', '127.0.0.1::22', SSH_HOST_IMAGE],
                   check=True, capture_output=True)
    try:
        add_become_user(name, user, become_password)
        with open(str(keys / 'id.pub'), 'rb') as handle:
            subprocess.run(['podman', 'exec', '-i', name, 'sh', '-c',
                            'cat >/home/{u}/.ssh/authorized_keys && chown {u} /home/{u}/.ssh/authorized_keys'
                            .format(u=user)], stdin=handle, check=True)
        port = int(subprocess.run(['podman', 'port', name, '22/tcp'], check=True, capture_output=True,
                                  text=True).stdout.strip().rsplit(':', 1)[1])
        wait_for_sshd(name, port)
        yield {'container': name, 'port': port, 'user': user, 'become_password': become_password,
               'private_key': (keys / 'id').read_text()}
    finally:
        subprocess.run(['podman', 'rm', '-f', '-t', '0', name], check=False, capture_output=True)
