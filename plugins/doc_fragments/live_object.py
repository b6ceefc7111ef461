# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The O(live_unread) and O(unknown_hosts) options of the modules that build KubeVirt's permitted host devices
(HyperConverged or the KubeVirt CR), shared word for word."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.live_object: hco_permitted_devices, kubevirt_permitted_devices
    DOCUMENTATION = r'''
options:
  live_unread:
    description:
      - Render mode when the live object was neither read from the cluster nor given - why, and what to set. The
        module then warns that the rendered lists replace the live ones, naming them. Empty when O(current) is the
        live object (apply mode, or a render that read or was given it).
    type: str
    default: ""
  unknown_hosts:
    description:
      - VM hosts of the fleet with no GPU facts in this run (left out by C(--limit) or the pool answer; a host the
        run selected but could not reach stops the run before this module), whose devices may be among the entries
        an earlier run added.
      - When given, an entry an earlier run added that the devices given no longer want is kept (and stays ours)
        instead of removed, with a warning; a render made without the live object is refused.
    type: list
    elements: str
    default: []
'''
