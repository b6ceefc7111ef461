# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the object apply (k8s_objects_apply, k8s_apply) may send: the fixed table of every object the collection's
cluster roles build, and, for the kinds whose content is root on the nodes, a check that the content is exactly what
the collection's builder makes. Pure Python.

The apply is a sink: the object lists reach it from registered results of builder tasks, which an earlier task set
and which only the launch check keeps from being replaced. So the sink judges each object itself, before any
request:

- its (apiVersion, kind) must be a row of ``RULES``, spelled exactly so (no plural, short name or other case: the
  API server would resolve them to the same resource);
- the row's scope: cluster-scoped (no namespace), a namespace the caller declares for the row's namespace role
  (``operator``: the GPU Operator's; ``kubevirt``: KubeVirt's or HyperConverged's; ``workload``: the VMs' and
  their claim templates'), or a fixed one (``nfd``: openshift-nfd); a declared namespace is a DNS label and never a
  namespace of the platform itself (kube-system, kube-public, kube-node-lease, openshift-* other than the two the
  collection installs into);
- the row's name pattern;
- the row's content check: a MachineConfig equals what the collection's builder makes from the object's own
  decoded inputs (the IOMMU one: its kernel arguments through the builder's allow-list; the VF one: its config
  through the vgpu_vf role's grammar and its restore script byte for byte the one the collection ships), a
  MachineConfigPool what build_pool makes, a Secret only a registry pull Secret, a Subscription only the package
  its row names.

Anything else (RBAC, a Secret of another type or namespace, a kind no builder makes) is refused, naming the object
and the rule.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.gpuvirt.provision.plugins.module_utils.host import kernel_cmdline
from ansible_collections.gpuvirt.provision.plugins.module_utils.host import vgpu_vf_profiles as vvp
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_cluster as gc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import gpu_operator as gop
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import hco
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import kubevirt as kv
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import upgrade_operator as uo
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import vgpu_config as vc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

# The restore script the vgpu_vf role ships (roles/vgpu_vf/files/gpuvirt_vgpu_vf_restore.py), by its sha256: a
# module runs without the role's files, so the digest stands in for them. A unit test
# (tests/unit/plugins/module_utils/manifests/test_apply_rules.py) holds it to the file; change both together.
VGPU_VF_SCRIPT_SHA256 = '00abedf1eef35a8969fb32e6506fe527710820c38f61ad0dea9ba5a8a712ef4e'

# the field managers the roles apply under: the default and one per role that applies part of a shared object
FIELD_MANAGER_RE = re.compile(r'gpuvirt-provision(-[a-z0-9-]{1,40})?')

# namespace roles a caller declares (module option ``namespaces``), and the fixed ones
DECLARED = ('operator', 'kubevirt', 'workload')
FIXED = {'nfd': gop.NFD_NAMESPACE}
# the platform's own namespaces: never declared (a Secret or ConfigMap there is the cluster's, not ours)
PLATFORM_NAMESPACES = ('kube-system', 'kube-public', 'kube-node-lease')
PLATFORM_PREFIXES = ('kube-', 'openshift-')
# the openshift-* namespace a caller may declare: OpenShift Virtualization's (HyperConverged); NFD's is fixed
ALLOWED_PLATFORM = {'kubevirt': (hco.HCO_NAMESPACE,)}

_DNS_LABEL = re.compile(r'[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?')
_DNS_SUBDOMAIN = re.compile(r'(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
# a MachineConfig of the collection names it (100-<pool>-gpuvirt-iommu, 100-<pool>-gpuvirt-vgpu-vf by default):
# never one of the Machine Config Operator's own (00-worker, 99-worker-ssh, rendered-*), which it would replace
_MC_NAME = re.compile(r'[a-z0-9][-a-z0-9]*gpuvirt[-a-z0-9]*')


class RuleError(ManifestError):
    pass


class Rule(object):
    """One row: ``namespace`` None (cluster-scoped) or a namespace role; ``name`` a compiled pattern, a fixed
    name, or ``'namespace'`` (a Namespace: one of the namespaces of the roles in ``names_of``); ``check`` the
    content check (raises RuleError) or None."""

    def __init__(self, api_version, kind, namespace, name, what, check=None, names_of=()):
        self.api_version, self.kind, self.namespace, self.name = api_version, kind, namespace, name
        self.what, self.check, self.names_of = what, check, names_of

    def name_ok(self, name, namespaces):
        if self.name == 'namespace':
            return any(name in namespaces.get(role, ()) for role in self.names_of)
        if hasattr(self.name, 'fullmatch'):
            return bool(self.name.fullmatch(name))
        return name == self.name

    def describe_name(self, namespaces):
        if self.name == 'namespace':
            names = sorted(set(n for role in self.names_of for n in namespaces.get(role, ())))
            return 'one of the namespaces this call declares for %s (%s)' % (
                ' or '.join(self.names_of), ', '.join(names) or 'none declared')
        if self.name is _MC_NAME:
            return 'a name holding "gpuvirt" (machineconfig_name), never one of the Machine Config Operator\'s own'
        if hasattr(self.name, 'fullmatch'):
            return 'a name matching %s' % self.name.pattern
        return 'the name %s' % self.name

    def describe_scope(self, namespaces):
        if self.namespace is None:
            return 'cluster-scoped (no metadata.namespace)'
        declared = ', '.join(namespaces.get(self.namespace, ())) or 'none declared by this call'
        return 'in the %s namespace (%s)' % (self.namespace, declared)


def _keys(value, allowed, where):
    extra = sorted(str(k) for k in (value or {}) if k not in allowed)
    if extra:
        raise RuleError('%s holds %s; the collection writes only %s there'
                        % (where, ', '.join(extra), ', '.join(sorted(allowed))))


def _check_secret(obj):
    # the one Secret any role applies: the GPU Operator's registry pull Secret (pull_secret.build_pull_secret)
    _keys(obj, ('apiVersion', 'kind', 'metadata', 'type', 'data', 'stringData'), 'the Secret')
    _keys(obj['metadata'], ('name', 'namespace', 'labels'), 'its metadata')
    if obj.get('type') != 'kubernetes.io/dockerconfigjson':
        raise RuleError('a Secret of type %r; the collection applies only registry pull Secrets (type '
                        'kubernetes.io/dockerconfigjson)' % (obj.get('type'),))
    for field in ('data', 'stringData'):
        if field in obj and (not isinstance(obj[field], dict) or set(obj[field]) != {'.dockerconfigjson'}):
            raise RuleError('its %s holds keys other than .dockerconfigjson (only a registry login)' % field)
    if not obj.get('data') and not obj.get('stringData'):
        raise RuleError('it holds no .dockerconfigjson')


def _check_configmap(obj):
    # the vGPU device ConfigMap (vgpu_config.build_configmap): its one key
    _keys(obj, ('apiVersion', 'kind', 'metadata', 'data'), 'the ConfigMap')
    _keys(obj['metadata'], ('name', 'namespace'), 'its metadata')
    if not isinstance(obj.get('data'), dict) or set(obj['data']) != {vc.CONFIG_KEY}:
        raise RuleError('its data holds %s; the vGPU device ConfigMap holds %s alone'
                        % (sorted(obj.get('data') or {}) if isinstance(obj.get('data'), dict) else 'no mapping',
                           vc.CONFIG_KEY))


def _subscription(package):
    def check(obj):
        spec = obj.get('spec') if isinstance(obj.get('spec'), dict) else {}
        if spec.get('name') != package:
            raise RuleError('it subscribes to package %r; this Subscription installs %s alone'
                            % (spec.get('name'), package))
    return check


def _operator_group(obj):
    spec = obj.get('spec') if isinstance(obj.get('spec'), dict) else {}
    if spec.get('targetNamespaces') != [obj['metadata'].get('namespace')]:
        raise RuleError('its targetNamespaces are %r; the collection\'s OperatorGroup targets its own namespace '
                        'alone' % (spec.get('targetNamespaces'),))


def _check_namespace(obj):
    _keys(obj, ('apiVersion', 'kind', 'metadata'), 'the Namespace')
    _keys(obj['metadata'], ('name', 'labels'), 'its metadata')


def _decoded_files(config, where):
    storage = config.get('storage', {})
    files = storage.get('files', []) if isinstance(storage, dict) else None
    if not isinstance(files, list):
        raise RuleError('%s: its storage.files is not a list' % where)
    out = {}
    for entry in files:
        source = ((entry or {}).get('contents') or {}).get('source') if isinstance(entry, dict) else None
        try:
            out[entry.get('path')] = mc.decode_data_url(source)
        except (AttributeError, TypeError, ValueError, UnicodeDecodeError):
            raise RuleError('%s: a file\'s contents are not a base64 data URL the collection writes' % where)
    return out


def _equal_or_refuse(obj, built, what):
    if built != obj:
        raise RuleError('it is not the %s the collection builds from its own inputs (pool, kernel arguments, '
                        'files); rebuilt, it differs' % what)


def _check_iommu_machineconfig(obj, pool, config):
    """The IOMMU MachineConfig (build_machineconfig): its kernel arguments through iommu_kernel_args (the vendor's
    IOMMU argument, iommu=pt, and extras only from kernel_cmdline's allow-list), the nouveau blacklist as the builder
    writes it, nothing else."""
    args = obj['spec'].get('kernelArguments') or []
    if not isinstance(args, list):
        raise RuleError('its kernelArguments are not a list')
    files = _decoded_files(config, 'the IOMMU MachineConfig') if 'storage' in config else {}
    if set(files) - {mc.NOUVEAU_PATH}:
        raise RuleError('it writes %s; the IOMMU MachineConfig writes %s alone'
                        % (', '.join(sorted(str(p) for p in files)), mc.NOUVEAU_PATH))
    if args:
        vendors = [v for v, arg in kernel_cmdline.IOMMU_ARGS.items() if args[0] == arg]
        if not vendors:
            raise RuleError('its first kernel argument is %r; the IOMMU MachineConfig starts with %s'
                            % (args[0], ' or '.join(sorted(kernel_cmdline.IOMMU_ARGS.values()))))
        passthrough = args[1:2] == [kernel_cmdline.IOMMU_PASSTHROUGH_ARG]
        try:
            args = mc.iommu_kernel_args(vendors[0], passthrough, args[2 if passthrough else 1:])
        except ManifestError as e:
            raise RuleError(str(e))
    try:
        built = mc.build_machineconfig(pool, args, bool(files), name=obj['metadata']['name'])
    except ManifestError as e:
        raise RuleError(str(e))
    _equal_or_refuse(obj, built, 'IOMMU MachineConfig')


_EXEC_START = re.compile(r'^ExecStart=(\S+) ', re.M)
_TIMEOUT = re.compile(r'^TimeoutStartSec=([0-9]{1,5})$', re.M)


def _check_vf_machineconfig(obj, pool, config):
    """The VF restore MachineConfig (build_vgpu_vf_machineconfig): the script byte for byte the collection's, the
    config through the vgpu_vf role's grammar (checked_persist), the unit the role's own text."""
    files = _decoded_files(config, 'the VF MachineConfig')
    script = files.get(mc.VGPU_VF_SCRIPT_PATH)
    if script is None or hashlib.sha256(script.encode('utf-8')).hexdigest() != VGPU_VF_SCRIPT_SHA256:
        raise RuleError('its %s is not the restore script the collection ships (roles/vgpu_vf/files/'
                        'gpuvirt_vgpu_vf_restore.py, sha256 %s)' % (mc.VGPU_VF_SCRIPT_PATH, VGPU_VF_SCRIPT_SHA256))
    boot_config = None
    if mc.VGPU_VF_CONFIG_PATH in files:
        try:
            boot_config = json.loads(files[mc.VGPU_VF_CONFIG_PATH])
        except ValueError:
            raise RuleError('its %s is not JSON' % mc.VGPU_VF_CONFIG_PATH)
        decoded = boot_config if isinstance(boot_config, dict) else {}
        try:
            boot_config = vvp.checked_persist(boot_config, decoded.get('sysfs_root'), decoded.get('sriov_manage'),
                                              decoded.get('timeout'))
        except vvp.VfProfileError as e:
            raise RuleError('its boot-time config: %s' % e)
    units = (config.get('systemd') or {}).get('units') if isinstance(config.get('systemd'), dict) else None
    unit = units[0].get('contents') if isinstance(units, list) and len(units) == 1 and isinstance(units[0], dict) \
        else None
    python = _EXEC_START.search(unit) if isinstance(unit, str) else None
    timeout = _TIMEOUT.search(unit) if isinstance(unit, str) else None
    if not python or not timeout:
        raise RuleError('it carries no unit of the vgpu_vf role (one unit, its ExecStart and TimeoutStartSec)')
    try:
        built = mc.build_vgpu_vf_machineconfig(pool, script, python.group(1), int(timeout.group(1)) - 60,
                                               boot_config, obj['metadata']['name'])
    except ManifestError as e:
        raise RuleError(str(e))
    _equal_or_refuse(obj, built, 'VF restore MachineConfig')


def _check_machineconfig(obj):
    meta = obj['metadata']
    labels = meta.get('labels') if isinstance(meta.get('labels'), dict) else {}
    pool = labels.get(mc.ROLE_LABEL)
    spec = obj.get('spec') if isinstance(obj.get('spec'), dict) else {}
    config = spec.get('config') if isinstance(spec.get('config'), dict) else {}
    if not isinstance(pool, str):
        raise RuleError('it names no pool (label %s)' % mc.ROLE_LABEL)
    if 'systemd' in config:
        _check_vf_machineconfig(obj, pool, config)
    else:
        _check_iommu_machineconfig(obj, pool, config)


def _check_crd(obj):
    # the upgrade's Helm step applies the target chart's CRDs: only the chart's API groups, each named
    # <plural>.<group> (the same check the plan refused them with)
    problem = uo.crd_problem(obj)
    if problem:
        raise RuleError('the CustomResourceDefinition %s' % problem)


def _check_pool(obj):
    spec = obj.get('spec') if isinstance(obj.get('spec'), dict) else {}
    selector = (spec.get('nodeSelector') or {}).get('matchLabels') if isinstance(spec.get('nodeSelector'), dict) \
        else None
    try:
        built = mc.build_pool(obj['metadata']['name'], selector if isinstance(selector, dict) else None)
    except ManifestError as e:
        raise RuleError(str(e))
    _equal_or_refuse(obj, built, 'MachineConfigPool')


# Every object the collection applies, from its builders (module_utils/manifests) and their callers (the roles that
# include k8s_objects; docs/security.md lists them). tests/unit/plugins/module_utils/manifests/test_apply_rules.py
# builds each role's objects and passes them through this table, so a new builder fails there until it has a row.
RULES = (
    # gpu_operator: its Namespace, OLM objects, pull Secret, vGPU device ConfigMap; NFD's on OpenShift
    Rule('v1', 'Namespace', None, 'namespace', 'the GPU Operator\'s or NFD\'s Namespace', _check_namespace,
         names_of=('operator', 'nfd')),
    Rule('operators.coreos.com/v1', 'OperatorGroup', 'operator', 'nvidia-gpu-operator-group',
         'the GPU Operator\'s OperatorGroup', _operator_group),
    Rule('operators.coreos.com/v1alpha1', 'Subscription', 'operator', gop.PACKAGE,
         'the GPU Operator\'s Subscription', _subscription(gop.PACKAGE)),
    Rule('operators.coreos.com/v1', 'OperatorGroup', 'nfd', 'openshift-nfd-group', 'NFD\'s OperatorGroup',
         _operator_group),
    Rule('operators.coreos.com/v1alpha1', 'Subscription', 'nfd', gop.NFD_PACKAGE, 'NFD\'s Subscription',
         _subscription(gop.NFD_PACKAGE)),
    Rule('nfd.openshift.io/v1', 'NodeFeatureDiscovery', 'nfd', _DNS_SUBDOMAIN, 'the NodeFeatureDiscovery'),
    Rule('v1', 'Secret', 'operator', _DNS_SUBDOMAIN, 'the registry pull Secret', _check_secret),
    Rule('v1', 'ConfigMap', 'operator', _DNS_SUBDOMAIN, 'the vGPU device ConfigMap', _check_configmap),
    Rule('nvidia.com/v1', 'ClusterPolicy', None, gop.CLUSTER_POLICY_NAME, 'the ClusterPolicy'),
    Rule(gc.API_VERSION, gc.NVIDIA_DRIVER_KIND, None, gc.NVIDIA_DRIVER_NAME, 'the NVIDIADriver'),
    Rule(gc.API_VERSION, gc.KIND, None, gc.NAME, 'the GPUCluster'),
    # kubevirt_devices and dra_driver's gate: KubeVirt's CR or OpenShift Virtualization's HyperConverged
    Rule(kv.KUBEVIRT_API_VERSION, 'KubeVirt', 'kubevirt', _DNS_SUBDOMAIN, 'the KubeVirt CR'),
    Rule(hco.HCO_API_VERSION, hco.HCO_KIND, 'kubevirt', hco.HCO_NAME, 'the HyperConverged'),
    # dra_driver's claim templates, verify's smoke VM
    Rule('resource.k8s.io/v1', 'ResourceClaimTemplate', 'workload', _DNS_SUBDOMAIN, 'a DRA claim template'),
    Rule('kubevirt.io/v1', 'VirtualMachine', 'workload', _DNS_SUBDOMAIN, 'the smoke VM'),
    # machineconfig and vgpu_vf (through machineconfig's rollout): root on every node of the pool
    Rule(mc.MC_API_VERSION, 'MachineConfig', None, _MC_NAME, 'a MachineConfig of the collection',
         _check_machineconfig),
    Rule(mc.MC_API_VERSION, 'MachineConfigPool', None, _DNS_SUBDOMAIN, 'the dedicated GPU MachineConfigPool',
         _check_pool),
    # upgrade (Helm): the target chart's CustomResourceDefinitions, applied before helm upgrade
    Rule(uo.CRD_API_VERSION, 'CustomResourceDefinition', None, _DNS_SUBDOMAIN,
         'a CustomResourceDefinition of the GPU Operator chart', _check_crd),
)


NOT_IN_TABLE = 'not in the table of k8s_objects_apply'


def table_text():
    """The table's (apiVersion, kind) pairs, for a refusal's fix."""
    return ', '.join(sorted(set('%s %s' % (r.api_version, r.kind) for r in RULES)))


def checked_namespaces(namespaces):
    """The module option ``namespaces`` as ``{role: (namespace, ...)}``, the fixed roles added: each key one of
    DECLARED, each value a namespace or a list of them, each a DNS label and none of the platform's own
    namespaces. Raises RuleError naming the bad one."""
    if namespaces is None:
        namespaces = {}
    if not isinstance(namespaces, dict):
        raise RuleError('namespaces: expected a mapping of %s to namespaces, got a %s'
                        % ('/'.join(DECLARED), type(namespaces).__name__))
    out = {}
    for role, names in namespaces.items():
        if role not in DECLARED:
            raise RuleError('namespaces: %r is not a namespace role a caller declares (%s; %s is fixed)'
                            % (role, ', '.join(DECLARED), ', '.join(sorted(FIXED))))
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, (list, tuple)):
            raise RuleError('namespaces.%s: expected a namespace or a list of them' % role)
        for name in names:
            if not isinstance(name, str) or not _DNS_LABEL.fullmatch(name):
                raise RuleError('namespaces.%s: %r is not a namespace name (a DNS label)' % (role, name))
            if name not in ALLOWED_PLATFORM.get(role, ()) and (
                    name in PLATFORM_NAMESPACES or name.startswith(PLATFORM_PREFIXES)):
                raise RuleError('namespaces.%s: %s is a namespace of the platform itself; the collection writes '
                                'only to its own namespaces (set the role\'s namespace variable to another)'
                                % (role, name))
        out[role] = tuple(names)
    for role, name in FIXED.items():
        out[role] = (name,)
    return out


def rule_for(obj):
    """The rows for the object's (apiVersion, kind), exactly as spelled."""
    return [r for r in RULES if r.api_version == obj.get('apiVersion') and r.kind == obj.get('kind')]


def problem(index, obj, namespaces):
    """None when the table admits the object (a complete object: k8s_apply._check_one passed), else a sentence
    naming it and the rule it breaks. ``namespaces``: checked_namespaces' answer."""
    meta = obj['metadata']
    name, namespace = meta.get('name'), meta.get('namespace')
    label = 'object number %d (%s %s%s)' % (index, obj.get('kind'), ('%s/' % namespace) if namespace else '', name)
    rows = rule_for(obj)
    if not rows:
        return ('%s: %s %s is not an object the collection applies (%s)'
                % (label, obj.get('apiVersion'), obj.get('kind'), NOT_IN_TABLE))
    reasons = []
    for row in rows:
        if row.namespace is None:
            if namespace is not None:
                reasons.append('%s is %s' % (row.what, row.describe_scope(namespaces)))
                continue
        elif namespace not in namespaces.get(row.namespace, ()):
            reasons.append('%s goes %s' % (row.what, row.describe_scope(namespaces)))
            continue
        if not row.name_ok(name, namespaces):
            reasons.append('%s has %s' % (row.what, row.describe_name(namespaces)))
            continue
        if row.check is not None:
            try:
                row.check(obj)
            except RuleError as e:
                reasons.append('%s: %s' % (row.what, e))
                continue
        return None
    return '%s is refused: %s' % (label, '; '.join(reasons))


def check_field_manager(value):
    if not isinstance(value, str) or not FIELD_MANAGER_RE.fullmatch(value):
        raise RuleError('field_manager: %r is not a field manager of the collection (gpuvirt-provision, or '
                        'gpuvirt-provision-<role part> of lower-case letters, digits and -, at most 40)' % (value,))
    return value
