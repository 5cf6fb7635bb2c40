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

"""Issue 18: an answer is believed only for the image it was asked about,
and no answer is waited for past its deadline.

The real client stack (GlanceClient -> glanceclient -> keystoneauth1 ->
requests -> urllib3) talks to a tiny image API on 127.0.0.1 through the
functional tests' fault proxy, which mixes up answers, trickles them, or
answers without forwarding.
"""

import http.server
import json
import re
import threading
import time
import uuid

from keystoneauth1 import session as ks_session
import testtools

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import deadline
from nova_snapshot_ext.image import glance
from tests.functional import faultproxy

FINGERPRINT = 'snapshot_ext_fingerprint'


def _schema():
    """A small image schema of the shape Glance serves."""
    props = {name: {'type': ['null', 'string']} for name in (
        'id', 'name', 'status', 'visibility', 'size')}
    props['disk_format'] = {'enum': [None, 'raw', 'qcow2']}
    props['container_format'] = {'enum': [None, 'bare']}
    return {'name': 'image', 'properties': props,
            'additionalProperties': {'type': 'string'}}


class _ImageAPI(http.server.BaseHTTPRequestHandler):
    """Just enough of Glance's v2 image API for the client's calls."""

    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def _send(self, status, payload=None):
        body = b'' if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None:
            self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        return self.rfile.read(int(self.headers.get('Content-Length') or 0))

    def do_GET(self):
        images = self.server.images
        if self.path == '/versions':
            return self._send(200, {'versions': [
                {'id': 'v2.17', 'status': 'CURRENT'}]})
        if self.path == '/v2/schemas/image':
            return self._send(200, self.server.schema)
        if self.path == '/v2/schemas/member':
            return self._send(200, {'name': 'member', 'properties': {
                name: {'type': 'string'} for name in (
                    'image_id', 'member_id', 'status')}})
        match = re.match(r'^/v2/images/([^/]+)$', self.path)
        if match and match.group(1) in images:
            return self._send(200, images[match.group(1)])
        self._send(404, {'message': 'not found'})

    def do_POST(self):
        data = json.loads(self._body() or b'{}')
        images = self.server.images
        if self.path == '/v2/images':
            image = dict(data, status='queued', size=None)
            image.setdefault('id', str(uuid.uuid4()))
            images[image['id']] = image
            return self._send(201, image)
        match = re.match(r'^/v2/images/([^/]+)/members$', self.path)
        if match:
            return self._send(200, {'image_id': match.group(1),
                                    'member_id': data.get('member'),
                                    'status': 'pending'})
        self._send(404, {'message': 'not found'})

    def do_PUT(self):
        self._body()
        match = re.match(r'^/v2/images/([^/]+)/file$', self.path)
        if match and match.group(1) in self.server.images:
            self.server.images[match.group(1)]['status'] = 'active'
            return self._send(204)
        self._send(404, {'message': 'not found'})


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class AnswersTestBase(testtools.TestCase):

    REQUEST_TIMEOUT = 2.0

    def setUp(self):
        super().setUp()
        self.server = _Server(('127.0.0.1', 0), _ImageAPI)
        self.server.images = {}
        self.server.schema = _schema()
        thread = threading.Thread(target=self.server.serve_forever,
                                  kwargs={'poll_interval': 0.05},
                                  daemon=True)
        thread.start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.proxy = self.useFixture(faultproxy.FaultProxyFixture(
            'http://127.0.0.1:%d' % self.server.server_address[1])).proxy
        self.session = ks_session.Session(timeout=10)
        self.addCleanup(self.session.session.close)
        self.client = glance.GlanceClient(
            self.session, endpoint_override=self.proxy.endpoint,
            request_timeout=self.REQUEST_TIMEOUT, connect_retries=0,
            status_code_retries=0)

    def other_image(self):
        """Another image of the same project, queued."""
        other = {'id': str(uuid.uuid4()), 'name': 'someone-else',
                 'status': 'queued', 'disk_format': 'raw',
                 'container_format': 'bare', 'visibility': 'private',
                 FINGERPRINT: str(uuid.uuid4())}
        self.server.images[other['id']] = other
        return other


class TestAnswerBelongsToTheRequest(AnswersTestBase):

    def test_create_answered_with_another_images_body(self):
        other = self.other_image()
        self.proxy.add_rule('POST', r'^/v2/images$', 'replace',
                            body=json.dumps(other).encode())
        mine = str(uuid.uuid4())
        err = self.assertRaises(
            exception.GlanceAnswerMismatch, self.client.create, id=mine,
            name='mine', disk_format='raw', container_format='bare')
        self.assertEqual((mine, None), (err.kwargs['image_id'],
                                        err.kwargs['status']))
        self.assertIn(other['id'], err.format_message())
        # A lost answer: the create landed, the other image is untouched.
        self.assertEqual('queued', self.server.images[mine]['status'])
        self.assertEqual('queued', self.server.images[other['id']]['status'])

    def test_every_read_kind_checks_the_id(self):
        other = self.other_image()
        mine = self.client.create(id=str(uuid.uuid4()), name='mine',
                                  disk_format='raw',
                                  container_format='bare')['id']
        body = json.dumps(other).encode()
        self.proxy.add_rule('GET', r'^/v2/images/[^/]+$', 'replace',
                            body=body)
        self.assertRaises(exception.GlanceAnswerMismatch, self.client.get,
                          mine)
        self.assertEqual(mine, self.client.get(mine)['id'])
        # An upload or a member add answered with a document about
        # another image is a lost answer too.
        self.proxy.add_rule('PUT', r'/file$', 'answer', status=200,
                            body=body)
        self.assertRaises(exception.GlanceAnswerMismatch,
                          self.client.upload, mine, b'')
        self.proxy.add_rule('POST', r'/members$', 'replace',
                            body=json.dumps({'image_id': other['id'],
                                             'member_id': 'p'}).encode())
        self.assertRaises(exception.GlanceAnswerMismatch,
                          self.client.add_member, mine, 'p')
        self.assertEqual(mine, self.client.add_member(mine, 'p')['image_id'])

    def test_create_answer_with_another_fingerprint(self):
        mine = str(uuid.uuid4())
        forged = {'id': mine, 'name': 'mine', 'status': 'queued',
                  FINGERPRINT: str(uuid.uuid4())}
        self.proxy.add_rule('POST', r'^/v2/images$', 'replace',
                            body=json.dumps(forged).encode())
        err = self.assertRaises(
            exception.GlanceAnswerMismatch, self.client.create, id=mine,
            name='mine', disk_format='raw', container_format='bare',
            **{FINGERPRINT: str(uuid.uuid4())})
        self.assertIn(FINGERPRINT, err.format_message())

    def test_answers_that_prove_nothing_are_unreadable(self):
        other = json.dumps(self.other_image()).encode()
        mine = self.client.create(id=str(uuid.uuid4()), name='mine',
                                  disk_format='raw',
                                  container_format='bare')['id']
        self.proxy.add_rule('GET', r'^/v2/images/[^/]+$', 'answer',
                            status=204)
        self.assertRaises(exception.GlanceMalformedAnswer, self.client.get,
                          mine)
        self.proxy.add_rule('GET', r'^/v2/info/stores$', 'answer',
                            status=200, body=other)
        self.assertRaises(exception.GlanceMalformedAnswer,
                          self.client.stores)
        self.proxy.add_rule('GET', r'^/v2/schemas/image$', 'answer',
                            status=200, body=other)
        self.assertRaises(exception.GlanceMalformedAnswer,
                          self.client.image_schema)

    def test_answers_without_an_image_document_pass(self):
        for method, url, sent, body in (
                ('PUT', '/v2/images/a/file', b'', None),
                ('POST', '/v2/images/a/locations', None, None),
                ('GET', '/v2/images/a/tasks', None,
                 {'tasks': [{'id': 't', 'image_id': 'a'}]}),
                ('GET', '/v2/info/stores', None, {'stores': []}),
                ('GET', '/v2/images', None, {'images': [{'id': 'b'}]}),
                ('POST', '/v2/images', {'name': 'no id'}, {'id': 'c'})):
            glance.check_answer(method, url, sent, body)
        self.assertRaises(exception.GlanceAnswerMismatch,
                          glance.check_answer, 'GET', '/v2/images/a/tasks',
                          None, {'tasks': [{'id': 't', 'image_id': 'b'}]})
        self.assertRaises(exception.GlanceAnswerMismatch,
                          glance.check_answer, 'GET', '/v2/images/a',
                          None, {'name': 'no id at all'})


class TestDeadlines(AnswersTestBase):

    def test_a_trickling_answer_is_cut_at_the_request_deadline(self):
        self.proxy.add_rule('GET', r'^/v2/schemas/image$', 'trickle',
                            seconds=0.05)
        started = time.monotonic()
        err = self.assertRaises(exception.GlanceDeadlineExceeded,
                                self.client.image_schema)
        took = time.monotonic() - started
        self.assertLess(took, self.REQUEST_TIMEOUT + 2.0)
        self.assertGreaterEqual(took, self.REQUEST_TIMEOUT - 0.1)
        self.assertIn('request_timeout', err.format_message())
        self.assertIsInstance(err, exception.GlanceUnavailable)
        # The session is fine afterwards (a new connection).
        self.assertIn('properties', self.client.image_schema())

    def test_a_cut_read_is_not_sent_again_past_its_deadline(self):
        client = glance.GlanceClient(
            self.session, endpoint_override=self.proxy.endpoint,
            request_timeout=1.0, connect_retries=3, connect_retry_delay=0.1)
        self.proxy.add_rule('GET', r'^/v2/schemas/image$', 'trickle',
                            times='always', seconds=0.05)
        started = time.monotonic()
        self.assertRaises(exception.GlanceDeadlineExceeded,
                          client.image_schema)
        self.assertLess(time.monotonic() - started, 2.5)
        self.proxy.wait_idle(10)
        self.assertEqual(1, self.proxy.count('GET', 'schemas'))

    def test_a_trickling_create_answer_is_a_lost_answer(self):
        self.proxy.add_rule('POST', r'^/v2/images$', 'trickle',
                            seconds=0.05)
        mine = str(uuid.uuid4())
        self.assertRaises(exception.GlanceDeadlineExceeded,
                          self.client.create, id=mine, name='mine',
                          disk_format='raw', container_format='bare')
        self.assertEqual(mine, self.client.get(mine)['id'])

    def test_a_trickled_answer_to_any_step_is_glance_failing(self):
        # Glance was reached and answered too slowly: exit 1 with words
        # that say so, whichever step met the deadline (rule 10).
        from nova_snapshot_ext.cmd import checks

        mine = self.client.create(id=str(uuid.uuid4()), name='mine',
                                  disk_format='raw',
                                  container_format='bare')['id']
        steps = (
            ('POST', r'/members$', lambda: self.client.add_member(
                mine, 'other-project')),
            ('GET', r'^/v2/images/%s$' % mine,
             lambda: self.client.get(mine)),
            ('PUT', r'/file$', lambda: self.client.upload(mine, b'')))
        for method, path, call in steps:
            with self.subTest(method=method):
                self.proxy.add_rule(method, path, 'trickle', seconds=0.05)
                err = self.assertRaises(exception.GlanceDeadlineExceeded,
                                        call)
                self.assertTrue(err.kwargs['reached'])
                self.assertFalse(exception.unreachable(err))
                message, code = checks.glance_error(err)
                self.assertEqual(checks.EXIT_FAILED, code)
                self.assertIn('Glance was reached', message)
                self.assertNotIn('could not be reached', message)

    def test_a_silent_reached_glance_is_a_deadline_not_unreachable(self):
        # keystoneauth1's per-read timeout on a connected Glance: reached,
        # too slow -- the same cause and exit as the total deadline.
        from nova_snapshot_ext.cmd import checks

        session = ks_session.Session(timeout=0.5)
        self.addCleanup(session.session.close)
        client = glance.GlanceClient(
            session, endpoint_override=self.proxy.endpoint,
            request_timeout=30.0, connect_retries=0, status_code_retries=0)
        self.proxy.add_rule('GET', r'^/v2/schemas/image$', 'delay',
                            seconds=3.0)
        err = self.assertRaises(exception.GlanceDeadlineExceeded,
                                client.image_schema)
        self.assertTrue(err.kwargs['reached'])
        self.assertIn('timeout, per read', err.format_message())
        self.assertIn('0.5', err.format_message())
        message, code = checks.glance_error(err)
        self.assertEqual(checks.EXIT_FAILED, code)
        self.assertNotIn('could not be reached', message)

    def test_snapshot_deadline(self):
        mine = self.client.create(id=str(uuid.uuid4()), name='mine',
                                  disk_format='raw',
                                  container_format='bare')['id']
        with self.client.snapshot_deadline(0.2):
            self.assertFalse(self.client.deadline_passed())
            time.sleep(0.3)
            self.assertTrue(self.client.deadline_passed())
            err = self.assertRaises(exception.GlanceDeadlineExceeded,
                                    self.client.upload, mine, b'')
            self.assertFalse(err.kwargs['sent'])
            self.assertIn('snapshot_timeout', err.format_message())
            # Reads (and deletes) still go, to clean up and report.
            self.assertEqual('queued', self.client.get(mine)['status'])
        self.assertFalse(self.client.deadline_passed())
        self.assertEqual(0, self.proxy.count('PUT'))

    def test_a_trickling_upload_is_cut_at_the_snapshot_deadline(self):
        mine = self.client.create(id=str(uuid.uuid4()), name='mine',
                                  disk_format='raw',
                                  container_format='bare')['id']
        self.proxy.add_rule('PUT', r'/file$', 'trickle', seconds=0.05)
        started = time.monotonic()
        with self.client.snapshot_deadline(0.5):
            err = self.assertRaises(exception.GlanceDeadlineExceeded,
                                    self.client.upload, mine, b'')
        self.assertLess(time.monotonic() - started, 1.5)
        self.assertIn('snapshot_timeout', err.format_message())

    def test_deadline_passed_after_the_answer_changes_nothing(self):
        with deadline.Deadline(0.05) as watch:
            self.assertEqual(mine_id := self.client.create(
                id=str(uuid.uuid4()), name='m', disk_format='raw',
                container_format='bare')['id'], mine_id)
        time.sleep(0.1)
        self.assertFalse(watch.expired)
        self.assertEqual('queued', self.client.get(mine_id)['status'])

    def test_session_is_watched_once(self):
        self.assertTrue(deadline.watch_session(self.session))
        self.assertIs(deadline.POOL_CLASSES, self.session.session.adapters[
            'http://'].poolmanager.pool_classes_by_scheme)
        self.assertFalse(deadline.watch_session(object()))
