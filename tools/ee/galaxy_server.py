# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A local Galaxy (API v3) for building the execution environment where no Galaxy server can be reached.

Serves, on 127.0.0.1, the collections installed under ROOT/ansible_collections (the ones the `ansible` package
bundles, the versions the test suite runs against) as collection artifacts, so that the EE's galaxy stage runs
its real ``ansible-galaxy collection install -r requirements.yml`` (dependency resolution, artifact sha256 check)
with ``--server`` pointing here. An artifact is rebuilt from the installed directory: MANIFEST.json, FILES.json
and the files FILES.json lists that the directory has (ansible-galaxy checks each file's sha256 against FILES.json
on install).
Files under FILES_DIR are served at /files/NAME (the helm stand-in archive).

Only the calls ansible-galaxy makes are answered (ansible-core lib/ansible/galaxy/api.py: the API root's
available_versions, get_collection_metadata, get_collection_versions, get_collection_version_metadata, and the
download_url).

    python galaxy_server.py ROOT FILES_DIR PORT_FILE    # runs until killed; writes the chosen port to PORT_FILE
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _add_bytes(archive, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    archive.addfile(info, io.BytesIO(data))


def build_artifact(path):
    """The collection artifact (tar.gz bytes) of the installed collection at path.

    The `ansible` package ships its collections without the files it strips (tests, CI files), but with their
    original FILES.json: the artifact's FILES.json lists the entries that are present (each file's sha256 checked
    here), and MANIFEST.json's file_manifest_file checksum is that FILES.json's, so the artifact is consistent.
    """
    with open(os.path.join(path, 'MANIFEST.json')) as handle:
        manifest = json.load(handle)
    with open(os.path.join(path, 'FILES.json')) as handle:
        files = json.load(handle)
    present = []
    for entry in files['files']:
        full = os.path.join(path, entry['name'])
        if entry['name'] != '.' and not os.path.lexists(full):
            continue
        if entry['ftype'] == 'file':
            with open(full, 'rb') as handle:
                if hashlib.sha256(handle.read()).hexdigest() != entry['chksum_sha256']:
                    raise ValueError('%s: sha256 differs from FILES.json' % full)
        present.append(entry)
    files['files'] = present
    files_data = json.dumps(files, indent=4).encode()
    manifest['file_manifest_file']['chksum_sha256'] = hashlib.sha256(files_data).hexdigest()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as archive:
        _add_bytes(archive, 'MANIFEST.json', json.dumps(manifest, indent=4).encode())
        _add_bytes(archive, 'FILES.json', files_data)
        for entry in present:
            if entry['name'] != '.':
                archive.add(os.path.join(path, entry['name']), arcname=entry['name'], recursive=False)
    return manifest['collection_info'], buf.getvalue()


def load(root):
    collections = {}
    base = os.path.join(root, 'ansible_collections')
    for namespace in sorted(os.listdir(base)):
        if not os.path.isdir(os.path.join(base, namespace)):
            continue
        for name in sorted(os.listdir(os.path.join(base, namespace))):
            path = os.path.join(base, namespace, name)
            if not os.path.isfile(os.path.join(path, 'MANIFEST.json')) or \
                    not os.path.isfile(os.path.join(path, 'FILES.json')):
                continue
            collections[(namespace, name)] = path
    return collections


class Handler(BaseHTTPRequestHandler):
    collections = {}
    artifacts = {}
    files_dir = ''

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        sys.stderr.write('galaxy_server: %s\n' % (format % args))

    def reply(self, status, body, content_type='application/json'):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def artifact(self, namespace, name):
        key = (namespace, name)
        if key not in self.artifacts:
            self.artifacts[key] = build_artifact(self.collections[key])
        return self.artifacts[key]

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split('?', 1)[0]
        parts = [part for part in path.split('/') if part]
        if parts in ([], ['api']):
            return self.reply(200, {'available_versions': {'v3': 'v3/'}})
        if len(parts) == 2 and parts[0] == 'files':
            full = os.path.join(self.files_dir, os.path.basename(parts[1]))
            if not os.path.isfile(full):
                return self.reply(404, {'detail': 'not found'})
            with open(full, 'rb') as handle:
                return self.reply(200, handle.read(), 'application/octet-stream')
        if len(parts) == 3 and parts[0] == 'download':
            namespace, name = parts[1], parts[2].split('-', 2)[1]
            if (namespace, name) not in self.collections:
                return self.reply(404, {'detail': 'not found'})
            return self.reply(200, self.artifact(namespace, name)[1], 'application/gzip')
        if len(parts) >= 5 and parts[:3] == ['api', 'v3', 'collections']:
            namespace, name = parts[3], parts[4]
            if (namespace, name) not in self.collections:
                return self.reply(404, {'errors': [{'status': '404', 'detail': 'Not found.'}]})
            info, data = self.artifact(namespace, name)
            version = info['version']
            href = '/api/v3/collections/%s/%s/versions/%s/' % (namespace, name, version)
            if len(parts) == 5:
                return self.reply(200, {'namespace': namespace, 'name': name, 'href': path,
                                        'created_at': '2026-01-01T00:00:00Z', 'updated_at': '2026-01-01T00:00:00Z',
                                        'highest_version': {'version': version, 'href': href}})
            if len(parts) == 6 and parts[5] == 'versions':
                return self.reply(200, {'meta': {'count': 1}, 'links': {'next': None},
                                        'data': [{'version': version, 'href': href}]})
            if len(parts) == 7 and parts[5] == 'versions' and parts[6] == version:
                filename = '%s-%s-%s.tar.gz' % (namespace, name, version)
                return self.reply(200, {
                    'namespace': {'name': namespace}, 'collection': {'name': name}, 'version': version,
                    'href': href, 'download_url': '/download/%s/%s' % (namespace, filename),
                    'artifact': {'filename': filename, 'sha256': hashlib.sha256(data).hexdigest(), 'size': len(data)},
                    'metadata': {'dependencies': info.get('dependencies') or {}}, 'signatures': []})
        return self.reply(404, {'errors': [{'status': '404', 'detail': 'Not found.'}]})


def main(root, files_dir, port_file):
    Handler.collections = load(root)
    Handler.files_dir = files_dir
    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    with open(port_file + '.tmp', 'w') as handle:
        handle.write(str(server.server_address[1]))
    os.rename(port_file + '.tmp', port_file)
    server.serve_forever()


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], sys.argv[3])
