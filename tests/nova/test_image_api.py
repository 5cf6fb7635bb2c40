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

"""Nova's own image API call, with and without the filter's hook.

``nova.image.glance.API().create(ctx, image_meta)`` is called exactly as
``compute.api.API.snapshot_volume_backed`` calls it (``size: 0``, no data,
mappings built by Nova's ``block_device`` helpers), against a real Glance
33 that refuses ``raw``.
"""

import os
import uuid

import fixtures
from oslo_utils.imageutils import format_inspector

from nova_snapshot_ext.embedded import glance as embedded_glance
from tests.nova import base


def nova_bfv_image_meta(name, snapshot_id, extra=None):
    """The image_meta ``snapshot_volume_backed`` passes to create().

    Built with Nova's own helpers: a blank swap mapping first
    (``get_image_mapping()``), then the volume snapshot mapping
    (``snapshot_from_bdm(...).get_image_mapping()``); min_ram/min_disk as
    the strings system metadata holds; ``bdm_v2`` the bool True.
    """
    from nova import block_device

    volume_bdm = {'source_type': 'volume', 'destination_type': 'volume',
                  'boot_index': 0, 'device_name': '/dev/vda',
                  'volume_id': str(uuid.uuid4()), 'volume_size': 10,
                  'delete_on_termination': True, 'disk_bus': 'virtio',
                  'device_type': 'disk'}
    swap = block_device.BlockDeviceDict({
        'source_type': 'blank', 'destination_type': 'local',
        'guest_format': 'swap', 'boot_index': -1, 'device_name': '/dev/vdb',
        'volume_size': 1, 'delete_on_termination': True,
        'disk_bus': 'virtio', 'device_type': 'disk'}).get_image_mapping()
    mapping = [swap, block_device.snapshot_from_bdm(
        snapshot_id, volume_bdm).get_image_mapping()]
    properties = {'os_distro': 'ubuntu', 'hw_disk_bus': 'virtio',
                  'root_device_name': '/dev/vda',
                  'block_device_mapping': mapping, 'bdm_v2': True}
    properties.update(extra or {})
    return {'name': name, 'size': 0, 'visibility': 'private',
            'min_ram': '512', 'min_disk': '10', 'properties': properties}


class TestNovaImageCreate(base.NovaGlanceTestCase):

    def _create(self, meta):
        from nova.image import glance as nova_glance

        return nova_glance.API().create(self.context, meta)

    def _load(self):
        from nova_snapshot_ext.nova import filter as filter_mod

        plugin = filter_mod.load_plugin()
        self.assertIsNotNone(plugin)
        self.assertTrue(plugin.activation)
        return plugin

    def test_without_hook_nova_fails_on_glance_without_raw(self):
        name = 'nova-only-%s' % uuid.uuid4().hex[:8]
        snap = str(uuid.uuid4())
        self.assert_nova_alone_fails(nova_bfv_image_meta(name, snap), name)

    def assert_nova_alone_fails(self, meta, name):
        """Nova's own force-activation on this no-raw, inspecting Glance."""
        from glanceclient import exc as glance_exc

        if base.nova_uploads_raw():
            # Nova 31+ force-activates with disk_format=raw; this Glance's
            # schema has no raw, so glanceclient refuses the create (a
            # TypeError Nova does not translate: HTTP 500 in nova-api).
            err = self.assertRaises(TypeError, self._create, meta)
            self.assertIn("'raw' is not one of", str(err))
            self.assertEqual([], self.images_named(name))
        else:
            # Nova 29/30 label zero bytes qcow2 (first in the schema);
            # Glance's format inspection refuses the upload (415, which
            # Nova does not translate: HTTP 500 in nova-api) and the
            # image stays behind, queued.
            err = self.assertRaises(glance_exc.HTTPException, self._create,
                                    meta)
            self.assertIn('HTTP 415', str(err))
            left = self.images_named(name)
            self.assertEqual([('queued', 'qcow2')],
                             [(i['status'], i['disk_format']) for i in left])
            for image in left:
                self.admin_glance().images.delete(image['id'])

    def test_with_hook_active_honest_image(self):
        self._load()
        name = 'hooked-%s' % uuid.uuid4().hex[:8]
        snap = str(uuid.uuid4())
        meta = nova_bfv_image_meta(name, snap)
        image = self._create(meta)

        # What Nova's create returns: _translate_from_glance of the image.
        self.assertEqual('active', image['status'])
        self.assertEqual(('qcow2', 'bare'), (image['disk_format'],
                                             image['container_format']))
        self.assertFalse(image['is_public'])
        self.assertEqual(512, image['min_ram'])
        self.assertEqual(10, image['min_disk'])
        props = image['properties']
        self.assertEqual(meta['properties']['block_device_mapping'],
                         props['block_device_mapping'])
        self.assertEqual('True', props['bdm_v2'])
        self.assertEqual('/dev/vda', props['root_device_name'])
        self.assertEqual('ubuntu', props['os_distro'])

        # As Glance stores it: the owner's private image, Nova's encodings,
        # and bytes that really are an (empty) qcow2 image.
        raw = self.admin_glance().images.get(image['id'])
        self.assertEqual((self.project_id, 'private', 'active'),
                         (raw['owner'], raw['visibility'], raw['status']))
        self.assertIsInstance(raw['block_device_mapping'], str)
        self.assertIn(snap, raw['block_device_mapping'])
        data = b''.join(self.admin_glance().images.data(image['id']))
        self.assertEqual(raw['size'], len(data))
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'img')
        with open(path, 'wb') as f:
            f.write(data)
        inspector = format_inspector.detect_file_format(path)
        self.assertEqual('qcow2', str(inspector))
        inspector.safety_check()
        self.assertEqual([image['id']],
                         [i['id'] for i in self.images_named(name)])

    def test_disable_gives_nova_its_create_back(self):
        from nova.image import glance as nova_glance
        from nova_snapshot_ext.nova import hook

        original = nova_glance.GlanceImageServiceV2.create
        plugin = self._load()
        self.assertTrue(hook.installed())
        # Idempotent: a second install does not wrap twice.
        self.assertTrue(hook.install(plugin.conf, plugin.service))
        wrapped = nova_glance.GlanceImageServiceV2.create
        self.assertIs(original, getattr(wrapped, '_snapshot_ext_original'))
        hook.disable()
        self.assertIs(original, nova_glance.GlanceImageServiceV2.create)
        hook.disable()
        name = 'disabled-%s' % uuid.uuid4().hex[:8]
        self.assert_nova_alone_fails(
            nova_bfv_image_meta(name, str(uuid.uuid4())), name)

    def test_reserved_property_refused_as_nova_forbidden(self):
        from nova import exception as nova_exc

        self._load()
        name = 'reserved-%s' % uuid.uuid4().hex[:8]
        meta = nova_bfv_image_meta(name, str(uuid.uuid4()),
                                   extra={'os_glance_x': 'y'})
        err = self.assertRaises(nova_exc.Forbidden, self._create, meta)
        self.assertIn('os_glance_x', err.format_message())
        self.assertEqual([], self.images_named(name))

    def test_long_property_name_refused_as_nova_invalid(self):
        from nova import exception as nova_exc

        self._load()
        name = 'long-%s' % uuid.uuid4().hex[:8]
        meta = nova_bfv_image_meta(name, str(uuid.uuid4()),
                                   extra={'k' * 300: 'v'})
        self.assertRaises(nova_exc.Invalid, self._create, meta)
        self.assertEqual([], self.images_named(name))

    def test_other_creates_stay_novas(self):
        self._load()
        name = 'regular-%s' % uuid.uuid4().hex[:8]
        # A regular snapshot's create: formats given, no size -> Nova.
        image = self._create({'name': name, 'disk_format': 'qcow2',
                              'container_format': 'bare',
                              'properties': {'image_type': 'snapshot'}})
        self.addCleanup(self.admin_glance().images.delete, image['id'])
        self.assertEqual('queued', image['status'])
        self.assertEqual('snapshot', image['properties']['image_type'])

    def test_instance_owner_becomes_member(self):
        self._load()
        owner = uuid.uuid4().hex
        name = 'shared-%s' % uuid.uuid4().hex[:8]
        meta = nova_bfv_image_meta(name, str(uuid.uuid4()),
                                   extra={'instance_owner': owner})
        meta['visibility'] = 'shared'
        image = self._create(meta)
        self.assertEqual('active', image['status'])
        self.assertNotIn('instance_owner', image['properties'])
        members = self.admin_glance().image_members.list(image['id'])
        self.assertEqual([owner], [m['member_id'] for m in members])


class TestSupportCheck(base.NovaGlanceTestCase):

    GLANCE_PROFILE = 'default'

    def test_unknown_nova_refused_with_one_error_and_pass_through(self):
        from nova_snapshot_ext.nova import filter as filter_mod
        from nova_snapshot_ext.nova import hook

        for version in ('28.3.1', '35.0.0'):
            self.useFixture(fixtures.MonkeyPatch(
                'nova_snapshot_ext.nova.hook.nova_version',
                lambda version=version: version))
            sentinel = object()
            self.assertIs(sentinel, filter_mod.filter_factory({})(sentinel))
            self.assertFalse(hook.installed())
            errors = [line for line in self.stdlog.logger.output.splitlines()
                      if 'nova-snapshot-ext is NOT active' in line and
                      'Nova %s is not a supported version' % version in line]
            self.assertEqual(1, len(errors), errors)
            filter_mod.unload_plugin()

    def test_profiles_known(self):
        self.assertIn('no-raw', embedded_glance.PROFILES)
