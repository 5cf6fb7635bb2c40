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

"""Copy sets: grouped from Cinder's backups, and the one to restore."""

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.backup import copy_sets as sets
from nova_snapshot_ext import exception
from tests import base
from tests.unit.restore import fakes

IMAGE_OLD = '22222222-2222-4333-8444-555555555555'
IMAGE_NEW = '33333333-2222-4333-8444-555555555555'
OTHER_SERVER = 'bbbbbbbb-1111-4222-8333-444444444444'


def member(backup_id='b-1', device_name='/dev/vda', boot_index=0,
           status='available', reason='', created_at='2024-05-01T10:00:00',
           data_timestamp=''):
    return sets.Member(backup_id=backup_id, device_name=device_name,
                       boot_index=boot_index, size=1, status=status,
                       reason=reason, incremental=False,
                       created_at=created_at, data_timestamp=data_timestamp)


class TestCopySet(base.TestCase):

    def test_member_to_dict(self):
        self.assertEqual(
            {'backup_id': 'b-1', 'device_name': '/dev/vda', 'boot_index': 0,
             'size': 1, 'status': 'available', 'reason': '',
             'incremental': False, 'created_at': '2024-05-01T10:00:00',
             'data_timestamp': ''},
            member().to_dict())

    def test_created_at_is_the_newest_copy_s(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 2, [
            member('b-1', created_at='2024-05-01T10:00:00'),
            member('b-2', '/dev/vdb', -1, created_at='2024-05-01T10:05:00')])
        self.assertEqual('2024-05-01T10:05:00', copy_set.created_at)
        self.assertEqual('', sets.CopySet('img', 'srv', '', 1,
                                          []).created_at)

    def test_complete_available_set_is_restorable(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 2, [
            member('b-1'), member('b-2', '/dev/vdb', -1)])
        self.assertIsNone(copy_set.refusal())

    def test_missing_disk_refused_with_the_count(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 3, [member()])
        self.assertEqual('1 of its 3 disks have a copy (the others were '
                         'never requested, or deleted)', copy_set.refusal())

    def test_more_copies_than_disks_refused_with_the_counts(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 1, [
            member('b-1'), member('b-2', '/dev/vdb', -1)])
        self.assertEqual('2 disks have a copy, its record says 1: the '
                         'records disagree', copy_set.refusal())

    def test_copies_not_available_named_with_status_and_reason(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 3, [
            member('b-1'),
            member('b-2', '/dev/vdb', -1, status='creating'),
            member('b-3', '', -1, status='error', reason='disk full')])
        self.assertEqual('copies not available: /dev/vdb (b-2 creating), '
                         '(no device) (b-3 error: disk full)',
                         copy_set.refusal())

    def test_to_dict(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 1, [member()])
        self.assertEqual(
            {'image_id': 'img', 'server': 'srv', 'backup_type': 'daily',
             'set_size': 1, 'created_at': '2024-05-01T10:00:00',
             'taken_at': '2024-05-01T10:00:00', 'refusal': None,
             'members': [member().to_dict()]}, copy_set.to_dict())


class TestFindSets(base.TestCase):

    def test_copies_grouped_by_backup_image(self):
        found = sets.find_sets(fakes.two_disk_set(IMAGE_OLD) +
                               fakes.two_disk_set(IMAGE_NEW),
                               fakes.PROJECT)
        self.assertEqual({IMAGE_OLD, IMAGE_NEW},
                         {s.image_id for s in found})
        for copy_set in found:
            self.assertEqual((fakes.SERVER, 'daily', 2),
                             (copy_set.server, copy_set.backup_type,
                              copy_set.set_size))
            self.assertEqual(['/dev/vda', '/dev/vdb'],
                             [m.device_name for m in copy_set.members])
            self.assertIsNone(copy_set.refusal())

    def test_newest_set_first(self):
        found = sets.find_sets(
            fakes.two_disk_set(IMAGE_OLD, '2024-05-01T10:00:00') +
            fakes.two_disk_set(IMAGE_NEW, '2024-05-02T10:00:00'),
            fakes.PROJECT)
        self.assertEqual([IMAGE_NEW, IMAGE_OLD], [s.image_id for s in found])

    def test_boot_disks_first_in_boot_order_then_by_device(self):
        backups = [fakes.copy('b-d', 's-d', '/dev/vdd', -1, set_size=4),
                   fakes.copy('b-c', 's-c', '/dev/vdc', -1, set_size=4),
                   fakes.copy('b-b', 's-b', '/dev/vdb', 1, set_size=4),
                   fakes.copy('b-a', 's-a', '/dev/vda', 0, set_size=4)]
        [copy_set] = sets.find_sets(backups, fakes.PROJECT)
        self.assertEqual([('b-a', 0), ('b-b', 1), ('b-c', -1), ('b-d', -1)],
                         [(m.backup_id, m.boot_index)
                          for m in copy_set.members])

    def test_member_read_from_the_backup(self):
        backup = fakes.copy('b-1', 's-1', '/dev/vda', 0, size=20,
                            status='error', is_incremental=True,
                            fail_reason='  quota\n  exceeded ' + 'x' * 400)
        [copy_set] = sets.find_sets([backup], fakes.PROJECT)
        [found] = copy_set.members
        self.assertEqual(('b-1', '/dev/vda', 0, 20, 'error', True,
                          '2024-05-01T10:00:00'),
                         (found.backup_id, found.device_name,
                          found.boot_index, found.size, found.status,
                          found.incremental, found.created_at))
        # Whitespace folded, cut to 300 characters.
        self.assertTrue(found.reason.startswith('quota exceeded xxx'))
        self.assertEqual(300, len(found.reason))

    def test_size_cinder_does_not_give_is_zero(self):
        for size in (None, 'ten', -3, 0):
            [copy_set] = sets.find_sets(
                [fakes.copy('b-1', 's-1', '/dev/vda', 0, size=size)],
                fakes.PROJECT)
            self.assertEqual(0, copy_set.members[0].size)

    def test_backups_not_recorded_by_the_plugin_not_read(self):
        ours = fakes.copy('b-1', 's-1', '/dev/vda', 0)
        unrecorded = {'id': 'b-x', 'snapshot_id': 's-x', 'metadata': {},
                      'status': 'available'}
        no_metadata = {'id': 'b-y', 'status': 'available'}
        [copy_set] = sets.find_sets([unrecorded, ours, no_metadata],
                                    fakes.PROJECT)
        self.assertEqual(['b-1'], [m.backup_id for m in copy_set.members])

    def test_another_project_s_copies_not_read(self):
        theirs = fakes.copy('b-1', 's-1', '/dev/vda', 0, project='project-b')
        self.assertEqual([], sets.find_sets([theirs], fakes.PROJECT))
        self.assertEqual(1, len(sets.find_sets([theirs], 'project-b')))

    def test_edited_record_not_read(self):
        edited = fakes.copy('b-1', 's-1', '/dev/vda', 0)
        edited['metadata'][copies.SERVER_KEY] = OTHER_SERVER
        moved = fakes.copy('b-2', 's-2', '/dev/vda', 0)
        moved['snapshot_id'] = 's-other'
        self.assertEqual([], sets.find_sets([edited, moved], fakes.PROJECT))

    def test_retried_copy_available_one_wins_over_newer_failed_one(self):
        good = fakes.copy('b-good', 's-1', '/dev/vda', 0,
                          created_at='2024-05-01T10:00:00')
        failed = fakes.copy('b-failed', 's-1', '/dev/vda', 0,
                            status='error',
                            created_at='2024-05-01T11:00:00')
        for order in ([good, failed], [failed, good]):
            [copy_set] = sets.find_sets(order, fakes.PROJECT)
            self.assertEqual(['b-good'],
                             [m.backup_id for m in copy_set.members])
            self.assertIsNone(copy_set.refusal())

    def test_retried_copy_newest_available_one_wins(self):
        old = fakes.copy('b-old', 's-1', '/dev/vda', 0,
                         created_at='2024-05-01T10:00:00')
        new = fakes.copy('b-new', 's-1', '/dev/vda', 0,
                         created_at='2024-05-01T11:00:00')
        for order in ([old, new], [new, old]):
            [copy_set] = sets.find_sets(order, fakes.PROJECT)
            self.assertEqual(['b-new'],
                             [m.backup_id for m in copy_set.members])

    def test_retried_copy_of_a_disk_without_device_name(self):
        # Copies are grouped by disk (its volume snapshot), not by device
        # name: a retried copy of a device-less disk is the same disk.
        failed = fakes.copy('b-failed', 's-1', '', 0, status='error',
                            created_at='2024-05-01T10:00:00')
        good = fakes.copy('b-good', 's-1', '', 0,
                          created_at='2024-05-01T11:00:00')
        for order in ([failed, good], [good, failed]):
            [copy_set] = sets.find_sets(order, fakes.PROJECT)
            self.assertEqual((['b-good'], None),
                             ([m.backup_id for m in copy_set.members],
                              copy_set.refusal()))

    def test_retried_copy_of_a_disk_without_device_name_newest_wins(self):
        old = fakes.copy('b-old', 's-1', '', 0,
                         created_at='2024-05-01T10:00:00')
        new = fakes.copy('b-new', 's-1', '', 0,
                         created_at='2024-05-01T11:00:00')
        for order in ([old, new], [new, old]):
            [copy_set] = sets.find_sets(order, fakes.PROJECT)
            self.assertEqual(['b-new'],
                             [m.backup_id for m in copy_set.members])

    def test_disks_without_device_names_are_each_a_disk(self):
        backups = [fakes.copy('b-1', 's-1', '', 0, set_size=2),
                   fakes.copy('b-2', 's-2', '', -1, set_size=2)]
        [copy_set] = sets.find_sets(backups, fakes.PROJECT)
        self.assertEqual(['b-1', 'b-2'],
                         [m.backup_id for m in copy_set.members])
        self.assertIsNone(copy_set.refusal())

    def test_more_disks_than_the_record_says_found_and_refused(self):
        # Two volume snapshots, each recorded as the set's only disk.
        backups = [fakes.copy('b-1', 's-1', '/dev/vda', 0, set_size=1),
                   fakes.copy('b-2', 's-2', '/dev/vdb', -1, set_size=1)]
        [copy_set] = sets.find_sets(backups, fakes.PROJECT)
        self.assertEqual(2, len(copy_set.members))
        self.assertEqual('2 disks have a copy, its record says 1: the '
                         'records disagree', copy_set.refusal())
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                [copy_set], image_id=fakes.IMAGE)
        self.assertIn('the records disagree', err.format_message())

    def test_incomplete_set_found_and_refused(self):
        [root, _] = fakes.two_disk_set()
        [copy_set] = sets.find_sets([root], fakes.PROJECT)
        self.assertEqual(2, copy_set.set_size)
        self.assertIn('1 of its 2 disks', copy_set.refusal())

    def test_nothing_found_in_nothing(self):
        self.assertEqual([], sets.find_sets([], fakes.PROJECT))


class TestChoose(base.TestCase):

    def sets(self, *backups):
        return sets.find_sets(backups, fakes.PROJECT)

    def older_and_newer(self, newer_status='available'):
        return self.sets(
            *fakes.two_disk_set(IMAGE_OLD, '2024-05-01T10:00:00') +
            fakes.two_disk_set(IMAGE_NEW, '2024-05-02T10:00:00',
                               status=newer_status))

    def test_by_image(self):
        found = self.older_and_newer()
        self.assertEqual(IMAGE_OLD, sets.choose(found,
                                                image_id=IMAGE_OLD).image_id)

    def test_by_image_not_restorable_says_why(self):
        found = self.older_and_newer(newer_status='creating')
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                found, image_id=IMAGE_NEW)
        self.assertIn('the copies of backup image %s: copies not '
                      'available: /dev/vda' % IMAGE_NEW,
                      err.format_message())
        self.assertIn('nothing was made', err.format_message())

    def test_by_image_unknown_named(self):
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                self.older_and_newer(), image_id='img-x')
        self.assertIn('no copy of backup image img-x', err.format_message())

    def test_by_server_newest(self):
        found = self.older_and_newer()
        self.assertEqual(IMAGE_NEW, sets.choose(
            found, server=fakes.SERVER).image_id)

    def test_by_server_newest_restorable_one(self):
        found = self.older_and_newer(newer_status='creating')
        self.assertEqual(IMAGE_OLD, sets.choose(
            found, server=fakes.SERVER).image_id)

    def test_by_server_every_set_passed_over_named(self):
        found = self.sets(
            *fakes.two_disk_set(IMAGE_OLD, '2024-05-01T10:00:00',
                                status='error') +
            fakes.two_disk_set(IMAGE_NEW, '2024-05-02T10:00:00',
                               status='creating'))
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                found, server=fakes.SERVER)
        message = err.format_message()
        self.assertIn('no set of copies of server %s can be restored'
                      % fakes.SERVER, message)
        # Newest first, each with its reason.
        self.assertLess(message.index(IMAGE_NEW), message.index(IMAGE_OLD))
        self.assertIn('creating', message)
        self.assertIn('error', message)

    def test_by_server_and_backup_type(self):
        found = self.sets(
            *fakes.two_disk_set(IMAGE_OLD, '2024-05-01T10:00:00',
                                backup_type='weekly') +
            fakes.two_disk_set(IMAGE_NEW, '2024-05-02T10:00:00'))
        self.assertEqual(IMAGE_OLD, sets.choose(
            found, server=fakes.SERVER, backup_type='weekly').image_id)
        self.assertEqual(IMAGE_NEW, sets.choose(
            found, server=fakes.SERVER, backup_type='daily').image_id)
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                found, server=fakes.SERVER,
                                backup_type='monthly')
        self.assertIn('server %s (backup type monthly)' % fakes.SERVER,
                      err.format_message())

    def test_by_server_without_copies(self):
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                self.older_and_newer(), server=OTHER_SERVER)
        self.assertIn('no copy of a backup of server %s' % OTHER_SERVER,
                      err.format_message())

    def test_neither_image_nor_server(self):
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                self.older_and_newer())
        self.assertIn('name a backup image or a server',
                      err.format_message())


class TestTakenAt(base.TestCase):
    """A set's time is its data's: what orders sets."""

    def test_data_timestamp_else_created_at(self):
        self.assertEqual('2024-05-01T09:00:00', sets.CopySet(
            'img', 'srv', 'daily', 1, [member(
                created_at='2024-05-03T10:00:00',
                data_timestamp='2024-05-01T09:00:00')]).taken_at)
        self.assertEqual('2024-05-03T10:00:00', sets.CopySet(
            'img', 'srv', 'daily', 1, [member(
                created_at='2024-05-03T10:00:00')]).taken_at)
        self.assertEqual('', sets.CopySet('img', 'srv', '', 1, []).taken_at)

    def test_newest_data_of_its_members(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 2, [
            member('b-1', created_at='2024-05-09T10:00:00',
                   data_timestamp='2024-05-01T09:00:00'),
            member('b-2', '/dev/vdb', -1, created_at='2024-05-01T09:30:00',
                   data_timestamp='2024-05-01T09:01:00')])
        self.assertEqual('2024-05-01T09:01:00', copy_set.taken_at)
        # created_at is still the newest request.
        self.assertEqual('2024-05-09T10:00:00', copy_set.created_at)

    def test_member_reads_cinder_s_data_timestamp(self):
        backup = fakes.copy('b-1', 's-1', '/dev/vda', 0,
                            created_at='2024-05-03T10:00:00',
                            data_timestamp='2024-05-01T09:00:00')
        [copy_set] = sets.find_sets([backup], fakes.PROJECT)
        self.assertEqual('2024-05-01T09:00:00',
                         copy_set.members[0].data_timestamp)
        self.assertEqual('2024-05-01T09:00:00', copy_set.to_dict()['taken_at'])
        self.assertEqual('2024-05-03T10:00:00',
                         copy_set.to_dict()['created_at'])

    def test_set_copied_again_later_stays_older(self):
        # The old backup's copy failed and was requested again on the 3rd;
        # its data is still of the 1st, older than the set of the 2nd.
        old = fakes.two_disk_set(IMAGE_OLD, '2024-05-01T10:00:00',
                                 data_timestamp='2024-05-01T09:59:00')
        old[0].update(created_at='2024-05-03T10:00:00')
        new = fakes.two_disk_set(IMAGE_NEW, '2024-05-02T10:00:00',
                                 data_timestamp='2024-05-02T09:59:00')
        for backups in (old + new, new + old):
            found = sets.find_sets(backups, fakes.PROJECT)
            self.assertEqual([IMAGE_NEW, IMAGE_OLD],
                             [s.image_id for s in found])
            self.assertEqual(IMAGE_NEW,
                             sets.choose(found, server=fakes.SERVER).image_id)
        # Ordered by created_at the old set would have come first.
        found = sets.find_sets(old + new, fakes.PROJECT)
        self.assertGreater(found[1].created_at, found[0].created_at)


class TestRecordsDisagree(base.TestCase):

    MESSAGE = ('two copies claim the same device or boot index 0: the '
               'records disagree')

    def test_two_members_on_one_device_refused(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 2, [
            member('b-1', '/dev/vda', 0), member('b-2', '/dev/vda', -1)])
        self.assertEqual(self.MESSAGE, copy_set.refusal())

    def test_two_boot_disks_refused(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 2, [
            member('b-1', '/dev/vda', 0), member('b-2', '/dev/vdb', 0)])
        self.assertEqual(self.MESSAGE, copy_set.refusal())

    def test_two_boot_disks_without_device_names_refused(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 2, [
            member('b-1', '', 0), member('b-2', '', 0)])
        self.assertEqual(self.MESSAGE, copy_set.refusal())

    def test_disks_without_device_names_do_not_clash(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 3, [
            member('b-1', '/dev/vda', 0), member('b-2', '', -1),
            member('b-3', '', -1)])
        self.assertIsNone(copy_set.refusal())

    def test_disagreement_named_before_availability(self):
        copy_set = sets.CopySet('img', 'srv', 'daily', 2, [
            member('b-1', '/dev/vda', 0),
            member('b-2', '/dev/vda', 1, status='creating')])
        self.assertEqual(self.MESSAGE, copy_set.refusal())

    def test_found_in_cinder_refused_and_not_chosen(self):
        backups = [fakes.copy('b-1', 's-1', '/dev/vda', 0, set_size=2),
                   fakes.copy('b-2', 's-2', '/dev/vda', 1, set_size=2)]
        [copy_set] = sets.find_sets(backups, fakes.PROJECT)
        self.assertEqual(self.MESSAGE, copy_set.refusal())
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                [copy_set], image_id=fakes.IMAGE)
        self.assertIn('the records disagree', err.format_message())
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                [copy_set], server=fakes.SERVER)
        self.assertIn('the records disagree', err.format_message())


class TestUnreadableSetSize(base.TestCase):

    def test_unreadable_set_size_is_zero_and_refused(self):
        for set_size in ('two', '', '2.0', None, '1e3', ' '):
            backup = fakes.copy('b-1', 's-1', '/dev/vda', 0,
                                set_size=set_size)
            # The record itself is good: the value alone is unreadable.
            self.assertIsNone(copies.record_refusal(backup, fakes.PROJECT))
            [copy_set] = sets.find_sets([backup], fakes.PROJECT)
            self.assertEqual(0, copy_set.set_size, set_size)
            why = copy_set.refusal()
            self.assertIn(copies.SET_SIZE_KEY, why)
            self.assertIn('cannot be told complete', why)

    def test_zero_or_negative_set_size_refused_the_same_way(self):
        for set_size in (0, -2):
            backup = fakes.copy('b-1', 's-1', '/dev/vda', 0,
                                set_size=set_size)
            [copy_set] = sets.find_sets([backup], fakes.PROJECT)
            self.assertIn(copies.SET_SIZE_KEY, copy_set.refusal())

    def test_not_chosen_and_the_option_named(self):
        backup = fakes.copy('b-1', 's-1', '/dev/vda', 0, set_size='many')
        found = sets.find_sets([backup], fakes.PROJECT)
        err = self.assertRaises(exception.RestoreRefused, sets.choose,
                                found, image_id=fakes.IMAGE)
        self.assertIn('no readable snapshot_ext_set_size',
                      err.format_message())
        # A readable older set of the server is chosen over it.
        older = fakes.two_disk_set(IMAGE_OLD, '2024-04-01T10:00:00')
        found = sets.find_sets([backup] + older, fakes.PROJECT)
        self.assertEqual(fakes.IMAGE, found[0].image_id)
        self.assertEqual(IMAGE_OLD,
                         sets.choose(found, server=fakes.SERVER).image_id)
