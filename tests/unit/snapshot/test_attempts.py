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

"""The attempt engine's rules, one kind per test class (issue 9).

Each class is a kind of fault; its tests are the issue's input of that
kind plus other members.  glanceclient is replaced at its boundary; the
same inputs run against the real Glance through the fault proxy in
tests/functional/test_exactly_once.py.
"""

import json
import types
from unittest import mock

import fixtures
from glanceclient import exc as gexc
import requests

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import attempts
from nova_snapshot_ext.snapshot import cleanup
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot.outcome import State
from nova_snapshot_ext.snapshot import request
from tests import base
from tests.unit import fake_glanceclient
from tests.unit.snapshot import test_service

IMAGE_ID = test_service.IMAGE_ID


class AttemptTestBase(test_service.ServiceTestBase):

    def snapshot(self, req=None, svc=None):
        return (svc or self.make_service()).snapshot(
            req or self.make_request())

    def fails(self, req=None, svc=None):
        return self.assertRaises(exception.ActivationFailed, self.snapshot,
                                 req, svc)

    def active_ids(self):
        return sorted(i for i, image in self.fake.images.items()
                      if image['status'] == 'active')


class TestIdempotencyKey(AttemptTestBase):
    """Rule: a retry of the same snapshot converges on one image."""

    def test_no_image_id_same_snapshot_same_image(self):
        req = self.make_request(image_id=None)
        first = self.snapshot(req)
        again = self.snapshot(self.make_request(image_id=None))
        self.assertEqual(first.image_id, again.image_id)
        self.assertTrue(again.reused)
        self.assertEqual([first.image_id], list(self.fake.images))

    def test_key_is_the_volume_snapshots(self):
        a = self.make_service().build_record(self.make_request(image_id=None))
        b = self.make_service().build_record(self.other_snapshot(
            'x', image_id=None))
        self.assertNotEqual(a.image_id, b.image_id)
        self.assertEqual(a.image_id, identity.derived_image_id(a))
        # Order of mappings does not matter; the name does not either.
        data = base.sample_request_dict()
        data['block_device_mappings'].reverse()
        data['name'] = 'renamed'
        c = self.make_service().build_record(
            request.SnapshotRequest.from_dict(data))
        self.assertEqual(a.image_id, c.image_id)
        self.assertEqual(
            a.properties[identity.FINGERPRINT_PROPERTY],
            c.properties[identity.FINGERPRINT_PROPERTY])

    def test_inherited_fingerprint_is_replaced(self):
        req = self.make_request()
        req.metadata[identity.FINGERPRINT_PROPERTY] = 'another-snapshot'
        record = self.make_service().build_record(req)
        self.assertEqual(identity.fingerprint(record),
                         record.properties[identity.FINGERPRINT_PROPERTY])


class TestFingerprintComputedOnce(AttemptTestBase):
    """Kind: per-snapshot work done more than once (issue 13's CPU)."""

    def test_preflight_computes_the_fingerprint_once(self):
        svc = self.make_service()
        with mock.patch.object(identity, 'fingerprint',
                               wraps=identity.fingerprint) as fp:
            prepared = svc.preflight(self.make_request(image_id=None))
        self.assertEqual(1, fp.call_count)
        record = prepared.record
        self.assertEqual(identity.fingerprint(record),
                         record.properties[identity.FINGERPRINT_PROPERTY])
        self.assertEqual(identity.derived_image_id(record), record.image_id)

    def test_record_built_elsewhere_is_identified_and_stamped(self):
        svc = self.make_service()
        record = svc.build_record(self.make_request(image_id=None))
        expected = (record.image_id,
                    record.properties[identity.FINGERPRINT_PROPERTY])
        record.image_id = ''
        record.properties[identity.FINGERPRINT_PROPERTY] = 'stale'
        with mock.patch.object(identity, 'fingerprint',
                               wraps=identity.fingerprint) as fp:
            prepared = svc.check_record(record)
        self.assertEqual(1, fp.call_count)
        self.assertEqual(expected, (
            prepared.record.image_id,
            prepared.record.properties[identity.FINGERPRINT_PROPERTY]))

    def test_stamp_takes_a_computed_fingerprint_or_none(self):
        record = self.make_service().build_record(self.make_request())
        identity.stamp(record, 'given')
        self.assertEqual('given',
                         record.properties[identity.FINGERPRINT_PROPERTY])
        identity.stamp(record, None)
        self.assertNotIn(identity.FINGERPRINT_PROPERTY, record.properties)
        identity.identify(record)
        self.assertEqual(identity.fingerprint(record),
                         record.properties[identity.FINGERPRINT_PROPERTY])

    def test_snapshot_ids_from_any_mapping_only(self):
        record = self.make_service().build_record(self.make_request())
        record.mappings = [
            types.MappingProxyType({'snapshot_id': 'b'}),
            {'snapshot_id': 'a'}, {'snapshot_id': 'a'},
            {'snapshot_id': None}, {}, ['snapshot_id', 'x'], 'x', None]
        self.assertEqual(['a', 'b'], identity.snapshot_ids(record))
        self.assertEqual(identity.fingerprint_of(['b', 'a']),
                         identity.fingerprint(record))

    def test_image_id_of(self):
        fp = identity.fingerprint_of(['a'])
        self.assertEqual(identity.image_id_of(fp), identity.image_id_of(fp))
        self.assertNotEqual(identity.image_id_of(fp),
                            identity.image_id_of(
                                identity.fingerprint_of(['b'])))
        # Nothing to derive from: a fresh random id each time.
        self.assertNotEqual(identity.image_id_of(None),
                            identity.image_id_of(None))


class TestFingerprintAtQuota(AttemptTestBase):
    """The fingerprint gives way to a full property quota, first."""

    def test_left_out_last_and_retry_still_converges(self):
        svc = self.make_service()
        record = svc.build_record(self.make_request())
        self.assertEqual(identity.FINGERPRINT_PROPERTY, record.optional[0])
        self.flags(image_property_quota=len(record.properties) -
                   len(record.optional))
        svc = self.make_service()
        first = self.snapshot(svc=svc)
        image = self.fake.images[first.image_id]
        self.assertNotIn(identity.FINGERPRINT_PROPERTY, image)
        self.assertTrue(any('left out' in n for n in first.notes))
        again = self.snapshot(svc=svc)
        self.assertEqual((first.image_id, True), (again.image_id,
                                                  again.reused))
        self.assertNotIn(identity.FINGERPRINT_PROPERTY,
                         self.fake.images[first.image_id])

    def test_one_slot_goes_to_the_self_description(self):
        svc = self.make_service()
        record = svc.build_record(self.make_request())
        self.flags(image_property_quota=len(record.properties) -
                   len(record.optional) + 1)
        result = self.snapshot()
        image = self.fake.images[result.image_id]
        kept = [k for k in record.optional if k in image]
        self.assertEqual(1, len(kept))
        self.assertNotEqual(identity.FINGERPRINT_PROPERTY, kept[0])


class TestAcceptedIsSuccess(AttemptTestBase):
    """Input 1 kind: after the payload was accepted, reads are best effort.

    (The plugin trusts the 204 and reads nothing back; when the upload's
    answer itself is lost, a read finding the image active is success.)
    """

    def test_get_after_upload_fails_is_not_a_failure(self):
        self.fake.fail('get', gexc.HTTPServiceUnavailable('down'), times=5)
        result = self.snapshot()
        self.assertEqual(('active', IMAGE_ID), (result.status,
                                                result.image_id))

    def test_upload_answer_lost_but_image_active(self):
        real = fake_glanceclient._Images.upload

        def stored_then_reset(images, image_id, data, image_size=None):
            real(images, image_id, data, image_size)
            raise gexc.CommunicationError('connection reset')

        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               stored_then_reset):
            result = self.snapshot()
        self.assertEqual([IMAGE_ID], self.active_ids())
        self.assertEqual('active', result.status)

    def test_upload_answer_lost_and_unreadable_is_never_deleted(self):
        # The image may be active: the engine cannot tell, so it keeps it
        # and names it.
        real = fake_glanceclient._Images.upload

        def stored_then_reset(images, image_id, data, image_size=None):
            real(images, image_id, data, image_size)
            raise gexc.CommunicationError('connection reset')

        self.fake.fail('get', gexc.HTTPServiceUnavailable('down'),
                       times=1 + cleanup.CLEANUP_TRIES)
        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               stored_then_reset):
            err = self.fails()
        self.assertEqual([IMAGE_ID], self.active_ids())
        self.assertNotIn('delete', self.fake.calls)
        self.assertIn(IMAGE_ID, err.format_message())

    def test_cleanup_reread_finds_active_means_success(self):
        # Upload 503 while a concurrent try's upload landed: the status
        # re-read before the cleanup delete sees active.
        def other_won(image_id, data, image_size=None):
            self.fake.images[image_id].update(status='active', size=0)
            raise gexc.HTTPServiceUnavailable('busy')

        self.fake.fail('get', gexc.HTTPServiceUnavailable('down'))
        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               side_effect=other_won):
            result = self.snapshot()
        self.assertEqual(('active', IMAGE_ID), (result.status,
                                                result.image_id))
        self.assertNotIn('delete', self.fake.calls)


class TestUncertainCreate(AttemptTestBase):
    """Input 2 kind: the create's answer is lost (timeout, reset, 5xx)."""

    def test_create_landed_answer_lost_is_finished(self):
        self.fake.lose_create_response = True
        result = self.snapshot()
        self.assertEqual(('active', IMAGE_ID), (result.status,
                                                result.image_id))
        self.assertEqual([IMAGE_ID], self.active_ids())

    def test_create_never_seen_is_named(self):
        self.fake.fail('create', gexc.CommunicationError('timed out'))
        err = self.fails()
        self.assertEqual([IMAGE_ID], err.result.unconfirmed)
        self.assertIn('was not confirmed', err.format_message())
        self.assertIn(IMAGE_ID, err.format_message())
        self.assertEqual(503, err.code)

    def test_glance_500_with_no_image_is_a_refusal_of_the_record(self):
        # Glance (not a gateway) failed on the create and rolled it back,
        # as on MariaDB for keys its collation calls equal: no "retry
        # adopts it", the id is not left unconfirmed, Glance's detail is
        # named.
        self.fake.fail('create', gexc.HTTPInternalServerError(
            'Internal Server Error: Data too long'))
        err = self.fails()
        message = err.format_message()
        self.assertEqual([], err.result.unconfirmed)
        self.assertIn('Glance failed on this record', message)
        self.assertIn('a property its database refuses fails the same '
                      'way on every retry until the record changes', message)
        self.assertIn('Data too long', message)
        self.assertNotIn('adopts', message)
        self.assertEqual(500, err.code)
        self.assertIsInstance(err.__cause__,
                              exception.GlanceFailedOnRecord)
        self.assertEqual([], self.active_ids())

    def test_gateway_5xx_on_create_stays_unconfirmed(self):
        for error in (gexc.HTTPBadGateway('bad gateway'),
                      gexc.HTTPServiceUnavailable('busy')):
            self.fake.fail('create', error)
            err = self.fails()
            self.assertEqual([IMAGE_ID], err.result.unconfirmed)
            self.assertNotIn('Glance failed on this record',
                             err.format_message())

    def test_create_lands_late_then_retry_adopts(self):
        self.fake.fail('create', gexc.CommunicationError('timed out'))
        self.fails()
        # Glance inserts the delayed POST after the client gave up.
        svc = self.make_service()
        record = svc.build_record(self.make_request())
        self.fake.client().images.create(**record.create_kwargs('raw',
                                                                'bare'))
        result = self.snapshot(svc=svc)
        self.assertEqual((IMAGE_ID, True), (result.image_id, result.reused))
        self.assertEqual([IMAGE_ID], self.active_ids())

    def test_interrupt_during_create_names_what_landed(self):
        # What landed may already be adopted by another try of this
        # snapshot (its create met 409): left in place, named, never
        # called unconfirmed or cleaned up.
        real = fake_glanceclient._Images.create

        def landed_then_interrupt(images, **kwargs):
            real(images, **kwargs)
            raise KeyboardInterrupt

        with mock.patch.object(fake_glanceclient._Images, 'create',
                               landed_then_interrupt):
            err = self.assertRaises(KeyboardInterrupt, self.snapshot)
        self.assertEqual([IMAGE_ID], list(self.fake.images))
        self.assertNotIn('delete', self.fake.calls)
        result = err.snapshot_result
        self.assertEqual(([], [], [IMAGE_ID], [IMAGE_ID]),
                         (result.cleaned_up, result.unconfirmed,
                          result.leftover, result.left_in_place))
        self.assertIn('%s (status queued) left in place' % IMAGE_ID,
                      result.leftover_text())
        # and a retry adopts it
        again = self.snapshot()
        self.assertEqual((IMAGE_ID, True), (again.image_id, again.reused))

    def test_second_interrupt_during_cleanup_names_the_image(self):
        # Rules 3 and 10: a further signal (SIGINT or SIGTERM) while the
        # interrupt's cleanup reads or deletes the image stops it; the
        # image is named, never reported as cleaned up.
        real = fake_glanceclient._Images.create
        landed = []

        def landed_then_interrupt(images, **kwargs):
            real(images, **kwargs)
            landed.append(kwargs['id'])
            raise KeyboardInterrupt

        # (the interrupt's cleanup only reads: it never deletes)
        for step in ('get',):
            real_step = getattr(fake_glanceclient._Images, step)
            for second in (KeyboardInterrupt(), SystemExit(143)):

                def cut(images, image_id, *args, _second=second,
                        _real=real_step, **kwargs):
                    if landed:
                        raise _second
                    return _real(images, image_id, *args, **kwargs)

                self.fake.images.clear()
                del landed[:]
                with mock.patch.object(
                        fake_glanceclient._Images, 'create',
                        landed_then_interrupt), mock.patch.object(
                        fake_glanceclient._Images, step, cut):
                    err = self.assertRaises(KeyboardInterrupt,
                                            self.snapshot)
                result = err.snapshot_result
                self.assertEqual(1, len(landed))
                self.assertEqual(landed, list(self.fake.images))
                self.assertEqual((landed, [], []),
                                 (result.leftover, result.unconfirmed,
                                  result.cleaned_up))
                self.assertTrue(result.cleanup_cut_short)
                self.assertIn('%s NOT CONFIRMED DELETED' % landed[0],
                              result.leftover_text())
                self.assertNotIn('delete', self.fake.calls)

    def test_interrupt_before_the_create_landed_names_the_id(self):
        with mock.patch.object(fake_glanceclient._Images, 'create',
                               side_effect=KeyboardInterrupt):
            err = self.assertRaises(KeyboardInterrupt, self.snapshot)
        self.assertEqual([IMAGE_ID], err.snapshot_result.unconfirmed)
        self.assertIn(IMAGE_ID, err.snapshot_result.describe())
        self.assertNothingLeft()

    def test_interrupt_with_glance_unreadable_names_the_image(self):
        with mock.patch.object(attempts.upload, 'activate',
                               side_effect=KeyboardInterrupt):
            self.fake.fail('get', gexc.CommunicationError('down'), times=9)
            err = self.assertRaises(KeyboardInterrupt, self.snapshot)
        self.assertEqual([IMAGE_ID], err.snapshot_result.leftover)
        self.assertEqual([IMAGE_ID], list(self.fake.images))

    def test_system_exit_after_active_reports_the_image(self):
        real = fake_glanceclient._Images.upload

        def stored_then_exit(images, image_id, data, image_size=None):
            real(images, image_id, data, image_size)
            raise SystemExit(143)

        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               stored_then_exit):
            err = self.assertRaises(SystemExit, self.snapshot)
        self.assertEqual(('active', IMAGE_ID), (
            err.snapshot_result.status, err.snapshot_result.image_id))
        self.assertEqual([IMAGE_ID], self.active_ids())


class TestTranslatedEverywhere(AttemptTestBase):
    """Input 3 kind: a raw transport error never leaves the service."""

    def test_truncated_schema(self):
        for err in (requests.exceptions.ChunkedEncodingError('cut'),
                    json.JSONDecodeError('Expecting value', '{"na', 4)):
            self.fake.fail('schema', err, times=2)
            svc = self.make_service()
            self.assertRaises(exception.GlanceError, self.snapshot, None,
                              svc)
        self.assertNothingLeft()

    def test_transport_errors_at_every_step_are_ours(self):
        errors = (requests.exceptions.ChunkedEncodingError('cut'),
                  requests.exceptions.ConnectionError('reset'),
                  json.JSONDecodeError('Expecting value', '', 0))
        for op in ('create', 'upload', 'get'):
            for error in errors:
                self.fake.failures.clear()
                self.fake.fail(op, error)
                try:
                    self.snapshot(self.other_snapshot(
                        '%s-%s' % (op, type(error).__name__),
                        image_id=None))
                except exception.SnapshotExtException:
                    pass


class TestCleanupRetried(AttemptTestBase):
    """Input 4 kind: a failed cleanup delete is tried again.

    The cleanup that deletes follows a refusal every try of this snapshot
    meets (a 400 on the upload here); a transient fault leaves the image
    in place, named (:class:`TestTransientUploadFaultLeaves`).
    """

    def test_upload_refused_then_delete_503_once(self):
        self.fake.fail('upload', gexc.HTTPBadRequest('refused'))
        self.fake.fail('delete', gexc.HTTPServiceUnavailable('down'))
        err = self.fails()
        self.assertNothingLeft()
        self.assertEqual([], err.result.leftover)
        self.assertEqual([IMAGE_ID], err.result.cleaned_up)
        self.assertEqual(2, self.fake.calls.count('delete'))

    def test_status_read_before_each_delete(self):
        self.fake.fail('upload', gexc.HTTPBadRequest('refused'))
        self.fake.fail('delete', gexc.CommunicationError('reset'), times=2)
        self.fails()
        calls = self.fake.calls[self.fake.calls.index('upload') + 1:]
        # One read after the failed upload, then read + delete, thrice.
        self.assertEqual(['get', 'get', 'delete', 'get', 'delete', 'get',
                          'delete'], calls)
        self.assertNothingLeft()

    def test_waits_double(self):
        self.fake.fail('upload', gexc.HTTPBadRequest('refused'))
        self.fake.fail('delete', gexc.HTTPServiceUnavailable('down'),
                       times=cleanup.CLEANUP_TRIES)
        err = self.fails()
        self.assertEqual([0.5, 1.0, 2.0], self.sleeps)
        self.assertEqual([IMAGE_ID], err.result.leftover)
        self.assertEqual([], err.result.left_in_place)
        self.assertIn('COULD NOT DELETE image(s) %s' % IMAGE_ID,
                      err.format_message())

    def test_upload_503_leaves_the_image_without_a_delete(self):
        self.fake.fail('upload', gexc.HTTPServiceUnavailable('busy'))
        err = self.fails()
        calls = self.fake.calls[self.fake.calls.index('upload') + 1:]
        # One read after the failed upload, one before leaving it.
        self.assertEqual(['get', 'get'], calls)
        self.assertEqual([], self.sleeps)
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])
        self.assertEqual(([IMAGE_ID], [IMAGE_ID], []),
                         (err.result.leftover, err.result.left_in_place,
                          err.result.cleaned_up))


class TestTransientUploadFaultLeaves(AttemptTestBase):
    """Kind: a transient fault on this try's upload (the cleanup race).

    Another try of this snapshot may be uploading into the same image
    (it met 409 on its create and adopted it); Glance has no conditional
    delete, so a delete after a read that found the image queued can land
    after that try made it active.  The image is left in place, named in
    the result and the error, which say why, that a retry adopts it and
    that ``audit --fix`` removes it if nothing claims it.
    """

    FAULTS = (gexc.HTTPServiceUnavailable('busy'),
              gexc.HTTPBadGateway('proxy'),
              gexc.HTTPException('504 Gateway Timeout'),
              gexc.CommunicationError('reset mid-upload'),
              requests.exceptions.ConnectionError('refused'),
              requests.exceptions.ReadTimeout('read timed out'),
              requests.exceptions.ChunkedEncodingError('cut'))

    def reset(self):
        self.fake.images.clear()
        self.fake.used_ids.clear()
        self.fake.calls.clear()

    def test_other_try_activates_between_read_and_delete(self):
        real_get = fake_glanceclient._Images.get
        reads = []

        def then_activated(images, image_id):
            # The second read (the one a cleanup makes before its delete)
            # answers queued, and then the other try's upload lands.
            image = real_get(images, image_id)
            reads.append(image_id)
            if len(reads) == 2:
                images.g.images[image_id].update(status='active', size=0)
            return image

        for fault in self.FAULTS:
            with self.subTest(fault=repr(fault)):
                self.reset()
                reads.clear()
                self.fake.fail('upload', fault)
                with mock.patch.object(fake_glanceclient._Images, 'get',
                                       then_activated):
                    err = self.fails()
                self.assertNotIn('delete', self.fake.calls)
                # the image the other try reported is still active
                self.assertEqual([IMAGE_ID], self.active_ids())
                self.assertEqual([], err.result.cleaned_up)
                self.assertEqual([IMAGE_ID], err.result.left_in_place)

    def test_left_image_is_named_truthfully(self):
        for fault in self.FAULTS:
            with self.subTest(fault=repr(fault)):
                self.reset()
                self.fake.fail('upload', fault)
                err = self.fails()
                self.assertEqual('queued',
                                 self.fake.images[IMAGE_ID]['status'])
                self.assertEqual([IMAGE_ID], err.result.leftover)
                self.assertEqual({IMAGE_ID: 'queued'},
                                 err.result.leftover_status)
                self.assertEqual([], err.result.unconfirmed)
                message = err.format_message()
                self.assertIn('image(s) %s (status queued) left in place, '
                              'not deleted: another try of this snapshot '
                              'may be finishing it' % IMAGE_ID, message)
                self.assertIn('a retry of this snapshot adopts it',
                              message)
                self.assertIn('nova-snapshot-ext audit --fix --yes',
                              message)
                self.assertNotIn('COULD NOT DELETE', message)
                self.assertNotIn('deleted image', message)
                data = err.result.to_dict()
                self.assertEqual([IMAGE_ID], data['left_in_place'])
                self.assertIn('LEFT BEHIND: image(s) %s' % IMAGE_ID,
                              err.result.describe())

    def test_exit_status_by_cause(self):
        from nova_snapshot_ext.cmd import checks
        for fault in self.FAULTS:
            with self.subTest(fault=repr(fault)):
                self.reset()
                self.fake.fail('upload', fault)
                err = self.fails()
                # Glance could not be reached (or answered 502/503/504):
                # 3; a reached Glance that did not answer in time, or
                # whose answer was cut mid-body: 1.
                reached = isinstance(
                    fault, (requests.exceptions.ReadTimeout,
                            requests.exceptions.ChunkedEncodingError))
                expected = (checks.EXIT_FAILED if reached
                            else checks.EXIT_UNREACHABLE)
                self.assertEqual(expected,
                                 checks.activation_failure(err)[1])

    def test_retry_adopts_the_left_image(self):
        for fault in self.FAULTS:
            with self.subTest(fault=repr(fault)):
                self.reset()
                self.fake.fail('upload', fault)
                self.fails()
                result = self.snapshot()
                self.assertEqual((IMAGE_ID, True, 'active'),
                                 (result.image_id, result.reused,
                                  result.status))
                self.assertEqual([IMAGE_ID], list(self.fake.images))

    def test_refusals_every_try_meets_still_delete(self):
        for fault in (gexc.HTTPBadRequest('size'),
                      gexc.HTTPForbidden('upload_image policy'),
                      gexc.HTTPException('501 Not Implemented'),
                      gexc.HTTPException('507 Insufficient Storage')):
            with self.subTest(fault=repr(fault)):
                self.reset()
                self.fake.fail('upload', fault)
                err = self.fails()
                self.assertNothingLeft()
                self.assertEqual([IMAGE_ID], err.result.cleaned_up)
                self.assertEqual([], err.result.left_in_place)


class TestRetryAfterUndeletableLeftover(AttemptTestBase):
    """A first try whose cleanup failed for good, then a retry.

    The first try names the queued leftover and succeeds on the next
    attempt's id; the retry meets the leftover first and must return the
    active image (not finish the leftover: a duplicate), and it removes
    the leftover.
    """

    def test_retry_prefers_the_active_image(self):
        svc = self.make_service()
        self.fake.fail('upload', gexc.HTTPInternalServerError('boom'))
        self.fake.fail('delete', gexc.HTTPServiceUnavailable('down'),
                       times=cleanup.CLEANUP_TRIES)
        first = self.snapshot(svc=svc)
        self.assertEqual([IMAGE_ID], first.leftover)
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])
        again = self.snapshot(svc=svc)
        self.assertEqual((first.image_id, True), (again.image_id,
                                                  again.reused))
        self.assertEqual([first.image_id], list(self.fake.images))


class TestInterruptDuringUpload(AttemptTestBase):
    """Input 5 kind: SIGTERM (the CLI raises SystemExit) / Ctrl-C.

    An interrupt says nothing about the other tries of this snapshot (one
    may be finishing the image, and this try's own upload may still land):
    the image is read once and left in place, named.
    """

    def test_interrupt_during_upload_leaves_and_reports(self):
        for error in (KeyboardInterrupt, SystemExit(143)):
            self.fake.images.clear()
            with mock.patch.object(fake_glanceclient._Images, 'upload',
                                   side_effect=error):
                err = self.assertRaises(BaseException, self.snapshot,
                                        self.other_snapshot(
                                            str(error), image_id=None))
            result = err.snapshot_result
            self.assertEqual('failed', result.status)
            self.assertEqual([], result.cleaned_up)
            (left,) = list(self.fake.images)
            self.assertEqual('queued', self.fake.images[left]['status'])
            self.assertEqual(([left], [left]),
                             (result.leftover, result.left_in_place))
            self.assertIn('interrupted', result.attempts[0].reason)
            # Named once, by the result (not again in the attempt's
            # reason, which a failure message also quotes).
            self.assertNotIn('left in place', result.attempts[0].reason)
            self.assertIn('%s (status queued) left in place, not deleted'
                          % left, result.leftover_text())

    def test_interrupt_when_the_other_try_finished_is_the_success(self):
        real_get = fake_glanceclient._Images.get

        def activated(images, image_id):
            images.g.images[image_id].update(status='active', size=0)
            return real_get(images, image_id)

        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               side_effect=KeyboardInterrupt), \
                mock.patch.object(fake_glanceclient._Images, 'get',
                                  activated):
            err = self.assertRaises(BaseException, self.snapshot)
        result = err.snapshot_result
        self.assertEqual(('active', IMAGE_ID), (result.status,
                                                result.image_id))
        self.assertEqual([], result.leftover)


class TestCleanupRacingAnotherTry(AttemptTestBase):
    """Kind: a delete racing another try's upload into the same image.

    Glance has no conditional delete: the status read before a delete
    is answered, then another try of this snapshot (which met 409 on its
    create and adopted the image) uploads, and the delete lands on an
    active image that try reported (seen with 16 concurrent tries for
    another project's server: the creator's member add met a fault).
    ``get`` here answers ``queued`` and then lets that upload land, so a
    cleanup that reads and deletes removes an active image.
    """

    def other_project_request(self):
        req = self.make_request()
        return request.SnapshotRequest.from_dict(
            dict(req.to_dict(), requester={'project_id': 'other'}))

    def test_transient_member_fault_leaves_the_image_named(self):
        real_get = fake_glanceclient._Images.get

        def answered_then_activated(images, image_id):
            image = real_get(images, image_id)
            images.g.images[image_id].update(status='active', size=0)
            return image

        faults = (gexc.HTTPServiceUnavailable('busy'),
                  gexc.CommunicationError('reset after the POST'),
                  requests.exceptions.ChunkedEncodingError('cut'),
                  gexc.HTTPBadGateway('proxy'))
        for fault in faults:
            with self.subTest(fault=type(fault).__name__):
                self.fake.images.clear()
                self.fake.used_ids.clear()
                self.fake.members.clear()
                self.fake.calls.clear()
                self.fake.fail('add_member', fault)
                with mock.patch.object(fake_glanceclient._Images, 'get',
                                       answered_then_activated):
                    err = self.fails(self.other_project_request())
                self.assertNotIn('delete', self.fake.calls)
                self.assertIn(IMAGE_ID, self.fake.images)
                self.assertEqual([], err.result.cleaned_up)
                self.assertIn('image(s) %s (status queued) left in place'
                              % IMAGE_ID, err.format_message())
                self.assertEqual(1, err.format_message().count(
                    'left in place'))

    def test_retry_adopts_the_image_left_queued(self):
        self.fake.fail('add_member', gexc.HTTPServiceUnavailable('busy'))
        self.fails(self.other_project_request())
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])
        result = self.snapshot(self.other_project_request())
        self.assertEqual((IMAGE_ID, True), (result.image_id, result.reused))
        self.assertEqual([IMAGE_ID], self.active_ids())
        self.assertEqual([result.member], self.fake.members[IMAGE_ID])

    def test_member_refusal_is_met_by_every_try_and_deleted(self):
        for fault in (gexc.HTTPForbidden('policy'),
                      gexc.HTTPOverLimit('members')):
            with self.subTest(fault=type(fault).__name__):
                self.fake.images.clear()
                self.fake.used_ids.clear()
                self.fake.fail('add_member', fault)
                err = self.fails(self.other_project_request())
                self.assertEqual([IMAGE_ID], err.result.cleaned_up)
                self.assertNothingLeft()


class TestTransientThenRetry(AttemptTestBase):
    """Input 6 kind: a retry after a transient fault can always succeed."""

    def test_image_id_given_upload_503_once_then_retry(self):
        self.fake.fail('upload', gexc.HTTPServiceUnavailable('busy'))
        err = self.fails()
        self.assertEqual(503, err.code)
        # left in place, named, for the retry to adopt
        self.assertEqual({IMAGE_ID: 'queued'},
                         {i: v['status'] for i, v in
                          self.fake.images.items()})
        self.assertEqual([IMAGE_ID], err.result.left_in_place)
        result = self.snapshot()
        self.assertEqual(('active', IMAGE_ID, True),
                         (result.status, result.image_id, result.reused))
        self.assertEqual([result.image_id], self.active_ids())
        self.assertEqual([IMAGE_ID], list(self.fake.images))

    def test_many_transient_failures_then_retry(self):
        svc = self.make_service()
        for _ in range(3):
            self.fake.fail('upload', gexc.HTTPServiceUnavailable('busy'))
            self.fails(svc=svc)
        result = self.snapshot(svc=svc)
        self.assertEqual([result.image_id], self.active_ids())

    def test_no_image_id_transient_then_retry(self):
        req = self.make_request(image_id=None)
        self.fake.fail('upload', gexc.CommunicationError('reset'))
        self.fails(req)
        result = self.snapshot(self.make_request(image_id=None))
        self.assertEqual([result.image_id], self.active_ids())

    def test_retry_finds_image_an_earlier_generation_finished(self):
        svc = self.make_service()
        self.fake.fail('upload', gexc.HTTPServiceUnavailable('busy'))
        self.fails(svc=svc)
        first = self.snapshot(svc=svc)
        again = self.snapshot(svc=svc)
        self.assertEqual((first.image_id, True), (again.image_id,
                                                  again.reused))
        self.assertEqual([first.image_id], self.active_ids())

    def test_ids_run_out(self):
        svc = self.make_service()
        record = svc.build_record(self.make_request())
        prepared = svc.preflight(self.make_request())
        self.flags(disk_formats=['raw'])
        prepared = svc.preflight(self.make_request())
        for generation in range(identity.GENERATIONS):
            self.fake.used_ids.add(identity.attempt_id(
                record, 0, prepared.plan[0], generation))
        err = self.assertRaises(exception.ActivationFailed, svc.register,
                                prepared)
        self.assertIn('all used up', err.format_message())


class TestNeverDeleteAnotherRunsImage(AttemptTestBase):
    """Input 7 kind: a read-back fault never deletes an active image."""

    def _first_run(self):
        result = self.snapshot()
        self.assertEqual([IMAGE_ID], self.active_ids())
        return result

    def test_read_back_fails(self):
        self._first_run()
        for error in (gexc.HTTPServiceUnavailable('busy'),
                      gexc.CommunicationError('reset'),
                      requests.exceptions.ChunkedEncodingError('cut'),
                      json.JSONDecodeError('Expecting value', '{', 1)):
            self.fake.fail('get', error)
            err = self.fails()
            self.assertIn(IMAGE_ID, err.format_message())
            self.assertEqual([IMAGE_ID], self.active_ids())
            self.assertEqual([], err.result.cleaned_up)
        self.assertNotIn('delete', self.fake.calls)

    def test_interrupted_read_back(self):
        self._first_run()
        with mock.patch.object(fake_glanceclient._Images, 'get',
                               side_effect=KeyboardInterrupt):
            err = self.assertRaises(KeyboardInterrupt, self.snapshot)
        self.assertEqual([IMAGE_ID], self.active_ids())
        self.assertEqual([], err.snapshot_result.cleaned_up)
        self.assertNotIn('delete', self.fake.calls)


class TestLostCreateThenUnreadableReadBack(AttemptTestBase):
    """The create's answer is lost, its re-send meets 409, the read fails.

    keystoneauth sends a create whose answer was lost again
    (``connect_retries``): Glance made the image on the first send, the
    second meets 409, and the read-back of that image fails.  This run's
    own create may have made it: it is named (left in place, status
    unknown), never said to be untouched, never deleted.
    """

    READ_FAULTS = (gexc.HTTPServiceUnavailable('busy'),
                   gexc.HTTPInternalServerError('boom'),
                   gexc.CommunicationError('reset'),
                   requests.exceptions.ChunkedEncodingError('cut'),
                   json.JSONDecodeError('Expecting value', '{', 1))

    def _lost_create(self):
        real = fake_glanceclient._Images.create

        def create(images, **kwargs):
            real(images, **kwargs)  # Glance made it; the answer was lost
            raise gexc.HTTPConflict('Image ID %s already exists!'
                                    % kwargs['id'])  # the re-send
        return mock.patch.object(fake_glanceclient._Images, 'create',
                                 create)

    def test_the_image_is_named_and_never_deleted(self):
        for error in self.READ_FAULTS:
            with self.subTest(error=repr(error)):
                self.fake.images.clear()
                self.fake.used_ids.clear()
                self.fake.calls.clear()
                self.fake.fail('get', error)
                with self._lost_create():
                    err = self.fails()
                result = err.result
                self.assertEqual('queued',
                                 self.fake.images[IMAGE_ID]['status'])
                self.assertNotIn('delete', self.fake.calls)
                self.assertEqual(([IMAGE_ID], [IMAGE_ID], {IMAGE_ID: None}),
                                 (result.leftover, result.left_in_place,
                                  result.leftover_status))
                message = err.format_message()
                self.assertIn('%s (status unknown: it could not be read) '
                              'left in place' % IMAGE_ID, message)
                self.assertNotIn('nothing was changed', message)
                self.assertIn("this run's own create", message)
                self.assertIn('adopt of image %s' % IMAGE_ID, message)
                self.assertNotIn('create of image', message)
                self.assertEqual('adopt', result.attempts[0].step)

    def test_a_retry_adopts_it(self):
        self.fake.fail('get', gexc.HTTPServiceUnavailable('busy'))
        with self._lost_create():
            self.fails()
        again = self.snapshot()
        self.assertEqual((IMAGE_ID, True), (again.image_id, again.reused))
        self.assertEqual([IMAGE_ID], self.active_ids())


class TestNotThisSnapshotsImage(AttemptTestBase):
    """Input 8 kind: an image this snapshot did not create is untouched."""

    def _existing(self, **changes):
        svc = self.make_service()
        kwargs = svc.build_record(self.make_request()).create_kwargs(
            'raw', 'bare')
        kwargs.update(changes)
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        self.fake.client().images.create(**kwargs)

    def test_queued_image_with_same_record_but_no_fingerprint(self):
        # E.g. Nova's own create, or an operator's, with the same mappings.
        self._existing(**{identity.FINGERPRINT_PROPERTY: None})
        self.fake.fail('upload', gexc.HTTPInternalServerError('boom'))
        err = self.fails()
        self.assertIsInstance(err.__cause__,
                              exception.SnapshotImageConflict)
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])
        self.assertNotIn('upload', self.fake.calls)
        self.assertNotIn('delete', self.fake.calls)

    def test_finished_image_without_fingerprint_is_reported(self):
        # An active image of this snapshot whose fingerprint was removed
        # later (e.g. by hand): same mappings and record, so a retry
        # returns it; nothing is uploaded, deleted or created.
        first = self.snapshot()
        del self.fake.images[first.image_id][identity.FINGERPRINT_PROPERTY]
        self.fake.calls.clear()
        again = self.snapshot()
        self.assertEqual((first.image_id, True), (again.image_id,
                                                  again.reused))
        for call in ('upload', 'delete'):
            self.assertNotIn(call, self.fake.calls)
        self.assertEqual([first.image_id], list(self.fake.images))

    def test_other_snapshots_fingerprint(self):
        self._existing(**{identity.FINGERPRINT_PROPERTY: 'other'})
        self.fails()
        self.assertEqual('queued', self.fake.images[IMAGE_ID]['status'])
        self.assertNotIn('upload', self.fake.calls)

    def test_other_mappings(self):
        self._existing(block_device_mapping='[]')
        self.fails()
        self.assertNotIn('upload', self.fake.calls)


class TestChangedRecord(AttemptTestBase):
    """Input 9 kind: a retry with a changed record is refused, clearly."""

    def test_metadata_changed(self):
        self.snapshot(self.make_request(metadata={'tier': 'gold'}))
        err = self.fails(self.make_request(metadata={'tier': 'bronze'}))
        self.assertIsInstance(err.__cause__,
                              exception.SnapshotImageConflict)
        self.assertEqual(409, err.code)
        self.assertIn('tier differ', err.format_message())
        self.assertEqual('gold', self.fake.images[IMAGE_ID]['tier'])
        self.assertEqual([IMAGE_ID], self.active_ids())

    def test_name_changed_without_image_id(self):
        self.snapshot(self.make_request(image_id=None))
        err = self.fails(self.make_request(image_id=None, name='renamed'))
        self.assertIn('name differ', err.format_message())
        self.assertEqual(1, len(self.active_ids()))

    def test_mapping_changed_without_image_id(self):
        # Same volume snapshots (same derived id), another mapping: this
        # snapshot's image from another record, not "another image".
        self.snapshot(self.make_request(image_id=None))
        for field, value in (('volume_size', 99), ('device_name', '/dev/vdz'),
                             ('delete_on_termination', False)):
            with self.subTest(field=field):
                req = self.make_request(image_id=None)
                setattr(req.block_device_mappings[0], field, value)
                err = self.fails(req)
                self.assertIsInstance(err.__cause__,
                                      exception.SnapshotImageConflict)
                self.assertIn('an earlier try of this snapshot',
                              err.format_message())
                self.assertIn('block_device_mapping', err.format_message())
                self.assertNotIn('another image', err.format_message())
        self.assertEqual(1, len(self.active_ids()))

    def test_same_record_is_adopted(self):
        first = self.snapshot(self.make_request(metadata={'tier': 'gold'}))
        again = self.snapshot(self.make_request(metadata={'tier': 'gold'}))
        self.assertEqual(first.image_id, again.image_id)


class TestPayloadTooLarge(AttemptTestBase):
    """Contract with the record plan: 413 moves to a smaller payload."""

    glance_kwargs = {'disk_formats': ['qcow2', 'vmdk', 'vdi', 'vhd']}

    def test_413_goes_to_smaller_payload(self):
        # qcow2 (1536 B) refused: vmdk (3584 B) is larger and skipped,
        # vdi (512 B) is next.
        self.fake.fail('upload', gexc.HTTPOverLimit(
            'Denying attempt to upload image because it exceeds the '
            'quota'))
        result = self.snapshot()
        self.assertEqual(['qcow2', 'vdi'],
                         [a.disk_format for a in result.attempts])
        self.assertIn('storage quota', result.attempts[0].reason)
        self.assertEqual(1, result.attempts[0].reason.count('Glance upload'))
        self.assertTrue(result.attempts[0].cleaned_up)
        self.assertEqual([result.image_id], self.active_ids())

    def test_413_nothing_smaller(self):
        self.flags(disk_formats=['vdi', 'qcow2'])
        self.fake.fail('upload', gexc.HTTPOverLimit('too large'))
        err = self.fails()
        self.assertEqual(1, len(err.result.attempts))
        self.assertEqual(413, err.code)
        self.assertNothingLeft()


class TestRecordRefused(AttemptTestBase):
    """A refusal of the record stops at once, with one message."""

    def test_400_on_create_stops(self):
        self.fake.fail('create', gexc.HTTPBadRequest('bad property'))
        err = self.fails()
        self.assertEqual(1, len(err.result.attempts))
        self.assertEqual(1, err.format_message().count('bad property'))
        self.assertNothingLeft()

    def test_schema_refusal_of_a_property_stops(self):
        with mock.patch.object(
                fake_glanceclient._Images, 'create',
                side_effect=TypeError("Unable to set 'foo' to 1")):
            err = self.fails()
        self.assertEqual(1, len(err.result.attempts))
        self.assertFalse(err.result.attempts[0].created)
        self.assertEqual(State.FAILED, err.result.attempts[0].state)


class TestLocationAnswerLost(AttemptTestBase, test_service.LocationTestBase):
    """The location POST's answer is lost: follow the image."""

    def test_post_landed_answer_lost_goes_active(self):
        real = fake_glanceclient._Images.add_image_location

        def landed_then_reset(images, image_id, url, validation_data={}):
            real(images, image_id, url, validation_data)
            raise gexc.CommunicationError('timed out')

        with mock.patch.object(fake_glanceclient._Images,
                               'add_image_location', landed_then_reset):
            result = self.snapshot()
        self.assertEqual(('active', 'location'),
                         (result.status, result.attempts[0].method))
        self.assertEqual([IMAGE_ID], self.active_ids())

    def test_read_fails_once_while_import_runs(self):
        # The POST was accepted (202); the next read of the image fails
        # once (503) while Glance's location_import task has not run yet:
        # the attempt polls on instead of failing (and deleting the still
        # queued image that Glance is activating).
        real_post = fake_glanceclient._Images.add_image_location
        real_task = fake_glanceclient._Images._run_task
        held = {'reads': 0}

        def post(images, image_id, url, validation_data={}):
            real_post(images, image_id, url, validation_data)
            self.fake.fail('get', gexc.HTTPServiceUnavailable('busy'))
            held['reads'] = 1

        def late_task(images, image_id):
            if held['reads']:
                held['reads'] -= 1
                return
            real_task(images, image_id)

        with mock.patch.object(fake_glanceclient._Images,
                               'add_image_location', post), \
                mock.patch.object(fake_glanceclient._Images, '_run_task',
                                  late_task):
            result = self.snapshot()
        self.assertEqual(('active', 'location'),
                         (result.status, result.attempts[0].method))
        self.assertEqual([IMAGE_ID], self.active_ids())

    def test_post_never_landed_stops_and_leaves_the_image(self):
        # The lost POST says nothing about another try of this snapshot,
        # which may be finishing the image: left in place, named.
        self.fake.fail('add_image_location',
                       gexc.CommunicationError('reset before'))
        err = self.fails()
        self.assertEqual(1, len(err.result.attempts))
        self.assertEqual(503, err.code)
        (left,) = list(self.fake.images)
        self.assertEqual('queued', self.fake.images[left]['status'])
        self.assertNotIn('delete', self.fake.calls)
        self.assertEqual(([left], []), (err.result.left_in_place,
                                        err.result.cleaned_up))
        self.assertIn('%s (status queued) left in place' % left,
                      err.format_message())


class TestVersionsTransient(AttemptTestBase):
    """Input 10 kind: a transient /versions failure is not a config error.

    Issue 18: nor does it fail an upload, which needs no /versions.
    """

    def test_versions_503_raises_unavailable_and_is_not_cached(self):
        svc = self.make_service()
        self.fake.fail('versions', gexc.HTTPServiceUnavailable('busy'),
                       times=2)
        result = self.snapshot(None, svc)
        self.assertEqual('active', result.status)
        result = self.snapshot(svc=svc)
        self.assertEqual('active', result.status)
        self.assertTrue(svc.capabilities.get(self.client).location_api)


class TestPayloadTooLargeLocation(AttemptTestBase,
                                  test_service.LocationTestBase):
    """A 413 on an upload still tries the planned location (issue 19).

    Glance's upload limits (``image_size_cap``, a storage quota, the
    unified limits ``image_size_total`` and ``image_count_uploading``)
    refuse uploads; adding a location (API 2.17) is checked against none
    of them, so a location is tried even when its object is larger.
    """

    method = 'location-fallback'
    glance_kwargs = {'disk_formats': ['raw', 'qcow2']}

    def test_413_on_upload_goes_to_the_location(self):
        self.fake.fail('upload', gexc.HTTPOverLimit(
            'Resource image_count_uploading is over limit of 0 due to '
            'current usage 1 and delta 0'), times=5)
        result = self.snapshot()
        self.assertEqual(
            [('upload', 'raw'), ('location', 'qcow2')],
            [(a.method, a.disk_format) for a in result.attempts])
        self.assertIn('image_count_uploading', result.attempts[0].reason)
        self.assertNotIn('storage quota', result.attempts[0].reason)
        self.assertTrue(result.attempts[0].cleaned_up)
        self.assertEqual(('active', 'location'),
                         (result.status, result.attempts[-1].method))
        self.assertEqual([result.image_id], self.active_ids())

    def test_413_everywhere_ends_413_with_nothing_left(self):
        self.fake.fail('upload', gexc.HTTPOverLimit('over limit'), times=5)
        self.fake.fail('add_image_location',
                       gexc.HTTPOverLimit('over limit'), times=5)
        err = self.fails()
        self.assertEqual(['upload', 'location'],
                         [a.method for a in err.result.attempts])
        self.assertNothingLeft()


class TestLeftInPlaceSaidOnce(AttemptTestBase):
    """Kind: every failure that leaves an image names it once.

    The "left in place" sentence (why the image is kept, what adopts or
    deletes it) is the result's (``leftover_text``); the attempt's reason,
    which the failure message and the result's description also quote,
    stays the failure.
    """

    SAID = ('left in place', 'a retry of this snapshot adopts it',
            'another try of this snapshot may be finishing it')

    def assertSaidOnce(self, err, image_id=IMAGE_ID):
        self.assertEqual([image_id], err.result.left_in_place)
        for text in (err.format_message(), err.result.describe()):
            for said in self.SAID:
                self.assertEqual(1, text.count(said), (said, text))
            self.assertIn(image_id, text)

    def _fresh(self):
        self.fake.images.clear()
        self.fake.used_ids.clear()
        self.fake.members.clear()
        self.fake.calls.clear()

    def test_transient_upload_faults(self):
        for fault in (gexc.HTTPServiceUnavailable('busy'),
                      gexc.HTTPBadGateway('proxy'),
                      gexc.CommunicationError('reset'),
                      requests.exceptions.ChunkedEncodingError('cut')):
            with self.subTest(fault=repr(fault)):
                self._fresh()
                self.fake.fail('upload', fault)
                self.assertSaidOnce(self.fails())

    def test_transient_member_add_fault(self):
        req = self.make_request()
        req = request.SnapshotRequest.from_dict(
            dict(req.to_dict(), requester={'project_id': 'other'}))
        self.fake.fail('add_member', gexc.HTTPServiceUnavailable('busy'))
        self.assertSaidOnce(self.fails(req))

    def test_lost_create_then_unreadable_read_back(self):
        self.fake.fail('get', gexc.HTTPServiceUnavailable('busy'))
        with TestLostCreateThenUnreadableReadBack._lost_create(self):
            err = self.fails()
        self.assertSaidOnce(err)

    def test_contradicted_success(self):
        svc = self.make_service()
        result = svc.snapshot(self.make_request())
        self.fake.images[IMAGE_ID]['status'] = 'queued'
        err = self.assertRaises(exception.ActivationFailed, svc.recheck,
                                result, dict(self.fake.images[IMAGE_ID]))
        self.assertSaidOnce(err)


class TestRetryAfterFallback(AttemptTestBase):
    """Kind: a retry of a snapshot whose earlier try fell back a format.

    The earlier try's raw upload was refused (415) and its qcow2 upload
    met a transient fault (the qcow2 image is left in place).  The retry
    adopts that image: its attempt is the plan's qcow2 attempt (number,
    format and size as sent), and after it the plan goes on past qcow2.
    """

    def setUp(self):
        super().setUp()
        self.sent = []
        real = fake_glanceclient._Images.upload

        def upload(images, image_id, data, image_size=None):
            self.sent.append((image_id,
                              self.fake.images[image_id]['disk_format']))
            return real(images, image_id, data, image_size)
        self.useFixture(fixtures.MockPatchObject(
            fake_glanceclient._Images, 'upload', upload))

    def _earlier_try(self):
        self.fake.fail('upload', gexc.HTTPException(
            'HTTP 415 Unsupported Media Type: Image failed safety checks'))
        self.fake.failures['upload'].append(
            gexc.HTTPServiceUnavailable('busy'))
        err = self.fails()
        self.assertEqual([(1, 'raw'), (2, 'qcow2')],
                         [(a.number, a.disk_format)
                          for a in err.result.attempts])
        (left,) = err.result.left_in_place
        self.sent.clear()
        return left

    def test_retry_reports_the_attempt_it_finished(self):
        left = self._earlier_try()
        result = self.snapshot()
        self.assertEqual(('active', left), (result.status, result.image_id))
        (attempt,) = result.attempts
        self.assertEqual((2, 'upload', 'qcow2', left),
                         (attempt.number, attempt.method,
                          attempt.disk_format, attempt.image_id))
        self.assertEqual([(left, 'qcow2')], self.sent)
        self.assertEqual(attempt.size, result.size)
        self.assertIn('attempt 2: upload qcow2/bare (1536 B) -> active',
                      result.describe())
        self.assertEqual(2, result.to_dict()['attempts'][0]['number'])

    def test_failed_retry_goes_on_past_the_adopted_format(self):
        left = self._earlier_try()
        # The adopted qcow2 image is refused now; the next upload meets a
        # transient fault.
        self.fake.fail('upload', gexc.HTTPException(
            'HTTP 415 Unsupported Media Type: Image failed safety checks'))
        self.fake.failures['upload'].append(
            gexc.HTTPServiceUnavailable('busy'))
        err = self.fails()
        self.assertEqual(
            [(2, 'qcow2', left)],
            [(a.number, a.disk_format, a.image_id)
             for a in err.result.attempts[:1]])
        self.assertEqual([3], [a.number for a in err.result.attempts[1:]])
        self.assertEqual(['qcow2', 'vmdk'], [f for _, f in self.sent])
        message = err.format_message()
        self.assertIn('upload qcow2: Glance refused the qcow2 payload of '
                      'image %s' % left, message)
        self.assertIn('; upload vmdk: ', message)
        self.assertEqual(1, message.count('upload qcow2'))
        described = err.result.describe()
        self.assertIn('attempt 2: upload qcow2/bare', described)
        self.assertIn('attempt 3: upload vmdk/bare', described)

    def test_plain_run_numbers_as_planned(self):
        result = self.snapshot()
        self.assertEqual([1], [a.number for a in result.attempts])
        self.assertIn('attempt 1: upload raw/bare', result.describe())


class TestLocationLeftInPlaceSaidOnce(AttemptTestBase,
                                      test_service.LocationTestBase):
    """The same kind on a location attempt: its POST lost (reset)."""

    assertSaidOnce = TestLeftInPlaceSaidOnce.assertSaidOnce
    SAID = TestLeftInPlaceSaidOnce.SAID

    def test_location_post_lost(self):
        self.fake.fail('add_image_location',
                       gexc.CommunicationError('reset before'))
        err = self.fails()
        (left,) = err.result.left_in_place
        self.assertSaidOnce(err, left)


class TestInterruptLeftInPlaceSaidOnce(AttemptTestBase):
    """The same kind after Ctrl-C / SIGTERM: the CLI's message."""

    def test_interrupt_message_names_the_image_once(self):
        import io

        from nova_snapshot_ext.cmd import main

        for error in (KeyboardInterrupt(), SystemExit(143)):
            with self.subTest(error=repr(error)):
                self.fake.images.clear()
                self.fake.used_ids.clear()
                with mock.patch.object(fake_glanceclient._Images, 'upload',
                                       side_effect=error):
                    err = self.assertRaises(BaseException, self.snapshot,
                                            self.other_snapshot(
                                                repr(error), image_id=None))
                (left,) = err.snapshot_result.left_in_place
                stderr = io.StringIO()
                with mock.patch('sys.stderr', stderr):
                    main._report_interrupt(
                        exception.SnapshotInterrupted(
                            err.snapshot_result, KeyboardInterrupt()),
                        'text')
                for text in (stderr.getvalue(),
                             err.snapshot_result.describe()):
                    self.assertEqual(1, text.count('left in place'), text)
                    self.assertIn(left, text)
