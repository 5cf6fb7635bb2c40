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

"""The scale bench's arithmetic: levels, the table's growth figures."""

import argparse
import datetime

from bench import scale
from bench import seed
from nova_snapshot_ext import audit
from nova_snapshot_ext.backup import mark
from tests import base


def rounds(seconds, requests):
    return [{'seconds': seconds, 'requests': requests, 'loadavg': 1.0,
             'by_request': {'GET /v2/images': requests - 3}}]


class TestLevels(base.TestCase):

    def test_parse(self):
        self.assertEqual([100, 1000, 10000],
                         scale._levels('100,1_000,10000'))
        self.assertEqual([], scale._levels('none'))

    def test_refused(self):
        for text in ('', '10,5', 'a', '2,10'):
            self.assertRaises(argparse.ArgumentTypeError, scale._levels,
                              text)


class TestTable(base.TestCase):

    def doc(self, label, costs):
        return {'label': label, 'page_size': 200,
                'rotation': [{'visible': v, 'seconds': s, 'requests': r,
                              'rounds': rounds(s, r)}
                             for v, s, r in costs],
                'audit': [{'scanned': 10000, 'pages': 52, 'seconds': 5.0,
                           'peak_rss_kib': 61440, 'loadavg': 1.5,
                           'rss_samples': [[200, 51200], [10000, 61440]]}]}

    def test_growth_from_fewest_to_most(self):
        text = scale.rst([
            self.doc('before', [(100, 0.1, 7), (10000, 7.8, 57)]),
            self.doc('after', [(100, 0.1, 11), (10000, 0.105, 11)])])
        self.assertIn('before +7700 % seconds, +714 % requests', text)
        self.assertIn('after +5 % seconds, +0 % requests', text)
        self.assertIn('     - 10,000\n     - 52\n     - 5.0\n     - 2,000\n'
                      '     - 60.0\n     - 50.0\n     - -\n     - 1.5', text)

    def test_rss_growth(self):
        samples = [[200, 51200], [9800, 52000], [10000, 52224],
                   [20000, None], [100000, 53248]]
        self.assertEqual('+1.0', scale.rss_growth(samples, 10000))
        self.assertEqual('-', scale.rss_growth(samples[:3], 10000))


class TestSeedRows(base.TestCase):

    def image(self, image_row, props):
        """The image as Glance would list it, from its rows."""
        image = dict(zip(seed.COLUMNS['images'], image_row))
        image['visibility'] = image_row[7]
        for row in props:
            if row[0] == image['id']:
                image[row[1]] = row[2]
        image['created_at'] = image['updated_at'] = (
            image['created_at'].isoformat() + 'Z')
        return image

    def test_rows_fit_the_columns(self):
        images, props, tags, snaps = seed.rows(
            0, 40, 'p', datetime.datetime(2026, 12, 1), plugin_every=10,
            hidden_every=7, tag_every=3)
        for table, got in (('images', images),
                           ('image_properties', props),
                           ('image_tags', tags)):
            self.assertEqual({len(seed.COLUMNS[table])},
                             {len(row) for row in got}, table)
        self.assertEqual(40, len({row[0] for row in images}))
        self.assertEqual(4, len(snaps))
        self.assertEqual(6, sum(row[15] for row in images))
        # Older first, one second apart, all before the clock.
        self.assertEqual(sorted(row[16] for row in images),
                         [row[16] for row in images])

    def test_plugin_images_are_clean_and_the_plugins(self):
        images, props, _tags, snaps = seed.rows(
            0, 20, 'p', datetime.datetime(2026, 12, 1), plugin_every=10)
        plugin = [self.image(row, props) for row in images
                  if row[1].startswith('scale-snap-')]
        self.assertEqual(2, len(plugin))
        for image, snap in zip(plugin, snaps):
            self.assertTrue(audit.is_volume_snapshot(image))
            self.assertIsNone(audit.authorship_refusal(image))
            self.assertEqual([snap], mark.mapped_snapshot_ids(image))
            self.assertEqual([], audit.judge(image))
        other = self.image(images[1], props)
        self.assertFalse(audit.is_volume_snapshot(other))
