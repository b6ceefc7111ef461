#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: render_session
short_description: Open or close one render run in a render directory (lock, prune, kustomization, mark)
version_added: 0.2.0
description:
  - O(state=open) takes the directory for this ansible-playbook run, creating C(.gpuvirt-render.lock)
    exclusively (mode 0600, never through a symbolic link) with a random session token, returned as RV(session),
    Every later render step of the run gives the token back (O(session)); a lock is this run's only when it holds
    that token, never because of its pid, owner or host. Opening writes nothing else; the files, including
    C(.gpuvirt-render.json), are written by the close, and only those whose bytes change.
  - A lock this run did not create (another render writing, one that was killed, or a committed file) stops the
    render, naming its path and the pid, host, owner and age it records. It is taken over only with
    O(takeover_lock=true) (the playbooks' C(gpuvirt_render_takeover_lock)), and reported.
  - While the session is open, M(gpuvirt.provision.render_manifests) writes each object once. A second role
    rendering the same apiVersion/kind/namespace/name is merged into the first file, or refused when the two
    disagree.
  - The directory's own files are untrusted input (others commit to it). A bookkeeping file that is not the JSON
    this collection writes, or is a symbolic link, is refused naming it. A file is pruned only when it is listed,
    is a regular file and still has the sha256 recorded when it was written; otherwise it stays, with a warning. A
    symbolic link, a directory, or a file the collection did not write (or that was changed since) at a name the
    render writes stops the render before anything is written. O(dest) itself must not be a symbolic link.
  - A file is pruned only when its name is one the collection writes (an object's
    C(<prefix>-<kind>-<namespace|cluster>-<name>.yaml), or C(<prefix>-<NNN>-<kind>-...) of a render before names
    followed the object alone, a Helm values file's
    C(<NN>-<words>-helm-values-<release>.yaml)); another name listed in the bookkeeping stays, with a warning.
    Every file is written with the mode the collection chose, never one found in the directory.
  - Opens and closes nest within one run (a phase playbook imported by C(site.yml) opens and closes a level).
    The outermost O(state=closed) writes each object once, deletes the files an earlier render wrote and this one
    did not (in a run opened by C(site.yml) every phase's, a phase playbook run alone only its own phase's; never a
    file the collection did not write), writes
    C(kustomization.yaml) listing the objects in apply order (files that are not objects, written by
    M(gpuvirt.provision.render_file), are recorded and pruned the same way but not listed), and per group of sync
    waves C(flux-N-<group>/kustomization.yaml) listing that group's object files (one Flux Kustomization each; a
    group's directory is created when missing and removed with its file when the group has no file left, only
    while the file holds what was recorded and the directory holds nothing else), records the files with their sha256 in
    C(.gpuvirt-render.json) with C(complete=true) (C(complete=false) while it writes or deletes files), and releases
    the lock. It returns the absolute directory (RV(dest)) and a line (RV(msg)) that names it and every file
    deleted.
  - Byte-stable - a second identical render writes no file (not even C(.gpuvirt-render.json), which records no
    time) and reports no change.
options:
  dest:
    description: The render directory; it must exist.
    type: path
    required: true
  owner:
    description:
      - The playbook that opens the session, recorded in the lock and named when another render is refused.
    type: str
    required: true
  state:
    description: Open or close the session.
    type: str
    choices: [open, closed]
    default: open
  session:
    description:
      - The token RV(session) of this run's open step. With O(state=open) and the lock that holds it, the open nests
        (a phase playbook imported by C(site.yml)); O(state=closed) closes only the session that holds it.
    type: str
  takeover_lock:
    description:
      - With O(state=open), take over a lock this run did not create. What it holds is dropped, and the files its
        close had begun writing are pruned when they still hold what it recorded. Only when no other render writes
        into O(dest).
    type: bool
    default: false
attributes:
  check_mode:
    description:
      - Writes nothing into O(dest). The open step returns a check-mode session token whose lock is kept in a
        private directory of the system's temporary directory; the render steps note their objects there, and the
        close reports exactly what the real close would write and delete (and its diff), then removes that
        directory.
    support: full
  diff_mode:
    description: Closing shows the content of the files it writes; of a Secret the keys of its data, not the values.
    support: full
author:
  - gpuvirt.provision maintainers (@gpuvirt)
'''

EXAMPLES = r'''
- name: Open the render
  gpuvirt.provision.render_session:
    dest: /srv/gitops/gpu
    owner: site

- name: Close the render (prune, kustomization.yaml, completeness mark)
  gpuvirt.provision.render_session:
    dest: /srv/gitops/gpu
    owner: site
    state: closed
'''

RETURN = r'''
session:
  description: This run's session token, written into the lock; every later render step of the run gives it back.
  type: str
  returned: state=open, not in check mode
dest:
  description: The render directory, as an absolute path.
  type: str
  returned: state=closed
msg:
  description: Where the render wrote, how many files it wrote, and every file it deleted (or, in check mode, would).
  type: str
  returned: state=closed and the outermost close
written:
  description:
    - Files written when the session closed (their content or mode differed), kustomization.yaml and the Flux
      groups' C(<group>/kustomization.yaml).
  type: list
  elements: str
  returned: state=closed
interrupted:
  description:
    - The lock taken over (O(takeover_lock)) and removed - the pid, owner, host and start time it recorded and how
      many objects it held (never the objects, a Secret among them).
  type: dict
  returned: state=open and an earlier render was interrupted
pruned:
  description:
    - Files of an earlier render deleted because this render did not produce them, the Flux groups'
      C(<group>/kustomization.yaml) among them.
  type: list
  elements: str
  returned: state=closed
files:
  description: The files of this render directory the collection owns, as listed in kustomization.yaml.
  type: list
  elements: str
  returned: state=closed
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type='path', required=True),
            owner=dict(type='str', required=True),
            state=dict(type='str', choices=['open', 'closed'], default='open'),
            session=dict(type='str'),
            takeover_lock=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    if not render.HAS_YAML:
        module.fail_json(msg='PyYAML is needed on the host that renders (pip install pyyaml)')
    p = module.params
    if not render.PREFIX_RE.fullmatch(p['owner']):
        module.fail_json(msg='owner %r is not valid; expected letters, digits, ".", "_" and "-"' % p['owner'])
    try:
        render.check_directory(p['dest'])
        # check mode: the directory task only pretended; a first render previews every file as new
        if not os.path.isdir(p['dest']) and not (module.check_mode and not os.path.lexists(p['dest'])):
            raise render.RenderError('%s is not a directory: create it first' % p['dest'])
        if p['state'] == 'open':
            result = render_session.open_session(p['dest'], p['owner'], render_session.controller_pid(),
                                                 session=p['session'], takeover=p['takeover_lock'],
                                                 check_mode=module.check_mode)
            for warning in result['warnings']:
                module.warn(warning)
            if result['interrupted']:
                earlier = result['interrupted']
                module.warn('the render lock in %s that this run did not create (pid %s on host %s, %s) was taken over '
                            '(takeover_lock); its files are replaced by this render'
                            % (p['dest'], earlier.get('pid'), earlier.get('host') or 'not recorded',
                               earlier.get('owner')))
            # taking the lock is bookkeeping, not a change to the rendered output
            module.exit_json(changed=False, session=result['session'], interrupted=result['interrupted'] or {})
        if module.check_mode and not render_session.is_check_session(p['session']):
            # a --check run opened no real session: nothing to close, nothing to say
            module.exit_json(changed=False, pruned=[], written=[], files=[], dest=os.path.abspath(p['dest']))
        result = render_session.close_session(p['dest'], render.dump, session=p['session'])
    except render.RenderError as e:
        module.fail_json(msg=str(e))
    for warning in result['warnings']:
        module.warn(warning)
    out = dict(changed=bool(result['written'] or result['pruned']), written=result['written'],
               pruned=result['pruned'], files=result['files'], dest=result['dest'])
    if result['closed']:
        out['msg'] = render_session.summary(result, module.check_mode)
    if module._diff and result['before'] != result['after']:
        out['diff'] = {'before': result['before'], 'after': result['after']}
    module.exit_json(**out)


if __name__ == '__main__':
    main()
