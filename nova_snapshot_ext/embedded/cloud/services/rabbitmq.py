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

"""The cloud's RabbitMQ: a private node (Debian's ``rabbitmq-server``).

Started without the Debian wrapper (no ``sudo``) with its own node name,
ports and epmd, found again by pid file and port when stopped.
"""

import os
import signal
import socket
import subprocess

from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import process as proc_mod
from nova_snapshot_ext.embedded import watchdog

RABBITMQ_BIN = '/usr/lib/rabbitmq/bin'
START_TIMEOUT = 60.0


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


class RabbitMQ(base.CloudService):
    """The services' message queue (``rabbitmq-server -detached``)."""

    name = 'rabbitmq'
    words = 'RabbitMQ'
    #: AMQP, the Erlang distribution, epmd.
    ports = ('rabbit', 'rabbit_dist', 'epmd')
    backing = True
    programs = {os.path.join(RABBITMQ_BIN, 'rabbitmq-server'):
                'rabbitmq-server'}
    password = 'guest'

    def __init__(self, cloud):
        super().__init__(cloud)
        self.home = os.path.join(cloud.base_dir, 'rabbitmq')
        self.node = 'cloud%d@localhost' % self.port()

    def rabbit_env(self):
        """The environment of ``rabbitmq-server`` and ``rabbitmqctl``."""
        env = dict(os.environ)
        env.update({
            'HOME': self.home,
            'RABBITMQ_NODENAME': self.node,
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port()),
            'RABBITMQ_DIST_PORT': str(self.port('rabbit_dist')),
            'ERL_EPMD_PORT': str(self.port('epmd')),
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

    def configure(self, template):
        """Its home: no plugin, guest allowed over 127.0.0.1, a cookie."""
        os.makedirs(os.path.join(self.home, 'log'), exist_ok=True)
        self.write(os.path.join(self.home, 'enabled_plugins'), '[].\n')
        self.write(os.path.join(self.home, 'rabbitmq.conf'),
                   'loopback_users = none\n')
        self.write(os.path.join(self.home, 'env.conf'), '')
        cookie = self.write(os.path.join(self.home, '.erlang.cookie'),
                            'nova-snapshot-ext-cloud-%d' % self.port())
        os.chmod(cookie, 0o400)

    def start(self):
        """Start the node and wait until AMQP accepts connections."""
        # -detached: the launcher's process ends at once; the node (and its
        # epmd) are found by pid file and by port when stopping.
        self.cloud.procs.run('rabbitmq-start', [
            os.path.join(RABBITMQ_BIN, 'rabbitmq-server'), '-detached'],
            env=self.rabbit_env(), timeout=60)
        self.cloud.procs.add(proc_mod.Service(
            'rabbitmq', None, self.cloud.procs.log_path('rabbitmq-start'),
            stop=self._stop))
        self.cloud.procs.wait(None, lambda: _can_connect(self.port()),
                              'RabbitMQ on port %d' % self.port(),
                              START_TIMEOUT)

    def transport_url(self):
        """The services' ``transport_url``."""
        return 'rabbit://guest:%s@127.0.0.1:%d/' % (self.password,
                                                    self.port())

    def _pid(self):
        try:
            with open(os.path.join(self.home, 'rabbit.pid')) as fh:
                return int(fh.read().strip())
        except (OSError, ValueError):
            return None

    def _stop(self):
        pid = self._pid()
        try:
            subprocess.run([os.path.join(RABBITMQ_BIN, 'rabbitmqctl'),
                            '-n', self.node, 'stop'], env=self.rabbit_env(),
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
        for epmd in watchdog.epmd_pids(self.port('epmd')):
            try:
                os.kill(epmd, signal.SIGKILL)
            except OSError:
                pass
