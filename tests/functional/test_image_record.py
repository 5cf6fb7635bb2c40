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

"""The image record on a real Glance 33 (issue 10): library and CLI.

The embedded Glance carries the stock ``schema-image.json``
(``kernel_id``/``ramdisk_id`` uuid patterns, enums).
"""

import json
import os
import subprocess
import sys

from oslo_serialization import jsonutils

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import metadata
from tests import base
from tests.functional import base as fbase
from tests.functional import test_snapshot

OTHER_SERVER = '0b5f1f4e-0000-4000-8000-00000000a001'


class TestImageRecord(test_snapshot.SnapshotTestBase):

    def snapshot(self, sysmeta=None, **changes):
        req = self.make_request(**changes)
        req.server.system_metadata.update(sysmeta or {})
        client = self.plugin_client()
        result = self.make_service().snapshot(req, glance=client)
        return req, result, client.get(result.image_id)

    def test_glance_serves_the_stock_schema(self):
        schema = self.plugin_client().image_schema()
        self.assertIn('pattern', schema['properties']['kernel_id'])
        self.assertIn('enum', schema['properties'][
            'cinder_encryption_key_deletion_policy'])

    def test_schema_pattern_refused_once_nothing_created(self):
        req = self.make_request()
        req.server.system_metadata['image_kernel_id'] = 'aki-00000001'
        err = self.assertRaises(exception.PreflightError,
                                self.make_service().snapshot, req,
                                glance=self.plugin_client())
        message = err.format_message()
        self.assertIn('kernel_id', message)
        self.assertEqual(1, message.count('aki-00000001'))
        self.assertLess(len(message), 400)
        self.assertEqual([], self.images_named(req.name))

    def test_borrowed_identity_and_bootable_min_disk(self):
        req, result, image = self.snapshot({
            'image_image_type': 'backup', 'image_backup_type': 'daily',
            'image_instance_uuid': OTHER_SERVER, 'image_user_id': 'other',
            'image_signature_verified': 'True', 'image_min_disk': '160',
            'image_owner': 'p0', 'image_is_public': 'True'})
        self.assertEqual(('snapshot', req.server.uuid, self.user_id),
                         (image['image_type'], image['instance_uuid'],
                          image['user_id']))
        for key in ('backup_type', 'signature_verified', 'is_public'):
            self.assertNotIn(key, image)
        self.assertEqual(self.project_id, image['owner'])
        mappings = jsonutils.loads(image['block_device_mapping'])
        self.assertEqual(10, metadata.max_min_disk(mappings))
        self.assertEqual(10, image['min_disk'])
        rotation = list(self.admin_client().images.list(filters={
            'image_type': 'backup', 'backup_type': 'daily',
            'instance_uuid': OTHER_SERVER}))
        self.assertEqual([], rotation)

    def test_other_tools_data_marks_not_inherited(self):
        # Issue 28 item 7: any tool's checksums, object names and upload
        # marks of the source image stay behind; Nova's properties come.
        foreign = {'owner_specified.shade.md5': 'd41d8cd9',
                   'owner_specified.shade.sha256': 'e3b0c442',
                   'owner_specified.shade.object': 'images/x',
                   'glance_checksum': 'd41d8cd9', 'image.sha512': 'cf83',
                   'swift_object_name': 'x', 'uploaded_by': 'ci',
                   'source_url': 'http://example.com/x.qcow2'}
        kept = {'hw_disk_bus': 'scsi', 'img_config_drive': 'mandatory',
                'os_require_quiesce': 'True', 'hw_scsi_model':
                'virtio-scsi', 'img_hide_hypervisor_id': 'true'}
        _req, _result, image = self.snapshot({
            'image_' + k: v for k, v in dict(foreign, **kept).items()})
        for key in foreign:
            self.assertNotIn(key, image)
        for key, value in kept.items():
            self.assertEqual(value, image[key])

    def test_user_metadata_up_to_glance_quota(self):
        # The plugin's own keys give way to user metadata at Glance's
        # default image_property_quota (128); one key more is refused
        # before anything is created.
        svc = self.make_service()
        base_record = svc.build_record(self.make_request(metadata={}))
        fixed = len(set(base_record.properties) - set(base_record.optional))
        fill = {'k%03d' % i: 'v' for i in range(128 - fixed)}
        client = self.plugin_client()
        result = svc.snapshot(self.make_request(metadata=fill),
                              glance=client)
        image = client.get(result.image_id)
        self.assertEqual('v', image['k%03d' % (127 - fixed)])
        self.assertNotIn('image_type', image)
        fill['one_more'] = 'v'
        req = self.make_request(metadata=fill)
        self.assertRaises(exception.PropertyQuotaExceeded, svc.snapshot,
                          req, glance=client)
        self.assertEqual([], self.images_named(req.name))

    def test_backup_request(self):
        req, result, image = self.snapshot(backup_type='daily')
        self.assertEqual(('backup', 'daily', req.server.uuid),
                         (image['image_type'], image['backup_type'],
                          image['instance_uuid']))
        rotation = [i['id'] for i in self.admin_client().images.list(
            filters={'image_type': 'backup', 'backup_type': 'daily',
                     'instance_uuid': req.server.uuid})]
        self.assertEqual([image['id']], rotation)

    def test_volume_type_kept(self):
        data = base.sample_request_dict()
        bdms = data['block_device_mappings']
        bdms[0]['volume_type'] = 'LUKS-T'
        req, result, image = self.snapshot(block_device_mappings=bdms)
        root = [m for m in jsonutils.loads(image['block_device_mapping'])
                if m['boot_index'] == 0][0]
        self.assertEqual('LUKS-T', root['volume_type'])
        self.assertNotIn('cinder_encryption_key_id', image)


class TestFallbackFormat(test_snapshot.SnapshotTestBase):

    GLANCE_PROFILE = 'qcow2-only'

    def test_vmware_on_qcow2_only_glance(self):
        client = self.plugin_client()
        result = self.make_service('vmwareapi').snapshot(
            self.make_request(), glance=client)
        self.assertEqual(('active', 'qcow2', 1536),
                         (result.status, result.disk_format, result.size))

    def test_driver_formats_only_refuses(self):
        req = self.make_request()
        err = self.assertRaises(
            exception.FormatNotAllowed,
            self.make_service('vmwareapi', driver_formats_only=True).snapshot,
            req, glance=self.plugin_client())
        self.assertIn('driver_formats_only', err.format_message())
        self.assertEqual([], self.images_named(req.name))


class TestPayloadTooLarge(test_snapshot.SnapshotTestBase):
    """Issue 10 input: ``image_size_cap = 1024``, formats qcow2, vdi, vmdk.

    Glance refuses the 1536-byte qcow2 with 413; the 512-byte vdi of the
    same plan fits, so the snapshot is active as vdi, and the refused
    image is gone.
    """

    GLANCE_PROFILE = 'default'
    GLANCE_OVERRIDES = {'disk_formats': ('qcow2', 'vdi', 'vmdk'),
                        'image_size_cap': 1024}

    def test_413_moves_on_to_a_smaller_payload(self):
        req = self.make_request()
        result = self.make_service('libvirt').snapshot(
            req, glance=self.plugin_client())
        self.assertEqual(('active', 'vdi', 512),
                         (result.status, result.disk_format, result.size))
        refused = [a for a in result.attempts if a.outcome == 'failed']
        self.assertEqual(['qcow2'], [a.disk_format for a in refused])
        self.assertEqual([413], [a.status for a in refused])
        self.assertEqual([(result.image_id, 'active')],
                         [(i['id'], i['status'])
                          for i in self.images_named(req.name)])


class TestCLIRecord(fbase.FunctionalTestCase):

    GLANCE_OVERRIDES = {'identity': 'token'}

    def setUp(self):
        super().setUp()
        self.conf_file = self.write_cli_config('snapshot.conf', 'libvirt')

    def run_snapshot(self, sysmeta):
        data = base.sample_request_dict()
        data['server']['project_id'] = self.project_id
        data['requester']['project_id'] = self.project_id
        data['requester']['user_id'] = self.user_id
        data['name'] = 'cli-rec-%s' % self.project_id[:8]
        data['server']['system_metadata'].update(sysmeta)
        path = os.path.join(self.tmp, 'request.json')
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(data, f)
        proc = subprocess.run(
            [sys.executable, '-m', 'nova_snapshot_ext.cmd.main', 'snapshot',
             '--config-file', self.conf_file, '--format', 'json', path],
            capture_output=True, text=True, timeout=120, check=False)
        return data, proc

    def test_kernel_id_refused_with_one_message(self):
        data, proc = self.run_snapshot({'image_kernel_id': 'aki-00000001'})
        self.assertNotEqual(0, proc.returncode)
        # One refusal, said once (the JSON document on stdout, the same
        # line on stderr), not once per planned format.
        error = json.loads(proc.stdout)['error']
        self.assertEqual(1, error.count('aki-00000001'), error)
        self.assertIn('kernel_id', error)
        self.assertEqual(1, proc.stderr.count('aki-00000001'), proc.stderr)
        self.assertNoImagesLeft(name_or_filter=data['name'])

    def test_identity_and_min_disk(self):
        data, proc = self.run_snapshot({
            'image_image_type': 'backup', 'image_instance_uuid':
            OTHER_SERVER, 'image_min_disk': '160'})
        self.assertEqual(0, proc.returncode, proc.stderr)
        image = json.loads(proc.stdout)['image']
        self.assertEqual(('snapshot', data['server']['uuid'], 10),
                         (image['image_type'], image['instance_uuid'],
                          image['min_disk']))
