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

"""One image record in the Nova path, through Nova's own API (issue 10).

``POST /servers/{id}/action createImage`` goes through Nova's pipeline
with the plugin's paste filter (early refusal) and activation hook; the
image lands in a real Glance 33 (``no-raw`` profile, with the stock
``schema-image.json``).  Each input of the issue is one test, with the
value the image must hold; the bootability check is Nova's own boot-time
validation (``compute.api.API._validate_flavor_image_nostatus``).
"""

import logging
import os
import uuid

import fixtures
from oslo_serialization import jsonutils
from paste import deploy
import webob

from tests.nova import base
from tests.nova import test_paste_filter

OTHER_SERVER = str(uuid.uuid4())
OTHER_USER = uuid.uuid4().hex


class NovaApiTestCase(base.NovaServerTestCase):
    """Nova's API pipeline with the plugin's filter (see test_paste_filter)."""

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'api-paste.ini')
        with open(path, 'w') as f:
            f.write(test_paste_filter.API_PASTE_INI)
        self.configure_api_host()
        self.app = deploy.loadapp('config:%s' % path,
                                  name='openstack_compute_api_v21')

    def configure_api_host(self):
        """Set nova.conf options before the pipeline (and plugin) loads."""

    def create_image(self, server_id, metadata=None, name=None):
        name = name or 'rec-%s' % uuid.uuid4().hex[:8]
        body = {'createImage': {'name': name}}
        if metadata is not None:
            body['createImage']['metadata'] = metadata
        req = webob.Request.blank('/servers/%s/action' % server_id,
                                  method='POST')
        req.headers.update({
            'X-User-Id': self.user_id, 'X-Project-Id': self.project_id,
            'X-Roles': ','.join(base.MEMBER_ROLES),
            'X-Auth-Token': self.glance.token(self.project_id, self.user_id,
                                              base.MEMBER_ROLES),
            'OpenStack-API-Version': 'compute 2.45',
            'Accept': 'application/json'})
        req.content_type = 'application/json'
        req.body = jsonutils.dump_as_bytes(body)
        return name, req.get_response(self.app)

    def snapshot(self, server_id, metadata=None):
        """createImage that must succeed; returns the Glance image."""
        name, resp = self.create_image(server_id, metadata)
        self.assertEqual(202, resp.status_int, resp.text)
        image_id = jsonutils.loads(resp.body)['image_id']
        image = self.admin_glance().images.get(image_id)
        self.assertEqual('active', image['status'])
        return image

    def refused(self, server_id, metadata=None, status=400):
        """createImage refused before any volume snapshot; the message."""
        name, resp = self.create_image(server_id, metadata)
        self.assertEqual(status, resp.status_int, resp.text)
        self.assertEqual({}, dict(self.cinder.volume_snapshots))
        self.assertEqual([], self.images_named(name))
        (fault,) = jsonutils.loads(resp.body).values()
        return fault['message']

    def server(self, system_metadata=None, root_size=None, volume_type=None):
        from nova import context as nova_context
        from nova import objects

        instance = self.create_server(system_metadata=system_metadata)
        if root_size is None and volume_type is None:
            return instance
        admin = nova_context.get_admin_context()
        with nova_context.target_cell(
                admin, self.cell_mappings['cell1']) as cctxt:
            for bdm in objects.BlockDeviceMappingList.get_by_instance_uuid(
                    cctxt, instance.uuid):
                if bdm.boot_index == 0:
                    if root_size is not None:
                        bdm.volume_size = root_size
                    if volume_type is not None:
                        bdm.volume_type = volume_type
                    bdm.save()
        return instance


class TestOneRecord(NovaApiTestCase):

    def test_user_metadata_up_to_what_nova_accepts(self):
        # Nova alone: 2 inherited + root_device_name, block_device_mapping,
        # bdm_v2 + 123 user keys = 128 properties, Glance's default quota.
        # The plugin's own keys (image_type, instance_uuid, user_id,
        # hypervisor_type, vm_mode) give way instead of refusing.
        server = self.server()
        image = self.snapshot(server.uuid, {'k%03d' % i: 'v'
                                            for i in range(123)})
        self.assertEqual('v', image['k122'])
        for key in ('image_type', 'instance_uuid', 'user_id',
                    'hypervisor_type', 'vm_mode'):
            self.assertNotIn(key, image)
        # With one slot left, image_type (Horizon, rotation) takes it.
        image = self.snapshot(server.uuid, {'k%03d' % i: 'v'
                                            for i in range(122)})
        self.assertEqual('snapshot', image['image_type'])
        self.assertNotIn('user_id', image)

    def test_one_key_more_than_nova_accepts_refused_early(self):
        server = self.server()
        message = self.refused(server.uuid, {'k%03d' % i: 'v'
                                             for i in range(124)},
                               status=403)
        self.assertIn('129 properties', message)

    def test_inherited_owner_not_copied_nor_refused(self):
        server = self.server({'image_owner': uuid.uuid4().hex,
                              'image_is_public': 'True'})
        image = self.snapshot(server.uuid)
        self.assertEqual(self.project_id, image['owner'])
        self.assertEqual('private', image['visibility'])
        self.assertNotIn('is_public', image)

    def test_instance_owner_of_own_project_shares_nothing(self):
        server = self.server()
        image = self.snapshot(server.uuid,
                              {'instance_owner': self.project_id})
        self.assertEqual('private', image['visibility'])
        self.assertNotIn('instance_owner', image)

    def test_instance_owner_of_other_project_refused_early(self):
        server = self.server()
        message = self.refused(server.uuid,
                               {'instance_owner': uuid.uuid4().hex},
                               status=403)
        self.assertIn('instance_owner', message)

    def test_non_image_system_metadata_not_copied(self):
        # Nova copies every system metadata key; vtpm_secret_uuid names
        # the server's vTPM secret in the key manager.
        server = self.server({'vtpm_secret_uuid': str(uuid.uuid4()),
                              'owner_user_name': 'alice',
                              'boot_roles': 'admin,member'})
        image = self.snapshot(server.uuid)
        for key in ('vtpm_secret_uuid', 'owner_user_name', 'boot_roles'):
            self.assertNotIn(key, image)
        self.assertEqual('ubuntu', image['os_distro'])

    def test_borrowed_identity_replaced_and_rotation_safe(self):
        server = self.server({
            'image_image_type': 'backup', 'image_backup_type': 'daily',
            'image_instance_uuid': OTHER_SERVER,
            'image_user_id': OTHER_USER,
            'image_signature_verified': 'True'})
        image = self.snapshot(server.uuid)
        self.assertEqual(('snapshot', server.uuid, self.user_id),
                         (image['image_type'], image['instance_uuid'],
                          image['user_id']))
        self.assertNotIn('backup_type', image)
        self.assertNotIn('signature_verified', image)
        # Nova's backup rotation of the other server
        # (compute.manager._rotate_backups) lists exactly these filters.
        rotation = list(self.admin_glance().images.list(filters={
            'image_type': 'backup', 'backup_type': 'daily',
            'instance_uuid': OTHER_SERVER}))
        self.assertEqual([], rotation)

    def test_base_image_type_not_claimed(self):
        server = self.server({'image_image_type': 'base'})
        self.assertEqual('snapshot',
                         self.snapshot(server.uuid)['image_type'])

    def test_volume_type_kept_and_horizon_sees_a_snapshot(self):
        server = self.server(
            {'image_cinder_encryption_key_id': str(uuid.uuid4())},
            volume_type='LUKS-T')
        image = self.snapshot(server.uuid)
        mappings = jsonutils.loads(image['block_device_mapping'])
        # Swap first (Nova's order): Horizon reads image_type.
        self.assertEqual('blank', mappings[0]['source_type'])
        self.assertEqual('snapshot', image['image_type'])
        root = [m for m in mappings if m['boot_index'] == 0][0]
        self.assertEqual('LUKS-T', root['volume_type'])
        self.assertIsNone(root['encryption_secret_uuid'])
        self.assertNotIn('cinder_encryption_key_id', image)

    def test_stamped_keys_follow_the_operator_list(self):
        server = self.server()
        image = self.snapshot(server.uuid)
        self.assertEqual(('qemu', 'hvm'),
                         (image['hypervisor_type'], image['vm_mode']))
        self.flags(non_inheritable_image_properties=[
            'hypervisor_type', 'vm_mode'], group='snapshot_ext')
        image = self.snapshot(server.uuid)
        self.assertNotIn('hypervisor_type', image)
        self.assertNotIn('vm_mode', image)

    def test_schema_pattern_refused_early_with_one_message(self):
        server = self.server({'image_kernel_id': 'aki-00000001'})
        message = self.refused(server.uuid)
        self.assertIn('kernel_id', message)
        self.assertEqual(1, message.count('aki-00000001'))


class TestBootable(NovaApiTestCase):
    """min_disk within the root volume, judged by Nova's boot validation."""

    def validate_boot(self, image_meta):
        from nova.compute import api as compute_api
        from nova import objects

        mappings = image_meta['properties']['block_device_mapping']
        root = [m for m in mappings if m['boot_index'] == 0][0]
        root_bdm = objects.BlockDeviceMapping(
            source_type=root['source_type'],
            destination_type=root['destination_type'],
            boot_index=0, volume_size=root['volume_size'])
        flavor = objects.Flavor(
            name='f160', flavorid='f160', memory_mb=2048, vcpus=1,
            root_gb=160, ephemeral_gb=0, swap=0, extra_specs={})
        compute_api.API._validate_flavor_image_nostatus(
            self.context, image_meta, flavor, root_bdm, validate_numa=False)

    def test_min_disk_lowered_to_root_volume_boots(self):
        from nova import exception as nova_exc
        from nova.image import glance as nova_glance

        server = self.server({'image_min_disk': '160'}, root_size=8)
        image = self.snapshot(server.uuid)
        self.assertEqual(8, image['min_disk'])
        image_meta = nova_glance.API().get(self.context, image['id'])
        self.validate_boot(image_meta)
        # The same validation refuses what the image said before.
        image_meta['min_disk'] = 160
        self.assertRaises(nova_exc.VolumeSmallerThanMinDisk,
                          self.validate_boot, image_meta)


class TestRecordWithoutNamedRequest(base.NovaGlanceTestCase):
    """The hook's fallback (a create the filter did not see): same kinds."""

    def test_kinds_dropped_from_novas_metadata(self):
        from nova_snapshot_ext.nova import adapter

        mapping = [{'source_type': 'snapshot', 'destination_type': 'volume',
                    'boot_index': 0, 'volume_size': 8, 'snapshot_id': 's1'}]
        sent = {'name': 'n', 'visibility': 'private', 'min_disk': 160,
                'block_device_mapping': jsonutils.dumps(mapping),
                'bdm_v2': 'True', 'root_device_name': '/dev/vda',
                'os_distro': 'ubuntu', 'vtpm_secret_uuid': 'v',
                'image_type': 'backup', 'backup_type': 'daily',
                'instance_uuid': OTHER_SERVER, 'user_id': OTHER_USER,
                'owner': 'p0', 'is_public': 'True',
                'signature_verified': 'True', 'os_glance_x': 'y'}
        record = adapter.record_from_glance_meta(sent)
        self.assertEqual(['bdm_v2', 'block_device_mapping', 'os_distro',
                          'os_glance_x', 'root_device_name'],
                         sorted(record.properties))
        self.assertEqual(8, record.min_disk)
        self.assertEqual(['s1'],
                         adapter.NovaImageMeta.read(sent).snapshot_ids)


class TestNamedRequest(NovaApiTestCase):
    """The hook's one-record path and its guards."""

    def test_snapshot_ids_must_match_volume_mappings(self):
        from nova import context as nova_context
        from nova_snapshot_ext import exception
        from nova_snapshot_ext.nova import adapter

        server = self.server()
        loaded = adapter.load_server(nova_context.get_admin_context(),
                                     server.uuid)
        self.assertIsNotNone(loaded)
        instance, bdms = loaded
        req = adapter.request_from_nova(self.context, instance, bdms, 'n',
                                        {}, snapshot_ids=['snap-1'])
        volume = [b for b in req.block_device_mappings if b.is_volume]
        self.assertEqual(['snap-1'], [b.snapshot_id for b in volume])
        self.assertRaises(exception.InvalidRequest,
                          adapter.request_from_nova, self.context, instance,
                          bdms, 'n', {}, snapshot_ids=['a', 'b'])
        self.assertIsNone(adapter.load_server(self.context,
                                              OTHER_SERVER))

    def test_a_mapping_records_at_least_its_snapshot_size(self):
        """An extend Nova has not seen yet: Cinder's snapshot size wins.

        Nova's ``volume_size`` follows an extend only once nova-compute
        handled Cinder's ``volume-extended`` event; an image recording the
        old size boots nothing (Cinder: "Volume size '1'GB cannot be
        smaller than the snapshot size 2GB", seen on the real stack).
        """
        from nova import context as nova_context
        from nova_snapshot_ext.nova import adapter

        server = self.server(root_size=1)
        instance, bdms = adapter.load_server(
            nova_context.get_admin_context(), server.uuid)

        def root_size(sizes):
            req = adapter.request_from_nova(
                self.context, instance, bdms, 'n', {},
                snapshot_ids=['snap-1'], snapshot_sizes=sizes)
            (root,) = [b for b in req.block_device_mappings if b.is_volume]
            return root.volume_size

        self.assertEqual(2, root_size({'snap-1': 2}))
        self.assertEqual(1, root_size({'snap-1': 1}))
        # Not read from Cinder, or another snapshot's size: Nova's value.
        self.assertEqual(1, root_size({}))
        self.assertEqual(1, root_size({'snap-2': 5}))

    def test_volume_size_for(self):
        from nova_snapshot_ext.nova import adapter

        self.assertEqual(2, adapter.volume_size_for(1, 2))
        self.assertEqual(3, adapter.volume_size_for(3, 2))
        self.assertEqual(2, adapter.volume_size_for(None, 2))
        self.assertEqual(1, adapter.volume_size_for(1, None))
        self.assertIsNone(adapter.volume_size_for(None, None))
        # No size Cinder could give a volume: ignored, never lowers.
        for odd in (0, -1, True, '3', 2.5):
            self.assertEqual(1, adapter.volume_size_for(1, odd), odd)
            self.assertIsNone(adapter.volume_size_for(None, odd), odd)

    def test_pending_request_is_per_context_and_name(self):
        from nova_snapshot_ext.nova import hook

        other = object()
        with hook.pending_create_image(self.context, 'sid', 'n', {'a': 'b'}):
            self.assertEqual(('sid', {'a': 'b'}),
                             hook._pending_for(self.context, 'n'))
            self.assertIsNone(hook._pending_for(other, 'n'))
            self.assertIsNone(hook._pending_for(self.context, 'm'))
        self.assertIsNone(hook._pending_for(self.context, 'n'))


class _ApiHostDriver(NovaApiTestCase):
    """Issue 21 point 2: an API host's driver is known, or stamps nothing.

    The API host's nova.conf has no ``[snapshot_ext] driver``; its
    ``[DEFAULT] compute_driver`` is :attr:`COMPUTE_DRIVER`.
    """

    SNAPSHOT_DRIVER = None
    COMPUTE_DRIVER: str | None = None

    def configure_api_host(self):
        self.flags(compute_driver=self.COMPUTE_DRIVER)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_snapshot_ext.driver._WARNED', set()))
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='nova_snapshot_ext', level=logging.WARNING))


class TestUnconfiguredApiHost(_ApiHostDriver):

    def test_stamps_nothing_and_says_so_once(self):
        image = self.snapshot(self.server().uuid)
        self.assertNotIn('hypervisor_type', image)
        self.assertNotIn('vm_mode', image)
        self.assertEqual(1, self.logs.output.count(
            'Snapshot driver libvirt is guessed, not known'),
            self.logs.output)


class TestVMwareApiHost(_ApiHostDriver):

    COMPUTE_DRIVER = 'vmwareapi.VMwareVCDriver'

    def test_stamps_vmware(self):
        image = self.snapshot(self.server().uuid)
        self.assertEqual(('vmware', 'hvm'),
                         (image['hypervisor_type'], image['vm_mode']))
        self.assertNotIn('guessed', self.logs.output)
