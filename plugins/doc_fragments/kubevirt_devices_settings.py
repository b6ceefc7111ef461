# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The suboptions of the kubevirt devices settings (O(settings)): one entry per field of
plugins/module_utils/manifests/kubevirt_devices_settings.py FIELDS, whose argument_spec() is the modules' schema; a
unit test (tests/unit/plugins/module_utils/manifests/test_kubevirt_devices_settings.py) holds them equal."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.kubevirt_devices_settings: hco_permitted_devices, kubevirt_permitted_devices
    DOCUMENTATION = r'''
options:
  settings:
    description:
      - The kubevirt devices settings, one mapping built once from the inventory and the run's mode
        (C(roles/kubevirt_devices) tasks/main.yml, C(__kubevirt_devices_settings)) and given whole to both modules
        that merge into a CR; its suboptions are the fields of the record they read
        (C(plugins/module_utils/manifests/kubevirt_devices_settings.py)). M(gpuvirt.provision.hco_permitted_devices)
        reads the C(hco_*) fields, O(settings.disable_mdev_configuration) and O(settings.adopt_conflicting);
        M(gpuvirt.provision.kubevirt_permitted_devices) the C(kubevirt_*) fields, O(settings.feature_gates) and
        O(settings.disable_mdev_configuration).
      - A bad value fails the module - one AnsibleModule cannot convert to the suboption's type named as the option
        (C(settings.<field>)), any other as its inventory variable. AnsibleModule converts what it can first (a number
        or a list to text, C(yes) to true), so the role passes each flag through its strict boolean check and each
        version as text.
    type: dict
    required: true
    suboptions:
      disable_mdev_configuration:
        description:
          - Turn KubeVirt's mediated device handling off (the GPU Operator creates the mediated devices) -
            HyperConverged's C(featureGates.disableMDevConfiguration) where its CRD has it, else the jsonpatch
            annotation; the KubeVirt CR's C(mediatedDevicesConfiguration.enabled) or the gate, by
            O(settings.kubevirt_version) (C(kubevirt_devices_disable_mdev_configuration)).
        type: bool
        default: true
      adopt_conflicting:
        description:
          - HyperConverged, when a foreign entry uses one of our selectors with another resource name, replace it
            (and own it) instead of failing (C(kubevirt_devices_adopt_conflicting)).
        type: bool
        default: false
      hco_version:
        description:
          - HCO version (C(1.x)) or OpenShift Virtualization version (C(4.x), which ships HCO C(1.(x-4)))
            (C(kubevirt_devices_hco_version)), used where HCO's CRD was not read (C(gate_supported) omitted); one
            that is not C(MAJOR.MINOR[.PATCH]) is refused, an empty one is none.
        type: str
      hco_name:
        description: HyperConverged name (the CRD admits only C(kubevirt-hyperconverged)) (C(kubevirt_devices_hco_name)).
        type: str
        default: kubevirt-hyperconverged
      hco_namespace:
        description: HyperConverged namespace (C(kubevirt_devices_hco_namespace)).
        type: str
        default: openshift-cnv
      kubevirt_version:
        description:
          - The KubeVirt release the cluster runs (SemVer, for example C(v1.9.0); C(kubevirt_devices_kubevirt_version),
            which the role gives in render mode only); decides between the field and the gate, and leaves out a
            C(GPU) gate of O(settings.feature_gates) from v1.5.0 on (GA there).
          - When omitted (or empty), O(current)'s C(status.observedKubeVirtVersion) is used; without either the module
            fails, naming both.
        type: str
      feature_gates:
        description:
          - Feature gates of the KubeVirt CR that must be on (others in the CR are kept); the role asks for C(GPU).
            C(DisableMDEVConfiguration) here is read as O(settings.disable_mdev_configuration).
        type: list
        elements: str
        default: [GPU]
      kubevirt_name:
        description: KubeVirt CR name (C(kubevirt_devices_kubevirt_name)).
        type: str
        default: kubevirt
      kubevirt_namespace:
        description: KubeVirt CR namespace (C(kubevirt_devices_kubevirt_namespace)).
        type: str
        default: kubevirt
'''
