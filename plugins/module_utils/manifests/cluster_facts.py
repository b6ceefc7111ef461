# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the cluster role asks the API server, in one module execution (the module cluster_facts): whether the
cluster answers with the run's credentials, which of the platform table's detection APIs it serves, which of its
detection annotations a node carries, and which of the named CustomResourceDefinitions it serves. Pure Python:
the requests are functions the module passes in (``Client``).

The role asked these in three ``kubernetes.core.k8s_info`` calls before; each call costs the interpreter, Ansible's
module start and the kubernetes client's import (about a second), the requests milliseconds. The requests are the
ones those calls sent, in the same order, so the automation identity needs the same grants (docs/rbac):
  - LIST Node with the field selector ``metadata.name=gpuvirt-cluster-check`` (no node has that name, so nothing
    is returned): the read every phase needs, which proves the credentials reach the cluster; when detection
    annotations are asked about (``node_annotations``: the platform table's detect_node_annotation, for a platform
    that serves no API of its own), the same LIST with ``limit=NODE_READ_LIMIT`` instead, whose nodes show them (the
    platform's agent annotates every node it runs on, so a key counts only when every node read carries it, and one
    some carry and others do not is refused: nodes_agree; a cluster with no node shows none);
  - per detection API (``apis``), the API's discovery, and where the server serves the kind a LIST of it: a kind
    that discovery does not find is an API the cluster does not serve, as k8s_info's ``api_found``;
  - per CRD name (``crds``), a GET of that CustomResourceDefinition: a 404 is a CRD the cluster does not serve.

A refusal of the first read is a cluster that did not answer (``answered`` False): the role names the kubeconfig
it tried and the ways out. A refusal of a later read is a cluster that answered but refused a read the role needs
(``answered`` True), named with the server's answer.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_apply import (
    API_VERSION_RE, KIND_RE, Refused)
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators

# The answer check: the list of nodes every phase makes, by a name no node has, so that nothing is returned.
ANSWER_NODE = 'gpuvirt-cluster-check'
ANSWER_FIELD_SELECTOR = 'metadata.name=' + ANSWER_NODE
CRD_API_VERSION = 'apiextensions.k8s.io/v1'
CRD_KIND = 'CustomResourceDefinition'
# a handful of detection APIs and CRDs is what the role asks; a long list is a mistake in the task, not a question
MOST = 16
# The nodes the platform detection reads (one list): a platform told by a node annotation is one whose agent annotates
# every node, so every node read must carry it, or none; one node's annotation does not decide (its kubelet, or anyone
# who may patch Nodes, can write it). A cluster of more nodes is judged by the first NODE_READ_LIMIT.
NODE_READ_LIMIT = 100


class FactsError(ManifestError):
    """Stops the call. ``answered``: whether the cluster answered the first read (False: the credentials did not
    reach it, or it refused them)."""

    def __init__(self, msg, answered):
        super(FactsError, self).__init__(msg)
        self.answered = answered


class Client(object):
    """The requests, as the module makes them: ``list(api_version, kind, field_selector)`` the items (with
    ``limit=N``, at most N of them), or None when the server serves no such kind (by discovery);
    ``get(api_version, kind, name)`` the object, or None when there is none (404). Each raises k8s_apply.Refused
    when the server refuses or cannot be reached."""

    def __init__(self, list_objects, get_object):
        self.list = list_objects
        self.get = get_object


def _checked_list(values, option, what, check):
    """``values`` (None: none) as a list of at most MOST entries, each as ``check(entry, where)`` returns it
    (``where``: ``<option>[<index>]``); ManifestError naming the option or the entry (a validators check's
    ValidationError becomes one, its words kept)."""
    if values is None:
        return []
    if not isinstance(values, list) or len(values) > MOST:
        shown = values if not isinstance(values, list) else '%d entries' % len(values)
        raise ManifestError('%s: expected a list of at most %d %s, got %r' % (option, MOST, what, shown))
    out = []
    for index, value in enumerate(values):
        try:
            out.append(check(value, '%s[%d]' % (option, index)))
        except validators.ValidationError as exc:
            raise ManifestError(str(exc))
    return out


def _api(entry, where):
    if not isinstance(entry, dict) or set(entry) != {'api_version', 'kind'}:
        raise ManifestError('%s: expected a mapping of exactly api_version and kind, got %r' % (where, entry))
    api_version, kind = entry['api_version'], entry['kind']
    if not isinstance(api_version, str) or not API_VERSION_RE.fullmatch(api_version):
        raise ManifestError('%s.api_version: %r is not an apiVersion ("v1" or "<group>/<version>")'
                            % (where, api_version))
    if not isinstance(kind, str) or not KIND_RE.fullmatch(kind):
        raise ManifestError('%s.kind: %r is not a kind (a letter, then at most 62 letters and digits)'
                            % (where, kind))
    return api_version, kind


def _crd_name(name, where):
    validators.dns1123_subdomain(name, where)
    if '.' not in name:
        raise ManifestError('%s: %r is not a CustomResourceDefinition name (<plural>.<group>)' % (where, name))
    return name


def _annotation_key(key, where):
    validators.label_key(key, where)
    return key


def checked_apis(apis):
    """The detection APIs as (api_version, kind) pairs, each checked by its grammar; ManifestError naming the entry."""
    return _checked_list(apis, 'apis', '{api_version, kind} mappings', _api)


def checked_crds(crds):
    """The CRD names, each a DNS-1123 subdomain of the form <plural>.<group>; ManifestError naming the entry."""
    return _checked_list(crds, 'crds', 'CustomResourceDefinition names', _crd_name)


def checked_node_annotations(keys):
    """The detection annotation keys, each by the grammar of a qualified name; ManifestError naming the entry."""
    return _checked_list(keys, 'node_annotations', 'annotation keys', _annotation_key)


def nodes_agree(nodes, keys):
    """The keys of ``keys`` that every node of ``nodes`` carries as an annotation (none without nodes). A key some
    nodes carry and others do not is no answer: FactsError names the key and the counts, and the way out (name the
    platform). Only the keys are read, never their values."""
    carried = [set(((n or {}).get('metadata') or {}).get('annotations') or {}) if isinstance(n, dict) else set()
               for n in nodes or []]
    found = []
    for key in keys:
        count = sum(1 for annotations in carried if key in annotations)
        if count and count < len(carried):
            raise FactsError('the cluster answered, but %d of the %d nodes read carry the annotation %s, which tells '
                             'a platform only when every node carries it (its agent writes it on each); set '
                             'gpuvirt_platform to the platform the cluster is' % (count, len(carried), key),
                             answered=True)
        if count:
            found.append(key)
    return found


def _refusal(what, exc):
    status = 'HTTP %s %s' % (exc.status, exc.reason) if exc.status is not None else str(exc.reason)
    text = exc.text.strip() if exc.text else ''
    return '%s refused (%s)%s' % (what, status, (': %s' % text) if text else '')


def read_facts(client, apis, crds, node_annotations=()):
    """Ask the questions, in this order; return {answered, served_apis, node_annotations, served_crds} (the served
    entries and the annotation keys the node carries, in the order asked). FactsError on a refusal, ``answered``
    saying whether the first read got through."""
    if node_annotations:
        answer_read = 'the list of Node (v1) with limit %d' % NODE_READ_LIMIT
        ask = dict(limit=NODE_READ_LIMIT)
    else:
        answer_read = 'the list of Node (v1) with fieldSelector %s' % ANSWER_FIELD_SELECTOR
        ask = {}
    try:
        nodes = client.list('v1', 'Node', None if ask else ANSWER_FIELD_SELECTOR, **ask)
    except Refused as exc:
        raise FactsError(_refusal(answer_read, exc), answered=False)
    if nodes is None:
        # every Kubernetes API server serves v1 Node: what answered is not one
        raise FactsError('%s: the server does not serve v1 Node, so it is not a Kubernetes API server'
                         % answer_read, answered=False)
    node_found = nodes_agree(nodes, node_annotations) if node_annotations else []
    served_apis = []
    for api_version, kind in apis:
        try:
            items = client.list(api_version, kind, None)
        except Refused as exc:
            raise FactsError('the cluster answered, but %s' % _refusal('the list of %s (%s)' % (kind, api_version),
                                                                       exc), answered=True)
        if items is not None and api_version not in served_apis:
            served_apis.append(api_version)
    served_crds = []
    for name in crds:
        try:
            crd = client.get(CRD_API_VERSION, CRD_KIND, name)
        except Refused as exc:
            raise FactsError('the cluster answered, but %s' % _refusal('the read of %s %s' % (CRD_KIND, name), exc),
                             answered=True)
        if crd is not None and name not in served_crds:
            served_crds.append(name)
    return {'answered': True, 'served_apis': served_apis, 'node_annotations': node_found,
            'served_crds': served_crds}
