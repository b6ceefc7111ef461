# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manifest builders' shared pieces: one ManifestError, one version parser, validators as ManifestErrors,
and no builder reaching into another's private helpers."""
from __future__ import annotations

import ast
import importlib
import os

import pytest

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import common

BUILDERS = ('dra', 'gpu_operator', 'hco', 'kubevirt', 'machineconfig', 'node_labels', 'pull_secret', 'verify',
            'vgpu_config')
MANIFESTS_DIR = os.path.dirname(common.__file__)


@pytest.mark.parametrize('name', BUILDERS)
def test_every_builder_raises_the_one_manifest_error(name):
    mod = importlib.import_module('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.' + name)
    assert mod.ManifestError is common.ManifestError
    assert issubclass(mod.ManifestError, ValueError)


@pytest.mark.parametrize('name', BUILDERS + ('common',))
def test_no_builder_imports_another_modules_private_helper(name):
    tree = ast.parse(open(os.path.join(MANIFESTS_DIR, name + '.py')).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert not [a.name for a in node.names if a.name.startswith('_')], ast.dump(node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id.endswith('_mod'):
            assert not node.attr.startswith('_'), '%s uses %s.%s' % (name, node.value.id, node.attr)


@pytest.mark.parametrize('text,expected', [('1.8', (1, 8, 0)), ('v1.8.2', (1, 8, 2)), ('4.19.0-rc.1', (4, 19, 0)),
                                           (' 0.4.1+build ', (0, 4, 1))])
def test_version_tuple(text, expected):
    assert common.version_tuple(text) == expected


@pytest.mark.parametrize('text', [None, '', '1', 'one.two', '1.2.3.4'])
def test_version_tuple_refuses(text):
    with pytest.raises(common.ManifestError, match='MAJOR.MINOR'):
        common.version_tuple(text)


def test_checked_turns_a_validation_error_into_a_manifest_error():
    assert common.checked(validators.dns1123_label, 'gpu-pool', 'pool') == 'gpu-pool'
    with pytest.raises(common.ManifestError, match=r"pool: 'Bad_Name' is not valid.*; fix it"):
        common.checked(validators.dns1123_label, 'Bad_Name', 'pool', hint='; fix it')
    with pytest.raises(common.ManifestError, match=r'^just this$'):
        common.checked(validators.dns1123_subdomain, 'a..b', 'name', message='just this')


def test_merge_permitted_devices_keeps_an_emptied_list_and_reports_per_list():
    current = {'pciHostDevices': [{'sel': 'a', 'resourceName': 'x/a'}]}
    phd, owned, report = common.merge_permitted_devices(current, {'pciHostDevices': {}, 'mediatedDevices': {}},
                                                        (('pciHostDevices', 'sel'), ('mediatedDevices', 'm')),
                                                        {'pciHostDevices': ['a']})
    assert phd == {'pciHostDevices': []}
    assert owned == {}
    assert report['pciHostDevices']['removed'] == ['a'] and report['mediatedDevices']['added'] == []


def test_merge_owned_items_keeps_foreign_drops_unwanted_owned_and_duplicates():
    merged, owned = common.merge_owned_items(['A', 'B', 'A', 'C'], ['C', 'D'], ['B', 'C'])
    assert merged == ['A', 'C', 'D'] and owned == ['C', 'D']


def test_merge_owned_items_keeps_unkeyed_items_verbatim():
    ops = [{'op': 'remove', 'path': '/x'}, {'op': 'add', 'value': 'G'}, {'op': 'add', 'value': 'G'}]

    def key(op):
        return op['value'] if op['op'] == 'add' else common.UNKEYED

    merged, owned = common.merge_owned_items(ops, ['G', 'H'], [], key=key, make=lambda g: {'op': 'add', 'value': g})
    assert merged == [{'op': 'remove', 'path': '/x'}, {'op': 'add', 'value': 'G'}, {'op': 'add', 'value': 'H'}]
    assert owned == ['H']


def test_an_owned_entry_no_host_of_this_run_wants_is_kept_while_hosts_have_no_facts():
    ours = {'pciDeviceSelector': '10DE:2236', 'resourceName': 'nvidia.com/GA102GL_A10'}
    theirs = {'pciDeviceSelector': '8086:4940', 'resourceName': 'intel.com/QAT'}
    want = {'10DE:26B9': {'pciDeviceSelector': '10DE:26B9', 'resourceName': 'nvidia.com/AD102GL_L40S'}}
    # every VM host known: the A10 entry we added and no host wants any more goes
    merged, owned, report = common.merge_owned_list([theirs, ours], want, 'pciDeviceSelector', ['10DE:2236'])
    assert merged == [theirs, want['10DE:26B9']] and report['removed'] == ['10DE:2236']
    # hosts without facts in this run (keep_owned): it may be theirs, so it stays, and stays ours for a later run
    merged, owned, report = common.merge_owned_list([theirs, ours], want, 'pciDeviceSelector', ['10DE:2236'],
                                                    keep_owned=True)
    assert merged == [theirs, ours, want['10DE:26B9']] and owned == ['10DE:2236', '10DE:26B9']
    assert report['kept_owned'] == ['10DE:2236'] and report['removed'] == []


def test_a_render_without_the_live_object_is_refused_while_hosts_have_no_facts():
    common.unknown_hosts_check('', ['gpu-a10'], 'HyperConverged')
    common.unknown_hosts_check('no cluster read', [], 'HyperConverged')
    with pytest.raises(common.ManifestError, match='no GPU facts in this run for gpu-a10.*no cluster read'):
        common.unknown_hosts_check('no cluster read', ['gpu-a10'], 'HyperConverged')


def test_permitted_devices_warnings_kept_then_unmerged():
    report = {'pciHostDevices': {'kept_owned': ['10DE:2236']}, 'mediatedDevices': {'kept_owned': []}}
    obj = {'kind': 'KubeVirt', 'metadata': {'name': 'kubevirt', 'namespace': 'kubevirt'},
           'spec': {'configuration': {'permittedHostDevices': {'pciHostDevices': []}}}}
    lists = [(('spec', 'configuration', 'permittedHostDevices', 'pciHostDevices'), 'map')]
    kept = common.kept_warning('KubeVirt CR', report, ['gpu-9'])
    unmerged = common.unmerged_warning(obj, lists, 'set it')
    assert kept and unmerged
    assert common.permitted_devices_warnings('KubeVirt CR', obj, report, lists, ['gpu-9'], 'set it') == [kept, unmerged]
    # nothing read is no warning without live_unread (apply mode), and nothing kept none either
    assert common.permitted_devices_warnings('KubeVirt CR', obj, report, lists, ['gpu-9'], '') == [kept]
    none_kept = {'pciHostDevices': {'kept_owned': []}, 'mediatedDevices': {'kept_owned': []}}
    assert common.permitted_devices_warnings('KubeVirt CR', obj, none_kept, lists, [], '') == []
