#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: render_manifests
short_description: Write Kubernetes objects as YAML files, atomically and with their final mode
version_added: 0.1.0
description:
  - Writes one file per object, named C(<prefix>-<kind>-<namespace|cluster>-<name>.yaml), into O(dest). A name
    depends only on the object (and the prefix), never on its place in O(objects), so one object more adds its file
    and renames none. A name over 200 characters is cut and ends in C(-<hash>) of the object's identity (API group,
    kind, namespace, name), as do both names of two objects that would share one.
  - Every name that becomes part of a file name is checked first (kind, DNS-1123 name and namespace), so no
    object name can reach outside O(dest); nothing is written when one is invalid.
  - Each file is written to a temporary file in O(dest) created with mode 0600, given O(mode), then renamed;
    readers see the old or the whole new file, and a Secret is never readable by others.
  - When a render session is open in O(dest) (M(gpuvirt.provision.render_session)), the objects are recorded and
    written when the session closes, each once. An object another role of this render already rendered (same
    apiVersion, kind, namespace and name) is merged into that file, and refused, naming both writers, when the
    two set a field differently. Each object then carries the C(argocd.argoproj.io/sync-wave) annotation of its
    file's numeric prefix, and a custom resource whose CRD an operator installs (ClusterPolicy,
    NodeFeatureDiscovery, HyperConverged, KubeVirt) the Argo CD sync option C(SkipDryRunOnMissingResource=true).
  - Every object, in a session or not, that the collection patches but does not own (Node, HyperConverged, KubeVirt
    CR, and any kind without a row in the per-kind table of C(plugins/module_utils/render/gitops.py)) carries the Argo CD
    sync options C(Prune=false,Delete=false) and Flux's C(kustomize.toolkit.fluxcd.io/prune=disabled), so that
    neither tool deletes it when its file leaves the directory or its Application is deleted.
  - With C(--diff), a Secret's data shows its keys and whether each changed, never the values.
options:
  dest:
    description: Directory the files go to; it must exist.
    type: path
    required: true
  objects:
    description: The Kubernetes objects, each with C(kind) and C(metadata.name).
    type: list
    elements: dict
    required: true
  prefix:
    description: File name prefix, such as C(10-operator).
    type: str
    default: ""
  file_name:
    description:
      - The file name of the one object in O(objects) instead of the generated one, such as C(pull-secret.yaml).
      - Letters, digits, C(.), C(_) and C(-), no directory.
    type: str
  mode:
    description:
      - Mode of every file, such as C(0600) for Secrets.
      - When an object may carry a credential (a Secret, a list kind, see the filter
        P(gpuvirt.provision.k8s_holds_secret#filter)), every file of the call is written with at most C(0600)
        (O(mode) without its group and other bits), whatever O(mode) says.
    type: str
    default: "0644"
  session:
    description:
      - The token that M(gpuvirt.provision.render_session) returned when this run opened the render session in
        O(dest). A render lock in O(dest) that does not hold it is not this run's and stops the task, naming it.
      - In check mode, the token of the check-mode session the open step returned (kept outside O(dest)); the
        objects are noted there and the session's close reports what the real run would write.
    type: str
  phase:
    description:
      - The phase (playbook) rendering, recorded for the render session's pruning (see
        M(gpuvirt.provision.render_session)).
    type: str
    default: ""
attributes:
  check_mode:
    description: Reports which files would change and writes nothing.
    support: full
  diff_mode:
    description: Shows the content of the files that would change.
    support: full
author:
  - gpuvirt.provision maintainers (@gpuvirt)
'''

EXAMPLES = r'''
- name: Render the pull Secret
  gpuvirt.provision.render_manifests:
    dest: /srv/gitops/gpu
    prefix: 40-pull
    objects: "{{ pull_secret_objects }}"
    mode: "0600"
  no_log: true
'''

RETURN = r'''
deferred:
  description: True when a render session is open and the files are written when it closes.
  type: bool
  returned: success
files:
  description: Paths of the files, in the order of O(objects).
  type: list
  elements: str
  returned: always
  sample: [/srv/gitops/gpu/10-operator-namespace-cluster-nvidia-gpu-operator.yaml]
'''


from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import credentials
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', required=True),
            objects=dict(type='list', elements='dict', required=True),
            prefix=dict(type='str', default=''),
            mode=dict(type='str', default='0644'),
            phase=dict(type='str', default=''),
            session=dict(type='str'),
            file_name=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    if not render.HAS_YAML:
        module.fail_json(msg='PyYAML is needed on the host that renders (pip install pyyaml)')
    p = module.params
    try:
        mode = render.file_mode(p['mode'])
        render_session.check_phase(p['phase'])
    except render.RenderError as e:
        module.fail_json(msg=str(e))
    # a Secret is never readable by group or others, whatever mode a task (or a variable in it) asks for
    if credentials.any_holds_credential(p['objects']):
        mode &= 0o600
    try:
        names = render.file_names(p['objects'], p['prefix'])
    except render.RenderError as e:
        module.fail_json(msg=str(e))
    if p['file_name'] is not None:
        if not render.FILE_NAME_RE.fullmatch(p['file_name']):
            module.fail_json(msg='file_name %r is not valid; expected a file name of letters, digits, ".", "_" and '
                                 '"-" with no directory, such as pull-secret.yaml' % p['file_name'])
        if len(names) != 1:
            module.fail_json(msg='file_name names one file but objects has %d objects; give exactly one'
                                 % len(names))
        names = [p['file_name']]
    entries = [{'name': name, 'object': obj, 'writer': p['prefix'] or name} for obj, name in zip(p['objects'], names)]
    try:
        placed = render.place(p['dest'], entries, mode, p['phase'], module.check_mode, session=p['session'])
    except render.RenderError as e:
        module.fail_json(msg=str(e), files=getattr(e, 'files', []))
    result = dict(changed=placed['changed'], files=placed['files'])
    if placed['deferred']:
        result['deferred'] = True
    if module._diff and placed['diff']:
        result['diff'] = placed['diff']
    module.exit_json(**result)


if __name__ == '__main__':
    main()
