# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One render run into a directory: lock, each object once (merge or refuse), prune only ours, kustomization,
completeness mark."""
from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest
import yaml

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render, render_session as rs


def dump(obj):
    return '---\n' + yaml.safe_dump(obj, sort_keys=False)


def kubevirt(gates, **conf):
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
            'spec': {'configuration': dict(conf, developerConfiguration={'featureGates': gates})}}


def dead_pid():
    proc = subprocess.Popen(['true'])
    proc.wait()
    return proc.pid


def test_two_roles_rendering_one_object_get_one_file_with_both_parts(tmp_path):
    # One object per apiVersion/kind/namespace/name: Kustomize refuses a second resource with an id already registered
    # (sigs.k8s.io/kustomize api/resmap/reswrangler.go Append: "may not add resource with an already registered id"),
    # and `kubectl apply -f <dir>` applies the files in order, so the last one applied would win over the earlier one
    # (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/; with server-side apply under one
    # field manager the later apply replaces that manager's fields:
    # https://kubernetes.io/docs/reference/using-api/server-side-apply/).
    token = rs.open_session(str(tmp_path), 'kubevirt', pid=os.getpid())['session']
    devices = kubevirt(['Snapshot', 'HostDevices'], permittedHostDevices={'pciHostDevices': [{'pciVendorSelector': '10DE:2236'}]})
    first = rs.record(str(tmp_path), devices, '60-kubevirt-devices-000-kubevirt-kubevirt-kubevirt.yaml', '60-kubevirt-devices', 'kubevirt',
                      session=token)
    second = rs.record(str(tmp_path), kubevirt(['Snapshot', 'GPUsWithDRA']), '71-dra-gate-000-kubevirt-kubevirt-kubevirt.yaml',
                       '71-dra-gate', 'kubevirt', session=token)
    assert first == second == '60-kubevirt-devices-000-kubevirt-kubevirt-kubevirt.yaml'
    result = rs.close_session(str(tmp_path), dump, session=token)
    assert result['files'] == [first] and result['written'] == [first, 'kustomization.yaml', 'flux-5-kubevirt/kustomization.yaml']
    (obj,) = yaml.safe_load_all((tmp_path / first).read_text())
    assert obj['spec']['configuration']['developerConfiguration']['featureGates'] == ['Snapshot', 'HostDevices', 'GPUsWithDRA']
    assert obj['spec']['configuration']['permittedHostDevices']['pciHostDevices'] == [{'pciVendorSelector': '10DE:2236'}]
    # the KubeVirt CR's CRD comes from virt-operator: Argo CD skips its dry run while the CRD is missing; the CR is
    # the KubeVirt install's, not ours: never pruned or deleted (test_gitops.py)
    assert obj['metadata']['annotations'] == {
        'argocd.argoproj.io/sync-wave': '60',
        'argocd.argoproj.io/sync-options': 'SkipDryRunOnMissingResource=true,Prune=false,Delete=false',
        'kustomize.toolkit.fluxcd.io/prune': 'disabled'}
    assert not (tmp_path / '71-dra-gate-000-kubevirt-kubevirt-kubevirt.yaml').exists()


def test_two_roles_disagreeing_on_a_field_are_refused_naming_both(tmp_path):
    # One object per apiVersion/kind/namespace/name: Kustomize refuses a second resource with an id already registered
    # (sigs.k8s.io/kustomize api/resmap/reswrangler.go Append: "may not add resource with an already registered id"),
    # and `kubectl apply -f <dir>` applies the files in order, so the last one applied would win over the earlier one
    # (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/; with server-side apply under one
    # field manager the later apply replaces that manager's fields:
    # https://kubernetes.io/docs/reference/using-api/server-side-apply/).
    token = rs.open_session(str(tmp_path), 'site', pid=os.getpid())['session']
    rs.record(str(tmp_path), kubevirt(['A'], vmRolloutStrategy='LiveUpdate'), '60-a-000.yaml', '60-kubevirt-devices', 'kubevirt',
              session=token)
    with pytest.raises(render.RenderError) as err:
        rs.record(str(tmp_path), kubevirt(['B'], vmRolloutStrategy='Stage'), '71-b-000.yaml', '71-dra-gate', 'kubevirt',
                  session=token)
    msg = str(err.value)
    assert 'kubevirt.io/v1/KubeVirt/kubevirt/kubevirt is rendered twice, differently' in msg
    assert '60-kubevirt-devices (60-a-000.yaml)' in msg and '71-dra-gate' in msg
    assert "spec.configuration.vmRolloutStrategy: one writer sets 'LiveUpdate', the other 'Stage'" in msg


def test_jsonpatch_annotations_of_two_writers_are_joined():
    one = {'metadata': {'annotations': {'kubevirt.kubevirt.io/jsonpatch': json.dumps([{'op': 'add', 'value': 'A'}])}}}
    two = {'metadata': {'annotations': {'kubevirt.kubevirt.io/jsonpatch': json.dumps([{'op': 'add', 'value': 'B'}])}}}
    merged = rs.merge(one, two)
    assert json.loads(merged['metadata']['annotations']['kubevirt.kubevirt.io/jsonpatch']) == [
        {'op': 'add', 'value': 'A'}, {'op': 'add', 'value': 'B'}]


def test_a_render_holds_the_directory_a_killed_one_is_taken_over_on_request(tmp_path, monkeypatch):
    token = rs.open_session(str(tmp_path), 'site', pid=os.getpid())['session']
    assert stat.S_IMODE(os.stat(tmp_path / rs.LOCK).st_mode) == 0o600  # it holds the objects, a Secret among them
    # opening writes only the lock: the bookkeeping is the close's, rewritten only when it changes
    assert not (tmp_path / rs.MANIFEST).exists()
    # another run (without this run's token), whatever its pid: refused, naming the lock and the option
    with pytest.raises(render.RenderError, match='render lock this run did not create \\(pid %d on host .*, owner '
                                                 'site, .*gpuvirt_render_takeover_lock=true' % os.getpid()):
        rs.open_session(str(tmp_path), 'site', pid=os.getpid() + 100000)
    # the same run opening again (a phase playbook imported by site.yml) nests: its close ends only its level
    assert rs.open_session(str(tmp_path), 'kubevirt', pid=os.getpid(), session=token)['reopened'] is True
    assert rs.close_session(str(tmp_path), dump, session=token)['closed'] is False
    assert json.loads((tmp_path / rs.LOCK).read_text())['depth'] == 1
    # a render that was killed in its close, right after writing its one object (files are written only there,
    # each atomically): its lock names a process that is gone, and what the close was writing, with the hashes
    name = '60-a-000-kubevirt-kubevirt-kubevirt.yaml'
    rs.record(str(tmp_path), kubevirt(['A']), name, '60-a', 'kubevirt', session=token)
    real_write = render.write_atomic

    def killed_after_one_write(path, content, mode):
        real_write(path, content, mode)
        if not os.path.basename(path).startswith('.'):  # the bookkeeping is written with it too
            raise KeyboardInterrupt

    monkeypatch.setattr(render, 'write_atomic', killed_after_one_write)
    with pytest.raises(KeyboardInterrupt):
        rs.close_session(str(tmp_path), dump, session=token)
    monkeypatch.setattr(render, 'write_atomic', real_write)
    assert (tmp_path / name).exists()
    # the close marked the directory incomplete before its first write of an object
    assert json.loads((tmp_path / rs.MANIFEST).read_text())['complete'] is False
    lock = json.loads((tmp_path / rs.LOCK).read_text())
    lock['pid'] = dead_pid()
    lock['depth'] = 1
    (tmp_path / rs.LOCK).write_text(json.dumps(lock))
    # the next run: refused until told to take the lock over, then the killed render's lock is replaced
    with pytest.raises(render.RenderError, match='gpuvirt_render_takeover_lock=true'):
        rs.open_session(str(tmp_path), 'site', pid=os.getpid())
    result = rs.open_session(str(tmp_path), 'site', pid=os.getpid(), takeover=True)
    assert result['interrupted']['pid'] == lock['pid'] and result['warnings'] == [] and result['session'] != token
    # this render does not produce 60-a: the interrupted render's file, proven by its hash, is pruned
    assert rs.close_session(str(tmp_path), dump, session=result['session'])['pruned'] == [name]


def test_prune_removes_only_our_stale_files_of_the_scope_and_keeps_foreign_ones(tmp_path):
    d = str(tmp_path)
    nodes, kv0, kv1 = ('30-nodes-000-configmap-cluster-a.yaml', '60-kv-000-configmap-cluster-b.yaml',
                       '60-kv-001-configmap-cluster-c.yaml')
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    for name, phase in ((nodes, 'nodes'), (kv0, 'kubevirt'), (kv1, 'kubevirt')):
        rs.record(d, {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name.rsplit('-', 1)[-1][:-5]}},
                  name, name[:5], phase, session=token)
    rs.close_session(d, dump, session=token)
    (tmp_path / 'foreign.yaml').write_text('kind: Secret\n')
    # the kubevirt phase alone renders only one of its two objects: its other file goes, the nodes phase's stays
    token = rs.open_session(d, 'kubevirt', pid=os.getpid())['session']
    rs.record(d, {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'b'}}, kv0, '60-kv', 'kubevirt',
              session=token)
    result = rs.close_session(d, dump, session=token)
    assert result['pruned'] == [kv1]
    assert sorted(os.listdir(d)) == ['.gpuvirt-render.json', nodes, kv0, 'flux-1-nodes', 'flux-5-kubevirt',
                                     'foreign.yaml', 'kustomization.yaml']
    listed = yaml.safe_load((tmp_path / 'kustomization.yaml').read_text())['resources']
    assert listed == [nodes, kv0]
    # each Flux group lists the files of its waves, the whole render's as the top one does
    assert yaml.safe_load((tmp_path / 'flux-5-kubevirt' / 'kustomization.yaml').read_text())['resources'] == [
        '../' + kv0]
    manifest = json.loads((tmp_path / rs.MANIFEST).read_text())
    assert manifest['complete'] is True and sorted(manifest['files']) == [nodes, kv0]


def test_a_foreign_kustomization_is_never_overwritten(tmp_path):
    (tmp_path / 'kustomization.yaml').write_text('resources: [mine.yaml]\n')
    token = rs.open_session(str(tmp_path), 'site', pid=os.getpid())['session']
    rs.record(str(tmp_path), kubevirt(['A']), '60-a-000.yaml', '60-a', 'kubevirt', session=token)
    with pytest.raises(render.RenderError, match='kustomization.yaml exists and was not written by this collection'):
        rs.close_session(str(tmp_path), dump, session=token)
    assert (tmp_path / 'kustomization.yaml').read_text() == 'resources: [mine.yaml]\n'


def test_sync_wave_comes_from_the_file_prefix():
    obj = {'kind': 'Namespace', 'metadata': {'name': 'x'}}
    assert rs.with_sync_wave(obj, '35-nfd-operator-000-namespace-cluster-x.yaml')['metadata']['annotations'] == {
        'argocd.argoproj.io/sync-wave': '35'}
    assert rs.with_sync_wave(obj, 'plain.yaml') is obj and 'annotations' not in obj['metadata']


def configmap(name):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': 'x'}}


def test_a_site_render_prunes_a_phase_that_now_renders_nothing_a_phase_alone_only_its_own(tmp_path):
    d = str(tmp_path)
    nodes, vgpu, kv = '30-nodes-000-configmap-x-a.yaml', '41-vgpu-000-configmap-x-b.yaml', '60-kv-000-configmap-x-c.yaml'
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, configmap('a'), nodes, '30-nodes', 'nodes', session=token)
    rs.record(d, configmap('b'), vgpu, '41-vgpu', 'operator', session=token)
    rs.record(d, configmap('c'), kv, '60-kv', 'kubevirt', session=token)
    rs.close_session(d, dump, session=token)
    (tmp_path / 'foreign.yaml').write_text('kind: ConfigMap\n')
    # the kubevirt phase alone, rendering nothing: only its own file goes (and the Flux group it was alone in)
    token = rs.open_session(d, 'kubevirt', pid=os.getpid())['session']
    assert rs.close_session(d, dump, session=token)['pruned'] == [kv, 'flux-5-kubevirt/kustomization.yaml']
    assert not (tmp_path / 'flux-5-kubevirt').exists()
    # a site render where the operator phase renders nothing: its file goes too
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, configmap('a'), nodes, '30-nodes', 'nodes', session=token)
    result = rs.close_session(d, dump, session=token)
    assert result['pruned'] == [vgpu, 'flux-3-gpu-operator/kustomization.yaml']
    assert sorted(os.listdir(d)) == ['.gpuvirt-render.json', nodes, 'flux-1-nodes', 'foreign.yaml',
                                     'kustomization.yaml']
    assert yaml.safe_load((tmp_path / 'kustomization.yaml').read_text())['resources'] == [nodes]


def test_a_file_that_is_no_object_is_ours_pruned_never_listed_and_never_over_a_foreign_file(tmp_path):
    d = str(tmp_path)
    nodes, values = '30-nodes-000-configmap-x-a.yaml', '43-gpu-operator-helm-values-gpu-operator.yaml'
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, configmap('a'), nodes, '30-nodes', 'nodes', session=token)
    rs.record_file(d, values, '# helm\nx: 1\n', values, 'operator', session=token)
    result = rs.close_session(d, dump, session=token)
    assert result['files'] == [nodes, values] and values in result['written']
    assert (tmp_path / values).read_text() == '# helm\nx: 1\n'
    assert yaml.safe_load((tmp_path / 'kustomization.yaml').read_text())['resources'] == [nodes]
    # the next render does not produce it: pruned like an object
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, configmap('a'), nodes, '30-nodes', 'nodes', session=token)
    assert rs.close_session(d, dump, session=token)['pruned'] == [values]
    # a foreign file of that name stops the render and stays as it was
    (tmp_path / values).write_text('mine\n')
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record_file(d, values, '# helm\n', values, 'operator', session=token)
    with pytest.raises(render.RenderError, match='%s exists and was not written by this collection' % values):
        rs.close_session(d, dump, session=token)
    assert (tmp_path / values).read_text() == 'mine\n'
    with pytest.raises(render.RenderError, match="file name '../x.yaml' is not valid"):
        rs.record_file(d, '../x.yaml', '', 'w', 'operator', session=token)


def secret(password):
    return {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'pull', 'namespace': 'x'},
            'type': 'kubernetes.io/dockerconfigjson',
            'data': {'.dockerconfigjson': 'eyJwYXNzd29yZCI6ICIlcyJ9-' + password, 'other': 'c2FtZQ=='}}


def test_the_diff_of_a_secret_shows_which_keys_changed_never_the_values(tmp_path):
    d = str(tmp_path)
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, secret('first-Pa55'), '40-pull-000.yaml', '40-pull', 'operator', 0o600, session=token)
    result = rs.close_session(d, dump, session=token)
    assert 'first-Pa55' not in result['after'] and '.dockerconfigjson: (redacted, changed)' in result['after']
    assert 'first-Pa55' in (tmp_path / '40-pull-000.yaml').read_text()  # the file itself holds the value
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, secret('second-Pa55'), '40-pull-000.yaml', '40-pull', 'operator', 0o600, session=token)
    result = rs.close_session(d, dump, session=token)
    shown = result['before'] + result['after']
    assert 'first-Pa55' not in shown and 'second-Pa55' not in shown
    assert '.dockerconfigjson: (redacted, changed)' in result['after'] and 'other: (redacted)' in result['after']
    assert stat.S_IMODE(os.stat(tmp_path / '40-pull-000.yaml').st_mode) == 0o600


def test_a_killed_render_with_a_secret_its_lock_is_0600_and_gone_after_takeover_never_reported(tmp_path):
    d = str(tmp_path)
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    rs.record(d, secret('killed-Pa55'), '40-pull-000.yaml', '40-pull', 'operator', 0o600, session=token)
    lock_path = tmp_path / rs.LOCK
    assert stat.S_IMODE(os.stat(lock_path).st_mode) == 0o600 and 'killed-Pa55' in lock_path.read_text()
    lock = json.loads(lock_path.read_text())
    lock['pid'] = dead_pid()
    lock_path.write_text(json.dumps(lock))
    os.chmod(lock_path, 0o600)
    with pytest.raises(render.RenderError) as err:
        rs.open_session(d, 'site', pid=os.getpid())
    assert 'killed-Pa55' not in str(err.value)
    result = rs.open_session(d, 'site', pid=os.getpid(), takeover=True)
    # what is reported about the killed run (the module returns it) holds no object, so no Secret data
    assert result['interrupted'] == {'pid': lock['pid'], 'owner': 'site', 'host': lock['host'], 'started': lock['started'],
                                     'objects': 1}
    # the new lock replaced the killed one: the secret material is gone from it and from every other file
    assert 'killed-Pa55' not in lock_path.read_text()
    rs.close_session(d, dump, session=result['session'])
    assert not any('killed-Pa55' in (tmp_path / name).read_text() for name in os.listdir(d))


def test_operator_crs_skip_argo_cd_dry_run_other_objects_do_not():
    # Argo CD, Sync Options, "Skip Dry Run for new custom resources types": a custom resource whose CRD is not
    # part of the sync but created another way (here by an operator the same sync installs) fails the dry run
    # unless it carries SkipDryRunOnMissingResource=true; several options share one annotation, joined with ","
    # (https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/)
    policy = {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {
        'name': 'p', 'annotations': {'argocd.argoproj.io/sync-options': 'Prune=false'}}}
    out = rs.with_argocd(policy, '42-gpu-operator-000-clusterpolicy-cluster-p.yaml')
    assert out['metadata']['annotations'] == {'argocd.argoproj.io/sync-options': 'Prune=false,SkipDryRunOnMissingResource=true',
                                              'argocd.argoproj.io/sync-wave': '42'}
    assert policy['metadata']['annotations'] == {'argocd.argoproj.io/sync-options': 'Prune=false'}
    out = rs.with_argocd({'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery', 'metadata': {'name': 'n'}},
                         '36-x.yaml')
    assert out['metadata']['annotations']['argocd.argoproj.io/sync-options'] == 'SkipDryRunOnMissingResource=true'
    # patched, not owned (test_gitops.py): never pruned or deleted as well
    for api, kind in (('hco.kubevirt.io/v1beta1', 'HyperConverged'), ('kubevirt.io/v1', 'KubeVirt')):
        out = rs.with_argocd({'apiVersion': api, 'kind': kind, 'metadata': {'name': 'n'}}, '36-x.yaml')
        assert out['metadata']['annotations']['argocd.argoproj.io/sync-options'] == \
            'SkipDryRunOnMissingResource=true,Prune=false,Delete=false'
    for api, kind in (('v1', 'Namespace'), ('operators.coreos.com/v1alpha1', 'Subscription'),
                      ('machineconfiguration.openshift.io/v1', 'MachineConfig')):
        out = rs.with_argocd({'apiVersion': api, 'kind': kind, 'metadata': {'name': 'n'}}, '20-x.yaml')
        assert out['metadata']['annotations'] == {'argocd.argoproj.io/sync-wave': '20'}
    # a KubeVirt of another group is not the KubeVirt CR: no dry-run skip; a kind without a row is kept (gitops.DEFAULT)
    out = rs.with_argocd({'apiVersion': 'example.com/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'n'}}, '20-x.yaml')
    assert out['metadata']['annotations']['argocd.argoproj.io/sync-options'] == 'Prune=false,Delete=false'


def test_diff_texts_redact_a_secret_and_keep_anything_else(tmp_path):
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 's', 'namespace': 'gpu'},
              'data': {'token': 'b2xk'}}
    path = tmp_path / 's.yaml'
    path.write_text(render.dump(secret))
    new = render.dump(dict(secret, data={'token': 'bmV3'}))
    old_shown, new_shown = rs.diff_texts(str(path), new, secret)
    assert 'b2xk' not in old_shown and 'bmV3' not in new_shown and rs.REDACTED_CHANGED in new_shown
    assert rs.diff_texts(str(path), 'a: 1\n') == (render.dump(secret), 'a: 1\n')
    assert rs.diff_texts(str(tmp_path / 'missing.yaml'), 'a: 1\n', {'kind': 'ConfigMap'}) == ('', 'a: 1\n')


@pytest.mark.parametrize('committed', ['[' * 100000, 'a:\n' + '  ' * 3 + 'b: ' + '{' * 60000,
                                       'data: {token: ' + 'x' * (2 * 1024 * 1024) + '}\n'])
def test_a_secret_file_too_deep_or_too_large_to_parse_is_shown_redacted_not_a_traceback(tmp_path, committed):
    # the file at a Secret's name is whatever someone committed: parsing it for the diff must not fail the run
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 's', 'namespace': 'gpu'},
              'data': {'token': 'bmV3'}}
    path = tmp_path / 's.yaml'
    path.write_text(committed)
    old_shown, new_shown = rs.diff_texts(str(path), render.dump(secret), secret)
    assert old_shown == rs.REDACTED + '\n'
    assert 'bmV3' not in new_shown and rs.REDACTED_CHANGED in new_shown


def test_a_check_session_s_private_directory_goes_even_when_its_close_refuses(tmp_path, monkeypatch):
    # a --check render session keeps its lock in a private directory (gpuvirt-render-check-*) of the temporary
    # directory; a foreign file at a name the close would write stops the close (check_replaceable), and the
    # directory must go all the same
    temp = tmp_path / 'tmp'
    temp.mkdir()
    monkeypatch.setattr(rs.tempfile, 'tempdir', str(temp))
    dest = tmp_path / 'render'
    dest.mkdir()
    name = '60-a-000.yaml'
    (dest / name).write_text('kind: Secret\n')  # someone else's file at the rendered name
    token = rs.open_session(str(dest), 'site', pid=os.getpid(), check_mode=True)['session']
    assert rs.is_check_session(token) and [p.name[:len(rs.CHECK_DIR_PREFIX)] for p in temp.iterdir()] == [
        rs.CHECK_DIR_PREFIX]
    rs.record(str(dest), kubevirt(['A']), name, '60-a', 'kubevirt', session=token)
    with pytest.raises(render.RenderError, match='exists and was not written by this collection'):
        rs.close_session(str(dest), dump, session=token)
    assert list(temp.iterdir()) == []
    # nothing in the render directory changed
    assert sorted(os.listdir(dest)) == [name] and (dest / name).read_text() == 'kind: Secret\n'


def test_a_check_session_s_private_directory_goes_after_a_clean_close_too(tmp_path, monkeypatch):
    temp = tmp_path / 'tmp'
    temp.mkdir()
    monkeypatch.setattr(rs.tempfile, 'tempdir', str(temp))
    token = rs.open_session(str(tmp_path / 'render'), 'site', pid=os.getpid(), check_mode=True)['session']
    rs.record(str(tmp_path / 'render'), kubevirt(['A']), '60-a-000.yaml', '60-a', 'kubevirt', session=token)
    result = rs.close_session(str(tmp_path / 'render'), dump, session=token)
    assert result['written'] == ['60-a-000.yaml', 'kustomization.yaml', 'flux-5-kubevirt/kustomization.yaml'] and list(temp.iterdir()) == []


# -- the Flux group kustomizations --------------------------------------------------------------------------------

def _site_render(d, names):
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    for name in names:
        rs.record(d, configmap(name.rsplit('-', 1)[-1][:-5]), name, name[:5], 'nodes', session=token)
    return rs.close_session(d, dump, session=token)


def _tree(d):
    out = {}
    for top, _dirs, files in os.walk(d):
        for name in files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            out[os.path.relpath(path, d)] = (open(path, 'rb').read(), st.st_ino, st.st_mtime_ns)
    return out


def test_a_single_directory_render_migrates_to_the_flux_groups_once_then_writes_no_byte(tmp_path):
    d = str(tmp_path)
    names = ['30-nodes-configmap-x-a.yaml', '36-nfd-configmap-x-b.yaml', '60-kv-configmap-x-c.yaml']
    _site_render(d, names)
    # what a render of the collection before the Flux groups left: format 2, no flux record, no group directory
    manifest = json.loads((tmp_path / rs.MANIFEST).read_text())
    for group in manifest.pop('flux'):
        os.unlink(os.path.join(d, group, rs.KUSTOMIZATION))
        os.rmdir(os.path.join(d, group))
    manifest['format'] = 2
    (tmp_path / rs.MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + '\n')
    before = _tree(d)
    result = _site_render(d, names)
    groups = ['flux-1-nodes', 'flux-2-nfd', 'flux-5-kubevirt']
    assert result['written'] == ['%s/%s' % (group, rs.KUSTOMIZATION) for group in groups] and result['pruned'] == []
    after = _tree(d)
    # the objects and the top kustomization are not rewritten; the bookkeeping records the groups
    assert [name for name in before if before[name] != after[name]] == [rs.MANIFEST]
    manifest = json.loads((tmp_path / rs.MANIFEST).read_text())
    assert manifest['format'] == rs.FORMAT and sorted(manifest['flux']) == groups
    for group, name in zip(groups, names):
        assert yaml.safe_load((tmp_path / group / rs.KUSTOMIZATION).read_text())['resources'] == ['../' + name]
    # the next identical render: not one byte
    assert _site_render(d, names)['written'] == [] and _tree(d) == after


def test_a_flux_kustomization_a_killed_close_wrote_is_recovered_on_takeover(tmp_path):
    d = str(tmp_path)
    name = '60-kv-configmap-x-c.yaml'
    _site_render(d, [name])
    text = (tmp_path / 'flux-5-kubevirt' / rs.KUSTOMIZATION).read_text()
    # as if the first close was killed after writing the group's kustomization: the manifest does not know it, the
    # lock recorded it
    manifest = json.loads((tmp_path / rs.MANIFEST).read_text())
    manifest['flux'] = {}
    (tmp_path / rs.MANIFEST).write_text(json.dumps(manifest))
    token = rs.open_session(d, 'site', pid=os.getpid())['session']
    lock = json.loads((tmp_path / rs.LOCK).read_text())
    lock['writing_flux'] = {'flux-5-kubevirt': rs.sha256(text)}
    lock['token'] = '1' * 64
    (tmp_path / rs.LOCK).write_text(json.dumps(lock))
    assert token
    taken = rs.open_session(d, 'site', pid=os.getpid(), takeover=True)['session']
    # this render has no file of that group: the recovered kustomization is ours, so it is pruned
    result = rs.close_session(d, dump, session=taken)
    assert 'flux-5-kubevirt/%s' % rs.KUSTOMIZATION in result['pruned']
    assert not (tmp_path / 'flux-5-kubevirt').exists()


@pytest.mark.parametrize('version,warned', [(1, True), (2, False)])
def test_only_a_lock_that_records_no_files_it_wrote_is_warned_about_on_takeover(tmp_path, version, warned):
    # format 2 recorded what a close writes ("writing"); only format 1 did not. Bumping the format for the Flux
    # groups must not make a format-2 lock of the collection before it look like one that records nothing
    lock = {'format': version, 'owner': 'site', 'pid': dead_pid(), 'started': 1.0, 'writing': {},
            'objects': {'k': {'file': '60-kv-configmap-x-a.yaml', 'writer': 'w', 'phase': 'kubevirt',
                              'object': configmap('a')}}}
    if version == 1:
        del lock['writing']
    (tmp_path / rs.LOCK).write_text(json.dumps(lock))
    result = rs.open_session(str(tmp_path), 'site', pid=os.getpid(), takeover=True)
    assert bool([w for w in result['warnings'] if 'older format' in w]) is warned, result['warnings']
