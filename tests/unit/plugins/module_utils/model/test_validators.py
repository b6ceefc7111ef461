# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared grammars: Kubernetes names, Helm inputs, OCI references and flags."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators as v


@pytest.mark.parametrize('value, expected', [
    (True, True), (False, False), ('false', False), ('False', False), ('no', False), ('0', False), ('off', False),
    ('true', True), ('YES', True), ('1', True), (1, True), (0, False), (' on ', True)])
def test_to_bool_accepts_unambiguous_spellings(value, expected):
    assert v.to_bool(value, 'x_validate_certs') is expected


@pytest.mark.parametrize('value', ['', 'flase', 'y', 'n', 2, None, [], 'true\nfalse', 1.0])
def test_to_bool_refuses_the_rest_naming_variable_and_value(value):
    with pytest.raises(v.ValidationError, match=r'^vgpu_manager_image_validate_certs: .* is not a boolean'):
        v.to_bool(value, 'vgpu_manager_image_validate_certs')


@pytest.mark.parametrize('check, good, bad', [
    (v.dns1123_label, ['gpu-operator', 'a', 'a' * 63], ['', 'A', '-a', 'a-', 'a.b', 'a' * 64, 'ns\n', '../x']),
    (v.dns1123_subdomain, ['node1.example.com', 'worker-0', 'a' * 253],
     ['../../x', 'a/b', 'a..b', '.a', 'Node1', 'a' * 254, 'node\n']),
    (v.label_value, ['', 'A10-12Q', 'a_b.c', 'x' * 63], ['-a', 'a-', 'a b', 'x' * 64, 'a\n', 'a/b']),
    (v.helm_release_name, ['gpu-operator', 'a' * 53], ['a' * 54, '--post-renderer', 'Gpu', 'a\n--x', 'a b']),
    (v.semver, ['1.2.3', 'v26.7.0', '0.4.1-rc.1', '1.0.0+build.5'],
     ['1.2', '01.2.3', '1.2.3\n', '--post-renderer=/x', '1.2.3 --debug', 'latest']),
    (v.repo_url, ['https://helm.ngc.nvidia.com/nvidia', 'oci://registry.k8s.io/a/b', 'http://127.0.0.1:8080/x'],
     ['helm.ngc.nvidia.com', 'ftp://x', 'https://x y', 'https://x\n--post-renderer', '--post-renderer', 'https://']),
    (v.chart_ref, ['gpu-operator', 'nvidia/gpu-operator', 'oci://registry.k8s.io/c/dra-driver'],
     ['--post-renderer', '-x', 'a b', 'a\n']),
    (v.oci_registry, ['registry.example.com', '127.0.0.1:5000', 'localhost'],
     ['https://r.example.com', 'r.example.com/path', 'r\n', '-r', 'r.example.com:']),
    (v.oci_reference, ['r.example.com/nvidia/vgpu:550.90.05-ubuntu22.04', 'localhost:5000/a/b',
                       'r.io/a@sha256:' + '0' * 64], ['vgpu', 'r.io/A', 'r.io/a:-x', 'r.io/a\n', 'r.io/a@sha256:x']),
])
def test_grammars(check, good, bad):
    for value in good:
        assert check(value, 'the_var') == value
    for value in bad:
        with pytest.raises(v.ValidationError, match=r'^the_var: '):
            check(value, 'the_var')


def test_non_strings_are_named():
    with pytest.raises(v.ValidationError, match=r"^ns: 5 is not a string"):
        v.dns1123_label(5, 'ns')


# What kubernetes.core.helm's command string must never carry: it is one string that AnsibleModule.run_command
# shlex-splits (kubernetes.core plugins/modules/helm.py builds "--repo=" + chart_repo_url, chart_ref, name and
# "--version=" + chart_version into it), so a blank, a quote or a backslash changes the argv, and the shell
# characters would do harm wherever the value is ever pasted into a shell (the rendered header's helm command).
HOSTILE_ALPHABET = ' \t\n\r\'"$`;&|\\<>(){}[]*?!#,=^'
HELM_CHECKS = [
    (v.repo_url, 'https://helm.ngc.nvidia.com/nvidia'),
    (v.repo_url, 'oci://registry.k8s.io/dra-driver-nvidia/charts'),
    (v.chart_ref, 'oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu'),
    (v.chart_ref, 'nvidia/gpu-operator'),
    (v.helm_release_name, 'gpu-operator'),
    (v.semver, 'v25.3.0'),
    (v.helm_binary, '/usr/local/bin/helm'),
    (v.helm_binary, 'helm'),
]


@pytest.mark.parametrize('check, good', HELM_CHECKS)
@pytest.mark.parametrize('char', list(HOSTILE_ALPHABET))
def test_helm_strings_refuse_the_hostile_alphabet_anywhere(check, good, char):
    assert check(good, 'the_var') == good
    for bad in (good + char, good + char + 'x', good + '/' + char + 'x', good[:9] + char + good[9:]):
        with pytest.raises(v.ValidationError, match=r'^the_var: '):
            check(bad, 'the_var')


@pytest.mark.parametrize('bad', ["https://x.example.com/a'b", 'https://x.example.com/$(id)', 'https://x.example.com/`id`',
                                 'oci://r.example.com/a;b', 'https://x.example.com/a%2', 'https://x.example.com/a%zz'])
def test_repo_url_refusal_names_variable_value_and_the_allowed_path(bad):
    with pytest.raises(v.ValidationError) as e:
        v.repo_url(bad, 'gpu_operator_chart_repo_url')
    assert str(e.value).startswith('gpu_operator_chart_repo_url: %r is not valid' % bad)
    assert '%XX escapes' in str(e.value)


@pytest.mark.parametrize('good', ['https://helm.ngc.nvidia.com/nvidia', 'https://charts.example.com:8443/a/b~c/d+e/',
                                  'https://x.example.com/a%20b', 'oci://registry.k8s.io/a/b@x', 'http://127.0.0.1:8080'])
def test_repo_url_keeps_real_repositories(good):
    assert v.repo_url(good, 'gpu_operator_chart_repo_url') == good


@pytest.mark.parametrize('bad', ['', 'bin/helm', './helm', '/usr/local/../bin/helm', '/opt/./helm', '/usr/bin/',
                                 '--help', '/usr/bin/helm --kubeconfig=/tmp/x', '/', 'helm\n', 3])
def test_the_helm_binary_is_a_bare_name_or_an_absolute_path_and_its_refusal_says_so(bad):
    # kubernetes.core.helm joins binary_path into the command string it shlex-splits (kubernetes.core
    # plugins/module_utils/helm.py get_helm_binary): a relative or '..' path, a flag or a blank is refused up front
    with pytest.raises(v.ValidationError) as e:
        v.helm_binary(bad, 'gpu_operator_helm_binary')
    assert str(e.value).startswith('gpu_operator_helm_binary: ')
    assert 'a bare name such as helm (looked up on PATH) or an absolute path such as /usr/local/bin/helm' in str(e.value)
