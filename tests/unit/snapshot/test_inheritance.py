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

"""The kinds of never-inherited properties and the min_disk limit."""

from nova_snapshot_ext.snapshot import metadata
from tests import base


class TestNeverInheritedKind(base.TestCase):

    # One or more members of every kind; the inputs first.
    CASES = {
        'secret': ['cinder_encryption_key_id', 'vtpm_secret_uuid',
                   'password_0', 'password_3',
                   'cinder_encryption_key_deletion_policy',
                   'hw_ephemeral_encryption_secret_uuid'],
        'ownership': ['owner', 'instance_owner', 'visibility', 'is_public',
                      'protected', 'os_hidden', 'owner_user_name',
                      'owner_project_name'],
        'glance-state': ['id', 'status', 'locations', 'direct_url',
                         'os_glance_importing_to_stores',
                         'os_glance_import_task', 'tags', 'created_at'],
        'foreign-data': ['checksum', 'os_hash_algo', 'os_hash_value',
                         'size', 'virtual_size'],
        'provenance': ['img_signature', 'img_signature_certificate_uuid',
                       'image_id', 'image_name'],
        'borrowed-identity': ['image_type', 'backup_type', 'instance_uuid',
                              'user_id'],
        'status-marker': ['signature_verified', 'network_allocated',
                          'clean_attempts', 'old_vm_state'],
        'server-record': ['boot_roles', 'instance_type_memory_mb',
                          'old_instance_type_id'],
        'mapping': ['block_device_mapping', 'bdm_v2', 'root_device_name',
                    'mappings'],
    }

    def test_every_kind(self):
        for kind, keys in self.CASES.items():
            for key in keys:
                self.assertEqual(kind, metadata.never_inherited_kind(key),
                                 key)
                self.assertTrue(metadata.is_never_inherited(key), key)

    def test_image_properties_are_inherited(self):
        for key in ('os_distro', 'hw_disk_bus', 'hw_qemu_guest_agent',
                    'kernel_id', 'ramdisk_id', 'architecture',
                    'hypervisor_type', 'vm_mode', 'os_require_quiesce',
                    'base_image_ref', 'hw_tpm_model', 'img_config_drive',
                    'cinder_img_volume_type', 'backup_schedule'):
            self.assertIsNone(metadata.never_inherited_kind(key), key)
            self.assertFalse(metadata.is_never_inherited(key), key)

    def test_operator_list(self):
        self.assertEqual('operator-list', metadata.never_inherited_kind(
            'cache_in_nova', ['cache_in_nova', 'bittorrent']))
        self.assertIsNone(metadata.never_inherited_kind('cache_in_nova'))
        # A built-in kind wins over the operator's list.
        self.assertEqual('secret', metadata.never_inherited_kind(
            'vtpm_secret_uuid', ['vtpm_secret_uuid']))


class TestMaxMinDisk(base.TestCase):

    def test_root_volume_size(self):
        mappings = [
            {'source_type': 'blank', 'destination_type': 'local',
             'boot_index': -1, 'volume_size': 1},
            {'source_type': 'snapshot', 'destination_type': 'volume',
             'boot_index': 0, 'volume_size': 8},
            {'source_type': 'snapshot', 'destination_type': 'volume',
             'boot_index': None, 'volume_size': 200}]
        self.assertEqual(8, metadata.max_min_disk(mappings))

    def test_boot_index_as_string(self):
        self.assertEqual(8, metadata.max_min_disk([
            {'destination_type': 'volume', 'boot_index': '0',
             'volume_size': '8'}]))

    def test_no_limit(self):
        for mappings in (
                [],
                [{'destination_type': 'volume', 'boot_index': 0,
                  'volume_size': None}],
                [{'destination_type': 'local', 'boot_index': 0,
                  'volume_size': 5}],
                [{'destination_type': 'volume', 'boot_index': 1,
                  'volume_size': 5}],
                [{'destination_type': 'volume', 'boot_index': 0,
                  'volume_size': 5, 'no_device': True}]):
            self.assertIsNone(metadata.max_min_disk(mappings), mappings)
