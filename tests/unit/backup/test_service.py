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

from unittest import mock
import uuid

from glanceclient import exc as gexc

from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.backup import service as backup_mod
from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import request
from nova_snapshot_ext.snapshot import service
from tests import base
from tests.unit import fake_glanceclient


class TestBackupService(base.TestCase):

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
