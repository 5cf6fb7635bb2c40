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

import http.client
import json
from unittest import mock

from glanceclient import exc as gexc
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
import requests
import urllib3

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities
from nova_snapshot_ext.image import glance
from nova_snapshot_ext.image import sending
from tests import base
from tests.unit import fake_glanceclient


class TestTranslate(base.TestCase):

    def check(self, err, cls, status):
        ours = glance.translate(err, 'upload', image_id='i1',
                                disk_format='qcow2')
        self.assertIs(cls, type(ours))
        self.assertEqual(status, ours.kwargs['status'])
        self.assertEqual('i1', ours.kwargs['image_id'])
        return ours

    def test_415_bare_http_exception(self):
        ours = self.check(gexc.HTTPException(
            'HTTP 415 Unsupported Media Type: Image disk_format qcow2 does '
            'not match stream data raw'), exception.ImageFormatRejected, 415)
        self.assertIn('does not match stream data raw',
                      ours.format_message())
        self.assertIn('qcow2', ours.format_message())
        self.assertEqual(415, ours.code)

    def test_other_unmapped_status_is_generic(self):
        self.check(gexc.HTTPException('HTTP 410 Gone'),
                   exception.GlanceError, 410)

    def test_mapped_classes(self):
        cases = [
            (gexc.HTTPBadRequest('bad'), exception.GlanceBadRequest, 400),
            (gexc.HTTPUnauthorized('no'), exception.GlanceForbidden, 401),
            (gexc.HTTPForbidden('no'), exception.GlanceForbidden, 403),
            (gexc.HTTPNotFound('gone'), exception.GlanceNotFound, 404),
            (gexc.HTTPConflict('dup'), exception.GlanceConflict, 409),
            (gexc.HTTPOverLimit('big'), exception.GlanceOverLimit, 413),
            (gexc.HTTPServiceUnavailable('x'),
             exception.GlanceUnavailable, 503),
            (gexc.HTTPInternalServerError('x'), exception.GlanceError, 500),
        ]
        for err, cls, status in cases:
            self.check(err, cls, status)

    def test_transport_errors(self):
        for err in (gexc.CommunicationError('reset'),
                    ks_exc.ConnectFailure('refused'),
                    ks_exc.EndpointNotFound('no image endpoint')):
            ours = glance.translate(err, 'create')
            self.assertIsInstance(ours, exception.GlanceUnavailable)

    def test_client_side_schema_refusal(self):
        ours = glance.translate(TypeError(
            "Unable to set 'disk_format' to 'raw'"), 'create')
        self.assertIsInstance(ours, exception.GlanceBadRequest)
        self.assertIsInstance(ours, exception.GlanceSchemaRefusal)

    def test_every_transport_error_kind_is_unavailable(self):
        # The kind: whatever the layer under glanceclient raises when a
        # connection is reset, refused, timed out or a body is cut.
        errors = [
            requests.exceptions.ChunkedEncodingError('cut mid-body'),
            requests.exceptions.ConnectionError('reset by peer'),
            requests.exceptions.ReadTimeout('read timed out'),
            requests.exceptions.ContentDecodingError('bad gzip'),
            urllib3.exceptions.ProtocolError('Connection aborted'),
            urllib3.exceptions.ReadTimeoutError(None, '/v2', 'timeout'),
            http.client.IncompleteRead(b'{"na'),
            http.client.RemoteDisconnected('closed'),
            ConnectionResetError(104, 'Connection reset by peer'),
            ks_exc.ConnectTimeout('timed out'),
            ks_exc.UnknownConnectionError('x', None),
        ]
        for err in errors:
            ours = glance.translate(err, 'schema')
            self.assertIsInstance(ours, exception.GlanceUnavailable,
                                  repr(err))
            self.assertIn('schema', ours.format_message())

    def test_a_cut_answer_is_a_reached_glance_failing(self):
        # The kind: the status line came, the body did not come whole
        # (whatever layer says so, and however deep in the chain).
        chained = base.chained
        errors = [
            requests.exceptions.ChunkedEncodingError('cut mid-body'),
            requests.exceptions.ContentDecodingError('bad gzip'),
            http.client.IncompleteRead(b'{"na'),
            chained(ks_exc.UnknownConnectionError('x', None),
                    requests.exceptions.ChunkedEncodingError('cut')),
        ]
        for err in errors:
            with self.subTest(err=repr(err)):
                ours = glance.translate(err, 'get')
                self.assertIsInstance(ours, exception.GlanceAnswerCut)
                self.assertFalse(exception.unreachable(ours))
                self.assertIn('Glance was reached but its answer was cut '
                              'short', ours.format_message())
                self.assertNotIn('could not be reached',
                                 ours.format_message())
        for err in (requests.exceptions.ConnectionError('reset by peer'),
                    http.client.RemoteDisconnected('closed'),
                    ConnectionResetError(104, 'reset')):
            with self.subTest(err=repr(err)):
                ours = glance.translate(err, 'get')
                self.assertNotIsInstance(ours, exception.GlanceAnswerCut)
                self.assertTrue(exception.unreachable(ours))

    def test_malformed_answers_name_the_operation(self):
        errors = [
            json.JSONDecodeError('Expecting value', '{"na', 4),
            requests.exceptions.JSONDecodeError('Expecting value', 'x', 0),
            ValueError('not a dict'),
            TypeError("'list' object is not a mapping"),
            KeyError('properties'),
        ]
        for err in errors:
            ours = glance.translate(err, 'get', image_id='i1')
            self.assertIsInstance(ours, exception.GlanceMalformedAnswer,
                                  repr(err))
            self.assertIn('Glance get failed: unreadable answer',
                          ours.format_message())


class TestGlanceClient(base.TestCase):

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(
            fake_glanceclient.FakeGlanceFixture()).glance
        self.client = glance.GlanceClient(session=mock.Mock())

    def test_errors_are_translated(self):
        self.assertRaises(exception.GlanceNotFound, self.client.get, 'nope')
        self.assertRaises(exception.GlanceNotFound, self.client.delete,
                          'nope')

    def test_create_passes_attributes(self):
        image = self.client.create(id='i1', name='n', disk_format='raw',
                                   container_format='bare', foo='bar')
        self.assertEqual(('raw', 'bar'), (image['disk_format'],
                                          image['foo']))

    def test_create_refused_by_glance_schema_creates_nothing(self):
        # Validated once, by Glance: a 400 naming the attribute.
        err = self.assertRaises(exception.GlanceSchemaRefusal,
                                self.client.create, id='i1',
                                disk_format='nope', container_format='bare')
        self.assertEqual(400, err.kwargs['status'])
        self.assertIn('disk_format', err.format_message())
        self.assertEqual({}, self.fake.images)

    def test_create_validates_no_model(self):
        # glanceclient's warlock model (a per-attribute validation) is not
        # used: the body goes to Glance as built.
        with mock.patch.object(fake_glanceclient._Images, 'create',
                               autospec=True,
                               side_effect=lambda ctl, **kw: dict(
                                   kw, self='/v2/images/i1')) as create:
            image = self.client.create(id='i1', name='n',
                                       disk_format='raw')
        create.assert_called_once()
        self.assertEqual({'id': 'i1', 'name': 'n', 'disk_format': 'raw'},
                         image)

    def test_add_image_location_asks_no_versions(self):
        self.client.create(id='i1', disk_format='qcow2',
                           container_format='bare')
        with mock.patch.object(fake_glanceclient._Versions, 'list') as vl:
            self.assertIsNone(self.client.add_image_location(
                'i1', 'http://h/x', {'os_hash_algo': 'sha512',
                                     'os_hash_value': 'ab'}))
            self.client.image_tasks('i1')
        vl.assert_not_called()
        self.assertEqual(('http://h/x', {'os_hash_algo': 'sha512',
                                         'os_hash_value': 'ab'}),
                         self.fake.pending['i1'][1:])
        self.assertEqual(['add_image_location', 'tasks'],
                         [c for c in self.fake.calls
                          if c in ('add_image_location', 'tasks')])

    def test_add_image_location_without_2_17_is_501(self):
        # The cached capabilities said 2.17; this Glance has no such route
        # (404 for an image it shows): 501, as glanceclient's own check.
        self.fake.versions = [{'id': 'v2.16', 'status': 'CURRENT'}]
        self.client.create(id='i1', disk_format='qcow2',
                           container_format='bare')
        err = self.assertRaises(exception.GlanceNotImplemented,
                                self.client.add_image_location, 'i1',
                                'http://u:pw@h/x?sig=s', None)
        self.assertEqual(501, err.kwargs['status'])
        self.assertNotIn('pw', err.format_message())
        self.assertEqual('queued', self.fake.images['i1']['status'])

    def test_add_image_location_to_missing_image_is_404(self):
        for versions in (['v2.17'], ['v2.16']):
            self.fake.versions = [{'id': v} for v in versions]
            self.assertRaises(exception.GlanceNotFound,
                              self.client.add_image_location, 'gone',
                              'http://h/x', None)

    def test_empty_upload_sends_empty_string(self):
        self.client.create(id='i1', disk_format='raw',
                           container_format='bare')
        with mock.patch.object(fake_glanceclient._Images, 'upload') as up:
            self.client.upload('i1', b'')
        up.assert_called_once_with('i1', '')

    def test_payload_upload_sends_size(self):
        self.client.create(id='i1', disk_format='qcow2',
                           container_format='bare')
        with mock.patch.object(fake_glanceclient._Images, 'upload') as up:
            self.client.upload('i1', b'x' * 10)
        self.assertEqual(10, up.call_args.kwargs['image_size'])
        self.assertEqual(b'x' * 10, up.call_args.args[1].read())

    def test_cut_schema_body_is_translated(self):
        # Issue 9 input 3: the schema answer cut mid-body.
        for err in (requests.exceptions.ChunkedEncodingError('cut'),
                    json.JSONDecodeError('Expecting value', '{', 1)):
            self.fake.fail('schema', err)
            self.assertRaises(exception.GlanceError,
                              self.client.image_schema)

    def test_body_of_wrong_shape_is_translated(self):
        with mock.patch.object(fake_glanceclient._Images, 'get',
                               return_value=['not', 'an', 'image']):
            err = self.assertRaises(exception.GlanceMalformedAnswer,
                                    self.client.get, 'i1')
        self.assertEqual('i1', err.kwargs['image_id'])

    def test_stores_none_without_multistore(self):
        self.assertIsNone(self.client.stores())

    def test_adapter_kwargs_from_conf(self):
        self.flags(group='snapshot_ext_glance',
                   endpoint_override='http://g:9292', connect_retries=3,
                   region_name='R1')
        kwargs = glance.adapter_kwargs(self.conf)
        self.assertEqual('image', kwargs['service_type'])
        self.assertEqual('http://g:9292', kwargs['endpoint_override'])
        self.assertEqual(3, kwargs['connect_retries'])
        self.assertEqual(['internal', 'public'], kwargs['interface'])

    def test_default_timeout_and_retries(self):
        group = self.conf.snapshot_ext_glance
        self.assertEqual(60, group.timeout)
        kwargs = glance.adapter_kwargs(self.conf)
        self.assertEqual((3, 3, [502, 503, 504]), (
            kwargs['connect_retries'], kwargs['status_code_retries'],
            kwargs['retriable_status_codes']))

    def test_sample_config_shows_the_defaults(self):
        from nova_snapshot_ext import opts

        groups = {g.name: o for g, o in opts.list_opts()}
        defaults = {o.dest: o.default
                    for o in groups['snapshot_ext_glance']}
        self.assertEqual((60, 3, 3, [502, 503, 504]), (
            defaults['timeout'], defaults['connect_retries'],
            defaults['status_code_retries'],
            defaults['retriable_status_codes']))


class TestIdempotentRetries(base.TestCase):
    """keystoneauth re-sends only what a second send cannot harm."""

    def sent(self, method, url):
        http = mock.Mock()
        real = http.request
        sending.install(http)
        http.request(url, method, data='x')
        return real.call_args.kwargs

    def test_reads_keep_the_adapter_retries(self):
        for method in ('GET', 'HEAD'):
            kwargs = self.sent(method, '/v2/images/i1')
            self.assertNotIn('status_code_retries', kwargs)
            self.assertNotIn('connect_retries', kwargs)

    def test_delete_is_sent_once(self):
        # A re-send would skip the status read that precedes every delete
        # and could delete an image a concurrent try just activated.
        kwargs = self.sent('DELETE', '/v2/images/i1')
        self.assertEqual((0, 0), (kwargs['status_code_retries'],
                                  kwargs['connect_retries']))

    def test_upload_and_location_are_sent_once(self):
        for method, url in (('PUT', '/v2/images/i1/file'),
                            ('POST', '/v2/images/i1/locations'),
                            ('PATCH', '/v2/images/i1'),
                            ('POST', '/v2/images/i1/members')):
            kwargs = self.sent(method, url)
            self.assertEqual((0, 0), (kwargs['status_code_retries'],
                                      kwargs['connect_retries']), url)

    def test_create_keeps_connect_retries_only(self):
        kwargs = self.sent('POST', '/v2/images')
        self.assertEqual(0, kwargs['status_code_retries'])
        self.assertNotIn('connect_retries', kwargs)

    def test_real_glanceclient_adapter_is_wrapped(self):
        from keystoneauth1 import session as ks_session

        client = glance.GlanceClient(ks_session.Session(),
                                     endpoint_override='http://g.test')
        with mock.patch('keystoneauth1.adapter.Adapter.request') as req:
            req.return_value = mock.Mock(status_code=204, headers={},
                                         content=b'')
            try:
                client.upload('i1', b'')
            except exception.GlanceError:
                pass
        self.assertEqual(0, req.call_args.kwargs['connect_retries'])


class TestCapabilities(base.TestCase):

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(fake_glanceclient.FakeGlanceFixture(
            disk_formats=['vhd', 'qcow2'])).glance
        self.client = glance.GlanceClient(session=mock.Mock())

    def test_discover(self):
        caps = capabilities.discover(self.client)
        self.assertEqual(('vhd', 'qcow2'), caps.disk_formats)
        self.assertIn('bare', caps.container_formats)
        self.assertTrue(caps.location_api)
        self.assertIsNone(caps.stores)
        self.assertIn('visibility', caps.base_attributes)

    def test_no_location_api_before_2_17(self):
        self.fake.versions = [{'id': 'v2.16'}, {'id': 'v2.9'}]
        self.assertFalse(capabilities.discover(self.client).location_api)

    def test_cache_ttl(self):
        cache = capabilities.CapabilityCache(ttl=300)
        cache.get(self.client)
        cache.get(self.client)
        self.assertEqual(1, self.fake.calls.count('schema'))
        cache.invalidate(self.client)
        cache.get(self.client)
        self.assertEqual(2, self.fake.calls.count('schema'))

    def test_ttl_zero_always_discovers(self):
        cache = capabilities.CapabilityCache(ttl=0)
        cache.get(self.client)
        cache.get(self.client)
        self.assertEqual(2, self.fake.calls.count('schema'))

    def test_transient_versions_failure_is_raised_not_cached(self):
        # Issue 9 input 10: one /versions 503 is not "no API 2.17"; issue
        # 18: it is asked once more, and a blip is no failure.
        cache = capabilities.CapabilityCache(ttl=300)
        self.fake.fail('versions', gexc.HTTPServiceUnavailable('busy'))
        self.assertTrue(cache.get(self.client).location_api)
        self.assertEqual([], self.fake.failures['versions'])  # asked again
        # Failing twice: unknown (not "no"), used once and not cached.
        cache.invalidate()
        self.fake.fail('versions', gexc.HTTPServiceUnavailable('busy'),
                       times=2)
        caps = cache.get(self.client)
        self.assertFalse(caps.location_api)
        self.assertIsInstance(caps.unread['versions'],
                              exception.GlanceUnavailable)
        self.assertTrue(cache.get(self.client).location_api)
        self.assertEqual(3, self.fake.calls.count('schema'))

    def test_every_transient_kind_of_versions_failure(self):
        for err in (gexc.HTTPInternalServerError('x'),
                    gexc.CommunicationError('reset'),
                    requests.exceptions.ChunkedEncodingError('cut'),
                    json.JSONDecodeError('Expecting value', '{', 1)):
            self.fake.fail('versions', err, times=2)
            caps = capabilities.discover(self.client)
            self.assertIsInstance(caps.unread['versions'],
                                  exception.GlanceError)
            self.assertEqual(('vhd', 'qcow2'), caps.disk_formats)

    def test_versions_blip_answered_from_the_last_good_discovery(self):
        cache = capabilities.CapabilityCache(ttl=0)
        self.assertTrue(cache.get(self.client).location_api)
        self.fake.fail('versions', gexc.HTTPInternalServerError('x'),
                       times=2)
        caps = cache.get(self.client)
        self.assertTrue(caps.location_api)
        self.assertEqual({}, dict(caps.unread))

    def test_schema_blip_served_from_the_last_good_discovery(self):
        cache = capabilities.CapabilityCache(ttl=0)
        first = cache.get(self.client)
        self.fake.fail('schema', gexc.HTTPInternalServerError('x'), times=2)
        self.assertIs(first, cache.get(self.client))
        self.fake.fail('schema', gexc.HTTPInternalServerError('x'))
        self.assertIsNot(first, cache.get(self.client))

    def test_versions_4xx_is_an_answer(self):
        self.fake.fail('versions', gexc.HTTPForbidden('policy'))
        self.assertFalse(capabilities.discover(self.client).location_api)

    def test_failed_schema_is_not_cached(self):
        cache = capabilities.CapabilityCache(ttl=300)
        self.fake.fail('schema', gexc.HTTPServiceUnavailable('busy'),
                       times=2)
        self.assertRaises(exception.GlanceUnavailable, cache.get,
                          self.client)
        self.assertEqual(('vhd', 'qcow2'), cache.get(self.client).disk_formats)

    def test_schema_without_enums(self):
        self.assertRaises(exception.GlanceError,
                          capabilities.GlanceCapabilities.from_documents,
                          {'properties': {}})

    def test_one_discovery_when_many_threads_find_it_stale(self):
        import threading

        cache = capabilities.CapabilityCache(ttl=300)
        start = threading.Barrier(8)

        def get():
            start.wait()
            cache.get(self.client)

        threads = [threading.Thread(target=get) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(1, self.fake.calls.count('schema'))


class TestPlainSuccessReadOnce(base.TestCase):
    """A 2xx answer is read as glanceclient reads it, in one pass.

    At the glanceclient boundary: the keystoneauth session answers.
    """

    def answer(self, status, content_type, body):
        response = requests.Response()
        response.status_code = status
        response.reason = 'OK'
        if content_type is not None:
            response.headers['Content-Type'] = content_type
        response._content = body
        response.url = 'http://glance.test/v2/images'
        return response

    def send(self, response, call):
        client = glance.GlanceClient(ks_session.Session(),
                                     endpoint_override='http://glance.test')
        with mock.patch.object(ks_session.Session, 'request',
                               return_value=response):
            return call(client)

    def test_a_create_answer_is_the_image_document(self):
        image = {'id': 'i1', 'name': 'x', 'status': 'queued',
                 'block_device_mapping': json.dumps([{'a': 'é'}])}
        for content_type in ('application/json',
                             'application/json; charset=UTF-8'):
            answer = self.answer(201, content_type,
                                 json.dumps(image).encode())
            # Decoded once, as JSON: never first as text.
            with mock.patch.object(
                    requests.Response, 'text', new_callable=mock.PropertyMock,
                    side_effect=AssertionError('read as text')):
                got = self.send(answer, lambda c: c.create(
                    id='i1', name='x', block_device_mapping=image[
                        'block_device_mapping']))
            self.assertEqual(image, got)

    def test_an_empty_204_is_no_document(self):
        for content_type in (None, 'text/html; charset=UTF-8'):
            self.assertIsNone(self.send(
                self.answer(204, content_type, b''),
                lambda c: c.upload('i1', b'')))

    def test_a_json_answer_that_is_no_json_is_still_refused(self):
        # Cut mid-body: what glanceclient's own reading raises.
        answer = self.answer(201, 'application/json', b'{"id": "i1", "na')
        self.assertRaises(exception.GlanceError, self.send, answer,
                          lambda c: c.create(id='i1', name='x'))

    def test_an_image_read_answered_by_another_image_is_refused(self):
        answer = self.answer(200, 'application/json',
                             json.dumps({'id': 'i2'}).encode())
        self.assertRaises(exception.GlanceAnswerMismatch, self.send,
                          answer, lambda c: c.get('i1'))


class TestErrorBodiesOfAnyShape(base.TestCase):
    """A failed answer is its status, whatever shape its body has.

    Glance answers a request whose ``Accept`` is ``application/json``
    with webob's flat JSON error document, which glanceclient's
    ``from_response`` cannot read (``AttributeError``).  At the
    glanceclient boundary: the keystoneauth session answers.
    """

    FLAT = 'flat'
    NESTED = 'nested'
    HTML = 'html'

    def body(self, shape, status, title, message):
        if shape == self.FLAT:
            return 'application/json', json.dumps({
                'message': message, 'code': '%d %s' % (status, title),
                'title': title}).encode()
        if shape == self.NESTED:
            return 'application/json', json.dumps({'error': {
                'message': message, 'code': status,
                'title': title}}).encode()
        return 'text/html; charset=UTF-8', (
            '<html><head><title>%d %s</title></head><body><h1>%d %s</h1>'
            '%s<br /><br /></body></html>' % (
                status, title, status, title, message)).encode()

    def answer(self, status, title, content_type, body):
        response = requests.Response()
        response.status_code = status
        response.reason = title
        response.headers['Content-Type'] = content_type
        response._content = body
        response.url = 'http://glance.test/v2/images'
        return response

    def call(self, status, title, body, content_type, operation):
        client = glance.GlanceClient(ks_session.Session(),
                                     endpoint_override='http://glance.test')
        calls = {
            'upload': lambda: client.upload('i1', b'', 'raw'),
            'create': lambda: client.create(
                id='i1', name='x', disk_format='raw',
                container_format='bare'),
            'get': lambda: client.get('i1'),
            'delete': lambda: client.delete('i1'),
        }
        with mock.patch.object(
                ks_session.Session, 'request',
                return_value=self.answer(status, title, content_type,
                                         body)):
            return self.assertRaises(exception.GlanceError,
                                     calls[operation])

    def fails(self, shape, status, title, message, operation):
        content_type, body = self.body(shape, status, title, message)
        return self.call(status, title, body, content_type, operation)

    CASES = (
        # (status, title, message, operation, class)
        (415, 'Unsupported Media Type', 'Image disk_format raw does not '
         'match', 'upload', exception.ImageFormatRejected),
        (413, 'Request Entity Too Large', 'Image exceeds the storage quota',
         'upload', exception.GlanceOverLimit),
        (403, 'Forbidden', 'You are not authorized to complete add_image '
         'action.', 'create', exception.GlanceForbidden),
        (400, 'Bad Request', "Invalid value 'x' for disk_format",
         'create', exception.GlanceBadRequest),
        (404, 'Not Found', 'No image found with ID i1', 'get',
         exception.GlanceNotFound),
        (409, 'Conflict', 'Image ID i1 already exists!', 'create',
         exception.GlanceConflict),
        (503, 'Service Unavailable', 'busy', 'get',
         exception.GlanceUnavailable),
        (504, 'Gateway Timeout', 'upstream timed out', 'delete',
         exception.GlanceUnavailable),
        (500, 'Internal Server Error', 'boom', 'upload',
         exception.GlanceError),
    )

    def test_every_shape_is_translated_by_status(self):
        for shape in (self.FLAT, self.NESTED, self.HTML):
            for status, title, message, operation, cls in self.CASES:
                with self.subTest(shape=shape, status=status):
                    err = self.fails(shape, status, title, message,
                                     operation)
                    self.assertIsInstance(err, cls)
                    self.assertNotIsInstance(
                        err, exception.GlanceMalformedAnswer)
                    self.assertEqual(status, err.kwargs['status'])
                    self.assertIn(message, err.format_message())
                    self.assertNotIn('unreadable', err.format_message())

    def test_the_flat_refusals_lead_where_their_status_does(self):
        err = self.fails(self.FLAT, 403, 'Forbidden', 'You are not '
                         'authorized to complete add_image action.',
                         'create')
        self.assertIn('Glance policy "add_image"', err.format_message())
        err = self.fails(self.FLAT, 413, 'Request Entity Too Large',
                         'Image exceeds the storage quota', 'upload')
        self.assertIn('storage quota', err.format_message())
        self.assertFalse(exception.unreachable(err))

    def test_an_unreadable_failure_body_keeps_its_status(self):
        for body in (b'{"message": "cut', b'[1, 2]', b'"text"', b'null'):
            with self.subTest(body=body):
                err = self.call(415, 'Unsupported Media Type', body,
                                'application/json', 'upload')
                self.assertIsInstance(err, exception.ImageFormatRejected)

    def test_a_success_whose_body_is_unreadable_is_still_malformed(self):
        err = self.call(200, 'OK', b'{"id": "i1"', 'application/json',
                        'get')
        self.assertIsInstance(err, exception.GlanceMalformedAnswer)

    def test_message_of_each_shape(self):
        for shape in (self.FLAT, self.NESTED, self.HTML):
            with self.subTest(shape=shape):
                self.assertIn('policy says no', glance.answer_message(
                    self.body(shape, 403, 'Forbidden', 'policy says no')[1]))
        self.assertEqual('', glance.answer_message(None))
