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

"""A private Ceph cluster for the cloud: one mon, one mgr, one OSD.

Debian's Ceph (16.2, pacific), started by hand as ``vstart.sh`` does, on
the cloud's :class:`~.process.Processes` like every other service: each
daemon runs in the foreground (``-f``) in its own process group with its
output in ``logs/ceph-<name>.log``, and is stopped by that group.  Its
directory, ports (two, below the ephemeral range) and keys are the
cloud's own; nothing under ``/etc/ceph`` or ``/var/lib/ceph`` is read or
written (every command gets ``-c <dir>/ceph.conf``).

The OSD keeps BlueStore on a sparse file (:data:`BLOCK_BYTES`; a few
hundred MB are really written).  cephx is on, as in production, and the
cloud's services use one restricted user, ``client.cinder`` (Cinder's
``rbd_user``, Glance's ``rbd_store_user``, the key of Nova's libvirt
secret), with the ``rbd`` profile on the pools :data:`POOLS`.

Measured here (doc/source/cloud.rst): to "1 osds up" about 8 s, the pools
about 4 s each more (placement-group peering), ~500 MB of memory (most
of it ceph-mgr's Python modules).
"""

import errno
import json
import os
import subprocess
import uuid

from nova_snapshot_ext.embedded import process as proc_mod

#: The pools made on every start: Cinder's volumes, Glance's images.
POOLS = ('volumes', 'images')
#: The cloud's one Ceph user and its capabilities (Ceph's ``rbd`` profile).
CLIENT = 'cinder'
BLOCK_BYTES = 10 * 1024 ** 3
START_TIMEOUT = 120.0
COMMAND_TIMEOUT = 120.0
#: The Debian packages Ceph needs: ``{program: package}``.
PROGRAMS = {
    'ceph-mon': 'ceph-mon',
    'ceph-mgr': 'ceph-mgr',
    'ceph-osd': 'ceph-osd',
    'ceph': 'ceph-common',
    'ceph-authtool': 'ceph-common',
    'monmaptool': 'ceph-common',
    'rbd': 'ceph-common',
    '/usr/lib/python3/dist-packages/rados.cpython-311-x86_64-linux-gnu.so':
        'python3-rados',
    '/usr/lib/python3/dist-packages/rbd.cpython-311-x86_64-linux-gnu.so':
        'python3-rbd',
}


def ceph_conf(directory, fsid, mon_v2_port, mon_v1_port):
    """The cluster's ``ceph.conf`` (text).

    :param directory: the cluster's directory (data, keys, sockets).
    :param fsid: the cluster id (a UUID string).
    :param mon_v2_port: the monitor's msgr2 port; ``mon_v1_port`` its
        legacy one.  Both on 127.0.0.1.
    """
    d = directory
    return '\n'.join([
        '[global]',
        'fsid = %s' % fsid,
        'mon_host = [v2:127.0.0.1:%d,v1:127.0.0.1:%d]' % (
            mon_v2_port, mon_v1_port),
        'public_addr = 127.0.0.1',
        'ms_bind_ipv6 = false',
        'auth_cluster_required = cephx',
        'auth_service_required = cephx',
        'auth_client_required = cephx',
        'auth_allow_insecure_global_id_reclaim = false',
        'run_dir = %s/run' % d,
        'admin_socket = %s/run/$name.asok' % d,
        'log_file = %s/log/$name.log' % d,
        'pid_file = %s/run/$name.pid' % d,
        'osd_pool_default_size = 1',
        'osd_pool_default_min_size = 1',
        'osd_pool_default_pg_num = 8',
        'osd_pool_default_pgp_num = 8',
        'osd_pool_default_pg_autoscale_mode = off',
        'osd_crush_chooseleaf_type = 0',
        'mon_allow_pool_size_one = true',
        'mon_allow_pool_delete = true',
        'mon_warn_on_pool_no_redundancy = false',
        'mon_data_avail_warn = 1',
        'mon_data_avail_crit = 0',
        'mon_max_pg_per_osd = 1000',
        'rbd_default_features = 61',
        '[mon]',
        'mon_data = %s/mon.$id' % d,
        'keyring = $mon_data/keyring',
        '[mgr]',
        'mgr_data = %s/mgr.$id' % d,
        'keyring = $mgr_data/keyring',
        '[osd]',
        'osd_data = %s/osd.$id' % d,
        'keyring = $osd_data/keyring',
        'osd_objectstore = bluestore',
        'bluestore_block_create = true',
        'bluestore_block_size = %d' % BLOCK_BYTES,
        'bluestore_cache_autotune = false',
        'bluestore_cache_size = 134217728',
        'bluestore_fsck_on_mount = false',
        'osd_memory_target = 939524096',
        'osd_op_num_shards = 1',
        'osd_op_num_threads_per_shard = 2',
        '[client]',
        'keyring = %s/ceph.$name.keyring' % d,
        '',
    ])


class Ceph(object):
    """One cluster in ``<base_dir>/ceph``.

    :param procs: the cloud's :class:`~.process.Processes`.
    :param base_dir: the cloud's directory.
    :param ports: ``(msgr2 port, legacy port)`` of the monitor.

    :ivar fsid: the cluster id (also the UUID of Nova's libvirt secret).
    :ivar conf: the path of ``ceph.conf``.
    """

    def __init__(self, procs, base_dir, ports):
        self.procs = procs
        self.dir = os.path.join(base_dir, 'ceph')
        self.ports = tuple(ports)
        self.fsid = str(uuid.uuid4())
        self.conf = os.path.join(self.dir, 'ceph.conf')
        self.user = CLIENT

    @classmethod
    def of_conf(cls, conf):
        """The cluster of a running cloud, to read.

        (A cloud's ``describe()['ceph_conf']``.)

        :param conf: the path of its ``ceph.conf`` (admin keyring beside).
        """
        cluster = cls(None, os.path.dirname(os.path.dirname(conf)), (0, 0))
        cluster.conf = conf
        cluster.dir = os.path.dirname(conf)
        return cluster

    def keyring(self, name='client.' + CLIENT):
        """The keyring file of an entity (``client.cinder``...)."""
        return os.path.join(self.dir, 'ceph.%s.keyring' % name)

    def ceph(self, *args, stdin=None):
        """Run a ``ceph`` command as ``client.admin``.

        :returns: its standard output (text).
        :raises CloudError: if it fails (with its output).
        """
        return self._call(['ceph', '-c', self.conf] + list(args),
                          stdin=stdin)

    def _call(self, cmd, stdin=None, missing_ok=False):
        """A Ceph command's output.

        :param missing_ok: return None when the command exits with
            ``ENOENT`` (Ceph's tools exit with the errno), i.e. what it
            names does not exist.
        :raises CloudError: on any other non-zero exit.
        """
        result = subprocess.run(cmd, input=stdin, capture_output=True,
                                text=True, timeout=COMMAND_TIMEOUT,
                                cwd=self.dir)
        if missing_ok and result.returncode == errno.ENOENT:
            return None
        if result.returncode != 0:
            raise proc_mod.CloudError('%s exited with %d: %s' % (
                ' '.join(cmd[:4]), result.returncode,
                (result.stderr or result.stdout)[-1500:]))
        return result.stdout

    def start(self):
        """Make the cluster, start its daemons, its pools and its user.

        :returns: self
        :raises CloudError: if a step fails or the OSD is not up in time.
        """
        for sub in ('run', 'log', 'mgr.x'):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        with open(self.conf, 'w') as fh:
            fh.write(ceph_conf(self.dir, self.fsid, *self.ports))
        self._keys_and_monmap()
        mon = self._daemon('mon', 'a')
        self.procs.wait(mon, self._mon_answers, 'the Ceph monitor',
                        START_TIMEOUT)
        self.ceph('auth', 'get-or-create', 'mgr.x', 'mon', 'allow profile mgr',
                  'osd', 'allow *', 'mds', 'allow *', '-o',
                  os.path.join(self.dir, 'mgr.x', 'keyring'))
        self._daemon('mgr', 'x')
        osd = self._make_osd()
        self.procs.wait(osd, self._osd_up, 'the Ceph OSD up', START_TIMEOUT)
        for pool in POOLS:
            self.ceph('osd', 'pool', 'create', pool, '8', '8')
            self._call(['rbd', '-c', self.conf, 'pool', 'init', pool])
        caps = ', '.join('profile rbd pool=%s' % p for p in POOLS)
        self.ceph('auth', 'get-or-create', 'client.' + CLIENT,
                  'mon', 'profile rbd', 'osd', caps, 'mgr', 'profile rbd',
                  '-o', self.keyring())
        return self

    def _keys_and_monmap(self):
        mon_keyring = os.path.join(self.dir, 'mon.keyring')
        admin = self.keyring('client.admin')
        tool = 'ceph-authtool'
        self._call([tool, '--create-keyring', mon_keyring, '--gen-key',
                    '-n', 'mon.', '--cap', 'mon', 'allow *'])
        self._call([tool, '--create-keyring', admin, '--gen-key', '-n',
                    'client.admin', '--cap', 'mon', 'allow *', '--cap',
                    'osd', 'allow *', '--cap', 'mgr', 'allow *', '--cap',
                    'mds', 'allow *'])
        self._call([tool, mon_keyring, '--import-keyring', admin])
        monmap = os.path.join(self.dir, 'monmap')
        self._call(['monmaptool', '--create', '--clobber', '--fsid',
                    self.fsid, '--addv', 'a',
                    '[v2:127.0.0.1:%d,v1:127.0.0.1:%d]' % self.ports,
                    monmap])
        self.procs.run('ceph-mon-mkfs', [
            'ceph-mon', '-c', self.conf, '--mkfs', '-i', 'a', '--monmap',
            monmap, '--keyring', mon_keyring], timeout=COMMAND_TIMEOUT)

    def _daemon(self, kind, ident):
        return self.procs.start('ceph-%s' % kind, [
            'ceph-' + kind, '-f', '-c', self.conf, '-i', ident],
            cwd=self.dir)

    def _make_osd(self):
        key = self._call(['ceph-authtool', '--gen-print-key']).strip()
        osd_uuid = str(uuid.uuid4())
        ident = self.ceph('osd', 'new', osd_uuid, '-i', '-',
                          stdin=json.dumps({'cephx_secret': key})).strip()
        data = os.path.join(self.dir, 'osd.%s' % ident)
        os.makedirs(data, exist_ok=True)
        self._call(['ceph-authtool', '--create-keyring',
                    os.path.join(data, 'keyring'), '--name',
                    'osd.%s' % ident, '--add-key', key])
        self.procs.run('ceph-osd-mkfs', [
            'ceph-osd', '-c', self.conf, '-i', ident, '--mkfs',
            '--osd-uuid', osd_uuid], timeout=COMMAND_TIMEOUT)
        return self._daemon('osd', ident)

    def _mon_answers(self):
        try:
            self.ceph('mon', 'stat', '--connect-timeout', '5')
        except (proc_mod.CloudError, subprocess.TimeoutExpired):
            return False
        return True

    def _osd_up(self):
        try:
            stat = json.loads(self.ceph('osd', 'stat', '-f', 'json'))
        except (proc_mod.CloudError, ValueError,
                subprocess.TimeoutExpired):
            return False
        return stat.get('num_up_osds', 0) >= 1

    def client_key(self):
        """``client.cinder``'s secret (base64), for libvirt's secret."""
        return self.ceph('auth', 'get-key', 'client.' + CLIENT).strip()

    def rbd_images(self, pool):
        """``{image name: [snapshot names]}`` of a pool, read from Ceph.

        The names come from the pool's directory (``rbd ls``, which opens
        no image), then each image's snapshots from the image itself.
        Cinder removes images at any moment (volumes, and cinder-backup's
        temporary clones); one removed between the two reads no longer
        exists and is left out.  ``rbd ls -l`` would open every image and
        fail the whole listing on such a one.

        :param pool: e.g. ``'volumes'``.
        :raises CloudError: if ``rbd`` fails for another reason.
        """
        names = json.loads(self._call(['rbd', '-c', self.conf, 'ls',
                                       '--format', 'json', pool]) or '[]')
        found = {}
        for name in names:
            snaps = self.rbd_snapshots(pool, name)
            if snaps is not None:
                found[name] = snaps
        return found

    def rbd_snapshots(self, pool, image):
        """An RBD image's snapshot names, or None if the image is gone.

        :param pool: the pool; ``image`` the RBD image name.
        :raises CloudError: if ``rbd`` fails for another reason than a
            missing image.
        """
        out = self._call(['rbd', '-c', self.conf, 'snap', 'ls', '--format',
                          'json', '%s/%s' % (pool, image)], missing_ok=True)
        if out is None:
            return None
        return [snap['name'] for snap in json.loads(out or '[]')]

    def parent(self, pool, image):
        """The ``pool/image@snapshot`` an RBD image is a clone of, or None."""
        info = json.loads(self._call(['rbd', '-c', self.conf, 'info',
                                      '--format', 'json',
                                      '%s/%s' % (pool, image)]))
        parent = info.get('parent')
        if not parent:
            return None
        return '%s/%s@%s' % (parent['pool'], parent['image'],
                             parent['snapshot'])

    def read_sector(self, pool, image, sector, snapshot=None):
        """512 bytes of an RBD image (or of one of its snapshots).

        :param pool: the pool; ``image`` the RBD image name; ``sector``
            the sector number; ``snapshot`` a snapshot name or None.
        :returns: bytes.
        """
        spec = '%s/%s' % (pool, image) + ('@' + snapshot if snapshot else '')
        result = subprocess.run(
            ['rbd', '-c', self.conf, 'export', spec, '-'],
            capture_output=True, timeout=COMMAND_TIMEOUT)
        if result.returncode != 0:
            raise proc_mod.CloudError('rbd export %s: %s' % (
                spec, result.stderr.decode('utf-8', 'replace')[-500:]))
        return result.stdout[sector * 512:(sector + 1) * 512]
