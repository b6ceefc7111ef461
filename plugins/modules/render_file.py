#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: render_file
short_description: Write a rendered file that is not a Kubernetes object (Helm values), atomically
version_added: 0.2.0
description:
  - Writes O(content) as O(dest)/O(name) through a temporary file created with mode 0600 in O(dest), given O(mode),
    then renamed; readers see the old or the whole new file.
  - When a render session is open in O(dest) (M(gpuvirt.provision.render_session)), the file is recorded and
    written when the session closes; it is the collection's like the objects (pruned when a later render does not
    produce it) but not listed in C(kustomization.yaml), and a file of that name the collection did not write is
    never replaced (the render stops, naming it).
options:
  dest:
    description: Directory the file goes to; it must exist.
    type: path
    required: true
  name:
    description:
      - The file name, ending in C(.yaml); letters, digits, C(.), C(_) and C(-), no directory; or C(UPGRADE.md), the
        upgrade recipe.
    type: str
    required: true
  content:
    description: The text of the file.
    type: str
    required: true
  mode:
    description: Mode of the file.
    type: str
    default: "0644"
  session:
    description:
      - The token that M(gpuvirt.provision.render_session) returned when this run opened the render session in
        O(dest). A render lock in O(dest) that does not hold it is not this run's and stops the task, naming it.
    type: str
  phase:
    description: The phase (playbook) rendering, recorded for the render session's pruning.
    type: str
    default: ""
attributes:
  check_mode:
    description: Reports whether the file would change and writes nothing.
    support: full
  diff_mode:
    description: Shows the content when it would change.
    support: full
author:
  - gpuvirt.provision maintainers (@gpuvirt)
'''

EXAMPLES = r'''
- name: Write the Helm values
  gpuvirt.provision.render_file:
    dest: /srv/gitops/gpu
    name: 43-gpu-operator-helm-values-gpu-operator.yaml
    content: "{{ values | to_nice_yaml }}"
    phase: operator
'''

RETURN = r'''
deferred:
  description: True when a render session is open and the file is written when it closes.
  type: bool
  returned: success
path:
  description: The file's path.
  type: str
  returned: success
'''


from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', required=True),
            name=dict(type='str', required=True),
            content=dict(type='str', required=True),
            mode=dict(type='str', default='0644'),
            phase=dict(type='str', default=''),
            session=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        mode = render.file_mode(p['mode'])
        render_session.check_phase(p['phase'])
    except render.RenderError as e:
        module.fail_json(msg=str(e))
    if not (render_session.FILE_RE.fullmatch(p['name']) or p['name'] in render_session.DOCUMENTS) \
            or p['name'] == render_session.KUSTOMIZATION:
        module.fail_json(msg='name %r is not valid; expected a file name of letters, digits, ".", "_" and "-" ending '
                             'in .yaml (or one of %s), not %s' % (p['name'], ', '.join(render_session.DOCUMENTS),
                                                                  render_session.KUSTOMIZATION))
    try:
        placed = render.place(p['dest'], [{'name': p['name'], 'content': p['content'], 'writer': p['name']}], mode,
                              p['phase'], module.check_mode, session=p['session'])
    except render.RenderError as e:
        module.fail_json(msg=str(e))
    result = dict(changed=placed['changed'], path=placed['files'][0], deferred=placed['deferred'])
    if module._diff and placed['diff']:
        result['diff'] = placed['diff']
    module.exit_json(**result)


if __name__ == '__main__':
    main()
