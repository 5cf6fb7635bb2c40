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

import fixtures

from nova_snapshot_ext import exception
from nova_snapshot_ext.image import capabilities
from nova_snapshot_ext.snapshot import metadata
from nova_snapshot_ext.snapshot import preflight
from tests import base
from tests.unit import fake_glanceclient


def caps(schema_extra=None, required=()):
    doc = fake_glanceclient.FakeGlance().schema()
    doc['properties'].update(schema_extra or {})
    if required:
        doc['required'] = list(required)
    return capabilities.GlanceCapabilities.from_documents(doc)


def record(**props):
    return metadata.ImageRecord(image_id='i', name='n', visibility='private',
                                min_ram=0, min_disk=0,
                                properties=dict(props))


class TestPreflight(base.TestCase):

    def refuse(self, exc, rec, capa=None, quota=128):
        err = self.assertRaises(exc, preflight.check_image_record, rec,
                                capa or caps(), quota)
        return err

    def test_clean_record_passes(self):
        preflight.check_image_record(record(os_distro='ubuntu'), caps())

    def test_os_glance_prefix(self):
        err = self.refuse(exception.ReservedProperty,
                          record(os_glance_anything='x'))
        self.assertIn("'os_glance_anything'", err.format_message())
        self.assertEqual(403, err.code)

    def test_os_glance_namespace_as_mysql_compares_names(self):
        # Glance accepts these (its prefix check is exact), but a MySQL
        # Glance stores them in the row of its own os_glance_* property.
        for name in ('OS_GLANCE_IMPORT_TASK', 'Os_Glance_hash_op_host',
                     'ös_glance_x', 'OS_GLANCE'):
            err = self.refuse(exception.ReservedProperty,
                              record(**{name: 'x'}))
            self.assertEqual(name, err.kwargs['property'])
            self.assertIn('utf8mb3_general_ci', err.format_message())
        for name in ('os_glancy', 'xos_glance', 'os glance', 'osglance'):
            preflight.check_image_record(record(**{name: 'x'}), caps())

    def test_reserved_names(self):
        for name in ('location', 'locations', 'owner', 'deleted',
                     'deleted_at'):
            err = self.refuse(exception.ReservedProperty,
                              record(**{name: 'x'}))
            self.assertEqual(name, err.kwargs['property'])

    def test_read_only_names(self):
        for name in ('status', 'checksum', 'size', 'virtual_size',
                     'os_hash_value', 'created_at', 'direct_url'):
            err = self.refuse(exception.ReadOnlyProperty,
                              record(**{name: 'x'}))
            self.assertIn(name, err.format_message())

    def test_base_attributes_are_not_properties(self):
        for name in ('protected', 'os_hidden', 'tags'):
            self.refuse(exception.ReservedProperty, record(**{name: 'x'}))

    def test_key_too_long(self):
        err = self.refuse(exception.PropertyNameTooLong,
                          record(**{'k' * 256: 'v'}))
        self.assertEqual(256, err.kwargs['length'])
        preflight.check_image_record(record(**{'k' * 255: 'v'}), caps())

    def test_non_string_value(self):
        err = self.refuse(exception.PropertyValueNotString,
                          record(answer=42))
        self.assertIn('int', err.format_message())

    def test_quota(self):
        props = {'p%03d' % i: 'v' for i in range(129)}
        err = self.refuse(exception.PropertyQuotaExceeded, record(**props))
        self.assertIn('image_property_quota', err.format_message())
        preflight.check_image_record(record(**props), caps(), -1)

    def test_tag_quota_refused_before_anything_naming_the_option(self):
        rec = record()
        rec.mappings = [{'snapshot_id': 'snap-%03d' % i} for i in range(129)]
        err = self.assertRaises(exception.TagQuotaExceeded,
                                preflight.check_image_record, rec, caps(),
                                128, 128)
        self.assertIn('[snapshot_ext] image_tag_quota', err.format_message())
        self.assertEqual((129, 128), (err.kwargs['count'],
                                      err.kwargs['quota']))
        preflight.check_image_record(rec, caps(), 128, 129)
        preflight.check_image_record(rec, caps(), 128, -1)
        rec.mappings = rec.mappings[:128]
        self.assertEqual(128, len(rec.tags))
        preflight.check_image_record(rec, caps(), 128, 128)

    def test_quota_ignores_os_glance_keys(self):
        # Counted like Glance: os_glance keys are not counted (but are
        # refused as reserved anyway), so 128 plain keys pass.
        props = {'p%03d' % i: 'v' for i in range(128)}
        preflight.check_image_record(record(**props), caps())

    def test_required_property_missing(self):
        err = self.refuse(exception.RequiredPropertyMissing, record(),
                          caps(required=['os_distro']))
        self.assertEqual('os_distro', err.kwargs['property'])
        preflight.check_image_record(record(os_distro='x'),
                                     caps(required=['os_distro', 'name']))

    def test_operator_schema_enum(self):
        capa = caps({'hw_disk_bus': {'type': 'string',
                                     'enum': ['virtio', 'scsi']}})
        err = self.refuse(exception.PreflightError, record(hw_disk_bus='ide'),
                          capa)
        self.assertIn('hw_disk_bus', err.format_message())
        preflight.check_image_record(record(hw_disk_bus='scsi'), capa)

    def test_operator_schema_max_length(self):
        capa = caps({'description': {'type': 'string', 'maxLength': 5}})
        self.refuse(exception.PropertyValueTooLong,
                    record(description='toolong'), capa)

    def test_name_too_long(self):
        rec = record()
        rec.name = 'n' * 256
        self.refuse(exception.PropertyValueTooLong, rec)

    def test_plugin_set_attributes_in_user_metadata_refused(self):
        # They would be silently replaced by the plugin's own values.
        for name in ('visibility', 'name', 'min_ram', 'disk_format',
                     'container_format'):
            err = self.refuse(exception.ReservedProperty,
                              record(**{name: 'x'}))
            self.assertEqual(name, err.kwargs['property'])

    def test_four_byte_characters_refused(self):
        for rec in (record(**{'k\U0001F600': 'v'}),
                    record(k='v\U0001F600')):
            err = self.refuse(exception.UnsupportedCharacter, rec)
            self.assertIn('U+1F600', err.format_message())
        rec = record()
        rec.name = 'snap \U0001F600'
        self.refuse(exception.UnsupportedCharacter, rec)
        preflight.check_image_record(record(k='caf\u00e9 \u4e2d'), caps())

    def test_four_byte_boundaries(self):
        # The last 3-byte character passes; the first and the last 4-byte
        # ones are refused, wherever they are in the text.
        preflight.check_image_record(record(k='\uffff\ud7ff'), caps())
        for char in ('\U00010000', '\U0010ffff'):
            for text in (char, 'a' * 300 + char, char + 'a'):
                err = self.refuse(exception.UnsupportedCharacter,
                                  record(k=text))
                self.assertIn('U+%04X' % ord(char), err.format_message())

    def test_four_byte_check_on_long_and_mixed_text(self):
        # ASCII text of any length passes at once; text with any other
        # character is scanned, the 4-byte one found wherever it is.
        preflight.check_image_record(
            record(k='[{"a": "\x7f"}]' * 2000), caps())
        for text in ('\u00e9' + 'a' * 30000 + '\U0001F600',
                     '\U0001F600' + 'a' * 30000):
            err = self.refuse(exception.UnsupportedCharacter,
                              record(k=text))
            self.assertIn('U+1F600', err.format_message())

    def test_min_ram_out_of_range(self):
        rec = record()
        rec.min_ram = 2 ** 31
        err = self.refuse(exception.PreflightError, rec)
        self.assertIn('min_ram', err.format_message())


class TestSchemaKeywords(base.TestCase):
    """Every JSON-schema keyword of Glance's image schema is checked."""

    UUID = ('^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-'
            '([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$')

    def stock(self):
        return caps({
            'kernel_id': {'type': ['null', 'string'], 'pattern': self.UUID},
            'ramdisk_id': {'type': ['null', 'string'],
                           'pattern': self.UUID},
            'cinder_encryption_key_deletion_policy': {
                'type': 'string',
                'enum': ['on_image_deletion', 'do_not_delete']},
            'description': {'type': 'string', 'maxLength': 10},
            'count': {'type': 'string', 'minLength': 2},
        })

    def test_pattern_kernel_id(self):
        err = self.assertRaises(
            exception.PreflightError, preflight.check_image_record,
            record(kernel_id='aki-00000001'), self.stock())
        message = err.format_message()
        self.assertIn("'kernel_id'", message)
        self.assertIn('aki-00000001', message)
        self.assertIn('pattern', message)
        self.assertEqual(1, message.count('aki-00000001'))

    def test_pattern_ramdisk_id_and_valid_uuid(self):
        self.assertRaises(exception.PreflightError,
                          preflight.check_image_record,
                          record(ramdisk_id='ari-1'), self.stock())
        preflight.check_image_record(
            record(kernel_id='3c8f1a2b-0000-4000-8000-000000000001'),
            self.stock())

    def test_enum(self):
        err = self.assertRaises(
            exception.PreflightError, preflight.check_image_record,
            record(cinder_encryption_key_deletion_policy='sometimes'),
            self.stock())
        self.assertIn('on_image_deletion', err.format_message())

    def test_max_and_min_length(self):
        self.assertRaises(exception.PropertyValueTooLong,
                          preflight.check_image_record,
                          record(description='x' * 11), self.stock())
        self.assertRaises(exception.PreflightError,
                          preflight.check_image_record,
                          record(count='1'), self.stock())

    def test_base_attribute_minimum_maximum(self):
        capa = caps({'min_ram': {'type': 'integer', 'minimum': 0,
                                 'maximum': 1000}})
        rec = record()
        rec.min_ram = 1001
        err = self.assertRaises(exception.PreflightError,
                                preflight.check_image_record, rec, capa)
        self.assertIn('min_ram', err.format_message())

    def test_optional_key_against_schema_left_out(self):
        capa = caps({'hypervisor_type': {'type': 'string',
                                         'enum': ['kvm', 'qemu']}})
        rec = record(hypervisor_type='vz', os_distro='x')
        rec.optional = ['hypervisor_type']
        changes = preflight.check_image_record(rec, capa)
        self.assertIn('hypervisor_type', rec.properties)
        changes.apply(rec)
        self.assertNotIn('hypervisor_type', rec.properties)
        self.assertIn('hypervisor_type', rec.notes[0])

    def test_optional_keys_give_way_to_quota(self):
        rec = record(**{'k%d' % i: 'v' for i in range(127)})
        rec.properties.update(image_type='snapshot', user_id='u')
        rec.optional = ['user_id', 'image_type']
        changes = preflight.check_image_record(rec, caps(), 128)
        self.assertEqual(129, len(rec.properties))
        changes.apply(rec)
        self.assertEqual(128, len(rec.properties))
        self.assertNotIn('user_id', rec.properties)
        self.assertEqual('snapshot', rec.properties['image_type'])

    def test_quota_refusal_counts_without_optional_keys(self):
        rec = record(**{'k%d' % i: 'v' for i in range(129)})
        rec.properties['user_id'] = 'u'
        rec.optional = ['user_id']
        err = self.assertRaises(exception.PropertyQuotaExceeded,
                                preflight.check_image_record, rec, caps(),
                                128)
        self.assertIn('129', err.format_message())

    def test_bookkeeping_key_gives_way_last(self):
        rec = record(**{'k%d' % i: 'v' for i in range(127)})
        rec.properties.update(snapshot_ext_fingerprint='f', user_id='u')
        rec.optional = ['user_id']
        preflight.check_image_record(rec, caps(), 128).apply(rec)
        self.assertEqual('f', rec.properties['snapshot_ext_fingerprint'])
        self.assertNotIn('user_id', rec.properties)
        rec = record(**{'k%d' % i: 'v' for i in range(128)})
        rec.properties['snapshot_ext_fingerprint'] = 'f'
        preflight.check_image_record(rec, caps(), 128).apply(rec)
        self.assertNotIn('snapshot_ext_fingerprint', rec.properties)
        self.assertIn('snapshot_ext_fingerprint', rec.notes[0])


class TestCheckDoesNotEdit(base.TestCase):
    """check_image_record returns the changes; apply() makes them."""

    def test_record_unchanged_until_applied(self):
        rec = record(**{'k%d' % i: 'v' for i in range(128)})
        rec.properties['snapshot_ext_fingerprint'] = 'f'
        before = (dict(rec.properties), list(rec.optional), list(rec.notes))
        changes = preflight.check_image_record(rec, caps(), 128)
        self.assertEqual(before, (rec.properties, rec.optional, rec.notes))
        self.assertEqual((('snapshot_ext_fingerprint',),
                          ('snapshot_ext_fingerprint',)),
                         (changes.optional, changes.left_out))
        changes.apply(rec)
        self.assertNotIn('snapshot_ext_fingerprint', rec.properties)
        self.assertEqual(list(changes.notes), rec.notes)

    def test_nothing_to_change(self):
        rec = record(os_distro='ubuntu')
        self.assertEqual(preflight.RecordChanges(),
                         preflight.check_image_record(rec, caps()))


class TestRememberedVerdicts(base.TestCase):
    """Verdicts kept between snapshots change no verdict (issue 22)."""

    def test_a_refused_value_is_refused_every_time(self):
        capa = caps({'os_type': {'type': 'string', 'enum': ['linux']}})
        for _ in range(3):
            self.assertRaises(exception.PreflightError,
                              preflight.check_image_record,
                              record(os_type='plan9'), capa)
        preflight.check_image_record(record(os_type='linux'), capa)
        # Accepted and remembered; the refusal still stands.
        self.assertRaises(exception.PreflightError,
                          preflight.check_image_record,
                          record(os_type='plan9'), capa)

    def test_an_accepted_value_is_not_validated_again(self):
        capa = caps({'os_type': {'type': 'string', 'enum': ['linux']}})
        definition = capa.schema_properties['os_type']
        validator, accepted = preflight._validator(definition)
        preflight.check_image_record(record(os_type='linux'), capa)
        self.assertIn((str, 'linux'), accepted)
        calls = []

        class Counting:
            def is_valid(self, value):
                calls.append(value)
                return validator.is_valid(value)

            def iter_errors(self, value):
                return validator.iter_errors(value)

        self.useFixture(fixtures.MockPatchObject(
            preflight, '_VALIDATORS',
            {id(definition): (definition, Counting(), accepted)}))
        preflight.check_image_record(record(os_type='linux'), capa)
        self.assertEqual([], calls)
        self.assertRaises(exception.PreflightError,
                          preflight.check_image_record,
                          record(os_type='bsd'), capa)
        self.assertEqual(['bsd'], calls)

    def test_equal_values_of_another_type_are_judged_apart(self):
        # True == 1, but a schema taking integers refuses booleans.
        definition = {'type': 'integer'}
        preflight.check_schema_value('min_ram', 1, definition)
        self.assertRaises(exception.PreflightError,
                          preflight.check_schema_value, 'min_ram', True,
                          definition)

    def test_long_values_are_not_remembered(self):
        definition = {'type': 'string', 'maxLength': 100000}
        value = 'x' * (preflight._ACCEPTED_LENGTH + 1)
        preflight.check_schema_value('description', value, definition)
        _validator, accepted = preflight._validator(definition)
        self.assertNotIn((str, value), accepted)

    def test_a_name_is_judged_against_each_glance_schema(self):
        # 'os_hidden' is a base attribute where the schema defines it (and
        # refused as a property there), a custom property where it does
        # not: a name that passed on one Glance is judged on the next.
        doc = fake_glanceclient.FakeGlance().schema()
        del doc['properties']['os_hidden']
        older = capabilities.GlanceCapabilities.from_documents(doc)
        newer = caps()
        for _ in range(2):
            preflight.check_image_record(record(os_hidden='x'), older)
            self.assertRaises(exception.ReservedProperty,
                              preflight.check_image_record,
                              record(os_hidden='x'), newer)

    def test_a_refused_name_is_refused_every_time(self):
        for _ in range(3):
            self.assertRaises(exception.ReservedProperty,
                              preflight.check_image_record,
                              record(OS_GLANCE_X='x'), caps())
            self.assertRaises(exception.UnsupportedCharacter,
                              preflight.check_image_record,
                              record(**{'emoji_\U0001f600': 'x'}), caps())

    def test_a_value_of_another_type_is_named_before_the_names_characters(
            self):
        # The order of the checks, remembered or not: a non-string value
        # is refused as such (glanceclient would not send it), whatever
        # the name holds.
        for value in (5, True, None, 1.5, ['x']):
            for _ in range(2):
                err = self.assertRaises(
                    exception.PropertyValueNotString,
                    preflight.check_image_record,
                    record(**{'emoji_\U0001f600': value}), caps())
                self.assertEqual(type(value).__name__, err.kwargs['type'])
        self.assertRaises(exception.UnsupportedCharacter,
                          preflight.check_image_record,
                          record(**{'emoji_\U0001f600': 'x'}), caps())
