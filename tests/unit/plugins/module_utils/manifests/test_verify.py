# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Allocatable comparison messages and the smoke VM against the real VirtualMachine schema."""
from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import verify
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..'))
import schema  # noqa: E402


def node(name, alloc):
    return {'metadata': {'name': name}, 'status': {'allocatable': dict(alloc, cpu='64')}}


def test_compare_reports_expected_vs_advertised_per_node():
    expected = {'gpu-1': {'nvidia.com/GA102GL_A10': 2}, 'vgpu-1': {'nvidia.com/NVIDIA_A10-12Q': 1},
                'gone': {'nvidia.com/X': 1}}
    nodes = [node('gpu-1', {'nvidia.com/GA102GL_A10': '2'}), node('vgpu-1', {'nvidia.com/NVIDIA_A10-24Q': '2'})]
    ok, report = verify.compare(expected, nodes)
    assert not ok
    assert report['gpu-1']['missing'] == []
    assert report['vgpu-1']['missing'] == ['nvidia.com/NVIDIA_A10-12Q']
    assert 'nvidia.com/NVIDIA_A10-24Q=2' in report['vgpu-1']['message']
    assert 'nvidia.com/NVIDIA_A10-12Q>=1' in report['vgpu-1']['message']
    assert 'not found' in report['gone']['message']
    ok, dummy = verify.compare({'gpu-1': {'nvidia.com/GA102GL_A10': 2}}, nodes)
    assert ok
    ok, dummy = verify.compare({'gpu-1': {'nvidia.com/GA102GL_A10': 3}}, nodes)
    assert not ok


def test_smoke_vm_is_a_valid_virtual_machine():
    vm = verify.smoke_vm('gpu-smoke', 'default', 'nvidia.com/GA102GL_A10', 'quay.io/containerdisks/fedora:41')
    schema.validate(vm)
    assert vm['spec']['template']['spec']['domain']['devices']['gpus'][0]['deviceName'] == 'nvidia.com/GA102GL_A10'
    with pytest.raises(verify.ManifestError, match='verify_smoke_vm_resource'):
        verify.smoke_vm('x', 'default', 'GA102GL_A10', 'img')


# The smoke VM's inputs come from the inventory or -e and end up in an object (and, rendered, in a file Argo CD
# applies): a resource name that is not an extended resource name, an image with a second line, a namespace or
# name outside DNS-1123, or a memory that is no quantity is refused before the object exists.
@pytest.mark.parametrize('field,value', [
    ('resource_name', 'a b/$(x)'), ('resource_name', 'nvidia.com/' + 'A' * 64), ('resource_name', 'nvidia.com/x\n'),
    ('image', 'x\n\ny'), ('image', 'quay.io/containerdisks/fedora:41\n--privileged'), ('image', '$(id)/x:1'),
    ('namespace', 'Kube System'), ('namespace', '../default'), ('name', 'Evil..Name'),
    ('memory', '2Gi; rm'), ('memory', '2Gi\n'), ('memory', 'a' * 100)])
def test_smoke_vm_refuses_inputs_outside_their_grammar(field, value):
    args = dict(name='gpuvirt-smoke', namespace='default', resource_name='nvidia.com/GA102GL_A10',
                image='quay.io/containerdisks/fedora:41', memory='2Gi')
    args[field] = value
    with pytest.raises(ManifestError):
        verify.smoke_vm(**args)


def test_a_node_expected_to_advertise_nothing_says_so_and_what_it_has():
    # the lab's stand-in device is no GPU: an empty expectation read "node lab-gpu-0:  advertised"
    ok, report = verify.compare({'lab-gpu-0': {}}, [node('lab-gpu-0', {})])
    assert ok
    assert report['lab-gpu-0']['message'] == ('node lab-gpu-0: nothing expected (its GPU facts promise no nvidia.com/* '
                                              'resource); it advertises no nvidia.com/* resources')
    ok, report = verify.compare({'n1': {}}, [node('n1', {'nvidia.com/GA102GL_A10': '1'})])
    assert report['n1']['message'].endswith('it advertises nvidia.com/GA102GL_A10=1'), report
