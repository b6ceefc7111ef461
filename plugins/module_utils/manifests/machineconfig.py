# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenShift/RHCOS host preparation as MachineConfig: IOMMU kernel arguments and the nouveau blacklist,
optionally a dedicated MachineConfigPool; and the evaluation of a pool's rollout status. Pure Python.

RHCOS hosts are not edited over SSH: the Machine Config Operator renders every MachineConfig selected by
a pool into one config and rolls it out node by node (drain, write, reboot). We hand it one MachineConfig
and then watch the pool's counters until every machine runs the rendered config that includes ours.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import hashlib
import json

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline, modprobe
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError, checked

MC_API_VERSION = 'machineconfiguration.openshift.io/v1'
ROLE_LABEL = 'machineconfiguration.openshift.io/role'
IGNITION_VERSION = '3.2.0'
NOUVEAU_PATH = '/etc/modprobe.d/blacklist-nouveau.conf'
# the nouveau role's lines without its header comment: the file Ignition writes stays as it always was
NOUVEAU_TEXT = modprobe.blacklist_text('nouveau')
BUILTIN_POOLS = ('master', 'worker')
# What the machine-config-daemon writes on each Node (openshift/machine-config-operator,
# pkg/daemon/constants/constants.go): the rendered config it runs, the one it is told to run, and its state
# ("Done" once the desired config is applied and the node rebooted into it).
CURRENT_CONFIG = 'machineconfiguration.openshift.io/currentConfig'
DESIRED_CONFIG = 'machineconfiguration.openshift.io/desiredConfig'
MCD_STATE = 'machineconfiguration.openshift.io/state'


def check_name(value, what):
    return checked(validators.dns1123_label, value, what,
                   message="%s %r is not a DNS label (lower-case letters, digits and '-')" % (what, value))


def iommu_kernel_args(cpu_vendor, passthrough_mode=True, extra=()):
    """``intel_iommu=on`` (Intel) or ``amd_iommu=on`` (AMD), plus ``iommu=pt``: the same arguments as the SSH path
    (``kernel_cmdline.iommu_args``).

    ``amd_iommu=on`` is no option of the AMD IOMMU driver (it knows fullflush, off, force_isolation, force_enable,
    pgtbl_v1, pgtbl_v2, irtcachedis and nohugepages and logs "Unknown option" for anything else: the Linux kernel's
    Documentation/admin-guide/kernel-parameters.txt, amd_iommu=; drivers/iommu/amd/init.c
    parse_amd_iommu_options); the AMD IOMMU is on whenever the firmware describes it. The word is kept on purpose:
    it changes nothing on the host, and taking it out of a MachineConfig that is already applied would make the
    MCO drain and reboot every node of the pool for no effect (the SSH path's hosts carry it too)."""
    if not isinstance(cpu_vendor, str) or cpu_vendor not in kernel_cmdline.IOMMU_ARGS:
        raise ManifestError("CPU vendor %r is not intel or amd" % (cpu_vendor,))
    if extra is not None and not isinstance(extra, (list, tuple)):
        raise ManifestError("extra kernel arguments are %r; expected a list of arguments" % (extra,))
    args = kernel_cmdline.iommu_args(cpu_vendor, passthrough_mode) + list(extra or [])
    for arg in args:
        if not isinstance(arg, str) or not kernel_cmdline.ARG_RE.fullmatch(arg):  # these strings reach the boot loader
            raise ManifestError("kernel argument %r is not allowed: only letters, digits and _ . , : = + / @ %% -"
                                % (arg,))
    try:  # the same parameters the host backends take (kernel_cmdline's allow-list): the MCO sets them on every node
        kernel_cmdline.validate_args(args)
    except kernel_cmdline.CmdlineError as e:
        raise ManifestError(str(e))
    seen, out = set(), []
    for arg in args:  # a duplicate would be appended twice to the command line
        if arg not in seen:
            seen.add(arg)
            out.append(arg)
    return out


def data_url(text):
    """Ignition file contents: a base64 data URL (no escaping pitfalls with newlines or '#')."""
    return 'data:text/plain;charset=utf-8;base64,' + base64.b64encode(text.encode('utf-8')).decode('ascii')


def decode_data_url(url):
    head, payload = url.split(',', 1) if ',' in url else (url, '')
    if not head.startswith('data:') or not head.endswith(';base64'):
        raise ValueError('not a base64 data URL: %r' % url)
    return base64.b64decode(payload).decode('utf-8')


def build_machineconfig(pool, kernel_args, blacklist_nouveau=True, name=None, ignition_version=IGNITION_VERSION):
    """One MachineConfig for ``pool`` with ``kernel_args`` and, when asked, the nouveau blacklist file."""
    check_name(pool, 'MachineConfigPool')
    name = check_name(name or '100-%s-gpuvirt-iommu' % pool, 'MachineConfig name')
    if not kernel_args and not blacklist_nouveau:
        raise ManifestError("MachineConfig %s would be empty: give kernel arguments or blacklist nouveau" % name)
    config = {'ignition': {'version': ignition_version}}
    if blacklist_nouveau:
        config['storage'] = {'files': [{
            'path': NOUVEAU_PATH,
            'mode': 0o644,
            'overwrite': True,
            'contents': {'source': data_url(NOUVEAU_TEXT)},
        }]}
    spec = {'config': config}
    if kernel_args:
        spec['kernelArguments'] = list(kernel_args)
    return {
        'apiVersion': MC_API_VERSION,
        'kind': 'MachineConfig',
        'metadata': {'name': name, 'labels': {ROLE_LABEL: pool}},
        'spec': spec,
    }


# Render mode: a MachineConfig whose content changes gets a new name. After an edit, the pool keeps reading Updated,
# with every machine updated, until the render controller has rendered the edit (it waits at least renderDelay,
# 5 s: openshift/machine-config-operator pkg/controller/render/render_controller.go) and the node controller has
# started to roll it out; a GitOps health check read at once would pass before any node drained. The pool's
# status.configuration.source lists the MachineConfigs its current rendered config was made from
# (openshift/api machineconfiguration/v1 types.go MachineConfigPoolStatusConfiguration.Source, a list of
# ObjectReferences), and the node controller copies spec.configuration there only once every machine runs it
# (pkg/controller/node/status.go calculateStatus). So with the content in the name, "source lists our name" means
# "the pool runs our content"; the health checks of docs/gitops/ read the expected name from the pool's annotation
# EXPECTED_CONFIG_ANNOTATION. The old name leaves the render and Argo CD / Flux prune it (MachineConfig is owned,
# render/gitops.py KINDS). Apply mode keeps the fixed name: nothing would prune the old object there (the
# k8s_objects role creates and patches), and its wait recognises an edit by the rendered configs' content
# (rendered_with).
EXPECTED_CONFIG_ANNOTATION = 'gpuvirt.provision/expected-machineconfig'
CONTENT_HASH_LENGTH = 10


def content_hash(machineconfig):
    """The first CONTENT_HASH_LENGTH hex digits of the sha256 of what the Machine Config Operator merges from
    ``machineconfig``: its ``spec`` and its role label (JSON, keys sorted). Annotations (the render's sync wave and
    GitOps options) and the name are not part of it."""
    meta = (machineconfig or {}).get('metadata') or {}
    content = {'role': (meta.get('labels') or {}).get(ROLE_LABEL), 'spec': (machineconfig or {}).get('spec') or {}}
    text = json.dumps(content, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:CONTENT_HASH_LENGTH]


def with_content_name(machineconfig):
    """A copy of ``machineconfig`` named ``<its name>-<content_hash>`` (render mode): a content change is a new
    object. The name is checked as the object name it is (a DNS subdomain)."""
    out = copy.deepcopy(machineconfig)
    name = '%s-%s' % (out['metadata']['name'], content_hash(machineconfig))
    out['metadata']['name'] = checked(validators.dns1123_subdomain, name, 'MachineConfig name (with its content hash)')
    return out


def expecting(pool, machineconfig_name):
    """A copy of the MachineConfigPool object ``pool`` annotated with the MachineConfig it must run before a health
    check reports it healthy (EXPECTED_CONFIG_ANNOTATION; render mode, on the dedicated pool the render owns)."""
    out = copy.deepcopy(pool)
    meta = out.setdefault('metadata', {})
    meta['annotations'] = dict(meta.get('annotations') or {}, **{EXPECTED_CONFIG_ANNOTATION: machineconfig_name})
    return out


# The vGPU VF profile restore as a MachineConfig (vendor-specific VFIO hosts on OpenShift): the unit and its script
# at paths the MCO writes. Not under /usr/local (a link into /var on RHCOS) and not /usr (read-only there): /etc,
# which the MCO owns and writes through Ignition's storage.files.
VGPU_VF_UNIT = 'gpuvirt-vgpu-vf.service'
VGPU_VF_SCRIPT_PATH = '/etc/gpuvirt/vgpu-vf-restore'
VGPU_VF_CONFIG_PATH = '/etc/gpuvirt/vgpu-vf-profiles.json'
# The labels that mark a VF MachineConfig as the collection's: only such an object is ever deleted (vgpu_vf_stale),
# when no vendor-VFIO host is left in its pool.
VGPU_VF_OWNER_LABELS = {'app.kubernetes.io/managed-by': 'gpuvirt.provision',
                        'gpuvirt.provision/machineconfig': 'vgpu-vf'}


def build_vgpu_vf_machineconfig(pool, script_text, python='/usr/bin/python3', timeout=300, config=None, name=None,
                                ignition_version=IGNITION_VERSION):
    """One MachineConfig for ``pool`` carrying the vgpu_vf role's boot-time restore: its systemd unit (enabled,
    Ignition systemd.units) and its script (0755), and, when ``config`` is given (the role's boot-time config, a
    module ``persist`` result), the config the unit reads (0644). The unit text is the role's own
    (``vgpu_vf_profiles.unit_text``) naming the paths this MachineConfig writes, so the two cannot disagree; its
    ``ConditionPathExists`` keeps it a no-op on a node without a config. Inputs are checked as
    ``build_machineconfig`` checks its own: the pool and name as DNS labels, the script as the role's (it carries the
    role's marker), the interpreter and timeout by the unit's grammar, the config by the role's config grammar."""
    check_name(pool, 'MachineConfigPool')
    name = check_name(name or '100-%s-gpuvirt-vgpu-vf' % pool, 'MachineConfig name')
    if not isinstance(script_text, str) or vvp.MARKER not in script_text:
        raise ManifestError("the vGPU VF restore script is %s; expected the vgpu_vf role's script "
                            "(roles/vgpu_vf/files/gpuvirt_vgpu_vf_restore.py, which carries %r)"
                            % ('not text' if not isinstance(script_text, str) else 'another text', vvp.MARKER))
    try:
        unit = vvp.unit_text('/etc/systemd/system/' + VGPU_VF_UNIT, VGPU_VF_SCRIPT_PATH, VGPU_VF_CONFIG_PATH,
                             python, timeout, on_host=False)
        files = [{'path': VGPU_VF_SCRIPT_PATH, 'mode': 0o755, 'overwrite': True,
                  'contents': {'source': data_url(script_text)}}]
        if config is not None:
            # the config's own paths, checked by the role's grammar (checked_persist checks the rest)
            paths = config if isinstance(config, dict) else {}
            checked_config = vvp.checked_persist(config, paths.get('sysfs_root'), paths.get('sriov_manage'), timeout)
            files.append({'path': VGPU_VF_CONFIG_PATH, 'mode': 0o644, 'overwrite': True,
                          'contents': {'source': data_url(json.dumps(checked_config, indent=4, sort_keys=True) + '\n')}})
    except vvp.VfProfileError as e:
        raise ManifestError('MachineConfig %s: %s' % (name, e))
    return {
        'apiVersion': MC_API_VERSION,
        'kind': 'MachineConfig',
        'metadata': {'name': name, 'labels': dict(VGPU_VF_OWNER_LABELS, **{ROLE_LABEL: pool})},
        'spec': {'config': {
            'ignition': {'version': ignition_version},
            'storage': {'files': files},
            'systemd': {'units': [{'name': VGPU_VF_UNIT, 'enabled': True, 'contents': unit}]},
        }},
    }


def vgpu_vf_stale(machineconfigs, keep_pools):
    """The collection's VF MachineConfigs (``machineconfigs``: the cluster's MachineConfig objects) whose pool holds
    no vendor-VFIO host any more (not in ``keep_pools``), as ``[{name, pool, uid, resource_version}]`` sorted by
    name: the run deletes each (by its uid and resourceVersion, so only the object read here). Ours means: carrying
    VGPU_VF_OWNER_LABELS and a role label, and the unit VGPU_VF_UNIT in its config; any other MachineConfig (one an
    administrator wrote, one that only shares the name) is never listed."""
    if not isinstance(machineconfigs, list) or not isinstance(keep_pools, (list, tuple)):
        raise ManifestError('expected the MachineConfig objects and the pools to keep as lists')
    for pool in keep_pools:
        check_name(pool, 'MachineConfigPool to keep')
    out = []
    for obj in machineconfigs:
        meta = (obj.get('metadata') or {}) if isinstance(obj, dict) else {}
        labels = meta.get('labels') or {}
        if any(labels.get(k) != v for k, v in VGPU_VF_OWNER_LABELS.items()) or not labels.get(ROLE_LABEL):
            continue
        units = ((((obj.get('spec') or {}).get('config') or {}).get('systemd') or {}).get('units') or [])
        if not any(isinstance(u, dict) and u.get('name') == VGPU_VF_UNIT for u in units):
            continue
        pool = labels[ROLE_LABEL]
        if pool in keep_pools:
            continue
        name = checked(validators.dns1123_subdomain, meta.get('name'), 'MachineConfig name')
        uid, version = meta.get('uid'), meta.get('resourceVersion')
        if not isinstance(uid, str) or not uid or not isinstance(version, str) or not version:
            raise ManifestError('MachineConfig %s has no uid or resourceVersion: pass the objects as read from the '
                                'cluster' % name)
        out.append({'name': name, 'pool': pool, 'uid': uid, 'resource_version': version})
    return sorted(out, key=lambda item: item['name'])


def _selects(selector, labels):
    """Whether a LabelSelector (``matchLabels`` and ``matchExpressions`` with In, NotIn, Exists, DoesNotExist)
    selects a node with ``labels``; an empty or missing selector selects nothing here (a pool without a node
    selector holds no node the MCO rolls to)."""
    if not isinstance(selector, dict) or not (selector.get('matchLabels') or selector.get('matchExpressions')):
        return False
    for key, value in (selector.get('matchLabels') or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get('matchExpressions') or []:
        key, op, values = expr.get('key'), expr.get('operator'), expr.get('values') or []
        if op == 'In' and labels.get(key) not in values:
            return False
        if op == 'NotIn' and key in labels and labels[key] in values:
            return False
        if op == 'Exists' and key not in labels:
            return False
        if op == 'DoesNotExist' and key in labels:
            return False
        if op not in ('In', 'NotIn', 'Exists', 'DoesNotExist'):
            return False
    return True


# How the Machine Config Operator assigns a Node to pools: every pool whose spec.nodeSelector selects the node (an
# empty selector selects none), then: two custom pools -> the node is refused ("node X belongs to N custom roles,
# cannot proceed with this Node"); one custom pool -> that pool, then worker when worker selects it too (custom pools
# take their nodes from worker); a custom pool and master -> OpenShift 4.14 and later keep the node in master and
# never apply the custom pool's configuration, 4.13 and older refuse it ("node X has both master role and custom role
# Y"); master (with or without worker: compact and single-node clusters) -> master; else worker. A Windows node is in
# no pool. Sources: openshift/machine-config-operator pkg/helpers/helpers.go GetPoolsForNode and ListPools
# @7ff337a4f (main; release-4.16 onwards), pkg/controller/node/node_controller.go getPoolsForNode @release-4.13 and
# @release-4.14; docs/custom-pools.md "Custom pool on master node".
OS_LABEL = 'kubernetes.io/os'


class PoolConflict(ManifestError):
    """A node the MCO will not manage as a member of the custom pool that selects it. ``node``: its name;
    ``custom``: the custom pools that select it; ``master``: whether master selects it too; ``pools``: the pools
    the MCO does put it in all the same (master first for a control-plane node on OpenShift 4.14 and later; none for
    a node of two custom pools)."""

    def __init__(self, message, node, custom, master, pools):
        super(PoolConflict, self).__init__(message)
        self.node, self.custom, self.master, self.pools = node, list(custom), master, list(pools)


def _pool_name(pool):
    return (pool.get('metadata') or {}).get('name') if isinstance(pool, dict) else None


def node_pools(node_name, labels, pools):
    """The MachineConfigPools (names) the MCO puts a node with ``labels`` in, its primary pool first (the one whose
    rendered config it runs), among ``pools`` (MachineConfigPool objects); ``[]`` when no pool manages it. Raises
    PoolConflict, naming the node and the pools, when the MCO refuses the node or ignores the custom pool that
    selects it (a custom pool together with another custom pool or with master). The rules and their upstream
    source are above."""
    labels = labels or {}
    if labels.get(OS_LABEL) == 'windows':
        return []
    matched = [_pool_name(p) for p in pools or []
               if _pool_name(p) and _selects((p.get('spec') or {}).get('nodeSelector'), labels)]
    master, worker = 'master' in matched, 'worker' in matched
    custom = sorted(set(name for name in matched if name not in BUILTIN_POOLS))
    if len(custom) > 1:
        raise PoolConflict('Node %s is selected by more than one custom MachineConfigPool (%s): the Machine Config '
                           'Operator refuses a node of two custom pools ("belongs to %d custom roles") and rolls out '
                           'none of their MachineConfigs to it' % (node_name, ', '.join(custom), len(custom)),
                           node_name, custom, master, [])
    if custom and master:
        raise PoolConflict('Node %s is a control-plane node (MachineConfigPool master selects it) and custom '
                           'MachineConfigPool %s selects it too: the Machine Config Operator keeps it in master and '
                           'never applies %s\'s MachineConfigs to it (OpenShift 4.13 and older refuse the node)'
                           % (node_name, custom[0], custom[0]), node_name, custom, master,
                           ['master'] + (['worker'] if worker else []))
    if custom:
        return [custom[0]] + (['worker'] if worker else [])
    if master:
        return ['master']
    return ['worker'] if worker else []


def primary_pool(node_name, labels, pools):
    """The pool whose rendered config the MCO gives the node (``node_pools``'s first), or None; a node the MCO
    refuses is in none, a control-plane node a custom pool also selects stays in master (PoolConflict.pools)."""
    try:
        names = node_pools(node_name, labels, pools)
    except PoolConflict as e:
        names = e.pools
    return names[0] if names else None


def pool_nodes(pool_name, pools, nodes):
    """The names of the nodes the MachineConfigPool ``pool_name`` manages, among ``nodes`` (Node objects), given
    every pool of the cluster (``pools``): the nodes whose primary pool (``node_pools``) it is, as the MCO counts a
    pool's machines (pkg/helpers/helpers.go GetNodesForPool: the nodes its selector selects whose primary pool it
    is). So a node a custom pool selects is that pool's and not worker's, a node master and worker both select is
    master's, and a node two custom pools select is in none. Sorted."""
    return sorted(name for name, labels in _node_labels(nodes) if primary_pool(name, labels, pools) == pool_name)


def describe_boot_config(config):
    """One line of a vgpu_vf boot-time config: ``<PF>: <VF> <type name or id>, ...; <PF>: ...``."""
    types = (config or {}).get('types') or {}
    parts = []
    for gpu in (config or {}).get('gpus') or []:
        vfs = ', '.join('%s %s' % (vf, types.get(str(tid), 'type %s' % tid)) for vf, tid in sorted(gpu['vfs'].items()))
        parts.append('%s: %s' % (gpu['pf'], vfs or 'no VF'))
    return '; '.join(parts) or 'no GPU'


def vgpu_vf_pool_config(pool, hosts, pools=None, nodes=None, sysfs_root='/sys', sriov_manage=vvp.SRIOV_MANAGE,
                        timeout=300):
    """The one boot-time config a VF MachineConfig for ``pool`` can carry, or ManifestError before any write.

    ``hosts``: ``[{host, node, persist}]``, each vendor-VFIO host's boot-time config as the vgpu_vf_profiles
    module's ``plan`` computed it on the host (a registered result: each is checked again by the role's config
    grammar, its paths and timeout the public inputs). A MachineConfig goes to every node of its pool alike (the
    render controller merges one config per pool: pkg/controller/render/render_controller.go), so:

    - every host must compute the same config (same GPUs at the same PCI addresses, the same VF -> type id);
      otherwise refused naming each group of hosts and its config;
    - with ``pools`` and ``nodes`` (read from the cluster), the pool must exist and manage exactly the hosts' nodes
      (``pool_nodes``): a node of the pool that is not one of them would get a config naming PCI addresses it may
      not have, and be drained and rebooted for it; a host outside the pool would never get it.
    """
    check_name(pool, 'MachineConfigPool')
    if not isinstance(hosts, list) or not hosts:
        raise ManifestError('no vendor-VFIO host gave its boot-time config: nothing to put in a MachineConfig for '
                            'pool %s' % pool)
    configs = []
    for entry in hosts:
        host = entry.get('host') if isinstance(entry, dict) else None
        node = entry.get('node') if isinstance(entry, dict) else None
        if not isinstance(host, str) or not host:
            raise ManifestError('a vendor-VFIO host entry is %r; expected {host, node (a node name), persist}'
                                % (entry,))
        node = checked(validators.dns1123_subdomain, node, '%s: its node name' % host)
        try:
            config = vvp.checked_persist(entry.get('persist'), sysfs_root, sriov_manage, timeout)
        except vvp.VfProfileError as e:
            raise ManifestError('%s: %s' % (host, e))
        configs.append((host, node, config))
    groups = []
    for host, node, config in configs:
        for group in groups:
            if group['config'] == config:
                group['hosts'].append(host)
                break
        else:
            groups.append({'config': config, 'hosts': [host]})
    if len(groups) > 1:
        raise ManifestError(
            'the vendor-VFIO hosts of MachineConfigPool %s need one boot-time VF config (a MachineConfig reaches '
            'every node of its pool alike), but they compute %d different ones: %s. Put the hosts of each config in '
            'a MachineConfigPool of their own (identical GPUs in the same PCI slots, one vGPU config): set '
            'gpuvirt_machineconfig_pool on each of them to its pool (one MachineConfig per pool). Nothing was changed.'
            % (pool, len(groups), ' | '.join(
                '%s: %s' % (', '.join(sorted(g['hosts'])), describe_boot_config(g['config'])) for g in groups)))
    if pools is not None:
        names = sorted((p.get('metadata') or {}).get('name') for p in pools if isinstance(p, dict))
        if pool not in names:
            raise ManifestError('MachineConfigPool %r does not exist (the cluster has: %s): the VF MachineConfig '
                                'would reach no node. Create the pool for the vendor-VFIO hosts (their '
                                'gpuvirt_machineconfig_pool with machineconfig_create_pool: true, applied by the '
                                'operator phase) or set gpuvirt_machineconfig_pool to the pool they are in. Nothing was '
                                'changed.'
                                % (pool, ', '.join(names) or 'none'))
        managed = set(pool_nodes(pool, pools, nodes))
        wanted = set(node for _h, node, _c in configs)
        extra, missing = sorted(managed - wanted), sorted(wanted - managed)
        if extra or missing or not managed:
            raise ManifestError(
                'MachineConfigPool %s must manage exactly the vendor-VFIO hosts\' nodes (%s) to carry their VF '
                'config, but %s. A MachineConfig reaches every node of its pool: another node would be drained, '
                'rebooted and given VF addresses it may not have, and a node outside never gets it. Give the '
                'vendor-VFIO hosts of one config a MachineConfigPool of their own (gpuvirt_machineconfig_pool on each, '
                'with machineconfig_create_pool: true; a node is in one custom pool at most), and run all of the '
                'pool\'s hosts together. Nothing was changed.' % (
                    pool, ', '.join(sorted(wanted)), '; '.join(filter(None, [
                        'it also manages %s' % ', '.join(extra) if extra else '',
                        'it does not manage %s' % ', '.join(missing) if missing else '']))))
    return configs[0][2]


def renders_pool(pool, create_pool, existing_pools=None, render=False):
    """Whether the run writes the dedicated MachineConfigPool ``pool``: never without ``create_pool``; in render mode
    always, also when ``existing_pools`` lists it (the render directory holds every object it manages: a pool file
    left out is pruned, the GitOps tool deletes the pool, and its nodes fall back to worker without the IOMMU
    arguments, rebooting); in apply mode only when the cluster does not have it yet (an existing pool's spec is the
    administrator's)."""
    if not create_pool:
        return False
    return bool(render) or pool not in (existing_pools or [])


def takes_configs_of(pool, role, pools=None):
    """Whether the custom MachineConfigPool ``pool`` renders the MachineConfigs of ``role`` (worker) into its own
    config: read from its ``machineConfigSelector`` when ``pools`` (the cluster's pool objects) holds it; else the
    Machine Config Operator's pattern for a custom pool, which takes the worker configs and adds its own
    (openshift/machine-config-operator docs/custom-pools.md: "Custom pools are pools that inherit from the worker
    pool"; build_pool selects both). The render controller merges every MachineConfig the selector picks
    (pkg/controller/render/render_controller.go), so worker's IOMMU MachineConfig reaches such a pool's nodes."""
    check_name(pool, 'MachineConfigPool')
    if pool in BUILTIN_POOLS:
        return False
    obj = next((p for p in pools or [] if _pool_name(p) == pool), None)
    if obj is None:
        return True
    return _selects((obj.get('spec') or {}).get('machineConfigSelector'), {ROLE_LABEL: role})


def build_pool(pool, node_selector=None):
    """A custom pool for GPU nodes: it selects the worker configs plus its own (the documented pattern),
    and the nodes labelled ``node-role.kubernetes.io/<pool>`` unless another selector is given."""
    check_name(pool, 'MachineConfigPool')
    if pool in BUILTIN_POOLS:
        raise ManifestError("MachineConfigPool %r is built in; create_pool is only for a dedicated GPU pool" % pool)
    return {
        'apiVersion': MC_API_VERSION,
        'kind': 'MachineConfigPool',
        'metadata': {'name': pool, 'labels': {'pools.operator.machineconfiguration.openshift.io/%s' % pool: ''}},
        'spec': {
            'machineConfigSelector': {'matchExpressions': [
                {'key': ROLE_LABEL, 'operator': 'In', 'values': ['worker', pool]}]},
            'nodeSelector': {'matchLabels': dict(node_selector or {'node-role.kubernetes.io/%s' % pool: ''})},
        },
    }


# The per-host pool (a host variable, read by the playbooks): a host whose node must be in a MachineConfigPool other
# than machineconfig_pool (vendor-VFIO hosts of one VF config: their VF MachineConfig reaches every node of its pool
# alike, so they need a pool of their own). A node is in one custom pool at most (node_pools), so the IOMMU
# MachineConfig goes to each pool that holds IOMMU hosts, one per pool.
HOST_POOL_VAR = 'gpuvirt_machineconfig_pool'


def host_pools(entries, default_pool):
    """``{node: pool}`` for ``entries`` (``[{host, node, pool}]``: ``pool`` the host's ``gpuvirt_machineconfig_pool``,
    None or empty when not set: ``default_pool``). Raises ManifestError naming the host and the variable for a pool
    that is no MachineConfigPool name, or a node given two pools."""
    check_name(default_pool, 'machineconfig_pool')
    out, by = {}, {}
    for entry in entries or []:
        if not isinstance(entry, dict):
            raise ManifestError('a host entry is %r; expected {host, node, pool}' % (entry,))
        host, node, pool = entry.get('host'), entry.get('node'), entry.get('pool')
        if pool in (None, ''):
            pool = default_pool
        checked(validators.dns1123_label, pool, HOST_POOL_VAR, message=(
            'host %s: %s is %r, not a MachineConfigPool name (a DNS label: lower-case letters, digits and \'-\'); '
            'set it to the pool its node is in, or leave it unset for machineconfig_pool (%s)'
            % (host, HOST_POOL_VAR, pool, default_pool)))
        node = checked(validators.dns1123_subdomain, node, '%s: its node name' % host)
        if node in out and out[node] != pool:
            raise ManifestError('node %s is given two MachineConfigPools, %s (host %s) and %s (host %s): a node is in '
                                'one pool; set %s alike on both'
                                % (node, out[node], by[node], pool, host, HOST_POOL_VAR))
        out[node], by[node] = pool, host
    return out


def pool_groups(node_pools, nodes, default_pool):
    """``[{pool, nodes}]``: the pools of ``nodes`` (names; a node without an entry in ``node_pools`` is in
    ``default_pool``), each with its nodes in their given order, the default pool first, then by name;
    ``[{default_pool, []}]`` when ``nodes`` is empty (a render with no node list)."""
    check_name(default_pool, 'machineconfig_pool')
    if not isinstance(node_pools, dict) or not isinstance(nodes, list):
        raise ManifestError('expected {node: pool} and a list of node names')
    members = {}
    for node in nodes:
        pool = node_pools.get(node) or default_pool
        check_name(pool, 'MachineConfigPool of node %s' % node)
        members.setdefault(pool, [])
        if node not in members[pool]:
            members[pool].append(node)
    order = sorted(members, key=lambda name: (name != default_pool, name))
    return [{'pool': name, 'nodes': members[name]} for name in order] or [{'pool': default_pool, 'nodes': []}]


def pool_selectors(node_pools, default_pool, default_selector=None):
    """``{node: selector}``: the labels each node's pool selects it by as the collection creates that pool
    (``pool_selector``; ``default_selector`` for ``default_pool``), ``{}`` for a built-in pool (worker, master: no
    label of ours)."""
    out = {}
    for node, pool in sorted((node_pools or {}).items()):
        check_name(pool, 'MachineConfigPool of node %s' % node)
        selector = default_selector if pool == default_pool else None
        out[node] = {} if pool in BUILTIN_POOLS else pool_selector(pool, selector)
    return out


def check_pool_exists(pool, existing, create_pool):
    """Fail before any write when MachineConfig would target a pool nobody renders."""
    if existing is None or create_pool or pool in existing:
        return
    raise ManifestError("MachineConfigPool %r does not exist (the cluster has: %s); use an existing pool or set "
                        "create_pool to create it" % (pool, ', '.join(sorted(existing)) or 'none'))


def pool_selector(pool, node_selector=None):
    """The node labels a dedicated pool selects (build_pool's nodeSelector)."""
    return dict(node_selector or {'node-role.kubernetes.io/%s' % pool: ''})


def pool_membership(pool_name, selector, expected, nodes):
    """Which of the ``expected`` node names are missing from the cluster, and which lack the pool's ``selector``
    labels (``nodes``: Node objects). Returns (missing, outside)."""
    by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in nodes or [])
    missing = sorted(name for name in expected if name not in by_name)
    outside = []
    for name in sorted(expected):
        if name in missing:
            continue
        labels = (by_name[name].get('metadata') or {}).get('labels') or {}
        lacking = ['%s=%s' % (k, v) for k, v in sorted(selector.items()) if labels.get(k) != v]
        if lacking:
            outside.append('%s (lacks %s)' % (name, ', '.join(lacking)))
    return missing, outside


def _node_labels(nodes):
    for n in nodes or []:
        meta = n.get('metadata') or {}
        yield meta.get('name'), meta.get('labels') or {}


def _selector_labels(pool):
    """A pool's node selector as text, for a fix that names the labels to remove."""
    sel = (pool.get('spec') or {}).get('nodeSelector') or {}
    parts = ['%s=%s' % kv for kv in sorted((sel.get('matchLabels') or {}).items())]
    parts += ['%s %s %s' % (e.get('key'), e.get('operator'), ','.join(e.get('values') or []))
              for e in sel.get('matchExpressions') or [] if isinstance(e, dict)]
    return ', '.join(p.strip() for p in parts) or 'none'


def _conflict_fix(err, pool_name, by_name):
    others = [c for c in err.custom if c != pool_name]
    if err.master:
        if pool_name == 'master':
            return ('%s. Take the node out of %s (remove the labels it selects by: %s): a control-plane node gets '
                    'the master pool\'s MachineConfigs only'
                    % (err, ', '.join(others), '; '.join(_selector_labels(by_name[c]) for c in others)))
        return ('%s. For GPU hosts that are control-plane nodes (compact and single-node clusters) set '
                'machineconfig_pool: master and machineconfig_create_pool: false; a custom pool holds worker nodes '
                'only' % err)
    return ('%s. Take the node out of %s (remove the labels it selects by: %s), or set machineconfig_pool: %s and '
            'machineconfig_create_pool: false to use that pool for it' % (
                err, ', '.join(others), '; '.join(_selector_labels(by_name[c]) for c in others),
                others[0] if len(others) == 1 else 'one of them'))


def pool_join_problems(pool_name, selector, expected, nodes, dedicated, pools, released=None):
    """Why the MCO would not put each ``expected`` node in ``pool_name``, one sentence each naming the node, the pools
    and the fix (``[]``: none): judged by ``node_pools`` on the node's labels as they will be (a dedicated pool's
    ``selector`` added) against the cluster's ``pools`` (a dedicated pool as we build it). The check the nodes phase
    runs before it labels GPU nodes into a dedicated pool, and ``nodes_into_pool`` before the machineconfig role
    does. ``released``: the selectors of the collection's other dedicated pools, whose labels the nodes phase takes
    off a node of this pool where it carries exactly their value (a host moved into a pool of its own,
    ``gpuvirt_machineconfig_pool``): judged without them."""
    ours = {'metadata': {'name': pool_name}, 'spec': {'nodeSelector': {'matchLabels': dict(selector or {})}}}
    after = [p for p in pools if isinstance(p, dict) and _pool_name(p) and _pool_name(p) != pool_name]
    after.append(ours if dedicated else next((p for p in pools if _pool_name(p) == pool_name), ours))
    by_name = dict((_pool_name(p), p) for p in after)
    problems = []
    for name, labels in _node_labels(nodes):
        if name not in expected:
            continue
        labels = dict((k, v) for k, v in labels.items()
                      if not any(isinstance(sel, dict) and sel.get(k) == v and k not in (selector or {})
                                 for sel in released or []))
        labels = dict(labels, **(selector or {})) if dedicated else labels
        if not _selects((by_name[pool_name].get('spec') or {}).get('nodeSelector'), labels):
            continue  # outside the pool's selector: nodes_into_pool names the labels it lacks
        try:
            primary = (node_pools(name, labels, after) or [None])[0]
        except PoolConflict as e:
            problems.append(_conflict_fix(e, pool_name, by_name))
            continue
        if primary == pool_name:
            continue
        if primary == 'master':
            problems.append('Node %s is in MachineConfigPool master, not %s: the Machine Config Operator puts a node '
                            'that master selects in master (compact and single-node clusters). Set '
                            'machineconfig_pool: master for it' % (name, pool_name))
        elif primary:
            problems.append('Node %s is in custom MachineConfigPool %s, not %s: a custom pool takes the worker nodes '
                            'it selects. Set machineconfig_pool: %s for it, or take it out of %s (remove the labels '
                            'it selects by: %s)' % (name, primary, pool_name, primary, primary,
                                                    _selector_labels(by_name[primary])))
        else:
            problems.append('Node %s is in no MachineConfigPool (the Machine Config Operator manages no Windows '
                            'node)' % name)
    return problems


def join_problems_message(pool_name, problems):
    return ('MachineConfigPool %s would not hold every GPU node, so its MachineConfig would not reach them: %s. '
            'Nothing was changed.' % (pool_name, '. '.join(problems)))


def nodes_into_pool(pool_name, selector, expected, nodes, dedicated, pools=None):
    """Check that the ``expected`` nodes exist and are (or, for a ``dedicated`` pool, can be put) in the pool.

    Returns the nodes to label into a dedicated pool (``[{'name', 'labels'}]``); raises ManifestError, before any
    write, for a missing node, a node outside an existing pool (its MachineConfig would never reach it), or a node
    we do not expect that a dedicated pool already selects: the pool's machine count would not equal our nodes, and
    its IOMMU MachineConfig would drain and reboot a node that is not one of our GPU hosts. With ``pools`` (the
    cluster's MachineConfigPool objects) also for a node the MCO would not put in the pool though its selector
    selects it (``node_pools``): a node another custom pool already selects (the MCO refuses a node of two custom
    pools), a control-plane node (it stays in master), or, for worker, a node of a custom pool."""
    if not expected:
        return []
    missing, outside = pool_membership(pool_name, selector, expected, nodes)
    if dedicated:
        foreign = sorted(name for name, labels in _node_labels(nodes)
                         if name not in expected and selector and all(labels.get(k) == v for k, v in selector.items()))
        if foreign:
            raise ManifestError('MachineConfigPool %r would hold %d machine(s), not the %d GPU node(s) %s: its node '
                                'selector %s also selects %s. Remove that label from them, or put their hosts in a '
                                'VM pool of the inventory' % (
                                    pool_name, len(expected) + len(foreign), len(expected),
                                    ', '.join(sorted(expected)),
                                    ', '.join('%s=%s' % kv for kv in sorted(selector.items())), ', '.join(foreign)))
    if missing:
        raise ManifestError('no Node in the cluster for %s: the MachineConfig for pool %r would not reach them; '
                            'check the node names (gpuvirt_node_name)' % (', '.join(missing), pool_name))
    if pools is not None:
        problems = pool_join_problems(pool_name, selector, expected, nodes, dedicated, pools)
        if problems:
            raise ManifestError(join_problems_message(pool_name, problems))
    if outside and not dedicated:
        raise ManifestError('MachineConfigPool %r does not select %s: its MachineConfig would never reach them. '
                            'Label them into the pool, or set machineconfig_pool to the pool they are in'
                            % (pool_name, '; '.join(outside)))
    return [{'name': entry.split(' ', 1)[0], 'labels': dict(selector)} for entry in outside]


def _node_waiting(node, rendered):
    meta = node.get('metadata') or {}
    notes = meta.get('annotations') or {}
    current, desired, state = notes.get(CURRENT_CONFIG), notes.get(DESIRED_CONFIG), notes.get(MCD_STATE)
    if rendered and current == rendered and desired in (None, rendered) and state == 'Done':
        return None
    return '%s (currentConfig %s, desiredConfig %s, state %s)' % (meta.get('name'), current or '-', desired or '-',
                                                                  state or '-')


def nodes_waiting(nodes, expected, rendered):
    """The ``expected`` node names not yet running the ``rendered`` config, each with its daemon's annotations."""
    by_name = dict(((n.get('metadata') or {}).get('name'), n) for n in nodes or [])
    waiting = [_node_waiting(by_name[name], rendered) if name in by_name else '%s (no such Node)' % name
               for name in sorted(expected or [])]
    return [w for w in waiting if w]


RENDERED_PREFIX = 'rendered-'


def renders_content(rendered, machineconfig):
    """Whether the ``rendered`` MachineConfig holds ``machineconfig``'s current content: each of its kernel arguments
    and each of its Ignition files (same path, same contents source) and systemd units (same name, contents and
    enabled).

    The render controller merges every MachineConfig of a pool into one rendered MachineConfig
    ``rendered-<pool>-<hash of the merged spec>``: those of the worker role first, then the pool's own, each group in
    name order, for a custom pool that selects the worker configs; kernel arguments are appended, a later file of the same path
    replaces an earlier one (openshift/machine-config-operator pkg/controller/common/helpers.go MergeMachineConfigs,
    pkg/controller/render/hash.go getMachineConfigHashedName). So a rendered config holds our content exactly when
    it has our arguments and our files as we wrote them; one rendered before our last edit does not.
    """
    spec = (rendered or {}).get('spec') or {}
    ours = (machineconfig or {}).get('spec') or {}
    args = spec.get('kernelArguments') or []
    if any(arg not in args for arg in ours.get('kernelArguments') or []):
        return False
    files = dict((f.get('path'), (f.get('contents') or {}).get('source'))
                 for f in ((spec.get('config') or {}).get('storage') or {}).get('files') or [] if isinstance(f, dict))
    for entry in ((ours.get('config') or {}).get('storage') or {}).get('files') or []:
        if files.get(entry.get('path')) != (entry.get('contents') or {}).get('source'):
            return False
    # systemd units by name, a later one replacing an earlier one as files do (MergeMachineConfigs)
    units = dict((u.get('name'), (u.get('contents'), u.get('enabled')))
                 for u in ((spec.get('config') or {}).get('systemd') or {}).get('units') or [] if isinstance(u, dict))
    for entry in ((ours.get('config') or {}).get('systemd') or {}).get('units') or []:
        if units.get(entry.get('name')) != (entry.get('contents'), entry.get('enabled')):
            return False
    return True


def rendered_with(machineconfigs, machineconfig, pool):
    """The names of ``pool``'s rendered MachineConfigs (``rendered-<pool>-*``, among ``machineconfigs``) that hold
    ``machineconfig``'s current content, sorted. Rendered configs are never edited, only replaced by new names
    (the name is a hash of the content), so one of these names in the pool's status means our edit is rolled out."""
    prefix = '%s%s-' % (RENDERED_PREFIX, check_name(pool, 'MachineConfigPool'))
    return sorted(m['metadata']['name'] for m in machineconfigs or []
                  if isinstance(m, dict) and str((m.get('metadata') or {}).get('name') or '').startswith(prefix)
                  and renders_content(m, machineconfig))


def _conditions(status):
    return dict((c.get('type'), c) for c in status.get('conditions') or [] if isinstance(c, dict))


def pool_status(mcp, machineconfig_name=None, expected_nodes=None, nodes=None, dedicated=False,
                rendered_configs=None):
    """Evaluate a MachineConfigPool's rollout.

    ``done``: the pool has machines, every one is updated and ready, the pool is not updating, it observed its
    latest spec and (when given) its rendered config includes ``machineconfig_name``; with ``expected_nodes``
    (names) and ``nodes`` (Node objects) also every expected node runs the pool's rendered config (its
    machine-config-daemon annotations say so), and a ``dedicated`` pool has exactly those machines. A pool with no
    machine is never done: its MachineConfig reaches no node. With ``rendered_configs`` (the rendered
    MachineConfigs that hold our current content, ``rendered_with``) the pool's rendered config must be one of them:
    after an edit the pool still shows the previous rendered config as Updated until the render controller has
    rendered the edit and the node controller has rolled it out (pkg/controller/node/status.go calculateStatus copies
    spec.configuration to status.configuration only once every machine is updated). ``degraded``: a Degraded / NodeDegraded /
    RenderDegraded condition is True or a machine is degraded; ``reason`` says why. ``paused``: ``spec.paused`` is
    true (the MCO rolls nothing out to the pool; the message says how to unpause it when the pool is not done).
    """
    meta = mcp.get('metadata') or {}
    status = mcp.get('status') or {}
    conds = _conditions(status)
    counts = dict((k, int(status.get(k) or 0)) for k in
                  ('machineCount', 'updatedMachineCount', 'readyMachineCount', 'degradedMachineCount',
                   'unavailableMachineCount'))
    sources = [s.get('name') for s in ((status.get('configuration') or {}).get('source') or [])]
    rendered_includes = machineconfig_name is None or machineconfig_name in sources
    observed = int(status.get('observedGeneration') or 0) >= int(meta.get('generation') or 0)
    degraded_conds = [c for t, c in sorted(conds.items()) if t in ('Degraded', 'NodeDegraded', 'RenderDegraded')
                      and c.get('status') == 'True']
    degraded = bool(degraded_conds) or counts['degradedMachineCount'] > 0
    reason = '; '.join('%s: %s' % (c.get('type'), (c.get('message') or c.get('reason') or '').strip())
                       for c in degraded_conds)
    if degraded and not reason:
        reason = '%d machine(s) degraded' % counts['degradedMachineCount']
    updating = (conds.get('Updating') or {}).get('status') == 'True'
    updated_cond = (conds.get('Updated') or {}).get('status') == 'True'
    expected = sorted(expected_nodes or [])
    rendered = (status.get('configuration') or {}).get('name')
    waiting = nodes_waiting(nodes, expected, rendered)
    current = rendered_configs is None or rendered in rendered_configs
    exact = bool(dedicated and expected)
    count_ok = counts['machineCount'] > 0 and (not exact or counts['machineCount'] == len(expected))
    done = (not degraded and observed and rendered_includes and current and not updating and updated_cond and count_ok
            and not waiting
            and counts['updatedMachineCount'] == counts['machineCount'] == counts['readyMachineCount'])
    message = '%s: %d/%d machines updated, %d ready' % (
        meta.get('name'), counts['updatedMachineCount'], counts['machineCount'], counts['readyMachineCount'])
    if counts['machineCount'] == 0:
        message += '; the pool selects no node, so its MachineConfig reaches none'
    elif dedicated and expected and counts['machineCount'] != len(expected):
        message += '; expected exactly %d machine(s), the nodes %s' % (len(expected), ', '.join(expected))
    if not rendered_includes:
        message += '; rendered config does not include %s yet' % machineconfig_name
    elif not current:
        message += '; rendered config %s does not hold the current content of %s yet' % (
            rendered or '-', machineconfig_name)
    if waiting:
        message += '; not yet on %s: %s' % (rendered or 'the rendered config', '; '.join(waiting))
    if degraded:
        message += '; degraded: %s' % reason
    # A paused pool rolls nothing out: the node controller only syncs its status (openshift/machine-config-operator
    # pkg/controller/node/node_controller.go syncMachineConfigPool: "if pool.Spec.Paused ... return
    # ctrl.syncStatusOnly(pool)"), which says Updated False and Updating False, "Pool is paused; will not update
    # to ..." (pkg/controller/node/status.go calculateStatus). Waiting for it would wait out the whole timeout.
    paused = (mcp.get('spec') or {}).get('paused') is True
    if paused and not done:
        message += ('; the pool is paused (spec.paused: true), so the Machine Config Operator rolls nothing out to '
                    'it: unpause it when its nodes may drain and reboot, with: oc patch mcp %s --type merge -p '
                    '\'{"spec":{"paused":false}}\'' % meta.get('name'))
    return dict(counts, name=meta.get('name'), done=done, degraded=degraded, reason=reason, updating=updating,
                rendered_includes=rendered_includes, current=current, rendered=rendered, waiting=waiting,
                paused=paused, message=message)


class PoolFailure(ManifestError):
    """A pool the caller asked to fail on (``checked_pool_status``); ``status`` is its whole ``pool_status``."""

    def __init__(self, status):
        super(PoolFailure, self).__init__('MachineConfigPool %s' % status['message'])
        self.status = status


def checked_pool_status(mcp, fail_on_degraded, fail_on_paused, **kwargs):
    """``pool_status(mcp, **kwargs)``, or PoolFailure where it is degraded and ``fail_on_degraded``, or paused and
    not done and ``fail_on_paused``."""
    status = pool_status(mcp, **kwargs)
    if (status['degraded'] and fail_on_degraded) or (status['paused'] and not status['done'] and fail_on_paused):
        raise PoolFailure(status)
    return status
