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

"""Copies off the primary storage: the disks, the record, the requests."""

import json

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.backup import rotation
from nova_snapshot_ext import exception
from tests import base

IMAGE = '11111111-2222-4333-8444-555555555555'
SERVER = 'aaaaaaaa-1111-4222-8333-444444444444'
PROJECT = 'project-a'
SNAP_A = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
SNAP_B = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c02'
SNAP_C = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c03'
VOL_A = '0f7c1c8e-5d2b-4f3a-9e61-7a1b2c3d4e01'
VOL_B = '0f7c1c8e-5d2b-4f3a-9e61-7a1b2c3d4e02'

#: Cinder's reason when an incremental backup finds no parent
#: (cinder.backup.api.API.create, InvalidBackup).
NO_PARENT = ('Invalid backup: No backups available to do an incremental '
             'backup.')


def mapping(snapshot_id, device_name, boot_index, **extra):
    entry = {'source_type': 'snapshot', 'destination_type': 'volume',
             'snapshot_id': snapshot_id, 'device_name': device_name,
             'boot_index': boot_index}
    entry.update(extra)
    return entry


def backup_image(mappings, as_json=True, **changes):
    image = {'id': IMAGE, 'name': 'nightly-db01', 'status': 'active',
             'owner': PROJECT, 'instance_uuid': SERVER,
             'backup_type': 'daily',
             'block_device_mapping': (json.dumps(mappings) if as_json
                                      else mappings)}
    image.update(changes)
    return image


class FakeCinder:
    """A :class:`copies.Copier`: snapshots, backups, and refusals.

    :ivar refusals: snapshot id -> list of errors the next creates of its
        copy raise, one each (then they succeed).
    """

    def __init__(self, snapshots=None, backups=()):
        self.snapshots = dict(snapshots or {})
        self.backups = list(backups)
        self.refusals = {}
        self.list_errors = {}
        self.created = []
        self.listed = []

    def get_snapshot(self, snapshot_id):
        return self.snapshots.get(snapshot_id)

    def list_backups(self, volume_id=None):
        self.listed.append(volume_id)
        if volume_id in self.list_errors:
            raise self.list_errors[volume_id]
        return [b for b in self.backups
                if volume_id is None or b['volume_id'] == volume_id]

    def create_backup(self, volume_id, snapshot_id, incremental, name,
                      description, metadata):
        self.created.append({'volume_id': volume_id,
                             'snapshot_id': snapshot_id,
                             'incremental': incremental, 'name': name,
                             'description': description,
                             'metadata': dict(metadata)})
        pending = self.refusals.get(snapshot_id)
        if pending:
            raise pending.pop(0)
        backup = {'id': 'backup-%d' % len(self.created),
                  'volume_id': volume_id, 'snapshot_id': snapshot_id,
                  'status': 'creating', 'metadata': dict(metadata)}
        self.backups.append(backup)
        return dict(backup)


def refused(snapshot_id, reason):
    return exception.CinderError(operation='backup',
                                 snapshot_id=snapshot_id, reason=reason)


class TestDisksOf(base.TestCase):

    def test_boot_disk_first_then_by_boot_index_then_device(self):
        image = backup_image([
            mapping('snap-none-b', '/dev/vdc', None),
            mapping('snap-2', '/dev/vdz', 2),
            mapping('snap-none-a', '/dev/vdb', -1),
            mapping('snap-0', '/dev/vda', 0),
            mapping('snap-1', '/dev/vdy', '1'),
        ])
        disks = copies.disks_of(image)
        self.assertEqual(
            [('snap-0', '/dev/vda', 0), ('snap-1', '/dev/vdy', 1),
             ('snap-2', '/dev/vdz', 2), ('snap-none-a', '/dev/vdb', -1),
             ('snap-none-b', '/dev/vdc', -1)],
            [(d.snapshot_id, d.device_name, d.boot_index) for d in disks])

    def test_boot_index_that_is_no_index_is_none(self):
        image = backup_image([mapping('s-%d' % n, '/dev/vd%s' % dev, index)
                              for n, (dev, index) in enumerate([
                                  ('b', 'abc'), ('c', -5), ('d', [1])])])
        self.assertEqual([-1, -1, -1],
                         [d.boot_index for d in copies.disks_of(image)])

    def test_entries_without_a_snapshot_skipped(self):
        # Nova's image mapping puts non-volume entries (swap, ephemeral)
        # beside the snapshots; they have nothing to copy.
        image = backup_image([
            {'source_type': 'blank', 'destination_type': 'local',
             'device_name': '/dev/vdc', 'guest_format': 'swap',
             'boot_index': -1},
            {'source_type': 'snapshot', 'snapshot_id': None,
             'device_name': '/dev/vdd'},
            {'source_type': 'snapshot', 'snapshot_id': '',
             'device_name': '/dev/vde'},
            'not-a-mapping', 42, None,
            mapping(SNAP_A, '/dev/vda', 0),
        ])
        self.assertEqual([copies.Disk(SNAP_A, '/dev/vda', 0)],
                         copies.disks_of(image))

    def test_no_device_name_is_empty(self):
        image = backup_image([{'source_type': 'snapshot',
                               'snapshot_id': SNAP_A, 'boot_index': 0}])
        self.assertEqual([copies.Disk(SNAP_A, '', 0)],
                         copies.disks_of(image))

    def test_one_disk_per_snapshot(self):
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0),
                              mapping(SNAP_A, '/dev/vda', 0)])
        self.assertEqual(1, len(copies.disks_of(image)))

    def test_a_list_already_decoded_is_read(self):
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0)],
                             as_json=False)
        self.assertEqual([SNAP_A],
                         [d.snapshot_id for d in copies.disks_of(image)])

    def test_bad_or_missing_mapping_is_no_disk(self):
        for raw in ('[{"snapshot_id": ', 'not json', '{"snapshot_id": "x"}',
                    '"a string"', 'null', '', None, 7, {'snapshot_id': 'x'}):
            image = backup_image([], block_device_mapping=raw)
            self.assertEqual([], copies.disks_of(image), raw)
        self.assertEqual([], copies.disks_of({'id': IMAGE}))


class TestRecord(base.TestCase):

    disk = copies.Disk(SNAP_A, '/dev/vda', 0)

    def record(self, disk=None, project=PROJECT, **changes):
        args = dict(image_id=IMAGE, server=SERVER, backup_type='daily',
                    set_size=2, project=project)
        args.update(changes)
        return copies.record_of(disk or self.disk, **args)

    def test_record_names_the_set_and_the_disk(self):
        meta = self.record()
        self.assertEqual(
            {copies.IMAGE_KEY: IMAGE, copies.SERVER_KEY: SERVER,
             copies.BACKUP_TYPE_KEY: 'daily',
             copies.DEVICE_KEY: '/dev/vda', copies.BOOT_INDEX_KEY: '0',
             copies.SET_SIZE_KEY: '2'},
            {k: v for k, v in meta.items() if k != copies.RECORD_KEY})
        # Cinder keeps metadata as strings.
        self.assertTrue(all(isinstance(v, str) for v in meta.values()))
        self.assertEqual(meta, self.record())

    def test_round_trip_matches(self):
        backup = {'id': 'b1', 'snapshot_id': SNAP_A,
                  'metadata': self.record()}
        self.assertIsNone(copies.record_refusal(backup, PROJECT))

    def test_snapshot_id_in_another_spelling_still_matches(self):
        backup = {'snapshot_id': SNAP_A.upper(), 'metadata': self.record()}
        self.assertIsNone(copies.record_refusal(backup, PROJECT))

    def test_every_edited_field_refused(self):
        for key in (copies.IMAGE_KEY, copies.SERVER_KEY,
                    copies.BACKUP_TYPE_KEY, copies.DEVICE_KEY,
                    copies.BOOT_INDEX_KEY, copies.SET_SIZE_KEY):
            meta = self.record()
            meta[key] = meta[key] + '9'
            why = copies.record_refusal(
                {'snapshot_id': SNAP_A, 'metadata': meta}, PROJECT)
            self.assertIsNotNone(why, key)
            self.assertIn(copies.RECORD_KEY, why)
            self.assertIn('does not match', why)

    def test_record_of_another_snapshot_refused(self):
        # A record copied from another backup onto this one.
        backup = {'snapshot_id': SNAP_B, 'metadata': self.record()}
        self.assertIn('does not match',
                      copies.record_refusal(backup, PROJECT))

    def test_other_project_refused(self):
        backup = {'snapshot_id': SNAP_A, 'metadata': self.record()}
        why = copies.record_refusal(backup, 'project-b')
        self.assertIn('project-b', why)
        self.assertNotEqual(self.record()[copies.RECORD_KEY],
                            self.record(project='project-b')[
                                copies.RECORD_KEY])

    def test_missing_snapshot_id_refused(self):
        for backup in ({'metadata': self.record()},
                       {'snapshot_id': None, 'metadata': self.record()},
                       {'snapshot_id': '', 'metadata': self.record()}):
            why = copies.record_refusal(backup, PROJECT)
            self.assertIn('names no volume snapshot', why)

    def test_no_record_refused(self):
        meta = self.record()
        del meta[copies.RECORD_KEY]
        no_image = self.record()
        del no_image[copies.IMAGE_KEY]
        for metadata in (meta, no_image, {}, None, 'text', ['x']):
            why = copies.record_refusal(
                {'snapshot_id': SNAP_A, 'metadata': metadata}, PROJECT)
            self.assertIn('not a copy the plugin made', why)
        self.assertIn('not a copy the plugin made',
                      copies.record_refusal({'snapshot_id': SNAP_A},
                                            PROJECT))


class TestMakeCopies(base.TestCase):

    def setUp(self):
        super().setUp()
        self.cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A,
                     'status': 'available'},
            SNAP_B: {'id': SNAP_B, 'volume_id': VOL_B,
                     'status': 'available'}})
        self.image = backup_image([mapping(SNAP_B, '/dev/vdb', None),
                                   mapping(SNAP_A, '/dev/vda', 0)])

    def copy(self, image=None):
        return copies.make_copies(self.cinder, image or self.image, PROJECT)

    def test_first_copies_are_full_and_recorded(self):
        result = self.copy()
        self.assertEqual(IMAGE, result.image_id)
        self.assertEqual([], result.failed)
        self.assertEqual(
            [{'device_name': '/dev/vda', 'snapshot_id': SNAP_A,
              'volume_id': VOL_A, 'backup_id': 'backup-1',
              'incremental': False},
             {'device_name': '/dev/vdb', 'snapshot_id': SNAP_B,
              'volume_id': VOL_B, 'backup_id': 'backup-2',
              'incremental': False}], result.started)
        # Each volume's backups were looked up, by the snapshot's volume:
        # for a copy already made (a retry), then for a parent.
        self.assertEqual([VOL_A, VOL_A, VOL_B, VOL_B], self.cinder.listed)
        disks = copies.disks_of(self.image)
        for created, disk in zip(self.cinder.created, disks):
            self.assertEqual(
                copies.record_of(disk, IMAGE, SERVER, 'daily', 2, PROJECT),
                created['metadata'])
            self.assertIn(disk.snapshot_id, created['description'])
            self.assertIn(IMAGE, created['description'])
            self.assertIn('nightly-db01', created['name'])

    def test_the_copy_as_cinder_shows_it_is_recognised(self):
        self.copy()
        for backup in self.cinder.backups:
            self.assertIsNone(copies.record_refusal(backup, PROJECT))
            self.assertIsNotNone(copies.record_refusal(backup, 'other'))

    def test_incremental_when_the_volume_has_an_available_backup(self):
        self.cinder.backups = [
            {'id': 'old-a', 'volume_id': VOL_A, 'status': 'available'},
            {'id': 'old-b', 'volume_id': VOL_B, 'status': 'error'}]
        result = self.copy()
        self.assertEqual({SNAP_A: True, SNAP_B: False},
                         {c['snapshot_id']: c['incremental']
                          for c in result.started})
        self.assertEqual({SNAP_A: True, SNAP_B: False},
                         {c['snapshot_id']: c['incremental']
                          for c in self.cinder.created})

    def test_full_when_the_volume_s_backups_are_not_available(self):
        self.cinder.backups = [
            {'id': 'b%d' % n, 'volume_id': VOL_A, 'status': status}
            for n, status in enumerate(('creating', 'error', 'deleting',
                                        'restoring'))]
        self.cinder.backups.append(
            {'id': 'other-volume', 'volume_id': VOL_B,
             'status': 'available'})
        result = self.copy()
        self.assertFalse(result.started[0]['incremental'])
        self.assertEqual(SNAP_A, result.started[0]['snapshot_id'])
        self.assertFalse(self.cinder.created[0]['incremental'])

    def test_incremental_without_parent_falls_back_to_full(self):
        # The available backup listed is rotated away before the create:
        # Cinder refuses the incremental; the copy is made full.
        self.cinder.backups = [{'id': 'old-a', 'volume_id': VOL_A,
                                'status': 'available'}]
        self.cinder.refusals[SNAP_A] = [refused(SNAP_A, NO_PARENT)]
        result = self.copy()
        self.assertEqual([], result.failed)
        started = {c['snapshot_id']: c for c in result.started}
        self.assertFalse(started[SNAP_A]['incremental'])
        asked = [(c['snapshot_id'], c['incremental'])
                 for c in self.cinder.created]
        self.assertEqual([(SNAP_A, True), (SNAP_A, False), (SNAP_B, False)],
                         asked)
        # The full copy carries the same record.
        self.assertEqual(self.cinder.created[0]['metadata'],
                         self.cinder.created[1]['metadata'])

    def test_full_copy_refused_is_not_retried(self):
        self.cinder.refusals[SNAP_A] = [refused(SNAP_A, NO_PARENT)]
        result = self.copy()
        self.assertEqual([SNAP_A], [c['snapshot_id'] for c in result.failed])
        self.assertEqual(1, len([c for c in self.cinder.created
                                 if c['snapshot_id'] == SNAP_A]))

    def test_other_refusal_of_an_incremental_is_not_retried(self):
        self.cinder.backups = [{'id': 'old-a', 'volume_id': VOL_A,
                                'status': 'available'}]
        self.cinder.refusals[SNAP_A] = [refused(SNAP_A, 'BackupLimitExceeded'
                                                ': Maximum number of backups '
                                                'allowed (10) exceeded')]
        result = self.copy()
        self.assertEqual(1, len(result.failed))
        self.assertIn('Maximum number of backups', result.failed[0]['reason'])
        self.assertEqual([(SNAP_A, True)],
                         [(c['snapshot_id'], c['incremental'])
                          for c in self.cinder.created
                          if c['snapshot_id'] == SNAP_A])

    def test_fallback_refused_too_is_named(self):
        self.cinder.backups = [{'id': 'old-a', 'volume_id': VOL_A,
                                'status': 'available'}]
        self.cinder.refusals[SNAP_A] = [
            refused(SNAP_A, NO_PARENT),
            exception.CinderUnavailable(operation='backup',
                                        snapshot_id=SNAP_A,
                                        reason='connection refused')]
        result = self.copy()
        self.assertEqual([SNAP_A], [c['snapshot_id'] for c in result.failed])
        self.assertIn('connection refused', result.failed[0]['reason'])
        self.assertEqual([SNAP_B], [c['snapshot_id'] for c in result.started])

    def test_cinder_failure_named_and_other_disks_still_copied(self):
        self.cinder.refusals[SNAP_A] = [exception.CinderForbidden(
            operation='backup', snapshot_id=SNAP_A,
            reason='Policy doesn\'t allow backup:create')]
        result = self.copy()
        self.assertEqual(
            [{'device_name': '/dev/vda', 'snapshot_id': SNAP_A,
              'reason': result.failed[0]['reason']}], result.failed)
        self.assertIn(SNAP_A, result.failed[0]['reason'])
        self.assertIn('backup:create', result.failed[0]['reason'])
        self.assertEqual([SNAP_B], [c['snapshot_id'] for c in result.started])

    def test_listing_failure_named_and_other_disks_still_copied(self):
        self.cinder.list_errors[VOL_A] = exception.CinderError(
            operation='list', resource='backups', reason='HTTP 500')
        result = self.copy()
        self.assertEqual([SNAP_A], [c['snapshot_id'] for c in result.failed])
        self.assertIn('HTTP 500', result.failed[0]['reason'])
        self.assertEqual([SNAP_B], [c['snapshot_id'] for c in result.started])
        self.assertNotIn(SNAP_A, [c['snapshot_id']
                                  for c in self.cinder.created])

    def test_snapshot_not_found_named(self):
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0),
                              mapping(SNAP_C, '/dev/vdc', 2)])
        result = self.copy(image)
        self.assertEqual(1, len(result.failed))
        failed = result.failed[0]
        self.assertEqual(('/dev/vdc', SNAP_C),
                         (failed['device_name'], failed['snapshot_id']))
        self.assertIn(SNAP_C, failed['reason'])
        self.assertIn('does not show the snapshot', failed['reason'])
        self.assertEqual([SNAP_A], [c['snapshot_id'] for c in result.started])
        self.assertEqual([SNAP_A], [c['snapshot_id']
                                    for c in self.cinder.created])

    def test_snapshot_without_volume_named(self):
        self.cinder.snapshots[SNAP_A] = {'id': SNAP_A, 'volume_id': None}
        result = self.copy()
        self.assertEqual([SNAP_A], [c['snapshot_id'] for c in result.failed])
        self.assertEqual([SNAP_B], [c['snapshot_id'] for c in result.started])

    def test_image_without_snapshots_asks_nothing(self):
        result = self.copy(backup_image([]))
        self.assertEqual(([], []), (result.started, result.failed))
        self.assertEqual(([], []), (self.cinder.created, self.cinder.listed))

    def test_long_name_cut_to_cinder_s_limit(self):
        result = self.copy(dict(self.image, name='n' * 300))
        self.assertEqual(2, len(result.started))
        self.assertEqual([255, 255],
                         [len(c['name']) for c in self.cinder.created])

    def test_result_reported(self):
        self.cinder.backups = [{'id': 'old-a', 'volume_id': VOL_A,
                                'status': 'available'}]
        self.cinder.refusals[SNAP_B] = [refused(SNAP_B, 'quota exceeded')]
        result = self.copy()
        data = result.to_dict()
        self.assertEqual(IMAGE, data['image_id'])
        self.assertEqual(result.started, data['started'])
        self.assertEqual(result.failed, data['failed'])
        json.dumps(data)
        text = result.describe()
        self.assertIn('copies of backup %s: 1 requested, 1 failed' % IMAGE,
                      text)
        self.assertIn('/dev/vda: incremental backup backup-1 of volume '
                      'snapshot %s' % SNAP_A, text)
        self.assertIn('/dev/vdb: NOT copied (volume snapshot %s)' % SNAP_B,
                      text)
        self.assertIn('quota exceeded', text)

    def test_describe_names_a_disk_without_device(self):
        result = copies.CopyResult(IMAGE, started=[
            {'device_name': '', 'snapshot_id': SNAP_A, 'volume_id': VOL_A,
             'backup_id': 'b1', 'incremental': False}])
        self.assertIn('(no device): full backup b1', result.describe())


class TestRetriedBackup(base.TestCase):
    """A retried createBackup converges on its copies: none made twice."""

    def setUp(self):
        super().setUp()
        self.cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A,
                     'status': 'available'},
            SNAP_B: {'id': SNAP_B, 'volume_id': VOL_B,
                     'status': 'available'}})
        self.image = backup_image([mapping(SNAP_B, '/dev/vdb', None),
                                   mapping(SNAP_A, '/dev/vda', 0)])

    def test_second_run_reports_the_first_copies(self):
        first = copies.make_copies(self.cinder, self.image, PROJECT)
        second = copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual(2, len(self.cinder.created))
        self.assertEqual(first.started, second.started)

    def test_a_failed_copy_is_made_again(self):
        copies.make_copies(self.cinder, self.image, PROJECT)
        for backup in self.cinder.backups:
            backup['status'] = 'error'
        again = copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual(4, len(self.cinder.created))
        self.assertEqual(['backup-3', 'backup-4'],
                         [c['backup_id'] for c in again.started])

    def test_a_forged_copy_is_not_taken_for_one(self):
        copies.make_copies(self.cinder, self.image, PROJECT)
        for backup in self.cinder.backups:
            backup['metadata'][copies.DEVICE_KEY] = '/dev/sdz'
        copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual(4, len(self.cinder.created))

    def test_failures_keep_their_errors(self):
        unreachable = exception.CinderUnavailable(
            operation='backup', snapshot_id=SNAP_A, reason='reset')
        self.cinder.refusals[SNAP_A] = [unreachable]
        result = copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual([unreachable], result.errors)
        self.assertNotIn('errors', result.to_dict())

    def test_image_without_server_or_owner_is_not_copied(self):
        image = dict(self.image)
        del image['instance_uuid']
        result = copies.make_copies(self.cinder, image, PROJECT)
        self.assertEqual([], self.cinder.created)
        self.assertEqual(2, len(result.failed))
        self.assertIn('instance_uuid', result.failed[0]['reason'])
        result = copies.make_copies(self.cinder, self.image, '')
        self.assertEqual([], self.cinder.created)
        self.assertEqual(2, len(result.errors))


class TestRotationWaitsForCopies(base.TestCase):
    """A backup whose snapshots are being copied is not rotated."""

    def test_backing_up_snapshots_named(self):
        cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'status': 'backing-up'},
            SNAP_B: {'id': SNAP_B, 'status': 'available'}})
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0),
                              mapping(SNAP_B, '/dev/vdb', None)])
        self.assertEqual([SNAP_A], rotation.being_copied(cinder, image))

    def test_unreadable_or_absent_snapshot_not_counted(self):
        class Failing(FakeCinder):
            def get_snapshot(self, snapshot_id):
                raise exception.CinderUnavailable(
                    operation='read', snapshot_id=snapshot_id, reason='x')
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0)])
        self.assertEqual([], rotation.being_copied(Failing(), image))
        self.assertEqual([], rotation.being_copied(FakeCinder(), image))
        self.assertEqual([], rotation.being_copied(object(), image))


class TestWaitForSnapshots(base.TestCase):
    """A copy waits for its snapshot to be available, within a bound."""

    def setUp(self):
        super().setUp()
        self.now = [0.0]
        self.cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A, 'status': 'creating'}})
        self.image = backup_image([mapping(SNAP_A, '/dev/vda', 0)])

    def wait(self, seconds, ready_after=None):
        def sleep(delay):
            self.now[0] += delay
            if ready_after is not None and self.now[0] >= ready_after:
                self.cinder.snapshots[SNAP_A]['status'] = 'available'
        return copies.Wait(seconds, clock=lambda: self.now[0], sleep=sleep)

    def test_creating_then_available_is_copied(self):
        result = copies.make_copies(self.cinder, self.image, PROJECT,
                                    self.wait(30, ready_after=3))
        self.assertEqual([], result.failed)
        self.assertEqual(1, len(self.cinder.created))
        self.assertEqual(3.0, self.now[0])

    def test_still_creating_at_the_bound_names_the_option(self):
        result = copies.make_copies(self.cinder, self.image, PROJECT,
                                    self.wait(5))
        self.assertEqual([], self.cinder.created)
        self.assertIn('backup_copies_wait', result.failed[0]['reason'])
        self.assertIn('still creating after 5 s', result.failed[0]['reason'])
        self.assertEqual(5.0, self.now[0])

    def test_other_state_is_not_waited_for(self):
        self.cinder.snapshots[SNAP_A]['status'] = 'error'
        result = copies.make_copies(self.cinder, self.image, PROJECT,
                                    self.wait(30))
        self.assertEqual(0.0, self.now[0])
        self.assertIn('the snapshot is error', result.failed[0]['reason'])


def _backup(backup_id, created_at, incremental, status='available',
            volume_id=VOL_A):
    return {'id': backup_id, 'volume_id': volume_id, 'status': status,
            'created_at': created_at, 'is_incremental': incremental}


def _chain(*kinds, volume_id=VOL_A, prefix='b'):
    """Available backups of one volume, one a minute, ``F`` or ``I``."""
    return [_backup('%s%d' % (prefix, n), '2024-05-01T10:%02d:00' % n,
                    kind == 'I', volume_id=volume_id)
            for n, kind in enumerate(kinds)]


class TestChainLength(base.TestCase):

    def test_no_backup_is_no_chain(self):
        self.assertEqual(0, copies.chain_length([]))

    def test_newest_full_is_no_chain(self):
        self.assertEqual(0, copies.chain_length(_chain('F', 'I', 'I', 'F')))

    def test_incrementals_since_the_newest_full(self):
        self.assertEqual(3, copies.chain_length(
            _chain('F', 'I', 'F', 'I', 'I', 'I')))

    def test_incrementals_without_a_full_are_all_counted(self):
        self.assertEqual(2, copies.chain_length(_chain('I', 'I')))

    def test_time_order_not_list_order(self):
        backups = _chain('F', 'I', 'I', 'F', 'I')
        self.assertEqual(1, copies.chain_length(list(reversed(backups))))
        self.assertEqual(1, copies.chain_length(
            [backups[i] for i in (4, 0, 2, 3, 1)]))

    def test_only_available_backups_count(self):
        backups = _chain('F', 'I', 'I')
        # A full copy that failed or is still being made is no parent.
        backups.append(_backup('full-error', '2024-05-01T11:00:00', False,
                               status='error'))
        backups.append(_backup('full-creating', '2024-05-01T11:01:00',
                               False, status='creating'))
        # Nor is an incremental that is not available.
        backups.append(_backup('inc-error', '2024-05-01T11:02:00', True,
                               status='error'))
        self.assertEqual(2, copies.chain_length(backups))

    def test_missing_created_at_is_oldest(self):
        backups = _chain('I', 'I')
        backups.append({'id': 'undated', 'volume_id': VOL_A,
                        'status': 'available', 'is_incremental': False})
        self.assertEqual(2, copies.chain_length(backups))


class TestBaseOf(base.TestCase):

    def test_a_full_backup_is_its_own_base(self):
        [full] = _chain('F')
        self.assertIs(full, copies.base_of([full], full))

    def test_the_newest_older_available_full_one(self):
        backups = _chain('F', 'I', 'F', 'I', 'I', 'F')
        self.assertEqual('b2', copies.base_of(backups, backups[4])['id'])
        self.assertEqual('b0', copies.base_of(backups, backups[1])['id'])

    def test_none_when_no_full_one_is_left(self):
        backups = _chain('F', 'I', 'I')
        backups[0]['status'] = 'error'
        self.assertIsNone(copies.base_of(backups, backups[2]))
        self.assertIsNone(copies.base_of(backups[1:], backups[1]))

    def test_another_volume_s_full_backup_is_no_base(self):
        other = _chain('F', volume_id=VOL_B, prefix='o')
        mine = _backup('i', '2024-05-01T11:00:00', True)
        self.assertIsNone(copies.base_of(other + [mine], mine))


class _ChainCinder(FakeCinder):
    """Copies that become available at once, as Cinder dates them."""

    def create_backup(self, volume_id, snapshot_id, incremental, name,
                      description, metadata):
        backup = super().create_backup(volume_id, snapshot_id, incremental,
                                       name, description, metadata)
        stored = self.backups[-1]
        stored.update(status='available', is_incremental=incremental,
                      created_at='2024-05-01T12:%02d:00' % len(self.created))
        return backup


class TestCopyChain(base.TestCase):
    """``chain``: incremental copies in a row before a full one."""

    def setUp(self):
        super().setUp()
        self.cinder = _ChainCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A,
                     'status': 'available'},
            SNAP_B: {'id': SNAP_B, 'volume_id': VOL_B,
                     'status': 'available'}})
        self.image = backup_image([mapping(SNAP_A, '/dev/vda', 0)])

    def copy(self, chain, image=None):
        result = copies.make_copies(self.cinder, image or self.image,
                                    PROJECT, chain=chain)
        self.assertEqual([], result.failed)
        return {c['snapshot_id']: c['incremental'] for c in result.started}

    def test_below_the_bound_incremental(self):
        self.cinder.backups = _chain('F', 'I')
        self.assertEqual({SNAP_A: True}, self.copy(2))
        self.assertTrue(self.cinder.created[0]['incremental'])

    def test_at_the_bound_full(self):
        self.cinder.backups = _chain('F', 'I', 'I')
        self.assertEqual({SNAP_A: False}, self.copy(2))
        self.assertFalse(self.cinder.created[0]['incremental'])

    def test_chain_zero_every_copy_full(self):
        self.cinder.backups = _chain('F')
        self.assertEqual({SNAP_A: False}, self.copy(0))
        self.assertFalse(self.cinder.created[0]['incremental'])

    def test_no_bound(self):
        self.cinder.backups = _chain('F', *('I' * 50))
        self.assertEqual({SNAP_A: True}, self.copy(None))
        self.assertEqual({SNAP_A: True},
                         {c['snapshot_id']: c['incremental'] for c in
                          copies.make_copies(self.cinder, backup_image(
                              [mapping(SNAP_A, '/dev/vda', 0)],
                              id='another-image'), PROJECT).started})

    def test_first_copy_full_whatever_the_bound(self):
        for chain in (None, 0, 1, 6):
            self.cinder.backups = []
            self.assertEqual({SNAP_A: False}, self.copy(chain), chain)

    def test_bound_counted_per_volume(self):
        self.cinder.backups = (_chain('F', 'I', 'I', volume_id=VOL_A,
                                      prefix='a') +
                               _chain('F', 'I', volume_id=VOL_B,
                                      prefix='b'))
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0),
                              mapping(SNAP_B, '/dev/vdb', 1)])
        self.assertEqual({SNAP_A: False, SNAP_B: True},
                         self.copy(2, image))

    def test_failed_full_copy_does_not_reset_the_chain(self):
        self.cinder.backups = _chain('F', 'I', 'I')
        self.cinder.backups.append(_backup('full-error',
                                           '2024-05-01T11:00:00', False,
                                           status='error'))
        self.assertEqual({SNAP_A: False}, self.copy(2))

    def test_a_chain_without_its_full_base_is_not_extended(self):
        self.cinder.backups = _chain('F', 'I', 'I')[1:]
        with self.assertLogs(copies.LOG.logger, 'WARNING') as logs:
            self.assertEqual({SNAP_A: False}, self.copy(6))
        self.assertIn('no full backup left', logs.output[0])
        self.assertFalse(self.cinder.created[0]['incremental'])

    def test_successive_backups_full_after_n_incrementals(self):
        kinds = []
        for n in range(8):
            image = backup_image([mapping(SNAP_A, '/dev/vda', 0)],
                                 id='image-%d' % n)
            kinds.append('I' if self.copy(2, image)[SNAP_A] else 'F')
        self.assertEqual('FIIFIIFI', ''.join(kinds))
        self.assertEqual(8, len(self.cinder.created))


class TestRetriedWhileBackingUp(base.TestCase):
    """A retry while the first run's copy holds the snapshot backing-up."""

    def setUp(self):
        super().setUp()
        self.cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A,
                     'status': 'available'}})
        self.image = backup_image([mapping(SNAP_A, '/dev/vda', 0)])

    def test_retry_reports_the_copy_in_progress(self):
        first = copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual([], first.failed)
        # cinder-backup is copying the snapshot for the first run.
        self.cinder.snapshots[SNAP_A]['status'] = 'backing-up'
        second = copies.make_copies(self.cinder, self.image, PROJECT,
                                    copies.Wait(0))
        self.assertEqual([], second.failed)
        self.assertEqual([], second.errors)
        self.assertEqual(first.started, second.started)
        self.assertEqual('backup-1', second.started[0]['backup_id'])
        # No second copy asked for.
        self.assertEqual(1, len(self.cinder.created))

    def test_retry_reports_whether_the_first_copy_is_incremental(self):
        self.cinder.backups = [{'id': 'old-a', 'volume_id': VOL_A,
                                'status': 'available'}]
        first = copies.make_copies(self.cinder, self.image, PROJECT)
        self.cinder.backups[-1]['is_incremental'] = True
        self.cinder.snapshots[SNAP_A]['status'] = 'backing-up'
        second = copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual([True], [c['incremental'] for c in first.started])
        self.assertEqual([True], [c['incremental'] for c in second.started])
        self.assertEqual(1, len(self.cinder.created))

    def test_another_image_s_copy_is_not_reported_as_this_one_s(self):
        copies.make_copies(self.cinder, self.image, PROJECT)
        self.cinder.snapshots[SNAP_A]['status'] = 'backing-up'
        other = backup_image([mapping(SNAP_A, '/dev/vda', 0)],
                             id='another-image')
        result = copies.make_copies(self.cinder, other, PROJECT,
                                    copies.Wait(0))
        self.assertEqual([], result.started)
        self.assertIn('the snapshot is backing-up, not available',
                      result.failed[0]['reason'])
        self.assertEqual(1, len(self.cinder.created))

    def test_unrecorded_backup_in_progress_is_no_copy_of_ours(self):
        # A user's own backup of the snapshot holds it backing-up: it is
        # not this image's copy, and none can be asked for now.
        self.cinder.backups = [{'id': 'users', 'volume_id': VOL_A,
                                'snapshot_id': SNAP_A, 'status': 'creating',
                                'metadata': {}}]
        self.cinder.snapshots[SNAP_A]['status'] = 'backing-up'
        result = copies.make_copies(self.cinder, self.image, PROJECT,
                                    copies.Wait(0))
        self.assertEqual([], result.started)
        self.assertEqual([SNAP_A], [f['snapshot_id'] for f in result.failed])
        self.assertIn('backing-up', result.failed[0]['reason'])
        self.assertEqual([], self.cinder.created)

    def test_failed_first_copy_is_not_reported(self):
        copies.make_copies(self.cinder, self.image, PROJECT)
        self.cinder.backups[-1]['status'] = 'error'
        again = copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual(['backup-2'],
                         [c['backup_id'] for c in again.started])
        self.assertEqual(2, len(self.cinder.created))


class TestParentIsOlderData(base.TestCase):
    """Incremental only on an available backup of older data."""

    SNAP_TIME = '2024-05-01T10:00:00.000000'

    def setUp(self):
        super().setUp()
        self.cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A,
                     'status': 'available', 'created_at': self.SNAP_TIME}})
        self.image = backup_image([mapping(SNAP_A, '/dev/vda', 0)])

    def incremental(self, *backups):
        self.cinder.backups = [dict(b, volume_id=VOL_A) for b in backups]
        result = copies.make_copies(self.cinder, self.image, PROJECT)
        self.assertEqual([], result.failed)
        [created] = self.cinder.created
        [started] = result.started
        self.assertEqual(created['incremental'], started['incremental'])
        return created['incremental']

    def test_older_data_is_a_parent(self):
        self.assertTrue(self.incremental(
            {'id': 'old', 'status': 'available',
             'data_timestamp': '2024-05-01T09:00:00.000000',
             'created_at': '2024-05-01T09:00:00.000000'}))

    def test_newer_data_alone_is_no_parent(self):
        self.assertFalse(self.incremental(
            {'id': 'newer', 'status': 'available',
             'data_timestamp': '2024-05-01T11:00:00.000000',
             'created_at': '2024-05-01T11:00:00.000000'}))

    def test_same_time_is_no_parent(self):
        self.assertFalse(self.incremental(
            {'id': 'same', 'status': 'available',
             'data_timestamp': self.SNAP_TIME}))

    def test_data_time_not_request_time_decides(self):
        # Requested after the snapshot, of data before it: a parent.
        self.assertTrue(self.incremental(
            {'id': 'late-copy-of-old-data', 'status': 'available',
             'data_timestamp': '2024-05-01T08:00:00.000000',
             'created_at': '2024-05-01T12:00:00.000000'}))
        # Requested before the snapshot, of data after it: none.
        self.cinder.created = []
        self.assertFalse(self.incremental(
            {'id': 'odd', 'status': 'available',
             'data_timestamp': '2024-05-01T12:00:00.000000',
             'created_at': '2024-05-01T08:00:00.000000'}))

    def test_without_data_timestamp_created_at_decides(self):
        self.assertFalse(self.incremental(
            {'id': 'newer', 'status': 'available',
             'created_at': '2024-05-01T11:00:00.000000'}))
        self.cinder.created = []
        self.assertTrue(self.incremental(
            {'id': 'older', 'status': 'available',
             'created_at': '2024-05-01T09:00:00.000000'}))

    def test_newer_available_beside_older_not_available_is_full(self):
        self.assertFalse(self.incremental(
            {'id': 'newer', 'status': 'available',
             'data_timestamp': '2024-05-01T11:00:00.000000'},
            {'id': 'older-error', 'status': 'error',
             'data_timestamp': '2024-05-01T09:00:00.000000'}))

    def test_one_older_among_newer_is_enough(self):
        self.assertTrue(self.incremental(
            {'id': 'newer', 'status': 'available',
             'data_timestamp': '2024-05-01T11:00:00.000000'},
            {'id': 'older', 'status': 'available',
             'data_timestamp': '2024-05-01T09:00:00.000000'}))

    def test_snapshot_without_a_time_takes_any_available_backup(self):
        del self.cinder.snapshots[SNAP_A]['created_at']
        self.assertTrue(self.incremental(
            {'id': 'newer', 'status': 'available',
             'data_timestamp': '2024-05-01T11:00:00.000000'}))


class TestDataTime(base.TestCase):

    def test_data_timestamp_first(self):
        self.assertEqual('2024-05-01T09:00:00', copies.data_time(
            {'data_timestamp': '2024-05-01T09:00:00',
             'created_at': '2024-05-01T12:00:00'}))

    def test_created_at_without_data_timestamp(self):
        for backup in ({'created_at': '2024-05-01T12:00:00'},
                       {'data_timestamp': None,
                        'created_at': '2024-05-01T12:00:00'},
                       {'data_timestamp': '',
                        'created_at': '2024-05-01T12:00:00'}):
            self.assertEqual('2024-05-01T12:00:00',
                             copies.data_time(backup), backup)

    def test_neither_is_empty_text(self):
        for backup in ({}, {'data_timestamp': None, 'created_at': None}):
            self.assertEqual('', copies.data_time(backup))

    def test_always_text(self):
        self.assertEqual('1714557600',
                         copies.data_time({'data_timestamp': 1714557600}))


class TestRecordWithOtherTypes(base.TestCase):
    """Cinder metadata that is not text: a reason or None, never raised."""

    def backup(self, **meta_changes):
        meta = copies.record_of(copies.Disk(SNAP_A, '/dev/vda', 0), IMAGE,
                                SERVER, 'daily', 1, PROJECT)
        meta.update(meta_changes)
        return {'id': 'b1', 'snapshot_id': SNAP_A, 'metadata': meta}

    def test_int_boot_index_is_read_as_its_text(self):
        # 0 and '0' are the same field: the record still matches.
        self.assertIsNone(copies.record_refusal(
            self.backup(**{copies.BOOT_INDEX_KEY: 0}), PROJECT))
        self.assertIsNone(copies.record_refusal(
            self.backup(**{copies.SET_SIZE_KEY: 1}), PROJECT))

    def test_none_server_refused_not_raised(self):
        why = copies.record_refusal(
            self.backup(**{copies.SERVER_KEY: None}), PROJECT)
        self.assertIn('does not match', why)

    def test_other_types_in_every_field_refused_not_raised(self):
        for key in (copies.SERVER_KEY, copies.BACKUP_TYPE_KEY,
                    copies.DEVICE_KEY, copies.BOOT_INDEX_KEY,
                    copies.SET_SIZE_KEY):
            for value in (None, 7, 2.5, ['x'], {'a': 1}, True):
                why = copies.record_refusal(self.backup(**{key: value}),
                                            PROJECT)
                self.assertIn('does not match', why, (key, value))

    def test_record_key_or_image_not_text_refused_not_raised(self):
        self.assertIn('does not match', copies.record_refusal(
            self.backup(**{copies.RECORD_KEY: 12345}), PROJECT))
        self.assertIn('does not match', copies.record_refusal(
            self.backup(**{copies.IMAGE_KEY: 42}), PROJECT))

    def test_snapshot_id_not_text_refused_not_raised(self):
        backup = self.backup()
        backup['snapshot_id'] = 1234
        self.assertIn('does not match',
                      copies.record_refusal(backup, PROJECT))

    def test_listed_backup_with_other_types_does_not_stop_a_copy(self):
        odd = self.backup(**{copies.BOOT_INDEX_KEY: 0,
                             copies.SERVER_KEY: None})
        odd.update(volume_id=VOL_A, status='available')
        cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A,
                     'status': 'available'}}, backups=[odd])
        result = copies.make_copies(
            cinder, backup_image([mapping(SNAP_A, '/dev/vda', 0)]),
            PROJECT)
        self.assertEqual([], result.failed)
        # The odd backup is not this image's copy (its record does not
        # match): a copy is made, incremental on it.
        self.assertEqual([(SNAP_A, True)],
                         [(c['snapshot_id'], c['incremental'])
                          for c in cinder.created])


class TestParentOf(base.TestCase):
    """The parent Cinder chooses: newest older data, whatever its state."""

    def backup(self, ident, when, status='available'):
        return {'id': ident, 'data_timestamp': when, 'status': status}

    def test_newest_older_whatever_its_status(self):
        backups = [self.backup('a', '2024-05-01T00:00:00'),
                   self.backup('b', '2024-05-02T00:00:00', 'error'),
                   self.backup('c', '2024-05-04T00:00:00')]
        self.assertEqual('b', copies.parent_of(
            backups, '2024-05-03T00:00:00')['id'])
        self.assertIsNone(copies.parent_of(backups, '2024-04-01T00:00:00'))
        self.assertEqual('c', copies.parent_of(backups, '')['id'])

    def test_failed_parent_means_a_full_copy(self):
        cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A, 'status': 'available',
                     'created_at': '2024-05-03T00:00:00'}},
            backups=[{'id': 'old', 'volume_id': VOL_A, 'status': 'available',
                      'data_timestamp': '2024-05-01T00:00:00'},
                     {'id': 'failed', 'volume_id': VOL_A, 'status': 'error',
                      'data_timestamp': '2024-05-02T00:00:00'}])
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0)])
        result = copies.make_copies(cinder, image, PROJECT)
        self.assertEqual([False], [c['incremental'] for c in cinder.created])
        self.assertEqual([], result.failed)

    def test_busy_parent_refusal_falls_back_to_full(self):
        cinder = FakeCinder(snapshots={
            SNAP_A: {'id': SNAP_A, 'volume_id': VOL_A,
                     'status': 'available'}},
            backups=[{'id': 'old', 'volume_id': VOL_A,
                      'status': 'available'}])
        cinder.refusals[SNAP_A] = [refused(
            SNAP_A, 'Invalid backup: The parent backup must be available '
            'for incremental backup.')]
        image = backup_image([mapping(SNAP_A, '/dev/vda', 0)])
        result = copies.make_copies(cinder, image, PROJECT)
        self.assertEqual([True, False],
                         [c['incremental'] for c in cinder.created])
        self.assertEqual([False], [c['incremental'] for c in result.started])
