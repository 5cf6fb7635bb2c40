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

"""One test per metadata rule; inputs shaped like Nova's records."""

import json

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import metadata
from nova_snapshot_ext.snapshot import request
from tests import base

ROOT = {'source_type': 'volume', 'destination_type': 'volume',
        'boot_index': 0, 'device_name': 'vda', 'disk_bus': 'virtio',
        'device_type': 'disk', 'volume_id': 'V1', 'snapshot_id': 'S1',
        'volume_size': 10, 'delete_on_termination': True,
        'id': 7, 'instance_uuid': 'x', 'attachment_id': 'A1',
        'connection_info': '{"data": {"auth_password": "pw"}}',
        'tag': 'root', 'volume_type': 'fast', 'encrypted': False}
DATA = {'source_type': 'volume', 'destination_type': 'volume',
        'boot_index': None, 'device_name': '/dev/vdb', 'volume_id': 'V2',
        'snapshot_id': 'S2', 'volume_size': 20}
SWAP = {'source_type': 'blank', 'destination_type': 'local',
        'boot_index': -1, 'guest_format': 'swap', 'volume_size': 1,
        'device_name': '/dev/vdc', 'delete_on_termination': True}
EPHEMERAL = {'source_type': 'blank', 'destination_type': 'local',
             'boot_index': -1, 'guest_format': 'ext4', 'volume_size': 5,
             'device_name': '/dev/vdd'}
NO_DEVICE = {'source_type': 'blank', 'destination_type': 'local',
             'device_name': '/dev/vde', 'no_device': True}


def make_request(bdms=(ROOT,), sysmeta=None, metadata_=None,
                 requester_project='p1', root_device_name='/dev/vda',
                 image_metadata=None):
    return request.SnapshotRequest.from_dict({
        'name': 'snap',
        'server': {'uuid': '6e2b6c1e-8f4a-4a51-9c3e-2f1d0b7a9c11',
                   'project_id': 'p1', 'user_id': 'u1',
                   'root_device_name': root_device_name,
                   'system_metadata': sysmeta or {},
                   'image_metadata': image_metadata or {}},
        'block_device_mappings': [dict(b) for b in bdms],
        'metadata': metadata_ or {},
        'requester': {'project_id': requester_project, 'user_id': 'u9'},
    })


class TestMetadataBuilder(base.TestCase):

    def build(self, *args, non_inheritable=(), driver_properties=None,
              **kwargs):
        return metadata.build_image_record(
            make_request(*args, **kwargs), non_inheritable=non_inheritable,
            driver_properties=driver_properties, image_id='id-1')

    def test_one_snapshot_one_spelling_one_fingerprint(self):
        # The record stores the id as Nova and Cinder spell it (a boot
        # hands it to Cinder), and the fingerprint -- hence the derived
        # image id -- does not change with how the caller wrote it.
        from nova_snapshot_ext.snapshot import identity

        canonical = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
        records = [self.build(bdms=(dict(ROOT, snapshot_id=spelling),))
                   for spelling in (canonical, ' %s ' % canonical.upper(),
                                    '{%s}' % canonical)]
        for rec in records:
            self.assertEqual(canonical, rec.mappings[0]['snapshot_id'])
            self.assertIn('"snapshot_id": "%s"' % canonical,
                          rec.properties['block_device_mapping'])
        self.assertEqual(1, len({identity.fingerprint(r) for r in records}))

    def test_inherits_image_properties_from_sysmeta(self):
        rec = self.build(sysmeta={'image_os_distro': 'ubuntu',
                                  'image_hw_disk_bus': 'virtio'})
        self.assertEqual('ubuntu', rec.properties['os_distro'])
        self.assertEqual('virtio', rec.properties['hw_disk_bus'])

    def test_inherits_from_image_metadata_sysmeta_wins(self):
        rec = self.build(sysmeta={'image_os_distro': 'ubuntu'},
                         image_metadata={'os_distro': 'debian',
                                         'os_version': '12'})
        self.assertEqual('ubuntu', rec.properties['os_distro'])
        self.assertEqual('12', rec.properties['os_version'])

    def test_non_image_sysmeta_not_inherited(self):
        # Stricter than Nova: owner names, passwords, boot roles are not
        # image metadata.
        rec = self.build(sysmeta={'owner_user_name': 'alice',
                                  'password_0': 'secret',
                                  'boot_roles': 'admin'})
        for key in ('owner_user_name', 'password_0', 'boot_roles'):
            self.assertNotIn(key, rec.properties)

    def test_min_ram_min_disk_are_ints_from_sysmeta(self):
        # E05: min_ram survives a chain of snapshots.
        rec = self.build(sysmeta={'image_min_ram': '512',
                                  'image_min_disk': '8'})
        self.assertEqual(512, rec.min_ram)
        self.assertEqual(8, rec.min_disk)
        self.assertNotIn('min_ram', rec.properties)
        kwargs = rec.create_kwargs('raw', 'bare')
        self.assertIsInstance(kwargs['min_ram'], int)

    def test_one_tag_per_volume_snapshot(self):
        canonical = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
        rec = self.build(bdms=(dict(ROOT, snapshot_id=canonical.upper()),
                               DATA, SWAP))
        self.assertEqual(['snapshot-ext:volume-snapshot:' + canonical,
                          'snapshot-ext:volume-snapshot:s2'], rec.tags)
        self.assertEqual(rec.tags, rec.create_kwargs('raw', 'bare')['tags'])
        self.assertNotIn('tags', rec.properties)

    def test_tags_follow_the_mappings_whoever_built_the_record(self):
        # The record Nova's translated metadata makes (nova/adapter.py)
        # holds Nova's mapping dicts as written: same tags.
        canonical = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'
        rec = metadata.ImageRecord(
            image_id='i', name='n', visibility='private', min_ram=0,
            min_disk=0, properties={},
            mappings=[{'snapshot_id': canonical.upper()},
                      {'source_type': 'blank', 'snapshot_id': None}])
        self.assertEqual(['snapshot-ext:volume-snapshot:' + canonical],
                         rec.tags)

    def test_no_tags_no_tags_attribute(self):
        rec = metadata.ImageRecord(image_id='i', name='n',
                                   visibility='private', min_ram=0,
                                   min_disk=0, properties={})
        self.assertNotIn('tags', rec.create_kwargs('raw', 'bare'))

    def test_min_ram_defaults_to_zero(self):
        rec = self.build()
        self.assertEqual((0, 0), (rec.min_ram, rec.min_disk))

    def test_bad_min_disk_names_field(self):
        err = self.assertRaises(exception.InvalidRequest, self.build,
                                sysmeta={'image_min_disk': 'big'})
        self.assertEqual('server.system_metadata.image_min_disk',
                         err.kwargs['field'])

    def test_formats_not_inherited(self):
        # E05: the plugin always sets disk/container format itself.
        rec = self.build(sysmeta={'image_disk_format': 'qcow2',
                                  'image_container_format': 'ovf'})
        self.assertNotIn('disk_format', rec.properties)
        kwargs = rec.create_kwargs('raw', 'bare')
        self.assertEqual(('raw', 'bare'), (kwargs['disk_format'],
                                           kwargs['container_format']))

    def test_encryption_and_signature_never_inherited(self):
        # E06 / LP#1852106, even if the operator's list omits them.
        keys = ['cinder_encryption_key_id',
                'cinder_encryption_key_deletion_policy', 'img_signature',
                'img_signature_hash_method', 'img_signature_key_type',
                'img_signature_certificate_uuid']
        rec = self.build(sysmeta={'image_' + k: 'v' for k in keys},
                         non_inheritable=['cache_in_nova'])
        for key in keys:
            self.assertNotIn(key, rec.properties)

    def test_os_glance_namespace_never_inherited(self):
        # E07 / LP#1912001: matched by prefix.
        rec = self.build(sysmeta={
            'image_os_glance_importing_to_stores': 'a',
            'image_os_glance_failed_import': 'b',
            'image_os_glance_future_key': 'c',
            'image_os_glance': 'd'})
        self.assertFalse([k for k in rec.properties
                          if k.startswith('os_glance')])

    def test_operator_list_not_inherited(self):
        rec = self.build(sysmeta={'image_cache_in_nova': 'True',
                                  'image_bittorrent': 'yes',
                                  'image_site_secret': 's'},
                         non_inheritable=['cache_in_nova', 'bittorrent',
                                          'site_secret'])
        for key in ('cache_in_nova', 'bittorrent', 'site_secret'):
            self.assertNotIn(key, rec.properties)

    def test_operator_default_list_is_novas(self):
        self.assertEqual(['cache_in_nova', 'bittorrent'],
                         self.conf.snapshot_ext.
                         non_inheritable_image_properties)

    def test_cinder_bookkeeping_not_inherited(self):
        # E05 / LP#1439819: volume_image_metadata's non-property keys.
        rec = self.build(sysmeta={'image_checksum': 'abc',
                                  'image_size': '100',
                                  'image_image_id': 'I0',
                                  'image_image_name': 'cirros'})
        for key in ('checksum', 'size', 'image_id', 'image_name'):
            self.assertNotIn(key, rec.properties)

    def test_ownership_and_glance_state_not_inherited(self):
        rec = self.build(sysmeta={'image_owner': 'p0',
                                  'image_instance_owner': 'p0',
                                  'image_visibility': 'public',
                                  'image_status': 'active',
                                  'image_os_hash_value': 'x',
                                  'image_locations': '[]',
                                  'image_direct_url': 'rbd://x'})
        self.assertEqual({}, {k: v for k, v in rec.properties.items()
                              if k not in ('root_device_name',
                                           'block_device_mapping',
                                           'bdm_v2', 'image_type',
                                           'instance_uuid', 'user_id')})

    def test_legacy_mapping_keys_skipped(self):
        rec = self.build(sysmeta={
            'image_mappings': '[{"virtual": "ami", "device": "sda1"}]',
            'image_block_device_mapping': '[{"old": true}]',
            'image_bdm_v2': 'True', 'image_root_device_name': '/dev/sdz'})
        self.assertNotIn('mappings', rec.properties)
        self.assertEqual('/dev/vda', rec.properties['root_device_name'])
        self.assertNotIn('"old"', rec.properties['block_device_mapping'])

    def test_empty_kernel_and_ramdisk_ids_dropped(self):
        rec = self.build(sysmeta={'image_kernel_id': 'None',
                                  'image_ramdisk_id': '  ',
                                  'image_os_type': 'linux'})
        self.assertNotIn('kernel_id', rec.properties)
        self.assertNotIn('ramdisk_id', rec.properties)
        self.assertEqual('linux', rec.properties['os_type'])

    def test_user_metadata_wins_over_inherited(self):
        rec = self.build(sysmeta={'image_os_distro': 'ubuntu'},
                         metadata_={'os_distro': 'custom', 'backup': 'y'})
        self.assertEqual('custom', rec.properties['os_distro'])
        self.assertEqual('y', rec.properties['backup'])

    def test_user_metadata_cannot_set_mappings(self):
        rec = self.build(metadata_={'block_device_mapping': '[]',
                                    'bdm_v2': 'False',
                                    'root_device_name': '/dev/sdq'})
        self.assertEqual('/dev/vda', rec.properties['root_device_name'])
        self.assertEqual('True', rec.properties['bdm_v2'])
        self.assertEqual(1, len(json.loads(
            rec.properties['block_device_mapping'])))

    def test_driver_properties_stamped_and_user_wins(self):
        rec = self.build(sysmeta={'image_hypervisor_type': 'xen'},
                         driver_properties={'hypervisor_type': 'qemu',
                                            'vm_mode': 'hvm'})
        self.assertEqual('qemu', rec.properties['hypervisor_type'])
        self.assertEqual('hvm', rec.properties['vm_mode'])
        rec = self.build(driver_properties={'hypervisor_type': 'qemu'},
                         metadata_={'hypervisor_type': 'kvm'})
        self.assertEqual('kvm', rec.properties['hypervisor_type'])

    def test_root_device_name_from_server_only(self):
        rec = self.build(root_device_name=None,
                         sysmeta={'image_root_device_name': '/dev/sda'})
        self.assertNotIn('root_device_name', rec.properties)

    def test_volume_entry_shape(self):
        # E11: snapshot-sourced, Nova's copied fields, the rest None.
        rec = self.build()
        entry, = rec.mappings
        self.assertEqual(set(metadata.MAPPING_FIELDS), set(entry))
        self.assertEqual({
            'source_type': 'snapshot', 'destination_type': 'volume',
            'snapshot_id': 'S1', 'volume_size': 10,
            'device_name': '/dev/vda', 'disk_bus': 'virtio',
            'device_type': 'disk', 'boot_index': 0,
            'delete_on_termination': True,
            'guest_format': None, 'volume_id': None, 'image_id': None,
            'no_device': None, 'tag': None, 'volume_type': 'fast',
            'encrypted': None, 'encryption_secret_uuid': None,
            'encryption_format': None, 'encryption_options': None,
        }, entry)

    def test_entry_keys_in_nova_field_order(self):
        # The serialised property keeps one key order for every entry.
        rec = self.build(bdms=(ROOT, DATA, SWAP))
        for entry in rec.mappings:
            self.assertEqual(list(metadata.MAPPING_FIELDS), list(entry))

    def test_entries_are_not_shared_between_records(self):
        first = self.build(bdms=(ROOT, DATA))
        first.mappings[0]['tag'] = 'changed'
        first.mappings[1]['source_type'] = 'changed'
        again = self.build(bdms=(ROOT, DATA))
        self.assertEqual([None, None], [m['tag'] for m in again.mappings])
        self.assertEqual(['snapshot', 'snapshot'],
                         [m['source_type'] for m in again.mappings])

    def test_no_db_ids_or_connection_info(self):
        rec = self.build()
        text = rec.properties['block_device_mapping']
        for bad in ('connection_info', 'instance_uuid', 'attachment_id',
                    '"id"', 'auth_password', 'V1'):
            self.assertNotIn(bad, text)

    def test_non_volume_entries_first_and_kept(self):
        rec = self.build(bdms=(ROOT, DATA, SWAP, EPHEMERAL))
        kinds = [(m['source_type'], m['guest_format'])
                 for m in rec.mappings]
        self.assertEqual([('blank', 'swap'), ('blank', 'ext4'),
                          ('snapshot', None), ('snapshot', None)], kinds)
        self.assertEqual(['S1', 'S2'], [m['snapshot_id']
                                        for m in rec.mappings[2:]])
        swap = rec.mappings[0]
        self.assertEqual('local', swap['destination_type'])
        self.assertEqual(1, swap['volume_size'])
        self.assertIs(False, swap['encrypted'])

    def test_no_device_skipped(self):
        rec = self.build(bdms=(ROOT, NO_DEVICE))
        self.assertEqual(1, len(rec.mappings))

    def test_device_name_gets_dev_prefix(self):
        rec = self.build()
        self.assertEqual('/dev/vda', rec.mappings[0]['device_name'])

    def test_one_root_entry_with_size_and_snapshot(self):
        # E12/E14: exactly one boot_index 0 entry carrying both fields.
        rec = self.build(bdms=(ROOT, DATA, SWAP))
        roots = [m for m in rec.mappings if m['boot_index'] == 0]
        self.assertEqual(1, len(roots))
        self.assertEqual(('S1', 10), (roots[0]['snapshot_id'],
                                      roots[0]['volume_size']))

    def test_mapping_properties_are_strings_like_nova(self):
        rec = self.build(bdms=(ROOT, SWAP))
        self.assertEqual('True', rec.properties['bdm_v2'])
        text = rec.properties['block_device_mapping']
        self.assertIsInstance(text, str)
        # jsonutils.dumps form, as Nova's _convert_to_string writes it.
        self.assertEqual(rec.mappings, json.loads(text))
        self.assertIn('": ', text)

    def test_no_mappings_no_bdm_properties(self):
        # A request refuses this (no volume mapping); the builder alone
        # still writes no mapping properties for it.
        req = make_request(root_device_name=None)
        req.block_device_mappings = []
        rec = metadata.build_image_record(req, image_id='id-1')
        self.assertNotIn('block_device_mapping', rec.properties)
        self.assertNotIn('bdm_v2', rec.properties)

    def test_every_property_value_is_a_string(self):
        rec = self.build(bdms=(ROOT, SWAP),
                         sysmeta={'image_os_distro': 'x'},
                         driver_properties={'vm_mode': 'hvm'})
        for key, value in rec.properties.items():
            self.assertIsInstance(value, str, key)

    def test_private_when_requester_owns_server(self):
        rec = self.build(requester_project='p1')
        self.assertEqual('private', rec.visibility)
        self.assertIsNone(rec.member)

    def test_shared_with_owner_when_requester_differs(self):
        rec = self.build(requester_project='admin-project')
        self.assertEqual('shared', rec.visibility)
        self.assertEqual('p1', rec.member)
        self.assertNotIn('instance_owner', rec.properties)

    def test_create_kwargs_base_attributes_cannot_be_overridden(self):
        rec = self.build(metadata_={'name': 'evil', 'visibility': 'public'})
        kwargs = rec.create_kwargs('raw', 'bare')
        self.assertEqual(('snap', 'private', 'id-1'),
                         (kwargs['name'], kwargs['visibility'],
                          kwargs['id']))
        self.assertEqual('id-2', rec.create_kwargs(
            'raw', 'bare', image_id='id-2')['id'])
