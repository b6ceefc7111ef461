# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_name: the one rule for a host's node name, checked against the Kubernetes node name grammar."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuvirt.provision.plugins.filter.nodes import node_name


def test_short_inventory_name_and_override():
    assert node_name('gpu-1.lab.example.com') == 'gpu-1'
    assert node_name('gpu-1.lab.example.com', 'worker-7.ocp.example.com') == 'worker-7.ocp.example.com'


@pytest.mark.parametrize('override', ['../../x', 'GPU_1', 'a/b', 'node\n', '-x', 'x' * 254])
def test_a_name_outside_the_node_name_grammar_is_refused(override):
    with pytest.raises(AnsibleFilterError, match=r'gpuvirt_node_name of h1.*DNS-1123 subdomain.*Set gpuvirt_node_name'):
        node_name('h1', override)


def test_a_bad_inventory_name_is_refused_naming_it():
    with pytest.raises(AnsibleFilterError, match=r"short inventory name of Bad_Host.*'Bad_Host'"):
        node_name('Bad_Host')
