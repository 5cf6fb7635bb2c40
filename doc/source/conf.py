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

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '_ext'))

project = 'nova-snapshot-ext'
copyright = '2026, nova-snapshot-ext developers'
master_doc = 'index'
source_suffix = '.rst'
exclude_patterns = ['_ext']
html_theme = 'alabaster'

extensions = [
    # The options reference (.. show-options::) from the oslo.config.opts
    # entry points, the same lists oslo-config-generator reads.
    'oslo_config.sphinxext',
    # The sample configuration file (sample-config.rst), written by
    # oslo-config-generator from the same generator file as
    # ``tox -e genconfig``, at every build.
    'oslo_config.sphinxconfiggen',
    # The CLI reference (.. cli-help::) from the console script's parser.
    'clidoc',
]

# oslo_config.sphinxconfiggen: writes _static/nova-snapshot-ext.conf.sample
# (not committed: generated at every build).
config_generator_config_file = [
    ('../../etc/nova_snapshot_ext/nova-snapshot-ext-config-generator.conf',
     '_static/nova-snapshot-ext'),
]
