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

"""BackupService: a marked snapshot, then the rotation (glanceclient faked)."""

import json
from unittest import mock
import uuid

from glanceclient import exc as gexc

from nova_snapshot_ext.backup import copies
from nova_snapshot_ext.backup import copy_retention
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.backup import service as backup_mod
from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import request
from nova_snapshot_ext.snapshot import service
from tests import base
from tests.unit.backup import test_copies
from tests.unit import fake_glanceclient


class BackupServiceTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(
            fake_glanceclient.FakeGlanceFixture()).glance
        self.glance = glance_mod.GlanceClient(session=mock.Mock())
        self.requests = []

    def make_service(self):
        drv = driver_mod.load_driver(self.conf, 'libvirt')
        snapshots = service.SnapshotService(self.conf, driver=drv,
                                            glance=self.glance)
        self.fake.owner = 'project-x'
        return backup_mod.BackupService(snapshots)

    def make_request(self, tag, backup_type='daily', server=None):
        data = base.sample_request_dict()
        if server:
            data['server']['uuid'] = server
        for bdm in data['block_device_mappings']:
            if bdm.get('snapshot_id'):
                bdm['snapshot_id'] = str(uuid.uuid5(
                    uuid.NAMESPACE_URL, '%s-%s' % (bdm['snapshot_id'], tag)))
            bdm.pop('instance_uuid', None)
        data['backup_type'] = backup_type
        return request.SnapshotRequest.from_dict(data)


class TestBackupService(BackupServiceTestCase):

    def test_backup_is_marked_as_nova_marks_a_backup(self):
        svc = self.make_service()
        req = self.make_request(1)
        result = svc.backup(req, 2)
        image = self.fake.images[result.snapshot.image_id]
        self.assertEqual('active', image['status'])
        self.assertEqual('backup', image['image_type'])
        self.assertEqual('daily', image['backup_type'])
        self.assertEqual(req.server.uuid, image['instance_uuid'])
        self.assertIsNone(mark.refusal(image, req.server.uuid, 'daily',
                                       'project-x'))
        self.assertEqual([result.snapshot.image_id], result.rotation.kept)

    def test_four_backups_rotation_two_keep_two_newest(self):
        svc = self.make_service()
        ids = [svc.backup(self.make_request(n), 2).snapshot.image_id
               for n in range(4)]
        other = svc.backup(self.make_request(9, server=str(uuid.uuid4())),
                           0).snapshot.image_id
        weekly = svc.backup(self.make_request(8, backup_type='weekly'),
                            0).snapshot.image_id
        self.assertEqual({ids[2], ids[3], other, weekly},
                         set(self.fake.images))

    def test_retry_does_not_rotate_twice(self):
        svc = self.make_service()
        for n in range(3):
            svc.backup(self.make_request(n), 2)
        later = svc.backup(self.make_request(3), 3)
        before = set(self.fake.images)
        retried = svc.backup(self.make_request(1), 2)  # same request again
        self.assertTrue(retried.snapshot.reused)
        self.assertEqual([], retried.rotation.deleted)
        self.assertEqual(before, set(self.fake.images))
        self.assertIn(later.snapshot.image_id, retried.rotation.left)

    def test_backup_not_active_nothing_rotated(self):
        svc = self.make_service()
        for n in range(3):
            svc.backup(self.make_request(n), 3)
        before = set(self.fake.images)
        del self.fake.calls[:]
        self.fake.fail('upload', gexc.HTTPInternalServerError('boom'),
                       times=50)
        self.assertRaises(exception.ActivationFailed, svc.backup,
                          self.make_request(5), 0)
        self.assertEqual(before, set(self.fake.images))
        self.assertNotIn('list', self.fake.calls)

    def test_backup_needs_backup_type(self):
        svc = self.make_service()
        data = base.sample_request_dict()
        req = request.SnapshotRequest.from_dict(data)
        self.assertRaises(exception.InvalidRequest, svc.backup, req, 1)
        self.assertEqual({}, self.fake.images)

    def test_rotation_checked(self):
        svc = self.make_service()
        for bad in (-1, '2', True, None):
            self.assertRaises(exception.InvalidRequest, svc.backup,
                              self.make_request(1), bad)
        self.assertEqual({}, self.fake.images)

    def test_quota_without_room_for_the_marks_refused_before_create(self):
        self.flags(image_property_quota=5)
        svc = self.make_service()
        err = self.assertRaises(exception.PreflightError, svc.backup,
                                self.make_request(1), 1)
        self.assertIn('image_property_quota', err.format_message())
        self.assertEqual({}, self.fake.images)

    def test_marker_and_fingerprint_required(self):
        svc = self.make_service()
        record = svc.build_record(self.make_request(1))
        for key in (mark.MARKER_PROPERTY, identity.FINGERPRINT_PROPERTY,
                    'image_type', 'backup_type', 'instance_uuid'):
            self.assertIn(key, record.properties)
            self.assertNotIn(key, record.optional)

    def test_marker_names_the_id_of_each_attempts_image(self):
        # A fallback attempt creates its image under another id: the
        # marker it carries names that id, and recognising the image
        # later (a retry) still finds it the record's.
        svc = self.make_service()
        record = svc.build_record(self.make_request(1))
        fp = record.properties[identity.FINGERPRINT_PROPERTY]
        server, backup_type = (record.properties['instance_uuid'],
                               record.properties['backup_type'])
        other = str(uuid.uuid4())
        for image_id in (record.image_id, other):
            kwargs = record.create_kwargs('raw', 'bare', image_id=image_id)
            self.assertEqual(image_id, kwargs['id'])
            self.assertEqual(
                mark.marker_of(fp, server, backup_type, image_id),
                kwargs[mark.MARKER_PROPERTY])
            image = dict(kwargs, status='active', size=0)
            self.assertEqual([], identity.differences(image, record))
        self.assertNotEqual(
            record.create_kwargs('raw', 'bare')[mark.MARKER_PROPERTY],
            record.create_kwargs('raw', 'bare', image_id=other)[
                mark.MARKER_PROPERTY])

    def test_metadata_cannot_disguise_the_backup(self):
        svc = self.make_service()
        data = base.sample_request_dict()
        data['backup_type'] = 'daily'
        data['metadata'] = {'image_type': 'snapshot',
                            'instance_uuid': 'someone-else',
                            'backup_type': 'weekly', 'keep': 'me'}
        req = request.SnapshotRequest.from_dict(data)
        result = svc.backup(req, 1)
        image = self.fake.images[result.snapshot.image_id]
        self.assertEqual(('backup', 'daily', req.server.uuid, 'me'),
                         (image['image_type'], image['backup_type'],
                          image['instance_uuid'], image['keep']))
        self.assertIsNone(mark.refusal(image, req.server.uuid, 'daily',
                                       'project-x'))


class _Cinder(test_copies.FakeCinder):
    """Cinder for a backup: every snapshot shown, on its own volume."""

    def __init__(self):
        super().__init__()
        self.deleted = []

    def get_snapshot(self, snapshot_id):
        if snapshot_id in self.deleted:
            return None
        return {'id': snapshot_id, 'volume_id': 'vol-%s' % snapshot_id,
                'status': 'available'}

    def delete_snapshot(self, snapshot_id, owner):
        self.deleted.append(snapshot_id)
        return 'deleted'


class TestBackupCopies(BackupServiceTestCase):
    """``[snapshot_ext] backup_copies``: copies after the backup."""

    def test_copies_without_cinder_refused_before_anything_is_created(self):
        self.flags(backup_copies=True)
        svc = self.make_service()
        with mock.patch.object(svc.snapshots, 'register') as register:
            err = self.assertRaises(exception.ConfigurationError,
                                    svc.backup, self.make_request(1), 2)
        register.assert_not_called()
        self.assertEqual({}, self.fake.images)
        self.assertEqual(('snapshot_ext', 'backup_copies'),
                         (err.kwargs['group'], err.kwargs['option']))
        self.assertIn('[snapshot_ext] backup_copies', err.format_message())

    def test_copies_of_every_volume_snapshot_of_the_new_backup(self):
        self.flags(backup_copies=True)
        svc = self.make_service()
        cinder = _Cinder()
        result = svc.backup(self.make_request(1), 2, cinder=cinder)
        image = self.fake.images[result.snapshot.image_id]
        self.assertEqual('active', image['status'])
        self.assertIsInstance(result.copies, copies.CopyResult)
        self.assertEqual(result.snapshot.image_id, result.copies.image_id)
        self.assertEqual([], result.copies.failed)
        disks = copies.disks_of(image)
        self.assertEqual(2, len(disks))
        self.assertEqual([d.snapshot_id for d in disks],
                         [c['snapshot_id'] for c in result.copies.started])
        # Recorded for the image's owner, as a restore will check it.
        for backup in cinder.backups:
            self.assertIsNone(copies.record_refusal(backup, 'project-x'))
        self.assertEqual(
            image['instance_uuid'],
            cinder.backups[0]['metadata'][copies.SERVER_KEY])
        self.assertEqual([result.snapshot.image_id], result.rotation.kept)

    def test_copies_reported(self):
        self.flags(backup_copies=True)
        svc = self.make_service()
        result = svc.backup(self.make_request(1), 2, cinder=_Cinder())
        data = result.to_dict()
        self.assertEqual(result.copies.to_dict(), data['copies'])
        self.assertEqual(result.rotation.to_dict(), data['rotation'])
        text = result.describe()
        copies_text = result.copies.describe()
        self.assertIn(copies_text, text)
        # The snapshot, then its copies, then the rotation.
        self.assertLess(text.index(result.snapshot.describe()),
                        text.index(copies_text))
        self.assertLess(text.index(copies_text),
                        text.index(result.rotation.describe()))

    def test_failed_copy_named_backup_still_rotated(self):
        self.flags(backup_copies=True)
        svc = self.make_service()
        first = svc.backup(self.make_request(1), 1, cinder=_Cinder())
        cinder = _Cinder()
        req = self.make_request(2)
        refused = [b.snapshot_id for b in req.block_device_mappings
                   if b.snapshot_id][0]
        cinder.refusals[refused] = [exception.CinderError(
            operation='backup', snapshot_id=refused, reason='quota')]
        result = svc.backup(req, 1, cinder=cinder)
        self.assertEqual([refused],
                         [c['snapshot_id'] for c in result.copies.failed])
        self.assertEqual(1, len(result.copies.started))
        self.assertIn('NOT copied (volume snapshot %s)' % refused,
                      result.describe())
        self.assertEqual([first.snapshot.image_id],
                         result.rotation.deleted)

    def test_no_copies_when_off(self):
        svc = self.make_service()
        cinder = _Cinder()
        result = svc.backup(self.make_request(1), 2, cinder=cinder)
        self.assertIsNone(result.copies)
        self.assertIsNone(result.to_dict()['copies'])
        self.assertNotIn('copies of backup', result.describe())
        self.assertEqual([], cinder.created)
        self.assertEqual([], cinder.listed)


class _RetainingCinder(_Cinder):
    """Cinder for copies and their retention: deletes are seen at once."""

    def __init__(self):
        super().__init__()
        self.backups_deleted = []
        #: The day of the month Cinder dates a new copy.
        self.today = 20

    def create_backup(self, *args, **kwargs):
        backup = super().create_backup(*args, **kwargs)
        created_at = '2024-05-%02dT10:00:00' % self.today
        self.backups[-1].update(created_at=created_at, is_incremental=False)
        return dict(backup, created_at=created_at)

    def get_backup(self, backup_id):
        for backup in self.backups:
            if backup['id'] == backup_id:
                return dict(backup)
        return None

    def delete_backup(self, backup_id):
        self.backups_deleted.append(backup_id)
        self.backups = [b for b in self.backups if b['id'] != backup_id]
        return 'deleted'

    def copied(self):
        """cinder-backup done: every copy available; a day passes."""
        for backup in self.backups:
            if backup['status'] == 'creating':
                backup['status'] = 'available'
        self.today += 1


def _old_copy(backup_id, image_id, day, snapshot_id=None,
              volume_id=None, incremental=False):
    snapshot_id = snapshot_id or 'snap-%s' % backup_id
    meta = copies.record_of(copies.Disk(snapshot_id, '/dev/vda', 0),
                            image_id, test_copies.SERVER, 'daily', 1,
                            test_copies.PROJECT)
    return {'id': backup_id, 'snapshot_id': snapshot_id,
            'volume_id': volume_id or 'vol-%s' % snapshot_id,
            'metadata': meta, 'status': 'available',
            'created_at': '2024-05-%02dT10:00:00' % day,
            'is_incremental': incremental}


class TestBackupCopyRetention(BackupServiceTestCase):
    """``copy``: the copies with the options, then their retention."""

    def image(self):
        return test_copies.backup_image(
            [test_copies.mapping(test_copies.SNAP_A, '/dev/vda', 0)])

    def chain_of(self, incrementals):
        """A full backup and incrementals of SNAP_A's volume."""
        volume = 'vol-%s' % test_copies.SNAP_A
        return [_old_copy('old-%d' % n, 'image-%d' % n, 1 + n,
                          volume_id=volume, incremental=n > 0)
                for n in range(incrementals + 1)]

    def test_copy_made_incremental_below_the_chain_option(self):
        self.flags(backup_copies_chain=3)
        svc = self.make_service()
        cinder = _RetainingCinder()
        cinder.backups = self.chain_of(2)
        copied, kept = svc.copy(cinder, self.image())
        self.assertEqual([True], [c['incremental'] for c in copied.started])
        self.assertIsNone(kept)

    def test_copy_made_full_at_the_chain_option(self):
        self.flags(backup_copies_chain=3)
        svc = self.make_service()
        cinder = _RetainingCinder()
        cinder.backups = self.chain_of(3)
        copied, _kept = svc.copy(cinder, self.image())
        self.assertEqual([False], [c['incremental'] for c in copied.started])
        self.assertEqual([False], [c['incremental'] for c in cinder.created])

    def test_chain_zero_makes_every_copy_full(self):
        self.flags(backup_copies_chain=0)
        svc = self.make_service()
        cinder = _RetainingCinder()
        cinder.backups = self.chain_of(0)
        copied, _kept = svc.copy(cinder, self.image())
        self.assertEqual([False], [c['incremental'] for c in copied.started])

    def test_default_chain_is_six_incrementals(self):
        svc = self.make_service()
        for incrementals, expected in ((5, True), (6, False)):
            cinder = _RetainingCinder()
            cinder.backups = self.chain_of(incrementals)
            copied, _kept = svc.copy(cinder, self.image())
            self.assertEqual([expected],
                             [c['incremental'] for c in copied.started],
                             incrementals)

    def test_copy_waits_as_the_wait_option_says(self):
        self.flags(backup_copies_wait=1)
        svc = self.make_service()
        cinder = _RetainingCinder()
        cinder.get_snapshot = lambda snapshot_id: {
            'id': snapshot_id, 'volume_id': 'v', 'status': 'creating'}
        copied, _kept = svc.copy(cinder, self.image())
        self.assertEqual([], cinder.created)
        self.assertIn('still creating after 1 s', copied.failed[0]['reason'])

    def test_no_retention_lists_no_project_backups(self):
        svc = self.make_service()
        cinder = _RetainingCinder()
        cinder.backups = [_old_copy('old-%d' % n, 'image-%d' % n, n)
                          for n in (1, 2, 3)]
        copied, kept = svc.copy(cinder, self.image())
        self.assertIsNone(kept)
        self.assertEqual(1, len(copied.started))
        # Only the copied volume's backups were read; none deleted.
        self.assertNotIn(None, cinder.listed)
        self.assertEqual([], cinder.backups_deleted)

    def test_retention_follows_the_copies(self):
        self.flags(backup_copies_keep=1)
        svc = self.make_service()
        cinder = _RetainingCinder()
        cinder.backups = [_old_copy('old-%d' % n, 'image-%d' % n, n)
                          for n in (1, 2, 3)]
        copied, kept = svc.copy(cinder, self.image())
        self.assertEqual(1, len(copied.started))
        self.assertEqual((test_copies.SERVER, 'daily'),
                         (kept.server, kept.backup_type))
        # The new set is being copied: the newest restorable one stays.
        self.assertEqual([test_copies.IMAGE, 'image-3'], kept.kept)
        self.assertEqual(['old-2', 'old-1'], kept.deleted)
        self.assertEqual(['old-2', 'old-1'], cinder.backups_deleted)
        # The project's backups were listed after the copy was asked.
        self.assertIsNone(cinder.listed[-1])

    def test_retention_listing_failure_named_after_the_copies(self):
        self.flags(backup_copies_keep=1)
        svc = self.make_service()
        cinder = _RetainingCinder()
        cinder.list_errors[None] = exception.CinderUnavailable(
            operation='list', resource='backups', reason='reset')
        copies, kept = svc.copy(cinder, self.image())
        self.assertEqual(1, len(copies.started))
        self.assertIn('could not be reached', kept.error)
        self.assertEqual(1, len(cinder.created))
        self.assertEqual([], cinder.backups_deleted)

    def test_backups_delete_the_copies_past_retention(self):
        self.flags(backup_copies=True, backup_copies_keep=1)
        svc = self.make_service()
        cinder = _RetainingCinder()
        first = svc.backup(self.make_request(1), 5, cinder=cinder)
        first_copies = [c['backup_id'] for c in first.copies.started]
        self.assertEqual(2, len(first_copies))
        self.assertEqual([first.snapshot.image_id], first.retention.kept)
        cinder.copied()
        second = svc.backup(self.make_request(2), 5, cinder=cinder)
        # The first set is still the newest restorable one.
        self.assertEqual([second.snapshot.image_id, first.snapshot.image_id],
                         second.retention.kept)
        self.assertEqual([], second.retention.deleted)
        cinder.copied()
        third = svc.backup(self.make_request(3), 5, cinder=cinder)
        self.assertEqual([third.snapshot.image_id, second.snapshot.image_id],
                         third.retention.kept)
        self.assertEqual(set(first_copies), set(third.retention.deleted))
        self.assertEqual(set(first_copies), set(cinder.backups_deleted))
        self.assertEqual({}, third.retention.left)
        # The images' rotation is its own: every image is still there.
        self.assertEqual({r.snapshot.image_id for r in (first, second,
                                                        third)},
                         set(self.fake.images))

    def test_retention_reported(self):
        self.flags(backup_copies=True, backup_copies_keep=1)
        svc = self.make_service()
        cinder = _RetainingCinder()
        for tag in (1, 2):
            svc.backup(self.make_request(tag), 5, cinder=cinder)
            cinder.copied()
        result = svc.backup(self.make_request(3), 5, cinder=cinder)
        data = result.to_dict()
        self.assertEqual(result.retention.to_dict(), data['copy_retention'])
        self.assertEqual(2, len(data['copy_retention']['deleted']))
        self.assertEqual(data, json.loads(json.dumps(data, default=str)))
        text = result.describe()
        parts = [result.snapshot.describe(), result.copies.describe(),
                 result.retention.describe(), result.rotation.describe()]
        self.assertEqual('\n'.join(parts), text)
        self.assertIn('copy retention of server %s (daily)'
                      % result.retention.server, text)

    def test_no_retention_reported_when_not_set(self):
        self.flags(backup_copies=True)
        svc = self.make_service()
        result = svc.backup(self.make_request(1), 2, cinder=_Cinder())
        self.assertIsNone(result.retention)
        self.assertIsNone(result.to_dict()['copy_retention'])
        self.assertNotIn('copy retention', result.describe())

    def test_no_retention_when_copies_are_off(self):
        self.flags(backup_copies_keep=1)
        svc = self.make_service()
        cinder = _RetainingCinder()
        result = svc.backup(self.make_request(1), 2, cinder=cinder)
        self.assertIsNone(result.copies)
        self.assertIsNone(result.retention)
        self.assertEqual([], cinder.listed)


class TestBackupResult(base.TestCase):

    def result(self, **extra):
        snapshot = mock.Mock()
        snapshot.to_dict.return_value = {'image_id': 'img'}
        snapshot.describe.return_value = 'SNAPSHOT'
        rotation = mock.Mock()
        rotation.to_dict.return_value = {'kept': ['img']}
        rotation.describe.return_value = 'ROTATION'
        return backup_mod.BackupResult(snapshot, rotation, **extra)

    def test_nothing_but_the_backup_and_its_rotation(self):
        result = self.result()
        self.assertEqual({'image_id': 'img', 'rotation': {'kept': ['img']},
                          'copies': None, 'copy_retention': None},
                         result.to_dict())
        self.assertEqual('SNAPSHOT\nROTATION', result.describe())

    def test_copies_then_retention_then_rotation(self):
        copied = copies.CopyResult('img')
        kept = copy_retention.RetentionResult('srv', 'daily', ['img'],
                                              ['c1'], {'c0': 'needed'})
        result = self.result(copies=copied, retention=kept)
        data = result.to_dict()
        self.assertEqual(copied.to_dict(), data['copies'])
        self.assertEqual({'server': 'srv', 'backup_type': 'daily',
                          'kept': ['img'], 'deleted': ['c1'],
                          'left': {'c0': 'needed'}, 'error': None},
                         data['copy_retention'])
        self.assertEqual('\n'.join(['SNAPSHOT', copied.describe(),
                                    kept.describe(), 'ROTATION']),
                         result.describe())

    def test_a_retention_that_did_nothing_is_still_reported(self):
        kept = copy_retention.RetentionResult('srv', 'daily')
        result = self.result(copies=copies.CopyResult('img'),
                             retention=kept)
        self.assertEqual(kept.to_dict(), result.to_dict()['copy_retention'])
        self.assertIn(kept.describe(), result.describe())
