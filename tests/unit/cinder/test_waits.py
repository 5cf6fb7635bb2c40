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

"""waits: a volume snapshot made, and gone, as Cinder shows it."""

from nova_snapshot_ext.cinder import waits
from nova_snapshot_ext import exception
from tests import base


class _Cinder:
    """Shows each snapshot with the statuses given, one per read.

    ``None`` is gone; the last status repeats; an exception is raised.
    """

    def __init__(self, **statuses):
        self.statuses = {k: list(v) for k, v in statuses.items()}
        self.reads = []

    def get_snapshot(self, snapshot_id):
        self.reads.append(snapshot_id)
        seen = self.statuses[snapshot_id]
        status = seen.pop(0) if len(seen) > 1 else seen[0]
        if isinstance(status, Exception):
            raise status
        return None if status is None else {'id': snapshot_id,
                                            'status': status}


class _Clocked(base.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = base.Clock(now=0.0)


class TestWaitGone(_Clocked):

    def wait(self, cinder, ids, seconds=waits.DELETING_WAIT):
        return waits.wait_gone(cinder, ids, seconds, clock=self.clock,
                               sleep=self.clock.sleep)

    def test_gone_at_once_or_after_deleting(self):
        cinder = _Cinder(a=[None], b=['deleting', 'deleting', None])
        self.assertEqual(waits.Deletes(gone=['a', 'b'], seconds=30.0),
                         self.wait(cinder, ['a', 'b']))
        self.assertEqual(['a', 'b', 'b', 'b'], cinder.reads)
        self.assertEqual([waits.POLL, waits.POLL], self.clock.slept)

    def test_a_delete_cinder_failed_is_named_with_its_status(self):
        cinder = _Cinder(a=['deleting', 'error_deleting'],
                         b=['available'], c=[None])
        self.assertEqual(waits.Deletes(gone=['c'], seconds=30.0, failed={
            'a': "Cinder's delete failed (status error_deleting)",
            'b': "Cinder's delete failed (status available)"}),
            self.wait(cinder, ['a', 'b', 'c']))

    def test_a_read_that_fails_is_read_again(self):
        blip = exception.CinderUnavailable(operation='read',
                                           snapshot_id='a', reason='503')
        cinder = _Cinder(a=[blip, 'deleting', None])
        self.assertEqual(waits.Deletes(gone=['a'], seconds=30.0),
                         self.wait(cinder, ['a']))

    def test_reads_failing_until_the_end_keep_cinder_error(self):
        err = exception.CinderUnavailable(operation='read',
                                          snapshot_id='a', reason='HTTP 503')
        cinder = _Cinder(a=[err], b=['deleting'])
        deletes = self.wait(cinder, ['a', 'b'], seconds=3)
        self.assertEqual({'a': err}, deletes.unread)
        self.assertEqual(['b'], deletes.deleting)
        self.assertEqual(
            {'a': 'Cinder accepted its delete; reading it since failed: '
                  '%s' % err.format_message(),
             'b': 'Cinder still deleting it after 3 s'},
            deletes.why_not_gone())

    def test_an_id_given_twice_is_one_snapshot(self):
        cinder = _Cinder(a=[None])
        self.assertEqual(['a'], self.wait(cinder, ['a', 'a']).gone)
        self.assertEqual(['a'], cinder.reads)

    def test_still_deleting_when_the_wait_ends(self):
        cinder = _Cinder(a=['deleting'], b=['deleting', None])
        self.assertEqual(waits.Deletes(gone=['b'], deleting=['a'],
                                       seconds=5),
                         self.wait(cinder, ['a', 'b'], seconds=5))
        # Bounded: the polling ends at its deadline, not a poll later.
        self.assertEqual(5.0, self.clock.now)

    def test_nothing_to_wait_for_reads_nothing(self):
        cinder = _Cinder()
        self.assertEqual(waits.Deletes(seconds=30.0), self.wait(cinder, []))
        self.assertEqual(([], []), (cinder.reads, self.clock.slept))


class TestWaitCreated(_Clocked):

    def wait(self, cinder, seconds=waits.CREATING_WAIT):
        return waits.wait_created(cinder, 'a', seconds, clock=self.clock,
                                  sleep=self.clock.sleep)

    def test_read_again_while_creating(self):
        cinder = _Cinder(a=['creating', 'creating', 'available'])
        self.assertEqual({'id': 'a', 'status': 'available'},
                         self.wait(cinder))
        self.assertEqual(3, len(cinder.reads))

    def test_gone_is_none(self):
        self.assertIsNone(self.wait(_Cinder(a=['creating', None])))

    def test_the_last_reading_when_the_wait_ends(self):
        cinder = _Cinder(a=['creating'])
        self.assertEqual({'id': 'a', 'status': 'creating'},
                         self.wait(cinder, seconds=3))
        self.assertEqual(3.0, self.clock.now)

    def test_a_failed_read_raises(self):
        err = exception.CinderError(operation='read', snapshot_id='a',
                                    reason='HTTP 500')
        self.assertRaises(exception.CinderError, self.wait,
                          _Cinder(a=[err]))
