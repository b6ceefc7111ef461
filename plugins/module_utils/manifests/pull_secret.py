# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Registry pull Secret (``kubernetes.io/dockerconfigjson``) for the vGPU Manager image. Pure Python.

Error messages never contain the password or the encoded auth: they may end up in logs.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked


def _b64(text):
    return base64.b64encode(text.encode('utf-8')).decode('ascii')


def check_login(name, registry, username, password_given, image_registry=None, credentials=True):
    """Everything about a login that can be judged without the password (only whether one is given). With
    ``credentials`` false (a render that leaves the Secret out) only the registry is judged.

    Kept apart from the build so the role can run it in a task WITHOUT no_log: its failure message is then
    shown instead of being hidden with the credential."""
    needed = (('registry', registry), ('username', username), ('password', password_given)) if credentials else \
        (('registry', registry),)
    missing = [k for k, v in needed if not v]
    if missing:
        raise ManifestError("pull secret %s lacks %s (gpu_operator_pull_secret.%s)"
                            % (name, ', '.join(missing), missing[0]))
    if '/' in registry.split('://', 1)[-1]:
        raise ManifestError("pull secret %s: registry %r must be a host[:port] only (e.g. registry.example.com:5000), "
                            "not a repository path" % (name, registry))
    checked(validators.oci_registry, registry.split('://', 1)[-1], 'pull secret %s: gpu_operator_pull_secret.registry' % name)
    check_registry_matches(registry, image_registry, name)


def check_labels(labels, name):
    """Labels for the Secret's metadata: keys ``[prefix/]name`` and values by the Kubernetes label grammar."""
    if labels is None:
        return
    if not isinstance(labels, dict):
        raise ManifestError("pull secret %s: labels are %r; expected a map of label keys to values" % (name, labels))
    for key, value in labels.items():
        what = 'pull secret %s: label key %r' % (name, key)
        prefix, dummy, base = key.rpartition('/') if isinstance(key, str) else ('', '', key)
        if prefix:
            checked(validators.dns1123_subdomain, prefix, what)
        if not base:
            raise ManifestError("%s has no name after its prefix" % what)
        checked(validators.label_value, base, what)
        checked(validators.label_value, value, 'pull secret %s: label %s' % (name, key))


def build_pull_secret(name, namespace, registry, username, password, email=None, labels=None):
    """A dockerconfigjson Secret holding one registry login; ``labels`` (a map) go into its metadata. The one
    builder of this Secret: the gpu_operator role and the vgpu_manager_image role both get it from the
    gpu_operator_pull_secret module."""
    check_login(name, registry, username, bool(password))
    check_labels(labels, name)
    entry = {'username': username, 'password': password, 'auth': _b64('%s:%s' % (username, password))}
    if email:
        entry['email'] = email
    config = json.dumps({'auths': {registry: entry}}, sort_keys=True)
    metadata = {'name': name, 'namespace': namespace}
    if labels:
        metadata['labels'] = dict(labels)
    return {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/dockerconfigjson',
            'metadata': metadata,
            'data': {'.dockerconfigjson': _b64(config)}}


def check_registry_matches(secret_registry, image_registry, name):
    """A login for one registry does not help pulling from another: say so before anything is applied."""
    if secret_registry and image_registry and secret_registry != image_registry:
        raise ManifestError("pull secret %s logs in to %s but the vGPU Manager image is in %s; set "
                            "gpu_operator_pull_secret.registry to %s" % (name, secret_registry, image_registry, image_registry))
