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

"""SnapshotService with glanceclient replaced at its boundary."""

from unittest import mock

from glanceclient import exc as gexc

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.snapshot import request
from nova_snapshot_ext.snapshot import service
from tests import base
from tests.unit import fake_glanceclient

IMAGE_ID = '11111111-2222-4333-8444-555555555555'


class ServiceTestBase(base.TestCase):

    driver_name = 'libvirt'
    glance_kwargs: dict = {}

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(fake_glanceclient.FakeGlanceFixture(
            **self.glance_kwargs)).glance
        self.client = glance_mod.GlanceClient(session=mock.Mock())
        self.sleeps = []
        self.now = 0.0

    def make_service(self, driver_name=None):
        drv = driver_mod.load_driver(self.conf,
                                     driver_name or self.driver_name)
        return service.SnapshotService(self.conf, driver=drv,
                                       glance=self.client,
                                       sleep=self._sleep,
                                       clock=lambda: self.now)

    def _sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def make_request(self, **changes):
        data = base.sample_request_dict()
        data['image_id'] = IMAGE_ID
        data.update(changes)
        return request.SnapshotRequest.from_dict(data)

    def assertNothingLeft(self):
        self.assertEqual({}, self.fake.images)


class TestSnapshotUpload(ServiceTestBase):

    def test_raw_zero_bytes_active(self):
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual(('active', 'raw', 'bare', 0),
                         (result.status, result.disk_format,
                          result.container_format, result.size))
        self.assertEqual(IMAGE_ID, result.image_id)
        self.assertEqual(['active'], [a.outcome for a in result.attempts])
        self.assertEqual('upload raw (0 B)', result.plan[0])
        self.assertEqual(1, len(self.fake.images))
        image = self.fake.images[IMAGE_ID]
        self.assertEqual('True', image['bdm_v2'])
        self.assertEqual('private', image['visibility'])

    def test_capabilities_cached_across_snapshots(self):
        svc = self.make_service()
        svc.snapshot(self.make_request(image_id=None))
        svc.snapshot(self.make_request(image_id=None))
        self.assertEqual(1, self.fake.calls.count('schema'))
        self.assertEqual(2, len(self.fake.images))

    def test_shared_with_server_owner(self):
        req = self.make_request()
        req.requester.project_id = 'someone-else'
        result = self.make_service().snapshot(req)
        self.assertEqual(req.server.project_id, result.member)
        self.assertEqual([req.server.project_id],
                         self.fake.members[IMAGE_ID])
        self.assertEqual('shared', self.fake.images[IMAGE_ID]['visibility'])

    def test_generated_id_when_none_given(self):
        result = self.make_service().snapshot(self.make_request(
            image_id=None))
        self.assertIn(result.image_id, self.fake.images)


class TestFallback(ServiceTestBase):

    glance_kwargs = {'disk_formats': ['qcow2', 'vmdk', 'vhd', 'vhdx',
                                      'iso']}

    def test_no_raw_uses_valid_empty_qcow2(self):
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual(('active', 'qcow2'),
                         (result.status, result.disk_format))
        self.assertEqual(payloads.payload_size('qcow2'), result.size)

    def test_415_moves_to_next_format_on_fresh_image(self):
        self.fake.fail('upload', gexc.HTTPException(
            'HTTP 415 Unsupported Media Type: Image failed safety checks'))
        result = self.make_service().snapshot(self.make_request())
        first, second = result.attempts[:2]
        self.assertEqual(('failed', 415, True),
                         (first.outcome, first.status, first.cleaned_up))
        self.assertEqual('active', second.outcome)
        self.assertNotEqual(first.image_id, second.image_id)
        self.assertEqual([second.image_id], list(self.fake.images))
        self.assertEqual('vmdk', result.disk_format)

    def test_schema_changed_since_discovery(self):
        svc = self.make_service()
        svc.snapshot(self.make_request(image_id=None))
        # The operator drops qcow2; the cached schema still lists it.
        self.fake.disk_formats.remove('qcow2')
        result = svc.snapshot(self.make_request())
        self.assertEqual(['failed', 'active'],
                         [a.outcome for a in result.attempts[:2]])
        self.assertEqual('vmdk', result.disk_format)
        # The refusal dropped the cache: the next snapshot rediscovers and
        # plans without qcow2.
        result = svc.snapshot(self.make_request(image_id=None))
        self.assertEqual(2, self.fake.calls.count('schema'))
        self.assertEqual(['vmdk'], [a.disk_format for a in result.attempts])

    def test_pinned_formats_order(self):
        self.flags(disk_formats=['vhd', 'qcow2'])
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual('vhd', result.disk_format)


class TestPreflightRefusals(ServiceTestBase):

    glance_kwargs = {'disk_formats': ['qcow2', 'vhd']}

    def test_no_honest_format_refused_before_create(self):
        err = self.assertRaises(exception.FormatNotAllowed,
                                self.make_service('zvm').snapshot,
                                self.make_request())
        self.assertIn('qcow2, vhd', err.format_message())
        self.assertIn("driver 'zvm'", err.format_message())
        self.assertNotIn('create', self.fake.calls)

    def test_pinned_formats_not_allowed_names_option(self):
        self.flags(disk_formats=['raw'])
        err = self.assertRaises(exception.FormatNotAllowed,
                                self.make_service().preflight,
                                self.make_request())
        self.assertIn('[snapshot_ext] disk_formats', err.format_message())

    def test_reserved_user_metadata_refused_before_create(self):
        req = self.make_request(metadata={'os_glance_import_task': 'x'})
        err = self.assertRaises(exception.ReservedProperty,
                                self.make_service().snapshot, req)
        self.assertEqual('os_glance_import_task', err.kwargs['property'])
        self.assertNotIn('create', self.fake.calls)

    def test_quota_refused_before_create(self):
        self.flags(image_property_quota=3)
        self.assertRaises(exception.PropertyQuotaExceeded,
                          self.make_service().snapshot, self.make_request())
        self.assertNotIn('create', self.fake.calls)

    def test_no_bare_container(self):
        self.fake.container_formats = ['ovf']
        err = self.assertRaises(exception.FormatNotAllowed,
                                self.make_service().preflight,
                                self.make_request())
        self.assertIn("'bare'", err.format_message())


class TestCleanup(ServiceTestBase):

    def _fails(self, operation, error, **req_changes):
        self.fake.fail(operation, error)
        svc = self.make_service()
        err = self.assertRaises(exception.ActivationFailed, svc.snapshot,
                                self.make_request(**req_changes))
        self.assertNothingLeft()
        self.assertEqual([], err.result.leftover)
        return err

    def test_create_forbidden(self):
        err = self._fails('create', gexc.HTTPForbidden('policy'))
        self.assertEqual(403, err.code)
        self.assertEqual([], err.result.cleaned_up)

    def test_add_member_fails(self):
        req = self.make_request()
        self.fake.fail('add_member', gexc.HTTPOverLimit('members'))
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                request.SnapshotRequest.from_dict(
                                    dict(req.to_dict(), requester={
                                        'project_id': 'other'})))
        self.assertNothingLeft()
        self.assertEqual([IMAGE_ID], err.result.cleaned_up)

    def test_upload_server_error(self):
        err = self._fails('upload', gexc.HTTPInternalServerError('boom'))
        self.assertEqual([IMAGE_ID], err.result.cleaned_up)
        self.assertIn('deleted image(s) %s' % IMAGE_ID,
                      err.format_message())
        # A non-format failure does not try the other formats.
        self.assertEqual(1, len(err.result.attempts))

    def test_verify_read_fails(self):
        self._fails('get', gexc.HTTPServiceUnavailable('down'))

    def test_stuck_in_saving_times_out(self):
        self.flags(activation_timeout=1.0, activation_poll_interval=0.5)
        svc = self.make_service()
        real_upload = self.fake.client().images.upload

        def upload_saving(image_id, data, image_size=None):
            real_upload(image_id, data, image_size)
            self.fake.images[image_id]['status'] = 'saving'

        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               side_effect=upload_saving):
            err = self.assertRaises(exception.ActivationFailed,
                                    svc.snapshot, self.make_request())
        self.assertIn('did not become active', err.format_message())
        self.assertEqual([0.5, 0.5], self.sleeps)
        self.assertNothingLeft()

    def test_delete_failure_reported_as_leftover(self):
        self.fake.fail('upload', gexc.HTTPInternalServerError('boom'))
        self.fake.fail('delete', gexc.HTTPServiceUnavailable('down'))
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertEqual([IMAGE_ID], err.result.leftover)
        self.assertIn('COULD NOT DELETE', err.format_message())

    def test_every_format_refused(self):
        self.flags(disk_formats=['raw', 'qcow2'])
        self.fake.fail('upload', gexc.HTTPException('HTTP 415 x'), times=2)
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertEqual(2, len(err.result.cleaned_up))
        self.assertEqual(415, err.code)
        self.assertNothingLeft()


class TestIdempotency(ServiceTestBase):

    def test_lost_create_response_retried_reads_back(self):
        # The first POST created the image but its response was lost; the
        # retried POST meets 409 and the plugin reads the image back.
        svc = self.make_service()
        req = self.make_request()
        record = svc.build_record(req)
        self.fake.client().images.create(**record.create_kwargs('raw',
                                                                'bare'))
        result = svc.snapshot(req)
        self.assertEqual('active', result.status)
        self.assertTrue(result.reused)
        self.assertEqual([IMAGE_ID], list(self.fake.images))

    def test_host_retry_returns_active_image(self):
        svc = self.make_service()
        first = svc.snapshot(self.make_request())
        again = svc.snapshot(self.make_request())
        self.assertEqual(first.image_id, again.image_id)
        self.assertTrue(again.reused)
        self.assertEqual(1, len(self.fake.images))
        self.assertEqual(1, self.fake.calls.count('upload'))

    def test_foreign_image_with_same_id_untouched(self):
        self.fake.client().images.create(id=IMAGE_ID, name='not-ours',
                                         disk_format='raw',
                                         container_format='bare')
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertEqual(409, err.code)
        self.assertIn(IMAGE_ID, self.fake.images)
        self.assertEqual('not-ours', self.fake.images[IMAGE_ID]['name'])

    def test_retry_after_deleted_id_is_a_conflict(self):
        self.fake.used_ids.add(IMAGE_ID)
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertEqual(409, err.code)
        self.assertNothingLeft()
