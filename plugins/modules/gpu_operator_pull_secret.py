#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_operator_pull_secret
short_description: Build the registry pull Secret (kubernetes.io/dockerconfigjson) for the vGPU Manager image
version_added: 0.1.0
description:
  - Returns a C(kubernetes.io/dockerconfigjson) Secret with one registry login. Nothing is sent anywhere.
  - Fails, without echoing any credential, when a field is missing, when O(registry) is a repository path, or when
    O(image_repository) is in another registry than O(registry).
  - Register the result with C(no_log) set on the task; the Secret holds the credential.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  name:
    description: Secret name.
    type: str
    required: true
  namespace:
    description: Secret namespace (the operator namespace).
    type: str
    required: true
  registry:
    description: Registry host[:port].
    type: str
    required: true
  username:
    description: Registry user.
    type: str
    required: true
  password:
    description: Registry password or token.
    type: str
    required: true
  email:
    description: Optional e-mail of the login.
    type: str
  image_repository:
    description: The vGPU Manager image repository, checked to be in O(registry).
    type: str
  labels:
    description: Labels of the Secret (keys and values by the Kubernetes label grammar).
    type: dict
extends_documentation_fragment:
  - gpuvirt.provision.attributes.builds_only
'''

EXAMPLES = r'''
- name: Build the pull Secret
  gpuvirt.provision.gpu_operator_pull_secret:
    name: gpuvirt-vgpu-pull
    namespace: nvidia-gpu-operator
    registry: registry.example.com
    username: "{{ vault_registry_user }}"
    password: "{{ vault_registry_password }}"
  register: pull
  no_log: true
'''

RETURN = r'''
object:
  description: The Secret.
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import pull_secret as ps


def build(p):
    if p['image_repository']:
        ps.check_registry_matches(p['registry'], gop.registry_of(p['image_repository']), p['name'])
    return dict(object=ps.build_pull_secret(p['name'], p['namespace'], p['registry'], p['username'], p['password'],
                                            p['email'], p['labels']))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            namespace=dict(type='str', required=True),
            registry=dict(type='str', required=True),
            username=dict(type='str', required=True),
            password=dict(type='str', required=True, no_log=True),
            email=dict(type='str'),
            image_repository=dict(type='str'),
            labels=dict(type='dict'),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, ps.ManifestError)


if __name__ == '__main__':
    main()
