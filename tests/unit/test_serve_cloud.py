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

"""``serve --cloud``'s printed parts."""

import subprocess

from nova_snapshot_ext.cmd import serve
from tests import base


class TestCloudExports(base.TestCase):
    """serve --cloud's OS_* lines run in a shell as printed."""

    def test_exports_are_shell_quoted_and_sorted(self):
        text = serve.cloud_exports({'OS_USERNAME': 'demo',
                                    'OS_PASSWORD': "it's secret",
                                    'OS_AUTH_URL': 'http://127.0.0.1:1/v3'})
        lines = text.splitlines()
        self.assertEqual(['export OS_AUTH_URL=http://127.0.0.1:1/v3',
                          "export OS_PASSWORD='it'\"'\"'s secret'",
                          'export OS_USERNAME=demo'], lines)
        out = subprocess.run(['sh', '-c', text + '; printf %s "$OS_PASSWORD"'],
                             capture_output=True, text=True, check=True)
        self.assertEqual("it's secret", out.stdout)
