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

"""Every (Glance profile x driver) cell on a real Glance 33.

A cell ends either ``active`` with a payload that oslo's inspector and
``qemu-img`` accept after downloading it back from Glance, or with a
preflight refusal that created nothing.  No cell leaves a non-active
image.  The committed table ``doc/source/matrix.rst`` must match.
"""

import os

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext.embedded import matrix
from nova_snapshot_ext.image import payloads
from tests.functional import base as fbase
from tests import judges

DOC = os.path.join(os.path.dirname(__file__), '..', '..', 'doc', 'source',
                   'matrix.rst')


def documented_cells():
    """``{(profile, driver label): cell label}`` from the committed doc."""
    with open(DOC, encoding='utf-8') as f:
        lines = f.read().splitlines()
    rules = [i for i, line in enumerate(lines)
             if line.startswith('====') and ' ' in line]
    header, body = lines[rules[0] + 1], lines[rules[1] + 1:rules[2]]
    bounds = []
    start = 0
    for column in lines[rules[0]].split(' '):
        bounds.append((start, start + len(column)))
        start += len(column) + 1
    names = [header[a:b].strip() for a, b in bounds]
    cells = {}
    for row in body:
        values = [row[a:b].strip() for a, b in bounds]
        for profile, value in zip(names[1:], values[1:]):
            cells[(profile, values[0])] = value
    return cells


class MatrixMixin:
    """The checks, for one profile (set by the generated classes)."""

    GLANCE_PROFILE = None

    def test_every_driver(self):
        # The Glance is shared by every test of this process (other tests
        # may hold queued images on purpose): judge only what this run
        # added.
        before = {i['id'] for i in self.list_all_images()}
        cells, client = matrix.run_profile(self.glance, self.GLANCE_PROFILE)
        allowed = set(self.glance.disk_formats)
        documented = documented_cells()
        self.assertEqual(len(matrix.DRIVER_VARIANTS), len(cells))
        for cell, (_, name, options) in zip(cells, matrix.DRIVER_VARIANTS):
            where = '%s x %s' % (self.GLANCE_PROFILE, cell.driver)
            svc = matrix._service(name, options)
            readable = set(svc.driver.disk_formats) | {'raw'}
            # Any honest format this Glance allows: the driver's formats
            # are a preference (a volume-backed boot never reads the
            # payload), so no cell is refused while one exists.
            possible = allowed & set(payloads.SUPPORTED_FORMATS)
            if cell.outcome == 'active':
                self.assertIn(cell.disk_format, possible, where)
                self.assertEqual(cell.disk_format not in readable,
                                 cell.fallback, where)
                if allowed & readable & set(payloads.SUPPORTED_FORMATS):
                    self.assertFalse(cell.fallback, where)
                image = client.get(cell.image_id)
                self.assertEqual(('active', cell.size),
                                 (image['status'], image['size']), where)
                data = client.download(cell.image_id)
                self.assertEqual(cell.size, len(data), where)
                try:
                    judges.judge(data, cell.disk_format)
                except AssertionError as err:
                    self.fail('%s: %s payload: %s'
                              % (where, cell.disk_format, err))
                if 'raw' in allowed:
                    self.assertEqual(('raw', 0),
                                     (cell.disk_format, cell.size), where)
            else:
                self.assertEqual('refused', cell.outcome)
                self.assertEqual(set(), possible, where)
                self.assertIn('No honest activation', cell.reason)
            self.assertEqual(documented.get((self.GLANCE_PROFILE,
                                             cell.driver)),
                             cell.label(),
                             '%s: doc/source/matrix.rst is out of date; '
                             'run tox -e matrix' % where)
        self.assertEqual([], [
            '%s (name=%s status=%s)' % (i['id'], i.get('name'), i['status'])
            for i in self.list_all_images()
            if i['id'] not in before and i['status'] != 'active'])
        self.assertEqual(
            sorted(c.image_id for c in cells if c.image_id),
            sorted(i['id'] for i in client.list_images(
                owner=self._owner(client, cells))))

    @staticmethod
    def _owner(client, cells):
        for cell in cells:
            if cell.image_id:
                return client.get(cell.image_id)['owner']
        return 'nobody'

    def test_driver_variants_cover_every_driver(self):
        covered = {name for _, name, _ in matrix.DRIVER_VARIANTS}
        self.assertEqual(set(driver_mod.driver_names()), covered)


def _profile_class(profile):
    name = 'TestMatrix_%s' % profile.replace('-', '_')
    return type(name, (MatrixMixin, fbase.FunctionalTestCase),
                {'GLANCE_PROFILE': profile})


for _profile in matrix.MATRIX_PROFILES:
    _cls = _profile_class(_profile)
    globals()[_cls.__name__] = _cls
