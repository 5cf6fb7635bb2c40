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

from nova_snapshot_ext.snapshot import database_rules
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
                         'os_glance_import_task', 'tags', 'created_at',
                         # the same rows on a MySQL/MariaDB Glance
                         'OS_GLANCE_IMPORT_TASK', 'Os_Glance_X'],
        'foreign-data': ['checksum', 'os_hash_algo', 'os_hash_value',
                         'size', 'virtual_size',
                         # openstacksdk's marks of the file it uploaded
                         'owner_specified.openstack.md5',
                         'owner_specified.openstack.sha256',
                         'owner_specified.openstack.object'],
        'provenance': ['img_signature', 'img_signature_certificate_uuid',
                       'image_id', 'image_name'],
        'borrowed-identity': ['image_type', 'backup_type', 'instance_uuid',
                              'user_id', 'snapshot_ext_fingerprint'],
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

    def test_one_lookup_agrees_with_the_tables_read_in_order(self):
        def reference(key, operator_keys=()):
            for kind, names in metadata.NEVER_INHERITED_KINDS.items():
                if key in names:
                    return kind
            for prefix, kind in metadata.NEVER_INHERITED_PREFIXES:
                if key.startswith(prefix):
                    return kind
            if database_rules.in_glance_namespace(key):
                return 'glance-state'
            for suffix, kind in metadata.NEVER_INHERITED_SUFFIXES:
                if key.endswith(suffix):
                    return kind
            words = metadata._words_kind(key)
            if words is not None:
                return words
            return 'operator-list' if key in operator_keys else None

        keys = set(metadata.NEVER_INHERITED) | {'', 'os_distro',
                                                'OS_GLANCE_x'}
        for prefix, _ in metadata.NEVER_INHERITED_PREFIXES:
            keys |= {prefix, prefix + 'x', prefix[:-1], 'x' + prefix}
        for suffix, _ in metadata.NEVER_INHERITED_SUFFIXES:
            keys |= {suffix, 'x' + suffix, suffix + 'x',
                     'password_' + suffix, 'image_id' + suffix}
        for key in sorted(keys):
            for operator_keys in ((), [key]):
                self.assertEqual(
                    reference(key, operator_keys),
                    metadata.never_inherited_kind(key, operator_keys), key)

    def test_operator_list(self):
        self.assertEqual('operator-list', metadata.never_inherited_kind(
            'cache_in_nova', ['cache_in_nova', 'bittorrent']))
        self.assertIsNone(metadata.never_inherited_kind('cache_in_nova'))
        # A built-in kind wins over the operator's list.
        self.assertEqual('secret', metadata.never_inherited_kind(
            'vtpm_secret_uuid', ['vtpm_secret_uuid']))


#: Every image property Nova's ``ImageMetaProps`` knows (Nova 34,
#: ``nova/objects/image_meta.py``) and the legacy names it maps to them:
#: what Nova reads from an image, so what a snapshot must keep (but the
#: kinds Nova itself never inherits: ``img_signature*``, and the
#: ephemeral-encryption secret of this server).
NOVA_IMAGE_PROPERTIES = (
    'hw_architecture', 'hw_auto_disk_config', 'hw_boot_menu',
    'hw_cdrom_bus', 'hw_cpu_cores', 'hw_cpu_max_cores',
    'hw_cpu_max_sockets', 'hw_cpu_max_threads', 'hw_cpu_policy',
    'hw_cpu_realtime_mask', 'hw_cpu_sockets', 'hw_cpu_thread_policy',
    'hw_cpu_threads', 'hw_device_id', 'hw_disk_bus', 'hw_disk_type',
    'hw_emulation_architecture', 'hw_ephemeral_encryption',
    'hw_ephemeral_encryption_format', 'hw_firmware_stateless',
    'hw_firmware_type', 'hw_floppy_bus', 'hw_input_bus', 'hw_ipxe_boot',
    'hw_locked_memory', 'hw_machine_type', 'hw_maxphysaddr_bits',
    'hw_maxphysaddr_mode', 'hw_mem_encryption', 'hw_mem_encryption_model',
    'hw_mem_page_size', 'hw_numa_cpus', 'hw_numa_mem', 'hw_numa_nodes',
    'hw_pci_numa_affinity_policy', 'hw_pmu', 'hw_pointer_model',
    'hw_qemu_guest_agent', 'hw_redirected_usb_ports', 'hw_rescue_bus',
    'hw_rescue_device', 'hw_rng_model', 'hw_scsi_model',
    'hw_serial_port_count', 'hw_sound_model', 'hw_time_hpet',
    'hw_tpm_model', 'hw_tpm_version', 'hw_usb_model', 'hw_video_model',
    'hw_video_ram', 'hw_vif_model', 'hw_vif_multiqueue_enabled',
    'hw_viommu_model', 'hw_virtio_packed_ring', 'hw_vm_mode',
    'hw_watchdog_action', 'img_bittorrent', 'img_cache_in_nova',
    'img_compression_level', 'img_config_drive', 'img_hide_hypervisor_id',
    'img_hv_requested_version', 'img_hv_type', 'img_linked_clone',
    'img_use_agent', 'img_version', 'os_admin_user', 'os_command_line',
    'os_distro', 'os_require_quiesce', 'os_secure_boot',
    'os_skip_agent_inject_files_at_boot', 'os_skip_agent_inject_ssh',
    'os_type', 'traits_required',
    # legacy names (ImageMetaProps._legacy_property_map) and others Nova
    # and its drivers read
    'architecture', 'hypervisor_type', 'vm_mode', 'auto_disk_config',
    'kernel_id', 'ramdisk_id', 'hypervisor_version_requires',
    'vmware_adaptertype', 'vmware_ostype', 'vmware_disktype',
    'vmware_image_version', 'hw_disk_discard', 'os_version',
    'cache_in_nova', 'bittorrent', 'base_image_ref', 'description',
    'cinder_img_volume_type', 'trait:CUSTOM_X',
    'trait:HW_CPU_X86_AVX2', 'hw_watchdog_action')


class TestForeignDataByKind(base.TestCase):
    """Issue 28 item 7: any tool's marks of another image's bytes."""

    FOREIGN = [
        # shade's and other tools' upload marks, any namespace
        'owner_specified.shade.md5', 'owner_specified.shade.sha256',
        'owner_specified.shade.object', 'owner_specified.ansible.md5',
        'owner_specified.terraform.object', 'owner_specified.x.y.z',
        # checksums under any prefix and spelling
        'glance_checksum', 'image_checksum', 'source_checksum',
        'md5', 'image.md5', 'file.md5sum', 'MD5', 'Md5Sum',
        'sha256', 'x_sha256sum', 'sha256_digest', 'SHA512', 'sha1',
        'disk.sha384', 'org.example:sha224', 'image-sha3',
        'imageChecksum', 'uploadSha256', 'crc32c', 'content_crc64',
        'blake2b_hash', 'xxhash', 'adler32', 'etag', 'swift_etag',
        'content-digest', 'digests', 'hash', 'file_hash', 'hashes',
        'checksums', 'checksum_sha256',
        # object names
        'object', 'objectName', 'swift_object', 'swift_object_name',
        's3.object.key', 'object_id', 'owner_specified.sdk.object',
        # the upload
        'uploaded_by', 'upload_date', 'uploader', 'uploaded_at',
    ]
    PROVENANCE = [
        'img_signature_v2', 'img_signature_algo', 'cosign-signature',
        'image_signature', 'signed_by', 'gpg_fingerprint',
        'source_url', 'image_source', 'source', 'origin',
        'imported_from', 'import_origin', 'provenance', 'slsa.provenance',
        # where another image's file came from, other spellings
        'import_from', 'import_url', 'importUrl', 'web_download_url',
        'download_url', 'downloaded_from', 'copied_from', 'derived_from',
    ]

    def test_unseen_spellings_not_inherited(self):
        for key in self.FOREIGN:
            self.assertEqual('foreign-data',
                             metadata.never_inherited_kind(key), key)
        for key in self.PROVENANCE:
            self.assertEqual('provenance',
                             metadata.never_inherited_kind(key), key)

    def test_novas_image_properties_still_inherited(self):
        for key in NOVA_IMAGE_PROPERTIES:
            self.assertIsNone(metadata.never_inherited_kind(key), key)

    def test_trait_requirements_inherited_whatever_their_words(self):
        # Nova reads 'trait:<name>=required' as the image's required
        # traits (ImageMetaProps._set_attr_from_trait_names); os-traits
        # names CPU and NIC features with the checksum words.
        for key in ('trait:HW_CPU_X86_SHA', 'trait:HW_CPU_AARCH64_SHA2',
                    'trait:HW_CPU_AARCH64_SHA512',
                    'trait:HW_CPU_AARCH64_CRC32', 'trait:HW_NIC_OFFLOAD_L2CRC',
                    'trait:CUSTOM_SOURCE_ROUTING', 'trait:CUSTOM_OBJECT_STORE',
                    'trait:CUSTOM_SIGNED_FIRMWARE'):
            self.assertIsNone(metadata.never_inherited_kind(key), key)

    def test_words_not_inside_other_words(self):
        # 'sha' in 'shared', 'hash' in 'hashtag'-like words, 'object'
        # in 'objective': not the words.
        for key in ('shared_disk', 'os_shared', 'hashtagline',
                    'objective', 'resource_class', 'originality',
                    'hw_share', 'etagere', 'sharp'):
            self.assertIsNone(metadata.never_inherited_kind(key), key)

    def test_builder_drops_them_user_metadata_keeps_them(self):
        data = base.sample_request_dict()
        data['server']['image_metadata'] = {
            k: 'v' for k in self.FOREIGN + self.PROVENANCE}
        data['server']['image_metadata'].update(
            {k: 'v' for k in NOVA_IMAGE_PROPERTIES})
        data['metadata'] = {'sha256': 'mine'}
        from nova_snapshot_ext.snapshot import request

        record = metadata.build_image_record(
            request.SnapshotRequest.from_dict(data), image_id='x')
        for key in self.FOREIGN + self.PROVENANCE:
            if key != 'sha256':
                self.assertNotIn(key, record.properties)
        for key in NOVA_IMAGE_PROPERTIES:
            self.assertIn(key, record.properties)
        # User metadata wins, as in Nova: it is this image's own.
        self.assertEqual('mine', record.properties['sha256'])


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


SERVER = '6e2b6c1e-8f4a-4a51-9c3e-2f1d0b7a9c11'
OTHER_SERVER = '0b5f1f4e-0000-4000-8000-00000000a001'


def _request(sysmeta=None, metadata_=None, bdms=None, backup_type=None,
             requester=('p1', 'u9')):
    from nova_snapshot_ext.snapshot import request

    data = {
        'name': 'snap',
        'server': {'uuid': SERVER, 'project_id': 'p1', 'user_id': 'u1',
                   'root_device_name': '/dev/vda',
                   'system_metadata': sysmeta or {}},
        'block_device_mappings': bdms or [
            {'source_type': 'blank', 'destination_type': 'local',
             'boot_index': -1, 'guest_format': 'swap', 'volume_size': 1,
             'device_name': '/dev/vdb'},
            {'source_type': 'volume', 'destination_type': 'volume',
             'boot_index': 0, 'device_name': '/dev/vda', 'volume_id': 'V1',
             'snapshot_id': 'S1', 'volume_size': 8,
             'volume_type': 'LUKS-T', 'encrypted': True,
             'encryption_secret_uuid': 'sec-1',
             'encryption_format': 'luks'}],
        'metadata': metadata_ or {},
        'requester': {'project_id': requester[0], 'user_id': requester[1]},
    }
    if backup_type:
        data['backup_type'] = backup_type
    return request.SnapshotRequest.from_dict(data)


class TestImageRecord(base.TestCase):
    """The issue's inputs, each with its right value."""

    def build(self, *args, non_inheritable=(), driver_properties=None,
              **kwargs):
        return metadata.build_image_record(
            _request(*args, **kwargs), non_inheritable=non_inheritable,
            driver_properties=driver_properties, image_id='id-1')

    def test_borrowed_identity_replaced_by_own(self):
        rec = self.build(sysmeta={
            'image_image_type': 'backup', 'image_backup_type': 'daily',
            'image_instance_uuid': OTHER_SERVER, 'image_user_id': 'other',
            'image_signature_verified': 'True'})
        self.assertEqual('snapshot', rec.properties['image_type'])
        self.assertEqual(SERVER, rec.properties['instance_uuid'])
        self.assertEqual('u9', rec.properties['user_id'])
        self.assertNotIn('backup_type', rec.properties)
        self.assertNotIn('signature_verified', rec.properties)

    def test_base_image_type_not_inherited(self):
        rec = self.build(sysmeta={'image_image_type': 'base'})
        self.assertEqual('snapshot', rec.properties['image_type'])

    def test_backup_request_describes_backup(self):
        rec = self.build(backup_type='weekly',
                         sysmeta={'image_backup_type': 'daily'})
        self.assertEqual(('backup', 'weekly', SERVER),
                         (rec.properties['image_type'],
                          rec.properties['backup_type'],
                          rec.properties['instance_uuid']))

    def test_user_metadata_wins_as_in_nova(self):
        rec = self.build(metadata_={'image_type': 'golden'})
        self.assertEqual('golden', rec.properties['image_type'])
        self.assertNotIn('image_type', rec.optional)

    def test_min_disk_capped_at_root_volume(self):
        rec = self.build(sysmeta={'image_min_disk': '160'})
        self.assertEqual(8, rec.min_disk)
        self.assertEqual(1, len(rec.notes))
        self.assertIn('160', rec.notes[0])
        self.assertEqual(8, metadata.max_min_disk(rec.mappings))

    def test_min_disk_below_root_kept(self):
        rec = self.build(sysmeta={'image_min_disk': '5'})
        self.assertEqual((5, []), (rec.min_disk, rec.notes))

    def test_volume_type_kept_encryption_not(self):
        rec = self.build(sysmeta={
            'image_cinder_encryption_key_id': 'k1',
            'image_cinder_encryption_key_deletion_policy': 'do_not_delete'})
        root = [m for m in rec.mappings if m['boot_index'] == 0][0]
        self.assertEqual('LUKS-T', root['volume_type'])
        for field in ('encrypted', 'encryption_secret_uuid',
                      'encryption_format', 'encryption_options'):
            self.assertIsNone(root[field], field)
        for key in ('cinder_encryption_key_id',
                    'cinder_encryption_key_deletion_policy'):
            self.assertNotIn(key, rec.properties)
        self.assertIn('"volume_type": "LUKS-T"',
                      rec.properties['block_device_mapping'])

    def test_local_mapping_secret_not_copied(self):
        # An encrypted ephemeral disk (Nova's ephemeral encryption): its
        # key-manager secret belongs to this server.
        bdms = [
            {'source_type': 'blank', 'destination_type': 'local',
             'boot_index': -1, 'volume_size': 1, 'device_name': '/dev/vdb',
             'encrypted': True, 'encryption_secret_uuid': 'sec-eph',
             'encryption_format': 'luks'},
            {'source_type': 'volume', 'destination_type': 'volume',
             'boot_index': 0, 'device_name': '/dev/vda', 'volume_id': 'V1',
             'snapshot_id': 'S1', 'volume_size': 8}]
        rec = self.build(bdms=bdms)
        local = rec.mappings[0]
        self.assertEqual('blank', local['source_type'])
        self.assertIsNone(local['encryption_secret_uuid'])
        self.assertEqual((True, 'luks'), (local['encrypted'],
                                          local['encryption_format']))
        self.assertNotIn('sec-eph', rec.properties['block_device_mapping'])

    def test_sdk_upload_hashes_not_inherited(self):
        rec = self.build(sysmeta={
            'image_owner_specified.openstack.md5': 'd41d8cd9',
            'image_owner_specified.openstack.sha256': 'e3b0c442',
            'image_owner_specified.openstack.object': 'images/cirros',
            'image_os_distro': 'cirros'})
        self.assertEqual('cirros', rec.properties['os_distro'])
        self.assertFalse([k for k in rec.properties
                          if k.startswith('owner_specified')])

    def test_horizon_sees_a_snapshot_with_swap_first(self):
        rec = self.build()
        self.assertEqual('blank', rec.mappings[0]['source_type'])
        self.assertEqual('snapshot', rec.properties['image_type'])

    def test_ownership_and_secrets_not_inherited(self):
        rec = self.build(sysmeta={'image_owner': 'p0', 'image_is_public':
                                  'True', 'image_vtpm_secret_uuid': 's1',
                                  'vtpm_secret_uuid': 's1',
                                  'image_password_0': 'pw'})
        for key in ('owner', 'is_public', 'vtpm_secret_uuid',
                    'password_0'):
            self.assertNotIn(key, rec.properties)

    def test_stamped_keys_honour_operator_list(self):
        stamps = {'hypervisor_type': 'kvm', 'vm_mode': 'hvm'}
        rec = self.build(driver_properties=stamps)
        self.assertEqual('kvm', rec.properties['hypervisor_type'])
        rec = self.build(driver_properties=stamps,
                         non_inheritable=['hypervisor_type', 'vm_mode'])
        self.assertNotIn('hypervisor_type', rec.properties)
        self.assertNotIn('vm_mode', rec.properties)

    def test_optional_keys_in_drop_order(self):
        rec = self.build(driver_properties={'hypervisor_type': 'kvm',
                                            'vm_mode': 'hvm'})
        self.assertEqual(['hypervisor_type', 'vm_mode', 'user_id',
                          'instance_uuid', 'image_type'], rec.optional)
        self.assertEqual(['hypervisor_type', 'vm_mode', 'user_id'],
                         rec.drop_optional(3))
        self.assertEqual('snapshot', rec.properties['image_type'])
        self.assertNotIn('user_id', rec.properties)

    def test_every_kind_dropped_from_sysmeta(self):
        sysmeta = {'image_os_distro': 'ubuntu'}
        for keys in TestNeverInheritedKind.CASES.values():
            for key in keys:
                sysmeta['image_' + key] = 'x'
        rec = self.build(sysmeta=sysmeta)
        own = {'image_type', 'instance_uuid', 'user_id',
               'block_device_mapping', 'bdm_v2', 'root_device_name'}
        self.assertEqual({'os_distro'}, set(rec.properties) - own)
        self.assertEqual('/dev/vda', rec.properties['root_device_name'])


class TestInstanceOwner(base.TestCase):

    def test_own_project_is_not_a_property(self):
        rec = metadata.build_image_record(
            _request(metadata_={'instance_owner': 'p1'}))
        self.assertNotIn('instance_owner', rec.properties)
        self.assertEqual(('private', None), (rec.visibility, rec.member))

    def test_other_project_refused(self):
        from nova_snapshot_ext import exception

        err = self.assertRaises(
            exception.SharingNotAllowed, metadata.build_image_record,
            _request(metadata_={'instance_owner': 'p7'}))
        self.assertEqual(403, err.code)
        self.assertIn("'instance_owner' = 'p7'", err.format_message())

    def test_admin_of_other_project_shares_with_owner(self):
        rec = metadata.build_image_record(
            _request(requester=('admin-p', 'admin-u')))
        self.assertEqual(('shared', 'p1'), (rec.visibility, rec.member))
        self.assertEqual('admin-u', rec.properties['user_id'])
