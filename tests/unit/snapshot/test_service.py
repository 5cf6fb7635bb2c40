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

import hashlib
import io
from unittest import mock

import fixtures
from glanceclient import exc as gexc

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.image import payloads
from nova_snapshot_ext.snapshot import attempts
from nova_snapshot_ext.snapshot import cleanup
from nova_snapshot_ext.snapshot import identity
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

    def other_snapshot(self, tag, **changes):
        """A request for another snapshot of the server.

        Other volume snapshot ids, hence another fingerprint and another
        derived image id.
        """
        data = base.sample_request_dict()
        data['image_id'] = IMAGE_ID
        data.update(changes)
        for bdm in data['block_device_mappings']:
            if bdm.get('snapshot_id'):
                bdm['snapshot_id'] = '%s-%s' % (bdm['snapshot_id'], tag)
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
        svc.snapshot(self.other_snapshot('a', image_id=None))
        svc.snapshot(self.other_snapshot('b', image_id=None))
        self.assertEqual(1, self.fake.calls.count('schema'))
        self.assertEqual(2, len(self.fake.images))

    def test_no_unified_limits_is_learned_once(self):
        # Glance with use_keystone_limits off answers {} for every
        # project: kept with the capabilities, not asked per snapshot.
        self.fake.usage = {}
        svc = self.make_service()
        for tag in 'abc':
            svc.snapshot(self.other_snapshot(tag, image_id=None))
        self.assertEqual(1, self.fake.calls.count('usage'))
        self.assertIs(False, svc.capabilities.get(self.client).unified_limits)
        self.assertEqual(3, len(self.fake.images))

    def test_unified_limits_are_read_for_every_snapshot(self):
        self.fake.usage = {'image_count_total': {'usage': 1, 'limit': 10},
                           'image_count_uploading': {'usage': 0,
                                                     'limit': 10}}
        svc = self.make_service()
        for tag in 'ab':
            svc.snapshot(self.other_snapshot(tag, image_id=None))
        self.assertEqual(2, self.fake.calls.count('usage'))
        # The usage changed: the next snapshot is refused before create.
        self.fake.usage['image_count_total'] = {'usage': 10, 'limit': 10}
        self.assertRaises(exception.GlanceQuotaExceeded, svc.snapshot,
                          self.other_snapshot('c', image_id=None))
        self.assertEqual(3, self.fake.calls.count('usage'))
        self.assertEqual(2, len(self.fake.images))

    def test_quota_refusal_names_the_project_when_known(self):
        self.fake.usage = {'image_count_total': {'usage': 10, 'limit': 10}}
        svc = self.make_service()
        with mock.patch.object(glance_mod.GlanceClient, 'project_id',
                               return_value='proj-42'):
            err = self.assertRaises(exception.GlanceQuotaExceeded,
                                    svc.snapshot,
                                    self.other_snapshot('a', image_id=None))
        self.assertIn('project proj-42', err.format_message())
        with mock.patch.object(glance_mod.GlanceClient, 'project_id',
                               return_value=None):
            err = self.assertRaises(exception.GlanceQuotaExceeded,
                                    svc.snapshot,
                                    self.other_snapshot('b', image_id=None))
        self.assertIn("project (the image's owner)", err.format_message())
        self.assertEqual(0, len(self.fake.images))

    def test_unlimited_and_malformed_usage_never_refuse(self):
        # -1 is Keystone's "unlimited"; an unreadable entry is skipped.
        self.fake.usage = {'image_count_total': {'usage': 10, 'limit': -1},
                           'image_size_total': {'usage': 10,
                                                'limit': 'unlimited'}}
        self.make_service().snapshot(self.other_snapshot(
            'a', image_id=None))
        self.assertEqual(1, len(self.fake.images))

    def test_a_refused_usage_read_is_asked_again(self):
        # A 403 may be this identity's: nothing learned about Glance.
        self.fake.usage = {}
        self.fake.fail('usage', gexc.HTTPForbidden('policy'), times=2)
        svc = self.make_service()
        for tag in 'ab':
            svc.snapshot(self.other_snapshot(tag, image_id=None))
        self.assertEqual(2, self.fake.calls.count('usage'))
        self.assertIsNone(svc.capabilities.get(self.client).unified_limits)

    def test_limits_turned_on_later_are_read_again_after_a_413(self):
        self.fake.usage = {}
        svc = self.make_service()
        svc.snapshot(self.other_snapshot('a', image_id=None))
        # The operator turns the limits on; the next upload meets one.
        self.fake.usage = {'image_count_uploading': {'usage': 0,
                                                     'limit': 0}}
        self.fake.fail('upload', gexc.HTTPOverLimit(
            'Resource image_count_uploading is over limit of 0 due to '
            'current usage 1 and delta 0'))
        self.assertRaises(exception.ActivationFailed, svc.snapshot,
                          self.other_snapshot('b', image_id=None))
        self.assertEqual(1, self.fake.calls.count('usage'))
        # Forgotten with the capabilities: read again, refused up front.
        self.assertRaises(exception.GlanceQuotaExceeded, svc.snapshot,
                          self.other_snapshot('c', image_id=None))
        self.assertEqual(2, self.fake.calls.count('usage'))
        self.assertEqual(2, self.fake.calls.count('schema'))

    def test_shared_with_server_owner(self):
        req = self.make_request()
        req.requester.project_id = 'someone-else'
        result = self.make_service().snapshot(req)
        self.assertEqual(req.server.project_id, result.member)
        self.assertEqual([req.server.project_id],
                         self.fake.members[IMAGE_ID])
        self.assertEqual('shared', self.fake.images[IMAGE_ID]['visibility'])

    def test_owner_is_not_made_a_member_nor_reported_shared(self):
        # An admin token of the server's project: Glance makes that
        # project the owner, which needs no membership.
        req = self.make_request()
        req.requester.project_id = 'someone-else'
        self.fake.owner = req.server.project_id
        svc = self.make_service()
        notes = []
        for _ in range(2):  # the second run reuses the active image
            result = svc.snapshot(req)
            notes += result.notes
            self.assertIsNone(result.member)
            self.assertNotIn('shared with', result.describe())
        self.assertNotIn('add_member', self.fake.calls)
        self.assertEqual([], self.fake.members.get(IMAGE_ID, []))
        # Nova keeps a snapshot owned by the server's project private:
        # never shared with no member.
        self.assertEqual('private', self.fake.images[IMAGE_ID]['visibility'])
        self.assertEqual(1, self.fake.calls.count('update'))
        self.assertIn('it is private', ' '.join(notes))

    def test_reused_image_names_its_member(self):
        req = self.make_request()
        req.requester.project_id = 'someone-else'
        self.fake.owner = 'someone-else'
        svc = self.make_service()
        first = svc.snapshot(req)
        again = svc.snapshot(req)
        self.assertEqual(first.image_id, again.image_id)
        self.assertEqual(req.server.project_id, again.member)
        self.assertEqual(1, self.fake.calls.count('add_member'))

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
        svc.snapshot(self.other_snapshot('first', image_id=None))
        # The operator drops qcow2; the cached schema still lists it.
        self.fake.disk_formats.remove('qcow2')
        result = svc.snapshot(self.make_request())
        self.assertEqual(['failed', 'active'],
                         [a.outcome for a in result.attempts[:2]])
        self.assertEqual('vmdk', result.disk_format)
        # The refusal dropped the cache: the next snapshot rediscovers and
        # plans without qcow2.
        result = svc.snapshot(self.other_snapshot('third', image_id=None))
        self.assertEqual(2, self.fake.calls.count('schema'))
        self.assertEqual(['vmdk'], [a.disk_format for a in result.attempts])

    def test_pinned_formats_order(self):
        self.flags(disk_formats=['vhd', 'qcow2'])
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual('vhd', result.disk_format)


class TestPlanKept(ServiceTestBase):
    """The plan kept between snapshots is the plan each would get."""

    def test_an_option_changed_between_snapshots_changes_the_plan(self):
        svc = self.make_service()
        first = svc.snapshot(self.other_snapshot('first', image_id=None))
        self.assertEqual('raw', first.disk_format)
        self.flags(disk_formats=['qcow2'])
        second = svc.snapshot(self.other_snapshot('second', image_id=None))
        self.assertEqual('qcow2', second.disk_format)
        self.assertEqual(['upload qcow2 (%d B, valid empty image)'
                          % payloads.payload_size('qcow2')], second.plan)

    def test_a_fallback_is_warned_about_on_every_snapshot(self):
        # ploop: an honest empty image libvirt/KVM does not read.
        self.fake.disk_formats[:] = ['ploop']
        logger = self.useFixture(fixtures.FakeLogger(level='WARNING'))
        svc = self.make_service()
        warned = []
        for tag in ('first', 'second', 'third'):
            result = svc.snapshot(self.other_snapshot(tag, image_id=None))
            self.assertEqual('ploop', result.disk_format)
            warned.append(logger.output.count(
                'activated as ploop, a format the driver does not read'))
        # Once per snapshot, when the fallback activated its image (the
        # plan itself is no warning: it activates nothing).
        self.assertEqual([1, 2, 3], warned)

    def test_a_refusal_is_a_fresh_error_each_time(self):
        self.fake.disk_formats[:] = ['aki']  # no honest empty image
        svc = self.make_service()
        errors = [self.assertRaises(exception.FormatNotAllowed,
                                    svc.preflight, self.make_request())
                  for _ in range(2)]
        self.assertIsNot(errors[0], errors[1])
        self.assertNothingLeft()

    def test_a_host_editing_its_plan_changes_no_later_plan(self):
        # PreparedSnapshot.plan is the host's: trimming it (e.g. to skip
        # an attempt) must not trim the plan of every later snapshot.
        svc = self.make_service()
        first = svc.preflight(self.other_snapshot('first', image_id=None))
        full = list(first.plan)
        self.assertGreater(len(full), 1)
        del first.plan[1:]
        second = svc.preflight(self.other_snapshot('second',
                                                   image_id=None))
        self.assertEqual(full, second.plan)
        second.plan.clear()
        third = svc.preflight(self.other_snapshot('third', image_id=None))
        self.assertEqual(full, third.plan)

    def test_the_drivers_driver_formats_only_changes_the_plan(self):
        # The plan policy reads [snapshot_ext] driver_formats_only from
        # the driver's configuration (plan._formats_only): a driver loaded
        # on its own ConfigOpts is planned by that one's value.
        own = self.useFixture(base.PrivateConf()).conf
        drv = driver_mod.load_driver(own, 'libvirt')
        svc = service.SnapshotService(self.conf, driver=drv,
                                      glance=self.client)
        caps = svc.capabilities.get(self.client)
        first = svc.decide_plan(caps, self.client)
        self.assertTrue(any(a.fallback for a in first.attempts))
        own.set_override('driver_formats_only', True, group='snapshot_ext')
        second = svc.decide_plan(caps, self.client)
        self.assertEqual([], [a for a in second.attempts if a.fallback])
        self.assertEqual(
            [a for a in first.attempts if not a.fallback], second.attempts)


class TestPreflightRefusals(ServiceTestBase):

    glance_kwargs = {'disk_formats': ['qcow2', 'vhd']}

    def test_no_honest_format_refused_before_create(self):
        self.flags(driver_formats_only=True)
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

    def test_directly_built_bad_request_refused_before_anything(self):
        req = self.make_request()
        req = request.SnapshotRequest(
            name=req.name, server=req.server,
            block_device_mappings=req.block_device_mappings,
            requester=req.requester, metadata={'tier': 5},
            image_id=req.image_id)
        err = self.assertRaises(exception.InvalidRequest,
                                self.make_service().snapshot, req)
        self.assertEqual('metadata.tier', err.kwargs['field'])
        self.assertEqual([], self.fake.calls)

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

    def test_upload_unavailable(self):
        self.fake.fail('upload', gexc.HTTPServiceUnavailable('busy'))
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertEqual(([IMAGE_ID], [IMAGE_ID]),
                         (err.result.leftover, err.result.left_in_place))
        # Left in place, named: another try may be finishing it.
        self.assertEqual([], err.result.cleaned_up)
        self.assertNotIn('deleted image', err.format_message())
        self.assertIn('image(s) %s (status queued) left in place'
                      % IMAGE_ID, err.format_message())
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])
        # A non-format failure does not try the other formats.
        self.assertEqual(1, len(err.result.attempts))

    def test_upload_refused_is_deleted(self):
        err = self._fails('upload', gexc.HTTPBadRequest('refused'))
        self.assertEqual([IMAGE_ID], err.result.cleaned_up)
        self.assertIn('deleted image(s) %s' % IMAGE_ID,
                      err.format_message())
        self.assertEqual(1, len(err.result.attempts))

    def test_upload_500_on_queued_image_is_a_poisoned_image(self):
        # Glance's store already holds data for the image (a concurrent
        # try's refused upload): delete it and go on, as after a 415.
        self.fake.fail('upload', gexc.HTTPInternalServerError('Duplicate'))
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual(['failed', 'active'],
                         [a.outcome for a in result.attempts])
        self.assertTrue(result.attempts[0].cleaned_up)
        self.assertEqual([result.image_id], list(self.fake.images))

    def _existing_image(self, svc, status):
        # What a first try left: our record, mid-upload.
        record = svc.build_record(self.make_request())
        self.fake.client().images.create(**record.create_kwargs('raw',
                                                                'bare'))
        self.fake.images[IMAGE_ID]['status'] = status

    def test_upload_needs_no_read_back(self):
        self.make_service().snapshot(self.make_request())
        self.assertEqual(['schema', 'create', 'upload'], self.fake.calls)
        self.assertNotIn('get', self.fake.calls)

    def test_read_back_of_reused_image_fails(self):
        svc = self.make_service()
        self._existing_image(svc, 'saving')
        self.fake.fail('get', gexc.HTTPServiceUnavailable('down'), times=2)
        err = self.assertRaises(exception.ActivationFailed, svc.snapshot,
                                self.make_request())
        self.assertEqual(503, err.code)

    def test_reused_image_stuck_in_saving_times_out(self):
        self.flags(activation_timeout=1.0, activation_poll_interval=0.5)
        svc = self.make_service()
        self._existing_image(svc, 'saving')
        err = self.assertRaises(exception.ActivationFailed,
                                svc.snapshot, self.make_request())
        self.assertIn('did not become active', err.format_message())
        self.assertEqual([0.5, 0.5], self.sleeps)
        # Not this call's image: another try may still finish it.
        self.assertEqual([IMAGE_ID], list(self.fake.images))
        self.assertEqual([], err.result.cleaned_up)

    def test_unexpected_error_after_create_names_the_image(self):
        # A bug says nothing about the other tries of this snapshot: the
        # image is left in place and named where the bug is reported.
        svc = self.make_service()
        with mock.patch.object(attempts.upload, 'activate',
                               side_effect=RuntimeError('bug')):
            with self.assertLogs('nova_snapshot_ext.snapshot.cleanup',
                                 'ERROR') as logs:
                self.assertRaises(RuntimeError, svc.snapshot,
                                  self.make_request())
        self.assertEqual(['queued'], [v['status'] for v in
                                      self.fake.images.values()])
        self.assertNotIn('delete', self.fake.calls)
        self.assertIn('%s (status queued) left in place' % IMAGE_ID,
                      '\n'.join(logs.output))

    def test_reused_image_becomes_active_while_waiting(self):
        svc = self.make_service()
        self._existing_image(svc, 'saving')
        real_get = self.fake.client().images.get
        reads = []

        def get_then_active(image_id):
            # The read-back after 409 and the first poll see 'saving'.
            reads.append(image_id)
            image = real_get(image_id)
            if len(reads) == 2:
                self.fake.images[image_id].update(status='active', size=0)
            return image

        with mock.patch.object(fake_glanceclient._Images, 'get',
                               side_effect=get_then_active):
            result = svc.snapshot(self.make_request())
        self.assertEqual(('active', IMAGE_ID, True),
                         (result.status, result.image_id, result.reused))
        self.assertEqual([0.5], self.sleeps)

    def test_delete_failure_reported_as_leftover(self):
        # Every try of the cleanup delete fails (issue 9 input 4 is the
        # single failure: tests.unit.snapshot.test_attempts).  A refusal
        # every try meets: the cleanup deletes (a 503 leaves the image).
        self.fake.fail('upload', gexc.HTTPBadRequest('refused'))
        self.fake.fail('delete', gexc.HTTPServiceUnavailable('down'),
                       times=cleanup.CLEANUP_TRIES)
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
        # Said as what happened: found active, nothing uploaded now.
        text = again.describe()
        self.assertIn('attempt 1: adopted image %s' % IMAGE_ID, text)
        self.assertIn('nothing sent) -> active', text)
        self.assertNotIn('attempt 1: upload', text)

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

    def test_retry_after_deleted_id_single_attempt_uses_next_id(self):
        # Issue 9 input 6: the id was burned (an earlier try deleted its
        # image after a transient fault); the retry must still succeed,
        # on the attempt's next-generation id.  (Before issue 9 this was
        # a 409 "retry with a new image_id".)
        self.flags(disk_formats=['raw'])
        self.fake.used_ids.add(IMAGE_ID)
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual('active', result.status)
        self.assertNotEqual(IMAGE_ID, result.image_id)
        self.assertEqual([result.image_id], list(self.fake.images))
        self.assertEqual(2, self.fake.calls.count('create'))

    def test_retry_after_fallback_finds_the_fallback_image(self):
        # First try: raw refused at upload (415), qcow2 went active on the
        # next attempt's id. The retry must find that image, not make
        # another one.
        svc = self.make_service()
        self.fake.fail('upload', gexc.HTTPException('HTTP 415 refused'))
        first = svc.snapshot(self.make_request())
        self.assertEqual('qcow2', first.disk_format)
        self.assertNotEqual(IMAGE_ID, first.image_id)
        again = svc.snapshot(self.make_request())
        self.assertEqual(first.image_id, again.image_id)
        self.assertTrue(again.reused)
        self.assertEqual([first.image_id], list(self.fake.images))

    def test_fallback_ids_are_distinct_and_stable(self):
        svc = self.make_service()
        prepared = svc.preflight(self.make_request(), glance=self.client)
        ids = [identity.attempt_id(prepared.record, i, p)
               for i, p in enumerate(prepared.plan)]
        self.assertEqual(IMAGE_ID, ids[0])
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual(ids, [identity.attempt_id(prepared.record, i, p)
                               for i, p in enumerate(prepared.plan)])


LOCATION_URL = 'http://objects.test/empty.qcow2?sig=secret'
REDACTED = 'http://objects.test/empty.qcow2?***'
QCOW2 = payloads.payload('qcow2')


class LocationTestBase(ServiceTestBase):

    method = 'location-first'

    def setUp(self):
        super().setUp()
        self.fetches = []
        self.served = QCOW2
        self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.image.locations.fetch', side_effect=self._get))
        self.fake.objects[LOCATION_URL] = QCOW2
        self.fake.stores = [{'id': 'fs', 'default': 'true'},
                            {'id': 'web', 'read-only': 'true'}]
        self.flags(activation_method=self.method, location_url=LOCATION_URL,
                   location_disk_format='qcow2')

    def _get(self, session, url):
        self.fetches.append(url)
        return self.served


class TestLocationPlan(LocationTestBase):

    def plan(self, method):
        self.flags(activation_method=method)
        svc = self.make_service()
        caps = svc.capabilities.get(self.client)
        return [p.describe()
                for p in svc.decide_plan(caps, self.client).attempts]

    def test_placement_per_option(self):
        location = 'location %s (new API, qcow2, 1536 B)' % REDACTED
        uploads = self.plan('upload')
        self.assertNotIn(location, uploads)
        self.assertEqual('upload raw (0 B)', uploads[0])
        self.assertEqual([location] + uploads, self.plan('location-first'))
        self.assertEqual(uploads + [location],
                         self.plan('location-fallback'))

    def test_upload_method_never_downloads(self):
        self.flags(activation_method='upload')
        self.make_service().snapshot(self.make_request())
        self.assertEqual([], self.fetches)
        self.assertNotIn('add_image_location', self.fake.calls)

    def test_legacy_when_2_17_missing(self):
        self.fake.versions = [{'id': 'v2.16', 'status': 'CURRENT'}]
        self.assertIn('location %s (legacy API, qcow2, 1536 B)' % REDACTED,
                      self.plan('location-first'))

    def test_bad_scheme_refused_at_start(self):
        self.flags(location_url='file:///var/lib/glance/images/x')
        err = self.assertRaises(exception.ConfigurationError,
                                self.make_service)
        self.assertIn('[snapshot_ext] location_url', err.format_message())

    def test_no_http_store_first_refused_before_create(self):
        self.fake.stores = [{'id': 'fs', 'default': 'true'}]
        err = self.assertRaises(exception.LocationUnusable,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertIn('no read-only (http) store', err.format_message())
        self.assertNotIn('create', self.fake.calls)
        self.assertEqual([], self.fetches)

    def test_no_http_store_fallback_skipped_with_note(self):
        self.flags(activation_method='location-fallback')
        self.fake.stores = [{'id': 'fs', 'default': 'true'}]
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual(('active', 'raw'),
                         (result.status, result.disk_format))
        (note,) = result.notes
        self.assertIn('not used: this Glance reports no read-only', note)

    def test_empty_object_refused_before_create(self):
        self.served = b''
        err = self.assertRaises(exception.LocationUnusable,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertIn('empty (0 bytes)', err.format_message())
        self.assertIn(REDACTED, err.format_message())
        self.assertNotIn('secret', err.format_message())
        self.assertNotIn('create', self.fake.calls)

    def test_fallback_with_nothing_else_refused(self):
        self.flags(activation_method='location-fallback')
        self.fake.disk_formats = ['qcow2']
        self.fake.stores = [{'id': 'fs'}]
        self.flags(driver_formats_only=True)
        err = self.assertRaises(exception.LocationUnusable,
                                self.make_service('zvm').snapshot,
                                self.make_request())
        self.assertIn('no upload is possible either', err.format_message())


class TestLocationActivation(LocationTestBase):

    def test_new_api_active_hashed(self):
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual(('active', 'qcow2', 1536, IMAGE_ID),
                         (result.status, result.disk_format, result.size,
                          result.image_id))
        self.assertEqual(hashlib.sha512(QCOW2).hexdigest(),
                         result.os_hash_value)
        (attempt,) = result.attempts
        self.assertEqual(('location', 'new', REDACTED),
                         (attempt.method, attempt.location_api, attempt.url))
        self.assertNotIn('secret', result.describe())
        self.assertNotIn('upload', self.fake.calls)
        self.assertEqual(1, len(self.fetches))

    def test_quick_import_read_once(self):
        # Steady state: create, POST /locations, one read of the image
        # when the import is expected to be done; no tasks, no versions.
        svc = self.make_service()
        first = svc.location_source.import_estimate.first_poll
        svc.snapshot(self.make_request())
        self.assertEqual([first], self.sleeps)
        self.assertEqual(['create', 'add_image_location', 'get'],
                         [c for c in self.fake.calls if c != 'schema'])
        # The estimate learnt from it: the next first read comes sooner.
        self.assertLess(svc.location_source.import_estimate.first_poll,
                        first)

    def test_task_failure_read_from_tasks_while_queued(self):
        # A task that fails leaves the image queued: its tasks are read
        # once the wait is twice the expected import, not at every read.
        self.fake.task_fails_with = 'Task failed due to Internal Error'
        result = self.make_service().snapshot(self.make_request(
            image_id=None))
        first = result.attempts[0]
        self.assertEqual('location', first.method)
        self.assertIn('no detail', first.reason)
        self.assertEqual('upload', result.attempts[1].method)
        self.assertEqual(1, self.fake.calls.count('tasks'))
        self.assertGreaterEqual(
            sum(self.sleeps),
            2 * locations.FIRST_POLL_S - 1e-9)

    def test_task_failure_reason_then_next_attempt(self):
        self.fake.task_fails_with = 'Task failed due to Internal Error'
        result = self.make_service().snapshot(self.make_request())
        first, second = result.attempts
        self.assertEqual(('failed', True), (first.outcome,
                                            first.cleaned_up))
        self.assertIn('location_import task', first.reason)
        self.assertIn('Task failed due to Internal Error', first.reason)
        self.assertEqual(('upload', 'active'), (second.method,
                                                second.outcome))
        self.assertEqual([second.image_id], list(self.fake.images))

    def test_object_changed_hash_mismatch(self):
        svc = self.make_service()
        svc.preflight(self.make_request())
        self.fake.objects[LOCATION_URL] = QCOW2[:-1] + b'\1'
        result = svc.snapshot(self.make_request())
        self.assertIn('hash verification failed', result.attempts[0].reason)
        self.assertEqual('raw', result.disk_format)
        # The object is checked again after a failed task.
        self.assertEqual(1, len(self.fetches))
        svc.preflight(self.make_request())
        self.assertEqual(2, len(self.fetches))

    def test_501_in_auto_mode_tries_legacy_next(self):
        # The capabilities said 2.17; glanceclient's own check says no.
        svc = self.make_service()
        svc.preflight(self.make_request())
        self.fake.versions = [{'id': 'v2.16', 'status': 'CURRENT'}]
        self.fake.show_multiple_locations = True
        result = svc.snapshot(self.make_request())
        first, second = result.attempts
        self.assertEqual((501, True), (first.status, first.cleaned_up))
        self.assertEqual(('location', 'legacy', 'active'),
                         (second.method, second.location_api,
                          second.outcome))
        self.assertEqual(hashlib.sha512(QCOW2).hexdigest(),
                         self.fake.images[second.image_id]['os_hash_value'])
        self.assertIn('legacy API', result.plan[1])

    def test_501_pinned_new_goes_to_upload(self):
        self.flags(location_api='new')
        svc = self.make_service()
        svc.preflight(self.make_request())
        self.fake.versions = [{'id': 'v2.16', 'status': 'CURRENT'}]
        result = svc.snapshot(self.make_request())
        self.assertEqual([('location', 501), ('upload', None)],
                         [(a.method, a.status) for a in result.attempts])

    def test_403_and_400_go_to_next_attempt(self):
        for error, status in ((gexc.HTTPForbidden('policy'), 403),
                              (gexc.HTTPBadRequest('filtering'), 400)):
            self.fake.fail('add_image_location', error)
            result = self.make_service().snapshot(self.other_snapshot(
                status, image_id=None))
            self.assertEqual([('location', status, True),
                              ('upload', None, False)],
                             [(a.method, a.status, a.cleaned_up)
                              for a in result.attempts])
        self.assertEqual(2, len(self.fake.images))

    def test_409_new_api_reports_status_and_moves_on(self):
        self.fake.fail('add_image_location', gexc.HTTPConflict(
            'image is locked by another import'))
        result = self.make_service().snapshot(self.make_request())
        first = result.attempts[0]
        self.assertEqual(409, first.status)
        self.assertIn('image status now: queued', first.reason)
        self.assertEqual('active', result.attempts[1].outcome)

    def test_legacy_403_goes_to_next_attempt(self):
        self.flags(location_api='legacy')
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual([('location', 'legacy', 403), ('upload', None,
                                                        None)],
                         [(a.method, a.location_api, a.status)
                          for a in result.attempts])
        self.assertIn('locations are invisible', result.attempts[0].reason)

    def test_legacy_409_is_reported_not_retried(self):
        self.flags(location_api='legacy')
        self.fake.show_multiple_locations = True
        self.fake.fail('add_location', gexc.HTTPConflict('status saving'))
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertEqual(1, len(err.result.attempts))
        self.assertIn('image status now: queued',
                      err.result.attempts[0].reason)
        self.assertNothingLeft()

    def test_image_deleted_while_adding_stops_cleanly(self):
        real = fake_glanceclient._Images.add_image_location

        def add_then_delete(images, image_id, url, validation_data={}):
            image = real(images, image_id, url, validation_data)
            del self.fake.images[image_id]
            return image

        with mock.patch.object(fake_glanceclient._Images,
                               'add_image_location', add_then_delete):
            err = self.assertRaises(exception.ActivationFailed,
                                    self.make_service().snapshot,
                                    self.make_request())
        (attempt,) = err.result.attempts
        self.assertIn('deleted while Glance was adding its location',
                      attempt.reason)
        self.assertEqual([], err.result.leftover)
        self.assertNothingLeft()

    def test_tasks_unreadable_times_out_and_cleans_up(self):
        self.flags(activation_timeout=1.0, activation_poll_interval=0.5)
        self.fake.task_fails_with = 'boom'
        self.fake.fail('tasks', gexc.HTTPForbidden('no'), times=10)
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertIn('did not become active', err.format_message())
        # A timeout is not a refusal: no other attempt.
        self.assertEqual(1, len(err.result.attempts))
        self.assertNothingLeft()


class TestTaskFailureReason(ServiceTestBase):

    def test_latest_location_task(self):
        self.fake.images['i'] = {'id': 'i', 'status': 'queued'}
        self.fake.tasks['i'] = [
            {'id': 't1', 'type': 'location_import', 'status': 'failure',
             'message': 'old', 'created_at': '2025-01-01T00:00:01Z'},
            {'id': 't2', 'type': 'location_import', 'status': 'failure',
             'message': 'Invalid\n location', 'created_at':
             '2025-01-01T00:00:02Z'},
            {'id': 't3', 'type': 'api_image_import', 'status': 'failure',
             'message': 'not ours', 'created_at': '2025-01-01T00:00:03Z'}]
        self.assertEqual(
            'location_import task t2 failed: Invalid location',
            service.SnapshotService.location_task_failure(self.client, 'i'))

    def test_pending_or_success_is_none(self):
        self.fake.tasks['i'] = [{'id': 't', 'type': 'location_import',
                                 'status': 'processing'}]
        self.assertIsNone(service.SnapshotService.location_task_failure(
            self.client, 'i'))
        self.assertIsNone(service.SnapshotService.location_task_failure(
            self.client, 'none'))


class TestAdoption(ServiceTestBase):
    """Images another try of the same snapshot made (retries, races)."""

    def _leftover(self, svc, disk_format, status='queued', size=None):
        record = svc.build_record(self.make_request())
        self.fake.client().images.create(**record.create_kwargs(
            disk_format, 'bare'))
        self.fake.images[IMAGE_ID].update(status=status, size=size)

    def test_queued_leftover_gets_its_own_formats_payload(self):
        # Never zero bytes under a qcow2 label.
        svc = self.make_service()
        self._leftover(svc, 'qcow2')
        uploads = []
        real = fake_glanceclient._Images.upload

        def spy(images, image_id, data, image_size=None):
            body = data.read() if hasattr(data, 'read') else data
            uploads.append(body)
            return real(images, image_id, io.BytesIO(body), image_size)

        with mock.patch.object(fake_glanceclient._Images, 'upload', spy):
            result = svc.snapshot(self.make_request())
        self.assertEqual(('active', 'qcow2', IMAGE_ID),
                         (result.status, result.disk_format,
                          result.image_id))
        self.assertEqual([payloads.payload('qcow2')], uploads)

    def test_active_image_of_other_format_is_kept(self):
        # A first try pinned to qcow2 succeeded; the retry without the pin
        # must return that image, not delete it.
        svc = self.make_service()
        self._leftover(svc, 'qcow2', status='active',
                       size=payloads.payload_size('qcow2'))
        result = svc.snapshot(self.make_request())
        self.assertEqual((IMAGE_ID, 'qcow2', True),
                         (result.image_id, result.disk_format,
                          result.reused))
        self.assertEqual([IMAGE_ID], list(self.fake.images))

    def assertOtherTryFinishesFirst(self, svc, error):
        """Another try's upload wins; ours then fails with ``error``.

        The call must return that active image and delete nothing.
        """
        def other_won(image_id, data, image_size=None):
            self.fake.images[image_id].update(status='active', size=0)
            raise error

        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               side_effect=other_won):
            result = svc.snapshot(self.make_request())
        self.assertEqual(('active', IMAGE_ID), (result.status,
                                                result.image_id))
        self.assertEqual([IMAGE_ID], list(self.fake.images))

    def test_concurrent_upload_409_waits_for_active(self):
        # Two tries of one snapshot: the other one uploaded first.
        svc = self.make_service()
        self._leftover(svc, 'raw')
        self.assertOtherTryFinishesFirst(svc, gexc.HTTPConflict(
            'Image status transition from active to saving is not allowed'))

    def test_poisoned_leftover_is_deleted_and_next_attempt_runs(self):
        svc = self.make_service()
        self._leftover(svc, 'raw')
        self.fake.fail('upload', gexc.HTTPException('HTTP 415 refused'))
        result = svc.snapshot(self.make_request())
        self.assertTrue(result.attempts[0].cleaned_up)
        self.assertEqual('active', result.status)
        self.assertNotIn(IMAGE_ID, self.fake.images)

    def test_burned_id_looks_for_earlier_images_then_next_id(self):
        # The id was used and the image deleted, and no image of this
        # snapshot is left: one look (list by name), then the next id.
        self.fake.used_ids.add(IMAGE_ID)
        result = self.make_service().snapshot(self.make_request())
        self.assertEqual([result.image_id], list(self.fake.images))
        self.assertEqual(2, self.fake.calls.count('create'))
        self.assertEqual(1, len(result.attempts))

    def test_foreign_image_message(self):
        self.fake.client().images.create(id=IMAGE_ID, name='other',
                                         disk_format='raw',
                                         container_format='bare')
        err = self.assertRaises(exception.ActivationFailed,
                                self.make_service().snapshot,
                                self.make_request())
        self.assertIn('belongs to another image', err.format_message())
        self.assertEqual('other', self.fake.images[IMAGE_ID]['name'])

    def test_upload_lost_race_but_image_active_is_kept(self):
        # Two uploads into one image: Glance answers the loser 410 while
        # the winner left the image active. The loser must not delete it.
        self.assertOtherTryFinishesFirst(
            self.make_service(), gexc.HTTPException(
                'HTTP 410 Gone: could not be found after upload'))

    def test_adopted_image_deleted_under_us_moves_on(self):
        # The other try's image was deleted under us (whatever made that
        # try give up): its id is burned, so this call goes on with the
        # same attempt under the next-generation id -- where every try
        # that lost the image goes (one image, not one per path).
        svc = self.make_service()
        self._leftover(svc, 'raw', status='saving')
        real_get = fake_glanceclient._Images.get
        calls = []

        def get(images, image_id):
            calls.append(image_id)
            if len(calls) == 2:
                raise gexc.HTTPNotFound('deleted by the other try')
            return real_get(images, image_id)

        with mock.patch.object(fake_glanceclient._Images, 'get', get):
            result = svc.snapshot(self.make_request())
        self.assertEqual('active', result.status)
        self.assertEqual('raw', result.disk_format)
        self.assertNotEqual(IMAGE_ID, result.image_id)
        record = svc.build_record(self.make_request())
        self.assertEqual(
            identity.attempt_id(record, 0, svc.decide_plan(
                svc.capabilities.get(svc.glance), svc.glance).attempts[0],
                generation=1),
            result.image_id)

    def test_interrupt_after_create_leaves_the_image_named(self):
        # Another try of this snapshot may have adopted the image (409 on
        # its create) and be uploading: an interrupt never deletes it.
        svc = self.make_service()
        with mock.patch.object(attempts.upload, 'activate',
                               side_effect=KeyboardInterrupt):
            err = self.assertRaises(KeyboardInterrupt, svc.snapshot,
                                    self.make_request())
        self.assertEqual({IMAGE_ID: 'queued'},
                         {i: v['status'] for i, v in
                          self.fake.images.items()})
        self.assertNotIn('delete', self.fake.calls)
        self.assertEqual([IMAGE_ID], err.snapshot_result.left_in_place)

    def test_leftover_in_format_not_allowed_is_refused_not_uploaded(self):
        self.flags(driver_formats_only=True)
        svc = self.make_service('zvm')
        self._leftover(svc, 'qcow2')
        err = self.assertRaises(exception.ActivationFailed, svc.snapshot,
                                self.make_request())
        self.assertIn('delete it, or retry with a new image_id',
                      err.format_message())
        self.assertNotIn('upload', self.fake.calls)
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])

    def test_pinned_formats_the_driver_cannot_read(self):
        self.flags(disk_formats=['ploop'])
        err = self.assertRaises(exception.ConfigurationError,
                                self.make_service)
        self.assertIn('[snapshot_ext] disk_formats', err.format_message())

    def test_create_5xx_but_image_exists_is_finished_not_deleted(self):
        # A concurrent try's POST landed; ours got a 500.
        svc = self.make_service()
        self._leftover(svc, 'raw')
        self.fake.used_ids.discard(IMAGE_ID)
        self.fake.fail('create', gexc.HTTPInternalServerError('db'))
        result = svc.snapshot(self.make_request())
        self.assertEqual(('active', IMAGE_ID, True),
                         (result.status, result.image_id, result.reused))
        self.assertNotIn('delete', self.fake.calls)

    def test_create_5xx_and_glance_unreadable_reports_leftover(self):
        svc = self.make_service()
        self.fake.lose_create_response = True
        self.fake.fail('get', gexc.HTTPServiceUnavailable('down'), times=2)
        self.fake.fail('delete', gexc.HTTPServiceUnavailable('down'),
                       times=cleanup.CLEANUP_TRIES)
        err = self.assertRaises(exception.ActivationFailed, svc.snapshot,
                                self.make_request())
        self.assertEqual([IMAGE_ID], err.result.leftover)


class TestRecheck(ServiceTestBase):
    """Issue 18: a later read that contradicts the success is believed."""

    def test_queued_twice_is_not_active(self):
        svc = self.make_service()
        result = svc.snapshot(self.make_request())
        # An intermediary answered 204 without forwarding the upload.
        self.fake.images[IMAGE_ID]['status'] = 'queued'
        seen = dict(self.fake.images[IMAGE_ID])
        err = self.assertRaises(exception.ActivationFailed, svc.recheck,
                                result, seen)
        self.assertEqual(('failed', None), (err.result.status,
                                            err.result.image_id))
        self.assertIn('queued', err.format_message())
        # The intermediary may still forward the upload, another try may
        # be finishing the image: left in place, named, not deleted.
        self.assertNotIn('delete', self.fake.calls)
        self.assertNotIn('deleted image', err.format_message())
        self.assertIn('%s (status queued) left in place' % IMAGE_ID,
                      err.format_message())
        self.assertEqual(([], [IMAGE_ID], [IMAGE_ID]),
                         (err.result.cleaned_up, err.result.leftover,
                          err.result.left_in_place))
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])

    def test_active_on_the_second_read_is_kept(self):
        svc = self.make_service()
        result = svc.snapshot(self.make_request())
        seen = dict(self.fake.images[IMAGE_ID], status='queued')
        image = svc.recheck(result, seen)
        self.assertEqual('active', image['status'])
        self.assertEqual(('active', IMAGE_ID), (result.status,
                                                result.image_id))
        self.assertIn(IMAGE_ID, self.fake.images)

    def test_left_image_is_named_with_its_status(self):
        svc = self.make_service()
        result = svc.snapshot(self.make_request())
        self.fake.images[IMAGE_ID]['status'] = 'queued'
        err = self.assertRaises(exception.ActivationFailed, svc.recheck,
                                result, dict(self.fake.images[IMAGE_ID]))
        self.assertEqual(([IMAGE_ID], {IMAGE_ID: 'queued'}),
                         (err.result.leftover, err.result.leftover_status))
        self.assertIn('image(s) %s (status queued) left in place, not '
                      'deleted' % IMAGE_ID, err.format_message())
        self.assertNotIn('COULD NOT DELETE', err.format_message())
