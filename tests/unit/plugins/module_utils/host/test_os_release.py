# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one "this host is CoreOS" rule (module_utils/host/os_release.py), on the os-release files the distributions
write, and on hostile files."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import os_release

# Fedora CoreOS: Fedora's os-release with VARIANT="CoreOS" and VARIANT_ID=coreos appended, ID stays fedora
# (fedora-release.spec, "CoreOS"); as on a Fedora CoreOS 41 host
FCOS = b'NAME="Fedora Linux"\nVERSION="41.20241109.3.0 (CoreOS)"\nID=fedora\nVERSION_ID=41\nVARIANT="CoreOS"\nVARIANT_ID=coreos\n'
# RHCOS 4.13, as the Machine Config Operator's tests hold it
RHCOS = (b'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nID_LIKE="rhel fedora"\nVERSION_ID="4.13"\n'
         b'VARIANT="CoreOS"\nVARIANT_ID=coreos\n')
FEDORA_WORKSTATION = b'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=41\nVARIANT="Workstation Edition"\nVARIANT_ID=workstation\n'
DEBIAN = b'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
RHEL = b'NAME="Red Hat Enterprise Linux"\nVERSION="9.4 (Plow)"\nID="rhel"\nID_LIKE="fedora"\nVERSION_ID="9.4"\n'


@pytest.mark.parametrize('data,coreos,name', [
    (FCOS, True, 'Fedora CoreOS'), (RHCOS, True, 'Red Hat CoreOS'),
    (b'ID="rhcos"\n', True, 'Red Hat CoreOS'), (b'ID=scos\n', True, 'CentOS Stream CoreOS'),
    (b"ID='fedora-coreos'\n", True, 'Fedora CoreOS'),
    (FEDORA_WORKSTATION, False, None), (DEBIAN, False, None), (RHEL, False, None), (b'', False, None),
])
def test_coreos_is_told_by_the_variant_or_the_id(data, coreos, name):
    fields = os_release.parse(data)
    assert os_release.coreos(fields) is coreos
    if name:
        assert os_release.name(fields) == name


def test_the_last_line_of_a_key_counts_and_a_value_outside_the_grammar_is_absent():
    # a shell sourcing the file, systemd and Python's platform.freedesktop_os_release (_parse_os_release assigns each
    # line over the one before) take the last assignment: a CoreOS ID appended after another is CoreOS
    assert os_release.parse(b'ID=debian\nID=rhcos\n')['ID'] == 'rhcos'
    assert os_release.coreos(os_release.parse(b'VARIANT_ID=workstation\nVARIANT_ID=coreos\n'))
    for bad in (b'ID="rhcos; reboot"', b'ID=RHCOS', b'ID=rhcos\x00', b'ID="rhcos', b'VARIANT_ID=CoreOS'):
        fields = os_release.parse(bad + b'\n')
        assert fields == {'ID': '', 'VARIANT_ID': ''} or not os_release.coreos(fields), bad
    # a bad last value replaces a good earlier one: it is absent, not the earlier value
    assert not os_release.coreos(os_release.parse(b'VARIANT_ID=coreos\nVARIANT_ID="x y"\n'))


def test_trailing_blanks_after_a_value_are_taken_off():
    assert os_release.parse(b'ID=rhcos \t\nVARIANT_ID="coreos"  \n') == {'ID': 'rhcos', 'VARIANT_ID': 'coreos'}
    assert os_release.coreos(os_release.parse(b"ID='scos' \n"))


def test_read_is_bounded_and_a_missing_file_is_refused_not_taken_for_another_system(tmp_path):
    # os-release(5): /etc/os-release, else /usr/lib/os-release; with neither, the host may be CoreOS: refused
    etc, usr = tmp_path / 'etc-os-release', tmp_path / 'usr-os-release'
    assert os_release.read(str(etc)) is None
    with pytest.raises(os_release.OsReleaseError, match=r'^gpu-1: neither .*etc-os-release nor .*usr-os-release is a '
                                                        r'readable regular file.*Nothing was changed'):
        os_release.read_any((str(etc), str(usr)), 'gpu-1')
    etc.mkdir()  # not a regular file: the fallback is read
    usr.write_bytes(RHCOS)
    assert os_release.coreos(os_release.read_any((str(etc), str(usr)), 'gpu-1'))
    etc.rmdir()
    etc.write_bytes(DEBIAN)  # the first one, where it is a file, is the only one read
    assert os_release.read_any((str(etc), str(usr)), 'gpu-1') == {'ID': 'debian', 'VARIANT_ID': ''}
    etc.write_bytes(FCOS)
    assert os_release.coreos(os_release.read(str(etc)))
    etc.write_bytes(b'ID=rhcos\n' + b'X=' + b'y' * os_release.LIMIT + b'\n')
    with pytest.raises(os_release.OsReleaseError, match='larger than 65536 bytes'):
        os_release.read_any((str(etc), str(usr)))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_parse_to_grammar_values_only(data):
    fields = os_release.parse(data)
    assert set(fields) == {'ID', 'VARIANT_ID'}
    for value in fields.values():
        assert value == '' or os_release.VALUE_RE.fullmatch(value)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r'[a-z0-9._-]{1,20}', fullmatch=True), st.sampled_from(['', '"', "'"]))
def test_every_grammar_value_is_read_back_quoted_or_not(value, quote):
    # the valid neighbours are accepted with the right result, not only the hostile ones refused
    fields = os_release.parse(('ID=%s%s%s\nVARIANT_ID=coreos\n' % (quote, value, quote)).encode())
    assert fields == {'ID': value, 'VARIANT_ID': 'coreos'} and os_release.coreos(fields)
