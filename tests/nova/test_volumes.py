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

"""What becomes of a failed request's volume snapshots (the one rule).

Cinder is a small stand-in object here (Nova's Cinder API's two calls);
the whole path runs against Nova's ``CinderFixture`` in
``test_cells_layout`` and against a real Cinder in ``tests/cloud``.
"""

import importlib.util
import unittest

import fixtures
from oslotest import base as oslotest_base

from nova_snapshot_ext.cinder import waits
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import result as result_mod

NOVA_MISSING = importlib.util.find_spec('nova') is None


class _Cinder(object):
    """``get_snapshot`` and ``delete_snapshot`` of Nova's Cinder API.

    :param ends: snapshot id -> the statuses Cinder shows after its delete
        is accepted, one per read (the last repeats); none: gone at once.
    """

    def __init__(self, snapshots, refuse=(), ends=None):
        self.snapshots = dict(snapshots)
        self.refuse = set(refuse)
        self.ends = {k: list(v) for k, v in (ends or {}).items()}
        self.status = {}
        self.deleted = []

    def get_snapshot(self, _context, snapshot_id):
        from nova import exception as nova_exc

        if snapshot_id not in self.snapshots:
            raise nova_exc.SnapshotNotFound(snapshot_id=snapshot_id)
        status = self.status.get(snapshot_id, 'available')
        if snapshot_id in self.deleted:
            ends = self.ends[snapshot_id]
            status = ends.pop(0) if len(ends) > 1 else ends[0]
            if status is None:
                del self.snapshots[snapshot_id]
                raise nova_exc.SnapshotNotFound(snapshot_id=snapshot_id)
        return {'id': snapshot_id, 'status': status,
                'volume_id': self.snapshots[snapshot_id]}

    def delete_snapshot(self, _context, snapshot_id):
        from nova import exception as nova_exc

        if snapshot_id in self.refuse:
            raise nova_exc.InvalidSnapshot(reason='it is in use')
        self.deleted.append(snapshot_id)
        if snapshot_id not in self.ends:
            del self.snapshots[snapshot_id]


def _failed(leftover=(), unconfirmed=()):
    made = result_mod.SnapshotResult(image_id=None, name='img',
                                     status='failed')
    made.leftover = list(leftover)
    made.unconfirmed = list(unconfirmed)
    return exception.ActivationFailed(name='img', reason='refused',
                                      result=made)


@unittest.skipIf(NOVA_MISSING, 'needs nova (tox -e nova)')
class TestSettle(oslotest_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        from nova_snapshot_ext.nova import volumes

        self.volumes = volumes

    def test_deleted_when_no_image_may_name_them(self):
        cinder = _Cinder({'s1': 'v1', 's2': 'v2'})
        settled = self.volumes.settle(None, ['s1', None, 's2'],
                                      self.volumes.why_kept(_failed()),
                                      {'v1', 'v2'}, cinder)
        self.assertEqual(['s1', 's2'], cinder.deleted)
        self.assertEqual((['s1', 's2'], {}),
                         (settled.deleted, settled.left))
        self.assertEqual(' (volume snapshot(s) s1, s2 deleted)',
                         settled.suffix())

    def test_kept_and_named_while_an_image_may_name_them(self):
        for err, why in (
                (_failed(leftover=['i1']), self.volumes.LEFT_WITH_IMAGE),
                (_failed(unconfirmed=['i1']), self.volumes.LEFT_WITH_IMAGE),
                (RuntimeError('boom'), self.volumes.LEFT_NO_RESULT)):
            cinder = _Cinder({'s1': 'v1'})
            settled = self.volumes.settle(
                None, ['s1'], self.volumes.why_kept(err), {'v1'}, cinder)
            self.assertEqual([], cinder.deleted)
            self.assertEqual({'s1': why}, settled.left)
            self.assertEqual(' (volume snapshot s1 left: %s)' % why,
                             settled.suffix())

    def test_only_snapshots_of_the_servers_volumes_are_deleted(self):
        cinder = _Cinder({'s1': 'v1', 's2': 'other'})
        settled = self.volumes.settle(None, ['s1', 's2'], None, {'v1'},
                                      cinder)
        self.assertEqual(['s1'], cinder.deleted)
        self.assertIn('s2', settled.left)
        self.assertIn('volume other', settled.left['s2'])

    def test_unknown_volumes_delete_nothing(self):
        cinder = _Cinder({'s1': 'v1'})
        settled = self.volumes.settle(None, ['s1'], None, None, cinder)
        self.assertEqual([], cinder.deleted)
        self.assertEqual({'s1': self.volumes.LEFT_UNPROVEN}, settled.left)

    def test_gone_counts_as_deleted_and_refusal_is_named(self):
        cinder = _Cinder({'s2': 'v1'}, refuse={'s2'})
        settled = self.volumes.settle(None, ['s1', 's2'], None, {'v1'},
                                      cinder)
        self.assertEqual(['s1'], settled.deleted)
        self.assertEqual(['s2'], list(settled.left))
        self.assertIn('Cinder delete failed', settled.left['s2'])

    def test_deleted_only_once_cinder_no_longer_shows_it(self):
        self.useFixture(fixtures.MonkeyPatch('time.sleep', lambda s: None))
        cinder = _Cinder({'s1': 'v1'},
                         ends={'s1': ['deleting', 'deleting', None]})
        settled = self.volumes.settle(None, ['s1'], None, {'v1'}, cinder)
        self.assertEqual((['s1'], {}), (settled.deleted, settled.left))
        self.assertEqual([], cinder.ends['s1'][:-1])

    def test_a_delete_cinder_failed_is_named_with_its_status(self):
        self.useFixture(fixtures.MonkeyPatch('time.sleep', lambda s: None))
        for end in ('error_deleting', 'available'):
            cinder = _Cinder({'s1': 'v1', 's2': 'v1'},
                             ends={'s1': ['deleting', end]})
            settled = self.volumes.settle(None, ['s1', 's2'], None,
                                          {'v1'}, cinder)
            self.assertEqual(['s2'], settled.deleted)
            self.assertEqual(
                {'s1': "Cinder's delete failed (status %s)" % end},
                settled.left)
            self.assertIn('volume snapshot s1 left', settled.suffix())

    def test_deleted_by_someone_else_meanwhile_is_gone(self):
        from nova import exception as nova_exc

        class Raced(_Cinder):
            def delete_snapshot(self, _context, snapshot_id):
                del self.snapshots[snapshot_id]
                raise nova_exc.SnapshotNotFound(snapshot_id=snapshot_id)

        settled = self.volumes.settle(None, ['s1'], None, {'v1'},
                                      Raced({'s1': 'v1'}))
        self.assertEqual((['s1'], {}), (settled.deleted, settled.left))

    def test_a_delete_still_running_after_the_wait_is_named(self):
        clock = [0.0]
        self.useFixture(fixtures.MonkeyPatch(
            'time.monotonic', lambda: clock[0]))
        self.useFixture(fixtures.MonkeyPatch(
            'time.sleep', lambda s: clock.__setitem__(0, clock[0] + s)))
        cinder = _Cinder({'s1': 'v1'}, ends={'s1': ['deleting']})
        settled = self.volumes.settle(None, ['s1'], None, {'v1'}, cinder)
        self.assertEqual([], settled.deleted)
        self.assertEqual({'s1': 'Cinder still deleting it after %.0f s' %
                          waits.DELETING_WAIT}, settled.left)
        self.assertGreaterEqual(clock[0], waits.DELETING_WAIT)
        self.assertLess(clock[0], waits.DELETING_WAIT + 2 * waits.POLL)

    def test_nothing_taken_nothing_said(self):
        settled = self.volumes.settle(None, [], None, {'v1'}, _Cinder({}))
        self.assertEqual('', settled.suffix())


@unittest.skipIf(NOVA_MISSING, 'needs nova (tox -e nova)')
class TestSnapshotSizes(oslotest_base.BaseTestCase):
    """What Cinder says of a snapshot's size, read without ever failing."""

    def test_sizes_read_and_every_failure_skipped(self):
        from nova import exception as nova_exc
        from nova_snapshot_ext.cinder import nova_api as cinder

        answers = {'good': {'size': 2}, 'zero': {'size': 0},
                   'flag': {'size': True}, 'none': {}, 'odd': {'size': '3'}}

        class Api(object):
            def get_snapshot(self, _context, snapshot_id):
                if snapshot_id == 'gone':
                    raise nova_exc.SnapshotNotFound(snapshot_id=snapshot_id)
                if snapshot_id == 'broken':
                    raise RuntimeError('a client error Nova did not translate')
                return answers[snapshot_id]

        reader = cinder.NovaCinder.__new__(cinder.NovaCinder)
        reader.context, reader.api = object(), Api()
        self.assertEqual({'good': 2}, reader.snapshot_sizes(
            ['gone', 'broken', 'good', 'zero', 'flag', 'none', 'odd']))
