# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the registry CA file (host/ca_file.py): once, bounded, no link followed, a regular file by its
descriptor, and only a PEM certificate bundle comes back; the refusal says why without the content."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import ca_file
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

from pem_samples import CERT

SECRET = 'Sup3r-s3cret'
EXTRAVARS = '---\ngpuvirt_registry_password: %s\n' % SECRET

NAME = 'vgpu_manager_image_registry_ca_file'


def _refused(path, reason):
    with pytest.raises(ca_file.CaFileError) as err:
        ca_file.read_certificates(str(path), NAME)
    assert err.value.reason == reason
    assert str(err.value).startswith('%s %s ' % (NAME, path))
    assert SECRET not in str(err.value)
    return str(err.value)


def test_a_ca_bundle_is_read(tmp_path):
    path = tmp_path / 'ca.pem'
    path.write_text(CERT + CERT)
    assert ca_file.read_certificates(str(path), NAME) == CERT + CERT


def test_the_awx_extravars_file_is_refused_without_its_content(tmp_path):
    path = tmp_path / 'extravars'
    path.write_text(EXTRAVARS)
    assert 'is not a PEM certificate bundle (it holds no certificate block)' in _refused(path, 'not_pem')


def test_a_link_is_not_followed_even_to_a_certificate(tmp_path):
    (tmp_path / 'ca.pem').write_text(CERT)
    os.symlink(str(tmp_path / 'ca.pem'), str(tmp_path / 'link.pem'))
    assert 'a symbolic link, not followed' in _refused(tmp_path / 'link.pem', 'not_a_file')


def test_absent_directory_and_fifo_are_not_files(tmp_path):
    _refused(tmp_path / 'absent.pem', 'not_a_file')
    _refused(tmp_path, 'not_a_file')
    os.mkfifo(str(tmp_path / 'fifo'))
    assert 'a directory, device or FIFO' in _refused(tmp_path / 'fifo', 'not_a_file')


def test_at_most_the_bound_is_read(tmp_path, monkeypatch):
    path = tmp_path / 'big.pem'
    path.write_text(CERT * 2000)
    sizes = []
    real_read = os.read

    def counting_read(fd, size):
        sizes.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(ca_file.os, 'read', counting_read)
    assert 'larger than 65536 bytes' in _refused(path, 'not_pem')
    assert sum(sizes) == validators.PEM_BUNDLE_MAX + 1
