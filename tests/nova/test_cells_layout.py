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

"""``createBackup`` and ``createImage`` in the cells layout of devstack.

devstack (and most deployments) point nova-api's ``[database]
connection`` at cell0 and put the servers in cell1: a request's context
that nobody targeted at the server's cell reads and writes cell0.  Nova's
own API targets the request's context in place when it loads the server
(``compute.api.API.get`` -> ``nova.context.set_target_cell``); whatever
the plugin runs for the request must use a context targeted the same way.

The layout here: Nova's own test databases (``CellDatabases``) with cell0
as the database of untargeted contexts, cell1 holding the servers, and
SQLite's foreign keys enforced (``[database] sqlite_fk``) as MySQL and
PostgreSQL enforce them: an instance action written in cell0 for a
server of cell1 fails there as it does on devstack.
"""

import uuid

import fixtures
from oslo_serialization import jsonutils

from tests.nova import base
from tests.nova import test_create_backup


def _enforce_foreign_keys(connection):
    """Make one of the test cell databases refuse rows with no parent.

    MySQL and PostgreSQL refuse an instance action whose instance is in
    another cell's database; SQLite does once ``PRAGMA foreign_keys`` is
    on for the connection (the one already open, and any opened later).
    """
    from nova.db.main import api as main_db_api
    import sqlalchemy

    engine = main_db_api.create_context_manager(connection).writer.get_engine()

    def _on(dbapi_connection, _record):
        dbapi_connection.execute('PRAGMA foreign_keys = ON')

    sqlalchemy.event.listen(engine, 'connect', _on)
    # Outside any transaction (SQLite ignores the pragma inside one).
    raw = engine.raw_connection()
    try:
        dbapi = raw.driver_connection
        dbapi.commit()
        dbapi.execute('PRAGMA foreign_keys = ON')
        enabled = dbapi.execute('PRAGMA foreign_keys').fetchone()[0]
    finally:
        raw.close()
    if enabled != 1:
        raise RuntimeError('SQLite foreign keys could not be enforced')


class DevstackCellsMixin(object):
    """nova-api's untargeted database is cell0; the servers live in cell1.

    Replaces ``nova.test.TestCase._setup_cells`` (the same two cells and
    mappings, built with Nova's ``CellDatabases`` fixture) so that the
    default database, the one a context nobody targeted reaches, is
    cell0 instead of cell1.
    """

    def _setup_cells(self):
        from nova import context as nova_context
        from nova import objects
        from nova.tests import fixtures as nova_fixtures
        from oslo_utils.fixture import uuidsentinel

        databases = nova_fixtures.CellDatabases()
        admin = nova_context.get_context()
        # cell0 last: the fixture starts on the last database added.
        for name, cell_uuid in (
                ('cell1', uuidsentinel.cell1),
                ('cell0', objects.CellMapping.CELL0_UUID)):
            cell = objects.CellMapping(
                context=admin, uuid=cell_uuid, name=name,
                transport_url='fake://nowhere/',
                database_connection=cell_uuid)
            cell.create()
            self.cell_mappings[name] = cell
            databases.add_cell_database(cell_uuid,
                                        default=(name == 'cell0'))
        self.useFixture(databases)
        for cell in self.cell_mappings.values():
            _enforce_foreign_keys(cell.database_connection)

    def actions_of(self, server_id, cell_name):
        """The instance action names recorded for a server in one cell."""
        from nova import context as nova_context
        from nova import objects

        admin = nova_context.get_admin_context()
        with nova_context.target_cell(
                admin, self.cell_mappings[cell_name]) as cctxt:
            return sorted(a.action for a in
                          objects.InstanceActionList.get_by_instance_uuid(
                              cctxt, server_id))


class TestDevstackLayout(DevstackCellsMixin,
                         test_create_backup.CreateBackupMixin,
                         base.NovaServerTestCase):

    def setUp(self):
        super().setUp()
        self.flags(volume_backed_backups=True, group='snapshot_ext')

    def test_untargeted_context_reads_cell0(self):
        # The layout itself: a context nobody targeted sees no server.
        from nova import exception as nova_exc
        from nova import objects

        server = self.create_server()
        self.assertRaises(nova_exc.InstanceNotFound,
                          objects.Instance.get_by_uuid, self.context,
                          server.uuid,
                          expected_attrs=['metadata', 'system_metadata'])

    def test_create_image_recorded_in_the_servers_cell(self):
        server = self.create_server()
        resp = self.create_image(server.uuid, 'img-%s' % uuid.uuid4().hex)
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual(1, len(self.cinder.volume_snapshots))
        self.assertEqual(['createImage'],
                         self.actions_of(server.uuid, 'cell1'))
        self.assertEqual([], self.actions_of(server.uuid, 'cell0'))

    def test_create_backup_of_stopped_server(self):
        server = self.create_server()
        name = 'bk-%s' % uuid.uuid4().hex
        resp = self.create_backup(server.uuid, name, rotation=2)
        self.assertEqual(202, resp.status_int, resp.text)
        image_id = jsonutils.loads(resp.body)['image_id']
        image = self.admin_glance().images.get(image_id)
        self.assertEqual('active', image['status'])
        self.assertEqual('backup', image['image_type'])
        snapshots = list(self.cinder.volume_snapshots)
        self.assertEqual(1, len(snapshots))
        self.assertIn(snapshots[0], image['block_device_mapping'])
        # Nova records a backup as createBackup, in the server's cell.
        self.assertEqual(['createBackup'],
                         self.actions_of(server.uuid, 'cell1'))
        self.assertEqual([], self.actions_of(server.uuid, 'cell0'))

    def test_glance_unreachable_answered_not_passed_to_nova(self):
        server = self.create_server()
        self.flags(endpoint_override='http://127.0.0.1:9', group='glance')
        resp = self.create_backup(server.uuid, 'bk-%s' % uuid.uuid4().hex)
        self.assertNotIn('Backup is not supported', resp.text)
        self.assertIn('Backup of server %s failed' % server.uuid, resp.text)
        self.assertEqual(500, resp.status_int, resp.text)
        # Refused before anything was done: no snapshot, no action.
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.actions_of(server.uuid, 'cell1'))
        lines = [line for line in self.plugin_log.at_least(30)
                 if server.uuid in line]
        self.assertEqual(1, len(lines), self.plugin_log.at_least(30))

    def test_quiesce_unanswered_thaw_cast_and_cause_named(self):
        # The server's host runs no compute service: the quiesce call times
        # out (the guest may be frozen), the thaw is cast all the same.
        from nova import context as nova_context

        self.flags(rpc_response_timeout=1)
        server = self.create_server(vm_state='active')
        admin = nova_context.get_admin_context()
        with nova_context.target_cell(
                admin, self.cell_mappings['cell1']) as cctxt:
            from nova import objects

            instance = objects.Instance.get_by_uuid(
                cctxt, server.uuid,
                expected_attrs=['metadata', 'system_metadata'])
            instance.host = 'gone'
            instance.save()
        casts = self.useFixture(fixtures.MockPatch(
            'nova.compute.rpcapi.ComputeAPI.unquiesce_instance',
            autospec=False)).mock
        resp = self.create_backup(server.uuid, 'bk-%s' % uuid.uuid4().hex)
        self.assertEqual(500, resp.status_int, resp.text)
        self.assertNotIn('Backup is not supported', resp.text)
        self.assertIn('MessagingTimeout', resp.text)
        self.assertEqual(1, casts.call_count)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.actions_of(server.uuid, 'cell1'))


class TestDevstackLayoutActiveServer(DevstackCellsMixin,
                                     test_create_backup.CreateBackupMixin,
                                     base.NovaServerTestCase):
    """An ACTIVE server: the guest is quiesced, and always thawed."""

    def setUp(self):
        super().setUp()
        self.flags(volume_backed_backups=True, group='snapshot_ext')
        # No placement service here: the compute service's periodic
        # resource update logs an error; quiesce does not need placement.
        self.start_service('compute', host='compute1')
        self.quiesce = self.useFixture(fixtures.MockPatch(
            'nova.virt.fake.FakeDriver.quiesce', autospec=True)).mock
        self.unquiesce = self.useFixture(fixtures.MockPatch(
            'nova.virt.fake.FakeDriver.unquiesce', autospec=True)).mock

    def _wait_for(self, predicate, attempts=200):
        import time

        for _ in range(attempts):
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()

    def test_backup_quiesces_and_thaws(self):
        server = self.create_server(vm_state='active')
        resp = self.create_backup(server.uuid, 'bk-%s' % uuid.uuid4().hex)
        self.assertEqual(202, resp.status_int, resp.text)
        self.assertEqual(1, self.quiesce.call_count)
        self.assertTrue(self._wait_for(lambda: self.unquiesce.called))
        self.assertEqual(1, self.unquiesce.call_count)
        self.assertEqual(['createBackup'],
                         self.actions_of(server.uuid, 'cell1'))

    def test_failure_after_quiesce_thaws_and_names_the_cause(self):
        from nova import exception as nova_exc

        self.useFixture(fixtures.MockPatch(
            'nova.volume.cinder.API.create_snapshot_force',
            side_effect=nova_exc.CinderConnectionFailed(
                reason='cinder-api is down'), autospec=False))
        server = self.create_server(vm_state='active')
        resp = self.create_backup(server.uuid, 'bk-%s' % uuid.uuid4().hex)
        self.assertEqual(1, self.quiesce.call_count)
        self.assertTrue(self._wait_for(lambda: self.unquiesce.called))
        self.assertNotIn('Backup is not supported', resp.text)
        self.assertIn('cinder-api is down', resp.text)
        self.assertEqual(500, resp.status_int, resp.text)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        lines = [line for line in self.plugin_log.at_least(30)
                 if server.uuid in line]
        self.assertEqual(1, len(lines), self.plugin_log.at_least(30))
        self.assertIn('cinder-api is down', lines[0])


class TestDevstackLayoutActivationFailure(DevstackCellsMixin,
                                          test_create_backup.CreateBackupMixin,
                                          base.NovaServerTestCase):
    """Glance's store fails after the preflight: the plugin's answer."""

    def setUp(self):
        super().setUp()
        self.flags(volume_backed_backups=True, group='snapshot_ext')
        # Glance's server closes the connection of a failed upload; the
        # plugin's next read may pick that connection from the pool and
        # meet the reset.  With no retry (keystoneauth's default) that
        # read's outcome is unknown and the image is rightly left in
        # place (and with it the volume snapshots): a deployment sets
        # [glance] connect_retries, which the plugin honours.  Set here so
        # that the tests judge the "every image deleted" path every time.
        self.flags(connect_retries=2, group='glance')

    def _break_glance_store(self):
        # The shared Glance's file store can no longer write: its images
        # directory is a plain file until the test ends.
        import os

        images = os.path.join(self.glance.base_dir, 'images')
        os.rename(images, images + '.away')
        with open(images, 'w'):
            pass

        def restore():
            os.remove(images)
            os.rename(images + '.away', images)

        self.addCleanup(restore)

    def test_failed_activation_answered_with_cause(self):
        server = self.create_server()
        self._break_glance_store()
        resp = self.create_backup(server.uuid, 'bk-%s' % uuid.uuid4().hex)
        self.assertNotEqual(202, resp.status_int, resp.text)
        self.assertNotIn('Backup is not supported', resp.text)
        body = jsonutils.loads(resp.body)
        message = list(body.values())[0]['message']
        self.assertIn('Backup of server %s failed' % server.uuid, message)
        self.assertIn('activate', message)
        # Glance's 500 is the cause, with createImage's status for it.
        self.assertEqual(500, resp.status_int, resp.text)
        self.assertIn('Glance upload failed: HTTP 500', message)
        # Every attempt's image was deleted, so nothing can still use the
        # volume snapshot this request took: it is deleted and named.
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual(1, len(self.deleted_snapshots))
        self.assertIn('volume snapshot(s) %s deleted'
                      % self.deleted_snapshots[0], message)
        lines = [line for line in self.plugin_log.at_least(30)
                 if server.uuid in line]
        self.assertEqual(1, len(lines), self.plugin_log.at_least(30))
        self.assertEqual(['createBackup'],
                         self.actions_of(server.uuid, 'cell1'))

    def test_failed_create_image_deletes_its_volume_snapshots(self):
        # Nova's own path leaves the volume snapshot it took; the plugin
        # deletes it (no image can name it: every attempt's image was
        # deleted) and says so in the answer and in one log line.
        server = self.create_server()
        self._break_glance_store()
        resp = self.create_image(server.uuid, 'img-%s' % uuid.uuid4().hex)
        self.assertEqual(500, resp.status_int, resp.text)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual(1, len(self.deleted_snapshots))
        lines = [line for line in self.plugin_log.at_least(30)
                 if 'volume snapshot(s) %s deleted' % self.deleted_snapshots[0]
                 in line]
        self.assertEqual(1, len(lines), self.plugin_log.at_least(30))
        self.assertIn('Glance upload failed: HTTP 500', lines[0])
