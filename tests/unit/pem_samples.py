# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A certificate for the tests of the registry CA file (the PEM bundle grammar, its reader, the role)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

# a throw-away self-signed EC certificate (openssl req -x509 -newkey ec, CN=gpuvirt-test-ca), no key kept
CERT = """-----BEGIN CERTIFICATE-----
MIIBiTCCAS+gAwIBAgIUZ57AEcx/13Vn6eV+q4CE5sG08/IwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPZ3B1dmlydC10ZXN0LWNhMB4XDTI2MTEyNjEyNDA1N1oXDTM2
MTEyMzEyNDA1N1owGjEYMBYGA1UEAwwPZ3B1dmlydC10ZXN0LWNhMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAERQ39st1RhHrx7vC5Aq6Enhnsh3ZdmKGhJ+H6h4jR
oitpb6TU6VrOLbRGr/MUx1Hb1HOCOrma7sXhZrn7N3bVo6NTMFEwHQYDVR0OBBYE
FGQQG/cj5SumCfzejRJBudr8z6lMMB8GA1UdIwQYMBaAFGQQG/cj5SumCfzejRJB
udr8z6lMMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgFYKYB+1X
bBVx5GrGEE/YNaggCXNVZZv0q3dKkkP0xqICIQClETWBdg/FPDwOVUQIbuCP5Y4J
pS/yHVBUfT8GvrolZQ==
-----END CERTIFICATE-----
"""
