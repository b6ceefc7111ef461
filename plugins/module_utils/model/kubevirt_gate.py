# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The KubeVirt version gate: a pool row whose devices only a recent KubeVirt serves (its ``kubevirt_min``
column) stops the run, before any write, on a cluster whose KubeVirt is older. Pure Python.

The version the cluster runs is the KubeVirt CR's ``status.observedKubeVirtVersion`` on both platforms: virt-operator
sets it once it has deployed that version (kubevirt/kubevirt v1.9.0 staging/src/kubevirt.io/api/core/v1/types.go
KubeVirtStatus.ObservedKubeVirtVersion), and under OpenShift Virtualization HCO creates that CR itself, named
``kubevirt-kubevirt-hyperconverged`` in its own namespace, and reads the same field
(kubevirt/hyperconverged-cluster-operator v1.18.1 controllers/handlers/kubevirt.go NewKubeVirtWithNameOnly and the
version check that reads ``found.Status.ObservedKubeVirtVersion``; the ``kubevirts.kubevirt.io`` CRD HCO ships,
deploy/crds/kubevirt00.crd.yaml, has ``status.observedKubeVirtVersion``). So the gate reads every KubeVirt CR,
whichever platform.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

# ASCII digits only ([0-9], not \\d: \\d matches any Unicode digit, which int() would then read).
_VERSION_RE = re.compile(r'v?([0-9]{1,6})\.([0-9]{1,6})\.([0-9]{1,6})(-[0-9A-Za-z.-]{1,64})?(?:\+[0-9A-Za-z.-]{1,64})?')
# A ``git describe`` suffix, ``-<commits since the tag>-g<abbreviated hash>`` (optionally ``-dirty``): a build
# made N commits after the release tag. KubeVirt's own builds take their version from
# ``git describe --match='v[0-9]*' --tags --abbrev=14`` and turn ``v1.1.0-1-g<hash>`` into the build metadata
# ``v1.1.0+<hash>`` (kubevirt/kubevirt hack/version.sh kubevirt::version::get_version_vars), so such a build is
# the release itself or later; downstream builds may report the untranslated form.
_DESCRIBE_RE = re.compile(r'-[0-9]{1,9}-g[0-9a-f]{4,40}(?:-dirty)?')
# Longer than any version the pattern accepts: refused before matching.
_MAX_LEN = 200

# Which OpenShift Virtualization release ships a KubeVirt release: only what a source says. None says yet which
# one ships KubeVirt 1.9.0, so the message says that it is not known (docs/pools/vendor-vfio.md, "The cluster
# side").
OPENSHIFT_VIRTUALIZATION_SHIPPING = {}


class KubeVirtGateError(ValueError):
    """A version that is not MAJOR.MINOR.PATCH, or a host entry without its pool's row."""


def version_key(version, source):
    """``v1.9.0`` -> ``(1, 9, 0, 1)``; a pre-release (``1.9.0-rc.1``) sorts before its release (SemVer 2.0 section
    11), as ``(1, 9, 0, 0)``. ``source`` names where the version came from, for the error."""
    text = version.strip() if isinstance(version, str) else None
    match = _VERSION_RE.fullmatch(text) if text is not None and len(text) <= _MAX_LEN else None
    if not match:
        raise KubeVirtGateError('%s %s is not a KubeVirt version such as v1.9.0' % (source, printable(version)))
    major, minor, patch, pre = match.groups()
    # ``v1.9.0-41-gabc1234``: N commits after the v1.9.0 tag, not a pre-release of it
    release = not pre or _DESCRIBE_RE.fullmatch(pre) is not None
    return int(major), int(minor), int(patch), 1 if release else 0


def printable(value, cap=80):
    """``value`` for a message, stripped as version_key reads it: validators.shown."""
    return validators.shown(value.strip() if isinstance(value, str) else value, cap)


def needed(hosts):
    """``{version: [host, ...]}``: the hosts of ``hosts`` (the per-host view, each with ``traits``) whose pool row
    sets ``kubevirt_min``, in host order."""
    out = {}
    for host in hosts or []:
        traits = host.get('traits') if isinstance(host, dict) else None
        if not isinstance(traits, dict):
            raise KubeVirtGateError('fleet entry %r has no traits (the pool row): pass the entries of gpu_hosts' % (host,))
        want = traits.get('kubevirt_min')
        if want:
            version_key(want, 'the kubevirt_min of pool %s' % traits.get('name'))
            out.setdefault(want, []).append(host.get('host') or host.get('node'))
    return out


def check(hosts, observed, kubevirt_config=None, declared=None):
    """The gate: ``{'ok', 'message', 'note'}``.

    ``observed``: the ``status.observedKubeVirtVersion`` of every KubeVirt CR of the cluster (``[]``: none found or
    none deployed yet), or None when the run does not read the cluster (render mode without a kubeconfig): then the
    ``declared`` version is judged in its place (the KubeVirt version a render names for the cluster it targets,
    kubevirt_devices_kubevirt_version: the same version decides what the render writes), and without one the gate is
    ``ok`` with a ``note`` for the summary. ``kubevirt_config`` (``hco`` or ``kubevirt``) adds, under HCO, which
    OpenShift Virtualization release to upgrade to where a source says it."""
    wants = needed(hosts)
    if not wants:
        return {'ok': True, 'message': '', 'note': ''}
    said = '; '.join('KubeVirt %s or later for %s' % (v, ', '.join(h)) for v, h in
                     sorted(wants.items(), key=lambda kv: version_key(kv[0], 'kubevirt_min')))
    source, what = 'The cluster runs %s', 'the KubeVirt CR status.observedKubeVirtVersion'
    if observed is None and declared not in (None, ''):
        observed = [declared]
        source = 'The render targets %s (kubevirt_devices_kubevirt_version)'
        what = 'kubevirt_devices_kubevirt_version'
    if observed is None:
        return {'ok': True, 'message': '', 'note': (
            'KubeVirt version not checked (no cluster read: render mode without gpuvirt_kubeconfig or '
            'gpuvirt_kube_context): this fleet needs %s; make sure the cluster the render is synced to runs it'
            % said)}
    found = [v for v in observed if v not in (None, '')]
    # the oldest KubeVirt CR decides (a cluster runs one; a second one found is shown too)
    keys = [version_key(v, what) for v in found]
    # printed as normalised: each passed version_key, so stripped it is printable ASCII
    found = [v.strip() for v in found]
    lowest = min(keys) if keys else None
    short = [h for v, hs in wants.items() for h in hs if lowest is None or lowest < version_key(v, 'kubevirt_min')]
    if not short:
        return {'ok': True, 'message': 'KubeVirt %s: %s' % (', '.join(found), said), 'note': ''}
    top = max((v for v, hs in wants.items() if set(hs) & set(short)), key=lambda v: version_key(v, 'kubevirt_min'))
    upgrade = ''
    if kubevirt_config == 'hco':
        release = OPENSHIFT_VIRTUALIZATION_SHIPPING.get(top)
        upgrade = (' On OpenShift, upgrade OpenShift Virtualization to %s, which ships KubeVirt %s.' % (release, top)
                   if release else ' On OpenShift: which OpenShift Virtualization release ships KubeVirt %s is not '
                   'known yet (no release note says so); upgrade to one whose KubeVirt CR reports it.' % top)
    runs = ('KubeVirt ' + ', '.join(found) if found
            else 'no deployed KubeVirt (no KubeVirt CR reports status.observedKubeVirtVersion)')
    return {'ok': False, 'note': '', 'message': (
        (source + ', but %s need KubeVirt %s or later (%s): its own device plugin serves their devices '
         'only from that release. Upgrade KubeVirt first, or take these hosts out of the run; nothing was '
         'changed.%s') % (runs, ', '.join(short), top, said, upgrade))}
