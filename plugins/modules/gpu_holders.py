#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_holders
short_description: Name the processes that hold NVIDIA device files, with their systemd units
version_added: 0.1.0
description:
  - Scans C(/proc/<pid>/fd) for C(/dev/nvidia*) (GPU devices C(/dev/nvidiaN), and control devices such as
    C(/dev/nvidiactl) and C(/dev/nvidia-uvm)), and reports pid, executable name, device, GPU minor (and its BDF
    from C(/proc/driver/nvidia/gpus)) and the systemd unit from C(/proc/<pid>/cgroup).
  - A process's command line is never returned nor shown (any user who may open an NVIDIA device file writes it,
    secrets and terminal escapes included); a holder is named by its executable name.
  - A rebind to vfio-pci is refused with RV(message) when RV(held) is true.
  - Read-only. Without root, other users' processes cannot be inspected; RV(unreadable) counts them.
author:
  - gpuvirt.provision maintainers (@gpuvirt)
options:
  gpus:
    description:
      - Only per-GPU holders of these GPUs (BDFs); holders of control devices are always reported.
    type: list
    elements: str
    default: []
  proc_root:
    description: Where procfs is mounted, or a copy.
    type: path
    default: /proc
extends_documentation_fragment:
  - gpuvirt.provision.attributes.read_only
'''

EXAMPLES = r'''
- name: Who holds the GPUs
  gpuvirt.provision.gpu_holders:
  register: gpuvirt_gpu_holders

- name: Refuse to rebind a held GPU
  ansible.builtin.fail:
    msg: "{{ gpuvirt_gpu_holders.message }}"
  when: gpuvirt_gpu_holders.held
'''

RETURN = r'''
held:
  description: Some process holds an NVIDIA device file.
  returned: always
  type: bool
holders:
  description: pid, executable (basename of argv[0], else comm; what holders are recognised and named by; C(?)
    when the name is not letters, digits and C(_.+@-), since any user names their processes), device, minor (null
    for control devices), bdf (null when unknown or not a PCI address), unit (null when not in a systemd unit).
    Saved facts keep them all.
  returned: always
  type: list
  elements: dict
message:
  description:
    - One line per holder (pid, executable name, device, GPU, unit), at most 16 of them, then C(and N more);
      suitable for a failure message.
  returned: always
  type: str
unreadable:
  description: Processes whose file descriptors could not be read.
  returned: always
  type: int
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import module_kit
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import gpu_holders


def build(params):
    return gpu_holders.scan(params['proc_root'], params['gpus'])


def main():
    module = AnsibleModule(
        argument_spec=dict(gpus=dict(type='list', elements='str', default=[]),
                           proc_root=dict(type='path', default='/proc')),
        supports_check_mode=True,
    )
    module_kit.exit_built(module, build, ValueError)


if __name__ == '__main__':
    main()
