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

"""The Glance release axis' bookkeeping that needs no running Glance.

The virtualenv cache (``embedded/glance_venv.py``, its installer patched)
and the compatibility table generator; the axis itself (real Glance 28-33)
is ``tox -e glanceNN``.  Moved from tests/functional: these tests patch
internals and start nothing.
"""

import json
import os
import sys
from unittest import mock

import fixtures
import testtools

from nova_snapshot_ext.embedded import glance_venv
from tests import compat_rst
from tests.functional import glance_compat_table


class TestGlanceVenv(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable(
            glance_venv.CACHE_ENV, self.root))
        self.useFixture(fixtures.EnvironmentVariable(
            glance_venv.PYTHON_ENV, sys.executable))

    def test_releases_state_what_changed(self):
        self.assertEqual(list(range(28, 34)), list(glance_venv.RELEASES))
        self.assertEqual([28], [m for m, r in glance_venv.RELEASES.items()
                                if not r.location_api])
        self.assertEqual([28, 29], [m for m, r in
                                    glance_venv.RELEASES.items()
                                    if not r.inspects_uploads])
        rel = glance_venv.release('29')
        self.assertEqual(['glance==29.2.1', 'gunicorn', 'oslo.utils<9',
                          'oslo.db<17.3'], rel.requirements())
        self.assertEqual('Glance 29.2.1 (2024.2 Dalmatian)', rel.label)
        self.assertIs(glance_venv.RELEASES[33],
                      glance_venv.release_of_version('33.0.0'))
        self.assertIsNone(glance_venv.release_of_version('27.1.0'))

    def test_unknown_major_named(self):
        err = self.assertRaises(glance_venv.GlanceVenvError,
                                glance_venv.release, 27)
        self.assertIn("unknown Glance major 27 (known: 28, 29", str(err))

    def test_cache_paths(self):
        self.assertEqual(os.path.join(self.root, 'glance-30', 'bin',
                                      'python'),
                         glance_venv.venv_python(30))
        self.assertEqual(os.path.join(self.root, 'glance-30.log'),
                         glance_venv.log_path(30))

    def _record(self, major, **changes):
        os.makedirs(glance_venv.venv_dir(major))
        rel = glance_venv.release(major)
        record = glance_venv._wanted(rel, '%d.%d' % sys.version_info[:2])
        record.update(changes)
        with open(os.path.join(glance_venv.venv_dir(major),
                               glance_venv.RECORD_NAME), 'w') as fh:
            json.dump(record, fh)

    def test_recorded_venv_reused_without_installing(self):
        self._record(31)
        with mock.patch.object(glance_venv, '_install') as install:
            self.assertEqual(glance_venv.venv_python(31),
                             glance_venv.ensure(31))
        install.assert_not_called()

    def test_changed_pins_or_unfinished_install_redone(self):
        self._record(30, requirements=['glance==30.2.0', 'gunicorn'])
        with mock.patch.object(glance_venv, '_install') as install:
            glance_venv.ensure(30)
            glance_venv.ensure(32)
        self.assertEqual([30, 32], [c.args[0].major
                                    for c in install.call_args_list])

    def test_failed_install_names_release_and_log(self):
        with mock.patch.object(glance_venv, '_run', side_effect=(
                glance_venv.GlanceVenvError('pip exited with 1'))):
            err = self.assertRaises(glance_venv.GlanceVenvError,
                                    glance_venv.ensure, 28)
        self.assertIn('cannot install Glance 28.2.0 (2024.1 Caracal)',
                      str(err))
        self.assertIn('pip exited with 1', str(err))
        self.assertIn(glance_venv.log_path(28), str(err))
        self.assertIsNone(glance_venv.read_record(28))


class TestCompatTable(testtools.TestCase):

    def test_render_columns_per_release_rows_per_behaviour(self):
        results = [
            {'glance': '33.0.0', 'series': '2026.2',
             'behaviour': 'versions', 'outcome': 'listed (newest v2.17)'},
            {'glance': '28.2.0', 'series': '2024.1',
             'behaviour': 'versions', 'outcome': 'not listed'},
            {'glance': '28.2.0', 'series': '2024.1',
             'behaviour': 'location-new', 'outcome': 'refused *before*'},
        ]
        text = glance_compat_table.render(results)
        self.assertIn('(28.2.0, 33.0.0)', text)
        table = text[text.index('.. list-table::'):]
        self.assertEqual(
            ['behaviour', 'Glance 28.2.0 (2024.1)', 'Glance 33.0.0 (2026.2)',
             dict(glance_compat_table.BEHAVIOURS)['versions'], 'not listed',
             'listed (newest v2.17)',
             dict(glance_compat_table.BEHAVIOURS)['location-new'],
             r'refused \*before\*', 'not run'],
            [line.split('- ', 1)[1] for line in table.splitlines()
             if line.strip().startswith(('* -', '-'))])

    def test_results_round_trip(self):
        where = self.useFixture(fixtures.TempDir()).path
        compat_rst.write_result(where, 'b', {'n': 2})
        compat_rst.write_result(where, 'a', {'n': 1})
        self.assertEqual([{'n': 1}, {'n': 2}],
                         compat_rst.load_results(where))
