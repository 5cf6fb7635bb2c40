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

"""Every ``python -m nova_snapshot_ext...`` the docs give can be run.

A module renamed or moved leaves a command in the docs that runs nothing
(``python3 -m ...cloud.host real`` printed nothing after the package lists
moved to ``cloud.debian``, and ``apt-get install $(...)`` installed
nothing).
"""

import glob
import importlib.util
import os
import re

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
#: A command across a line break too (reStructuredText wraps them).
COMMAND = re.compile(r'python3?\s+-m\s+(nova_snapshot_ext[\w.]*\w)')


def _documented():
    """``{module: [files naming it]}`` of the docs and the CI script."""
    found = {}
    paths = (glob.glob(os.path.join(ROOT, 'doc', 'source', '*.rst')) +
             [os.path.join(ROOT, 'README.rst'),
              os.path.join(ROOT, '.ci', 'run')])
    for path in paths:
        with open(path, encoding='utf-8') as fh:
            for module in COMMAND.findall(fh.read()):
                found.setdefault(module, []).append(
                    os.path.relpath(path, ROOT))
    return found


class DocumentedCommandsTest(testtools.TestCase):

    def test_some_are_found(self):
        self.assertIn('nova_snapshot_ext.embedded.cloud.debian',
                      _documented())

    def test_each_module_exists_and_runs_as_a_script(self):
        for module, files in sorted(_documented().items()):
            spec = importlib.util.find_spec(module)
            self.assertIsNotNone(spec, '%s (in %s) is no module'
                                 % (module, ', '.join(files)))
            if spec.submodule_search_locations:
                spec = importlib.util.find_spec(module + '.__main__')
                self.assertIsNotNone(spec, '%s (in %s) has no __main__'
                                     % (module, ', '.join(files)))
                continue
            with open(spec.origin, encoding='utf-8') as fh:
                source = fh.read()
            runs = "if __name__ == '__main__':" in source
            self.assertTrue(runs, '%s (in %s) does nothing when run'
                            % (module, ', '.join(files)))
