#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: owned_files_absent
short_description: Remove files the collection wrote, each judged and removed in one step
version_added: 0.1.0
description:
  - Removes each file of O(files) only when it is a regular file (a symbolic link is never followed), at most
    O(max_bytes) long, whose line O(files[].line) starts with its O(files[].marker) (or, with line 0, that carries
    the marker anywhere); anything else at a path is left alone and reported under RV(kept) with the reason (the
    collection takes back only what it wrote).
  - Each directory on the way is opened from C(/) without following a link and must be owned by root and not
    group- or world-writable (world-writable only with the sticky bit); the file is read and removed relative to
    that directory, in the same call, and only if its name still names the file read, which stays open until after
    the removal.
  - A device or a FIFO at a path is never opened.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  files:
    description: The files to take back; the caller checks each path against its writer's grammar too.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute, normalised path (no C(..)).
        type: str
        required: true
      marker:
        description: What proves the file ours, literal text of 8 to 128 printable ASCII characters.
        type: str
        required: true
      line:
        description: The line (1 to 8) that must start with O(files[].marker); 0 for the marker anywhere.
        type: int
        default: 1
  max_bytes:
    description: A larger file is not one the collection wrote, and is not read.
    type: int
    default: 65536
attributes:
  check_mode:
    description: Reports what would be removed and kept; removes nothing.
    support: full
  diff_mode:
    description: Not supported.
    support: none
'''

EXAMPLES = r'''
- name: Take back the nouveau blacklist the nouveau role wrote
  gpuvirt.provision.owned_files_absent:
    files:
      - path: /etc/modprobe.d/gpuvirt-blacklist-nouveau.conf
        marker: '# Managed by gpuvirt.provision (nouveau role)'
        line: 1
'''

RETURN = r'''
removed:
  description: The files removed (in check mode, those that would be).
  returned: always
  type: list
  elements: str
kept:
  description: Each file left at its path, with the reason (C(path), C(reason)).
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import owned_files


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', required=True, options=dict(
                path=dict(type='str', required=True),
                marker=dict(type='str', required=True),
                line=dict(type='int', default=1),
            )),
            max_bytes=dict(type='int', default=65536),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        files = [(owned_files.checked_path(f['path']), owned_files.checked_marker(f['marker']),
                  owned_files.checked_line(f['line'])) for f in p['files']]
        if not 1 <= p['max_bytes'] <= owned_files.MAX_BYTES:
            raise owned_files.OwnedFilesError('max_bytes is %d: give 1 to %d' % (p['max_bytes'], owned_files.MAX_BYTES))
    except owned_files.OwnedFilesError as exc:
        module.fail_json(msg='owned_files_absent: %s. Nothing was removed.' % to_native(exc))
    removed, kept = [], []
    for path, marker, line in files:
        try:
            gone, reason = owned_files.take_back(path, marker, line, p['max_bytes'], remove=not module.check_mode)
        except OSError as exc:
            module.fail_json(msg='owned_files_absent: %s: %s' % (path, to_native(exc)), changed=bool(removed),
                             removed=removed, kept=kept)
        if gone:
            removed.append(path)
        elif reason:
            kept.append(dict(path=path, reason=reason))
    module.exit_json(changed=bool(removed), removed=removed, kept=kept)


if __name__ == '__main__':
    main()
