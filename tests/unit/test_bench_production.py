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

"""The production-shape bench's arithmetic: shapes, spreads, verdicts."""

import argparse

from bench import production
from tests import base


class TestShapes(base.TestCase):

    def test_parse(self):
        self.assertEqual((2, 4), production.parse_shape('2x4'))
        self.assertEqual((1, 1), production.parse_shape('1X1'))
        self.assertEqual('2x4', production.shape_name((2, 4)))

    def test_bad_shapes_named(self):
        for text in ('2', 'x4', '0x1', '1x0', '5x1', '1x17', 'axb'):
            err = self.assertRaises(argparse.ArgumentTypeError,
                                    production.parse_shape, text)
            self.assertIn(text, str(err))


class TestSpread(base.TestCase):

    def test_adds_up(self):
        for count, c, procs in ((32, 1, 8), (32, 16, 8), (128, 64, 8),
                                (7, 3, 8), (5, 64, 8), (1, 1, 1)):
            parts = production.spread(count, c, procs)
            self.assertEqual(count, sum(k for k, _ in parts))
            self.assertLessEqual(len(parts), procs)
            self.assertTrue(all(1 <= t <= k for k, t in parts), parts)
            if count >= c:
                self.assertEqual(c, sum(t for _, t in parts))

    def test_one_process_for_one_thread(self):
        self.assertEqual([(32, 1)], production.spread(32, 1, 8))


def _cell(throughput, requests=2.0, errors=0):
    return {'throughput': throughput, 'req_per_snapshot': requests,
            'errors': errors}


class TestVerdicts(base.TestCase):

    def doc(self, images=None):
        return {'shapes': {'1x1': {'nodes': 1, 'workers': 1},
                           '1x2': {'nodes': 1, 'workers': 2}},
                'concurrency': [1, 16],
                'images': images or {'1x1/plugin': {'active': 10}}}

    def cells(self, **changes):
        cells = {'%s/%s/c%d' % (s, p, c): _cell(t)
                 for s in ('1x1', '1x2') for c in (1, 16)
                 for p, t in (('plugin', 10.0), ('nova', 8.0),
                              ('floor', 11.0))}
        cells['1x2/plugin/c16'] = _cell(15.0)
        cells.update(changes)
        return cells

    def test_all_met(self):
        verdicts = production.verdicts(self.doc(), self.cells())
        self.assertTrue(all(v['met'] for v in verdicts), verdicts)
        self.assertIn('plugin throughput grows with workers (c=16)',
                      [v['target'] for v in verdicts])

    def test_each_miss_is_reported(self):
        cells = self.cells(**{
            '1x1/plugin/c16': _cell(7.0, requests=3.0, errors=1),
            '1x2/plugin/c16': _cell(6.0)})
        images = {'1x1/plugin': {'active': 9, 'queued': 1}}
        missed = {v['target'] for v in production.verdicts(
            self.doc(images), cells) if not v['met']}
        self.assertEqual({'plugin >= nova throughput, 1x1 c=16',
                          'plugin >= nova throughput, 1x2 c=16',
                          'plugin requests = floor, 1x1 c=16',
                          'plugin throughput grows with workers (c=16)',
                          '0 errors', 'every image active'}, missed)
