#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: dra_manifests
short_description: Build the DRA passthrough pieces (Helm values, claim templates, KubeVirt gates) and check plugin exclusion
version_added: 0.1.0
description:
  - Helm values for the C(dra-driver-nvidia-gpu) 0.4.x chart with GPU resources, C(PassthroughSupport) and
    C(DeviceMetadata), and the C(nvidiaDriverRoot) for the driver mode (C(host) C(/), C(operator)
    C(/run/nvidia/driver), C(gke) C(/home/kubernetes/bin/nvidia)).
  - Namespaced C(resource.k8s.io/v1) C(ResourceClaimTemplate)s on the C(vfio.gpu.nvidia.com) DeviceClass with
    the opaque C(VfioDeviceConfig) (C(backendPolicy=LegacyOnly), C(enableAPIDevice=true)).
  - The KubeVirt feature gates the version needs (C(GPUsWithDRA) on 1.8.x only).
  - Fails, naming the node, when a DRA node also runs (or would run) the classic nvidia-device-plugin.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  pci_facts:
    description: The DRA nodes' C(gpuvirt_pci_devices) facts by node name (only read when O(settings.operator_driver) is omitted).
    type: dict
    default: {}
  dra_nodes:
    description: Nodes that get DRA passthrough.
    type: list
    elements: str
    default: []
  nodes:
    description: Node objects from the cluster or facts; omit to skip the exclusion check.
    type: list
    elements: dict
  nodes_labelled:
    description:
      - Whether O(nodes) already carry the nodes phase's labels (read from the cluster). False in a render, where
        the label patches are rendered, not applied; then a DRA node lacking the selector is not an error.
    type: bool
    default: true
  plugin_pods:
    description: Pods of the classic nvidia-device-plugin DaemonSet(s).
    type: list
    elements: dict
    default: []
  current:
    description: The live KubeVirt CR or HyperConverged (read from the cluster, or given in render mode); its gates
      are kept.
    type: dict
  live_unread:
    description:
      - Render mode when the live object was neither read from the cluster nor given - why, and what to set. The
        module then warns that the rendered gates replace the live ones. Empty when O(current) is the live object.
    type: str
    default: ""
  other_nodes:
    description: The GPU nodes outside the DRA pool (they need a ClusterPolicy, which no GPUCluster may run beside).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpuvirt.provision.attributes
  # settings (the DRA settings, one mapping): the doc fragment gpuvirt.provision.settings.dra
  - gpuvirt.provision.settings.dra
'''

EXAMPLES = r'''
- name: DRA pieces for operator-managed drivers on KubeVirt 1.8
  gpuvirt.provision.dra_manifests:
    settings:
      operator_driver: true
      claim_templates: [{name: vfio-gpu, namespace: vms}]
      kubevirt_version: 1.8.2
    dra_nodes: [gpu-1]
    nodes: "{{ nodes_info.resources }}"
  register: dra
'''

RETURN = r'''
helm_values:
  description: Values for the chart.
  returned: success
  type: dict
stack:
  description: V(gpucluster) (the operator phase's GPUCluster serves the DRA nodes; no chart) or V(helm).
  returned: success
  type: str
stack_reason:
  description: Why RV(stack) was chosen.
  returned: success
  type: str
objects:
  description: The ResourceClaimTemplates.
  returned: success
  type: list
  elements: dict
gate_object:
  description: Partial KubeVirt CR or HyperConverged turning the gates on; null when none is needed.
  returned: success
  type: dict
driver_mode:
  description: Who installed the NVIDIA driver (C(operator), C(host), C(gke)), which sets C(nvidiaDriverRoot).
  returned: success
  type: str
driver_mode_reason:
  description: Why that driver mode (the explicit setting, the operator's C(driver.enabled), or the hosts' facts).
  returned: success
  type: str
kubevirt_gates:
  description: KubeVirt feature gates to enable (empty from 1.9); null without O(settings.kubevirt_version).
  returned: success
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import common, dra, dra_settings, hco, kubevirt
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc

# what the run read or was given about the cluster and its hosts: each an option of its own, beside the settings
READS = ('pci_facts', 'dra_nodes', 'nodes', 'plugin_pods', 'nodes_labelled', 'current', 'live_unread', 'other_nodes')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # the settings' schema is the record's (manifests/dra_settings.py FIELDS): a new setting edits no line here
            settings=dict(type='dict', required=True, options=dra_settings.argument_spec()),
            pci_facts=dict(type='dict', default={}),
            dra_nodes=dict(type='list', elements='str', default=[]),
            nodes=dict(type='list', elements='dict'),
            plugin_pods=dict(type='list', elements='dict', default=[]),
            nodes_labelled=dict(type='bool', default=True),
            current=dict(type='dict'),
            live_unread=dict(type='str', default=''),
            other_nodes=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        settings = dra_settings.build(p['settings'])
        mode, mode_reason = dra.resolve_driver_mode(settings.driver_mode, settings.operator_driver, p['dra_nodes'],
                                                    p['pci_facts'])
        values = dra.helm_values(mode, settings.node_selector)
        objects = [dra.resource_claim_template(t.get('name'), t.get('namespace'), count=t.get('count', 1))
                   for t in settings.claim_templates]
        gates = dra.kubevirt_gates(settings.kubevirt_version) if settings.kubevirt_version else None
        # the same decision as the operator phase's (gpu_operator_manifests): the GPUCluster or the chart
        stack, stack_reason = gc.dra_stack(platform.traits(settings.cluster_platform), p['dra_nodes'],
                                           p['other_nodes'], settings.stack)
        gc.check_driver_mode(stack, mode)
    except (dra.ManifestError, gc.ManifestError) as exc:
        module.fail_json(msg=str(exc))
    if p['nodes'] is not None:
        errors = dra.classic_plugin_conflicts(p['nodes'], p['dra_nodes'], p['plugin_pods'],
                                              cluster_policy=stack != gc.STACK_GPUCLUSTER)
        errors += dra.selector_conflicts(p['nodes'], p['dra_nodes'], settings.node_selector, p['nodes_labelled'])
        if errors:
            module.fail_json(msg='; '.join(errors), errors=errors)
    gate_object = None
    if gates:
        build = dra.hco_gate_object if settings.platform == 'hco' else dra.kubevirt_gate_object
        gate_object = build(p['current'], gates)
        if p['live_unread']:
            shared = hco.SHARED_LISTS if settings.platform == 'hco' else kubevirt.SHARED_LISTS
            warning = common.unmerged_warning(gate_object, shared, p['live_unread'])
            if warning:
                module.warn(warning)
    module.exit_json(changed=False, helm_values=values, objects=objects, kubevirt_gates=gates,
                     gate_object=gate_object, driver_mode=mode, driver_mode_reason=mode_reason, stack=stack,
                     stack_reason=stack_reason)


if __name__ == '__main__':
    main()
