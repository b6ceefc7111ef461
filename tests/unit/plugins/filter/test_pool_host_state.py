# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pool table's host-state columns: each thing the collection owns on a host is present or absent per pool,
derived from the columns that already say it, and host preparation leaves to the vgpu_vf phase what the rows of one
group disagree on."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuvirt.provision.plugins.filter.fleet import FilterModule
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet

pool_host_state = FilterModule().filters()['pool_host_state']


@pytest.mark.parametrize('row', fleet.POOL_TABLE, ids=lambda row: row.name)
def test_each_thing_follows_the_column_that_says_it(row):
    state = fleet.host_state(row)
    assert set(state) == set(fleet.HOST_THINGS) and set(state.values()) <= {'present', 'absent', 'leave'}
    assert state['kernel_args'] == ('present' if row.iommu else 'absent')
    assert state['vfio'] == ('present' if row.host_vfio else 'absent')
    assert state['vf_unit'] == ('present' if row.interface == 'vendor-vfio' else 'absent')
    # written where the pool needs the IOMMU; elsewhere neither written nor taken back (fleet.py says why)
    assert state['nouveau'] == ('present' if row.iommu else 'leave')


def test_host_preparation_takes_back_what_a_container_host_no_longer_needs():
    assert pool_host_state('container') == {'kernel_args': 'absent', 'nouveau': 'leave', 'vfio': 'absent',
                                            'vf_unit': 'absent'}
    assert pool_host_state('vm-passthrough')['vf_unit'] == 'absent'


def test_the_vf_restore_of_a_gpu_vm_vgpu_host_is_left_to_the_vgpu_vf_phase():
    # host preparation reads the group's default row (mdev) before a host shows its interface: it cannot tell a
    # vendor-VFIO host of the group apart, so it must not take its VF restore back
    for pool in ('vm-vgpu', 'vm-vgpu-vf'):
        assert pool_host_state(pool)['vf_unit'] == 'leave'
        assert pool_host_state(pool)['kernel_args'] == 'present'


def test_an_unknown_pool_has_no_state():
    assert pool_host_state('bogus') == {}
