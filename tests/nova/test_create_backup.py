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

"""``createBackup`` of a volume-backed server through Nova's real API.

Nova's pipeline with the plugin's filter (:mod:`.test_paste_filter`), a
real Glance (token identity), Nova's ``CinderFixture`` (volume snapshots)
with ``delete_snapshot`` recorded.
"""

import logging
import time
import uuid

import fixtures
from oslo_serialization import jsonutils

from nova_snapshot_ext.backup import mark
from tests.nova import base
from tests.nova import test_paste_filter


class CreateBackupMixin(test_paste_filter.PastePipelineMixin):

    def setUp(self):
        super().setUp()
        self.deleted_snapshots = []
        self.useFixture(fixtures.MockPatch(
            'nova.volume.cinder.API.delete_snapshot',
            side_effect=self._delete_snapshot, autospec=False))

    def _delete_snapshot(self, _ctxt, snapshot_id):
        self.deleted_snapshots.append(snapshot_id)
        self.cinder.volume_snapshots.pop(snapshot_id, None)

    def create_backup(self, server_id, name, backup_type='daily',
                      rotation=2, version='2.45', app=None, metadata=None):
        body = {'createBackup': {'name': name, 'backup_type': backup_type,
                                 'rotation': rotation}}
        if metadata is not None:
            body['createBackup']['metadata'] = metadata
        return self.request('POST', '/servers/%s/action' % server_id, body,
                            version=version, app=app)

    def backups_of(self, server_id, backup_type='daily'):
        client = self.admin_glance()
        return sorted((dict(i) for i in client.images.list(filters={
            'instance_uuid': server_id, 'backup_type': backup_type})),
            key=lambda i: i['created_at'])


class TestCreateBackupOff(CreateBackupMixin, base.NovaServerTestCase):

    def test_option_off_novas_400_unchanged(self):
        server = self.create_server()
        resp = self.create_backup(server.uuid, 'off-%s' % uuid.uuid4().hex)
        alone = self.create_backup(server.uuid, 'off-b', app=self.nova_alone)
        self.assertEqual(400, resp.status_int, resp.text)
        self.assertEqual(alone.status_int, resp.status_int)
        self.assertEqual(jsonutils.loads(alone.body),
                         jsonutils.loads(resp.body))
        self.assertIn('Backup is not supported for volume-backed',
                      resp.text)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))


class TestCreateBackup(CreateBackupMixin, base.NovaServerTestCase):

    def flags_on(self):
        self.flags(volume_backed_backups=True, group='snapshot_ext')

    def test_rotation_two_four_times_keeps_two_newest(self):
        self.flags_on()
        server = self.create_server()
        other = self.create_server()
        # Look-alikes: another server's backup, a weekly one of this
        # server, and an image claiming to be this server's daily backup
        # that the plugin did not make.
        resp = self.create_backup(other.uuid, 'other', rotation=1)
        self.assertEqual(202, resp.status_int, resp.text)
        resp = self.create_backup(server.uuid, 'weekly',
                                  backup_type='weekly', rotation=1)
        self.assertEqual(202, resp.status_int, resp.text)
        # Another server's backup whose instance_uuid was hand-edited to
        # this server's (the marker no longer matches).
        third = self.create_server()
        resp = self.create_backup(third.uuid, 'edited', rotation=1)
        self.assertEqual(202, resp.status_int, resp.text)
        edited = jsonutils.loads(resp.body)['image_id']
        self.admin_glance().images.update(edited, instance_uuid=server.uuid)
        client = self.glance.client(self.project_id, self.user_id,
                                    base.MEMBER_ROLES)
        fake = client.images.create(
            name='fake', image_type='backup', backup_type='daily',
            instance_uuid=server.uuid)
        ids, snaps = [], []
        for n in range(4):
            time.sleep(1.1)  # Glance's created_at has one-second steps
            before = set(self.cinder.volume_snapshots)
            resp = self.create_backup(server.uuid, 'daily-%d' % n)
            self.assertEqual(202, resp.status_int, resp.text)
            ids.append(jsonutils.loads(resp.body)['image_id'])
            snaps.append(set(self.cinder.volume_snapshots) - before)
        kept = {i['id'] for i in self.backups_of(server.uuid)}
        self.assertEqual({ids[2], ids[3], fake['id'], edited}, kept)
        self.assertEqual(snaps[0] | snaps[1], set(self.deleted_snapshots))
        self.assertEqual(2, len(self.deleted_snapshots))
        self.assertEqual(1, len(self.backups_of(other.uuid)))
        self.assertEqual(1, len(self.backups_of(server.uuid, 'weekly')))
        newest = client.images.get(ids[3])
        self.assertEqual('active', newest['status'])
        self.assertEqual('backup', newest['image_type'])
        self.assertIsNone(mark.refusal(newest, server.uuid, 'daily',
                                       self.project_id))

    def test_location_header_before_2_45(self):
        self.flags_on()
        server = self.create_server()
        resp = self.create_backup(server.uuid, 'old', version='2.44')
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual(b'', resp.body)
        self.assertIn('/images/', resp.headers['Location'])
        self.assertEqual('compute 2.44',
                         resp.headers['OpenStack-API-Version'])
        resp = self.create_backup(server.uuid, 'zero', version='2.44',
                                  rotation=0)
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertNotIn('Location', resp.headers)

    def test_image_backed_server_left_to_nova(self):
        self.flags_on()
        spy = self.useFixture(fixtures.MockPatch(
            'nova_snapshot_ext.backup.service.BackupService.preflight'))
        server = self.create_server(volume_backed=False)
        made = str(uuid.uuid4())
        self.stub_out('nova.compute.api.API.backup',
                      lambda *a, **k: {'id': made})
        resp = self.create_backup(server.uuid, 'nova')
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual({'image_id': made},
                         jsonutils.loads(resp.body))
        spy.mock.assert_not_called()

    def test_bad_body_answered_by_nova(self):
        self.flags_on()
        server = self.create_server()
        resp = self.create_backup(server.uuid, 'bad', rotation=-1)
        alone = self.create_backup(server.uuid, 'bad', rotation=-1,
                                   app=self.nova_alone)
        self.assertEqual(400, resp.status_int)
        self.assertEqual(jsonutils.loads(alone.body),
                         jsonutils.loads(resp.body))

    def test_preflight_refusal_before_any_volume_snapshot(self):
        self.flags_on()
        server = self.create_server()
        resp = self.create_backup(server.uuid, 'reserved',
                                  metadata={'os_glance_x': 'y'})
        self.assertEqual(403, resp.status_int, resp.text)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))

    def test_longest_name_shortens_only_the_volume_snapshot_name(self):
        # Nova takes image names of 255 characters; "snapshot for <name>"
        # is then 268, which Cinder refuses (400).  The backup keeps the
        # name asked for; its volume snapshot's name is cut to Cinder's
        # limit, Nova's prefix kept.
        from nova.volume import cinder as nova_cinder

        self.flags_on()
        server = self.create_server()
        names = []
        taken = nova_cinder.API.create_snapshot_force

        def record(api, context, volume_id, name, description):
            if len(name) > 255:
                raise AssertionError('Cinder answers 400 to a name of %d '
                                     'characters' % len(name))
            names.append(name)
            # Nova's CinderFixture: a mock standing in for the method.
            return taken(context, volume_id, name, description)

        self.useFixture(fixtures.MockPatch(
            'nova.volume.cinder.API.create_snapshot_force', new=record))
        name = 'b' * 255
        resp = self.create_backup(server.uuid, name, rotation=1)
        self.assertEqual(202, resp.status_int, resp.text)
        image = self.admin_glance().images.get(
            jsonutils.loads(resp.body)['image_id'])
        self.assertEqual((name, 'active'), (image['name'], image['status']))
        self.assertEqual([('snapshot for ' + name)[:255]], names)

    def test_cinder_failure_during_rotation_keeps_backup_and_snapshot(self):
        from nova import exception as nova_exc

        self.flags_on()
        server = self.create_server()
        failing = []

        def refuse_first(_ctxt, snapshot_id):
            if not failing:
                failing.append(snapshot_id)
                raise nova_exc.CinderConnectionFailed(reason='refused')
            self._delete_snapshot(_ctxt, snapshot_id)

        self.useFixture(fixtures.MockPatch(
            'nova.volume.cinder.API.delete_snapshot',
            side_effect=refuse_first, autospec=False))
        ids = []
        for n in range(3):
            time.sleep(1.1)
            resp = self.create_backup(server.uuid, 'c-%d' % n, rotation=1)
            self.assertEqual(202, resp.status_int, resp.text)
            ids.append(jsonutils.loads(resp.body)['image_id'])
        self.assertEqual({ids[2]},
                         {i['id'] for i in self.backups_of(server.uuid)})
        self.assertEqual(1, len(failing))
        self.assertIn(failing[0], self.cinder.volume_snapshots)
        self.assertEqual(1, len(self.deleted_snapshots))
        # The snapshot left behind is a WARNING naming it and the cause
        # (doc/source/backups.rst), even though every image rotated.
        left = [line for line in self.plugin_log.at_least(logging.WARNING)
                if failing[0] in line]
        self.assertEqual(1, len(left), self.plugin_log.at_least(
            logging.INFO))
        self.assertIn('refused', left[0])

    def test_backup_recorded_as_create_backup(self):
        from nova import context as nova_context
        from nova import objects

        self.flags_on()
        server = self.create_server()
        resp = self.create_backup(server.uuid, 'act-%s' % uuid.uuid4().hex)
        self.assertEqual(202, resp.status_int, resp.text)
        resp = self.create_image(server.uuid, 'img-%s' % uuid.uuid4().hex)
        self.assertEqual(202, resp.status_int, resp.text)
        admin = nova_context.get_admin_context()
        with nova_context.target_cell(
                admin, self.cell_mappings['cell1']) as cctxt:
            actions = objects.InstanceActionList.get_by_instance_uuid(
                cctxt, server.uuid)
            self.assertEqual(['createBackup', 'createImage'],
                             sorted(a.action for a in actions))
            backup = [a for a in actions if a.action == 'createBackup'][0]
            events = objects.InstanceActionEventList.get_by_action(
                cctxt, backup.id)
            self.assertEqual(['api_snapshot_instance'],
                             [e.event for e in events])
            self.assertEqual(['Success'], [e.result for e in events])

    def test_active_images_record_their_volume_snapshots(self):
        # createBackup (the plugin's route) and createImage (the hook)
        # write the record audit --fix needs (nova_snapshot_ext/backup/
        # leaks.py) on each volume snapshot of the active image.
        from nova_snapshot_ext.backup import leaks

        self.flags_on()
        server = self.create_server()
        for resp in (
                self.create_backup(server.uuid, 'b-%s' % uuid.uuid4().hex),
                self.create_image(server.uuid, 'i-%s' % uuid.uuid4().hex)):
            self.assertEqual(202, resp.status_int, resp.text)
            image_id = (jsonutils.loads(resp.body).get('image_id') if
                        resp.body else resp.headers['Location'].rsplit(
                            '/', 1)[-1])
            image = self.admin_glance().images.get(image_id)
            snapshots = [m['snapshot_id'] for m in jsonutils.loads(
                image['block_device_mapping']) if m.get('snapshot_id')]
            self.assertEqual(1, len(snapshots))
            self.assertEqual(
                leaks.record_of(snapshots[0], image_id, image['owner']),
                self.snapshot_metadata[snapshots[0]])

    def test_pending_request_is_per_context_and_name(self):
        from nova_snapshot_ext.nova import hook

        with hook.pending_create_image(self.context, 'sid', 'n', {}):
            self.assertEqual(('sid', {}),
                             hook._pending_for(self.context, 'n'))
            self.assertIsNone(hook._pending_for(object(), 'n'))
            self.assertIsNone(hook._pending_for(self.context, 'm'))
        self.assertIsNone(hook._pending_for(self.context, 'n'))
