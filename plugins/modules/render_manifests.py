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
  - Writes one file per object, named C(<prefix>-<NNN>-<kind>-<namespace|cluster>-<name>.yaml), into O(dest).
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
    description: Mode of every file, such as C(0600) for Secrets.
    type: str
    default: "0644"
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
  sample: [/srv/gitops/gpu/10-operator-000-namespace-cluster-nvidia-gpu-operator.yaml]
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils import render, render_session


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', required=True),
            objects=dict(type='list', elements='dict', required=True),
            prefix=dict(type='str', default=''),
            mode=dict(type='str', default='0644'),
            phase=dict(type='str', default=''),
            file_name=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    if not render.HAS_YAML:
        module.fail_json(msg='PyYAML is needed on the host that renders (pip install pyyaml)')
    p = module.params
    try:
        mode = render.file_mode(p['mode'])
    except render.RenderError as e:
        module.fail_json(msg=str(e))
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
    if not os.path.isdir(p['dest']) and not module.check_mode:  # check mode: the directory task only pretended
        module.fail_json(msg='%s is not a directory: create it first' % p['dest'])
    in_session = os.path.isdir(p['dest']) and render_session.session(p['dest']) is not None
    if in_session and module.check_mode:
        # a play previewing inside a real render run: the session's close writes and reports the files
        module.exit_json(changed=False, files=[os.path.join(p['dest'], name) for name in names], deferred=True)
    if in_session:
        # a render session is open: the objects are written once each when it closes
        files = []
        for obj, name in zip(p['objects'], names):
            try:
                files.append(os.path.join(p['dest'], render_session.record(
                    p['dest'], obj, name, p['prefix'] or name, p['phase'], mode)))
            except render.RenderError as e:
                module.fail_json(msg=str(e), files=files)
        module.exit_json(changed=False, files=files, deferred=True)
    files, changed, before, after = [], False, [], []
    for obj, name in zip(p['objects'], names):
        path = os.path.join(p['dest'], name)
        content = render.dump(obj)
        content_differs, mode_differs = render.needs_write(path, content, mode)
        files.append(path)
        if content_differs:
            old = render.read(path) or ''
            # a Secret's values never reach the diff: its keys show what changed
            old, shown = render_session.redact_secret_texts(old, content) if obj.get('kind') == 'Secret' \
                else (old, content)
            before.append(old)
            after.append(shown)
        if content_differs or mode_differs:
            changed = True
            if not module.check_mode:
                render.write_atomic(path, content, mode)
    result = dict(changed=changed, files=files)
    if module._diff and changed:
        result['diff'] = {'before': ''.join(before), 'after': ''.join(after)}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
