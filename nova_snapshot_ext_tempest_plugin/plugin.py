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

"""The entry point Tempest loads (tempest.test_plugins)."""

import os

from tempest.test_discover import plugins

from nova_snapshot_ext_tempest_plugin import config


class NovaSnapshotExtTempestPlugin(plugins.TempestPlugin):
    """Tests of nova-snapshot-ext loaded into nova-api."""

    def load_tests(self):
        base = os.path.dirname(os.path.abspath(__file__))
        top = os.path.dirname(base)
        return os.path.join(base, 'tests'), top

    def register_opts(self, conf):
        conf.register_opt(config.service_option, group='service_available')
        conf.register_group(config.group)
        conf.register_opts(config.opts, group=config.group)

    def get_opt_lists(self):
        return config.list_opts()
