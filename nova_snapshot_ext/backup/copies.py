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

"""Copies off the primary storage: one Cinder backup per volume snapshot.

With ``[snapshot_ext] backup_copies = true``, once a backup image is
active (nova-api's ``createBackup``, the CLI's ``backup``), the plugin asks
Cinder for one backup of each volume snapshot the image's
``block_device_mapping`` names (``POST /backups`` with ``snapshot_id``:
the copy is of the quiesced point in time the image records),
**incremental** when the volume already has an ``available`` backup
(Cinder chooses the parent: the newest whose data is older than the
snapshot).  Cinder answers at once and cinder-backup copies in its own
time: the caller never waits for the data.

**The record is Cinder's backup metadata** (written with the create, so a
copy never exists unrecorded), not the image: a copy must outlive the
image (rotated, deleted) and the volume snapshots (the pool lost), and a
restore from the copies alone reads everything it needs from them:

``snapshot_ext_image``
    the backup image's id: the copies of one ``createBackup`` form one
    set;
``snapshot_ext_server``, ``snapshot_ext_backup_type``
    whose backup it is (retention counts per server and type);
``snapshot_ext_device``, ``snapshot_ext_boot_index``
    the disk's place in the server (the mapping's ``device_name`` and
    ``boot_index``, ``-1`` for none);
``snapshot_ext_set_size``
    how many volumes the set has (a restore refuses an incomplete set);
``snapshot_ext_copy``
    ``uuid5(COPY_NAMESPACE, ...)`` of the fields above, the snapshot id
    and the owner project (:func:`record_of`): what binds them together,
    as :mod:`.leaks` binds a snapshot's record (an integrity check, not a
    secret); only a copy whose record matches is ever deleted or restored
    by the plugin.

A copy that cannot be requested is named in the result (and nova-api's
log), never silently missing; one whose copy fails later is ``error`` in
Cinder, with its reason (``fail_reason``), and named by ``restore
--list``.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
import typing as ty
import uuid

from oslo_log import log as logging
from oslo_utils import timeutils

from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import tags

LOG = logging.getLogger(__name__)

IMAGE_KEY = 'snapshot_ext_image'
SERVER_KEY = 'snapshot_ext_server'
BACKUP_TYPE_KEY = 'snapshot_ext_backup_type'
DEVICE_KEY = 'snapshot_ext_device'
BOOT_INDEX_KEY = 'snapshot_ext_boot_index'
SET_SIZE_KEY = 'snapshot_ext_set_size'
RECORD_KEY = 'snapshot_ext_copy'

#: uuid5 namespace of a copy's record (fixed forever).
COPY_NAMESPACE = uuid.UUID('5d0f2a8e-93c4-5b7a-a1e6-c24f7b9d0e31')

#: Cinder's answers when an incremental backup has no usable parent.
_NO_PARENT = ('No backups available to do an incremental backup',
              'The parent backup must be available for incremental backup')
#: Seconds between two reads of a snapshot still ``creating``.
POLL_S = 1.0
#: Cinder backup states in which a copy holds, or will hold, no data: a
#: disk whose copies are all in these has none.
NOT_A_COPY = ('error', 'deleting', 'error_deleting')
#: Backup states of a chain's link that is still there (a full copy
#: being restored still holds its data).
PRESENT = ('available', 'restoring')


class Copier(ty.Protocol):
    """What making copies needs of Cinder (both clients have it)."""

    def get_snapshot(self, snapshot_id: str) -> dict[str, ty.Any] | None:
        ...

    def list_backups(self, volume_id: str | None = None
                     ) -> ty.Iterable[dict[str, ty.Any]]:
        ...

    def create_backup(self, volume_id: str, snapshot_id: str,
                      incremental: bool, name: str, description: str,
                      metadata: ty.Mapping[str, str]) -> dict[str, ty.Any]:
        ...


@dataclasses.dataclass(frozen=True)
class Disk:
    """One disk of a backup image: a volume snapshot in its place.

    :ivar snapshot_id: the Cinder volume snapshot.
    :ivar device_name: the mapping's ``device_name`` (``/dev/vda``), or
        ``''``.
    :ivar boot_index: the mapping's ``boot_index``; ``-1`` for none.
    """

    snapshot_id: str
    device_name: str
    boot_index: int


def _boot_index(value: ty.Any) -> int:
    try:
        index = int(value)
    except (TypeError, ValueError):
        return -1
    return index if index >= 0 else -1


def disks_of(image: ty.Mapping[str, ty.Any]) -> list[Disk]:
    """The disks an image's ``block_device_mapping`` names, boot disk first.

    Only entries naming a volume snapshot (``source_type`` ``snapshot``,
    or absent as in Nova's legacy mappings), one per snapshot.

    :param image: a Glance image document.
    :returns: a list of :class:`Disk`, sorted by boot index (none last),
        then device name; empty for an image without snapshots.
    """
    raw = image.get('block_device_mapping')
    try:
        mappings = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    disks = {}
    for entry in mappings if isinstance(mappings, list) else ():
        if not isinstance(entry, dict) or not entry.get('snapshot_id') or \
                entry.get('source_type', 'snapshot') != 'snapshot':
            continue
        snapshot_id = str(entry['snapshot_id'])
        disks[tags.snapshot_key(snapshot_id)] = Disk(
            snapshot_id, str(entry.get('device_name') or ''),
            _boot_index(entry.get('boot_index')))
    return sorted(disks.values(), key=lambda d: (
        d.boot_index < 0, d.boot_index, d.device_name, d.snapshot_id))


def record_of(disk: Disk, image_id: str, server: str, backup_type: str,
              set_size: int, project: str) -> dict[str, str]:
    """The Cinder backup metadata of one copy (see the module).

    :param disk: the disk copied.
    :param image_id: the backup image.
    :param server: the server's ``instance_uuid``.
    :param backup_type: the image's ``backup_type``.
    :param set_size: the number of disks of the image.
    :param project: the image's owner project.
    """
    meta = {IMAGE_KEY: image_id, SERVER_KEY: server,
            BACKUP_TYPE_KEY: backup_type, DEVICE_KEY: disk.device_name,
            BOOT_INDEX_KEY: str(disk.boot_index),
            SET_SIZE_KEY: str(set_size)}
    meta[RECORD_KEY] = _proof(meta, tags.snapshot_key(disk.snapshot_id),
                              project)
    return meta


def _proof(meta: ty.Mapping[str, str], snapshot_key: str,
           project: str) -> str:
    fields = [str(meta.get(key, '')) for key in (
        IMAGE_KEY, SERVER_KEY, BACKUP_TYPE_KEY, DEVICE_KEY, BOOT_INDEX_KEY,
        SET_SIZE_KEY)]
    return str(uuid.uuid5(COPY_NAMESPACE,
                          '|'.join([snapshot_key, project] + fields)))


def record_refusal(backup: ty.Mapping[str, ty.Any], project: str
                   ) -> str | None:
    """Why a Cinder backup is not a copy the plugin recorded, or ``None``.

    :param backup: a Cinder backup document (microversion 3.43: with
        ``metadata``; ``snapshot_id``).
    :param project: the project it must belong to (the caller's).
    """
    meta = backup.get('metadata')
    meta = meta if isinstance(meta, dict) else {}
    if not meta.get(IMAGE_KEY) or not meta.get(RECORD_KEY):
        return 'no %s record: not a copy the plugin made' % RECORD_KEY
    if not backup.get('snapshot_id'):
        return 'Cinder names no volume snapshot it was copied from'
    wanted = _proof(meta, tags.snapshot_key(str(backup['snapshot_id'])),
                    project)
    if meta.get(RECORD_KEY) != wanted:
        return ('%s does not match the copy\'s snapshot, project %s and '
                'fields (edited, or copied from another backup)'
                % (RECORD_KEY, project))
    return None


@dataclasses.dataclass
class CopyResult:
    """What :func:`make_copies` asked of Cinder, disk by disk.

    :ivar image_id: the backup image.
    :ivar started: one dict per copy Cinder took (``device_name``,
        ``snapshot_id``, ``volume_id``, ``backup_id``, ``incremental``);
        cinder-backup copies them in its own time.
    :ivar failed: one dict per copy not taken (``device_name``,
        ``snapshot_id``, ``reason``).
    :ivar errors: the :class:`~nova_snapshot_ext.exception.CinderError`
        of each failed copy (not in :meth:`to_dict`): a caller's exit
        status tells Cinder unreachable from Cinder refusing.
    """

    image_id: str
    started: list[dict[str, ty.Any]] = dataclasses.field(
        default_factory=list)
    failed: list[dict[str, ty.Any]] = dataclasses.field(
        default_factory=list)
    errors: list[exception.CinderError] = dataclasses.field(
        default_factory=list)

    def to_dict(self) -> dict[str, ty.Any]:
        return {'image_id': self.image_id, 'started': list(self.started),
                'failed': list(self.failed)}

    def describe(self) -> str:
        lines = ['copies of backup %s: %d requested, %d failed' % (
            self.image_id, len(self.started), len(self.failed))]
        for copy in self.started:
            lines.append('  %s: %s backup %s of volume snapshot %s' % (
                copy['device_name'] or '(no device)',
                'incremental' if copy['incremental'] else 'full',
                copy['backup_id'], copy['snapshot_id']))
        for copy in self.failed:
            lines.append('  %s: NOT copied (volume snapshot %s): %s' % (
                copy['device_name'] or '(no device)', copy['snapshot_id'],
                copy['reason']))
        return '\n'.join(lines)


@dataclasses.dataclass
class Wait:
    """How long a copy waits for its snapshot to be ``available``.

    Cinder backs up only an ``available`` snapshot, and Nova answers a
    snapshot before Cinder has made it (a quiesced server is thawed once
    the snapshots are made, after the answer).

    :ivar seconds: at most this long per image (``[snapshot_ext]
        backup_copies_wait``).
    """

    seconds: float = 300.0
    clock: ty.Callable[[], float] = time.monotonic
    sleep: ty.Callable[[float], None] = time.sleep


def data_time(backup: ty.Mapping[str, ty.Any]) -> str:
    """The point in time a backup's data is of (ISO 8601 text).

    Cinder's ``data_timestamp`` (a snapshot's ``created_at`` for a backup
    of a snapshot), else its ``created_at``.
    """
    return str(backup.get('data_timestamp') or backup.get('created_at')
               or '')


def parse_time(text: ty.Any) -> datetime.datetime | None:
    """An ISO 8601 time (Cinder's, Glance's) as naive UTC, or ``None``.

    ``None`` for text that is no readable time (or one out of range).
    """
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(str(text)))
    except (ValueError, OverflowError):
        return None


def parent_of(backups: ty.Iterable[ty.Mapping[str, ty.Any]],
              taken: str) -> ty.Mapping[str, ty.Any] | None:
    """The backup Cinder would make an incremental copy on, or ``None``.

    As Cinder's backup API chooses it: the volume's newest backup whose
    data is older than the snapshot (``taken``), whatever its status; it
    refuses the incremental when that one is not ``available``.

    :param taken: the snapshot's ``created_at`` (``''``: unknown, every
        backup is older).
    """
    older = [b for b in backups if b.get('status') != 'deleted' and (
        not taken or data_time(b) < taken)]
    return max(older, key=data_time, default=None)


def chain_length(backups: ty.Iterable[ty.Mapping[str, ty.Any]]) -> int:
    """Incremental backups since the newest full one, of one volume.

    Counted on the ``available`` backups, newest first, until a full one
    (Cinder's next incremental is made on the newest available backup).
    """
    ready = sorted((b for b in backups if b.get('status') == 'available'),
                   key=data_time, reverse=True)
    count = 0
    for backup in ready:
        if not backup.get('is_incremental'):
            break
        count += 1
    return count


def base_of(backups: ty.Iterable[ty.Mapping[str, ty.Any]],
            backup: ty.Mapping[str, ty.Any]
            ) -> ty.Mapping[str, ty.Any] | None:
    """The full backup a backup's chain stands on, or ``None``.

    Cinder makes an incremental on the newest ``available`` backup of its
    volume with older data, so walking the volume's backups that are
    still there (:data:`PRESENT`: available, or being restored) back in
    time from it, the first full one is its chain's base.  A full backup
    is its own base.

    :param backups: backups of its volume (others are passed over).
    :returns: the base; ``None`` when no full backup of older data is
        left (deleted, or failed after): Cinder can restore neither it
        nor an incremental made on it.
    """
    if not backup.get('is_incremental'):
        return backup
    when = data_time(backup)
    older = sorted((b for b in backups
                    if b.get('volume_id') == backup.get('volume_id') and
                    b.get('status') in PRESENT and data_time(b) < when),
                   key=data_time, reverse=True)
    return next((b for b in older if not b.get('is_incremental')), None)


def make_copies(cinder: Copier, image: ty.Mapping[str, ty.Any],
                project: str, wait: Wait | None = None,
                chain: int | None = None) -> CopyResult:
    """Ask Cinder for one backup of each volume snapshot of ``image``.

    :param cinder: a :class:`Copier` acting for the image's owner.
    :param image: the active backup image (its ``block_device_mapping``,
        ``instance_uuid``, ``backup_type``).
    :param project: the image's owner project.
    :param wait: how long a snapshot still ``creating`` is waited for
        (default: :class:`Wait`'s).
    :param chain: incremental copies in a row before a full one
        (``[snapshot_ext] backup_copies_chain``; 0: every copy full;
        ``None``: no bound).
    :returns: a :class:`CopyResult`; a disk whose copy could not be
        requested is in ``failed`` with Cinder's reason.  Never raises a
        :class:`~nova_snapshot_ext.exception.CinderError`.
    """
    wait = wait or Wait()
    deadline = wait.clock() + wait.seconds
    image_id = str(image.get('id'))
    disks = disks_of(image)
    result = CopyResult(image_id)
    server = image.get('instance_uuid')
    for disk in disks:
        try:
            if not server or not project:
                raise exception.CinderError(
                    operation='backup', snapshot_id=disk.snapshot_id,
                    reason='the image names no instance_uuid or owner: a '
                    'copy must say whose backup it is')
            meta = record_of(disk, image_id, str(server),
                             str(image.get('backup_type') or ''),
                             len(disks), project)
            result.started.append(_copy(cinder, disk, image, meta,
                                        project, chain, (wait, deadline)))
        except exception.CinderError as err:
            result.failed.append({'device_name': disk.device_name,
                                  'snapshot_id': disk.snapshot_id,
                                  'reason': err.format_message()})
            result.errors.append(err)
    return result


def _made_before(backups: ty.Iterable[ty.Mapping[str, ty.Any]],
                 disk: Disk, image_id: str, project: str
                 ) -> ty.Mapping[str, ty.Any] | None:
    """A copy of this disk of this image already requested (a retry)."""
    key = tags.snapshot_key(disk.snapshot_id)
    for backup in backups:
        meta = backup.get('metadata')
        if (isinstance(meta, dict) and meta.get(IMAGE_KEY) == image_id and
                tags.snapshot_key(str(backup.get('snapshot_id') or '')) ==
                key and backup.get('status') not in NOT_A_COPY
                and record_refusal(backup, project) is None):
            return backup
    return None


def _available(cinder: Copier, disk: Disk, wait: Wait,
               deadline: float) -> dict[str, ty.Any]:
    """The disk's snapshot once Cinder shows it ``available``.

    :raises CinderError: it is gone, has no volume, is in another state
        than ``creating``, or is still ``creating`` at ``deadline``
        (naming ``[snapshot_ext] backup_copies_wait``).
    """
    while True:
        snap = cinder.get_snapshot(disk.snapshot_id)
        if not snap or not snap.get('volume_id'):
            raise exception.CinderError(
                operation='backup', snapshot_id=disk.snapshot_id,
                reason='Cinder does not show the snapshot or its volume')
        status = snap.get('status')
        if status == 'available':
            return snap
        if status != 'creating':
            raise exception.CinderError(
                operation='backup', snapshot_id=disk.snapshot_id,
                reason='the snapshot is %s, not available' % status)
        if wait.clock() >= deadline:
            raise exception.CinderError(
                operation='backup', snapshot_id=disk.snapshot_id,
                reason='the snapshot was still creating after %.0f s '
                '([snapshot_ext] backup_copies_wait)' % wait.seconds)
        wait.sleep(POLL_S)


def _incremental(backups: list[dict[str, ty.Any]],
                 snap: ty.Mapping[str, ty.Any], chain: int | None) -> bool:
    """Whether a snapshot's copy is asked for incremental.

    When Cinder's parent (:func:`parent_of`) is ``available`` (Cinder
    refuses an incremental on another), its chain still has its full base
    (:func:`base_of`; else a WARNING names it) and the chain is shorter
    than ``chain``.

    :param backups: the snapshot's volume's backups.
    """
    parent = parent_of(backups, str(snap.get('created_at') or ''))
    if parent is None or parent.get('status') != 'available':
        return False
    if base_of(backups, parent) is None:
        LOG.warning('nova-snapshot-ext: backup %s of volume %s is an '
                    'incremental whose chain has no full backup left: the '
                    'copy of volume snapshot %s is made full',
                    parent.get('id'), snap.get('volume_id'), snap.get('id'))
        return False
    return chain is None or chain_length(backups) < chain


def _copy(cinder: Copier, disk: Disk, image: ty.Mapping[str, ty.Any],
          meta: dict[str, str], project: str, chain: int | None,
          waiting: tuple[Wait, float]) -> dict[str, ty.Any]:
    """One copy: full, or incremental on the volume's newest backup.

    A copy this image's disk already has (the same ``createBackup``
    retried; its snapshot may be ``backing-up`` for it) is reported, not
    made twice.  Otherwise, once the snapshot is ``available``: an
    incremental when the volume has an ``available`` backup of older
    data than the snapshot (Cinder's parent), its chain still has its
    full base (:func:`base_of`) and is shorter than ``chain``; a full
    copy else.

    :param waiting: ``(wait, deadline)`` for the snapshot.
    """
    shown = cinder.get_snapshot(disk.snapshot_id)
    if not shown or not shown.get('volume_id'):
        raise exception.CinderError(
            operation='backup', snapshot_id=disk.snapshot_id,
            reason='Cinder does not show the snapshot or its volume')
    volume_id = str(shown['volume_id'])
    before = _made_before(cinder.list_backups(volume_id=volume_id), disk,
                          str(image.get('id')), project)
    if before is not None:
        return {'device_name': disk.device_name,
                'snapshot_id': disk.snapshot_id, 'volume_id': volume_id,
                'backup_id': str(before.get('id')),
                'incremental': bool(before.get('is_incremental'))}
    snap = _available(cinder, disk, *waiting)
    incremental = _incremental(list(cinder.list_backups(volume_id=volume_id)),
                               snap, chain)
    name = 'copy of %s %s' % (image.get('name') or image.get('id'),
                              disk.device_name or disk.snapshot_id)
    description = ('nova-snapshot-ext: copy of volume snapshot %s of '
                   'backup image %s' % (disk.snapshot_id, image.get('id')))
    try:
        backup = cinder.create_backup(volume_id, disk.snapshot_id,
                                      incremental, name[:255], description,
                                      meta)
    except exception.CinderError as err:
        # The parent listed a moment ago may be gone or busy (rotated,
        # failed): Cinder then refuses the incremental, and a full copy
        # is the answer.
        if not incremental or not any(
                refusal in str(err.reason) for refusal in _NO_PARENT):
            raise
        incremental = False
        backup = cinder.create_backup(volume_id, disk.snapshot_id, False,
                                      name[:255], description, meta)
    LOG.info('nova-snapshot-ext: %s backup %s of volume snapshot %s '
             '(%s of backup image %s) requested',
             'incremental' if incremental else 'full', backup.get('id'),
             disk.snapshot_id, disk.device_name, image.get('id'))
    return {'device_name': disk.device_name,
            'snapshot_id': disk.snapshot_id, 'volume_id': volume_id,
            'backup_id': str(backup.get('id')), 'incremental': incremental}
