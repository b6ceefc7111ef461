# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vGPU Manager image inputs, pure Python (no Ansible imports).

The vGPU Manager image is built from a checkout of ``vgpu-manager/<os>/`` of NVIDIA's driver container
repository plus the licensed host driver ``NVIDIA-Linux-<arch>-<version>-vgpu-kvm.run``. Everything here is
computed before any build: the .run file's name, version and checksum are checked, the image reference is
``<registry>[/<repository>]/<name>:<version>-<os_tag>``, and the labels record the inputs (the .run sha256,
a digest of the build context and of the build arguments), so a later run can compare them with the labels
of the image already in the registry and do nothing when they match.

Errors are ``VgpuImageError`` whose message names the value and the fix.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os
import re
import stat

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

LABEL_PREFIX = 'io.gpuvirt.vgpu-manager.'
LABEL_RUN_SHA256 = LABEL_PREFIX + 'run-sha256'
LABEL_CONTEXT_DIGEST = LABEL_PREFIX + 'context-digest'
LABEL_BUILD_ARGS_DIGEST = LABEL_PREFIX + 'build-args-digest'
LABEL_DRIVER_VERSION = LABEL_PREFIX + 'driver-version'

ARCHES = ('x86_64', 'aarch64')
# NVIDIA driver versions: 550.90.05, 535.183.04, older 470.63 (two parts).
_VERSION_RE = re.compile(r'[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?')
_RUN_RE = re.compile(r'NVIDIA-Linux-(?P<arch>[A-Za-z0-9_]+)-(?P<version>[0-9][0-9.]*[0-9])-vgpu-kvm\.run')
_ANY_RUN_RE = re.compile(r'NVIDIA-Linux-(?P<arch>[A-Za-z0-9_]+)-(?P<version>[0-9][0-9.]*[0-9])(?P<rest>.*)\.run')
_SHA256_RE = re.compile(r'[0-9a-f]{64}')
# Repository path components (distribution spec): lowercase alphanumerics separated by . _ __ or -.
_COMPONENT_RE = re.compile(r'[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*')
# A tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; os_tag is the part after "<version>-".
_OS_TAG_RE = re.compile(r'[a-z][a-z0-9]*[0-9][a-z0-9._-]*')
_OPENSHIFT_RE = re.compile(r'v?4\.(?P<minor>[0-9]{1,3})(?:\.[0-9]+)?(?:[-+][0-9A-Za-z.+-]*)?')
_SKIP_DIRS = ('.git',)


class VgpuImageError(ValueError):
    """Bad input; the message names the value and the fix."""


def check_version(version):
    """Return ``version`` when it looks like an NVIDIA driver version, else raise."""
    version = '' if version is None else str(version).strip()
    if not _VERSION_RE.fullmatch(version):
        raise VgpuImageError(
            "driver version %r is not an NVIDIA driver version like 550.90.05: set it to the version in the "
            "name of the vGPU Manager file NVIDIA-Linux-x86_64-<version>-vgpu-kvm.run" % version)
    return version


def parse_run_name(name):
    """Return ``(arch, version)`` from a vGPU Manager (host) driver file name, or raise naming the fix.

    A ``-grid.run`` (or ``-grid-azure.run``) file is the guest driver that goes inside VMs, and a plain
    ``NVIDIA-Linux-x86_64-<version>.run`` is the data-center driver: neither contains the vGPU Manager.
    """
    if not isinstance(name, str) and name is not None:
        raise VgpuImageError("the vGPU Manager file name is %s %r, not text; expected a path ending in "
                             "NVIDIA-Linux-x86_64-<version>-vgpu-kvm.run" % (type(name).__name__, name))
    base = os.path.basename(name or '')
    if len(base) > 255:  # no file system holds a longer name; the patterns below need not see it
        raise VgpuImageError("%r... is %d characters, longer than any file name; expected "
                             "NVIDIA-Linux-x86_64-<version>-vgpu-kvm.run" % (base[:60], len(base)))
    m = _RUN_RE.fullmatch(base)
    if m:
        arch = m.group('arch')
        if arch not in ARCHES:
            raise VgpuImageError("%s: architecture %r is not one of %s" % (base, arch, ', '.join(ARCHES)))
        return arch, check_version(m.group('version'))
    m = _ANY_RUN_RE.fullmatch(base)
    if m and 'grid' in m.group('rest'):
        raise VgpuImageError(
            "%s is the vGPU guest driver (GRID), which goes inside VMs; the vGPU Manager image needs the host "
            "driver NVIDIA-Linux-%s-%s-vgpu-kvm.run from the same NVIDIA vGPU software package (Host_Drivers)"
            % (base, m.group('arch'), m.group('version')))
    if m:
        raise VgpuImageError(
            "%s is not a vGPU Manager (host) driver: the vGPU Manager image needs "
            "NVIDIA-Linux-%s-%s-vgpu-kvm.run from the NVIDIA vGPU software package (Host_Drivers)"
            % (base, m.group('arch'), m.group('version')))
    raise VgpuImageError(
        "%r is not named like a vGPU Manager driver NVIDIA-Linux-x86_64-<version>-vgpu-kvm.run: point "
        "vgpu_manager_image_run_file at the host driver .run file from the NVIDIA vGPU software package" % base)


def sha256_file(path, chunk=1024 * 1024):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def check_run_file(path, version, sha256=None):
    """Check a .run file before any build: name, version, optional sha256. Return its facts."""
    arch, file_version = parse_run_name(path)
    version = check_version(version)
    if file_version != version:
        raise VgpuImageError(
            "%s is driver version %s but the wanted version is %s: use the "
            "NVIDIA-Linux-%s-%s-vgpu-kvm.run file, or set the version to %s"
            % (os.path.basename(path), file_version, version, arch, version, file_version))
    if not os.path.isfile(path):
        raise VgpuImageError("vGPU Manager file %s does not exist on the build host (or is not a file): copy it "
                             "there and set vgpu_manager_image_run_file to its path" % path)
    actual = sha256_file(path)
    if sha256:
        wanted = str(sha256).strip().lower()
        if wanted.startswith('sha256:'):
            wanted = wanted[len('sha256:'):]
        if not _SHA256_RE.fullmatch(wanted):
            raise VgpuImageError("sha256 %r is not 64 hex digits: give the checksum of %s as printed by sha256sum"
                                 % (sha256, os.path.basename(path)))
        if wanted != actual:
            raise VgpuImageError(
                "%s has sha256 %s, not the expected %s: the file is corrupt or a different build; download it "
                "again from the NVIDIA Licensing Portal or correct the expected checksum"
                % (os.path.basename(path), actual, wanted))
    return {'name': os.path.basename(path), 'arch': arch, 'version': version, 'sha256': actual,
            'size': os.path.getsize(path)}


def os_tag_from_openshift(version):
    """``4.16.12`` (or ``v4.16``, ``4.17.0-0.nightly-...``) -> ``rhcos4.16``."""
    m = _OPENSHIFT_RE.fullmatch(str(version or '').strip())
    if not m:
        raise VgpuImageError(
            "OpenShift version %r is not a 4.x version like 4.16.12: give the cluster version "
            "(oc get clusterversion version -o jsonpath='{.status.desired.version}')" % (version,))
    return 'rhcos4.%d' % int(m.group('minor'))


def openshift_version_from_clusterversion(obj):
    """The version of a ``config.openshift.io/v1`` ClusterVersion: the last completed update, else desired."""
    status = (obj or {}).get('status') or {}
    for entry in status.get('history') or []:
        if entry.get('state') == 'Completed' and entry.get('version'):
            return entry['version']
    desired = (status.get('desired') or {}).get('version')
    if desired:
        return desired
    raise VgpuImageError("the ClusterVersion object has no completed or desired version: set "
                         "vgpu_manager_image_openshift_version or vgpu_manager_image_os_tag instead")


def check_os_tag(os_tag):
    os_tag = str(os_tag or '').strip()
    if not _OS_TAG_RE.fullmatch(os_tag) or len(os_tag) > 64:
        raise VgpuImageError(
            "os_tag %r is not an OS tag like rhcos4.16, rhel9.4 or ubuntu22.04: set vgpu_manager_image_os_tag "
            "to the OS of the nodes (or vgpu_manager_image_openshift_version on OpenShift)" % os_tag)
    return os_tag


def parse_os_release(text):
    """``/etc/os-release`` text -> ``{KEY: value}`` (quotes removed, comments and blank lines skipped)."""
    out = {}
    for line in str(text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#') or '=' not in line:
            continue
        key, value = line.split('=', 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
            value = value[1:-1]
        out[key.strip()] = value
    return out


def os_tag_from_os_release(os_release):
    """The OS tag the GPU Operator appends to the vGPU Manager version on this node.

    NVIDIA/gpu-operator controllers/state_manager.go getGPUNodeOSInfo: ``<ID><VERSION_ID>`` of the node's
    os-release (NFD labels ``feature.node.kubernetes.io/system-os_release.ID`` / ``.VERSION_ID``), with only the
    major version for ``rhel``, ``rocky`` and ``ol``: ``ubuntu`` ``22.04`` -> ``ubuntu22.04``, ``rhcos`` ``4.18``
    -> ``rhcos4.18``, ``rhel`` ``9.4`` -> ``rhel9``. ``os_release`` is the file's text or its parsed dict.
    """
    fields = os_release if isinstance(os_release, dict) else parse_os_release(os_release)
    os_id = str(fields.get('ID') or '').strip()
    version = str(fields.get('VERSION_ID') or '').strip()
    if not os_id or not version:
        raise VgpuImageError("os-release has no ID or VERSION_ID (ID=%r, VERSION_ID=%r): set the host's "
                             "gpuvirt_os_tag (such as ubuntu22.04 or rhcos4.18)" % (os_id, version))
    if os_id in ('rhel', 'rocky', 'ol'):
        version = version.split('.', maxsplit=1)[0]
    return check_os_tag(os_id + version)


def resolve_os_tag(os_tag=None, openshift_version=None):
    """The OpenShift version wins when given (``rhcos4.<minor>``), else ``os_tag``."""
    if openshift_version:
        tag = os_tag_from_openshift(openshift_version)
        if os_tag and os_tag != tag:
            raise VgpuImageError(
                "os_tag %r contradicts OpenShift %s (whose nodes run %s): leave vgpu_manager_image_os_tag empty "
                "on OpenShift or set it to %s" % (os_tag, openshift_version, tag, tag))
        return tag
    if not os_tag:
        raise VgpuImageError("no os_tag: set vgpu_manager_image_os_tag (such as ubuntu22.04 or rhel9.4) or "
                             "vgpu_manager_image_openshift_version (gives rhcos4.<minor>)")
    return check_os_tag(os_tag)


def image_ref(registry, repository, name, version, os_tag):
    """``<registry>[/<repository>]/<name>:<version>-<os_tag>`` after checking every part."""
    registry = str(registry or '').strip()
    try:
        validators.oci_registry(registry, 'registry')
    except validators.ValidationError:
        raise VgpuImageError(
            "registry %r is not a host[:port] like registry.example.com or 127.0.0.1:5443 (no scheme, no path): "
            "put the path in vgpu_manager_image_repository" % registry)
    parts = [p for p in str(repository or '').strip('/').split('/') if p] + [str(name or '')]
    for part in parts:
        if not _COMPONENT_RE.fullmatch(part):
            raise VgpuImageError(
                "image path component %r is not valid (lowercase letters, digits, and . _ - between them): fix "
                "vgpu_manager_image_repository or vgpu_manager_image_name" % part)
    tag = '%s-%s' % (check_version(version), check_os_tag(os_tag))
    return {'registry': registry, 'repository': '/'.join(parts), 'tag': tag,
            'image': '%s/%s' % (registry, '/'.join(parts)), 'ref': '%s/%s:%s' % (registry, '/'.join(parts), tag)}


def context_digest(root, exclude=None):
    """sha256 over the build context: relative paths, executable bits, symlink targets and file contents.

    ``exclude`` holds file names skipped at the top level (the .run file copied in), ``.git`` is skipped.
    """
    exclude = set(exclude or ())
    if not os.path.isdir(root):
        raise VgpuImageError("build context %s is not a directory on the build host: set "
                             "vgpu_manager_image_context_dir to a checkout of vgpu-manager/<os>/" % root)
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        rel_dir = os.path.relpath(dirpath, root)
        for fname in sorted(filenames):
            if rel_dir == '.' and fname in exclude:
                continue
            full = os.path.join(dirpath, fname)
            rel = os.path.normpath(os.path.join(rel_dir, fname)).replace(os.sep, '/')
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                entry = 'L %s -> %s' % (rel, os.readlink(full))
                h.update(entry.encode('utf-8') + b'\0')
                continue
            mode = 'x' if st.st_mode & 0o111 else '-'
            h.update(('F %s %s ' % (mode, rel)).encode('utf-8'))
            h.update(sha256_file(full).encode('ascii') + b'\0')
    return h.hexdigest()


def find_containerfile(root, name=None):
    """The build file: ``name`` when given, else ``Containerfile`` or ``Dockerfile``, relative to ``root``."""
    candidates = [name] if name else ['Containerfile', 'Dockerfile']
    for c in candidates:
        if os.path.isfile(os.path.join(root, c)):
            return c
    raise VgpuImageError("no %s in build context %s: point vgpu_manager_image_context_dir at NVIDIA's "
                         "vgpu-manager/<os>/ directory or set vgpu_manager_image_containerfile"
                         % (' or '.join(candidates), root))


def build_args(version, cuda_version=None, arch='x86_64', extra=None):
    """Build arguments, NVIDIA's names: DRIVER_VERSION, DRIVER_ARCH, and CUDA_VERSION when given."""
    if extra is not None and not isinstance(extra, dict):
        raise VgpuImageError("extra build arguments are %s %r; expected a mapping of NAME: value"
                             % (type(extra).__name__, extra))
    args = dict(extra or {})
    args['DRIVER_VERSION'] = version
    args['DRIVER_ARCH'] = arch
    if cuda_version:
        args['CUDA_VERSION'] = str(cuda_version)
    for key in args:
        if not isinstance(key, str) or not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', key):
            raise VgpuImageError("build argument name %r is not valid: use letters, digits and _" % key)
        args[key] = str(args[key])
    return args


# The extra `podman build` arguments a user may add: only options that change how the build runs, never what it
# builds, where from or with what trust. Everything else is refused: --tls-verify (TLS of the base-image pull),
# --build-arg / --label / --file / --tag (they would beat the recorded inputs, so the labels that say an image is up
# to date would lie), --volume / --secret / --security-opt / --authfile / --cert-dir / --creds (host files and
# credentials in the build).
PODMAN_EXTRA_ARGS = (
    re.compile(r'--isolation=(?:oci|chroot|rootless)'),
    re.compile(r'--jobs=[0-9]{1,3}'),
    re.compile(r'--layers(?:=(?:true|false))?'),
    re.compile(r'--pull(?:=(?:always|missing|never|newer|true|false))?'),
    re.compile(r'--squash(?:-all)?'),
    re.compile(r'--network=(?:host|none|private)'),
    re.compile(r'--cgroupns=(?:host|private)'),
    re.compile(r'--ulimit=[a-z]{1,16}=[0-9]{1,10}(?::[0-9]{1,10})?'),
)
PODMAN_EXTRA_ARGS_SHOWN = ('--isolation=oci|chroot|rootless, --jobs=N, --layers[=true|false], --pull[=always|missing|'
                           'never|newer], --squash, --squash-all, --network=host|none|private, --cgroupns=host|private, '
                           '--ulimit=NAME=SOFT[:HARD]')


def check_build_extra_args(args):
    """The extra ``podman build`` arguments, each one of PODMAN_EXTRA_ARGS (full match); else VgpuImageError
    naming the argument and what is allowed."""
    if args is None:
        return []
    if not isinstance(args, list):
        raise VgpuImageError('vgpu_manager_image_build_extra_args is %s; expected a list of podman build options'
                             % type(args).__name__)
    for arg in args:
        if not isinstance(arg, str) or len(arg) > 64 or not any(p.fullmatch(arg) for p in PODMAN_EXTRA_ARGS):
            shown = arg[:80] if isinstance(arg, str) else arg
            raise VgpuImageError(
                'vgpu_manager_image_build_extra_args: %r is not allowed; use only %s (options that change what the '
                'build sees, its trust or its recorded inputs, such as --tls-verify, --build-arg, --label, --volume, '
                '--secret or --file, are refused)' % (shown, PODMAN_EXTRA_ARGS_SHOWN))
    return list(args)


def digest_json(data):
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(',', ':')).encode('utf-8')).hexdigest()


def image_labels(run_sha256, ctx_digest, args, version, extra_args=None):
    """The labels recording the build's inputs; extra podman options (when any) are part of the build-args digest,
    so an image built with other options is not taken for up to date."""
    recorded = {'args': args, 'podman': list(extra_args)} if extra_args else args
    return {LABEL_RUN_SHA256: run_sha256, LABEL_CONTEXT_DIGEST: ctx_digest,
            LABEL_BUILD_ARGS_DIGEST: digest_json(recorded), LABEL_DRIVER_VERSION: version}


def label_differences(wanted, remote):
    """Names of wanted labels that the remote image lacks or has with another value (empty: up to date)."""
    remote = remote or {}
    return sorted(k for k, v in wanted.items() if remote.get(k) != v)


def registry_auth(username, password):
    return base64.b64encode(('%s:%s' % (username, password)).encode('utf-8')).decode('ascii')


def dockerconfigjson(registry, username, password):
    """The ``.dockerconfigjson`` document (also the containers-auth.json format) for one registry."""
    if not username or password is None or password == '':
        raise VgpuImageError("a pull secret needs vgpu_manager_image_registry_username and _password")
    return {'auths': {registry: {'username': username, 'password': password,
                                 'auth': registry_auth(username, password)}}}


def pull_secret(name, namespace, registry, username, password):
    """A ``kubernetes.io/dockerconfigjson`` Secret for the operator namespace."""
    doc = json.dumps(dockerconfigjson(registry, username, password), sort_keys=True)
    return {'apiVersion': 'v1', 'kind': 'Secret',
            'metadata': {'name': name, 'namespace': namespace,
                         'labels': {'app.kubernetes.io/managed-by': 'gpuvirt.provision'}},
            'type': 'kubernetes.io/dockerconfigjson',
            'data': {'.dockerconfigjson': base64.b64encode(doc.encode('utf-8')).decode('ascii')}}
