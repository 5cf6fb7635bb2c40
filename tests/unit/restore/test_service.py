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

"""A restore: its checks, the volumes and server it makes, its undo."""

import datetime
import logging

import fixtures

from nova_snapshot_ext.backup import copy_sets as sets
from nova_snapshot_ext import exception
from nova_snapshot_ext.restore import service
from tests import base
from tests.unit.restore import fakes


def the_set(**changes):
    [copy_set] = sets.find_sets(fakes.two_disk_set(**changes),
                                fakes.PROJECT)
    return copy_set


class RestoreTestCase(base.TestCase):

    timeout = 10.0
    poll = 2.0

    def setUp(self):
        super().setUp()
        self.cinder = fakes.FakeCinder()
        self.compute = fakes.FakeCompute(cinder=self.cinder)
        self.clock = fakes.Clock()
        self.said = []
        self.restore = self.restore_with(self.compute)

    def restore_with(self, compute):
        return service.Restore(self.cinder, compute, say=self.said.append,
                               timeout=self.timeout, poll=self.poll,
                               clock=self.clock, sleep=self.clock.sleep)

    def run_restore(self, copy_set=None, flavor='m1.small', **kwargs):
        return self.restore.run(copy_set or the_set(), fakes.PROJECT, 'web',
                                flavor=flavor, **kwargs)

    def assertFails(self, **kwargs):
        return self.assertRaises(exception.RestoreFailed, self.run_restore,
                                 **kwargs)


class TestCheck(RestoreTestCase):

    def test_everything_there(self):
        self.assertEqual('f-2', self.restore.check(the_set(), fakes.PROJECT,
                                                   'm1.small'))
        self.assertEqual([fakes.PROJECT], self.cinder.quota_asked)

    def test_volumes_only_asks_no_flavor(self):
        restore = self.restore_with(None)
        self.assertIsNone(restore.check(the_set(), fakes.PROJECT, None))

    def test_a_flavor_without_nova_refused(self):
        restore = self.restore_with(None)
        err = self.assertRaises(exception.RestoreRefused, restore.check,
                                the_set(), fakes.PROJECT, 'm1.small')
        self.assertIn("Nova's compute API", err.format_message())

    def test_unknown_flavor_refused(self):
        self.assertRaises(exception.RestoreRefused, self.restore.check,
                          the_set(), fakes.PROJECT, 'm1.huge')

    def test_set_not_restorable_refused_before_the_quota_is_read(self):
        err = self.assertRaises(exception.RestoreRefused, self.restore.check,
                                the_set(status='creating'), fakes.PROJECT,
                                'm1.small')
        self.assertIn('copies not available', err.format_message())
        self.assertEqual([], self.cinder.quota_asked)

    def test_volume_count_over_quota_named(self):
        self.cinder.quota_set = fakes.quota(volumes=(10, 8, 1))
        err = self.assertRaises(exception.RestoreRefused, self.restore.check,
                                the_set(), fakes.PROJECT, 'm1.small')
        self.assertEqual(
            "Restore refused, nothing was made: Cinder quota 'volumes' of "
            "project %s has room for 1, the restore needs 2 (limit 10, in "
            "use 8, reserved 1)" % fakes.PROJECT, err.format_message())

    def test_gigabytes_over_quota_named(self):
        # The set's backups are 10 and 5 GiB.
        self.cinder.quota_set = fakes.quota(gigabytes=(20, 6, 0))
        err = self.assertRaises(exception.RestoreRefused, self.restore.check,
                                the_set(), fakes.PROJECT, 'm1.small')
        self.assertIn("quota 'gigabytes'", err.format_message())
        self.assertIn('room for 14, the restore needs 15',
                      err.format_message())

    def test_exact_room_is_enough(self):
        self.cinder.quota_set = fakes.quota(volumes=(4, 1, 1),
                                            gigabytes=(20, 5, 0))
        self.assertEqual('f-2', self.restore.check(the_set(), fakes.PROJECT,
                                                   'm1.small'))

    def test_over_used_quota_has_no_room(self):
        self.cinder.quota_set = fakes.quota(volumes=(5, 7, 0))
        err = self.assertRaises(exception.RestoreRefused, self.restore.check,
                                the_set(), fakes.PROJECT, None)
        self.assertIn('room for 0, the restore needs 2',
                      err.format_message())

    def test_copy_without_a_size_refused_before_the_quota_is_read(self):
        [copy_set] = sets.find_sets(
            [fakes.copy('b-1', 's-1', '/dev/vda', 0, set_size=3),
             fakes.copy('b-2', 's-2', '/dev/vdb', -1, set_size=3, size=None),
             fakes.copy('b-3', 's-3', '/dev/vdc', -1, set_size=3, size=0)],
            fakes.PROJECT)
        err = self.assertRaises(exception.RestoreRefused, self.restore.check,
                                copy_set, fakes.PROJECT, None)
        self.assertEqual(
            'Restore refused, nothing was made: Cinder gives no size of '
            'backup b-2, b-3: the quota cannot be checked',
            err.format_message())
        self.assertEqual([], self.cinder.quota_asked)

    def test_server_without_a_boot_disk_refused(self):
        [copy_set] = sets.find_sets(
            [fakes.copy('b-1', 's-1', '/dev/vdb', -1, set_size=2),
             fakes.copy('b-2', 's-2', '/dev/vdc', 1, set_size=2)],
            fakes.PROJECT)
        err = self.assertRaises(exception.RestoreRefused, self.restore.check,
                                copy_set, fakes.PROJECT, 'm1.small')
        self.assertEqual(
            'Restore refused, nothing was made: no copy is of a boot disk '
            '(boot index 0): restore the volumes only (--volumes-only)',
            err.format_message())
        self.assertEqual([], self.cinder.quota_asked)
        # Its volumes alone can be restored.
        self.assertIsNone(self.restore.check(copy_set, fakes.PROJECT, None))

    def test_unlimited_quota(self):
        self.cinder.quota_set = fakes.quota(volumes=(-1, 500, 9),
                                            gigabytes=(-1, 10 ** 6, 0))
        self.assertIsNone(self.restore.check(the_set(), fakes.PROJECT, None))


class TestRun(RestoreTestCase):

    def test_volumes_then_server(self):
        result = self.run_restore(networks=['net-1'])
        self.assertEqual([('b-root-1111', 'web-vda', 'vol-1'),
                          ('b-data-1111', 'web-vdb', 'vol-2')],
                         self.cinder.restored)
        expected = [
            {'device_name': '/dev/vda', 'boot_index': 0,
             'backup_id': 'b-root-1111', 'volume_id': 'vol-1'},
            {'device_name': '/dev/vdb', 'boot_index': -1,
             'backup_id': 'b-data-1111', 'volume_id': 'vol-2'}]
        self.assertEqual([{'name': 'web', 'flavor_id': 'f-2',
                           'disks': expected, 'networks': ['net-1']}],
                         self.compute.created)
        self.assertEqual(expected, result.volumes)
        self.assertEqual('srv-new', result.server_id)
        self.assertEqual([], self.cinder.deleted)
        self.assertEqual([], self.compute.deleted)

    def test_waits_poll_on_the_clock_given(self):
        result = self.run_restore()
        # One poll for the volumes (restoring-backup, then available),
        # one for the server (BUILD, then ACTIVE).
        self.assertEqual([self.poll, self.poll], self.clock.slept)
        self.assertEqual(2 * self.poll, result.seconds)

    def test_progress_said(self):
        self.run_restore()
        self.assertEqual(
            ['restoring /dev/vda from backup b-root-1111 into volume vol-1',
             'restoring /dev/vdb from backup b-data-1111 into volume vol-2',
             '0 of 2 volumes restored (0 s)',
             '2 of 2 volumes restored (2 s)',
             'server srv-new requested', 'server srv-new ACTIVE'],
            self.said)

    def test_volumes_only(self):
        self.restore = self.restore_with(None)
        result = self.run_restore(flavor=None)
        self.assertIsNone(result.server_id)
        self.assertEqual(['vol-1', 'vol-2'],
                         [v['volume_id'] for v in result.volumes])
        self.assertNotIn('ACTIVE', result.describe())

    def test_disk_without_device_name(self):
        [copy_set] = sets.find_sets(
            [fakes.copy('b-1', 's-1', '', 0)], fakes.PROJECT)
        self.run_restore(copy_set)
        self.assertEqual([('b-1', 'web-disk0', 'vol-1')],
                         self.cinder.restored)

    def test_result_described(self):
        result = self.run_restore()
        self.assertEqual(
            'restored the copies of backup image %s (server %s, daily) in '
            '4.0 s\n'
            '  /dev/vda: volume vol-1 from backup b-root-1111\n'
            '  /dev/vdb: volume vol-2 from backup b-data-1111\n'
            '  server srv-new ACTIVE' % (fakes.IMAGE, fakes.SERVER),
            result.describe())
        document = result.to_dict()
        self.assertEqual(('srv-new', 4.0, fakes.IMAGE),
                         (document['server_id'], document['seconds'],
                          document['copy_set']['image_id']))
        self.assertEqual(result.volumes, document['volumes'])

    def test_refused_makes_nothing(self):
        self.cinder.quota_set = fakes.quota(volumes=(1, 0, 0))
        self.assertRaises(exception.RestoreRefused, self.run_restore)
        self.assertRaises(exception.RestoreRefused, self.run_restore,
                          flavor='m1.huge')
        self.cinder.quota_set = fakes.quota()
        [no_boot_disk] = sets.find_sets(
            [fakes.copy('b-1', 's-1', '/dev/vdb', -1)], fakes.PROJECT)
        self.assertRaises(exception.RestoreRefused, self.run_restore,
                          no_boot_disk)
        [unsized] = sets.find_sets(
            [fakes.copy('b-1', 's-1', '/dev/vda', 0, size=None)],
            fakes.PROJECT)
        self.assertRaises(exception.RestoreRefused, self.run_restore,
                          unsized)
        self.assertEqual([], self.cinder.restored)
        self.assertEqual([], self.compute.created)


class TestUndo(RestoreTestCase):

    def test_restore_refused_midway_deletes_the_volumes_made(self):
        refusal = exception.CinderError(
            operation='restore', resource='backup b-data-1111',
            reason='VolumeLimitExceeded (HTTP 413)', status=413)
        self.cinder.restore_errors['b-data-1111'] = refusal
        err = self.assertFails()
        self.assertEqual('restoring the volumes', err.kwargs['step'])
        self.assertIn('VolumeLimitExceeded (HTTP 413)', err.format_message())
        self.assertEqual([{'kind': 'volume', 'id': 'vol-1',
                           'fate': 'deleted'}], err.made)
        self.assertEqual(['vol-1'], self.cinder.deleted)
        self.assertIs(refusal, err.__cause__)
        self.assertEqual([], self.compute.created)
        # The failed request is named: which copy's restore failed.
        self.assertEqual(
            'Restore failed while restoring the volumes: Cinder restore of '
            'backup b-data-1111 failed: VolumeLimitExceeded (HTTP 413); '
            'volume vol-1 deleted', err.format_message())

    def test_volume_in_error_fails_the_restore(self):
        self.cinder.statuses['vol-2'] = ['restoring-backup',
                                         'error_restoring']
        err = self.assertFails()
        self.assertEqual(
            'Restore failed while waiting for the volumes: volume vol-2 is '
            'error_restoring; volume vol-1 deleted; volume vol-2 deleted',
            err.format_message())
        self.assertEqual(['vol-1', 'vol-2'], self.cinder.deleted)
        self.assertEqual([], self.compute.created)

    def test_volume_gone_fails_the_restore(self):
        self.cinder.statuses['vol-1'] = [None]
        err = self.assertFails()
        self.assertIn('volume vol-1 is gone', err.format_message())
        self.assertEqual(['volume'] * 2, [m['kind'] for m in err.made])

    def test_volumes_not_ready_in_time(self):
        self.cinder.default_statuses = ['restoring-backup', 'available']
        self.cinder.statuses['vol-2'] = ['restoring-backup'] * 100 + [
            'available']
        err = self.assertFails()
        self.assertEqual('waiting for the volumes', err.kwargs['step'])
        self.assertIn('not done within 10 s', err.format_message())
        self.assertEqual({'vol-1': 'deleted'},
                         {m['id']: m['fate'] for m in err.made
                          if m['fate'] == 'deleted'})
        # Still restoring when the undo gave up on it: left, and why.
        [left] = [m for m in err.made if m['id'] == 'vol-2']
        self.assertEqual('left: Restore failed while deleting the volumes: '
                         'not done within 10 s', left['fate'])
        self.assertNotIn('vol-2', self.cinder.deleted)
        self.assertEqual({self.poll}, set(self.clock.slept))

    def test_server_in_error_deleted_then_its_volumes(self):
        self.compute.statuses = ['BUILD', 'ERROR']
        self.compute.fault = 'No valid host was found.'
        err = self.assertFails()
        self.assertEqual(
            'Restore failed while waiting for the server: server srv-new is '
            'ERROR: No valid host was found.; server srv-new deleted; '
            'volume vol-1 deleted; volume vol-2 deleted',
            err.format_message())
        self.assertEqual(['srv-new'], self.compute.deleted)
        self.assertEqual(['vol-1', 'vol-2'], self.cinder.deleted)

    def test_server_not_active_in_time(self):
        self.compute.statuses = ['BUILD']
        err = self.assertFails()
        self.assertEqual('waiting for the server', err.kwargs['step'])
        self.assertIn('not done within 10 s', err.format_message())
        self.assertEqual(['server', 'volume', 'volume'],
                         [m['kind'] for m in err.made])
        self.assertEqual({'deleted'}, {m['fate'] for m in err.made})

    def test_server_refused_deletes_the_volumes(self):
        self.compute.create_error = exception.ComputeError(
            operation='create', resource='server web',
            reason='Block Device Mapping is Invalid (HTTP 400)', status=400)
        err = self.assertFails()
        self.assertEqual('booting the server', err.kwargs['step'])
        self.assertIn('Block Device Mapping is Invalid',
                      err.format_message())
        self.assertEqual([('volume', 'vol-1', 'deleted'),
                          ('volume', 'vol-2', 'deleted')],
                         [(m['kind'], m['id'], m['fate'])
                          for m in err.made])

    def test_volume_not_deleted_is_named_left_with_why(self):
        self.cinder.statuses['vol-2'] = ['error']
        self.cinder.delete_errors['vol-1'] = exception.CinderUnavailable(
            operation='delete', resource='volume vol-1',
            reason='connection refused')
        err = self.assertFails()
        fates = {m['id']: m['fate'] for m in err.made}
        self.assertEqual('deleted', fates['vol-2'])
        self.assertEqual('left: Cinder could not be reached for delete of '
                         'volume vol-1: connection refused', fates['vol-1'])
        self.assertIn('volume vol-1 left: Cinder could not be reached',
                      err.format_message())

    def test_server_not_deleted_is_named_left_with_why(self):
        self.compute.statuses = ['ERROR']
        self.compute.delete_error = exception.ComputeError(
            operation='delete', resource='server srv-new', reason='503')
        err = self.assertFails()
        [server] = [m for m in err.made if m['kind'] == 'server']
        self.assertEqual('left: Nova delete of server srv-new failed: 503',
                         server['fate'])
        # Its volumes stay attached to it: left too, not deleted.
        self.assertEqual([], self.cinder.deleted)
        self.assertEqual(
            [('vol-1', 'left: attached to server srv-new, which was not '
              'deleted'),
             ('vol-2', 'left: attached to server srv-new, which was not '
              'deleted')],
            [(m['id'], m['fate']) for m in err.made if m['kind'] == 'volume'])

    def test_volumes_of_a_server_not_deleted_left_without_waiting(self):
        self.compute.statuses = ['ERROR']
        self.compute.delete_error = exception.ComputeUnavailable(
            operation='delete', resource='server srv-new',
            reason='connection refused')
        looked = []
        get_volume = self.cinder.get_volume
        self.cinder.get_volume = lambda v: looked.append(v) or get_volume(v)
        err = self.assertFails()
        # The volumes were read while they were restored; the undo neither
        # reads them again nor waits on them (in-use until the server
        # goes, which it did not).
        self.assertEqual(['vol-1', 'vol-2'] * 2, looked)
        self.assertEqual([self.poll], self.clock.slept)
        self.assertEqual(
            'Restore failed while waiting for the server: server srv-new is '
            'ERROR; server srv-new left: Nova could not be reached for '
            'delete of server srv-new: connection refused; volume vol-1 '
            'left: attached to server srv-new, which was not deleted; '
            'volume vol-2 left: attached to server srv-new, which was not '
            'deleted', err.format_message())
        self.assertEqual([], self.cinder.deleted)

    def test_server_not_gone_in_time_leaves_its_volumes(self):
        # Nova took the delete, the server is still there at the deadline.
        self.compute.statuses = ['ERROR']
        self.compute.delete_server = lambda server_id: None
        err = self.assertFails()
        self.assertEqual(
            [('server', 'srv-new', 'left: Restore failed while deleting '
              'the server: not done within 10 s'),
             ('volume', 'vol-1', 'left: attached to server srv-new, which '
              'was not deleted'),
             ('volume', 'vol-2', 'left: attached to server srv-new, which '
              'was not deleted')],
            [(m['kind'], m['id'], m['fate']) for m in err.made])
        self.assertEqual([], self.cinder.deleted)

    def test_volume_already_gone_named(self):
        self.cinder.statuses['vol-2'] = ['error']
        self.cinder.gone.add('vol-2')
        err = self.assertFails()
        self.assertEqual([('vol-1', 'deleted'), ('vol-2', 'already gone')],
                         [(m['id'], m['fate']) for m in err.made])
        self.assertEqual(
            'Restore failed while waiting for the volumes: volume vol-2 is '
            'error; volume vol-1 deleted; volume vol-2 already gone',
            err.format_message())

    def test_one_deadline_for_every_volume_deletion(self):
        # Both volumes still restoring at the end: the undo waits for them
        # once, not once each.
        self.cinder.default_statuses = ['restoring-backup']
        err = self.assertFails()
        self.assertEqual('waiting for the volumes', err.kwargs['step'])
        left = 'left: Restore failed while deleting the volumes: not done ' \
            'within 10 s'
        self.assertEqual([('vol-1', left), ('vol-2', left)],
                         [(m['id'], m['fate']) for m in err.made])
        self.assertEqual([], self.cinder.deleted)
        # The restore's wait (10 s, then one poll more) and the undo's
        # one deadline.
        waited = sum(self.clock.slept)
        self.assertEqual(2 * (self.timeout + self.poll), waited)

    def test_unexpected_error_undoes_and_is_raised_as_it_came(self):
        logs = self.useFixture(base.PluginLogRecords())
        bug = RuntimeError('a bug')
        self.compute.create_error = bug
        err = self.assertRaises(RuntimeError, self.run_restore)
        self.assertIs(bug, err)
        self.assertEqual(['vol-1', 'vol-2'], self.cinder.deleted)
        # What was made, and its fate, is logged before the bug goes on.
        self.assertEqual(
            ['WARNING nova_snapshot_ext.restore.service: nova-snapshot-ext '
             'restore: Restore failed while booting the server: a bug; '
             'volume vol-1 deleted; volume vol-2 deleted'],
            logs.at_least(logging.WARNING))

    def test_interrupted_while_restoring_undoes_then_goes_on(self):
        logs = self.useFixture(base.PluginLogRecords())
        interrupt = KeyboardInterrupt()
        self.cinder.restore_errors['b-data-1111'] = interrupt
        err = self.assertRaises(KeyboardInterrupt, self.run_restore)
        self.assertIs(interrupt, err)
        self.assertEqual(['vol-1'], self.cinder.deleted)
        self.assertEqual([], self.compute.created)
        [logged] = logs.at_least(logging.WARNING)
        self.assertIn('Restore failed while restoring the volumes: '
                      'KeyboardInterrupt; volume vol-1 deleted', logged)

    def test_interrupted_waiting_for_the_server_undoes_then_goes_on(self):
        logs = self.useFixture(base.PluginLogRecords())
        self.compute.statuses = ['BUILD']
        sleeps = []

        def sleep(seconds):
            # Ctrl-C at the first poll of the server (the second sleep).
            sleeps.append(seconds)
            if len(sleeps) == 2:
                raise KeyboardInterrupt()
            self.clock.sleep(seconds)

        self.restore.sleep = sleep
        self.assertRaises(KeyboardInterrupt, self.run_restore)
        self.assertEqual(['srv-new'], self.compute.deleted)
        self.assertEqual(['vol-1', 'vol-2'], self.cinder.deleted)
        [logged] = logs.at_least(logging.WARNING)
        self.assertIn('Restore failed while waiting for the server: '
                      'KeyboardInterrupt; server srv-new deleted; volume '
                      'vol-1 deleted; volume vol-2 deleted', logged)


class TestUnanswered(RestoreTestCase):
    """A create that got no answer may have made what it asked for."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_utils.timeutils.utcnow',
            lambda *a, **k: datetime.datetime(2026, 12, 7, 8, 0, 0)))

    def _unanswered_restore(self, volumes):
        self.cinder.restore_errors['b-data-1111'] = (
            exception.CinderUnavailable(
                operation='restore', resource='backup b-data-1111',
                reason='Connection aborted'))
        self.cinder.named['web-vdb'] = volumes
        return self.assertFails()

    def test_a_volume_of_its_name_made_since_is_named_not_deleted(self):
        err = self._unanswered_restore([
            {'id': 'vol-late', 'name': 'web-vdb',
             'created_at': '2026-12-07T08:00:01.000000'},
            {'id': 'vol-old', 'name': 'web-vdb',
             'created_at': '2026-12-06T08:00:01.000000'}])
        fates = {m['id']: m['fate'] for m in err.made}
        self.assertEqual({'vol-1', 'vol-late'}, set(fates))
        self.assertEqual('deleted', fates['vol-1'])
        self.assertEqual(
            'left: Cinder did not answer the restore of backup b-data-1111 '
            "into a volume named web-vdb; made since, it may be that "
            "restore's (not deleted: not proven)", fates['vol-late'])
        self.assertIn('volume vol-late left: Cinder did not answer',
                      err.format_message())
        self.assertEqual(['vol-1'], self.cinder.deleted)

    def test_none_of_its_name_names_nothing_more(self):
        err = self._unanswered_restore([])
        self.assertEqual([('vol-1', 'deleted')],
                         [(m['id'], m['fate']) for m in err.made])

    def test_a_listing_that_fails_says_it_is_unknown(self):
        self.cinder.named_error = exception.CinderUnavailable(
            operation='list', resource='volumes named web-vdb',
            reason='HTTP 503')
        err = self._unanswered_restore([])
        [unknown] = [m for m in err.made if m['id'] == '(unknown)']
        self.assertTrue(unknown['fate'].startswith(
            'unknown: Cinder did not answer the restore of backup '
            'b-data-1111 into a volume named web-vdb, and the volumes of '
            'that name could not be listed: '), unknown['fate'])

    def test_a_refusal_looks_for_nothing(self):
        self.cinder.restore_errors['b-data-1111'] = exception.CinderError(
            operation='restore', resource='backup b-data-1111',
            reason='over quota (HTTP 413)', status=413)
        self.cinder.named['web-vdb'] = [{'id': 'vol-x', 'name': 'web-vdb'}]
        err = self.assertFails()
        self.assertEqual(['vol-1'], [m['id'] for m in err.made])
        self.assertEqual([], self.cinder.listed)

    def test_a_server_of_its_name_on_these_volumes_is_undone(self):
        self.compute.create_error = exception.ComputeError(
            operation='create', resource='server web', reason='HTTP 502',
            status=502)
        self.compute.named['web'] = [
            {'id': 'srv-other', 'name': 'web',
             'os-extended-volumes:volumes_attached': [{'id': 'vol-9'}]},
            {'id': 'srv-made', 'name': 'web',
             'os-extended-volumes:volumes_attached': [{'id': 'vol-2'}]}]
        err = self.assertFails()
        self.assertEqual([('server', 'srv-made', 'deleted'),
                          ('volume', 'vol-1', 'deleted'),
                          ('volume', 'vol-2', 'deleted')],
                         [(m['kind'], m['id'], m['fate'])
                          for m in err.made])
        self.assertEqual(['srv-made'], self.compute.deleted)

    def test_a_server_not_yet_scheduled_is_read_until_it_shows_them(self):
        # Nova lists a build request without its volumes.
        self.compute.create_error = exception.ComputeUnavailable(
            operation='create', resource='server web', reason='timed out')
        listings = iter([[], [{'id': 'vol-1'}]])
        self.compute.named['web'] = lambda: [
            {'id': 'srv-made', 'name': 'web',
             'created': '2026-12-07T08:00:02Z',
             'os-extended-volumes:volumes_attached': next(listings)},
            {'id': 'srv-old', 'name': 'web',
             'created': '2026-12-01T08:00:02Z',
             'os-extended-volumes:volumes_attached': []}]
        err = self.assertFails()
        self.assertEqual(['srv-made'], self.compute.deleted)
        self.assertEqual(('server', 'srv-made', 'deleted'), (
            err.made[0]['kind'], err.made[0]['id'], err.made[0]['fate']))
        self.assertEqual([self.poll], self.clock.slept[:1])

    def test_a_server_still_unproven_after_the_wait_is_named_left(self):
        self.compute.create_error = exception.ComputeUnavailable(
            operation='create', resource='server web', reason='timed out')
        self.compute.named['web'] = [
            {'id': 'srv-made', 'name': 'web', 'created': 'unreadable',
             'os-extended-volumes:volumes_attached': []}]
        err = self.assertFails()
        [server] = [m for m in err.made if m['kind'] == 'server']
        self.assertEqual('srv-made', server['id'])
        self.assertEqual(
            'left: Nova did not answer the create of server web; made '
            "since, it showed no volumes in time: it may be that "
            "restore's (not deleted: not proven)", server['fate'])
        self.assertEqual([], self.compute.deleted)
        self.assertGreaterEqual(self.clock.now - 1000.0, self.timeout)

    def test_a_lookup_that_breaks_never_hides_the_failure(self):
        self.cinder.restore_errors['b-data-1111'] = (
            exception.CinderUnavailable(
                operation='restore', resource='backup b-data-1111',
                reason='reset'))
        self.cinder.named_error = ValueError('no endpoint')
        err = self.assertFails()
        self.assertIn('reset', err.format_message())
        [unknown] = [m for m in err.made if m['id'] == '(unknown)']
        self.assertIn('could not be listed: no endpoint', unknown['fate'])

    def test_a_volume_listed_without_an_id_is_not_named(self):
        err = self._unanswered_restore([{'name': 'web-vdb'}])
        self.assertEqual(['vol-1'], [m['id'] for m in err.made])

    def test_a_server_listing_that_fails_says_it_is_unknown(self):
        self.compute.create_error = exception.ComputeUnavailable(
            operation='create', resource='server web', reason='timed out')
        self.compute.named_error = exception.ComputeUnavailable(
            operation='list', resource='servers named web',
            reason='timed out')
        err = self.assertFails()
        [unknown] = [m for m in err.made if m['kind'] == 'server']
        self.assertEqual('(unknown)', unknown['id'])
        self.assertIn('Nova did not answer the create of server web',
                      unknown['fate'])
        self.assertEqual([], self.compute.deleted)


#: What an interrupt during the second copy's restore request says.
IN_FLIGHT = {'kind': 'volume', 'id': '(unknown)',
             'fate': 'unknown: interrupted while Cinder restored backup '
             'b-data-1111 into a volume named web-vdb'}


class TestInterruptCarriesWhatWasMade(RestoreTestCase):
    """``restore_made``: the fates the command's interrupt report names."""

    def test_interrupted_while_restoring_carries_the_fates(self):
        interrupt = KeyboardInterrupt()
        self.cinder.restore_errors['b-data-1111'] = interrupt
        err = self.assertRaises(KeyboardInterrupt, self.run_restore)
        self.assertIs(interrupt, err)
        # The request in flight may have made its volume: said so.
        self.assertEqual([{'kind': 'volume', 'id': 'vol-1',
                           'fate': 'deleted'}, IN_FLIGHT], err.restore_made)

    def test_interrupted_waiting_for_the_server_carries_every_fate(self):
        self.compute.statuses = ['BUILD']
        calls = []

        def sleep(seconds):
            calls.append(seconds)
            if len(calls) == 2:
                raise KeyboardInterrupt()
            self.clock.sleep(seconds)

        self.restore.sleep = sleep
        err = self.assertRaises(KeyboardInterrupt, self.run_restore)
        self.assertEqual(
            [{'kind': 'server', 'id': 'srv-new', 'fate': 'deleted'},
             {'kind': 'volume', 'id': 'vol-1', 'fate': 'deleted'},
             {'kind': 'volume', 'id': 'vol-2', 'fate': 'deleted'}],
            err.restore_made)

    def test_fates_left_are_carried_with_why(self):
        self.cinder.delete_errors['vol-1'] = exception.CinderUnavailable(
            operation='delete', resource='volume vol-1', reason='reset')
        self.cinder.restore_errors['b-data-1111'] = KeyboardInterrupt()
        err = self.assertRaises(KeyboardInterrupt, self.run_restore)
        made, in_flight = err.restore_made
        self.assertEqual(IN_FLIGHT, in_flight)
        self.assertEqual(('volume', 'vol-1'), (made['kind'], made['id']))
        self.assertTrue(made['fate'].startswith('left: '), made['fate'])
        self.assertIn('reset', made['fate'])

    def test_interrupted_before_anything_was_made_carries_none(self):
        self.cinder.restore_errors['b-root-1111'] = KeyboardInterrupt()
        err = self.assertRaises(KeyboardInterrupt, self.run_restore)
        self.assertEqual([{
            'kind': 'volume', 'id': '(unknown)',
            'fate': 'unknown: interrupted while Cinder restored backup '
            'b-root-1111 into a volume named web-vda'}], err.restore_made)
        self.assertEqual([], self.cinder.deleted)

    def test_other_errors_carry_nothing(self):
        bug = RuntimeError('a bug')
        self.compute.create_error = bug
        err = self.assertRaises(RuntimeError, self.run_restore)
        self.assertFalse(hasattr(err, 'restore_made'))
        failure = exception.ComputeError(operation='create',
                                         resource='server web', reason='x',
                                         status=400)
        self.compute.create_error = failure
        err = self.assertRaises(exception.RestoreFailed, self.run_restore)
        self.assertFalse(hasattr(err, 'restore_made'))
        self.assertFalse(hasattr(failure, 'restore_made'))


class TestSecondInterrupt(RestoreTestCase):
    """A second Ctrl-C during the undo still names what may be left."""

    def test_second_interrupt_names_everything_made(self):
        self.cinder.restore_errors['b-data-1111'] = KeyboardInterrupt()

        def interrupted(volume_id):
            raise KeyboardInterrupt()
        self.cinder.delete_volume = interrupted
        err = self.assertRaises(KeyboardInterrupt, self.run_restore)
        self.assertEqual(
            [{'kind': 'volume', 'id': 'vol-1',
              'fate': 'left: a second interrupt stopped the undo'},
             IN_FLIGHT], err.restore_made)
