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

"""BackupService: a snapshot marked as a backup, then the rotation.

Flow (doc/source/backups.rst)::

    validate -> build_record (image_type=backup, backup_type,
    instance_uuid) -> mark (backup marker; fingerprint and marker
    required) -> check_record (preflight) -> register (the snapshot
    engine: create or adopt, activate) -> read the active backup ->
    copy off the primary storage (``[snapshot_ext] backup_copies``,
    :mod:`.copies`) -> rotate (:mod:`.rotation`)

If the backup does not become active, the engine's error propagates and
nothing is rotated.  A retry of the same request converges on the same
image (its id derives from the volume snapshots), and the rotation is
computed relative to it, so it deletes nothing twice.
"""

from __future__ import annotations

import dataclasses
import typing as ty

from nova_snapshot_ext.backup import copies as copies_mod
from nova_snapshot_ext.backup import copy_retention
from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.backup import rotation as rotation_mod
from nova_snapshot_ext import exception

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.image import glance as glance_mod
    from nova_snapshot_ext.snapshot import metadata as metadata_mod
    from nova_snapshot_ext.snapshot import request as request_mod
    from nova_snapshot_ext.snapshot import result as result_mod
    from nova_snapshot_ext.snapshot import service as service_mod


@dataclasses.dataclass
class BackupResult:
    """The outcome of :meth:`BackupService.backup`.

    :ivar snapshot: the new backup's :class:`~..snapshot.result.
        SnapshotResult` (``status == 'active'``).
    :ivar rotation: the :class:`~.rotation.RotationResult`.
    :ivar copies: the :class:`~.copies.CopyResult`, or ``None`` when
        ``[snapshot_ext] backup_copies`` is off.
    :ivar retention: the :class:`~.copy_retention.RetentionResult`
        after the copies, or ``None`` (no retention set).
    """

    snapshot: result_mod.SnapshotResult
    rotation: rotation_mod.RotationResult
    copies: copies_mod.CopyResult | None = None
    retention: copy_retention.RetentionResult | None = None

    def to_dict(self) -> dict[str, ty.Any]:
        data = self.snapshot.to_dict()
        data['rotation'] = self.rotation.to_dict()
        data['copies'] = self.copies.to_dict() if self.copies else None
        data['copy_retention'] = (self.retention.to_dict()
                                  if self.retention else None)
        return data

    def describe(self) -> str:
        parts = [self.snapshot.describe()]
        for extra in (self.copies, self.retention):
            if extra is not None:
                parts.append(extra.describe())
        parts.append(self.rotation.describe())
        return '\n'.join(parts)


def copier_for(group: ty.Any, cinder: ty.Any) -> copies_mod.Copier | None:
    """The Cinder client that makes copies, or ``None`` (option off).

    :param group: ``conf.snapshot_ext``.
    :raises ConfigurationError: ``backup_copies`` is on and no Cinder
        client was given (checked before anything is created).
    """
    if not group.backup_copies:
        return None
    if cinder is None:
        raise exception.ConfigurationError(
            group='snapshot_ext', option='backup_copies',
            reason='copies are made with Cinder credentials: set '
            '[snapshot_ext_cinder] auth_type and its options')
    return ty.cast(copies_mod.Copier, cinder)


def check_rotation(rotation: ty.Any) -> int:
    """``rotation`` as Nova's schema takes it: a non-negative integer.

    :raises InvalidRequest: naming the field ``rotation``.
    """
    if isinstance(rotation, bool) or not isinstance(rotation, int):
        raise exception.InvalidRequest(field='rotation',
                                       reason='must be an integer')
    if rotation < 0:
        raise exception.InvalidRequest(field='rotation',
                                       reason='must be 0 or more')
    return rotation


class BackupService:
    """Backups of volume-backed servers, with rotation.

    :param snapshots: the :class:`~..snapshot.service.SnapshotService`
        whose record builder, preflight and engine a backup uses.
    """

    def __init__(self, snapshots: service_mod.SnapshotService):
        self.snapshots = snapshots

    def build_record(self, request: request_mod.SnapshotRequest
                     ) -> metadata_mod.ImageRecord:
        """The backup's image record: the snapshot record, marked.

        ``image_type=backup``, ``backup_type`` and ``instance_uuid`` are
        the backup's own, whatever the user metadata says (a note says
        when it said otherwise).

        :raises InvalidRequest: the request has no ``backup_type``.
        """
        if not request.backup_type:
            raise exception.InvalidRequest(
                field='backup_type', reason='a backup needs a backup_type')
        record = self.snapshots.build_record(request)
        # What makes it this server's backup is not the user's to change
        # (Nova lets metadata override image_type and instance_uuid, the
        # borrowed-identity field report): the backup's own values win.
        own = {'image_type': 'backup', 'backup_type': request.backup_type,
               'instance_uuid': request.server.uuid}
        for key, value in own.items():
            given = request.metadata.get(key)
            if given is not None and given != value:
                record.notes.append(
                    'metadata %s=%r replaced by %r: a backup says which '
                    'server and backup type it belongs to' % (
                        key, given, value))
            record.properties[key] = value
        mark.mark(record)
        return record

    def preflight(self, request: request_mod.SnapshotRequest,
                  glance: glance_mod.GlanceClient | None = None
                  ) -> service_mod.PreparedSnapshot:
        """Every check without side effects, as for a snapshot.

        :raises InvalidRequest: malformed request or no ``backup_type``.
        :raises PreflightError: as for a snapshot; a
            :class:`PropertyQuotaExceeded` also when the quota leaves no
            room for what makes the image a rotatable backup.
        :raises GlanceError: capabilities could not be read.
        """
        request.validate()
        prepared = self.snapshots.check_record(self.build_record(request),
                                               glance)
        missing = [key for key in mark.REQUIRED_PROPERTIES
                   if key not in prepared.record.properties]
        if missing:
            raise exception.PreflightError(
                reason='option [snapshot_ext] image_property_quota leaves '
                'no room for %s, which make the image a backup the '
                'rotation can count' % ', '.join(missing))
        return prepared

    def backup(self, request: request_mod.SnapshotRequest, rotation: int,
               glance: glance_mod.GlanceClient | None = None,
               cinder: rotation_mod.SnapshotDeleter | None = None
               ) -> BackupResult:
        """Create and activate the backup, copy it, then rotate.

        The copies and their retention (:meth:`copy`) only with
        ``[snapshot_ext] backup_copies``.

        :param request: the snapshot request, with ``backup_type``.
        :param rotation: backups to keep, the new one included.
        :param glance: the caller's client (default: the service's).
        :param cinder: deletes rotated backups' volume snapshots; ``None``
            leaves them and names them.
        :returns: :class:`BackupResult`; its rotation names every image or
            volume snapshot it did not delete and why.
        :raises InvalidRequest, PreflightError: nothing was created.
        :raises ConfigurationError: ``[snapshot_ext] backup_copies`` with
            no ``cinder``; nothing was created.
        :raises ActivationFailed: the backup did not become active;
            nothing was rotated.
        :raises GlanceError: the active backup could not be read back;
            nothing was rotated.
        """
        check_rotation(rotation)
        glance = glance or self.snapshots.glance
        copier = copier_for(self.snapshots.conf.snapshot_ext, cinder)
        prepared = self.preflight(request, glance)
        result = self.snapshots.register(prepared, glance)
        copies = kept = None
        if copier is not None:
            copies, kept = self.copy(copier, glance.get(str(result.image_id)))
        return BackupResult(result, self.rotate(
            result, request.backup_type or '', rotation, glance, cinder),
            copies, kept)

    def copy(self, copier: copies_mod.Copier, image: ty.Mapping[str, ty.Any]
             ) -> tuple[copies_mod.CopyResult,
                        copy_retention.RetentionResult | None]:
        """The copies of an active backup, then their retention.

        The copies are Cinder backups of the project ``copier`` acts in
        (its ``project_id``, else the image's owner): they are recorded
        for it, the project that lists and restores them.

        :returns: ``(copies, retention)``; each names what failed (never
            a Cinder error raised: the backup is active).
        """
        project = getattr(copier, 'project_id', None) or image.get('owner')
        return copy_retention.copy_and_retain(
            copier, image, str(project or ''),
            self.snapshots.conf.snapshot_ext)

    def rotate(self, result: result_mod.SnapshotResult, backup_type: str,
               rotation: int, glance: glance_mod.GlanceClient,
               cinder: rotation_mod.SnapshotDeleter | None = None
               ) -> rotation_mod.RotationResult:
        """Rotate around an active backup (also the Nova path's step).

        Volume snapshots are checked by tag unless ``[snapshot_ext]
        rotation_full_scan`` asks for a full scan.

        :raises GlanceError: the backup could not be read back.
        """
        if not result.image_id or result.status != 'active':
            raise ValueError('rotation needs an active backup')
        backup = glance.get(result.image_id)
        return rotation_mod.rotate(
            glance, backup, rotation, backup_type, cinder,
            full_scan=self.snapshots.conf.snapshot_ext.rotation_full_scan)
