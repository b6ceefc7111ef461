# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""strict_bool and checked, the filters the roles validate their inputs with."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.filter import validate


def test_filters_registered():
    assert set(validate.FilterModule().filters()) == {'strict_bool', 'checked'}


@pytest.mark.parametrize('value, expected', [('false', False), ('no', False), ('0', False), (False, False),
                                             ('true', True), ('yes', True), (True, True)])
def test_survey_strings_become_booleans(value, expected):
    assert validate.strict_bool(value, 'x_validate_certs') is expected


@pytest.mark.parametrize('value', ['', 'flase', 'none', 2])
def test_ambiguous_flags_fail_naming_variable_and_value(value):
    with pytest.raises(AnsibleFilterError, match=r"vgpu_manager_image_validate_certs: .* is not a boolean"):
        validate.strict_bool(value, 'vgpu_manager_image_validate_certs')


def test_checked_helm_inputs():
    assert validate.checked('v26.7.0', 'semver', 'gpu_operator_chart_version') == 'v26.7.0'
    with pytest.raises(AnsibleFilterError, match=r"gpu_operator_chart_version: '1.0.0\\n--post-renderer=/tmp/x'"):
        validate.checked('1.0.0\n--post-renderer=/tmp/x', 'semver', 'gpu_operator_chart_version')
    with pytest.raises(AnsibleFilterError, match=r"gpu_operator_release_name: '--post-renderer'"):
        validate.checked('--post-renderer', 'helm_release_name', 'gpu_operator_release_name')
    with pytest.raises(AnsibleFilterError, match='unknown grammar'):
        validate.checked('a', 'nope', 'x')


@pytest.mark.parametrize('value', ['', None, 'db', '6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B',
                                   '6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b\n', '6f1c2a9e3b4d4e5f8a7b0c1d2e3f4a5b'])
def test_a_uid_sent_as_a_precondition_is_a_uuid_or_refused(value):
    # an empty uid in a patch is no precondition at all: refused, as is anything the API server never assigns
    with pytest.raises(AnsibleFilterError, match='VM uid'):
        validate.checked(value, 'k8s_uid', 'VM uid')
    assert validate.checked('6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b', 'k8s_uid', 'VM uid') == (
        '6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b')


def test_the_reboot_message_is_plain_text():
    message = 'Reboot by gpuvirt.provision host preparation'
    assert validate.checked(message, 'reboot_message', 'reboot_msg') == message
    # ansible.builtin.reboot puts it between double quotes on a shell command line run as root
    for bad in ['x"; id; "', 'x $(id)', 'x `id`', 'x\\', 'x\nid', '', ' x', 'x' * 201, 5]:
        with pytest.raises(AnsibleFilterError, match='reboot_msg'):
            validate.checked(bad, 'reboot_message', 'reboot_msg')


def test_the_crds_applied_before_a_helm_upgrade_are_checked_in_the_task():
    crd = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'clusterpolicies.nvidia.com'},
           'spec': {'group': 'nvidia.com', 'names': {'plural': 'clusterpolicies'}}}
    assert validate.checked([crd], 'gpu_operator_crds', 'the CRDs') == [crd]
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 's', 'namespace': 'kube-system'}}
    with pytest.raises(AnsibleFilterError, match=r'the CRDs: item 2 \(kind Secret, name s, apiVersion v1\) is not a'):
        validate.checked([crd, secret], 'gpu_operator_crds', 'the CRDs')
    with pytest.raises(AnsibleFilterError, match='the CRDs: .* is not a non-empty list'):
        validate.checked('clusterpolicies.nvidia.com', 'gpu_operator_crds', 'the CRDs')


def test_the_grammars_the_roles_name():
    # each name a role's task passes to checked (a renamed or emptied key fails that task at run time)
    assert set(validate.GRAMMARS) == {
        'dns1123_label', 'dns1123_subdomain', 'label_value', 'helm_release_name', 'semver', 'k8s_uid', 'helm_binary',
        'repo_url', 'chart_ref', 'oci_registry', 'oci_repository', 'oci_reference', 'gpu_hosts_pattern',
        'positive_int', 'percentage', 'reboot_message', 'pem_certificates', 'gpu_operator_crds'}


# a PEM block by its form: one DER SEQUENCE (holding the INTEGER 0) whose length fills it
PEM = '-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n'


@pytest.mark.parametrize('grammar, good, bad', [
    ('chart_ref', 'nvidia/gpu-operator', 'nvidia/gpu-operator --post-renderer=/tmp/x'),
    ('oci_reference', 'registry.example.com/nvidia/vgpu-manager:550.90.05-ubuntu22.04', 'registry.example.com/a b'),
    ('positive_int', '600', '0'),
    ('percentage', '0', '101'),
    ('pem_certificates', PEM, PEM.replace('CERTIFICATE', 'PRIVATE KEY')),
])
def test_checked_grammars_take_their_value_and_refuse_the_neighbour(grammar, good, bad):
    assert validate.checked(good, grammar, 'the_input') == (int(good) if good.isdigit() else good)
    with pytest.raises(AnsibleFilterError, match='the_input'):
        validate.checked(bad, grammar, 'the_input')
