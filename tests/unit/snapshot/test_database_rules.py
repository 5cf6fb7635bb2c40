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

import random

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


def _reference_key(text):
    """The collation key as first written: one table look-up per char."""
    return ''.join([database_rules._WEIGHTS.get(c, c)
                    for c in text]).rstrip(' ')


def _reference_unstorable(text):
    """The first character no database stores, found char by char."""
    for char in text:
        if char == '\x00' or '\ud800' <= char <= '\udfff':
            return char
    return None


#: The kinds of text the fast paths must judge as the plain loops do.
_ALPHABETS = (
    'abcXYZ_-:. 09',                       # ASCII, with spaces
    'ÀàßſıİǄǅǆµΜΆάёЁﬀæœøł\u0345',             # folded, or nearly
    '\x00\ud800\udbff\udc00\udfff',        # NUL and lone surrogates
    '\U0001F600\U00010000\U0010FFFF',      # outside the BMP
    '\u00a0\u3000\t\n',                    # spaces that do not pad
)


def _samples(seed, count=3000):
    rng = random.Random(seed)
    pool = ''.join(_ALPHABETS)
    for _ in range(count):
        length = rng.choice((0, 1, 2, 9, 17, 40, 300))
        text = ''.join(rng.choice(pool) for _ in range(length))
        yield text + ' ' * rng.choice((0, 0, 1, 3))
    # Long values: one odd character at the far end of ASCII.
    for odd in '\x00\ud800é\U0001F600 ':
        yield 'x' * 70000 + odd
        yield odd + 'y' * 70000


class TestFastPathsAgree(base.TestCase):
    """``str`` methods and one regex in place of per-character loops."""

    def test_every_bmp_character_weighs_as_the_table_says(self):
        for point in range(0x10000):
            char = chr(point)
            self.assertEqual(_reference_key(char),
                             database_rules.collation_key(char), point)

    def test_collation_key_agrees_on_mixed_text(self):
        for text in _samples(22):
            self.assertEqual(_reference_key(text),
                             database_rules.collation_key(text), repr(text))

    def test_glance_namespace_agrees(self):
        prefixes = ('os_glance', 'OS_GLANCE', 'ós_glance', 'os_glancé',
                    'Os_Glance ', 'os_glanc', 'os-glance', 'ØS_glance',
                    'os_gla\u0345nce')
        for prefix in prefixes:
            for tail in ('', '_x', '   ', 'é', '\x00'):
                key = prefix + tail
                self.assertEqual(
                    _reference_key(key[:17]).startswith('OS_GLANCE'),
                    database_rules.in_glance_namespace(key), key)

    def test_unstorable_characters_agree(self):
        for text in _samples(23):
            found = _reference_unstorable(text)
            if found is None:
                database_rules._check_text('property', 'k', text)
                continue
            err = self.assertRaises(exception.UnstorableCharacter,
                                    database_rules._check_text,
                                    'property', 'k', text)
            self.assertIn('U+%04X' % ord(found), err.format_message())
            self.assertEqual(
                'a PostgreSQL' if found == '\x00' else 'any',
                err.kwargs['database'])
