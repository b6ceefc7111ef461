# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the kubevirt_devices role reads from the cluster in apply mode, in one module execution (the module
kubevirt_devices_facts): HCO's CustomResourceDefinition, the HyperConverged objects or the KubeVirt CRs, and the
nodes. Pure Python: the requests are functions the module passes in (``cluster_facts.Client``).

The role made these reads in three ``kubernetes.core.k8s_info`` calls per play before; each call costs the
interpreter, Ansible's module start and the kubernetes client's import (about a second, several under load), the
requests milliseconds. The requests are the ones those calls sent, in the same order, so the automation identity
needs the same grants (docs/rbac/README.md: customresourcedefinitions get; hyperconvergeds, kubevirts and nodes
list):
  - a GET of the CustomResourceDefinition ``hyperconvergeds.hco.kubevirt.io`` (a 404 is a CRD not served);
  - with ``kubevirt_config`` hco and the CRD served, a LIST of hco.kubevirt.io/v1beta1 HyperConverged in every
    namespace; with ``kubevirt_config`` kubevirt, a LIST of kubevirt.io/v1 KubeVirt in every namespace (a kind that
    discovery does not find is listed as none, as k8s_info's ``api_found`` false);
  - a LIST of v1 Node.
Of the CRD only what the role decides from it is returned: whether it is served, and whether its v1beta1 schema has
``spec.featureGates.disableMDevConfiguration`` (HCO 1.10 / OpenShift Virtualization 4.14 and later: the gate instead
of the jsonpatch annotation).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_apply import Refused

HCO_CRD = 'hyperconvergeds.hco.kubevirt.io'
CRD_API_VERSION = 'apiextensions.k8s.io/v1'
CRD_KIND = 'CustomResourceDefinition'
# the role always reads HyperConverged as this version (the one its merge writes)
HCO_API_VERSION, HCO_KIND = 'hco.kubevirt.io/v1beta1', 'HyperConverged'
KUBEVIRT_API_VERSION, KUBEVIRT_KIND = 'kubevirt.io/v1', 'KubeVirt'
CONFIGS = ('hco', 'kubevirt')
# the feature gate whose presence in HCO's schema decides between the gate and the jsonpatch annotation
MDEV_GATE = 'disableMDevConfiguration'


class FactsError(ManifestError):
    """Stops the call: a read the cluster refused, or an answer that is not a Kubernetes API server's."""


def checked_config(kubevirt_config):
    """``kubevirt_config`` (the cluster model's kubevirt_config: which object holds the permitted devices) checked;
    ManifestError naming the option and the values it takes."""
    if kubevirt_config not in CONFIGS:
        raise ManifestError('kubevirt_config: %r is neither of %s (the cluster model resolves gpuvirt_kubevirt_config '
                            'auto to one of them before this call)' % (kubevirt_config, ', '.join(CONFIGS)))
    return kubevirt_config


def gate_supported(crd):
    """Whether HCO's CRD ``crd`` (None: not served) has featureGates.disableMDevConfiguration in its v1beta1
    schema: the first version named v1beta1, as the role's template read it, and False where any level is
    missing."""
    if not isinstance(crd, dict):
        return False
    versions = (crd.get('spec') or {}).get('versions') or []
    v1beta1 = [v for v in versions if isinstance(v, dict) and v.get('name') == 'v1beta1']
    if not v1beta1:
        return False
    node = v1beta1[0]
    for key in ('schema', 'openAPIV3Schema', 'properties', 'spec', 'properties', 'featureGates', 'properties'):
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return False
    return isinstance(node, dict) and MDEV_GATE in node


def _refused(what, exc):
    status = 'HTTP %s %s' % (exc.status, exc.reason) if exc.status is not None else str(exc.reason)
    text = exc.text.strip() if exc.text else ''
    return FactsError("The cluster refused %s (%s)%s. Grant the automation identity the kubevirt_devices role's "
                      "reads (docs/rbac/README.md). Nothing was changed."
                      % (what, status, (': %s' % text) if text else ''))


def read_facts(client, kubevirt_config):
    """The role's reads in their order; returns {hco_crd_served, hco_gate_supported, hyperconvergeds, kubevirts,
    nodes} (the lists as the server returned their items; a list not read for this configuration is empty).
    FactsError on a refusal, naming the read."""
    kubevirt_config = checked_config(kubevirt_config)
    try:
        crd = client.get(CRD_API_VERSION, CRD_KIND, HCO_CRD)
    except Refused as exc:
        raise _refused('the read of %s %s' % (CRD_KIND, HCO_CRD), exc)
    facts = {'hco_crd_served': crd is not None, 'hco_gate_supported': gate_supported(crd),
             'hyperconvergeds': [], 'kubevirts': [], 'nodes': []}
    wanted = []
    if kubevirt_config == 'hco' and crd is not None:
        wanted.append(('hyperconvergeds', HCO_API_VERSION, HCO_KIND))
    if kubevirt_config == 'kubevirt':
        wanted.append(('kubevirts', KUBEVIRT_API_VERSION, KUBEVIRT_KIND))
    wanted.append(('nodes', 'v1', 'Node'))
    for key, api_version, kind in wanted:
        try:
            items = client.list(api_version, kind, None)
        except Refused as exc:
            raise _refused('the list of %s (%s)' % (kind, api_version), exc)
        if items is None and key == 'nodes':
            # every Kubernetes API server serves v1 Node
            raise FactsError('The list of Node (v1): the server does not serve v1 Node, so it is not a Kubernetes '
                             'API server. Nothing was changed.')
        facts[key] = items or []
    return facts
