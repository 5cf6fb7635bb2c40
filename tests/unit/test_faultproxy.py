# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The fault proxy of the functional tests, against a tiny HTTP server."""

import http.server
import json
import threading

import requests
import testtools

from tests.functional import faultproxy


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def _body(self):
        if 'chunked' in (self.headers.get('Transfer-Encoding') or ''):
            data = b''
            while True:
                size = int(self.rfile.readline().split(b';')[0], 16)
                if not size:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get('Content-Length') or 0))

    def _answer(self, status, payload, chunked=False):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        if chunked:
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            for i in range(0, len(body), 7):
                part = body[i:i + 7]
                self.wfile.write(b'%x\r\n%s\r\n' % (len(part), part))
            self.wfile.write(b'0\r\n\r\n')
        else:
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def do_GET(self):
        self.server.log.append(('GET', self.path))
        if self.path == '/empty':
            self.send_response(204)
            self.end_headers()
            return
        self._answer(200, {'path': self.path, 'pad': 'x' * 200},
                     chunked=self.path.startswith('/chunked'))

    def do_PUT(self):
        data = self._body()
        self.server.log.append((self.command, self.path))
        self._answer(200, {'len': len(data), 'path': self.path})

    do_POST = do_PUT

    def do_DELETE(self):
        self.server.log.append(('DELETE', self.path))
        self.send_response(204)
        self.end_headers()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the proxy hangs up on purpose in some tests


class TestFaultProxy(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.server = _Server(('127.0.0.1', 0), _Handler)
        self.server.log = []
        thread = threading.Thread(target=self.server.serve_forever,
                                  kwargs={'poll_interval': 0.05},
                                  daemon=True)
        thread.start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.restarts = []
        fixture = self.useFixture(faultproxy.FaultProxyFixture(
            'http://127.0.0.1:%d' % self.server.server_address[1],
            restart=lambda: self.restarts.append(True)))
        self.proxy = fixture.proxy
        self.http = requests.Session()
        self.http.trust_env = False
        self.addCleanup(self.http.close)

    def url(self, path):
        return self.proxy.endpoint + path

    def test_forwards_keepalive_and_chunked_both_ways(self):
        for _ in range(3):
            resp = self.http.get(self.url('/a?x=1'), timeout=10)
            self.assertEqual(200, resp.status_code)
            self.assertEqual('/a?x=1', resp.json()['path'])
        resp = self.http.get(self.url('/chunked'), timeout=10)
        self.assertEqual('/chunked', resp.json()['path'])
        self.assertEqual('chunked', resp.headers['Transfer-Encoding'])
        resp = self.http.put(self.url('/up'),
                             data=iter([b'abc', b'defg', b'']), timeout=10)
        self.assertEqual(7, resp.json()['len'])
        resp = self.http.put(self.url('/up'), data=b'0123456789',
                             timeout=10)
        self.assertEqual(10, resp.json()['len'])
        self.assertEqual(204, self.http.delete(self.url('/d'),
                                               timeout=10).status_code)
        self.assertEqual(204, self.http.get(self.url('/empty'),
                                            timeout=10).status_code)
        self.assertEqual(8, self.proxy.count())
        self.assertEqual(2, self.proxy.count('PUT', '^/up$', status=200))
        self.assertEqual(0, self.proxy.count(fault='any'))
        self.assertEqual(8, len(self.server.log))

    def test_reset_before_does_not_forward(self):
        self.proxy.add_rule('POST', '^/c$', 'reset_before')
        self.assertRaises(requests.ConnectionError, self.http.post,
                          self.url('/c'), data=b'x', timeout=10)
        self.assertEqual([], self.server.log)
        # once: the next one passes
        self.assertEqual(200, self.http.post(self.url('/c'), data=b'x',
                                             timeout=10).status_code)
        self.assertEqual([('POST', '/c')], self.server.log)
        self.assertEqual([None, 200],
                         [s.status for s in self.proxy.seen])

    def test_reset_after_forwards(self):
        self.proxy.add_rule('DELETE', '^/d$', 'reset_after', times='always')
        for _ in range(2):
            self.assertRaises(requests.ConnectionError, self.http.delete,
                              self.url('/d'), timeout=10)
        self.assertEqual([('DELETE', '/d')] * 2, self.server.log)
        self.assertEqual(2, self.proxy.count('DELETE', fault='reset_after'))
        self.assertEqual([204, 204],
                         [s.upstream_status for s in self.proxy.seen])

    def test_status_with_and_without_forwarding(self):
        self.proxy.add_rule('GET', '^/a$', 'status', status=503)
        self.proxy.add_rule('GET', '^/b$', 'status', status=502,
                            forward=True)
        self.assertEqual(503, self.http.get(self.url('/a'),
                                            timeout=10).status_code)
        self.assertEqual(502, self.http.get(self.url('/b'),
                                            timeout=10).status_code)
        self.assertEqual([('GET', '/b')], self.server.log)
        # keep-alive survives a faked status
        self.assertEqual(200, self.http.get(self.url('/a'),
                                            timeout=10).status_code)

    def test_nth_occurrence(self):
        self.proxy.add_rule('GET', '^/n', 'status', status=500, nth=3)
        codes = [self.http.get(self.url('/n'), timeout=10).status_code
                 for _ in range(4)]
        self.assertEqual([200, 200, 500, 200], codes)

    def test_always(self):
        self.proxy.add_rule('*', '^/x', 'status', times='always')
        codes = [self.http.get(self.url('/x%d' % i), timeout=10).status_code
                 for i in range(3)]
        self.assertEqual([503] * 3, codes)

    def test_delay_before_reaches_upstream_after_client_gave_up(self):
        self.proxy.add_rule('POST', '^/late$', 'delay', seconds=1.0)
        self.assertRaises(requests.Timeout, self.http.post,
                          self.url('/late'), data=b'x', timeout=0.3)
        self.assertTrue(self.proxy.wait_arrival('POST', '^/late$', 1, 5))
        self.assertEqual([], self.server.log)
        self.assertFalse(self.proxy.wait_arrival('POST', '^/late$', 2, 0.1))
        self.assertTrue(self.proxy.wait_idle(30))
        self.assertEqual([('POST', '/late')], self.server.log)

    def test_delay_after_answer_lost(self):
        self.proxy.add_rule('GET', '^/slow$', 'delay', seconds=1.0,
                            when='after')
        self.assertRaises(requests.Timeout, self.http.get,
                          self.url('/slow'), timeout=0.3)
        self.assertEqual([('GET', '/slow')], self.server.log)

    def test_truncate_content_length_and_chunked(self):
        self.proxy.add_rule('GET', '^/a$', 'truncate')
        self.proxy.add_rule('GET', '^/chunked$', 'truncate')
        self.assertRaises(requests.exceptions.ChunkedEncodingError,
                          self.http.get, self.url('/a'), timeout=10)
        self.assertRaises(requests.exceptions.ChunkedEncodingError,
                          self.http.get, self.url('/chunked'), timeout=10)
        self.assertEqual(2, self.proxy.count(fault='truncate'))

    def test_restart_holds_then_forwards(self):
        self.proxy.add_rule('GET', '^/r$', 'restart')
        self.assertEqual(200, self.http.get(self.url('/r'),
                                            timeout=10).status_code)
        self.assertEqual([True], self.restarts)
        self.assertEqual([('GET', '/r')], self.server.log)

    def test_hook_runs_before_forwarding(self):
        calls = []
        self.proxy.add_rule('GET', '^/h$', 'hook', times='always',
                            hook=lambda: calls.append(len(self.server.log)))
        for _ in range(2):
            self.assertEqual(200, self.http.get(self.url('/h'),
                                                timeout=10).status_code)
        self.assertEqual([0, 1], calls)
        self.assertRaises(ValueError, self.proxy.add_rule, 'GET', '/',
                          'hook')

    def test_replace_gives_another_body_after_forwarding(self):
        other = json.dumps({'path': '/other'}).encode()
        self.proxy.add_rule('POST', '^/c$', 'replace', body=lambda: other)
        resp = self.http.post(self.url('/c'), data=b'abc', timeout=10)
        self.assertEqual((200, '/other'), (resp.status_code,
                                           resp.json()['path']))
        self.assertEqual([('POST', '/c')], self.server.log)
        self.assertEqual(1, self.proxy.count(fault='replace'))
        self.assertRaises(ValueError, self.proxy.add_rule, 'GET', '/',
                          'replace')

    def test_trickle_sends_one_byte_at_a_time(self):
        self.proxy.add_rule('GET', '^/t$', 'trickle', seconds=0.3)
        # Each read gets a byte well within the per-read timeout...
        resp = self.http.get(self.url('/empty'), timeout=10)
        self.assertEqual(204, resp.status_code)
        self.assertRaises(requests.Timeout, self.http.get, self.url('/t'),
                          timeout=(10, 0.1))
        # ...and with a longer one the answer would take minutes.
        self.assertEqual(1, self.proxy.count(fault='trickle'))
        self.assertEqual([('GET', '/empty'), ('GET', '/t')],
                         self.server.log)

    def test_answer_without_forwarding(self):
        self.proxy.add_rule('PUT', '^/f$', 'answer', status=204)
        resp = self.http.put(self.url('/f'), data=b'abc', timeout=10)
        self.assertEqual((204, b''), (resp.status_code, resp.content))
        self.assertEqual([], self.server.log)
        self.assertEqual(1, self.proxy.count('PUT', '^/f$', status=204,
                                             fault='answer'))

    def test_random_faults_are_seeded(self):
        def run():
            self.proxy.clear()
            self.proxy.random_faults(seed=7, probability=0.5,
                                     actions=('status',))
            return [self.http.get(self.url('/r%d' % i),
                                  timeout=10).status_code
                    for i in range(20)]
        first = run()
        self.assertEqual(first, run())
        self.assertIn(503, first)
        self.assertIn(200, first)

    def test_bad_rule(self):
        self.assertRaises(ValueError, self.proxy.add_rule, 'GET', '/',
                          'explode')
        self.assertRaises(ValueError, self.proxy.add_rule, 'GET', '/',
                          'status', times='twice')
        self.assertRaises(ValueError, faultproxy.FaultProxy,
                          'https://127.0.0.1:1')
