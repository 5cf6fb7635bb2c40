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

"""The tests' judge of the plugin's own log lines (issue 28, item 9)."""

import logging

from tests import base


class TestPluginLogRecords(base.TestCase):

    def test_judges_the_plugins_lines_only(self):
        log = self.useFixture(base.PluginLogRecords())
        # Another library's ERROR, as stevedore logs a missing optional
        # backend in whichever test loads it first: not the plugin's.
        logging.getLogger('stevedore.extension').error(
            "Could not load 'oslo_cache.memcache_pool': No module named "
            "'memcache'")
        self.assertEqual([], log.at_least(logging.ERROR))
        logging.getLogger('nova_snapshot_ext.nova.filter').warning('w %s', 1)
        self.assertEqual([], log.at_least(logging.ERROR))
        self.assertEqual(['WARNING nova_snapshot_ext.nova.filter: w 1'],
                         log.at_least(logging.WARNING))
        logging.getLogger('nova_snapshot_ext.snapshot').error('e')
        self.assertEqual(['ERROR nova_snapshot_ext.snapshot: e'],
                         log.at_least(logging.ERROR))

    def test_tracebacks(self):
        log = self.useFixture(base.PluginLogRecords())
        try:
            raise ValueError('boom')
        except ValueError:
            logging.getLogger('nova_snapshot_ext.x').exception('failed')
            logging.getLogger('other').exception('not ours')
        self.assertEqual(['nova_snapshot_ext.x: failed'], log.tracebacks())

    def test_leaves_the_logger_level_alone(self):
        logger = logging.getLogger('nova_snapshot_ext')
        before = logger.level
        self.useFixture(base.PluginLogRecords())
        self.assertEqual(before, logger.level)
