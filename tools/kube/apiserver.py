# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real Kubernetes API server (kube-apiserver 1.20 + etcd) on loopback, for the cluster tests.

``tools/kube/build.sh`` builds kube-apiserver and kubectl once from Debian's ``kubernetes`` source package into
``.build/kube/bin``; etcd is Debian's ``etcd-server``. This module starts both on free loopback ports with

* TLS: a CA made here and a serving certificate for 127.0.0.1 (clients verify it: the kubeconfigs carry the CA);
* token authentication: an admin (group ``system:masters``) and the automation user, which is the service
  account ``gpuvirt-system/gpuvirt-automation`` by name and groups, so the shipped RBAC file of the platform served
  (docs/rbac/gpuvirt-automation.yml on OpenShift, gpuvirt-automation-kubernetes.yml on Kubernetes; RBAC_FILES)
  applies to it exactly as on a cluster: ``reset`` grants it afresh, parsed from the file as is;
* ``Node,RBAC`` authorization and an audit log (one JSON line per request: verb, resource, user, and the body of
  every write), which is how a test proves a second run wrote nothing;
* the upstream CRDs the phases touch, loaded from the reference folder (``x-kubernetes-validations`` removed: CEL
  rules arrived in 1.25), plus minimal stand-in CRDs for two APIs that are not CRDs upstream (see STAND_INS).

There are no controllers (no kube-controller-manager, scheduler, kubelet, OLM, MCO or operators): a test that
needs one writes what that controller would write, through this API, and names the controller it stands in for.

CLI:
* ``apiserver.py start DIR``: a plain Kubernetes flavour (no OpenShift or HCO APIs), the automation and the Helm
  identity granted their shipped RBAC files; prints the admin, automation and Helm kubeconfig paths and leaves the
  server running, with the PIDs in DIR/pids;
* ``apiserver.py seed DIR FILE``: creates the objects of a YAML file (documents or a v1 List) as the admin; a
  ``status`` goes through the status subresource, as its controller would write it;
* ``apiserver.py stop DIR``.
"""
from __future__ import annotations

import base64
import copy
import http.client
import json
import os
import secrets
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

import yaml

import dra_stand_ins  # resource.k8s.io/v1 (DRA) stand-in CRDs, tools/kube/dra_stand_ins.py

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
try:
    from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform as platform_table
except ImportError:  # run as a script outside make: the staged collection of this checkout
    sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))
    from ansible_collections.gpuvirt.provision.plugins.module_utils.model import platform as platform_table
# The shipped RBAC, one file per platform (its namespaces are that platform's defaults): the file each row of the
# platform table names (its rbac column), so a new platform's tests are granted what its users apply; the Helm
# installs' own.
RBAC_FILES = dict((row.name, os.path.join(ROOT, 'docs', 'rbac', row.rbac)) for row in platform_table.PLATFORM_TABLE)
HELM_RBAC_FILE = os.path.join(ROOT, 'docs', 'rbac', 'gpuvirt-automation-helm.yml')
UPGRADE_RBAC_FILE = os.path.join(ROOT, 'docs', 'rbac', 'gpuvirt-automation-upgrade.yml')
AUTOMATION_NS, AUTOMATION_SA = 'gpuvirt-system', 'gpuvirt-automation'
AUTOMATION_USER = 'system:serviceaccount:%s:%s' % (AUTOMATION_NS, AUTOMATION_SA)
# the groups the token file gives the automation identity (as a real service account token has them)
AUTOMATION_GROUPS = ('system:serviceaccounts', 'system:serviceaccounts:%s' % AUTOMATION_NS)
# a second service account with no binding of its own: tests grant it part of the role to see a refusal
LIMITED_USER = 'system:serviceaccount:%s:gpuvirt-limited' % AUTOMATION_NS
# the Helm installs' own service account (docs/rbac/gpuvirt-automation-helm.yml): no binding until a test grants
# that file (grant_helm), as the docs say to grant it for the Helm phase only
HELM_USER = 'system:serviceaccount:%s:gpuvirt-helm' % AUTOMATION_NS
WRITE_VERBS = ('create', 'update', 'patch', 'delete', 'deletecollection')

# The upstream CRDs loaded, by file-name pattern in <reference>/crds/. One release per kind: the GPU Operator CRD
# of the release our defaults install, the OpenShift 4.18 machineconfiguration API.
CRD_FILES = (
    'gpu-operator-v26.7.0-nvidia.com_clusterpolicies.yaml',
    'gpu-operator-v26.7.0-nvidia.com_nvidiadrivers.yaml',
    'hyperconverged-cluster-operator-v1.18.1-hco.kubevirt.io_hyperconvergeds.yaml',
    'hyperconverged-cluster-operator-v1.18.1-deploy-crds-kubevirt00.crd.yaml',
    'kubevirt-v1.9.0-virtualmachine-openAPIV3Schema-from-validations_generated.go.yaml',
    'kubevirt-v1.9.0-virtualmachineinstance-openAPIV3Schema-from-validations_generated.go.yaml',
    'openshift-api-release-4.18-machineconfiguration.openshift.io_machineconfigpools-Default.crd.yaml',
    'openshift-api-release-4.18-machineconfiguration.openshift.io_machineconfigs.crd.yaml',
    'operator-framework-api-v0.45.0-operators.coreos.com_catalogsources.yaml',
    'operator-framework-api-v0.45.0-operators.coreos.com_clusterserviceversions.yaml',
    'operator-framework-api-v0.45.0-operators.coreos.com_installplans.yaml',
    'operator-framework-api-v0.45.0-operators.coreos.com_operatorgroups.yaml',
    'operator-framework-api-v0.45.0-operators.coreos.com_subscriptions.yaml',
)
# KubeVirt's VM and VMI schemas exist upstream only as Go strings; the reference holds their openAPIV3Schema,
# which needs the CRD around it that virt-operator generates (group kubevirt.io, v1, status subresource).
_SCHEMA_ONLY = {
    'virtualmachine-openAPIV3Schema': ('VirtualMachine', 'virtualmachines', 'Namespaced'),
    'virtualmachineinstance-openAPIV3Schema': ('VirtualMachineInstance', 'virtualmachineinstances', 'Namespaced'),
}


def _stand_in_crd(group, version, kind, plural, scope):
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': '%s.%s' % (plural, group), 'labels': {'gpuvirt.test/stand-in': 'true'}},
            'spec': {'group': group, 'scope': scope,
                     'names': {'kind': kind, 'plural': plural, 'singular': kind.lower(), 'listKind': kind + 'List'},
                     'versions': [{'name': version, 'served': True, 'storage': True,
                                   'subresources': {'status': {}},
                                   'schema': {'openAPIV3Schema': {
                                       'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}]}}


# APIs that are not CRDs upstream, served here by a CRD of the same group/version/kind with an open schema:
# - config.openshift.io/v1 ClusterVersion: the OpenShift API server's (the phases only test that it exists);
#   only loaded for an OpenShift-flavoured server;
# - packages.operators.coreos.com/v1 PackageManifest: OLM's aggregated package-server (read-only upstream; a test
#   writes what the catalog would list).
STAND_INS = {
    'clusterversion': _stand_in_crd('config.openshift.io', 'v1', 'ClusterVersion', 'clusterversions', 'Cluster'),
    'packagemanifest': _stand_in_crd('packages.operators.coreos.com', 'v1', 'PackageManifest', 'packagemanifests',
                                     'Namespaced'),
}
# CRDs served or not per test, which is how the phases tell platforms apart: ClusterVersion (OpenShift) and
# HyperConverged (OpenShift Virtualization / HCO; plain KubeVirt has the KubeVirt CR alone); and resource.k8s.io/v1
# (DRA, Kubernetes 1.34+), served only to the tests that ask for it (dra_stand_ins.py says why it is a stand-in).
OPTIONAL = ('clusterversions.config.openshift.io', 'hyperconvergeds.hco.kubevirt.io') + dra_stand_ins.NAMES


def reference_dir():
    """Where upstream reference files are read from, as the tests do: $GPUVIRT_REFERENCE (taken as given), else
    .build/reference when it holds crds/ (make reference), else the ``shared/reference`` folder beside the checkout."""
    override = os.environ.get('GPUVIRT_REFERENCE')
    if override:
        return override
    fetched = os.path.join(ROOT, '.build', 'reference')
    if os.path.isdir(os.path.join(fetched, 'crds')):
        return fetched
    return os.path.normpath(os.path.join(ROOT, '..', 'shared', 'reference'))


def rbac_objects(path):
    """The objects of a shipped RBAC file: one v1 List, as `kubectl apply -f` takes it."""
    with open(path, encoding='utf-8') as handle:
        doc = yaml.safe_load(handle)
    if not isinstance(doc, dict) or doc.get('kind') != 'List':
        raise ValueError('%s: not one v1 List' % path)
    return doc['items']


def strip_cel(node):
    """Drop ``x-kubernetes-validations`` (CEL, 1.25+) which a 1.20 server rejects as an unknown schema field."""
    if isinstance(node, dict):
        return {k: strip_cel(v) for k, v in node.items() if k != 'x-kubernetes-validations'}
    if isinstance(node, list):
        return [strip_cel(v) for v in node]
    return node


class ReferenceMissing(RuntimeError):
    """The reference folder lacks upstream files the server loads: says which, and the two ways to get them."""


def check_reference(reference):
    """Refuse, before anything starts, a reference folder without every CRD file the server loads."""
    missing = [name for name in CRD_FILES if not os.path.isfile(os.path.join(reference, 'crds', name))]
    if missing:
        raise ReferenceMissing(
            'the upstream reference files are missing from %s (crds/: %s). Get them one of two ways: `make reference` '
            '(fetches the pinned upstream files into .build/reference, which is then used), or set GPUVIRT_REFERENCE '
            'to a folder that has them (crds/, helm/, olm/, examples/).' % (reference, ', '.join(missing)))


def load_crds(reference):
    check_reference(reference)
    crds = []
    for name in CRD_FILES:
        path = os.path.join(reference, 'crds', name)
        with open(path, encoding='utf-8') as handle:
            docs = [d for d in yaml.safe_load_all(handle) if d]
        for doc in docs:
            if doc.get('kind') == 'CustomResourceDefinition':
                doc.setdefault('metadata', {}).pop('annotations', None)
                crds.append(strip_cel(doc))
                continue
            for marker, (kind, plural, scope) in _SCHEMA_ONLY.items():
                if '-%s-' % marker in name:
                    crd = _stand_in_crd('kubevirt.io', 'v1', kind, plural, scope)
                    del crd['metadata']['labels']
                    crd['spec']['versions'][0]['schema'] = {'openAPIV3Schema': strip_cel(doc['openAPIV3Schema'])}
                    crds.append(crd)
    return crds


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


class APIError(Exception):
    def __init__(self, status, body, method, path):
        self.status, self.body = status, body
        super().__init__('%s %s: HTTP %s %s' % (method, path, status, body))


class KubeAPIServer(object):
    """etcd + kube-apiserver under ``workdir``; ``start()``, then ``stop()`` (kills both by PID)."""

    def __init__(self, workdir, bin_dir=None, reference=None):
        self.dir = os.path.abspath(workdir)
        self.bin = bin_dir or os.environ.get('GPUVIRT_KUBE_BIN') or os.path.join(ROOT, '.build', 'kube', 'bin')
        self.reference = reference or reference_dir()
        self.optional = {}  # optional CRD name -> CRD (served now or not: self.serving)
        self.serving = set()
        self.procs = {}
        self.url = None
        self.tokens = {}
        self.audit_log = os.path.join(self.dir, 'audit.log')
        self.ca = os.path.join(self.dir, 'pki', 'ca.crt')
        self._ssl = None
        self._conns = threading.local()
        self._baseline = set()
        # reset(): the platform and objects (uid -> resourceVersion) of the last grant(), and the last discovery
        self._granted_platform, self._granted = None, {}
        self._discovered = None

    # --- lifecycle ---------------------------------------------------------------------------------------------
    def start(self):
        check_reference(self.reference)
        apiserver = os.path.join(self.bin, 'kube-apiserver')
        if not os.access(apiserver, os.X_OK):
            raise RuntimeError('%s not built: run tools/kube/build.sh (make kube-apiserver)' % apiserver)
        os.makedirs(self.dir, exist_ok=True)
        self._pki()
        self.tokens = {'admin': secrets.token_hex(16), 'automation': secrets.token_hex(16),
                       'limited': secrets.token_hex(16), 'helm': secrets.token_hex(16)}
        with open(os.path.join(self.dir, 'tokens.csv'), 'w', encoding='utf-8') as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write('%s,admin,uid-admin,system:masters\n' % self.tokens['admin'])
            handle.write('%s,%s,uid-automation,"%s"\n'
                         % (self.tokens['automation'], AUTOMATION_USER, ','.join(AUTOMATION_GROUPS)))
            handle.write('%s,%s,uid-limited,"system:serviceaccounts,system:serviceaccounts:%s"\n'
                         % (self.tokens['limited'], LIMITED_USER, AUTOMATION_NS))
            handle.write('%s,%s,uid-helm,"system:serviceaccounts,system:serviceaccounts:%s"\n'
                         % (self.tokens['helm'], HELM_USER, AUTOMATION_NS))
        with open(os.path.join(self.dir, 'audit-policy.yaml'), 'w', encoding='utf-8') as handle:
            yaml.safe_dump(AUDIT_POLICY, handle)
        etcd_port, peer_port, port = _free_port(), _free_port(), _free_port()
        log = open(os.path.join(self.dir, 'etcd.log'), 'w', encoding='utf-8')  # noqa: SIM115 (lives with the process)
        self.procs['etcd'] = subprocess.Popen(
            ['etcd', '--name', 'gpuvirt-test', '--data-dir', os.path.join(self.dir, 'etcd'),
             '--listen-client-urls', 'http://127.0.0.1:%d' % etcd_port,
             '--advertise-client-urls', 'http://127.0.0.1:%d' % etcd_port,
             '--listen-peer-urls', 'http://127.0.0.1:%d' % peer_port,
             '--initial-advertise-peer-urls', 'http://127.0.0.1:%d' % peer_port,
             '--initial-cluster', 'gpuvirt-test=http://127.0.0.1:%d' % peer_port],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        pki = os.path.join(self.dir, 'pki')
        log = open(os.path.join(self.dir, 'kube-apiserver.log'), 'w', encoding='utf-8')  # noqa: SIM115
        self.procs['kube-apiserver'] = subprocess.Popen(
            [apiserver, '--etcd-servers', 'http://127.0.0.1:%d' % etcd_port,
             '--bind-address', '127.0.0.1', '--advertise-address', '127.0.0.1',
             '--secure-port', str(port), '--insecure-port', '0',
             '--tls-cert-file', os.path.join(pki, 'server.crt'), '--tls-private-key-file', os.path.join(pki, 'server.key'),
             '--token-auth-file', os.path.join(self.dir, 'tokens.csv'),
             '--authorization-mode', 'Node,RBAC',
             '--service-account-key-file', os.path.join(pki, 'sa.pub'),
             '--service-account-signing-key-file', os.path.join(pki, 'sa.key'),
             '--service-account-issuer', 'https://kubernetes.default.svc',
             '--service-cluster-ip-range', '10.96.0.0/24',
             # no controller-manager makes service-account tokens
             '--disable-admission-plugins', 'ServiceAccount',
             '--enable-priority-and-fairness=false',
             '--audit-policy-file', os.path.join(self.dir, 'audit-policy.yaml'),
             '--audit-log-path', self.audit_log, '--audit-log-format', 'json',
             '--cert-dir', pki],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        with open(os.path.join(self.dir, 'pids'), 'w', encoding='utf-8') as handle:
            handle.write(''.join('%s %d\n' % (n, p.pid) for n, p in self.procs.items()))
        self.url = 'https://127.0.0.1:%d' % port
        self._ssl = ssl.create_default_context(cafile=self.ca)
        self._wait_ready()
        self._load_crds()
        self.write_kubeconfig('admin')
        self.write_kubeconfig('automation')
        self.write_kubeconfig('limited')
        self.write_kubeconfig('helm')
        self._baseline = self._uids()
        with open(os.path.join(self.dir, 'state.json'), 'w', encoding='utf-8') as handle:
            os.fchmod(handle.fileno(), 0o600)
            json.dump({'url': self.url, 'tokens': self.tokens}, handle)
        return self

    @classmethod
    def attach(cls, workdir):
        """The server a CLI ``start`` left running in ``workdir``."""
        server = cls(workdir)
        with open(os.path.join(server.dir, 'state.json'), encoding='utf-8') as handle:
            state = json.load(handle)
        server.url, server.tokens = state['url'], state['tokens']
        server._conns = threading.local()
        server._ssl = ssl.create_default_context(cafile=server.ca)
        return server

    def stop(self):
        for name in ('kube-apiserver', 'etcd'):
            proc = self.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    def _pki(self):
        pki = os.path.join(self.dir, 'pki')
        os.makedirs(pki, exist_ok=True)
        ossl = ['openssl']
        _run(ossl + ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=gpuvirt-test-ca',
                     '-keyout', os.path.join(pki, 'ca.key'), '-out', self.ca])
        _run(ossl + ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=kube-apiserver',
                     '-keyout', os.path.join(pki, 'server.key'), '-out', os.path.join(pki, 'server.csr')])
        ext = os.path.join(pki, 'san.ext')
        with open(ext, 'w', encoding='utf-8') as handle:
            handle.write('subjectAltName=IP:127.0.0.1,DNS:localhost\n')
        _run(ossl + ['x509', '-req', '-in', os.path.join(pki, 'server.csr'), '-CA', self.ca,
                     '-CAkey', os.path.join(pki, 'ca.key'), '-CAcreateserial', '-days', '2', '-extfile', ext,
                     '-out', os.path.join(pki, 'server.crt')])
        _run(ossl + ['genrsa', '-out', os.path.join(pki, 'sa.key'), '2048'])
        _run(ossl + ['rsa', '-in', os.path.join(pki, 'sa.key'), '-pubout', '-out', os.path.join(pki, 'sa.pub')])

    def _wait_ready(self, timeout=90):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError('%s exited (%s); see %s/%s.log' % (name, proc.returncode, self.dir, name))
            try:
                status, body = self.request('GET', '/readyz', raw=True)
                if status == 200:
                    return
                last = body
            except (OSError, APIError) as exc:
                last = exc
            time.sleep(0.5)
        raise RuntimeError('kube-apiserver not ready after %ds: %s' % (timeout, last))

    # --- REST ---------------------------------------------------------------------------------------------------
    def _connection(self):
        """This thread's keep-alive connection to the server (the controller stand-ins call from their own threads).
        One TLS connection reused for every request: a reset alone sends a few hundred, and a handshake each was
        most of its time. Each request is still one request in the audit log."""
        conn = getattr(self._conns, 'conn', None)
        if conn is not None and conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            # readable while no request is in flight: the server has closed it (as urllib3 checks before reuse)
            conn.close()
            conn = None
        if conn is None or getattr(self._conns, 'url', None) != self.url:
            parsed = urllib.parse.urlsplit(self.url)
            conn = http.client.HTTPSConnection(parsed.hostname, parsed.port, context=self._ssl, timeout=30)
            self._conns.conn, self._conns.url, self._conns.used = conn, self.url, False
        return conn

    def _send(self, method, path, data, headers):
        conn = self._connection()
        reused = self._conns.used
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            status, text = resp.status, resp.read().decode()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ssl.SSLEOFError,
                ssl.SSLZeroReturnError):
            conn.close()
            self._conns.conn = None
            if not reused:
                raise
            # the server closed an idle kept-alive connection before it read the request: send it once more on a
            # new one (as urllib3 does); the request never reached the server, so it is not in the audit log twice
            conn = self._connection()
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            status, text = resp.status, resp.read().decode()
        except Exception:
            conn.close()
            self._conns.conn = None
            raise
        self._conns.used = True
        if resp.will_close:
            conn.close()
            self._conns.conn = None
        return status, text

    def request(self, method, path, body=None, user='admin', raw=False, content_type='application/json',
                ok=(200, 201, 202)):
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        headers = {'Authorization': 'Bearer %s' % self.tokens[user]}
        if data is not None:
            headers['Content-Type'] = content_type
        status, text = self._send(method, path, data, headers)
        if raw:
            return status, text
        parsed = json.loads(text) if text.startswith('{') else text
        if status not in ok:
            raise APIError(status, parsed, method, path)
        return parsed

    @staticmethod
    def path(api_version, plural, namespace=None, name=None, subresource=None):
        base = '/api/v1' if api_version == 'v1' else '/apis/' + api_version
        parts = [base] + (['namespaces', namespace] if namespace else []) + [plural]
        parts += [name] if name else []
        parts += [subresource] if subresource else []
        return '/'.join(parts)

    def plural(self, api_version, kind):
        base = '/api/v1' if api_version == 'v1' else '/apis/' + api_version
        for res in self.request('GET', base)['resources']:
            if res['kind'] == kind and '/' not in res['name']:
                return res['name']
        raise KeyError('%s %s is not served' % (api_version, kind))

    def get(self, api_version, kind, name, namespace=None):
        status, text = self.request('GET', self.path(api_version, self.plural(api_version, kind), namespace, name),
                                    raw=True)
        if status == 404:
            return None
        if status != 200:
            raise APIError(status, text, 'GET', name)
        return json.loads(text)

    def create(self, obj):
        """Create ``obj`` as the admin (a test's fixture); a ``status`` in it is then written through the status
        subresource, as its controller would."""
        obj = copy.deepcopy(obj)
        status = obj.pop('status', None)
        meta = obj['metadata']
        if meta.get('namespace'):
            self.ensure_namespace(meta['namespace'])
        plural = self.plural(obj['apiVersion'], obj['kind'])
        created = self.request('POST', self.path(obj['apiVersion'], plural, meta.get('namespace')), obj)
        if status is not None:
            created = self.set_status(created, status)
        return created

    def set_status(self, obj, status):
        """Write ``status`` through the status subresource: what a controller (kubelet, OLM, MCO, operator) does."""
        meta = obj['metadata']
        plural = self.plural(obj['apiVersion'], obj['kind'])
        current = self.request('GET', self.path(obj['apiVersion'], plural, meta.get('namespace'), meta['name']))
        current['status'] = status
        return self.request('PUT', self.path(obj['apiVersion'], plural, meta.get('namespace'), meta['name'],
                                             'status'), current)

    def ensure_namespace(self, name):
        status, _body = self.request('GET', '/api/v1/namespaces/' + name, raw=True)
        if status == 404:
            namespace = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}}
            self.request('POST', '/api/v1/namespaces', namespace)

    def create_crd(self, crd):
        self.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
        self._wait_established([crd['metadata']['name']])

    def delete_crd(self, name):
        path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/' + name
        status, _body = self.request('DELETE', path, raw=True)
        deadline = time.time() + 30
        while status != 404 and time.time() < deadline:
            status, _body = self.request('GET', path, raw=True)
            time.sleep(0.2)

    def _wait_established(self, names, timeout=60):
        deadline = time.time() + timeout
        pending = set(names)
        while pending and time.time() < deadline:
            for name in sorted(pending):
                crd = self.request('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/' + name)
                conds = {c['type']: c['status'] for c in (crd.get('status') or {}).get('conditions') or []}
                if conds.get('Established') == 'True':
                    pending.discard(name)
            time.sleep(0.2)
        if pending:
            raise RuntimeError('CRDs not established after %ds: %s' % (timeout, sorted(pending)))
        # discovery lags the Established condition by a moment; a CRD's kind may be served in any of its versions
        for name in names:
            plural, group = name.split('.', 1)
            for _attempt in range(100):
                status, text = self.request('GET', '/apis/' + group, raw=True)
                if status == 200 and any(
                        plural in [r['name'] for r in self.request('GET', '/apis/' + v['groupVersion'])['resources']]
                        for v in json.loads(text)['versions']):
                    break
                time.sleep(0.1)

    def _load_crds(self):
        crds = load_crds(self.reference) + [STAND_INS['packagemanifest'], STAND_INS['clusterversion']]
        crds += dra_stand_ins.crds()
        for crd in crds:
            if crd['metadata']['name'] in OPTIONAL:
                self.optional[crd['metadata']['name']] = crd
            self.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
        self.serving = set(self.optional)
        self._wait_established([c['metadata']['name'] for c in crds])

    def grant(self, platform):
        """Apply the platform's shipped RBAC file (RBAC_FILES) as a cluster admin does with ``kubectl apply -f``:
        every object, in the file's order. A Role's namespace that the file does not create is the platform's own
        (default, openshift-marketplace) or comes with KubeVirt (openshift-cnv, kubevirt): made first, as that
        install would have. Returns once the authorizer (fed by an informer) sees every rule."""
        objects = rbac_objects(RBAC_FILES[platform])
        made = []
        for obj in objects:
            if obj['kind'] == 'Namespace':
                made.append(self._create_namespace(obj))
                continue
            if obj['metadata'].get('namespace'):
                made.append(self._create_namespace({'apiVersion': 'v1', 'kind': 'Namespace',
                                                    'metadata': {'name': obj['metadata']['namespace']}}))
            made.append(self.create(obj))
        self._wait_granted(objects)
        # what this grant made, as made: reset() keeps it while every one is there unchanged (_kept_grant)
        self._granted_platform = platform
        self._granted = {m['metadata']['uid']: m['metadata']['resourceVersion'] for m in made if m}

    def grant_helm(self):
        """Apply docs/rbac/gpuvirt-automation-helm.yml as an admin does for the Helm phase; reset() removes it."""
        objects = rbac_objects(HELM_RBAC_FILE)
        for obj in objects:
            if obj['kind'] == 'Namespace':
                self._create_namespace(obj)
            else:
                self.create(obj)
        deadline = time.time() + 30
        while not self.granted(HELM_USER, ('system:serviceaccounts',), {'verb': 'create', 'resource': 'secrets',
                                                                        'namespace': 'gpu-operator'}):
            if time.time() > deadline:
                raise RuntimeError('the Helm RBAC file was applied but %s is still refused' % HELM_USER)
            time.sleep(0.2)

    def grant_upgrade(self):
        """Apply docs/rbac/gpuvirt-automation-upgrade.yml as an admin does for an upgrade; reset() removes it."""
        objects = rbac_objects(UPGRADE_RBAC_FILE)
        for obj in objects:
            if obj['metadata'].get('namespace'):
                self._create_namespace({'apiVersion': 'v1', 'kind': 'Namespace',
                                        'metadata': {'name': obj['metadata']['namespace']}})
            self.create(obj)
        self._wait_granted(objects)

    def _create_namespace(self, obj, timeout=30):
        """Create the namespace ``obj``; returns it as created, or None when it was there already."""
        # reset() has just finalized the namespaces of the previous test: a name may still be terminating
        deadline = time.time() + timeout
        while True:
            status, body = self.request('POST', '/api/v1/namespaces', obj, raw=True)
            if status == 201 or time.time() > deadline:
                break
            if status == 409 and 'being deleted' not in body:
                break  # there already: default, or one this grant made for an earlier object
            time.sleep(0.2)
        if status not in (201, 409) or 'being deleted' in body:
            raise APIError(status, body, 'POST', '/api/v1/namespaces')
        return json.loads(body) if status == 201 else None

    def _wait_granted(self, objects, timeout=30):
        roles = [o for o in objects if o['kind'] in ('Role', 'ClusterRole')]
        checks = []
        for role in roles:
            for rule in role['rules']:
                checks.append({'verb': rule['verbs'][0], 'group': rule['apiGroups'][0],
                               'resource': rule['resources'][0].split('/')[0],
                               'subresource': (rule['resources'][0].split('/') + [''])[1],
                               'namespace': role['metadata'].get('namespace', ''),
                               'name': (rule.get('resourceNames') or [''])[0]})
        deadline = time.time() + timeout
        while checks and time.time() < deadline:
            checks = [c for c in checks if not self.granted(AUTOMATION_USER, AUTOMATION_GROUPS, c)]
            if checks:
                time.sleep(0.1)
        if checks:
            raise RuntimeError('the shipped RBAC is not in force after %ds: %s' % (timeout, checks))

    def granted(self, username, groups, attributes):
        """Whether ``username`` (in ``groups``) may do ``attributes``, asked by the admin with a SubjectAccessReview:
        the harness's own checks then never appear in the audit log as requests of the identity under test (whose
        every create, SelfSubjectAccessReviews included, the no-write checks count)."""
        review = {'apiVersion': 'authorization.k8s.io/v1', 'kind': 'SubjectAccessReview',
                  'spec': {'user': username, 'groups': list(groups), 'resourceAttributes': attributes}}
        answer = self.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', review, user='admin')
        return bool(answer['status'].get('allowed'))

    def can(self, user, attributes):
        """Whether ``user`` may do ``attributes`` (a SelfSubjectAccessReview's resourceAttributes: verb, group,
        resource, subresource, namespace, name), asked as that user."""
        review = {'apiVersion': 'authorization.k8s.io/v1', 'kind': 'SelfSubjectAccessReview',
                  'spec': {'resourceAttributes': attributes}}
        answer = self.request('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', review, user=user)
        return bool(answer['status'].get('allowed'))

    def serve(self, platform='openshift', hco=None, dra=False):
        """Serve the optional APIs of a platform (a row of the platform table): the API its row detects it by
        (detect_api and detect_kind: ClusterVersion on OpenShift), HyperConverged where HCO runs (by default: where
        the row's kubevirt_config is hco), resource.k8s.io/v1 where ``dra`` (a 1.34+ cluster)."""
        row = platform_table.PLATFORMS[platform]
        want = set(dra_stand_ins.NAMES) if dra else set()
        if row.detect_api:
            want.add(self._detection_crd(row))
        if row.kubevirt_config == 'hco' if hco is None else hco:
            want.add('hyperconvergeds.hco.kubevirt.io')
        for name in sorted(self.serving - want):
            self.delete_crd(name)
        for name in sorted(want - self.serving):
            self.create_crd(self.optional[name])
        self.serving = want

    def _detection_crd(self, row):
        """The name of the CRD that serves ``row``'s detect_api and detect_kind: OpenShift's ClusterVersion stand-in,
        or, for a row whose API no reference CRD holds, a stand-in of that group, version and kind made here (its
        plural the kind's lower case and an s, as the API server lists a kind that declares none)."""
        group, _slash, version = row.detect_api.rpartition('/')
        plural = row.detect_kind.lower() + 's'
        name = '%s.%s' % (plural, group)
        if name not in self.optional:
            self.optional[name] = _stand_in_crd(group, version, row.detect_kind, plural, 'Cluster')
        return name

    # --- kubeconfig ---------------------------------------------------------------------------------------------
    def kubeconfig_path(self, user):
        return os.path.join(self.dir, 'kubeconfig-%s' % user)

    def write_kubeconfig(self, user):
        with open(self.ca, 'rb') as handle:
            ca = base64.b64encode(handle.read()).decode()
        config = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'gpuvirt-test',
                  'clusters': [{'name': 'gpuvirt-test', 'cluster': {'server': self.url,
                                                                    'certificate-authority-data': ca}}],
                  'users': [{'name': user, 'user': {'token': self.tokens[user]}}],
                  'contexts': [{'name': 'gpuvirt-test', 'context': {'cluster': 'gpuvirt-test', 'user': user}}]}
        path = self.kubeconfig_path(user)
        with open(path, 'w', encoding='utf-8') as handle:
            os.fchmod(handle.fileno(), 0o600)
            yaml.safe_dump(config, handle)
        return path

    # --- audit --------------------------------------------------------------------------------------------------
    def audit_mark(self):
        """A position in the audit log; ``writes(since=mark)`` reads the requests after it."""
        try:
            return os.path.getsize(self.audit_log)
        except OSError:
            return 0

    def audit(self, since=0):
        # the audit backend writes asynchronously in batches; give it a moment to flush the last request
        time.sleep(0.3)
        events = []
        with open(self.audit_log, encoding='utf-8') as handle:
            handle.seek(since)
            for line in handle:
                if line.strip():
                    events.append(json.loads(line))
        return events

    def writes(self, since=0, user=AUTOMATION_USER):
        """Successful writes (create/update/patch/delete) by ``user`` after ``since``, with the request body."""
        return [e for e in self.audit(since) if e['verb'] in WRITE_VERBS and e['user']['username'] == user
                and e.get('responseStatus', {}).get('code', 0) < 400
                and 'dryRun=All' not in e.get('requestURI', '')]

    def dry_runs(self, since=0, user=AUTOMATION_USER):
        return [e for e in self.audit(since) if e['verb'] in WRITE_VERBS and e['user']['username'] == user
                and 'dryRun=All' in e.get('requestURI', '')]

    # --- reset between tests ------------------------------------------------------------------------------------
    def _resources(self):
        """(groupVersion, plural, namespaced) for every listable, deletable resource served now.

        What is served changes only with the CRDs: the discovery of the last call is reused while the CRDs are the
        same (names and resourceVersions, one list request instead of one discovery request per group version), and
        kept only when it served every one of them (discovery lags a new CRD's Established condition)."""
        # the CRDs' metadata only (a PartialObjectMetadataList, meta.k8s.io/v1): their schemas make the full list large
        status, text = self._send('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', None, {
            'Authorization': 'Bearer %s' % self.tokens['admin'],
            'Accept': 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1'})
        if status != 200:
            raise APIError(status, text, 'GET', 'customresourcedefinitions')
        key = sorted((c['metadata']['name'], c['metadata']['resourceVersion']) for c in json.loads(text)['items'])
        if self._discovered is not None and self._discovered[0] == key:
            return list(self._discovered[1])
        out = self._discover()
        # a CRD's name is <plural>.<group> (the API server refuses any other)
        served = {'%s.%s' % (plural, gv.rsplit('/', 1)[0]) for gv, plural, _namespaced in out}
        if all(name in served for name, _version in key):
            self._discovered = (key, out)
        return list(out)

    def _discover(self):
        out = [('v1', r['name'], r['namespaced']) for r in self.request('GET', '/api/v1')['resources']
               if '/' not in r['name'] and {'list', 'delete'} <= set(r['verbs'])]
        seen = set()
        for group in self.request('GET', '/apis')['groups']:
            # every version: a group's preferred version may lack kinds (operators.coreos.com/v1 has no Subscription)
            for version in group['versions']:
                status, text = self.request('GET', '/apis/' + version['groupVersion'], raw=True)
                if status != 200:
                    continue
                for res in json.loads(text)['resources']:
                    key = (group['name'], res['name'])
                    if '/' not in res['name'] and {'list', 'delete'} <= set(res['verbs']) and key not in seen:
                        seen.add(key)
                        out.append((version['groupVersion'], res['name'], res['namespaced']))
        return [r for r in out if r[1] not in ('events', 'componentstatuses')]

    def _uids(self):
        uids = set()
        for gv, plural, _namespaced in self._resources():
            status, text = self.request('GET', self.path(gv, plural), raw=True)
            if status == 200:
                uids.update(i['metadata']['uid'] for i in json.loads(text).get('items', []))
        return uids

    def reset(self, openshift=True, hco=None, dra=False, platform=None):
        """Delete every object made since start (namespaces last, finalized by hand: no namespace controller), serve
        the platform's APIs and grant its shipped RBAC afresh (so a test sees exactly the file, never what an
        earlier test changed). The CRDs and built-in objects of a fresh server stay.

        The last grant's objects are kept instead of made again when the platform is the same and every one of them
        is still there as that grant made it (same uid, same resourceVersion: no test changed, deleted or
        re-created one): the server then holds exactly what a fresh grant would make, and every other object is
        deleted as before.

        ``platform`` names a row of the platform table (its detection API served, its RBAC file granted); without it,
        ``openshift`` picks openshift or the fallback row."""
        platform = platform or ('openshift' if openshift else platform_table.FALLBACK)
        found = []
        for gv, plural, _namespaced in self._resources():
            status, text = self.request('GET', self.path(gv, plural), raw=True)
            if status != 200:
                continue
            for item in json.loads(text).get('items', []):
                meta = item['metadata']
                if meta['uid'] in self._baseline or (plural == 'customresourcedefinitions' and meta['name'] in self.optional):
                    continue  # what a fresh server holds; the optional CRDs are serve()'s
                found.append((gv, plural, item))
        kept = self._kept_grant(platform, [item for _gv, _plural, item in found])
        namespaces = []
        for gv, plural, item in found:
            meta = item['metadata']
            if meta['uid'] in kept:
                continue
            if plural == 'namespaces':
                namespaces.append(meta['name'])
                continue
            if plural == 'customresourcedefinitions':
                self.delete_crd(meta['name'])  # waits: a CRD being deleted still blocks a new one of its name
                continue
            path = self.path(gv, plural, meta.get('namespace'), meta['name'])
            if meta.get('finalizers') and plural != 'customresourcedefinitions':
                self.request('PATCH', path, {'metadata': {'finalizers': None}},
                             content_type='application/merge-patch+json', ok=(200, 404))
            self.request('DELETE', path, {'kind': 'DeleteOptions', 'apiVersion': 'v1', 'gracePeriodSeconds': 0},
                         ok=(200, 202, 404))
        for name in namespaces:
            self.request('DELETE', '/api/v1/namespaces/' + name, ok=(200, 202, 404))
            status, text = self.request('GET', '/api/v1/namespaces/' + name, raw=True)
            if status == 200:
                ns = json.loads(text)
                ns['spec']['finalizers'] = []
                self.request('PUT', '/api/v1/namespaces/%s/finalize' % name, ns, ok=(200, 404, 409))
        self.serve(platform, hco, dra)
        if not kept:
            self.grant(platform)

    def _kept_grant(self, platform, items):
        """The uids of the last grant's objects when all of them are among ``items`` unchanged and the platform is
        the same; else none (and the grant is forgotten: its objects are deleted and granted afresh)."""
        present = {i['metadata']['uid']: i['metadata']['resourceVersion'] for i in items
                   if i['metadata']['uid'] in self._granted}
        if platform == self._granted_platform and self._granted and present == self._granted:
            return set(self._granted)
        self._granted_platform, self._granted = None, {}
        return set()


AUDIT_POLICY = {
    'apiVersion': 'audit.k8s.io/v1', 'kind': 'Policy', 'omitStages': ['RequestReceived'],
    'rules': [
        {'level': 'None', 'users': ['system:apiserver']},
        {'level': 'None', 'nonResourceURLs': ['/healthz*', '/readyz*', '/livez*', '/version', '/openapi/*']},
        {'level': 'Request', 'verbs': list(WRITE_VERBS)},
        {'level': 'Metadata'},
    ]}


def main(argv):
    if len(argv) < 3 or argv[1] not in ('start', 'stop', 'seed') or (argv[1] == 'seed') != (len(argv) == 4):
        sys.stderr.write('usage: apiserver.py start|stop DIR | seed DIR FILE\n')
        return 2
    workdir = os.path.abspath(argv[2])
    if argv[1] == 'seed':
        server = KubeAPIServer.attach(workdir)
        with open(argv[3], encoding='utf-8') as handle:
            docs = [d for d in yaml.safe_load_all(handle) if d]
        for doc in docs:
            for obj in doc.get('items', []) if doc.get('kind') == 'List' else [doc]:
                server.create(obj)
        return 0
    if argv[1] == 'stop':
        try:
            with open(os.path.join(workdir, 'pids'), encoding='utf-8') as handle:
                pids = [int(line.split()[1]) for line in handle if line.strip()]
        except OSError:
            return 0
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        os.remove(os.path.join(workdir, 'pids'))
        return 0
    try:
        server = KubeAPIServer(workdir).start()
    except ReferenceMissing as exc:
        sys.stderr.write('apiserver.py: %s\n' % exc)
        return 2
    # by hand (the lab, `make demo`): a plain Kubernetes cluster with KubeVirt, no OpenShift or HCO APIs, the
    # automation granted what docs/rbac/gpuvirt-automation-kubernetes.yml grants, and the Helm identity what
    # docs/rbac/gpuvirt-automation-helm.yml grants (the demo's GPU Operator phase installs through Helm with it)
    server.reset(openshift=False, hco=False)
    server.grant_helm()
    # leave the processes running: the PIDs are in DIR/pids for `stop`
    server.procs.clear()
    print(json.dumps({'url': server.url, 'admin_kubeconfig': server.kubeconfig_path('admin'),
                      'automation_kubeconfig': server.kubeconfig_path('automation'),
                      'helm_kubeconfig': server.kubeconfig_path('helm'),
                      'audit_log': server.audit_log}))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
