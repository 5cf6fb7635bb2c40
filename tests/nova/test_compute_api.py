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

"""``nova.compute.api.API.snapshot_volume_backed`` itself, hook installed.

Nova's own test base and fixtures: sqlite API + cell databases, policy,
RPC fixture; ``CinderFixture`` is the only stub (Cinder).  The image goes
to a real Glance 33 that refuses ``raw``.
"""

import uuid

from oslo_serialization import jsonutils

from tests.nova import base


class TestSnapshotVolumeBacked(base.NovaServerTestCase):

    def _snapshot(self, instance, name, **extra):
        from nova.compute import api as compute_api

        return compute_api.API().snapshot_volume_backed(
            self.context, instance, name, extra_properties=extra)

    def test_active_image_with_novas_mappings(self):
        from nova_snapshot_ext.nova import filter as filter_mod

        self.assertIsNotNone(filter_mod.load_plugin())
        instance = self.create_server()
        name = 'bfv-%s' % uuid.uuid4().hex[:8]
        image = self._snapshot(instance, name, backup_schedule='nightly')

        self.assertEqual('active', image['status'])
        self.assertEqual('qcow2', image['disk_format'])
        snapshots = list(self.cinder.volume_snapshots.values())
        self.assertEqual([self.volume_id],
                         [s['volume_id'] for s in snapshots])
        props = image['properties']
        mappings = props['block_device_mapping']
        # Nova's order: non-volume entries first, then the snapshots.
        self.assertEqual(
            [('blank', 'local', '/dev/vdb', None),
             ('snapshot', 'volume', '/dev/vda', snapshots[0]['id'])],
            [(m['source_type'], m['destination_type'], m['device_name'],
              m['snapshot_id']) for m in mappings])
        self.assertEqual(0, mappings[1]['boot_index'])
        self.assertEqual(10, mappings[1]['volume_size'])
        self.assertIsNone(mappings[1]['volume_id'])
        self.assertEqual('True', props['bdm_v2'])
        self.assertEqual('/dev/vda', props['root_device_name'])
        self.assertEqual('nightly', props['backup_schedule'])
        self.assertEqual('ubuntu', props['os_distro'])
        self.assertEqual((512, 10), (image['min_ram'], image['min_disk']))

        stored = self.admin_glance().images.get(image['id'])
        self.assertEqual((self.project_id, 'private'),
                         (stored['owner'], stored['visibility']))
        self.assertEqual(mappings,
                         jsonutils.loads(stored['block_device_mapping']))

    def test_without_hook_snapshots_taken_then_nova_fails(self):
        # The problem the plugin solves: Nova snapshots the volume, then
        # its raw force-activation is refused; the snapshot stays behind.
        from glanceclient import exc as glance_exc

        instance = self.create_server()
        name = 'bfv-nohook-%s' % uuid.uuid4().hex[:8]
        if base.nova_uploads_raw():
            # Nova 31+: raw, not in this Glance's schema.
            self.assertRaises(TypeError, self._snapshot, instance, name)
            self.assertEqual([], self.images_named(name))
        else:
            # Nova 29/30: zero bytes labelled qcow2, refused by Glance's
            # format inspection (415); the queued image stays behind too.
            err = self.assertRaises(glance_exc.HTTPException,
                                    self._snapshot, instance, name)
            self.assertIn('HTTP 415', str(err))
            self.assertEqual(['queued'],
                             [i['status'] for i in self.images_named(name)])
        self.assertEqual(1, len(self.cinder.volume_snapshots))
