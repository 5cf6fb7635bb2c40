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

"""The cloud's Cinder: cinder-api (gunicorn), cinder-scheduler and
cinder-volume.

cinder-volume runs this project's reporting fake driver
(:mod:`..cinder_driver`) or, on the real stack, the RBD driver on Ceph.
Cinder is up once cinder-scheduler lists a pool: cinder-volume's
heartbeat says it runs, but until its first capability report every
volume create ends in ``NoValidBackend``.
"""

import os
import shutil

from oslo_log import log as logging

from nova_snapshot_ext.embedded.cloud import config
from nova_snapshot_ext.embedded.cloud.services import base

LOG = logging.getLogger(__name__)

#: The fake stack's volume driver.
FAKE_DRIVER = ('nova_snapshot_ext.embedded.cloud.cinder_driver.'
               'CloneReportingVolumeDriver')
#: Its daemons beside cinder-api.
DAEMONS = ('cinder-scheduler', 'cinder-volume')


class Cinder(base.CloudService):
    """Block storage: volumes and volume snapshots."""

    name = 'cinder'
    words = 'Cinder'
    ports = ('cinder',)
    databases = ('cinder',)
    user = 'cinder'
    catalog_entries = (('cinder', 'block-storage'),
                       ('cinderv3', 'volumev3'))

    def url(self):
        return 'http://127.0.0.1:%d/v3' % self.port()

    def catalog(self):
        url = self.url() + '/$(project_id)s'
        return {'block-storage': url, 'volumev3': url}

    @property
    def conf(self):
        """Its ``cinder.conf``."""
        return os.path.join(self.cloud.base_dir, 'cinder', 'cinder.conf')

    def configure(self, template):
        cdir = self.dir('cinder')
        for sub in ('volumes', 'locks', 'coordination'):
            self.dir('cinder', sub)
        for name in ('api-paste.ini', 'resource_filters.json'):
            shutil.copyfile(self.venv_file('etc', 'cinder', name),
                            os.path.join(cdir, name))
        real = self.cloud.real
        self.write(self.conf, config.cinder_conf(
            cdir, self.database_url('cinder'),
            self.cloud.service('rabbitmq').transport_url(),
            self.cloud.service('keystone').url(), self.cloud.password,
            FAKE_DRIVER, backend=real.cinder_backend() if real else None,
            backup=self._backup_options()))
        self.write(os.path.join(cdir, 'embedded_cinder_wsgi.py'),
                   base.wsgi_module('cinder.wsgi.api',
                                    ['--config-file', self.conf]))

    def _backup_options(self):
        """cinder-backup's options when the cloud runs it, or None."""
        if not self.cloud.runs('cinder_backup'):
            return None
        return self.cloud.service('cinder_backup').options()

    def initialise(self):
        self.run('cinder-manage', [
            self.bin('cinder-manage'), '--config-file', self.conf, 'db',
            'sync'], cwd=self.dir('cinder'))

    def start(self):
        cdir = self.dir('cinder')
        env = self.env()
        api = self.gunicorn('cinder-api', self.port(),
                            'embedded_cinder_wsgi:application', cdir, env,
                            pythonpath=cdir)
        for name in DAEMONS:
            self.cloud.procs.start(name, [self.bin(name), '--config-file',
                                          self.conf], env=env, cwd=cdir)
        self.wait_http(api, 'http://127.0.0.1:%d/' % self.port())
        self.cloud.procs.wait(
            self.cloud.procs.named('cinder-volume'), self._volume_up,
            'cinder-volume up', base.START_TIMEOUT)

    def settle(self):
        """Until cinder-scheduler lists a pool (see :meth:`_wait_pools`)."""
        self.cloud.step('cinder_pools', self._wait_pools)

    def _volume_up(self):
        return self.cloud.service('mariadb').count(
            "SELECT COUNT(*) FROM services WHERE `binary` = 'cinder-volume'"
            " AND deleted = 0 AND disabled = 0 AND updated_at > "
            "UTC_TIMESTAMP() - INTERVAL 60 SECOND", 'cinder')

    def _wait_pools(self):
        """Until cinder-scheduler knows a backend it can place volumes on.

        ``GET /v3/{project}/scheduler-stats/get_pools`` (admin) lists a
        pool only after cinder-volume's first capability report.

        :raises CloudError: no pool within :data:`~.base.START_TIMEOUT`,
            with cinder-scheduler's log.
        """
        admin = self.cloud.session('admin')
        url = self.url() + '/%s/scheduler-stats/get_pools' % (
            self.cloud.ids['projects']['admin'])

        def known():
            resp = admin.get(url, raise_exc=False)
            return resp.status_code == 200 and bool(
                resp.json().get('pools'))

        waited = self.cloud.procs.wait(
            self.cloud.procs.named('cinder-scheduler'), known,
            'cinder-scheduler knowing a backend (the first capability '
            'report of cinder-volume)', base.START_TIMEOUT)
        LOG.info('cinder-scheduler knew a backend after %.1f s', waited)
