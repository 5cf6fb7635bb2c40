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

"""The production database's rules, as the preflight applies them.

That each rule is the real database's is proven against MariaDB and
PostgreSQL in ``tests/functional/test_database.py``.
"""

import ddt

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import database_rules
from nova_snapshot_ext.snapshot import preflight
from tests import base
from tests.unit.snapshot import test_preflight

record = test_preflight.record
caps = test_preflight.caps


@ddt.ddt
class TestCollationKey(base.TestCase):

    @ddt.data(('Foo', 'foo'), ('tag', 'tag '), ('tag', 'TAG   '),
              ('cafe', 'café'), ('CAFÉ', 'cafe'), ('strase', 'straße'),
              ('sıgma', 'SIGMA'), ('ÅNGSTRÖM', 'angstrom'),
              ('Ǆ', 'ǅ'), ('Ǆ', 'ǆ'), ('ΆΛΦΑ', 'αλφα'), ('ёлка', 'ЕЛКА'),
              ('µ', 'Μ'), ('ſ', 's'), ('ﬀ', 'ﬀ'))
    @ddt.unpack
    def test_equal(self, one, other):
        self.assertEqual(database_rules.collation_key(one),
                         database_rules.collation_key(other))

    @ddt.data(('tag', ' tag'), ('tag', 'tag\t'), ('ss', 'ß'),
              ('ae', 'æ'), ('oe', 'œ'), ('a', 'ā\u0301'), ('i', 'j'),
              ('ﬀ', 'ff'), ('l', 'ł'), ('o', 'ø'), ('', '\x00'),
              ('a-b', 'a_b'), ('й', 'и'))
    @ddt.unpack
    def test_distinct(self, one, other):
        self.assertNotEqual(database_rules.collation_key(one),
                            database_rules.collation_key(other))

    def test_every_class_member_weighs_its_first(self):
        for members in database_rules._CLASSES:
            self.assertEqual(
                {members[0]},
                {database_rules.collation_key(c) for c in members},
                members)


class TestCheckRecord(base.TestCase):

    def refuse(self, exc, rec):
        return self.assertRaises(exc, preflight.check_image_record, rec,
                                 caps(), 128)

    def test_case_collision_names_both_keys(self):
        err = self.refuse(exception.PropertyKeysCollide,
                          record(image_Foo='1', image_foo='2'))
        self.assertIn("'image_Foo'", err.format_message())
        self.assertIn("'image_foo'", err.format_message())
        self.assertEqual(400, err.code)

    def test_trailing_space_and_accent_collisions(self):
        for keys in (('tag', 'tag '), ('cafe', 'café'), ('Strase',
                                                         'straße')):
            err = self.refuse(exception.PropertyKeysCollide,
                              record(**{keys[0]: 'x', keys[1]: 'y'}))
            self.assertEqual(set(keys), {err.kwargs['first'],
                                         err.kwargs['second']})

    def test_distinct_keys_pass(self):
        preflight.check_image_record(
            record(tag='x', **{' tag': 'y', 'ss': 'z', 'ß': 'w'}), caps())

    def test_value_size_in_bytes(self):
        # 65,535 bytes exactly is stored intact; one more is refused,
        # counted in UTF-8 bytes, not characters.
        preflight.check_image_record(record(big='x' * 65535), caps())
        preflight.check_image_record(record(big='é' * 32767 + 'x'), caps())
        err = self.refuse(exception.PropertyValueTooLarge,
                          record(big='é' * 32768))
        self.assertEqual((65536, 65535), (err.kwargs['size'],
                                          err.kwargs['limit']))
        self.assertIn("'big'", err.format_message())
        err = self.refuse(exception.PropertyValueTooLarge,
                          record(big='x' * 70000))
        self.assertIn('70000 bytes', err.format_message())
        self.refuse(exception.PropertyValueTooLarge,
                    record(big='€' * 21846))

    def test_nul_refused_in_value_key_and_name(self):
        err = self.refuse(exception.UnstorableCharacter,
                          record(note='a\x00b'))
        self.assertIn("'note'", err.format_message())
        self.assertIn('PostgreSQL', err.format_message())
        err = self.refuse(exception.UnstorableCharacter,
                          record(note='é\x00'))
        self.assertIn('NUL', err.format_message())
        err = self.refuse(exception.UnstorableCharacter,
                          record(**{'no\x00te': 'x'}))
        self.assertIn('no\\x00te', err.format_message())
        rec = record()
        rec.name = 'snap\x00'
        err = self.refuse(exception.UnstorableCharacter, rec)
        self.assertIn("'name'", err.format_message())

    def test_lone_surrogate_refused(self):
        err = self.refuse(exception.UnstorableCharacter,
                          record(note='a\udc80'))
        self.assertIn('U+DC80', err.format_message())

    def test_member_with_nul_refused(self):
        rec = record()
        rec.member = 'proj\x00'
        self.refuse(exception.UnstorableCharacter, rec)

    def test_optional_key_gives_way_to_the_callers(self):
        rec = record(hypervisor_type='kvm', HYPERVISOR_TYPE='qemu')
        rec.optional.append('hypervisor_type')
        changes = preflight.check_image_record(rec, caps())
        self.assertEqual(('hypervisor_type',), changes.left_out)
        changes.apply(rec)
        self.assertEqual({'HYPERVISOR_TYPE': 'qemu'}, rec.properties)
        self.assertIn('hypervisor_type', ' '.join(rec.notes))
