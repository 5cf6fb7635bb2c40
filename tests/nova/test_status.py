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


"""The upgrade check's Nova checks inside the real Nova of this env.

The ``api-paste.ini`` each installed Nova ships
(``<prefix>/etc/nova/api-paste.ini``, the file packagers install as
``/etc/nova/api-paste.ini``): as shipped the filter is missing (Failure
naming both compute API composites); edited as ``doc/source/nova.rst``
says it passes; the Nova release check passes for every supported major.
"""

import os
import sys

import fixtures
import testtools

from nova_snapshot_ext.cmd import status
from nova_snapshot_ext.nova import paste
from tests.nova import base


class TestNovaChecks(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.shipped = os.path.join(sys.prefix, 'etc', 'nova',
                                    'api-paste.ini')
        if not os.path.isfile(self.shipped):
            self.skipTest('this Nova ships no %s' % self.shipped)
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def checks(self, paste_file):
        conf = status.new_conf()
        conf(['--api-paste', paste_file], project='x',
             default_config_files=[], default_config_dirs=[])
        return status.UpgradeChecks(conf)

    def test_shipped_file_lacks_the_filter(self):
        with open(self.shipped) as f:
            problems = paste.filter_problems(f.read())
        self.assertEqual(3, len(problems), problems)
        self.assertIn('add [filter:snapshot_ext]', problems[0])
        text = ' '.join(problems)
        self.assertIn('[composite:openstack_compute_api_v21] keystone', text)
        self.assertIn('[composite:openstack_compute_api_v21_legacy_v2_'
                      'compatible] keystone', text)
        result = self.checks(self.shipped)._check_paste()
        self.assertEqual(status.Code.FAILURE, result.code)

    def test_file_edited_as_the_guide_says_passes(self):
        path = os.path.join(self.tmp, 'api-paste.ini')
        text = base.nova_api_paste_ini()
        # The guide keeps authtoken; nova_api_paste_ini drops it for tests.
        with open(path, 'w') as f:
            f.write(text)
        self.assertEqual([], paste.filter_problems(text))
        result = self.checks(path)._check_paste()
        self.assertEqual(status.Code.SUCCESS, result.code, result.details)

    def test_nova_release_supported(self):
        result = self.checks(self.shipped)._check_nova()
        self.assertEqual(status.Code.SUCCESS, result.code, result.details)
        self.assertIn('is supported', result.details)
