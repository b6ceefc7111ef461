# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the verify settings (O(settings)): one entry per field of
plugins/module_utils/manifests/verify_settings.py FIELDS, whose argument_spec() is the module's schema; a unit test
(tests/unit/plugins/module_utils/manifests/test_verify_settings.py) holds them equal."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.verify_settings: verify_smoke_vm
    DOCUMENTATION = r'''
options:
  settings:
    description:
      - The verify settings, one mapping built once from the inventory (C(roles/verify) tasks/main.yml,
        C(__verify_settings)); its suboptions are the fields of the record the module reads
        (C(plugins/module_utils/manifests/verify_settings.py)).
      - Each ends up in the VirtualMachine (and, rendered, in a file a GitOps tool applies), so each is checked
        against its grammar before the object exists.
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        or a list to text, C(yes) to true), so the role passes the flag through its strict boolean check.
    type: dict
    required: true
    suboptions:
      name:
        description: VM name (C(verify_smoke_vm_name)), a DNS-1123 subdomain.
        type: str
        default: gpuvirt-smoke
      namespace:
        description: VM namespace (C(verify_smoke_vm_namespace)), a DNS-1123 label.
        type: str
        default: default
      resource:
        description:
          - Device plugin resource the VM asks one GPU of, e.g. C(nvidia.com/GA102GL_A10)
            (C(verify_smoke_vm_resource)).
          - Empty or omitted, the first resource O(expected) holds (the run's, from the host facts); with neither
            the module fails, naming C(verify_smoke_vm_resource).
        type: str
      image:
        description:
          - containerDisk image (C(verify_smoke_vm_image)), an OCI reference C(registry/path[:tag][@digest]);
            required.
        type: str
      memory:
        description: Memory request, a Kubernetes quantity (no inventory variable; the role leaves the default).
        type: str
        default: 2Gi
      running:
        description:
          - Start the VM (C(runStrategy=Always)) instead of creating it halted (C(verify_smoke_vm_running)).
        type: bool
        default: false
'''
