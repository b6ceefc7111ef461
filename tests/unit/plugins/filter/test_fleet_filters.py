# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet filters as the playbooks call them: what they hand back on top of module_utils/model/fleet.py."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpuvirt.provision.plugins.filter import fleet


def test_a_host_pattern_problem_is_named_and_a_good_pattern_has_none():
    # the documented use (hosts_pattern_problem.yml) asserts the answer is '': a bad pattern must come back as its
    # problem, a good one as the empty string (not None, which a template prints as "None")
    assert fleet.hosts_pattern_problem('gpu_container:gpu_vm_passthrough') == ''
    assert "'all' is not a GPU pool group" in fleet.hosts_pattern_problem('all')
    assert 'names a pool group twice' in fleet.hosts_pattern_problem('gpu_container:gpu_container')
