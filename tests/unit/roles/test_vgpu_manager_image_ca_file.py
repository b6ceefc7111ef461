# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the registry CA file of the vgpu_manager_image role is (vgpu_manager_image_registry_ca_file_on): the role's
validate.yml run for real (ansible-playbook). The build on another host than the controller, with the file AWX
writes from the registry credential, is run in tests/integration/ee/test_awx_job_vgpu_image.py."""

from __future__ import annotations

import pathlib
import re

import yaml
from pem_samples import CERT
from play_runner import run_play
from vgpu_image_inputs import INPUTS, ROLE_PLAY as MAIN, VALIDATE_PLAY as PLAY

ROLE = pathlib.Path(__file__).resolve().parents[3] / 'roles' / 'vgpu_manager_image'


def _run(tmp_path, play=PLAY, **extra):
    rc, out = run_play(tmp_path, play, dict(INPUTS, **extra), ())
    return rc, ' '.join(out.split())


def test_a_missing_controller_file_names_the_controller_and_the_option(tmp_path):
    rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(tmp_path / 'absent.pem'),
                   vgpu_manager_image_registry_ca_file_on='controller')
    assert rc != 0, out
    assert 'absent.pem is not a file on the controller (vgpu_manager_image_registry_ca_file_on: controller)' in out, out


def test_a_missing_build_host_file_names_the_host(tmp_path):
    rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(tmp_path / 'absent.pem'))
    assert rc != 0, out
    assert 'absent.pem is not a file on localhost (vgpu_manager_image_registry_ca_file_on: build_host)' in out, out


def test_an_unknown_place_is_refused_before_any_task(tmp_path):
    rc, out = _run(tmp_path, play=MAIN, vgpu_manager_image_registry_ca_file='/etc/ssl/ca.pem',
                   vgpu_manager_image_registry_ca_file_on='buildhost')
    assert rc != 0, out
    assert 'vgpu_manager_image_registry_ca_file_on' in out and 'buildhost' in out, out
    assert 'Look at the registry CA file' not in out, out


# The path may come from an AWX launch prompt and the file is sent to the build host (world-readable under
# /etc/docker/certs.d with Docker): a file that is not a PEM certificate bundle, such as the job's extravars with
# the credential-injected password, is refused before any change, naming the variable, without its content.
SECRET = 'Sup3r-s3cret-from-the-credential'
EXTRAVARS = '---\ngpuvirt_registry_password: %s\n' % SECRET
PEM_REFUSAL = 'vgpu_manager_image_registry_ca_file %s is not a PEM certificate bundle (it holds no certificate block)'


def _ca_task_ok(out):
    return re.search(r'Check the registry CA file is a PEM certificate bundle\] \**\s*ok: \[localhost\]', out)


def test_the_awx_extravars_on_the_controller_is_refused_and_not_shown(tmp_path):
    path = tmp_path / 'extravars'
    path.write_text(EXTRAVARS)
    rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(path),
                   vgpu_manager_image_registry_ca_file_on='controller')
    assert rc != 0, out
    assert PEM_REFUSAL % path + ':' in out and 'on the controller. Nothing was sent to the build host' in out, out
    assert SECRET not in out and 'gpuvirt_registry_password' not in out, out


def test_a_key_on_the_build_host_is_refused(tmp_path):
    path = tmp_path / 'registry.key'
    path.write_text('-----BEGIN PRIVATE KEY-----\nU3VwM3I=\n-----END PRIVATE KEY-----\n')
    rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(path))
    assert rc != 0, out
    assert 'is not a PEM certificate bundle (it holds a private key)' in out and 'on localhost.' in out, out
    assert 'U3VwM3I' not in out, out


def test_a_link_is_not_followed(tmp_path):
    (tmp_path / 'ca.pem').write_text(CERT)
    (tmp_path / 'link.pem').symlink_to(tmp_path / 'ca.pem')
    rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(tmp_path / 'link.pem'),
                   vgpu_manager_image_registry_ca_file_on='controller')
    assert rc != 0, out
    assert 'link.pem is not a file on the controller' in out and 'a symbolic link, not followed' in out, out


def test_a_certificate_passes_on_either_side(tmp_path):
    (tmp_path / 'ca.pem').write_text(CERT)
    for where in ('controller', 'build_host'):
        rc, out = _run(tmp_path, vgpu_manager_image_registry_ca_file=str(tmp_path / 'ca.pem'),
                       vgpu_manager_image_registry_ca_file_on=where)
        assert _ca_task_ok(out), out
        assert 'is not a PEM certificate bundle' not in out and 'is not a file on' not in out, out


def test_registry_yml_writes_the_checked_text_never_the_path_again():
    """Both copies of the CA (the --cert-dir one and Docker's) take the text validate.yml read and checked: a
    second read of the path could see another file (a link swapped in after the check)."""
    tasks = yaml.safe_load((ROLE / 'tasks' / 'registry.yml').read_text())
    copies = [t['ansible.builtin.copy'] for t in tasks if 'ca.crt' in str(t.get('ansible.builtin.copy', {}))]
    assert len(copies) == 2, copies
    for copy in copies:
        # and checked again in the task that writes it (extra variables beat a registered result)
        assert copy.get('content') == ("{{ __vgpu_manager_image_ca.content | gpuvirt.provision.checked("
                                       "'pem_certificates', 'vgpu_manager_image_registry_ca_file') }}"), copy
        assert 'src' not in copy and 'remote_src' not in copy, copy
