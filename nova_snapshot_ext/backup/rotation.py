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

"""Backup rotation: keep the newest, delete what provably is this server's.

As Nova rotates image backups (``ComputeManager._rotate_backups``): the
backups of one server and ``backup_type`` are ordered by ``created_at``,
newest first, and those beyond ``rotation`` are deleted.  Unlike Nova:

* the set is computed **relative to the new backup**: the new backup is
  always kept, and of the backups created strictly *before* it the
  ``rotation - 1`` newest are kept (``rotation = 0`` keeps only the new
  one; Nova's own image-backed rotation deletes the new one too).  A
  backup created at or after the new one is never deleted nor counted.
  So a retried rotation (the same request converges on the same new
  backup) deletes nothing a first run would not have deleted, and never
  more than a later backup's rotation would: rotation is idempotent;
* an image is deleted only when it provably is this server's backup
  (:func:`~.mark.refusal`); a look-alike is left and named;
* an image that is not ``active`` is left and named (an older backup
  still being made, or one Glance is deleting);
* after the images, the Cinder volume snapshots a deleted backup's
  ``block_device_mapping`` named are deleted, when no image the caller
  can see (hidden ones included) names them any more.  "Names" is asked
  of Glance per volume snapshot, by the tag the plugin gives every image
  it makes (:mod:`~..snapshot.tags`): two filtered listings (hidden and
  not) per snapshot, whatever the number of other images, and two more
  per deleted backup for the images carrying its fingerprint
  (``snapshot_ext_fingerprint``: a copy made by copying the backup's
  properties keeps it, and its mappings name the same snapshots).  A
  rotation
  that deletes a backup without those tags (made before the plugin
  tagged its images) reads every image the caller can see instead (the
  full scan: its mappings and its tags), and so does every rotation
  with ``full_scan`` (option ``[snapshot_ext] rotation_full_scan``).
  Images the plugin did not make carry no tag: a hand-made image naming
  a plugin volume snapshot without its tag or the fingerprint protects
  it only under a full scan; ``audit`` reports such images
  (``untagged-snapshot-reference``).

Nothing here raises on a failed delete: every failure is named in the
:class:`RotationResult`, and the new backup is never touched.
"""

from __future__ import annotations

import dataclasses
import typing as ty

from oslo_log import log as logging
from oslo_utils import timeutils

from nova_snapshot_ext.backup import mark
from nova_snapshot_ext.cinder import client as cinder_mod
from nova_snapshot_ext.cinder import waits
from nova_snapshot_ext import exception
from nova_snapshot_ext.snapshot import deletion
from nova_snapshot_ext.snapshot import identity
from nova_snapshot_ext.snapshot import tags

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.image import glance as glance_mod

LOG = logging.getLogger(__name__)


#: :attr:`RotationResult.snapshot_check`: Glance asked per volume
#: snapshot, by its tag.
CHECK_TAGS = 'tags'
#: Every visible image read, as asked (``full_scan``).
CHECK_FULL_SCAN = 'full scan (asked)'
#: Every visible image read: a deleted backup carried no tag for its
#: volume snapshots (made before the plugin tagged its images).
CHECK_LEGACY_SCAN = 'full scan (untagged backup)'


class SnapshotDeleter(ty.Protocol):
    """Deletes Cinder volume snapshots, and reads them until gone.

    :class:`~.cinder.CinderClient`, or inside Nova an adapter over Nova's
    own Cinder API.
    """

    def delete_snapshot(self, snapshot_id: str, owner: str) -> str:
        """Delete volume snapshot ``snapshot_id`` of project ``owner``.

        :returns: ``'deleted'`` or ``'already gone'`` (also one already
            ``deleting``).
        :raises CinderError: it could not.
        """

    def get_snapshot(self, snapshot_id: str) -> dict[str, ty.Any] | None:
        """The snapshot as Cinder shows it, ``None`` when it is gone.

        :raises CinderError: Cinder failed to answer.
        """


@dataclasses.dataclass
class Selection:
    """What one rotation will do, decided from one image listing.

    :ivar keep: ids kept by the rotation rule, newest first (the new
        backup first).
    :ivar delete: the images to delete, oldest first (Glance dicts).
    :ivar left: image id -> why it is left although listed as this
        server's backup (a look-alike, not active, or newer than the new
        backup).
    """

    keep: list[str] = dataclasses.field(default_factory=list)
    delete: list[dict[str, ty.Any]] = dataclasses.field(default_factory=list)
    left: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class RotationResult:
    """The outcome of one rotation (JSON-shaped by :meth:`to_dict`).

    :ivar backup_id: the new backup, never deleted.
    :ivar rotation: how many backups the rule keeps.
    :ivar kept: image ids kept by the rule.
    :ivar deleted: image ids deleted (or found already gone).
    :ivar left: image id -> why it was not deleted although Glance
        listed it as this server's backup.
    :ivar not_deleted: image id -> the error that stopped its delete.
    :ivar snapshots_deleted: Cinder volume snapshot ids deleted and seen
        gone (:func:`~nova_snapshot_ext.cinder.waits.wait_gone`), or
        already gone.
    :ivar snapshots_deleting: ids whose delete Cinder accepted and was
        still carrying out when the rotation ended (not watched in
        nova-api's answer, or past the wait).
    :ivar snapshots_left: volume snapshot id -> why it was left (also a
        delete Cinder accepted, then failed).
    :ivar snapshot_check: how the rotation proved no visible image names
        a volume snapshot it deleted: :data:`CHECK_TAGS`,
        :data:`CHECK_FULL_SCAN` or :data:`CHECK_LEGACY_SCAN`; ``None``
        when it had no volume snapshot to consider.
    :ivar error: why the rotation could not even list the backups.
    :ivar copying: ids (among ``left``) of backups left only because
        cinder-backup is copying their volume snapshots: a rotation a
        little later deletes them.
    """

    backup_id: str
    rotation: int
    kept: list[str] = dataclasses.field(default_factory=list)
    deleted: list[str] = dataclasses.field(default_factory=list)
    left: dict[str, str] = dataclasses.field(default_factory=dict)
    not_deleted: dict[str, str] = dataclasses.field(default_factory=dict)
    snapshots_deleted: list[str] = dataclasses.field(default_factory=list)
    snapshots_deleting: list[str] = dataclasses.field(default_factory=list)
    snapshots_left: dict[str, str] = dataclasses.field(default_factory=dict)
    snapshot_check: str | None = None
    error: str | None = None
    copying: list[str] = dataclasses.field(default_factory=list)
    #: The exceptions behind ``error`` / ``not_deleted`` (for exit codes).
    failures: list[exception.SnapshotExtException] = dataclasses.field(
        default_factory=list, repr=False)

    @property
    def complete(self) -> bool:
        """Every image the rule selected is gone (volume snapshots aside)."""
        return self.error is None and not self.not_deleted

    def to_dict(self) -> dict[str, ty.Any]:
        data = {field.name: getattr(self, field.name)
                for field in dataclasses.fields(self)
                if field.name != 'failures'}
        data['complete'] = self.complete
        return json_copy(data)

    def describe(self) -> str:
        """One paragraph for a person."""
        if self.error:
            return ('Rotation not done (backup %s kept): %s'
                    % (self.backup_id, self.error))
        lines = ['Rotation %d: kept %s; deleted %s.' % (
            self.rotation, ', '.join(self.kept) or '(none)',
            ', '.join(self.deleted) or '(none)')]
        for image_id, why in sorted(self.not_deleted.items()):
            lines.append('NOT deleted %s: %s' % (image_id, why))
        for image_id, why in sorted(self.left.items()):
            lines.append('left %s: %s' % (image_id, why))
        if self.snapshots_deleted:
            lines.append('volume snapshots deleted: %s'
                         % ', '.join(self.snapshots_deleted))
        if self.snapshots_deleting:
            lines.append('volume snapshots Cinder is deleting: %s'
                         % ', '.join(self.snapshots_deleting))
        for snap_id, why in sorted(self.snapshots_left.items()):
            lines.append('volume snapshot %s left: %s' % (snap_id, why))
        return '\n'.join(lines)


def json_copy(data: dict[str, ty.Any]) -> dict[str, ty.Any]:
    """A copy of ``data`` whose lists and dicts are new (one level)."""
    return {key: (list(value) if isinstance(value, list) else
                  dict(value) if isinstance(value, dict) else value)
            for key, value in data.items()}


def _created(image: ty.Mapping[str, ty.Any]) -> ty.Any:
    value = image.get('created_at')
    if not isinstance(value, str):
        return None
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    except ValueError:
        return None


def select(images: ty.Iterable[dict[str, ty.Any]],
           backup: ty.Mapping[str, ty.Any], rotation: int,
           backup_type: str) -> Selection:
    """Decide, without a Glance call, what a rotation keeps and deletes.

    :param images: Glance images listed as this server's backups of
        ``backup_type`` (look-alikes included; they are judged here).
    :param backup: the new backup as Glance shows it (``id``,
        ``created_at``, ``owner``, ``instance_uuid``).
    :param rotation: backups to keep, the new one included (>= 0).
    :param backup_type: the rotation's ``backup_type``.
    :raises ValueError: ``rotation`` is negative, or the new backup has no
        readable ``created_at`` (the caller validates both first).
    """
    if rotation < 0:
        raise ValueError('rotation must be >= 0')
    newest = _created(backup)
    if newest is None:
        raise ValueError('backup %s has no created_at' % backup.get('id'))
    selection = Selection(keep=[str(backup['id'])])
    older = []
    for image in images:
        image_id = str(image.get('id'))
        if image_id == backup['id']:
            continue
        why = mark.refusal(image, str(backup.get('instance_uuid')),
                           backup_type, str(backup.get('owner')))
        created = _created(image)
        if why is None and image.get('status') != 'active':
            why = 'status %s: not a finished backup' % image.get('status')
        if why is None and (created is None or created >= newest):
            why = ('created at %s, not before the new backup %s'
                   % (image.get('created_at'), backup['id']))
        if why is not None:
            selection.left[image_id] = why
            continue
        older.append((created, image_id, image))
    older.sort(key=lambda item: (item[0], item[1]), reverse=True)
    keep_older = max(rotation - 1, 0)
    selection.keep.extend(image_id for _, image_id, _ in older[:keep_older])
    selection.delete = [image for _, _, image in reversed(older[keep_older:])]
    return selection


def list_backups(glance: glance_mod.GlanceClient, instance_uuid: str,
                 backup_type: str) -> list[dict[str, ty.Any]]:
    """The images Glance lists as this server's backups of this type.

    Nova's filter (``image_type``, ``backup_type``, ``instance_uuid``),
    hidden images too.

    :raises GlanceError: a listing failed.
    """
    filters = {'image_type': 'backup', 'backup_type': backup_type,
               'instance_uuid': instance_uuid}
    found = {}
    for hidden in (False, True):
        for image in glance.list_images(os_hidden=hidden, **filters):
            found[image['id']] = image
    return list(found.values())


def named_snapshot_ids(glance: glance_mod.GlanceClient) -> set[str]:
    """Every volume snapshot a visible image names (the full scan).

    Reads every image the caller can see, hidden ones too: its mappings
    and its volume snapshot tags.  Its cost grows with the images.

    :returns: snapshot keys (:func:`~..snapshot.tags.snapshot_key`).
    :raises GlanceError: a listing failed.
    """
    named: set[str] = set()
    for hidden in (False, True):
        for image in glance.list_images(os_hidden=hidden):
            named.update(map(mark.snapshot_key,
                             mark.mapped_snapshot_ids(image)))
            named.update(tags.tagged_keys(image))
    return named


def copies_name(glance: glance_mod.GlanceClient,
                fingerprints: ty.Iterable[str]) -> set[str]:
    """Volume snapshots named by visible images with these fingerprints.

    The images whose ``snapshot_ext_fingerprint`` is one of the deleted
    backups' (a Glance property filter, exact match, hidden and not): a
    copy made from a backup's properties, which carries no tag.  Two
    requests per fingerprint.

    :returns: snapshot keys their mappings and tags name.
    :raises GlanceError: a listing failed.
    """
    named: set[str] = set()
    for fp in fingerprints:
        for hidden in (False, True):
            for image in glance.list_images(
                    os_hidden=hidden,
                    **{identity.FINGERPRINT_PROPERTY: fp}):
                named.update(map(mark.snapshot_key,
                                 mark.mapped_snapshot_ids(image)))
                named.update(tags.tagged_keys(image))
    return named


def images_tagged(glance: glance_mod.GlanceClient,
                  snapshot_id: str) -> list[str]:
    """Ids of the images the caller can see tagged with ``snapshot_id``.

    Two requests (``GET /v2/images?tag=...`` with ``os_hidden`` false,
    then true), answered by Glance from its tag index: the cost does not
    depend on the number of other images.

    :param snapshot_id: a volume snapshot id with a tag
        (:func:`~..snapshot.tags.tag_of` is not ``None``).
    :returns: image ids, sorted.
    :raises GlanceError: a listing failed.
    """
    tag = tags.tag_of(snapshot_id)
    if tag is None:
        raise ValueError('volume snapshot %r has no tag' % snapshot_id)
    found: set[str] = set()
    for hidden in (False, True):
        found.update(str(image.get('id')) for image in
                     glance.list_images(tag=[tag], os_hidden=hidden))
    return sorted(found)


def rotate(glance: glance_mod.GlanceClient, backup: ty.Mapping[str, ty.Any],
           rotation: int, backup_type: str,
           cinder: SnapshotDeleter | None = None,
           full_scan: bool = False,
           delete_wait: float | None = waits.DELETING_WAIT
           ) -> RotationResult:
    """Rotate this server's backups of ``backup_type`` around ``backup``.

    :param glance: the client of the caller (the backups' owner).
    :param backup: the new, active backup as Glance shows it.
    :param rotation: backups to keep, the new one included.
    :param backup_type: the rotation's ``backup_type``.
    :param cinder: deletes the volume snapshots of deleted backups;
        ``None``: they are left and named.
    :param full_scan: prove that no visible image names a volume snapshot
        by reading every image (``[snapshot_ext] rotation_full_scan``),
        not by its tag; a deleted backup without tags does so anyway.
    :param delete_wait: seconds of polling until Cinder no longer shows
        the volume snapshots whose delete it accepted
        (:func:`~nova_snapshot_ext.cinder.waits.wait_gone`); ``None``:
        not watched (in nova-api's answer), each named as being deleted.
    :returns: :class:`RotationResult`; never raises a Glance or Cinder
        error (each is named in the result).
    """
    backup_id = str(backup['id'])
    result = RotationResult(backup_id=backup_id, rotation=rotation)
    instance_uuid = str(backup.get('instance_uuid'))
    owner = str(backup.get('owner'))
    try:
        listed = list_backups(glance, instance_uuid, backup_type)
    except exception.GlanceError as err:
        result.error = 'could not list the backups: %s' % (
            err.format_message())
        result.failures.append(err)
        return result
    selection = select(listed, backup, rotation, backup_type)
    result.kept = selection.keep
    result.left = dict(selection.left)
    orphans: list[str] = []
    fingerprints: set[str] = set()
    check = CHECK_FULL_SCAN if full_scan else CHECK_TAGS
    for image in selection.delete:
        image_id = str(image['id'])
        outcome = _delete_backup(glance, image_id, instance_uuid,
                                 backup_type, owner, result, cinder)
        if outcome is not None:
            mapped = mark.mapped_snapshot_ids(outcome)
            orphans.extend(mapped)
            fingerprints.add(str(outcome[identity.FINGERPRINT_PROPERTY]))
            if check == CHECK_TAGS and tags.untagged(outcome, mapped):
                check = CHECK_LEGACY_SCAN
    if orphans:
        result.snapshot_check = check
        _delete_snapshots(glance, sorted(set(orphans)), sorted(fingerprints),
                          owner, cinder, result, delete_wait)
    return result


def being_copied(cinder: ty.Any, image: ty.Mapping[str, ty.Any]
                 ) -> list[str]:
    """The image's volume snapshots cinder-backup is copying now.

    A snapshot Cinder shows ``backing-up`` (a copy off the primary
    storage, :mod:`.copies`) cannot be deleted until the copy ends; a
    snapshot that cannot be read is not counted (its delete answers).

    :param cinder: anything with ``get_snapshot`` (else none is).
    :returns: snapshot ids, sorted.
    """
    read = getattr(cinder, 'get_snapshot', None)
    if read is None:
        return []
    busy = []
    for snap_id in mark.mapped_snapshot_ids(image):
        try:
            snap = read(snap_id)
        except exception.CinderError:
            continue
        if (snap or {}).get('status') == 'backing-up':
            busy.append(snap_id)
    return busy


def _delete_backup(glance: glance_mod.GlanceClient, image_id: str,
                   instance_uuid: str, backup_type: str, owner: str,
                   result: RotationResult, cinder: ty.Any = None
                   ) -> dict[str, ty.Any] | None:
    """Re-read, re-judge and delete one backup.

    A backup whose volume snapshots are being copied is left, named: the
    copy must end before its snapshots can go, and a later rotation
    deletes it.

    :returns: the image as last read when it is gone (its mappings name
        the volume snapshots to consider), else ``None``.
    """
    try:
        image = glance.get(image_id)
    except exception.GlanceNotFound:
        result.deleted.append(image_id)
        return None
    except exception.GlanceError as err:
        result.not_deleted[image_id] = err.format_message()
        result.failures.append(err)
        return None
    why = mark.refusal(image, instance_uuid, backup_type, owner)
    if why is None:
        why = deletion.refusal_to_delete(image)
    if why is None and image.get('status') != 'active':
        why = 'status %s: not a finished backup' % image.get('status')
    busy = [] if why is not None else being_copied(cinder, image)
    if busy:
        why = ('cinder-backup is copying its volume snapshots %s off the '
               'primary storage (backing-up); a later rotation deletes it'
               % ', '.join(busy))
        result.copying.append(image_id)
    if why is not None:
        result.left[image_id] = why
        return None
    try:
        glance.delete(image_id)
    except exception.GlanceNotFound:
        pass
    except exception.GlanceError as err:
        # The answer was lost or refused: only a read proves the outcome
        # (a DELETE is sent once; Glance may have acted before a reset).
        if not _gone(glance, image_id):
            result.not_deleted[image_id] = err.format_message()
            result.failures.append(err)
            return None
    LOG.info('Backup rotation of server %(server)s (%(type)s): deleted '
             'image %(image)s', {'server': instance_uuid,
                                 'type': backup_type, 'image': image_id})
    result.deleted.append(image_id)
    return image


def _gone(glance: glance_mod.GlanceClient, image_id: str) -> bool:
    """Glance answers 404 for the image now (a failed read: not proven)."""
    try:
        glance.get(image_id)
    except exception.GlanceNotFound:
        return True
    except exception.GlanceError:
        return False
    return False


def _delete_snapshots(glance: glance_mod.GlanceClient,
                      snapshot_ids: list[str], fingerprints: list[str],
                      owner: str, cinder: SnapshotDeleter | None,
                      result: RotationResult,
                      delete_wait: float | None) -> None:
    if cinder is None:
        for snap_id in snapshot_ids:
            result.snapshots_left[snap_id] = (
                'no Cinder client: give Cinder credentials (options '
                '[snapshot_ext_cinder]) to delete it')
        return
    copied: set[str] = set()
    named: set[str] | None = None
    try:
        if result.snapshot_check == CHECK_TAGS:
            copied = copies_name(glance, fingerprints)
        else:
            named = named_snapshot_ids(glance)
    except exception.GlanceError as err:
        for snap_id in snapshot_ids:
            result.snapshots_left[snap_id] = (
                'could not check that no image names it: %s'
                % err.format_message())
        result.failures.append(err)
        return
    accepted = []
    for snap_id in snapshot_ids:
        why = None
        if mark.snapshot_key(snap_id) in copied:
            why = ('another image names it (it carries the deleted '
                   'backup\'s %s)' % identity.FINGERPRINT_PROPERTY)
        why = why or _named_by(glance, snap_id, named, result)
        if why is not None:
            result.snapshots_left[snap_id] = why
            continue
        try:
            answer = cinder.delete_snapshot(snap_id, owner)
        except exception.CinderError as err:
            result.snapshots_left[snap_id] = err.format_message()
            result.failures.append(err)
            continue
        if delete_wait is None:
            # Not watched: what Cinder said is all that is known.
            (result.snapshots_deleted if answer == cinder_mod.GONE
             else result.snapshots_deleting).append(snap_id)
        else:
            accepted.append(snap_id)
    if accepted:
        _watch_deletes(cinder, accepted, result, float(delete_wait or 0))


def _watch_deletes(cinder: SnapshotDeleter, accepted: list[str],
                   result: RotationResult, delete_wait: float) -> None:
    """Count a snapshot deleted only once Cinder no longer shows it.

    Also one found already gone or ``deleting`` (another rotation's
    delete): Cinder may still fail it.
    """
    deletes = waits.wait_gone(cinder, accepted, delete_wait)
    result.snapshots_deleted.extend(deletes.gone)
    result.snapshots_deleting.extend(deletes.deleting)
    why_not = deletes.why_not_gone()
    for snap_id, why in deletes.failed.items():
        result.snapshots_left[snap_id] = why
        result.failures.append(exception.CinderError(
            operation='delete', snapshot_id=snap_id, reason=why))
    for snap_id, err in deletes.unread.items():
        # Cinder's own error: unreachable stays unreachable (exit 3).
        result.snapshots_left[snap_id] = why_not[snap_id]
        result.failures.append(err)


def _named_by(glance: glance_mod.GlanceClient, snap_id: str,
              named: set[str] | None, result: RotationResult) -> str | None:
    """Why volume snapshot ``snap_id`` must stay, or ``None``.

    :param named: the full scan's snapshot keys, or ``None`` to ask
        Glance by the snapshot's tag.
    """
    if named is not None:
        if mark.snapshot_key(snap_id) in named:
            return 'another image names it'
        return None
    try:
        images = images_tagged(glance, snap_id)
    except exception.GlanceError as err:
        result.failures.append(err)
        return 'could not check that no image names it: %s' % (
            err.format_message())
    if images:
        return 'another image names it (tagged: %s)' % ', '.join(images)
    return None
