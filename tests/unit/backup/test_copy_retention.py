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

"""Retention of the copies: sets kept, chains needed, copies deleted."""

import dataclasses
import datetime
import functools
import inspect
import json
from unittest import mock

from oslo_utils import timeutils

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.backup import copy_retention as retention
from nova_snapshot_ext.backup import copy_sets
from nova_snapshot_ext import exception
from tests import base

PROJECT = 'project-a'
SERVER = 'aaaaaaaa-1111-4222-8333-444444444444'
OTHER_SERVER = 'bbbbbbbb-1111-4222-8333-444444444444'
VOL_A = 'vol-a'
VOL_B = 'vol-b'
#: "Now" of every test: noon on 2024-05-20 (naive UTC, as utcnow()).
NOW = datetime.datetime(2024, 5, 20, 12, 0, 0)


def image_id(n):
    return '11111111-2222-4333-8444-%012d' % n


def day(n, hour=10):
    """Cinder's ``created_at`` on 2024-05-``n``."""
    return '2024-05-%02dT%02d:00:00.000000' % (n, hour)


def copy(backup_id, image, created_at, volume_id=VOL_A, incremental=False,
         status='available', server=SERVER, backup_type='daily',
         project=PROJECT, device='/dev/vda', boot_index=0, set_size=1,
         snapshot_id=None):
    """A Cinder backup document carrying a valid copy record."""
    snapshot_id = snapshot_id or 'snap-%s' % backup_id
    meta = copies.record_of(copies.Disk(snapshot_id, device, boot_index),
                            image, server, backup_type, set_size, project)
    return {'id': backup_id, 'snapshot_id': snapshot_id,
            'volume_id': volume_id, 'metadata': meta, 'status': status,
            'created_at': created_at, 'is_incremental': incremental,
            'size': 1, 'fail_reason': None}


def series(*kinds, first_day=1, volume_id=VOL_A, prefix='c'):
    """One copy per day and per set, ``F`` full or ``I`` incremental.

    Set ``n`` (from 1) is image ``image_id(n)``, its copy ``<prefix><n>``.
    """
    return [copy('%s%d' % (prefix, n), image_id(n),
                 day(first_day + n - 1), volume_id=volume_id,
                 incremental=kind == 'I')
            for n, kind in enumerate(kinds, 1)]


Clock = functools.partial(base.Clock, 500.0)


class FakeCinder:
    """The backup calls of a retention, against a dict of backups.

    :ivar lingering: backup id -> reads that still show it ``deleting``
        after its delete (``None``: every read).
    :ivar delete_errors: backup id -> the error its delete raises.
    :ivar read_errors: backup id -> the error its reads raise.
    :ivar deleted: the ids deleted, in the order asked.
    """

    def __init__(self, backups=()):
        self.backups = {b['id']: dict(b) for b in backups}
        self.lingering = {}
        self.delete_errors = {}
        self.read_errors = {}
        self.list_error = None
        self.deleted = []
        self.reads = []
        self.listed = []

    def list_backups(self, volume_id=None):
        self.listed.append(volume_id)
        if self.list_error is not None:
            raise self.list_error
        return [dict(b) for b in self.backups.values()
                if volume_id is None or b['volume_id'] == volume_id]

    def delete_backup(self, backup_id):
        if backup_id in self.delete_errors:
            raise self.delete_errors[backup_id]
        self.deleted.append(backup_id)
        if backup_id in self.lingering:
            self.backups[backup_id]['status'] = 'deleting'
        else:
            self.backups.pop(backup_id, None)
        return 'deleted'

    def get_backup(self, backup_id):
        self.reads.append(backup_id)
        if backup_id in self.read_errors:
            raise self.read_errors[backup_id]
        if backup_id in self.lingering:
            left = self.lingering[backup_id]
            if left is None or left > 0:
                if left is not None:
                    self.lingering[backup_id] = left - 1
                return dict(self.backups[backup_id])
            self.backups.pop(backup_id, None)
        backup = self.backups.get(backup_id)
        return None if backup is None else dict(backup)


def copy_set(image, created_at, statuses=('available',), set_size=None):
    """A :class:`copy_sets.CopySet` of one member per status."""
    members = [copy_sets.Member('b-%s-%d' % (image[-4:], n),
                                '/dev/vd%s' % 'abcdef'[n], n, 1, status,
                                '', False, created_at)
               for n, status in enumerate(statuses)]
    return copy_sets.CopySet(image, SERVER, 'daily',
                             len(members) if set_size is None else set_size,
                             members)


class TestPolicy(base.TestCase):

    def test_default_deletes_nothing(self):
        self.assertFalse(retention.Policy().active)
        self.assertEqual((0, 0), (retention.Policy().keep,
                                  retention.Policy().max_age_days))

    def test_either_limit_makes_it_active(self):
        self.assertTrue(retention.Policy(keep=1).active)
        self.assertTrue(retention.Policy(max_age_days=1).active)
        self.assertTrue(retention.Policy(3, 7).active)

    def test_frozen(self):
        policy = retention.Policy(2, 0)
        self.assertRaises(dataclasses.FrozenInstanceError,
                          setattr, policy, 'keep', 0)

    def test_policy_of_the_options(self):
        self.assertEqual(retention.Policy(0, 0),
                         retention.policy_of(self.conf.snapshot_ext))
        self.flags(backup_copies_keep=3, backup_copies_max_age=14)
        self.assertEqual(retention.Policy(3, 14),
                         retention.policy_of(self.conf.snapshot_ext))


class TestRetentionResult(base.TestCase):

    def test_to_dict_is_every_field_and_json(self):
        result = retention.RetentionResult(
            SERVER, 'daily', kept=['i2', 'i1'], deleted=['c0'],
            left={'c1': 'needed'})
        data = result.to_dict()
        self.assertEqual({'server': SERVER, 'backup_type': 'daily',
                          'kept': ['i2', 'i1'], 'deleted': ['c0'],
                          'left': {'c1': 'needed'}, 'error': None}, data)
        self.assertEqual(data, json.loads(json.dumps(data)))
        # A copy, not the result's own lists.
        data['kept'].append('x')
        self.assertEqual(['i2', 'i1'], result.kept)

    def test_results_do_not_share_their_lists(self):
        one = retention.RetentionResult(SERVER, 'daily')
        two = retention.RetentionResult(SERVER, 'daily')
        one.kept.append('i1')
        one.deleted.append('c1')
        one.left['c2'] = 'why'
        self.assertEqual(([], [], {}), (two.kept, two.deleted, two.left))

    def test_describe(self):
        result = retention.RetentionResult(
            SERVER, 'daily', kept=['i3', 'i2'], deleted=['c1', 'c0'],
            left={'z9': 'status creating', 'a1': 'needed'})
        self.assertEqual(
            'copy retention of server %s (daily): kept the copies of '
            'i3, i2; deleted c1, c0\n'
            '  copy a1 left: needed\n'
            '  copy z9 left: status creating' % SERVER, result.describe())

    def test_describe_nothing_and_no_type(self):
        self.assertEqual(
            'copy retention of server %s (no type): kept the copies of '
            '(none); deleted (none)' % SERVER,
            retention.RetentionResult(SERVER, '').describe())


class TestKeptSets(base.TestCase):

    def sets(self, *days):
        """Available one-disk sets, newest first, image n on day n."""
        return [copy_set(image_id(n), day(n)) for n in days]

    def test_keep_newest(self):
        sets = self.sets(5, 4, 3, 2, 1)
        self.assertEqual({image_id(5), image_id(4)},
                         retention.kept_sets(sets, retention.Policy(2),
                                             NOW))

    def test_keep_more_than_there_are(self):
        sets = self.sets(2, 1)
        self.assertEqual({image_id(2), image_id(1)},
                         retention.kept_sets(sets, retention.Policy(5),
                                             NOW))

    def test_max_age(self):
        # NOW is 2024-05-20 12:00; day(n) is 10:00 of the n-th.
        sets = self.sets(19, 15, 13, 10)
        kept = retention.kept_sets(sets, retention.Policy(0, 7), NOW)
        # The 13th at 10:00 is 7 days and 2 hours old.
        self.assertEqual({image_id(19), image_id(15)}, kept)

    def test_max_age_boundary_is_kept(self):
        exactly = copy_set(image_id(2), '2024-05-13T12:00:00')
        older = copy_set(image_id(1), '2024-05-13T11:59:59')
        newest = copy_set(image_id(3), day(20))
        kept = retention.kept_sets([newest, exactly, older],
                                   retention.Policy(0, 7), NOW)
        self.assertEqual({image_id(3), image_id(2)}, kept)

    def test_either_limit_deletes(self):
        sets = self.sets(19, 18, 17, 5)
        # The keep limit drops 17 and 5; the age limit drops 5 anyway.
        self.assertEqual({image_id(19), image_id(18)},
                         retention.kept_sets(sets, retention.Policy(2, 7),
                                             NOW))
        # The age limit drops 5 within the keep limit.
        self.assertEqual({image_id(19), image_id(18), image_id(17)},
                         retention.kept_sets(sets, retention.Policy(10, 7),
                                             NOW))

    def test_newest_restorable_always_kept(self):
        sets = [copy_set(image_id(4), day(4), ('creating',)),
                copy_set(image_id(3), day(3), ('error',)),
                copy_set(image_id(2), day(2), ('available', 'creating')),
                copy_set(image_id(1), day(1)),
                copy_set(image_id(0), day(1, hour=9))]
        self.assertEqual({image_id(4), image_id(1)},
                         retention.kept_sets(sets, retention.Policy(1),
                                             NOW))

    def test_newest_restorable_kept_beyond_the_age(self):
        sets = self.sets(3, 2, 1)
        self.assertEqual({image_id(3)},
                         retention.kept_sets(sets, retention.Policy(0, 7),
                                             NOW))

    def test_incomplete_set_is_not_restorable(self):
        sets = [copy_set(image_id(3), day(3), set_size=2),
                copy_set(image_id(2), day(2))]
        self.assertEqual({image_id(2)},
                         retention.kept_sets(sets, retention.Policy(0, 7),
                                             NOW))

    def test_nothing_restorable_and_all_too_old(self):
        sets = [copy_set(image_id(2), day(2), ('error',)),
                copy_set(image_id(1), day(1), ('creating',))]
        self.assertEqual(set(), retention.kept_sets(
            sets, retention.Policy(0, 7), NOW))

    def test_no_sets(self):
        self.assertEqual(set(), retention.kept_sets(
            [], retention.Policy(1, 1), NOW))

    def test_no_limit_keeps_every_set(self):
        sets = self.sets(19, 10, 1)
        self.assertEqual({image_id(19), image_id(10), image_id(1)},
                         retention.kept_sets(sets, retention.Policy(), NOW))


class TestNeeded(base.TestCase):

    def test_full_copy_needs_only_itself(self):
        backups = series('F', 'I', 'F')
        self.assertEqual({'c3'}, retention.needed(backups, ['c3']))
        self.assertEqual({'c1'}, retention.needed(backups, ['c1']))

    def test_a_full_copy_being_restored_is_still_needed(self):
        backups = series('F', 'I')
        backups[0]['status'] = 'restoring'
        self.assertEqual({'c1', 'c2'}, retention.needed(backups, ['c2']))

    def test_times_unreadable_or_out_of_range_are_none(self):
        for text in ('', 'yesterday', None, '0001-01-01T00:00:00+05:00'):
            self.assertIsNone(copies.parse_time(text), text)
        self.assertEqual(datetime.datetime(2024, 5, 1, 8, 0),
                         copies.parse_time('2024-05-01T10:00:00+02:00'))

    def test_incremental_needs_its_chain_back_to_the_full_copy(self):
        backups = series('F', 'I', 'F', 'I', 'I', 'I')
        self.assertEqual({'c3', 'c4', 'c5'},
                         retention.needed(backups, ['c5']))
        self.assertEqual({'c1', 'c2'}, retention.needed(backups, ['c2']))

    def test_union_of_the_kept_copies_chains(self):
        backups = series('F', 'I', 'F', 'I')
        self.assertEqual({'c1', 'c2', 'c3', 'c4'},
                         retention.needed(backups, ['c4', 'c2']))

    def test_created_at_order_not_list_order(self):
        backups = series('F', 'I', 'I', 'F', 'I')
        shuffled = [backups[i] for i in (3, 0, 4, 2, 1)]
        self.assertEqual({'c1', 'c2', 'c3'},
                         retention.needed(shuffled, ['c3']))
        self.assertEqual({'c4', 'c5'}, retention.needed(shuffled, ['c5']))

    def test_per_volume(self):
        backups = (series('F', 'I', 'I', volume_id=VOL_A, prefix='a') +
                   series('F', 'F', 'I', volume_id=VOL_B, prefix='b'))
        self.assertEqual({'a1', 'a2', 'a3', 'b2', 'b3'},
                         retention.needed(backups, ['a3', 'b3']))

    def test_chain_through_backups_the_plugin_did_not_make(self):
        # Cinder's chain is the volume's: a user's backup is a link.
        backups = series('F', 'I', first_day=1) + [
            {'id': 'user-full', 'volume_id': VOL_A, 'status': 'available',
             'created_at': day(3), 'is_incremental': False},
            {'id': 'user-inc', 'volume_id': VOL_A, 'status': 'available',
             'created_at': day(4), 'is_incremental': True}]
        backups.append(copy('c5', image_id(5), day(5), incremental=True))
        self.assertEqual({'user-full', 'user-inc', 'c5'},
                         retention.needed(backups, ['c5']))

    def test_unknown_or_no_kept_copy_needs_nothing(self):
        backups = series('F', 'I')
        self.assertEqual(set(), retention.needed(backups, []))
        self.assertEqual(set(), retention.needed(backups, ['gone']))
        self.assertEqual(set(), retention.needed([], ['c1']))


class RetentionTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = Clock()

    def wait(self, seconds=60.0):
        return copies.Wait(seconds, clock=self.clock, sleep=self.clock.sleep)

    def retain(self, cinder, policy, server=SERVER, backup_type='daily',
               wait=None, project=PROJECT):
        return retention.retain(cinder, list(cinder.list_backups()),
                                project, server, backup_type, policy,
                                wait or self.wait(), NOW)


class TestRetain(RetentionTestCase):

    def test_inactive_policy_asks_nothing(self):
        cinder = FakeCinder(series('F', 'F', 'F'))
        result = self.retain(cinder, retention.Policy())
        self.assertEqual(retention.RetentionResult(SERVER, 'daily'), result)
        self.assertEqual(([], []), (cinder.deleted, cinder.reads))
        self.assertEqual(3, len(cinder.backups))

    def test_keep_deletes_the_older_sets_newest_first(self):
        cinder = FakeCinder(series('F', 'F', 'F', 'F', 'F'))
        result = self.retain(cinder, retention.Policy(keep=2))
        self.assertEqual([image_id(5), image_id(4)], result.kept)
        self.assertEqual(['c3', 'c2', 'c1'], result.deleted)
        self.assertEqual(['c3', 'c2', 'c1'], cinder.deleted)
        self.assertEqual({}, result.left)
        self.assertEqual({'c4', 'c5'}, set(cinder.backups))
        # Each delete was seen through, without waiting.
        self.assertEqual(['c3', 'c2', 'c1'], cinder.reads)
        self.assertEqual([], self.clock.slept)

    def test_max_age_deletes_the_older_sets(self):
        # Sets on the 8th to the 19th; seven days before NOW is the 13th.
        cinder = FakeCinder(series('F', 'F', 'F', 'F', first_day=8) +
                            [copy('c19', image_id(19), day(19))])
        result = self.retain(cinder, retention.Policy(max_age_days=7))
        self.assertEqual([image_id(19)], result.kept)
        self.assertEqual(['c4', 'c3', 'c2', 'c1'], result.deleted)

    def test_kept_sets_reported_newest_first(self):
        cinder = FakeCinder(series('F', 'F', 'F'))
        result = self.retain(cinder, retention.Policy(keep=5))
        self.assertEqual([image_id(3), image_id(2), image_id(1)],
                         result.kept)
        self.assertEqual(([], {}), (result.deleted, result.left))
        self.assertEqual([], cinder.deleted)

    def test_newest_restorable_set_kept_while_the_new_one_is_copied(self):
        backups = series('F', 'F', 'F')
        backups[2]['status'] = 'creating'
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual([image_id(3), image_id(2)], result.kept)
        self.assertEqual(['c1'], result.deleted)

    def test_every_disk_of_a_set_deleted(self):
        backups = []
        for n in (1, 2, 3):
            backups += [
                copy('root%d' % n, image_id(n), day(n), volume_id=VOL_A,
                     set_size=2),
                copy('data%d' % n, image_id(n), day(n), volume_id=VOL_B,
                     device='/dev/vdb', boot_index=-1, set_size=2)]
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual([image_id(3)], result.kept)
        self.assertEqual(['root2', 'data2', 'root1', 'data1'],
                         result.deleted)
        self.assertEqual({'root3', 'data3'}, set(cinder.backups))

    def test_retried_copy_of_a_past_set_deleted_too(self):
        # A set's disk copied twice (the first copy failed): the set is
        # the available copy, and both go with it.
        backups = series('F', 'F')
        failed = copy('c1-failed', image_id(1), day(1, hour=9),
                      status='error', snapshot_id=backups[0]['snapshot_id'])
        cinder = FakeCinder(backups + [failed])
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c1', 'c1-failed'], result.deleted)
        self.assertEqual({'c2'}, set(cinder.backups))


class TestRetainChains(RetentionTestCase):

    def test_copy_a_kept_incremental_needs_is_left(self):
        cinder = FakeCinder(series('F', 'I', 'I'))
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual([image_id(3)], result.kept)
        self.assertEqual([], result.deleted)
        self.assertEqual([], cinder.deleted)
        self.assertEqual({'c1', 'c2'}, set(result.left))
        for why in result.left.values():
            self.assertIn('a kept incremental copy needs it', why)

    def test_older_chain_goes_the_kept_one_stays(self):
        cinder = FakeCinder(series('F', 'I', 'I', 'F', 'I', 'I'))
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual([image_id(6)], result.kept)
        self.assertEqual({'c4', 'c5'}, set(result.left))
        # Newest first: an incremental before the copy it is made on.
        self.assertEqual(['c3', 'c2', 'c1'], result.deleted)
        self.assertEqual(['c3', 'c2', 'c1'], cinder.deleted)

    def test_chain_goes_once_none_of_its_sets_is_kept(self):
        cinder = FakeCinder(series('F', 'I', 'F', 'I'))
        result = self.retain(cinder, retention.Policy(keep=2))
        self.assertEqual([image_id(4), image_id(3)], result.kept)
        self.assertEqual(['c2', 'c1'], result.deleted)
        self.assertEqual({}, result.left)

    def test_chains_per_volume(self):
        backups = []
        for n, (kind_a, kind_b) in enumerate(('FF', 'IF', 'II'), 1):
            backups += [
                copy('a%d' % n, image_id(n), day(n), volume_id=VOL_A,
                     incremental=kind_a == 'I', set_size=2),
                copy('b%d' % n, image_id(n), day(n), volume_id=VOL_B,
                     incremental=kind_b == 'I', device='/dev/vdb',
                     boot_index=1, set_size=2)]
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        # vol-a: a3 <- a2 <- a1 (full); vol-b: b3 <- b2 (full).
        self.assertEqual({'a1', 'a2', 'b2'}, set(result.left))
        self.assertEqual(['b1'], result.deleted)


class TestRetainTouchesOnlyItsOwn(RetentionTestCase):
    """Only the recorded copies of this project, server and type."""

    def old_copies(self):
        # Every one of them older than the server's sets.
        return [
            copy('other-server', image_id(90), day(1),
                 server=OTHER_SERVER),
            copy('other-type', image_id(91), day(1), backup_type='weekly'),
            copy('other-project', image_id(92), day(1),
                 project='project-b'),
            {'id': 'not-a-copy', 'volume_id': VOL_A, 'snapshot_id': 's',
             'status': 'available', 'created_at': day(1),
             'is_incremental': False, 'metadata': {}},
            {'id': 'no-metadata', 'volume_id': VOL_A, 'status': 'available',
             'created_at': day(1), 'is_incremental': False},
        ]

    def test_others_never_deleted(self):
        forged = copy('forged', image_id(1), day(1, hour=8))
        forged['metadata'][copies.DEVICE_KEY] = '/dev/vdz'
        moved = copy('moved', image_id(1), day(1, hour=8))
        moved['snapshot_id'] = 'another-snapshot'
        backups = (self.old_copies() + [forged, moved] +
                   series('F', 'F', 'F', first_day=10))
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1,
                                                      max_age_days=1))
        self.assertEqual(['c2', 'c1'], result.deleted)
        self.assertEqual(['c2', 'c1'], cinder.deleted)
        self.assertEqual({}, result.left)
        self.assertEqual({'other-server', 'other-type', 'other-project',
                          'not-a-copy', 'no-metadata', 'forged', 'moved',
                          'c3'}, set(cinder.backups))

    def test_other_server_s_own_retention(self):
        backups = self.old_copies() + series('F', 'F', first_day=10)
        backups.append(copy('other-server-2', image_id(93), day(2),
                            server=OTHER_SERVER))
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1),
                             server=OTHER_SERVER)
        self.assertEqual(OTHER_SERVER, result.server)
        self.assertEqual([image_id(93)], result.kept)
        self.assertEqual(['other-server'], result.deleted)

    def test_other_type_s_own_retention(self):
        backups = self.old_copies() + series('F', 'F', first_day=10)
        backups.append(copy('other-type-2', image_id(94), day(2),
                            backup_type='weekly'))
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1),
                             backup_type='weekly')
        self.assertEqual(['other-type'], result.deleted)
        self.assertEqual('weekly', result.backup_type)

    def test_other_project_s_copies_unknown_to_this_one(self):
        cinder = FakeCinder(series('F', 'F'))
        result = self.retain(cinder, retention.Policy(keep=1),
                             project='project-b')
        self.assertEqual(([], [], {}),
                         (result.kept, result.deleted, result.left))
        self.assertEqual([], cinder.deleted)

    def test_a_kept_copy_s_chain_through_a_user_backup_is_kept(self):
        # The user's full backup is no copy: never deleted, and the
        # plugin's copies before it are no longer needed.
        backups = series('F', 'I') + [
            {'id': 'user-full', 'volume_id': VOL_A, 'status': 'available',
             'created_at': day(3), 'is_incremental': False}]
        backups.append(copy('c4', image_id(4), day(4), incremental=True))
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c2', 'c1'], result.deleted)
        self.assertIn('user-full', cinder.backups)


class TestRetainStatuses(RetentionTestCase):

    def test_copies_cinder_would_not_delete_are_left(self):
        backups = series('F', 'F', 'F', 'F', 'F', 'F')
        for backup, status in zip(backups, ('creating', 'deleting',
                                            'restoring', 'error',
                                            'available')):
            backup['status'] = status
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c5', 'c4'], result.deleted)
        self.assertEqual(['c5', 'c4'], cinder.deleted)
        self.assertEqual({'c1', 'c2', 'c3'}, set(result.left))
        self.assertEqual('status restoring: Cinder deletes only an '
                         'available or error backup', result.left['c3'])
        self.assertIn('status creating', result.left['c1'])
        self.assertIn('status deleting', result.left['c2'])


class TestRetainWaits(RetentionTestCase):

    def test_waits_until_cinder_no_longer_shows_it(self):
        cinder = FakeCinder(series('F', 'F'))
        cinder.lingering['c1'] = 3
        result = self.retain(cinder, retention.Policy(keep=1),
                             wait=self.wait(10))
        self.assertEqual(['c1'], result.deleted)
        self.assertEqual({}, result.left)
        self.assertEqual(['c1'] * 4, cinder.reads)
        self.assertEqual([copies.POLL_S] * 3, self.clock.slept)

    def test_still_deleting_at_the_bound_is_left_and_the_rest_go_on(self):
        cinder = FakeCinder(series('F', 'F', 'F'))
        cinder.lingering['c2'] = None
        result = self.retain(cinder, retention.Policy(keep=1),
                             wait=self.wait(5))
        self.assertEqual({'c2': 'still being deleted after 5 s '
                                '([snapshot_ext] backup_copies_wait)'},
                         result.left)
        self.assertNotIn('c2', result.deleted)
        self.assertEqual(['c1'], result.deleted)
        self.assertEqual(['c2', 'c1'], cinder.deleted)
        # Waited the bound, not a moment more.
        self.assertEqual(505.0, self.clock.now)

    def test_no_wait_at_all(self):
        cinder = FakeCinder(series('F', 'F'))
        cinder.lingering['c1'] = None
        result = self.retain(cinder, retention.Policy(keep=1),
                             wait=self.wait(0))
        self.assertIn('after 0 s', result.left['c1'])
        self.assertEqual([], self.clock.slept)

    def test_gone_already_is_deleted(self):
        class Gone(FakeCinder):
            def delete_backup(self, backup_id):
                self.backups.pop(backup_id)
                self.deleted.append(backup_id)
                return 'gone'
        cinder = Gone(series('F', 'F'))
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c1'], result.deleted)


class TestRetainCinderErrors(RetentionTestCase):
    """Never raised: each copy not deleted is named with the reason."""

    def test_refused_delete_named_and_the_others_deleted(self):
        cinder = FakeCinder(series('F', 'F', 'F', 'F'))
        cinder.delete_errors['c2'] = exception.CinderError(
            operation='delete', resource='backup c2',
            reason='Incremental backups exist for this backup.')
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c3', 'c1'], result.deleted)
        # Cinder's refusal for a parent is said in the plugin's words.
        self.assertEqual({'c2': retention.DEPENDED_ON}, result.left)
        self.assertIn('c2', cinder.backups)

    def test_unreachable_cinder_named(self):
        cinder = FakeCinder(series('F', 'F'))
        cinder.delete_errors['c1'] = exception.CinderUnavailable(
            operation='delete', resource='backup c1', reason='reset')
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual([], result.deleted)
        self.assertIn('could not be reached', result.left['c1'])
        self.assertIn('reset', result.left['c1'])

    def test_read_after_the_delete_fails(self):
        cinder = FakeCinder(series('F', 'F', 'F'))
        cinder.read_errors['c2'] = exception.CinderError(
            operation='read', resource='backup c2', reason='HTTP 500')
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c1'], result.deleted)
        self.assertEqual({'c2'}, set(result.left))
        self.assertIn('HTTP 500', result.left['c2'])


class TestAfterCopies(RetentionTestCase):

    def image(self, **changes):
        image = {'id': image_id(9), 'instance_uuid': SERVER,
                 'backup_type': 'daily', 'owner': PROJECT}
        image.update(changes)
        return image

    def test_off_lists_nothing(self):
        cinder = FakeCinder(series('F', 'F'))
        self.assertIsNone(retention.after_copies(
            cinder, self.image(), PROJECT, self.conf.snapshot_ext))
        self.assertEqual(([], []), (cinder.listed, cinder.deleted))

    def test_options_retain_the_image_s_server_and_type(self):
        self.flags(backup_copies_keep=1)
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)
        cinder = FakeCinder(series('F', 'F', 'F') + [
            copy('weekly', image_id(80), day(1), backup_type='weekly'),
            copy('other', image_id(81), day(1), server=OTHER_SERVER)])
        result = retention.after_copies(cinder, self.image(), PROJECT,
                                        self.conf.snapshot_ext)
        # Every backup of the project was listed, not one volume's.
        self.assertEqual([None], cinder.listed)
        self.assertEqual((SERVER, 'daily'),
                         (result.server, result.backup_type))
        self.assertEqual([image_id(3)], result.kept)
        self.assertEqual(['c2', 'c1'], result.deleted)
        self.assertIn('weekly', cinder.backups)
        self.assertIn('other', cinder.backups)

    def test_max_age_option_against_the_time_now(self):
        self.flags(backup_copies_max_age=3)
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)
        cinder = FakeCinder(series('F', 'F', 'F', first_day=16))
        result = retention.after_copies(cinder, self.image(), PROJECT,
                                        self.conf.snapshot_ext)
        # 16th and 17th are more than 3 days before the 20th at noon.
        self.assertEqual([image_id(3)], result.kept)
        self.assertEqual(['c2', 'c1'], result.deleted)

    def test_image_without_type(self):
        self.flags(backup_copies_keep=1)
        backups = [copy('t%d' % n, image_id(70 + n), day(n),
                        backup_type='') for n in (1, 2)]
        cinder = FakeCinder(backups + series('F', 'F', first_day=3))
        result = retention.after_copies(
            cinder, self.image(backup_type=None), PROJECT,
            self.conf.snapshot_ext)
        self.assertEqual('', result.backup_type)
        self.assertEqual(['t1'], result.deleted)

    def test_wait_option_bounds_each_delete(self):
        self.flags(backup_copies_keep=1, backup_copies_wait=1)
        cinder = FakeCinder(series('F', 'F'))
        cinder.lingering['c1'] = None
        result = retention.after_copies(cinder, self.image(), PROJECT,
                                        self.conf.snapshot_ext)
        self.assertEqual(['c1'], cinder.deleted)
        self.assertEqual({'c1': 'still being deleted after 1 s '
                                '([snapshot_ext] backup_copies_wait)'},
                         result.left)

    def test_listing_failure_named_not_raised(self):
        self.flags(backup_copies_keep=1)
        cinder = FakeCinder(series('F', 'F'))
        cinder.list_error = exception.CinderUnavailable(
            operation='list', resource='backups', reason='reset')
        result = retention.after_copies(cinder, self.image(), PROJECT,
                                        self.conf.snapshot_ext)
        self.assertEqual('Cinder could not be reached for list of '
                         'backups: reset', result.error)
        self.assertIn('not done: Cinder could not be reached',
                      result.describe())
        self.assertEqual([], cinder.deleted)


class TestRetainDefectsFixed(RetentionTestCase):
    """What the first review of the retention found, each kept fixed."""

    def test_failed_delete_named_at_once(self):
        # Cinder's delete fails: the backup is back in error, with why.
        cinder = FakeCinder(series('F', 'F'))

        def fail(backup_id):
            cinder.deleted.append(backup_id)
            cinder.backups[backup_id].update(
                status='error', fail_reason='chunk store unreachable')
            return 'deleted'
        cinder.delete_backup = fail
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual({'c1': 'delete failed (status error): chunk '
                                'store unreachable'}, result.left)
        self.assertEqual([], self.clock.slept)

    def test_one_deadline_for_the_whole_retention(self):
        cinder = FakeCinder(series('F', 'F', 'F'))
        cinder.lingering = {'c2': None, 'c1': None}
        result = self.retain(cinder, retention.Policy(keep=1),
                             wait=self.wait(10.0))
        self.assertEqual({'c2', 'c1'}, set(result.left))
        self.assertLessEqual(sum(self.clock.slept), 10.0 + 1.0)

    def test_other_server_sharing_an_image_id_never_deleted(self):
        mine = series('F', 'F')
        other = copy('other', image_id(1), day(1), volume_id=VOL_B,
                     server=OTHER_SERVER, snapshot_id='snap-other')
        cinder = FakeCinder(mine + [other])
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c1'], result.deleted)
        self.assertIn('other', cinder.backups)

    def test_chain_walk_skips_what_was_never_a_parent(self):
        backups = [
            copy('full', image_id(1), day(1)),
            copy('user-full', image_id(9), day(2), status='creating'),
            copy('inc', image_id(3), day(3), incremental=True)]
        self.assertEqual({'inc', 'full'},
                         retention.needed(backups, ['inc']))

    def test_a_copy_left_keeps_its_parents(self):
        # c2 (incremental on c1) cannot be deleted: c1 stays with it.
        cinder = FakeCinder(series('F', 'I', 'F'))
        cinder.delete_errors['c2'] = exception.CinderUnavailable(
            operation='delete', resource='backup c2', reason='reset')
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual([], result.deleted)
        self.assertEqual(retention.NEEDED, result.left['c1'])
        self.assertIn('c1', cinder.backups)

    def test_unreadable_date_is_kept_under_an_age_limit(self):
        sets = [copy_set(image_id(2), day(19)),
                copy_set(image_id(1), 'not a date')]
        self.assertEqual({image_id(2), image_id(1)}, retention.kept_sets(
            sets, retention.Policy(max_age_days=7), NOW))


class CopyingCinder(FakeCinder):
    """Snapshots to copy too: a copy is available at once, dated."""

    def __init__(self, backups=(), snapshots=None):
        super().__init__(backups)
        self.snapshots = dict(snapshots or {})
        self.created = []
        self.calls = []

    def get_snapshot(self, snapshot_id):
        return self.snapshots.get(snapshot_id)

    def list_backups(self, volume_id=None):
        self.calls.append(('list', volume_id))
        return super().list_backups(volume_id)

    def delete_backup(self, backup_id):
        self.calls.append(('delete', backup_id))
        return super().delete_backup(backup_id)

    def create_backup(self, volume_id, snapshot_id, incremental, name,
                      description, metadata):
        self.calls.append(('create', snapshot_id))
        backup_id = 'new-%d' % (len(self.created) + 1)
        snap = self.snapshots[snapshot_id]
        backup = {'id': backup_id, 'volume_id': volume_id,
                  'snapshot_id': snapshot_id, 'status': 'available',
                  'metadata': dict(metadata), 'is_incremental': incremental,
                  'created_at': snap['created_at'],
                  'data_timestamp': snap['created_at'], 'size': 1,
                  'fail_reason': None}
        self.created.append(backup)
        self.backups[backup_id] = backup
        return dict(backup)


class TestCopyAndRetain(base.TestCase):
    """The copies of a backup with the options, then their retention."""

    SNAP = 'snap-new'

    def setUp(self):
        super().setUp()
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)
        self.cinder = CopyingCinder(series('F', 'I', 'I'), snapshots={
            self.SNAP: {'id': self.SNAP, 'volume_id': VOL_A,
                        'status': 'available', 'created_at': day(4)}})
        self.image = {'id': image_id(4), 'name': 'nightly',
                      'instance_uuid': SERVER, 'backup_type': 'daily',
                      'owner': PROJECT,
                      'block_device_mapping': [
                          {'source_type': 'snapshot',
                           'snapshot_id': self.SNAP,
                           'device_name': '/dev/vda', 'boot_index': 0}]}

    def run_it(self):
        with mock.patch.object(copies, 'make_copies',
                               wraps=copies.make_copies) as made:
            result = retention.copy_and_retain(
                self.cinder, self.image, PROJECT, self.conf.snapshot_ext)
        [call] = made.call_args_list
        return result, call

    def test_copies_then_retention(self):
        self.flags(backup_copies_keep=1, backup_copies_chain=0)
        (copied, kept), _call = self.run_it()
        self.assertEqual(['new-1'], [c['backup_id'] for c in copied.started])
        self.assertEqual([], copied.failed)
        # The retention saw the new copy: its set is the one kept, and
        # the older chain goes, newest first.
        self.assertEqual([image_id(4)], kept.kept)
        self.assertEqual(['c3', 'c2', 'c1'], kept.deleted)
        self.assertEqual({'new-1'}, set(self.cinder.backups))
        # The copy was asked (after reading its volume's backups) before
        # the project's backups were listed and the old ones deleted.
        self.assertEqual([('list', VOL_A), ('list', VOL_A),
                          ('create', self.SNAP), ('list', None),
                          ('delete', 'c3'), ('delete', 'c2'),
                          ('delete', 'c1')], self.cinder.calls)

    def test_wait_and_chain_options_given_to_the_copies(self):
        self.flags(backup_copies_wait=7, backup_copies_chain=2)
        (copied, kept), call = self.run_it()
        given = inspect.signature(copies.make_copies).bind(
            *call.args, **call.kwargs).arguments
        self.assertEqual((7.0, 2), (given['wait'].seconds, given['chain']))
        self.assertEqual(PROJECT, given['project'])
        # Two incrementals since the full one: the bound makes it full.
        self.assertEqual([False],
                         [c['incremental'] for c in copied.started])
        self.assertIsNone(kept)

    def test_chain_option_below_the_bound_incremental(self):
        self.flags(backup_copies_chain=3)
        (copied, _kept), _call = self.run_it()
        self.assertEqual([True],
                         [c['incremental'] for c in copied.started])
        self.assertEqual([True],
                         [b['is_incremental'] for b in self.cinder.created])

    def test_no_retention_set_copies_only(self):
        (copied, kept), _call = self.run_it()
        self.assertIsNone(kept)
        self.assertEqual(1, len(copied.started))
        self.assertNotIn(('list', None), self.cinder.calls)
        self.assertEqual([], self.cinder.deleted)

    def test_failed_copy_still_retained_and_nothing_raised(self):
        self.flags(backup_copies_keep=1)
        del self.cinder.snapshots[self.SNAP]
        (copied, kept), _call = self.run_it()
        self.assertEqual([self.SNAP],
                         [f['snapshot_id'] for f in copied.failed])
        # Nothing new: the newest set of the three stays, and the
        # incrementals need the whole chain.
        self.assertEqual([image_id(3)], kept.kept)
        self.assertEqual([], kept.deleted)
        self.assertEqual({'c1', 'c2'}, set(kept.left))

    def test_listing_failure_after_the_copies_named(self):
        self.flags(backup_copies_keep=1)
        failure = exception.CinderUnavailable(
            operation='list', resource='backups', reason='reset')
        original = self.cinder.list_backups

        def list_backups(volume_id=None):
            if volume_id is None:
                raise failure
            return original(volume_id)
        self.cinder.list_backups = list_backups
        (copied, kept), _call = self.run_it()
        self.assertEqual(1, len(copied.started))
        self.assertIs(failure, kept.failure)
        self.assertIn('Cinder could not be reached', kept.error)


class TestDependedOn(RetentionTestCase):
    """A copy Cinder shows an incremental on is left, not asked to go."""

    def test_has_dependent_backups_left(self):
        backups = series('F', 'F')
        backups[0]['has_dependent_backups'] = True
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual({'c1': retention.DEPENDED_ON}, result.left)
        self.assertEqual([], result.deleted)
        # Never asked: Cinder would refuse it.
        self.assertEqual([], cinder.deleted)
        self.assertIn('c1', cinder.backups)
        self.assertIn('copy c1 left: Cinder shows an incremental backup '
                      'made on it', result.describe())

    def test_false_flag_deleted(self):
        backups = series('F', 'F')
        backups[0]['has_dependent_backups'] = False
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c1'], result.deleted)

    def test_the_others_still_deleted(self):
        backups = series('F', 'F', 'F', 'F')
        backups[1]['has_dependent_backups'] = True
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual(['c3', 'c1'], result.deleted)
        self.assertEqual({'c2': retention.DEPENDED_ON}, result.left)

    def test_a_depended_on_copy_keeps_its_own_chain(self):
        backups = series('F', 'I', 'F')
        backups[1]['has_dependent_backups'] = True
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual({'c2': retention.DEPENDED_ON,
                          'c1': retention.NEEDED}, result.left)
        self.assertEqual([], cinder.deleted)

    def test_needed_says_so_before_depended_on(self):
        backups = series('F', 'I')
        backups[0]['has_dependent_backups'] = True
        cinder = FakeCinder(backups)
        result = self.retain(cinder, retention.Policy(keep=1))
        self.assertEqual({'c1': retention.NEEDED}, result.left)


class TestRetentionFailure(base.TestCase):
    """The exception behind ``error``: kept, never reported as data."""

    def test_failure_kept_not_in_to_dict(self):
        failure = exception.CinderForbidden(
            operation='list', resource='backups', reason='HTTP 403')
        result = retention.RetentionResult(
            SERVER, 'daily', error=failure.format_message(),
            failure=failure)
        self.assertIs(failure, result.failure)
        data = result.to_dict()
        self.assertNotIn('failure', data)
        self.assertEqual(failure.format_message(), data['error'])
        self.assertEqual(data, json.loads(json.dumps(data)))
        # to_dict did not drop it from the result itself.
        self.assertIs(failure, result.failure)

    def test_failure_neither_compared_nor_shown(self):
        failure = exception.CinderError(operation='list', resource='backups',
                                        reason='x')
        with_it = retention.RetentionResult(SERVER, 'daily', error='x',
                                            failure=failure)
        self.assertEqual(retention.RetentionResult(SERVER, 'daily',
                                                   error='x'), with_it)
        self.assertNotIn('failure', repr(with_it))
        self.assertIsNone(retention.RetentionResult(SERVER, 'd').failure)

    def test_after_copies_keeps_the_listing_error(self):
        self.flags(backup_copies_keep=1)
        cinder = FakeCinder(series('F', 'F'))
        cinder.list_error = exception.CinderForbidden(
            operation='list', resource='backups', reason='HTTP 403')
        result = retention.after_copies(
            cinder, {'id': image_id(9), 'instance_uuid': SERVER,
                     'backup_type': 'daily'}, PROJECT,
            self.conf.snapshot_ext)
        self.assertIs(cinder.list_error, result.failure)
        self.assertEqual(cinder.list_error.format_message(), result.error)
        self.assertNotIn('failure', result.to_dict())
