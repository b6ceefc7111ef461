#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_operator_manifests
short_description: Build the NVIDIA GPU Operator objects (OLM or Helm values), ClusterPolicy and vGPU ConfigMap
version_added: 0.1.0
description:
  - Validates the GPU Operator settings and builds what installs and configures it. Nothing is sent anywhere.
  - The settings are one mapping, O(settings) (built once by the C(gpu_operator) role); what was read from the
    cluster or a file (the PackageManifest, the alm-examples, the installed CSV's release, the chart's values) comes
    as options of its own.
  - OpenShift (the platform's trait C(gpu_operator_install=olm)) returns the Namespace, OperatorGroup and
    Subscription to C(gpu-operator-certified) (channel from O(package_manifest) C(status.defaultChannel) unless
    O(settings.channel) is pinned) and, once O(alm_examples) is given, the ClusterPolicy built from the CSV's
    C(alm-examples) example with only our fields set.
  - Kubernetes (C(gpu_operator_install=helm)) returns the Namespace and the Helm values carrying the same settings;
    with O(chart_values) every key set is checked to exist in the chart's C(values.yaml).
  - With O(settings.vgpu_configs), also a vgpu-device-manager ConfigMap; every vGPU type it uses must be offered by
    the GPUs of the vGPU hosts in O(settings.hosts) (mdev or vendor-specific VFIO types from the C(mdev_types) facts).
  - Fails naming the value and the fix on bad input, including a private vGPU Manager registry without a pull secret.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  # settings (the GPU Operator settings, one mapping): the doc fragment gpuvirt.provision.settings.gpu_operator
  package_manifest:
    description: The C(gpu-operator-certified) PackageManifest, for its default channel (OpenShift).
    type: dict
  alm_examples:
    description: The CSV's C(alm-examples) annotation (JSON text or parsed list); OpenShift only.
    type: raw
  alm_examples_source:
    description:
      - Where O(alm_examples) came from (a file name), named when they are not the alm-examples of the subscribed
        channel's CSV as the O(package_manifest) tells them (C(status.channels[].currentCSVDesc)).
      - Given, the file is checked against the channel (see O(alm_examples_release)); omitted, the alm-examples are
        taken to be the installed CSV's own (apply mode reads them from it).
    type: str
  alm_examples_release:
    description:
      - The GPU Operator release O(alm_examples) come from (C(v26.7.0), C(gpu_operator_alm_examples_release)). Needed
        when the O(package_manifest) does not name the channel's CSV (render mode); the channel must then be that
        release's (C(v26.7)), else refused.
    type: str
  related_images:
    description: The installed CSV's C(spec.relatedImages) (apply mode), where the DRA driver's version is read.
    type: list
    elements: dict
  operator_release:
    description: The installed GPU Operator release (C(v26.7.0), from its CSV; apply mode).
    type: str
  chart_values:
    description: The chart's default C(values.yaml), parsed; every key we set must exist there.
    type: dict
attributes:
  check_mode:
    description: Builds data only; nothing changes in any mode.
    support: full
  diff_mode:
    description: Not supported; the role that applies or renders the result shows the diff.
    support: none
extends_documentation_fragment:
  - gpuvirt.provision.settings.gpu_operator
'''

EXAMPLES = r'''
- name: Build the OpenShift objects for a vGPU fleet
  gpuvirt.provision.gpu_operator_manifests:
    settings:
      platform: openshift
      platform_traits: "{{ gpuvirt_cluster.traits }}"
      default_workload: vm-vgpu
      vgpu_manager: {repository: registry.example.com/nvidia, version: 580.82.02}
      pull_secret_name: gpuvirt-vgpu-pull
    package_manifest: "{{ pm.resources[0] }}"
  register: gop
'''

RETURN = r'''
install_objects:
  description: Namespace, then OperatorGroup and Subscription on OpenShift.
  returned: success
  type: list
  elements: dict
config_objects:
  description: The custom vGPU ConfigMap, when O(settings.vgpu_configs) is given.
  returned: success
  type: list
  elements: dict
cluster_policy:
  description: >-
    The ClusterPolicy (OpenShift, when O(alm_examples) is given and RV(dra_stack) is V(helm)), else null.
  returned: success
  type: dict
dra_stack:
  description: >-
    Which DRA stack serves the O(settings.dra_nodes): V(gpucluster) (OpenShift, every GPU node a DRA node: the GPU
    Operator's own GPUCluster, which may not exist beside a ClusterPolicy) or V(helm) (the dra-driver-nvidia-gpu chart).
  returned: success
  type: str
dra_stack_reason:
  description: Why RV(dra_stack) was chosen.
  returned: success
  type: str
gpu_cluster_objects:
  description: >-
    With RV(dra_stack) V(gpucluster) and O(alm_examples): the NVIDIADriver and the GPUCluster from the CSV's
    alm-examples (the DRA driver the release lists, see O(settings.dra_driver_version), C(PassthroughSupport) and C(DeviceMetadata) on,
    computeDomains off), else empty.
  returned: success
  type: list
  elements: dict
helm_values:
  description: Helm values (Kubernetes), else null.
  returned: success
  type: dict
namespace:
  description: The operator namespace.
  returned: success
  type: str
channel:
  description: Subscription channel (OpenShift), else null.
  returned: success
  type: str
nfd_instance:
  description: The checked O(settings.nfd_instance) (OpenShift with O(settings.nfd_install)), else null.
  returned: success
  type: dict
nfd_objects:
  description: The NFD operator's Namespace, OperatorGroup and Subscription (OpenShift with O(settings.nfd_install)), else empty.
  returned: success
  type: list
  elements: dict
warnings_list:
  description: Checks that could only be partly made (vGPU types checked against board names).
  returned: success
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator_install as install
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator_settings

# what was read from the cluster or a file: each an argument of the builder's, beside the settings
READS = ('package_manifest', 'alm_examples', 'alm_examples_source', 'alm_examples_release', 'related_images',
         'operator_release', 'chart_values')


def build(params):
    """The builder's result for the module's ``params``: the settings and the reads."""
    return install.build(params['settings'], **dict((k, params.get(k)) for k in READS))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # the settings' schema is the record's (manifests/gpu_operator_settings.py FIELDS): a new setting edits no
            # line here
            settings=dict(type='dict', required=True, options=gpu_operator_settings.argument_spec()),
            package_manifest=dict(type='dict'),
            alm_examples=dict(type='raw'),
            alm_examples_source=dict(type='str'),
            alm_examples_release=dict(type='str'),
            related_images=dict(type='list', elements='dict'),
            operator_release=dict(type='str'),
            chart_values=dict(type='dict'),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, ManifestError, warnings='warnings_list')


if __name__ == '__main__':
    main()
