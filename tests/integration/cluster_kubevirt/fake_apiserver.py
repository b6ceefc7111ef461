# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A minimal in-memory stand-in for the Kubernetes API, kept for one case only: the DRA path.

Every other apply test runs against a real kube-apiserver (tests/integration/kube_cluster.py). That server is
1.20 and cannot serve ``resource.k8s.io/v1`` (Dynamic Resource Allocation, Kubernetes 1.34+), which the DRA role
requires before it goes on; the DRA role's own checks before any write (a DRA node still running the classic device
plugin) are therefore exercised here. This is NOT an API server: it serves discovery, GET (object and list) and
server-side-apply PATCH for the kinds below; apply merges maps and replaces lists without field ownership; there is
no admission, validation or label-selector filtering. Every PATCH is recorded in ``writes`` (``dry_runs`` for dryRun
requests, answered but never stored), ``events`` records every write and eviction in order.
"""
from __future__ import annotations

import copy
import http.server
import json
import threading
import urllib.parse

import yaml

# group/version -> [(plural, kind, namespaced)]
RESOURCES = {
    'v1': [('nodes', 'Node', False), ('pods', 'Pod', True), ('namespaces', 'Namespace', False)],
    'apiextensions.k8s.io/v1': [('customresourcedefinitions', 'CustomResourceDefinition', False)],
    'hco.kubevirt.io/v1beta1': [('hyperconvergeds', 'HyperConverged', True)],
    'kubevirt.io/v1': [('kubevirts', 'KubeVirt', True)],
    'machineconfiguration.openshift.io/v1': [('machineconfigs', 'MachineConfig', False),
                                             ('machineconfigpools', 'MachineConfigPool', False)],
    'resource.k8s.io/v1': [('resourceclaimtemplates', 'ResourceClaimTemplate', True)],
}
_PLURAL = dict(((gv, kind), plural) for gv, items in RESOURCES.items() for plural, kind, _ns in items)


def _merge(base, patch):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = _merge(base.get(key), value)
        return out
    return copy.deepcopy(patch)


class FakeAPI(object):
    def __init__(self, objects=()):
        self.store = {}
        self.writes = []
        self.dry_runs = []
        self.events = []
        self.version = 1
        for obj in objects:
            self.put(obj)

    def key(self, obj):
        meta = obj['metadata']
        return (obj['apiVersion'], _PLURAL[(obj['apiVersion'], obj['kind'])], meta.get('namespace'), meta['name'])

    def put(self, obj):
        obj = copy.deepcopy(obj)
        self.version += 1
        obj['metadata'].setdefault('uid', 'uid-%d' % self.version)
        obj['metadata']['resourceVersion'] = str(self.version)
        obj['metadata'].setdefault('generation', 1)
        self.store[self.key(obj)] = obj
        return obj

    def event(self, method, path, body):
        self.events.append({'method': method, 'path': path, 'body': copy.deepcopy(body)})

    def get(self, api_version, kind, name, namespace=None):
        return self.store.get((api_version, _PLURAL[(api_version, kind)], namespace, name))

    def start(self):
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def route(self):
                path = urllib.parse.urlparse(self.path).path.strip('/').split('/')
                if path[0] == 'api':
                    gv, rest = 'v1', path[2:]
                elif path[0] == 'apis' and len(path) >= 3:
                    gv, rest = '%s/%s' % (path[1], path[2]), path[3:]
                else:
                    return None
                namespace = None
                if len(rest) >= 3 and rest[0] == 'namespaces':
                    namespace, rest = rest[1], rest[2:]
                return gv, namespace, rest

            def not_found(self, what):
                self.send(404, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'reason': 'NotFound',
                                'code': 404, 'message': '%s not found' % what})

            def do_GET(self):
                parts = urllib.parse.urlparse(self.path).path.strip('/').split('/')
                if parts == ['version']:
                    return self.send(200, {'major': '1', 'minor': '34', 'gitVersion': 'v1.34.0-fake'})
                if parts == ['api']:
                    return self.send(200, {'kind': 'APIVersions', 'versions': ['v1']})
                if parts == ['apis']:
                    groups = [{'name': gv.split('/')[0], 'versions': [{'groupVersion': gv, 'version': gv.split('/')[1]}],
                               'preferredVersion': {'groupVersion': gv, 'version': gv.split('/')[1]}}
                              for gv in RESOURCES if '/' in gv]
                    return self.send(200, {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': groups})
                gv_only = (parts[0] == 'api' and len(parts) == 2) or (parts[0] == 'apis' and len(parts) == 3)
                if gv_only:
                    gv = parts[1] if parts[0] == 'api' else '%s/%s' % (parts[1], parts[2])
                    if gv not in RESOURCES:
                        return self.not_found(gv)
                    items = [{'name': p, 'singularName': k.lower(), 'namespaced': ns, 'kind': k,
                              'verbs': ['get', 'list', 'patch', 'create', 'update', 'delete']}
                             for p, k, ns in RESOURCES[gv]]
                    return self.send(200, {'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': gv,
                                           'resources': items})
                route = self.route()
                if not route or route[0] not in RESOURCES:
                    return self.not_found(self.path)
                gv, namespace, rest = route
                kind = dict((p, k) for p, k, _ns in RESOURCES[gv]).get(rest[0])
                if len(rest) == 1:
                    items = [o for (g, p, ns, _n), o in sorted(api.store.items(), key=lambda kv: str(kv[0]))
                             if g == gv and p == rest[0] and (namespace is None or ns == namespace)]
                    query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
                    for selector in query.get('fieldSelector', []):  # only spec.nodeName=..., as k8s_drain asks
                        field, _eq, value = selector.partition('=')
                        if field == 'spec.nodeName':
                            items = [o for o in items if (o.get('spec') or {}).get('nodeName') == value]
                    return self.send(200, {'kind': '%sList' % kind, 'apiVersion': gv,
                                           'metadata': {'resourceVersion': str(api.version)}, 'items': items})
                obj = api.store.get((gv, rest[0], namespace, rest[1]))
                return self.send(200, obj) if obj else self.not_found('%s %s' % (rest[0], rest[1]))

            def do_PATCH(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0)).decode()
                gv, namespace, rest = self.route()
                patch = yaml.safe_load(body)
                key = (gv, rest[0], namespace, rest[1])
                old = api.store.get(key)
                new = _merge(old or {}, patch)
                if 'dryRun' in urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query):
                    api.dry_runs.append(copy.deepcopy(patch))  # answered, never stored
                    return self.send(200, new)
                api.writes.append(copy.deepcopy(patch))
                api.event('PATCH', urllib.parse.urlparse(self.path).path, patch)
                if old is not None and new == old:
                    return self.send(200, old)
                return self.send(201 if old is None else 200, api.put(new))

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0)).decode()
                gv, namespace, rest = self.route()
                if gv == 'v1' and len(rest) == 3 and rest[0] == 'pods' and rest[2] == 'eviction':
                    key = (gv, 'pods', namespace, rest[1])
                    if key not in api.store:
                        return self.not_found('pods %s' % rest[1])
                    del api.store[key]
                    api.event('POST', urllib.parse.urlparse(self.path).path, json.loads(body or '{}'))
                    return self.send(201, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Success'})
                return self.not_found(self.path)

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return 'http://127.0.0.1:%d' % self.server.server_address[1]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def kubeconfig(path, server):
    path.write_text(yaml.safe_dump({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'fake',
        'clusters': [{'name': 'fake', 'cluster': {'server': server}}],
        'users': [{'name': 'tester', 'user': {'token': 'not-a-secret'}}],
        'contexts': [{'name': 'fake', 'context': {'cluster': 'fake', 'user': 'tester'}}],
    }))
    return str(path)
