# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The render modules over a real render directory whose own files are untrusted: what the close leaves in
place comes back as a warning naming it, a refused bookkeeping file or planted link fails the task naming it."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render_session as rs
from ansible_collections.gpuvirt.provision.plugins.modules import render_file, render_manifests, render_session

from .harness import run_module

CONFIGMAP = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'a', 'namespace': 'x'}}


def session(monkeypatch, dest, state, **args):
    return run_module(monkeypatch, render_session, dict(args, dest=str(dest), owner='site', state=state))


def test_a_file_changed_since_it_was_rendered_is_not_pruned_and_the_close_warns_naming_it(monkeypatch, tmp_path):
    opened = session(monkeypatch, tmp_path, 'open')
    assert not opened['failed'] and len(opened['session']) == 64
    res = run_module(monkeypatch, render_manifests, dict(dest=str(tmp_path), objects=[CONFIGMAP], prefix='60-kv',
                                                         phase='kubevirt', session=opened['session']))
    assert not res['failed'] and res['deferred'], res
    (name,) = [os.path.basename(path) for path in res['files']]
    assert session(monkeypatch, tmp_path, 'closed', session=opened['session'])['written'] == [name, rs.KUSTOMIZATION, 'flux-5-kubevirt/' + rs.KUSTOMIZATION]
    (tmp_path / name).write_text('edited in the checkout\n')
    token = session(monkeypatch, tmp_path, 'open')['session']
    res = session(monkeypatch, tmp_path, 'closed', session=token)
    # the Flux group it was alone in goes (its kustomization still holds what was written); the edited file stays
    assert not res['failed'] and res['pruned'] == ['flux-5-kubevirt/' + rs.KUSTOMIZATION]
    assert (tmp_path / name).read_text() == 'edited in the checkout\n'
    assert res['warnings'] == ['%s was changed since this collection wrote it: not pruned, and no longer recorded as '
                               'written by this render; remove it by hand if it is stale' % (tmp_path / name)]


def test_a_manifest_listing_a_file_outside_fails_the_task_naming_it(monkeypatch, tmp_path):
    dest = tmp_path / 'render'
    dest.mkdir()
    (tmp_path / 'outside.yaml').write_text('x\n')
    (dest / rs.MANIFEST).write_text(json.dumps({'format': 2, 'files': {'../outside.yaml': {'sha256': '0' * 64}}}))
    res = session(monkeypatch, dest, 'open')
    assert res['failed']
    assert res['msg'].startswith("%s: a file name in files is '../outside.yaml'" % (dest / rs.MANIFEST))
    assert (tmp_path / 'outside.yaml').exists() and not (dest / rs.LOCK).exists()


def test_a_symlinked_render_directory_and_a_hostile_phase_are_refused(monkeypatch, tmp_path):
    (tmp_path / 'real').mkdir()
    os.symlink('real', str(tmp_path / 'link'))
    res = session(monkeypatch, tmp_path / 'link', 'open')
    assert res['failed'] and 'link is a symbolic link; set the render directory to the real directory' in res['msg']
    res = run_module(monkeypatch, render_manifests, dict(dest=str(tmp_path / 'link'), objects=[CONFIGMAP]))
    assert res['failed'] and 'is a symbolic link' in res['msg'] and os.listdir(str(tmp_path / 'real')) == []
    res = run_module(monkeypatch, render_file, dict(dest=str(tmp_path / 'real'), name='v.yaml', content='x',
                                                    phase='kubevirt\n'))
    assert res['failed'] and res['msg'].startswith("phase 'kubevirt\\n' is not valid")


def test_a_lock_this_run_did_not_create_fails_every_render_step_until_taken_over(monkeypatch, tmp_path):
    # committed with the pid the render will have: never this run's, whatever its pid
    (tmp_path / rs.LOCK).write_text(json.dumps({'format': 2, 'owner': 'site', 'pid': os.getpid(), 'started': 1.0,
                                                'host': 'ci-1', 'objects': {}}))
    res = session(monkeypatch, tmp_path, 'open')
    assert res['failed'] and res['msg'].startswith('%s is a render lock this run did not create (pid %d on host '
                                                   "'ci-1', owner site" % (tmp_path / rs.LOCK, os.getpid()))
    assert 'gpuvirt_render_takeover_lock=true' in res['msg']
    for module, args in ((render_manifests, dict(objects=[CONFIGMAP], prefix='60-kv')),
                         (render_file, dict(name='43-x-helm-values-x.yaml', content='x: 1\n'))):
        res = run_module(monkeypatch, module, dict(args, dest=str(tmp_path), phase='kubevirt'))
        assert res['failed'] and 'is a render lock this run did not create' in res['msg'], res
    assert sorted(os.listdir(str(tmp_path))) == [rs.LOCK]
    res = session(monkeypatch, tmp_path, 'open', takeover_lock=True)
    assert not res['failed'] and res['interrupted']['host'] == 'ci-1'
    assert res['warnings'] == ['the render lock in %s that this run did not create (pid %d on host ci-1, site) was '
                               'taken over (takeover_lock); its files are replaced by this render'
                               % (tmp_path, os.getpid())]
    assert not session(monkeypatch, tmp_path, 'closed', session=res['session'])['failed']
    assert not (tmp_path / rs.LOCK).exists()


def test_a_bad_phase_or_mode_is_refused_naming_it_before_anything_is_written(monkeypatch, tmp_path):
    phase = ('phase \'../kubevirt\' is not valid; expected at most 63 letters, digits, ".", "_" and "-", such as '
             'kubevirt')
    for module, args in ((render_manifests, dict(objects=[CONFIGMAP], prefix='60-kv')),
                         (render_file, dict(name='a.yaml', content='a: 1\n'))):
        res = run_module(monkeypatch, module, dict(args, dest=str(tmp_path), phase='../kubevirt'))
        assert res['failed'] and res['msg'] == phase, res
        # the mode is checked first
        res = run_module(monkeypatch, module, dict(args, dest=str(tmp_path), phase='../kubevirt', mode='0999'))
        assert res['failed'] and res['msg'] == "mode '0999' is not an octal file mode such as 0644 or 0600", res
    assert os.listdir(str(tmp_path)) == []
