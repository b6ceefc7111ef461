# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the machineconfig settings (O(settings)): one entry per field of
plugins/module_utils/manifests/machineconfig_settings.py FIELDS, whose argument_spec() is the module's schema; a unit
test (tests/unit/plugins/module_utils/manifests/test_machineconfig_settings.py) holds them equal."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.machineconfig_settings: machineconfig_manifests
    DOCUMENTATION = r'''
options:
  settings:
    description:
      - The machineconfig settings, one mapping built once from the inventory and the run's mode
        (C(roles/machineconfig) tasks/main.yml, C(__machineconfig_settings)) and given whole for each pool of the
        GPU nodes; its suboptions are the fields of the record the module reads
        (C(plugins/module_utils/manifests/machineconfig_settings.py)).
      - They are the run's, the same for every pool - O(settings.name) and O(settings.node_selector) apply to
        O(settings.pool) only, and O(settings.create_pool) creates O(settings.pool) and every other pool that is
        not built in.
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        or a list to text, C(yes) to true), so the role passes each flag through its strict boolean check and each
        version as text.
    type: dict
    required: true
    suboptions:
      cpu_vendor:
        description:
          - CPU vendor of the GPU nodes (C(machineconfig_cpu_vendor)); required.
        type: str
        choices: [intel, amd]
      iommu_passthrough:
        description: Add C(iommu=pt) (C(machineconfig_iommu_passthrough)).
        type: bool
        default: true
      extra_kernel_args:
        description: More kernel arguments (C(machineconfig_extra_kernel_args)).
        type: list
        elements: str
        default: []
      blacklist_nouveau:
        description: Add the nouveau blacklist file (C(machineconfig_blacklist_nouveau)).
        type: bool
        default: true
      pool:
        description:
          - The run's main MachineConfigPool (C(machineconfig_pool)), the one O(settings.name) and
            O(settings.node_selector) are for.
        type: str
        default: worker
      name:
        description:
          - The MachineConfig name of O(settings.pool) (C(machineconfig_name)); empty or omitted,
            C(100-<pool>-gpuvirt-iommu), as every other pool's.
          - With O(settings.render) the name gets the short hash of the content, C(<name>-<10 hex digits>) (see
            O(settings.render)).
        type: str
      create_pool:
        description:
          - Build a dedicated MachineConfigPool for O(settings.pool) and for every other pool that is not built in
            (C(machineconfig_create_pool)); in apply mode only when O(existing_pools) does not list it, with
            O(settings.render) always (see O(settings.render)).
        type: bool
        default: false
      node_selector:
        description:
          - Node labels the dedicated pool O(settings.pool) selects (C(machineconfig_node_selector)); empty,
            C(node-role.kubernetes.io/<pool>), as every other dedicated pool's.
        type: dict
        default: {}
      render:
        description:
          - Render mode (the run's C(gpuvirt_cluster.mode) is C(render)). With a dedicated pool the pool is always
            among RV(objects), also when O(existing_pools) lists it (the GitOps-created pool is live); a render
            directory holds every object it manages, so a pool left out would be pruned and deleted by the GitOps
            tool, and its nodes would fall back to worker, lose the IOMMU arguments and reboot.
          - The MachineConfig's name ends in the short hash of its content (C(<name>-<10 hex digits>)), so an edit is
            a new object whose old one the GitOps tool prunes, and the rendered pool carries the annotation
            C(gpuvirt.provision/expected-machineconfig) with that name, which the health checks of docs/gitops/
            compare with the pool's C(status.configuration.source) (healthy only once the pool runs this content).
        type: bool
        default: false
'''
