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

"""The helpers of ``python -m tests.tempest_run`` (tox -e tempest)."""

import configparser
import re

import testtools

from tests import tempest_run

SUMMARY = '''
{0} tempest.api.compute.images.test_images.T.test_a [1.2s] ... ok
{1} nova_snapshot_ext_tempest_plugin.t.T.test_b[id-1,slow] [30.5s] ... FAILED
{1} tempest.api.x.T.test_c [0.1s] ... FAILED
{0} setUpClass (tempest.api.y.Filters) [0.000000s] ... FAILED

======
Totals
======
Ran: 3 tests in 40.0000 sec.
 - Passed: 1
 - Skipped: 0
 - Expected Fail: 0
 - Unexpected Success: 0
 - Failed: 2
Sum of execute time for each test: 31.8000 sec.
'''


class TempestRunTest(testtools.TestCase):

    def test_stestr_conf_points_at_test_discover(self):
        text = tempest_run.stestr_conf('/venv/lib/site-packages/tempest')
        parser = configparser.RawConfigParser()
        parser.read_string(text)
        self.assertEqual('/venv/lib/site-packages/tempest/test_discover',
                         parser.get('DEFAULT', 'test_path'))
        self.assertEqual('/venv/lib/site-packages',
                         parser.get('DEFAULT', 'top_dir'))
        self.assertEqual(tempest_run.GROUP_REGEX,
                         parser.get('DEFAULT', 'group_regex'))

    def test_parse_sets(self):
        self.assertEqual(
            {'nova_snapshot_ext': {'expected_disk_formats': 'qcow2,vmdk'},
             'compute-feature-enabled': {'snapshot': 'True'}},
            tempest_run.parse_sets([
                'nova_snapshot_ext.expected_disk_formats=qcow2,vmdk',
                'compute-feature-enabled.snapshot=True']))
        self.assertRaises(ValueError, tempest_run.parse_sets, ['nogroup=1'])

    def test_merged_conf_adds_and_replaces(self):
        text = ('[DEFAULT]\nlog_file = /x.log\n[compute]\nimage_ref = a\n'
                'flavor_ref = %(not)s\n')
        merged = tempest_run.merged_conf(text, {
            'compute': {'image_ref': 'b'},
            'nova_snapshot_ext': {'backup': 'False'}})
        parser = configparser.RawConfigParser()
        parser.optionxform = str
        parser.read_string(merged)
        self.assertEqual('b', parser.get('compute', 'image_ref'))
        self.assertEqual('%(not)s', parser.get('compute', 'flavor_ref'))
        self.assertEqual('False', parser.get('nova_snapshot_ext', 'backup'))
        self.assertEqual('/x.log', parser.get('DEFAULT', 'log_file'))

    def test_counts_and_failed_tests(self):
        self.assertEqual({'passed': 1, 'failed': 2, 'skipped': 0},
                         tempest_run.counts(SUMMARY))
        self.assertEqual(
            ['nova_snapshot_ext_tempest_plugin.t.T.test_b',
             'tempest.api.x.T.test_c', 'tempest.api.y.Filters (setUpClass)'],
            tempest_run.failed_tests(SUMMARY))
        self.assertEqual({'passed': 0, 'failed': 0, 'skipped': 0},
                         tempest_run.counts('no summary'))

    def test_default_regexes_cover_the_subset(self):
        names = [
            'tempest.scenario.test_volume_boot_pattern.TestVolumeBootPattern'
            '.test_image_defined_boot_from_volume',
            'tempest.api.compute.servers.test_server_actions.'
            'ServerActionsTestOtherB.test_create_backup',
            'tempest.api.compute.servers.test_server_actions.'
            'ServersAaction247Test.test_create_backup',
            'tempest.api.image.v2.test_images_dependency.'
            'ImageDependencyTests.test_nova_image_snapshot_dependency',
            'nova_snapshot_ext_tempest_plugin.tests.scenario.'
            'test_volume_backed_snapshot.VolumeBackedSnapshotTest.test_x',
        ]
        patterns = tempest_run.UPSTREAM + tempest_run.PLUGIN
        for name in names:
            self.assertTrue(any(re.search(p, name) for p in patterns), name)
        self.assertFalse(any(re.search(p, 'tempest.api.compute.servers.'
                                       'test_server_actions.'
                                       'ServerActionsTestJSON.test_reboot')
                             for p in patterns))

    def test_exclusions_follow_the_profile(self):
        parse = tempest_run._parser().parse_args
        excluded = tempest_run.exclusions(
            parse(['--work-dir', 'x', '--profile', 'no-raw']))
        self.assertEqual(tempest_run.NOT_APPLICABLE['no-raw'], excluded)
        self.assertTrue(any('ImageDependencyTests' in r for r in excluded))
        self.assertEqual((), tempest_run.exclusions(
            parse(['--work-dir', 'x'])))
        # The RBD store: Glance's own 409 for an image a volume clones.
        self.assertEqual((), tempest_run.exclusions(
            parse(['--work-dir', 'x', '--stack', 'real'])))
        rbd = tempest_run.exclusions(
            parse(['--work-dir', 'x', '--stack', 'real', '--glance-store',
                   'rbd']))
        self.assertEqual(tempest_run.NOT_APPLICABLE_STORE['rbd'], rbd)
        self.assertTrue(re.search(
            rbd[0], 'tempest.api.image.v2.test_images_dependency.'
            'ImageDependencyTests.test_image_volume_server_snapshot_'
            'dependency[id-x]'))
        # Named tests run as named; a running cloud's profile is unknown.
        self.assertEqual((), tempest_run.exclusions(
            parse(['--work-dir', 'x', '--profile', 'no-raw', 'some\\.test'])))
        self.assertEqual((), tempest_run.exclusions(
            parse(['--work-dir', 'x', '--profile', 'no-raw',
                   '--tempest-conf', '/etc/tempest.conf'])))
