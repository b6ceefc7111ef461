# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_pools / gpu_pool: a host's pool from its inventory groups."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import pools


def test_gpu_pool_is_the_one_pool_or_empty():
    assert pools.gpu_pool(['all', 'gpu_vm_vgpu']) == 'vm-vgpu'
    assert pools.gpu_pool(['all', 'workers']) == ''


def test_gpu_pool_refuses_a_host_in_two_groups_naming_both():
    with pytest.raises(AnsibleFilterError, match=r'groups gpu_vm_passthrough, gpu_vm_vgpu\)'):
        pools.gpu_pool(['gpu_vm_vgpu', 'gpu_vm_passthrough'])


def test_filters_registered():
    assert set(pools.FilterModule().filters()) == {'gpu_pools', 'gpu_pool'}
