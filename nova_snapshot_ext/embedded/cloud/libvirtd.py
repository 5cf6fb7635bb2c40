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

"""A private libvirtd (QEMU, TCG) for the cloud's nova-compute.

As root, libvirtd is always the system daemon with fixed paths
(``/run/libvirt``, ``/etc/libvirt``, ``/var/lib/libvirt`` ...): a second
one cannot start beside another, and one shared with the host would show
nova-compute domains it does not know (it then refuses to start).  So the
cloud starts its own in a private mount namespace (``unshare -m``) where
those five directories are bind mounts of the cloud's own, listening on a
loopback TCP port without authentication; nova-compute reaches it through
``qemu+tcp://127.0.0.1:<port>/system``.  virtlogd (which writes the
guests' consoles) runs beside it in the same namespace and process group.

It runs on the cloud's :class:`~.process.Processes` like every other
service.  Its stop first destroys and undefines every domain (QEMU
processes leave libvirtd's process group) and ends any QEMU left by its
pid file; nothing of the host's is touched, but an empty
``/run/libvirt`` mount point made for it is removed again, by the last
cloud that stops: removing a directory another mount namespace has a
mount on detaches that mount (Linux 3.18 and later), so a cloud that
stopped first would take the running one's ``/run/libvirt`` away (seen:
nova-compute then found no ``virtlogd-sock``).

QEMU's capability cache is kept between clouds (:func:`cache_dir`): the
first probe takes about 8 s, later starts 0.4 s.
"""

import os
import signal
import subprocess

from nova_snapshot_ext.embedded import glance_venv
from nova_snapshot_ext.embedded import process as proc_mod

START_TIMEOUT = 120.0
#: The host directories bound to the cloud's: ``{host path: sub-dir}``.
#: The mount point of libvirt's run directory, and the file that says a
#: cloud made it (so that the last cloud to stop removes it).
RUN_DIR = '/run/libvirt'
RUN_DIR_MARK = os.path.join(RUN_DIR, '.made-by-nova-snapshot-ext')


def mounted_anywhere(path, proc='/proc'):
    """Whether any process's mount namespace has a mount on ``path``.

    Read from every ``/proc/<pid>/mountinfo`` (its fifth field is the
    mount point); a process that ends meanwhile is skipped.

    :returns: a bool.
    """
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            with open(os.path.join(proc, pid, 'mountinfo')) as fh:
                for line in fh:
                    fields = line.split(' ', 5)
                    if len(fields) > 4 and fields[4] == path:
                        return True
        except OSError:
            continue
    return False


MOUNTS = (('/run/libvirt', 'run'), ('/etc/libvirt', 'etc'),
          ('/var/lib/libvirt', 'lib'), ('/var/log/libvirt', 'log'),
          ('/var/cache/libvirt', None))
#: The Debian packages the hypervisor needs: ``{program: package}``.
PROGRAMS = {
    'libvirtd': 'libvirt-daemon-system',
    'virtlogd': 'libvirt-daemon-system',
    'virsh': 'libvirt-clients',
    'qemu-system-x86_64': 'qemu-system-x86',
    '/usr/lib/x86_64-linux-gnu/qemu/block-rbd.so': 'qemu-block-extra',
    '/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/'
    'libvirt_driver_qemu.so': 'libvirt-daemon-driver-qemu',
    '/usr/lib/python3/dist-packages/libvirtmod.cpython-311-x86_64-linux-'
    'gnu.so': 'python3-libvirt',
    'unshare': 'util-linux',
}

LIBVIRTD_CONF = """\
# Written by nova_snapshot_ext.embedded.cloud.libvirtd: loopback TCP only.
listen_tls = 0
listen_tcp = 1
listen_addr = "127.0.0.1"
tcp_port = "%(port)d"
auth_tcp = "none"
auth_unix_rw = "none"
"""
QEMU_CONF = """\
# Written by nova_snapshot_ext.embedded.cloud.libvirtd.
user = "root"
group = "root"
security_driver = "none"
"""
_SCRIPT = """\
set -e
for pair in %(binds)s; do
  mount --bind "${pair%%%%=*}" "${pair#*=}"
done
virtlogd -p %(dir)s/virtlogd.pid &
exec libvirtd --listen -p %(dir)s/libvirtd.pid
"""


def cache_dir():
    """QEMU's capability cache, shared by the clouds of this machine."""
    return os.path.join(glance_venv.cache_root(), 'libvirt-cache')


class Libvirtd(object):
    """libvirtd and virtlogd of one cloud in ``<base_dir>/libvirt``.

    :param procs: the cloud's :class:`~.process.Processes`.
    :param base_dir: the cloud's directory.
    :param port: the loopback TCP port.
    """

    def __init__(self, procs, base_dir, port):
        self.procs = procs
        self.dir = os.path.join(base_dir, 'libvirt')
        self.port = port
        self.uri = 'qemu+tcp://127.0.0.1:%d/system' % port
        self.service = None

    @classmethod
    def of_uri(cls, uri):
        """A running cloud's libvirtd, to ask.

        :param uri: its ``describe()['libvirt_uri']``.
        """
        daemon = cls(None, '/nonexistent', 0)
        daemon.uri = uri
        return daemon

    def virsh(self, *args, stdin=None, timeout=60):
        """Run ``virsh`` against this libvirtd.

        :returns: its standard output (text).
        :raises CloudError: if it fails.
        """
        result = subprocess.run(['virsh', '-c', self.uri] + list(args),
                                input=stdin, capture_output=True, text=True,
                                timeout=timeout)
        if result.returncode != 0:
            raise proc_mod.CloudError('virsh %s: %s' % (
                ' '.join(args[:2]), (result.stderr or result.stdout)[-800:]))
        return result.stdout

    def _layout(self):
        binds = []
        for host, sub in MOUNTS:
            own = cache_dir() if sub is None else os.path.join(self.dir, sub)
            os.makedirs(own, exist_ok=True)
            binds.append('%s=%s' % (own, host))
        for sub in ('lib/qemu', 'log/qemu', 'etc/qemu'):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        with open(os.path.join(self.dir, 'etc', 'libvirtd.conf'), 'w') as fh:
            fh.write(LIBVIRTD_CONF % {'port': self.port})
        with open(os.path.join(self.dir, 'etc', 'qemu.conf'), 'w') as fh:
            fh.write(QEMU_CONF)
        return binds

    def start(self):
        """Start virtlogd and libvirtd; wait until libvirtd answers.

        :returns: self
        :raises CloudError: if it exits or does not answer in time.
        """
        binds = self._layout()
        if not os.path.isdir(RUN_DIR):
            # A mount point only; the package makes it when its own daemon
            # runs.  Marked as made by a cloud, removed by the last cloud
            # that stops (cleanup()).
            os.makedirs(RUN_DIR)
            with open(RUN_DIR_MARK, 'w'):
                pass
        script = _SCRIPT % {'binds': ' '.join(binds), 'dir': self.dir}
        self.service = self.procs.start(
            'libvirtd', ['unshare', '-m', '--propagation', 'private', 'sh',
                         '-c', script], stop=self._stop_domains)
        self.procs.wait(self.service, self._answers, 'libvirtd answering at '
                        + self.uri, START_TIMEOUT)
        return self

    def _answers(self):
        try:
            self.virsh('version', timeout=30)
        except (proc_mod.CloudError, subprocess.TimeoutExpired):
            return False
        return True

    def define_ceph_secret(self, uuid, key, user):
        """The libvirt secret Nova names for Cinder's RBD volumes.

        :param uuid: the secret's UUID (Cinder's ``rbd_secret_uuid``).
        :param key: the Ceph user's key (base64).
        :param user: the Ceph user name (``cinder``).
        :returns: None
        """
        path = os.path.join(self.dir, 'secret.xml')
        with open(path, 'w') as fh:
            fh.write("<secret ephemeral='no' private='no'><uuid>%s</uuid>"
                     "<usage type='ceph'><name>client.%s secret</name>"
                     "</usage></secret>" % (uuid, user))
        self.virsh('secret-define', path)
        self.virsh('secret-set-value', '--secret', uuid, '--base64', key)

    def domains(self):
        """Names of every domain this libvirtd knows (running or not)."""
        out = self.virsh('list', '--all', '--name')
        return [line.strip() for line in out.splitlines() if line.strip()]

    def _stop_domains(self):
        """Destroy and undefine every domain; end any QEMU left behind."""
        try:
            for name in self.domains():
                for args in (('destroy', name), ('undefine', name)):
                    try:
                        self.virsh(*args)
                    except proc_mod.CloudError:
                        pass
        except (proc_mod.CloudError, subprocess.TimeoutExpired, OSError):
            pass
        qemu_run = os.path.join(self.dir, 'run', 'qemu')
        for name in _listdir(qemu_run):
            if name.endswith('.pid'):
                _kill_pid_file(os.path.join(qemu_run, name))

    def stop(self):
        """Stop it (as :meth:`Processes.stop_all` would); idempotent."""
        if self.service is not None:
            self.service.stop()
            self.service = None
        self.cleanup()

    def cleanup(self):
        """Remove the mount point a cloud made, once no cloud uses it.

        Only a ``/run/libvirt`` that holds :data:`RUN_DIR_MARK` (a
        cloud made it) and on which no mount namespace has a mount
        (another cloud's libvirtd still runs) is removed.
        """
        if not os.path.exists(RUN_DIR_MARK) or mounted_anywhere(RUN_DIR):
            return
        try:
            os.unlink(RUN_DIR_MARK)
            os.rmdir(RUN_DIR)
        except OSError:
            pass


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _kill_pid_file(path):
    try:
        with open(path) as fh:
            pid = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
