# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_manager_image role's checking filters: the argv a build is given comes from the public inputs, and from
the module's result only within its grammar, so a result or fact given with -e cannot change what runs."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuvirt.provision.plugins.filter import vgpu_image as f
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_image as vi

TMP = '/tmp/vgpu-manager-image.ab12_cd'
RUN = '/srv/NVIDIA-Linux-x86_64-550.90.05-vgpu-kvm.run'
INPUTS = {'registry': 'registry.example.com:5000', 'repository': 'nvidia', 'name': 'vgpu-manager',
          'version': '550.90.05', 'run_file': RUN, 'cuda_version': '12.4', 'build_args': {'X': 1},
          'build_extra_args': ['--jobs=2'], 'containerfile': '', 'force': False, 'context_dir': '/srv/ctx',
          'contexts': {}, 'git_repo': '', 'git_subdir': 'vgpu-manager/rhel9', 'tmp_parent': ''}


def _facts(**change):
    args = vi.build_args('550.90.05', '12.4', 'x86_64', {'X': 1})
    facts = {'os_tag': 'ubuntu22.04', 'context_dir': '/srv/ctx', 'containerfile': 'Dockerfile',
             'labels': vi.image_labels('a' * 64, 'b' * 64, args, '550.90.05', ['--jobs=2'])}
    facts.update(change)
    return facts


def test_the_podman_argv_is_the_one_the_inputs_give():
    out = f.vgpu_image_build(_facts(), TMP, INPUTS)
    work = TMP + '/context-ubuntu22.04'
    ref = 'registry.example.com:5000/nvidia/vgpu-manager:550.90.05-ubuntu22.04'
    assert out['podman_argv'][:4] == ['podman', 'build', '--file=%s/Dockerfile' % work, '--tag=' + ref]
    assert out['podman_argv'][-2:] == ['--jobs=2', work]
    assert '--build-arg=DRIVER_VERSION=550.90.05' in out['podman_argv'] and '--no-cache' not in out['podman_argv']
    assert out['copy_context_argv'] == ['cp', '-a', '--', '/srv/ctx/.', work]
    assert out['copy_run_argv'] == ['cp', '--reflink=auto', '--', RUN, work + '/NVIDIA-Linux-x86_64-550.90.05-vgpu-kvm.run']
    assert out['docker']['labels'] == _facts()['labels'] and out['ref'] == ref
    assert f.vgpu_image_ref(_facts(), 'registry.example.com:5000', 'nvidia', 'vgpu-manager', '550.90.05') == ref


@pytest.mark.parametrize('change', [
    {'os_tag': 'ubuntu22.04 --tls-verify=false'}, {'context_dir': '/etc'}, {'containerfile': '../../etc/Dockerfile'},
    {'labels': {'io.gpuvirt.vgpu-manager.run-sha256': 'x'}},
    {'labels': dict(_facts()['labels'], **{vi.LABEL_CONTEXT_DIGEST: 'b' * 63 + '\n'})},
])
def test_a_result_outside_its_grammar_is_refused(change):
    with pytest.raises(AnsibleFilterError, match='vgpu_image_build'):
        f.vgpu_image_build(_facts(**change), TMP, INPUTS)


def test_labels_given_from_outside_are_recomputed_from_the_inputs():
    labels = dict(_facts()['labels'], **{vi.LABEL_BUILD_ARGS_DIGEST: 'c' * 64, vi.LABEL_DRIVER_VERSION: '1'})
    assert f.vgpu_image_build(_facts(labels=labels), TMP, INPUTS)['docker']['labels'] == _facts()['labels']


@pytest.mark.parametrize('path, parent', [('/etc', ''), ('/', ''), ('/tmp/vgpu-manager-image.x/../..', ''),
                                          ('/tmp/vgpu-manager-image.x y', ''), ('/tmp/vgpu-manager-image.x', '/srv')])
def test_a_temporary_directory_that_is_not_the_roles_is_refused(path, parent):
    with pytest.raises(AnsibleFilterError, match='vgpu_image_tmp'):
        f.vgpu_image_tmp(path, parent)


def test_a_credential_with_a_newline_is_refused_without_showing_it():
    with pytest.raises(AnsibleFilterError) as e:
        f.vgpu_image_credential('s3cret\nx', 'vgpu_manager_image_registry_password')
    assert 's3cret' not in str(e.value) and 'vgpu_manager_image_registry_password' in str(e.value)
    assert f.vgpu_image_credential('', 'u') == ''


def test_the_temporary_directorys_paths_and_its_parent():
    paths = {'path': TMP, 'clone': TMP + '/clone', 'authdir': TMP + '/docker', 'authfile': TMP + '/docker/config.json',
             'certdir': TMP + '/certs', 'digestfile': TMP + '/digest'}
    assert f.vgpu_image_tmp(TMP) == paths
    # directly under the parent the role was given (a trailing slash or not)
    assert f.vgpu_image_tmp(TMP, '/tmp') == paths and f.vgpu_image_tmp(TMP, '/tmp/') == paths


def test_force_rebuilds_without_the_layer_cache():
    out = f.vgpu_image_build(_facts(), TMP, dict(INPUTS, force=True))
    assert '--no-cache' in out['podman_argv'] and out['podman_argv'][-1] == TMP + '/context-ubuntu22.04'


def test_a_build_file_the_inputs_name_is_used_as_given():
    out = f.vgpu_image_build(_facts(containerfile='rhel9/Containerfile'), TMP, dict(INPUTS, containerfile='rhel9/Containerfile'))
    assert out['podman_argv'][2] == '--file=%s/context-ubuntu22.04/rhel9/Containerfile' % TMP


def test_a_git_build_takes_its_context_from_the_clone_only():
    inputs = dict(INPUTS, git_repo='https://git.example.com/driver-containers.git', context_dir='')
    context = TMP + '/clone/vgpu-manager/rhel9'
    out = f.vgpu_image_build(_facts(context_dir=context), TMP, inputs)
    assert out['context'] == context and out['copy_context_argv'] == ['cp', '-a', '--', context + '/.',
                                                                      TMP + '/context-ubuntu22.04']
    # another folder of the clone, or the local context the inputs would name without git, is refused
    for other in (TMP + '/clone', TMP + '/clone/vgpu-manager', '/srv/ctx', TMP + 'clone/vgpu-manager/rhel9'):
        with pytest.raises(AnsibleFilterError, match='the build context is'):
            f.vgpu_image_build(_facts(context_dir=other), TMP, inputs)


def test_the_build_directory_must_be_in_the_parent_the_inputs_name():
    assert f.vgpu_image_build(_facts(), TMP, dict(INPUTS, tmp_parent='/tmp'))['podman_argv'][-1] == (
        TMP + '/context-ubuntu22.04')
    with pytest.raises(AnsibleFilterError, match='is not in vgpu_manager_image_tmp_parent /srv'):
        f.vgpu_image_build(_facts(), TMP, dict(INPUTS, tmp_parent='/srv'))


def test_a_context_with_a_parent_component_is_refused_even_as_the_inputs_name_it():
    context = '/srv/build/../ctx'
    with pytest.raises(AnsibleFilterError, match='the build context is'):
        f.vgpu_image_build(_facts(context_dir=context), TMP, dict(INPUTS, context_dir=context))
    # the same folder named without the parent component is taken
    assert f.vgpu_image_build(_facts(context_dir='/srv/ctx'), TMP, dict(INPUTS, context_dir='/srv/ctx'))['context'] == (
        '/srv/ctx')


def test_a_build_file_the_inputs_name_must_be_a_relative_path_the_module_found():
    wanted = 'rhel9/Containerfile'
    # the module found another file than the one named, or the named one is outside the context: refused
    for found, named in (('Containerfile', wanted), ('../Containerfile', '../Containerfile'),
                         ('/etc/Containerfile', '/etc/Containerfile')):
        with pytest.raises(AnsibleFilterError, match='vgpu_manager_image_containerfile is'):
            f.vgpu_image_build(_facts(containerfile=found), TMP, dict(INPUTS, containerfile=named))


def test_a_bad_image_reference_names_the_filter():
    with pytest.raises(AnsibleFilterError, match='^vgpu_image_ref: '):
        f.vgpu_image_ref(_facts(os_tag='ubuntu22.04 --tls-verify=false'), 'registry.example.com:5000', 'nvidia',
                         'vgpu-manager', '550.90.05')


def test_a_context_that_is_no_string_is_refused_even_as_the_inputs_name_it():
    for context in (5, b'/srv/ctx'):
        with pytest.raises(AnsibleFilterError, match='the build context is'):
            f.vgpu_image_build(_facts(context_dir=context), TMP, dict(INPUTS, context_dir=context))


def test_a_credential_of_4096_characters_is_taken_one_more_is_refused():
    assert f.vgpu_image_credential('p' * 4096, 'vgpu_manager_image_registry_password') == 'p' * 4096
    with pytest.raises(AnsibleFilterError, match='at most 4096 characters'):
        f.vgpu_image_credential('p' * 4097, 'vgpu_manager_image_registry_password')
