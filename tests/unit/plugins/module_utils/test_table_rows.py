# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pool kind and a platform are rows: a hypothetical pool and a hypothetical platform, added to the tables at run
time, carry the example inventory through a render (the same Python the roles run: the fleet view, the node
labels, the devices KubeVirt permits, the GPU Operator's objects, the rendered file names) with no other change.
Every property is asserted for every row, so the tests hold for rows that do not exist yet."""
from __future__ import annotations

import copy
import json
import os

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, platform
from ansible_collections.gpuvirt.provision.plugins.module_utils.render import render
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import wanted_devices as wd
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt as kv
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import node_labels as nl
from ansible_collections.gpuvirt.provision.plugins.modules import gpu_operator_manifests

from ..modules.harness import run_module, settings_args

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
EXAMPLE = os.path.join(ROOT, 'inventories', 'example')
MCP = 'gpu-worker'

# A pool of SR-IOV virtual functions passed to VMs and advertised by KubeVirt's own device plugin: every column
# but the name and group differs from vm-passthrough's in a way some code must follow.
VF_POOL = fleet.Pool(name='vm-passthrough-vf', group='gpu_vm_passthrough_vf', workload='vm-passthrough', iommu=True,
                     host_vfio=True, resource='pci', advertiser='kubevirt', function='vf', permitted='pciHostDevices')
# k3s: Kubernetes with containerd under /var/lib/rancher/k3s and its socket under /run/k3s (the paths
# NVIDIA/gpu-operator v26.7.0 controllers/transforms_test.go gives a k3s node's toolkit), put BEFORE kubernetes: it
# must not become the fallback.
K3S = platform.PLATFORMS['kubernetes'].replace(
    name='k3s-hypothetical', containerd_config='/var/lib/rancher/k3s/agent/etc/containerd/config.toml',
    containerd_socket='/run/k3s/containerd/containerd.sock', fallback=False)
VF_HOST = 'gpu-f01.example.com'


def gop_args(args):
    # the module's settings and reads, split (the arguments given flat)
    return settings_args(args, gpu_operator_manifests.READS)


def use_tables(monkeypatch, pools, platforms):
    for module, table in ((fleet, pools), (platform, platforms)):
        for name, value in module.derived(table).items():
            monkeypatch.setattr(module, name, value)


def example_inventory(extra_groups=None):
    """The example inventory's groups and hostvars as Ansible's own inventory loader reads them (hosts.yml with its
    group ``vars:``, group_vars/ and host_vars/, so a value set for a group reaches its hosts here as in a run), with
    the saved facts of its hosts (as the playbooks load them from inventories/example/.gpuvirt_facts)."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[EXAMPLE])
    variables = VariableManager(loader=loader, inventory=inventory)
    groups = dict((name, [h.name for h in group.get_hosts()]) for name, group in inventory.groups.items()
                  if name not in ('all', 'ungrouped'))
    hostvars = dict((host.name, dict(variables.get_vars(host=host, include_hostvars=False)))
                    for host in inventory.get_hosts())
    for group, hosts in (extra_groups or {}).items():
        groups[group] = list(hosts)
        hostvars.update(hosts)
    for host, hv in hostvars.items():
        path = os.path.join(EXAMPLE, '.gpuvirt_facts', host + '.json')
        if os.path.exists(path):
            with open(path, encoding='utf-8') as handle:
                saved = json.load(handle)
            hv.update((k, saved[k]) for k in ('gpuvirt_pci_devices', 'gpuvirt_mdev_types') if k in saved)
    return groups, hostvars


def vf_host_facts():
    """gpu-v01's A10 with one SR-IOV VF beside it (a synthetic fact for the hypothetical pool: the VF's device id
    made distinct, so the entry it gives is told from the PF's)."""
    with open(os.path.join(EXAMPLE, '.gpuvirt_facts', 'gpu-v01.example.com.json'), encoding='utf-8') as handle:
        pci = json.load(handle)['gpuvirt_pci_devices']
    pci = copy.deepcopy(pci)
    vf = dict(pci['gpus'][0], bdf='0000:65:00.4', device_id='2237', is_vf=True, physfn=pci['gpus'][0]['bdf'])
    pci['gpus'].append(vf)
    return {'gpuvirt_pci_devices': pci, 'gpuvirt_mdev_types': {'parents': []}}


def render_fleet(groups, hostvars):
    """The fleet view, the node label patches and the devices KubeVirt permits, as a render computes them."""
    view = fleet.gpu_hosts(hostvars, groups)
    wanted = [{'host': h['host'], 'node': h['node'], 'pool': h['pool'], 'vgpu_config': h['vgpu_config'],
               'facts': h['facts']} for h in view]
    patches, _report = nl.plan(wanted, None, [], pool_selector=mc.pool_selector(MCP))
    devices = wd.wanted_devices([h for h in view if h['traits']['permitted'] and h['gathered']])
    return view, dict((p['metadata']['name'], p['metadata']['labels']) for p in patches), devices


def check_every_row(view, labels, devices):
    """The per-row properties: each pool's hosts get their workload label, the pool's MachineConfigPool label
    where the row needs the IOMMU, and their devices in the KubeVirt list the row names."""
    assert view and set(h['pool'] for h in view) <= set(fleet.POOLS)
    for host in view:
        row = fleet.BY_NAME[host['pool']]
        assert host['traits'] == row.as_dict()
        assert labels[host['node']][nl.WORKLOAD_LABEL] == row.workload
        selector = mc.pool_selector(MCP)
        assert all((labels[host['node']].get(k) == v) is row.iommu for k, v in selector.items())
        listed = [e for lst in devices.values() for e in lst if host['node'] in e['nodes']]
        if row.permitted and host['gathered']:
            wanted_list = wd.PERMITTED[row.permitted][0]
            assert listed and all(e in devices[wanted_list] for e in listed)
            assert all(e.get('external', True) is fleet.ADVERTISERS[row.advertiser] for e in listed)
        else:
            assert not listed


def test_the_example_inventory_renders_with_every_row_s_properties():
    groups, hostvars = example_inventory()
    check_every_row(*render_fleet(groups, hostvars))


def test_a_hypothetical_pool_and_platform_render_the_example(monkeypatch, tmp_path):
    use_tables(monkeypatch, fleet.POOL_TABLE + (VF_POOL,), (K3S,) + platform.PLATFORM_TABLE)
    # the fallback is the marked row, not the first row without detect_api
    assert platform.detected_platform([]) == 'kubernetes' and 'k3s-hypothetical' in platform.PLATFORM_CHOICES

    groups, hostvars = example_inventory({VF_POOL.group: {VF_HOST: vf_host_facts()}})
    view, labels, devices = render_fleet(groups, hostvars)
    check_every_row(view, labels, devices)
    (vf,) = [h for h in view if h['pool'] == VF_POOL.name]
    assert vf['node'] == 'gpu-f01' and vf['groups'] == [VF_POOL.group]
    # a pool of VFs permits its VFs, and KubeVirt's own device plugin serves them (externalResourceProvider false)
    entry = [e for e in devices['pci_devices'] if e['nodes'] == ['gpu-f01']]
    assert [e['selector'] for e in entry] == ['10DE:2237']
    kubevirt_cr = kv.build_kubevirt(None, devices['pci_devices'], devices['mediated_devices'], version='v1.9.0')[0]
    pci = kubevirt_cr['spec']['configuration']['permittedHostDevices']['pciHostDevices']
    assert [e['externalResourceProvider'] for e in pci if e['pciVendorSelector'] == '10DE:2237'] == [False]
    assert all(e['externalResourceProvider'] for e in pci if e['pciVendorSelector'] != '10DE:2237')

    # the platform: resolved from the settings, its traits build the GPU Operator's objects
    cluster = platform.resolve({'mode': 'render', 'render_dir': str(tmp_path), 'platform': 'k3s-hypothetical'})
    assert cluster['traits'] == K3S.as_dict() and cluster['kubevirt_config'] == 'kubevirt'
    hosts = [{'node': h['node'], 'pool': h['pool'], 'vgpu_config': h['vgpu_config'],
              'facts': {'pci_devices': h['facts']['pci_devices'], 'mdev_types': h['facts']['mdev_types']}}
             for h in view]
    res = run_module(monkeypatch, gpu_operator_manifests, gop_args({
        'platform': cluster['platform'], 'platform_traits': cluster['traits'], 'default_workload': 'vm-passthrough',
        'hosts': hosts}))
    assert not res['failed'], res.get('msg')
    assert res['namespace'] == K3S.gpu_operator_namespace and res['cluster_policy'] is None
    assert res['helm_values']['toolkit']['env'] == [
        {'name': 'CONTAINERD_CONFIG', 'value': K3S.containerd_config},
        {'name': 'CONTAINERD_SOCKET', 'value': K3S.containerd_socket}]
    objects = res['install_objects'] + [kubevirt_cr]
    names = render.file_names(objects, '10-k3s-hypothetical')
    assert len(set(names)) == len(objects)


def test_the_rke2_row_points_the_toolkit_at_rke2_s_containerd_socket_only(monkeypatch):
    # RKE2's "Deploy NVIDIA Operator" (rancher/rke2-docs docs/add-ons/gpu_operators.md) gives the chart exactly
    # toolkit.env CONTAINERD_SOCKET=/run/k3s/containerd/containerd.sock for every operator release it lists; RKE2
    # writes the nvidia runtimes into its own containerd config (k3s runtimes.go findNvidiaContainerRuntimes), so
    # CONTAINERD_CONFIG stays at the operator's default and is not set
    cluster = platform.resolve({'mode': 'render', 'render_dir': '/o', 'platform': 'rke2'})
    res = run_module(monkeypatch, gpu_operator_manifests, gop_args({
        'platform': 'rke2', 'platform_traits': cluster['traits'], 'default_workload': 'vm-passthrough'}))
    assert not res['failed'], res.get('msg')
    assert res['namespace'] == 'gpu-operator' and res['cluster_policy'] is None and res['helm_values']
    assert res['helm_values']['toolkit'] == {'env': [{'name': 'CONTAINERD_SOCKET',
                                                      'value': '/run/k3s/containerd/containerd.sock'}]}
    assert cluster['kubevirt_config'] == 'kubevirt' and cluster['traits']['kernel_args'] == 'host'


def test_the_kubernetes_row_adds_no_toolkit_env_but_an_inventory_override_does(monkeypatch):
    # the row's paths are the GPU Operator's defaults: nothing to say (the golden renders hold)
    base = {'platform': 'kubernetes', 'default_workload': 'vm-passthrough'}
    res = run_module(monkeypatch, gpu_operator_manifests, gop_args(base))
    assert not res['failed'] and 'toolkit' not in res['helm_values']
    traits = platform.with_overrides('kubernetes', {'containerd_socket': K3S.containerd_socket})
    res = run_module(monkeypatch, gpu_operator_manifests, gop_args(dict(base, platform_traits=traits)))
    assert res['helm_values']['toolkit'] == {'env': [{'name': 'CONTAINERD_SOCKET', 'value': K3S.containerd_socket}]}
    # the traits of another platform are refused, naming both
    res = run_module(monkeypatch, gpu_operator_manifests, gop_args(dict(base, platform_traits=platform.traits('openshift'))))
    assert res['failed'] and "platform_traits are those of 'openshift', not of the platform 'kubernetes'" in res['msg']
