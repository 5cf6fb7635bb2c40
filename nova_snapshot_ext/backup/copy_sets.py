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

"""Copy sets: the copies of one backup image, read from Cinder alone.

What :mod:`nova_snapshot_ext.restore` restores and
:mod:`.copy_retention` keeps or deletes.

A restore needs nothing but Cinder's backups: each copy's metadata
(:mod:`nova_snapshot_ext.backup.copies`) names its backup image (the set),
the server, the backup type, the disk's device name and boot index, and
the set's size.  Only copies whose record proves them the plugin's, of
the caller's project, are read (:func:`~..backup.copies.record_refusal`).
"""

from __future__ import annotations

import dataclasses
import typing as ty

from nova_snapshot_ext.backup import copies as copies_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import tags


@dataclasses.dataclass(frozen=True)
class Member:
    """One copy of a set: a Cinder backup of one disk.

    :ivar backup_id: the Cinder backup.
    :ivar device_name: the source disk's device name (``/dev/vdb``).
    :ivar boot_index: its boot index; ``-1`` for none.
    :ivar size: the backup's size in GiB (the restored volume's).
    :ivar status: Cinder's status (``available``, ``creating``,
        ``error``...).
    :ivar reason: Cinder's ``fail_reason``, or ``''``.
    :ivar incremental: whether Cinder holds it as an incremental.
    :ivar created_at: Cinder's ``created_at`` (ISO 8601).
    :ivar data_timestamp: the point in time of its data (Cinder's
        ``data_timestamp``: the snapshot's time), or ``''``.
    """

    backup_id: str
    device_name: str
    boot_index: int
    size: int
    status: str
    reason: str
    incremental: bool
    created_at: str
    data_timestamp: str = ''

    def to_dict(self) -> dict[str, ty.Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class CopySet:
    """The copies of one backup image.

    :ivar image_id: the backup image (it may be gone).
    :ivar server: the source server's ``instance_uuid``.
    :ivar backup_type: the backup type.
    :ivar set_size: how many disks the image had.
    :ivar members: one :class:`Member` per disk (the newest copy of each
        device), boot disk first.
    """

    image_id: str
    server: str
    backup_type: str
    set_size: int
    members: list[Member]

    @property
    def created_at(self) -> str:
        """When its newest copy was requested (ISO 8601)."""
        return max((m.created_at for m in self.members), default='')

    @property
    def taken_at(self) -> str:
        """The point in time its data is of (ISO 8601): what orders sets.

        A copy requested again later (a retry) does not make its set
        newer: the snapshots' time does not change.
        """
        return max((m.data_timestamp or m.created_at
                    for m in self.members), default='')

    def refusal(self) -> str | None:
        """Why this set cannot be restored, or ``None``.

        Every disk of the image must have an ``available`` copy.
        """
        if self.set_size < 1:
            return ('its records give no readable %s: it cannot be told '
                    'complete' % copies_mod.SET_SIZE_KEY)
        if len(self.members) < self.set_size:
            return ('%d of its %d disks have a copy (the others were never '
                    'requested, or deleted)' % (len(self.members),
                                                self.set_size))
        if len(self.members) > self.set_size:
            return ('%d disks have a copy, its record says %d: the records '
                    'disagree' % (len(self.members), self.set_size))
        devices = [m.device_name for m in self.members if m.device_name]
        boots = [m for m in self.members if m.boot_index == 0]
        if len(devices) != len(set(devices)) or len(boots) > 1:
            return ('two copies claim the same device or boot index 0: the '
                    'records disagree')
        waiting = ['%s (%s %s%s)' % (m.device_name or '(no device)',
                                     m.backup_id, m.status,
                                     ': ' + m.reason if m.reason else '')
                   for m in self.members if m.status != 'available']
        if waiting:
            return 'copies not available: %s' % ', '.join(waiting)
        return None

    def to_dict(self) -> dict[str, ty.Any]:
        return {'image_id': self.image_id, 'server': self.server,
                'backup_type': self.backup_type, 'set_size': self.set_size,
                'created_at': self.created_at, 'taken_at': self.taken_at,
                'refusal': self.refusal(),
                'members': [m.to_dict() for m in self.members]}


def _member(backup: ty.Mapping[str, ty.Any]) -> Member:
    meta = backup['metadata']
    try:
        boot_index = int(meta.get(copies_mod.BOOT_INDEX_KEY))
    except (TypeError, ValueError):
        boot_index = -1
    size = backup.get('size')
    return Member(
        backup_id=str(backup.get('id')),
        device_name=str(meta.get(copies_mod.DEVICE_KEY) or ''),
        boot_index=boot_index,
        size=size if isinstance(size, int) and size > 0 else 0,
        status=str(backup.get('status')),
        reason=' '.join(str(backup.get('fail_reason') or '').split())[:300],
        incremental=bool(backup.get('is_incremental')),
        created_at=str(backup.get('created_at') or ''),
        data_timestamp=str(backup.get('data_timestamp') or ''))


def find_sets(backups: ty.Iterable[ty.Mapping[str, ty.Any]],
              project: str) -> list[CopySet]:
    """Group the plugin's copies among ``backups`` by backup image.

    :param backups: Cinder backup documents with ``metadata``
        (:meth:`~nova_snapshot_ext.cinder.CinderClient.list_backups`).
    :param project: the caller's project: a copy recorded for another is
        not read.
    :returns: the sets, newest first; of two copies of one disk (one
        volume snapshot) in a set, the newest available one.
    """
    grouped: dict[str, dict[str, Member]] = {}
    heads: dict[str, dict[str, ty.Any]] = {}
    for backup in backups:
        if copies_mod.record_refusal(backup, project) is not None:
            continue
        meta = backup['metadata']
        image_id = str(meta[copies_mod.IMAGE_KEY])
        member = _member(backup)
        devices = grouped.setdefault(image_id, {})
        # One disk per volume snapshot: a retried copy is the same disk.
        key = tags.snapshot_key(str(backup['snapshot_id']))
        known = devices.get(key)
        if known is None or _better(member, known):
            devices[key] = member
        heads.setdefault(image_id, meta)
    sets = []
    for image_id, devices in grouped.items():
        meta = heads[image_id]
        try:
            set_size = int(str(meta.get(copies_mod.SET_SIZE_KEY)))
        except (TypeError, ValueError):
            set_size = 0  # unreadable: refused (CopySet.refusal)
        members = sorted(devices.values(), key=lambda m: (
            m.boot_index < 0, m.boot_index, m.device_name))
        sets.append(CopySet(image_id, str(meta.get(copies_mod.SERVER_KEY)),
                            str(meta.get(copies_mod.BACKUP_TYPE_KEY) or ''),
                            set_size, members))
    return sorted(sets, key=lambda s: (s.taken_at, s.image_id),
                  reverse=True)


def _better(new: Member, old: Member) -> bool:
    """Whether ``new`` is the copy of its device to restore over ``old``."""
    new_ok, old_ok = new.status == 'available', old.status == 'available'
    if new_ok != old_ok:
        return new_ok
    return new.created_at > old.created_at


def choose(sets: ty.Sequence[CopySet], image_id: str | None = None,
           server: str | None = None,
           backup_type: str | None = None) -> CopySet:
    """The set to restore.

    :param image_id: the set of this backup image.
    :param server: else the newest restorable set of this server (of
        ``backup_type`` when given).
    :returns: a :class:`CopySet` whose :meth:`~CopySet.refusal` is
        ``None``.
    :raises RestoreRefused: no such set, or it cannot be restored (why,
        and for a server, why each newer set was passed over).
    """
    if image_id:
        for copy_set in sets:
            if copy_set.image_id == image_id:
                why = copy_set.refusal()
                if why:
                    raise exception.RestoreRefused(
                        reason='the copies of backup image %s: %s'
                        % (image_id, why))
                return copy_set
        raise exception.RestoreRefused(
            reason='Cinder shows no copy of backup image %s to this '
            'project (made with [snapshot_ext] backup_copies)' % image_id)
    if not server:
        raise exception.RestoreRefused(
            reason='name a backup image or a server')
    candidates = [s for s in sets if s.server == server and (
        not backup_type or s.backup_type == backup_type)]
    passed = []
    for copy_set in candidates:
        why = copy_set.refusal()
        if why is None:
            return copy_set
        passed.append('%s: %s' % (copy_set.image_id, why))
    what = 'server %s%s' % (server, ' (backup type %s)' % backup_type
                            if backup_type else '')
    if not candidates:
        raise exception.RestoreRefused(
            reason='Cinder shows no copy of a backup of %s to this project'
            % what)
    raise exception.RestoreRefused(
        reason='no set of copies of %s can be restored: %s'
        % (what, '; '.join(passed)))
