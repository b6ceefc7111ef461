#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vgpu_image_facts
short_description: Check the vGPU Manager .run file and build context, and compute the image tag and labels
version_added: 0.1.0
description:
  - Checks the licensed vGPU Manager (host) driver file before any build. It must be named
    C(NVIDIA-Linux-<arch>-<version>-vgpu-kvm.run), its version must be O(version), and its sha256 must be
    O(sha256) when given. A C(-grid.run) guest driver or a data-center driver is rejected with the file to use.
  - Computes the image reference C(<registry>[/<repository>]/<name>:<version>-<os_tag>), where C(os_tag) is
    C(rhcos4.<minor>) from O(openshift_version) when given, else O(os_tag).
  - Computes the labels recording the inputs (the .run sha256, a digest of the build context without the .run
    file and C(.git), a digest of the build arguments and the driver version). The vgpu_manager_image role
    compares them with the labels of the image in the registry to decide whether to build.
  - Changes nothing.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  run_file:
    description: Path of the C(NVIDIA-Linux-<arch>-<version>-vgpu-kvm.run) file on the build host.
    type: path
    required: true
  version:
    description: Driver version the image is for, such as C(550.90.05).
    type: str
    required: true
  sha256:
    description: Expected sha256 of O(run_file) (64 hex digits, optionally prefixed C(sha256:)); empty skips the check.
    type: str
    default: ''
  context_dir:
    description: Build context, a checkout of C(vgpu-manager/<os>/) of NVIDIA's driver container repository.
    type: path
    required: true
  containerfile:
    description: Build file relative to O(context_dir); empty picks C(Containerfile) or C(Dockerfile).
    type: str
    default: ''
  os_tag:
    description: OS tag of the nodes, such as C(ubuntu22.04) or C(rhel9.4). Required unless O(openshift_version).
    type: str
    default: ''
  openshift_version:
    description: OpenShift cluster version (such as C(4.16.12)); gives C(os_tag) C(rhcos4.<minor>).
    type: str
    default: ''
  clusterversion:
    description:
      - A C(config.openshift.io/v1) ClusterVersion object read from the cluster; its last completed version
        (else the desired one) is used as O(openshift_version) when that is empty.
    type: dict
    default: {}
  registry:
    description: Registry host and optional port, such as C(registry.example.com:5000).
    type: str
    required: true
  repository:
    description: Path inside the registry before the image name (such as C(nvidia)); may be empty.
    type: str
    default: ''
  name:
    description: Image name.
    type: str
    default: vgpu-manager
  cuda_version:
    description: Value of the C(CUDA_VERSION) build argument; empty leaves it out.
    type: str
    default: ''
  build_args:
    description: More build arguments. C(DRIVER_VERSION), C(DRIVER_ARCH) and C(CUDA_VERSION) are set from the other options.
    type: dict
    default: {}
  build_extra_args:
    description:
      - Extra C(podman build) options, each one of C(--isolation=oci|chroot|rootless), C(--jobs=N),
        C(--layers[=true|false]), C(--pull[=always|missing|never|newer]), C(--squash), C(--squash-all),
        C(--network=host|none|private), C(--cgroupns=host|private), C(--ulimit=NAME=SOFT[:HARD]).
      - Anything else (C(--tls-verify), C(--build-arg), C(--label), C(--volume), C(--secret), C(--file)...) is refused,
        since it would change the build's trust or make the recorded labels lie. They are part of the build-args digest.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Runs the same in check mode (it changes nothing).
    support: full
  diff_mode:
    description: No diff; it changes nothing.
    support: none
'''

EXAMPLES = r'''
- name: Check the driver file and compute the tag
  gpuvirt.provision.vgpu_image_facts:
    run_file: /srv/nvidia/NVIDIA-Linux-x86_64-550.90.05-vgpu-kvm.run
    version: 550.90.05
    sha256: "{{ vgpu_run_sha256 }}"
    context_dir: /srv/gpu-driver-container/vgpu-manager/rhel9
    openshift_version: 4.16.12
    registry: registry.example.com
    repository: nvidia
  register: vgpu_image
'''

RETURN = r'''
ref:
  description: Full image reference.
  returned: success
  type: str
  sample: registry.example.com/nvidia/vgpu-manager:550.90.05-rhcos4.16
image:
  description: Image reference without the tag.
  returned: success
  type: str
tag:
  description: The tag, C(<version>-<os_tag>).
  returned: success
  type: str
registry:
  description: The registry host[:port].
  returned: success
  type: str
os_tag:
  description: The OS tag used.
  returned: success
  type: str
run:
  description: The .run file checked (C(name), C(arch), C(version), C(sha256), C(size)).
  returned: success
  type: dict
context_dir:
  description: The build context checked.
  returned: success
  type: str
openshift_version:
  description: OpenShift version the os_tag came from (empty when O(os_tag) was used).
  returned: success
  type: str
context_digest:
  description: sha256 of the build context without the .run file.
  returned: success
  type: str
containerfile:
  description: Build file relative to the context.
  returned: success
  type: str
build_args:
  description: Build arguments to pass.
  returned: success
  type: dict
build_extra_args:
  description: The checked extra C(podman build) options, to append to the build command.
  returned: success
  type: list
  elements: str
labels:
  description: Labels recording the inputs; an image whose labels hold these values is up to date.
  returned: success
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image as vi


def compute(p):
    run = vi.check_run_file(p['run_file'], p['version'], p['sha256'] or None)
    openshift = p['openshift_version'] or ''
    if not openshift and p['clusterversion']:
        openshift = vi.openshift_version_from_clusterversion(p['clusterversion'])
    os_tag = vi.resolve_os_tag(p['os_tag'] or None, openshift or None)
    ref = vi.image_ref(p['registry'], p['repository'], p['name'], run['version'], os_tag)
    containerfile = vi.find_containerfile(p['context_dir'], p['containerfile'] or None)
    digest = vi.context_digest(p['context_dir'], exclude=[run['name']])
    args = vi.build_args(run['version'], p['cuda_version'] or None, run['arch'], p['build_args'])
    extra = vi.check_build_extra_args(p['build_extra_args'])
    return dict(ref, os_tag=os_tag, openshift_version=openshift, context_dir=p['context_dir'], run=run,
                context_digest=digest, containerfile=containerfile, build_args=args, build_extra_args=extra,
                labels=vi.image_labels(run['sha256'], digest, args, run['version'], extra))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            run_file=dict(type='path', required=True),
            version=dict(type='str', required=True),
            sha256=dict(type='str', default=''),
            context_dir=dict(type='path', required=True),
            containerfile=dict(type='str', default=''),
            os_tag=dict(type='str', default=''),
            openshift_version=dict(type='str', default=''),
            clusterversion=dict(type='dict', default={}),
            registry=dict(type='str', required=True),
            repository=dict(type='str', default=''),
            name=dict(type='str', default='vgpu-manager'),
            cuda_version=dict(type='str', default=''),
            build_args=dict(type='dict', default={}),
            build_extra_args=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, compute, (vi.VgpuImageError, IOError, OSError))


if __name__ == '__main__':
    main()
