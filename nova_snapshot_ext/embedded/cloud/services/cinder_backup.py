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

"""cinder-backup: copies off the primary storage (the real stack only).

Cinder's POSIX backup driver, a chunked driver (as NFS, Swift, S3 and
GCS are), writes the backups under the cloud's ``backups`` directory:
outside Ceph, so they outlive the pool the volumes live in; it standing
for an NFS export is the one stand-in.  Chunked drivers back up a volume
snapshot incrementally (only the chunks whose digest changed are
written), which is what the plugin's copies ask
(:mod:`nova_snapshot_ext.backup.copies`).

Why not Cinder's Ceph backup driver, whose RBD differential copies are
faster: in Cinder 29 a backup *from a snapshot* is always a full copy,
into an RBD image named after the volume alone
(``volume-<id>.backup.base``), so a volume's second snapshot backup fails
with "RBD image already exists" (measured here; doc/source/backups.rst).

Two traps of this machine kind (doc/source/cloud.rst):

* cinder-backup reads a snapshot through os-brick's RBD connector, which
  reads the Ceph user's keyring from ``/etc/ceph`` only.  The cloud writes
  nothing there: cinder-backup runs in its own mount namespace
  (``unshare -m``) with the cloud's Ceph directory (its ``ceph.conf`` and
  ``ceph.client.cinder.keyring``) bound over ``/etc/ceph``; the host's
  stays as it was.
* cinder-scheduler places a backup on a cinder-backup it has a capability
  report of, the first up to 60 s after it starts.  With
  ``backup_use_same_host`` the backup goes to the volume's host, found by
  the service's heartbeat: :meth:`CinderBackup.settle` waits for it.
"""

import os

from oslo_log import log as logging

from nova_snapshot_ext.embedded.cloud.services import base
from nova_snapshot_ext.embedded import process as proc_mod

LOG = logging.getLogger(__name__)

#: Where os-brick reads Ceph keyrings.
ETC_CEPH = '/etc/ceph'
#: Runs "$@" with $0 bound over /etc/ceph, in a private mount namespace.
_BIND = 'mount --bind "$0" %s && exec "$@"' % ETC_CEPH


class CinderBackup(base.CloudService):
    """cinder-backup: Cinder's backups off the volumes' pool."""

    name = 'cinder_backup'
    words = 'cinder-backup (the POSIX backup driver, outside Ceph)'
    stacks = ('real',)
    programs = {'unshare': 'util-linux'}

    @property
    def path(self):
        """Where the backups are written (the NFS export it stands for)."""
        return os.path.join(self.cloud.base_dir, 'backups')

    def options(self):
        """Its ``[DEFAULT]`` options in Cinder's one ``cinder.conf``.

        ``backup_use_same_host`` is read by cinder-api and
        cinder-scheduler too (see the module).
        """
        return {
            'backup_driver': 'cinder.backup.drivers.posix.PosixBackupDriver',
            'backup_posix_path': self.path,
            'backup_use_same_host': True,
        }

    def configure(self, template):
        os.makedirs(self.path, exist_ok=True)

    def start(self):
        if not os.path.isdir(ETC_CEPH):
            raise proc_mod.CloudError(
                '%s does not exist: cinder-backup binds the cloud\'s Ceph '
                'directory over it (Debian\'s ceph-common makes it)'
                % ETC_CEPH)
        cinder = self.cloud.service('cinder')
        cmd = ['unshare', '-m', '--propagation', 'private', 'sh', '-c',
               _BIND, self.cloud.real.ceph.dir, self.bin('cinder-backup'),
               '--config-file', cinder.conf]
        self.cloud.procs.start('cinder-backup', cmd, env=self.env(),
                               cwd=self.dir('cinder'))

    def settle(self):
        """Until Cinder sees cinder-backup up (its heartbeat)."""
        self.cloud.step('backup_up', self._wait_up)

    def _wait_up(self):
        waited = self.cloud.procs.wait(
            self.cloud.procs.named('cinder-backup'), self._up,
            'cinder-backup up (its first heartbeat)', base.START_TIMEOUT)
        LOG.info('cinder-backup was up after %.1f s', waited)

    def _up(self):
        return self.cloud.service('mariadb').count(
            "SELECT COUNT(*) FROM services WHERE `binary` = 'cinder-backup'"
            " AND deleted = 0 AND disabled = 0 AND updated_at > "
            "UTC_TIMESTAMP() - INTERVAL 60 SECOND", 'cinder')
