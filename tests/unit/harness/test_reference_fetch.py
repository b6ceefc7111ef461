# -*- coding: utf-8 -*-
# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/reference/fetch.py against a local HTTP mirror: checksums, no second download, loud failure."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import hashlib
import http.server
import os
import socket
import subprocess
import sys
import threading

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
FETCH = os.path.join(ROOT, 'tools', 'reference', 'fetch.py')
MANIFEST = os.path.join(ROOT, 'tools', 'reference', 'manifest.yml')
UPSTREAM = 'https://raw.githubusercontent.com/'
sys.path.insert(0, os.path.dirname(FETCH))
import fetch  # noqa: E402  (tools/reference/fetch.py)

# a few whole files and one extracted from another (the CSV's alm-examples), as (path, content)
SAMPLE = {
    'crds/a.yaml': b'apiVersion: v1\nkind: A\n',
    'helm/values.yaml': b'operator:\n  enabled: true\n',
    'pciids/pci.ids': b'10de  NVIDIA Corporation\n',
}
CSV = (b'apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  annotations:\n'
       b'    alm-examples: |-\n      [\n        {"kind": "ClusterPolicy"}\n      ]\n    capabilities: Basic\n'
       b'  name: gpu-operator-certified.v1\n')
ALM = b'[\n  {"kind": "ClusterPolicy"}\n]\n'
REF = 'cafe0000cafe0000cafe0000cafe0000cafe0000'


def sha(data):
    return hashlib.sha256(data).hexdigest()


def url_of(path):
    return UPSTREAM + 'owner/repo/%s/upstream/%s' % (REF, path)


class Mirror:
    """http.server on 127.0.0.1 in a thread, serving a folder laid out as <owner>/<repo>/<commit>/<path>."""

    def __init__(self, root):
        self.root = root
        self.requests = []
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                mirror.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      functools.partial(Handler, directory=root))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]

    def put(self, path, data):
        target = os.path.join(self.root, url_of(path)[len(UPSTREAM):])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, 'wb') as handle:
            handle.write(data)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror(tmp_path):
    served = Mirror(str(tmp_path / 'mirror'))
    for path, data in SAMPLE.items():
        served.put(path, data)
    served.put('olm/csv.yaml', CSV)
    yield served
    served.close()


@pytest.fixture
def manifest(tmp_path):
    lines = ['---', '# test manifest', 'files:']
    entries = [(path, url_of(path), None, sha(data)) for path, data in sorted(SAMPLE.items())]
    entries.append(('olm/alm-examples.json', url_of('olm/csv.yaml'), 'csv-annotation alm-examples', sha(ALM)))
    for path, url, extract, digest in entries:
        lines += ['  - path: %s' % path, '    url: %s' % url, '    version: "v1.0.0"']
        if extract:
            lines.append('    extract: %s' % extract)
        lines.append('    sha256: %s' % digest)
    path = tmp_path / 'manifest.yml'
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    return str(path)


def run_fetch(manifest_path, dest, mirror_url):
    env = dict(os.environ, GPUVIRT_REFERENCE_MIRROR=mirror_url)
    return subprocess.run([sys.executable, FETCH, '--manifest', manifest_path, '--dest', dest],
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def leftovers(dest):
    """Every file under dest (temporary files included), relative."""
    found = []
    for base, _dirs, files in os.walk(dest):
        found += [os.path.relpath(os.path.join(base, name), dest) for name in files]
    return sorted(found)


def test_fetch_writes_verified_files_and_skips_them_the_second_time(mirror, manifest, tmp_path):
    dest = str(tmp_path / 'reference')
    first = run_fetch(manifest, dest, mirror.url)
    assert first.returncode == 0, first.stdout + first.stderr
    expected = dict(SAMPLE, **{'olm/alm-examples.json': ALM})
    assert leftovers(dest) == sorted(expected)
    for path, data in expected.items():
        with open(os.path.join(dest, path), 'rb') as handle:
            assert sha(handle.read()) == sha(data), path
    assert '4 downloaded, 0 already present, 0 failed' in first.stdout
    assert len(mirror.requests) == 4  # the CSV once, though one entry is extracted from it

    mirror.requests.clear()
    second = run_fetch(manifest, dest, mirror.url)
    assert second.returncode == 0, second.stdout + second.stderr
    assert mirror.requests == []
    assert '0 downloaded, 4 already present, 0 failed' in second.stdout


def test_a_changed_byte_fails_loudly_and_leaves_no_wrong_file(mirror, manifest, tmp_path):
    dest = str(tmp_path / 'reference')
    good = SAMPLE['helm/values.yaml']
    bad = good[:-2] + b'X' + good[-1:]
    mirror.put('helm/values.yaml', bad)

    result = run_fetch(manifest, dest, mirror.url)
    assert result.returncode != 0
    assert 'helm/values.yaml' in result.stderr
    assert sha(good) in result.stderr and sha(bad) in result.stderr
    assert 'helm/values.yaml' not in leftovers(dest)
    assert leftovers(dest) == sorted(['crds/a.yaml', 'pciids/pci.ids', 'olm/alm-examples.json'])

    # a stale file with a wrong checksum already in place is replaced, or removed when the download is wrong too
    with open(os.path.join(dest, 'crds', 'a.yaml'), 'wb') as handle:
        handle.write(b'stale\n')
    os.makedirs(os.path.join(dest, 'helm'), exist_ok=True)
    with open(os.path.join(dest, 'helm', 'values.yaml'), 'wb') as handle:
        handle.write(b'stale\n')
    again = run_fetch(manifest, dest, mirror.url)
    assert again.returncode != 0
    assert not os.path.exists(os.path.join(dest, 'helm', 'values.yaml'))
    with open(os.path.join(dest, 'crds', 'a.yaml'), 'rb') as handle:
        assert handle.read() == SAMPLE['crds/a.yaml']


def test_a_missing_file_on_the_mirror_names_the_file(mirror, manifest, tmp_path):
    os.unlink(os.path.join(mirror.root, url_of('pciids/pci.ids')[len(UPSTREAM):]))
    result = run_fetch(manifest, str(tmp_path / 'reference'), mirror.url)
    assert result.returncode != 0
    assert 'pciids/pci.ids' in result.stderr and '404' in result.stderr


def test_offline_it_says_so_once_and_names_the_mirror_and_the_reference_variables(manifest, tmp_path):
    # a server that does not answer (nothing listens on a port just closed): offline, or a wrong mirror
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        closed = 'http://127.0.0.1:%d' % probe.getsockname()[1]
    result = run_fetch(manifest, str(tmp_path / 'reference'), closed)
    assert result.returncode == 1
    out = result.stdout + result.stderr
    # one failure shown, the rest counted: no line per file that was never tried
    assert result.stdout.count('FAILED') == 1 and 'and 3 more from 127.0.0.1:' in result.stderr, out
    assert len(out.splitlines()) <= 8, out
    assert 'GPUVIRT_REFERENCE_MIRROR=URL make reference' in result.stderr, out
    assert 'set GPUVIRT_REFERENCE to a directory that already holds the files' in result.stderr, out
    assert 'GPUVIRT_REFERENCE_MIRROR is %s now' % closed in result.stderr, out


def test_go_raw_string_extraction():
    source = b'package components\n\nvar CRDsValidation map[string]string = map[string]string{\n' \
             b'\t"kubevirt": `openAPIV3Schema:\n  type: object\n`,\n\t"virtualmachine": `openAPIV3Schema:\n' \
             b'  description: VM\n`,\n}\n'
    assert fetch.extract({'extract': 'go-raw-string virtualmachine'}, source) == \
        b'openAPIV3Schema:\n  description: VM\n'
    with pytest.raises(fetch.FetchError):
        fetch.extract({'extract': 'go-raw-string virtualmachineinstance'}, source)


def test_manifest_parser_agrees_with_yaml():
    with open(MANIFEST, encoding='utf-8') as handle:
        expected = yaml.safe_load(handle)['files']
    assert fetch.load_manifest(MANIFEST) == [{key: str(value) for key, value in entry.items()} for entry in expected]


def test_manifest_covers_upstream_files_with_pinned_urls():
    entries = fetch.load_manifest(MANIFEST)
    paths = [entry['path'] for entry in entries]
    assert len(paths) == len(set(paths))
    for entry in entries:
        assert entry['url'].startswith(UPSTREAM), entry['path']
        commit = entry['url'][len(UPSTREAM):].split('/')[2]
        assert len(commit) == 40 and int(commit, 16) >= 0, entry['path']
        assert len(entry['sha256']) == 64, entry['path']
        assert entry['path'].split('/')[0] in ('crds', 'helm', 'olm', 'examples', 'pciids', 'vgpu-device-manager')


def _shared_reference():
    """The reference folder beside the checkout, or $GPUVIRT_REFERENCE when it has crds/."""
    for path in (os.environ.get('GPUVIRT_REFERENCE'), os.path.join(ROOT, '..', 'shared', 'reference')):
        if path and os.path.isdir(os.path.join(path, 'crds')):
            return os.path.normpath(path)
    return None


def test_manifest_checksums_match_the_reference_folder():
    reference = _shared_reference()
    if reference is None:
        pytest.skip('no reference folder ($GPUVIRT_REFERENCE or ../shared/reference with crds/) to compare the '
                    'manifest with; make reference verifies the checksums when it fetches')
    wrong, listed = [], set()
    for entry in fetch.load_manifest(MANIFEST):
        listed.add(entry['path'])
        path = os.path.join(reference, entry['path'])
        actual = fetch.file_sha256(path) if os.path.isfile(path) else 'missing'
        if actual != entry['sha256']:
            wrong.append('%s: manifest %s, folder %s' % (entry['path'], entry['sha256'], actual))
    assert not wrong, '\n'.join(wrong)
    present = set()
    for folder in ('crds', 'helm', 'olm', 'examples', 'pciids', 'vgpu-device-manager'):
        if os.path.isdir(os.path.join(reference, folder)):
            present |= {folder + '/' + name for name in os.listdir(os.path.join(reference, folder))}
    assert present - listed == set(), 'files in the reference folder missing from the manifest'
