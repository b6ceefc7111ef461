#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_labels_apply
short_description: Send the planned node label patches, one merge patch per node that differs, in one call
version_added: 0.1.0
description:
  - Sends each partial Node of O(patches) (what M(gpuvirt.provision.node_labels_plan) returns) as a JSON merge patch
    (C(application/merge-patch+json)), one request per node, in order; a label value of null removes the label,
    whoever set it. Only the nodes whose labels differ are in the plan, so a fleet already right sends nothing.
  - Checks every patch before sending any, whatever the task passed (a v1 Node named by a DNS-1123 subdomain,
    label keys and values by the Kubernetes grammars, no annotation but C(gpuvirt.provision/owned-labels) (the
    deploy labels the collection switched off; null removes it, for a retired node), one patch per node).
  - Stops at the first patch the API server refuses, naming the node, the HTTP status and the server's message,
    the nodes patched before it and those not sent; a second run patches only what still differs.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  patches:
    description:
      - Partial Node objects (C(apiVersion) v1, C(kind) Node, C(metadata) with C(name), C(labels), C(annotations)), the
        plan's C(patches).
    type: list
    elements: dict
    required: true
  before:
    description:
      - For the diff only, per node, the current values of the labels and annotations its patch sets (the plan's
        C(before)).
    type: dict
    default: {}
extends_documentation_fragment:
  - gpuvirt.provision.k8s_auth
attributes:
  check_mode:
    description: Sends each patch as a server-side dry run (C(dryRun=All)); the API server checks it, nothing is written.
    support: full
  diff_mode:
    description: Per node, the labels (and the owned-labels record) the patch sets, before and as the server answered.
    support: full
'''

EXAMPLES = r'''
- name: Patch the labels that differ
  gpuvirt.provision.node_labels_apply:
    patches: "{{ node_labels_plan.patches }}"
    before: "{{ node_labels_plan.before }}"
  when: node_labels_plan.patches | length > 0
'''

RETURN = r'''
patched:
  description: The nodes patched (in check mode, those a real run would patch), in order.
  returned: success
  type: list
  elements: str
msg:
  description: How many nodes were patched.
  returned: always
  type: str
'''

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_client
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl


def server_reason(exc):
    """The HTTP reason phrase and the API server's own message (its Status body) as a JSON string: quoted, its line
    breaks and control characters escaped, since it is the cluster's text printed in the run's log."""
    try:
        status = json.loads(to_text(exc.body))
        return '%s: %s' % (exc.reason, json.dumps(to_text(status['message'])))
    except (TypeError, ValueError, KeyError):
        return to_text(exc.reason)


def sender(api, dry_run):
    """``send(name, body)`` for module_utils: one merge patch of the Node, its answer as a dict."""
    def send(name, body):
        try:
            # the raw answer: the typed V1Node would be built and thrown away for every node
            answer = api.patch_node(name, body, dry_run='All' if dry_run else None, _content_type=nl.MERGE_PATCH,
                                    _preload_content=False)
        except k8s_client.ApiException as exc:
            raise nl.PatchError(name, exc.status, server_reason(exc))
        except k8s_client.ConnectionProblem as exc:
            raise nl.PatchError(name, None, to_text(exc))
        return json.loads(to_text(answer.data))
    return send


def main():
    module = AnsibleModule(
        argument_spec=module_kit.argument_spec(
            module_kit.K8S_AUTH,
            patches=dict(type='list', elements='dict', required=True),
            before=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    try:
        items = nl.checked_patches(module.params['patches'])
    except nl.ManifestError as exc:
        module.fail_json(msg=str(exc))
    if not items:
        module.exit_json(changed=False, patched=[], msg='no node label differs: nothing sent')
    k8s_client.fail_when_missing(module)
    try:
        # reads the server's version and kubernetes.core's discovery cache (the phase's reads filled it)
        client = k8s_client.api_client(module.params)
    except (k8s_client.CoreException, k8s_client.ConfigException, k8s_client.ConnectionProblem) as exc:
        module.fail_json(msg='no connection to the API server, no node patched (%d to patch: %s): %s'
                         % (len(items), nl.names_text([n for n, _b in items]), to_text(exc)))
    api = k8s_client.core_v1_api.CoreV1Api(client.client.client)
    try:
        done = nl.send_patches(items, sender(api, module.check_mode))
    except nl.ManifestError as exc:
        module.fail_json(msg=str(exc))
    patched = [name for name, _body, _node in done]
    result = dict(changed=True, patched=patched,
                  msg='%s %d node%s: %s' % ('would patch' if module.check_mode else 'patched', len(patched),
                                            '' if len(patched) == 1 else 's', nl.names_text(patched)))
    if module._diff:
        before = module.params['before'] or {}
        result['diff'] = [nl.patch_diff(name, body, before.get(name), node) for name, body, node in done]
    module.exit_json(**result)


if __name__ == '__main__':
    main()
