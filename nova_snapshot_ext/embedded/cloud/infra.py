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

"""The cloud's private MariaDB and RabbitMQ (Debian packages).

Both are started by hand rather than with pifpaf's drivers: the cloud's
template is a copy of MariaDB's data directory (pifpaf's ``mysql`` driver
always makes a new one), and RabbitMQ must run without the Debian wrapper
(no ``sudo``) with its own node name, ports and epmd, which is what
``doc/../cloud-in-a-box`` measured.
"""

import os
import shutil
import signal
import socket
import subprocess

from nova_snapshot_ext.embedded import process as proc_mod
from nova_snapshot_ext.embedded import watchdog

MARIADBD = '/usr/sbin/mariadbd'
MARIADB_INSTALL_DB = 'mariadb-install-db'
RABBITMQ_BIN = '/usr/lib/rabbitmq/bin'
START_TIMEOUT = 60.0
#: The Debian packages of these servers and of the cloud's images:
#: ``{program or path: package}`` (:mod:`.host`).
PROGRAMS = {
    'mariadb-install-db': 'mariadb-server',
    MARIADBD: 'mariadb-server',
    'mariadb': 'mariadb-client',
    os.path.join(RABBITMQ_BIN, 'rabbitmq-server'): 'rabbitmq-server',
    'qemu-img': 'qemu-utils',
}


def _can_connect(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(1)
    try:
        sock.connect(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        sock.close()


class MariaDB(object):
    """``mariadbd --no-defaults`` on a data directory of its own.

    :param procs: the cloud's :class:`~.process.Processes`.
    :param base_dir: where ``mysql/`` (datadir) and the socket go.
    :param port: the TCP port on 127.0.0.1.
    """

    def __init__(self, procs, base_dir, port):
        self.procs = procs
        self.datadir = os.path.join(base_dir, 'mysql')
        self.socket = os.path.join(base_dir, 'mysqld.sock')
        self.port = port
        self.service = None

    def install(self):
        """Create an empty data directory (``mariadb-install-db``)."""
        self.procs.run('mariadb-install-db', [
            MARIADB_INSTALL_DB, '--no-defaults',
            '--datadir=%s' % self.datadir,
            '--auth-root-authentication-method=normal', '--skip-test-db'],
            timeout=120)

    def copy_from(self, datadir):
        """Take a template's data directory."""
        shutil.copytree(datadir, self.datadir, symlinks=True)

    def start(self):
        """Start the server and wait until it answers on its socket."""
        self.service = self.procs.start('mariadb', [
            MARIADBD, '--no-defaults', '--user=root',
            '--datadir=%s' % self.datadir, '--socket=%s' % self.socket,
            '--port=%d' % self.port, '--bind-address=127.0.0.1',
            '--skip-log-bin', '--max-connections=1000',
            '--innodb-buffer-pool-size=64M', '--skip-name-resolve',
            '--pid-file=%s' % os.path.join(self.datadir, 'mysqld.pid'),
            '--log-error=%s' % self.procs.log_path('mariadb-error')])
        self.procs.wait(self.service, lambda: self._ping(), 'MariaDB ready',
                        START_TIMEOUT)
        return self

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

    def url(self, database):
        """The SQLAlchemy URL of ``database`` (over TCP, as a deployment)."""
        return ('mysql+pymysql://root:@127.0.0.1:%d/%s?charset=utf8'
                % (self.port, database))

    def stop(self):
        """Shut the server down cleanly (for a template) or by signal."""
        if self.service is not None:
            self.service.stop(timeout=30)
            if self.service in self.procs.services:
                self.procs.services.remove(self.service)
            self.service = None


class RabbitMQ(object):
    """A private RabbitMQ node (``rabbitmq-server -detached``).

    :param procs: the cloud's :class:`~.process.Processes`.
    :param base_dir: where its home, database and logs go.
    :param port: the AMQP port; ``dist_port`` and ``epmd_port`` its
        Erlang distribution and epmd ports.
    """

    user = 'guest'
    password = 'guest'

    def __init__(self, procs, base_dir, port, dist_port, epmd_port):
        self.procs = procs
        self.home = os.path.join(base_dir, 'rabbitmq')
        self.port = port
        self.dist_port = dist_port
        self.epmd_port = epmd_port
        self.node = 'cloud%d@localhost' % port
        self.service = None

    def env(self):
        env = dict(os.environ)
        env.update({
            'HOME': self.home,
            'RABBITMQ_NODENAME': self.node,
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port),
            'RABBITMQ_DIST_PORT': str(self.dist_port),
            'ERL_EPMD_PORT': str(self.epmd_port),
            'ERL_EPMD_ADDRESS': '127.0.0.1',
            'RABBITMQ_MNESIA_BASE': os.path.join(self.home, 'mnesia'),
            'RABBITMQ_LOG_BASE': os.path.join(self.home, 'log'),
            'RABBITMQ_PID_FILE': os.path.join(self.home, 'rabbit.pid'),
            'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(
                self.home, 'enabled_plugins'),
            'RABBITMQ_CONFIG_FILE': os.path.join(self.home, 'rabbitmq'),
            'RABBITMQ_CONF_ENV_FILE': os.path.join(self.home, 'env.conf'),
            'RABBITMQ_ADVANCED_CONFIG_FILE': os.path.join(
                self.home, 'advanced.config'),
        })
        return env

    def start(self):
        """Start the node and wait until AMQP accepts connections."""
        os.makedirs(os.path.join(self.home, 'log'), exist_ok=True)
        with open(os.path.join(self.home, 'enabled_plugins'), 'w') as fh:
            fh.write('[].\n')
        with open(os.path.join(self.home, 'rabbitmq.conf'), 'w') as fh:
            fh.write('loopback_users = none\n')
        with open(os.path.join(self.home, 'env.conf'), 'w') as fh:
            fh.write('')
        with open(os.path.join(self.home, '.erlang.cookie'), 'w') as fh:
            fh.write('nova-snapshot-ext-cloud-%d' % self.port)
        os.chmod(os.path.join(self.home, '.erlang.cookie'), 0o400)
        # -detached: the launcher's process ends at once; the node (and its
        # epmd) are found by pid file and by port when stopping.
        self.procs.run('rabbitmq-start', [
            os.path.join(RABBITMQ_BIN, 'rabbitmq-server'), '-detached'],
            env=self.env(), timeout=60)
        self.service = self.procs.add(proc_mod.Service(
            'rabbitmq', None, self.procs.log_path('rabbitmq-start'),
            stop=self._stop))
        self.procs.wait(None, lambda: _can_connect(self.port),
                        'RabbitMQ on port %d' % self.port, START_TIMEOUT)
        return self

    def url(self):
        """The ``transport_url`` of the node."""
        return 'rabbit://%s:%s@127.0.0.1:%d/' % (self.user, self.password,
                                                 self.port)

    def _pid(self):
        try:
            with open(os.path.join(self.home, 'rabbit.pid')) as fh:
                return int(fh.read().strip())
        except (OSError, ValueError):
            return None

    def _epmd_pids(self):
        """The pids of the epmd that serves this node's port."""
        return watchdog.epmd_pids(self.epmd_port)

    def _stop(self):
        pid = self._pid()
        try:
            subprocess.run([os.path.join(RABBITMQ_BIN, 'rabbitmqctl'),
                            '-n', self.node, 'stop'], env=self.env(),
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if pid is not None:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        for epmd in self._epmd_pids():
            try:
                os.kill(epmd, signal.SIGKILL)
            except OSError:
                pass
