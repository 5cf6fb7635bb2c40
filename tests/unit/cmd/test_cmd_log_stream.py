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

"""Log lines never reach stdout, the command's output.

oslo.log logs to stdout when ``[DEFAULT] use_stderr = false`` and no log
file is set; the command's stdout is its report (``--format json``:
one JSON document that scripts read).
"""

import os
import subprocess
import sys
import tempfile

from tests import base

_CODE = '''
import sys
from oslo_log import log
from nova_snapshot_ext.cmd import logs
from nova_snapshot_ext.cmd import main
conf = main.parse(['--config-file', sys.argv[1], '--format', 'json',
                   'audit'])
logs.setup_logging(conf)
log.getLogger('nova_snapshot_ext.audit').warning('audit fix x: failed')
print('{}')
'''


class TestLogStream(base.TestCase):

    def test_warnings_go_to_stderr_whatever_use_stderr_says(self):
        for text in ('[DEFAULT]\nuse_stderr = false\n',
                     '[DEFAULT]\nuse_stderr = true\n', ''):
            with tempfile.NamedTemporaryFile('w', suffix='.conf') as fh:
                fh.write(text)
                fh.flush()
                out = subprocess.run(
                    [sys.executable, '-c', _CODE, fh.name],
                    capture_output=True, text=True, timeout=120,
                    env=dict(os.environ, PYTHONPATH=os.getcwd()))
            self.assertEqual('{}\n', out.stdout, (text, out.stderr))
            self.assertIn('audit fix x: failed', out.stderr, text)
