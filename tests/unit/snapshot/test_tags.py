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

"""The volume snapshot tags: one spelling, Glance's length limit."""

from nova_snapshot_ext.snapshot import tags
from tests import base

SNAP = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c01'


class TestTags(base.TestCase):

    def test_one_tag_whatever_the_spelling(self):
        spellings = (SNAP, SNAP.upper(), ' {%s} ' % SNAP,
                     SNAP.replace('-', ''))
        self.assertEqual({tags.PREFIX + SNAP},
                         {tags.tag_of(s) for s in spellings})
        self.assertEqual(65, len(tags.tag_of(SNAP)))

    def test_no_tag_for_empty_or_too_long(self):
        self.assertIsNone(tags.tag_of(''))
        self.assertIsNone(tags.tag_of('x' * 255))
        longest = 'x' * (tags.MAX_TAG_LENGTH - len(tags.PREFIX))
        self.assertEqual(tags.MAX_TAG_LENGTH, len(tags.tag_of(longest)))

    def test_tags_of_sorted_unique(self):
        self.assertEqual([tags.PREFIX + 'a', tags.PREFIX + 'b'],
                         tags.tags_of(['B', 'a', 'b', '']))

    def test_untagged_and_tagged_keys(self):
        image = {'tags': ['mine', tags.tag_of(SNAP)]}
        self.assertEqual(['other'], tags.untagged(image, [SNAP, 'other']))
        self.assertEqual([SNAP.upper()], tags.untagged({}, [SNAP.upper()]))
        self.assertEqual({SNAP}, tags.tagged_keys(image))
        self.assertEqual(set(), tags.tagged_keys({'tags': 'x'}))

    def test_look_alike_tags_name_the_same_snapshot(self):
        # Kind: a tag in another spelling of the same id (upper case, no
        # dashes, blanks) or of the prefix names that snapshot where tags
        # are read from the images (full scan, audit) ...
        snap = '9a8b7c6d-1111-2222-3333-444455556666'
        for tag in (tags.PREFIX + snap.upper(),
                    tags.PREFIX.upper() + snap,
                    tags.PREFIX + snap.replace('-', ''),
                    tags.PREFIX + ' %s ' % snap):
            image = {'tags': [tag]}
            self.assertEqual({snap}, tags.tagged_keys(image), tag)
            # ... but only the plugin's exact tag is found by a rotation's
            # tag query on every database: anything else is untagged.
            self.assertEqual([snap], tags.untagged(image, [snap]), tag)
        self.assertEqual(set(), tags.tagged_keys({'tags': [tags.PREFIX]}))
