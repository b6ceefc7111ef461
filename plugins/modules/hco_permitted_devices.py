#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: hco_permitted_devices
short_description: Build the HyperConverged permitted host devices, merged with what the cluster holds
version_added: 0.1.0
description:
  - Returns the partial C(hco.kubevirt.io/v1beta1) HyperConverged object to apply (server-side) so that
    C(spec.permittedHostDevices) lists our passthrough devices and vGPU types with C(externalResourceProvider)
    set, next to every entry we do not own, which is kept as it is.
  - Entries an earlier run added and that are no longer wanted are removed; ownership is recorded in the
    C(gpuvirt.provision/owned-permitted-host-devices) annotation. Duplicated selectors are collapsed. The order
    is stable, so a second run returns the same object and RV(would_change) false.
  - C(DisableMDEVConfiguration) is set as C(spec.featureGates.disableMDevConfiguration) when the CRD has it
    (HCO 1.10+), else as an add operation in the C(kubevirt.kubevirt.io/jsonpatch) annotation.
  - Builds an object only; the caller applies or renders it.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  current:
    description: The live HyperConverged (read from the cluster, or given in render mode); omit when there is none.
    type: dict
  pci_devices:
    description: Passthrough devices to permit, each C(selector) (C(VENDOR:DEVICE)) and C(resource_name).
    type: list
    elements: dict
    default: []
  mediated_devices:
    description:
      - vGPU types to permit, each C(selector) (type name) and C(resource_name).
      - An entry with C(interface=vendor_vfio) (a type of NVIDIA's vendor-specific VFIO interface, no mdev bus) is refused.
    type: list
    elements: dict
    default: []
  gate_supported:
    description:
      - The HyperConverged CRD has C(featureGates.disableMDevConfiguration) (HCO 1.9 and later); read it from the
        cluster's CRD. When omitted it is derived from O(settings.hco_version), else assumed true.
    type: bool
extends_documentation_fragment:
  - gpuvirt.provision.attributes
  - gpuvirt.provision.live_object
  # settings (the kubevirt devices settings, one mapping): the doc fragment gpuvirt.provision.settings.kubevirt_devices
  - gpuvirt.provision.settings.kubevirt_devices
'''

EXAMPLES = r'''
- name: Merge our devices into the cluster's HyperConverged
  gpuvirt.provision.hco_permitted_devices:
    settings:
      hco_version: "4.18"
    current: "{{ hco_info.resources[0] | default(omit) }}"
    pci_devices: [{selector: "10DE:2236", resource_name: nvidia.com/GA102GL_A10}]
    mediated_devices: [{selector: NVIDIA A10-12Q, resource_name: nvidia.com/NVIDIA_A10-12Q}]
  register: hco
'''

RETURN = r'''
object:
  description: The partial HyperConverged to apply.
  returned: success
  type: dict
would_change:
  description: Applying RV(object) would change the cluster's HyperConverged (always true without O(current)).
  returned: success
  type: bool
report:
  description: Per list C(added), C(updated), C(removed), C(kept_foreign), C(duplicates_dropped), C(conflicts).
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import common, hco, kubevirt_devices_settings

# what the run read or computed about the cluster and its hosts: each an option of its own, beside the settings
READS = tuple(module_kit.PERMITTED_DEVICES) + ('gate_supported',)


def main():
    module = AnsibleModule(
        argument_spec=module_kit.argument_spec(
            module_kit.PERMITTED_DEVICES,
            # the settings' schema is the record's (manifests/kubevirt_devices_settings.py FIELDS): a new setting
            # edits no line here
            settings=dict(type='dict', required=True, options=kubevirt_devices_settings.argument_spec()),
            gate_supported=dict(type='bool'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        settings = kubevirt_devices_settings.build(p['settings'])
        common.unknown_hosts_check(p['live_unread'], p['unknown_hosts'], 'HyperConverged')
        obj, changed, report = hco.build_hco(p['current'], p['pci_devices'], p['mediated_devices'],
                                             settings.disable_mdev_configuration,
                                             settings.hco_gate_supported(p['gate_supported']),
                                             settings.hco_name, settings.hco_namespace, p['unknown_hosts'])
    except hco.ManifestError as exc:
        module.fail_json(msg=str(exc))
    conflicts = report['pciHostDevices']['conflicts'] + report['mediatedDevices']['conflicts']
    for c in conflicts:
        text = ("HyperConverged already permits %s as %s, we want %s" % (c['selector'], c['theirs'], c['ours']))
        if not settings.adopt_conflicting:
            module.fail_json(msg=text + "; fix the entry or set adopt_conflicting to replace it", report=report)
        module.warn(text + '; replacing it')
    for list_name in ('pciHostDevices', 'mediatedDevices'):
        if report[list_name]['duplicates_dropped']:
            module.warn('HyperConverged %s listed %s more than once; keeping the first'
                        % (list_name, ', '.join(report[list_name]['duplicates_dropped'])))
    warnings = common.permitted_devices_warnings('HyperConverged', obj, report, hco.SHARED_LISTS, p['unknown_hosts'],
                                                 p['live_unread'])
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, would_change=changed, object=obj, report=report)


if __name__ == '__main__':
    main()
