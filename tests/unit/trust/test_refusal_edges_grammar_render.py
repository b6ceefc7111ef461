# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The edges of the grammars (validators.py) and of the render directory's own-file checks (render.py,
render_session.py) that the mutation scopes trust-grammar and trust-render (tools/mutation/scopes.json) found no
test pinning: each bound taken at its value and refused one past it, each check refusing exactly what it names
while its valid neighbour passes, and each refusal's message naming what it refused."""
from __future__ import annotations

import base64

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators as v

CA = 'vgpu_manager_image_registry_ca_file'


# validators.shown: the printable form of a refused value in a message


def test_a_shown_value_of_80_characters_is_kept_whole_and_one_of_81_is_cut_to_80_and_dots():
    assert v.shown('a' * 78) == "'" + 'a' * 78 + "'"  # the repr: 80 characters
    assert v.shown('a' * 79) == "'" + 'a' * 79 + '...'  # the repr: 81 characters, its first 80 kept
    assert v.shown('a' * 5000) == "'" + 'a' * 79 + '...'
    assert v.shown('abcdef', cap=8) == "'abcdef'" and v.shown('abcdefg', cap=8) == "'abcdefg..."


class _Raw:
    """A value whose repr holds raw characters (a str's repr escapes control characters itself)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def test_a_shown_value_keeps_printable_ascii_from_blank_to_tilde_and_marks_anything_else():
    assert v.shown(' a~') == "' a~'"
    assert v.shown(_Raw(' !}~')) == ' !}~'
    assert v.shown(_Raw('\x1f\x7f\x80\u00e9\u200b\U0001f600')) == '??????'
    assert v.shown('gr\u00fc\u00dfe') == "'gr??e'"  # printable to Python, so kept by repr: marked
    assert v.shown('a\nb\x00') == "'a\\nb\\x00'"  # escaped by repr: printable ASCII already


# validators.pem_certificates: each block one DER SEQUENCE whose definite length fills it


def _pem(der):
    body = base64.b64encode(der).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return '\n'.join(['-----BEGIN CERTIFICATE-----'] + lines + ['-----END CERTIFICATE-----']) + '\n'


# (what the DER header is, the DER): a SEQUENCE of 0x7f or 0x80 bytes in each form X.690 8.1.3 allows
DER_TAKEN = [
    ('short form, 127 bytes', b'\x30\x7f' + b'\x05' * 0x7f),
    ('long form of one length byte, 128 bytes', b'\x30\x81\x80' + b'\x05' * 0x80),
    ('long form of four length bytes', b'\x30\x84\x00\x00\x00\x80' + b'\x05' * 0x80),
]
DER_REFUSED = [
    ('indefinite length (0x80) of 128 bytes', b'\x30\x80' + b'\x05' * 0x80),
    ('long form of five length bytes', b'\x30\x85\x00\x00\x00\x00\x80' + b'\x05' * 0x80),
    ('long form of a length below 128', b'\x30\x81\x7f' + b'\x05' * 0x7f),
]


@pytest.mark.parametrize('der', [d for _, d in DER_TAKEN], ids=[i for i, _ in DER_TAKEN])
def test_a_certificate_of_a_definite_length_in_at_most_four_bytes_is_taken(der):
    assert v.pem_certificates(_pem(der), CA) == _pem(der)


@pytest.mark.parametrize('der', [d for _, d in DER_REFUSED], ids=[i for i, _ in DER_REFUSED])
def test_a_certificate_of_an_indefinite_overlong_or_non_minimal_length_is_refused(der):
    with pytest.raises(v.ValidationError, match='^%s is not a PEM certificate bundle \\(certificate 1 does not decode '
                                                'to one DER certificate\\)' % CA):
        v.pem_certificates(_pem(der), CA)


def test_a_certificate_bundle_is_taken_up_to_64_kib_and_refused_one_byte_past():
    cert = _pem(DER_TAKEN[0][1])
    at_bound = (cert + '\n' * (v.PEM_BUNDLE_MAX - len(cert))).encode()  # blank lines after a block are allowed
    assert len(at_bound) == 65536
    assert v.pem_certificates(at_bound, CA) == at_bound.decode()
    with pytest.raises(v.ValidationError, match=r'^%s is not a PEM certificate bundle \(it is larger than 65536 '
                                                r'bytes\)' % CA):
        v.pem_certificates(at_bound + b'\n', CA)
