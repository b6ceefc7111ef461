# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test API server's client (tools/kube/apiserver.py KubeAPIServer.request): one kept-alive TLS connection per
thread instead of a handshake per request (a reset between two tests sends a few hundred requests), every request
still sent once, and a connection the server closed while idle replaced without losing or repeating a request.

The server here is Python's own HTTPS server on loopback, with the certificates the harness makes for
kube-apiserver (KubeAPIServer._pki): what is tested is the client's transport, which needs no Kubernetes; the real
kube-apiserver runs in the integration targets (tests/integration/kube_cluster.py), where every reset goes through
this client."""
from __future__ import annotations

import http.server
import json
import os
import ssl
import sys
import threading

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'kube'))
import apiserver  # noqa: E402  pylint: disable=wrong-import-position


class Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'  # keep-alive, as kube-apiserver answers HTTP/1.1 clients
    seen = []  # (client port, method, path) per request received
    close_after = set()  # paths after whose answer the server closes the connection, unannounced

    def _answer(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        self.seen.append((self.client_address[1], self.command, self.path))
        body = json.dumps({'kind': 'Status', 'path': self.path}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if self.path in self.close_after:
            # an idle kept-alive connection closed by the server (its idle timeout), without "Connection: close"
            self.close_connection = True

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


@pytest.fixture
def server(tmp_path):
    client = apiserver.KubeAPIServer(str(tmp_path))
    os.makedirs(client.dir, exist_ok=True)
    client._pki()  # pylint: disable=protected-access  # the CA and serving certificate kube-apiserver gets
    pki = tmp_path / 'pki'
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Recorder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki / 'server.crt'), str(pki / 'server.key'))
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    Recorder.seen = []
    Recorder.close_after = set()
    client.url = 'https://127.0.0.1:%d' % httpd.server_address[1]
    client.tokens = {'admin': 'token'}
    client._ssl = ssl.create_default_context(cafile=client.ca)  # pylint: disable=protected-access
    yield client
    httpd.shutdown()
    httpd.server_close()


def test_one_connection_carries_every_request_of_a_thread(server):
    for i in range(20):
        assert server.request('GET', '/api/v1/namespaces/n%d' % i)['path'] == '/api/v1/namespaces/n%d' % i
    ports = set(port for port, _method, _path in Recorder.seen)
    assert len(Recorder.seen) == 20
    # one TLS connection (urllib's urlopen opened, and shook hands on, one per request)
    assert len(ports) == 1, ports


def test_each_thread_has_its_own_connection(server):
    # the controller stand-ins (kube_cluster.Cluster.controller) call from their own threads while the test reads
    server.request('GET', '/main')
    errors = []

    def other():
        try:
            for _i in range(5):
                server.request('GET', '/other')
        except Exception as exc:  # pylint: disable=broad-except  # reported below
            errors.append(exc)
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    server.request('GET', '/main')
    assert not errors, errors
    by_path = {}
    for port, _method, path in Recorder.seen:
        by_path.setdefault(path, set()).add(port)
    assert len(by_path['/main']) == 1 and len(by_path['/other']) == 1, by_path
    assert by_path['/main'] != by_path['/other'], by_path


def test_a_connection_closed_while_idle_is_replaced_and_the_request_sent_once(server):
    Recorder.close_after = {'/first'}
    server.request('GET', '/first')
    answer = server.request('POST', '/api/v1/namespaces', {'metadata': {'name': 'x'}}, ok=(200,))
    assert answer['path'] == '/api/v1/namespaces'
    # the POST reached the server exactly once, on a new connection
    assert [(m, p) for _port, m, p in Recorder.seen] == [('GET', '/first'), ('POST', '/api/v1/namespaces')]
    assert Recorder.seen[0][0] != Recorder.seen[1][0]
