# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A recorded stand-in for the ``helm`` 3 binary, for the apply tests (no helm can be had on the test machines).

It is put on PATH as ``helm`` by ``install(bin_dir, log, reference)``; every call appends its argv and the
environment kubernetes.core.helm gives it (HELM_NAMESPACE, HELM_KUBECONTEXT, whether KUBECONFIG is set) to the
JSON-lines ``log``. It answers only the commands, in the forms, that the collection's tasks and kubernetes.core.helm
send, and refuses any other flag with helm's own "unknown flag" error, so a change of argv shows up as a failure:

* ``version``: the line kubernetes.core parses (kubernetes.core plugins/module_utils/helm.py get_helm_version);
* ``show values CHART --repo URL --version V`` (the gpu_operator role) and ``--version=V --repo=URL show chart
  'CHART'`` (kubernetes.core plugins/modules/helm.py fetch_chart_info): from the chart's values.yaml in the reference
  folder (``helm/<chart>-<version>-values.yaml``); an unknown chart or version fails as helm does; ``show chart
  CHART --repo URL --version V`` (playbooks/upgrade.yml, the Helm operator step) too, with no ``dependencies`` (the
  reference holds no Chart.yaml);
* ``show crds CHART --repo URL --version V`` (playbooks/upgrade.yml, the Helm operator step): the chart's CRDs from
  the reference folder, ``crds/<chart>-<version>-*.yaml`` (for gpu-operator only the ClusterPolicy and NVIDIADriver
  CRDs are there; the real chart prints its GPUCluster, ComputeDomain(Clique) and NFD CRDs too), with
  ``x-kubernetes-validations`` removed as tools/kube/apiserver.py removes them (the test server, 1.20, refuses
  CEL); an unknown chart or version fails as helm does. ``FAKE_HELM_CRDS_EXTRA``, when set, names a file whose
  YAML documents are printed after them (a test's broken chart);
* ``list --output=yaml --filter NAME [--all]``, ``get values --output=yaml NAME`` and ``get manifest|notes|hooks
  NAME`` (get_release_status, get_values, get_manifest, get_notes, get_hooks; kubernetes.core.helm_info): read from
  the release Secrets in the API server, as Helm 3 stores releases (manifest, notes and hooks are empty: nothing is
  templated);
* ``plugin list`` (get_plugin_version): no plugin, so the module uses its default idempotency check;
* ``--version=V --repo=URL upgrade -i --reset-values [--wait] -f=FILE NAME 'CHART'`` (deploy): every key path of the
  values file must exist in the chart's values.yaml (Helm itself ignores unknown keys; this is what the role's check
  is for), then the release is written through the real API server as Helm 3 writes it: the Secret
  ``sh.helm.release.v1.<name>.v<N>`` (type helm.sh/release.v1, labels name/owner/status/version, the release as
  base64 gzipped JSON; helm/helm pkg/storage/driver/secrets.go newSecretsObject, util.go encodeRelease), the previous
  revision marked superseded, and the ClusterPolicy ``cluster-policy`` the gpu-operator chart creates when
  ``clusterPolicy.deployCR`` is true (NVIDIA/gpu-operator deployments/gpu-operator/templates/clusterpolicy.yaml).

What it cannot do: it does not template the chart. The ClusterPolicy's spec is the values' sections of the same
name as the CRD's spec fields, copied as they are (the API server prunes what the schema does not know); the
chart's Deployments, DaemonSets, RBAC and CRDs are not created. It writes with the kubeconfig helm is given.
"""
from __future__ import annotations

import base64
import datetime
import gzip
import json
import os
import shlex
import ssl
import sys
import urllib.error
import urllib.request

import yaml

VERSION_LINE = ('version.BuildInfo{Version:"v3.17.3", GitCommit:"e4da49785aa6e6ee2b86efd5dd9e43400318262b", '
                'GitTreeState:"clean", GoVersion:"go1.23.7"}')
CHARTS = {'gpu-operator': 'gpu-operator-%s-values.yaml'}
# the ClusterPolicy the gpu-operator chart creates (templates/clusterpolicy.yaml)
CLUSTER_POLICY = 'cluster-policy'


class HelmError(Exception):
    pass


def fail(msg):
    raise HelmError('Error: ' + msg)


# --- the API server, through the kubeconfig helm is given ---------------------------------------------------------

class Api(object):
    def __init__(self, path):
        with open(path) as handle:
            config = yaml.safe_load(handle)
        context_name = os.environ.get('HELM_KUBECONTEXT') or config.get('current-context')
        context = [c['context'] for c in config['contexts'] if c['name'] == context_name][0]
        cluster = [c['cluster'] for c in config['clusters'] if c['name'] == context['cluster']][0]
        user = [u['user'] for u in config['users'] if u['name'] == context['user']][0]
        self.url = cluster['server']
        self.token = user['token']
        self.ssl = ssl.create_default_context(cafile=cluster.get('certificate-authority'))
        if cluster.get('certificate-authority-data'):
            self.ssl = ssl.create_default_context(
                cadata=base64.b64decode(cluster['certificate-authority-data']).decode())

    def request(self, method, path, body=None, content_type='application/json'):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header('Authorization', 'Bearer ' + self.token)
        if data is not None:
            req.add_header('Content-Type', content_type)
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=30) as resp:
                return resp.status, json.loads(resp.read().decode() or 'null')
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read().decode() or 'null')

    def ok(self, method, path, body=None, content_type='application/json'):
        status, answer = self.request(method, path, body, content_type)
        if status >= 300:
            fail('%s %s: %s' % (method, path, (answer or {}).get('message', status)))
        return answer


def api():
    path = os.environ.get('KUBECONFIG')
    if not path:
        fail('Kubernetes cluster unreachable: no KUBECONFIG (the test passes one through kubernetes.core)')
    return Api(path)


# --- the chart -------------------------------------------------------------------------------------------------

def chart_values(chart, version, repo):
    if chart not in CHARTS:
        fail('chart "%s" not found in %s repository' % (chart, repo))
    path = os.path.join(os.environ['FAKE_HELM_REFERENCE'], 'helm', CHARTS[chart] % version)
    if not os.path.isfile(path):
        fail('chart "%s" version "%s" not found in %s repository' % (chart, version, repo))
    with open(path) as handle:
        return handle.read()


def chart_crds(chart, version, repo):
    chart_values(chart, version, repo)  # an unknown chart or version fails as helm does
    folder = os.path.join(os.environ['FAKE_HELM_REFERENCE'], 'crds')
    prefix = '%s-%s-' % (chart, version)
    docs = []
    for name in sorted(n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith('.yaml')):
        with open(os.path.join(folder, name)) as handle:
            docs += [strip_cel(d) for d in yaml.safe_load_all(handle) if d]
    text = ''.join('---\n' + yaml.safe_dump(d, sort_keys=False) for d in docs)
    extra = os.environ.get('FAKE_HELM_CRDS_EXTRA')
    if extra:
        with open(extra) as handle:
            text += '---\n' + handle.read()
    return text


def strip_cel(node):
    # CEL rules (x-kubernetes-validations, Kubernetes 1.25+) are refused by the 1.20 test server
    if isinstance(node, dict):
        return dict((k, strip_cel(v)) for k, v in node.items() if k != 'x-kubernetes-validations')
    if isinstance(node, list):
        return [strip_cel(v) for v in node]
    return node


# values the gpu-operator chart passes through whole (toYaml into the pod spec or metadata): free-form maps, whose
# keys are the user's (NVIDIA/gpu-operator deployments/gpu-operator/templates/operator.yaml: nodeSelector, labels,
# annotations); an empty map in values.yaml is one too
FREE_FORM = ('nodeSelector', 'labels', 'annotations')


def unknown_keys(given, chart, prefix=''):
    """Key paths of ``given`` that the chart's values do not have (a dict under a key the chart has as a dict)."""
    out = []
    for key, value in (given or {}).items():
        path = prefix + str(key)
        if not isinstance(chart, dict) or key not in chart:
            out.append(path)
        elif (isinstance(value, dict) and isinstance(chart[key], dict) and chart[key]
              and key not in FREE_FORM):
            out += unknown_keys(value, chart[key], path + '.')
    return out


# --- releases, stored as Helm 3 stores them -----------------------------------------------------------------------

def secrets_path(namespace, name=None):
    return '/api/v1/namespaces/%s/secrets%s' % (namespace, '/' + name if name else '')


def releases(client, namespace, name):
    answer = client.ok('GET', secrets_path(namespace) + '?labelSelector=owner%3Dhelm%2Cname%3D' + name)
    out = []
    for secret in answer.get('items', []):
        raw = gzip.decompress(base64.b64decode(base64.b64decode(secret['data']['release'])))
        out.append((secret, json.loads(raw)))
    return sorted(out, key=lambda pair: pair[1]['version'])


def list_entry(release):
    chart = release['chart']['metadata']
    return {'name': release['name'], 'namespace': release['namespace'], 'revision': str(release['version']),
            'updated': release['info']['last_deployed'], 'status': release['info']['status'],
            'chart': '%s-%s' % (chart['name'], chart['version']), 'app_version': chart.get('appVersion', '')}


def write_release(client, namespace, name, chart, version, values):
    previous = releases(client, namespace, name)
    revision = (previous[-1][1]['version'] if previous else 0) + 1
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    release = {'name': name, 'namespace': namespace, 'version': revision, 'config': values,
               'info': {'status': 'deployed', 'first_deployed': now, 'last_deployed': now,
                        'description': 'Install complete' if revision == 1 else 'Upgrade complete'},
               'chart': {'metadata': {'name': chart, 'version': version, 'appVersion': version, 'apiVersion': 'v2'}},
               'manifest': ''}
    encoded = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    client.ok('POST', secrets_path(namespace), {
        'apiVersion': 'v1', 'kind': 'Secret', 'type': 'helm.sh/release.v1',
        'metadata': {'name': 'sh.helm.release.v1.%s.v%d' % (name, revision), 'namespace': namespace,
                     'labels': {'name': name, 'owner': 'helm', 'status': 'deployed', 'version': str(revision)}},
        'data': {'release': base64.b64encode(encoded.encode()).decode()}})
    for secret, old in previous:
        if old['info']['status'] == 'deployed':
            old['info']['status'] = 'superseded'
            data = base64.b64encode(base64.b64encode(gzip.compress(json.dumps(old).encode()))).decode()
            client.ok('PATCH', secrets_path(namespace, secret['metadata']['name']),
                      {'metadata': {'labels': {'status': 'superseded'}}, 'data': {'release': data}},
                      'application/merge-patch+json')
    return revision


def write_cluster_policy(client, merged):
    if not (merged.get('clusterPolicy') or {}).get('deployCR', True):
        return
    crd = client.ok('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterpolicies.nvidia.com')
    fields = crd['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties']
    spec = dict((key, without_nulls(value)) for key, value in merged.items()
                if key in fields and isinstance(value, dict))
    path = '/apis/nvidia.com/v1/clusterpolicies/' + CLUSTER_POLICY
    body = {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {
        'name': CLUSTER_POLICY, 'labels': {'app.kubernetes.io/managed-by': 'Helm'}}, 'spec': spec}
    status, _answer = client.request('GET', path)
    if status == 404:
        client.ok('POST', '/apis/nvidia.com/v1/clusterpolicies', body)
    else:
        client.ok('PATCH', path, body, 'application/merge-patch+json')


def without_nulls(value):
    # the chart's template leaves out what is unset ({{- if ... }}); a null would fail the CRD's types
    if isinstance(value, dict):
        return dict((k, without_nulls(v)) for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return [without_nulls(v) for v in value if v is not None]
    return value


def merge(base, over):
    out = dict(base)
    for key, value in over.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# --- the command line -----------------------------------------------------------------------------------------

def parse(argv, allowed):
    """``--flag=value`` / ``--flag value`` / ``-f=value`` and positionals; a flag not in ``allowed`` (name -> takes a
    value) is refused as helm refuses it."""
    flags, positional = {}, []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith('-'):
            name, eq, value = arg.partition('=')
            if name not in allowed:
                fail('unknown flag: %s' % name)
            if allowed[name] and not eq:
                i += 1
                if i >= len(argv):
                    fail('flag needs an argument: %s' % name)
                value = argv[i]
            elif not allowed[name] and eq:
                fail('flag %s takes no value here' % name)
            flags[name] = value if allowed[name] else True
        else:
            positional.append(arg)
        i += 1
    return flags, positional


GLOBAL = {'--version': True, '--repo': True}


def main(argv):
    namespace = os.environ.get('HELM_NAMESPACE') or 'default'
    # kubernetes.core puts --version= and --repo= before the subcommand (plugins/modules/helm.py main)
    lead = 0
    while lead < len(argv) and argv[lead].split('=', 1)[0] in GLOBAL and '=' in argv[lead]:
        lead += 1
    flags, _none = parse(argv[:lead], GLOBAL)
    rest = argv[lead:]
    if rest == ['version']:
        print(VERSION_LINE)
        return 0
    if rest == ['plugin', 'list']:
        print('NAME\tVERSION\tDESCRIPTION')
        return 0
    if rest[:2] == ['show', 'values']:
        opts, pos = parse(rest[2:], {'--repo': True, '--version': True})
        if len(pos) != 1 or set(opts) != {'--repo', '--version'}:
            fail('show values: expected CHART --repo URL --version VERSION, got %s' % rest[2:])
        sys.stdout.write(chart_values(pos[0], opts['--version'], opts['--repo']))
        return 0
    if rest[:2] == ['show', 'crds']:
        opts, pos = parse(rest[2:], {'--repo': True, '--version': True})
        if len(pos) != 1 or set(opts) != {'--repo', '--version'}:
            fail('show crds: expected CHART --repo URL --version VERSION, got %s' % rest[2:])
        sys.stdout.write(chart_crds(pos[0], opts['--version'], opts['--repo']))
        return 0
    if rest[:2] == ['show', 'chart'] and not flags:
        # playbooks/upgrade.yml's form (the Helm operator step): the reference holds no Chart.yaml, so the fake prints
        # one without dependencies (the plan then sees no bundled NFD version to compare)
        opts, pos = parse(rest[2:], {'--repo': True, '--version': True})
        if len(pos) != 1 or set(opts) != {'--repo', '--version'}:
            fail('show chart: expected CHART --repo URL --version VERSION, got %s' % rest[2:])
        chart_values(pos[0], opts['--version'], opts['--repo'])
        print(yaml.safe_dump({'apiVersion': 'v2', 'name': pos[0], 'version': opts['--version'],
                              'appVersion': opts['--version']}))
        return 0
    if rest[:2] == ['show', 'chart']:
        if len(rest) != 3 or set(flags) != {'--version', '--repo'}:
            fail('show chart: expected --version= --repo= show chart CHART, got %s' % argv)
        chart_values(rest[2], flags['--version'], flags['--repo'])
        print(yaml.safe_dump({'apiVersion': 'v2', 'name': rest[2], 'version': flags['--version'],
                              'appVersion': flags['--version']}))
        return 0
    if rest[:1] == ['list']:
        opts, pos = parse(rest[1:], {'--output': True, '--filter': True, '--all': False})
        if pos or opts.get('--output') != 'yaml' or '--filter' not in opts:
            fail('list: expected --output=yaml --filter NAME [--all], got %s' % rest[1:])
        found = releases(api(), namespace, opts['--filter'])
        entries = [list_entry(r) for _s, r in found if '--all' in opts or r['info']['status'] == 'deployed']
        print(json.dumps(entries[-1:] if entries else []))
        return 0
    if rest[:2] == ['get', 'values']:
        opts, pos = parse(rest[2:], {'--output': True, '-a': False})
        if len(pos) != 1 or opts.get('--output') != 'yaml':
            fail('get values: expected --output=yaml NAME, got %s' % rest[2:])
        found = releases(api(), namespace, pos[0])
        if not found:
            fail('release: not found')
        print(json.dumps(found[-1][1]['config']))
        return 0
    if rest[:2] in (['get', 'manifest'], ['get', 'notes'], ['get', 'hooks']):
        if len(rest) != 3 or rest[2].startswith('-'):
            fail('get %s: expected NAME, got %s' % (rest[1], rest[2:]))
        if not releases(api(), namespace, rest[2]):
            fail('release: not found')
        return 0
    if rest[:2] == ['upgrade', '-i']:
        opts, pos = parse(rest[2:], {'--reset-values': False, '--wait': False, '--timeout': True, '-f': True})
        if len(pos) != 2 or '--reset-values' not in opts or '-f' not in opts or set(flags) != {'--version', '--repo'}:
            fail('upgrade: expected --version= --repo= upgrade -i --reset-values [--wait] -f=FILE NAME CHART, got %s'
                 % argv)
        name, chart = pos
        chart_text = chart_values(chart, flags['--version'], flags['--repo'])
        with open(opts['-f']) as handle:
            given = yaml.safe_load(handle) or {}
        unknown = unknown_keys(given, yaml.safe_load(chart_text))
        if unknown:
            # helm would install with these ignored; the fake refuses, so a test shows the key is wrong
            fail('values not in chart %s %s values.yaml: %s' % (chart, flags['--version'], ', '.join(unknown)))
        client = api()
        revision = write_release(client, namespace, name, chart, flags['--version'], given)
        if chart == 'gpu-operator':
            write_cluster_policy(client, merge(yaml.safe_load(chart_text), given))
        print('Release "%s" has been upgraded. Happy Helming!\nREVISION: %d' % (name, revision))
        return 0
    fail('unknown command %s (the fake helm answers only what the collection sends)' % ' '.join(map(shlex.quote, argv)))
    return 1


def record(argv):
    with open(os.environ['FAKE_HELM_LOG'], 'a') as handle:
        entry = {'argv': argv, 'namespace': os.environ.get('HELM_NAMESPACE'),
                 'context': os.environ.get('HELM_KUBECONTEXT'), 'kubeconfig': bool(os.environ.get('KUBECONFIG'))}
        handle.write(json.dumps(entry) + '\n')


def install(bin_dir, log, reference):
    """Put the fake on PATH as ``bin_dir/helm`` (run with this Python); returns the environment to add."""
    os.makedirs(bin_dir, exist_ok=True)
    path = os.path.join(bin_dir, 'helm')
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\nexec %s %s "$@"\n' % (
            shlex.quote(sys.executable), shlex.quote(os.path.abspath(__file__))))
    os.chmod(path, 0o755)
    return {'PATH': bin_dir + os.pathsep + os.environ['PATH'], 'FAKE_HELM_LOG': str(log),
            'FAKE_HELM_REFERENCE': str(reference)}


def calls(log):
    if not os.path.exists(str(log)):
        return []
    with open(str(log)) as handle:
        return [json.loads(line) for line in handle if line.strip()]


if __name__ == '__main__':
    record(sys.argv[1:])
    try:
        sys.exit(main(sys.argv[1:]))
    except HelmError as exc:
        sys.stderr.write('%s\n' % exc)
        sys.exit(1)
