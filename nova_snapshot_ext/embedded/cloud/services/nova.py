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

"""The cloud's Nova: nova-api with the plugin, nova-scheduler,
nova-conductor and nova-compute, in cells v2 as devstack lays them out.

nova-api (and nova-scheduler) read a ``nova.conf`` whose ``[database]``
is cell0; the conductor and nova-compute read the cell's ``nova.conf``
whose ``[database]`` is cell1; servers live in cell1.  nova-api's
``api-paste.ini`` gets the plugin's filter by the ``paste`` command every
recipe runs (``doc/source/nova.rst``), or stays Nova's own
(``Cloud(plugin=False)``).  nova-compute runs this project's fake driver
(:mod:`..virt_driver`, copied into the virtualenv's ``nova.virt``) or, on
the real stack, libvirt.
"""

import os
import shutil

from nova_snapshot_ext.embedded.cloud import config
from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import demo as embedded_demo
from nova_snapshot_ext.embedded import process as proc_mod

VIRT_MODULE = 'snapshot_ext_fake'
#: The fake driver's source (it imports Nova: read, never imported here).
VIRT_DRIVER_SOURCE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'virt_driver.py')
COMPUTE_DRIVER = VIRT_MODULE + '.SnapshotExtFakeDriver'
#: Seconds nova-compute has to register its compute node.
COMPUTE_TIMEOUT = 180.0


class Nova(base.CloudService):
    """Compute (cells v2: cell0 and cell1)."""

    name = 'nova'
    words = 'Nova (api, scheduler, conductor, compute)'
    ports = ('nova',)
    databases = ('nova_api', 'nova_cell0', 'nova_cell1')
    user = 'nova'
    catalog_entries = (('nova', 'compute'),)

    def url(self):
        return 'http://127.0.0.1:%d/v2.1' % self.port()

    @property
    def api_dir(self):
        """nova-api's ``$OS_NOVA_CONFIG_DIR`` (api-paste.ini, nova.conf)."""
        return os.path.join(self.cloud.base_dir, 'nova-api')

    @property
    def cell_dir(self):
        """The cell's directory (conductor's and compute's configs)."""
        return os.path.join(self.cloud.base_dir, 'nova-cell1')

    # configure ---------------------------------------------------------

    def configure(self, template):
        self._install_virt_driver()
        for d in (self.api_dir, self.cell_dir):
            self.dir(d, 'locks')
            self.dir(d, 'instances')
        self._write_confs()
        self.write(os.path.join(self.api_dir, 'embedded_nova_wsgi.py'),
                   base.wsgi_module('nova.wsgi.osapi_compute'))
        stock = self.venv_file('etc', 'nova', 'api-paste.ini')
        paste = os.path.join(self.api_dir, 'api-paste.ini')
        if self.cloud.plugin:
            # The one edit every recipe makes (doc/source/nova.rst), by
            # the command nova-api's environment now has.
            self.run('nova-snapshot-ext-paste', [
                self.bin('nova-snapshot-ext'), 'paste', '--from', stock,
                '--output', paste], cwd=self.api_dir)
        else:
            shutil.copyfile(stock, paste)

    def _install_virt_driver(self):
        """Copy our fake driver into the venv's ``nova.virt``."""
        with open(VIRT_DRIVER_SOURCE, 'rb') as fh:
            data = fh.read()
        dst = os.path.join(self.cloud.site_packages(), 'nova', 'virt',
                           VIRT_MODULE + '.py')
        try:
            with open(dst, 'rb') as fh:
                if fh.read() == data:
                    return
        except OSError:
            pass
        with open(dst + '.tmp', 'wb') as fh:
            fh.write(data)
        os.replace(dst + '.tmp', dst)

    def _plugin_options(self):
        """nova-api's ``[snapshot_ext]``, or None (stock Nova).

        Nova's ``[glance]`` settings reused (nova.rst); backups of
        volume-backed servers on (backups.rst: off by default); on the
        real stack the libvirt driver, as an operator of a libvirt cloud
        sets it (it reads Nova's ``[libvirt] virt_type``).
        """
        if not self.cloud.plugin:
            return None
        options = {'driver': 'libvirt' if self.cloud.real else 'fake',
                   'volume_backed_backups': True,
                   'backup_copies': self.cloud.backup_copies}
        if self.cloud.location_url is not None:
            options.update(
                activation_method=self.cloud.activation,
                location_url=self.cloud.location_url,
                location_disk_format=embedded_demo.LOCATION_FORMAT)
        return {'snapshot_ext': options}

    def _write_confs(self):
        cloud, real = self.cloud, self.cloud.real
        common = dict(
            transport_url=cloud.service('rabbitmq').transport_url(),
            keystone_url=cloud.service('keystone').url(),
            password=cloud.password)
        glance_url = cloud.service('glance').url()
        api_glance_url = glance_url
        if cloud.nova_glance_port:
            api_glance_url = 'http://127.0.0.1:%d' % cloud.nova_glance_port
        cell1 = self.database_url('nova_cell1')
        self.write(os.path.join(self.api_dir, 'nova.conf'), config.nova_conf(
            self.api_dir, self.database_url('nova_cell0'),
            self.database_url('nova_api'), glance_url=api_glance_url,
            snapshot_ext=self._plugin_options(),
            extra=real.nova_api_options() if real else None, **common))
        self.write(os.path.join(self.cell_dir, 'nova.conf'),
                   config.nova_conf(self.cell_dir, cell1,
                                    self.database_url('nova_api'),
                                    glance_url=glance_url, **common))
        self.write(os.path.join(self.cell_dir, 'nova-cpu.conf'),
                   config.nova_conf(
                       self.cell_dir, cell1, None, glance_url=glance_url,
                       compute_driver=COMPUTE_DRIVER,
                       extra=real.nova_compute_options() if real else None,
                       **common))

    # initialise, rehome --------------------------------------------------

    def _manage(self, conf, *args):
        self.run('nova-manage', [self.bin('nova-manage'), '--config-file',
                                 conf] + list(args), timeout=600)

    def initialise(self):
        """The API database, cell0 and cell1, both cells migrated."""
        api_conf = os.path.join(self.api_dir, 'nova.conf')
        self._manage(api_conf, 'api_db', 'sync')
        self._manage(api_conf, 'cell_v2', 'map_cell0',
                     '--database_connection',
                     self.database_url('nova_cell0'))
        self._manage(api_conf, 'cell_v2', 'create_cell', '--name', 'cell1',
                     '--database_connection',
                     self.database_url('nova_cell1'), '--transport-url',
                     self.cloud.service('rabbitmq').transport_url())
        self._manage(api_conf, 'db', 'sync')
        self._manage(os.path.join(self.cell_dir, 'nova.conf'), 'db', 'sync')

    def rehome(self):
        """The cell mappings at this start's database and queue."""
        self.sql(
            "UPDATE cell_mappings SET database_connection = '%s' "
            "WHERE name = 'cell0';\n"
            "UPDATE cell_mappings SET database_connection = '%s', "
            "transport_url = '%s' WHERE name = 'cell1';" % (
                self.database_url('nova_cell0'),
                self.database_url('nova_cell1'),
                self.cloud.service('rabbitmq').transport_url()), 'nova_api')

    # start ---------------------------------------------------------------

    def start(self):
        """Every Nova process, nova-api answering."""
        env = self.env()
        api = self._start_api(self.api_dir)
        daemons = (('nova-scheduler', self.api_dir, 'nova.conf'),
                   ('nova-conductor', self.cell_dir, 'nova.conf'),
                   ('nova-compute', self.cell_dir, 'nova-cpu.conf'))
        for name, directory, conf in daemons:
            self.cloud.procs.start(name, [
                self.bin(name), '--config-file',
                os.path.join(directory, conf)], env=env, cwd=directory)
        self.wait_http(api, 'http://127.0.0.1:%d/' % self.port())

    def settle(self):
        """nova-compute registered and mapped to its cell."""
        self.cloud.step('discover', self._discover_compute)

    def _start_api(self, api_dir, port=None, name='nova-api'):
        return self.gunicorn(name, port or self.port(),
                             'embedded_nova_wsgi:application', api_dir,
                             self.env(OS_NOVA_CONFIG_DIR=api_dir),
                             pythonpath=api_dir)

    def _discover_compute(self):
        """Wait for the compute node, then map it (``discover_hosts``)."""
        self.cloud.procs.wait(
            self.cloud.procs.named('nova-compute'),
            lambda: self.cloud.service('mariadb').count(
                'SELECT COUNT(*) FROM compute_nodes WHERE deleted = 0',
                'nova_cell1'),
            'nova-compute registered', COMPUTE_TIMEOUT)
        self._manage(os.path.join(self.api_dir, 'nova.conf'), 'cell_v2',
                     'discover_hosts', '--verbose')

    def start_stock_api(self):
        """A second nova-api without the plugin.

        See :meth:`Cloud.start_stock_nova_api`.
        """
        stock_dir = self.dir('nova-api-stock')
        for name in ('nova.conf', 'embedded_nova_wsgi.py'):
            shutil.copyfile(os.path.join(self.api_dir, name),
                            os.path.join(stock_dir, name))
        shutil.copyfile(self.venv_file('etc', 'nova', 'api-paste.ini'),
                        os.path.join(stock_dir, 'api-paste.ini'))
        port = proc_mod.free_ports(1, taken=self.cloud.ports.values())[0]
        api = self._start_api(stock_dir, port, 'nova-api-stock')
        self.wait_http(api, 'http://127.0.0.1:%d/' % port)
        return 'http://127.0.0.1:%d/v2.1' % port

    def restart_api(self):
        """Stop nova-api and start it again on the same port and files."""
        self.cloud.procs.stop_named('nova-api')
        api = self._start_api(self.api_dir)
        self.wait_http(api, 'http://127.0.0.1:%d/' % self.port())
