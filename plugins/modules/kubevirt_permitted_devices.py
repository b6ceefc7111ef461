#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: kubevirt_permitted_devices
short_description: Build the upstream KubeVirt CR's permitted host devices, GPU feature gates and mdev switch
version_added: 0.1.0
description:
  - For KubeVirt installed without the HyperConverged operator. Returns the partial C(kubevirt.io/v1) KubeVirt
    object with C(spec.configuration.permittedHostDevices) (C(pciVendorSelector) / C(mdevNameSelector),
    C(externalResourceProvider)) and C(developerConfiguration.featureGates), merged with the CR's current
    content the same way as M(gpuvirt.provision.hco_permitted_devices).
  - "With O(settings.disable_mdev_configuration), KubeVirt stops creating mediated devices (the GPU Operator's vGPU
    Device Manager does) - C(spec.configuration.mediatedDevicesConfiguration.enabled=false) on KubeVirt v1.8.0 and
    later, which deprecated the C(DisableMDEVConfiguration) gate; the gate on older versions. A gate an earlier run
    added is removed once the field replaces it."
  - Fails when O(hco_present) is true, because HCO overwrites the KubeVirt CR.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  current:
    description: The live KubeVirt CR (read from the cluster, or given in render mode); omit when there is none.
    type: dict
  pci_devices:
    description: Passthrough devices, each C(selector) and C(resource_name).
    type: list
    elements: dict
    default: []
  mediated_devices:
    description: vGPU types, each C(selector) (type name) and C(resource_name).
    type: list
    elements: dict
    default: []
  hco_present:
    description: The cluster runs the HyperConverged operator.
    type: bool
    default: false
extends_documentation_fragment:
  - gpuvirt.provision.attributes
  - gpuvirt.provision.live_object
  # settings (the kubevirt devices settings, one mapping): the doc fragment gpuvirt.provision.settings.kubevirt_devices
  - gpuvirt.provision.settings.kubevirt_devices
'''

EXAMPLES = r'''
- name: Merge our devices into the KubeVirt CR
  gpuvirt.provision.kubevirt_permitted_devices:
    settings:
      kubevirt_version: v1.9.0
    current: "{{ kv_info.resources[0] | default(omit) }}"
    pci_devices: [{selector: "10DE:2236", resource_name: nvidia.com/GA102GL_A10}]
  register: kv
'''

RETURN = r'''
object:
  description: The partial KubeVirt CR to apply.
  returned: success
  type: dict
would_change:
  description: Applying RV(object) would change the cluster's CR (always true without O(current)).
  returned: success
  type: bool
report:
  description:
    - Per list C(added), C(updated), C(removed), C(kept_foreign), C(duplicates_dropped); C(featureGates);
      C(mediatedDevicesConfiguration) (what is written there, or null).
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import common, kubevirt
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt_devices_settings

# what the run read or computed about the cluster and its hosts: each an option of its own, beside the settings
READS = tuple(module_kit.PERMITTED_DEVICES) + ('hco_present',)


def main():
    module = AnsibleModule(
        argument_spec=module_kit.argument_spec(
            module_kit.PERMITTED_DEVICES,
            # the settings' schema is the record's (manifests/kubevirt_devices_settings.py FIELDS): a new setting
            # edits no line here
            settings=dict(type='dict', required=True, options=kubevirt_devices_settings.argument_spec()),
            hco_present=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        settings = kubevirt_devices_settings.build(p['settings'])
        common.unknown_hosts_check(p['live_unread'], p['unknown_hosts'], 'KubeVirt CR')
        obj, changed, report = kubevirt.build_kubevirt(p['current'], p['pci_devices'], p['mediated_devices'],
                                                       settings.feature_gates, p['hco_present'],
                                                       settings.kubevirt_name, settings.kubevirt_namespace,
                                                       disable_mdev_configuration=settings.disable_mdev_configuration,
                                                       version=settings.kubevirt_version,
                                                       unknown_hosts=p['unknown_hosts'])
    except kubevirt.ManifestError as exc:
        module.fail_json(msg=str(exc))
    warnings = common.permitted_devices_warnings('KubeVirt CR', obj, report, kubevirt.SHARED_LISTS, p['unknown_hosts'],
                                                 p['live_unread'])
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, would_change=changed, object=obj, report=report)


if __name__ == '__main__':
    main()
