# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vgpu_manager_image role's commands take their paths, image reference and build arguments from these
filters, in the task that runs them: extra variables beat set_fact and registered results, so a fact computed in an
earlier task (``__vgpu_manager_image_ref``, ``__vgpu_manager_image_workdir``, the module's result) must not decide
what podman, docker or skopeo is given. What the public inputs give is recomputed here with the module's functions
(module_utils/manifests/vgpu_image.py); what only the build host knows (the OS tag from the cluster, the two input
digests, the build file found) is taken from the module's result only within its grammar. Documentation lives in the
sidecars vgpu_image_tmp.yml, vgpu_image_ref.yml and vgpu_image_build.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

vi = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.vgpu_image')

# a normalised absolute path of a conservative alphabet (no option, no space, no . or .. component)
_PATH = re.compile(r'(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_.+-]{1,255}){1,64}')
# what ansible.builtin.tempfile makes with the role's prefix (tempfile.mkdtemp: the prefix and random characters)
_TMP_NAME = re.compile(r'vgpu-manager-image\.[A-Za-z0-9_]{1,64}')
_HEX64 = re.compile(r'[0-9a-f]{64}')
# a build file relative to the context: path components of a conservative alphabet, none . or ..
_RELATIVE = re.compile(r'(?!\.\.?(?:/|$))[A-Za-z0-9_.+-]{1,255}(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_.+-]{1,255}){0,31}')
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')


def _fail(name, e):
    raise AnsibleFilterError('%s: %s' % (name, e))


def vgpu_image_tmp(path, parent=''):
    """The temporary build directory's paths: ``path`` (the tempfile result) is a normalised absolute path whose
    last component is the role's prefix and random characters, directly under ``parent`` when one is given."""
    if not isinstance(path, str) or not _PATH.fullmatch(path) or not _TMP_NAME.fullmatch(path.rsplit('/', 1)[1]):
        _fail('vgpu_image_tmp', 'the temporary build directory is %r; expected an absolute path ending in '
                                'vgpu-manager-image.<random>, as the role creates it' % (path,))
    if parent and path.rsplit('/', 1)[0] != str(parent).rstrip('/'):
        _fail('vgpu_image_tmp', 'the temporary build directory %s is not in vgpu_manager_image_tmp_parent %s'
                                % (path, parent))
    return {'path': path, 'clone': path + '/clone', 'authdir': path + '/docker',
            'authfile': path + '/docker/config.json', 'certdir': path + '/certs', 'digestfile': path + '/digest'}


def _ref(facts, registry, repository, name, version):
    if not isinstance(facts, dict):
        raise vi.VgpuImageError('the image facts are %r; expected the vgpu_image_facts result' % (facts,))
    return vi.image_ref(registry, repository, name, version, vi.check_os_tag(facts.get('os_tag')))


def vgpu_image_ref(facts, registry, repository, name, version):
    """``<registry>[/<repository>]/<name>:<version>-<os tag>`` from the public inputs and the OS tag the module
    resolved (checked by the OS tag grammar)."""
    try:
        return _ref(facts, registry, repository, name, version)['ref']
    except vi.VgpuImageError as e:
        _fail('vgpu_image_ref', e)


def vgpu_image_build(facts, tmp_path, inputs):
    """Everything a build is given: the work directory, the context to copy, the .run file and where it goes, the
    podman argv and the docker_image ``build`` option. ``inputs`` holds the role's public inputs by their short
    names (registry, repository, name, version, run_file, cuda_version, build_args, build_extra_args, containerfile,
    force, context_dir, contexts, git_repo, git_subdir, tmp_parent)."""
    try:
        if not isinstance(inputs, dict):
            raise vi.VgpuImageError('the inputs are %r; expected a mapping' % (inputs,))
        tmp = vgpu_image_tmp(tmp_path, inputs.get('tmp_parent') or '')
        ref = _ref(facts, inputs.get('registry'), inputs.get('repository'), inputs.get('name'),
                   inputs.get('version'))['ref']
        os_tag = vi.check_os_tag(facts.get('os_tag'))
        run_file = inputs.get('run_file')
        if not isinstance(run_file, str) or _CONTROL.search(run_file):
            raise vi.VgpuImageError('vgpu_manager_image_run_file is %r; expected a path' % (run_file,))
        arch, version = vi.parse_run_name(run_file)
        version = vi.check_version(inputs.get('version'))
        args = vi.build_args(version, inputs.get('cuda_version') or None, arch, inputs.get('build_args'))
        extra = vi.check_build_extra_args(inputs.get('build_extra_args'))
        # the labels: the two digests only the build host can compute, within their grammar; the rest recomputed
        labels = facts.get('labels')
        if not isinstance(labels, dict) or set(labels) != {vi.LABEL_RUN_SHA256, vi.LABEL_CONTEXT_DIGEST,
                                                           vi.LABEL_BUILD_ARGS_DIGEST, vi.LABEL_DRIVER_VERSION}:
            raise vi.VgpuImageError('the image labels are %r; expected the four input labels' % (labels,))
        for key in (vi.LABEL_RUN_SHA256, vi.LABEL_CONTEXT_DIGEST):
            if not isinstance(labels[key], str) or not _HEX64.fullmatch(labels[key]):
                raise vi.VgpuImageError('label %s is %r; expected a sha256 (64 hex digits)' % (key, labels[key]))
        labels = vi.image_labels(labels[vi.LABEL_RUN_SHA256], labels[vi.LABEL_CONTEXT_DIGEST], args, version, extra)
        wanted = inputs.get('containerfile') or ''
        containerfile = facts.get('containerfile')
        if wanted and (containerfile != wanted or not _RELATIVE.fullmatch(wanted)):
            raise vi.VgpuImageError('vgpu_manager_image_containerfile is %r; expected a path relative to the '
                                    'context (letters, digits and ._+-, no . or .. component)' % (wanted,))
        if not wanted and containerfile not in ('Containerfile', 'Dockerfile'):
            raise vi.VgpuImageError('the build file is %r; expected Containerfile or Dockerfile' % (containerfile,))
        contexts = inputs.get('contexts') or {}
        if not isinstance(contexts, dict):
            raise vi.VgpuImageError('vgpu_manager_image_contexts is %r; expected a mapping' % (contexts,))
        if inputs.get('git_repo'):
            allowed = [tmp['clone'] + '/' + str(d) for d in [inputs.get('git_subdir')] + list(contexts.values())]
        else:
            allowed = [inputs.get('context_dir')] + list(contexts.values())
        context = facts.get('context_dir')
        if (not isinstance(context, str) or not context or context not in allowed or _CONTROL.search(context)
                or '..' in context.split('/')):
            raise vi.VgpuImageError('the build context is %r; expected one the inputs name' % (context,))
        force = inputs.get('force')
        if not isinstance(force, bool):
            raise vi.VgpuImageError('force is %r; expected a boolean (read through strict_bool)' % (force,))
        workdir = '%s/context-%s' % (tmp['path'], os_tag)
        argv = (['podman', 'build', '--file=%s/%s' % (workdir, containerfile), '--tag=' + ref]
                + ['--build-arg=%s=%s' % item for item in args.items()]
                + ['--label=%s=%s' % item for item in labels.items()]
                + (['--no-cache'] if force else []) + extra + [workdir])
        return {'ref': ref, 'workdir': workdir, 'context': context,
                'copy_context_argv': ['cp', '-a', '--', context + '/.', workdir],
                'copy_run_argv': ['cp', '--reflink=auto', '--', run_file,
                                  '%s/%s' % (workdir, run_file.rsplit('/', 1)[-1])],
                'podman_argv': argv,
                'docker': {'path': workdir, 'dockerfile': containerfile, 'args': args, 'labels': labels,
                           'nocache': force}}
    except vi.VgpuImageError as e:
        _fail('vgpu_image_build', e)


def vgpu_image_credential(value, name):
    """A registry user name or password as it is given to podman (an argv element, or stdin) and docker_login: text
    of at most 4096 characters without a control character (a newline would end the password podman reads). The
    refusal names the variable, never the value."""
    if not isinstance(value, str) or len(value) > 4096 or _CONTROL.search(value):
        _fail('vgpu_image_credential', '%s is not text of at most 4096 characters without control characters (its '
                                       'value is not shown)' % name)
    return value


class FilterModule(object):
    def filters(self):
        return {'vgpu_image_tmp': vgpu_image_tmp, 'vgpu_image_ref': vgpu_image_ref,
                'vgpu_image_build': vgpu_image_build, 'vgpu_image_credential': vgpu_image_credential}
