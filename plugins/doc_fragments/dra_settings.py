# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the DRA settings (O(settings)): one entry per field of
plugins/module_utils/manifests/dra_settings.py FIELDS, whose argument_spec() is the module's schema; a unit test
(tests/unit/plugins/module_utils/manifests/test_dra_settings.py) holds them equal. The platforms are generated."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.dra_settings: dra_manifests
    DOCUMENTATION = r'''
options:
  settings:
    description:
      - The DRA settings, one mapping built once from the inventory and the platform row (C(roles/dra_driver)
        tasks/main.yml, C(__dra_driver_settings)); its suboptions are the fields of the record the module reads
        (C(plugins/module_utils/manifests/dra_settings.py)). A bad value fails the module - one AnsibleModule
        cannot convert to the suboption's type, or outside its choices, named as the option (C(settings.<field>)); any
        other as its inventory variable. AnsibleModule converts what it can first (a number or a list to text, C(yes)
        to true), so the role passes each flag through its strict boolean check and each version as text.
    type: dict
    required: true
    suboptions:
      cluster_platform:
        description: The cluster platform (C(gpuvirt_cluster.platform)); the GPUCluster is taken on OpenShift only.
        type: str
        choices:
          # BEGIN GENERATED platforms
          - openshift
          - kubernetes
          - rke2
          # END GENERATED platforms
        default: kubernetes
      platform:
        description:
          - Where the KubeVirt gate goes when one is needed; C(kubevirt) the KubeVirt CR, C(hco) the HyperConverged
            C(kubevirt.kubevirt.io/jsonpatch) annotation (HCO overwrites the KubeVirt CR).
        type: str
        choices: [kubevirt, hco]
        default: kubevirt
      driver_mode:
        description:
          - Who installed the NVIDIA driver on the DRA nodes, an explicit choice; omit to derive it from O(settings.operator_driver)
            (true C(operator), false C(host)) or, when that is unknown, from O(pci_facts) (every GPU of every DRA node
            bound to C(nvidia) and no GPU Operator driver C(host)).
          - One that contradicts O(settings.operator_driver) (C(host) or C(gke) while the operator's driver is enabled, C(operator)
            while it is disabled) fails, naming both values.
        type: str
        choices: [host, operator, gke]
      operator_driver:
        description:
          - Whether the GPU Operator runs its driver container on the DRA nodes (its ClusterPolicy / Helm
            C(driver.enabled)); omit when no GPU Operator manages these nodes.
        type: bool
      node_selector:
        description:
          - Node labels the kubelet plugin is restricted to, besides C(nvidia.com/dra-kubelet-plugin=true) (always part
            of the selector). The nodes phase puts them on the DRA nodes; with O(nodes), a DRA node lacking one, or a
            node outside O(dra_nodes) carrying them all, fails.
        type: dict
      claim_templates:
        description:
          - Claim templates to build, each C(name), C(namespace) and optional C(count) (default 1).
          - C(count) GPUs are C(count) claim requests of one device each, at most 32; C(dra-gpu) for one GPU,
            C(dra-gpu-1) to C(dra-gpu-N) for more.
        type: list
        elements: dict
        default: []
      kubevirt_version:
        description: KubeVirt version (C(1.8.2)); omit to skip the gate decision.
        type: str
      stack:
        description:
          - Which DRA stack serves the O(dra_nodes) (C(dra_driver_stack)); V(auto) takes the GPU Operator's own
            GPUCluster (written by the operator phase) on OpenShift when O(other_nodes) is empty, else the chart;
            V(gpucluster) where it cannot serve fails, naming the reason.
        type: str
        choices: [auto, gpucluster, helm]
        default: auto
'''
