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

"""A volume-backed server's snapshot image, made by the plugin, boots.

Every test drives the public APIs only (Nova, Glance, Cinder through
Tempest's service clients) and cleans up what it made.  The servers are
never logged into; the data round trip reads the marker guest's console
(``[nova_snapshot_ext] marker_image_ref``).
"""

import time
import urllib.request

from oslo_log import log as logging
from tempest.common import waiters
from tempest import config
from tempest.lib.common import api_microversion_fixture
from tempest.lib.common import api_version_utils
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc
from tempest.scenario import manager

from nova_snapshot_ext_tempest_plugin import judge

CONF = config.CONF
LOG = logging.getLogger(__name__)
#: The volume API microversion that shows a backup's metadata (the
#: copies' record).
COPY_RECORD_MICROVERSION = '3.43'


class VolumeBackedSnapshotTest(manager.ScenarioTest):
    """createImage and createBackup of a server booted from volumes."""

    # Two boots from volumes and a snapshot per test: give the deletes
    # the room Tempest's own boot-from-volume scenario gives them.
    TIMEOUT_SCALING_FACTOR = 2

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.nova_snapshot_ext:
            raise cls.skipException(
                '[service_available] nova_snapshot_ext is False')
        for service in ('nova', 'cinder', 'glance'):
            if not getattr(CONF.service_available, service):
                raise cls.skipException('%s is not available' % service)
        if not CONF.volume_feature_enabled.snapshot:
            raise cls.skipException('Cinder volume snapshots are disabled')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.schemas_client = cls.os_primary.schemas_client

    # -- helpers ---------------------------------------------------------

    def _name(self, what):
        return data_utils.rand_name(prefix=CONF.resource_name_prefix,
                                    name='%s-%s' % (type(self).__name__,
                                                    what))

    @staticmethod
    def _image_id(resp):
        # Microversion 2.45 and later answer the id in the body, earlier
        # ones in the Location header.
        if resp.get('image_id'):
            return resp['image_id']
        return data_utils.parse_image_id(resp.response['location'])

    def _boot_volume_backed(self, data_volume=True):
        """A server booted from a root volume (and a blank data volume).

        :returns: (server, [root volume, data volume...]).
        """
        root = self.create_volume_from_image()
        volumes = [root]
        bdm = [{'uuid': root['id'], 'source_type': 'volume',
                'destination_type': 'volume', 'boot_index': 0,
                'delete_on_termination': False}]
        if data_volume:
            data = self.create_volume(name=self._name('data'))
            volumes.append(data)
            bdm.append({'uuid': data['id'], 'source_type': 'volume',
                        'destination_type': 'volume', 'boot_index': -1,
                        'delete_on_termination': False})
        # Runs after everything registered later (servers, images, the
        # volumes made from snapshots) and before the volumes' deletes:
        # a snapshot of them that a failed request left (and that the
        # test has named in its failure) must not block those deletes.
        self.addCleanup(self._delete_snapshots_of, [v['id'] for v in volumes])
        server = self.create_server(name=self._name('source'), image_id='',
                                    block_device_mapping_v2=bdm,
                                    wait_until='ACTIVE')
        return server, volumes

    def _cleanup_image(self, image_id):
        self.addCleanup(self.image_client.wait_for_resource_deletion,
                        image_id)
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.image_client.delete_image, image_id)

    def _cleanup_snapshots(self, snapshot_ids):
        for snapshot_id in snapshot_ids:
            self.addCleanup(self.snapshots_client.wait_for_resource_deletion,
                            snapshot_id)
            self.addCleanup(self._delete_snapshot, snapshot_id)

    def _delete_snapshot(self, snapshot_id):
        """Delete a volume snapshot once Cinder allows it.

        Not while it is ``creating``, nor ``backing-up`` (cinder-backup
        copying it off the primary storage, ``[nova_snapshot_ext]
        backup_copies``).
        """
        deadline = time.monotonic() + CONF.volume.build_timeout
        while True:
            try:
                status = self.snapshots_client.show_snapshot(
                    snapshot_id)['snapshot']['status']
            except lib_exc.NotFound:
                return
            if status not in ('creating', 'backing-up') or \
                    time.monotonic() > deadline:
                break
            time.sleep(CONF.volume.build_interval)
        test_utils.call_and_ignore_notfound_exc(
            self.snapshots_client.delete_snapshot, snapshot_id)

    def _delete_snapshots_of(self, volume_ids):
        """Delete every volume snapshot left of these volumes."""
        left = self._snapshots_of([{'id': v} for v in volume_ids])
        if left:
            LOG.warning('deleting volume snapshots left of volumes %s: %s',
                        volume_ids, left)
        for snapshot_id in left:
            self._delete_snapshot(snapshot_id)
        for snapshot_id in left:
            self.snapshots_client.wait_for_resource_deletion(snapshot_id)

    def _active_image(self, image_id):
        """Wait for the image, register its cleanups, return it."""
        self._cleanup_image(image_id)
        waiters.wait_for_image_status(self.image_client, image_id, 'active')
        image = self.image_client.show_image(image_id)
        # Whatever the checks below find, the volume snapshots the image
        # names are this test's to delete (after any volume made from
        # them: cleanups run last-in, first-out).
        self._cleanup_snapshots(judge.snapshot_ids(image))
        return image

    def _assert_honest(self, image, volumes):
        """The image is metadata-only, active and honest.

        Its bytes, downloaded from Glance, are what its ``disk_format``
        and ``size`` say (:func:`judge.data_problems`).  Its volume
        snapshots exist in Cinder, one per volume of the server, the boot
        disk's first.
        """
        allowed = judge.schema_disk_formats(
            self.schemas_client.show_schema('image'))
        problems = judge.mapping_problems(image, len(volumes))
        problems += judge.payload_problems(
            image, allowed_formats=allowed,
            expected_formats=CONF.nova_snapshot_ext.expected_disk_formats,
            max_size=CONF.nova_snapshot_ext.max_payload_size,
            root_size_gb=volumes[0]['size'])
        problems += judge.data_problems(
            image, self.image_client.show_image_file(image['id']).data)
        self.assertEqual([], problems, 'image %s: %s' % (image['id'], image))
        source_of = {}
        for snapshot_id in judge.snapshot_ids(image):
            waiters.wait_for_volume_resource_status(
                self.snapshots_client, snapshot_id, 'available')
            snapshot = self.snapshots_client.show_snapshot(
                snapshot_id)['snapshot']
            source_of[snapshot_id] = snapshot['volume_id']
        self.assertEqual(sorted(v['id'] for v in volumes),
                         sorted(source_of.values()),
                         'the volume snapshots of image %s were not taken '
                         'of the server\'s volumes' % image['id'])
        self.assertEqual(volumes[0]['id'],
                         source_of[judge.snapshot_ids(image)[0]],
                         'the boot entry is not the root volume\'s snapshot')

    def _delete_server_then_volumes(self, server_id, volume_ids):
        test_utils.call_and_ignore_notfound_exc(
            self.servers_client.delete_server, server_id)
        waiters.wait_for_server_termination(self.servers_client, server_id)
        for volume_id in volume_ids:
            test_utils.call_and_ignore_notfound_exc(
                self.volumes_client.delete_volume, volume_id)
        for volume_id in volume_ids:
            self.volumes_client.wait_for_resource_deletion(volume_id)

    def _assert_boots(self, image, source_volumes):
        """A new server boots from the image, ACTIVE.

        Its volumes were made from exactly the volume snapshots the image
        names.
        """
        server = self.create_server(name=self._name('from-image'),
                                    image_id=image['id'],
                                    wait_until='ACTIVE')
        attached = [a['id'] for a in
                    server['os-extended-volumes:volumes_attached']]
        # Nova made these volumes; whether or not it deletes them with the
        # server, they go before the snapshots they were made from.
        self.addCleanup(self._delete_server_then_volumes, server['id'],
                        attached)
        made_from = {}
        for volume_id in attached:
            volume = self.volumes_client.show_volume(volume_id)['volume']
            made_from[volume_id] = volume.get('snapshot_id')
            self.assertEqual(
                [server['id']],
                [a['server_id'] for a in volume['attachments']],
                'volume %s is not attached to the new server' % volume_id)
        self.assertEqual(sorted(judge.snapshot_ids(image)),
                         sorted(made_from.values()),
                         'the new server\'s volumes (%s) were not made from '
                         'the image\'s volume snapshots' % made_from)
        self.assertFalse(set(attached) & {v['id'] for v in source_volumes},
                         'the new server got a source volume')
        return server

    def _console(self, server_id, disks):
        """The marker guest's console once it said every disk."""
        deadline = time.monotonic() + CONF.compute.build_timeout
        said = judge.console_markers('')
        while time.monotonic() < deadline:
            try:
                output = self.servers_client.get_console_output(
                    server_id)['output']
            except (lib_exc.NotFound, lib_exc.Conflict):
                output = ''  # no console yet
            said = judge.console_markers(output)
            if said['done'] and set(disks) <= set(said['markers']):
                return said
            time.sleep(CONF.compute.build_interval)
        self.fail('the console of server %s did not show markers on %s '
                  'within %s s: %s' % (server_id, ', '.join(disks),
                                       CONF.compute.build_timeout, said))

    def _snapshots_of(self, volumes):
        ids = {v['id'] for v in volumes}
        return sorted(s['id'] for s in self.snapshots_client.list_snapshots(
            detail=True)['snapshots'] if s['volume_id'] in ids)

    # -- tests -------------------------------------------------------------

    @decorators.idempotent_id('0f4f4c64-9a3b-4c52-8a58-2ab1e0d7f6a1')
    @decorators.attr(type='slow')
    def test_create_image_boots_from_its_volume_snapshots(self):
        """Root + data volume -> createImage -> honest image -> it boots.

        1. Boot a server from a root volume (made from an image) with a
           blank data volume.
        2. createImage: the image becomes active, is metadata-only and
           honest (its payload is what its disk_format says), and its
           block_device_mapping names one volume snapshot per volume, each
           existing in Cinder and taken of that volume.
        3. Boot a new server from the image: ACTIVE, on new volumes each
           made from one of exactly those snapshots.
        """
        server, volumes = self._boot_volume_backed(data_volume=True)
        resp = self.compute_images_client.create_image(
            server['id'], name=self._name('snapshot'))
        image = self._active_image(self._image_id(resp))
        self._assert_honest(image, volumes)
        self._assert_boots(image, volumes)

    @decorators.idempotent_id('8d2f6a41-7c3e-4b95-a0d1-5e9c3f7b2a68')
    @decorators.attr(type='slow')
    def test_data_comes_back(self):
        """A guest reads, from the snapshot image, what another one wrote.

        1. Boot the marker guest on a root volume made from its image and
           a blank data volume; its console shows the marker it wrote on
           each disk.
        2. createImage; the image is honest and names a snapshot per
           volume.
        3. A server booted from the image reads, on each disk at the same
           device name, the marker the first guest wrote there.
        4. When the first guest runs the QEMU guest agent (its image has
           ``hw_qemu_guest_agent=yes``), the log it kept writing on the
           data volume is consistent in the copy: clean journal, clean
           ``e2fsck``, every record written before the freeze.
        """
        image_ref = CONF.nova_snapshot_ext.marker_image_ref
        if not image_ref:
            raise self.skipException('[nova_snapshot_ext] marker_image_ref '
                                     'is not set (no marker guest image)')
        if not CONF.compute_feature_enabled.console_output:
            raise self.skipException('[compute-feature-enabled] '
                                     'console_output is False')
        root = self.create_volume(imageRef=image_ref, name=self._name('root'))
        data = self.create_volume(name=self._name('data'))
        volumes = [root, data]
        self.addCleanup(self._delete_snapshots_of, [v['id'] for v in volumes])
        server = self.create_server(
            name=self._name('guest'), image_id='', wait_until='ACTIVE',
            block_device_mapping_v2=[
                {'uuid': root['id'], 'source_type': 'volume',
                 'destination_type': 'volume', 'boot_index': 0,
                 'delete_on_termination': False},
                {'uuid': data['id'], 'source_type': 'volume',
                 'destination_type': 'volume', 'boot_index': -1,
                 'delete_on_termination': False}])
        source = self._console(server['id'], ('vda', 'vdb'))
        resp = self.compute_images_client.create_image(
            server['id'], name=self._name('data'))
        image = self._active_image(self._image_id(resp))
        self._assert_honest(image, volumes)
        copy = self._assert_boots(image, volumes)
        restored = self._console(copy['id'], sorted(source['markers']))
        self.assertEqual([], judge.marker_problems(source, restored),
                         'the data did not come back through image %s'
                         % image['id'])
        # The guest wrote to its data volume all along: with the agent
        # (the image has hw_qemu_guest_agent=yes), the snapshot must hold
        # the frozen filesystem.
        frozen = self._console(server['id'], ('vda', 'vdb'))
        if frozen['freezes']:
            self.assertEqual([], judge.consistency_problems(frozen,
                                                            restored),
                             'image %s' % image['id'])

    @decorators.idempotent_id('c3e1a7b4-52d9-4f0e-9b6a-81d4e2f7a903')
    @decorators.attr(type='slow')
    def test_location_activated_image_boots(self):
        """Location mode: the image is the location, honest, and it boots.

        With ``[nova_snapshot_ext] location_url`` set (nova-api activates
        through that location): createImage gives an active image whose
        data Glance serves is the object at that URL, byte for byte
        (``direct_url`` too, where Glance shows it); the payload is
        honest, and a new server boots from the image on its volume
        snapshots.
        """
        location = CONF.nova_snapshot_ext.location_url
        if not location:
            raise self.skipException('[nova_snapshot_ext] location_url is '
                                     'not set (no location mode)')
        server, volumes = self._boot_volume_backed(data_volume=False)
        resp = self.compute_images_client.create_image(
            server['id'], name=self._name('location'))
        image = self._active_image(self._image_id(resp))
        self._assert_honest(image, volumes)
        with urllib.request.urlopen(location, timeout=60) as resp:
            at_location = resp.read()
        self.assertEqual(
            at_location, self.image_client.show_image_file(image['id']).data,
            'image %s does not serve the object at %s' % (image['id'],
                                                          location))
        if 'direct_url' in image:
            self.assertEqual(location, image['direct_url'],
                             'image %s was not activated through %s' % (
                                 image['id'], location))
        self._assert_boots(image, volumes)

    @decorators.idempotent_id('5a0c2d8e-3f61-47d9-b1c4-7e9f0a6b2c35')
    @decorators.attr(type='slow')
    def test_create_backup_rotation_keeps_the_newest(self):
        """createBackup, rotation 2, four times: the 2 newest are kept.

        The rotated backups are gone from Glance and their volume
        snapshots from Cinder; the kept ones stay honest; the newest
        boots on volumes made from its snapshots.
        """
        if not CONF.nova_snapshot_ext.backup:
            raise self.skipException('[nova_snapshot_ext] backup is False')
        server, volumes = self._boot_volume_backed(data_volume=False)
        backups = []
        for number in range(1, 5):
            if backups:
                time.sleep(CONF.nova_snapshot_ext.backup_spacing)
            waiters.wait_for_server_status(self.servers_client,
                                           server['id'], 'ACTIVE')
            resp = self.servers_client.create_backup(
                server['id'], backup_type='daily', rotation=2,
                name=self._name('backup-%d' % number))
            image = self._active_image(self._image_id(resp))
            self._cleanup_copies(image['id'])
            backups.append(image)
        kept_ids = judge.rotation_kept([b['id'] for b in backups], 2)
        for image in backups:
            if image['id'] in kept_ids:
                continue
            self.image_client.wait_for_resource_deletion(image['id'])
            for snapshot_id in judge.snapshot_ids(image):
                self.snapshots_client.wait_for_resource_deletion(snapshot_id)
        listed = self.image_client.list_images(params={
            'image_type': 'backup', 'backup_type': 'daily',
            'instance_uuid': server['id']})['images']
        self.assertEqual(sorted(kept_ids), sorted(i['id'] for i in listed),
                         'the backups left after rotation 2')
        for image in backups[-2:]:
            self._assert_honest(self.image_client.show_image(image['id']),
                                volumes)
        self._assert_boots(backups[-1], volumes)

    @staticmethod
    def _copies_enabled():
        """Whether nova-api copies backups here (tempest.conf says)."""
        return bool(CONF.nova_snapshot_ext.backup_copies and
                    CONF.volume_feature_enabled.backup)

    def _list_copies(self, image_id):
        """The Cinder backups recorded as copies of ``image_id``."""
        listed = self.backups_client.list_backups(detail=True)['backups']
        return judge.copies_of(listed, image_id)

    def _copies(self, image_id, count):
        """The image's copies, once ``count`` are there and none is busy."""
        deadline = time.monotonic() + CONF.volume.build_timeout
        while True:
            found = self._list_copies(image_id)
            if (len(found) >= count and not any(
                    b['status'] in ('creating', 'restoring')
                    for b in found)) or time.monotonic() > deadline:
                return found
            time.sleep(CONF.volume.build_interval)

    def _cleanup_copies(self, image_id):
        """Delete, at cleanup, the copies nova-api made of a backup.

        Registered after the image's cleanups, so it runs before its
        volume snapshots' deletes.  The copies are listed when it runs (a
        copy asked for after the test looked goes too); one still being
        made is waited for (Cinder deletes only a finished backup).
        """
        if not self._copies_enabled():
            return

        def delete():
            fixture = api_microversion_fixture.APIMicroversionFixture(
                volume_microversion=COPY_RECORD_MICROVERSION)
            fixture.setUp()
            try:
                found = self._copies(image_id, 0)
                for backup in found:
                    test_utils.call_and_ignore_notfound_exc(
                        self.backups_client.delete_backup, backup['id'])
                for backup in found:
                    self.backups_client.wait_for_resource_deletion(
                        backup['id'])
            finally:
                fixture.cleanUp()

        self.addCleanup(delete)

    @decorators.idempotent_id('7ea3dcd6-f712-4664-83f0-06c3ce5784a2')
    @decorators.attr(type='slow')
    def test_create_backup_copies_off_the_primary_storage(self):
        """createBackup's volume snapshots are copied by cinder-backup.

        One available Cinder backup per volume snapshot the backup image
        names, recorded with the image, the server, the disk's device
        name and boot index and the number of disks; the boot disk's copy
        restores into a new volume of the source volume's size.
        """
        if not CONF.nova_snapshot_ext.backup:
            raise self.skipException('[nova_snapshot_ext] backup is False')
        if not CONF.nova_snapshot_ext.backup_copies:
            raise self.skipException('[nova_snapshot_ext] backup_copies is '
                                     'False: nova-api does not copy backups')
        if not CONF.volume_feature_enabled.backup:
            raise self.skipException('[volume-feature-enabled] backup is '
                                     'False: the cloud has no cinder-backup')
        api_version_utils.check_skip_with_microversion(
            COPY_RECORD_MICROVERSION, 'latest',
            CONF.volume.min_microversion, CONF.volume.max_microversion)
        self.useFixture(api_microversion_fixture.APIMicroversionFixture(
            volume_microversion=COPY_RECORD_MICROVERSION))
        server, volumes = self._boot_volume_backed()
        resp = self.servers_client.create_backup(
            server['id'], backup_type='daily', rotation=2,
            name=self._name('copied'))
        image = self._active_image(self._image_id(resp))
        self._cleanup_copies(image['id'])
        found = self._copies(image['id'], len(volumes))
        problems = judge.copy_problems(image, server['id'], found)
        self.assertEqual([], problems, 'the copies of backup %s: %s' % (
            image['id'], found))
        [boot] = [b for b in found
                  if b['snapshot_id'] == judge.snapshot_ids(image)[0]]
        # (Tempest's restore_backup deletes the new volume at cleanup.)
        restored = self.restore_backup(boot['id'])
        volume = self.volumes_client.show_volume(
            restored['volume_id'])['volume']
        self.assertEqual(volumes[0]['size'], volume['size'])

    @decorators.idempotent_id('c3e8b7a2-61d4-4f0e-9b5a-0d2f8c1e7a49')
    def test_refused_create_image_leaves_nothing(self):
        """A createImage the plugin refuses early leaves nothing behind.

        A property Glance reserves (os_glance_*) in the metadata: the
        answer is a 4xx before any volume snapshot is taken, so Cinder has
        no new snapshot of the server's volumes and Glance no image.
        """
        server, volumes = self._boot_volume_backed(data_volume=False)
        before = self._snapshots_of(volumes)
        name = self._name('refused')
        try:
            resp = self.compute_images_client.create_image(
                server['id'], name=name,
                metadata={'os_glance_nse_test': 'x'})
            answer = '%s (accepted)' % resp.response.status
        except lib_exc.RestClientException as exc:
            resp = getattr(exc, 'resp', None)
            answer = getattr(resp, 'status', None) or repr(exc)
        # Whatever was made despite the refusal is named below and
        # removed by the cleanups (images now, snapshots before the
        # volumes).
        after = self._snapshots_of(volumes)
        images = self.image_client.list_images(
            params={'name': name})['images']
        for image in images:
            self._cleanup_image(image['id'])
        self.assertIn(answer, (400, 403),
                      'createImage with a reserved property was answered '
                      '%s, not refused with a 400 or 403' % answer)
        self.assertEqual(before, after,
                         'volume snapshots left by a refused createImage')
        self.assertEqual([], [i['id'] for i in images],
                         'images left by a refused createImage')
