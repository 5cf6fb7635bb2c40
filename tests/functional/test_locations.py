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

"""Activation through a location, against a real glance-api.

Glance runs with the http store (profiles ``http-store`` and
``legacy-locations``, :mod:`nova_snapshot_ext.embedded.glance`); the
location object is served by a loopback web server
(:class:`ObjectServerFixture`).  Every test ends with an active image or a
clear error, and no image left behind.
"""

import hashlib

import fixtures

from nova_snapshot_ext.embedded import demo
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import payloads
from tests.functional import base as fbase
from tests.functional import test_snapshot

QCOW2 = payloads.payload('qcow2')
OBJECT = '/objects/empty.qcow2'
EMPTY = '/objects/zero'
MISSING = '/objects/missing'


class ObjectServerFixture(fixtures.Fixture):
    """A loopback web server serving location objects for one test.

    :ivar server: the :class:`~nova_snapshot_ext.embedded.demo.ObjectServer`
        (``server.objects`` may be changed during the test).
    """

    def __init__(self, objects):
        super().__init__()
        self.objects = objects
        self.server = None

    def _setUp(self):
        self.server = demo.ObjectServer(self.objects).start()
        self.addCleanup(self.server.stop)


class LocationTestBase(test_snapshot.SnapshotTestBase):

    GLANCE_PROFILE = 'http-store'
    METHOD = 'location-first'

    def setUp(self):
        super().setUp()
        #: The names of the snapshot requests this test made: the images
        #: it is judged on (the Glance is shared with other tests).
        self.made_names = []
        self.objects = self.useFixture(ObjectServerFixture(
            {OBJECT: QCOW2, EMPTY: b''})).server
        self.url = self.objects.url(OBJECT)

    def location_service(self, path=OBJECT, **flags):
        flags.setdefault('activation_method', self.METHOD)
        flags.setdefault('location_disk_format', 'qcow2')
        flags.setdefault('activation_poll_interval', 0.1)
        return self.make_service(location_url=self.objects.url(path),
                                 **flags)

    def location_client(self, roles=fbase.MEMBER_ROLES, service_roles=()):
        session = self.glance.session(self.project_id, self.user_id,
                                      roles=roles,
                                      service_roles=service_roles)
        return glance_mod.GlanceClient(
            session, endpoint_override=self.glance.endpoint)

    def assertActiveAtLocation(self, result, client, algo='sha512'):
        image = client.get(result.image_id)
        self.assertEqual(('active', 'qcow2', 'bare', 1536),
                         (image['status'], image['disk_format'],
                          image['container_format'], image['size']))
        self.assertEqual(self.url, image['direct_url'])
        self.assertEqual(algo, image['os_hash_algo'])
        self.assertEqual(hashlib.new(algo, QCOW2).hexdigest(),
                         image['os_hash_value'])
        self.assertEqual(hashlib.md5(QCOW2).hexdigest(), image['checksum'])
        (attempt,) = result.attempts
        self.assertEqual(('location', 'new', 'active'),
                         (attempt.method, attempt.location_api,
                          attempt.outcome))
        return image

    def make_request(self, *args, **kwargs):
        req = super().make_request(*args, **kwargs)
        self.made_names.append(req.name)
        return req

    def assertNoImagesLeftByThisTest(self):
        """No unfinished image of any snapshot this test asked for.

        Only the images of this test's requests (by their unique names,
        hidden images included) are judged: an image another test on the
        same Glance left queued, or is still working on, is not this
        test's leftover.
        """
        self.assertEqual([], [(i['id'], i.get('name'), i['status'])
                              for name in self.made_names
                              for i in self.images_named(name)
                              if i['status'] != 'active'])

    def assertNothingLeftFor(self, req):
        self.assertEqual([], [(i['id'], i['status'])
                              for i in self.images_named(req.name)
                              if i['status'] != 'active'])
        self.assertNoImagesLeftByThisTest()


class TestNewLocationAPI(LocationTestBase):
    """``location_api = auto``: the new API where Glance lists v2.17.

    Tests about the new API itself are skipped on a Glance without it
    (:meth:`skipUnlessGlanceHas`); the refusals that happen before any API
    is used run on every release.
    """

    def test_owner_member(self):
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client()
        result = self.location_service().snapshot(req, glance=client)
        self.assertActiveAtLocation(result, client)
        # Glance serves the object's bytes as the image data.
        self.assertEqual(QCOW2, client.download(result.image_id))
        self.assertEqual([result.image_id],
                         [i['id'] for i in self.images_named(req.name)])
        self.assertNothingLeftFor(req)

    def test_service_caller(self):
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client(service_roles=('service',))
        result = self.location_service().snapshot(req, glance=client)
        self.assertActiveAtLocation(result, client)
        self.assertNothingLeftFor(req)

    def test_reader_adding_location_refused_then_upload(self):
        # The location is added by an identity with only the reader role
        # (Glance: 403 add_image_location); the next attempt uploads.
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client()
        reader = self.location_client(roles=fbase.READER_ROLES)
        client.add_image_location = reader.add_image_location
        result = self.location_service().snapshot(req, glance=client)
        first, second = result.attempts
        self.assertEqual(('location', 'failed', 403, True),
                         (first.method, first.outcome, first.status,
                          first.cleaned_up))
        self.assertIn('add_image_location', first.reason)
        self.assertEqual(('upload', 'raw', 'active'),
                         (second.method, second.disk_format,
                          second.outcome))
        self.assertEqual([second.image_id],
                         [i['id'] for i in self.images_named(req.name)])
        self.assertNothingLeftFor(req)

    def test_reader_refused_everywhere_nothing_left(self):
        req = self.make_request()
        err = self.assertRaises(
            exception.ActivationFailed, self.location_service().snapshot,
            req, glance=self.location_client(roles=fbase.READER_ROLES))
        self.assertEqual(403, err.code)
        self.assertEqual(['location', 'upload'],
                         [a.method for a in err.result.attempts])
        self.assertEqual([], self.images_named(req.name))

    def test_correct_validation_data(self):
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client()
        digest = hashlib.sha256(QCOW2).hexdigest()
        result = self.location_service(
            location_validation_data='sha256:%s' % digest).snapshot(
                req, glance=client)
        self.assertActiveAtLocation(result, client, algo='sha256')
        self.assertNothingLeftFor(req)

    def test_wrong_validation_data_task_fails_next_attempt(self):
        # The object changes after the plugin checked and hashed it:
        # Glance's hash differs, its task fails, the image is deleted and
        # the next attempt uploads.
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client()
        svc = self.location_service()
        svc.preflight(req, glance=client)
        self.objects.objects[OBJECT] = QCOW2[:-1] + b'\x01'
        result = svc.snapshot(req, glance=client)
        first, second = result.attempts
        self.assertEqual(('location', 'failed', True),
                         (first.method, first.outcome, first.cleaned_up))
        self.assertIn('location_import task', first.reason)
        self.assertIn('failed', first.reason)
        self.assertEqual(('upload', 'active'), (second.method,
                                                second.outcome))
        self.assertNothingLeftFor(req)

    def test_zero_length_refused_before_use(self):
        req = self.make_request()
        err = self.assertRaises(
            exception.LocationUnusable,
            self.location_service(path=EMPTY).snapshot, req,
            glance=self.location_client())
        self.assertIn('empty (0 bytes)', err.format_message())
        self.assertEqual([], self.images_named(req.name))
        # Only the plugin's own check reached the web server.
        self.assertEqual([('GET', EMPTY)], self.objects.requests)

    def test_missing_object_refused_before_use(self):
        req = self.make_request()
        err = self.assertRaises(
            exception.LocationUnusable,
            self.location_service(path=MISSING).snapshot, req,
            glance=self.location_client())
        self.assertIn('HTTP 404', err.format_message())
        self.assertEqual([], self.images_named(req.name))

    def test_object_gone_task_fails_next_attempt(self):
        # Reachable when checked, 404 when Glance reads it.
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client()
        svc = self.location_service()
        svc.preflight(req, glance=client)
        del self.objects.objects[OBJECT]
        result = svc.snapshot(req, glance=client)
        first, second = result.attempts
        self.assertEqual(('failed', True), (first.outcome, first.cleaned_up))
        self.assertIn('location_import task', first.reason)
        self.assertEqual(('upload', 'active'), (second.method,
                                                second.outcome))
        self.assertNothingLeftFor(req)

    def test_image_deleted_while_hashing(self):
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client()
        admin = self.admin_client()
        real = client.add_image_location

        def add_then_delete(image_id, url, validation_data=None):
            image = real(image_id, url, validation_data)
            admin.images.delete(image_id)
            return image

        client.add_image_location = add_then_delete
        err = self.assertRaises(exception.ActivationFailed,
                                self.location_service().snapshot, req,
                                glance=client)
        (attempt,) = err.result.attempts
        self.assertIn('deleted while Glance was adding its location',
                      attempt.reason)
        self.assertEqual([], err.result.leftover)
        self.assertEqual([], self.images_named(req.name))
        self.assertNoImagesLeftByThisTest()

    def test_fallback_after_uploads_refused(self):
        # location-fallback: reached only after Glance refused the upload
        # (here a 415, injected).
        self.skipUnlessGlanceHas('location_api')
        req = self.make_request()
        client = self.location_client()
        self.useFixture(fixtures.MockPatchObject(
            glance_mod.GlanceClient, 'upload', side_effect=(
                exception.ImageFormatRejected(
                    operation='upload', disk_format='x', image_id='y',
                    reason='injected', status=415))))
        result = self.location_service(
            activation_method='location-fallback',
            disk_formats=['raw']).snapshot(req, glance=client)
        self.assertEqual([('upload', 'failed'), ('location', 'active')],
                         [(a.method, a.outcome) for a in result.attempts])
        self.assertNothingLeftFor(req)


class TestLegacyLocationAPI(LocationTestBase):

    GLANCE_PROFILE = 'legacy-locations'

    def test_legacy_on_active_synchronously(self):
        req = self.make_request()
        client = self.location_client()
        result = self.location_service(location_api='legacy').snapshot(
            req, glance=client)
        (attempt,) = result.attempts
        self.assertEqual(('location', 'legacy', 'active'),
                         (attempt.method, attempt.location_api,
                          attempt.outcome))
        image = client.get(result.image_id)
        self.assertEqual(('active', 1536, self.url),
                         (image['status'], image['size'],
                          image['direct_url']))
        # No hashing on this path: the hash is the plugin's, as sent.
        self.assertEqual(hashlib.sha512(QCOW2).hexdigest(),
                         image['os_hash_value'])
        self.assertNothingLeftFor(req)


class TestLegacyLocationAPIOff(LocationTestBase):

    def test_legacy_off_403_next_attempt(self):
        req = self.make_request()
        result = self.location_service(location_api='legacy').snapshot(
            req, glance=self.location_client())
        first, second = result.attempts
        self.assertEqual(('legacy', 403, True),
                         (first.location_api, first.status,
                          first.cleaned_up))
        self.assertEqual(('upload', 'active'), (second.method,
                                                second.outcome))
        self.assertNothingLeftFor(req)


class TestLeftoversJudged(LocationTestBase):
    """The leftover check judges this test's images, not the Glance's."""

    GLANCE_PROFILE = 'default'

    def test_another_tests_queued_image_is_not_this_tests_leftover(self):
        client = self.client_for(roles=fbase.MEMBER_ROLES)
        # Another test's image, queued (as one made to meet a 415 is).
        other = client.images.create(name='zero-qcow2', disk_format='qcow2',
                                     container_format='bare')
        self.addCleanup(client.images.delete, other['id'])
        req = self.make_request()
        self.make_service().snapshot(req, glance=self.location_client())
        self.assertNothingLeftFor(req)
        self.assertNoImagesLeftByThisTest()
        # This test's own queued image is a leftover.
        mine = client.images.create(name=req.name, disk_format='raw',
                                    container_format='bare')
        self.addCleanup(client.images.delete, mine['id'])
        self.assertRaises(AssertionError, self.assertNoImagesLeftByThisTest)


class TestNoHttpStore(LocationTestBase):

    GLANCE_PROFILE = 'default'

    def test_location_first_refused_in_preflight(self):
        req = self.make_request()
        err = self.assertRaises(exception.LocationUnusable,
                                self.location_service().snapshot, req,
                                glance=self.location_client())
        self.assertIn('no read-only (http) store', err.format_message())
        self.assertEqual([], self.images_named(req.name))
        self.assertEqual([], self.objects.requests)

    def test_location_fallback_skipped_upload_works(self):
        req = self.make_request()
        client = self.location_client()
        result = self.location_service(
            activation_method='location-fallback').snapshot(
                req, glance=client)
        self.assertEqual(('active', 'raw', 0),
                         (result.status, result.disk_format, result.size))
        self.assertEqual(['upload'], [a.method for a in result.attempts])
        (note,) = result.notes
        self.assertIn('no read-only (http) store', note)
        self.assertNothingLeftFor(req)
