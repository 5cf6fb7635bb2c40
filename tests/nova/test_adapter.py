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

"""Conversions between Nova's data and the plugin's (no Glance needed)."""

import importlib.util
import unittest

from oslo_serialization import jsonutils
from oslotest import base as oslotest_base

from nova_snapshot_ext import exception
from nova_snapshot_ext.nova import adapter

NOVA_MISSING = importlib.util.find_spec('nova') is None


class TestRecordFromGlanceMeta(oslotest_base.BaseTestCase):

    def test_keeps_novas_encodings(self):
        # As Nova writes a volume entry (snapshot_from_bdm).
        mapping = [{'source_type': 'snapshot', 'destination_type': 'volume',
                    'snapshot_id': 'S1', 'boot_index': 0}]
        sent = {'id': 'c0ffee00-0000-4000-8000-000000000001', 'name': 'n',
                'visibility': 'private', 'min_ram': 512, 'min_disk': 10,
                'block_device_mapping': jsonutils.dumps(mapping),
                'bdm_v2': 'True', 'kernel_id': None, 'os_distro': 'x'}
        record = adapter.record_from_glance_meta(sent)
        self.assertEqual(sent['id'], record.image_id)
        self.assertEqual((512, 10, 'private', None),
                         (record.min_ram, record.min_disk,
                          record.visibility, record.member))
        self.assertEqual({'block_device_mapping': sent[
            'block_device_mapping'], 'bdm_v2': 'True', 'os_distro': 'x'},
            record.properties)
        self.assertEqual(mapping, record.mappings)

    def test_secrets_and_glance_state_not_copied(self):
        # Nova copies every system metadata key (password_N, owner
        # names...) onto the image; the plugin does not. Reserved names
        # can only be the user's here: kept for the preflight to refuse.
        sent = {'name': 'n', 'visibility': 'private',
                'block_device_mapping': '[]', 'bdm_v2': 'True',
                'root_device_name': '/dev/vda', 'os_distro': 'x',
                'password_0': 'c2VjcmV0', 'owner_user_name': 'alice',
                'owner_project_name': 'demo', 'boot_roles': 'admin',
                'site_secret': 's', 'os_glance_x': 'y'}
        record = adapter.record_from_glance_meta(
            sent, non_inheritable=['site_secret'])
        self.assertEqual(['bdm_v2', 'block_device_mapping', 'os_distro',
                          'os_glance_x', 'root_device_name'],
                         sorted(record.properties))

    def test_member_and_generated_id(self):
        record = adapter.record_from_glance_meta(
            {'name': 'n', 'visibility': 'shared'}, member='p2')
        self.assertEqual(('shared', 'p2'), (record.visibility,
                                            record.member))
        self.assertEqual(36, len(record.image_id))

    def test_bad_mapping_json(self):
        self.assertRaises(exception.InvalidRequest,
                          adapter.record_from_glance_meta,
                          {'block_device_mapping': '{not json'})

    def test_plain_activation(self):
        self.assertTrue(adapter.NovaImageMeta.read({'name': 'n'}).plain)
        for key in adapter.NOT_OURS_KEYS:
            self.assertFalse(adapter.NovaImageMeta.read({key: 'x'}).plain)

    def test_read_once(self):
        # The mapping is decoded when read; an unreadable one is said by
        # the snapshot ids (None) and refused by the record only.
        meta = adapter.NovaImageMeta.read({
            'name': 'n', 'block_device_mapping': jsonutils.dumps([
                {'source_type': 'snapshot', 'destination_type': 'volume',
                 'snapshot_id': 's1'},
                {'source_type': 'blank', 'destination_type': 'local'}])})
        self.assertEqual(['s1'], meta.snapshot_ids)
        self.assertEqual(2, len(meta.entries))
        for bad in ('{not json', '{"a": 1}'):
            meta = adapter.NovaImageMeta.read({'block_device_mapping': bad})
            self.assertIsNone(meta.snapshot_ids)
            self.assertRaises(exception.InvalidRequest, meta.record)
        self.assertEqual([], adapter.NovaImageMeta.read({}).snapshot_ids)


@unittest.skipIf(NOVA_MISSING, 'nova is not installed (tox -e nova)')
class TestNovaConversions(oslotest_base.BaseTestCase):

    def test_exception_mapping(self):
        from nova import exception as nova_exc

        cases = [
            (exception.ReservedProperty(property='os_glance_x',
                                        reason='r'), nova_exc.Forbidden),
            (exception.PropertyNameTooLong(property='k', length=300),
             nova_exc.Invalid),
            (exception.GlanceBadRequest(operation='create', reason='r'),
             nova_exc.ImageBadRequest),
            (exception.ImageFormatRejected(disk_format='qcow2',
                                           image_id='i', reason='r'),
             nova_exc.ImageBadRequest),
            (exception.GlanceForbidden(operation='create', reason='r'),
             nova_exc.Forbidden),
            (exception.GlanceOverLimit(operation='upload', reason='r'),
             nova_exc.OverQuota),
            (exception.GlanceQuotaExceeded(
                project='p', resource='image_count_total', reason='r'),
             nova_exc.OverQuota),
            (exception.GlanceNotFound(operation='get', reason='r'),
             nova_exc.NotFound),
            (exception.GlanceUnavailable(operation='create', reason='r'),
             nova_exc.GlanceConnectionFailed),
            (exception.GlanceConflict(operation='create', reason='r'),
             nova_exc.NovaException),
        ]
        for ours, theirs in cases:
            mapped = adapter.to_nova_exception(ours)
            self.assertIs(theirs, type(mapped), ours)
        failed = exception.ActivationFailed(name='n', reason='all refused')
        failed.code = 415
        mapped = adapter.to_nova_exception(failed)
        self.assertIsInstance(mapped, nova_exc.Invalid)
        self.assertIn('all refused', mapped.format_message())

    def test_bdm_dict_placeholder_snapshot_id(self):
        from nova import objects

        objects.register_all()
        volume = objects.BlockDeviceMapping(
            source_type='volume', destination_type='volume',
            volume_id='V1', boot_index=0, device_name='/dev/vda',
            volume_size=10)
        local = objects.BlockDeviceMapping(
            source_type='blank', destination_type='local',
            guest_format='swap', boot_index=-1)
        vol, loc = adapter.bdm_dict(volume), adapter.bdm_dict(local)
        self.assertEqual(36, len(vol['snapshot_id']))
        self.assertEqual('V1', vol['volume_id'])
        self.assertIsNone(loc['snapshot_id'])
        self.assertEqual(('swap', False, False),
                         (loc['guest_format'], loc['no_device'],
                          loc['delete_on_termination']))
