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

"""The cloud's MariaDB: ``mariadbd --no-defaults`` on a data directory of
its own (Debian's ``mariadb-server``).

Started by hand rather than with pifpaf's ``mysql`` driver: the cloud's
template is a copy of this data directory, taken once every database is
migrated (:meth:`MariaDB.save`), and pifpaf's driver always makes a new
one.
"""

import os
import shutil
import subprocess

from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import process as proc_mod

MARIADBD = '/usr/sbin/mariadbd'
MARIADB_INSTALL_DB = 'mariadb-install-db'
START_TIMEOUT = 60.0
_TEMPLATE_NAME = 'mysql'


class MariaDB(base.CloudService):
    """Every database of the cloud, on a socket and a port of 127.0.0.1.

    Each service's :attr:`~.base.CloudService.databases` are created on
    the cold start (:meth:`initialise`, first in the list).
    """

    name = 'mariadb'
    words = 'MariaDB'
    ports = ('mysql',)
    backing = True
    programs = {
        MARIADB_INSTALL_DB: 'mariadb-server',
        MARIADBD: 'mariadb-server',
        'mariadb': 'mariadb-client',
    }

    def __init__(self, cloud):
        super().__init__(cloud)
        self.datadir = os.path.join(cloud.base_dir, 'mysql')
        self.socket = os.path.join(cloud.base_dir, 'mysqld.sock')
        self.process = None

    def configure(self, template):
        """A fresh data directory, or the template's copy."""
        if template is not None:
            shutil.copytree(os.path.join(template, _TEMPLATE_NAME),
                            self.datadir, symlinks=True)
            return
        self.run('mariadb-install-db', [
            MARIADB_INSTALL_DB, '--no-defaults',
            '--datadir=%s' % self.datadir,
            '--auth-root-authentication-method=normal', '--skip-test-db'],
            timeout=120)

    def initialise(self):
        """Create every service's databases."""
        for name in self.cloud.gather('databases'):
            self.sql('CREATE DATABASE `%s` CHARACTER SET utf8' % name)

    def save(self, directory):
        """Copy the data directory, stopped for the copy."""
        self.stop_server()
        shutil.copytree(self.datadir, os.path.join(directory,
                                                   _TEMPLATE_NAME),
                        symlinks=True)
        self.start()

    def start(self):
        """Start the server and wait until it answers on its socket."""
        self.process = self.cloud.procs.start('mariadb', [
            MARIADBD, '--no-defaults', '--user=root',
            '--datadir=%s' % self.datadir, '--socket=%s' % self.socket,
            '--port=%d' % self.port(), '--bind-address=127.0.0.1',
            '--skip-log-bin', '--max-connections=1000',
            '--innodb-buffer-pool-size=64M', '--skip-name-resolve',
            '--pid-file=%s' % os.path.join(self.datadir, 'mysqld.pid'),
            '--log-error=%s' % self.cloud.procs.log_path('mariadb-error')])
        self.cloud.procs.wait(self.process, self._ping, 'MariaDB ready',
                              START_TIMEOUT)

    def _ping(self):
        if not os.path.exists(self.socket):
            return False
        return subprocess.run(
            ['mariadb', '--no-defaults', '-S', self.socket, '-u', 'root',
             '-e', 'SELECT 1'], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, timeout=10).returncode == 0

    def sql(self, text, database=''):
        """Run SQL as root.

        :returns: the output (tab separated, no column names).
        :raises CloudError: if it fails.
        """
        cmd = ['mariadb', '--no-defaults', '-S', self.socket, '-u', 'root',
               '-N', '-B']
        if database:
            cmd.append(database)
        result = subprocess.run(cmd + ['-e', text], capture_output=True,
                                text=True, timeout=120)
        if result.returncode != 0:
            raise proc_mod.CloudError('SQL failed (%s): %s' % (
                text[:200], result.stderr[-1000:]))
        return result.stdout

    def count(self, text, database):
        """Whether a ``SELECT COUNT(*)`` found a row (a readiness check)."""
        return self.sql(text, database).strip() not in ('', '0')

    def database_url(self, database):
        """The SQLAlchemy URL of ``database``, over the socket."""
        return ('mysql+pymysql://root@localhost/%s?unix_socket=%s'
                '&charset=utf8' % (database, self.socket))

    def stop_server(self):
        """Shut the server down cleanly (for the template's copy)."""
        if self.process is not None:
            self.process.stop(timeout=30)
            if self.process in self.cloud.procs.services:
                self.cloud.procs.services.remove(self.process)
            self.process = None
