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
  - Removes each file of O(paths) only when it is a regular file (a symbolic link is never followed), at most
    O(max_bytes) long, that carries one of O(markers); anything else at a path is left alone and reported under
    RV(kept) with the reason (the collection takes back only what it wrote).
  - The file is read and removed in the same call, and removed only if the path still names the file that was
    read (same device and inode), so nothing put at the path after the judgement is removed in its place.
  - A device or a FIFO at a path is never opened.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  paths:
    description: Absolute, normalised paths of the files to take back (no C(..)); the caller checks each against
      its writer's grammar too.
    type: list
    elements: path
    required: true
  markers:
    description: What proves a file ours, literal text of 8 to 128 printable ASCII characters; one is enough.
    type: list
    elements: str
    required: true
  first_line:
    description: The marker must start the file's first line (a header); otherwise it may be anywhere in the file.
    type: bool
    default: false
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
    paths: [/etc/modprobe.d/gpuvirt-blacklist-nouveau.conf]
    markers: ['# Managed by gpuvirt.provision (nouveau role)']
    first_line: true
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
            paths=dict(type='list', elements='path', required=True),
            markers=dict(type='list', elements='str', required=True),
            first_line=dict(type='bool', default=False),
            max_bytes=dict(type='int', default=65536),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        paths = [owned_files.checked_path(path) for path in p['paths']]
        markers = owned_files.checked_markers(p['markers'])
        if not 1 <= p['max_bytes'] <= owned_files.MAX_BYTES:
            raise owned_files.OwnedFilesError('max_bytes is %d: give 1 to %d' % (p['max_bytes'], owned_files.MAX_BYTES))
    except owned_files.OwnedFilesError as exc:
        module.fail_json(msg='owned_files_absent: %s. Nothing was removed.' % to_native(exc))
    removed, kept = [], []
    for path in paths:
        try:
            gone, reason = owned_files.take_back(path, markers, p['first_line'], p['max_bytes'],
                                                 remove=not module.check_mode)
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
