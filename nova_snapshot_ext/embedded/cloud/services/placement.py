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

"""The cloud's Placement (gunicorn over MariaDB)."""

import os

from nova_snapshot_ext.embedded.cloud import config
from nova_snapshot_ext.embedded.cloud.services import base


class Placement(base.CloudService):
    """Resource providers and allocations for nova-scheduler."""

    name = 'placement'
    words = 'Placement'
    ports = ('placement',)
    databases = ('placement',)
    user = 'placement'
    catalog_entries = (('placement', 'placement'),)

    def url(self):
        return 'http://127.0.0.1:%d' % self.port()

    def configure(self, template):
        self.write(os.path.join(self.dir('placement'), 'placement.conf'),
                   config.placement_conf(
                       self.database_url('placement'),
                       self.cloud.service('keystone').url(),
                       self.cloud.password))

    def initialise(self):
        pdir = self.dir('placement')
        self.run('placement-manage', [
            self.bin('placement-manage'), '--config-file',
            os.path.join(pdir, 'placement.conf'), 'db', 'sync'], cwd=pdir)

    def start(self):
        pdir = self.dir('placement')
        process = self.gunicorn('placement', self.port(),
                                'placement.wsgi.api:application', pdir,
                                self.env(OS_PLACEMENT_CONFIG_DIR=pdir))
        self.wait_http(process, self.url() + '/')
