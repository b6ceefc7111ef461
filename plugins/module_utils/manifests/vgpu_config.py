# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Custom vGPU device ConfigMap in vgpu-device-manager format, checked against the hosts' vGPU types. Pure Python.

Format (vgpu-device-manager v0.5): ``version: v1``, ``vgpu-configs: {<name>: [{devices: all|[i, ...],
vgpu-devices: {"A10-12Q": 2}}]}``; type names without the ``GRID ``/``NVIDIA `` prefix. The node label
``nvidia.com/vgpu.config=<name>`` selects one config per node.

A type no GPU offers would leave the node without vGPUs and the device manager in an error loop, so it is
refused here, naming the type and what each checked host and GPU does offer. Types are read from the
``mdev_types`` facts (mdev and vendor-specific VFIO parents alike); a host whose vGPU Manager is not loaded
yet (it is the GPU Operator that installs it) shows no types: its GPUs' board names are checked instead.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import fleet, validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.vgpu_names import (
    board_models, model_on_boards, reported_short_name, short_type_name, type_model)
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked

CONFIG_KEY = 'config.yaml'


short_name = short_type_name  # the name callers know it by


def normalise_configs(configs):
    """``{name: {type: count}}`` or ``{name: [{devices, vgpu-devices}]}`` -> the full format, short type names."""
    if not configs:
        raise ManifestError("gpu_operator_vgpu_configs is empty: give at least one config, e.g. "
                            "{A10-12Q: {A10-12Q: 2}}")
    out = {}
    for name, value in configs.items():
        # a config is chosen by the node label nvidia.com/vgpu.config=<name>: a label value
        checked(validators.label_value, name, 'gpu_operator_vgpu_configs name',
                hint='; nodes pick a vGPU config by the label nvidia.com/vgpu.config, so its name must be a label '
                     'value (e.g. A10-12Q)')
        entries = [{'devices': 'all', 'vgpu-devices': value}] if isinstance(value, dict) else value
        if not isinstance(entries, list) or not entries:
            raise ManifestError("vGPU config %s must be a map of type -> count or a list of {devices, vgpu-devices}"
                                % name)
        norm = []
        for entry in entries:
            devices = entry.get('devices', 'all')
            indices = isinstance(devices, list) and all(isinstance(i, int) and i >= 0 for i in devices)
            if devices != 'all' and not indices:
                raise ManifestError("vGPU config %s: devices %r must be 'all' or a list of GPU indices" % (name, devices))
            types = {}
            for vtype, count in (entry.get('vgpu-devices') or {}).items():
                if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                    raise ManifestError("vGPU config %s: count %r for %s must be a positive integer"
                                        % (name, count, vtype))
                types[short_type_name(str(vtype))] = count
            if not types:
                raise ManifestError("vGPU config %s has an entry without vgpu-devices" % name)
            norm.append({'devices': devices, 'vgpu-devices': types})
        out[str(name)] = norm
    return out


def config_types(entries):
    return sorted({t for entry in entries for t in entry['vgpu-devices']})


def _parents(host):
    mdev = ((host.get('facts') or {}).get('mdev_types')) or {}
    result = []
    for parent in mdev.get('parents') or []:
        names = sorted({reported_short_name(vt)
                        for vt in parent.get('types') or []} - {''})
        result.append((parent.get('parent') or parent.get('bdf') or '?', names))
    return result


def _boards(host):
    """pci.ids bracketed names of the host's GPUs: 'GA102GL [A10]' -> ('0000:41:00.0', {'A10'})."""
    out = []
    for gpu in ((host.get('facts') or {}).get('pci_devices') or {}).get('gpus') or []:
        if gpu.get('is_vf'):
            continue
        out.append((gpu.get('bdf'), gpu.get('device_name'), board_models([gpu])))
    return out


def host_offers(host, vtype):
    """``(offered, how, description)``: whether ``vtype`` is offered, 'types' or 'board' check, and what was seen."""
    parents = _parents(host)
    if any(names for dummy, names in parents):
        seen = '; '.join('%s offers %s' % (bdf, ', '.join(names) or 'nothing') for bdf, names in parents)
        return any(vtype in names for dummy, names in parents), 'types', seen
    model = type_model(vtype) or vtype
    boards = _boards(host)
    seen = '; '.join('%s %s' % (bdf, name) for bdf, name, dummy in boards) or 'no NVIDIA GPU in the facts'
    return any(model_on_boards(model, models) for dummy, dummy2, models in boards), 'board', seen


def validate(configs, hosts, default_config):
    """Check the configs against the vGPU hosts; return warnings, raise ManifestError listing every problem.

    ``hosts``: ``[{node, pool, vgpu_config, facts: {pci_devices, mdev_types}}]``; only ``vm-vgpu`` ones count.
    A node's selected config (``vgpu_config``, else ``default_config``) must exist and each of its types be
    offered on that node; a config no node selects must have each type offered by at least one vGPU host.
    """
    errors, warnings = [], []
    if default_config not in configs:
        errors.append("default vGPU config %r is not among the configs (%s); set gpu_operator_vgpu_config_default to "
                      "one of them" % (default_config, ', '.join(sorted(configs))))
    vgpu_hosts = [h for h in hosts if fleet.pool_traits(h.get('pool')).get('vgpu')]
    selected = set()
    for host in vgpu_hosts:
        name = host.get('vgpu_config') or default_config
        selected.add(name)
        if name not in configs:
            errors.append("node %s selects vGPU config %r which is not defined (configs: %s); fix gpuvirt_vgpu_config "
                          "or add it to gpu_operator_vgpu_configs" % (host['node'], name, ', '.join(sorted(configs))))
            continue
        for vtype in config_types(configs[name]):
            ok, how, seen = host_offers(host, vtype)
            if not ok:
                errors.append("vGPU type %s (config %s) is not offered by any GPU of node %s (checked: %s); pick a "
                              "type those GPUs offer" % (vtype, name, host['node'], seen))
            elif how == 'board':
                warnings.append("node %s shows no vGPU types yet (vGPU Manager not loaded): %s checked against its "
                                "boards only" % (host['node'], vtype))
    for name in sorted(set(configs) - selected):
        for vtype in config_types(configs[name]):
            checked = []
            for host in vgpu_hosts:
                ok, dummy, seen = host_offers(host, vtype)
                if ok:
                    break
                checked.append('%s (%s)' % (host['node'], seen))
            else:
                errors.append("vGPU type %s (config %s) is not offered by any GPU of the vGPU hosts (checked: %s); "
                              "remove it or pick a type those GPUs offer"
                              % (vtype, name, '; '.join(checked) or 'no host in gpu_vm_vgpu'))
    if errors:
        raise ManifestError('\n'.join(errors))
    return warnings


def render_config(configs):
    """The ``config.yaml`` text; every scalar is JSON-quoted, which YAML reads back exactly."""
    lines = ['version: v1', 'vgpu-configs:']
    for name in sorted(configs):
        lines.append('  %s:' % json.dumps(name))
        for entry in configs[name]:
            lines.append('    - devices: %s' % json.dumps(entry['devices']))
            lines.append('      vgpu-devices:')
            for vtype in sorted(entry['vgpu-devices']):
                lines.append('        %s: %d' % (json.dumps(vtype), entry['vgpu-devices'][vtype]))
    return '\n'.join(lines) + '\n'


def build_configmap(name, namespace, configs):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': namespace},
            'data': {CONFIG_KEY: render_config(configs)}}
