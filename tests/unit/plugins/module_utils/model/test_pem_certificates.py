# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry CA bundle grammar (validators.pem_certificates): only PEM CERTIFICATE blocks of base64 lines, each
one DER SEQUENCE, pass; a file of passwords, a private key, text around the blocks, non-ASCII or more than 64 KiB
is refused naming the variable and never showing the content. Property tests with hypothesis as for the other
grammars; the timing test keeps the check linear on the largest input it reads."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators as v
from pem_samples import CERT

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
NAME = 'vgpu_manager_image_registry_ca_file'
SECRET = 'Sup3r-s3cret'
# what the reviewer's AWX launch sent: the job's extravars file, credential-injected password in it
EXTRAVARS = '---\ngpuvirt_registry_password: %s\ngpuvirt_registry_username: builder\n' % SECRET
KEY = '-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n' % base64.b64encode(SECRET.encode()).decode()


def pem(der, width=64, eol='\n'):
    body = base64.b64encode(der).decode()
    lines = [body[i:i + width] for i in range(0, len(body), width)]
    return eol.join(['-----BEGIN CERTIFICATE-----'] + lines + ['-----END CERTIFICATE-----']) + eol


def der_sequence(payload):
    n = len(payload)
    if n < 0x80:
        head = bytes([0x30, n])
    else:
        size = n.to_bytes((n.bit_length() + 7) // 8, 'big')
        head = bytes([0x30, 0x80 | len(size)]) + size
    return head + payload


def test_a_certificate_and_a_bundle_pass_unchanged():
    assert v.pem_certificates(CERT, NAME) == CERT
    assert v.pem_certificates(CERT.encode(), NAME) == CERT
    bundle = CERT + '\n' + CERT.replace('\n', '\r\n')
    assert v.pem_certificates(bundle, NAME) == bundle


def test_a_missing_final_newline_is_added():
    assert v.pem_certificates(CERT.rstrip('\n'), NAME) == CERT


@pytest.mark.parametrize('data, why', [
    (EXTRAVARS, 'it holds no certificate block'),
    (EXTRAVARS + CERT, 'text outside the certificate blocks'),
    (CERT + EXTRAVARS, 'text outside the certificate blocks'),
    (CERT.replace('MIIB', 'MIIB %s ' % SECRET), 'text outside the certificate blocks'),
    (KEY, 'it holds a private key'),
    (CERT + KEY, 'it holds a private key'),
    (CERT.replace('CERTIFICATE', 'TRUSTED CERTIFICATE'), 'it holds no certificate block'),
    ('', 'it holds no certificate block'),
    (CERT.replace('pS/yHVBUfT8GvrolZQ==', 'pS/yHVBUfT8GvrolZQ='), 'certificate 1 is not base64'),
    (CERT.replace('pS/yHVBUfT8GvrolZQ==', 'pS/yHVBUfT8GvrolZQ'), 'certificate 1 is not base64'),
    (CERT.replace('MIIB', 'MI==', 1), 'certificate 1 is not base64'),
    (pem(b'\x30\x03\x02\x01\x00\x00'), 'certificate 1 does not decode to one DER certificate'),
    (CERT + pem(base64.b64encode(SECRET.encode())), 'certificate 2 does not decode to one DER certificate'),
    (CERT.replace('CERTIFICATE-----\n', 'CERTIFICATE-----'), 'text outside the certificate blocks'),
    (CERT + 'x', 'text outside the certificate blocks'),
    (CERT.replace('\n', '\n\n'), 'text outside the certificate blocks'),
    (pem(der_sequence(b'\x05\x00' * 40), width=77), 'text outside the certificate blocks'),
    (CERT + '\x00', 'text outside the certificate blocks'),
    (CERT.replace('MIIB', 'MII\u00e9'), 'characters that are not ASCII'),
    (CERT.encode() + b'\xff', 'bytes that are not ASCII'),
    (CERT * (v.PEM_BUNDLE_MAX // len(CERT) + 1), 'larger than 65536 bytes'),
    (None, 'it is a NoneType, not text'),
    (['x'], 'it is a list, not text'),
])
def test_anything_else_is_refused_naming_the_variable_never_the_content(data, why):
    with pytest.raises(v.ValidationError) as err:
        v.pem_certificates(data, NAME)
    message = str(err.value)
    assert message.startswith(NAME + ' is not a PEM certificate bundle (')
    assert why in message
    assert SECRET not in message and 'gpuvirt_registry_password' not in message and 'MIIB' not in message


def test_der_lengths_short_and_long_form():
    for payload in (b'', b'\x05\x00', b'\x04\x7d' + b'a' * 125, b'\x04\x81\x80' + b'a' * 128, b'a' * 40000):
        assert v.pem_certificates(pem(der_sequence(payload)), NAME)
    assert v._der_sequence_fills(der_sequence(b'a' * 70000))
    # not minimal (long form for a short length), indefinite, truncated, trailing data, other tags
    for der in (b'\x30\x81\x05' + b'a' * 5, b'\x30\x80' + b'a' * 5, b'\x30\x05abc', b'\x30\x01ab', b'\x31\x00',
                b'\x30', b'', b'\x30\x85' + b'\x00' * 5, b'\x30\x82\x00'):
        assert not v._der_sequence_fills(der), der


# what a hostile or mistaken file may hold around, inside or instead of a certificate
PIECES = [CERT, CERT.replace('\n', '\r\n'), '\n', '\r\n', '\r', ' ', '\t', '\x00', 'é', '=', '-----', 'MIIB',
          '-----BEGIN CERTIFICATE-----\n', '-----END CERTIFICATE-----\n', 'QUJD\n', EXTRAVARS, KEY, '{{ 7 * 6 }}',
          '$(id)', '# comment\n', 'x' * 80 + '\n']


@SETTINGS
@given(st.one_of(st.lists(st.sampled_from(PIECES), max_size=8).map(''.join), st.text(max_size=200),
                 st.binary(max_size=200)))
def test_a_result_is_only_ever_certificate_blocks(data):
    try:
        text = v.pem_certificates(data, NAME)
    except v.ValidationError as e:
        assert str(e).startswith(NAME + ' is not a PEM certificate bundle (')
        assert SECRET not in str(e) and '{{' not in str(e)
        return
    assert v.PEM_BUNDLE_RE.fullmatch(text)
    assert SECRET not in text and 'PRIVATE' not in text and '{{' not in text and '$(' not in text
    # nothing but the blocks: dropping every block leaves blank lines only
    assert re.sub(r'-----BEGIN CERTIFICATE-----\r?\n(?:[A-Za-z0-9+/=]+\r?\n)+-----END CERTIFICATE-----', '',
                  text).strip() == ''


@SETTINGS
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4), st.integers(1, 76), st.sampled_from(['\n', '\r\n']))
def test_every_bundle_of_der_sequences_passes(payloads, width, eol):
    bundle = ''.join(pem(der_sequence(p), width, eol) for p in payloads)
    assert v.pem_certificates(bundle, NAME) == bundle


@pytest.mark.parametrize('data', [
    '-----BEGIN CERTIFICATE-----\n' + 'A\n' * 32000,
    ('-----BEGIN CERTIFICATE-----\n' + 'QUJD\n' * 10 + '-----END CERTIFICATE-----\n') * 500 + '\n' * 10000 + 'x',
    '\n' * 65000 + 'x',
    CERT + '\n' * 60000 + '-----BEGIN CERTIFICATE-----\n',
])
def test_the_check_is_linear_on_the_largest_input(data):
    start = time.monotonic()
    with pytest.raises(v.ValidationError):
        v.pem_certificates(data[:v.PEM_BUNDLE_MAX], NAME)
    assert time.monotonic() - start < 1.0
