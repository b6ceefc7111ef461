# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The grammars every name and flag from the inventory, a survey or -e is checked against, in one place. Pure
Python, no Ansible imports: modules, filters and the manifest builders all call these.

Each check returns the value (normalised where the grammar allows one spelling only) or raises
``ValidationError`` naming the variable, the value and what is expected. Every pattern is applied with
``fullmatch`` after a length check, so a trailing newline never passes and matching is linear in the input.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import re

# Kubernetes (apimachinery validation): DNS-1123 label (63) and subdomain (253), label values (63).
_DNS_LABEL = r'[a-z0-9](?:[-a-z0-9]*[a-z0-9])?'
DNS1123_LABEL_RE = re.compile(_DNS_LABEL)
DNS1123_SUBDOMAIN_RE = re.compile(_DNS_LABEL + r'(?:\.' + _DNS_LABEL + r')*')
LABEL_VALUE_RE = re.compile(r'(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?')
# Helm: release names are DNS-1123 subdomain style, at most 53 characters (helm/pkg/chartutil).
HELM_RELEASE_MAX = 53
# metadata.uid: the API server writes a UUID's text form (apimachinery util/uuid NewUUID, google/uuid String)
K8S_UID_RE = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')
# SemVer 2.0.0 (semver.org), with the optional "v" prefix Helm chart versions carry (v25.3.0).
SEMVER_RE = re.compile(
    r'v?(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)'
    r'(?:-(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?'
    r'(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?')
# A chart repository: http(s) or oci URL, host[:port] then an optional path of unreserved characters (RFC 3986),
# '+', ':', '@' and %XX escapes. kubernetes.core.helm joins the URL into one command string that AnsibleModule
# run_command shlex-splits (kubernetes.core plugins/modules/helm.py, "--repo=" + chart_repo_url): a quote, a
# blank, '$', a backtick, ';', '&', '|', '\\', a bracket or a newline would split or re-quote the helm argv, so
# the RFC's sub-delims are not accepted either.
_HOST = _DNS_LABEL.replace('a-z0-9', 'A-Za-z0-9')
REPO_URL_RE = re.compile(r'(?:https?|oci)://' + _HOST + r'(?:\.' + _HOST + r')*(?::[0-9]{1,5})?'
                         r'(?:/(?:[A-Za-z0-9._~+:@-]|%[0-9A-Fa-f]{2})*)*')
# A chart reference: a chart name (optionally repo/name) or an oci:// URL.
CHART_NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?')
# OCI distribution reference grammar (distribution/reference): registry host[:port], path components, tag.
OCI_REGISTRY_RE = re.compile(r'(?:' + _HOST + r'(?:\.' + _HOST + r')*|\[[0-9A-Fa-f:]+\])(?::[0-9]{1,5})?')
OCI_COMPONENT_RE = re.compile(r'[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*')
OCI_TAG_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}')
OCI_DIGEST_RE = re.compile(r'sha256:[0-9a-f]{64}')
OCI_PATH_MAX = 255

TRUE_STRINGS = ('true', 'yes', 'on', '1')
FALSE_STRINGS = ('false', 'no', 'off', '0')


class ValidationError(ValueError):
    """A value does not fit its grammar; the message names the variable, the value and the grammar."""


def _need_str(value, name, expected):
    if not isinstance(value, str):
        raise ValidationError('%s: %s is not a string; expected %s' % (name, _quoted(value), expected))
    return value


def shown(value, cap=80):
    """``value`` for a message: its repr, printable ASCII only (anything else becomes ``?``), at most ``cap``
    characters and ``...`` (an input of any size or alphabet, once it has been refused)."""
    text = ''.join(c if ' ' <= c <= '~' else '?' for c in repr(value))
    return text if len(text) <= cap else text[:cap] + '...'


def _quoted(value, cap=200):
    """``value``'s repr in a refusal, at most ``cap`` characters and ``...``: an input of any size named without
    repeating all of it (repr escapes control characters; other characters show as typed)."""
    text = repr(value)
    return text if len(text) <= cap else text[:cap] + '...'


def _check(value, name, pattern, max_len, expected):
    _need_str(value, name, expected)
    if len(value) > max_len or not pattern.fullmatch(value):
        raise ValidationError('%s: %s is not valid; expected %s' % (name, _quoted(value), expected))
    return value


def to_bool(value, name):
    """A flag: a real boolean, or one of the unambiguous strings true/false, yes/no, on/off, 1/0 (any case),
    or the integers 1/0. Anything else (an empty string, "flase", 2, None) is refused, naming ``name``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in TRUE_STRINGS:
            return True
        if text in FALSE_STRINGS:
            return False
    raise ValidationError('%s: %s is not a boolean; use true or false (yes/no, on/off and 1/0 are accepted too)'
                          % (name, _quoted(value)))


def dns1123_label(value, name):
    """Namespaces, release-independent object names, DRA request names: at most 63 of [a-z0-9-]."""
    return _check(value, name, DNS1123_LABEL_RE, 63,
                  "a DNS-1123 label: at most 63 lower-case letters, digits and '-', starting and ending "
                  "with a letter or digit")


def dns1123_subdomain(value, name):
    """Object and node names: DNS-1123 labels joined by '.', at most 253 characters. No '/', no '..': safe as a
    file name component."""
    return _check(value, name, DNS1123_SUBDOMAIN_RE, 253,
                  "a DNS-1123 subdomain: at most 253 lower-case letters, digits, '-' and '.', each part "
                  "starting and ending with a letter or digit")


def label_value(value, name):
    """A Kubernetes label value: empty, or at most 63 of [A-Za-z0-9-_.] starting and ending alphanumeric."""
    return _check(value, name, LABEL_VALUE_RE, 63,
                  "a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a "
                  "letter or digit")


def helm_release_name(value, name):
    return _check(value, name, DNS1123_SUBDOMAIN_RE, HELM_RELEASE_MAX,
                  "a Helm release name: at most %d lower-case letters, digits, '-' and '.', starting and "
                  "ending with a letter or digit" % HELM_RELEASE_MAX)


# The helm binary: kubernetes.core.helm joins binary_path into the one command string it shlex-splits
# (kubernetes.core plugins/module_utils/helm.py get_helm_binary, plugins/modules/helm.py deploy), so a blank, quote
# or shell character would split or re-quote the argv. A bare name found on PATH, or an absolute path whose parts
# are letters, digits, '_', '.', '+' and '-', none of them '.' or '..'.
HELM_BINARY_NAME_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.+-]{0,254}')
HELM_BINARY_PATH_RE = re.compile(r'(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_.+-]{1,255})+')


def helm_binary(value, name):
    """The helm binary: a bare name looked up on PATH (``helm``) or an absolute path (``/usr/local/bin/helm``)."""
    expected = ("the helm binary: a bare name such as helm (looked up on PATH) or an absolute path such as "
                "/usr/local/bin/helm, of letters, digits, '_', '.', '+', '-' and '/' (no blanks, quotes, shell "
                "characters or '..')")
    _need_str(value, name, expected)
    pattern = HELM_BINARY_PATH_RE if value.startswith('/') else HELM_BINARY_NAME_RE
    return _check(value, name, pattern, 4096, expected)


def k8s_uid(value, name):
    """An object's metadata.uid as the API server assigns it (a UUID, RFC 4122 text form): sent as a write's
    precondition, so an empty or malformed one, which would make no precondition, is refused."""
    return _check(value, name, K8S_UID_RE, 36, 'a Kubernetes object uid, a UUID such as '
                  '6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b')


def semver(value, name):
    return _check(value, name, SEMVER_RE, 128,
                  'a SemVer 2.0 version such as 1.2.3, v25.3.0 or 0.4.1-rc.1')


def repo_url(value, name):
    return _check(value, name, REPO_URL_RE, 2048,
                  'an http://, https:// or oci:// URL such as https://helm.ngc.nvidia.com/nvidia: host[:port], then a '
                  "path of letters, digits, '.', '_', '~', '+', ':', '@', '-', '/' and %XX escapes (no blanks, "
                  'quotes, $, backticks, ;, &, |, brackets or newlines)')


def chart_ref(value, name):
    """A chart name (``gpu-operator``, ``repo/name``) or an ``oci://`` reference."""
    _need_str(value, name, 'a chart name or an oci:// URL')
    if value.startswith('oci://'):
        return repo_url(value, name)
    return _check(value, name, CHART_NAME_RE, 253,
                  "a chart name such as gpu-operator or repo/gpu-operator (letters, digits, '_', '.', '-'), or "
                  "an oci:// URL")


def oci_registry(value, name):
    """A registry ``host[:port]`` (no scheme, no path)."""
    return _check(value, name, OCI_REGISTRY_RE, 255,
                  'a registry host[:port] such as registry.example.com or 127.0.0.1:5000 (no scheme, no path)')


def oci_repository(value, name):
    """A repository path: components of lower-case letters and digits separated by '.', '_', '__' or '-'."""
    _need_str(value, name, 'an image repository path')
    if len(value) > OCI_PATH_MAX or not value:
        raise ValidationError('%s: %s is not valid; expected an image repository path of at most %d characters'
                              % (name, _quoted(value), OCI_PATH_MAX))
    for part in value.split('/'):
        if not OCI_COMPONENT_RE.fullmatch(part):
            raise ValidationError(
                "%s: %s is not valid; its part %s is not a path component (lower-case letters and digits "
                "separated by '.', '_', '__' or '-')" % (name, _quoted(value), _quoted(part)))
    return value


def oci_tag(value, name):
    return _check(value, name, OCI_TAG_RE, 128,
                  "an image tag: at most 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'")


def oci_reference(value, name):
    """``registry[:port]/path[:tag][@sha256:digest]``: the registry part is required."""
    _need_str(value, name, 'an image reference registry/path[:tag][@digest]')
    rest, digest = value, None
    if '@' in rest:
        rest, digest = rest.split('@', 1)
        if not OCI_DIGEST_RE.fullmatch(digest):
            raise ValidationError('%s: %s has digest %s; expected sha256: and 64 lower-case hex digits'
                                  % (name, _quoted(value), _quoted(digest)))
    if '/' not in rest:
        raise ValidationError('%s: %s is not valid; expected registry/path[:tag], with the registry host'
                              % (name, _quoted(value)))
    registry, path = rest.split('/', 1)
    tag = None
    if ':' in path.rsplit('/', 1)[-1]:
        path, tag = path.rsplit(':', 1)
    oci_registry(registry, name)
    oci_repository(path, name)
    if tag is not None:
        oci_tag(tag, name)
    return value


# Host files the kernel's module tools read (modprobe.d, modules-load.d, the initramfs lists, and the dracut conf
# that bash sources): a value there is a word of a line, so only the characters of its grammar may reach them.
# A kernel module name: Kbuild names a module after its object file, letters, digits and '_' ('-' in the file
# name becomes '_'; kmod's modname_normalize treats '-' and '_' alike). The kernel keeps the name in
# char name[MODULE_NAME_LEN], MODULE_NAME_LEN = 64 - sizeof(unsigned long) (include/linux/module.h), and modpost
# refuses a name of MODULE_NAME_LEN characters or more (scripts/mod/modpost.c): at most 55 on 64-bit. The first
# character is a letter or digit so that no name reads as an option (-x) to modprobe or dracut.
KERNEL_MODULE_MAX = 55
KERNEL_MODULE_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]*')
# A PCI vendor:device id as "options vfio-pci ids=" takes it (four hex digits each; the kernel reads them with
# sscanf %x, either case). Returned in lower case, the case sysfs prints and lspci -n shows.
PCI_ID_RE = re.compile(r'[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}')
# A path of a host configuration file: absolute, parts of letters, digits, '_', '.' and '-' not starting with '.'
# (so no '..' and no hidden parts), and inside the directory the consumer reads (a modprobe.d file elsewhere
# would be read by nobody, or by something else: a shell sourcing /etc/profile.d runs its lines).
_PATH_PART = r'[A-Za-z0-9_][A-Za-z0-9_.-]*'
PATH_MAX = 4095


def kernel_module(value, name):
    """A kernel module (or driver) name as modprobe, systemd-modules-load and dracut take it: at most 55 of
    [A-Za-z0-9_-], starting with a letter or digit. The spelling is kept ('vfio-pci' stays), since both are
    valid and files already written with one must not change."""
    return _check(value, name, KERNEL_MODULE_RE, KERNEL_MODULE_MAX,
                  "a kernel module name such as vfio_pci: at most %d letters, digits, '_' and '-', starting with "
                  "a letter or digit (no spaces, quotes or newlines)" % KERNEL_MODULE_MAX)


def pci_id(value, name):
    """A PCI ``vendor:device`` id (``10de:2236``), returned in lower case."""
    return _check(value, name, PCI_ID_RE, 9,
                  'a PCI vendor:device id such as 10de:2236: four hex digits, a colon, four hex digits').lower()


def config_path(value, name, directory, filename=None):
    """An absolute path of a file directly in a directory named ``directory`` (``modprobe.d``), called
    ``filename`` when given, else any ``*.conf`` file (the only names modprobe, systemd-modules-load and dracut
    read there)."""
    leaf = re.escape(filename) if filename else _PATH_PART + r'\.conf'
    pattern = re.compile(r'(?:/' + _PATH_PART + r')*/' + re.escape(directory) + r'/' + leaf)
    example = '/etc/%s/%s' % (directory, filename or 'gpuvirt-vfio.conf')
    return _check(value, name, pattern, PATH_MAX,
                  "a file in a %s directory such as %s (an absolute path of letters, digits, '_', '.' and '-'%s)"
                  % (directory, example, '' if filename else '; the name ends in .conf'))


# A process's executable name as gpu_holders records it (basename of argv[0], or /proc/<pid>/comm): at most 255
# (NAME_MAX) letters, digits and '_', '.', '+', '@', '-', not starting with '.' or '-'. Any user of a GPU host
# chooses this name, so anything else is never passed on (gpu_holders reports '?').
EXECUTABLE_NAME_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.+@-]{0,254}')
# A systemd unit name (systemd.unit(5): ASCII letters, digits, ':', '-', '_', '.', '\\' and '@', at most 255
# characters) of the types a process can run in.
SYSTEMD_UNIT_RE = re.compile(r'[A-Za-z0-9:_.\\@-]+\.(?:service|scope|socket|mount|swap)')


def executable_name(value, name):
    return _check(value, name, EXECUTABLE_NAME_RE, 255,
                  "an executable name: at most 255 letters, digits, '_', '.', '+', '@' and '-', not starting "
                  "with '.' or '-'")


def systemd_unit(value, name):
    return _check(value, name, SYSTEMD_UNIT_RE, 255,
                  "a systemd unit name such as nvidia-persistenced.service (letters, digits, ':', '-', '_', "
                  "'.', '\\\\', '@'; at most 255 characters)")


# A Kubernetes label key (apimachinery validation IsQualifiedName): an optional DNS-1123 subdomain prefix of at
# most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' and '.', starting and ending
# alphanumeric.
LABEL_NAME_RE = re.compile(r'[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?')


def label_key(value, name):
    expected = ("a label key: an optional DNS-1123 subdomain prefix (at most 253 characters) and '/', then at most "
                "63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit")
    _need_str(value, name, expected)
    prefix, sep, rest = value.rpartition('/')
    if len(value) > 317 or (sep and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN_RE.fullmatch(prefix))) \
            or len(rest) > 63 or not LABEL_NAME_RE.fullmatch(rest):
        raise ValidationError('%s: %s is not valid; expected %s' % (name, _quoted(value), expected))
    return value


def int_in_range(value, name, low, high):
    """An integer from low to high (a JSON number from AWX, or its decimal digits from -e name=value)."""
    text = value if isinstance(value, str) else None
    if isinstance(value, bool) or not (isinstance(value, int) or (text is not None and re.fullmatch(r'[0-9]{1,6}', text))):
        raise ValidationError('%s: %s is not an integer; give a whole number from %d to %d'
                              % (name, _quoted(value), low, high))
    number = int(value)
    if not low <= number <= high:
        raise ValidationError('%s: %d is outside %d to %d' % (name, number, low, high))
    return number


# The message ansible.builtin.reboot hands to shutdown: on Linux its action plugin puts it between double quotes
# in a command line run by the host's shell as root, so a quote, $, backquote or backslash would be root code.
REBOOT_MESSAGE_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9 .,:()_+/-]*')


def reboot_message(value, name):
    return _check(value, name, REBOOT_MESSAGE_RE, 200,
                  "a message of at most 200 letters, digits, blanks and . , : ( ) _ + / -, starting with a letter "
                  "or digit (no quotes, $, backquotes, backslashes or newlines)")


def positive_int(value, name):
    return int_in_range(value, name, 1, 100000)


def percentage(value, name):
    return int_in_range(value, name, 0, 100)


# A CA certificate bundle (RFC 7468 section 5, strict form): one or more CERTIFICATE blocks of base64 lines (at most
# 76 characters, LF or CRLF), blank lines between blocks, and nothing else: no explanatory text, no other label
# (a PRIVATE KEY block is refused). The file is sent to another host and installed world-readable (Docker's
# /etc/docker/certs.d), so only what is a certificate by its form may pass: a path pointing at a file of
# passwords or keys is refused without its content being shown. Each block must decode to one DER SEQUENCE
# whose length fills it (X.690 8.1.3: definite length, short or long form), as an X.509 Certificate does.
PEM_BUNDLE_MAX = 64 * 1024
_PEM_BEGIN = '-----BEGIN CERTIFICATE-----'
_PEM_END = '-----END CERTIFICATE-----'
_PEM_BODY = r'(?:[A-Za-z0-9+/=]{1,76}\r?\n)+'
PEM_BUNDLE_RE = re.compile(r'(?:(?:\r?\n)*' + _PEM_BEGIN + r'\r?\n' + _PEM_BODY + _PEM_END + r'\r?\n)+(?:\r?\n)*')
_PEM_BLOCK_RE = re.compile(_PEM_BEGIN + r'\r?\n(' + _PEM_BODY + ')' + _PEM_END)
_BASE64_RE = re.compile(r'(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?')
PEM_BUNDLE_EXPECTED = ('one or more %s ... %s blocks of base64 lines and nothing else (the CA certificate, PEM, '
                       'that signed the registry\'s certificate)' % (_PEM_BEGIN, _PEM_END))


def _der_sequence_fills(der):
    """True when ``der`` is one DER SEQUENCE (tag 0x30, definite length) and nothing after it."""
    if len(der) < 2 or der[0] != 0x30:
        return False
    first = der[1]
    if first < 0x80:
        return 2 + first == len(der)
    count = first & 0x7f
    if count == 0 or count > 4 or len(der) < 2 + count:
        return False
    length = int.from_bytes(der[2:2 + count], 'big')
    return length >= 0x80 and 2 + count + length == len(der)


def _pem_refusal(name, why):
    return ValidationError('%s is not a PEM certificate bundle (%s): expected %s' % (name, why, PEM_BUNDLE_EXPECTED))


def pem_certificates(data, name):
    """The bundle as text (a final newline added when missing) when ``data`` (bytes or str) is a PEM certificate
    bundle of at most PEM_BUNDLE_MAX bytes; else ValidationError naming ``name`` and why, never the content."""
    if isinstance(data, str):
        try:
            data = data.encode('ascii')
        except UnicodeEncodeError:
            raise _pem_refusal(name, 'it holds characters that are not ASCII')
    if not isinstance(data, bytes):
        raise _pem_refusal(name, 'it is a %s, not text' % type(data).__name__)
    if len(data) > PEM_BUNDLE_MAX:
        raise _pem_refusal(name, 'it is larger than %d bytes' % PEM_BUNDLE_MAX)
    try:
        text = data.decode('ascii')
    except UnicodeDecodeError:
        raise _pem_refusal(name, 'it holds bytes that are not ASCII')
    if not text.endswith('\n'):
        text += '\n'
    if not PEM_BUNDLE_RE.fullmatch(text):
        if 'PRIVATE KEY-----' in text:
            raise _pem_refusal(name, 'it holds a private key')
        if _PEM_BEGIN not in text:
            raise _pem_refusal(name, 'it holds no certificate block')
        raise _pem_refusal(name, 'it holds text outside the certificate blocks, or a line that is not base64')
    for number, block in enumerate(_PEM_BLOCK_RE.finditer(text), 1):
        body = ''.join(block.group(1).split())
        if not body or not _BASE64_RE.fullmatch(body):
            raise _pem_refusal(name, 'certificate %d is not base64' % number)
        if not _der_sequence_fills(base64.b64decode(body)):
            raise _pem_refusal(name, 'certificate %d does not decode to one DER certificate' % number)
    return text
