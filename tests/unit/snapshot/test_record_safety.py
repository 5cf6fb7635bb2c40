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

"""Every record safe to boot and to delete (issue 28, items 1 and 2).

A record holds only the mappings Nova writes into a snapshot image
(``nova/compute/api.py`` ``snapshot_volume_backed``), and never a
property that makes Glance destroy another resource when the image is
deleted.
"""

import io
import json
import os
from unittest import mock

import fixtures
from glanceclient import exc as gexc

from nova_snapshot_ext.cmd import main
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import mappings
from nova_snapshot_ext.snapshot import metadata
from nova_snapshot_ext.snapshot import request
from tests import base
from tests.unit import fake_glanceclient
from tests.unit.snapshot import test_attempts

LIVE = '0f7c1c8e-5d2b-4f3a-9e61-7a1b2c3d4e09'
SNAP = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c09'
ARMED = {'cinder_encryption_key_id': '3c8f1a2b-0000-4000-8000-000000000009',
         'cinder_encryption_key_deletion_policy': 'on_image_deletion'}


def with_mapping(**mapping):
    """The sample request plus one mapping (index 3)."""
    data = base.sample_request_dict()
    data['block_device_mappings'].append(dict(mapping,
                                              device_name='/dev/vdz'))
    return data


#: Mappings Nova never writes into a snapshot image -> the field named.
UNSAFE = [
    ({'source_type': 'volume', 'volume_id': LIVE}, 'snapshot_id'),
    ({'source_type': 'volume', 'destination_type': None,
      'volume_id': LIVE}, 'snapshot_id'),
    ({'source_type': 'snapshot', 'snapshot_id': None}, 'snapshot_id'),
    ({'source_type': 'volume', 'volume_id': LIVE, 'snapshot_id': SNAP},
     'destination_type'),
    ({'source_type': 'blank', 'volume_size': 1}, 'destination_type'),
    ({'source_type': 'image', 'image_id': LIVE}, 'destination_type'),
    ({'source_type': 'volume', 'destination_type': 'local',
      'volume_id': LIVE}, 'source_type'),
    ({'source_type': 'snapshot', 'destination_type': 'local',
      'snapshot_id': SNAP}, 'source_type'),
    ({'source_type': 'blank', 'destination_type': 'local',
      'volume_id': LIVE}, 'volume_id'),
    ({'source_type': 'image', 'destination_type': 'local',
      'image_id': LIVE, 'snapshot_id': SNAP}, 'snapshot_id'),
    ({'source_type': 'blank', 'destination_type': 'local',
      'no_device': 'false', 'volume_id': LIVE}, 'volume_id'),
]

#: Mappings Nova writes (or skips): accepted.
NOVA_SHAPES = [
    {'source_type': 'volume', 'destination_type': 'volume',
     'volume_id': LIVE, 'snapshot_id': SNAP},
    {'source_type': 'snapshot', 'destination_type': 'volume',
     'snapshot_id': SNAP},
    {'source_type': 'image', 'destination_type': 'volume',
     'image_id': LIVE, 'snapshot_id': SNAP},
    {'source_type': 'blank', 'destination_type': 'volume',
     'snapshot_id': SNAP, 'volume_size': 1},
    {'source_type': 'blank', 'destination_type': 'local',
     'guest_format': 'swap', 'volume_size': 1},
    {'source_type': 'blank', 'destination_type': 'local',
     'guest_format': 'ext4', 'volume_size': 5},
    {'source_type': 'image', 'destination_type': 'local',
     'image_id': LIVE, 'boot_index': -1},
    # no_device: Nova skips it, whatever else it says.
    {'source_type': 'volume', 'no_device': True, 'volume_id': LIVE},
    {'source_type': 'blank', 'no_device': 'yes'},
]


class TestMappingRule(base.TestCase):

    def test_unsafe_mappings_refused_naming_the_field(self):
        for mapping, field in UNSAFE:
            err = self.assertRaises(
                exception.InvalidRequest, request.SnapshotRequest.from_dict,
                with_mapping(**mapping))
            self.assertEqual('block_device_mappings[3].%s' % field,
                             err.kwargs['field'], mapping)
            self.assertIn('block_device_mappings[3].%s' % field,
                          err.format_message())

    def test_live_volume_refusal_is_unsafe_and_says_why(self):
        err = self.assertRaises(
            exception.UnsafeRecord, request.SnapshotRequest.from_dict,
            with_mapping(source_type='volume', volume_id=LIVE))
        self.assertIn(LIVE, err.format_message())
        self.assertIn('own volume', err.format_message())

    def test_nova_shapes_accepted_and_no_cinder_id_copied_as_is(self):
        for mapping in NOVA_SHAPES:
            req = request.SnapshotRequest.from_dict(with_mapping(**mapping))
            record = metadata.build_image_record(req, image_id='x')
            for entry in record.mappings:
                # What the image hands a new server: never a volume, only
                # the snapshots taken (or local disks).
                self.assertIsNone(entry['volume_id'], mapping)
                self.assertIsNone(mappings.mapping_refusal(
                    entry, written=True), entry)

    def test_validate_refuses_a_request_built_in_python(self):
        req = request.SnapshotRequest.from_dict(base.sample_request_dict())
        req.block_device_mappings.append(request.BlockDeviceMapping(
            source_type='volume', volume_id=LIVE, device_name='/dev/vdz'))
        err = self.assertRaises(exception.UnsafeRecord, req.validate)
        self.assertEqual('block_device_mappings[3].snapshot_id',
                         err.kwargs['field'])

    def test_written_rule_refuses_a_volume_entry(self):
        entry = {'source_type': 'volume', 'destination_type': 'volume',
                 'volume_id': LIVE, 'snapshot_id': SNAP}
        field, reason, unsafe = mappings.mapping_refusal(entry, written=True)
        self.assertEqual('source_type', field)
        self.assertTrue(unsafe)
        self.assertIn(LIVE, reason)
        # The same mapping in a request is rewritten as its snapshot.
        self.assertIsNone(mappings.mapping_refusal(entry))

    def test_written_rule_refuses_a_snapshot_entry_naming_a_volume(self):
        # Nova's _validate_bdm attaches a mapping's volume_id whatever its
        # source_type, and DriverVolSnapshotBlockDevice.attach creates a
        # volume from the snapshot only when there is no volume_id:
        # snapshot_from_bdm never writes one.
        entry = {'source_type': 'snapshot', 'destination_type': 'volume',
                 'volume_id': LIVE, 'snapshot_id': SNAP, 'boot_index': 0}
        field, reason, unsafe = mappings.mapping_refusal(entry, written=True)
        self.assertEqual('volume_id', field)
        self.assertTrue(unsafe)
        self.assertIn(LIVE, reason)
        # What Nova writes (volume_id null) stays accepted.
        self.assertIsNone(mappings.mapping_refusal(
            dict(entry, volume_id=None), written=True))


class TestCLI(base.TestCase):
    """Refused before anything exists: exit 2 naming the field."""

    def run_cli(self, data):
        tmp = self.useFixture(fixtures.TempDir()).path
        stdout = self.useFixture(fixtures.MonkeyPatch(
            'sys.stdout', io.StringIO())).new_value
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        conf = os.path.join(tmp, 'c.conf')
        with open(conf, 'w') as f:
            # Nothing listens on port 9: a refusal after a connection try
            # would be exit 3, not 2.
            f.write('[snapshot_ext_glance]\nauth_type = none\n'
                    'endpoint_override = http://127.0.0.1:9\n')
        path = os.path.join(tmp, 'r.json')
        with open(path, 'w') as f:
            json.dump(data, f)
        code = main.main(['snapshot', '--config-file', conf,
                          '--format', 'json', path])
        return code, json.loads(stdout.getvalue())['error']

    def test_live_volume_mapping_exit_2(self):
        data = base.sample_request_dict()
        data['block_device_mappings'][1].update(destination_type=None)
        del data['block_device_mappings'][1]['snapshot_id']
        code, error = self.run_cli(data)
        self.assertEqual(2, code)
        self.assertIn('block_device_mappings[1].snapshot_id', error)

    def test_armed_deletion_policy_exit_2(self):
        data = base.sample_request_dict()
        data['metadata'].update(ARMED)
        code, error = self.run_cli(data)
        self.assertEqual(2, code)
        self.assertIn('metadata.cinder_encryption_key_deletion_policy',
                      error)


class TestDeletionHazard(base.TestCase):

    def test_armed_metadata_refused_naming_the_property(self):
        data = base.sample_request_dict()
        data['metadata'].update(ARMED)
        err = self.assertRaises(exception.UnsafeRecord,
                                request.SnapshotRequest.from_dict, data)
        self.assertEqual('metadata.cinder_encryption_key_deletion_policy',
                         err.kwargs['field'])
        self.assertIn('key-manager secret', err.format_message())

    def test_policy_alone_refused_key_alone_accepted(self):
        # The policy arms whatever key id is added later; a key id with
        # no policy (or another) makes Glance do nothing at deletion.
        data = base.sample_request_dict()
        data['metadata']['cinder_encryption_key_deletion_policy'] = (
            'on_image_deletion')
        self.assertRaises(exception.UnsafeRecord,
                          request.SnapshotRequest.from_dict, data)
        for policy in (None, 'do_not_delete', 'on_volume_deletion'):
            data = base.sample_request_dict()
            data['metadata']['cinder_encryption_key_id'] = ARMED[
                'cinder_encryption_key_id']
            if policy:
                data['metadata'][
                    'cinder_encryption_key_deletion_policy'] = policy
            req = request.SnapshotRequest.from_dict(data)
            record = metadata.build_image_record(req, image_id='x')
            self.assertIsNone(deletion.hazard(record.properties))

    def test_never_inherited(self):
        data = base.sample_request_dict()
        data['server']['image_metadata'] = dict(ARMED)
        data['server']['system_metadata'].update(
            {'image_' + k: v for k, v in ARMED.items()})
        req = request.SnapshotRequest.from_dict(data)
        record = metadata.build_image_record(req, image_id='x')
        self.assertIsNone(deletion.hazard(record.properties))
        self.assertNotIn('cinder_encryption_key_deletion_policy',
                         record.properties)

    def test_builder_never_makes_an_armed_record(self):
        req = request.SnapshotRequest.from_dict(base.sample_request_dict())
        err = self.assertRaises(
            exception.UnsafeRecord, metadata.build_image_record, req,
            driver_properties={'cinder_encryption_key_deletion_policy':
                               'on_image_deletion'}, image_id='x')
        self.assertIn('cinder_encryption_key_deletion_policy',
                      err.format_message())

    def test_refusal_to_delete(self):
        self.assertIsNone(deletion.refusal_to_delete({'id': 'x'}))
        why = deletion.refusal_to_delete(dict(ARMED, id='x'))
        self.assertIn('not deleted', why)
        self.assertIn('cinder_encryption_key_deletion_policy', why)


class TestCleanupNeverDeletesArmed(test_attempts.AttemptTestBase):

    def test_failed_attempt_armed_since_is_left_and_named(self):
        # Someone armed the image between its create and a failed upload:
        # the cleanup's re-read sees it, the image is left and named.
        def armed_then_refused(image_id, data, image_size=None):
            self.fake.images[image_id].update(ARMED)
            raise gexc.HTTPBadRequest('no')

        with mock.patch.object(fake_glanceclient._Images, 'upload',
                               side_effect=armed_then_refused):
            err = self.fails()
        self.assertNotIn('delete', self.fake.calls)
        self.assertTrue(err.result.leftover)
        for image_id in err.result.leftover:
            self.assertIn(image_id, self.fake.images)
            self.assertIn(image_id, err.result.not_deletable)
        text = err.result.leftover_text()
        self.assertIn('not deleted', text)
        self.assertIn('key-manager secret', text)
        self.assertNotIn('COULD NOT DELETE', text)


class TestNovaFallbackRecord(base.TestCase):
    """The hook's record from Nova's metadata keeps the same rules."""

    def sent(self, mappings, **props):
        from oslo_serialization import jsonutils

        return dict(props, id='4b0a3c1e-0000-4000-8000-000000000001',
                    name='n', bdm_v2='True', root_device_name='/dev/vda',
                    block_device_mapping=jsonutils.dumps(mappings))

    def test_unsafe_entry_refused(self):
        from nova_snapshot_ext.nova import adapter

        root = {'source_type': 'snapshot', 'destination_type': 'volume',
                'snapshot_id': SNAP, 'boot_index': 0}
        live = {'source_type': 'volume', 'destination_type': None,
                'volume_id': LIVE}
        err = self.assertRaises(exception.UnsafeRecord,
                                adapter.record_from_glance_meta,
                                self.sent([root, live]), None)
        self.assertEqual('block_device_mapping[1].snapshot_id',
                         err.kwargs['field'])
        record = adapter.record_from_glance_meta(self.sent([root]), None)
        self.assertEqual([root], record.mappings)

    def test_snapshot_entry_naming_a_volume_refused(self):
        from nova_snapshot_ext.nova import adapter

        root = {'source_type': 'snapshot', 'destination_type': 'volume',
                'snapshot_id': SNAP, 'volume_id': LIVE, 'boot_index': 0}
        err = self.assertRaises(exception.UnsafeRecord,
                                adapter.record_from_glance_meta,
                                self.sent([root]), None)
        self.assertEqual('block_device_mapping[0].volume_id',
                         err.kwargs['field'])

    def test_armed_policy_refused(self):
        from nova_snapshot_ext.nova import adapter

        root = {'source_type': 'snapshot', 'destination_type': 'volume',
                'snapshot_id': SNAP, 'boot_index': 0}
        err = self.assertRaises(exception.UnsafeRecord,
                                adapter.record_from_glance_meta,
                                self.sent([root], **ARMED), None)
        self.assertEqual('metadata.cinder_encryption_key_deletion_policy',
                         err.kwargs['field'])
