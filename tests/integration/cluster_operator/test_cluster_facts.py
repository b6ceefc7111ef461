# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuvirt.provision.cluster_facts against the real kube-apiserver (tests/integration/kube_cluster.py): the cluster
access reaches it as it reaches kubernetes.core's modules, through the action group's module_defaults (kubeconfig,
context, validate_certs) or the K8S_AUTH_* environment (host, token, CA file: AWX's bearer token credential), and it
sends the cluster role's three reads, nothing else. One ansible-playbook run of three plays, on the session's server.

The cluster role's messages around it (does not answer, a refused later read) are tested through the phase
playbooks: cluster_operator/test_apply.py (preflight), cluster_operator/test_rbac.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402  pylint: disable=wrong-import-position

HCO_CRD = 'hyperconvergeds.hco.kubevirt.io'
ASK = {'apis': [{'api_version': 'config.openshift.io/v1', 'kind': 'ClusterVersion'}], 'crds': [HCO_CRD]}


def play(name, defaults, register, out, environment=None):
    """A play as the phases give cluster access (module_defaults for the group), one cluster_facts call, its result
    written to ``out`` (the failed one too)."""
    return {'name': name, 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
            'module_defaults': {'group/gpuvirt.provision.cluster': defaults} if defaults else {},
            'environment': environment or {},
            'tasks': [{'name': 'Ask', 'gpuvirt.provision.cluster_facts': ASK, 'register': 'facts_' + register,
                       'ignore_errors': True},
                      {'name': 'Keep', 'ansible.builtin.copy': {'content': '{{ facts_%s | to_json }}' % register,
                                                                'dest': out, 'mode': '0600'}}]}


def test_tls_settings_and_the_environment_reach_the_module_and_it_sends_the_three_reads(tmp_path, kube):
    cluster = kube([], openshift=True)
    server = cluster.server
    # the automation's kubeconfig without the cluster's CA: only validate_certs false lets it through
    with open(cluster.kubeconfig, encoding='utf-8') as handle:
        config = yaml.safe_load(handle)
    for entry in config['clusters']:
        entry['cluster'].pop('certificate-authority-data', None)
        entry['cluster'].pop('certificate-authority', None)
    no_ca = tmp_path / 'kubeconfig-no-ca'
    no_ca.write_text(yaml.safe_dump(config), encoding='utf-8')
    out = {name: str(tmp_path / ('%s.json' % name)) for name in ('verified', 'unverified', 'environment')}
    plays = [play('Verified, no CA', {'kubeconfig': str(no_ca), 'validate_certs': True}, 'verified', out['verified']),
             play('Not verified', {'kubeconfig': str(no_ca), 'validate_certs': False}, 'unverified',
                  out['unverified']),
             # no kubeconfig at all: AWX's token credential sets these (kubernetes.core reads them as host, api_key and
             # ca_cert when the task leaves them unset; kubernetes.core docs, "K8S_AUTH_*" environment)
             play('The environment', None, 'environment', out['environment'],
                  {'K8S_AUTH_HOST': server.url, 'K8S_AUTH_API_KEY': server.tokens['automation'],
                   'K8S_AUTH_SSL_CA_CERT': server.ca})]
    path = tmp_path / 'facts.yml'
    path.write_text(yaml.safe_dump(plays), encoding='utf-8')
    (tmp_path / 'tmp').mkdir(exist_ok=True)
    mark = cluster.now()
    proc = subprocess.run(
        ['ansible-playbook', '-i', 'localhost,', str(path), '-e',
         json.dumps({'ansible_python_interpreter': sys.executable})],
        capture_output=True, text=True, check=False,
        env=dict({k: v for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG'},
                 HOME=str(tmp_path), TMPDIR=str(tmp_path / 'tmp')))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    got = {name: json.loads(open(p, encoding='utf-8').read()) for name, p in out.items()}
    # validate_certs true reached it: the server's certificate is not trusted without its CA
    assert got['verified']['failed'] and got['verified']['answered'] is False, got['verified']
    assert 'CERTIFICATE_VERIFY_FAILED' in got['verified']['msg'] or 'certificate verify failed' in got['verified']['msg']
    # validate_certs false reached it, and the token and CA from the environment did
    served = {'answered': True, 'served_apis': ['config.openshift.io/v1'],
              'served_crds': [HCO_CRD] if cluster.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition', HCO_CRD)
              else []}
    for name in ('unverified', 'environment'):
        assert not got[name].get('failed') and got[name]['changed'] is False, got[name]
        assert {k: got[name][k] for k in served} == served, got[name]
    # the kubeconfig is no_log: never echoed in the registered result (nor the token, which is in it)
    assert server.tokens['automation'] not in json.dumps(got) and str(no_ca) not in json.dumps(got)
    assert server.tokens['automation'] not in log
    # per successful call, the three reads, in order (discovery aside), as the automation identity; no write
    reads = [(e['verb'], e['objectRef'].get('resource'), e['objectRef'].get('name'),
              'fieldSelector' in e['requestURI'])
             for e in cluster.requests(since=mark) if e.get('objectRef', {}).get('resource')]
    # (the audit log names the node the field selector selects)
    three = [('list', 'nodes', 'gpuvirt-cluster-check', True), ('list', 'clusterversions', None, False),
             ('get', 'customresourcedefinitions', HCO_CRD, False)]
    assert reads == three * 2, reads
    assert all(e['user']['username'] == apiserver.AUTOMATION_USER for e in cluster.requests(since=mark))
    assert cluster.attempts(since=mark) == []
