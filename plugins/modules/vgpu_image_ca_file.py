#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vgpu_image_ca_file
short_description: Read and check the registry CA certificate bundle of the vGPU Manager image build
version_added: 0.1.0
description:
  - Reads O(path) once on the host the task runs on (the controller when delegated to C(localhost), else the build
    host) and returns its text when it is a PEM certificate bundle, for the vgpu_manager_image role to write
    to the build host with C(content).
  - The file must be a regular file (a symbolic link is not followed), at most 65536 bytes, and hold one or more
    C(-----BEGIN CERTIFICATE-----) ... C(-----END CERTIFICATE-----) blocks of base64 lines (LF or CRLF, blank lines
    between blocks) and nothing else, each decoding to one DER SEQUENCE. Anything else fails, naming O(name) and
    the path but never showing the content, so a path pointing at a file of passwords or keys sends nothing.
  - Changes nothing.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  path:
    description: Path of the CA certificate bundle (PEM) on the host the task runs on.
    type: path
    required: true
  name:
    description: Name of the variable that gave O(path), for the error message.
    type: str
    default: vgpu_manager_image_registry_ca_file
extends_documentation_fragment:
  - gpuvirt.provision.attributes.read_only
'''

EXAMPLES = r'''
- name: Read the registry CA on the controller (the file AWX writes from the registry credential)
  gpuvirt.provision.vgpu_image_ca_file:
    path: "{{ vgpu_manager_image_registry_ca_file }}"
  delegate_to: localhost
  register: ca

- name: Give it to the build host's registry client
  ansible.builtin.copy:
    content: "{{ ca.content }}"
    dest: /tmp/certs/ca.crt
    mode: "0600"
'''

RETURN = r'''
content:
  description: The checked PEM text, with a final newline.
  returned: success
  type: str
certificates:
  description: How many certificate blocks it holds.
  returned: success
  type: int
reason:
  description: Why the file was refused, C(not_a_file) or C(not_pem).
  returned: failure
  type: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import ca_file


def build(params):
    content = ca_file.read_certificates(params['path'], params['name'])
    return dict(content=content, certificates=content.count('-----BEGIN CERTIFICATE-----'))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            name=dict(type='str', default='vgpu_manager_image_registry_ca_file'),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, ca_file.CaFileError, failure=lambda exc: dict(reason=exc.reason))


if __name__ == '__main__':
    main()
