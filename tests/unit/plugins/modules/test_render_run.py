# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A whole render run through the modules, as the playbooks drive them (render_open.yml, the roles'
render_manifests / render_file, render_close.yml), into a real directory: byte-stable, check mode that previews
exactly what the real run then does, file names that one host more does not shift, and a close that says where it
wrote and names every file it deleted."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import tempfile

from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render_session as rs
from ansible_collections.gpuvirt.provision.plugins.modules import render_file, render_manifests, render_session

from .harness import run_module


def node(name):
    labels = {'nvidia.com/gpu.workload.config': 'vm-passthrough'}
    return {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': name, 'labels': labels}}


def kubevirt(gates):
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
            'spec': {'configuration': {'developerConfiguration': {'featureGates': gates}}}}


def configmap(data):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cfg', 'namespace': 'nvidia-gpu-operator'},
            'data': data}


INPUTS = {'hosts': ['gpu-p01', 'gpu-p02'], 'data': {'a': '1'}, 'values': 'driver: {version: "580"}\n'}


def run(monkeypatch, dest, inputs, check=False, diff=True):
    """One render run of the phases the example renders (node labels, a ConfigMap, the KubeVirt CR from two roles,
    Helm values); returns the results of the close and every render step."""
    opened = run_module(monkeypatch, render_session, dict(dest=str(dest), owner='site'), check=check)
    assert not opened['failed'], opened
    token = opened['session']
    steps = []
    for prefix, phase, objects in (('30-node-labels', 'nodes', [node(h) for h in inputs['hosts']]),
                                   ('42-gpu-operator-config', 'operator', [configmap(inputs['data'])]),
                                   ('60-kubevirt-devices', 'kubevirt', [kubevirt(['HostDevices'])]),
                                   ('71-dra-gate', 'kubevirt', [kubevirt(['GPUsWithDRA'])])):
        steps.append(run_module(monkeypatch, render_manifests, dict(dest=str(dest), objects=objects, prefix=prefix,
                                                                    phase=phase, session=token), check=check, diff=diff))
    steps.append(run_module(monkeypatch, render_file, dict(dest=str(dest), name='43-gpu-operator-helm-values-gpu-operator.yaml',
                                                           content=inputs['values'], phase='operator', session=token),
                            check=check, diff=diff))
    assert not [step for step in steps if step['failed']], steps
    closed = run_module(monkeypatch, render_session, dict(dest=str(dest), owner='site', state='closed', session=token),
                        check=check, diff=diff)
    assert not closed['failed'], closed
    return closed, steps


def state(dest):
    """Every file below the directory (the Flux groups' kustomizations too): its bytes, inode and modification time (a
    rewrite of the same bytes shows)."""
    out = {}
    for top, _dirs, files in os.walk(str(dest)):
        for name in files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            with open(path, 'rb') as handle:
                out[os.path.relpath(path, str(dest))] = (handle.read(), st.st_ino, st.st_mtime_ns, st.st_mode)
    return out


def check_dirs():
    return glob.glob(os.path.join(tempfile.gettempdir(), rs.CHECK_DIR_PREFIX + '*'))


def test_a_second_identical_render_reports_no_change_and_rewrites_no_byte(monkeypatch, tmp_path):
    dest = tmp_path / 'render'
    dest.mkdir()
    first, _steps = run(monkeypatch, dest, INPUTS)
    assert first['changed'] and not (dest / rs.LOCK).exists()
    before = state(dest)
    assert rs.MANIFEST in before and 'kustomization.yaml' in before
    os.utime(str(dest), ns=(1, 1))  # a file created or removed in the directory would change its mtime
    second, steps = run(monkeypatch, dest, INPUTS)
    assert second['changed'] is False and second['written'] == [] and second['pruned'] == []
    assert not [step for step in steps if step['changed']]
    # not one file rewritten, not even the bookkeeping (it records no time): same bytes, same inode, same mtime
    assert state(dest) == before
    assert b'finished' not in before[rs.MANIFEST][0]


def test_check_mode_on_an_up_to_date_render_reports_no_change_and_no_diff(monkeypatch, tmp_path):
    dest = tmp_path / 'render'
    dest.mkdir()
    run(monkeypatch, dest, INPUTS)
    before = state(dest)
    closed, steps = run(monkeypatch, dest, INPUTS, check=True)
    # every object carries the sync wave and the GitOps annotations the real close writes, and the KubeVirt CR the
    # feature gates of both of its writers: nothing differs, so nothing is shown
    assert closed['changed'] is False and 'diff' not in closed, closed
    assert not [step for step in steps if step['changed'] or 'diff' in step], steps
    assert state(dest) == before and check_dirs() == []


def test_check_mode_previews_exactly_the_change_the_real_run_then_makes(monkeypatch, tmp_path):
    dest = tmp_path / 'render'
    dest.mkdir()
    run(monkeypatch, dest, INPUTS)
    changed = {'hosts': ['gpu-p01', 'gpu-p03'], 'data': {'a': '2'}, 'values': 'driver: {version: "590"}\n'}
    before = state(dest)
    preview, _steps = run(monkeypatch, dest, changed, check=True)
    assert state(dest) == before and check_dirs() == []  # nothing written, nothing deleted, no lock left
    real, _steps = run(monkeypatch, dest, changed)
    assert preview['changed'] is real['changed'] is True
    for key in ('written', 'pruned', 'files', 'diff', 'dest'):
        assert preview[key] == real[key], key
    assert real['pruned'] == ['30-node-labels-node-cluster-gpu-p02.yaml']
    assert preview['msg'].startswith('Render directory %s: would write %d of ' % (dest, len(real['written'])))
    assert 'would delete 1 file(s) an earlier render wrote and this one does not: %s.' % real['pruned'][0] \
        in preview['msg']


def test_check_mode_of_a_first_render_into_a_missing_directory_lists_every_file(monkeypatch, tmp_path):
    preview, _steps = run(monkeypatch, tmp_path / 'new', INPUTS, check=True)
    assert not (tmp_path / 'new').exists() and check_dirs() == []
    real, _steps = run(monkeypatch, (tmp_path / 'new').mkdir() or tmp_path / 'new', INPUTS)
    assert preview['written'] == real['written'] and preview['diff'] == real['diff']


def test_one_host_more_adds_its_file_and_renames_none(monkeypatch, tmp_path):
    dest = tmp_path / 'render'
    dest.mkdir()
    run(monkeypatch, dest, INPUTS)
    before = set(os.listdir(str(dest)))
    closed, _steps = run(monkeypatch, dest, dict(INPUTS, hosts=['gpu-p00', 'gpu-p01', 'gpu-p02']))
    assert set(os.listdir(str(dest))) - before == {'30-node-labels-node-cluster-gpu-p00.yaml'}
    assert before - set(os.listdir(str(dest))) == set() and closed['pruned'] == []
    assert closed['written'] == ['30-node-labels-node-cluster-gpu-p00.yaml', 'kustomization.yaml',
                                 'flux-1-nodes/kustomization.yaml']


def test_the_close_names_the_absolute_directory_and_every_file_it_deleted(monkeypatch, tmp_path):
    dest = tmp_path / 'render'
    dest.mkdir()
    run(monkeypatch, dest, dict(INPUTS, hosts=['gpu-p01', 'gpu-p02', 'gpu-p03']))
    monkeypatch.chdir(str(tmp_path))
    closed, _steps = run(monkeypatch, 'render', dict(INPUTS, hosts=['gpu-p01']))
    assert closed['dest'] == str(dest) and os.path.isabs(closed['dest'])
    assert closed['pruned'] == ['30-node-labels-node-cluster-gpu-p02.yaml', '30-node-labels-node-cluster-gpu-p03.yaml']
    # kustomization.yaml and flux-1-nodes/kustomization.yaml, whose lists lost the two files
    assert closed['msg'].startswith('Render directory %s: wrote 2 of ' % dest), closed['msg']
    for name in closed['pruned']:
        assert name in closed['msg'] and not (dest / name).exists()
