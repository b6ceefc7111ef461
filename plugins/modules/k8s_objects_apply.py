#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: k8s_objects_apply
short_description: Server-side apply a list of objects in one call, sending only those a dry run shows would change
version_added: 0.2.0
description:
  - The apply of the role P(gpuvirt.provision.k8s_objects#role), one module execution for the whole list instead of
    a C(kubernetes.core.k8s_info) and two C(kubernetes.core.k8s) runs per object.
  - Reads each object as stored, then sends each as a server-side apply dry run (C(dryRun=All)) under
    O(field_manager); an object whose dry run differs from the stored object other than in the API server's
    bookkeeping (C(managedFields), C(resourceVersion); the filter P(gpuvirt.provision.k8s_would_change#filter))
    would change. Only those are applied for real, in order, so a run with nothing to change writes nothing.
  - A dry run refused only because the object's Namespace does not exist yet counts as a change when that
    Namespace is in the same list (it is applied first) or the call only previews (check mode, O(dry_run));
    otherwise, as every other refused read or dry run, it stops the call before any write, naming each refused
    object.
  - Checks every object before any request, whatever the task passed (a mapping with an C(apiVersion), a
    C(kind), a C(metadata.name) that is a DNS-1123 subdomain, a C(metadata.namespace), when given, a DNS-1123
    label; no list kind), then against a fixed table of the objects the collection's roles build (module_utils
    C(manifests/apply_rules.py)) - its C(apiVersion) and C(kind) exactly so spelled, cluster-scoped or in a
    namespace of O(namespaces) for the row's namespace role, its name pattern, and for a MachineConfig or
    MachineConfigPool its whole content, which must equal what the collection's builder makes from the object's
    own decoded inputs. RBAC objects, a Secret other than a registry pull Secret in the operator namespace, and
    any kind no role builds are refused, naming the object and the rule; nothing is sent.
  - A list that may hold a credential (a Secret, in any spelling, or a list kind; the filter
    P(gpuvirt.provision.k8s_holds_secret#filter)) returns no object content, no diff and no server message, only each
    object's kind, namespace, name and what was done, and the API server's warnings only counted. The task still
    needs a literal C(no_log), as the definitions are its arguments.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  definitions:
    description: Complete objects, applied in this order.
    type: list
    elements: dict
    required: true
  namespaces:
    description:
      - The namespaces this call may write to, per namespace role of the table - C(operator) (the GPU
        Operator's - its Namespace, OLM objects, pull Secret and vGPU device ConfigMap), C(kubevirt) (the KubeVirt
        CR or HyperConverged) and C(workload) (the smoke VM, the DRA claim templates); each a namespace or a list.
      - Each must be a DNS-1123 label and none of the platform's own (C(kube-system), C(kube-public),
        C(kube-node-lease), C(kube-*), C(openshift-*) but C(openshift-cnv) for C(kubevirt)). The Node Feature
        Discovery namespace (C(openshift-nfd)) is fixed in the table. A cluster-scoped object needs none.
    type: dict
    default: {}
  field_manager:
    description:
      - The server-side apply field manager, C(gpuvirt-provision) or C(gpuvirt-provision-<part>) (lower-case
        letters, digits and C(-), at most 40), so that the collection's fields are always told apart from others'.
    type: str
    default: gpuvirt-provision
  force_conflicts:
    description: Take over fields another field manager owns.
    type: bool
    default: false
  dry_run:
    description:
      - Preview only, as in check mode - every object goes to the server as a dry run and nothing further. For plays
        that preview with C(check_mode), where the role's tasks cannot read check mode from C(ansible_check_mode).
    type: bool
    default: false
  wait:
    description:
      - After applying an object, wait until it is ready as C(kubernetes.core.k8s) waits (its waiter, from its
        C(module_utils), used as is; for the kinds it knows, such as Deployment or DaemonSet, their readiness,
        for any other kind that the object exists). Only the objects applied are waited for.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for each object with O(wait).
    type: int
    default: 120
  wait_sleep:
    description: Seconds between two reads while waiting.
    type: int
    default: 5
extends_documentation_fragment:
  - gpuvirt.provision.k8s_auth
attributes:
  check_mode:
    description: Reads and sends the dry runs only; reports which objects would change.
    support: full
  diff_mode:
    description: Per changed object, what differs between the stored object and the server's answer, as
      kubernetes.core.k8s shows it (none for a list that may hold a credential).
    support: full
'''

EXAMPLES = r'''
- name: Apply the objects that change
  gpuvirt.provision.k8s_objects_apply:
    definitions:
      - apiVersion: v1
        kind: Namespace
        metadata:
          name: nvidia-gpu-operator
      - apiVersion: v1
        kind: ConfigMap
        metadata:
          name: vgpu-devices-config
          namespace: nvidia-gpu-operator
        data:
          config.yaml: "version: v1"
    namespaces:
      operator: nvidia-gpu-operator
    field_manager: gpuvirt-provision
'''

RETURN = r'''
objects:
  description: Per object, in the order given, what was done.
  returned: success
  type: list
  elements: dict
  contains:
    kind:
      description: Its kind, as given.
      type: str
    api_version:
      description: Its apiVersion, as given.
      type: str
    namespace:
      description: Its namespace (empty for a cluster-scoped object).
      type: str
    name:
      description: Its name.
      type: str
    changed:
      description: Its dry run shows a change (after an apply, the server's answer differs from the object as read).
      type: bool
    applied:
      description: Applied for real, and changed (never in check mode or with O(dry_run)).
      type: bool
    diff:
      description: With C(--diff), when it changes and the list holds no credential, C(before) and C(after).
      type: dict
      returned: when changed, in diff mode
applied:
  description: The names of the objects applied and changed, in order.
  returned: success
  type: list
  elements: str
msg:
  description: What was applied or would be.
  returned: always
  type: str
'''

import copy
import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import apply_rules
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_apply as ka
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_client
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError


class Requests(object):
    """The module's side of k8s_apply.Client: the requests through kubernetes.core's client."""

    def __init__(self, k8s, params, warnings):
        self.k8s = k8s
        self.params = params
        self.warnings = warnings
        self._resources = {}

    def resource(self, obj):
        key = (obj['apiVersion'], obj['kind'])
        if key not in self._resources:
            try:
                # kind, plural, singular or short name, as kubernetes.core.k8s resolves it
                self._resources[key] = self.k8s.resource(obj['kind'], obj['apiVersion'])
            except (k8s_client.ResourceNotFoundError, k8s_client.ResourceNotUniqueError):
                raise ka.Refused(None, 'the API server serves no exact match for %s.%s (by kind, name, singular '
                                       'name or short name)' % (obj['apiVersion'], obj['kind']))
            except k8s_client.DynamicApiError as exc:
                raise ka.Refused(exc.status, exc.reason, to_text(exc.body))
            except k8s_client.ConnectionProblem as exc:
                raise ka.Refused(None, to_text(exc))
        return self._resources[key]

    def read(self, obj):
        resource = self.resource(obj)
        meta = obj['metadata']
        try:
            answer = self.k8s.client.get(resource, name=meta['name'], namespace=meta.get('namespace'),
                                         serialize=False)
        except k8s_client.NotFoundError:
            return None
        except k8s_client.DynamicApiError as exc:
            raise ka.Refused(exc.status, exc.reason, to_text(exc.body))
        except k8s_client.ConnectionProblem as exc:
            raise ka.Refused(None, to_text(exc))
        return json.loads(to_text(answer.data))

    def send(self, obj, dry_run):
        resource = self.resource(obj)
        body = copy.deepcopy(obj)
        # as kubernetes.core.k8s sends it: the kind and group version the server resolved
        body['kind'] = resource.kind
        body['apiVersion'] = resource.group_version
        meta = obj['metadata']
        try:
            answer, warnings = k8s_client.decode_response(self.k8s.client.server_side_apply(
                resource, body=body, name=meta['name'], namespace=meta.get('namespace'),
                field_manager=self.params['field_manager'], force_conflicts=self.params['force_conflicts'],
                dry_run='All' if dry_run else None, serialize=False))
        except k8s_client.DynamicApiError as exc:
            raise ka.Refused(exc.status, exc.reason, to_text(exc.body))
        except k8s_client.ConnectionProblem as exc:
            raise ka.Refused(None, to_text(exc))
        except ValueError as exc:
            # the client's own refusal (a namespaced kind without a namespace)
            raise ka.Refused(None, to_text(exc))
        for warning in warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)
        return answer

    def dry_run(self, obj):
        return self.send(obj, True)

    def apply(self, obj):
        return self.send(obj, False)

    def wait(self, obj):
        waiter = k8s_client.get_waiter(self.k8s, self.resource(obj))
        try:
            ready, _instance, seconds = waiter.wait(timeout=self.params['wait_timeout'],
                                                    sleep=self.params['wait_sleep'], name=obj['metadata']['name'],
                                                    namespace=obj['metadata'].get('namespace'))
        except k8s_client.CoreException as exc:
            raise ka.Refused(None, to_text(exc))
        return ready, seconds


def main():
    module = AnsibleModule(
        argument_spec=module_kit.argument_spec(
            module_kit.K8S_AUTH,
            definitions=dict(type='list', elements='dict', required=True),
            namespaces=dict(type='dict', default={}),
            field_manager=dict(type='str', default='gpuvirt-provision'),
            force_conflicts=dict(type='bool', default=False),
            dry_run=dict(type='bool', default=False),
            wait=dict(type='bool', default=False),
            wait_timeout=dict(type='int', default=120),
            wait_sleep=dict(type='int', default=5),
        ),
        supports_check_mode=True,
    )
    params = module.params
    preview = module.check_mode or params['dry_run']
    # a list holding a Secret is never echoed back (the task's literal no_log hides the output; this keeps the
    # registered result free of it too)
    module_args = {'invocation': {'module_args': ka.echoed_arguments(params)}}
    try:
        objects = ka.checked_objects(params['definitions'], params['namespaces'])
        apply_rules.check_field_manager(params['field_manager'])
    except ManifestError as exc:
        module.fail_json(msg=str(exc), **module_args)
    if not objects:
        module.exit_json(changed=False, objects=[], applied=[], msg='no object: nothing sent', **module_args)
    k8s_client.fail_when_missing(module, **module_args)
    try:
        k8s = k8s_client.api_client(params)
    except (k8s_client.CoreException, k8s_client.ConfigException, k8s_client.ConnectionProblem) as exc:
        module.fail_json(msg='no connection to the API server, nothing sent (%d objects: %s): %s'
                         % (len(objects), ka.names(objects), to_text(exc)), **module_args)
    warnings = []
    requests = Requests(k8s, params, warnings)
    client = ka.Client(requests.read, requests.dry_run, requests.apply, requests.wait)
    try:
        records, diffs = ka.apply_objects(objects, client, params['namespaces'], preview_only=preview,
                                          wait=params['wait'], diff=module._diff)
    except ka.ApplyError as exc:
        for warning in ka.shown_warnings(objects, warnings):
            module.warn(warning)
        module.fail_json(msg=str(exc), objects=exc.records,
                         applied=[r['name'] for r in exc.records if r['applied']], **module_args)
    # ansible-core prints a result's warnings even under no_log: a list holding a credential gets their count only
    for warning in ka.shown_warnings(objects, warnings):
        module.warn(warning)
    changed = [r for r in records if r['changed']]
    result = dict(changed=bool(changed), objects=records, applied=[r['name'] for r in records if r['applied']],
                  msg='%s %d of %d object%s%s' % (
                      'would apply' if preview else 'applied', len(changed), len(records),
                      '' if len(records) == 1 else 's',
                      ': %s' % ka.names([o for o, r in zip(objects, records) if r['changed']]) if changed else ''))
    if diffs:
        result['diff'] = diffs
    result.update(module_args)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
