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

"""Glance's unified-limit quotas against a snapshot's plan.

The usage documents are the shape of Glance 33's ``GET /v2/info/usage``
(``{resource: {'usage', 'limit'}}``, sizes in MiB), served by the fake
glanceclient; the plans are :class:`PlannedAttempt` values.
"""

import http.client
from unittest import mock

import fixtures
from glanceclient import exc as gexc
import requests
import urllib3

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.image import quotas
from nova_snapshot_ext.snapshot import plan as plan_mod
from tests import base
from tests.unit import fake_glanceclient

MIB = 1024 * 1024


def _upload(size, disk_format='qcow2'):
    return plan_mod.PlannedAttempt('upload', disk_format, size=size)


def _location(size=1536):
    return plan_mod.PlannedAttempt('location', 'qcow2', size=size,
                                   location_api='new',
                                   url='http://objects/empty.qcow2')


def _usage(**limits):
    """A usage document: ``name=(usage, limit)`` for each limit given."""
    return {name: {'usage': used, 'limit': limit}
            for name, (used, limit) in limits.items()}


#: A project with room for everything.
ROOMY = _usage(image_count_total=(3, 100), image_count_uploading=(0, 10),
               image_size_total=(10, 1000), image_stage_total=(0, 1000))


class TestCheckPlan(base.TestCase):

    def refused(self, usage, attempts):
        return self.assertRaises(exception.GlanceQuotaExceeded,
                                 quotas.check_plan, usage, attempts,
                                 'p-1')

    def test_room_for_everything(self):
        self.assertEqual([], quotas.check_plan(
            ROOMY, [_upload(0, 'raw'), _upload(1536), _location()]))

    def test_count_total_refuses_the_create(self):
        # The create adds one image: 5 of 5 refuses, 4 of 5 fits.
        usage = dict(ROOMY, **_usage(image_count_total=(5, 5)))
        err = self.refused(usage, [_location()])
        self.assertEqual('image_count_total', err.kwargs['resource'])
        self.assertEqual(403, err.code)
        message = err.format_message()
        self.assertIn('uses 5 of 5 images and this needs 1 more', message)
        self.assertIn('p-1', message)
        self.assertIn('nothing was created', message)
        usage = dict(ROOMY, **_usage(image_count_total=(4, 5)))
        self.assertEqual([], quotas.check_plan(usage, [_location()]))

    def test_count_total_over_already(self):
        usage = _usage(image_count_total=(7, 5))
        self.assertEqual('image_count_total', self.refused(
            usage, [_upload(0)]).kwargs['resource'])

    def test_count_uploading_limit_0_always_refuses(self):
        # Glance counts the image being uploaded (it is 'saving' when the
        # limit is checked): a limit of 0 refuses even the first upload.
        usage = dict(ROOMY, **_usage(image_count_uploading=(0, 0)))
        err = self.refused(usage, [_upload(0, 'raw'), _upload(1536)])
        self.assertEqual('image_count_uploading', err.kwargs['resource'])
        self.assertIn('uses 0 of 0 uploads', err.format_message())

    def test_count_uploading_limit_1(self):
        # Fits while no other upload of the project runs...
        usage = dict(ROOMY, **_usage(image_count_uploading=(0, 1)))
        self.assertEqual([], quotas.check_plan(usage, [_upload(0)]))
        # ... refused while another one does (usage >= 1).
        for running in (1, 2):
            usage = dict(ROOMY, **_usage(image_count_uploading=(running, 1)))
            self.assertEqual('image_count_uploading', self.refused(
                usage, [_upload(0)]).kwargs['resource'])

    def test_count_uploading_leaves_the_location(self):
        # A location add is checked against no limit: the uploads become
        # notes and the snapshot goes on with the location.
        usage = dict(ROOMY, **_usage(image_count_uploading=(0, 0)))
        notes = quotas.check_plan(usage, [_upload(0, 'raw'), _location()])
        self.assertEqual(1, len(notes))
        self.assertIn('upload raw (0 B)', notes[0])
        self.assertIn('image_count_uploading', notes[0])

    def test_size_total_in_whole_mib(self):
        # Glance's delta is the payload's whole MiB (size // MiB).
        usage = dict(ROOMY, **_usage(image_size_total=(998, 1000)))
        self.assertEqual([], quotas.check_plan(usage, [_upload(2 * MIB)]))
        self.assertEqual([], quotas.check_plan(
            usage, [_upload(3 * MIB - 1)]))
        err = self.refused(usage, [_upload(3 * MIB)])
        self.assertEqual('image_size_total', err.kwargs['resource'])
        self.assertIn('uses 998 of 1000 MiB and this needs 3 more',
                      err.format_message())

    def test_size_total_the_plans_largest_payload(self):
        # Only the larger upload is over the headroom: it becomes a note,
        # the smaller one fits.
        usage = dict(ROOMY, **_usage(image_size_total=(995, 1000)))
        notes = quotas.check_plan(usage, [_upload(8 * MIB, 'vmdk'),
                                          _upload(1 * MIB)])
        self.assertEqual(1, len(notes))
        self.assertIn('upload vmdk', notes[0])
        self.assertIn('needs 8 more', notes[0])
        # No headroom at all: the smallest payload of the plan decides.
        usage = dict(ROOMY, **_usage(image_size_total=(1000, 1000)))
        err = self.refused(usage, [_upload(8 * MIB, 'vmdk'),
                                   _upload(1 * MIB)])
        self.assertEqual('image_size_total', err.kwargs['resource'])

    def test_size_total_small_payload_refused_only_when_over(self):
        # A payload below 1 MiB adds 0: refused only once the project is
        # already over its limit.
        usage = dict(ROOMY, **_usage(image_size_total=(1000, 1000)))
        self.assertEqual([], quotas.check_plan(usage, [_upload(1536)]))
        usage = dict(ROOMY, **_usage(image_size_total=(1001, 1000)))
        self.assertEqual('image_size_total', self.refused(
            usage, [_upload(1536)]).kwargs['resource'])

    def test_stage_total_is_not_an_upload_route(self):
        # image_stage_total limits the interoperable import's staging area
        # (PUT /v2/images/{id}/stage); the plugin uploads with PUT
        # /v2/images/{id}/file and adds locations, neither of which stages,
        # so a full staging area refuses nothing.
        usage = dict(ROOMY, **_usage(image_stage_total=(50, 0)))
        self.assertEqual([], quotas.check_plan(
            usage, [_upload(5 * MIB), _location()]))

    def test_location_meets_no_limit(self):
        usage = dict(ROOMY, **_usage(image_count_uploading=(3, 0),
                                     image_size_total=(2000, 1000)))
        self.assertEqual([], quotas.check_plan(usage, [_location(10 * MIB)]))

    def test_no_limits_and_no_usage_call(self):
        for usage in ({}, None):
            self.assertEqual([], quotas.check_plan(usage, [_upload(MIB)]))

    def test_pending_delete_named_only_where_this_glance_shows_it(self):
        # Before Glance 31 a pending_delete image counts in the total
        # count and size (not in the uploads running) though no list shows
        # it: said only when the usage is above the listed images.
        listed = [{'id': 'a', 'size': 4 * MIB}, {'id': 'b', 'size': None}]
        glance = mock.Mock()
        glance.list_images.side_effect = lambda **f: (
            [] if f.get('os_hidden') else listed)
        for name, used, hidden in (('image_count_total', 10, '8 images'),
                                   ('image_size_total', 10, '6 MiB')):
            usage = dict(ROOMY, **_usage(**{name: (used, 1)}))
            err = self.assertRaises(
                exception.GlanceQuotaExceeded, quotas.check_plan, usage,
                [_upload(0)], 'p-1', glance)
            message = err.format_message()
            self.assertIn('pending_delete', message)
            self.assertIn('glance-scrubber', message)
            self.assertIn(hidden, message)
        # A Glance where deleted images no longer count: the usage is what
        # the listed images add up to, and nothing is said about them.
        for name, used in (('image_count_total', 2),
                           ('image_size_total', 4)):
            usage = dict(ROOMY, **_usage(**{name: (used, 1)}))
            err = self.assertRaises(
                exception.GlanceQuotaExceeded, quotas.check_plan, usage,
                [_upload(0)], 'p-1', glance)
            self.assertNotIn('pending_delete', err.format_message())
        # No evidence (no client, the project unknown, listing refused):
        # nothing claimed.
        usage = dict(ROOMY, **_usage(image_count_total=(10, 1)))
        self.assertNotIn('pending_delete', self.refused(
            usage, [_upload(0)]).format_message())
        err = self.assertRaises(exception.GlanceQuotaExceeded,
                                quotas.check_plan, usage, [_upload(0)],
                                None, glance)
        self.assertNotIn('pending_delete', err.format_message())
        glance.list_images.side_effect = exception.GlanceForbidden(
            operation='list', status=403, reason='no')
        err = self.assertRaises(exception.GlanceQuotaExceeded,
                                quotas.check_plan, usage, [_upload(0)],
                                'p-1', glance)
        self.assertNotIn('pending_delete', err.format_message())
        usage = dict(ROOMY, **_usage(image_count_uploading=(1, 1)))
        self.assertNotIn('pending_delete', self.refused(
            usage, [_upload(0)]).format_message())

    def test_uploading_refusal_says_when_a_retry_fits(self):
        usage = dict(ROOMY, **_usage(image_count_uploading=(1, 1)))
        message = self.refused(usage, [_upload(0)]).format_message()
        self.assertIn('the snapshot fits once they end', message)
        usage = dict(ROOMY, **_usage(image_count_uploading=(0, 0)))
        message = self.refused(usage, [_upload(0)]).format_message()
        self.assertNotIn('fits once', message)


class TestNamedIn(base.TestCase):

    def test_names_the_limit_of_a_413(self):
        self.assertEqual('image_count_uploading', quotas.named_in(
            'Resource image_count_uploading is over limit of 0 due to '
            'current usage 1 and delta 0'))
        self.assertIsNone(quotas.named_in('Image exceeds the storage quota'))

    def test_describe_is_true_for_each_limit(self):
        # image_count_uploading above 0: other uploads fill it, a retry
        # succeeds once they end -- never "fails the same way".
        busy = quotas.describe(
            'image_count_uploading', 'Resource image_count_uploading is '
            'over limit of 2 due to current usage 3 and delta 0')
        self.assertNotIn('fails the same way', busy)
        self.assertIn('a retry succeeds once they end', busy)
        self.assertNotIn('fails the same way', quotas.describe(
            'image_count_uploading'))
        # A limit of 0 refuses every upload: a retry fails the same way.
        zero = quotas.describe(
            'image_count_uploading', 'Resource image_count_uploading is '
            'over limit of 0 due to current usage 1 and delta 0')
        self.assertIn('fails the same way', zero)
        self.assertIn('location', zero)
        for name in ('image_count_total', 'image_size_total'):
            text = quotas.describe(name)
            self.assertIn('free some of it', text)
            self.assertIn('until then a retry fails the same way', text)
            # No claim about pending_delete without evidence.
            self.assertNotIn('pending_delete', text)

    def test_describe_says_the_image_counts_itself(self):
        self.assertIn('counts itself', quotas.describe(
            'image_count_uploading'))
        self.assertNotIn('counts itself', quotas.describe(
            'image_size_total'))

    def test_headroom(self):
        self.assertEqual(
            {'image_count_total': {'usage': 3, 'limit': 2, 'left': -1}},
            quotas.headroom(_usage(image_count_total=(3, 2))))


class TestReadUsage(base.TestCase):
    """``GET /v2/info/usage`` through the glanceclient boundary."""

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(
            fake_glanceclient.FakeGlanceFixture()).glance
        self.client = glance_mod.GlanceClient(session=mock.Mock())

    def test_reads_the_document(self):
        self.fake.usage = _usage(image_count_total=(1, 2))
        self.assertEqual(_usage(image_count_total=(1, 2)),
                         quotas.read_usage(self.client))

    def test_no_unified_limits(self):
        self.fake.usage = {}
        self.assertIsNone(quotas.read_usage(self.client))

    def test_no_usage_call(self):
        self.fake.usage = None
        self.assertIsNone(quotas.read_usage(self.client))

    def test_glance_without_the_api(self):
        self.fake.usage = {}
        self.fake.fail('usage', gexc.HTTPNotFound('no'))
        self.assertIsNone(quotas.read_usage(self.client))

    def test_refused_is_logged_not_fatal(self):
        self.fake.usage = {}
        self.fake.fail('usage', gexc.HTTPForbidden('policy'))
        logs = self.useFixture(fixtures.FakeLogger(
            name='nova_snapshot_ext.image.quotas'))
        self.assertIsNone(quotas.read_usage(self.client))
        self.assertIn('quotas are not checked', logs.output)

    def test_unreachable_raises(self):
        self.fake.usage = {}
        self.fake.fail('usage', gexc.CommunicationError('reset'))
        self.assertRaises(exception.GlanceUnavailable,
                          quotas.read_usage, self.client)


class TestUnlimited(base.TestCase):
    """A negative limit is Keystone's "unlimited" (oslo.limit skips it)."""

    def test_never_refuses(self):
        for limit in (-1, -5):
            usage = _usage(image_count_total=(10 ** 6, limit),
                           image_count_uploading=(50, limit),
                           image_size_total=(10 ** 9, limit),
                           image_stage_total=(10 ** 9, limit))
            self.assertIsNone(quotas.create_refusal(usage))
            self.assertEqual([], quotas.check_plan(
                usage, [_upload(10 ** 6 * MIB), _location()], 'p-1'))
            self.assertEqual({'usage': 10 ** 6, 'limit': limit,
                              'left': None},
                             quotas.headroom(usage)['image_count_total'])

    def test_other_limits_still_refuse(self):
        usage = dict(ROOMY, **_usage(image_count_total=(99, -1),
                                     image_size_total=(10, 10)))
        err = self.assertRaises(exception.GlanceQuotaExceeded,
                                quotas.check_plan, usage,
                                [_upload(5 * MIB)], 'p-1')
        self.assertEqual('image_size_total', err.kwargs['resource'])
        self.assertIn('project p-1', err.format_message())


class TestParseUsage(base.TestCase):

    def test_keeps_integer_entries_and_names_the_others(self):
        entries, skipped = quotas.parse_usage({
            'image_count_total': {'usage': 1, 'limit': 2},
            'image_count_uploading': {'usage': 0, 'limit': -1},
            'image_size_total': {'usage': None, 'limit': 5},
            'image_stage_total': 7,
            'a': {'limit': 10},
            'b': {'usage': 1, 'limit': 'unlimited'},
            'c': {'usage': True, 'limit': 1},
            'd': {'usage': 1.5, 'limit': 3},
            'e': {'usage': -1, 'limit': 3},
            'f': None, 'g': [1, 2]})
        self.assertEqual(_usage(image_count_total=(1, 2),
                                image_count_uploading=(0, -1)), entries)
        self.assertEqual(9, len(skipped))
        for name in ('image_size_total', 'image_stage_total', 'a', 'b',
                     'c', 'd', 'e', 'f', 'g'):
            self.assertTrue(any(s.startswith(name + ' ') for s in skipped),
                            name)


class TestMalformedUsage(base.TestCase):
    """A usage document of another shape is unreadable usage, not a crash.

    The glanceclient boundary answers what ``info.get_usage()`` returns
    (the ``usage`` member of the body), or raises what glanceclient raises
    on a body without it (``KeyError``) or that is not an object
    (``TypeError``).
    """

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(
            fake_glanceclient.FakeGlanceFixture()).glance
        self.fake.usage = {}
        self.client = glance_mod.GlanceClient(session=mock.Mock())
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='nova_snapshot_ext'))

    def answer(self, **kwargs):
        return self.useFixture(fixtures.MockPatchObject(
            fake_glanceclient._Info, 'get_usage', **kwargs))

    def test_unusable_documents(self):
        for document in (None, [], [1, 2], 5, 'x', True,
                         {'image_count_total': None},
                         {'image_count_total': 5},
                         {'image_count_total': {'limit': 10}},
                         {'image_count_total': {'usage': None, 'limit': 10}},
                         {'image_count_total': {'usage': 1,
                                                'limit': 'unlimited'}}):
            with mock.patch.object(fake_glanceclient._Info, 'get_usage',
                                   return_value=document):
                err = self.assertRaises(exception.GlanceMalformedAnswer,
                                        self.client.usage)
                self.assertEqual('usage', err.kwargs['operation'])
                self.assertIsNone(err.status)
                self.assertEqual((None, False),
                                 quotas.read_limits(self.client), document)
        self.assertIn('quotas are not checked', self.logs.output)

    def test_glanceclient_refusing_the_body(self):
        for error in (KeyError('usage'),
                      TypeError('list indices must be integers')):
            self.answer(side_effect=error)
            self.assertRaises(exception.GlanceMalformedAnswer,
                              self.client.usage)
            self.assertIsNone(quotas.read_usage(self.client))

    def test_partly_usable_document(self):
        self.answer(return_value={
            'image_count_total': {'usage': 1, 'limit': 2},
            'image_size_total': {'usage': None, 'limit': 5},
            'image_stage_total': 7})
        self.assertEqual(_usage(image_count_total=(1, 2)),
                         quotas.read_usage(self.client))
        self.assertIn('image_size_total', self.logs.output)
        self.assertIn('image_stage_total', self.logs.output)
        self.assertIn('not checked', self.logs.output)

    def test_negative_limit_is_kept(self):
        self.answer(return_value=_usage(image_count_total=(7, -1)))
        usage = quotas.read_usage(self.client)
        self.assertEqual(_usage(image_count_total=(7, -1)), usage)
        self.assertEqual([], quotas.check_plan(usage, [_upload(MIB)]))


class TestTransientUsageRead(base.TestCase):
    """A Glance that answered is not unreachable: the read is skipped."""

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(
            fake_glanceclient.FakeGlanceFixture()).glance
        self.fake.usage = _usage(image_count_total=(1, 2))
        self.client = glance_mod.GlanceClient(session=mock.Mock())
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='nova_snapshot_ext.image.quotas'))

    def test_5xx_answers_are_logged_not_fatal(self):
        for error in (gexc.HTTPServiceUnavailable('busy'),
                      gexc.HTTPBadGateway('proxy'),
                      gexc.HTTPException('HTTP 504 Gateway Timeout')):
            self.fake.fail('usage', error)
            self.assertEqual((None, False), quotas.read_limits(self.client))
        self.assertIn('quotas are not checked', self.logs.output)
        self.assertEqual(_usage(image_count_total=(1, 2)),
                         quotas.read_usage(self.client))

    def test_a_reached_glance_past_the_deadline_is_not_fatal(self):
        reached = exception.GlanceDeadlineExceeded(
            operation='usage', status=None, deadline=6, which='x',
            sent=True, reached=True, reason='trickled')
        with mock.patch.object(self.client, 'usage', side_effect=reached):
            self.assertIsNone(quotas.read_usage(self.client))

    def test_no_answer_at_all_is_unreachable(self):
        never = exception.GlanceDeadlineExceeded(
            operation='usage', status=None, deadline=6, which='x',
            sent=True, reached=False, reason='no connection')
        with mock.patch.object(self.client, 'usage', side_effect=never):
            self.assertRaises(exception.GlanceDeadlineExceeded,
                              quotas.read_usage, self.client)
        self.fake.fail('usage', gexc.CommunicationError('refused'))
        self.assertRaises(exception.GlanceUnavailable,
                          quotas.read_usage, self.client)


class TestProjectId(base.TestCase):

    def client(self, auth):
        self.useFixture(fake_glanceclient.FakeGlanceFixture())
        session = mock.Mock(auth=auth)
        client = glance_mod.GlanceClient(session=session)
        client._client.http_client.auth = None
        return client

    def test_from_the_cached_token(self):
        auth = mock.Mock(spec=['auth_ref'])
        auth.auth_ref = mock.Mock(project_id='proj-1')
        self.assertEqual('proj-1', self.client(auth).project_id())

    def test_through_a_service_token_wrapper(self):
        user = mock.Mock(spec=['auth_ref'])
        user.auth_ref = mock.Mock(project_id='proj-2')
        wrapper = mock.Mock(spec=['user_auth'], user_auth=user)
        self.assertEqual('proj-2', self.client(wrapper).project_id())

    def test_unknown(self):
        for auth in (None, mock.Mock(spec=['auth_ref'], auth_ref=None),
                     mock.Mock(spec=[])):
            self.assertIsNone(self.client(auth).project_id())


class TestCutUsageAnswer(base.TestCase):
    """A usage answer cut mid-body: Glance answered; unreadable usage."""

    def setUp(self):
        super().setUp()
        fake = self.useFixture(fake_glanceclient.FakeGlanceFixture()).glance
        fake.usage = {}
        self.client = glance_mod.GlanceClient(session=mock.Mock())

    def cut(self):
        inner = http.client.IncompleteRead(b'{"usag', 7)
        broken = urllib3.exceptions.ProtocolError(
            'Connection broken: IncompleteRead', inner)
        try:
            raise requests.exceptions.ChunkedEncodingError(broken) from broken
        except requests.exceptions.ChunkedEncodingError as err:
            return err

    def test_cut_is_malformed_and_not_fatal(self):
        with mock.patch.object(fake_glanceclient._Info, 'get_usage',
                               side_effect=self.cut()):
            err = self.assertRaises(exception.GlanceMalformedAnswer,
                                    self.client.usage)
            self.assertIn('cut mid-body', err.format_message())
            self.assertEqual((None, False), quotas.read_limits(self.client))

    def test_reset_before_an_answer_is_still_unreachable(self):
        reset = requests.exceptions.ConnectionError(
            urllib3.exceptions.ProtocolError(
                'Connection aborted.', ConnectionResetError(104, 'reset')))
        self.assertFalse(glance_mod.answer_cut(reset))
        with mock.patch.object(fake_glanceclient._Info, 'get_usage',
                               side_effect=reset):
            self.assertRaises(exception.GlanceUnavailable,
                              quotas.read_usage, self.client)
        self.assertTrue(glance_mod.answer_cut(self.cut()))
        self.assertTrue(glance_mod.answer_cut(urllib3.exceptions.ProtocolError(
            'Connection broken', urllib3.exceptions.IncompleteRead(1, 2))))
